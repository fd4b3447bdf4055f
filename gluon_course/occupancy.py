"""Occupancy: how many blocks of a kernel one multiprocessor can hold at once, and what stops it holding more.

A block (one program) stays on one SM from start to finish and keeps its shared memory, its registers and its
threads the whole time. An SM therefore holds as many blocks as the scarcest of four resources allows:

- **shared memory**: the SM's shared memory divided by what one block asks for (plus a small amount the
  driver reserves per block), rounded to the allocation unit;
- **registers**: the register file divided by what one block's warps take (registers are handed out per
  warp, in units of 256, from four sub-partitions of the file that each hold whole warps);
- **threads**: at most 2048 threads (64 warps) per SM on Hopper;
- **blocks**: a hard limit of 32 blocks per SM, however small they are.

The figures below are NVIDIA's published limits for compute capability 9.0 (the CUDA C++ Programming
Guide's table of technical specifications, and the occupancy calculator's allocation rules). Nothing here
needs a GPU: the inputs are what ``gluon_course.compile`` reads off a compiled kernel.

    >>> from gluon_course.occupancy import occupancy
    >>> occupancy(shared_bytes=16384, registers=32, threads=128)
    Occupancy(blocks=13, limited_by='shared memory', ...)
"""
from __future__ import annotations

from dataclasses import dataclass

KIB = 1024


@dataclass(frozen=True)
class SMLimits:
    """One streaming multiprocessor's resources, and the granularity in which they are handed out."""
    name: str
    shared_per_sm: int                # bytes of shared memory an SM can give to blocks (carve-out at its maximum)
    shared_per_block_max: int         # the most one block may ask for (opt-in; the default is 48 KiB)
    shared_reserved_per_block: int    # bytes the CUDA driver keeps for itself in every block
    shared_unit: int                  # shared memory is allocated in multiples of this
    registers_per_sm: int             # 32-bit registers in the register file
    register_unit: int                # registers are allocated per warp in multiples of this
    max_registers_per_thread: int
    registers_per_block_max: int      # what one block may take in all (checked as the hardware does, below)
    sub_partitions: int               # the register file is split into this many parts; a warp lives in one
    threads_per_sm: int
    blocks_per_sm: int
    warp_size: int = 32

    @property
    def warps_per_sm(self) -> int:
        return self.threads_per_sm // self.warp_size


# Compute capability 9.0 (H100, H200): 228 KiB of shared memory per SM, of which one block may use 227 KiB
# (the 1 KiB difference is the driver's per-block reservation), 64 Ki registers, 2048 threads, 32 blocks.
SM90 = SMLimits(name="sm_90", shared_per_sm=228 * KIB, shared_per_block_max=227 * KIB,
                shared_reserved_per_block=1 * KIB, shared_unit=128, registers_per_sm=65536, register_unit=256,
                max_registers_per_thread=255, registers_per_block_max=65536, sub_partitions=4,
                threads_per_sm=2048, blocks_per_sm=32)

LIMITS = {"sm_90": SM90}


@dataclass(frozen=True)
class Occupancy:
    """What fits on one SM, and which resource ran out first."""
    blocks: int                  # resident blocks per SM (0: the kernel cannot launch at all)
    limited_by: str              # "shared memory", "registers", "threads and registers", ..., or why it cannot launch
    by_resource: dict            # blocks each resource alone would allow
    threads_per_block: int
    limits: SMLimits

    @property
    def warps(self) -> int:
        """Resident warps per SM."""
        return self.blocks * (-(-self.threads_per_block // self.limits.warp_size))

    @property
    def fraction(self) -> float:
        """Resident warps over the SM's maximum (what profilers call "theoretical occupancy")."""
        return self.warps / self.limits.warps_per_sm

    def __str__(self) -> str:
        if self.blocks == 0:
            return f"0 blocks per SM: {self.limited_by}"
        return (f"{self.blocks} blocks per SM ({self.warps} warps, {100 * self.fraction:.0f}% occupancy), "
                f"limited by {self.limited_by}")


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def occupancy(shared_bytes: int, registers: int, threads: int, limits: SMLimits | str = SM90) -> Occupancy:
    """Blocks per SM for a kernel that uses ``shared_bytes`` of shared memory per block, ``registers`` per
    thread, and ``threads`` threads per block (``num_warps * 32`` for a Gluon kernel).

    ``limited_by`` names every resource that allows no more than ``blocks`` (in the order shared memory,
    registers, threads, blocks per SM)."""
    limits = LIMITS[limits] if isinstance(limits, str) else limits
    for name, value in (("shared_bytes", shared_bytes), ("registers", registers), ("threads", threads)):
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if threads == 0:
        raise ValueError("a block has at least one thread")
    warps = -(-threads // limits.warp_size)

    # Why it cannot launch at all: the launch itself fails ("too many resources requested" or "invalid argument").
    if threads > 1024:
        return Occupancy(0, f"{threads} threads per block exceed the 1024 a block may have", {}, threads, limits)
    if shared_bytes > limits.shared_per_block_max:
        return Occupancy(0, f"{shared_bytes} shared bytes exceed the {limits.shared_per_block_max} one block may use",
                         {}, threads, limits)
    if registers > limits.max_registers_per_thread:
        return Occupancy(0, f"{registers} registers per thread exceed the {limits.max_registers_per_thread} allowed",
                         {}, threads, limits)

    shared_per_block = _round_up(shared_bytes + limits.shared_reserved_per_block, limits.shared_unit)
    registers_per_warp = _round_up(max(registers, 1) * limits.warp_size, limits.register_unit)
    # The launch check counts a block's warps rounded up to a multiple of the sub-partitions.
    if _round_up(warps, limits.sub_partitions) * registers_per_warp > limits.registers_per_block_max:
        return Occupancy(0, f"{registers} registers × {threads} threads exceed the {limits.registers_per_block_max} "
                            "registers one block may use", {}, threads, limits)
    # Each sub-partition holds whole warps: how many fit in one, times the number of sub-partitions.
    warps_by_registers = (limits.registers_per_sm // limits.sub_partitions // registers_per_warp) * limits.sub_partitions
    by_resource = {
        "shared memory": limits.shared_per_sm // shared_per_block,
        "registers": warps_by_registers // warps,
        "threads": limits.warps_per_sm // warps,
        "blocks per SM": limits.blocks_per_sm,
    }
    blocks = min(by_resource.values())
    # Name every resource that allows no more than that (often two run out together, e.g. threads and registers).
    limited_by = " and ".join(name for name, n in by_resource.items() if n == blocks)
    if blocks == 0:
        limited_by = f"one block needs more {limited_by} than an SM has"
    return Occupancy(blocks, limited_by, by_resource, threads, limits)


def occupancy_of(compiled, num_warps: int, limits: SMLimits | str | None = None) -> Occupancy:
    """Occupancy of a kernel compiled by ``gluon_course.compile`` (its shared bytes and registers) launched with
    ``num_warps`` warps per block."""
    limits = limits or compiled.target
    if isinstance(limits, str) and limits not in LIMITS:
        raise ValueError(f"no SM limits for {limits!r} here; the module knows {', '.join(LIMITS)}")
    lim = LIMITS[limits] if isinstance(limits, str) else limits
    return occupancy(compiled.shared_bytes, compiled.registers, num_warps * lim.warp_size, lim)
