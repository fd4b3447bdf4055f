# Lesson 11 starter, generated from solutions/11-gemm-v1-mma-v2/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 11   (`make starters` rewrites it: keep a copy)
"""Lesson 11 · GEMM v1: tensor cores from registers.

Lesson 10 multiplied with fused multiply-adds on the CUDA cores. Here the same tiles go to the tensor cores:
``mma_v2`` issues Ampere's warp-wide ``mma.sync`` (one ``HMMA.16816`` multiplies a 16×16 block of A by a
16×8 block of B per warp). The instruction decides which lane holds which element, so the accumulator and
both operands take the layouts it needs (``NVMMADistributedLayout``, ``DotOperandLayout``), and the operands
are loaded from global memory straight into them, with no shared memory in between; the lesson measures what
those loads cost, and what mma.sync alone reaches (``mma_peak_kernel``).
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2

from gluon_course.validate import empty_product, require_matmul_args, require_power_of_two

# One m16n8k16 mma.sync takes 4 elements of K from each thread and row of A (and column of B): 8 bytes of bf16
# or fp16. k_width counts elements, so it follows from the element size.
K_BYTES_PER_THREAD = 8


def mma_layouts(num_warps: int, warps_m: int, element_bytes: int):
    """The three layouts of one mma.sync tile over ``num_warps`` warps (``warps_m`` of them stacked along M):
    the accumulator's, and those of A (operand 0) and B (operand 1), which must name it as their parent."""
    # TODO gap 1: the accumulator layout of mma.sync m16n8 over the warps, then A's and B's operand layouts
    raise NotImplementedError("lesson 11, gap 1 not yet implemented: the accumulator layout of mma.sync m16n8 over the warps, then A's and B's operand layouts")
    return acc_layout, a_layout, b_layout


@gluon.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  acc_layout: gl.constexpr, a_layout: gl.constexpr, b_layout: gl.constexpr):
    # One program per BLOCK_M × BLOCK_N tile of C, in row-major order.
    pid = gl.program_id(0)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n

    # Index vectors in the slices of the operand layouts: every pointer, mask and loaded value built from them
    # lands in the registers of the thread that multiplies it.
    offs_am = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, a_layout))
    offs_ak = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, a_layout))
    offs_bk = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(1, b_layout))
    offs_bn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, b_layout))
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_ak[None, :] * stride_ak
    b_ptrs = b_ptr + offs_bk[:, None] * stride_bk + offs_bn[None, :] * stride_bn

    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    for k in range(0, K, BLOCK_K):
        # TODO gap 2: load the K-step's A and B tiles (masked: rows past M, columns past N, the K tail), then mma_v2
        gl.static_assert(False, "lesson 11, gap 2 not yet implemented: load the K-step's A and B tiles (masked: rows past M, columns past N, the K tail), then mma_v2")
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # C is stored from the accumulator's own layout, rounded to the inputs' dtype.
    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


# 128 × 64 tile, 4 warps as 2 × 2: each warp owns a quarter of C's tile, 32 of its 16 × 8 blocks (the warps'
# blocks interleave), so 64 fp32 accumulators per thread.
# BLOCK_K = 32 is the K the operand layouts cover once with k_width 4 (see check_tile_config).
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "warps_m": 2}


def check_tile_config(BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, num_warps: int, warps_m: int, k_width: int) -> None:
    """Refuse a tile the layouts cannot cover once: the warps tile C in 16 × 8 blocks, and the operand layouts
    span 8 × k_width of K (4 lanes × k_width, twice over); a smaller BLOCK_K would make threads hold copies."""
    for name, value in (("BLOCK_M", BLOCK_M), ("BLOCK_N", BLOCK_N), ("BLOCK_K", BLOCK_K), ("num_warps", num_warps),
                        ("warps_m", warps_m)):
        require_power_of_two(name, value)
    if warps_m > num_warps:
        raise ValueError(f"warps_m={warps_m} is more than num_warps={num_warps}")
    warps_n = num_warps // warps_m
    if BLOCK_M < 16 * warps_m or BLOCK_N < 8 * warps_n:
        raise ValueError(f"a {BLOCK_M} × {BLOCK_N} tile is too small for {warps_m} × {warps_n} warps: each warp "
                         f"needs at least 16 rows and 8 columns (BLOCK_M ≥ {16 * warps_m}, BLOCK_N ≥ {8 * warps_n})")
    if BLOCK_K < 8 * k_width:
        raise ValueError(f"BLOCK_K={BLOCK_K} is less than the {8 * k_width} elements of K that the operand layouts "
                         f"span with k_width={k_width}: threads would hold copies; use BLOCK_K ≥ {8 * k_width}")


