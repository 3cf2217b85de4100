"""Hostile and malformed input, one table for the CLI and SCons (tests/robustness/test_hostile_input.py runs it;
the README's bad-input table lists the families), and what a runner of the table needs: a case made into files
(`materialise`, `fill`) and what a run left in its folder (`left_files`), for every tier folder that runs it.

A case: family, source (text, bytes, or a special kind made by the runner), CLI arguments, SCons overrides (None:
CLI only, where SCons reports the problem itself), expected CLI exit code, text the one error line must hold,
and the line it must name (None: the file without a line). `{tmp}` is the case's folder; `{src}` the source.
"""
import json
import os
from dataclasses import dataclass, field

from corpusutil import CORPUS


@dataclass(frozen=True)
class Case:
    family: str
    source: object
    args: tuple = ()
    scons: dict = None
    code: int = 1
    expected: str = "error"
    line: int = None
    env: dict = field(default_factory=dict)


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
WORKGROUP = """\
module attributes {gpu.container_module} {
  gpu.module @wg {
    gpu.func @k(%a: memref<?xf32>) workgroup(%tile: memref<64xf32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %a[%t] : memref<?xf32>
      memref.store %v, %tile[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.return
    }
  }
}
"""
SUBGROUP = """\
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%p: memref<32xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %p[%i] : memref<32xf32>
      %r = gpu.subgroup_reduce add %v : (f32) -> f32
      memref.store %r, %p[%i] : memref<32xf32>
      gpu.return
    }
  }
}
"""
NVVM = {"GPU_TARGET": "nvvm", "GPU_CHIP": "sm_80"}
EMPTY = "{tmp}/empty-toolkit"

