"""Static constructor lists become pointers in the sections llc would put them in (mlirgpu.llvm.structors):
`.init_array.P`, plain `.init_array` for the default priority, sorted by priority as llc sorts them; a list
this does not read is left to LLVM."""
from mlirgpu.llvm.structors import in_array_sections

HEAD = 'target triple = "x86_64-unknown-linux-gnu"\n'
TAIL = "define internal void @a() {\n  ret void\n}\ndefine internal void @b() {\n  ret void\n}\n"


def _list(kind, entries):
    items = ", ".join(f"{{ i32, ptr, ptr }} {{ i32 {priority}, ptr {function}, ptr {data} }}"
                      for priority, function, data in entries)
    return f"@llvm.global_{kind} = appending global [{len(entries)} x {{ i32, ptr, ptr }}] [{items}]\n"


def test_entries_go_to_their_priority_sections_in_llc_order():
    text = HEAD + _list("ctors", [(200, "@b", "null"), (123, "@a", "null")]) + \
        _list("dtors", [(65535, "@a", "null")]) + TAIL
    assert in_array_sections(text) == HEAD + (
        '@__mlirgpu_ctors.0 = private constant ptr @a, section ".init_array.123", align 8\n'
        '@__mlirgpu_ctors.1 = private constant ptr @b, section ".init_array.200", align 8\n'
        '@__mlirgpu_dtors.0 = private constant ptr @a, section ".fini_array", align 8\n') + TAIL


def test_a_list_with_associated_data_is_left_to_llvm():
    text = HEAD + _list("ctors", [(123, "@a", "@a")]) + TAIL
    assert in_array_sections(text) == text


def test_text_without_lists_is_unchanged():
    assert in_array_sections(HEAD + TAIL) == HEAD + TAIL
