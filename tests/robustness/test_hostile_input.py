"""Hostile and malformed input through the CLI and SCons (the table is tests/hostile_cases.py): each case gives
its exit code and exactly one error line in the documented format (`mlirgpu: FILE[:LINE]: error: WHAT (fix:
HOW)`, or SCons's `scons: *** [target] FILE[:LINE]: error: ...`), no traceback, no output object (a stale one is
removed), nothing written outside the case's folder, no leftover temporary files, and no target SCons later takes
as up to date. Input MLIR accepts compiles, and nothing a module name holds changes what the generated header,
reports and object mean (also for names drawn by hypothesis from the whole quoted-symbol alphabet).
"""
import html.parser
import json
import os
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpusutil import ROOT
from hostile_cases import ACCEPTED, CASES, fill, kernel, materialise
from sconsutil import SCONS, TOOLPATH

ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"))


def _files(folder):
    return sorted(os.path.relpath(os.path.join(d, n), folder) for d, _s, names in os.walk(folder) for n in names)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cli(name, tmp_path):
    case = CASES[name]
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "tmp").mkdir()
    source = materialise(work, name, case)
    args = [fill(arg, work, source) for arg in case.args]
    output = work / "out.o"
    if "-o" not in args:
        output.write_bytes(b"stale object from an earlier build")
        args = ["-o", str(output), *args]
    before = _files(tmp_path)
    env = dict(ENV, TMPDIR=str(tmp_path / "tmp"), **case.env)
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", source, *args], capture_output=True,
                         text=True, env=env, cwd=work, timeout=120)
    assert run.returncode == case.code, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "Traceback" not in run.stderr
    where = source if case.line is None else f"{source}:{case.line}:"
    if case.code == 2:  # a command line argparse cannot read
        assert lines[0].startswith("mlirgpu: error: "), lines[0]
    elif case.family in ("outputs",) or case.source in ("<device>",):
        assert lines[0].startswith("mlirgpu: ") and "error:" in lines[0], lines[0]
    else:
        assert lines[0].startswith(f"mlirgpu: {where}") and " error: " in lines[0], lines[0]
    assert case.expected in lines[0], lines[0]
    if "-o" not in case.args:
        assert not output.exists(), "a stale object survived a failed compile"
    assert os.listdir(tmp_path / "tmp") == [], "temporary files left behind"
    created = set(_files(tmp_path)) - set(before)
    assert all(path.startswith("work/") for path in created), created  # nothing outside the case's folder
    assert not any("pwned" in path for path in _files(tmp_path))


def _scons(folder, *args, env=None):
    return subprocess.run([SCONS, "-Q", "-k", *args], cwd=folder, capture_output=True, text=True,
                          env=env or os.environ, timeout=600)


def test_scons(tmp_path, served):
    """Every case that SCons does not report itself, as an object of one build under -k: each fails with its
    one line; none is up to date the next time; a good source beside them builds (in process and with the
    build's workers taken from a compile server)."""
    lines = [f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}], GPU_CHIP='sm_80')",
             "env.GpuObject('good', 'good.mlir')"]
    scons_cases = {name: case for name, case in CASES.items() if case.scons is not None and not case.env}
    for name, case in sorted(scons_cases.items()):
        source = materialise(tmp_path, name, case)
        settings_ = {key: fill(value, tmp_path, source) for key, value in case.scons.items()}
        lines.append(f"env.GpuObject({name!r}, {os.path.basename(source)!r}, **{settings_!r})")
    (tmp_path / "SConstruct").write_text("\n".join(lines) + "\n")
    (tmp_path / "good.mlir").write_text(kernel())
    for _attempt in range(2):
        run = _scons(tmp_path, "DUMP=1", env=dict(os.environ, **served))
        assert run.returncode != 0
        assert "Traceback" not in run.stderr
        for name, case in scons_cases.items():
            found = re.findall(rf"^scons: \*\*\* \[{name}\.o\] (.*)$", run.stderr, re.M)
            assert len(found) == 1, f"{name}: {run.stderr}"
            where = f"{name}.mlir:{case.line}: error:" if case.line else f"{name}.mlir"
            assert found[0].startswith(where), found[0]
            assert case.expected in found[0] or case.code == 2, found[0]  # SCons words enum errors its own way
            assert not (tmp_path / f"{name}.o").exists()
        assert (tmp_path / "good.o").exists()
        assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("name", sorted(name for name, case in CASES.items() if case.env))
def test_scons_environment(name, tmp_path, served):
    case = CASES[name]
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\nenv.GpuObject('k', 'k.mlir')\n")
    (tmp_path / "k.mlir").write_text(case.source)
    run = _scons(tmp_path, env=dict(os.environ, **case.env, **served))
    found = re.findall(r"^scons: \*\*\* \[k\.o\] (.*)$", run.stderr, re.M)
    assert run.returncode != 0 and len(found) == 1 and case.expected in found[0], run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "k.o").exists()


