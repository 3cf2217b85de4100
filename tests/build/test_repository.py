"""Out-of-tree builds: a checkout (the repository) built into an empty folder with `scons -Y REPO`, with
`Repository()` in the build folder's SConstruct, and with `VariantDir(duplicate=0)` inside either.

SCons reads such a build's sources, libraries and SConscripts from the repository (or, under duplicate=0, from
the source tree), so the tool must too: else it plans no dumps, the compile then writes files nobody declared,
and a DUMP toggle after a build is taken as up to date. Each layout is checked against the same project built in
place: the same dumps, the same objects, a host program that finds every embedded binary.
"""
import json
import os
import re

import pytest

from sconsutil import _record_without_origins as _record
from sconsutil import compiled, files, make_project, same_tree, scons

SCONSCRIPT = """\
Import("env")
objects = [env.GpuObject(name, name + ".mlir") for name in ("a", "c")]
objects += env.GpuObject("d", "d.mlir", GPU_LINKLIBS=["lib.bc"])
program = env.Program("host", ["main.c"] + objects)
env.Command("host.out", program, "${SOURCE.abspath} > $TARGET")
"""

TOP = """\
env = Environment(tools=["default", "mlirgpu"], toolpath=[{toolpath!r}], CPPPATH=["."])
env.SetDefault(GPU_CHIP="sm_80", GPU_TARGET="nvvm")
"""

MAIN_C = """\
#include <stdio.h>
#include "a.h"

int main(void) {
  printf("a.h: %s %llu bytes\\n", SAXPY_NVVM_FORMAT, (unsigned long long)saxpy_nvvm_binary_size);
  MLIRGPU_FOREACH_BINARY(b) printf("%s %s %s %llu\\n", b->source, b->module, b->format, (unsigned long long)b->size);
  return 0;
}
"""

# How each layout finds the checkout: (the checkout's own SConstruct, the build folder's SConstruct or None, the
# scons arguments, the folder below the build folder that gets the outputs, the checkout's folder of sources).
LAYOUTS = {
    "scons -Y": ('SConscript("SConscript", exports="env")\n', None, ["-Y", "{repo}"], "", ""),
    "Repository()": ('SConscript("SConscript", exports="env")\n',
                     'Repository({repo!r})\nSConscript("SConscript", exports="env")\n', [], "", ""),
    "scons -Y, VariantDir(duplicate=0)": (
        'SConscript("src/SConscript", variant_dir="out", duplicate=0, exports="env")\n', None, ["-Y", "{repo}"],
        "out", "src"),
    "Repository(), VariantDir(duplicate=0)": (
        'SConscript("src/SConscript", variant_dir="out", duplicate=0, exports="env")\n',
        'Repository({repo!r})\nSConscript("src/SConscript", variant_dir="out", duplicate=0, exports="env")\n',
        [], "out", "src"),
}


def checkout(path, layout):
    """The repository: SConstruct, SConscript, three .mlir sources, a bitcode library and C host code."""
    top, _local, _args, _out, sources = LAYOUTS[layout]
    from sconsutil import TOOLPATH

    make_project(path / sources if sources else path)
    (path / sources / "SConscript").write_text(SCONSCRIPT)
    (path / sources / "main.c").write_text(MAIN_C)
    for name in ("SConstruct", "b.mlir"):
        os.remove(path / sources / name)
    (path / "SConstruct").write_text(TOP.format(toolpath=TOOLPATH) + top)
    return path


class Build:
    """An empty build folder for a checkout, and `scons` run there the way the layout says."""

    def __init__(self, tmp_path, layout):
        self.layout = layout
        self.repo = checkout(tmp_path / "repo", layout)
        self.folder = tmp_path / "build"
        self.folder.mkdir()
        top, local, args, out, _sources = LAYOUTS[layout]
        from sconsutil import TOOLPATH

        if local:
            (self.folder / "SConstruct").write_text(TOP.format(toolpath=TOOLPATH) + local.format(repo=str(self.repo)))
        self.args = [arg.format(repo=self.repo) for arg in args]
        self.out = self.folder / out
        self.repo_files = self.snapshot()

    def scons(self, *args, check=True):
        return scons(self.folder, *self.args, *args, check=check)

    def snapshot(self):
        return {name: (self.repo / name).read_bytes() for name in files(self.repo)}

    def dumps(self):
        return sorted(name for name in files(self.out) if ".dumps/" in name)


@pytest.fixture(scope="module")
def in_place(tmp_path_factory):
    """The project built where it lies, with dumps: what every layout must make."""
    project = checkout(tmp_path_factory.mktemp("in_place") / "p", "Repository()")
    scons(project, "DUMP=1")
    return project


