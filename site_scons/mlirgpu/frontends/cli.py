"""The compiler core from the command line, for any build system:

    mlirgpu compile IN.mlir -o OUT.o [options]        compile (docs/reference.md lists the options)
    mlirgpu compile --emit library IN.mlir -o LIB     device-function libraries LIB.<target>[.<chip>].bc
    mlirgpu list-outputs IN.mlir -o OUT.o [options]   the files that compile would write, one per line
    mlirgpu artifacts DUMPDIR... -o OUTDIR            CI manifest, reports and archive
    mlirgpu cache stats|clear                         the stage cache: its size and counts, or empty it
    mlirgpu server start|stop|status                  the compile server (see mlirgpu.server.service)

The options come from one table (mlirgpu.compile_options) shared with the SCons tool and the Python API. Every failure
is one line on stderr, `mlirgpu: FILE[:LINE]: error: WHAT (fix: HOW)`, and exit code 1 (2 for a command line
that cannot be read); a bug of ours is one line naming where it happened, its traceback shown with -v or
MLIRGPU_DEBUG=1. Ctrl-C ends a command with `mlirgpu: interrupted` and 130, a closed stdout or stderr (`| head`)
silently with 141, as the shell reports a filter that signal ended.
"""
import argparse
import functools
import os
import signal
import sys

from .. import errors
from . import longargv
from ..execution import compiles
from ..errors import CompileError, InternalError
from ..util import environment
from ..util.fsutil import remove_quietly
from ..util.streams import closed_streams, silence
from ..compile_options import OPTIONS, CompileOptions
from ..version import PACKAGE, __version__


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as our one line (exit code 2) instead of a usage block."""

    def error(self, message):
        sys.stderr.write(f"mlirgpu: error: {message} (fix: see `{self.prog} --help`)\n")
        sys.exit(2)


def _compile_options(command):
    command.add_argument("input", help="the .mlir source")
    command.add_argument("-o", "--output", required=True, metavar="OUT.o",
                         help="the host object to write (--emit library: the prefix of the bitcode files)")
    for option in OPTIONS:
        choices = option.choices
        if option.name == "target":
            from ..targets import TARGETS

            choices = tuple(TARGETS)
        kwargs = {"dest": option.name, "help": option.help, "metavar": option.metavar}
        if choices:
            kwargs.update(choices=choices, metavar=None)
            kwargs["help"] += f" ({', '.join(choices)})"
        if option.name == "link_libs":
            command.add_argument(option.flag, action="append", default=[], **kwargs)
        else:
            default = getattr(CompileOptions(), option.name)
            command.add_argument(option.flag, default="" if default is None else default, **kwargs)
    command.add_argument("-v", "--verbose", action="store_true",
                         help="on errors, show the tools' output, repro commands and tracebacks")
    command.add_argument("--caller", choices=("cli", "cmake", "meson"), default="cli",
                         help="the build system running this command: fixes name options as it spells them "
                              "(-DGPU_TARGET=... for cmake, -Dgpu_target=... for meson)")


class _PrintCMakeDir(argparse.Action):
    """`--cmake-dir`: where find_package(MLIRGPU CONFIG) finds this installation's CMake module."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(os.path.join(PACKAGE, "cmake"))
        parser.exit(0)


