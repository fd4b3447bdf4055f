# Lesson 15 starter, generated from solutions/15-gemm-v5-wgmma/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 15   (`make starters` rewrites it: keep a copy)
"""Lesson 15 · GEMM v5: wgmma reads shared memory.

Lesson 14's producer stays: TMA copies A's and B's tiles into a ring of NVMMA-swizzled shared buffers and an
mbarrier per slot says when a tile has landed. The consumer changes. Instead of every warp loading its
fragments with ldmatrix and issuing mma.sync (HMMA) 16 × 8 × 16 at a time, the four warps of a *warpgroup*
issue one Hopper instruction, wgmma, that multiplies 64 rows of A by the whole 128-column tile of B straight
out of shared memory (the tiles' layout is described to it, not loaded), accumulating into registers in the
layout NVMMADistributedLayout version 3. No ldmatrix, no dot-operand layouts.

At the end, ``blackwell_matmul_kernel``: the same step for Blackwell (sm_100), tcgen05 into tensor memory; compiled,
never run (no Blackwell GPU here).
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory, tcgen05_mma

from gluon_course.nvidia.hopper import require_hopper, require_wgmma_tile, tma_descriptor
from gluon_course.validate import empty_product, require_matmul_args

# Lesson 14's tile and ring: 128 × 128, BLOCK_K 32, 3 stages; the 4 warps are one warpgroup.
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4, "STAGES": 3}


def wgmma_layout(num_warps: int, BLOCK_N: int):
    """The accumulator layout of wgmma: version 3, warps stacked along M (a warpgroup is 4 warps, 16 rows each,
    64 rows per instruction), one instruction spanning the tile's BLOCK_N columns, 16 of K per instruction."""
    # TODO gap 1: the accumulator layout of wgmma (NVMMADistributedLayout version 3)
    raise NotImplementedError('lesson 15, gap 1 not yet implemented: the accumulator layout of wgmma (NVMMADistributedLayout version 3)')


def kernel_layouts(num_warps: int, BLOCK_N: int) -> dict:
    """The layout constexprs of matmul_kernel: what matmul passes, what the checks compile. Only the accumulator's
    now: A and B are read where TMA put them, in the descriptors' shared layouts."""
    return {"acc_layout": wgmma_layout(num_warps, BLOCK_N)}


@gluon.jit
def load_tiles(a_desc, b_desc, ready, a_ring, b_ring, off_m, off_n, tile, STAGES: gl.constexpr, pred):
    """Start the TMA copies of A's and B's tiles number ``tile`` (along K) into ring slot ``tile % STAGES``; the
    slot's barrier completes its phase once every byte of both has landed. Nothing happens where ``pred`` is false."""
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    slot = tile % STAGES
    # A tile that hangs over the edge of A or B still lands whole (zero-filled), so the count is always the full
    # tiles' bytes. expect() is also the barrier's one arrival: without it the phase could never complete.
    mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)
    tma.async_load(a_desc, [off_m, tile * BLOCK_K], ready.index(slot), a_ring.index(slot), pred=pred)
    tma.async_load(b_desc, [tile * BLOCK_K, off_n], ready.index(slot), b_ring.index(slot), pred=pred)


