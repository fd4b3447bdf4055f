"""Lesson 35 · The GEMM does the model's work.

A transformer block calls its GEMMs with small elementwise steps between them: after the gate and up projections,
SiLU(gate) · up; after the o and down projections, the residual add. Each of those steps is a kernel of its own that
reads its inputs from HBM and writes its output back, and at decode each GEMM is a kernel too short to fill the GPU
from its start to its end. This lesson moves the elementwise work into the GEMM's epilogue, while C is still fp32 in
the consumers' registers, and lets each kernel start before the previous one ends:

1. **Q, K and V as one GEMM**: their weights stacked into one W (N = 4096 + 2 · 1024), one kernel instead of three.
2. **SwiGLU in the epilogue** (``silu_times``): the gate's and up's rows of W interleaved in blocks of BLOCK_N, so
   one tile of the GEMM holds gate's and up's sums for the same columns of H in two accumulators (lesson 32's wide
   tile); the epilogue writes only H = SiLU(gate) · up, rounded once.
3. **The residual in the epilogue** (``add_residual``): R's tile loaded in the accumulator's own layout and added
   before the one rounding to bf16.
4. **Programmatic dependent launch** (``PDL``): the next kernel is launched while this one is still running; its
   producer loads the first tiles of W, which no kernel writes, and only then waits (``gdc_wait``) for the previous
   kernel's output, A.

The K loop is lesson 32's (``load_step`` and ``unit_products``, imported from it): only the epilogue and the
producer's first steps are new. ``fused_linear`` launches one GEMM; ``FusedBlock`` is lesson 32's transformer block
with its seven projections done by four fused GEMMs.
"""
from collections import OrderedDict

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from gluon_course.course import load_solution
from gluon_course.nvidia import launch as kept
from gluon_course.nvidia.hopper import require_hopper, tma_descriptor
from gluon_course.nvidia.split_k import SplitScratch, publish_slice, read_slice, reopen

v32 = load_solution("32")
# Lesson 32's device functions as they are: the producer's K step and the consumers' K loop (its wide tile, two
# accumulators, holds SwiGLU's gate and up), its work units (a tile, or a tile's slice of K) and its store of a tile
# (transposed for swap-AB).
load_step, unit_products, work_unit, store_tile = v32.load_step, v32.unit_products, v32.work_unit, v32.store_tile

EPILOGUES = ("plain", "swiglu", "residual")
# The SwiGLU GEMM's W: gate's and up's rows interleaved in blocks of GATE_UP_BLOCK (interleave_gate_up), which is
# the BLOCK_N of every SwiGLU configuration: the weights are laid out once, for the tile that reads them.
GATE_UP_BLOCK = 128
SMS = 132                   # the H100's and H200's SMs, where no GPU is there to ask


# -- The kernel --------------------------------------------------------------------------------------------------------

