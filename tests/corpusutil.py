"""Where the checkout's parts are (ROOT, CORPUS) and corpus files made ready for a test (placeholders filled
in), for the test files of every tier folder. A module of its own, not conftest.py: each tier folder may have a
conftest of its own (tests/unit has one), and a plain `import conftest` would then find whichever was loaded last."""
import os
import subprocess
import tempfile

from mlirgpu.llvm import toolchain

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "corpus")

_DATA = []


def corpus_data():
    """tests/corpus/data/*.ll as bitcode (llvm-as) in a folder of this test process: the @DATA@ of the corpus."""
    if not _DATA:
        folder = tempfile.mkdtemp(prefix="mlirgpu-corpus-data-")
        for source in sorted(os.listdir(os.path.join(CORPUS, "data"))):
            target = os.path.join(folder, os.path.splitext(source)[0] + ".bc")
            subprocess.run([toolchain.llvm_tool("llvm-as"), os.path.join(CORPUS, "data", source), "-o", target],
                           check=True)
        _DATA.append(folder)
    return _DATA[0]


def instantiate(src, dst, chip="", opt_level=""):
    """Copy a corpus file with its @CHIP@ / @O@ / @DATA@ placeholders filled in."""
    with open(src, encoding="utf-8") as handle:
        text = handle.read()
    if "@DATA@" in text:
        text = text.replace("@DATA@", corpus_data())
    with open(dst, "w", encoding="utf-8") as handle:
        handle.write(text.replace("@CHIP@", chip).replace("@O@", str(opt_level)))
    return str(dst)


def neutral_targets(path, default=("nvvm", "rocdl", "xevm")):
    """The targets a target-neutral corpus file is lowered for: its `// identity-targets:` line, else all."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.startswith("//"):
                break
            if line.startswith("// identity-targets:"):
                return tuple(line.split(":", 1)[1].split())
    return default
