"""Static constructors and destructors in `.init_array`/`.fini_array` sections, as the release `llc` makes them.

Host code from MLIR's `gpu-module-to-binary` loads each binary in a constructor (`@llvm.global_ctors`, priority
123) and unloads it in a destructor. llc (and clang) emit such lists as `.init_array.123`/`.fini_array.123`;
llvmlite's target machines leave LLVM's option for it off, and would emit `.ctors.65412`/`.dtors.65412`, which
GNU ld folds into `.init_array` but ld.lld keeps apart, in a section nothing runs: a program linked with lld would
launch kernels from a module never loaded. So before code generation each entry becomes a pointer in the very
section llc would choose: a private constant, which leaves no symbol, in the order llc sorts them (by priority,
then as listed). The object's sections and relocations are then llc's (bench/README, tests/build).
"""
import re

_LIST = re.compile(r"^@llvm\.global_(ctors|dtors) = appending global \[\d+ x \{ i32, ptr, ptr \}\] \[(.*)\]\n",
                   re.M)
_ENTRY = re.compile(r"\{ i32, ptr, ptr \} \{ i32 (\d+), ptr (@[-\w.$]+), ptr null \}")
_SECTIONS = {"ctors": ".init_array", "dtors": ".fini_array"}
_DEFAULT_PRIORITY = 65535  # no suffix: LLVM's TargetLoweringObjectFileELF::getStaticStructorSection


def in_array_sections(ir_text):
    """`ir_text` with its `@llvm.global_ctors` and `@llvm.global_dtors` as pointers in `.init_array[.P]` and
    `.fini_array[.P]` sections; unchanged where a list holds what llc would place otherwise (an entry with
    associated data goes with that data's section group) or is not printed as LLVM prints it."""
    if "@llvm.global_" not in ir_text:
        return ir_text
    replaced = []
    for found in _LIST.finditer(ir_text):
        kind, body = found.groups()
        entries = [(int(priority), function) for priority, function in _ENTRY.findall(body)]
        if _ENTRY.sub("", body).replace(",", "").strip() or not entries:
            return ir_text  # an entry this does not read: llvmlite's own lowering (.ctors) stays
        entries.sort(key=lambda entry: entry[0])  # stable: llc's order
        lines = []
        for index, (priority, function) in enumerate(entries):
            section = _SECTIONS[kind] + ("" if priority == _DEFAULT_PRIORITY else f".{priority}")
            lines.append(f'@__mlirgpu_{kind}.{index} = private constant ptr {function}, section "{section}", '
                         "align 8\n")
        replaced.append((found.span(), "".join(lines)))
    for (start, end), text in reversed(replaced):
        ir_text = ir_text[:start] + text + ir_text[end:]
    return ir_text
