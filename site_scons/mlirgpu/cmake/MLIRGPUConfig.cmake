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
if(MLIRGPU_COMMAND)  # a launcher removed with the user's cache since the last configure: found again
  list(GET MLIRGPU_COMMAND 0 program)
  if(IS_ABSOLUTE "${program}" AND NOT EXISTS "${program}")
    unset(MLIRGPU_COMMAND CACHE)
  endif()
endif()
if(NOT MLIRGPU_COMMAND)
  # The `mlirgpu` of the environment this package is installed in (a venv's bin/ beside lib/pythonX.Y/), else
  # the one on PATH.
  find_program(MLIRGPU_EXECUTABLE mlirgpu HINTS "${MLIRGPU_PACKAGE_DIR}/../../../../bin")
  if(NOT MLIRGPU_EXECUTABLE)
    message(FATAL_ERROR "MLIRGPU: no `mlirgpu` command found (fix: pip install scons-mlir-gpu in the environment "
                        "on PATH, or set -DMLIRGPU_COMMAND=\"/path/to/python;-m;mlirgpu\")")
  endif()
  # Each compile runs the installation's native launcher (no Python start-up per compile; `mlirgpu --launcher`
  # builds it into the user's cache on first use), else the command found.
  execute_process(COMMAND "${MLIRGPU_EXECUTABLE}" --launcher OUTPUT_VARIABLE launcher
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE failed)
  if(failed OR NOT EXISTS "${launcher}")
    set(launcher "${MLIRGPU_EXECUTABLE}")
  endif()
  set(MLIRGPU_COMMAND "${launcher}" CACHE STRING "How to run mlirgpu (a list: program and arguments)")
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
# _mlirgpu_listed. `dumps`: the source's dump folder, written with MLIRGPU_DUMP and else emptied of what an
# earlier compile with dumps left there (`--stale-dumps`); `clean` removes it either way. A library's bitcode
# keeps its time when its bytes do, so nothing linking it rebuilds (Ninja's restat); Make would then run the
# compile on every build, so with Makefiles a `stamp`, touched by every compile, is the primary output Make
# compares with the source. (Ninja keeps the bitcode files as outputs: its depfile check wants the compile's
# depfile to name the first output, the first bitcode file.)
function(_mlirgpu_compile command name source folder stem paths options libraries dumps stamp)
  set(what "${command}(${name})")
  get_source_file_property(generated "${source}" GENERATED)
  if(NOT EXISTS "${source}" AND NOT generated)
    message(FATAL_ERROR "${what}: no source ${source} (fix: name an existing .mlir file "
                        "relative to ${CMAKE_CURRENT_SOURCE_DIR})")
  endif()
  set(stale)
  if(MLIRGPU_DUMP)  # a folder per source: dumps keep their plain names (<module>.isa)
    list(APPEND paths --dump-intermediates "${dumps}")
  else()
    set(stale --stale-dumps "${dumps}")
  endif()
  set_property(DIRECTORY APPEND PROPERTY ADDITIONAL_CLEAN_FILES "${dumps}")
  # Which files the compile writes depends on the source's gpu.modules: read again when it changes. A source
  # that needs GPU_TARGET fails here, naming it (fixes are said in CMake's terms: --caller cmake).
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${source}")
  execute_process(COMMAND ${MLIRGPU_COMMAND} list-outputs --caller cmake "${source}" ${paths} ${options}
                  OUTPUT_VARIABLE listed ERROR_VARIABLE problem RESULT_VARIABLE failed
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(failed OR listed STREQUAL "")
    string(STRIP "${problem}" problem)
    message(FATAL_ERROR "${what}: ${problem}")
  endif()
  string(REPLACE "\n" ";" listed "${listed}")
  set(depfile "${folder}/${stem}.d")
  # The options as a file rewritten only when they change: every generator then rebuilds on a new GPU_TARGET.
  file(CONFIGURE OUTPUT "${folder}/${stem}.options" CONTENT "${MLIRGPU_COMMAND} ${paths} ${options}\n")
  set(outputs ${listed})
  set(bitcode)
  set(touch)
  if(stamp AND CMAKE_GENERATOR MATCHES "Makefiles")
    set(bitcode ${listed})
    list(FILTER bitcode INCLUDE REGEX "\\.bc$")  # the rest are dumps and the record
    list(FILTER outputs EXCLUDE REGEX "\\.bc$")
    set(outputs "${stamp}" ${outputs})
    set(touch COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}")
    # The stamp depends on its bitcode files, each made by a rule that does nothing: Make runs it only for a
    # file that is missing, and a prerequisite that is still missing after its rule makes the stamp out of date,
    # so a deleted bitcode file is compiled again; one that kept its time stays older than the stamp.
    foreach(file IN LISTS bitcode)
      add_custom_command(OUTPUT "${file}" COMMAND "${CMAKE_COMMAND}" -E true VERBATIM)
    endforeach()
  endif()
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${MLIRGPU_COMMAND} compile --caller cmake "${source}" ${paths} ${stale} --depfile "${depfile}"
            ${options}
    ${touch}
    DEPENDS "${source}" ${libraries} "${folder}/${stem}.options" ${bitcode}
    DEPFILE "${depfile}"
    COMMENT "MLIRGPU ${name}: ${stem}.mlir"
    VERBATIM)
  set_property(DIRECTORY APPEND PROPERTY ADDITIONAL_CLEAN_FILES "${depfile}")
  set(_mlirgpu_listed ${listed} PARENT_SCOPE)
  set(_mlirgpu_outputs ${outputs} PARENT_SCOPE)
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
    _mlirgpu_compile(mlirgpu_add_object "${name}" "${source}" "${folder}" "${stem}" "${paths}" "${options}"
                     "${libraries}" "${folder}/${stem}.dumps" "")
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
  _mlirgpu_compile(mlirgpu_add_library "${name}" "${source}" "${folder}" "${name}" "${paths}" "${options}"
                   "${libraries}" "${folder}/${name}.dumps" "${folder}/${name}.stamp")
  set(bitcode ${_mlirgpu_listed})
  list(FILTER bitcode INCLUDE REGEX "\\.bc$")  # the rest are dumps and the record
  add_custom_target(${name} DEPENDS ${_mlirgpu_outputs})
  set_property(TARGET ${name} PROPERTY MLIRGPU_BITCODE ${bitcode})
  set_property(TARGET ${name} PROPERTY MLIRGPU_OUTPUTS ${_mlirgpu_listed})
endfunction()

cmake_policy(POP)
