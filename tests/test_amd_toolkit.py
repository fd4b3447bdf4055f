"""The AMD half of the toolkit, on the CPU: the AMDGCN reader (loops from LLVM's comments, one instruction mix), the
LDS bank model of gfx950 against AMD's statements, the launchers' argument checks and GPU refusals, the figures'
arithmetic, and the exact machine code of lessons 20-24's solutions for the pinned Triton (3.9.0)."""
from __future__ import annotations

import types

import pytest
import torch
import triton

from gluon_course import amd, load_checks, load_solution, validate
from gluon_course.amd import amdgcn
from gluon_course.memory import lds

# -- the AMDGCN reader ------------------------------------------------------------------------------------------

LISTING = """\
; %bb.0:
\ts_load_dwordx2 s[2:3], s[0:1], 0x0
\ts_cbranch_scc1 .LBB0_4
; %bb.1:                                ; %.lr.ph
\tv_mov_b32_e32 v1, 0
.LBB0_2:                                ;   in Loop: Header=BB0_3 Depth=1
\tbuffer_load_dwordx4 v2, s[8:11], 0 offen lds
\ts_waitcnt vmcnt(16)
\ts_barrier
\tds_read_b128 v[4:7], v2 offset:64
\tv_mfma_f32_16x16x32_f16 a[0:3], v[4:7], v[8:11], a[0:3]
\ts_cbranch_scc0 .LBB0_5
.LBB0_3:                                ; =>This Inner Loop Header: Depth=1
\tv_accvgpr_write_b32 a4, v1
\ts_nop 0
\tbuffer_load_dwordx4 v[12:15], v3, s[4:7], 0 offen
\tv_cndmask_b32_e64 v3, v1, v3, s[6:7]
\ts_add_u32 s10, s10, 64
\ts_branch .LBB0_2
.LBB0_4:
\tglobal_store_dwordx2 v[0:1], v[2:3], off
.LBB0_5:
\ts_endpgm
.LBB0_6:
\ts_branch .LBB0_4
.Lfunc_end0:
\t.section\t.AMDGPU.csdata
; NumVgprs: 10
\t.vgpr_count:     20
"""


def test_the_loop_comes_from_llvms_comments_not_from_backward_branches():
    fake = types.SimpleNamespace(amdgcn=LISTING, kernel_name="fake")
    loop = amdgcn.main_loop(fake)
    assert loop.header == "BB0_3" and [b.name for b in loop.blocks] == ["BB0_2", "BB0_3"]
    # .LBB0_6 branches back to .LBB0_4, but no comment puts either in a loop.
    assert [lp.header for lp in amdgcn.loops(fake)] == ["BB0_3"]


def test_every_instruction_has_one_category_and_the_mix_adds_up():
    fake = types.SimpleNamespace(amdgcn=LISTING, kernel_name="fake")
    mix = amdgcn.instruction_mix(fake)
    assert list(mix) == [name for name, _ in amdgcn.MIX]
    assert sum(mix.values()) == len(amdgcn.main_loop(fake).instructions) == 12
    assert {k: v for k, v in mix.items() if v} == {
        "MFMA": 1, "LDS read": 1, "buffer load → LDS": 1, "buffer load": 1, "wait": 1, "barrier": 1, "branch": 2,
        "AGPR move": 1, "VALU": 1, "SALU": 1, "other": 1}
    kernel = amdgcn.instruction_mix(fake, "kernel")
    assert kernel["store"] == 1 and kernel["branch"] == 4            # the metadata after .Lfunc_end is not code
    assert amdgcn.waits(amdgcn.main_loop(fake).instructions) == ["vmcnt(16)"]


def test_a_kernel_without_an_mfma_loop_gets_a_sentence():
    fake = types.SimpleNamespace(amdgcn="\ts_endpgm\n", kernel_name="copy_kernel")
    with pytest.raises(ValueError, match="no loop of copy_kernel holds a v_mfma"):
        amdgcn.main_loop(fake)
    with pytest.raises(ValueError, match="scope"):
        amdgcn.instruction_mix(fake, "everything")


# -- the LDS model ------------------------------------------------------------------------------------------------

SHAPES = {"a": [256, 64], "b": [64, 256]}


