"""Lesson 16 · GEMM v6: asynchronous wgmma.

Lesson 15 issued each K step's wgmma and then waited for it before doing anything else, so the tensor cores and
the warps took turns. wgmma is asynchronous by nature: here the call only starts the products
(``is_async=True``), and ``warpgroup_mma_wait(1)`` waits until at most one group, this step's, is still running.
That also says when a ring slot may be reused: the slot read by the previous step's products is free once they
are done, so the refill moves after the wait. Tile, warpgroup and ring are lesson 15's.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from gluon_course.validate import require_matmul_args, require_power_of_two

# Lesson 15's tile, warpgroup and ring: 128 × 128, BLOCK_K 32, 4 warps, 3 stages.
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4, "STAGES": 3}


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


TMA_RULE = ("TMA needs the start of every row 16-byte aligned: the base address and each row stride of A and B "
            "must be multiples of 16 bytes")


def tma_descriptor(name: str, t: torch.Tensor, block_shape: list) -> TensorDescriptor:
    """A TMA descriptor for the 2D tensor ``t`` in tiles of ``block_shape``, or a ValueError naming TMA's rule."""
    gl_dtype = gl.bfloat16 if t.dtype == torch.bfloat16 else gl.float16
    row_bytes = t.stride(0) * t.element_size()
    if row_bytes % 16 or t.data_ptr() % 16:
        found = (f"its rows are {row_bytes} bytes apart" if row_bytes % 16 else
                 f"it starts {t.data_ptr() % 16} bytes past a 16-byte boundary")
        raise ValueError(
            f"{name} ({t.shape[0]}×{t.shape[1]}): {found}; {TMA_RULE}. Pad K and N to multiples of "
            f"{16 // t.element_size()} (zero columns appended to A and zero rows to B leave A·B unchanged; zero "
            "columns appended to B give extra columns of C to slice off), or use lesson 13's cp.async kernel, "
            "which takes any shape")
    layout = gl.NVMMASharedLayout.get_default_for(block_shape, gl_dtype)
    try:
        return TensorDescriptor.from_tensor(t, block_shape, layout)
    except AssertionError as e:      # TensorDescriptor checks with assert: turn it into a sentence
        raise ValueError(f"{name} cannot be described for TMA: {e}; {TMA_RULE}") from None


def check_tile_config(BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, num_warps: int, STAGES: int) -> None:
    """Refuse a configuration wgmma or TMA cannot take, or a ring too short to overlap anything."""
    for name, value in (("BLOCK_M", BLOCK_M), ("BLOCK_N", BLOCK_N), ("BLOCK_K", BLOCK_K), ("num_warps", num_warps)):
        require_power_of_two(name, value)
    if num_warps % 4 or BLOCK_M < 16 * num_warps:
        raise ValueError(f"num_warps={num_warps} with BLOCK_M={BLOCK_M}: wgmma is issued by warpgroups of 4 warps, "
                         "each warp owning 16 rows of every 64: num_warps a multiple of 4 and BLOCK_M ≥ 16 × num_warps")
    if not (8 <= BLOCK_N <= 256) or BLOCK_K < 16:
        raise ValueError(f"BLOCK_N={BLOCK_N}, BLOCK_K={BLOCK_K}: one wgmma covers 8 to 256 columns and 16 of K for "
                         "bf16/fp16, so 8 ≤ BLOCK_N ≤ 256 and BLOCK_K ≥ 16")
    if max(BLOCK_M, BLOCK_K) > 256:
        raise ValueError(f"a TMA box has at most 256 elements along each side; {BLOCK_M} × {BLOCK_N} × {BLOCK_K} "
                         "asks for more")
    if not (isinstance(STAGES, int) and STAGES >= 2):
        raise ValueError(f"STAGES={STAGES!r}: the ring needs at least 2 buffers, one read by the tensor cores while "
                         "TMA fills the other")


def require_hopper(t: torch.Tensor) -> None:
    """wgmma exists on compute capability 9.x only: Blackwell's tensor cores take tcgen05 instead."""
    if torch.version.hip is not None or torch.cuda.get_device_capability(t.device)[0] != 9:
        raise RuntimeError(f"wgmma is Hopper's instruction (compute capability 9.x, e.g. H100, H200); this GPU is "
                           f"{torch.cuda.get_device_name(t.device)}: use lesson 14's kernel (mma.sync) here")


def matmul(a, b, c=None, **config):
    """C = A·B by wgmma, A and B copied by TMA into a ring of shared buffers; returns ``c``. The rows of A and B
    must start on 16-byte boundaries (K and N multiples of 8 for bf16 and fp16). Hopper only (sm_90)."""
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_matmul_args(a, b, c)
    unknown = set(config) - set(CONFIG)
    if unknown:
        raise TypeError(f"unknown config keys {sorted(unknown)}; matmul takes {sorted(CONFIG)}")
    cfg = {**CONFIG, **config}
    num_warps = cfg.pop("num_warps")
    check_tile_config(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps, cfg["STAGES"])
    require_hopper(a)
    a_desc = tma_descriptor("a", a, [cfg["BLOCK_M"], cfg["BLOCK_K"]])
    b_desc = tma_descriptor("b", b, [cfg["BLOCK_K"], cfg["BLOCK_N"]])
    grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
    matmul_kernel[grid](a_desc, b_desc, c, M, N, K, c.stride(0), c.stride(1), **cfg,
                        **kernel_layouts(num_warps, cfg["BLOCK_N"]), num_warps=num_warps)
    return c
