"""gluon_course.memory.banks, the one bank model: Triton's prediction from the host, our wavefront simulation from
two layouts, and the addresses read off a compiled kernel's PTX."""
import itertools

import pytest
from triton.experimental.gluon import language as gl

from gluon_course.memory import banks
from gluon_course.memory.banks import bank_grid, bank_table, shared_access, shared_offsets, triton_bank_conflicts

ROW = gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0])           # lanes along a row
COLUMN = gl.BlockedLayout([1, 1], [32, 1], [1, 4], [0, 1])        # lanes down a column
VECTOR_ROW = gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])     # 16-byte vectors along a row
VECTOR_COLUMN = gl.BlockedLayout([4, 1], [8, 4], [1, 4], [0, 1])
PLAIN = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
SHAPE = [64, 64]


def test_a_column_of_plain_shared_memory_is_a_32_way_conflict():
    access = shared_access(COLUMN, PLAIN, SHAPE)
    assert access.vector_elements == 1
    assert access.instructions == 128                 # 32 per warp, 4 warps
    assert access.wavefronts_per_instruction == 32
    assert access.conflicts == 31
    assert triton_bank_conflicts(COLUMN, PLAIN, SHAPE) == 31


def test_xor_swizzle_spreads_a_column_over_all_banks():
    swizzled = gl.SwizzledSharedLayout(1, 1, 32, [1, 0])
    assert shared_access(COLUMN, swizzled, SHAPE).wavefronts_per_instruction == 1
    assert shared_access(ROW, swizzled, SHAPE).wavefronts_per_instruction == 1
    assert triton_bank_conflicts(COLUMN, swizzled, SHAPE) == 0


def test_rows_are_conflict_free_and_vectors_take_four_wavefronts():
    assert shared_access(ROW, PLAIN, SHAPE).wavefronts_per_instruction == 1
    vec = shared_access(VECTOR_ROW, PLAIN, SHAPE)
    assert (vec.vector_elements, vec.vector_bytes, vec.ideal_per_instruction) == (4, 16, 4)
    assert vec.wavefronts_per_instruction == 4 and vec.conflicts == 0


def test_a_row_xor_in_the_low_offset_bits_breaks_16_byte_vectors():
    # vec=1 swizzles single columns, so a thread's 4 consecutive elements are no longer in order in memory
    assert shared_access(VECTOR_ROW, gl.SwizzledSharedLayout(1, 1, 32, [1, 0]), SHAPE).vector_elements == 1
    assert shared_access(VECTOR_ROW, gl.SwizzledSharedLayout(4, 4, 8, [1, 0]), SHAPE).vector_elements == 4


def test_the_vector_swizzle_serves_both_sides_of_the_transpose():
    swizzled = gl.SwizzledSharedLayout(4, 4, 8, [1, 0])
    assert shared_access(VECTOR_COLUMN, PLAIN, SHAPE).wavefronts_per_instruction == 8
    assert shared_access(VECTOR_COLUMN, swizzled, SHAPE).wavefronts_per_instruction == 1
    assert shared_access(VECTOR_ROW, swizzled, SHAPE).conflicts == 0


DISTRIBUTED_32 = [ROW, COLUMN, VECTOR_ROW, VECTOR_COLUMN,
                  gl.BlockedLayout([1, 4], [2, 16], [4, 1], [1, 0]), gl.BlockedLayout([4, 1], [16, 2], [1, 4], [0, 1]),
                  gl.BlockedLayout([1, 2], [4, 8], [4, 1], [1, 0]), gl.BlockedLayout([2, 2], [8, 4], [2, 2], [1, 0])]
SHARED_32 = [PLAIN, gl.SwizzledSharedLayout(1, 1, 1, [0, 1]), gl.SwizzledSharedLayout(4, 1, 8, [1, 0]),
             gl.SwizzledSharedLayout(1, 1, 32, [1, 0]), gl.SwizzledSharedLayout(2, 2, 8, [1, 0]),
             gl.SwizzledSharedLayout(4, 4, 8, [1, 0]), gl.NVMMASharedLayout(128, 32, rank=2),
             gl.NVMMASharedLayout(64, 32, rank=2)]


