# scons-mlir-gpu for CMake: find_package(MLIRGPU CONFIG REQUIRED), then
#
#   mlirgpu_add_object(<name> SOURCES k.mlir [more.mlir ...]
#                      [LINK_LIBS lib.bc ...] [FORMAT isa|bin|fatbin] [SECTION name] [LAYOUT plain|vendor]
#                      [OPTIONS <more mlirgpu compile options> ...])
#   target_link_libraries(app PRIVATE <name>)
#
#   mlirgpu_add_library(<lib> SOURCE mathlib.mlir [LINK_LIBS lib.bc|<other lib> ...] [OPTIONS ...])
#
# <lib> is a device-function library: the source's gpu.modules as LLVM bitcode, one file per target (and chip),
# <lib>/<lib>.<target>[.<chip>].bc; naming <lib> in LINK_LIBS (of an object or another library) links them,
# each job taking its own target's and chip's file, and rebuilds what links it when their bytes change.
# <name> is an INTERFACE library: linking it links each source's host object (binaries embedded) and puts each
# generated header (<stem>.h, here k.h) on the include path; the compiles run before anything that links it.
# With MLIRGPU_DUMP, each source's stage outputs go to <name>/<stem>.dumps/ (<module>.initial.ll, ... .isa).
# Cache variables, as in SCons: GPU_TARGET, GPU_CHIP, GPU_FEATURES, GPU_OPT_LEVEL, GPU_FORMAT, GPU_TOOLKIT,
# GPU_LOWERING, and MLIRGPU_DUMP (ON: every stage's output is written and declared as a byproduct).
# Everything the compile writes is declared (outputs from `mlirgpu list-outputs`, read again when a source
# changes), so `cmake --build . --target clean` removes it; a depfile names the libraries and tools it read.
cmake_policy(PUSH)
cmake_policy(VERSION 3.20)  # recorded by the function below: DEPFILE paths as Ninja needs them (CMP0116) etc.

