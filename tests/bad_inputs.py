"""The bad-input cases: each is a source (plus options) that must give one clear error line, exit code 1, and no
output that a build system would take as up to date. Used by test_bad_input.py through the CLI and SCons.

Each case: name -> (source text or bytes, CLI options, SCons overrides, expected text, expected line or None).
"""
import os

from conftest import CORPUS

KERNEL = """\
module attributes {{gpu.container_module}} {{
  gpu.module @{name} [{target}] {{
    llvm.func @k(%x: f32, %p: !llvm.ptr<1>) attributes {{gpu.kernel, {kind}.kernel}} {{
      {body}
      llvm.store %x, %p : f32, !llvm.ptr<1>
      llvm.return
    }}
  }}
}}
"""


def kernel(target='#nvvm.target<chip = "sm_80">', name="m", body="", kind="nvvm"):
    return KERNEL.format(target=target, name=name, body=body, kind=kind)


def corpus(name, chip, level=3):
    with open(os.path.join(CORPUS, name), encoding="utf-8") as handle:
        return handle.read().replace("@CHIP@", chip).replace("@O@", str(level))


EMPTY_DIR = "{tmp}/empty-toolkit"
NEUTRAL = corpus("vecadd.neutral.mlir", "")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sync_launch.mlir"), encoding="utf-8") as f:
    SYNC_HOST = f.read()  # synchronous gpu.alloc/memcpy: MLIR's gpu-to-llvm cannot lower them
TWO_MODULES = """\
module attributes {{gpu.container_module}} {{
  gpu.module @{a} [#nvvm.target<chip = "sm_80">] {{
    llvm.func @k() attributes {{gpu.kernel, nvvm.kernel}} {{ llvm.return }}
  }}
  gpu.module @{b} [#nvvm.target<chip = "sm_80">] {{
    llvm.func @k() attributes {{gpu.kernel, nvvm.kernel}} {{ llvm.return }}
  }}
}}
"""