def matmul(a, b, c=None, **config):
    """C = A·B on the tensor cores (mma.sync), one program per C tile; returns ``c``."""
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_matmul_args(a, b, c)
    if empty_product(a, b, c):          # M, N or K is 0: what torch.matmul returns
        return c
    cfg = {**CONFIG, **config}
    num_warps, warps_m = cfg.pop("num_warps"), cfg.pop("warps_m")
    acc_layout, a_layout, b_layout = mma_layouts(num_warps, warps_m, a.element_size())
    check_tile_config(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps, warps_m, a_layout.k_width)
    grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        **cfg, acc_layout=acc_layout, a_layout=a_layout, b_layout=b_layout, num_warps=num_warps)
    return c


# ---- the ceiling of this version (notebook section) ----
# Not an exercise: the same mma_v2 on operands that never leave the registers, to see what mma.sync itself
# reaches on this GPU, with no memory traffic in the way.
@gluon.jit
def mma_peak_kernel(a_ptr, b_ptr, out_ptr, steps, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                    BLOCK_K: gl.constexpr, acc_layout: gl.constexpr, a_layout: gl.constexpr, b_layout: gl.constexpr):
    # Every program loads the same small A and B tiles once, before the loop.
    offs_am = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, a_layout))
    offs_ak = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, a_layout))
    offs_bk = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(1, b_layout))
    offs_bn = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, b_layout))
    a_tile = gl.load(a_ptr + offs_am[:, None] * BLOCK_K + offs_ak[None, :])
    b_tile = gl.load(b_ptr + offs_bk[:, None] * BLOCK_N + offs_bn[None, :])
    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    # The loop holds nothing but the tensor-core instructions: the accumulator carries each step into the next.
    for _ in range(steps):
        acc = mma_v2(a_tile, b_tile, acc)
    # One store at the end, so that the work has a result and is not removed.
    offs_cm = gl.program_id(0) * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    offs_cn = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    gl.store(out_ptr + offs_cm[:, None] * BLOCK_N + offs_cn[None, :], acc)


PEAK_CONFIG = dict(CONFIG)


def mma_peak_tflops(steps: int = 4096, programs_per_sm: int = 8, dtype=torch.bfloat16, **config) -> float:
    """TFLOPS of ``mma_peak_kernel``: ``programs_per_sm`` programs for every SM, each ``steps`` K-steps of
    mma_v2 on its register-resident tiles, timed with do_bench (median)."""
    from gluon_course.measure.device import require_gpu
    from gluon_course.measure.timing import bench_ms

    require_gpu("the mma.sync peak")
    cfg = {**PEAK_CONFIG, **config}
    num_warps, warps_m = cfg.pop("num_warps"), cfg.pop("warps_m")
    BM, BN, BK = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    element_bytes = torch.empty((), dtype=dtype).element_size()
    acc_layout, a_layout, b_layout = mma_layouts(num_warps, warps_m, element_bytes)
    check_tile_config(BM, BN, BK, num_warps, warps_m, a_layout.k_width)
    programs = programs_per_sm * torch.cuda.get_device_properties(0).multi_processor_count
    a = torch.randn(BM, BK, device="cuda").to(dtype)
    b = torch.randn(BK, BN, device="cuda").to(dtype)
    out = torch.empty(programs * BM, BN, device="cuda", dtype=torch.float32)

    def launch():
        mma_peak_kernel[(programs,)](a, b, out, steps, **cfg, acc_layout=acc_layout, a_layout=a_layout,
                                     b_layout=b_layout, num_warps=num_warps)

    ms = bench_ms(launch)
    return 2.0 * programs * BM * BN * BK * steps / (ms * 1e-3) / 1e12
