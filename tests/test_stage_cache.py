"""The stage cache: outputs byte-identical with it cold, warm and off; early cutoff per stage (an edit runs only
the stages whose input changed); keys that see every input (libraries, options, tools); damaged entries are
misses; eviction keeps the limit, least recently used first; the record says what ran; the switches work."""
import json
import os
import subprocess
import sys

import pytest

from conftest import CORPUS, instantiate
from mlirgpu import CompileOptions, compile_file
from mlirgpu.stagecache import StageCache
from sconsutil import SCONS, write_library

STAGES = ("initial.ll", "linked.ll", "opt.ll", "isa", "binary")
MODULE = """\
  gpu.module @m{index} [#rocdl.target<chip = "gfx942", O = 3>] {{
    llvm.func @k{index}(%p: !llvm.ptr<1>, %x: f32) attributes {{gpu.kernel, rocdl.kernel}} {{
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %s = llvm.mlir.constant({scale}.0 : f32) : f32
      %w = llvm.fmul %v, %s : f32
      %y = llvm.fadd %w, %x : f32
      llvm.store %y, %p : f32, !llvm.ptr<1>
      llvm.return
    }}{extra}
  }}
"""


def many_modules(count=20, scale_of=None, extra_of=None, comment=""):
    body = "".join(MODULE.format(index=i, scale=(scale_of or {}).get(i, i + 1), extra=(extra_of or {}).get(i, ""))
                   for i in range(count))
    return f"// {comment}\nmodule attributes {{gpu.container_module}} {{\n{body}}}\n"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A stage cache of this test's own (the workers read the environment each compile is given)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("MLIRGPU_CACHE_DIR", str(folder))
    return folder


def compile_dumped(source, dumps, **options):
    result = compile_file(str(source), CompileOptions(dump_dir=str(dumps), **options))
    record = json.loads((dumps / "mlirgpu.json").read_text())
    return result, {job["stem"]: job["stages"] for job in record["jobs"]}


def tree(folder):
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder)) if name != "mlirgpu.json"}


def test_outputs_are_the_same_cold_warm_and_off(tmp_path, cache_dir, monkeypatch, cuda_root):
    source = instantiate(os.path.join(CORPUS, "vec_scale.multi.nvvm.mlir"), tmp_path / "k.mlir", "", 3)
    made = {}
    for run in ("cold", "warm", "off"):
        if run == "off":
            monkeypatch.setenv("MLIRGPU_CACHE", "off")
        result, origins = compile_dumped(source, tmp_path / run, toolkit=cuda_root)
        made[run] = (result.object_bytes, result.header, tree(tmp_path / run))
        expected = "cached" if run == "warm" else "ran"
        assert all(origin == {stage: expected for stage in STAGES} for origin in origins.values()), (run, origins)
    assert made["cold"] == made["warm"] == made["off"]
    assert len(made["cold"][2]) >= 10


def test_one_edited_module_of_twenty_recompiles_one(tmp_path, cache_dir):
    source = tmp_path / "many.mlir"
    source.write_text(many_modules())
    _, origins = compile_dumped(source, tmp_path / "D", format="bin")
    assert all(stage == "ran" for origin in origins.values() for stage in origin.values())
    source.write_text(many_modules(scale_of={7: 100}))
    _, origins = compile_dumped(source, tmp_path / "D", format="bin")
    ran = {stem for stem, origin in origins.items() if set(origin.values()) == {"ran"}}
    cached = {stem for stem, origin in origins.items() if set(origin.values()) == {"cached"}}
    assert ran == {"m7"} and len(cached) == 19


def test_a_comment_only_edit_runs_no_llvm_stage(tmp_path, cache_dir):
    source = tmp_path / "many.mlir"
    source.write_text(many_modules(4, comment="first"))
    compile_dumped(source, tmp_path / "D", format="bin")
    edited = many_modules(4, comment="second").replace("    llvm.func @k2", "    // a comment in a module\n"
                                                                           "    llvm.func @k2")
    source.write_text(edited)
    _, origins = compile_dumped(source, tmp_path / "D", format="bin")
    assert all(origin == {stage: "cached" for stage in STAGES} for origin in origins.values()), origins


