"""Property tests of the scanner and splitter on generated MLIR-like text.

On generated files the MLIR tools accept, the dump files the scan declares are exactly the files the compile
writes (end to end; test_scan_differential.py compares the scan with mlir-opt's reading on many more). Bounded
for CI with MLIRGPU_FUZZ_EXAMPLES (default 25 files); raise it for a long run.
"""
import os
import subprocess
import tempfile

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mlirgpu import CompileOptions, compile_file
from mlirgpu.llvm import toolchain
from mlirgpu.errors import CompileError
from mlirgpu.pipeline.scan import planned_outputs

EXAMPLES = int(os.environ.get("MLIRGPU_FUZZ_EXAMPLES", "25"))

names = st.one_of(
    st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
    st.builds(lambda s: '"' + s + '"', st.sampled_from(
        ["a b", "x/y", "../up", "brace{", "}close", "gpu.module @q {", "ünï", "dot.ted", "-lead"])),
)
chips = st.sampled_from(['#nvvm.target<chip = "sm_80">', '#nvvm.target<chip = "sm_90", O = 1>',
                         '#rocdl.target<chip = "gfx942">', "#nvvm.target", "#rocdl.target<chip = \"gfx90a\">"])
noise = st.sampled_from([
    "", "// gpu.module @commented [#nvvm.target] {", '// "unbalanced {', "// }}}",
])


@st.composite
def mlir_files(draw):
    aliases = draw(st.lists(chips, max_size=2))
    lines = [draw(noise)]
    lines += [f"#t{i} = {text}" for i, text in enumerate(aliases)]
    note = draw(st.sampled_from(["", ', my.note = "gpu.module @fake { }"', ', my.note = "}}}{"']))
    lines.append(f"module attributes {{gpu.container_module{note}}} {{")
    used = set()
    resources = False
    for index in range(draw(st.integers(1, 3))):
        name = draw(names)
        if name in used:
            continue
        used.add(name)
        refs = draw(st.lists(st.one_of(chips, st.sampled_from([f"#t{i}" for i in range(len(aliases))] or ["#nvvm.target"])),
                             min_size=1, max_size=2))
        generic = draw(st.booleans()) and draw(st.booleans())
        body = (f"    llvm.func @k{index}() attributes {{gpu.kernel, nvvm.kernel, rocdl.kernel, my.s = \"{{ gpu.module @x\"}} "
                f"{{ llvm.return }}")
        if draw(st.booleans()):
            resources = True
            body += (f"\n    llvm.mlir.global internal constant @lut{index}(dense_resource<blob> : tensor<2xf32>) "
                     "{addr_space = 4 : i32} : !llvm.array<2 x f32>")
        if generic:
            sym = name[1:-1] if name.startswith('"') else name
            lines.append(f'  "gpu.module"() <{{sym_name = "{sym}", targets = [{", ".join(refs)}]}}> ({{')
            lines.append(body)
            lines.append("  }) : () -> ()")
        else:
            lines.append(f"  {draw(noise)}")
            lines.append(f"  gpu.module @{name} [{', '.join(refs)}] {{")
            lines.append(body)
            lines.append("  }")
        if index == 0 and draw(st.booleans()):
            lines.append("  module @inner {\n    gpu.module @nested_one [#nvvm.target] {\n    }\n  }")
    lines.append("}")
    if resources:
        lines.append('{-#\n  dialect_resources: {\n    builtin: {\n      blob: "0x040000000000803F00000040"\n    }\n  }\n#-}')
    return "\n".join(lines) + "\n"


def _accepted(path):
    return subprocess.run([toolchain.llvm_tool("mlir-opt"), path], capture_output=True).returncode == 0


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mlir_files())
def test_declared_outputs_equal_written_outputs(text):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "f.mlir")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        options = CompileOptions(format="isa", dump_dir=os.path.join(folder, "D"))
        declared = planned_outputs(path, options)
        if not _accepted(path):
            event("rejected by mlir-opt")
            return
        try:
            result = compile_file(path, options)
        except CompileError:
            event("rejected by the compiler")
            return  # e.g. names that collide once made safe: the build fails, whatever was declared
        event(f"compiled, {len(result.jobs)} job(s)")
        written = [os.path.relpath(p, options.dump_dir) for p in result.dumps]
        assert sorted(declared) == sorted(written), text
