"""gluon_course.machine.occupancy on all four targets: sm_90, sm_100 (blocks per SM) and gfx942, gfx950
(workgroups per CU).

Every expected value is worked out by hand in the comment beside it, from these limits:

- sm_90 and sm_100 (identical): 228 KiB shared per SM, 227 KiB per block, 1 KiB reserved per block, 128-byte
  units; 65536 registers in 4 sub-partitions, per-warp units of 256, 255 per thread; 2048 threads; 32 blocks.
- gfx942 / gfx950: 4 SIMDs per CU, wave64, 8 waves per SIMD; 512 VGPRs per lane per SIMD shared by arch VGPRs
  (rounded up to 4) and AGPRs, the total rounded up to 8; SGPRs allow 10/9/8/7 waves at <=80/88/100/more;
  16 workgroups of 2+ waves per CU; LDS 64 KiB in 512-byte units (gfx942), 160 KiB in 1280-byte units (gfx950).
"""
import re
import types

import pytest
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from gluon_course.machine.occupancy import (GFX942, GFX950, LIMITS, SM90, SM100, format_limits_table, limits_table,
                                            occupancy, occupancy_of, register_waves_per_simd, vgprs_allocated)


# ---- NVIDIA ---------------------------------------------------------------------------------------------
def test_sm100_has_the_sm90_figures():
    # Programming Guide Table 27: columns 9.0 and 10.0 agree row for row.
    for field in ("shared_per_sm", "shared_per_block_max", "shared_reserved_per_block", "shared_unit",
                  "registers_per_sm", "register_unit", "max_registers_per_thread", "registers_per_block_max",
                  "sub_partitions", "threads_per_sm", "blocks_per_sm", "warp_size"):
        assert getattr(SM100, field) == getattr(SM90, field), field
    assert SM100.shared_per_sm == 233_472 and SM100.shared_per_block_max == 232_448 and SM100.warps_per_sm == 64


@pytest.mark.parametrize("target", ["sm_90", "sm_100"])
def test_nvidia_16k_shared_tile_is_limited_by_shared_memory(target):
    # 16 KiB + 1 KiB reserved = 17408 bytes; 233472 // 17408 = 13. Registers: 32 × 32 = 1024 per warp,
    # 16 warps per sub-partition → 64 warps → 16 blocks of 4 warps. Threads: 2048 / 128 = 16.
    occ = occupancy(16_384, registers=32, threads=128, limits=target)
    assert occ.by_resource == {"shared memory": 13, "registers": 16, "threads": 16, "blocks per SM": 32}
    assert str(occ) == "13 blocks per SM (52 warps, 81% occupancy), limited by shared memory"


@pytest.mark.parametrize("target", ["sm_90", "sm_100"])
def test_nvidia_register_limited(target):
    # 96 registers × 32 lanes = 3072 per warp; 16384 // 3072 = 5 warps per sub-partition → 20 warps → 2 blocks
    # of 8 warps. Shared: 4 KiB + 1 KiB = 5120 → 45. Threads: 64 / 8 = 8.
    occ = occupancy(4096, registers=96, threads=256, limits=target)
    assert (occ.blocks, occ.limited_by) == (2, "registers")
    assert occ.warps == 16 and occ.fraction == 0.25


@pytest.mark.parametrize("target", ["sm_90", "sm_100"])
def test_nvidia_thread_limited(target):
    # 512 threads = 16 warps: 64 / 16 = 4 blocks. Registers: 24 × 32 = 768 per warp, 21 per sub-partition → 84
    # warps → 5 blocks. Shared: 1 KiB + 1 KiB = 2048 → 114.
    occ = occupancy(1024, registers=24, threads=512, limits=target)
    assert (occ.blocks, occ.limited_by) == (4, "threads")
    assert occ.by_resource["registers"] == 5


@pytest.mark.parametrize("target", ["sm_90", "sm_100"])
def test_nvidia_cannot_launch(target):
    occ = occupancy(227 * 1024 + 1, registers=32, threads=128, limits=target)
    assert occ.blocks == 0 and "232449 shared bytes exceed the 232448" in occ.limited_by
    assert str(occ).startswith("0 blocks per SM: ")


