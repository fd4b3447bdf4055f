"""Lesson 32 · The shapes a model runs.

A transformer calls its linear layers as A·Wᵀ: A is the batch's activations (M × K, M from 1 token to thousands), W
the layer's weights (N × K, N and K in the thousands). Lesson 19's one tile, 128 × 256, fits the large shapes; at
small M it covers the few rows of A with mostly empty tiles and leaves most SMs idle. This lesson's kernel is lesson
19's with two more ways to cut the work, chosen per shape: **split-K**, where several programs share one tile of C,
each summing a slice of K and the last to finish adding the slices in a fixed order (so the result is the same bits
on every run), and **swap-AB**, which computes Cᵀ = W·Aᵀ so that N, not the small M, fills the 64-row side of wgmma.
A third, a tile of 192 columns held as two strips (``BLOCK_N2``), fills one wave where no power of two does.

Which way a shape gets is the dispatcher's choice (``gluon_course.nvidia.dispatch``): a table tuned on the GPU for
the shapes it lists, and for any other shape the candidate of the tuning space that a cost model, fitted on the GPU's
timings, ranks first. The model counts each configuration's work in rounds of a persistent grid
(``persistent_grid``). Plans kept as lesson 31 keeps them (the toolkit's ``gluon_course.nvidia.launch``: signature,
descriptors by address, CUtensorMaps encoded once) keep the choice.
"""
from collections import OrderedDict

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import CachePolicy, FractionalEvictionPolicy
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from gluon_course.nvidia import launch as kept
from gluon_course.nvidia.dispatch import DispatchTable, table_for, w_first
from gluon_course.nvidia.hopper import require_hopper, require_wgmma_tile, tma_descriptor
from gluon_course.nvidia.tiles import grouped_tile
from gluon_course.validate import require_matmul_args

GL_DTYPES = {torch.bfloat16: gl.bfloat16, torch.float16: gl.float16}
# Lesson 19's configuration: what a shape gets when neither the table nor the rule says otherwise.
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "STAGES": 3, "GROUP_M": 8,
          "LOAD_REGS": 40, "SPLIT_K": 1, "SWAP_AB": False, "BLOCK_N2": 0, "W_FIRST": None}
# W's copies with L2's evict_first priority (W_FIRST = 1): the lines they bring are the first a later allocation in L2
# evicts, so the kernel's own W lines make room for what it loads next instead of lines that someone else left dirty
# (after do_bench's L2 overwrite, all of L2), which would have to be written back to HBM first.
# W_FIRST = None: by the dispatch module's rule (1 for M ≤ 512).
W_STREAMED = CachePolicy(l2=FractionalEvictionPolicy("evict_first", 1.0))


