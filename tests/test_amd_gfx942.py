"""gfx942 (MI300X) for the AMD lessons (gluon_course.amd.gfx942): which lessons declare it and what Triton 3.9.0 makes
of them there, why the others do not, and the support matrix's section written from it."""
from __future__ import annotations

import pytest

from gluon_course import load_checks, load_solution
from gluon_course.amd import DIRECT_COPY_BYTES, compiled, gfx942, tile_copy_layouts
from gluon_course.machine.compile import CompileFailed


def test_a_gfx942_direct_to_lds_copy_moves_four_bytes_per_lane_and_triton_refuses_sixteen():
    assert DIRECT_COPY_BYTES == {"gfx950": 16, "gfx942": 4}
    mod = load_solution("22")
    layouts = mod.kernel_layouts("gfx942")
    wide_a, wide_b = tile_copy_layouts(256, 256, 64, 4)
    with pytest.raises(CompileFailed, match="128-bit direct-to-LDS transaction width is not supported"):
        compiled(mod, "gfx942", "fp16", layouts={**layouts, "a_copy": wide_a, "b_copy": wide_b})


def test_lesson_22_on_gfx942_four_copies_for_each_of_gfx950s_and_it_spills():
    p = gfx942.port("22")
    assert p.declared and "gfx942" in load_checks("22").CHECKS.targets
    assert p.facts == {"lds_bytes": 65536, "vgprs": 512, "scratch": 356}
    assert "64 buffer_load_dword … lds, 32 ds_read2_b64" in p.changes[0]
    assert "16 buffer_load_dwordx4 … lds, 32 ds_read_b128" in p.changes[0]
    assert p.changes[1].startswith("4096 clocks of MFMA per K step (256 × 16) where gfx950 needs 2048 (128 × 16)")


@pytest.mark.parametrize("number", ["23", "24", "25", "26", "27", "28", "29"])
def test_the_lessons_that_do_not_declare_gfx942_say_why(number):
    p = gfx942.port(number)
    assert not p.declared and "gfx942" not in load_checks(number).CHECKS.targets
    assert p.facts["lds_bytes"] > 65536
    assert "more than the 65536 an MI300X workgroup may have" in p.changes[0]
    assert p.facts["error"] == "compute_efficient_padded_shared_layout only supports MFMA v4 (CDNA4)"


def test_the_support_matrix_says_which_lessons_an_mi300x_grades_fully():
    from gluon_course.course import repo_root

    text = (repo_root() / "book" / "support.md").read_text()
    assert "## On an MI300X (gfx942)" in text
    assert "A learner on an MI300X can grade lessons 20–22 fully" in text
    assert "| 23 | its kernel takes 67520 bytes of LDS" in text
