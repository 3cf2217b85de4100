"""Device-function libraries in real SCons builds (`env.GpuLibrary`, `GPU_LINKLIBS=lib`) and through the CLI:
what an edit of the library rebuilds, a function removed that a kernel calls, libraries of libraries, a cycle,
a library and a kernel in one file, several chips, `scons -c` and CacheDir, `list-outputs` / the depfile, and
examples/library through the CMake and Meson recipes."""
import os
import shutil
import subprocess
import sys

import pytest

from corpusutil import ROOT
from sconsutil import TOOLPATH, compiled, scons

MATHLIB = """\
// the math library
module attributes {gpu.container_module} {
  gpu.module @mathlib {
    func.func @axpy(%a: f32, %x: f32, %y: f32) -> f32 {
      %m = arith.mulf %a, %x : f32
      %r = arith.addf %m, %y : f32
      return %r : f32
    }
    func.func @twice(%x: f32) -> f32 {
      %r = arith.addf %x, %x : f32
      return %r : f32
    }
  }
}
"""

KERNEL = """\
module attributes {{gpu.container_module}} {{
  gpu.module @{name} {{
    func.func private @{callee}(f32{more}) -> f32
    gpu.func @{name}_kernel(%x: memref<64xf32>, %a: f32) kernel {{
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<64xf32>
      %r = func.call @{callee}(%v{args}) : (f32{more}) -> f32
      memref.store %r, %x[%i] : memref<64xf32>
      gpu.return
    }}
  }}
}}
"""


def kernel(name, callee, arity=1):
    more = ", f32" * (arity - 1)
    args = ", %a" * (arity - 1)
    return KERNEL.format(name=name, callee=callee, more=more, args=args)


SCONSTRUCT = """\
env = Environment(tools=["default", "mlirgpu"], toolpath=[{toolpath!r}])
env.SetDefault(GPU_TARGET="nvvm", GPU_CHIP="sm_80")
{body}
"""

TWO_USERS = """\
mathlib = env.GpuLibrary("mathlib", "mathlib.mlir")
env.GpuObject("a", "a.mlir", GPU_LINKLIBS=mathlib)
env.GpuObject("b", "b.mlir", GPU_LINKLIBS=mathlib)
env.GpuObject("c", "c.mlir")
"""


def project(path, body=TWO_USERS, **sources):
    path.mkdir(parents=True, exist_ok=True)
    (path / "SConstruct").write_text(SCONSTRUCT.format(toolpath=TOOLPATH, body=body))
    for name, text in sources.items():
        (path / f"{name}.mlir").write_text(text)
    return path


def two_users(path):
    return project(path, mathlib=MATHLIB, a=kernel("a", "axpy", 3), b=kernel("b", "twice"),
                   c=kernel("c", "twice").replace("func.func private @twice(f32) -> f32",
                                                  "func.func @twice(%x: f32) -> f32 { return %x : f32 }"))


def test_editing_the_library_rebuilds_exactly_its_users_and_a_comment_none(tmp_path):
    path = two_users(tmp_path)
    first = scons(path, "DUMP=1")
    assert compiled(first) == ["a.mlir", "b.mlir", "c.mlir", "mathlib.mlir"]
    assert (path / "mathlib.nvvm.bc").is_file()
    assert sorted(os.listdir(path / "mathlib.dumps")) == ["mathlib.initial.ll", "mathlib.linked.ll", "mlirgpu.json"]
    assert compiled(scons(path, "DUMP=1")) == []
    (path / "mathlib.mlir").write_text("// a comment that changes no bitcode\n" + MATHLIB)
    assert compiled(scons(path, "DUMP=1")) == ["mathlib.mlir"]
    (path / "mathlib.mlir").write_text(MATHLIB.replace("%r = arith.addf %x, %x", "%r = arith.mulf %x, %x"))
    assert compiled(scons(path, "DUMP=1")) == ["a.mlir", "b.mlir", "mathlib.mlir"]
    assert "fmul" in (path / "b.dumps" / "b.linked.ll").read_text()


def test_removing_a_function_a_kernel_calls_fails_naming_it(tmp_path):
    path = two_users(tmp_path)
    scons(path)
    start = MATHLIB.index("    func.func @twice")
    (path / "mathlib.mlir").write_text(MATHLIB[:start] + "  }\n}\n")
    run = scons(path, "-k", check=False)
    assert run.returncode != 0
    assert "module @b calls @twice, which no linked library defines" in run.stderr
    assert "fix: link the library that defines it (GPU_LINKLIBS" in run.stderr
    assert not (path / "b.o").exists() and (path / "a.o").is_file()


