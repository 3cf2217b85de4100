"""The RUN lines of the upstream-style corpus (tests/corpus/pipelines): the mlir-opt flags of a file's first RUN
command, as a user pastes them into `--lowering`, and the flags of each mlir-opt of a chain. Shared by the tests
(test_pasted_pipelines) and the benchmark that builds that corpus (bench/pipelines.py)."""
import re
import shlex


def run_line(path):
    """The mlir-opt flags of the file's first RUN command (the lowering, as upstream's test gives it): its
    `\\`-continued RUN lines joined, up to the first `|` outside quotes that pipes into another tool than
    mlir-opt (a chain `mlir-opt %s | mlir-opt -a` is given whole, as a user pastes it)."""
    command = None
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            match = re.match(r"// RUN:(.*?)\s*$", line)
            if command is None and match and match.group(1).strip().startswith("mlir-opt %s"):
                command = ""
            if command is None:
                continue
            text = match.group(1) if match else ""
            command += " " + text.rstrip("\\").strip()
            if not text.endswith("\\"):
                break
    if command is None:
        raise AssertionError(f"{path} has no mlir-opt RUN line")
    quote = None
    for index, char in enumerate(command):
        quote = (None if char == quote else quote) if quote else (char if char in "\"'" else None)
        if char == "|" and not quote and not command[index + 1 :].lstrip().startswith("mlir-opt "):
            command = command[:index]
            break
    flags = command.strip()[len("mlir-opt %s"):].strip()
    return command.strip() if flags.startswith("|") else flags


def mlir_opt_runs(flags):
    """The flags of each mlir-opt of a RUN line's chain (`-a | mlir-opt -b`: [[-a], [-b]])."""
    runs = [[]]
    for word in shlex.split(flags):
        if word == "|":
            runs.append([])
        elif word not in ("mlir-opt", "%s"):
            runs[-1].append(word)
    return runs