@gluon.jit
def fused_load_partition(a_desc, b_desc, a_ring, b_ring, b2_ring, ready, empty, M, N, K, SPLIT_K,
                         STAGES: gl.constexpr, GROUP_M: gl.constexpr, BLOCK_N2: gl.constexpr, SWAP_AB: gl.constexpr,
                         PDL: gl.constexpr, A_POLICY: gl.constexpr, B_POLICY: gl.constexpr):
    """The producer (one warp): lesson 32's, walking its work units (a tile, or a tile's slice of K). A wide tile's
    second strip (SwiGLU's up rows) comes through the same descriptor as the first, BLOCK_N rows further down W. The
    kernel's A is the activations and its B is W, or with ``SWAP_AB`` the other way round. With ``PDL``, the first
    unit's first STAGES steps load W before gdc_wait and the activations after it."""
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[0]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N + BLOCK_N2)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    first = gl.program_id(0)
    if PDL:
        # Every slot of the ring is free at the start. W is weights: no kernel writes it, so its first tiles may be
        # loaded while the previous kernel still runs. Each slot's expect() counts the activations' bytes too; they
        # come later.
        tile, split, pid_m, pid_n, k_first, k_last = work_unit(first, num_pid_m, num_pid_n, k_tiles, SPLIT_K,
                                                                   GROUP_M)
        n = pid_n * (BLOCK_N + BLOCK_N2)
        W_STRIPS: gl.constexpr = 2 if BLOCK_N2 > 0 else 1
        early = min(STAGES, k_last - k_first)
        for i in range(early):
            k = k_first + i
            mbarrier.expect(ready.index(i), a_desc.block_type.nbytes + W_STRIPS * b_desc.block_type.nbytes)
            if SWAP_AB:
                tma.async_load(a_desc, [pid_m * BLOCK_M, k * BLOCK_K], ready.index(i), a_ring.index(i),
                               cache_policy=A_POLICY)
            else:
                tma.async_load(b_desc, [n, k * BLOCK_K], ready.index(i), b_ring.index(i), cache_policy=B_POLICY)
                if BLOCK_N2 > 0:
                    tma.async_load(b_desc, [n + BLOCK_N, k * BLOCK_K], ready.index(i), b2_ring.index(i),
                                   cache_policy=B_POLICY)
        # The activations are the previous kernel's output: from here on they are complete and visible.
        gdc_wait()
        for i in range(early):
            k = k_first + i
            if SWAP_AB:
                tma.async_load(b_desc, [n, k * BLOCK_K], ready.index(i), b_ring.index(i))
            else:
                tma.async_load(a_desc, [pid_m * BLOCK_M, k * BLOCK_K], ready.index(i), a_ring.index(i))
        for k in range(k_first + early, k_last):
            load_step(a_desc, b_desc, b_desc, a_ring, b_ring, b2_ring, ready, empty, k - k_first, pid_m, pid_n, k,
                      STAGES, True, False, BLOCK_N2, A_POLICY, B_POLICY)
        step = k_last - k_first
        first += gl.num_programs(0)
    for unit in range(first, num_pid_m * num_pid_n * SPLIT_K, gl.num_programs(0)):
        tile, split, pid_m, pid_n, k_first, k_last = work_unit(unit, num_pid_m, num_pid_n, k_tiles, SPLIT_K,
                                                                   GROUP_M)
        for k in range(k_first, k_last):
            load_step(a_desc, b_desc, b_desc, a_ring, b_ring, b2_ring, ready, empty, step, pid_m, pid_n, k, STAGES,
                      True, False, BLOCK_N2, A_POLICY, B_POLICY)
            step += 1
    if PDL:
        # Every load of this program is issued: the next kernel may be scheduled (a hint; its gdc_wait still waits
        # for this whole grid to finish).
        gdc_launch_dependents()


@gluon.jit
def silu_times(gate, up):
    """H = SiLU(gate) · up, elementwise on the two fp32 accumulators (same shape, same layout): SiLU(g) = g · σ(g)
    = g / (1 + e^(−g))."""
    ### BEGIN SOLUTION: SiLU of the gate's sums times the up's sums, in fp32
    return gate / (1.0 + gl.exp(-gate)) * up
    ### END SOLUTION


@gluon.jit
def gate_and_up(acc):
    """Under swap-AB, SwiGLU's tile of W is gate's block of GATE_UP_BLOCK rows then up's (interleave_gate_up's
    layout), so the accumulator's first half of rows holds gate's sums and its second half up's, for the same
    columns of H: the two halves, in registers ([2, half, tokens] → [half, tokens, 2]: gl.split takes the last
    dimension)."""
    HALF: gl.constexpr = acc.shape[0] // 2
    return gl.split(acc.reshape([2, HALF, acc.shape[1]]).permute((1, 2, 0)))