def test_a_library_of_libraries(tmp_path):
    """`mid` links `base` (only what it needs, internalized); a kernel linking `mid` alone gets both."""
    base = MATHLIB.replace("@mathlib", "@base")
    mid = """\
module attributes {gpu.container_module} {
  gpu.module @mid {
    func.func private @twice(f32) -> f32
    func.func @quadruple(%x: f32) -> f32 {
      %t = call @twice(%x) : (f32) -> f32
      %r = call @twice(%t) : (f32) -> f32
      return %r : f32
    }
  }
}
"""
    body = """\
base = env.GpuLibrary("base", "base.mlir")
mid = env.GpuLibrary("mid", "mid.mlir", GPU_LINKLIBS=base)
env.GpuObject("k", "k.mlir", GPU_LINKLIBS=mid)
"""
    path = project(tmp_path, body, base=base, mid=mid, k=kernel("k", "quadruple"))
    assert compiled(scons(path, "DUMP=1")) == ["base.mlir", "k.mlir", "mid.mlir"]
    linked = (path / "k.dumps" / "k.linked.ll").read_text()
    assert "define internal float @twice(" in linked and "define internal float @quadruple(" in linked
    assert "axpy" not in linked  # mid needs only twice from base
    (path / "base.mlir").write_text(base.replace("%r = arith.addf %x, %x", "%r = arith.mulf %x, %x"))
    assert compiled(scons(path, "DUMP=1")) == ["base.mlir", "k.mlir", "mid.mlir"]


def test_a_cycle_of_libraries_is_an_error_naming_it(tmp_path):
    body = """\
env.GpuLibrary("one", "one.mlir", GPU_LINKLIBS=["two.nvvm.bc"])
env.GpuLibrary("two", "two.mlir", GPU_LINKLIBS=["one.nvvm.bc"])
"""
    path = project(tmp_path, body, one=MATHLIB.replace("@mathlib", "@one"), two=MATHLIB.replace("@mathlib", "@two"))
    run = scons(path, check=False)
    assert run.returncode != 0
    assert "Found dependency cycle(s)" in run.stderr and "one.nvvm.bc" in run.stderr and "two.nvvm.bc" in run.stderr
    cli = _cli("compile", "--emit", "library", str(path / "one.mlir"), "-o", str(path / "one"), "--target", "nvvm",
               "--chip", "sm_80", "-l", str(path / "one.nvvm.bc"))
    assert cli.returncode == 1 and "links its own output" in cli.stderr and "(a cycle)" in cli.stderr


def test_a_library_and_a_kernel_in_one_file_and_several_chips(tmp_path):
    """One file both a library (its functions) and an object (its kernel); built for two chips, each kernel
    job links the library file of its own chip."""
    both = MATHLIB.replace("  }\n}\n", "") + """\
    gpu.func @own(%x: memref<64xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<64xf32>
      %r = func.call @twice(%v) : (f32) -> f32
      memref.store %r, %x[%i] : memref<64xf32>
      gpu.return
    }
  }
}
"""
    body = """\
both = env.GpuLibrary("mathlib", "both.mlir")
env.GpuObject("both", "both.mlir")
env.GpuObject("k", "k.mlir", GPU_LINKLIBS=both)
print("library:", sorted(str(node) for node in both))
print("dumps:", sorted(str(node) for node in env.GpuDumps(both)))
"""
    path = project(tmp_path, body, both=both, k=kernel("k", "twice"))
    run = scons(path, "DUMP=1", "GPU_CHIP=sm_80,sm_90")
    assert "library: ['mathlib.nvvm.sm_80.bc', 'mathlib.nvvm.sm_90.bc']" in run.stdout
    assert "dumps: ['mathlib.dumps/mathlib.sm_80.initial.ll', 'mathlib.dumps/mathlib.sm_80.linked.ll', " \
        "'mathlib.dumps/mathlib.sm_90.initial.ll', 'mathlib.dumps/mathlib.sm_90.linked.ll', " \
        "'mathlib.dumps/mlirgpu.json']" in run.stdout
    assert (path / "mathlib.nvvm.sm_80.bc").is_file() and (path / "mathlib.nvvm.sm_90.bc").is_file()
    assert not (path / "mathlib.nvvm.bc").exists()
    record = (path / "k.dumps" / "mlirgpu.json").read_text()
    assert '"chip": "sm_80"' in record and '"chip": "sm_90"' in record
    assert ".target sm_90" in (path / "k.dumps" / "k.sm_90.isa").read_text()
    assert "define internal float @twice(" in (path / "k.dumps" / "k.sm_90.linked.ll").read_text()