@pytest.mark.parametrize("distributed,shared", list(itertools.product(DISTRIBUTED_32, SHARED_32)))
def test_simulation_agrees_with_triton_float32(distributed, shared):
    ours = shared_access(distributed, shared, SHAPE).conflicts
    assert ours == pytest.approx(triton_bank_conflicts(distributed, shared, SHAPE))


@pytest.mark.parametrize("distributed,shared", [
    (gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0]), gl.SwizzledSharedLayout(8, 1, 8, [1, 0])),
    (gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0]), gl.SwizzledSharedLayout(1, 1, 1, [1, 0])),
    (gl.BlockedLayout([8, 1], [8, 4], [1, 4], [0, 1]), gl.SwizzledSharedLayout(1, 1, 1, [1, 0])),
    (gl.BlockedLayout([8, 1], [8, 4], [1, 4], [0, 1]), gl.SwizzledSharedLayout(8, 1, 8, [1, 0])),
    (gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0]), gl.SwizzledSharedLayout(1, 1, 1, [1, 0])),
    (gl.BlockedLayout([1, 1], [32, 1], [1, 4], [0, 1]), gl.SwizzledSharedLayout(1, 1, 1, [1, 0])),
    (gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0]), gl.NVMMASharedLayout(128, 16, rank=2)),
])
def test_simulation_agrees_with_triton_float16(distributed, shared):
    ours = shared_access(distributed, shared, SHAPE, element_bytes=2).conflicts
    assert ours == pytest.approx(triton_bank_conflicts(distributed, shared, SHAPE, element_bits=16))


def test_two_half_precision_lanes_share_a_word_without_conflict():
    # 32 lanes × 2 bytes along a row: 16 words, each read by two lanes at once (no conflict)
    row16 = gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0])
    assert shared_access(row16, PLAIN, SHAPE, element_bytes=2).wavefronts_per_instruction == 1


def test_shared_offsets_is_a_bijection():
    for shared in SHARED_32:
        table = shared_offsets(shared, SHAPE)
        assert len(table) == 64 * 64
        assert sorted(table.values()) == list(range(64 * 64))


def test_bank_table_and_grid_show_the_conflict():
    rows = bank_table(COLUMN, PLAIN, SHAPE)
    assert len(rows) == 32
    assert {bank for *_, bank in rows} == {0}                    # every lane in bank 0
    assert [element for _, element, _, _ in rows[:3]] == [(0, 0), (1, 0), (2, 0)]
    swizzled = bank_grid(gl.SwizzledSharedLayout(1, 1, 32, [1, 0]), SHAPE, rows=4, cols=4).splitlines()
    assert swizzled == [" 0  1  2  3", " 1  0  3  2", " 2  3  0  1", " 3  2  1  0"]


def test_triton_prediction_refuses_wrong_kinds_of_layout():
    with pytest.raises(TypeError, match="distributed"):
        triton_bank_conflicts(PLAIN, PLAIN, SHAPE)
    with pytest.raises(TypeError, match="shared"):
        triton_bank_conflicts(ROW, ROW, SHAPE)


def test_profiling_without_ncu_says_what_to_install(monkeypatch):
    from gluon_course import load_checks, load_solution
    from gluon_course.measure import ncu

    monkeypatch.setattr(ncu, "find_ncu", lambda: None)
    with pytest.raises(ncu.NcuUnavailable, match="install Nsight Compute"):
        load_checks("05").profile_shared(load_solution("05"), "scalar_plain")


def test_module_constants_describe_nvidia_shared_memory():
    assert (banks.BANKS, banks.BANK_BYTES, banks.WAVEFRONT_BYTES) == (32, 4, 128)


# -- read off compiled PTX ------------------------------------------------------------------------

from triton.experimental.gluon import language as gl

