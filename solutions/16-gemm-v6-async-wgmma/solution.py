"""Lesson 16 · GEMM v6: asynchronous wgmma.

Lesson 15 issued each K step's wgmma and then waited for it before doing anything else, so the tensor cores and
the warps took turns. wgmma is asynchronous by nature: here the call only starts the products
(``is_async=True``), and ``warpgroup_mma_wait(1)`` waits until at most one group, this step's, is still running.
That also says when a ring slot may be reused: the slot read by the previous step's products is free once they
are done, so the refill moves after the wait.

Overlap needs something to overlap: at lesson 15's 128 × 128 × 32 tile one group is 4 small products, over before
the warps have waited for the next tile. So the tile grows to what wgmma and shared memory allow: 128 × 256 × 64,
two warpgroups (each 64 rows × 256 columns, the widest wgmma), and a ring of 4 slots of 48 KiB, 192 KiB of the
227 KiB a program may have.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

from gluon_course.nvidia.hopper import require_hopper, require_wgmma_tile, tma_descriptor
from gluon_course.validate import empty_product, require_matmul_args

# 128 × 256 × 64 in two warpgroups (8 warps), 4 ring slots of (128 × 64 + 64 × 256) × 2 bytes = 48 KiB each.
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "STAGES": 4}


def wgmma_layout(num_warps: int, BLOCK_N: int):
    """The accumulator layout of wgmma: version 3, warps stacked along M (a warpgroup is 4 warps, 16 rows each,
    64 rows per instruction), one instruction spanning the tile's BLOCK_N columns, 16 of K per instruction."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_N, 16])


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
        ### BEGIN SOLUTION: start tile i's products without waiting; wait until only they are running; then refill
        # Start the products and go on: acc is now a token for a result still being computed.
        acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc, is_async=True)
        # At most one group in flight: the previous step's products are done, so the slot they read,
        # (i - 1) % STAGES, is free. deps: what the running group still uses (acc, and tile i's slots).
        acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b_ring.index(slot)))
        # Only now may TMA overwrite that slot: tile i + STAGES - 1 goes exactly there.
        load_tiles(a_desc, b_desc, ready, a_ring, b_ring, pid_m * BLOCK_M, pid_n * BLOCK_N, i + STAGES - 1,
                   STAGES, i + STAGES - 1 < k_tiles)
        ### END SOLUTION
    # The last group must finish before acc is read.
    acc = warpgroup_mma_wait(0, deps=(acc,))
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