def wgmma_layout(num_warps: int, BLOCK_N: int):
    """wgmma's accumulator (version 3): warps stacked along M, 16 rows each; one instruction spans BLOCK_N."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_N, 16])


@gluon.jit
def work_unit(unit, num_pid_m, num_pid_n, k_tiles, SPLIT_K, GROUP_M: gl.constexpr):
    """Unit ``unit`` of the persistent loop: its tile (number, and coordinates in lesson 17's grouped order) and its
    slice of the K steps. A tile has SPLIT_K consecutive units; slice ``s`` holds steps [s·k_tiles // SPLIT_K,
    (s+1)·k_tiles // SPLIT_K), never empty when SPLIT_K ≤ k_tiles (the launcher's rule)."""
    tile = unit // SPLIT_K
    split = unit % SPLIT_K
    pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
    k_first = split * k_tiles // SPLIT_K
    k_last = (split + 1) * k_tiles // SPLIT_K
    return tile, split, pid_m, pid_n, k_first, k_last


@gluon.jit
def load_partition(a_desc, b_desc, b2_desc, a_ring, b_ring, b2_ring, ready, empty, M, N, K, SPLIT_K,
                   STAGES: gl.constexpr, GROUP_M: gl.constexpr, A_KM: gl.constexpr, B_KN: gl.constexpr,
                   BLOCK_N2: gl.constexpr, A_POLICY: gl.constexpr, B_POLICY: gl.constexpr):
    """The producer (one warp): lesson 19's, walking work units instead of tiles. A's tile is [BLOCK_M, BLOCK_K]
    of an M × K matrix (``A_KM``) or [BLOCK_K, BLOCK_M] of a K × M one; B's [BLOCK_K, BLOCK_N] of a K × N matrix
    (``B_KN``) or [BLOCK_N, BLOCK_K] of an N × K one; a wide tile (``BLOCK_N2`` > 0) adds B's next BLOCK_N2
    columns through ``b2_desc``."""
    BLOCK_M: gl.constexpr = a_desc.block_shape[0] if A_KM else a_desc.block_shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1] if A_KM else a_desc.block_shape[0]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1] if B_KN else b_desc.block_shape[0]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N + BLOCK_N2)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for unit in range(gl.program_id(0), num_pid_m * num_pid_n * SPLIT_K, gl.num_programs(0)):
        tile, split, pid_m, pid_n, k_first, k_last = work_unit(unit, num_pid_m, num_pid_n, k_tiles, SPLIT_K, GROUP_M)
        for k in range(k_first, k_last):
            load_step(a_desc, b_desc, b2_desc, a_ring, b_ring, b2_ring, ready, empty, step, pid_m, pid_n, k, STAGES,
                      A_KM, B_KN, BLOCK_N2, A_POLICY, B_POLICY)
            step += 1


