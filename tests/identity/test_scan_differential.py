"""The fast scan never disagrees with MLIR: on every source of the corpus, the hand-written scanner cases
(tests/data/scan_cases) and generated variants, its prediction of the dump files equals what mlir-opt's reading
of the file gives (`mlir_outputs`, the path the compile takes when the scan steps aside), or the scan declined.

Generated examples per run: MLIRGPU_FUZZ_EXAMPLES (default 25); raise it for a long run.
"""
import glob
import os
import shlex
import tempfile

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from corpusutil import CORPUS, ROOT, instantiate
from mlirgpu import CompileOptions
from mlirgpu.errors import CompileError
from mlirgpu.pipeline.scan import fast_outputs, mlir_outputs, planned_outputs
from mlirgpu.pipeline.planning import check_options
from runlines import run_line

EXAMPLES = int(os.environ.get("MLIRGPU_FUZZ_EXAMPLES", "25"))
CASES = os.path.join(ROOT, "tests", "data", "scan_cases")
OPTIONS = [CompileOptions(format="isa", target="nvvm", chip="sm_80"),
           CompileOptions(format="fatbin", target="rocdl", chip="gfx90a,gfx942", dump_prefix="p_")]


def agree(path, options):
    """'declined', 'rejected' (mlir-opt or the planner refuses the file) or 'agreed'; fails on a disagreement."""
    fast = fast_outputs(path, options)
    try:
        truth = mlir_outputs(path, options)
    except CompileError:
        return "rejected"
    if fast is None:
        return "declined"
    assert fast == truth, f"scan predicted {fast}, mlir-opt reads {truth}"
    assert planned_outputs(path, options) == truth
    return "agreed"


def _files():
    for path in sorted(glob.glob(os.path.join(CASES, "*.mlir"))):
        yield pytest.param(path, id=os.path.basename(path))
    for path in sorted(glob.glob(os.path.join(CORPUS, "*.mlir"))):
        yield pytest.param(path, id="corpus-" + os.path.basename(path))


@pytest.mark.parametrize("path", list(_files()))
def test_scan_agrees_with_mlir(path, tmp_path):
    source = str(tmp_path / os.path.basename(path))
    with open(path, "rb") as handle:
        data = handle.read()
    if path.startswith(CORPUS):
        source = instantiate(path, source, "sm_90" if ".nvvm." in path else "gfx942", 2)
    else:
        with open(source, "wb") as handle:
            handle.write(data)
    outcomes = {agree(source, options) for options in OPTIONS}
    if path.startswith(CORPUS):
        assert "declined" not in outcomes  # the scan reads every file of our own corpus


PIPELINES = os.path.join(CORPUS, "pipelines")


@pytest.mark.parametrize("name", sorted(name for name in os.listdir(PIPELINES) if name.endswith(".mlir")))
def test_scan_agrees_with_mlir_on_run_lines(name):
    """The upstream-style corpus with its RUN line's pipeline as the lowering (what an SCons build of it
    declares): the scan reads every file, and reads each as mlir-opt does."""
    path = os.path.join(PIPELINES, name)
    lowering = run_line(path)
    if len(shlex.split(lowering)) == 1:
        lowering = shlex.split(lowering)[0]
    options = check_options(path, CompileOptions(lowering=lowering, dump_dir="dumps"))
    assert agree(path, options) == "agreed"


def test_scanner_reads_what_it_used_to_miss(tmp_path):
    """Each of these was predicted wrongly before (type aliases, multi-line aliases, `builtin.module`, outlined
    names colliding with any symbol, one uniquing counter, the enclosing function of a launch), or declined
    (generic ops nested in a host function or a launch's body)."""
    expected = {
        "hand_01_type_alias.mlir": ["k"], "hand_02_multiline_alias.mlir": ["k"],
        "hand_20_builtin_module_prefix.mlir": ["k"], "hand_07_outline_collide_llvmfunc.mlir": ["main_kernel_0"],
        "hand_08_two_funcs_two_launches.mlir": ["a_kernel", "a_kernel_0", "b_kernel", "b_kernel_1"],
        "hand_19_launch_in_llvmfunc.mlir": ["second_kernel"],
        "hand_32_generic_ops_nested_in_host.mlir": ["main_kernel"],
        "hand_34_generic_region_around_launch.mlir": ["main_kernel_0"],
        "hand_35_generic_ops_in_launch_bodies.mlir": ["f_kernel", "f_kernel_0"],
    }
    options = CompileOptions(format="isa", target="nvvm", chip="sm_80")
    for name, modules in expected.items():
        predicted = fast_outputs(os.path.join(CASES, name), options)
        assert predicted is not None, name
        stems = sorted({entry.split(".")[0] for entry in predicted if entry.endswith(".isa")})
        assert stems == sorted(modules), (name, predicted)
        assert agree(os.path.join(CASES, name), options) == "agreed"


def test_scanner_declines_what_it_cannot_know():
    options = CompileOptions(format="isa", target="nvvm", chip="sm_80")
    for name in ("hand_18_launch_named_module.mlir", "hand_18b_launch_into_existing_module.mlir",
                 "hand_25_generic_func_with_launch.mlir", "hand_33_generic_global_names_kernel.mlir"):
        assert fast_outputs(os.path.join(CASES, name), options) is None, name


