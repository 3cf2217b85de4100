"""The stage cache: outputs byte-identical with it cold, warm and off; early cutoff per stage (an edit runs only
the stages whose input changed); keys that see every input (libraries, options, tools); damaged entries are
misses; eviction keeps the limit, least recently used first; the record says what ran; the switches work."""
import json
import os
import subprocess
import sys

import pytest

from corpusutil import CORPUS, instantiate
from mlirgpu import CompileOptions, compile_file
from mlirgpu.cache.stagecache import StageCache
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
    assert "entries    7" in stats and "misses     7" in stats, stats  # the compile, a translation, five stages
    assert run("compile", str(source), "-o", str(tmp_path / "k.o")).returncode == 0
    # the compile entry, and the translation the command looks up while its worker starts
    assert "hits       2" in run("cache", "stats").stdout
    assert run("cache", "clear").returncode == 0
    assert "entries    0" in run("cache", "stats").stdout
    bad = run("cache", "stats", MLIRGPU_CACHE_SIZE="lots")
    assert bad.returncode == 1 and "MLIRGPU_CACHE_SIZE='lots' is not a size" in bad.stderr


@pytest.mark.parametrize("limit, held, says", [("100", 0, "size       0 B of 100 B"),
                                                ("3000", 2800, "size       2.7 KiB of 2.9 KiB"),
                                                ("1500K", 2800, "size       2.7 KiB of 1.5 MiB"),
                                                ("", 0, "size       0 B of 2.0 GiB")])
def test_cache_stats_shows_sizes_in_units_that_show_them(tmp_path, cache_dir, limit, held, says):
    """`mlirgpu cache stats` prints the size and the limit in bytes, KiB, MiB or GiB, whichever shows the value
    (a limit of 100 bytes is not "0 MiB")."""
    if held:
        (cache_dir / "stages" / "ab").mkdir(parents=True)
        (cache_dir / "stages" / "ab" / ("ab" + "0" * 62)).write_bytes(b"x" * held)
    env = dict(os.environ, MLIRGPU_CACHE_DIR=str(cache_dir), MLIRGPU_CACHE_SIZE=limit)
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "cache", "stats"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert run.returncode == 0 and says in run.stdout, run.stdout


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


def _stats(cache_dir):
    return StageCache(str(cache_dir / "stages"), 1 << 30).stats()


@pytest.mark.parametrize("corpus_file, chip", [("vec_scale.multi.nvvm.mlir", ""), ("host_pipeline.nvvm.mlir", "sm_80")])
def test_an_unchanged_compile_is_one_entry_and_runs_nothing(tmp_path, cache_dir, monkeypatch, cuda_root, corpus_file,
                                                           chip):
    """The second compile of an unchanged file reads one entry (the compile entry), runs no stage and no tool
    but the reading of host code, and writes what the first wrote (fat containers and host code included), as a compile without a cache does."""
    source = instantiate(os.path.join(CORPUS, corpus_file), tmp_path / "k.mlir", chip, 3)
    first, _ = compile_dumped(source, tmp_path / "cold", toolkit=cuda_root)
    before = _stats(cache_dir)
    second, origins = compile_dumped(source, tmp_path / "warm", toolkit=cuda_root)
    after = _stats(cache_dir)
    assert after["hits"] - before["hits"] == 1 and after["misses"] == before["misses"]
    assert after["entries"] == before["entries"]
    assert [name for name in second.tools if not name.startswith("mlir-opt")] == []  # mlir-opt reads host code
    assert all(origin == {stage: "cached" for stage in STAGES} for origin in origins.values()), origins
    monkeypatch.setenv("MLIRGPU_CACHE", "off")
    off, _ = compile_dumped(source, tmp_path / "off", toolkit=cuda_root)
    assert (second.object_bytes, second.header, tree(tmp_path / "warm")) == \
        (off.object_bytes, off.header, tree(tmp_path / "off")) == (first.object_bytes, first.header, tree(tmp_path / "cold"))
    assert [str(w) for w in second.warnings] == [str(w) for w in off.warnings]
    assert second.dependencies == off.dependencies


def _cli(cwd, *args, **env):
    return subprocess.run([sys.executable, "-m", "mlirgpu", *args], cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, MLIRGPU_SERVER="off", **env))


