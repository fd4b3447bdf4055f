"""gluon_course.shared_banks: bank conflicts counted by hand, and read off a tiny PTX listing."""
from triton.experimental.gluon import language as gl

from gluon_course.shared_banks import extra_wavefronts, plain_tile_conflicts, shared_accesses


def test_consecutive_words_are_conflict_free():
    assert extra_wavefronts([4 * lane for lane in range(32)]) == 0


def test_one_word_for_everyone_is_a_broadcast():
    assert extra_wavefronts([64] * 32) == 0


def test_stride_of_two_words_is_two_way():
    # lanes 0 and 16 both land in bank 0, on different words
    assert extra_wavefronts([8 * lane for lane in range(32)]) == 1


def test_a_column_of_a_32_wide_tile_is_32_way():
    assert extra_wavefronts([128 * lane for lane in range(32)]) == 31


def test_16_byte_accesses_are_served_by_quarter_warps():
    # each quarter-warp reads 8 × 16 = 128 contiguous bytes: one wavefront each, nothing extra
    assert extra_wavefronts([16 * lane for lane in range(32)], width=16) == 0
    # two lanes of one quarter-warp 128 bytes apart: the same banks, different words
    assert extra_wavefronts([128 * (lane % 2) + 16 * (lane // 2) for lane in range(32)], width=16) >= 1


def test_plain_tile_conflicts_of_a_row_and_a_column_layout():
    rows = gl.BlockedLayout([1, 1], [1, 32], [1, 1], [1, 0])      # a warp along one row: consecutive words
    columns = gl.BlockedLayout([1, 1], [32, 1], [1, 1], [0, 1])   # a warp down one column of a 32-wide tile
    assert plain_tile_conflicts(rows, [32, 32]) == 0
    assert plain_tile_conflicts(columns, [32, 32]) == 31


PTX = """
    mov.u32     %r1, %tid.x;
    shl.b32     %r2, %r1, 7;
    and.b32     %r3, %r1, 31;
    xor.b32     %r4, %r3, 5;
    mov.b32     %r5, global_smem;
    add.s32     %r6, %r5, %r2;
    st.shared.b32   [%r6], %r9;
    shl.b32     %r7, %r4, 2;
    add.s32     %r8, %r5, %r7;
    ld.shared.v4.b32 {%r10, %r11, %r12, %r13}, [%r8+16];
    ld.param.b32 %r14, [param_0];
    st.shared.b32   [%r14], %r9;
"""


def test_the_ptx_interpreter_follows_the_address_arithmetic():
    first, second, third = shared_accesses(PTX, threads=32)
    assert (first.kind, first.width, first.addresses[:3]) == ("st", 4, [0, 128, 256])
    assert first.extra_wavefronts() == 31
    assert (second.kind, second.width) == ("ld", 16)
    assert second.addresses[:2] == [4 * 5 + 16, 4 * 4 + 16]
    assert third.addresses is None and third.extra_wavefronts() is None   # depends on a kernel argument
