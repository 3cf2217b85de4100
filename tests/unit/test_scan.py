"""The emitter's fast scan reads MLIR text as mlir-opt does (aliases, comments, strings, quoted names, long
blanks, blobs) in bounded memory, and its prediction of a compile's dump files (against real compiles:
tests/identity/test_scan_compile.py)."""
import glob
import os

import pytest

from corpusutil import CORPUS
from mlirgpu import CompileOptions
from mlirgpu.pipeline.scan import planned_outputs

TRICKY = """\
// gpu.module @in_a_comment [#nvvm.target]
#t = #rocdl.target<chip = "gfx90a", O = 1>
module attributes {gpu.container_module, my.note = "gpu.module @in_a_string {"} {
  gpu.module @"odd name" [#t, #nvvm.target<chip = "sm_80">] {
    llvm.func @k() attributes {gpu.kernel, rocdl.kernel} { llvm.return }
  }
}
"""


def test_scan_reads_aliases_comments_strings_and_quoted_names(tmp_path):
    source = tmp_path / "t.mlir"
    source.write_text(TRICKY)
    names = planned_outputs(str(source), CompileOptions(format="isa"))
    assert names == [f"odd_name.{chip}.{s}" for chip in ("gfx90a", "sm_80")
                     for s in ("initial.ll", "linked.ll", "opt.ll", "isa")] + ["repro.sh", "mlirgpu.json"]


def _scanned_with_peak(text):
    """The scan of `text` and the peak of Python memory it allocated."""
    import tracemalloc

    from mlirgpu.pipeline.scan import scan_text

    tracemalloc.start()
    try:
        return scan_text(text), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_big_string_literal_is_scanned_in_bounded_memory():
    """A 2 MB dense_resource string costs the scan a few copies of the text, not sre's backtracking state per
    character (142 bytes per character of the file with a string pattern written `"(?:[^"\\]|\\.)*"`)."""
    text = (TRICKY + '{-#\n  dialect_resources: {\n    builtin: {\n      blob: "0x04000000' + "0000803F" * (1 << 18)
            + '"\n    }\n  }\n#-}\n')
    scan, peak = _scanned_with_peak(text)
    assert scan.suffix_start > 0 and [module.name for module in scan.modules] == ["odd name"]
    assert peak < 12 * len(text)


def test_leading_comment_lines_are_scanned_without_a_blanked_copy():
    """A file that starts with megabytes of comment lines costs the scan no blanked copy of them (was three: the
    blank, `clean` and `masked`, 48 MB each for a 48 MiB file); the modules' offsets are the file's."""
    from mlirgpu.pipeline.scan import scan_text

    comments = ("// " + "x" * 76 + "\n") * 40000
    text = comments + TRICKY
    scan, peak = _scanned_with_peak(text)
    alone = scan_text(TRICKY)
    assert [(m.name, m.start, m.end) for m in scan.modules] == \
        [(m.name, m.start + len(comments), m.end + len(comments)) for m in alone.modules]
    assert peak < len(text) // 2


def test_a_scan_after_leading_comments_is_the_scan_of_the_whole_text(monkeypatch):
    """The corpus and the scan's own cases after leading comment and blank lines (tabs, spaces before `//`,
    non-ASCII, a comment run continued on the first code line's line, CRLF), scanned with the leading lines cut
    off (`BIG_SPAN` 0) and whole (the cut never taken): the same Scan, or Unreadable both ways."""
    from mlirgpu.pipeline.scan import scan_text
    from mlirgpu.util import mlirtext

    def scanned(text, span):
        monkeypatch.setattr(mlirtext, "BIG_SPAN", span)
        try:
            return scan_text(text)
        except mlirtext.Unreadable as exc:
            return ("unreadable", str(exc))

    bodies = [TRICKY] + [open(path, encoding="utf-8").read() for path in sorted(glob.glob(os.path.join(CORPUS, "*.mlir")))]
    heads = ["", "// c\n", "\n\n", "  // c\n\t// d\n\n", "// \u00e9t\u00e9\n  // x\n", "// a\r\n\r\n", "// a\n// b",
             "\t \n// only\n   "]
    cut = 0
    for body in bodies:
        for head in heads:
            text = head + body
            cut += mlirtext.leading_comments_end(text) > 0
            assert scanned(text, 0) == scanned(text, 1 << 62), (head, body[:80])
    assert cut > len(bodies)