CASES = {
    # Options: checked before anything runs, one definition for CLI, SCons and API.
    "features_change_pipeline": Case("options", NEUTRAL, ("--target", "nvvm", "--chip", "sm_80", "--features",
                                                          "+ptx80 O=0"), {**NVVM, "GPU_FEATURES": "+ptx80 O=0"},
                                     expected="invalid features '+ptx80 O=0'"),
    "features_add_target": Case("options", NEUTRAL, ("--target", "nvvm", "--chip", "sm_80", "--features",
                                                     "+ptx80}, nvvm-attach-target{chip=sm_90"),
                                {**NVVM, "GPU_FEATURES": "+ptx80}, nvvm-attach-target{chip=sm_90"},
                                expected="invalid features"),
    "features_without_sign": Case("options", NEUTRAL, ("--target", "nvvm", "--chip", "sm_80", "--features", "zzz"),
                                  {**NVVM, "GPU_FEATURES": "zzz"}, expected="+name or -name"),
    "chip_with_space": Case("options", NEUTRAL, ("--target", "nvvm", "--chip", "sm_80 O=0"),
                            {"GPU_TARGET": "nvvm", "GPU_CHIP": "sm_80 O=0"}, expected="invalid chip"),
    "chip_with_brace": Case("options", NEUTRAL, ("--target", "nvvm", "--chip", "sm_80}"),
                            {"GPU_TARGET": "nvvm", "GPU_CHIP": "sm_80}"}, expected="invalid chip 'sm_80}'"),
    "chip_twice": Case("options", NEUTRAL, ("--target", "nvvm", "--chip", "sm_80,sm_80"),
                       {"GPU_TARGET": "nvvm", "GPU_CHIP": "sm_80,sm_80"}, expected="listed twice"),
    "chip_empty_items": Case("options", NEUTRAL, ("--target", "nvvm", "--chip", ","), None, expected="invalid chip"),
    "chip_list_huge": Case("options", NEUTRAL, ("--target", "nvvm", "--chip", ",".join(f"sm_{i}" for i in range(1000))),
                           {"GPU_TARGET": "nvvm", "GPU_CHIP": [f"sm_{i}" for i in range(1000)]},
                           expected="at most 64 chips"),
    "chip_unknown": Case("options", NEUTRAL, ("--target", "nvvm", "--chip", "sm_999"),
                         {"GPU_TARGET": "nvvm", "GPU_CHIP": "sm_999"}, expected="unknown nvvm chip 'sm_999'"),
    "chip_unknown_in_list": Case("options", NEUTRAL, ("--target", "nvvm", "--chip", "sm_80,sm_9x"),
                                 {"GPU_TARGET": "nvvm", "GPU_CHIP": ["sm_80", "sm_9x"]},
                                 expected="unknown nvvm chip 'sm_9x'"),
    "opt_level_9": Case("options", NEUTRAL, ("--target", "nvvm", "-O", "9"), {**NVVM, "GPU_OPT_LEVEL": "9"},
                        code=2, expected="'9'"),
    "opt_level_other_digits": Case("options", NEUTRAL, ("--target", "nvvm", "-O", "\u0663"),
                                   {**NVVM, "GPU_OPT_LEVEL": "\u0663"}, code=2, expected="\u0663"),
    "opt_level_float": Case("options", NEUTRAL, ("--target", "nvvm", "-O", "1e3"), {**NVVM, "GPU_OPT_LEVEL": "1e3"},
                            code=2, expected="'1e3'"),
    "section_quote": Case("options", kernel(), ("--section", 'a"b'), {"GPU_SECTION": 'a"b'},
                          expected="invalid section"),
    "section_newline": Case("options", kernel(), ("--section", "a\nb"), {"GPU_SECTION": "a\nb"},
                            expected="no NUL or line breaks"),
    "section_backslash": Case("options", kernel(), ("--section", "a\\41"), {"GPU_SECTION": "a\\41"},
                              expected="invalid section"),
    "section_comment": Case("options", kernel(), ("--section", "*/ #error x"), {"GPU_SECTION": "*/ #error x"},
                            expected="invalid section"),
    "section_registry": Case("options", kernel(), ("--section", "mlirgpu_registry"), {"GPU_SECTION": "mlirgpu_registry"},
                             expected="registry"),
    "section_bss": Case("options", kernel(), ("--section", ".bss"), {"GPU_SECTION": ".bss"}, expected="holds no data"),
    "section_too_long": Case("options", kernel(), ("--section", "s" * 300), {"GPU_SECTION": "s" * 300},
                             expected="at most 200"),
    "symbol_prefix_dash": Case("options", kernel(), ("--symbol-prefix", "a-b"), {"GPU_SYMBOL_PREFIX": "a-b"},
                               expected="invalid symbol prefix 'a-b'"),
    "symbol_prefix_space": Case("options", kernel(), ("--symbol-prefix", "a b"), {"GPU_SYMBOL_PREFIX": "a b"},
                                expected="invalid symbol prefix"),
    "symbol_prefix_digit": Case("options", kernel(), ("--symbol-prefix", "9x"), {"GPU_SYMBOL_PREFIX": "9x"},
                                expected="not starting with a digit"),
    "symbol_prefix_comment": Case("options", kernel(), ("--symbol-prefix", "*/"), {"GPU_SYMBOL_PREFIX": "*/"},
                                  expected="invalid symbol prefix"),
    "dump_prefix_parent": Case("options", kernel(), ("--dump-intermediates", "{tmp}/D", "--dump-prefix", "../../x_"),
                               None, expected="no folders"),
    "dump_prefix_folder": Case("options", kernel(), ("--dump-intermediates", "{tmp}/D", "--dump-prefix", "sub/x"),
                               None, expected="invalid dump prefix"),
    "opts_unclosed_quote": Case("options", kernel(), ("--format", "bin", "--opts", "'abc"),
                                {"GPU_FORMAT": "bin", "GPU_OPTS": "'abc"}, expected="quote is not closed"),
    "opts_shell_text": Case("options", kernel(), ("--format", "bin", "--opts", "--no-such-option; touch pwned"),
                            {"GPU_FORMAT": "bin", "GPU_OPTS": "--no-such-option; touch pwned"}, expected="ptxas",
                            line=2),
    "lowering_line_break": Case("options", NEUTRAL, ("--target", "nvvm", "--lowering", "builtin.module(\ncse)"),
                                {**NVVM, "GPU_LOWERING": "builtin.module(\ncse)"}, expected="no NUL or line breaks"),
    "format_unknown": Case("options", kernel(), ("--format", "cubin"), {"GPU_FORMAT": "cubin"}, code=2,
                           expected="'cubin'"),
    "layout_unknown": Case("options", kernel(), ("--layout", "nvidia"), {"GPU_LAYOUT": "nvidia"}, code=2,
                           expected="'nvidia'"),
    "target_unknown": Case("options", NEUTRAL, ("--target", "spirv"), {"GPU_TARGET": "spirv"}, code=2,
                           expected="'spirv'"),
    "host_code_unknown": Case("options", kernel(), ("--host-code", "maybe"), {"GPU_HOST_CODE": "maybe"}, code=2,
                              expected="'maybe'"),
    "vendor_layout_needs_fatbin": Case("options", kernel(), ("--layout", "vendor", "--format", "bin"),
                                       {"GPU_LAYOUT": "vendor", "GPU_FORMAT": "bin"}, expected="vendor layout"),
    # Environment settings.
    "timeout_infinite": Case("environment", kernel(), (), {}, env={"MLIRGPU_TOOL_TIMEOUT": "inf"},
                             expected="MLIRGPU_TOOL_TIMEOUT='inf'"),
    "timeout_nan": Case("environment", kernel(), (), {}, env={"MLIRGPU_TOOL_TIMEOUT": "nan"},
                        expected="MLIRGPU_TOOL_TIMEOUT='nan'"),
    "timeout_huge": Case("environment", kernel(), (), {}, env={"MLIRGPU_TOOL_TIMEOUT": "1e999"},
                         expected="is not a number of seconds"),
    "timeout_negative": Case("environment", kernel(), (), {}, env={"MLIRGPU_TOOL_TIMEOUT": "-1"},
                             expected="MLIRGPU_TOOL_TIMEOUT='-1'"),
    "timeout_zero": Case("environment", kernel(), (), {}, env={"MLIRGPU_TOOL_TIMEOUT": "0"},
                         expected="MLIRGPU_TOOL_TIMEOUT='0'"),
    "timeout_text": Case("environment", kernel(), (), {}, env={"MLIRGPU_TOOL_TIMEOUT": "abc"},
                         expected="MLIRGPU_TOOL_TIMEOUT='abc'"),
    # Outputs that would overwrite the input or each other.
    "output_is_input": Case("outputs", kernel(), ("-o", "{src}"), None, expected="are the same file"),
    "header_is_output": Case("outputs", kernel(), ("-o", "{tmp}/k.o", "--header", "{tmp}/k.o"), None,
                             expected="are the same file"),
    "depfile_is_output": Case("outputs", kernel(), ("-o", "{tmp}/k.o", "--depfile", "{tmp}/k.o"), None,
                              expected="are the same file"),
    "output_is_dump": Case("outputs", kernel(), ("-o", "{tmp}/D/m.isa", "--dump-intermediates", "{tmp}/D"), None,
                           expected="are the same file"),
    "header_is_input": Case("outputs", kernel(), ("--header", "{src}"), None, expected="are the same file"),
    "output_is_folder": Case("outputs", kernel(), ("-o", "{tmp}"), None, expected="is a folder"),
    "unwritable_dump_dir": Case("outputs", kernel(), ("--dump-intermediates", "{tmp}/blocker/D"), None,
                                expected="cannot write the dump folder"),
    "unwritable_output_dir": Case("outputs", kernel(), ("-o", "{tmp}/blocker/out.o"), None,
                                  expected="is not a folder"),
    # Inputs that are not regular text files.
    "fifo": Case("inputs", "<fifo>", (), None, expected="it is a FIFO"),
    "device": Case("inputs", "<device>", (), None, expected="it is a device"),
    "directory": Case("inputs", "<dir>", (), None, expected="it is a folder"),
    "too_large": Case("inputs", "<large>", (), None, expected="larger than a GPU module source may be"),
    "nonexistent": Case("inputs", None, (), None, expected="cannot read"),
    "symlink_loop": Case("inputs", "<loop>", (), None, expected="cannot read"),
    "byte_order_mark": Case("inputs", b"\xef\xbb\xbf" + kernel().encode(), (), {}),
    "binary_garbage": Case("inputs", b"\x00\x01\x02ELF\x00\x00garbage", (), {}),
    "non_utf8": Case("inputs", b"module {\n  \xff\xfe\n}\n", (), {}, expected="not a UTF-8 text file", line=2),
    "empty_file": Case("inputs", "", (), {}, expected="no gpu.module found"),
    "deep_attribute": Case("inputs", kernel('#nvvm.target<chip = "sm_80", flags = {x = ' + "[" * 100000 + "]" * 100000
                                            + "}>"), (), {}),
    "deep_alias": Case("inputs", "#t = " + "[" * 100000 + "]" * 100000 + "\n" + kernel(), (), {}),
    "no_gpu_module": Case("inputs", "module {\n  func.func @f() {\n    return\n  }\n}\n", (), {},
                          expected="no gpu.module found"),
    "already_serialized": Case("inputs", 'module attributes {gpu.container_module} {\n  gpu.binary @k '
                               '[#gpu.object<#nvvm.target, "data">]\n}\n', (), {}, expected="no gpu.module found"),
    "library_fifo": Case("inputs", kernel(), ("-l", "{tmp}/lib.fifo"), None, expected="is not a regular file"),
    "library_folder": Case("inputs", kernel(), ("-l", "{tmp}"), None, expected="is not a regular file"),
    "library_missing": Case("inputs", kernel(), ("-l", "missing.bc"), None, expected="missing.bc", line=2),
    "library_corrupt": Case("inputs", kernel(), ("-l", "corrupt.bc"), {"GPU_LINKLIBS": ["corrupt.bc"]},
                            expected="cannot read bitcode library", line=2),
    # MLIR the compiler rejects, with the file and line.
    "syntax_error": Case("mlir", kernel(body="%y = llvm.fadd %x, : f32"), (), {}, expected="expected", line=4),
    "unknown_dialect": Case("mlir", kernel(body='"frob.nicate"() : () -> ()'), (), {},
                            expected="unregistered dialect", line=4),
    "unknown_op": Case("mlir", kernel(body="llvm.frobnicate %x : f32"), (), {}, expected="llvm.frobnicate", line=4),
    "bad_target_parameter": Case("mlir", kernel('#nvvm.target<chip = 5>'), (), {}, expected="expected string", line=2),
    "bad_O_level_in_attribute": Case("mlir", kernel('#nvvm.target<chip = "sm_80", O = 7>'), (), {},
                                     expected="optimization level", line=2),
    "ptxas_options_not_a_list": Case("mlir", kernel('#nvvm.target<chip = "sm_80", flags = {"ptxas-cmd-options" = '
                                                    '"-v"}>'), ("--format", "bin"), {"GPU_FORMAT": "bin"},
                                     expected="must be an array of strings", line=2),
    "unknown_nvvm_chip": Case("mlir", kernel('#nvvm.target<chip = "sm_999">'), (), {},
                              expected="unknown nvvm chip 'sm_999'", line=2),
    "unknown_rocdl_chip": Case("mlir", kernel('#rocdl.target<chip = "gfx9999">', kind="rocdl"), (), {},
                               expected="unknown rocdl chip", line=2),
    "chip_older_than_ptxas": Case("mlir", kernel('#nvvm.target<chip = "sm_70">'), ("--format", "bin"),
                                  {"GPU_FORMAT": "bin"}, expected="sm_75 or newer", line=2),
    "ptx_version_too_low": Case("mlir", kernel('#nvvm.target<chip = "sm_90", features = "+ptx60">'), (), {},
                                expected="LLVM crashed", line=2),
    "colliding_names": Case("mlir", TWO_MODULES.format(a='"a.b"', b="a_b"), (), {}, expected="map to the same", line=5),
    "names_differ_in_case": Case("mlir", TWO_MODULES.format(a="a", b="A"), (), {}, expected="map to the same", line=5),
    "duplicate_module": Case("mlir", TWO_MODULES.format(a="twice", b="twice"), (), {},
                             expected="redefinition of symbol", line=5),
    "undefined_function": Case("mlir", kernel(body="llvm.call @not_defined() : () -> ()").replace(
        "    llvm.func @k(", "    llvm.func @not_defined()\n    llvm.func @k("), ("--format", "bin"),
        {"GPU_FORMAT": "bin"}, expected="not_defined", line=2),
    "missing_resource": Case("mlir", kernel(body="").replace(
        "    llvm.func @k(", '    llvm.mlir.global internal constant @t(dense_resource<blob1> : tensor<4xf32>) '
        '{addr_space = 4 : i32} : !llvm.array<4 x f32>\n    llvm.func @k('), (), {},
        expected="resource does not exist", line=3),
    "neutral_without_target": Case("mlir", NEUTRAL, (), {"GPU_TARGET": ""}, expected="has no target", line=3),
    "host_code_not_lowerable": Case("mlir", SYNC_HOST, ("--target", "nvvm", "--chip", "sm_80"), NVVM,
                                    expected="ignore to embed only the binaries"),
    "subgroup_reduce_needs_a_pipeline": Case("mlir", SUBGROUP, ("--target", "nvvm", "--chip", "sm_80"), NVVM,
                                             expected="test-gpu-subgroup-reduce-lowering", line=6),
    "kernel_name_ptx_cannot_hold": Case("mlir", kernel().replace("llvm.func @k(", 'llvm.func @"k|x"('), (), {},
                                        expected="LLVM crashed", line=2),
    "xevm_triple_not_spirv": Case("mlir", kernel('#xevm.target<triple = "nvptx64-nvidia-cuda">', kind="xevm"), (),
                                  {}, expected="unsupported XeVM target triple", line=2),
    "xevm_link_not_its_parameter": Case("mlir", kernel('#xevm.target<link = ["a.bc"]>', kind="xevm"), (), {},
                                        expected="link", line=2),
    "xevm_needs_an_extension": Case("mlir", kernel('#xevm.target<O = 0>', kind="xevm", body=(
        "%n = llvm.ptrtoint %p : !llvm.ptr<1> to i64\n      %a = llvm.alloca %n x f32 : (i64) -> !llvm.ptr\n"
        "      llvm.store %x, %a : f32, !llvm.ptr")), (), {}, expected="SPV_INTEL_variable_length_array", line=2),
    "xevm_workgroup_attribution": Case("mlir", WORKGROUP, ("--target", "xevm"), {"GPU_TARGET": "xevm"},
                                       expected="no XeVM lowering for workgroup memory", line=6),
    "xevm_shuffle_without_sub_group_size": Case("mlir", corpus("rowsum_scf.neutral.mlir", ""), ("--target", "xevm"),
                                                {"GPU_TARGET": "xevm"}, expected="intel_reqd_sub_group_size = 16",
                                                line=29),
    # Missing tools and libraries: which package to install.
    "missing_cuda_toolkit": Case("tools", kernel(), ("--format", "bin", "--toolkit", EMPTY),
                                 {"GPU_FORMAT": "bin", "GPU_TOOLKIT": EMPTY}, expected="pip install nvidia-cuda-nvcc"),
    "libdevice_without_toolkit": Case("tools", corpus("math_libdevice.nvvm.mlir", "sm_80"),
                                      ("--format", "isa", "--toolkit", EMPTY), {"GPU_FORMAT": "isa", "GPU_TOOLKIT": EMPTY},
                                      expected="from libdevice"),
    "missing_rocm_libraries": Case("tools", corpus("math_ocml.rocdl.mlir", "gfx942"), ("--toolkit", EMPTY),
                                   {"GPU_TOOLKIT": EMPTY}, expected="apt install rocm-device-libs"),
}

