"""Compile options, named as upstream's `gpu-module-to-binary` options where they exist."""
from dataclasses import dataclass

FORMATS = ("isa", "bin", "fatbin")


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
