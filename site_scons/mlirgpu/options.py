"""Compile options, named as upstream's `gpu-module-to-binary` options where they exist."""
from dataclasses import dataclass

FORMATS = ("isa", "bin", "fatbin")
LAYOUTS = ("plain", "vendor")
HOST_CODE = ("compile", "ignore")


@dataclass(frozen=True)
class CompileOptions:
    format: str = "fatbin"  # upstream's default
    section: str = ""  # ELF section of the embedded binaries; '' means .rodata
    toolkit: str = ""  # CUDA or ROCm root (else found from the environment)
    link_libs: tuple = ()  # -l bitcode libraries, linked before the target's own
    opts: str = ""  # extra options for the binary tool (ptxas)
    dump_dir: str = ""  # --dump-intermediates
    target: str = ""  # nvvm | rocdl, for modules that carry no target
    chip: str = ""
    features: str = ""
    opt_level: int = None
    layout: str = "plain"  # plain: --section or .rodata; vendor: .nv_fatbin / .hip_fatbin with wrappers
    header: str = ""  # write the object's C header here
    symbol_prefix: str = ""  # prepended to every C symbol (two objects with the same module names)
    host_code: str = "compile"  # compile: keep MLIR's launch glue for host code; ignore: embed the binaries only
    dump_prefix: str = ""  # prepended to every dump file name (flat output folders, e.g. Meson's)
    depfile: str = ""  # write a Make-style depfile (source, libraries, tools) here