def test_leading_comments_end_where_whitespace_and_comment_rules_say():
    """On random text of comment, blank, indented, CRLF, form-feed, Unicode-space and code lines: the search that
    steps over plain comment and blank lines ends where `\\s*` and comment runs, matched line by line, end."""
    import random
    import re

    from mlirgpu.util import mlirtext

    space = re.compile(r"\s*")

    def by_rules(text):
        pos = 0
        while True:
            pos = space.match(text, pos).end()
            if not text.startswith("//", pos):
                return text.rfind("\n", 0, pos) + 1
            pos = mlirtext._COMMENT_RUN_AT.match(text, pos).end()  # noqa: SLF001 - the comment rule itself

    parts = ["// c\n", "  // d\n", "\n", "\r\n", "\t//x\r\n", " \f// y\n", "\u2028", "  \n", "module {\n", "x",
             "//", " ", "\t", "\n\n", "// a", "/", "\x0b\n", "\u00a0// z\n"]
    rng = random.Random(40)
    stepped = 0
    for _ in range(20000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 10)))
        assert mlirtext.leading_comments_end(text) == by_rules(text), repr(text)
        stepped += by_rules(text) > 0
    assert stepped > 5000


def test_text_readers_find_what_their_plain_regular_expressions_find():
    """On random text: the unrolled string pattern of SYMBOL matches what `"(?:[^"\\\n]|\\.)*"` matches,
    `unpreceded` finds what a leading lookbehind finds, and `skip_space` skips what str.isspace() says."""
    import random
    import re

    from mlirgpu.util import mlirtext

    plain_symbol = re.compile(r'@("(?:[^"\\\n]|\\.)*"|[A-Za-z_$.\-0-9][\w$.\-]*)')
    searches = [(r"gpu\.launch(?:_func)?(?![\w.$])", r"[\w.$]"), (r"([a-z_][a-z0-9_]*\.[a-z_][\w.]*)", r"[\w.$%#!@^]"),
                (r"[#!]([A-Za-z_][\w$]*)\.", r"[\w$.#!]"), (r"gpu\.module\b", r"[\w.$]")]
    pieces = ['"', "\\", "\n", " ", "\t", "\u00a0", "@", "a", "_", ".", "$", "#", "!", "%", "^", "x.y", "gpu.launch",
              "gpu.launch_func", "gpu.module", "#llvm.", "!foo.", "\\\"", "\\\n"]
    rng = random.Random(33)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        pos = rng.randint(0, len(text))
        assert [m.span() for m in mlirtext.SYMBOL.finditer(text, pos)] == \
            [m.span() for m in plain_symbol.finditer(text, pos)]
        for pattern, before in searches:
            found = mlirtext.unpreceded(re.compile(pattern), text, re.compile(before), pos, len(text) - pos // 2)
            assert [m.span() for m in found] == \
                [m.span() for m in re.compile(f"(?<!{before}){pattern}").finditer(text, pos, len(text) - pos // 2)]
        plain = pos
        while plain < len(text) and text[plain].isspace():
            plain += 1
        assert mlirtext.skip_space(text, pos) == plain


def test_structure_crossing_long_blanks_reads_what_plain_expressions_read(monkeypatch):
    """On random text, with any length counting as a long blanked span (`BIG_SPAN`, crossed in one jump): the
    comments and strings blanked, the braces matched and the white space skipped are what the plain patterns
    and str.isspace() give, character by character."""
    import random
    import re

    from mlirgpu.util import mlirtext

    tokens = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*(?:\n *//[^\n]*)*|"')
    pieces = ['"', "\\", "\n", " ", "  ", "//", "/", "{", "}", "a", "\u00e9", "\\\"", "#", "\t"]
    rng = random.Random(40)
    for _ in range(3000):
        monkeypatch.setattr(mlirtext, "BIG_SPAN", rng.choice((0, 1, 2, 5, 1 << 16)))
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        clean, masked, plain_error = list(text), list(text), None
        for match in tokens.finditer(text):
            if match.group() == '"':
                plain_error = "unterminated string"
                break
            start, end = match.span()
            if text[start] == '"':
                start, end = start + 1, end - 1
            for i in range(start, end):
                if text[i] != "\n":
                    masked[i] = " "
                    clean[i] = " " if text[match.start()] == "/" else clean[i]
        closing, opened, depths = {}, [], []
        for i, char in enumerate(masked if plain_error is None else ()):
            depths.append(len(opened))
            if char == "{":
                opened.append(i)
            elif char == "}" and not opened:
                plain_error = "unbalanced '}'"
                break
            elif char == "}":
                closing[opened.pop()] = i
        if plain_error is None and opened:
            plain_error = "unbalanced '{'"
        try:
            st = mlirtext.Structure(text)
        except mlirtext.Unreadable as exc:
            assert str(exc) == plain_error, text
            continue
        assert plain_error is None, text
        assert (st.clean, st.masked, st.closing) == ("".join(clean), "".join(masked), closing), text
        assert [st.depth_at(i) for i in range(len(text))] == depths, text
        for pos in range(len(text) + 1):
            skipped = pos
            while skipped < len(text) and masked[skipped].isspace():
                skipped += 1
            assert st.skip_space(pos) == skipped, (text, pos)


def test_dialect_prefixes_are_what_a_search_with_a_lookbehind_finds():
    import random
    import re

    from mlirgpu.util import mlirtext

    plain = re.compile(r"(?<![\w$.#!])[#!]([A-Za-z_][\w$]*)\.")
    pieces = ["#", "!", "#!", "llvm", "a", "_", "$", ".", "x.", " ", "\n", "{-#", "#-}", "9", "\u00e9", '"']
    rng = random.Random(41)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert sorted(mlirtext.dialect_prefixes(text)) == sorted(plain.findall(text)), text
        start = rng.randint(0, len(text))
        end = rng.randint(start, len(text))
        assert sorted(mlirtext.dialect_prefixes(text, start, end)) == sorted(plain.findall(text[start:end])), text


def test_pieces_of_a_file_with_megabytes_of_comments_or_a_blob_are_those_of_the_small_file(tmp_path):
    """What the compile hands mlir-translate is the same with or without the bulk: comments (before the aliases,
    between them and the module, inside it) are not in a piece, and the resource trailer (trailing blank lines
    stripped) only in one that names a `dense_resource`; line numbers count the comment lines."""
    from mlirgpu.pipeline.scan import direct_source

    alias = '#t = #nvvm.target<chip = "sm_90">\n'
    kernel = "llvm.func @k() attributes {gpu.kernel, nvvm.kernel} { llvm.return }"
    module = ("module attributes {gpu.container_module} {\n  gpu.module @big [#t] {\n    " + kernel + "\n  }\n"
              "  gpu.module @uses [#t] {\n    llvm.mlir.global external constant @w(dense_resource<weights> : "
              "tensor<4xf32>) {addr_space = 1 : i32} : !llvm.array<4 x f32>\n  }\n}\n")
    comments = ("// " + "x" * 76 + "\n") * 20000
    blob = ('{-#\n  dialect_resources: {\n    builtin: {\n      weights: "0x04000000' + "0000803F" * 40000
            + '"\n    }\n  }\n#-}')

    empty = "{-#\n#-}"  # a trailer of no resources

    def pieces(name, text):
        (tmp_path / name).write_text(text)
        return [(m.name, m.line, m.text) for m in direct_source(str(tmp_path / name), None).modules]

    small = pieces("small.mlir", alias + module + empty + "\n")
    inner = module.replace("  gpu.module @uses", "  " + comments.replace("\n", "\n  ") + "gpu.module @uses")
    assert pieces("comments.mlir", comments + alias + comments + module + empty + "\n") == \
        [(name, line + 40000, text) for name, line, text in small]
    assert [text for _name, _line, text in pieces("inner.mlir", alias + inner + empty + "\n")] == \
        [text for _name, _line, text in small]
    big = pieces("blob.mlir", alias + module + blob + "\n" * 5000)
    assert big[0] == small[0] and big[1][:2] == small[1][:2]
    assert big[1][2] == small[1][2].replace(empty + "\n", "") + blob + "\n"


def test_a_big_source_hashed_beside_its_decoding_gives_the_serial_text_and_hash():
    """A source over PARALLEL_BYTES is hashed on another thread: the same text and SHA-256 as one after the other,
    and a file that is not UTF-8 raises as before, with no thread left running."""
    import hashlib
    import threading

    import pytest

    from mlirgpu.pipeline import sourcefile

    data = ("// \u00e9t\u00e9 " * 500_000 + "module {}\n").encode("utf-8")
    assert len(data) > sourcefile.PARALLEL_BYTES
    expected = data.decode("utf-8"), hashlib.sha256(data).hexdigest()
    assert sourcefile._decoded_and_hashed(data) == expected  # noqa: SLF001
    with pytest.raises(UnicodeDecodeError):
        sourcefile._decoded_and_hashed(data + b"\xff")  # noqa: SLF001
    assert not [t for t in threading.enumerate() if t.name == "mlirgpu-source-hash"]


def test_a_scan_handed_to_another_process_serves_only_the_bytes_it_was_made_from(tmp_path):
    """A build tool hands the worker compiling a source its emitter's scan of it (known_scan): the worker's cache
    then holds that Scan under the file's content hash, and a file changed since is not handed at all."""
    from mlirgpu.pipeline import scan, scancache, scanned, sourcefile

    source = tmp_path / "t.mlir"
    source.write_text(TRICKY)
    assert scan.known_scan(str(source)) is None  # never read here: nothing to hand (and it is not read for it)
    made = scan.scan_file(str(source))
    known = scan.known_scan(str(source))
    assert known is not None and known[0] == sourcefile.content_digest(str(source))
    worker = scancache.ScanCache(lambda: "scanner", scanned.to_json, scanned.from_json)
    worker.take(known)
    assert worker.get(known[0]) == made
    worker.take((known[0], {"modules": "not a scan"}))  # one of another shape does not replace it
    assert worker.get(known[0]) == made
    malformed = scancache.ScanCache(lambda: "scanner", scanned.to_json, scanned.from_json)
    malformed.take(("another", {"modules": "not a scan"}))
    assert malformed.get("another") is None
    source.write_text(TRICKY.replace("odd name", "other name"))
    assert scan.known_scan(str(source)) is None


def test_generic_ops_in_a_launch_body_join_its_ops():
    """A kernel's ops in generic syntax count as the ops it uses (ROCDL predicts ocml and ockl for math ops of
    code it lowers); generic ops directly in the top module leave the file to mlir-opt."""
    from mlirgpu.pipeline.scan import scan_text
    from mlirgpu.util.mlirtext import Unreadable

    launch = ("gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n) threads(%tx, %ty, %tz) in "
              "(%sx = %n, %sy = %n, %sz = %n) {\n")
    text = ("func.func @f(%n: index) {\n" + launch +
            '  %s = "math.sqrt"(%c) <{fastmath = #arith.fastmath<none>}> : (f32) -> f32\n  gpu.terminator\n}\n'
            '"func.return"() : () -> ()\n}\n')
    (module,) = scan_text(text).modules
    assert module.name == "f_kernel" and "math.sqrt" in module.ops
    with pytest.raises(Unreadable):
        scan_text('"llvm.mlir.global"() <{sym_name = "f_kernel", global_type = i32}> ({\n}) : () -> ()\n' + text)