@gluon.jit
def load_step(a_desc, b_desc, b2_desc, a_ring, b_ring, b2_ring, ready, empty, step, pid_m, pid_n, k,
              STAGES: gl.constexpr, A_KM: gl.constexpr, B_KN: gl.constexpr, BLOCK_N2: gl.constexpr,
              A_POLICY: gl.constexpr, B_POLICY: gl.constexpr):
    """One K step of the producer: wait for the ring's slot to be free, announce its bytes, load A's and B's tiles
    (B's two strips for a wide tile: columns [n, n + BLOCK_N) and [n + BLOCK_N, n + BLOCK_N + BLOCK_N2)), A's copies
    with L2 priority ``A_POLICY`` and B's with ``B_POLICY`` (a CachePolicy, or None for none)."""
    BLOCK_M: gl.constexpr = a_desc.block_shape[0] if A_KM else a_desc.block_shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1] if A_KM else a_desc.block_shape[0]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1] if B_KN else b_desc.block_shape[0]
    n = pid_n * (BLOCK_N + BLOCK_N2)
    slot = step % STAGES
    mbarrier.wait(empty.index(slot), ((step // STAGES) & 1) ^ 1)
    if BLOCK_N2 > 0:
        mbarrier.expect(ready.index(slot),
                        a_desc.block_type.nbytes + b_desc.block_type.nbytes + b2_desc.block_type.nbytes)
    else:
        mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
    if A_KM:
        tma.async_load(a_desc, [pid_m * BLOCK_M, k * BLOCK_K], ready.index(slot), a_ring.index(slot),
                       cache_policy=A_POLICY)
    else:
        tma.async_load(a_desc, [k * BLOCK_K, pid_m * BLOCK_M], ready.index(slot), a_ring.index(slot),
                       cache_policy=A_POLICY)
    if B_KN:
        tma.async_load(b_desc, [k * BLOCK_K, n], ready.index(slot), b_ring.index(slot), cache_policy=B_POLICY)
        if BLOCK_N2 > 0:
            tma.async_load(b2_desc, [k * BLOCK_K, n + BLOCK_N], ready.index(slot), b2_ring.index(slot),
                           cache_policy=B_POLICY)
    else:
        tma.async_load(b_desc, [n, k * BLOCK_K], ready.index(slot), b_ring.index(slot), cache_policy=B_POLICY)
        if BLOCK_N2 > 0:
            tma.async_load(b2_desc, [n + BLOCK_N, k * BLOCK_K], ready.index(slot), b2_ring.index(slot),
                           cache_policy=B_POLICY)


@gluon.jit
def store_tile(c_desc, c_smem, values, off_m, off_n, SWAP_AB: gl.constexpr):
    """Lesson 19's epilogue: C's tile through shared memory and a TMA store (the caller has waited for the previous
    tile's stores), at the kernel's offsets (off_m, off_n). With ``SWAP_AB`` the kernel has computed a tile of Cᵀ
    (rows along C's N, columns along C's M): it is written transposed, at C's coordinates."""
    ### BEGIN SOLUTION: write the tile (transposed for swap-AB), fence, and store it at C's coordinates
    if SWAP_AB:
        c_smem.store(gl.permute(values, (1, 0)).to(c_desc.dtype))
        fence_async_shared()
        tma.async_store(c_desc, [off_n, off_m], c_smem)
    else:
        c_smem.store(values.to(c_desc.dtype))
        fence_async_shared()
        tma.async_store(c_desc, [off_m, off_n], c_smem)
    ### END SOLUTION


@gluon.jit
def store_strips(c_desc, c_smem, c2_desc, c2_smem, acc, acc2, pid_m, pid_n, BLOCK_M: gl.constexpr,
                 BLOCK_N: gl.constexpr, BLOCK_N2: gl.constexpr, SWAP_AB: gl.constexpr):
    """A whole tile to C: the previous tile's stores waited for (its buffers are about to be rewritten), then the
    first strip, and a wide tile's second strip BLOCK_N columns to its right."""
    tma.store_wait(0)
    store_tile(c_desc, c_smem, acc, pid_m * BLOCK_M, pid_n * (BLOCK_N + BLOCK_N2), SWAP_AB)
    if BLOCK_N2 > 0:
        store_tile(c2_desc, c2_smem, acc2, pid_m * BLOCK_M, pid_n * (BLOCK_N + BLOCK_N2) + BLOCK_N, SWAP_AB)


@gluon.jit
def unit_products(a_ring, b_ring, b2_ring, ready, empty, step, k_first, k_last, STAGES: gl.constexpr,
                  acc_layout: gl.constexpr, acc2_layout: gl.constexpr, A_KM: gl.constexpr, B_KN: gl.constexpr,
                  BLOCK_N2: gl.constexpr):
    """One work unit's products, lesson 19's K loop over steps [k_first, k_last): each slot waited for, multiplied
    with one step's wgmmas in flight, and released once the next step's have started (the last after the final
    wait). A wide tile multiplies A's tile by both of B's strips, one wgmma each (two per step in flight). Returns
    the fp32 sums (the second strip's is the first's when there is none) and the ring's step count after the unit."""
    BLOCK_M: gl.constexpr = a_ring.shape[1] if A_KM else a_ring.shape[2]
    BLOCK_N: gl.constexpr = b_ring.shape[2] if B_KN else b_ring.shape[1]
    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    acc2 = acc
    if BLOCK_N2 > 0:
        acc2 = gl.zeros([BLOCK_M, BLOCK_N2], gl.float32, layout=acc2_layout)
    for k in range(k_first, k_last):
        slot = step % STAGES
        mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
        a = a_ring.index(slot) if A_KM else a_ring.index(slot).permute((1, 0))
        b = b_ring.index(slot) if B_KN else b_ring.index(slot).permute((1, 0))
        acc = warpgroup_mma(a, b, acc, is_async=True)
        if BLOCK_N2 > 0:
            b2 = b2_ring.index(slot) if B_KN else b2_ring.index(slot).permute((1, 0))
            acc2 = warpgroup_mma(a, b2, acc2, is_async=True)
            acc, acc2, _, _, _ = warpgroup_mma_wait(2, deps=(acc, acc2, a, b, b2))
        else:
            acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a, b))
        mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES), pred=k > k_first)
        step += 1
    if BLOCK_N2 > 0:
        acc, acc2 = warpgroup_mma_wait(0, deps=(acc, acc2))
    else:
        acc = warpgroup_mma_wait(0, deps=(acc,))
    mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES))
    return acc, acc2, step