get_filename_component(MLIRGPU_PACKAGE_DIR "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
if(NOT MLIRGPU_COMMAND)
  # The `mlirgpu` of the environment this package is installed in (a venv's bin/ beside lib/pythonX.Y/), else
  # the one on PATH.
  find_program(MLIRGPU_EXECUTABLE mlirgpu HINTS "${MLIRGPU_PACKAGE_DIR}/../../../../bin")
  if(NOT MLIRGPU_EXECUTABLE)
    message(FATAL_ERROR "MLIRGPU: no `mlirgpu` command found (fix: pip install scons-mlir-gpu in the environment "
                        "on PATH, or set -DMLIRGPU_COMMAND=\"/path/to/python;-m;mlirgpu\")")
  endif()
  set(MLIRGPU_COMMAND "${MLIRGPU_EXECUTABLE}" CACHE STRING "How to run mlirgpu (a list: program and arguments)")
endif()

set(GPU_TARGET "" CACHE STRING "Target of gpu.modules that carry none: nvvm, rocdl or xevm")
set(GPU_CHIP "" CACHE STRING "Chip(s) for those modules, separated by commas")
set(GPU_FEATURES "" CACHE STRING "LLVM target features for those modules, e.g. +ptx80")
set(GPU_OPT_LEVEL "" CACHE STRING "Optimization level 0-3 of those modules (default: the target's)")
set(GPU_FORMAT "" CACHE STRING "What is embedded: isa, bin or fatbin (default fatbin)")
set(GPU_TOOLKIT "" CACHE PATH "CUDA or ROCm root (default: found from the environment)")
set(GPU_LOWERING "" CACHE STRING "An mlir-opt pipeline for target-neutral modules (a RUN line's flags work)")
option(MLIRGPU_DUMP "Write every stage's output (initial.ll, linked.ll, opt.ll, isa, binaries) beside the object" OFF)

# The compile options every compile of a function's arguments gets (the GPU_* cache variables, FORMAT, SECTION,
# LAYOUT, LINK_LIBS: files, or libraries of mlirgpu_add_library, and OPTIONS), in <out>; the files and targets
# they link in <out_libraries>.
function(_mlirgpu_options out out_libraries)
  set(options)
  foreach(pair "--target;GPU_TARGET" "--chip;GPU_CHIP" "--features;GPU_FEATURES" "-O;GPU_OPT_LEVEL"
               "--format;GPU_FORMAT" "--toolkit;GPU_TOOLKIT" "--lowering;GPU_LOWERING")
    list(GET pair 0 flag)
    list(GET pair 1 variable)
    if(NOT "${${variable}}" STREQUAL "")
      list(APPEND options "${flag}=${${variable}}")
    endif()
  endforeach()
  foreach(pair "--format;FORMAT" "--section;SECTION" "--layout;LAYOUT")
    list(GET pair 0 flag)
    list(GET pair 1 key)
    if(ARG_${key})
      list(APPEND options "${flag}=${ARG_${key}}")
    endif()
  endforeach()
  set(libraries)
  foreach(library IN LISTS ARG_LINK_LIBS)
    if(TARGET "${library}")  # a library of mlirgpu_add_library: every file of it linked, the target depended on
      get_property(files TARGET "${library}" PROPERTY MLIRGPU_BITCODE)
      foreach(file IN LISTS files)
        list(APPEND options "-l" "${file}")
      endforeach()
      # Its files are not named here: with Makefiles, a custom command's output named by another target's command
      # runs its rule again in that target. The compile's depfile names them (a changed library rebuilds its users)
      # and the target orders the library first.
      list(APPEND libraries "${library}")
    else()
      get_filename_component(library "${library}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      list(APPEND options "-l" "${library}")
      list(APPEND libraries "${library}")
    endif()
  endforeach()
  list(APPEND options ${ARG_OPTIONS})
  set(${out} ${options} PARENT_SCOPE)
  set(${out_libraries} ${libraries} PARENT_SCOPE)
endfunction()

# One compile of <source> for <command>(<name>) (`paths`: its output options, `options`, linking `libraries`):
# every file it writes, from `mlirgpu list-outputs`, declared as the custom command's outputs, and set in
# _mlirgpu_listed.
function(_mlirgpu_compile command name source folder stem paths options libraries)
  set(what "${command}(${name})")
  get_source_file_property(generated "${source}" GENERATED)
  if(NOT EXISTS "${source}" AND NOT generated)
    message(FATAL_ERROR "${what}: no source ${source} (fix: name an existing .mlir file "
                        "relative to ${CMAKE_CURRENT_SOURCE_DIR})")
  endif()
  # Which files the compile writes depends on the source's gpu.modules: read again when it changes.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${source}")
  execute_process(COMMAND ${MLIRGPU_COMMAND} list-outputs "${source}" ${paths} ${options}
                  OUTPUT_VARIABLE listed ERROR_VARIABLE problem RESULT_VARIABLE failed
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(failed OR listed STREQUAL "")
    message(FATAL_ERROR "${what}: ${problem}")
  endif()
  string(REPLACE "\n" ";" listed "${listed}")
  set(depfile "${folder}/${stem}.d")
  # The options as a file rewritten only when they change: every generator then rebuilds on a new GPU_TARGET.
  file(CONFIGURE OUTPUT "${folder}/${stem}.options" CONTENT "${MLIRGPU_COMMAND} ${paths} ${options}\n")
  add_custom_command(
    OUTPUT ${listed}
    COMMAND ${MLIRGPU_COMMAND} compile "${source}" ${paths} --depfile "${depfile}" ${options}
    DEPENDS "${source}" ${libraries} "${folder}/${stem}.options"
    DEPFILE "${depfile}"
    COMMENT "MLIRGPU ${name}: ${stem}.mlir"
    VERBATIM)
  set_property(DIRECTORY APPEND PROPERTY ADDITIONAL_CLEAN_FILES "${depfile}")
  set(_mlirgpu_listed ${listed} PARENT_SCOPE)
endfunction()

function(mlirgpu_add_object name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "FORMAT;SECTION;LAYOUT" "SOURCES;LINK_LIBS;OPTIONS")
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "mlirgpu_add_object(${name}): no SOURCES (fix: mlirgpu_add_object(${name} SOURCES k.mlir))")
  endif()
  _mlirgpu_options(options libraries)
  set(folder "${CMAKE_CURRENT_BINARY_DIR}/${name}")
  file(MAKE_DIRECTORY "${folder}")
  set(objects)
  set(outputs_of_all)
  foreach(source IN LISTS ARG_SOURCES)
    get_filename_component(source "${source}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_filename_component(stem "${source}" NAME_WE)
    set(object "${folder}/${stem}.o")
    set(paths -o "${object}" --header "${folder}/${stem}.h")
    if(MLIRGPU_DUMP)  # a folder per source: dumps keep their plain names (<module>.isa)
      list(APPEND paths --dump-intermediates "${folder}/${stem}.dumps")
      set_property(DIRECTORY APPEND PROPERTY ADDITIONAL_CLEAN_FILES "${folder}/${stem}.dumps")
    endif()
    _mlirgpu_compile(mlirgpu_add_object "${name}" "${source}" "${folder}" "${stem}" "${paths}" "${options}"
                     "${libraries}")
    list(APPEND objects "${object}")
    list(APPEND outputs_of_all ${_mlirgpu_listed})
  endforeach()
  add_custom_target(${name}_compile DEPENDS ${outputs_of_all})
  add_library(${name} INTERFACE)
  target_sources(${name} INTERFACE ${objects})
  set_source_files_properties(${objects} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  target_include_directories(${name} INTERFACE "${folder}")
  add_dependencies(${name} ${name}_compile)
  set_property(TARGET ${name} PROPERTY MLIRGPU_OUTPUTS ${outputs_of_all})
endfunction()

function(mlirgpu_add_library name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "SOURCE" "LINK_LIBS;OPTIONS")
  if(NOT ARG_SOURCE)
    message(FATAL_ERROR "mlirgpu_add_library(${name}): no SOURCE (fix: mlirgpu_add_library(${name} SOURCE "
                        "mathlib.mlir))")
  endif()
  _mlirgpu_options(options libraries)
  set(folder "${CMAKE_CURRENT_BINARY_DIR}/${name}")
  file(MAKE_DIRECTORY "${folder}")
  get_filename_component(source "${ARG_SOURCE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set(paths -o "${folder}/${name}" --emit library)
  if(MLIRGPU_DUMP)
    list(APPEND paths --dump-intermediates "${folder}/${name}.dumps")
    set_property(DIRECTORY APPEND PROPERTY ADDITIONAL_CLEAN_FILES "${folder}/${name}.dumps")
  endif()
  _mlirgpu_compile(mlirgpu_add_library "${name}" "${source}" "${folder}" "${name}" "${paths}" "${options}"
                   "${libraries}")
  set(bitcode ${_mlirgpu_listed})
  list(FILTER bitcode INCLUDE REGEX "\\.bc$")  # the rest are dumps and the record
  add_custom_target(${name} DEPENDS ${_mlirgpu_listed})
  set_property(TARGET ${name} PROPERTY MLIRGPU_BITCODE ${bitcode})
  set_property(TARGET ${name} PROPERTY MLIRGPU_OUTPUTS ${_mlirgpu_listed})
endfunction()

cmake_policy(POP)
