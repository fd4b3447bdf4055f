"""Occupancy: how many blocks of a kernel one multiprocessor can hold at once, and what stops it holding more.

A block (one program: a *thread block* on NVIDIA, a *workgroup* on AMD) stays on one multiprocessor from
start to finish (an SM on NVIDIA, a CU on AMD) and keeps its shared memory, its registers and its threads
the whole time. A multiprocessor therefore holds as many blocks as the scarcest of its resources allows.

NVIDIA (sm_80, sm_86 Ampere, sm_89 Ada, sm_90 Hopper, sm_100 datacenter and sm_120 RTX Blackwell), per SM:

- **shared memory**: the SM's shared memory divided by what one block asks for (plus the 1 KiB the driver
  reserves per block), rounded to the allocation unit;
- **registers**: the register file divided by what one block's warps take (registers are handed out per
  warp, in units of 256, from four sub-partitions of the file that each hold whole warps);
- **threads**: at most 2048 threads (64 warps) per SM, 1536 (48 warps) on sm_86, sm_89 and sm_120;
- **blocks**: a hard limit of 32 blocks per SM (16 on sm_86, 24 on sm_89 and sm_120), however small they are.

AMD (gfx942 CDNA3, gfx950 CDNA4), per CU. A CU has 4 SIMDs; a wavefront is 64 lanes; the waves of a
workgroup are spread over the SIMDs, and each SIMD holds at most 8 waves:

- **LDS** (AMD's shared memory): the CU's LDS divided by what one workgroup asks for, rounded to the unit;
- **VGPRs**: each SIMD has 512 vector registers per lane, one file shared by the ordinary ("arch") VGPRs and
  the accumulation registers (AGPRs) that matrix instructions use. A wave takes its arch VGPRs rounded up
  to a multiple of 4, then its AGPRs after them, all rounded up to a multiple of 8;
- **SGPRs**: scalar registers, which only bite above 100 per wave;
- **waves**: 8 per SIMD, 32 per CU;
- **workgroups per CU**: a workgroup of more than one wave holds one of the CU's 16 barriers.

Every figure below says where it comes from. Nothing here needs a GPU: the inputs are what
``gluon_course.machine.compile`` reads off a compiled kernel.

    >>> from gluon_course.machine.occupancy import occupancy
    >>> occupancy(shared_bytes=16384, registers=32, threads=128)
    Occupancy(blocks=13, limited_by='shared memory', ...)
    >>> str(occupancy(shared_bytes=16384, registers=32, threads=256, limits="gfx942"))
    '4 workgroups per CU (16 waves, 4 per SIMD, 50% occupancy), limited by LDS'
"""
from __future__ import annotations

import re
from dataclasses import dataclass

KIB = 1024

# ---------------------------------------------------------------------------------------------------------
# Where the figures come from
# ---------------------------------------------------------------------------------------------------------
NVIDIA_SOURCE = (
    "CUDA C++ Programming Guide (legacy edition, CUDA 13.0), §20.2 Table 27 'Technical Specifications per "
    "Compute Capability' (columns 8.0, 8.6, 8.9, 9.0, 10.0 and 12.0) and §20.8.3 / §20.9.3 'Shared Memory' (1 KB "
    "reserved per block); allocation units from cuda_occupancy.h, CUDA's occupancy-calculator header, which ships in "
    "the Triton wheel (triton/backends/nvidia/include/cuda_occupancy.h)")
AMD_SOURCE = (
    "LLVM AMDGPU backend (llvm/lib/Target/AMDGPU/Utils/AMDGPUBaseInfo.cpp: getTotalNumVGPRs, "
    "getVGPRAllocGranule, getMaxWavesPerEU, getNumWavesPerEUWithNumVGPRs, getOccupancyWithNumSGPRs, "
    "getMaxWorkGroupsPerCU; LLVM AMDGPUUsage: COMPUTE_PGM_RSRC2.LDS_SIZE granularity); ROCm 'AMD GPU "
    "specifications' table (LDS per CU, VGPR file); Triton's AMD TargetInfo::getSharedMemorySize")


@dataclass(frozen=True)
class SMLimits:
    """One NVIDIA streaming multiprocessor's resources, and the granularity in which they are handed out."""
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
    threads_per_block_max: int = 1024
    warp_size: int = 32

    # How this vendor names things (used when printing an Occupancy).
    vendor = "NVIDIA"
    unit = "SM"
    block = "block"
    warp = "warp"
    shared = "shared memory"
    source = NVIDIA_SOURCE

    @property
    def warps_per_sm(self) -> int:
        return self.threads_per_sm // self.warp_size

    @property
    def schedulers(self) -> int:
        """Warp schedulers per SM: one per register sub-partition."""
        return self.sub_partitions