def test_amd_register_arguments_are_refused_on_nvidia():
    with pytest.raises(ValueError, match="AMD registers"):
        occupancy(0, 32, 128, "sm_100", agprs=8)


# ---- AMD: the register rule ------------------------------------------------------------------------------
@pytest.mark.parametrize("arch, agprs, allocated", [
    (6, 0, 8),          # no AGPRs: 6 rounds up to 8
    (64, 0, 64),
    (61, 3, 72),        # 61 → 64 (where the AGPRs start) + 3 = 67 → 72; adding first (64) would be wrong
    (254, 68, 328),     # a real compile (below): 254 → 256 + 68 = 324 ("TotalNumVgprs") → 328
    (256, 256, 512),    # the whole file
    (0, 0, 8),          # even an empty kernel takes one unit
])
def test_vgprs_are_arch_rounded_to_4_then_agprs_then_rounded_to_8(arch, agprs, allocated):
    assert vgprs_allocated(arch, agprs) == allocated


@pytest.mark.parametrize("arch, agprs, sgprs, waves", [
    (32, 0, 20, 8),     # 512 // 32 = 16, capped at 8 waves per SIMD
    (128, 0, 20, 4),    # 512 // 128
    (61, 3, 20, 7),     # 512 // 72
    (254, 68, 20, 1),   # 512 // 328
    (256, 256, 20, 1),
    (32, 0, 104, 7),    # more than 100 SGPRs: 7 waves
])
def test_register_waves_per_simd(arch, agprs, sgprs, waves):
    assert register_waves_per_simd(arch, agprs, sgprs, "gfx942") == waves
    assert register_waves_per_simd(arch, agprs, sgprs, "gfx950") == waves     # same register file


# ---- AMD: workgroups per CU ------------------------------------------------------------------------------
def test_amd_vgpr_limited():
    # 128 VGPRs: 4 waves per SIMD → 16 per CU → 4 workgroups of 4 waves. Waves: 32 / 4 = 8. No LDS, and SGPRs
    # at most 100 (they would allow 10 waves per SIMD, more than the 8 a SIMD holds): neither is a limit.
    occ = occupancy(0, registers=128, threads=256, limits="gfx942", sgprs=20)
    assert occ.by_resource == {"VGPRs": 4, "waves": 8, "workgroups per CU": 16}
    assert (occ.blocks, occ.limited_by) == (4, "VGPRs")
    assert occ.warps == 16 and occ.waves_per_simd == 4 and occ.fraction == 0.5
    assert str(occ) == "4 workgroups per CU (16 waves, 4 per SIMD, 50% occupancy), limited by VGPRs"


def test_amd_agprs_share_the_vgpr_file():
    # 90 arch + 100 AGPRs: 92 + 100 = 192 per lane → 512 // 192 = 2 waves per SIMD → 8 per CU → 2 workgroups of 4.
    # Without the AGPRs: 96 → 5 waves per SIMD → 20 per CU → 5 workgroups.
    assert occupancy(0, 90, 256, "gfx950", agprs=100).by_resource["VGPRs"] == 2
    assert occupancy(0, 90, 256, "gfx950").by_resource["VGPRs"] == 5


def test_amd_lds_limited_on_gfx942():
    # 16 KiB of LDS (32 × 512-byte units): 65536 // 16384 = 4 workgroups. VGPRs 32: 16 per SIMD → 64 / 4 = 16.
    occ = occupancy(16_384, registers=32, threads=256, limits="gfx942")
    assert occ.by_resource["LDS"] == 4
    assert str(occ) == "4 workgroups per CU (16 waves, 4 per SIMD, 50% occupancy), limited by LDS"


def test_amd_same_kernel_on_gfx950_is_limited_by_waves():
    # 16384 bytes = 12.8 units of 1280 → 13 units = 16640 bytes; 163840 // 16640 = 9 workgroups. Waves: 8.
    occ = occupancy(16_384, registers=32, threads=256, limits="gfx950")
    assert occ.by_resource["LDS"] == 9
    assert (occ.blocks, occ.limited_by, occ.fraction) == (8, "waves", 1.0)