def test_scons_command_line_values_are_checked_at_read_time(tmp_path):
    """A value on the command line that its variable does not allow stops the build before anything runs."""
    (tmp_path / "SConstruct").write_text(
        f"env = Environment(tools=['default', 'mlirgpu'], toolpath=[{TOOLPATH!r}])\nenv.GpuObject('k', 'k.mlir')\n")
    (tmp_path / "k.mlir").write_text(kernel())
    for setting in ("GPU_FORMAT=cubin", "GPU_TARGET=spirv", "GPU_LAYOUT=nvidia", "GPU_WARNINGS=loud"):
        run = _scons(tmp_path, setting)
        errors = [line for line in run.stderr.splitlines() if line.startswith("scons: *** ")]
        assert run.returncode == 2 and len(errors) == 1, run.stderr
        assert setting.split("=")[1] in errors[0] and "Traceback" not in run.stderr
        assert not (tmp_path / "k.o").exists()


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_input_compiles(name, tmp_path):
    source = tmp_path / "k.mlir"
    source.write_bytes(ACCEPTED[name].encode("utf-8"))
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", str(source), "-o", str(tmp_path / "k.o"),
                          "--format", "isa", "--header", str(tmp_path / "k.h"), "--dump-intermediates",
                          str(tmp_path / "D")], capture_output=True, text=True, env=ENV)
    assert run.returncode == 0, run.stderr
    _check_generated(tmp_path, [_expected_symbol(ACCEPTED[name])])


def _expected_symbol(text):
    """The C name of the one module of a source (naming rule: `[A-Za-z0-9_]`, a leading digit prefixed)."""
    from mlirgpu.util.mlirtext import SYMBOL, symbol_name
    from mlirgpu.util.naming import c_name

    return c_name(symbol_name(SYMBOL.search(text, text.index("gpu.module")).group(1)))


class _Rows(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows = 0
        self.tags = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.rows += tag == "tr"


def _check_generated(folder, names):
    """The header compiles with -Wall -Werror and declares exactly the binaries' symbols, which are exactly the
    object's; the reports have one row per kernel and no structure from names."""
    header = (folder / "k.h").read_text()
    declared = re.findall(r"^extern const (?:unsigned char|uint64_t) (\w+)(?:\[\])?;$", header, re.M)
    expected = sorted([f"{n}_binary" for n in names] + [f"{n}_binary_size" for n in names])
    assert sorted(declared) == expected
    program = folder / "use.c"
    program.write_text('#include "k.h"\n' + "".join(f"const void *use_{i} = &{symbol};\n"
                                                     for i, symbol in enumerate(declared)))
    subprocess.run(["gcc", "-Wall", "-Werror", "-c", str(program), "-o", str(folder / "use.o")], check=True)
    nm = subprocess.run(["nm", "-g", "--defined-only", str(folder / "k.o")], capture_output=True, text=True,
                        check=True).stdout
    assert sorted(line.split()[-1] for line in nm.splitlines()) == expected
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "artifacts", str(folder / "D"), "-o", str(folder / "A")],
                         capture_output=True, text=True, env=ENV)
    assert run.returncode == 0, run.stderr
    # repro.sh: every line that is no comment is one of ours (a name cannot end a comment and start a command).
    for line in (folder / "D" / "repro.sh").read_text().splitlines():
        assert line.startswith(("#", "set -e", 'here=$(dirname -- "$0"; echo .)', 'cd -- "${here%??}"', '"$',
                                "rm -f ", "printf ")) or \
            re.fullmatch(r'if \[ -z "\$\{([A-Z_]+):-\}" \]; then \1=.*; fi', line), line
    report = (folder / "A" / "gpu-report.md").read_text()
    kernels, binaries = report.split("## Kernels", 1)[1].split("## Binaries", 1)
    for section, columns in ((kernels, 11), (binaries, 9)):  # a header and one row each, every cell in place
        table = [line for line in section.splitlines() if line.startswith("| ")]
        assert len(table) == 2 and all(len(re.split(r"(?<!\\)\|", row)) == columns for row in table), table
    assert "](" not in report.replace("\\](", "")
    page = _Rows()
    page.feed((folder / "A" / "gpu-report.html").read_text())
    assert page.rows == 4 and page.tags <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "div",
                                            "svg", "rect", "text", "title", "table", "tr", "th", "td", "ul", "li"}
    record = json.loads((folder / "D" / "mlirgpu.json").read_text())
    assert [binary["symbol"] for binary in record["binaries"]] == [f"{n}_binary" for n in names]


# Quoted symbols may hold any character; MLIR writes the others as \XX escapes.
symbol_text = st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=0x2FFF, blacklist_categories=("Cs",)),
                      min_size=1, max_size=24)


def _quoted(name):
    return '"' + "".join(f"\\{b:02X}" if b < 0x20 or b >= 0x7F or chr(b) in '"\\' else chr(b)
                         for b in name.encode("utf-8")) + '"'


@settings(max_examples=int(os.environ.get("MLIRGPU_FUZZ_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(symbol_text)
def test_any_module_name_keeps_generated_files_meaning(tmp_path_factory, name):
    folder = tmp_path_factory.mktemp("name")
    text = kernel(name=_quoted(name))
    (folder / "k.mlir").write_text(text)
    run = subprocess.run([sys.executable, "-m", "mlirgpu", "compile", str(folder / "k.mlir"), "-o",
                          str(folder / "k.o"), "--format", "isa", "--header", str(folder / "k.h"),
                          "--dump-intermediates", str(folder / "D")], capture_output=True, text=True, env=ENV)
    assert run.returncode == 0, run.stderr
    _check_generated(folder, [_expected_symbol(text)])