@gluon.jit
def tile_offsets(BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, acc_layout: gl.constexpr):
    """Where each element of a BLOCK_M × BLOCK_N accumulator lies in a row-major fp32 tile of the scratch."""
    rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    return rows[:, None] * BLOCK_N + cols[None, :]


@gluon.jit
def mma_partition(c_desc, c2_desc, a_ring, b_ring, b2_ring, c_smem, c2_smem, ready, empty, partial_ptr,
                  arrivals_ptr, M, N, K, SPLIT_K, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                  acc_layout: gl.constexpr, acc2_layout: gl.constexpr, A_KM: gl.constexpr, B_KN: gl.constexpr,
                  SPLIT: gl.constexpr, SWAP_AB: gl.constexpr, BLOCK_N2: gl.constexpr):
    """The consumers: lesson 19's products per work unit. With ``SPLIT`` (SPLIT_K > 1) each unit's sum goes to its tile's slice
    of ``partial_ptr`` (fp32); the unit that arrives last at the tile's counter adds the SPLIT_K slices in order
    0, 1, … (the same order whichever unit that is, so the result is deterministic), stores C and resets the
    counter for the next call. A wide tile's slice holds its first strip's BLOCK_M × BLOCK_N sums, then its
    second's BLOCK_M × BLOCK_N2."""
    BLOCK_M: gl.constexpr = a_ring.shape[1] if A_KM else a_ring.shape[2]
    BLOCK_K: gl.constexpr = a_ring.shape[2] if A_KM else a_ring.shape[1]
    BLOCK_N: gl.constexpr = b_ring.shape[2] if B_KN else b_ring.shape[1]
    TILE: gl.constexpr = BLOCK_M * (BLOCK_N + BLOCK_N2)               # one slice's fp32 sums
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N + BLOCK_N2)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for unit in range(gl.program_id(0), num_pid_m * num_pid_n * SPLIT_K, gl.num_programs(0)):
        tile, split, pid_m, pid_n, k_first, k_last = work_unit(unit, num_pid_m, num_pid_n, k_tiles, SPLIT_K, GROUP_M)
        acc, acc2, step = unit_products(a_ring, b_ring, b2_ring, ready, empty, step, k_first, k_last, STAGES,
                                        acc_layout, acc2_layout, A_KM, B_KN, BLOCK_N2)
        if not SPLIT:
            store_strips(c_desc, c_smem, c2_desc, c2_smem, acc, acc2, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_N2,
                         SWAP_AB)
        else:
            in_tile = tile_offsets(BLOCK_M, BLOCK_N, acc_layout)
            slices = partial_ptr + tile * (SPLIT_K * TILE)
            gl.store(slices + split * TILE + in_tile, acc)
            if BLOCK_N2 > 0:
                in_strip = BLOCK_M * BLOCK_N + tile_offsets(BLOCK_M, BLOCK_N2, acc2_layout)
                gl.store(slices + split * TILE + in_strip, acc2)
            # Every consumer thread's slice is written before one thread announces it (the atomic's release, after
            # the partition's barrier); the last to arrive sees every other unit's slice (its acquire).
            gl.barrier()
            arrived = gl.atomic_add(arrivals_ptr + tile, 1, sem="acq_rel", scope="gpu")
            if arrived == SPLIT_K - 1:
                total = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
                total2 = total
                if BLOCK_N2 > 0:
                    total2 = gl.zeros([BLOCK_M, BLOCK_N2], gl.float32, layout=acc2_layout)
                for s in range(SPLIT_K):
                    # .cg: from L2, where the other SMs' slices are; this SM's L1 may hold nothing of them.
                    total += gl.load(slices + s * TILE + in_tile, cache_modifier=".cg")
                    if BLOCK_N2 > 0:
                        total2 += gl.load(slices + s * TILE + in_strip, cache_modifier=".cg")
                store_strips(c_desc, c_smem, c2_desc, c2_smem, total, total2, pid_m, pid_n, BLOCK_M, BLOCK_N,
                             BLOCK_N2, SWAP_AB)
                gl.atomic_xchg(arrivals_ptr + tile, 0, sem="relaxed", scope="gpu")
    tma.store_wait(0)


