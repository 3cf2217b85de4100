"""The generated C header in the C dialects real projects build with: C89 (`-std=c89 -pedantic-errors`, as
apache/serf builds), C99 and C++; and the registry's scope: MLIRGPU_FOREACH_BINARY lists the binaries of the ELF
module it is compiled into (the linker may or may not let a program see a shared library's), so a program whose
kernels live in a shared library enumerates them through a function the library defines with
MLIRGPU_DEFINE_REGISTRY."""
import os
import subprocess
import sys

import pytest

from corpusutil import ROOT

ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))

TWO_MODULES = """\
module attributes {gpu.container_module} {
  gpu.module @first [#rocdl.target<chip = "gfx942">] {
    llvm.func @one() attributes {gpu.kernel, rocdl.kernel} { llvm.return }
  }
  gpu.module @second [#rocdl.target<chip = "gfx90a">] {
    llvm.func @two() attributes {gpu.kernel, rocdl.kernel} { llvm.return }
  }
}
"""
C89_USER = """\
#include <stdio.h>
#include "k.h"
int main(void) {
  const struct mlirgpu_binary *b;
  int n = 0;
  MLIRGPU_EACH_BINARY(b) { n++; }
  printf("%d\\n", n);
  return n == 0;
}
"""
C99_USER = """\
#include <stdio.h>
#include "k.h"
int main(void) {
  int n = 0;
  MLIRGPU_FOREACH_BINARY(b) { n += b->size > 0; }
  printf("%d\\n", n);
  return n == 0;
}
"""
LIBRARY = '#include "k.h"\nMLIRGPU_DEFINE_REGISTRY(kernels_binaries)\n'
PROGRAM = """\
#include <stdio.h>
#include "k.h"
const struct mlirgpu_binary *kernels_binaries(uint64_t *count);
int main(void) {
  uint64_t count = 0, i;
  const struct mlirgpu_binary *first = kernels_binaries(&count);
  for (i = 0; i < count; i++)
    printf("%s %s %llu\\n", first[i].module, first[i].target, (unsigned long long)first[i].size);
  return !(count == 2);
}
"""


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    folder = tmp_path_factory.mktemp("header")
    source = folder / "k.mlir"
    source.write_text(TWO_MODULES)
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", str(source), "-o", str(folder / "k.o"),
                          "--header", str(folder / "k.h")], capture_output=True, text=True, env=ENV)
    assert run.returncode == 0, run.stderr
    return folder


@pytest.mark.parametrize("compiler,standard,user", [("gcc", "-std=c89", C89_USER), ("gcc", "-std=c11", C89_USER),
                                                    ("g++", "-std=c++17", C89_USER), ("gcc", "-std=c99", C99_USER),
                                                    ("g++", "-std=c++11", C99_USER)])
def test_the_header_compiles_in_every_dialect_and_lists_the_binaries(compiled, compiler, standard, user, tmp_path):
    main = tmp_path / ("main.cc" if compiler == "g++" else "main.c")
    main.write_text(user)
    program = tmp_path / "app"
    build = subprocess.run([compiler, standard, "-pedantic-errors", "-Wall", "-Werror", "-I", str(compiled),
                            str(main), str(compiled / "k.o"), "-o", str(program)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(program)], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "2", run.stdout


def test_a_shared_librarys_binaries_are_listed_by_its_own_function(compiled, tmp_path):
    (tmp_path / "lib.c").write_text(LIBRARY)
    (tmp_path / "main.c").write_text(PROGRAM)
    subprocess.run(["gcc", "-std=c89", "-fPIC", "-shared", "-I", str(compiled), str(tmp_path / "lib.c"),
                    str(compiled / "k.o"), "-o", str(tmp_path / "libkernels.so")], check=True)
    subprocess.run(["gcc", "-std=c89", "-I", str(compiled), str(tmp_path / "main.c"), "-L", str(tmp_path),
                    "-lkernels", f"-Wl,-rpath,{tmp_path}", "-o", str(tmp_path / "app")], check=True)
    run = subprocess.run([str(tmp_path / "app")], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(run.stdout.splitlines()) == 2 and all(" rocdl " in line for line in run.stdout.splitlines())