def test_a_compile_entry_serves_another_checkout_with_its_own_paths(tmp_path, cache_dir):
    """An entry made in one checkout serves a compile elsewhere, whose record, repro.sh, header, depfile and
    warnings name its own paths: every output equals that compile's own without a cache."""
    text = many_modules(3).replace("  gpu.module @m2 [", "  gpu.module @empty [#rocdl.target<chip = \"gfx942\">] {\n"
                                   "  }\n  gpu.module @m2 [")
    for checkout in ("a", "b/deeper"):
        (tmp_path / checkout / "src").mkdir(parents=True)
        (tmp_path / checkout / "src" / "k.mlir").write_text(text)
    first = _cli(tmp_path / "a", "compile", "src/k.mlir", "-o", "k.o", "--format", "bin",
                 "--dump-intermediates", "D", "--header", "k.h", "--depfile", "k.d")
    assert first.returncode == 0 and "has no kernels" in first.stderr, first.stderr
    made = {}
    folder = tmp_path / "b" / "deeper"
    out = folder / "out"
    for run, extra in (("off", {"MLIRGPU_CACHE": "off"}), ("hit", {})):  # the same outputs, written twice
        before = _stats(cache_dir)
        done = _cli(folder, "compile", "src/k.mlir", "-o", "out/k.o", "--format", "bin", "--dump-intermediates",
                    "out/dumps", "--header", "out/include/k.h", "--depfile", "out/k.d", **extra)
        assert done.returncode == 0, done.stderr
        if run == "hit":
            # the compile entry, and the translations the command looks up while its worker starts (4 modules)
            assert _stats(cache_dir)["hits"] - before["hits"] == 1 + 4
        record = json.loads((out / "dumps" / "mlirgpu.json").read_text())
        for job in record["jobs"]:
            job.pop("stages")
        record.pop("sha256")
        made[run] = ((out / "k.o").read_bytes(), (out / "include" / "k.h").read_text(), (out / "k.d").read_text(),
                     done.stderr, record, tree(out / "dumps"))
    assert made["hit"] == made["off"]
    assert made["hit"][4]["source"] == "src/k.mlir" and made["hit"][4]["object"]["path"] == "../k.o"
    assert "src/k.mlir:" in made["hit"][3]


@pytest.mark.parametrize("change", ["section", "symbol_prefix", "name", "layout"])
def test_compile_entries_see_what_only_the_host_object_shows(tmp_path, cache_dir, monkeypatch, cuda_root, change):
    """Options and names that change only the host object (its section, symbols, layout, the file's name) are in
    the compile entry's key: after a compile without them, the object equals a compile without a cache."""
    first = instantiate(os.path.join(CORPUS, "vec_scale.multi.nvvm.mlir"), tmp_path / "k.mlir", "", 3)
    compile_file(str(first), CompileOptions(toolkit=cuda_root, format="fatbin"))
    options = dict(toolkit=cuda_root, format="fatbin")
    source = first
    if change == "name":
        source = tmp_path / "other.mlir"
        source.write_text(open(first).read())
    else:
        options[change] = {"section": ".gpu_bins", "symbol_prefix": "lib_", "layout": "vendor"}[change]
    cached = compile_file(str(source), CompileOptions(**options))
    monkeypatch.setenv("MLIRGPU_CACHE", "off")
    off = compile_file(str(source), CompileOptions(**options))
    assert cached.object_bytes == off.object_bytes and cached.header == off.header


@pytest.mark.parametrize("library", ["missing.bc", "folder", "lib.fifo"])
def test_a_library_that_is_not_a_file_fails_the_compile_whatever_the_cache_holds(tmp_path, cache_dir, library):
    """A compile that names a -l library that is not a file fails at the link stage, naming it, also right after
    the same source compiled without it filled the cache (its link stage's key then left the library out, and the
    compile was restored from the one that named none); as upstream fails on a missing `l=` library."""
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "lib.fifo")
    source = instantiate(os.path.join(CORPUS, "saxpy.nvvm.mlir"), tmp_path / "k.mlir", "sm_80", 3)
    assert _cli(tmp_path, "compile", source, "-o", "k.o").returncode == 0
    run = _cli(tmp_path, "compile", source, "-o", "k.o", "-l", library)
    assert run.returncode == 1 and library in run.stderr, run.stderr
    assert not (tmp_path / "k.o").exists()
