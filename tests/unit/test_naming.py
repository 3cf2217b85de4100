"""Names made from gpu.module symbols (mlirgpu.util.naming), which MLIR lets be any string: file stems and C
names keep only safe characters and are never empty, long ones are cut with a hash that keeps distinct symbols
distinct, a module with several targets gets one name per target, and a library file's name says which target
and chip it is for."""
import re
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from mlirgpu.util.naming import c_name, file_stem, job_names, library_file, library_for


def test_file_stems_hold_no_path_and_are_never_empty():
    assert file_stem("../x y") == "___x_y"
    assert file_stem("") == "_"
    assert file_stem("-rf") == "_-rf"  # never read as an option
    assert file_stem("kernels_v2-a") == "kernels_v2-a"


def test_c_names_are_identifiers():
    assert c_name("9lives") == "_9lives"
    assert c_name("a-b.c d") == "a_b_c_d"
    assert c_name("") == "_"


@given(st.text(max_size=300))
def test_any_symbol_gives_a_safe_stem_and_identifier(symbol):
    stem, name = file_stem(symbol), c_name(symbol)
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,119}", stem) and ".." not in stem
    assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,119}", name)


def test_long_symbols_are_cut_and_stay_distinct():
    one, other = "k" * 300, "k" * 299 + "j"
    assert len(file_stem(one)) == len(c_name(one)) == 120
    assert file_stem(one) != file_stem(other) and c_name(one) != c_name(other)
    assert file_stem(one)[:100] == "k" * 100
    assert file_stem("k" * 120) == "k" * 120  # at the limit: kept whole


def test_a_module_gets_one_name_per_target():
    def targets(*chips):
        return [SimpleNamespace(chip=chip) for chip in chips]

    assert job_names("k", targets("sm_90")) == [("k", "k")]
    assert job_names("k.x", targets("sm_80", "gfx942")) == [("k_x.sm_80", "k_x_sm_80"), ("k_x.gfx942", "k_x_gfx942")]
    assert job_names("k", targets("sm_90", "sm_80", "sm_90")) == [("k.sm_90.0", "k_sm_90_0"), ("k.sm_80", "k_sm_80"),
                                                                   ("k.sm_90.2", "k_sm_90_2")]
    assert job_names("k", targets("gfx942:xnack+")) == [("k", "k")]
    assert job_names("k", targets("gfx942:xnack+", "gfx90a")) == [("k.gfx942_xnack_", "k_gfx942_xnack_"),
                                                                   ("k.gfx90a", "k_gfx90a")]


def test_a_library_files_name_reads_back_as_its_target_and_chip():
    names = {"nvvm", "rocdl", "xevm"}
    assert library_file("math", "nvvm") == "math.nvvm.bc"
    assert library_file("math", "rocdl", "gfx942:xnack+") == "math.rocdl.gfx942_xnack_.bc"
    assert library_for("out/math.nvvm.bc", names) == ("nvvm", None)
    assert library_for("out\\math.rocdl.gfx942.bc", names) == ("rocdl", "gfx942")
    for other in ("math.bc", "math.cuda.bc", "math.nvvm.o", "nvvm.bc/x"):
        assert library_for(other, names) is None  # linked into every job, as before