def test_clean_and_cachedir_handle_libraries_like_objects(tmp_path):
    path = two_users(tmp_path / "one")
    (path / "SConstruct").write_text((path / "SConstruct").read_text() + "CacheDir('../cache')\n")
    scons(path, "DUMP=1")
    built = sorted(name for name in os.listdir(path) if name.startswith("mathlib"))
    assert built == ["mathlib.dumps", "mathlib.mlir", "mathlib.nvvm.bc"]
    scons(path, "-c", "DUMP=1")
    assert sorted(name for name in os.listdir(path) if name.startswith("mathlib")) == ["mathlib.mlir"]
    run = scons(path, "DUMP=1")
    assert compiled(run) == []  # every output, the library's too, from the CacheDir
    assert (path / "mathlib.nvvm.bc").is_file() and (path / "mathlib.dumps" / "mathlib.linked.ll").is_file()


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "mlirgpu", *args], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons")))


def test_cli_library_list_outputs_and_depfile(tmp_path):
    (tmp_path / "mathlib.mlir").write_text(MATHLIB)
    common = [str(tmp_path / "mathlib.mlir"), "-o", str(tmp_path / "lib" / "mathlib"), "--emit", "library",
              "--target", "nvvm", "--chip", "sm_80,sm_90", "--dump-intermediates", str(tmp_path / "d")]
    listed = _cli("list-outputs", *common)
    assert listed.returncode == 0, listed.stderr
    names = [os.path.relpath(line, tmp_path) for line in listed.stdout.split()]
    assert names == ["lib/mathlib.nvvm.sm_80.bc", "lib/mathlib.nvvm.sm_90.bc", "d/mathlib.sm_80.initial.ll",
                     "d/mathlib.sm_80.linked.ll", "d/mathlib.sm_90.initial.ll", "d/mathlib.sm_90.linked.ll",
                     "d/mlirgpu.json"]
    os.makedirs(tmp_path / "lib")
    run = _cli("compile", *common, "--depfile", str(tmp_path / "lib.d"))
    assert run.returncode == 0, run.stderr
    assert sorted(os.path.relpath(os.path.join(folder, name), tmp_path) for folder, _d, files in
                  os.walk(tmp_path) for name in files if not name.endswith((".mlir", ".d"))) == sorted(names)
    depfile = (tmp_path / "lib.d").read_text()
    assert depfile.startswith(f"{tmp_path / 'lib' / 'mathlib.nvvm.sm_80.bc'}: {tmp_path / 'mathlib.mlir'}")
    assert "libdevice" in depfile


def _edit_example_library(source, text):
    (source / "mathlib.mlir").write_text(text)


@pytest.mark.needs("cmake", "./dev test installs it (Debian packages cmake and ninja-build)")
@pytest.mark.parametrize("generator", ["Ninja", "Unix Makefiles"])
def test_the_example_through_cmake(tmp_path, generator):
    """examples/library with CMake: the library is built and linked; a comment-only edit recompiles it once and
    alone (its bitcode keeps its bytes and time), and the build after that is a null build with both generators
    (Makefiles compare the library's stamp, not its bitcode), a deleted bitcode file is compiled again, and an
    edit of a function rebuilds both objects. With
    Makefiles, a kernel that named the library's files as its own dependencies ran the library's rule again in its
    target."""
    from test_cmake import build, commands_run, configure

    source = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "examples", "library"), source)
    configure(source, tmp_path / "b", generator, "-DGPU_TARGET=nvvm", "-DMLIRGPU_DUMP=ON")
    first = commands_run(build(tmp_path / "b"))
    assert {"MLIRGPU mathlib: mathlib.mlir", "MLIRGPU gpu_kernels: activations.mlir",
            "MLIRGPU gpu_kernels: normalize.mlir"} <= set(first)
    assert first.count("MLIRGPU mathlib: mathlib.mlir") == 1, first
    assert (tmp_path / "b" / "mathlib" / "mathlib.nvvm.bc").is_file()
    assert subprocess.run(["ctest", "--test-dir", str(tmp_path / "b")], capture_output=True).returncode == 0
    text = (source / "mathlib.mlir").read_text()
    _edit_example_library(source, "// only a comment\n" + text)
    assert commands_run(build(tmp_path / "b")) == ["MLIRGPU mathlib: mathlib.mlir"]
    assert commands_run(build(tmp_path / "b")) == []
    (tmp_path / "b" / "mathlib" / "mathlib.nvvm.bc").unlink()  # a deleted bitcode file is made again (a new
    again = commands_run(build(tmp_path / "b"))  # file: what links it is relinked, as for any remade input)
    assert again.count("MLIRGPU mathlib: mathlib.mlir") == 1, again
    assert (tmp_path / "b" / "mathlib" / "mathlib.nvvm.bc").is_file()
    assert commands_run(build(tmp_path / "b")) == []
    _edit_example_library(source, text.replace("%r = arith.addf %m, %y", "%r = arith.subf %m, %y"))
    edited = commands_run(build(tmp_path / "b"))
    assert {"MLIRGPU gpu_kernels: activations.mlir", "MLIRGPU gpu_kernels: normalize.mlir"} <= set(edited)
    assert edited.count("MLIRGPU mathlib: mathlib.mlir") == 1, edited