def compiled_names(run):
    return sorted(os.path.basename(path) for path in compiled(run))


def same_as_in_place(build, in_place):
    """The build folder holds the dumps, objects and header the in-place build made, byte for byte; the compile
    records differ only in which stages came from the cache and in naming the source (and linked library) where
    it lies, in the repository. The host program finds every binary."""
    dumps = sorted(name for name in files(in_place) if ".dumps/" in name)
    assert build.dumps() == dumps
    names = [name for name in dumps if not name.endswith(("mlirgpu.json", "repro.sh"))] + ["a.o", "c.o", "d.o"]
    assert same_tree(str(build.out), str(in_place), names) == []
    for header in ("a.h", "c.h", "d.h"):  # the include guard is made from the header's path
        built, expected = (re.sub(r"MLIRGPU_\w+_H_\w+", "GUARD", (folder / header).read_text())
                           for folder in (build.out, in_place))
        assert built == expected
    sources = build.repo / LAYOUTS[build.layout][4]
    for stem in ("a", "c", "d"):
        record, expected = (_record(folder / f"{stem}.dumps" / "mlirgpu.json") for folder in (build.out, in_place))
        assert os.path.samefile(build.folder / record.pop("source"), sources / f"{stem}.mlir")
        for built_job, job in zip(record["jobs"], expected["jobs"]):  # a linked library: read where it lies too
            for built_lib, lib in zip(built_job["libraries"], job["libraries"]):
                assert os.path.samefile(build.folder / built_lib.pop("path"),
                                        sources / os.path.basename(lib.pop("path")))
        for each in (record, expected):
            each.pop("source", None)
            each["sha256"].pop("repro.sh")  # it names the files it reads, in the repository
        assert json.dumps(record).replace(f"{sources}/", "") == json.dumps(expected)
    listing = (build.out / "host.out").read_text()
    assert listing.startswith("a.h: fatbin ") and " 0 bytes" not in listing
    for line in ("a.mlir saxpy_nvvm fatbin", "c.mlir vecadd_neutral fatbin", "d.mlir saxpy_linked fatbin"):
        assert line in listing, listing
    assert build.snapshot() == build.repo_files  # nothing written into the checkout


@pytest.mark.parametrize("layout", LAYOUTS)
def test_clean_build_with_dumps_matches_an_in_place_build(tmp_path, layout, in_place):
    build = Build(tmp_path, layout)
    run = build.scons("DUMP=1")
    assert compiled_names(run) == ["a.mlir", "c.mlir", "d.mlir"]
    same_as_in_place(build, in_place)
    assert "up to date" in build.scons("DUMP=1").stdout


@pytest.mark.parametrize("layout", LAYOUTS)
def test_dumps_turned_on_after_a_build_without(tmp_path, layout, in_place):
    build = Build(tmp_path, layout)
    build.scons("DUMP=0")
    assert build.dumps() == []
    assert compiled_names(build.scons("DUMP=1")) == ["a.mlir", "c.mlir", "d.mlir"]
    same_as_in_place(build, in_place)
    assert "up to date" in build.scons("DUMP=1").stdout


@pytest.mark.parametrize("layout", ["scons -Y", "Repository(), VariantDir(duplicate=0)"])
def test_dumps_on_off_on_and_a_lost_dump(tmp_path, layout, in_place):
    build = Build(tmp_path, layout)
    build.scons("DUMP=1")
    assert "up to date" in build.scons("DUMP=0").stdout  # turning dumps off rebuilds nothing
    assert "up to date" in build.scons("DUMP=1").stdout  # and on again: every dump is still there
    (build.out / "c.dumps" / "vecadd_neutral.isa").unlink()
    assert compiled_names(build.scons("DUMP=1")) == ["c.mlir"]
    same_as_in_place(build, in_place)


@pytest.mark.parametrize("layout", ["scons -Y", "Repository(), VariantDir(duplicate=0)"])
def test_edits_in_the_repository_rebuild(tmp_path, layout):
    build = Build(tmp_path, layout)
    build.scons("DUMP=1")
    sources = build.repo / LAYOUTS[layout][4]
    text = (sources / "a.mlir").read_text()
    (sources / "a.mlir").write_text(text.replace("llvm.func @saxpy(", "llvm.func @saxpy_edited("))
    run = build.scons("DUMP=1")
    assert compiled_names(run) == ["a.mlir"]
    assert ".entry saxpy_edited(" in (build.out / "a.dumps" / "saxpy_nvvm.isa").read_text()
    from sconsutil import write_library

    write_library(sources, 3)  # the library GPU_LINKLIBS names, in the repository
    assert compiled_names(build.scons("DUMP=1")) == ["d.mlir"]
    assert "up to date" in build.scons("DUMP=1").stdout