CASES = {
    "syntax_error": (kernel(body="%y = llvm.fadd %x, : f32"), [], {}, "expected", 4),
    "unknown_dialect": (kernel(body='"frob.nicate"() : () -> ()'), [], {}, "unregistered dialect", 4),
    "unknown_op": (kernel(body="llvm.frobnicate %x : f32"), [], {}, "llvm.frobnicate", 4),
    "bad_target_parameter": (kernel('#nvvm.target<chip = 5>'), [], {}, "expected string", 2),
    "bad_O_level": (kernel('#nvvm.target<chip = "sm_80", O = 7>'), [], {}, "optimization level", 2),
    "unknown_nvvm_chip": (kernel('#nvvm.target<chip = "sm_999">'), [], {}, "unknown nvvm chip 'sm_999'", 2),
    "unknown_rocdl_chip": (kernel('#rocdl.target<chip = "gfx9999">', kind="rocdl"), [], {}, "unknown rocdl chip", 2),
    "chip_older_than_ptxas": (kernel('#nvvm.target<chip = "sm_70">'), ["--format", "bin"], {"GPU_FORMAT": "bin"},
                              "sm_75 or newer", 2),
    "ptx_version_too_low": (kernel('#nvvm.target<chip = "sm_90", features = "+ptx60">'), [], {},
                            "LLVM crashed", 2),
    "no_gpu_module": ("module {\n  func.func @f() {\n    return\n  }\n}\n", [], {}, "no gpu.module found", None),
    "empty_file": ("", [], {}, "no gpu.module found", None),
    "binary_file": (b"\x00\x01\x02ELF\x00\x00garbage", [], {}, "error", None),
    "non_utf8_file": (b"module {\n  \xff\xfe\n}\n", [], {}, "not a UTF-8 text file", 2),
    "corrupt_library": (kernel(), ["-l", "corrupt.bc"], {"GPU_LINKLIBS": ["corrupt.bc"]},
                        "cannot read bitcode library", 2),
    "colliding_names": (TWO_MODULES.format(a='"a.b"', b="a_b"), [], {}, "map to the same", 5),
    "missing_cuda_toolkit": (kernel(), ["--format", "bin", "--toolkit", EMPTY_DIR],
                             {"GPU_FORMAT": "bin", "GPU_TOOLKIT": EMPTY_DIR}, "ptxas not found", 2),
    "libdevice_without_toolkit": (corpus("math_libdevice.nvvm.mlir", "sm_80"), ["--format", "isa", "--toolkit", EMPTY_DIR],
                                  {"GPU_FORMAT": "isa", "GPU_TOOLKIT": EMPTY_DIR}, "from libdevice", None),
    "missing_rocm_libraries": (corpus("math_ocml.rocdl.mlir", "gfx942"), ["--toolkit", EMPTY_DIR],
                               {"GPU_TOOLKIT": EMPTY_DIR}, "ocml.bc not found", None),
    "neutral_without_target": (NEUTRAL, [], {"GPU_TARGET": ""}, "has no target", 3),
    "neutral_bad_chip": (NEUTRAL, ["--target", "nvvm", "--chip", "sm_999"], {"GPU_TARGET": "nvvm", "GPU_CHIP": "sm_999"},
                         "unknown nvvm chip", None),
    "undefined_function": (kernel(body="llvm.call @not_defined() : () -> ()").replace(
        "    llvm.func @k(", "    llvm.func @not_defined()\n    llvm.func @k("), ["--format", "bin"],
        {"GPU_FORMAT": "bin"}, "not_defined", 2),
    "duplicate_module": (TWO_MODULES.format(a="twice", b="twice"), [], {}, "redefinition of symbol", 5),
    "missing_resource": (kernel(body="").replace(
        "    llvm.func @k(", '    llvm.mlir.global internal constant @t(dense_resource<blob1> : tensor<4xf32>) '
        '{addr_space = 4 : i32} : !llvm.array<4 x f32>\n    llvm.func @k('), [], {}, "resource does not exist", 3),
    "host_code_not_lowerable": (SYNC_HOST, ["--target", "nvvm", "--chip", "sm_80"],
                                {"GPU_TARGET": "nvvm", "GPU_CHIP": "sm_80"}, "--host-code ignore", None),
    "vendor_layout_needs_fatbin": (kernel(), ["--layout", "vendor", "--format", "bin"],
                                   {"GPU_LAYOUT": "vendor", "GPU_FORMAT": "bin"}, "vendor layout", None),
    "bad_opt_level_option": (NEUTRAL, ["--target", "nvvm", "--chip", "sm_80", "-O", "9"],
                             {"GPU_TARGET": "nvvm", "GPU_OPT_LEVEL": "9"}, "optimization level 9", None),
    "unknown_format": (kernel(), ["--format", "cubin"], {"GPU_FORMAT": "cubin"}, "unknown format 'cubin'", None),
    "unknown_layout": (kernel(), ["--layout", "nvidia"], {"GPU_LAYOUT": "nvidia"}, "unknown layout 'nvidia'", None),
    "unknown_target": (NEUTRAL, ["--target", "spirv"], {"GPU_TARGET": "spirv"}, "unknown target 'spirv'", None),
    "bad_chip_in_list": (NEUTRAL, ["--target", "nvvm", "--chip", "sm_80,sm_9x"],
                         {"GPU_TARGET": "nvvm", "GPU_CHIP": ["sm_80", "sm_9x"]}, "unknown nvvm chip 'sm_9x'", None),
    "already_serialized": ('module attributes {gpu.container_module} {\n  gpu.binary @k [#gpu.object<#nvvm.target, '
                           '"data">]\n}\n', [], {}, "no gpu.module found", None),
    "ptxas_option_rejected": (kernel(), ["--format", "bin", "--opts", "--no-such-option; touch pwned"],
                              {"GPU_FORMAT": "bin", "GPU_OPTS": "--no-such-option; touch pwned"}, "ptxas", 2),
}

# Inputs SCons reports itself before our tool runs (a missing source, dependency or output folder).
CLI_ONLY = {
    "missing_library": (kernel(), ["-l", "missing.bc"], {"GPU_LINKLIBS": ["missing.bc"]}, "missing.bc", 2),
    "nonexistent_input": (None, [], {}, "cannot read", None),
    "directory_input": ("<dir>", [], {}, "cannot read", None),
    "unwritable_dump_dir": (kernel(), ["--dump-intermediates", "{tmp}/blocker/D"], {}, "cannot write the dump folder", None),
    "unwritable_output_dir": (kernel(), ["-o", "{tmp}/blocker/out.o"], {}, "is not a folder", "no-file"),
}
