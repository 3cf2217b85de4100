"""CI artifacts: `scons DUMP=1 gpu-artifacts` over the examples; the manifest checked against the files and
against ptxas -v / the .amdhsa directives run and read here; baseline regressions; the HTML chart; a
reproducible archive."""
import hashlib
import json
import os
import re
import shutil
import subprocess

import pytest

from corpusutil import ROOT
from mlirgpu.targets.cuda import cuda_toolkit
from sconsutil import SCONS, TOOLPATH, compiled, scons


def _sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    work = tmp_path_factory.mktemp("examples") / "repo"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".venv", ".git", "build", "tests", "*.dblite"))
    for target in ("nvvm", "rocdl", "xevm"):
        scons(work, f"GPU_TARGET={target}", "DUMP=1", "gpu-artifacts")
    return work


@pytest.mark.parametrize("target", ["nvvm", "rocdl", "xevm"])
def test_manifest_matches_files_and_tools(examples, target):
    folder = examples / "build" / target
    manifest = json.loads((folder / "gpu-manifest.json").read_text())
    assert manifest["schema"] == "scons-mlir-gpu/manifest" and manifest["version"] == 1
    assert {"mlirgpu", "mlir", "llvmlite"} <= set(manifest["toolchain"])
    assert "LLVM version 22" in manifest["toolchain"]["mlir"], manifest["toolchain"]["mlir"]
    sources = {obj["source"] for obj in manifest["objects"]}
    assert len(sources) == 7  # the library example adds two objects; its library is one of `libraries`
    assert [library["source"] for library in manifest["libraries"]] == ["examples/library/mathlib.mlir"]
    linked = {obj["source"]: {item["source"] for job in obj["jobs"] for item in job["libraries"]}
              for obj in manifest["objects"] if "/library/" in obj["source"]}
    assert linked == dict.fromkeys(["examples/library/activations.mlir", "examples/library/normalize.mlir"],
                                   {"examples/library/mathlib.mlir"})
    kernels = 0
    for obj in manifest["objects"]:
        assert obj["binaries"] and all(len(b["sha256"]) == 64 and b["size"] > 0 for b in obj["binaries"])
        for job in obj["jobs"]:
            for suffix, item in job["intermediates"].items():
                path = folder / item["path"]
                assert path.is_file(), item["path"]
                assert _sha(path) == item["sha256"], item["path"]
            isa = folder / job["intermediates"]["isa"]["path"]
            if job["target"] == "nvvm":
                expected = _ptxas_registers(isa, job["chip"], job["opt_level"])
            elif job["target"] == "xevm":  # kernels from spirv-dis of the binary; no registers before the driver
                spirv = subprocess.run(["spirv-dis", str(folder / job["intermediates"]["spv"]["path"])],
                                       capture_output=True, text=True, check=True).stdout
                expected = dict.fromkeys(re.findall(r'OpEntryPoint Kernel %\S+ "([^"]+)"', spirv))
                assert expected
            else:
                expected = dict(re.findall(r"\.amdhsa_kernel (\S+)\n.*?\.amdhsa_next_free_vgpr (\d+)",
                                           isa.read_text(), re.S))
                expected = {name: int(count) for name, count in expected.items()}
            assert {k["name"]: k["registers"] for k in job["kernels"]} == expected
            kernels += len(job["kernels"])
    assert kernels >= 8
    report = (folder / "gpu-report.md").read_text()
    assert "| registers |" in report
    assert ("| n/a | n/a | n/a | n/a |" in report) == (target == "xevm")
    assert ("<svg" in (folder / "gpu-report.html").read_text()) == (target != "xevm")  # no registers, no chart


def _ptxas_registers(ptx, chip, level):
    ptxas = os.path.join(cuda_toolkit(), "bin", "ptxas")
    out = subprocess.run([ptxas, "-v", "-arch", chip, "--opt-level", str(level), str(ptx), "-o", os.devnull],
                         capture_output=True, text=True, check=True).stderr
    names = re.findall(r"Compiling entry function '([^']+)'", out)
    counts = [int(n) for n in re.findall(r"Used (\d+) registers", out)]
    return dict(zip(names, counts))


