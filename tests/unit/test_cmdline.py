"""Extra tool options split as upstream MLIR splits them (mlirgpu.util.cmdline): LLVM's GNU tokenizer, not a
shell, after one pair of double and one of single quotes is taken off; and `option_words`, which writes an option
so that a command line gives its value back."""
import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlirgpu.util.cmdline import gnu_tokenize, option_words, tokenize_cmd_options, unclosed_quote


@pytest.mark.parametrize("text,tokens", [
    ("-a  -b\t-c\n", ["-a", "-b", "-c"]),
    ('"a b" c', ["a b", "c"]),
    ("a\\ b", ["a b"]),  # a backslash escapes outside quotes
    ('"a\\"b"', ['a"b']),  # and inside them
    ("'x\"y' z", ['x"y', "z"]),  # a quote span ends only at its own quote
    ('a""b', ["ab"]),  # quotes join to the word around them
    ('"" x \'\'', ["x"]),  # empty arguments are dropped
    ("a\\", ["a\\"]),  # a backslash at the very end is kept
    ("", []),
])
def test_the_gnu_tokenizer_splits_as_llvm_does(text, tokens):
    assert gnu_tokenize(text) == tokens


def test_an_unclosed_quote_runs_to_the_end_and_is_reported():
    assert gnu_tokenize('-v "abc def', report_unclosed=True) == (["-v", "abc def"], True)
    assert gnu_tokenize('-v "abc" def', report_unclosed=True) == (["-v", "abc", "def"], False)
    assert unclosed_quote("'-O3 \"x") and not unclosed_quote("'-O3 \"x\"'")


def test_upstreams_opts_lose_one_pair_of_each_quote_first():
    """gpu-module-to-binary's opts= as upstream reads it: `"--maxrregcount=40 -v"` is two options, where a shell
    (shlex) would give one."""
    assert tokenize_cmd_options('"--maxrregcount=40 -v"') == ["--maxrregcount=40", "-v"]
    assert shlex.split('"--maxrregcount=40 -v"') == ["--maxrregcount=40 -v"]
    assert tokenize_cmd_options("'-O3 -v'") == ["-O3", "-v"]
    assert tokenize_cmd_options("\"'-a -b'\"") == ["-a", "-b"]  # double quotes first, then single ones
    assert tokenize_cmd_options("'\"-a -b\"'") == ["-a -b"]  # single first: only the single pair goes
    assert tokenize_cmd_options('"') == []


def _escaped(token):
    return "".join("\\" + char if char in " \t\r\n\"'\\" else char for char in token)


@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1), max_size=6))
def test_escaped_words_read_back_as_themselves(tokens):
    assert gnu_tokenize(" ".join(_escaped(token) for token in tokens)) == tokens


@pytest.mark.parametrize("flag,value,words", [
    ("--opts", "x", ["--opts", "x"]),
    ("--opts", "-v -O3", ["--opts=-v -O3"]),  # `--opts -v` would be read as an option of its own
    ("-l", "-x.bc", ["-l-x.bc"]),
])
def test_an_option_value_starting_with_a_dash_is_joined_to_its_flag(flag, value, words):
    assert option_words(flag, value) == words