@gluon.jit(do_not_specialize=["M", "N", "K", "SPLIT_K"])
def linear_kernel(a_desc, b_desc, c_desc, b2_desc, c2_desc, partial_ptr, arrivals_ptr, M, N, K, SPLIT_K,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, acc_layout: gl.constexpr,
                  STAGES: gl.constexpr, GROUP_M: gl.constexpr, LOAD_REGS: gl.constexpr, A_KM: gl.constexpr,
                  B_KN: gl.constexpr, SPLIT: gl.constexpr, SWAP_AB: gl.constexpr, BLOCK_N2: gl.constexpr,
                  acc2_layout: gl.constexpr, A_POLICY: gl.constexpr, B_POLICY: gl.constexpr):
    """The product of an M × K A and a K × N B in BLOCK_M × BLOCK_N tiles (with SWAP_AB, A and B are the launcher's
    W and activations, and the tiles are of Cᵀ). M, N, K and SPLIT_K are not specialised on (TMA clips every edge,
    so a shape's divisibility does not change the code), so one compile serves every shape of a configuration; only
    whether K is split (``SPLIT``) changes the epilogue.

    A wide tile (``BLOCK_N2`` > 0) is BLOCK_M × (BLOCK_N + BLOCK_N2): every Gluon tensor's and TMA box's side is a
    power of two, so a 128 × 192 tile is two strips, 128 × 128 and 128 × 64, each with its own accumulator, B ring
    (``b2_desc``) and C buffer (``c2_desc``); without one, ``b2_desc`` and ``c2_desc`` are B's and C's and unused.
    ``A_POLICY`` and ``B_POLICY``: the L2 priority of A's and B's copies (None, or W_STREAMED on W's)."""
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    b2_ring = b_ring
    c2_smem = c_smem
    if BLOCK_N2 > 0:
        b2_ring = gl.allocate_shared_memory(b2_desc.dtype, [STAGES] + b2_desc.block_type.shape, b2_desc.layout)
        c2_smem = gl.allocate_shared_memory(c2_desc.dtype, c2_desc.block_type.shape, c2_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([
        (mma_partition, (c_desc, c2_desc, a_ring, b_ring, b2_ring, c_smem, c2_smem, ready, empty, partial_ptr,
                         arrivals_ptr, M, N, K, SPLIT_K, STAGES, GROUP_M, acc_layout, acc2_layout, A_KM, B_KN, SPLIT,
                         SWAP_AB, BLOCK_N2)),
        (load_partition, (a_desc, b_desc, b2_desc, a_ring, b_ring, b2_ring, ready, empty, M, N, K, SPLIT_K, STAGES,
                          GROUP_M, A_KM, B_KN, BLOCK_N2, A_POLICY, B_POLICY)),
    ], [1], [LOAD_REGS])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


def kernel_args(config: dict, swap_ab: bool, b_kn: bool) -> dict:
    """The constexprs of linear_kernel for a configuration: its tile, layouts and operand orders. Without swap-AB
    the kernel's A is the activations (M × K) and its B is B; with swap-AB its A is B read as Wᵀ's transpose (W N × K
    when B is w.t(), else B K × N read along N) and its B is the activations, read as N × K."""
    return {"BLOCK_M": config["BLOCK_M"], "BLOCK_N": config["BLOCK_N"], "BLOCK_K": config["BLOCK_K"],
            "acc_layout": wgmma_layout(config["num_warps"], config["BLOCK_N"]), "STAGES": config["STAGES"],
            "GROUP_M": config["GROUP_M"], "LOAD_REGS": config["LOAD_REGS"],
            "A_KM": (not b_kn) if swap_ab else True, "B_KN": False if swap_ab else b_kn,
            "SPLIT": config["SPLIT_K"] > 1, "SWAP_AB": swap_ab, "BLOCK_N2": config["BLOCK_N2"],
            "acc2_layout": wgmma_layout(config["num_warps"], config["BLOCK_N2"] or config["BLOCK_N"]),
            # W is the kernel's A under swap-AB and its B otherwise
            "A_POLICY": W_STREAMED if config.get("W_FIRST") and swap_ab else None,
            "B_POLICY": W_STREAMED if config.get("W_FIRST") and not swap_ab else None}


ARGUMENT_ORDER = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "acc_layout", "STAGES", "GROUP_M", "LOAD_REGS", "A_KM", "B_KN",
                  "SPLIT", "SWAP_AB", "BLOCK_N2", "acc2_layout", "A_POLICY", "B_POLICY")


