"""Options are checked once, at the front end's boundary (pipeline.planning.check_options makes a CheckedOptions),
and reach the pipeline through few modules; the pipeline refuses options nobody checked."""
import os
import subprocess
import sys
import textwrap

import pytest

from corpusutil import ROOT

SOURCE = """\
module attributes {gpu.container_module} {
  gpu.module @kernel_module [#rocdl.target<chip = "gfx942">] {
    llvm.func @kernel(%arg0: f32, %arg1: !llvm.ptr<1>) attributes {gpu.kernel, rocdl.kernel} {
      llvm.store %arg0, %arg1 : f32, !llvm.ptr<1>
      llvm.return
    }
  }
}
"""

# A served `mlirgpu compile` (a compile server's runner: its worker forked from it), with a profiler that
# writes a line for every call of our code that is handed the command's options (as an argument, or in a
# tuple argument), naming the module called and the module that called it (which held the options: the front
# end that made them too), in both processes (the worker inherits the profiler across its fork), and one for
# every call of the check with options that are not checked yet.
_TRACED = """\
import os, sys, threading
LOG = sys.argv[1]

def _options_in(frame):
    code = frame.f_code
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4)]
    for name in names:
        value = frame.f_locals.get(name)
        for item in (value if isinstance(value, tuple) else (value,)):
            if type(item).__name__ in ("CompileOptions", "CheckedOptions"):
                return item
    return None

def _profile(frame, event, arg):
    if event != "call" or not frame.f_globals.get("__name__", "").startswith("mlirgpu"):
        return
    options = _options_in(frame)
    if options is None:
        return
    module, function = frame.f_globals["__name__"], frame.f_code.co_name
    caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
    line = f"{os.getpid()} {module} {function} {caller if caller.startswith('mlirgpu') else '-'}\\n"
    if module == "mlirgpu.pipeline.planning" and function == "check_options" and \\
            type(options).__name__ != "CheckedOptions":
        line += f"{os.getpid()} CHECK {function} -\\n"
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, line.encode())
    os.close(fd)

from mlirgpu.execution import compiles
from mlirgpu.frontends.cli import main
sys.setprofile(_profile)
threading.setprofile(_profile)
compiles.serve_commands(os.path.dirname(LOG))
compiles.command_starts()
code = main(sys.argv[2:])
compiles.command_ended()
compiles.shutdown()
sys.exit(code)
"""

# Modules of the pipeline and below it: what the options are meant to reach.
_CORE = ("mlirgpu.pipeline.", "mlirgpu.targets", "mlirgpu.llvm", "mlirgpu.cache", "mlirgpu.util")


def test_a_cli_compile_checks_its_options_once_and_hands_them_to_the_pipeline_through_few_modules(tmp_path):
    """`mlirgpu compile` as the compile server runs it: the options are checked once (in the front end), and
    on their way from the command line to the pipeline's driver (in the worker) they pass through at most 6
    modules."""
    source = tmp_path / "k.mlir"
    source.write_text(SOURCE)
    script = tmp_path / "traced.py"
    script.write_text(_TRACED)
    log = tmp_path / "walk.log"
    run = subprocess.run([sys.executable, str(script), str(log), "compile", str(source), "-o", str(tmp_path / "k.o"),
                          "--format", "isa", "--dump-intermediates", str(tmp_path / "k.dumps")],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "site_scons"), MLIRGPU_CACHE="off"))
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "k.o").is_file()
    lines = [line.split() for line in log.read_text().splitlines()]  # in time order: both processes append
    checks = [line for line in lines if line[1] == "CHECK"]
    assert len({line[0] for line in lines}) == 2, lines  # the command's process and its worker's
    reached = next(index for index, line in enumerate(lines)
                   if line[1:3] == ["mlirgpu.pipeline.driver", "compile_to_object"])
    assert lines[reached][0] != lines[0][0], lines  # the pipeline's driver, in the worker
    assert len(checks) == 1, lines
    walk = list(dict.fromkeys(module for _pid, called, _function, caller in lines[:reached + 1] if called != "CHECK"
                              for module in (caller, called) if module != "-"))
    outside = [module for module in walk if not module.startswith(_CORE)]
    assert "mlirgpu.frontends.cli" in outside and len(outside) <= 6, outside


def test_the_pipeline_refuses_options_nobody_checked(tmp_path):
    """A caller that hands the pipeline's entry points plain CompileOptions has skipped the front end's check:
    a programming error saying so, before anything runs (no output is written)."""
    from mlirgpu.compile_options import CompileOptions
    from mlirgpu.pipeline import driver
    from mlirgpu.pipeline.library import compile_library
    from mlirgpu.pipeline.translation import OWN

    source = tmp_path / "k.mlir"
    source.write_text(SOURCE)
    output = tmp_path / "k.o"
    for call in (lambda: driver.compile_source(str(source), CompileOptions()),
                 lambda: driver.compile_to_object(str(source), str(output), CompileOptions()),
                 lambda: compile_library(str(source), str(output), CompileOptions(emit="library"), OWN,
                                         lambda what, where: None)):
        with pytest.raises(TypeError, match="check_options"):
            call()
    assert not output.exists()


def test_checked_options_are_checked_once_and_stay_checked(tmp_path):
    """check_options makes a CheckedOptions; handed one, it gives it back as it is (nothing is checked twice)."""
    from mlirgpu.compile_options import CheckedOptions, CompileOptions
    from mlirgpu.pipeline.planning import check_options

    source = str(tmp_path / "k.mlir")
    checked = check_options(source, CompileOptions(target="rocdl", opt_level="2"))
    assert isinstance(checked, CheckedOptions) and checked.opt_level == 2 and checked.chip
    assert check_options(source, checked) is checked
    with pytest.raises(Exception, match="chip"):
        check_options(source, CompileOptions(chip="sm 90"))