@gluon.jit
def add_residual(acc, r_ptr, stride_rm, off_m, off_n, M, N, acc_layout: gl.constexpr, SWAP_AB: gl.constexpr):
    """acc + R's tile at C's (off_m, off_n), in fp32. R is bf16, row-major, rows ``stride_rm`` elements apart, M × N
    (C's shape). With ``SWAP_AB`` acc is a tile of Cᵀ: its rows are C's columns and its columns C's rows, so R's
    tile is read transposed."""
    BLOCK_M: gl.constexpr = acc.shape[0]
    BLOCK_N: gl.constexpr = acc.shape[1]
    ### BEGIN SOLUTION: R's tile in the accumulator's layout (transposed for swap-AB), past M and N masked, in fp32
    if SWAP_AB:
        cols = off_n + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
        rows = off_m + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
        inside = (cols[:, None] < N) & (rows[None, :] < M)
        r = gl.load(r_ptr + rows[None, :] * stride_rm + cols[:, None], mask=inside, other=0.0)
    else:
        rows = off_m + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
        cols = off_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
        inside = (rows[:, None] < M) & (cols[None, :] < N)
        r = gl.load(r_ptr + rows[:, None] * stride_rm + cols[None, :], mask=inside, other=0.0)
    return acc + r.to(gl.float32)
    ### END SOLUTION


@gluon.jit
def finish_tile(acc, acc2, c_desc, c_smem, r_ptr, stride_rm, pid_m, pid_n, M, N, N_OUT, acc_layout: gl.constexpr,
                EPILOGUE: gl.constexpr, SWAP_AB: gl.constexpr):
    """A tile's whole sums (``acc``, and a wide tile's ``acc2``) through the epilogue, one rounding to bf16 and one
    TMA store at C's coordinates (C has ``N_OUT`` columns). Without swap-AB the tile's rows are C's rows; with it they
    are W's rows (C's columns) and its columns are tokens (C's rows; the kernel's N)."""
    BLOCK_M: gl.constexpr = acc.shape[0]
    BLOCK_N: gl.constexpr = acc.shape[1]
    if SWAP_AB:
        c_rows = N
        off_m = pid_n * BLOCK_N                # C's rows: the tokens
        if EPILOGUE == "swiglu":
            gate, up = gate_and_up(acc)
            out = silu_times(gate, up)
            off_n = pid_m * (BLOCK_M // 2)     # C's columns: a tile of gate's and up's rows makes one strip of H
        else:
            off_n = pid_m * BLOCK_M
            if EPILOGUE == "residual":
                out = add_residual(acc, r_ptr, stride_rm, off_m, off_n, c_rows, N_OUT, acc_layout, True)
            else:
                out = acc
    else:
        c_rows = M
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N                # C's columns: SwiGLU's two strips make one strip of H
        if EPILOGUE == "swiglu":
            out = silu_times(acc, acc2)
        elif EPILOGUE == "residual":
            out = add_residual(acc, r_ptr, stride_rm, off_m, off_n, c_rows, N_OUT, acc_layout, False)
        else:
            out = acc
    tma.store_wait(0)                          # the previous tile's store has left c_smem
    if SWAP_AB:
        store_tile(c_desc, c_smem, out, off_n, off_m, True)
    else:
        store_tile(c_desc, c_smem, out, off_m, off_n, False)


@gluon.jit
def fused_mma_partition(c_desc, a_ring, b_ring, b2_ring, c_smem, ready, empty, r_ptr, stride_rm, partial_ptr,
                        arrivals_ptr, M, N, K, N_OUT, SPLIT_K, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                        acc_layout: gl.constexpr, BLOCK_N2: gl.constexpr, EPILOGUE: gl.constexpr,
                        SWAP_AB: gl.constexpr, SPLIT: gl.constexpr):
    """The consumers: lesson 32's K loop per work unit (unit_products), then the tile's epilogue (finish_tile) on
    its finished fp32 sums. With ``SPLIT`` (SPLIT_K > 1), lesson 32's fixed-order protocol: each unit's sums go to its
    slice of the scratch, and only the unit that arrives last adds the slices in the order 0, 1, … and finishes the
    tile, so the epilogue (SiLU · up, + R) and the rounding happen once, on the whole sum."""
    BLOCK_M: gl.constexpr = a_ring.shape[1]
    BLOCK_N: gl.constexpr = b_ring.shape[1]
    BLOCK_K: gl.constexpr = a_ring.shape[2]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N + BLOCK_N2)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for unit in range(gl.program_id(0), num_pid_m * num_pid_n * SPLIT_K, gl.num_programs(0)):
        tile, split, pid_m, pid_n, k_first, k_last = work_unit(unit, num_pid_m, num_pid_n, k_tiles, SPLIT_K,
                                                                   GROUP_M)
        acc, acc2, step = unit_products(a_ring, b_ring, b2_ring, ready, empty, step, k_first, k_last, STAGES,
                                        acc_layout, acc_layout, True, False, BLOCK_N2)
        if SPLIT:
            # Lesson 32's protocol: publish this unit's sums; the last to arrive sums the slices in order, finishes the
            # tile (the epilogue once, on the whole sum) and reopens the tile's counter.
            arrived = publish_slice(acc, partial_ptr, arrivals_ptr, tile, split, SPLIT_K, acc_layout)
            if arrived == SPLIT_K - 1:
                total = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
                for s in range(SPLIT_K):
                    total += read_slice(partial_ptr, tile, s, SPLIT_K, BLOCK_M, BLOCK_N, acc_layout)
                finish_tile(total, total, c_desc, c_smem, r_ptr, stride_rm, pid_m, pid_n, M, N, N_OUT, acc_layout,
                            EPILOGUE, SWAP_AB)
                reopen(arrivals_ptr, tile)
        else:
            finish_tile(acc, acc2, c_desc, c_smem, r_ptr, stride_rm, pid_m, pid_n, M, N, N_OUT, acc_layout, EPILOGUE,
                        SWAP_AB)
    tma.store_wait(0)