@functools.cache
def _parser():
    """The command line's parser, built once (the compile server builds it before forking its commands)."""
    parser = _Parser(prog="mlirgpu", description="Stage-by-stage MLIR GPU compiler (byte-identical to "
                                                 "mlir-opt --gpu-module-to-binary of MLIR 22).")
    parser.add_argument("--version", action="version", version=f"mlirgpu {__version__}")
    parser.add_argument("--cmake-dir", action=_PrintCMakeDir, nargs=0,
                        help="print the folder of MLIRGPUConfig.cmake (for CMAKE_PREFIX_PATH) and exit")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    compile_ = commands.add_parser("compile", help="compile the gpu.modules of a .mlir file to a host object")
    _compile_options(compile_)
    compile_.add_argument("--timings", action="store_true", help="print per-stage times to stderr")
    compile_.add_argument("--trace", metavar="FILE.json", default="",
                          help="write a Chrome trace (Perfetto, chrome://tracing) of the compile's stages")
    compile_.add_argument("--stale-dumps", metavar="DIR", default="",
                          help="a dump folder an earlier compile of this source wrote and this one does not: "
                               "what its record lists, the record and the emptied folder are removed")
    listing = commands.add_parser("list-outputs", help="print the files `compile` with the same options writes")
    _compile_options(listing)
    artifacts = commands.add_parser("artifacts", help="manifest, reports and archive from compiles' dump folders")
    artifacts.add_argument("dumps", nargs="+", help="dump folders (or their mlirgpu.json records)")
    artifacts.add_argument("-o", "--output-dir", required=True, help="where to write them")
    artifacts.add_argument("--baseline", default="", help="an earlier gpu-manifest.json to compare with")
    artifacts.add_argument("--fail-on", default="", help="e.g. spills,registers+10%%: exit 1 on such a regression")
    artifacts.add_argument("--toolkit", default="", help="CUDA root for ptxas -v")
    artifacts.add_argument("-v", "--verbose", action="store_true", help="show tracebacks of internal errors")
    cache = commands.add_parser("cache", help="the stage cache: `stats` (size, entries, hits, misses) or `clear`")
    cache.add_argument("action", choices=("stats", "clear"))
    cache.add_argument("-v", "--verbose", action="store_true", help="show tracebacks of internal errors")
    worker = commands.add_parser("worker", help="a Dask worker for distributed compiles (MLIRGPU_EXECUTOR) "
                                 "with this machine's toolchain")
    worker.add_argument("scheduler", help="the scheduler: dask://HOST:PORT (as MLIRGPU_EXECUTOR names it)")
    worker.add_argument("--nthreads", type=int, default=os.cpu_count() or 1,
                        help="compiles at once (default: the CPU count)")
    worker.add_argument("--host", default="", help="the address the worker listens on (default: Dask's choice)")
    worker.add_argument("-v", "--verbose", action="store_true", help="show tracebacks of internal errors")
    server = commands.add_parser("server", help="the compile server that keeps compiles warm: start, stop, status")
    server.add_argument("action", choices=("start", "stop", "status"))
    server.add_argument("-v", "--verbose", action="store_true", help="show tracebacks of internal errors")
    return parser


def _options(args):
    values = {option.name: getattr(args, option.name) for option in OPTIONS}
    values["link_libs"] = tuple(values["link_libs"])
    values["opt_level"] = values["opt_level"] or None
    return CompileOptions(**values)


def _list_outputs(args):
    from ..pipeline.planning import check_options
    from ..pipeline.scan import planned_outputs

    options = check_options(args.input, _options(args))
    _check_target_given(args.input, options)
    # A library's bitcode files (`-o` being their prefix), else the object and its header.
    outputs = _library_files(args, options) or [args.output] + ([options.header] if options.header else [])
    if options.dump_dir:
        folder = os.path.normpath(options.dump_dir)
        folder = "" if folder == "." else folder + os.sep
        outputs += [folder + name for name in planned_outputs(args.input, options)]  # plain names
    _print_paths(outputs)
    return 0


def _check_target_given(source, options):
    """A source with gpu.modules that need the build's target fails when none is set, as its compile would: so a
    build system's configure step says it (CMake's, Meson's). Where the scan steps aside the compile says it."""
    from ..pipeline.planning import missing_target
    from ..pipeline.scan import Unreadable, scan_file
    from ..pipeline.sourcefile import read_text

    if options.target:
        return
    try:
        untargeted = [module for module in scan_file(source).modules if not module.targets]
    except (Unreadable, UnicodeDecodeError, OSError):
        return
    if untargeted:
        real = next((module for module in untargeted if module.start >= 0), None)
        line = real and read_text(source)[0].count("\n", 0, real.start) + 1
        raise missing_target(source, real and real.name, line)


