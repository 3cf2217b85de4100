"""The link stage's plans (mlirgpu.llvm.libraries): the bitcode a module gets of a library leaves out only the
declarations that do nothing in LLVM's linker, so it links to exactly what the whole reduced library links to;
a library file is read again only when it changes on disk; a closure is worked out once per set of names.

(Upstream identity with libdevice and user libraries is checked by test_upstream_identity on the corpus.)"""
import os

import llvmlite.binding as llvm
import pytest

from mlirgpu.llvm import arena, libraries, ops, toolchain

LIBRARY = """\
target triple = "nvptx64-nvidia-cuda"

@counter = external addrspace(1) global i32
declare hidden void @shared()
declare hidden void @aliased()
declare void @unused_decl()
declare float @llvm.fabs.f32(float)
declare i32 @only_dropped_uses()

define float @helper(float %x) {
  %a = call float @llvm.fabs.f32(float %x)
  %c = load i32, ptr addrspace(1) @counter
  %f = sitofp i32 %c to float
  %r = fadd float %a, %f
  ret float %r
}

define i32 @unreached() {
  %r = call i32 @only_dropped_uses()
  ret i32 %r
}
"""

MODULE = """\
target triple = "nvptx64-nvidia-cuda"
@counter = addrspace(1) global i32 0
@other = addrspace(1) global i32 1
declare float @helper(float)
declare void @shared()
{extra}
define void @k(ptr %p) {{
  %v = load float, ptr %p
  %r = call float @helper(float %v)
  store float %r, ptr %p
  call void @shared()
  ret void
}}
"""


@pytest.fixture
def library(tmp_path, monkeypatch):
    monkeypatch.setenv("MLIRGPU_CACHE_DIR", str(tmp_path / "cache"))
    return _write(tmp_path, LIBRARY)


def _write(folder, text):
    (folder / "lib.ll").write_text(text)
    path = str(folder / "lib.bc")
    with llvm.create_context() as scratch, llvm.parse_assembly(text, context=scratch) as module:
        data = module.as_bitcode()
    with open(path + ".new", "wb") as handle:
        handle.write(data)
    os.replace(path + ".new", path)  # a new file, as a build writes one
    return path


def _linked(ir, path, whole=False):
    """The module linked with the library at `path`; `whole`: as if llvmlite could not list all its names, so it
    gets the whole reduced library."""
    with arena.Arena():
        job_module = ops.parse(ir, "nvptx64-nvidia-cuda", "sm_80", "", 2)
        job_module.indirect = job_module.indirect or whole
        ops.link(job_module, [(path, [], False)])
        return str(job_module)


def _functions(bitcode):
    with llvm.create_context() as scratch, llvm.parse_bitcode(bitcode, context=scratch) as module:
        with module.functions as functions:
            return sorted(function.name for function in functions)


def test_a_module_gets_the_library_without_declarations_that_do_nothing(library):
    ir = MODULE.format(extra="")
    plan = libraries.link_plan(library, [], None, None, {"helper", "shared"})
    assert _functions(plan.bitcode({"counter", "other", "helper", "shared", "k"})) == \
        ["helper", "llvm.fabs.f32", "shared"]  # unused_decl, and only_dropped_uses once @unreached is dropped
    assert _functions(plan.bitcode(None)) == \
        ["aliased", "helper", "llvm.fabs.f32", "only_dropped_uses", "shared", "unused_decl"]
    linked = _linked(ir, library)
    assert linked == _linked(ir, library, whole=True)
    # what the kept declarations did in LLVM's linker: @shared took the library's visibility; @counter, named by
    # the library's external global, moved after @other
    assert "declare hidden void @shared()" in linked
    assert linked.index("@other =") < linked.index("@counter =")
    assert "define internal float @helper" in linked and "unreached" not in linked


def test_a_module_with_aliases_gets_every_declaration(library):
    """llvmlite lists no aliases, so a module that may hold one gets the whole reduced library: the library's
    hidden declaration of @aliased makes the module's alias hidden, as upstream's linker does."""
    ir = MODULE.format(extra="@aliased = alias void (ptr), ptr @k")
    with arena.Arena():
        assert ops.parse(ir, "nvptx64-nvidia-cuda", "sm_80", "", 2).indirect
    assert "@aliased = hidden alias void (ptr), ptr @k" in _linked(ir, library)


def test_the_library_file_is_read_again_only_when_it_changes(library, tmp_path, monkeypatch):
    ir = MODULE.format(extra="")
    first = _linked(ir, library)
    opened = []
    real_open = open

    def counting_open(path, *args, **kwargs):
        opened.append(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(libraries, "open", counting_open, raising=False)
    monkeypatch.setattr(toolchain, "open", counting_open, raising=False)
    assert _linked(ir, library) == first
    assert library not in opened
    _write(tmp_path, LIBRARY.replace("fadd float %a, %f", "fsub float %a, %f"))
    again = _linked(ir, library)
    assert library in opened and again != first and "fsub float" in again


def test_closures_are_worked_out_once_per_set_of_names(library):
    """Names the library does not define do not make another closure (nor another plan)."""
    plan = libraries.link_plan(library, [], None, None, {"helper", "shared"})
    assert libraries.link_plan(library, [], None, None, {"helper", "elsewhere"}) is plan
    assert libraries.link_plan(library, [], None, None, {"unreached"}) is not plan