def _operands():
    acc, a, b = amd.mfma_layouts("gfx950")
    return {"a": a, "b": b}


def test_the_phases_of_each_read_cover_every_lane_once():
    for geometry in lds.LDS.values():
        for width, phases in geometry.read_phases.items():
            lanes = sorted(lane for phase in phases for lane in phase)
            assert lanes == list(range(64)), (geometry.target, width)
            assert len({len(p) for p in phases}) == 1
    assert lds.GFX950.bank(4 * 64 + 8) == 2 and lds.GFX942.bank(4 * 33) == 1


@pytest.mark.parametrize("kind, ways", [("plain", 4), ("swizzled", 1), ("padded", 1)])
def test_the_bank_model_agrees_with_amds_statements(kind, ways):
    """AMD's tutorial (v3_lds README): plain 256 × 64 fp16 tiles read with 4-way conflicts, its swizzle (8, 2, 8) and
    its padding [[512, 16]] without."""
    operands = _operands()
    for op, shape in SHAPES.items():
        if kind == "padded":
            shared = triton.experimental.gluon.language.amd.cdna4.compute_efficient_padded_shared_layout(
                operands[op], shape, triton.experimental.gluon.language.float16)
        else:
            shared = amd.lds_layouts(kind)[0 if op == "a" else 1]
        read = lds.ds_reads(operands[op], shared, shape)
        assert (read.instructions, read.vector_bytes, read.phases, read.worst_ways) == (16, 16, 4, ways)
        assert read.cycles_per_instruction == 4 * ways and read.conflict_free == (ways == 1)


def test_padded_offsets_and_the_copy_layout_they_imply():
    from triton.experimental.gluon import language as gl

    a = _operands()["a"]
    padded = gl.amd.cdna4.compute_efficient_padded_shared_layout(a, [256, 64], gl.float16)
    assert padded.interval_padding_pairs == [(512, 16)]
    assert [lds.padded_offset(padded, o) for o in (0, 511, 512, 1024)] == [0, 511, 528, 1056]
    assert lds.allocated_elements(padded, [256, 64]) == 16384 + 31 * 16
    copy = lds.direct_copy_layout(padded, [256, 64], 8, 64, 4)
    # The bases AMD's tutorial writes out by hand for its padded v3 (gLoadLayoutA).
    assert copy.reg_bases == [[0, 1], [0, 2], [0, 4], [4, 0], [8, 0], [128, 0]]
    assert copy.lane_bases == [[0, 8], [0, 16], [0, 32], [16, 0], [32, 0], [64, 0]]
    assert copy.warp_bases == [[1, 0], [2, 0]]
    with pytest.raises(ValueError, match="power of two"):
        lds.direct_copy_layout(padded, [256, 64], 6)
    with pytest.raises(ValueError, match="no LDS bank model"):
        lds.lds_banks("sm_90")


# -- launchers ------------------------------------------------------------------------------------------------------

@pytest.fixture
def cpu_tensors(monkeypatch):
    """The argument checks run on CPU tensors once the 'must be on the GPU' check is set aside."""
    monkeypatch.setattr(validate, "require_cuda_tensor", lambda name, t: None)

    def make(M, N, K, dtype=torch.float16):
        return (torch.zeros(M, K, dtype=dtype), torch.zeros(N, K, dtype=dtype).t(), torch.zeros(M, N, dtype=dtype))
    return make


def test_the_launchers_contract_is_checked_with_sentences(cpu_tensors):
    a, b, c = cpu_tensors(64, 32, 128)
    assert amd.require_amd_gemm_args(a, b, c) == (64, 32, 128)
    cases = [
        ((a.float(), b.float(), c.float()), {}, TypeError, "torch.float16"),
        ((a, b[:64], c), {}, ValueError, "K = 128"),
        ((a, b.contiguous(), c), {}, ValueError, "K-contiguous"),
        ((a.t().contiguous().t(), b, c), {}, ValueError, "row-major"),
        (cpu_tensors(64, 32, 1000), {"k_multiple": 16}, ValueError, "multiples of 16"),
    ]
    for args, kwargs, error, words in cases:
        with pytest.raises(error, match=words):
            amd.require_amd_gemm_args(*args, **kwargs)