def _print_paths(paths):
    """File names one per line, as the bytes the system names them with (a name that is not UTF-8 is written
    as it is, whatever the locale's encoding of stdout)."""
    text = "".join(path + "\n" for path in paths)
    binary = getattr(sys.stdout, "buffer", None)
    if binary is None:  # a text stream only (a caller's capture)
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    binary.write(os.fsencode(text))


def _artifacts(args):
    from ..reports import artifacts

    records = artifacts.find_records(args.dumps)  # a record, a dump folder or a whole build folder
    broken = artifacts.write_artifacts(records, args.output_dir, artifacts.toolchain_versions(args.toolkit),
                                       args.toolkit, args.baseline, args.fail_on)
    for item in broken:
        print(f"mlirgpu: regression: {item}", file=sys.stderr)
    return 1 if broken else 0


def _server(args):
    from .server_command import server_command

    return server_command(args.action)


def _worker(args):
    """Become `dask worker` with mlirgpu.execution.dask_worker preloaded (it checks the toolchain and prints the
    fingerprint clients match), after checking here that the MLIR tools and llvmlite are usable."""
    from ..execution import dask as distributed
    from ..llvm import toolchain

    address = args.scheduler.strip()
    address = "tcp://" + address[len(distributed.SCHEME):] if address.startswith(distributed.SCHEME) else address
    toolchain.llvm_tool("mlir-translate")
    package_parent = os.path.dirname(PACKAGE)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))
    os.environ[distributed.VARIABLE] = ""  # a worker's compiles run there, never sent on
    argv = [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", str(max(1, args.nthreads)),
            "--nworkers", "1", "--preload", "mlirgpu.execution.dask_worker", "--no-dashboard"]
    if args.host:
        argv += ["--host", args.host]
    sys.stdout.flush()
    os.execv(sys.executable, argv)


def _cache(args):
    from ..cache import remote as remotecache, stagecache

    if not stagecache.enabled():
        print("mlirgpu: the stage cache is off (MLIRGPU_CACHE)", file=sys.stderr)
    cache = stagecache.StageCache(stagecache.open_cache_root(), stagecache.size_limit())
    if args.action == "clear":
        cache.clear()
        print(f"cleared {cache.root}")
        return 0
    stats = cache.stats()
    print(f"folder     {stats['folder']}\n"
          f"entries    {stats['entries']}\n"
          f"size       {_size(stats['bytes'])} of {_size(stats['limit'])}\n"
          f"hits       {stats['hits']}\n"
          f"misses     {stats['misses']}{_hit_rate(stats['hits'], stats['misses'])}\n"
          f"stores     {stats['stores']}\n"
          f"evictions  {stats['evictions']}")
    remote = environment.value(remotecache.VARIABLE)
    if remote:
        print(f"remote     {remotecache.shown(remote)}\n"
              f"  hits     {stats['remote_hits']}\n"
              f"  misses   {stats['remote_misses']}{_hit_rate(stats['remote_hits'], stats['remote_misses'])}\n"
              f"  stores   {stats['remote_stores']}\n"
              f"  rejected {stats['remote_rejected']} (values sealed for another key or secret, or damaged: misses)")
    return 0


def _hit_rate(hits, misses):
    """' (N% hits)' of the lookups, or nothing before the first."""
    return f" ({100 * hits / (hits + misses):.0f}% hits)" if hits + misses else ""