from gluon_course.memory.banks import extra_wavefronts, plain_tile_conflicts, shared_accesses, wavefronts


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
    assert extra_wavefronts([16 * lane for lane in range(32)], access_bytes=16) == 0
    # two lanes of one quarter-warp 128 bytes apart: the same banks, different words
    assert extra_wavefronts([128 * (lane % 2) + 16 * (lane // 2) for lane in range(32)], access_bytes=16) >= 1


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


def test_one_wavefront_rule_for_layouts_and_ptx():
    """The simulation from layouts and the PTX reader count with the same function."""
    same_bank = [4 * 32 * lane for lane in range(32)]
    assert wavefronts(same_bank, 4) == 32 and extra_wavefronts(same_bank, 4) == 31
    assert wavefronts([16 * lane for lane in range(32)], 16) == 4 and extra_wavefronts([16 * lane for lane in range(32)], 16) == 0


# -- ldmatrix: 8 row addresses per 8 × 8 matrix, served together ----------------------------------------

from gluon_course.memory.banks import ldmatrix_rows, ldmatrix_wavefronts


def test_ldmatrix_rows_of_a_plain_tile_are_eight_consecutive_rows():
    rows = ldmatrix_rows(PLAIN, [16, 32])                   # 16-bit elements: a row of 32 is 64 bytes
    assert len(rows) == 2 * 4                                # 2 blocks of 8 rows × 4 pieces of 16 bytes
    assert rows[(0, 0)] == [64 * r for r in range(8)]
    assert rows[(8, 16)] == [64 * r + 32 for r in range(8, 16)]


def test_plain_layouts_conflict_by_row_length():
    # 64-byte rows: two rows per 128-byte line of banks, 4 rows of a matrix per bank group
    a = ldmatrix_wavefronts(PLAIN, [128, 32])
    assert (a.matrices, a.per_matrix, a.wavefronts_per_instruction, a.conflicts) == (64, {4: 64}, 16, 3)
    # 128-byte rows: every row starts in bank 0, an 8-way conflict
    b = ldmatrix_wavefronts(PLAIN, [32, 64])
    assert (b.per_matrix, b.wavefronts_per_instruction) == ({8: 32}, 32)


def test_nvmma_swizzles_make_every_matrix_one_wavefront():
    for shape in ([128, 32], [32, 64], [64, 128]):
        layout = gl.NVMMASharedLayout.get_default_for(shape, gl.bfloat16)
        access = ldmatrix_wavefronts(layout, shape)
        assert access.wavefronts_per_instruction == access.ideal_per_instruction == 4, (shape, str(access))
    # the 64-byte NVMMA swizzle of a 32-wide bf16 tile is SwizzledSharedLayout(8, 2, 4)
    assert shared_offsets(gl.NVMMASharedLayout(64, 16), [128, 32]) == shared_offsets(
        gl.SwizzledSharedLayout(8, 2, 4, [1, 0]), [128, 32])


def test_ldmatrix_needs_whole_16_byte_rows():
    with pytest.raises(ValueError, match="splits the 16-byte rows"):
        ldmatrix_wavefronts(gl.SwizzledSharedLayout(1, 1, 8, [1, 0]), [32, 64])
    with pytest.raises(ValueError, match="16-bit"):
        ldmatrix_wavefronts(PLAIN, [32, 64], element_bytes=4)


def test_ldmatrix_of_a_column_major_tile_reads_along_the_columns():
    # order [0, 1]: rows are contiguous down axis 0, so the 8 "rows" of a matrix are 8 consecutive columns
    rows = ldmatrix_rows(gl.SwizzledSharedLayout(1, 1, 1, [0, 1]), [32, 16])
    assert rows[(0, 0)] == [64 * c for c in range(8)]


LDMATRIX_PTX = """
    mov.u32     %r1, %tid.x;
    and.b32     %r2, %r1, 7;
    shl.b32     %r3, %r2, 7;
    mov.b32     %r5, global_smem;
    add.s32     %r6, %r5, %r3;
    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r10, %r11, %r12, %r13}, [%r6];
    ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r14, %r15, %r16, %r17}, [%r6+16];
"""


def test_the_ptx_reader_evaluates_ldmatrix_addresses_on_request():
    # by default ldmatrix is recorded but not analysed (what lesson 04's bank_report counts on)
    assert [a.addresses for a in shared_accesses(LDMATRIX_PTX, threads=32)] == [None, None]
    plain, trans = shared_accesses(LDMATRIX_PTX, threads=32, ldmatrix=True)
    assert (plain.kind, plain.width, plain.addresses[:3]) == ("ldmatrix", 16, [0, 128, 256])
    assert trans.addresses[:2] == [16, 144]
    # rows 128 bytes apart: each group of 8 lanes asks one bank group for 8 rows
    assert wavefronts(plain.addresses, 16) == 32