def test_a_gpu_the_kernel_is_not_written_for_is_refused_with_a_sentence(monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "SOME GPU")
    monkeypatch.setattr(amd.launch, "gpu_arch", lambda device=None: "cuda")
    with pytest.raises(RuntimeError, match="NVIDIA GPU: run lessons 10-19 here"):
        amd.require_amd_gpu(("gfx950",))
    monkeypatch.setattr(amd.launch, "gpu_arch", lambda device=None: "gfx942")
    with pytest.raises(RuntimeError, match="this GPU is gfx942"):
        amd.require_amd_gpu(("gfx950",))
    assert amd.require_amd_gpu(("gfx950", "gfx942")) == "gfx942"
    with pytest.raises(ValueError, match="use 4"):
        amd.require_tile(256, 256, 64, 8, "gfx950")


# -- figures: arithmetic with provenance ---------------------------------------------------------------------------

def test_the_peaks_and_the_vendors_fractions():
    assert round(amd.PEAKS["gfx950"].tflops, 1) == 2516.6
    assert round(amd.PEAKS["gfx942"].tflops, 1) == 1307.4
    refs = amd.vendor_references(4)
    assert refs[0].value == 1123 and "the vendor's measurement, not ours" in refs[0].source
    assert refs[1].value == round(1123 / 2516.6, 4)
    expect = amd.provisional_range(4)
    assert expect.low == round(1123 / 1489 * 0.5, 4) and expect.high == round(1123 / 1489 * 1.5, 4)
    assert "PROVISIONAL" in expect.why and expect.ceiling == "hipBLASLt"


def test_every_vendor_figure_names_the_one_revision_it_is_read_from():
    """AMD's figures moved between revisions of their pages (the blog's best: 1619 TFLOPS in 745a2984, 1489 in the
    published 39dbe25a), so each figure the course quotes carries the commit it was read from."""
    assert amd.VENDOR_BEST == 1489 and "39dbe25a" in amd.VENDOR_BEST_SOURCE
    assert "745a2984" in amd.VENDOR_BEST_SOURCE and "1619" in amd.VENDOR_BEST_SOURCE
    assert "04322ed8" in amd.VENDOR_SOURCE
    for version in amd.VENDOR:
        for ref in amd.vendor_references(version):
            assert any(pin in ref.source for pin in ("04322ed8", "39dbe25a", "specifications")), ref.source
    assert amd.VENDOR_REVISIONS in amd.provisional_range(0).why


def test_without_an_amd_gpu_the_notebook_says_so(capsys):
    lab = amd.AmdLab("22")
    lab.correctness()
    lab.figures()
    out = capsys.readouterr().out
    assert out.count(amd.NOT_MEASURED) == 1 + len(lab.checks.correctness) + len(lab.checks.figures)
    assert "the vendor's measurement, not ours" in out


# -- lessons 20-24 for the pinned Triton ---------------------------------------------------------------------------

# The whole K loop (gfx950, fp16) and the budget of each version's solution, exactly as Triton 3.9.0 compiles it.
# The lessons' checks grade the instructions the algorithm decides; this pins the rest (waits, VALU, SALU, AGPR
# moves), so a Triton update that changes any of it is seen here first.
PINNED = {
    "20": ({"MFMA": 128, "LDS read": 32, "LDS write": 16, "global load": 16, "wait": 34, "barrier": 32, "branch": 18,
            "AGPR move": 73, "VALU": 18, "SALU": 50, "other": 1}, 141, (425, 256, 169), 4096),
    "21": ({"MFMA": 128, "LDS read": 32, "LDS write": 16, "buffer load": 16, "wait": 49, "barrier": 32, "branch": 1,
            "AGPR move": 201, "VALU": 119, "SALU": 20, "other": 21}, 4, (512, 256, 256), 4096),
    "22": ({"MFMA": 128, "LDS read": 32, "buffer load → LDS": 16, "wait": 17, "barrier": 2, "branch": 1,
            "AGPR move": 1, "VALU": 63, "SALU": 36, "other": 1}, 4, (372, 256, 116), 65536),
    "23": ({"MFMA": 128, "LDS read": 32, "buffer load → LDS": 16, "wait": 22, "barrier": 2, "branch": 1,
            "AGPR move": 9, "VALU": 63, "SALU": 24, "other": 1}, 4, (370, 256, 114), 67520),
    "24": ({"MFMA": 128, "LDS read": 32, "buffer load → LDS": 16, "wait": 10, "barrier": 2, "branch": 1,
            "AGPR move": 42, "VALU": 52, "SALU": 37, "other": 8}, 4, (470, 256, 214), 135104),
}