# Input MLIR accepts: each compiles correctly, and what the compile generates keeps its meaning.
ACCEPTED = {
    "crlf_line_endings": kernel().replace("\n", "\r\n"),
    "tabs": kernel().replace("  ", "\t"),
    "nul_byte": kernel().replace("llvm.return", "llvm.return\0", 1),  # MLIR's lexer takes NUL as a blank
    "name_closing_a_comment": kernel(name='"x */ #define z 1"'),
    "name_with_markdown": kernel(name='"[link](http://x) | <b>"'),
    "name_c_keyword": kernel(name="int"),
    "name_with_a_line_break_and_a_command": kernel(name='"x\\0Atouch PWNED #"'),  # a shell line in repro.sh
}


def materialise(folder, name, case):
    """The case's source (and its helpers: a corrupt library, an empty toolkit, a file where a folder is
    expected, a FIFO library) in `folder`; returns the source path."""
    source = folder / f"{name}.mlir"
    content = case.source
    if content == "<dir>":
        source.mkdir()
    elif content == "<fifo>":
        os.mkfifo(source)
    elif content == "<device>":
        source = "/dev/zero"
    elif content == "<large>":
        with open(source, "wb") as handle:
            handle.truncate(65 << 20)
    elif content == "<loop>":
        os.symlink(source, source)
    elif isinstance(content, bytes):
        source.write_bytes(content)
    elif content is not None:
        source.write_text(content)
    (folder / "corrupt.bc").write_bytes(b"BC\xc0\xde this is not bitcode")
    (folder / "empty-toolkit").mkdir(exist_ok=True)
    (folder / "blocker").write_text("a file where a folder is expected")
    if not (folder / "lib.fifo").exists():
        os.mkfifo(folder / "lib.fifo")
    return str(source)


def fill(value, folder, source):
    """A case's argument (or SCons setting, or a list of them) with `{tmp}` and `{src}` filled in."""
    if isinstance(value, str):
        return value.replace("{tmp}", str(folder)).replace("{src}", source)
    if isinstance(value, list):
        return [fill(item, folder, source) for item in value]
    return value


def left_files(folder):
    """What a run left in `folder`, path by path, for comparing twin runs: a file's bytes (a record without its
    timings), FIFOs and links by kind."""
    found = {}
    for directory, _dirs, names in os.walk(folder):
        for name in names:
            path = os.path.join(directory, name)
            if not os.path.isfile(path) or os.path.islink(path):  # FIFOs and links the cases make: by kind
                found[os.path.relpath(path, folder)] = "link" if os.path.islink(path) else "special"
                continue
            with open(path, "rb") as handle:
                data = handle.read()
            if name.endswith("mlirgpu.json"):
                record = json.loads(data)
                for job in record.get("jobs", []):
                    job.pop("stages", None)
                data = json.dumps(record, sort_keys=True).encode()
            found[os.path.relpath(path, folder)] = data
    return found
