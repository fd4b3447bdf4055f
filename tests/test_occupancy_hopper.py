"""gluon_course.machine.occupancy: blocks per SM on sm_90, from shared memory, registers, threads and the block limit.

Every expected value is worked out by hand in the comment beside it, from the limits of compute capability 9.0:
228 KiB shared per SM (227 KiB per block, 1 KiB reserved per block, 128-byte units), 65536 registers in four
sub-partitions (per-warp units of 256), 2048 threads, 32 blocks."""
import types

import pytest

from gluon_course.machine.occupancy import SM90, occupancy, occupancy_of


def test_the_sm90_limits():
    assert SM90.shared_per_sm == 233_472 and SM90.shared_per_block_max == 232_448
    assert SM90.registers_per_sm == 65_536 and SM90.threads_per_sm == 2048 and SM90.blocks_per_sm == 32
    assert SM90.warps_per_sm == 64


def test_lesson04_tile_is_limited_by_shared_memory():
    # 16 KiB + 1 KiB reserved = 17408 bytes; 233472 // 17408 = 13. Registers: 32 × 32 = 1024 per warp,
    # 16 warps per sub-partition → 64 warps → 16 blocks of 4 warps. Threads: 2048 / 128 = 16.
    occ = occupancy(shared_bytes=16384, registers=32, threads=128)
    assert occ.blocks == 13
    assert occ.limited_by == "shared memory"
    assert occ.by_resource == {"shared memory": 13, "registers": 16, "threads": 16, "blocks per SM": 32}
    assert occ.warps == 52
    assert occ.fraction == pytest.approx(52 / 64)
    assert str(occ) == "13 blocks per SM (52 warps, 81% occupancy), limited by shared memory"


@pytest.mark.parametrize("shared, blocks", [
    (32_768, 6),       # 33792 bytes per block → 233472 // 33792 = 6
    (65_536, 3),       # 66560 → 3
    (102_400, 2),      # 103424 → 2
    (1, 202),          # 1 + 1024 rounds up to 1152 → 202 (then the 32-block limit applies)
    (232_448, 1),      # exactly the per-block maximum: 227 KiB + 1 KiB = the whole SM
])
def test_blocks_allowed_by_shared_memory(shared, blocks):
    assert occupancy(shared, registers=16, threads=32).by_resource["shared memory"] == blocks


def test_too_much_shared_memory_cannot_launch():
    occ = occupancy(232_449, registers=32, threads=128)
    assert occ.blocks == 0
    assert "232449 shared bytes exceed the 232448" in occ.limited_by
    assert str(occ).startswith("0 blocks per SM: ")


def test_tiny_blocks_hit_the_block_limit():
    # No shared memory to speak of, one warp of 16-register threads: everything allows more than 32.
    occ = occupancy(0, registers=16, threads=32)
    assert (occ.blocks, occ.limited_by) == (32, "blocks per SM")
    assert occ.fraction == 0.5


def test_ties_name_every_resource_that_runs_out():
    # 8 warps of 32-register threads: registers allow 64 warps = 8 blocks, threads allow 2048 / 256 = 8.
    occ = occupancy(16_384, registers=32, threads=256)
    assert (occ.blocks, occ.limited_by) == (8, "registers and threads")


def test_registers_are_allocated_per_warp_in_units_of_256():
    # 33 registers × 32 lanes = 1056 → 1280 per warp; 16384 // 1280 = 12 per sub-partition → 48 warps → 12 blocks.
    assert occupancy(0, registers=33, threads=128).by_resource["registers"] == 12
    # 128 registers → 4096 per warp; 4 per sub-partition → 16 warps → 2 blocks of 8 warps.
    occ = occupancy(0, registers=128, threads=256)
    assert (occ.blocks, occ.limited_by) == (2, "registers")


def test_registers_fill_each_sub_partition_separately():
    # 40 registers → 1280 per warp. A single pool would hold 65536 // 1280 = 51 warps (25 blocks of 2 warps);
    # four sub-partitions hold 4 × (16384 // 1280) = 48 warps, so 24 blocks.
    occ = occupancy(0, registers=40, threads=64)
    assert (occ.blocks, occ.limited_by) == (24, "registers")


def test_too_many_registers_for_one_block_cannot_launch():
    # 255 registers → 8192 per warp × 32 warps = 262144 > 65536.
    occ = occupancy(0, registers=255, threads=1024)
    assert occ.blocks == 0 and "registers one block may use" in occ.limited_by
    assert occupancy(0, registers=256, threads=32).blocks == 0


def test_a_full_block_of_threads():
    # 1024 threads = 32 warps; 2048 threads per SM → 2 blocks; 32 registers allow 64 warps = 2 blocks too.
    occ = occupancy(0, registers=32, threads=1024)
    assert (occ.blocks, occ.limited_by) == (2, "registers and threads")
    assert occupancy(0, registers=32, threads=1025).blocks == 0


def test_threads_round_up_to_whole_warps():
    # 100 threads occupy 4 warps: 2048 threads → 64 warps → 16 blocks.
    assert occupancy(0, registers=16, threads=100).by_resource["threads"] == 16


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        occupancy(-1, 32, 128)
    with pytest.raises(ValueError):
        occupancy(0, 32, 0)
    with pytest.raises(ValueError):
        occupancy(0.5, 32, 128)


def test_occupancy_of_a_compiled_kernel():
    compiled = types.SimpleNamespace(shared_bytes=32_768, registers=32, target="sm_90")
    occ = occupancy_of(compiled, num_warps=8)
    assert (occ.blocks, occ.limited_by, occ.threads_per_block) == (6, "shared memory", 256)
    with pytest.raises(ValueError, match="no SM/CU limits"):
        occupancy_of(types.SimpleNamespace(shared_bytes=0, registers=32, target="sm_75"), num_warps=4)