def test_a_host_code_only_edit_runs_no_llvm_stage(tmp_path, cache_dir, cuda_root):
    """Host code that launches the kernels, edited (and its lines moved): the modules' translations run again
    (their locations moved), every stage of every job comes from the cache, and the object changes."""
    source = instantiate(os.path.join(CORPUS, "host_pipeline.nvvm.mlir"), tmp_path / "h.mlir", "sm_80", 3)
    first, _ = compile_dumped(source, tmp_path / "D", toolkit=cuda_root)
    text = open(source).read().replace("%c256 = arith.constant 256 : index",
                                       "%c256 = arith.constant 128 : index\n    // fewer threads")
    with open(source, "w") as handle:
        handle.write(text)
    second, origins = compile_dumped(source, tmp_path / "D", toolkit=cuda_root)
    assert len(origins) == 2
    assert all(origin == {stage: "cached" for stage in STAGES} for origin in origins.values()), origins
    assert second.object_bytes != first.object_bytes


def test_cutoff_at_the_first_unchanged_output(tmp_path, cache_dir):
    """An unused internal function changes the translated and linked IR, which the optimizer removes: the ISA
    and the serializer come from the cache."""
    source = tmp_path / "one.mlir"
    source.write_text(many_modules(1))
    compile_dumped(source, tmp_path / "D", format="bin")
    unused = "\n    llvm.func internal @unused(%a: i32) -> i32 {\n      llvm.return %a : i32\n    }"
    source.write_text(many_modules(1, extra_of={0: unused}))
    _, origins = compile_dumped(source, tmp_path / "D", format="bin")
    assert origins["m0"] == {"initial.ll": "ran", "linked.ll": "ran", "opt.ll": "ran", "isa": "cached",
                             "binary": "cached"}
    assert "unused" in (tmp_path / "D" / "m0.linked.ll").read_text()


def test_identical_modules_in_other_files_share_entries(tmp_path, cache_dir):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / f"{folder}.mlir").write_text(many_modules(2))
    compile_dumped(tmp_path / "a" / "a.mlir", tmp_path / "a" / "D", format="bin")
    _, origins = compile_dumped(tmp_path / "b" / "b.mlir", tmp_path / "b" / "D", format="bin")
    assert all(origin == {stage: "cached" for stage in STAGES} for origin in origins.values())