def test_artifacts_are_a_null_build_and_a_reproducible_archive(examples, tmp_path):
    assert "`gpu-artifacts' is up to date." in scons(examples, "GPU_TARGET=rocdl", "DUMP=1", "gpu-artifacts").stdout
    first = (examples / "build" / "rocdl" / "gpu-artifacts.tar.gz").read_bytes()
    shutil.rmtree(examples / "build" / "rocdl")
    scons(examples, "GPU_TARGET=rocdl", "DUMP=1", "gpu-artifacts")
    assert (examples / "build" / "rocdl" / "gpu-artifacts.tar.gz").read_bytes() == first
    listing = subprocess.run(["tar", "tzvf", str(examples / "build" / "rocdl" / "gpu-artifacts.tar.gz")],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    names = [line.split()[-1] for line in listing]
    assert names == sorted(names) and "gpu-manifest.json" in names and "gpu-report.html" in names
    assert all(" 1970-01-01 " in line for line in listing)


KERNEL = """\
module attributes {{gpu.container_module}} {{
  gpu.module @pressure [#nvvm.target<chip = "sm_80", O = 3>] {{
    llvm.func @steady(%p: !llvm.ptr<1>) attributes {{gpu.kernel, nvvm.kernel}} {{
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      llvm.store %v, %p : f32, !llvm.ptr<1>
      llvm.return
    }}
    llvm.func @hungry(%p: !llvm.ptr<1>) attributes {{gpu.kernel, nvvm.kernel}} {{
{body}
      llvm.return
    }}
  }}
}}
"""


def _hungry(width):
    """`width` values loaded, combined pairwise in a chain that keeps them all live, then stored: more registers."""
    lines = []
    for i in range(width):
        lines.append(f"      %g{i} = llvm.getelementptr %p[{i}] : (!llvm.ptr<1>) -> !llvm.ptr<1>, f32")
        lines.append(f"      %v{i} = llvm.load volatile %g{i} : !llvm.ptr<1> -> f32")
    for i in range(width):
        lines.append(f"      %m{i} = llvm.fmul %v{i}, %v{(i + 1) % width} : f32")
    for i in range(width):
        lines.append(f"      llvm.store volatile %m{i}, %g{(i * 7) % width} : f32, !llvm.ptr<1>")
    return "\n".join(lines)


def _baseline_project(tmp_path):
    """A project of one light kernel whose artifacts (DUMP=1 gpu-artifacts) were collected: the baseline."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\n"
        "env.GpuObject('k', 'k.mlir')\n")
    (project / "k.mlir").write_text(KERNEL.format(body=_hungry(2)))
    scons(project, "DUMP=1", "gpu-artifacts")
    return project


def test_baseline_names_the_kernel_and_the_rule_fails_the_build(tmp_path):
    project = _baseline_project(tmp_path)
    shutil.copy(project / "gpu-manifest.json", tmp_path / "old.json")
    (project / "k.mlir").write_text(KERNEL.format(body=_hungry(40)))
    run = scons(project, "DUMP=1", f"GPU_BASELINE={tmp_path / 'old.json'}", "gpu-artifacts")
    assert compiled(run) == ["k.mlir"]
    report = (project / "gpu-report.md").read_text()
    match = re.search(r"- k\.mlir @pressure nvvm sm_80 hungry: registers up (\d+) -> (\d+)", report)
    assert match and int(match.group(2)) > int(match.group(1)), report
    assert "steady" not in report.split("## Kernels")[0]
    assert "ISA changed: k.mlir @pressure nvvm sm_80" in report
    failing = subprocess.run([SCONS, "-Q", "DUMP=1", f"GPU_BASELINE={tmp_path / 'old.json'}",
                              "GPU_FAIL_ON=spills,registers+10%", "gpu-artifacts"], cwd=project, capture_output=True,
                             text=True)
    assert failing.returncode != 0
    assert re.search(r"GPU regressions against the baseline: k\.mlir @pressure nvvm sm_80 hungry: registers "
                     r"\d+ -> \d+ \(rule registers\+10%\)", failing.stderr), failing.stderr
    passing = scons(project, "DUMP=1", f"GPU_BASELINE={tmp_path / 'old.json'}", "GPU_FAIL_ON=spills",
                    "gpu-artifacts")
    assert passing.returncode == 0


def test_html_report_shows_the_chart_in_chromium(examples, tmp_path):
    from PIL import Image

    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is installed by tools/bootstrap"
    page = examples / "build" / "nvvm" / "gpu-report.html"
    assert "<script" not in page.read_text() and "http" not in page.read_text().replace("http://www.w3.org", "")
    shot = tmp_path / "report.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,900", f"--screenshot={shot}",
                    page.as_uri()], capture_output=True, timeout=120, check=True)
    image = Image.open(shot).convert("RGB")
    colors = image.getcolors(maxcolors=image.width * image.height)
    blue = sum(count for count, p in colors
               if abs(p[0] - 0x1F) < 12 and abs(p[1] - 0x5F) < 12 and abs(p[2] - 0xBF) < 12)
    assert blue > 2000, f"only {blue} chart-blue pixels: the register bars are not drawn"
    shutil.copy(shot, examples / "build" / "nvvm" / "gpu-report.png")


def test_html_report_shows_deltas_and_the_isa_diff_of_a_changed_kernel(tmp_path):
    """With the baseline's dumps beside its manifest (an unpacked archive), each changed kernel's ISA diff is
    in the page, folded; resources changed are a table of before, after and change."""
    project = _baseline_project(tmp_path)
    shutil.copytree(project, tmp_path / "baseline")  # the manifest with the dumps it names
    (project / "k.mlir").write_text(KERNEL.format(body=_hungry(40)))
    scons(project, "DUMP=1", f"GPU_BASELINE={tmp_path / 'baseline' / 'gpu-manifest.json'}", "gpu-artifacts")
    page = (project / "gpu-report.html").read_text()
    assert re.search(r"<td>registers</td><td class=n>\d+</td><td class=n>\d+</td><td class=n>\+\d+ \(\+\d+%\)</td>",
                     page), page
    summary = "<details><summary>ISA changed: k.mlir @pressure nvvm sm_80</summary><pre>"
    assert summary in page
    diff = page.split(summary, 1)[1].split("</pre>", 1)[0]
    assert diff.startswith("--- baseline\n+++ this build\n@@") and "\n+" in diff and "\n-" in diff


def test_the_chart_scales_from_one_kernel_to_a_thousand():
    from mlirgpu.reports.rendering import CHART_KERNELS, html_report, size_text

    def manifest(count, occupancy=None):
        jobs = [{"module": f"m{i}", "target": "nvvm", "chip": "sm_90", "intermediates": {}, "kernels": [
            {"name": f"k{i}", "registers": 8 + i % 200, "spills": 4 if i == 7 else 0, "shared_bytes": 0,
             "local_bytes": 0, "occupancy": occupancy}]} for i in range(count)]
        return {"toolchain": {"ptxas": "13.0"}, "objects": [{"source": "s.mlir", "jobs": jobs, "binaries": [
            {"module": "m0", "target": "nvvm", "chips": ["sm_90"], "format": "bin", "section": ".rodata",
             "size": 3900}]}]}

    one = html_report(manifest(1))
    assert one.count('fill="#1f5fbf"><title>registers') == 1 and "of 1:" not in one
    many = html_report(manifest(1000))
    assert many.count('fill="#1f5fbf"><title>registers') == CHART_KERNELS
    assert f"registers per kernel ({CHART_KERNELS} of 1000: those with the most)" in many
    assert many.count("<tr>") == 1000 + 1 + 2  # the table keeps every kernel (and the binaries table)
    heaviest = re.findall(r"<title>registers: (\d+)</title>", many)
    assert [int(n) for n in heaviest] == sorted((8 + i % 200 for i in range(1000)), reverse=True)[:CHART_KERNELS]
    spilled = html_report(manifest(10))
    assert 'fill="#c0392b"><title>spills: 4</title>' in spilled and "+ 4 spilled" in spilled
    assert "<th class=n>occupancy</th>" not in one and "<th class=n>occupancy</th>" in html_report(manifest(1, 0.5))
    assert "<td class=n>3.8 KiB</td>" in one
    assert [size_text(n) for n in (912, 3900, 13 << 20)] == ["912 B", "3.8 KiB", "13.0 MiB"]


def test_html_report_renders_legibly_at_two_sizes(examples, tmp_path):
    """Chromium's screenshots of the examples' page, desktop and phone width: the chart's bars are drawn at
    both (at phone width the chart keeps its size and scrolls), and are kept for the README."""
    from PIL import Image

    chromium = shutil.which("chromium")
    page = examples / "build" / "nvvm" / "gpu-report.html"
    for width, least in ((1280, 4000), (420, 1500)):
        shot = tmp_path / f"report-{width}.png"
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},1100",
                        f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120, check=True)
        image = Image.open(shot).convert("RGB")
        assert image.width == width
        blue = sum(count for count, p in image.getcolors(maxcolors=image.width * image.height)
                   if abs(p[0] - 0x1F) < 12 and abs(p[1] - 0x5F) < 12 and abs(p[2] - 0xBF) < 12)
        assert blue > least, f"{width}px: only {blue} chart-blue pixels"


def test_artifacts_of_a_build_folder_find_prefixed_records_at_any_depth_and_count_in_words(tmp_path):
    """`mlirgpu artifacts BUILD` finds the records of flat (--dump-prefix, as Meson and CMake write them) and
    nested dump folders below a build folder; one binary is `1 binary`, and a tool is named once."""
    import sys

    from corpusutil import CORPUS, instantiate

    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))
    build = tmp_path / "build" / "gpu"
    source = instantiate(os.path.join(CORPUS, "saxpy.rocdl.mlir"), tmp_path / "vecops.mlir", "gfx942", 3)
    subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, "-o", str(build / "vecops.o"),
                    "--dump-intermediates", str(build), "--dump-prefix", "vecops."], env=env, check=True)
    empty = subprocess.run([sys.executable, "-m", "mlirgpu", "artifacts", str(tmp_path / "vecops.mlir"), "-o",
                            str(tmp_path / "x")], env=env, capture_output=True, text=True)
    assert empty.returncode != 0
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "artifacts", str(tmp_path / "build"), "-o",
                          str(tmp_path / "out")], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    page = (tmp_path / "out" / "gpu-report.html").read_text()
    assert "in 1 binary (" in page and "from 1 object." in page, page[:2000]
    report = (tmp_path / "out" / "gpu-report.md").read_text()
    assert "llvmlite llvmlite" not in report and "llvmlite llvmlite" not in page
    missing = subprocess.run([sys.executable, "-m", "mlirgpu", "artifacts", str(tmp_path / "out"), "-o",
                              str(tmp_path / "out2")], env=env, capture_output=True, text=True)
    assert missing.returncode == 1 and "DUMP=1" in missing.stderr and "MLIRGPU_DUMP=ON" in missing.stderr


RECIPE_MARK = "<!-- ci-recipe:"

RECIPE_KERNELS = """\
module attributes {{gpu.container_module}} {{
  gpu.module @pressure [#rocdl.target<chip = "gfx942", O = 3>] {{
    llvm.func @twice(f32) -> f32
    llvm.func @steady(%p: !llvm.ptr<1>) attributes {{gpu.kernel, rocdl.kernel}} {{
      %v = llvm.load %p : !llvm.ptr<1> -> f32
      %w = llvm.call @twice(%v) : (f32) -> f32
      %g = llvm.getelementptr %p[{offset}] : (!llvm.ptr<1>) -> !llvm.ptr<1>, f32
      llvm.store %w, %g : f32, !llvm.ptr<1>
      llvm.return
    }}
    llvm.func @hungry(%p: !llvm.ptr<1>) attributes {{gpu.kernel, rocdl.kernel}} {{
{body}
      llvm.return
    }}
  }}
}}
"""

RECIPE_LIBRARY = """\
module attributes {gpu.container_module} {
  gpu.module @mathlib [#rocdl.target<chip = "gfx942", O = 3>] {
    llvm.func @twice(%x: f32) -> f32 {
      %r = llvm.fadd %x, %x : f32
      llvm.return %r : f32
    }
  }
}
"""


def _recipe_job():
    """The CI job docs/guide/ci-artifacts.md prints after its `ci-recipe` mark, as a CI runner reads it."""
    import yaml

    guide = open(os.path.join(ROOT, "docs", "guide", "ci-artifacts.md"), encoding="utf-8").read()
    assert guide.count(RECIPE_MARK) == 1
    block = re.match(r".*?-->\n```yaml\n(.*?)\n```\n", guide.split(RECIPE_MARK, 1)[1], re.S)
    assert block, "the ci-recipe mark stands right before the recipe's ```yaml block"
    (job,) = yaml.safe_load(block.group(1)).values()
    return job


def _run_job(job, checkout, ref, store, tmp_path):
    """Run the job as GitHub Actions would, on a fresh checkout: `run` steps with bash as printed (skipped after
    a failure unless `if: always()`), artifacts uploaded to and downloaded from `store`. The job's result (passed
    or not), the step summary and the run steps' output."""
    summary, output, failed = tmp_path / f"summary-{ref}.md", [], False
    env = dict(os.environ, PATH=os.path.dirname(SCONS) + os.pathsep + os.environ["PATH"],
               GITHUB_STEP_SUMMARY=str(summary))
    for step in job["steps"]:
        if failed and step.get("if") != "always()":
            continue
        action, given = step.get("uses", ""), {key: str(value).replace("${{ github.ref_name }}", ref)
                                               for key, value in step.get("with", {}).items()}
        assert "${{" not in " ".join(given.values()) + step.get("run", ""), step
        if action.startswith("actions/checkout@"):
            continue  # `checkout` is the fresh copy of the project
        if action.startswith("actions/upload-artifact@"):  # a missing file is only warned about, as there
            if (checkout / given["path"]).is_file():
                (store / given["name"]).mkdir(parents=True, exist_ok=True)
                shutil.copy(checkout / given["path"], store / given["name"])
            continue
        if action.startswith("actions/download-artifact@"):
            if (store / given["name"]).is_dir():
                shutil.copytree(store / given["name"], checkout / given["path"])
            else:
                assert step.get("continue-on-error"), "the first run has no baseline to download"
            continue
        assert not action, f"the test does not know how to run {action}"
        run = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], cwd=checkout,
                             env=env, capture_output=True, text=True)
        output.append(run.stdout + run.stderr)
        failed = failed or run.returncode != 0
    return not failed, summary.read_text() if summary.exists() else "", "\n".join(output)


