"""docs/reference.md against the code: every command-line option of every command, every SCons variable, every
MLIRGPU_* name the package reads or defines (environment, CMake, C header, construction variables) and every
toolkit search variable has its line; and the reference names nothing the code does not have."""
import glob
import os
import re

from conftest import ROOT

REFERENCE = os.path.join(ROOT, "docs", "reference.md")
PACKAGE = os.path.join(ROOT, "site_scons", "mlirgpu")


def reference():
    with open(REFERENCE, encoding="utf-8") as handle:
        return handle.read()


def package_text():
    texts = []
    for pattern in ("**/*.py", "**/*.c", "**/*.cmake"):
        for path in glob.glob(os.path.join(PACKAGE, pattern), recursive=True):
            with open(path, encoding="utf-8") as handle:
                texts.append(handle.read())
    return "\n".join(texts)


def test_every_command_line_option_is_in_the_reference():
    from mlirgpu.frontends import cli

    documented = reference()
    parser = cli._parser()
    flags = {flag for action in parser._actions for flag in action.option_strings}
    for subparsers in parser._subparsers._group_actions:
        for command, sub in subparsers.choices.items():
            assert f"mlirgpu {command}" in documented or f"`{command}`" in documented, command
            flags |= {flag for action in sub._actions for flag in action.option_strings}
    missing = sorted(flag for flag in flags - {"-h", "--help"} if f"`{flag}`" not in documented)
    assert missing == [], f"options without a line in docs/reference.md: {missing}"


def test_every_scons_variable_is_in_the_reference_and_no_other():
    from mlirgpu.frontends.scons.variables import make_variables

    documented = reference()
    keys = {key for variable in make_variables(args={}).options for key in [variable.key, *variable.aliases]}
    assert sorted(key for key in keys if f"`{key}`" not in documented) == []
    named = set(re.findall(r"\bGPU_[A-Z_]+\b", documented))
    assert sorted(named - keys) == []


def test_every_mlirgpu_name_is_in_the_reference_and_no_other():
    documented = set(re.findall(r"\bMLIRGPU_[A-Z_]+\b", reference()))
    used = set(re.findall(r"\bMLIRGPU_[A-Z_]+\b", package_text()))
    assert sorted(used - documented) == [], "MLIRGPU_* names without a line in docs/reference.md"
    assert sorted(documented - used) == [], "docs/reference.md names MLIRGPU_* names the code does not have"


def test_every_toolkit_search_variable_is_in_the_reference():
    from mlirgpu.llvm import toolchain
    from mlirgpu.targets import TARGETS  # noqa: F401 - importing the targets registers their variables

    documented = reference()
    assert sorted(name for name in toolchain.SEARCH_VARIABLES if name != "PATH" and f"`{name}`" not in documented) == []


def test_the_documentation_builds_in_strict_mode(tmp_path):
    """MkDocs builds docs/ in strict mode: a link to a page or anchor that is not there fails the build."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "index.html").exists()