@gluon.jit
def matmul_kernel(a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  acc_layout: gl.constexpr, STAGES: gl.constexpr):
    # One program per BLOCK_M × BLOCK_N tile of C, in row-major order.
    pid = gl.program_id(0)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n

    # No pointers and no masks for A and B: a tile is asked for by its coordinates, and TMA fills whatever lies
    # outside the matrix with zeros, which add nothing to the sum (the K tail included). The ring is in the
    # descriptors' shared layout, since TMA writes each tile in that layout.
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BLOCK_K, BLOCK_N], b_desc.layout)
    # One mbarrier per slot (a 64-bit word of shared memory) that completes a phase after one arrival.
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
    k_tiles = gl.cdiv(K, BLOCK_K)
    for s in gl.static_range(STAGES - 1):
        load_tiles(a_desc, b_desc, ready, a_ring, b_ring, pid_m * BLOCK_M, pid_n * BLOCK_N, s, STAGES, s < k_tiles)

    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    for i in range(k_tiles):
        # Trip r round the ring is phase r of the slot's barrier, and wait() takes the parity of the phase.
        slot = i % STAGES
        mbarrier.wait(ready.index(slot), (i // STAGES) & 1)
        # Slot (i - 1) % STAGES is free: last step's wgmma finished before its call returned. The compiler puts CTA
        # barriers (BAR.SYNC) before the refill but no proxy fence: wgmma reads by the same async path TMA writes by.
        load_tiles(a_desc, b_desc, ready, a_ring, b_ring, pid_m * BLOCK_M, pid_n * BLOCK_N, i + STAGES - 1,
                   STAGES, i + STAGES - 1 < k_tiles)
        # TODO gap 2: multiply tile i's slots of A and B into acc with one wgmma call (shared memory in, registers out)
        gl.static_assert(False, "lesson 15, gap 2 not yet implemented: multiply tile i's slots of A and B into acc with one wgmma call (shared memory in, registers out)")
    # Every copy that was started has been waited for: the barriers can be retired.
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))

    # C is stored from the accumulator's own layout, rounded to the inputs' dtype. TMA's zero fill is for loads
    # only: the store still needs its mask at the M and N edges.
    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def matmul(a, b, c=None, **config):
    """C = A·B by wgmma, A and B copied by TMA into a ring of shared buffers; returns ``c``. The rows of A and B
    must start on 16-byte boundaries (K and N multiples of 8 for bf16 and fp16). Hopper only (sm_90)."""
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_matmul_args(a, b, c)
    if empty_product(a, b, c):          # M, N or K is 0: what torch.matmul returns
        return c
    unknown = set(config) - set(CONFIG)
    if unknown:
        raise TypeError(f"unknown config keys {sorted(unknown)}; matmul takes {sorted(CONFIG)}")
    cfg = {**CONFIG, **config}
    num_warps = cfg.pop("num_warps")
    require_wgmma_tile(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps, cfg["STAGES"])
    require_hopper(a)
    a_desc = tma_descriptor("a", a, [cfg["BLOCK_M"], cfg["BLOCK_K"]])
    b_desc = tma_descriptor("b", b, [cfg["BLOCK_K"], cfg["BLOCK_N"]])
    grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
    matmul_kernel[grid](a_desc, b_desc, c, M, N, K, c.stride(0), c.stride(1), **cfg,
                        **kernel_layouts(num_warps, cfg["BLOCK_N"]), num_warps=num_warps)
    return c


# -- What changes on Blackwell (sm_100) -------------------------------------------------------------------------------
# The same step for Blackwell's tensor cores. Compiled on the CPU for sm_100 by the checks, never run: the course has
# no Blackwell GPU, so there is no launcher for it either. Blackwell's mbarrier and tma are Hopper's (the blackwell
# module imports them from hopper), so load_tiles is used as it is.

@gluon.jit
def blackwell_matmul_kernel(a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn,
                            BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                            STAGES: gl.constexpr):
    pid = gl.program_id(0)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n

    # The ring, its ready barriers and the producer are matmul_kernel's.
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BLOCK_K, BLOCK_N], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    # New: tcgen05 reports that its products are done only by an arrival on an mbarrier (there is no wait_group).
    mma_done = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
    mbarrier.init(mma_done, count=1)
    k_tiles = gl.cdiv(K, BLOCK_K)
    for s in gl.static_range(STAGES - 1):
        load_tiles(a_desc, b_desc, ready, a_ring, b_ring, pid_m * BLOCK_M, pid_n * BLOCK_N, s, STAGES, s < k_tiles)

    # The accumulator lives in tensor memory, not in registers: 128 lanes, one per row of the tile, of BLOCK_N 32-bit
    # columns. block=(BLOCK_M, BLOCK_N): one instruction covers the tile's 128 rows; col_stride=1: one fp32 a column.
    # Allocated without a value, so nothing is written into it here.
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N],
                                      TensorMemoryLayout(block=(BLOCK_M, BLOCK_N), col_stride=1))
    for i in range(k_tiles):
        slot = i % STAGES
        mbarrier.wait(ready.index(slot), (i // STAGES) & 1)
        # Slot (i - 1) % STAGES is free: the wait on mma_done below retired the products that read it.
        load_tiles(a_desc, b_desc, ready, a_ring, b_ring, pid_m * BLOCK_M, pid_n * BLOCK_N, i + STAGES - 1,
                   STAGES, i + STAGES - 1 < k_tiles)
        # One thread issues the products and the call returns at once; mma_done gets one arrival when they are done.
        # The first step overwrites the accumulator (use_acc=False), every later one adds to it.
        tcgen05_mma(a_ring.index(slot), b_ring.index(slot), acc_tmem, use_acc=i > 0, mbarriers=[mma_done])
        # Synchronous, as matmul_kernel's wgmma: step i's arrival completes phase i of mma_done.
        mbarrier.wait(mma_done, i & 1)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
    mbarrier.invalidate(mma_done)

    # Into registers for the store, in the layout of the instruction that reads tensor memory, which the descriptor
    # gives: thread t of warp w gets row 32 w + t, all BLOCK_N columns of it.
    acc_layout: gl.constexpr = acc_tmem.get_reg_layout()
    c = acc_tmem.load(acc_layout).to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    gl.store(c_ptrs, c, mask=c_mask)
