# Lesson 14 starter, generated from solutions/14-gemm-v4-tma/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 14   (`make starters` rewrites it: keep a copy)
"""Lesson 14 · GEMM v4: TMA and mbarriers.

Lesson 13 filled a ring of shared buffers with cp.async: every thread computed the addresses and the masks of
its own 16-byte pieces of each tile. Here the host describes A and B once, in a *tensor descriptor* (base,
shape, strides, tile shape, shared layout), and one thread asks the Tensor Memory Accelerator (TMA) for a whole
tile by its coordinates. The copy reports to an *mbarrier* in shared memory by counting bytes; the warps wait
on the barrier's phase. Address math and masks leave the threads (fewer registers), and tiles that hang over
the edge of A or B come back zero-filled, so the loads need no masks at all. The consumer is lesson 13's:
ldmatrix into the dot-operand layouts, then mma_v2.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from gluon_course.validate import empty_product, require_matmul_args, require_power_of_two

# Lesson 13's tile and ring: 128 × 128 (4 warps as 2 × 2, each a 64 × 64 piece of C), BLOCK_K 32, 3 stages.
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4, "warps_m": 2, "STAGES": 3}
# ldmatrix hands each thread two consecutive K elements of 16 bits per 8 × 8 matrix: k_width 2.
K_BYTES_PER_THREAD = 4


def mma_layouts(num_warps: int, warps_m: int, element_bytes: int):
    """The accumulator layout of mma.sync m16n8 over the warps (``warps_m`` of them along M), and the layouts in
    which A (operand 0) and B (operand 1) must reach it: lesson 13's."""
    acc_layout = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[warps_m, num_warps // warps_m],
                                           instr_shape=[16, 8])
    k_width = K_BYTES_PER_THREAD // element_bytes
    a_layout = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=k_width)
    b_layout = gl.DotOperandLayout(operand_index=1, parent=acc_layout, k_width=k_width)
    return acc_layout, a_layout, b_layout


def kernel_layouts(num_warps: int, warps_m: int, element_bytes: int = 2) -> dict:
    """The layout constexprs of matmul_kernel: what matmul passes, what the checks compile. The shared layouts
    are no longer among them: each descriptor carries its own."""
    acc_layout, a_layout, b_layout = mma_layouts(num_warps, warps_m, element_bytes)
    return {"acc_layout": acc_layout, "a_layout": a_layout, "b_layout": b_layout}


@gluon.jit
def load_tiles(a_desc, b_desc, ready, a_ring, b_ring, off_m, off_n, tile, STAGES: gl.constexpr, pred):
    """Start the TMA copies of A's and B's tiles number ``tile`` (along K) into ring slot ``tile % STAGES``; the
    slot's barrier completes its phase once every byte of both has landed. Nothing happens where ``pred`` is false."""
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    slot = tile % STAGES
    # TODO gap 1: tell the slot's barrier how many bytes to expect, then start both TMA copies into the slot
    gl.static_assert(False, "lesson 14, gap 1 not yet implemented: tell the slot's barrier how many bytes to expect, then start both TMA copies into the slot")


@gluon.jit
def matmul_kernel(a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  acc_layout: gl.constexpr, a_layout: gl.constexpr, b_layout: gl.constexpr,
                  STAGES: gl.constexpr):
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
        # TODO gap 2: wait for tile i (mind the phase), refill the slot freed last iteration, compute on tile i
        gl.static_assert(False, 'lesson 14, gap 2 not yet implemented: wait for tile i (mind the phase), refill the slot freed last iteration, compute on tile i')
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
    # TODO gap 3: check TMA's 16-byte rule (say how to fix it), then describe t in tiles of block_shape
    raise NotImplementedError("lesson 14, gap 3 not yet implemented: check TMA's 16-byte rule (say how to fix it), then describe t in tiles of block_shape")


def check_tile_config(BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, num_warps: int, warps_m: int, STAGES: int) -> None:
    """Refuse a configuration the layouts cannot cover (lesson 12's rules) or a ring too short to overlap anything."""
    for name, value in (("BLOCK_M", BLOCK_M), ("BLOCK_N", BLOCK_N), ("BLOCK_K", BLOCK_K), ("num_warps", num_warps),
                        ("warps_m", warps_m)):
        require_power_of_two(name, value)
    if warps_m > num_warps:
        raise ValueError(f"warps_m={warps_m} is more than num_warps={num_warps}")
    warps_n = num_warps // warps_m
    if BLOCK_M < 16 * warps_m or BLOCK_N < 8 * warps_n or BLOCK_K < 32:
        raise ValueError(f"a {BLOCK_M} × {BLOCK_N} × {BLOCK_K} tile is too small for {warps_m} × {warps_n} warps: "
                         f"BLOCK_M ≥ {16 * warps_m}, BLOCK_N ≥ {8 * warps_n}, BLOCK_K ≥ 32")
    if max(BLOCK_M, BLOCK_N, BLOCK_K) > 256:
        raise ValueError(f"a TMA box has at most 256 elements along each side; {BLOCK_M} × {BLOCK_N} × {BLOCK_K} "
                         "asks for more")
    if not (isinstance(STAGES, int) and STAGES >= 2):
        raise ValueError(f"STAGES={STAGES!r}: the ring needs at least 2 buffers, one read by the tensor cores while "
                         "TMA fills the other")


def matmul(a, b, c=None, **config):
    """C = A·B on the tensor cores, A and B copied by TMA into a ring of shared buffers; returns ``c``. The rows
    of A and B must start on 16-byte boundaries (K and N multiples of 8 for bf16 and fp16)."""
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_matmul_args(a, b, c)
    if empty_product(a, b, c):          # M, N or K is 0: what torch.matmul returns
        return c
    unknown = set(config) - set(CONFIG)
    if unknown:
        raise TypeError(f"unknown config keys {sorted(unknown)}; matmul takes {sorted(CONFIG)}")
    cfg = {**CONFIG, **config}
    num_warps, warps_m = cfg.pop("num_warps"), cfg.pop("warps_m")
    check_tile_config(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps, warps_m, cfg["STAGES"])
    # The descriptors carry what lesson 13's pointers, strides and shared layouts of A and B carried.
    a_desc = tma_descriptor("a", a, [cfg["BLOCK_M"], cfg["BLOCK_K"]])
    b_desc = tma_descriptor("b", b, [cfg["BLOCK_K"], cfg["BLOCK_N"]])
    grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
    matmul_kernel[grid](a_desc, b_desc, c, M, N, K, c.stride(0), c.stride(1), **cfg,
                        **kernel_layouts(num_warps, warps_m, a.element_size()), num_warps=num_warps)
    return c
