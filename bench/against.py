"""A change measured against another revision in the same run: cold clean `scons -j2 DUMP=1` builds with this
checkout's package and with REV's (its `site_scons` from `git archive`, byte-compiled as tools/bootstrap does),
interleaved with the upstream chain's `make -j2`, on the benchmark's corpus or the upstream-style one.

    python bench/against.py REV [--corpus project|pipelines] [--reps N]

On a shared machine a build's time moves by more than most changes from minute to minute; two separate runs
cannot tell them apart, one interleaved run can. Both builds use this checkout's SCons and tool facts, and no
stage cache or compile server.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "site_scons"))
sys.path.insert(0, HERE)

import pipelines  # noqa: E402
import run as bench  # noqa: E402
from corpus import write_corpus  # noqa: E402
from mlirgpu.llvm import toolchain  # noqa: E402


def package_of(revision, folder):
    """REV's site_scons under `folder`, byte-compiled; its path."""
    archive = os.path.join(folder, "rev.tar")
    with open(archive, "wb") as handle:
        subprocess.run(["git", "-C", ROOT, "archive", revision, "site_scons"], stdout=handle, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(os.path.join(folder, "rev"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(folder, "rev", "site_scons")],
                   check=True, stdout=subprocess.DEVNULL)
    return os.path.join(folder, "rev", "site_scons")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revision")
    parser.add_argument("--corpus", choices=("project", "pipelines"), default="pipelines")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)
    base = tempfile.mkdtemp(prefix="mlirgpu-against-")
    os.environ.update(MLIRGPU_CACHE="off", MLIRGPU_SERVER="off", MLIRGPU_CACHE_DIR=os.path.join(base, "cache"),
                      XDG_CACHE_HOME=os.path.join(base, "user-cache"))
    try:
        trees = {args.revision: package_of(args.revision, base), "this checkout": os.path.join(ROOT, "site_scons")}
        folders = {}
        for name, tree in trees.items():
            folder = os.path.join(base, f"corpus-{len(folders)}")
            if args.corpus == "pipelines":
                pipelines.write_corpus(folder, toolchain)
            else:
                write_corpus(folder, 40)
            path = os.path.join(folder, "SConstruct")
            with open(path) as handle:
                text = handle.read().replace(os.path.join(ROOT, "site_scons"), tree)
            with open(path, "w") as handle:
                handle.write(text)
            subprocess.run(bench.SCONS + ["-Q", "-j2", "DUMP=1"], cwd=folder, check=True, capture_output=True)
            folders[name] = folder
        variants = {f"ours, {name}": (bench.SCONS + ["-Q", "-j2", "DUMP=1"], folder, None)
                    for name, folder in folders.items()}
        variants["upstream make -j2"] = (["make", "-s", "-j2", "-f", "upstream.mk"], folders["this checkout"], None)
        results = bench.interleave(variants, args.reps, lambda name, cwd: bench.clean(cwd))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"Cold clean scons -j2 DUMP=1, {args.corpus} corpus, {args.reps} repetitions (median s, min-max; CPU s)")
    for name, value in results.items():
        print(f"  {name:28s} {value['median']:6.2f} ({value['min']:.2f}-{value['max']:.2f})  "
              f"CPU {value['cpu_median']:.2f}")
    for name in folders:
        value = bench.paired(results[f"ours, {name}"], results["upstream make -j2"])
        print(f"  ratio {name}/upstream: {value['median']:.2f} ({value['min']:.2f}-{value['max']:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
