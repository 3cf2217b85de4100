"""A long command line read in one pass. argparse looks for the next option among all of a command line's
options at every step, so 60,000 options (a generated list of libraries, a build system's repeated flags) took it
minutes; given each option once, it reads the same line at once."""
import argparse

COLLAPSE_FROM = 256  # words: a shorter command line goes to argparse as it is (its cost there is tiny)


def collapsed(argv, forms):
    """(`argv` with each option in `forms` ({option string: argparse action}) given once, the values of its
    appended options {dest: [values]}), or (argv, None) where argparse reads the line itself. An appended option's
    values (-l) keep their order, a stored option keeps its last value (argparse's reading: the last wins; every
    value is still checked against the option's choices), a flag is given once. Only the forms argparse reads the
    same way are taken (`--flag value`, `--flag=value`, `-fVALUE`, `-f=VALUE`; no `--`, no abbreviation, no value
    that starts with -), all or none, so the result is argparse's."""
    if len(argv) < COLLAPSE_FROM:
        return argv, None
    kept, appended, rest = {}, {}, [argv[0]]
    words = iter(argv[1:])
    for word in words:
        if not word.startswith("-") or word == "-" or word[1:2].isdigit():
            rest.append(word)  # a positional (argparse reads `-1` as one where no option looks like a number)
            continue
        flag, value = _split(word, forms)
        action = forms.get(flag)
        if action is None:
            return argv, None  # `--`, an abbreviation, a cluster of flags: argparse's own reading
        if action.nargs == 0:
            if value is not None:
                return argv, None
            kept[action.dest] = (flag, None)
            continue
        if value is None:
            value = next(words, None)
            if value is None or value.startswith("-"):
                return argv, None  # argparse says what is wrong
        if action.choices is not None and value not in action.choices:
            return argv, None  # argparse says which values it takes
        if isinstance(action, argparse._AppendAction):  # noqa: SLF001 - the kind of action argparse made
            appended.setdefault(action.dest, []).append(value)
        else:
            kept[action.dest] = (flag, value)  # one word: a value may start with -
    return rest + [f"{flag}={value}" if value is not None else flag for flag, value in kept.values()], appended


def _split(word, forms):
    """(option string, its value in the same word or None) as argparse splits `word`: `--flag=value`,
    `-f=value` where `-f` is an option, else `-fvalue`."""
    if "=" in word:
        flag, _, value = word.partition("=")
        if flag in forms:
            return flag, value
    if word.startswith("--") or word in forms:
        return word, None
    return word[:2], word[2:]