def _size(count):
    """`count` bytes in the largest unit that keeps it at least 1 (B, KiB, MiB, GiB, TiB)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024:
            return f"{count} B" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TiB"


def _compile(args):
    from ..pipeline.planning import check_options

    options = check_options(args.input, _options(args))
    stats = args.timings or environment.value("MLIRGPU_STATS")  # read first: a bad value compiles nothing
    if args.stale_dumps and not (options.dump_dir and os.path.realpath(options.dump_dir) ==
                                 os.path.realpath(args.stale_dumps)):  # its own: the compile keeps it current
        from ..pipeline.dumps import remove_stale_dumps

        remove_stale_dumps(args.stale_dumps, source=args.input, prefix=options.dump_prefix)
    result = compiles.compile_command(args.input, args.output, options, _tell)
    _report(args, result, stats)
    return 0


def _tell(text):
    print(f"mlirgpu: {text}", file=sys.stderr)


def _report(args, result, stats):
    """A compile's warnings, then (with --timings) its stage times and (`stats`: also with MLIRGPU_STATS=1) how
    many stages the stage cache served; with $MLIRGPU_RESULT_FILE (a Dask worker's compile) all of it as JSON
    there."""
    warnings, cache_warnings = result.warnings, result.cache_warnings
    for warning in list(warnings) + list(cache_warnings):
        _tell(warning)
    if args.timings:
        for stage, seconds in result.timings.items():
            print(f"{stage:12s} {seconds * 1000:8.1f} ms", file=sys.stderr)
    if stats:
        from ..cache.stagecache import summary

        print(f"mlirgpu: {summary([result.stages])}", file=sys.stderr)
    if args.trace:
        from ..util.trace import write_trace

        write_trace(args.trace, result.trace)
    path = environment.value("MLIRGPU_RESULT_FILE")
    if path:
        from ..cache.store import write_json

        write_json(path, {"warnings": [str(w) for w in warnings], "cache_warnings": [str(w) for w in cache_warnings],
                          "dumps": list(result.dumps), "timings": result.timings, "stages": result.stages,
                          "trace": list(result.trace)})


def _remove_stale_outputs(output, header, depfile, source):
    """An old output must not pass for the result of a compile that failed."""
    for stale in (output, header, depfile):
        if stale and os.path.realpath(stale) != os.path.realpath(source or "") and not os.path.isdir(stale):
            remove_quietly(stale)


def _library_files(args, options=None):
    """The bitcode files a library compile (`--emit library`) writes, else none; `options`: the command's checked
    ones (else, on the way out of a command that failed, its own, which a failed check gives no files)."""
    from ..pipeline.scan import planned_libraries
    from ..pipeline.stages import LIBRARY

    if args.emit != LIBRARY:
        return []
    return [path for path, _target, _chip in planned_libraries(args.input, args.output, options or _options(args))]


def _pasted_values(argv):
    """`argv` with a RUN line's pass flags after `--lowering` joined to it (`--lowering -gpu-lower-to-nvvm-pipeline=...`
    is how users paste them; argparse would take the flag for one of ours)."""
    joined = list(argv)
    for index, word in enumerate(joined[:-1]):
        if word == "--lowering" and joined[index + 1].startswith("-"):
            joined[index : index + 2] = ["--lowering=" + joined[index + 1]]
            break
    return joined


PIPE_CLOSED = 128 + signal.SIGPIPE  # 141: what a shell reads from a filter that SIGPIPE ended (`| head`)
INTERRUPTED = 128 + signal.SIGINT  # 130: what a shell reads from a command Ctrl-C ended


def main(argv=None):
    """The command: its exit code. A stdout or stderr whose reader went away (`list-outputs | head`) ends it
    quietly with PIPE_CLOSED; Ctrl-C with one line and INTERRUPTED. Either way a compile's outputs are removed
    (writes are atomic, so there is no partial one), so no target looks current the next time."""
    started = []  # the parsed command, once there is one
    try:
        return _main(argv, started)
    except KeyboardInterrupt:
        _quietly(_discard_outputs, started)
        _quietly(sys.stderr.write, "mlirgpu: interrupted\n")
        _quietly(sys.stderr.flush)
        return INTERRUPTED
    except BrokenPipeError:  # writing to stdout or stderr (the error boundary reports one from elsewhere)
        _quietly(_discard_outputs, started)
        silence(closed_streams())
        return PIPE_CLOSED


def _main(argv, started):
    argv = _pasted_values(sys.argv[1:] if argv is None else argv)
    try:
        args = _parse(argv)
    except SystemExit as exit_:
        if exit_.code == 2 and argv[:1] == ["compile"]:  # a command line we cannot read: remove what it names
            outputs = argparse.ArgumentParser(add_help=False)
            outputs.add_argument("input", nargs="?")
            for flag in ("-o", "--output", "--header", "--depfile"):
                outputs.add_argument(flag, dest=flag.lstrip("-"))
            known, _rest = outputs.parse_known_args(argv[1:])
            _remove_stale_outputs(known.o or known.output, known.header, known.depfile, known.input)
        raise
    started.append(args)
    debug = args.verbose
    errors.set_style(getattr(args, "caller", "cli"))  # every command: a server's runner serves the next one too
    try:
        debug = debug or environment.value("MLIRGPU_DEBUG")
        code = {"compile": _compile, "list-outputs": _list_outputs, "artifacts": _artifacts,
                "cache": _cache, "server": _server,
                "worker": _worker}[args.command](args)
        for stream in (sys.stdout, sys.stderr):  # a closed reader is found here, not at the interpreter's exit
            if stream is not None:  # None where it was closed (`>&-`)
                stream.flush()
        return code
    except CompileError as exc:
        error = exc
    except Exception as exc:  # noqa: BLE001 - the error boundary: a bug of ours is still one line
        if isinstance(exc, BrokenPipeError) and closed_streams():
            raise
        error = InternalError.from_exception(f"mlirgpu {args.command}", exc)
    _discard_outputs(started)
    result_file = args.command == "compile" and environment.value("MLIRGPU_RESULT_FILE")
    if result_file:  # a Dask worker's compile: the client shows it in its own terms
        from ..cache.store import write_json

        write_json(result_file, {"error": {
            "message": error.message, "file": error.file, "line": error.line, "fix": error.fix,
            "detail": error.detail}})
    print(f"mlirgpu: {error}", file=sys.stderr)
    if debug and error.detail:
        print(error.detail, file=sys.stderr)
    sys.stderr.flush()
    return 1


def _discard_outputs(started):
    """Remove what a compile that did not finish (an error, Ctrl-C, a closed stdout or stderr) would leave."""
    if not started or started[0].command != "compile":
        return
    args = started[0]
    _remove_stale_outputs(args.output, args.header, args.depfile, args.input)
    for path in _library_files(args):
        _remove_stale_outputs(path, "", "", args.input)


def _parse(argv):
    """argparse's reading of `argv`, a long command line of `compile` or `list-outputs` read in one pass."""
    collapsed, appended = (argv, None)
    if argv[:1] in (["compile"], ["list-outputs"]):
        collapsed, appended = longargv.collapsed(argv, _option_forms(argv[0]))
    args = _parser().parse_args(collapsed)
    if appended is not None and any(getattr(args, dest) for dest in appended):
        return _parser().parse_args(argv)  # argparse found others too (`-vlLIB`): its own reading
    for dest, values in (appended or {}).items():
        setattr(args, dest, values)
    return args


@functools.cache
def _option_forms(command):
    """{option string: its argparse action} of a subcommand's options, for argv.collapsed."""
    commands = next(action for action in _parser()._actions  # noqa: SLF001 - argparse keeps its actions there
                    if isinstance(action, argparse._SubParsersAction))  # noqa: SLF001
    return dict(commands.choices[command]._option_string_actions)  # noqa: SLF001


def _quietly(function, *args):
    """`function(*args)`, ignoring a closed stream or a second Ctrl-C: the command is ending anyway."""
    try:
        function(*args)
    except (OSError, KeyboardInterrupt):
        pass