# Generated variants: building blocks that are valid MLIR, combined and formatted in many ways.
TARGETS = ['#nvvm.target<chip = "sm_80">', '#nvvm.target<chip = "sm_90", O = 1>', "#nvvm.target",
           '#rocdl.target<chip = "gfx942">', '#rocdl.target<chip = "gfx90a", flags = {daz, wave64}>',
           '#nvvm.target<chip = "sm_80", flags = {"ptxas-cmd-options" = ["-v", "--def-load-cache=cg"]}>',
           '#nvvm.target<chip = "sm_80", link = []>',
           '#nvvm.target<\n    chip = "sm_90",\n    O = 3>']
NAMES = ["k", "k_1", "k.v2", '"with space"', '"brace{"', '"ünï"', "main_kernel", "f_kernel", '"-lead"']
NOISE = ["", "// gpu.module @commented [#nvvm.target] {", '// "unbalanced {', "// }}}", "// -----",
         "\n".join(["// a long run of comment lines, crossed in one jump {"] * 1500)]  # over mlirtext.BIG_SPAN
LONG_NOTE = ' attributes {my.note = "' + "{gpu.module @x [#nvvm.target]" * 2500 + '"}'  # a long string


@st.composite
def sources(draw):
    lines = [draw(st.sampled_from(NOISE))]
    aliases = []
    if draw(st.booleans()):
        lines.append(draw(st.sampled_from(["!t = f32", "!s = !llvm.struct<(i32, f32)>", "!f = (i32) -> i32"])))
    for index in range(draw(st.integers(0, 2))):
        value = draw(st.sampled_from(TARGETS))
        lines.append(f"#t{index} = {value}")
        aliases.append(f"#t{index}")
    if aliases and draw(st.booleans()):
        lines.append(f"#chain = {aliases[0]}")
        aliases.append("#chain")
    top = draw(st.sampled_from(["module", "builtin.module", "module @top", "module attributes {gpu.container_module}",
                                'module attributes {gpu.container_module, my.note = "gpu.module @fake {"}', None]))
    indent = "  " if top else ""
    body = []
    used = set()
    for index in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["module", "module", "func", "llvmfunc", "global", "decl"]))
        if kind == "module":
            name = draw(st.sampled_from(NAMES))
            if name in used:
                continue
            used.add(name)
            targets = draw(st.lists(st.sampled_from(TARGETS + aliases), max_size=2))
            handler = draw(st.sampled_from(["", " <#gpu.select_object<0>>"])) if targets else ""
            listed = f" [{', '.join(targets)}]" if targets else ""
            attrs = draw(st.sampled_from(["", ' attributes {my.note = "}"}', LONG_NOTE]))
            kernel = f"llvm.func @k{index}() attributes {{gpu.kernel, nvvm.kernel}} {{ llvm.return }}"
            if draw(st.booleans()):
                body.append(f"{indent}gpu.module @{name}{handler}{listed}{attrs} {{ {kernel} }}")
            else:
                body += [f"{indent}{draw(st.sampled_from(NOISE))}", f"{indent}gpu.module @{name}{handler}{listed}{attrs} {{",
                         f"{indent}  {kernel}", f"{indent}}}"]
        elif kind == "func":
            name = draw(st.sampled_from(["f", "main", "k"]))
            if name in used:
                continue
            used.add(name)
            launches = draw(st.integers(0, 2))
            launch = (f"{indent}  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n) "
                      f"threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {{\n{indent}    gpu.terminator\n"
                      f"{indent}  }}")
            body.append(f"{indent}func.func @{name}(%n: index) {{\n" + "\n".join([launch] * launches)
                        + f"\n{indent}  return\n{indent}}}")
        elif kind == "llvmfunc":
            name = draw(st.sampled_from(["main_kernel", "f_kernel", "g"]))
            if name not in used:
                used.add(name)
                body.append(f"{indent}llvm.func @{name}() {{\n{indent}  llvm.return\n{indent}}}")
        elif kind == "global":
            name = draw(st.sampled_from(["f_kernel", "glob"]))
            if name not in used:
                used.add(name)
                body.append(f"{indent}llvm.mlir.global internal constant @{name}(1 : i32) : i32")
        else:
            name = draw(st.sampled_from(["ext", "main_kernel_0"]))
            if name not in used:
                used.add(name)
                body.append(f"{indent}func.func private @{name}(i32) -> i32")
    if not any("gpu.module" in part or "gpu.launch" in part for part in body):
        body.append(f"{indent}gpu.module @last [#nvvm.target] {{\n{indent}}}")
    if top:
        if draw(st.booleans()) and len(body) == 1 and "\n" not in body[0]:
            lines.append(f"{top} {{ {body[0].strip()} }}")
        else:
            lines += [f"{top} {{"] + body + ["}"]
    else:
        lines += body
    text = "\n".join(lines) + "\n"
    if draw(st.integers(0, 5)) == 0:
        text = text.replace("\n", "\r\n")
    if draw(st.integers(0, 5)) == 0:
        text = text.replace("  ", "\t")
    return text


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sources(), st.sampled_from(OPTIONS))
def test_generated_sources_agree(text, options):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "f.mlir")
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        event(agree(path, options))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(list('gpu.module@"{}[]<>#!=,:/\\ \n\tabc-_0123456789nvvmrocdltarget')),
               max_size=300))
def test_scan_never_raises_on_any_text(text):
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as handle:
        handle.write(text)
    try:
        assert isinstance(planned_outputs(handle.name, CompileOptions(format="isa")), list)
    finally:
        os.unlink(handle.name)