def test_the_guides_ci_recipe_as_printed_in_a_variant_dir_project(tmp_path):
    """The guide's GitHub Actions job, run as printed in a project whose objects (a kernel file linking a
    GpuLibrary) are declared in src/SConscript under VariantDir('build', duplicate=0): the main branch's run
    (no baseline) uploads its archive; a branch's run downloads and unpacks it and builds against it. An edit
    that only moves a store changes the ISA (the diff is in both reports) and passes the rules; one that needs
    many more registers fails the job on GPU_FAIL_ON."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\n"
        "SConscript('src/SConscript', variant_dir='build', duplicate=0, exports='env')\n")
    (project / "src" / "SConscript").write_text(
        "Import('env')\n"
        "mathlib = env.GpuLibrary('mathlib', 'mathlib.mlir')\n"
        "env.GpuObject('kernels', 'kernels.mlir', GPU_LINKLIBS=mathlib)\n")
    (project / "src" / "mathlib.mlir").write_text(RECIPE_LIBRARY)
    job, store = _recipe_job(), tmp_path / "artifacts"

    def ci(ref, offset, width):
        checkout = tmp_path / f"checkout-{ref}"
        shutil.copytree(project, checkout)
        (checkout / "src" / "kernels.mlir").write_text(RECIPE_KERNELS.format(offset=offset, body=_hungry(width)))
        return (checkout,) + _run_job(job, checkout, ref, store, tmp_path)

    checkout, passed, summary, output = ci("main", 1, 2)
    assert passed, output
    assert "## Changes against the baseline" not in summary and "| steady | " in summary, summary
    manifest = json.loads((checkout / "gpu-artifacts" / "gpu-manifest.json").read_text())
    (library,) = manifest["libraries"]
    assert library["source"] == "src/mathlib.mlir" and set(library["jobs"][0]["intermediates"]) == \
        {"initial.ll", "linked.ll"}
    assert manifest["objects"][0]["jobs"][0]["libraries"] == [
        {"path": "build/mathlib.rocdl.bc", "sha256": _sha(checkout / "build" / "mathlib.rocdl.bc"),
         "source": "src/mathlib.mlir"}]
    assert "| src/mathlib.mlir | mathlib | rocdl | gfx942 | build/mathlib.rocdl.bc |" in summary
    assert "initial.ll, linked.ll | src/kernels.mlir @pressure |" in summary
    assert (store / "gpu-artifacts-main" / "gpu-artifacts.tar.gz").is_file()

    checkout, passed, summary, output = ci("moved-store", 2, 2)
    assert passed, output
    assert "- ISA changed: src/kernels.mlir @pressure rocdl gfx942" in summary, summary
    diff = summary.split("<details><summary>ISA diff: src/kernels.mlir @pressure rocdl gfx942</summary>", 1)[1]
    diff = diff.split("```diff\n", 1)[1].split("\n```", 1)[0]
    assert diff.startswith("--- baseline\n+++ this build\n@@") and "\n-" in diff and "\n+" in diff, diff
    assert "(the baseline's ISA is not here" not in summary
    page = (checkout / "gpu-artifacts" / "gpu-report.html").read_text()
    assert "<details><summary>ISA changed: src/kernels.mlir @pressure rocdl gfx942</summary><pre>--- baseline" in page

    checkout, passed, summary, output = ci("hungry", 1, 40)
    assert not passed
    assert re.search(r"GPU regressions against the baseline: src/kernels\.mlir @pressure rocdl gfx942 hungry: "
                     r"registers \d+ -> \d+ \(rule registers\+10%\)", output), output
    assert "## Regressions (the build fails)" in summary and "ISA diff: src/kernels.mlir @pressure" in summary
    assert (store / "gpu-artifacts-hungry" / "gpu-artifacts.tar.gz").is_file()  # uploaded all the same


def test_artifacts_of_a_library_dump_folder_report_its_stages(tmp_path):
    """`mlirgpu artifacts LIB.dumps`: the library's stages are in the manifest, both reports and the archive (it
    was an empty report, exit 0); a kernel linking it names it; an empty folder is an error naming it."""
    import sys
    import tarfile

    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))
    (tmp_path / "mathlib.mlir").write_text(RECIPE_LIBRARY)
    (tmp_path / "kernels.mlir").write_text(RECIPE_KERNELS.format(offset=1, body=_hungry(2)))
    mlirgpu = [sys.executable, "-m", "mlirgpu"]
    subprocess.run(mlirgpu + ["compile", "--emit", "library", "mathlib.mlir", "-o", "lib/mathlib",
                              "--dump-intermediates", "lib/mathlib.dumps"], env=env, cwd=tmp_path, check=True)
    run = subprocess.run(mlirgpu + ["artifacts", "lib/mathlib.dumps", "-o", "out"], env=env, cwd=tmp_path,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    manifest = json.loads((tmp_path / "out" / "gpu-manifest.json").read_text())
    (library,) = manifest["libraries"]
    assert library["files"][0]["path"] == "lib/mathlib.rocdl.bc" and library["files"][0]["sha256"] == \
        _sha(tmp_path / "lib" / "mathlib.rocdl.bc")
    assert {suffix: item["path"] for suffix, item in library["jobs"][0]["intermediates"].items()} == {
        "initial.ll": "../lib/mathlib.dumps/mathlib.initial.ll", "linked.ll": "../lib/mathlib.dumps/mathlib.linked.ll"}
    row = "| mathlib.mlir | mathlib | rocdl | gfx942 | lib/mathlib.rocdl.bc | 2.2 KiB | initial.ll, linked.ll |  |"
    assert row in (tmp_path / "out" / "gpu-report.md").read_text()
    page = (tmp_path / "out" / "gpu-report.html").read_text()
    assert "<h2>Libraries</h2>" in page and "from 0 objects and 1 library." in page
    with tarfile.open(tmp_path / "out" / "gpu-artifacts.tar.gz") as archive:
        members = archive.getnames()
    assert "outside/0-mathlib.dumps/mathlib.linked.ll" in members and "outside/0-mathlib.dumps/mlirgpu.json" in members

    subprocess.run(mlirgpu + ["compile", "kernels.mlir", "-o", "kernels.o", "-l", "lib/mathlib.rocdl.bc",
                              "--dump-intermediates", "kernels.dumps"], env=env, cwd=tmp_path, check=True)
    subprocess.run(mlirgpu + ["artifacts", "kernels.dumps", "lib", "-o", "both"], env=env, cwd=tmp_path, check=True)
    manifest = json.loads((tmp_path / "both" / "gpu-manifest.json").read_text())
    assert manifest["objects"][0]["jobs"][0]["libraries"] == [
        {"path": "lib/mathlib.rocdl.bc", "sha256": _sha(tmp_path / "lib" / "mathlib.rocdl.bc"),
         "source": "mathlib.mlir"}]
    assert "| lib/mathlib.rocdl.bc | 2.2 KiB | initial.ll, linked.ll | kernels.mlir @pressure |" in \
        (tmp_path / "both" / "gpu-report.md").read_text()

    (tmp_path / "empty.dumps").mkdir()
    empty = subprocess.run(mlirgpu + ["artifacts", "empty.dumps", "-o", "none"], env=env, cwd=tmp_path,
                           capture_output=True, text=True)
    assert empty.returncode == 1 and empty.stderr.startswith("mlirgpu: empty.dumps: error: no compile record"), \
        empty.stderr