@pytest.mark.parametrize("number", sorted(PINNED))
def test_the_solutions_machine_code_for_the_pinned_triton(number):
    assert triton.__version__ == "3.9.0", "these counts are Triton 3.9.0's; re-derive them for another version"
    mix, branches, (vgprs, arch, agprs), lds_bytes = PINNED[number]
    k = load_checks(number).compiled(load_solution(number), "gfx950", "fp16")
    assert {name: n for name, n in amdgcn.instruction_mix(k).items() if n} == mix
    assert amdgcn.branches(k) == branches
    b = amdgcn.budget(k, 4)
    assert (b.vgprs, b.arch_vgprs, b.agprs, b.lds_bytes, b.scratch_bytes) == (vgprs, arch, agprs, lds_bytes, 0)
    assert b.occupancy.blocks == 1 and amdgcn.listed_occupancy(k) == 1


def test_the_mix_chart_draws_one_bar_per_version():
    import matplotlib

    matplotlib.use("Agg")
    rows = {"v0": PINNED["20"][0] | {n: 0 for n, _ in amdgcn.MIX if n not in PINNED["20"][0]},
            "v4": PINNED["24"][0] | {n: 0 for n, _ in amdgcn.MIX if n not in PINNED["24"][0]}}
    fig = amd.mix_chart(rows, "test")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["v4", "v0"]
    assert len(ax.patches) == 2 * sum(1 for name, _ in amdgcn.MIX if rows["v0"][name] or rows["v4"][name])
    table = amd.mix_table(rows)
    assert table[-1] == ["total", sum(rows["v0"].values()), sum(rows["v4"].values())]


def test_the_masks_of_each_load_are_read_off_the_ttgir():
    ttgir = """\
  tt.func public @k(%a_ptr: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %M: i32, %K: i32) attributes {} {
    %0 = tt.splat %M : i32 -> tensor<4xi32, #b>
    %1 = arith.cmpi slt, %offs, %0 : tensor<4xi32, #b>
    %2 = tt.splat %K : i32 -> tensor<4xi32, #b>
    %3 = arith.cmpi slt, %offs, %2 : tensor<4xi32, #b>
    %mask = arith.andi %1, %3 : tensor<4xi1, #b>
    %4 = scf.for %i = %c0 to %c4 step %c1 iter_args(%p = %ptrs) -> (tensor<4x!tt.ptr<f16>, #b>) : i32 {
      %x = tt.load %p, %3 : tensor<4x!tt.ptr<f16>, #b> loc(#loc1)
      %y = amdg.buffer_load %a_ptr[%offs], %mask, %cst : !tt.ptr<f16> -> tensor<4xf16, #b> loc(#loc2)
    }
    %ptrs = tt.splat %a_ptr : !tt.ptr<f16> -> tensor<4x!tt.ptr<f16>, #b>
"""
    assert amd.load_masks(ttgir) == [("a_ptr", frozenset({"K"})), ("a_ptr", frozenset({"M", "K"}))]


def test_the_waves_share_the_accumulator_in_interleaved_16_by_16_blocks():
    """Lesson 20's picture: over 2 × 2 waves the MFMA accumulator of a 256 × 256 tile gives each wave 128 × 128
    elements, not a quarter of the tile but every other 16 × 16 block along M and along N."""
    from gluon_course.memory.layouts import warp_grid

    grid = warp_grid(amd.mfma_layouts("gfx950")[0], [256, 256])
    for i in range(16):
        for j in range(16):
            block = grid[16 * i:16 * i + 16, 16 * j:16 * j + 16]
            assert (block == 2 * (i % 2) + j % 2).all(), (i, j)