@gluon.jit(do_not_specialize=["M", "N", "K", "N_OUT", "stride_rm", "SPLIT_K"])
def fused_kernel(a_desc, b_desc, c_desc, r_ptr, partial_ptr, arrivals_ptr, M, N, K, N_OUT, stride_rm, SPLIT_K,
                 BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, acc_layout: gl.constexpr,
                 STAGES: gl.constexpr, GROUP_M: gl.constexpr, LOAD_REGS: gl.constexpr, EPILOGUE: gl.constexpr,
                 PDL: gl.constexpr, SWAP_AB: gl.constexpr, SPLIT: gl.constexpr, A_POLICY: gl.constexpr,
                 B_POLICY: gl.constexpr):
    """C = epilogue(A·Wᵀ): A M × K, W N × K (for SwiGLU the interleaved W, N twice H's padded width), C M × N_OUT, in
    tiles of BLOCK_M × BLOCK_N, persistent over the grid. Without ``SWAP_AB`` the kernel's A is the activations and
    its B is W (tiles of C); with it (decode) its A is W and its B the activations, M and N exchanged (tiles of Cᵀ, W's
    rows on wgmma's 64-row side and the few tokens on its narrow N side). ``r_ptr``: R for the residual (unread
    otherwise); ``partial_ptr`` and ``arrivals_ptr``: split-K's scratch and counters (unread without ``SPLIT``)."""
    BLOCK_N2: gl.constexpr = BLOCK_N if EPILOGUE == "swiglu" and not SWAP_AB else 0
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    b2_ring = b_ring
    if BLOCK_N2 > 0:
        b2_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([
        (fused_mma_partition, (c_desc, a_ring, b_ring, b2_ring, c_smem, ready, empty, r_ptr, stride_rm, partial_ptr,
                               arrivals_ptr, M, N, K, N_OUT, SPLIT_K, STAGES, GROUP_M, acc_layout, BLOCK_N2, EPILOGUE,
                               SWAP_AB, SPLIT)),
        (fused_load_partition, (a_desc, b_desc, a_ring, b_ring, b2_ring, ready, empty, M, N, K, SPLIT_K, STAGES,
                                GROUP_M, BLOCK_N2, SWAP_AB, PDL, A_POLICY, B_POLICY)),
    ], [1], [LOAD_REGS])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


# -- W for SwiGLU, and the configurations --------------------------------------------------------------------------------