def operand_views(a, b, b_kn: bool, swap_ab: bool):
    """(the kernel's A, the kernel's B, its M, its N) for C = a·b. Swap-AB hands the kernel Cᵀ = bᵀ·aᵀ: bᵀ is W
    (N × K) when b is w.t(), and aᵀ is a read as N × K."""
    M, N = a.shape[0], b.shape[1]
    if not swap_ab:
        return a, (b if b_kn else b.t()), M, N
    return (b if b_kn else b.t()), a, N, M


def persistent_grid(units: int, sms: int) -> tuple[int, int]:
    """The persistent grid of a launch of ``units`` work units (tiles, or a tile's slices of K) on ``sms`` SMs:
    (programs, rounds). One program an SM at most, and never more programs than units; program p runs units p,
    p + programs, p + 2·programs, ... (the kernel's loop), so the busiest program runs ``rounds`` units, and the launch
    lasts about as long as that program does. The launcher sizes its grid with it, and the dispatcher's cost model
    counts a configuration's time in its rounds."""
    ### BEGIN SOLUTION: the programs (at most one an SM, never more than the units) and the busiest program's units
    programs = min(units, sms)
    rounds = -(-units // programs)
    ### END SOLUTION
    return programs, rounds


class Plan:
    """Lesson 31's plan, for linear_kernel: one signature's checks, configuration (from the dispatch table), layouts,
    grid, split-K scratch and compiled kernel, its descriptors kept by address and their CUtensorMaps encoded once
    (``kept.KeptLaunch``)."""

    def __init__(self, a, b, c, config: dict, sms: int | None = None):
        M, N, K = require_matmul_args(a, b, c, b_either_way=True, on_gpu=False)
        self.M, self.N, self.K = M, N, K
        self.empty = M == 0 or N == 0 or K == 0
        self.zero_c = K == 0 and M > 0 and N > 0
        self.b_kn = b.shape[1] <= 1 or b.stride(1) == 1
        cfg = dict(config)
        self.num_warps = cfg["num_warps"]
        self.config = cfg
        self.swap_ab = bool(cfg["SWAP_AB"])
        self.descriptors = OrderedDict()
        self.scratch = {}
        if self.empty:
            return
        BM, BN, BK, split = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], cfg["SPLIT_K"]
        require_wgmma_tile(BM, BN, BK, self.num_warps, cfg["STAGES"])
        BN2 = cfg["BLOCK_N2"]
        if BN2:
            if not (isinstance(BN2, int) and 8 <= BN2 <= 256 and BN2 & (BN2 - 1) == 0):
                raise ValueError(f"BLOCK_N2={BN2!r}: a wide tile's second strip is one more wgmma and TMA box, so its "
                                 "width is a power of two from 8 to 256 (or 0: no second strip)")
            if self.swap_ab:
                raise ValueError(f"BLOCK_N2={BN2!r}: a wide tile (a second strip of B's columns) is linear_kernel's "
                                 "without swap-AB; set BLOCK_N2=0 for swap-AB")
        if not (isinstance(split, int) and 1 <= split <= triton.cdiv(K, BK)):
            raise ValueError(f"SPLIT_K={split!r}: between 1 and the K steps of the tile ({triton.cdiv(K, BK)} at "
                             f"K={K}, BLOCK_K={BK}), so that no slice of K is empty")
        if cfg["W_FIRST"] is None:
            cfg["W_FIRST"] = w_first(M, cfg)
        if cfg["W_FIRST"] not in (0, 1):
            raise ValueError(f"W_FIRST={cfg['W_FIRST']!r}: W_FIRST is 1 (W's copies with L2's evict_first hint) or 0 "
                             "(none), or None for the dispatch module's rule")
        self.constexprs = kernel_args(cfg, self.swap_ab, self.b_kn)
        ka, kb, kM, kN = operand_views(a, b, self.b_kn, self.swap_ab)
        self.kernel_mnk = (kM, kN, K)
        # A's, B's and C's boxes, then the wide tile's second strip of B and of C (B's and C's again without one).
        strip = BN2 or BN
        self.blocks = ([BM, BK] if self.constexprs["A_KM"] else [BK, BM],
                       [BK, BN] if self.constexprs["B_KN"] else [BN, BK],
                       [BN, BM] if self.swap_ab else [BM, BN],
                       [BK, strip] if self.constexprs["B_KN"] else [strip, BK],
                       [strip, BM] if self.swap_ab else [BM, strip])
        dtype = GL_DTYPES[a.dtype]
        self.layouts = tuple(gl.NVMMASharedLayout.get_default_for(block, dtype) for block in self.blocks)
        for name, t, block in (("A", ka, self.blocks[0]), ("B", kb, self.blocks[1]), ("c", c, self.blocks[2])):
            tma_descriptor(name, t, block)                     # TMA's rules, each with its sentence
        self.tile_n = BN + BN2
        self.tiles = triton.cdiv(kM, BM) * triton.cdiv(kN, self.tile_n)
        self.units = self.tiles * split
        self.grid = None
        # After the descriptors and split-K's scratch, the kernel's arguments in its parameters' order (constexprs
        # included: driver.c skips them); the launches, the first through the JIT, the rest with encoded maps.
        self.rest = (kM, kN, K, split, *(self.constexprs[name] for name in ARGUMENT_ORDER))
        self.launcher = kept.KeptLaunch(linear_kernel, self.num_warps)
        if sms is not None:
            self.set_grid(sms)
        self.stream = None                   # Triton's reader of torch's current stream, at the first launch

    def set_grid(self, sms: int) -> None:
        """The persistent grid for ``sms`` SMs (persistent_grid's programs)."""
        self.grid = (persistent_grid(self.units, sms)[0], 1, 1)

    def descriptors_for(self, a, b, c):
        """The descriptors of the kernel's operands, kept by the three addresses, as lesson 31 keeps them."""
        def make():
            ka, kb, _, _ = operand_views(a, b, self.b_kn, self.swap_ab)
            return kept.host_descriptors((ka, kb, c, kb, c), self.blocks, self.layouts)
        return kept.kept_descriptors(self.descriptors, (a.data_ptr(), b.data_ptr(), c.data_ptr()), make)

    def scratch_for(self, device, stream: int):
        """Split-K's fp32 slices and per-tile counters, one set per stream (two streams running one plan at once must not share counters); the counters start at 0 and every tile's
        last unit sets its counter back to 0, so the set is reused by every later launch."""
        found = self.scratch.get(stream)
        if found is None:
            split = self.config["SPLIT_K"]
            if split == 1:
                found = (torch.empty(1, dtype=torch.float32, device=device),
                         torch.zeros(1, dtype=torch.int32, device=device))
            else:
                cells = self.tiles * split * self.config["BLOCK_M"] * self.tile_n
                found = (torch.empty(cells, dtype=torch.float32, device=device),
                         torch.zeros(self.tiles, dtype=torch.int32, device=device))
            self.scratch[stream] = found
        return found

    def launch(self, a, b, c) -> None:
        descs = self.descriptors_for(a, b, c)
        if self.stream is None:
            require_hopper(a)
            if self.grid is None:
                self.set_grid(torch.cuda.get_device_properties(a.device).multi_processor_count)
            self.stream = triton.runtime.driver.active.get_current_stream
        stream = self.stream(a.device.index)
        partial, arrivals = self.scratch_for(a.device, stream)
        self.launcher(self.grid[0], stream, descs, (partial, arrivals, *self.rest))