def test_amd_lds_unit_on_gfx950_costs_a_workgroup():
    # 32 KiB = 25.6 units of 1280 → 26 units = 33280 bytes; 163840 // 33280 = 4 (not 163840 // 32768 = 5).
    # 40 KiB = exactly 32 units → 4. On gfx942, 32 KiB = 64 units of 512 → 2.
    assert occupancy(32_768, 32, 256, "gfx950").by_resource["LDS"] == 4
    assert occupancy(40_960, 32, 256, "gfx950").by_resource["LDS"] == 4
    assert occupancy(32_768, 32, 256, "gfx942").by_resource["LDS"] == 2
    # 1 byte of LDS still takes a whole unit: 65536 // 512 = 128 on gfx942 (then the wave limits apply).
    assert occupancy(1, 32, 256, "gfx942").by_resource["LDS"] == 128


def test_amd_wave_limited_large_workgroup():
    # 1024 threads = 16 waves: 32 / 16 = 2 workgroups. VGPRs 32: 16 per SIMD → 64 / 16 = 4.
    occ = occupancy(0, registers=32, threads=1024, limits="gfx942")
    assert (occ.blocks, occ.limited_by, occ.fraction) == (2, "waves", 1.0)


def test_amd_small_workgroups_also_meet_the_barrier_limit():
    # 2-wave workgroups: waves allow 32 / 2 = 16, and 16 barriers allow 16: both run out together.
    occ = occupancy(0, registers=32, threads=128, limits="gfx942")
    assert (occ.blocks, occ.limited_by) == (16, "waves and workgroups per CU")
    # Single-wave workgroups hold no barrier: 32 of them fit.
    single = occupancy(0, registers=32, threads=64, limits="gfx942")
    assert (single.blocks, single.limited_by) == (32, "waves") and "workgroups per CU" not in single.by_resource


def test_amd_sgpr_limited():
    # 104 SGPRs: 7 waves per SIMD → 28 per CU → 7 workgroups of 4 waves. VGPRs 32 → 16; waves → 8.
    occ = occupancy(0, registers=32, threads=256, limits="gfx950", sgprs=104)
    assert (occ.blocks, occ.limited_by) == (7, "SGPRs")
    assert "SGPRs" not in occupancy(0, 32, 256, "gfx950", sgprs=100).by_resource     # 8 per SIMD: never binds
    assert occ.waves_per_simd == 7 and occ.fraction == pytest.approx(28 / 32)


def test_amd_cannot_launch():
    # 64 KiB + 1 byte: too much LDS on gfx942, fine on gfx950 (65537 → 52 units of 1280 = 66560 → 2).
    occ = occupancy(65_537, registers=32, threads=256, limits="gfx942")
    assert occ.blocks == 0 and "65537 LDS bytes exceed the 65536 one workgroup may use" in occ.limited_by
    assert str(occ).startswith("0 workgroups per CU: ")
    assert occupancy(65_537, registers=32, threads=256, limits="gfx950").by_resource["LDS"] == 2
    assert occupancy(160 * 1024 + 1, 32, 256, "gfx950").blocks == 0
    # More than 1024 threads, or more registers than the file holds.
    assert occupancy(0, 32, 1088, "gfx942").blocks == 0
    assert "more than the 512 a SIMD has" in occupancy(0, 256, 256, "gfx942", agprs=257).limited_by


def test_amd_odd_thread_counts_round_up_to_whole_waves():
    # 100 threads occupy 2 waves: 32 / 2 = 16 workgroups.
    assert occupancy(0, 16, 100, "gfx942").by_resource["waves"] == 16


