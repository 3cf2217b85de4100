"""The compiler core from the command line, for any build system:

    mlirgpu compile IN.mlir -o OUT.o [options]        compile (see README for the options)
    mlirgpu list-outputs IN.mlir -o OUT.o [options]   the files that compile would write, one per line
    mlirgpu artifacts DUMPDIR... -o OUTDIR            CI manifest, reports and archive
"""
import argparse
import os
import sys
import time

from . import workers
from .errors import CompileError
from .fsutil import remove_quietly
from .options import FORMATS, CompileOptions


def _compile_options(command):
    command.add_argument("input")
    command.add_argument("-o", "--output", required=True)
    command.add_argument("--format", default="fatbin", help=" | ".join(FORMATS))
    command.add_argument("--section", default="", help="ELF section of the embedded binaries (default .rodata)")
    command.add_argument("--layout", default="plain",
                         help="plain | vendor (.nv_fatbin/.hip_fatbin sections that cuobjdump and HIP tools read)")
    command.add_argument("--toolkit", default="", help="CUDA or ROCm root")
    command.add_argument("-l", dest="link_libs", action="append", default=[], metavar="LIB.bc")
    command.add_argument("--opts", default="", help="extra options for ptxas")
    command.add_argument("--dump-intermediates", dest="dump_dir", default="", metavar="DIR")
    command.add_argument("--dump-prefix", default="", help="prefix of every dump file name (for flat folders)")
    command.add_argument("--target", default="", help="nvvm | rocdl: for gpu.modules that carry none (lowered first)")
    command.add_argument("--chip", default="", help="chip, or chips separated by commas")
    command.add_argument("--features", default="")
    command.add_argument("-O", dest="opt_level", type=int, default=None, help="0-3")
    command.add_argument("--host-code", default="compile",
                         help="compile | ignore: keep MLIR's launch glue for host code, or embed only the binaries")
    command.add_argument("--header", default="", metavar="FILE.h", help="write a C header describing the object")
    command.add_argument("--symbol-prefix", default="", help="prefix of every C symbol of the object")
    command.add_argument("--depfile", default="", metavar="FILE.d",
                         help="write a Make-style depfile: source, linked libraries, device libraries, tools")


def _parser():
    parser = argparse.ArgumentParser(prog="mlirgpu", description="Stage-by-stage MLIR GPU compiler.")
    commands = parser.add_subparsers(dest="command", required=True)
    compile_ = commands.add_parser("compile", help="compile the gpu.modules of a .mlir file to a host object")
    _compile_options(compile_)
    compile_.add_argument("--timings", action="store_true", help="print per-stage times to stderr")
    compile_.add_argument("-v", "--verbose", action="store_true", help="show tool output and repro commands on errors")
    listing = commands.add_parser("list-outputs", help="print the files `compile` with the same options writes")
    _compile_options(listing)
    artifacts = commands.add_parser("artifacts", help="manifest, reports and archive from compiles' dump folders")
    artifacts.add_argument("dumps", nargs="+", help="dump folders (or their mlirgpu.json records)")
    artifacts.add_argument("-o", "--output-dir", required=True)
    artifacts.add_argument("--baseline", default="", help="an earlier gpu-manifest.json to compare with")
    artifacts.add_argument("--fail-on", default="", help="e.g. spills,registers+10%%: exit 1 on such a regression")
    artifacts.add_argument("--toolkit", default="", help="CUDA root for ptxas -v")
    return parser


def _options(args):
    return CompileOptions(
        format=args.format, section=args.section, toolkit=args.toolkit, link_libs=tuple(args.link_libs),
        opts=args.opts, dump_dir=args.dump_dir, target=args.target, chip=args.chip, features=args.features,
        opt_level=args.opt_level, layout=args.layout, header=args.header, symbol_prefix=args.symbol_prefix,
        host_code=args.host_code, dump_prefix=args.dump_prefix, depfile=args.depfile,
    )


def _list_outputs(args):
    from .scan import planned_outputs

    options = _options(args)
    outputs = [args.output] + ([options.header] if options.header else [])
    if options.dump_dir:
        outputs += [os.path.normpath(os.path.join(options.dump_dir, name))
                    for name in planned_outputs(args.input, options)]
    print("\n".join(outputs))
    return 0


def _artifacts(args):
    from . import artifacts

    records = [os.path.join(p, "mlirgpu.json") if os.path.isdir(p) else p for p in args.dumps]
    try:
        broken = artifacts.write_artifacts(records, args.output_dir, artifacts.toolchain_versions(args.toolkit),
                                           args.toolkit, args.baseline, args.fail_on)
    except CompileError as exc:
        print(f"mlirgpu: {exc}", file=sys.stderr)
        return 1
    for item in broken:
        print(f"mlirgpu: regression: {item}", file=sys.stderr)
    return 1 if broken else 0


def _compile(args):
    workers.prestart(1)  # its Python and LLVM start-up overlaps our imports and the translation below
    from .pipeline import compile_to_object, translate_many

    options = _options(args)
    started = time.perf_counter()
    translated = translate_many([args.input], at_least=1).get(args.input)  # failures: the worker reports them
    translating = time.perf_counter() - started
    try:
        result = compile_to_object(args.input, args.output, options, translated)
    except CompileError as exc:
        for stale in (args.output, options.header, options.depfile):
            if stale and os.path.realpath(stale) != os.path.realpath(args.input):
                remove_quietly(stale)  # an old file must not pass for the result of this compile
        print(f"mlirgpu: {exc}", file=sys.stderr)
        if args.verbose and exc.detail:
            print(exc.detail, file=sys.stderr)
        return 1
    for warning in result.warnings:
        print(f"mlirgpu: {warning}", file=sys.stderr)
    if args.timings:
        if translated:
            result.timings["translate"] = translating
        for stage, seconds in result.timings.items():
            print(f"{stage:12s} {seconds * 1000:8.1f} ms", file=sys.stderr)
    return 0


def main(argv=None):
    args = _parser().parse_args(argv)
    return {"compile": _compile, "list-outputs": _list_outputs, "artifacts": _artifacts}[args.command](args)