# Compute capability 9.0 (H100, H200). Programming Guide Table 27, column 9.0: 228 KB of shared memory per
# SM and 227 KB per block (§20.8.3: the 1 KB difference is reserved for system use, i.e. per block), 64 K
# 32-bit registers per SM and per block, 255 per thread, 2048 threads (64 warps), 32 blocks per SM.
# cuda_occupancy.h: shared memory in units of 128 bytes (cudaOccSMemAllocationGranularity, CC 8-12),
# registers in units of 256 per warp (cudaOccRegAllocationGranularity), 4 sub-partitions
# (cudaOccSubPartitionsPerMultiprocessor).
SM90 = SMLimits(name="sm_90", shared_per_sm=228 * KIB, shared_per_block_max=227 * KIB,
                shared_reserved_per_block=1 * KIB, shared_unit=128, registers_per_sm=65536, register_unit=256,
                max_registers_per_thread=255, registers_per_block_max=65536, sub_partitions=4,
                threads_per_sm=2048, blocks_per_sm=32)

# Compute capability 10.0 (B200, GB200: datacenter Blackwell). Programming Guide Table 27, column 10.0: the
# same figures as 9.0 -- 228 KB shared memory per SM, 227 KB per block, 1 KB reserved per block (§20.9.3,
# carve-outs 0, 8, 16, 32, 64, 100, 132, 164, 196 or 228 KB), 64 K registers per SM and per block, 255 per
# thread, 64 warps = 2048 threads, 32 blocks per SM. cuda_occupancy.h, computeMajor 10: 128-byte shared
# memory unit, 256-register unit, 4 sub-partitions, 32 blocks (cudaOccMaxBlocksPerMultiprocessor, minor 0).
# Not modelled: Blackwell's tensor memory (TMEM, allocated per block by tcgen05 kernels) and the per-SM
# barrier count; neither is reported by the compile. (cuda_occupancy.h says 256 registers per thread where
# the table says 255; we follow the table, as for sm_90.)
SM100 = SMLimits(name="sm_100", shared_per_sm=228 * KIB, shared_per_block_max=227 * KIB,
                 shared_reserved_per_block=1 * KIB, shared_unit=128, registers_per_sm=65536, register_unit=256,
                 max_registers_per_thread=255, registers_per_block_max=65536, sub_partitions=4,
                 threads_per_sm=2048, blocks_per_sm=32)


# The GPUs before Hopper, and Blackwell's RTX 50 (columns 8.0, 8.6, 8.9 and 12.0 of Table 27). Every one has the same
# register side as sm_90: 64 K 32-bit registers per SM and per block, 255 per thread, allocated per warp in units of
# 256 from 4 sub-partitions (cuda_occupancy.h: cudaOccRegAllocationGranularity, cudaOccSubPartitionsPerMultiprocessor
# for computeMajor 8 and 12), and 128-byte shared-memory units. What differs is shared memory and how many threads and
# blocks an SM holds:
# - 8.0 (A100): 164 KB of shared memory per SM, 163 KB per block, 2048 threads (64 warps), 32 blocks;
# - 8.6 (RTX 30, A10, A40): 100 KB per SM, 99 KB per block, 1536 threads (48 warps), 16 blocks;
# - 8.9 (RTX 40, L4, L40): 100 KB, 99 KB, 1536 threads, 24 blocks;
# - 12.0 (RTX 50): 100 KB, 99 KB, 1536 threads, 24 blocks.
# The largest carve-outs cuda_occupancy.h lists (cudaOccAlignUpShmemSizeVoltaPlus) agree: 164 KiB for computeMajor 8
# minor 0, 100 KiB for the other minors of 8 and for 12; its cudaOccMaxBlocksPerMultiprocessor gives the blocks (32
# for 8.0, 24 for 8.9, 16 for the other minors of 8, 24 for 12). Every one reserves 1 KB per block, as sm_90 does
# (cudaOccSMemPerBlock adds reservedSharedMemPerBlock from computeMajor 8 on). Triton itself keeps no such table: a
# launch asks the driver for the GPU's opt-in maximum per block (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
# in triton/backends/nvidia/driver.c) and refuses a kernel that asks for more (OutOfResources).
_PRE_HOPPER_REGISTERS = dict(shared_reserved_per_block=1 * KIB, shared_unit=128, registers_per_sm=65536,
                             register_unit=256, max_registers_per_thread=255, registers_per_block_max=65536,
                             sub_partitions=4)