# ---- occupancy_of picks the model from the target ----------------------------------------------------------
def test_occupancy_of_each_target():
    nv = occupancy_of(types.SimpleNamespace(shared_bytes=32_768, registers=32, target="sm_100"), num_warps=8)
    assert (nv.blocks, nv.limited_by, nv.threads_per_block) == (6, "shared memory", 256)
    # AMD: the compile's resources: "registers" is .vgpr_count (arch rounded to 4 + AGPRs), "agprs" the AGPRs.
    amd = types.SimpleNamespace(shared_bytes=0, registers=324, target="gfx950",
                                resources={"registers": 324, "agprs": 68, "sgprs": 16, "lds_bytes": 0})
    occ = occupancy_of(amd, num_warps=4)
    assert (occ.blocks, occ.limited_by, occ.threads_per_block) == (1, "VGPRs", 256)   # 328 per lane → 1 per SIMD
    with pytest.raises(ValueError, match="no SM/CU limits for 'sm_75'"):
        occupancy_of(types.SimpleNamespace(shared_bytes=0, registers=32, target="sm_75"), num_warps=4)


def test_limits_table_has_every_target_and_a_source():
    rows = limits_table()
    assert [r["target"] for r in rows] == list(LIMITS)
    by = {r["target"]: r for r in rows}
    assert by["sm_100"]["shared per unit"] == 228 * 1024 and by["sm_100"]["unit"] == "SM"
    assert by["gfx942"]["shared per unit"] == 64 * 1024 and by["gfx950"]["shared per unit"] == 160 * 1024
    assert by["gfx942"]["registers"] == 512 * 64 * 4 and by["gfx942"]["threads"] == 2048
    assert "Programming Guide" in by["sm_90"]["source"] and "LLVM" in by["gfx950"]["source"]
    text = format_limits_table()
    assert "gfx950" in text and "160 KiB" in text and "NVIDIA:" in text and "AMD:" in text


# ---- compiled kernels: the model agrees with the compiler's own accounting ---------------------------------
def _amd_backend():
    from gluon_course.machine.compile import amd_backend_available
    return amd_backend_available()


needs_amd = pytest.mark.skipif(not _amd_backend(), reason="this Triton has no AMD code generator")


@gluon.jit
def occ_copy(in_ptr, out_ptr, numel, XBLOCK: gl.constexpr, layout: gl.constexpr):
    offs = gl.program_id(0) * XBLOCK + gl.arange(0, XBLOCK, layout=layout)
    gl.store(out_ptr + offs, gl.load(in_ptr + offs, mask=offs < numel), mask=offs < numel)


@gluon.jit
def occ_staged(in_ptr, out_ptr, N: gl.constexpr, layout: gl.constexpr, smem_layout: gl.constexpr):
    offs = gl.arange(0, N, layout=layout)
    buf = gl.allocate_shared_memory(gl.float32, [N], smem_layout)
    buf.store(gl.load(in_ptr + offs))
    gl.store(out_ptr + offs, buf.load(layout))


@gluon.jit
def occ_pressure(in_ptr, out_ptr, N: gl.constexpr, layout: gl.constexpr):
    offs = gl.arange(0, N, layout=layout)
    x = gl.load(in_ptr + offs)
    gl.store(out_ptr + offs, x * gl.sum(x * x, axis=0))


def _llvm_occupancy(compiled) -> int:
    return int(re.search(r"; Occupancy: (\d+)", compiled.amdgcn).group(1))


@needs_amd
@pytest.mark.parametrize("target", ["gfx950", "gfx942"])
def test_compiled_copy_kernel(target):
    from gluon_course.machine.compile import compile_kernel

    k = compile_kernel(occ_copy, target, signature={"in_ptr": "*fp32", "out_ptr": "*fp32", "numel": "i32"},
                       constexprs={"XBLOCK": 4 * 64 * 4, "layout": gl.BlockedLayout([4], [64], [4], [0])},
                       aligned=["in_ptr", "out_ptr", "numel"], num_warps=4)
    occ = occupancy_of(k, num_warps=4)
    # A copy kernel: a handful of VGPRs, no LDS → 8 waves per SIMD, 8 workgroups of 4 waves, all waves.
    assert 0 < k.registers <= 64 and k.shared_bytes == 0
    assert (occ.blocks, occ.limited_by, occ.fraction) == (8, "waves", 1.0)
    assert "LDS" not in occ.by_resource
    # The waves the registers allow are what the compiler prints as "; Occupancy:".
    assert register_waves_per_simd(k.registers, 0, k.resources["sgprs"], target) == _llvm_occupancy(k) == 8