class Linear:
    """C = A·B for the shapes a model runs, launched as lesson 31 launches: one plan per signature, its
    configuration from ``table`` (a DispatchTable; its rule answers for shapes it does not list).
    ``config`` forces one configuration for every shape (the tuning command uses it)."""

    def __init__(self, table: DispatchTable | None = None, config: dict | None = None):
        if config is not None:
            unknown = set(config) - set(CONFIG)
            if unknown:
                raise TypeError(f"unknown config keys {sorted(unknown)}; Linear takes {sorted(CONFIG)}")
        self.table = table
        self.forced = None if config is None else {**CONFIG, **config}
        self.plans = OrderedDict()

    def config_for(self, M: int, N: int, K: int, b_kn: bool) -> dict:
        if self.forced is not None:
            return self.forced
        if self.table is None:
            return CONFIG
        return {**CONFIG, **self.table.config(M, N, K, b_kn)}

    def plan(self, a, b, c, sms: int | None = None) -> Plan:
        key = kept.signature(a, b, c)
        found = self.plans.get(key)
        if found is None:
            b_kn = b.dim() == 2 and (b.shape[1] <= 1 or b.stride(1) == 1)
            M, K = a.shape if a.dim() == 2 else (0, 0)
            N = b.shape[1] if b.dim() == 2 else 0
            found = self.plans[key] = Plan(a, b, c, self.config_for(M, N, K, b_kn), sms)
            if len(self.plans) > kept.PLANS_KEPT:
                self.plans.popitem(last=False)
        return found

    def __call__(self, a, b, c=None):
        if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
            c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and isinstance(c, torch.Tensor)
                and a.is_cuda and b.is_cuda and c.is_cuda):
            require_matmul_args(a, b, c, b_either_way=True)
        p = self.plan(a, b, c)
        if p.empty:
            if p.zero_c:
                c.zero_()
            return c
        p.launch(a, b, c)
        return c


def _this_gpus_table() -> DispatchTable:
    """This GPU's dispatch table (the H200's where it has none), its cost model counting rounds with persistent_grid."""
    import re

    name = torch.cuda.get_device_name() if torch.cuda.is_available() else ""
    table = table_for(re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or None)
    table.grid = persistent_grid
    return table


_TABLED = None
_FORCED = {}


def linear(a, b, c=None, **config):
    """C = A·B (A M × K; B K × N or w.t() of an N × K W): the configuration from this GPU's dispatch table (the H200's
    where this GPU has none), or ``config`` for every shape."""
    global _TABLED
    if not config:
        if _TABLED is None:
            _TABLED = Linear(table=_this_gpus_table())
        return _TABLED(a, b, c)
    key = tuple(sorted(config.items()))
    found = _FORCED.get(key)
    if found is None:
        found = _FORCED[key] = Linear(config=config)
    return found(a, b, c)


matmul = linear                    # the name the course's GEMM checks call