SM80 = SMLimits(name="sm_80", shared_per_sm=164 * KIB, shared_per_block_max=163 * KIB, threads_per_sm=2048,
                blocks_per_sm=32, **_PRE_HOPPER_REGISTERS)
SM86 = SMLimits(name="sm_86", shared_per_sm=100 * KIB, shared_per_block_max=99 * KIB, threads_per_sm=1536,
                blocks_per_sm=16, **_PRE_HOPPER_REGISTERS)
SM89 = SMLimits(name="sm_89", shared_per_sm=100 * KIB, shared_per_block_max=99 * KIB, threads_per_sm=1536,
                blocks_per_sm=24, **_PRE_HOPPER_REGISTERS)
SM120 = SMLimits(name="sm_120", shared_per_sm=100 * KIB, shared_per_block_max=99 * KIB, threads_per_sm=1536,
                 blocks_per_sm=24, **_PRE_HOPPER_REGISTERS)


@dataclass(frozen=True)
class CULimits:
    """One AMD compute unit's resources (CDNA: four SIMDs, wave64), and how they are handed out."""
    name: str
    lds_per_cu: int                   # bytes of LDS in the CU, shared by the workgroups resident on it
    lds_per_workgroup_max: int        # the most one workgroup may allocate
    lds_unit: int                     # LDS is allocated in multiples of this many bytes
    simds_per_cu: int = 4
    vgprs_per_simd: int = 512         # registers per lane in one SIMD's unified file (arch VGPRs + AGPRs)
    vgpr_unit: int = 8                # a wave's VGPR total is allocated in multiples of this
    agpr_offset_unit: int = 4         # AGPRs start after the arch VGPRs rounded up to a multiple of this
    waves_per_simd: int = 8           # most waves one SIMD holds, however few registers they use
    barriers_per_cu: int = 16         # a workgroup of two or more waves holds one barrier while resident
    threads_per_block_max: int = 1024
    warp_size: int = 64               # lanes per wavefront

    vendor = "AMD"
    unit = "CU"
    block = "workgroup"
    warp = "wave"
    shared = "LDS"
    source = AMD_SOURCE

    @property
    def warps_per_sm(self) -> int:
        """Waves per CU at most (named like the NVIDIA field so that Occupancy treats both alike)."""
        return self.simds_per_cu * self.waves_per_simd

    @property
    def schedulers(self) -> int:
        return self.simds_per_cu

    @property
    def registers_per_cu(self) -> int:
        """32-bit vector registers in the whole CU: 512 per lane x 64 lanes x 4 SIMDs (512 KiB)."""
        return self.vgprs_per_simd * self.warp_size * self.simds_per_cu


# Both CDNA targets share the register side. LLVM's AMDGPUBaseInfo.cpp, for every target with the GFX90A
# instructions (gfx90a, gfx942, gfx950): getTotalNumVGPRs = 512 and getAddressableNumVGPRs = 512 (one
# unified file; 256 addressable of each kind), getVGPRAllocGranule = 8, getMaxWavesPerEU = 8 (an EU is a
# SIMD), getEUsPerCU = 4, getMaxFlatWorkGroupSize = 1024, and getTotalNumVGPRs(has90AInsts, AGPRs, VGPRs)
# = alignTo(VGPRs, 4) + AGPRs when AGPRs are used (the kernel descriptor's accum_offset, in units of 4).
# getMaxWorkGroupsPerCU: a workgroup of two or more waves needs one of 16 barriers (single-wave workgroups
# need none). ROCm's GPU specifications table lists a 512 KiB VGPR file per CU, which is 512 x 64 x 4 x 4 B.
#
# gfx942 (MI300X, MI300A, MI325X): 64 KiB of LDS per CU (ROCm GPU specifications table, 'LDS (KiB)' = 64;
# Triton's TargetInfo::getSharedMemorySize = 64 KiB), all of it addressable by one workgroup. LDS is granted
# in 128-dword (512-byte) blocks (LLVM AMDGPUUsage, COMPUTE_PGM_RSRC2.LDS_SIZE, GFX7-GFX11).
GFX942 = CULimits(name="gfx942", lds_per_cu=64 * KIB, lds_per_workgroup_max=64 * KIB, lds_unit=512)