@needs_amd
@pytest.mark.parametrize("target, blocks, limited_by", [("gfx942", 4, "LDS"), ("gfx950", 8, "waves")])
def test_compiled_kernel_with_lds(target, blocks, limited_by):
    from gluon_course.machine.compile import compile_kernel

    k = compile_kernel(occ_staged, target, signature={"in_ptr": "*fp32", "out_ptr": "*fp32"},
                       constexprs={"N": 4096, "layout": gl.BlockedLayout([4], [64], [4], [0]),
                                   "smem_layout": gl.SwizzledSharedLayout(1, 1, 1, [0])},
                       aligned=["in_ptr", "out_ptr"], num_warps=4)
    # Triton sizes LDS at launch: 4096 floats = 16 KiB, in shared_bytes (the code object's static LDS is 0).
    assert k.shared_bytes == 16_384
    occ = occupancy_of(k, num_warps=4)
    assert (occ.blocks, occ.limited_by) == (blocks, limited_by)
    assert occ.by_resource["LDS"] == occupancy(16_384, 32, 256, target).by_resource["LDS"]   # 4 / 9, as above
    assert register_waves_per_simd(k.registers, 0, k.resources["sgprs"], target) == _llvm_occupancy(k)


@needs_amd
@pytest.mark.parametrize("target", ["gfx950", "gfx942"])
def test_compiled_kernel_that_spills_into_agprs(target):
    """512 live floats per lane: the compiler fills the arch VGPRs and puts the rest in AGPRs."""
    from gluon_course.machine.compile import compile_kernel

    k = compile_kernel(occ_pressure, target, signature={"in_ptr": "*fp32", "out_ptr": "*fp32"},
                       constexprs={"N": 512 * 64 * 4, "layout": gl.BlockedLayout([512], [64], [4], [0])},
                       aligned=["in_ptr", "out_ptr"], num_warps=4)
    arch = int(re.search(r"; NumVgprs: (\d+)", k.amdgcn).group(1))
    agprs = int(re.search(r"; NumAgprs: (\d+)", k.amdgcn).group(1))
    total = int(re.search(r"; TotalNumVgprs: (\d+)", k.amdgcn).group(1))
    assert agprs > 0
    # The rule: arch VGPRs rounded up to 4, then the AGPRs; the code object's .vgpr_count is that total.
    assert total == -(-arch // 4) * 4 + agprs == k.resources["registers"]
    occ = occupancy_of(k, num_warps=4)
    waves = register_waves_per_simd(arch, agprs, k.resources["sgprs"], target)
    assert waves == _llvm_occupancy(k)
    assert occ.by_resource["VGPRs"] == waves * 4 // 4 and occ.limited_by == "VGPRs"
    assert occ.blocks == waves and occ.blocks >= 1


@pytest.mark.parametrize("target", ["sm_90", "sm_100"])
def test_compiled_copy_kernel_on_nvidia(target):
    from gluon_course.machine.compile import compile_kernel

    k = compile_kernel(occ_copy, target, signature={"in_ptr": "*fp32", "out_ptr": "*fp32", "numel": "i32"},
                       constexprs={"XBLOCK": 4 * 32 * 4, "layout": gl.BlockedLayout([4], [32], [4], [0])},
                       aligned=["in_ptr", "out_ptr", "numel"], num_warps=4)
    # At most 32 registers: ≥ 16 warps per sub-partition → ≥ 16 blocks; 1 KiB reserved → 228; threads: 16.
    assert 0 < k.registers <= 32 and k.shared_bytes == 0
    occ = occupancy_of(k, num_warps=4)
    assert (occ.blocks, occ.limited_by, occ.fraction) == (16, "threads", 1.0)