def test_keys_see_libraries_options_and_chips(tmp_path, cache_dir, cuda_root):
    """A changed -l library reruns linking on; other ptxas options rerun the serializer only; another chip
    reruns every stage."""
    write_library(tmp_path, 1)
    source = instantiate(os.path.join(CORPUS, "link_user.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    library = str(tmp_path / "lib.bc")
    base = dict(format="bin", toolkit=cuda_root, link_libs=(library,))
    compile_dumped(source, tmp_path / "D", **base)
    write_library(tmp_path, 2)
    _, origins = compile_dumped(source, tmp_path / "D", **base)
    assert [origin["initial.ll"] for origin in origins.values()] == ["cached"]
    assert [origin["linked.ll"] for origin in origins.values()] == ["ran"]
    _, origins = compile_dumped(source, tmp_path / "D", opts="-v", **base)
    assert list(origins.values()) == [{"initial.ll": "cached", "linked.ll": "cached", "opt.ll": "cached",
                                       "isa": "cached", "binary": "ran"}]


def test_a_damaged_entry_is_a_miss(tmp_path, cache_dir):
    source = tmp_path / "one.mlir"
    source.write_text(many_modules(2))
    first, _ = compile_dumped(source, tmp_path / "D1", format="bin")
    entries = [os.path.join(d, n) for d, _s, names in os.walk(cache_dir / "stages") for n in names
               if len(n) == 64]
    assert len(entries) >= 10
    for index, entry in enumerate(entries):
        with open(entry, "r+b") as handle:
            if index % 2:
                handle.truncate(os.path.getsize(entry) // 2)
            else:
                handle.seek(-1, os.SEEK_END)
                handle.write(b"\xff")
    second, origins = compile_dumped(source, tmp_path / "D2", format="bin")
    assert second.object_bytes == first.object_bytes and tree(tmp_path / "D1") == tree(tmp_path / "D2")
    assert all(stage == "ran" for origin in origins.values() for stage in origin.values())


def test_eviction_keeps_the_limit_and_the_recently_used(tmp_path):
    cache = StageCache(str(tmp_path / "stages"), limit=100_000)
    keys = [f"{index:02x}" * 32 for index in range(12)]
    for index, key in enumerate(keys):
        cache.put(key, bytes(1500))
        os.utime(cache._path(key), (1000 + index, 1000 + index))
    cache.get(keys[0])  # used again: now the most recent
    cache.limit = 10_000
    cache.evict()
    kept = [key for key in keys if os.path.exists(cache._path(key))]
    assert sum(os.path.getsize(cache._path(key)) for key in kept) <= 9000
    assert keys[0] in kept and keys[-1] in kept and keys[1] not in kept
    stats = cache.stats()
    assert stats["entries"] == len(kept) and stats["evictions"] >= 1 and stats["hits"] == 1


def test_a_build_beyond_the_limit_evicts(tmp_path, cache_dir, monkeypatch):
    monkeypatch.setenv("MLIRGPU_CACHE_SIZE", "20K")
    source = tmp_path / "many.mlir"
    source.write_text(many_modules(6))
    compile_dumped(source, tmp_path / "D", format="bin")
    total = sum(os.path.getsize(os.path.join(d, n)) for d, _s, names in os.walk(cache_dir / "stages")
                for n in names if len(n) == 64)
    assert 0 < total <= 20 * 1024


def test_cache_command_and_switches(tmp_path, cache_dir):
    env = dict(os.environ, MLIRGPU_CACHE_DIR=str(cache_dir))
    source = tmp_path / "one.mlir"
    source.write_text(many_modules(1))
    run = lambda *args, **kw: subprocess.run([sys.executable, "-m", "mlirgpu", *args], capture_output=True,  # noqa: E731
                                             text=True, env=dict(env, **kw))
    assert run("compile", str(source), "-o", str(tmp_path / "k.o"), MLIRGPU_CACHE="off").returncode == 0
    assert "entries    0" in run("cache", "stats").stdout
    assert run("compile", str(source), "-o", str(tmp_path / "k.o")).returncode == 0
    stats = run("cache", "stats").stdout
    assert "entries    6" in stats and "misses     6" in stats, stats  # a translation and five stages
    assert run("compile", str(source), "-o", str(tmp_path / "k.o")).returncode == 0
    assert "hits       6" in run("cache", "stats").stdout
    assert run("cache", "clear").returncode == 0
    assert "entries    0" in run("cache", "stats").stdout
    bad = run("cache", "stats", MLIRGPU_CACHE_SIZE="lots")
    assert bad.returncode == 1 and "MLIRGPU_CACHE_SIZE='lots' is not a size" in bad.stderr


def test_scons_gpu_cache_0_stores_nothing(tmp_path, cache_dir):
    project = tmp_path / "p"
    project.mkdir()
    (project / "k.mlir").write_text(many_modules(2))
    (project / "SConstruct").write_text("import mlirgpu\nenv = Environment(tools=['default', 'mlirgpu'], "
                                        "toolpath=[mlirgpu.TOOLPATH])\nenv.GpuObject('k', 'k.mlir')\n")
    env = dict(os.environ, MLIRGPU_CACHE_DIR=str(cache_dir))
    build = subprocess.run([SCONS, "-Q", "GPU_CACHE=0", "DUMP=1"], cwd=project, env=env, capture_output=True,
                           text=True)
    assert build.returncode == 0, build.stderr
    assert not [n for d, _s, names in os.walk(cache_dir) for n in names if len(n) == 64]
    record = json.loads((project / "k.dumps" / "mlirgpu.json").read_text())
    assert {stage for job in record["jobs"] for stage in job["stages"].values()} == {"ran"}
    subprocess.run([SCONS, "-Q", "-c"], cwd=project, env=env, check=True, capture_output=True)
    build = subprocess.run([SCONS, "-Q", "DUMP=1"], cwd=project, env=env, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    assert [n for d, _s, names in os.walk(cache_dir) for n in names if len(n) == 64]
