"""docs/reference.md against the code: every command-line option of every command, every SCons variable, every
MLIRGPU_* name the package reads or defines (environment, CMake, C header, construction variables) and every
toolkit search variable has its line; and the reference names nothing the code does not have. The docs read in
short paragraphs and every page is in the site's nav (the site's strict build, and the fields of a real record:
tests/build/test_docs_build.py)."""
import glob
import os
import re

from corpusutil import ROOT

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


def _kind(row):
    """The reference's kind column: the kind, with the bounds of a number."""
    if row.low is None:
        return row.kind
    upper = "" if row.high in (None, float("inf")) else f" to {row.high:g}"
    return f"{row.kind}, from {row.low:g}{upper}"


def test_the_environment_table_is_the_reference():
    """docs/reference.md's environment table against mlirgpu.util.environment's, both ways: each MLIRGPU_* row
    with its kind, default and meaning as the table has them, no row the table lacks; the table's internal
    variables are named in the paragraph about them."""
    from mlirgpu.util import environment

    section = reference().split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    documented = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `MLIRGPU_"):
            documented[cells[0].strip("`")] = cells[1:]
    expected = {row.name: [_kind(row), row.shown or (f"`{row.default}`" if row.default else ""), row.meaning]
                for row in environment.TABLE if not row.internal}
    assert documented == expected
    internal = section.split("Set by the tool itself", 1)[1]
    assert sorted(row.name for row in environment.TABLE if row.internal and f"`{row.name}`" not in internal) == []


def test_every_toolkit_search_variable_is_in_the_reference():
    from mlirgpu.llvm import toolchain
    from mlirgpu.targets import TARGETS  # noqa: F401 - importing the targets registers their variables

    documented = reference()
    assert sorted(name for name in toolchain.SEARCH_VARIABLES if name != "PATH" and f"`{name}`" not in documented) == []


LIST_ITEM = re.compile(r"\s*([-*+]|\d+\.)\s")
LONGEST_PARAGRAPH = 12


def paragraphs(text):
    """[first line, line count] of each paragraph of a markdown page. A paragraph is a run of consecutive
    non-blank lines outside a fenced code block, ended by a blank line, a fence, a heading (`#`), a table row
    (`|`) or an HTML comment (`<!--`), none of which is counted. A list is not a paragraph, but each of its items
    (the item's line and the lines under it up to the next item) is measured as one, so a list cannot hide one."""
    found, current, fenced = [], None, False
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced, current = not fenced, None
        elif fenced or not line.strip() or line.lstrip().startswith(("#", "|", "<!--")):
            current = None
        else:
            if current is None or LIST_ITEM.match(line):
                current = [number, 0]
                found.append(current)
            current[1] += 1
    return found


def docs_pages():
    """The site's pages: docs/*.md and the guide's task pages, docs/guide/*.md (not notes kept elsewhere in docs/
    for a later merge into them)."""
    return sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")) + glob.glob(os.path.join(ROOT, "docs", "guide", "*.md")))


def test_no_paragraph_of_the_docs_is_over_12_lines():
    """Every docs page reads in short paragraphs: a long one is cut into several, a list or a table."""
    long = [f"{os.path.relpath(path, ROOT)}:{first} ({count} lines)" for path in docs_pages()
            for first, count in paragraphs(open(path, encoding="utf-8").read()) if count > LONGEST_PARAGRAPH]
    assert long == [], f"paragraphs over {LONGEST_PARAGRAPH} lines: {long}"


def test_every_docs_page_is_in_the_mkdocs_nav():
    """A page missing from mkdocs.yml's nav is built but reachable from no menu: every docs page, each task page
    of the guide above all, has its nav entry, and the nav names no page that is not there."""
    import yaml

    def named(entry):
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, list):
            return [page for item in entry for page in named(item)]
        return [page for value in entry.values() for page in named(value)]

    with open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8") as handle:
        nav = set(named(yaml.safe_load(handle)["nav"]))
    pages = {os.path.relpath(path, os.path.join(ROOT, "docs")) for path in docs_pages()}
    assert sorted(pages - nav) == [], "docs pages missing from the nav of mkdocs.yml"
    assert sorted(nav - pages) == [], "mkdocs.yml's nav names pages docs/ does not have"
    assert any(page.startswith("guide/") for page in nav)