# gfx950 (MI350X, MI355X): 160 KiB of LDS per CU (ROCm GPU specifications table, 'LDS (KiB)' = 160; Triton's
# getSharedMemorySize = 160 KiB for CDNA4), all addressable by one workgroup (LLVM's gfx950 processor has
# FeatureAddressableLocalMemorySize163840). LDS is granted in 320-dword (1280-byte) blocks (LLVM AMDGPUUsage,
# COMPUTE_PGM_RSRC2.LDS_SIZE, GFX950; llvm-project PR #208046).
GFX950 = CULimits(name="gfx950", lds_per_cu=160 * KIB, lds_per_workgroup_max=160 * KIB, lds_unit=1280)

LIMITS: dict[str, SMLimits | CULimits] = {"sm_80": SM80, "sm_86": SM86, "sm_89": SM89, "sm_90": SM90, "sm_100": SM100,
                                           "sm_120": SM120, "gfx950": GFX950, "gfx942": GFX942}


@dataclass(frozen=True)
class Occupancy:
    """What fits on one SM (NVIDIA) or CU (AMD), and which resource ran out first."""
    blocks: int                  # resident blocks (workgroups) per SM (CU); 0: the kernel cannot launch at all
    limited_by: str              # "shared memory", "registers", "VGPRs and waves", ..., or why it cannot launch
    by_resource: dict            # blocks (workgroups) each resource alone would allow
    threads_per_block: int
    limits: SMLimits | CULimits

    @property
    def warps(self) -> int:
        """Resident warps per SM (waves per CU on AMD)."""
        return self.blocks * (-(-self.threads_per_block // self.limits.warp_size))

    @property
    def waves_per_simd(self) -> float:
        """Resident waves per SIMD (AMD), or warps per SM sub-partition (NVIDIA): the waves one scheduler
        can pick from. An average: a workgroup's waves are spread over the SIMDs."""
        return self.warps / self.limits.schedulers

    @property
    def fraction(self) -> float:
        """Resident warps over the SM's maximum (what profilers call "theoretical occupancy")."""
        return self.warps / self.limits.warps_per_sm

    def __str__(self) -> str:
        lim = self.limits
        if self.blocks == 0:
            return f"0 {lim.block}s per {lim.unit}: {self.limited_by}"
        per_simd = f", {self.waves_per_simd:g} per SIMD" if isinstance(lim, CULimits) else ""
        return (f"{self.blocks} {lim.block}s per {lim.unit} ({self.warps} {lim.warp}s{per_simd}, "
                f"{100 * self.fraction:.0f}% occupancy), limited by {self.limited_by}")


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def _lookup(limits: SMLimits | CULimits | str) -> SMLimits | CULimits:
    if isinstance(limits, str):
        if limits not in LIMITS:
            raise ValueError(f"no SM/CU limits for {limits!r} here; the module knows {', '.join(LIMITS)}")
        return LIMITS[limits]
    return limits


def _check(**values) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


def _verdict(by_resource: dict, threads: int, limits) -> Occupancy:
    blocks = min(by_resource.values())
    # Name every resource that allows no more than that (often two run out together, e.g. threads and registers).
    limited_by = " and ".join(name for name, n in by_resource.items() if n == blocks)
    if blocks == 0:
        limited_by = f"one {limits.block} needs more {limited_by} than {'an' if limits.unit == 'SM' else 'a'} " \
                     f"{limits.unit} has"
    return Occupancy(blocks, limited_by, by_resource, threads, limits)


def occupancy(shared_bytes: int, registers: int, threads: int, limits: SMLimits | CULimits | str = SM90, *,
              agprs: int = 0, sgprs: int = 0) -> Occupancy:
    """Blocks per SM (workgroups per CU) for a kernel that uses ``shared_bytes`` of shared memory (LDS) per
    block, ``registers`` per thread, and ``threads`` threads per block (``num_warps * 32`` for a Gluon kernel
    on NVIDIA, ``num_warps * 64`` on AMD).

    On AMD, ``registers`` are the arch VGPRs and ``agprs`` the accumulation registers of one lane (the two
    share one file), and ``sgprs`` the scalar registers of one wave; NVIDIA has no such split.

    ``limited_by`` names every resource that allows no more than ``blocks``."""
    limits = _lookup(limits)
    _check(shared_bytes=shared_bytes, registers=registers, threads=threads, agprs=agprs, sgprs=sgprs)
    if threads == 0:
        raise ValueError("a block has at least one thread")
    if isinstance(limits, CULimits):
        return _amd_occupancy(shared_bytes, registers, agprs, sgprs, threads, limits)
    if agprs or sgprs:
        raise ValueError(f"agprs and sgprs are AMD registers; {limits.name} has none")
    return _nvidia_occupancy(shared_bytes, registers, threads, limits)


def _nvidia_occupancy(shared_bytes: int, registers: int, threads: int, limits: SMLimits) -> Occupancy:
    warps = -(-threads // limits.warp_size)

    # Why it cannot launch at all: the launch itself fails ("too many resources requested" or "invalid argument").
    if threads > limits.threads_per_block_max:
        return Occupancy(0, f"{threads} threads per block exceed the {limits.threads_per_block_max} a block may have",
                         {}, threads, limits)
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
    return _verdict(by_resource, threads, limits)


def vgprs_allocated(registers: int, agprs: int = 0, limits: CULimits = GFX942) -> int:
    """The vector registers per lane one wave really takes from a SIMD's file: the arch VGPRs rounded up to a
    multiple of 4 (where the AGPRs start), then the AGPRs, the whole rounded up to a multiple of 8. This is
    what the AMDGCN listing prints as ``TotalNumVgprs`` (before the last rounding)."""
    total = _round_up(registers, limits.agpr_offset_unit) + agprs if agprs else registers
    return _round_up(max(total, 1), limits.vgpr_unit)


def sgpr_waves_per_simd(sgprs: int) -> int:
    """Waves per SIMD the scalar registers allow (LLVM's getOccupancyWithNumSGPRs for GFX8-GFX9, which
    includes CDNA3 and CDNA4: 800 SGPRs per SIMD). Above 8 it never matters: a SIMD holds 8 waves."""
    return 10 if sgprs <= 80 else 9 if sgprs <= 88 else 8 if sgprs <= 100 else 7


def register_waves_per_simd(registers: int, agprs: int = 0, sgprs: int = 0, limits: CULimits | str = GFX942) -> int:
    """Waves per SIMD that the registers alone allow, capped at the SIMD's 8: the number the AMDGCN listing
    prints as ``; Occupancy:`` (the compiler cannot see LDS that Triton sizes at launch)."""
    limits = _lookup(limits)
    by_vgprs = limits.vgprs_per_simd // vgprs_allocated(registers, agprs, limits)
    return min(by_vgprs, sgpr_waves_per_simd(sgprs), limits.waves_per_simd)


def _amd_occupancy(lds_bytes: int, registers: int, agprs: int, sgprs: int, threads: int,
                   limits: CULimits) -> Occupancy:
    waves = -(-threads // limits.warp_size)       # waves per workgroup

    # Why it cannot launch at all (the runtime refuses the dispatch).
    if threads > limits.threads_per_block_max:
        return Occupancy(0, f"{threads} threads per workgroup exceed the {limits.threads_per_block_max} "
                            "a workgroup may have", {}, threads, limits)
    if lds_bytes > limits.lds_per_workgroup_max:
        return Occupancy(0, f"{lds_bytes} LDS bytes exceed the {limits.lds_per_workgroup_max} one workgroup may use",
                         {}, threads, limits)
    vgprs = vgprs_allocated(registers, agprs, limits)
    if vgprs > limits.vgprs_per_simd:
        return Occupancy(0, f"{registers} VGPRs + {agprs} AGPRs take {vgprs} registers per lane, more than the "
                            f"{limits.vgprs_per_simd} a SIMD has", {}, threads, limits)

    # Per SIMD, then times the 4 SIMDs: the waves of a workgroup are dealt out over the SIMDs, so the CU holds
    # (waves one SIMD allows) x 4 waves in all, in whole workgroups. (Exact when a workgroup's waves are a
    # multiple of 4, or divide 4; for other sizes the real placement can fit a little less.)
    simds = limits.simds_per_cu
    by_resource = {}
    if lds_bytes:                                  # a kernel without LDS is not limited by it
        by_resource["LDS"] = limits.lds_per_cu // _round_up(lds_bytes, limits.lds_unit)
    by_resource["VGPRs"] = (limits.vgprs_per_simd // vgprs) * simds // waves
    if sgpr_waves_per_simd(sgprs) < limits.waves_per_simd:   # up to 100 SGPRs they never limit
        by_resource["SGPRs"] = sgpr_waves_per_simd(sgprs) * simds // waves
    by_resource["waves"] = limits.waves_per_simd * simds // waves
    if waves > 1:                                  # single-wave workgroups need no barrier
        by_resource["workgroups per CU"] = limits.barriers_per_cu
    return _verdict(by_resource, threads, limits)


def _amd_registers(compiled) -> tuple[int, int, int]:
    """(arch VGPRs, AGPRs, SGPRs) of an AMD compile. The listing's own comments (``; NumVgprs:``,
    ``; NumAgprs:``) give the split; ``resources["registers"]`` is the code object's ``.vgpr_count``, which
    on CDNA is already the unified total (arch rounded to 4, plus AGPRs)."""
    resources = getattr(compiled, "resources", None) or {}
    sgprs = resources.get("sgprs", 0)
    text = getattr(compiled, "amdgcn", "") or ""
    arch = re.search(r"^\s*; NumVgprs: (\d+)", text, re.M)
    acc = re.search(r"^\s*; NumAgprs: (\d+)", text, re.M)
    if arch and acc:
        return int(arch.group(1)), int(acc.group(1)), sgprs
    total = resources.get("registers", compiled.registers)
    agprs = resources.get("agprs", 0)
    return (total - agprs if agprs else total), agprs, sgprs


def occupancy_of(compiled, num_warps: int, limits: SMLimits | CULimits | str | None = None) -> Occupancy:
    """Occupancy of a kernel compiled by ``gluon_course.machine.compile_kernel`` launched with ``num_warps``
    warps (waves) per block; the model is picked by ``compiled.target`` (an NVIDIA sm_*, gfx950, gfx942)."""
    lim = _lookup(limits or compiled.target)
    threads = num_warps * lim.warp_size
    if isinstance(lim, SMLimits):
        return occupancy(compiled.shared_bytes, compiled.registers, threads, lim)
    registers, agprs, sgprs = _amd_registers(compiled)
    # Triton sizes a kernel's LDS at launch (dynamic LDS: ``shared_bytes``); any static LDS is in lds_bytes.
    lds = max(compiled.shared_bytes, (getattr(compiled, "resources", None) or {}).get("lds_bytes", 0))
    return occupancy(lds, registers, threads, lim, agprs=agprs, sgprs=sgprs)


def limits_table() -> list[dict]:
    """One row per target, for a notebook to print (``pandas.DataFrame(limits_table())`` or
    ``print(format_limits_table())``). Registers are 32-bit registers per SM / CU."""
    rows = []
    for name, lim in LIMITS.items():
        if isinstance(lim, SMLimits):
            rows.append({"target": name, "unit": "SM", "shared per unit": lim.shared_per_sm,
                         "shared per block max": lim.shared_per_block_max, "registers": lim.registers_per_sm,
                         "registers per thread max": lim.max_registers_per_thread,
                         "threads": lim.threads_per_sm, "blocks": lim.blocks_per_sm, "source": lim.source})
        else:
            rows.append({"target": name, "unit": "CU", "shared per unit": lim.lds_per_cu,
                         "shared per block max": lim.lds_per_workgroup_max, "registers": lim.registers_per_cu,
                         "registers per thread max": lim.vgprs_per_simd,
                         "threads": lim.warps_per_sm * lim.warp_size, "blocks": lim.barriers_per_cu,
                         "source": lim.source})
    return rows


def format_limits_table() -> str:
    """The table as text, figures in KiB where they are bytes, and the sources underneath."""
    head = ("target", "unit", "shared/LDS", "per block", "registers", "per thread", "threads", "blocks")
    lines = ["  ".join(f"{h:>10}" for h in head)]
    for r in limits_table():
        cells = (r["target"], r["unit"], f"{r['shared per unit'] // KIB} KiB", f"{r['shared per block max'] // KIB} KiB",
                 r["registers"], r["registers per thread max"], r["threads"], r["blocks"])
        lines.append("  ".join(f"{c:>10}" for c in cells))
    lines.append("")
    lines.append("AMD: 'per thread' is the unified VGPR file per lane (arch VGPRs + AGPRs, at most 256 of each); "
                 "'blocks' is workgroups of two or more waves (one barrier each).")
    for vendor, source in (("NVIDIA", NVIDIA_SOURCE), ("AMD", AMD_SOURCE)):
        lines.append(f"{vendor}: {source}")
    return "\n".join(lines)