@pytest.mark.parametrize("layout", ["scons -Y", "Repository(), VariantDir(duplicate=0)"])
def test_clean_removes_every_output_and_nothing_in_the_repository(tmp_path, layout):
    build = Build(tmp_path, layout)
    build.scons("DUMP=1")
    build.scons("DUMP=0", "-c")
    left = [name for name in files(build.folder) if name != "SConstruct" and not name.startswith(".sconsign")]
    assert left == []
    assert build.snapshot() == build.repo_files


def test_a_substitute_folder_in_the_repository_is_read_and_tracked(tmp_path):
    """GPU_SUBSTITUTE names a folder of the checkout: the compile reads the hand-edited PTX there, and editing it
    in the repository rebuilds the object using it."""
    build = Build(tmp_path, "scons -Y")
    build.scons("DUMP=1")
    ptx = (build.out / "a.dumps" / "saxpy_nvvm.isa").read_text()
    (build.repo / "S").mkdir()
    for constant in ("0f40490FDB", "0f3F800000"):
        edited = re.sub(r"add\.rn\.f32 \t(%r\d+), (%r\d+), %r\d+;", rf"add.rn.f32 \t\1, \2, {constant};", ptx)
        assert edited != ptx
        (build.repo / "S" / "saxpy_nvvm.isa").write_text(edited)
        run = build.scons("DUMP=1", "GPU_SUBSTITUTE=S")
        assert "a.mlir" in compiled_names(run) and "saxpy_nvvm.isa" in run.stderr
        assert _record(build.out / "a.dumps" / "mlirgpu.json")["substituted"] is True
        assert constant in (build.out / "a.dumps" / "saxpy_nvvm.isa").read_text()
        assert "up to date" in build.scons("DUMP=1", "GPU_SUBSTITUTE=S").stdout


def test_an_out_of_tree_build_shares_a_cachedir_with_a_build_in_place(tmp_path):
    """Signatures name the libraries as the build files do, not by the repository's path: every object a build in
    the checkout cached is restored in an out-of-tree build, the one linking a library of the checkout too."""
    build = Build(tmp_path, "scons -Y")
    top = build.repo / "SConstruct"
    top.write_text(top.read_text().replace("env.SetDefault(", f"CacheDir({str(tmp_path / 'cache')!r})\n"
                                           "env.SetDefault(", 1))
    scons(build.repo, "DUMP=1")
    scons(build.repo, "DUMP=1", "-c")  # the checkout is clean again: the build folder must make or fetch it all
    run = build.scons("DUMP=1")
    assert compiled(run) == []
    for name in ("a.o", "a.h", "c.o", "d.o", "d.h", "d.dumps/saxpy_linked.fatbin", "host.out"):
        assert f"Retrieved `{name}' from cache" in run.stdout, run.stdout


def test_a_generated_source_with_dumps_builds_and_declares_its_dumps_next_time(tmp_path):
    """A .mlir made by another builder (a Command) does not exist while SCons reads the build files: the first
    DUMP=1 build compiles it and writes its dumps with one note line, the next declares them (one rebuild), and
    the one after is up to date."""
    import subprocess

    from corpusutil import CORPUS, instantiate
    from sconsutil import SCONS, TOOLPATH

    instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "template.txt", "gfx942", 3)
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\n"
        "made = env.Command('k.mlir', 'template.txt', Copy('$TARGET', '$SOURCE'))\n"
        "env.GpuObject('k', made)\n")
    first = subprocess.run([SCONS, "-Q", "DUMP=1"], cwd=tmp_path, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert "declared as targets from the next build on" in first.stderr
    assert (tmp_path / "k.dumps" / "saxpy_rocdl.isa").exists()
    second = subprocess.run([SCONS, "-Q", "DUMP=1"], cwd=tmp_path, capture_output=True, text=True)
    assert second.returncode == 0 and "please report" not in second.stderr, second.stderr
    third = subprocess.run([SCONS, "-Q", "DUMP=1"], cwd=tmp_path, capture_output=True, text=True)
    assert "up to date" in third.stdout, third.stdout + third.stderr
    (tmp_path / "k.dumps" / "saxpy_rocdl.isa").unlink()
    fourth = subprocess.run([SCONS, "-Q", "DUMP=1"], cwd=tmp_path, capture_output=True, text=True)
    assert fourth.returncode == 0 and (tmp_path / "k.dumps" / "saxpy_rocdl.isa").exists()