def test_the_example_through_meson(tmp_path):
    from test_meson import run

    source = tmp_path / "library"
    shutil.copytree(os.path.join(ROOT, "examples", "library"), source)
    run(["meson", "setup", "build", "-Dgpu_target=rocdl"], source)
    first = run(["meson", "compile", "-C", "build"], source)
    assert "Generating mathlib" in first and "Generating activations" in first
    assert (source / "build" / "mathlib.rocdl.bc").is_file()
    assert (source / "build" / "mathlib.mathlib.linked.ll").is_file()
    assert "OK" in run(["meson", "test", "-C", "build"], source)
    text = (source / "mathlib.mlir").read_text()
    _edit_example_library(source, "// only a comment\n" + text)
    again = run(["meson", "compile", "-C", "build"], source)
    assert "Generating mathlib" in again and "Generating activations" not in again


TWO_MODULES = """\
module attributes {gpu.container_module} {
  gpu.module @first {
    func.func @one(%x: f32) -> f32 {
      %r = arith.addf %x, %x : f32
      return %r : f32
    }
  }
  gpu.module @second {
    func.func @two(%x: f32) -> f32 {
      %e = math.exp %x : f32
      return %e : f32
    }
  }
}
"""


def test_cli_gpu_modules_of_one_target_share_its_file_and_a_clash_is_named(tmp_path):
    from mlirgpu.llvm import toolchain

    (tmp_path / "two.mlir").write_text(TWO_MODULES)
    run = _cli("compile", "--emit", "library", str(tmp_path / "two.mlir"), "-o", str(tmp_path / "two"),
               "--target", "nvvm", "--chip", "sm_80")
    assert run.returncode == 0, run.stderr
    text = subprocess.run([toolchain.llvm_tool("llvm-dis"), str(tmp_path / "two.nvvm.bc"), "-o", "-"],
                          capture_output=True, text=True, check=True).stdout
    assert "define float @one(" in text and "define float @two(" in text
    shutil.copy(tmp_path / "two.mlir", tmp_path / "clash.mlir")
    clash = ["compile", "--emit", "library", str(tmp_path / "clash.mlir"), "-o", str(tmp_path / "clash"),
             "--target", "nvvm", "--chip", "sm_80"]
    assert _cli(*clash).returncode == 0 and (tmp_path / "clash.nvvm.bc").is_file()
    (tmp_path / "clash.mlir").write_text(TWO_MODULES.replace("@two(", "@one("))
    run = _cli(*clash)
    assert run.returncode == 1 and not (tmp_path / "clash.nvvm.bc").exists()  # no stale library left
    assert "clash.mlir:8: error: gpu.modules @first and @second cannot share the library clash.nvvm.bc" in run.stderr
    assert "symbol multiply defined" in run.stderr


def test_the_api_builds_a_library_with_compile_to_object_only(tmp_path):
    from mlirgpu import CompileOptions, compile_file, compile_to_object
    from mlirgpu.errors import CompileError

    (tmp_path / "mathlib.mlir").write_text(MATHLIB)
    options = CompileOptions(emit="library", target="nvvm", chip="sm_80")
    with pytest.raises(CompileError, match="a library compile writes files: it needs their prefix"):
        compile_file(str(tmp_path / "mathlib.mlir"), options)
    result = compile_to_object(str(tmp_path / "mathlib.mlir"), str(tmp_path / "out" / "mathlib"), options)
    assert (tmp_path / "out" / "mathlib.nvvm.bc").read_bytes()[:4] == b"BC\xc0\xde"
    assert [job.module.name for job in result.jobs] == ["mathlib"] and result.warnings == []