def interleave_gate_up(w_gate: torch.Tensor, w_up: torch.Tensor, block_n: int = GATE_UP_BLOCK) -> torch.Tensor:
    """W for the SwiGLU epilogue, made once with the weights: gate's and up's rows (each N × K) in blocks of
    ``block_n``, block j of gate, then block j of up, so that a tile's up strip lies BLOCK_N rows below its gate strip.
    A last block shorter than ``block_n`` is padded with zero rows (H's columns there are SiLU(0) · 0 = 0, and the
    store clips them)."""
    if w_gate.shape != w_up.shape or w_gate.dim() != 2:
        raise ValueError(f"W_gate {tuple(w_gate.shape)} and W_up {tuple(w_up.shape)} must be two N × K matrices of "
                         "one shape (nn.Linear's weights of the gate and up projections)")
    N, K = w_gate.shape
    blocks = -(-N // block_n)
    pad = blocks * block_n - N
    g = torch.cat([w_gate, w_gate.new_zeros(pad, K)]).reshape(blocks, 1, block_n, K)
    u = torch.cat([w_up, w_up.new_zeros(pad, K)]).reshape(blocks, 1, block_n, K)
    return torch.cat([g, u], dim=1).reshape(2 * blocks * block_n, K).contiguous()


def busy_fraction(tiles: int, sms: int) -> float:
    """The share of the SMs' rounds that hold a tile: tiles / (rounds · sms), rounds = ⌈tiles / sms⌉."""
    return tiles / (-(-tiles // sms) * sms)


def decode_width(N: int, sms: int = SMS) -> int:
    """BLOCK_N at decode for C's N columns (64 or 32): the one whose tiles keep the larger share of the SMs busy,
    the wider on a tie. At decode each tile streams its own rows of W, so an idle SM is W's bandwidth lost: 4096
    columns make 64 tiles of 64 (64 of 132 SMs busy) but 128 tiles of 32."""
    return max((64, 32), key=lambda w: (round(busy_fraction(-(-N // w), sms), 6), w))


# Decode: at most this many tokens, the fused GEMMs take lesson 32's swap-AB (and split-K) configuration.
DECODE_M = 16
SHARED_BUDGET = 200 * 1024      # a program's ring and C buffer, below sm_90's 227 KiB with room for the barriers


def lesson32_pick(M: int, w_rows: int, K: int) -> dict:
    """What lesson 32's linear runs for A (M × K) times W (w_rows × K) transposed: this GPU's dispatch table (the
    H200's where there is no GPU), its cost model for shapes the table does not list."""
    global _TABLE
    if _TABLE is None:
        _TABLE = v32._this_gpus_table()
    return _TABLE.config(M, w_rows, K, False)


_TABLE = None


def swap_ab_config(M: int, epilogue: str, N: int, K: int) -> dict | None:
    """The decode path's configuration (M ≤ DECODE_M): lesson 32's pick for the unfused GEMM (W's N rows, or gate's
    and up's 2N), tiles of Cᵀ with its BLOCK_M rows of W, BLOCK_N tokens, BLOCK_K and split of K, W's copies
    evict_first when it says so. SwiGLU's W tile is instead one block of gate's rows and the same block of up's,
    2 · GATE_UP_BLOCK rows (interleave_gate_up's layout), so that one tile holds both sums of the same columns of H,
    with BLOCK_K 64. The ring as deep as lesson 32's where it fits SHARED_BUDGET, else as deep as fits. None where
    lesson 32 does not swap."""
    w_rows = 2 * N if epilogue == "swiglu" else N
    pick = lesson32_pick(M, w_rows, K)
    if not pick["SWAP_AB"] or pick["BLOCK_N2"]:
        return None
    bm, bn, bk = pick["BLOCK_M"], pick["BLOCK_N"], pick["BLOCK_K"]
    if epilogue == "swiglu":
        bm, bk = 2 * GATE_UP_BLOCK, 64        # a tile twice as tall: half the K step keeps the ring 5 deep
    c_bytes = bn * (bm // 2 if epilogue == "swiglu" else bm) * 2
    stages = min(pick["STAGES"], (SHARED_BUDGET - c_bytes) // ((bm + bn) * bk * 2))
    split = max(1, min(pick["SPLIT_K"], -(-K // bk)))
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "STAGES": stages, "num_warps": pick["num_warps"],
            "GROUP_M": pick["GROUP_M"], "LOAD_REGS": 40, "SPLIT_K": split, "SWAP_AB": True,
            "W_FIRST": int(pick["W_FIRST"] or 0)}


def config_for(M: int, epilogue: str, N: int, K: int, sms: int = SMS) -> dict:
    """The tile of one GEMM at M rows, C's N columns, K. Decode, M ≤ DECODE_M: swap-AB as lesson 32 picks it
    (swap_ab_config). Up to M = 64: 64-row tiles (wgmma's least), BLOCK_K 128 (64 for SwiGLU's two wide strips), the
    ring as deep as shared memory allows (about 200 KiB). Prefill: lesson 19's 128 × 256, as 128 × (128 + 128) for
    SwiGLU; the residual at 128 × 128, because R's tile, loaded in the accumulator's layout, needs as many registers
    again."""
    if M <= DECODE_M:
        found = swap_ab_config(M, epilogue, N, K)
        if found is not None:
            return found
    if epilogue == "swiglu":
        bm, bk, stages, warps = (64, 64, 5, 4) if M <= 64 else (128, 64, 3, 8)
        bn = GATE_UP_BLOCK
    elif M <= 64:
        bm, bk, warps = 64, 128, 4
        bn = decode_width(N, sms)
        stages = 6 if bn == 64 else 8
    elif epilogue == "residual":
        bm, bn, bk, stages, warps = 128, 128, 64, 4, 8
    else:
        bm, bn, bk, stages, warps = 128, 256, 64, 3, 8
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "STAGES": stages, "num_warps": warps, "GROUP_M": 8,
            "LOAD_REGS": 40, "SPLIT_K": 1, "SWAP_AB": False, "W_FIRST": 0}


def blocks(cfg: dict, epilogue: str) -> tuple:
    """The boxes of the kernel's A, B and C descriptors: A [BLOCK_M, BLOCK_K] and B [BLOCK_N, BLOCK_K] (activations
    and W, or W and activations with swap-AB), C's [BLOCK_M, BLOCK_N], or [BLOCK_N, BLOCK_M] with swap-AB (a tile of
    Cᵀ stored transposed; half of BLOCK_M for SwiGLU, whose W tile holds gate's and up's rows)."""
    bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    if cfg.get("SWAP_AB"):
        return [bm, bk], [bn, bk], [bn, bm // 2 if epilogue == "swiglu" else bm]
    return [bm, bk], [bn, bk], [bm, bn]


def tiles_of(cfg: dict, epilogue: str, M: int, w_rows: int) -> int:
    """The tiles of C (or Cᵀ) of a launch: the kernel's M over BLOCK_M times its N over the tile's width."""
    swap = bool(cfg.get("SWAP_AB"))
    kernel_m, kernel_n = (w_rows, M) if swap else (M, w_rows)
    width = cfg["BLOCK_N"] * (2 if epilogue == "swiglu" and not swap else 1)
    return triton.cdiv(kernel_m, cfg["BLOCK_M"]) * triton.cdiv(kernel_n, width)


def constexprs(cfg: dict, epilogue: str, pdl: bool) -> dict:
    """fused_kernel's constexpr arguments for one configuration, in the kernel's order."""
    swap = bool(cfg.get("SWAP_AB"))
    w_policy = v32.W_STREAMED if cfg.get("W_FIRST") else None
    return {"BLOCK_M": cfg["BLOCK_M"], "BLOCK_N": cfg["BLOCK_N"], "BLOCK_K": cfg["BLOCK_K"],
            "acc_layout": v32.wgmma_layout(cfg["num_warps"], cfg["BLOCK_N"]), "STAGES": cfg["STAGES"],
            "GROUP_M": cfg["GROUP_M"], "LOAD_REGS": cfg["LOAD_REGS"], "EPILOGUE": epilogue, "PDL": bool(pdl),
            "SWAP_AB": swap, "SPLIT": cfg.get("SPLIT_K", 1) > 1,
            "A_POLICY": w_policy if swap else None, "B_POLICY": None if swap else w_policy}


# -- The launcher ------------------------------------------------------------------------------------------------------

def _require_fusable(a, w, c, r, epilogue: str) -> int:
    """C's columns, or a ValueError that says what to change."""
    if epilogue not in EPILOGUES:
        raise ValueError(f"epilogue={epilogue!r}: one of {', '.join(EPILOGUES)}")
    for name, t in (("A", a), ("W", w), ("C", c), ("R", r)):
        if t is None:
            continue
        if t.dtype != torch.bfloat16:
            raise ValueError(f"{name} is {t.dtype}: every operand of the fused GEMMs is bf16 (convert with .to("
                             "torch.bfloat16); lesson 34 is the fp8 one)")
        if t.dim() != 2:
            raise ValueError(f"{name} has {t.dim()} dimensions: pass a matrix (reshape(-1, features) first)")
    if a.shape[1] != w.shape[1]:
        raise ValueError(f"A is {a.shape[0]}×{a.shape[1]} and W {w.shape[0]}×{w.shape[1]}: W is nn.Linear's N × K "
                         "weight, so their K (the second dimensions) must be equal")
    if epilogue == "swiglu" and w.shape[0] % (2 * GATE_UP_BLOCK):
        raise ValueError(f"W has {w.shape[0]} rows, not a multiple of {2 * GATE_UP_BLOCK}: the SwiGLU GEMM takes "
                         "gate's and up's weights as interleave_gate_up(w_gate, w_up) lays them out")
    n_out = c.shape[1] if c is not None else (w.shape[0] // 2 if epilogue == "swiglu" else w.shape[0])
    widest = w.shape[0] // 2 if epilogue == "swiglu" else w.shape[0]
    if n_out > widest or (c is not None and c.shape[0] != a.shape[0]):
        raise ValueError(f"C is {tuple(c.shape)}: it must be {a.shape[0]} × {widest}" +
                         (" or fewer columns (H's width without the padding)" if epilogue == "swiglu" else ""))
    if epilogue == "residual" and (r is None or tuple(r.shape) != (a.shape[0], n_out) or r.stride(1) != 1):
        found = "no R" if r is None else f"R {tuple(r.shape)} with strides {tuple(r.stride())}"
        raise ValueError(f"the residual epilogue adds R, the same shape as C ({a.shape[0]} × {n_out}) with its rows "
                         f"contiguous; got {found}")
    return n_out


class FusedLinear:
    """One fused GEMM: C = epilogue(A·Wᵀ), as ``fused_linear`` calls it. Keeps a compiled launch per configuration,
    the descriptors per set of addresses (lesson 31's kept launch) and split-K's scratch per stream (lesson 32's), and
    launches with PDL when ``pdl``."""

    def __init__(self, epilogue: str = "plain", pdl: bool = False):
        self.epilogue, self.pdl = epilogue, pdl
        self.launches, self.descriptors = {}, OrderedDict()
        self.scratch = SplitScratch()

    def __call__(self, a, w, c=None, r=None, stream=None):
        n_out = _require_fusable(a, w, c, r, self.epilogue)
        require_hopper(a)
        M, K = a.shape
        N = w.shape[0]
        if c is None:
            c = torch.empty(M, n_out, device=a.device, dtype=torch.bfloat16)
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count
        cfg = config_for(M, self.epilogue, n_out, K, sms)
        key = tuple(cfg.items())
        if key not in self.launches:
            options = {"launch_pdl": True} if self.pdl else {}
            self.launches[key] = (kept.KeptLaunch(fused_kernel, cfg["num_warps"], **options),
                                  tuple(constexprs(cfg, self.epilogue, self.pdl).values()))
        launch, ce = self.launches[key]
        swap = cfg["SWAP_AB"]
        # The kernel's A and B: the activations and W, or W and the activations (swap-AB), and its M and N.
        ka, kb, kM, kN = (w, a, N, M) if swap else (a, w, M, N)

        def make():
            boxes = blocks(cfg, self.epilogue)
            for name, t, block in zip(("W", "A", "C") if swap else ("A", "W", "C"), (ka, kb, c), boxes):
                tma_descriptor(name, t, block)         # TMA's 16-byte rule, refused with a sentence
            layouts = [gl.NVMMASharedLayout.get_default_for(b, gl.bfloat16) for b in boxes]
            # Kept by address, holding no tensor (lesson 31): a kept descriptor never keeps freed memory alive.
            return kept.host_descriptors((ka, kb, c), boxes, layouts)
        descs = kept.kept_descriptors(self.descriptors, (key, kept.signature(a, w, c), a.data_ptr(), w.data_ptr(),
                                                         c.data_ptr()), make)
        tiles = tiles_of(cfg, self.epilogue, M, N)
        split = cfg["SPLIT_K"]
        stream = stream if stream is not None else triton.runtime.driver.active.get_current_stream(a.device.index)
        partial, arrivals = self.scratch.get(a.device, stream, key, tiles, split, cfg["BLOCK_M"] * cfg["BLOCK_N"])
        rr = r if r is not None else c
        launch(min(tiles * split, sms), stream, descs, (rr, partial, arrivals, kM, kN, K, n_out, rr.stride(0), split,
                                                        *ce))
        return c


_FUSED = {}


def fused_linear(a, w, epilogue: str = "plain", r=None, c=None, pdl: bool = False):
    """C = A·Wᵀ (``"plain"``), SiLU(A·W_gateᵀ) · (A·W_upᵀ) (``"swiglu"``, w = interleave_gate_up(w_gate, w_up)) or
    A·Wᵀ + R (``"residual"``), bf16 in and out, fp32 sums, one rounding. ``pdl``: launched with programmatic
    dependent launch, overlapping the previous kernel in the stream."""
    if (epilogue, pdl) not in _FUSED:
        _FUSED[(epilogue, pdl)] = FusedLinear(epilogue, pdl)
    return _FUSED[(epilogue, pdl)](a, w, c, r)


# -- The block ---------------------------------------------------------------------------------------------------------

class FusedBlock(torch.nn.Module):
    """Lesson 32's transformer block (gluon_course.measure.linear.Block) with its seven projections as four fused
    GEMMs, sharing that block's weights (the stacked and interleaved copies are made once, here): QKV; o with the
    residual x; gate and up with SwiGLU; down with the residual. Norms and attention as in the block."""

    def __init__(self, block, pdl: bool = False):
        super().__init__()
        self.block, self.pdl = block, pdl
        self.w_qkv = torch.cat([block.q.weight, block.k.weight, block.v.weight]).contiguous()
        self.w_gate_up = interleave_gate_up(block.gate.weight, block.up.weight)
        self.mlp = block.gate.weight.shape[0]
        self.sizes = (block.q.weight.shape[0], block.k.weight.shape[0], block.v.weight.shape[0])

    def forward(self, x):                      # x: (batch, tokens, hidden), as the block takes it
        b, F = self.block, torch.nn.functional
        B, T, H = x.shape
        flat = x.reshape(B * T, H)
        qkv = fused_linear(b.norm1(x).reshape(B * T, H), self.w_qkv, pdl=self.pdl)
        q, k, v = qkv.split(self.sizes, dim=1)
        q = q.reshape(B, T, b.heads, b.head_dim).transpose(1, 2)
        k = k.reshape(B, T, b.kv_heads, b.head_dim).transpose(1, 2)
        v = v.reshape(B, T, b.kv_heads, b.head_dim).transpose(1, 2)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1, enable_gqa=True)
        att = att.transpose(1, 2).reshape(B * T, H)
        x1 = fused_linear(att, b.o.weight, "residual", r=flat, pdl=self.pdl)
        h = fused_linear(b.norm2(x1).reshape(B * T, H), self.w_gate_up, "swiglu",
                         c=torch.empty(B * T, self.mlp, device=x.device, dtype=x.dtype), pdl=self.pdl)
        return fused_linear(h, b.down.weight, "residual", r=x1, pdl=self.pdl).reshape(B, T, H)
