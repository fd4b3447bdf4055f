# Lesson 10 starter, generated from solutions/10-gemm-v0-cuda-cores/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 10   (`make starters` rewrites it: keep a copy)
"""Lesson 10 · GEMM v0: CUDA cores.

The course's first matrix multiplication, C = A·B, on the GPU's ordinary floating-point units (the "CUDA
cores"). Every thread keeps a small tile of C in its registers, 8 × 8 fp32 accumulators, and for each k adds
the outer product of 8 values from column k of A and 8 values from row k of B: 64 fused multiply-adds
(``FFMA``) from 16 operands. The layouts of lesson 02 say which thread owns which part of C, and therefore which
parts of A and B each thread must load. The bf16/fp16 inputs are upcast to fp32 before the multiply-adds, and
C is rounded back to the inputs' dtype when it is stored.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from gluon_course.validate import empty_product, require_matmul_args, require_power_of_two


def fma_layouts(BLOCK_M: int, BLOCK_N: int, num_warps: int, TILE_M: int, TILE_N: int, LANES_N: int,
                warp_size: int = 32):
    """The accumulator's layout, in which each thread owns a TILE_M × TILE_N register tile of C (a warp's lanes
    LANES_N across and warp_size / LANES_N down, then the warps), and the layouts of A and B that it implies."""
    # TODO gap 1: the accumulator's BlockedLayout (the register tile is size_per_thread), then A's and B's operand layouts
    raise NotImplementedError("lesson 10, gap 1 not yet implemented: the accumulator's BlockedLayout (the register tile is size_per_thread), then A's and B's operand layouts")
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
        # TODO gap 2: load the K-step's A and B tiles (masked: rows past M, columns past N, the K tail), upcast to fp32, then dot_fma
        gl.static_assert(False, "lesson 10, gap 2 not yet implemented: load the K-step's A and B tiles (masked: rows past M, columns past N, the K tail), upcast to fp32, then dot_fma")
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # C is stored from the accumulator's own layout, rounded to the inputs' dtype.
    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


# 128 × 128 tile, 8 warps: 256 threads with an 8 × 8 register tile each (64 accumulators); BLOCK_K = 8 is the
# smallest K-step a dot takes, and 8 bf16 in a row of A are one 16-byte load.
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 8, "TILE_M": 8, "TILE_N": 8, "LANES_N": 4, "num_warps": 8}


def check_tile_config(BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, TILE_M: int, TILE_N: int, LANES_N: int,
                      num_warps: int, warp_size: int = 32) -> None:
    """Refuse a tile the layout cannot cover exactly: every thread owns one TILE_M × TILE_N block of C's tile."""
    for name, value in (("BLOCK_M", BLOCK_M), ("BLOCK_N", BLOCK_N), ("BLOCK_K", BLOCK_K), ("TILE_M", TILE_M),
                        ("TILE_N", TILE_N), ("LANES_N", LANES_N), ("num_warps", num_warps)):
        require_power_of_two(name, value)
    if BLOCK_K < 8:
        raise ValueError(f"BLOCK_K={BLOCK_K}: a dot of fp32 operands needs K ≥ 8 per step; use BLOCK_K=8")
    if LANES_N > warp_size:
        raise ValueError(f"LANES_N={LANES_N} is more than the {warp_size} lanes of a warp")
    lanes_m = warp_size // LANES_N
    threads = (BLOCK_M // TILE_M) * (BLOCK_N // TILE_N)
    if BLOCK_M % (TILE_M * lanes_m) or BLOCK_N % (TILE_N * LANES_N) or threads != num_warps * warp_size:
        raise ValueError(f"a {BLOCK_M} × {BLOCK_N} tile in {TILE_M} × {TILE_N} register tiles needs "
                         f"{threads} threads, one tile each, and a warp of {lanes_m} × {LANES_N} lanes must fit in "
                         f"it; {num_warps} warps are {num_warps * warp_size} threads: change num_warps or the tiles")


def matmul(a, b, c=None, **config):
    """C = A·B with fp32 FMAs on the CUDA cores, one program per C tile; returns ``c``."""
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_matmul_args(a, b, c)
    if empty_product(a, b, c):          # M, N or K is 0: what torch.matmul returns
        return c
    cfg = {**CONFIG, **config}
    tiles = {name: cfg.pop(name) for name in ("TILE_M", "TILE_N", "LANES_N")}
    num_warps = cfg.pop("num_warps")
    check_tile_config(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps=num_warps, **tiles)
    acc_layout, a_layout, b_layout = fma_layouts(cfg["BLOCK_M"], cfg["BLOCK_N"], num_warps, **tiles)
    grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        **cfg, acc_layout=acc_layout, a_layout=a_layout, b_layout=b_layout, num_warps=num_warps)
    return c


# ---- the same product written with lesson 02's tools (notebook section) ----
# Not an exercise: a 3D layout over (M, K, N) whose K axis lies inside each thread. A's and B's tiles are its
# slices; their broadcast product is summed over K with gl.sum, a reduction that never leaves the thread.
@gluon.jit
def broadcast_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                            stride_cn, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                            layout_3d: gl.constexpr):
    acc_layout: gl.constexpr = gl.SliceLayout(1, layout_3d)
    a_layout: gl.constexpr = gl.SliceLayout(2, layout_3d)
    b_layout: gl.constexpr = gl.SliceLayout(0, layout_3d)
    pid = gl.program_id(0)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n

    offs_am = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, a_layout))
    offs_ak = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, a_layout))
    offs_bk = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(1, b_layout))
    offs_bn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, b_layout))
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_ak[None, :] * stride_ak
    b_ptrs = b_ptr + offs_bk[:, None] * stride_bk + offs_bn[None, :] * stride_bn

    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    for k in range(0, K, BLOCK_K):
        a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)
        b_mask = ((k + offs_bk)[:, None] < K) & (offs_bn[None, :] < N)
        a = gl.load(a_ptrs, mask=a_mask, other=0.0)
        b = gl.load(b_ptrs, mask=b_mask, other=0.0)
        # [BLOCK_M, BLOCK_K, 1] × [1, BLOCK_K, BLOCK_N]: every product, then their sum over K.
        products = a.to(gl.float32)[:, :, None] * b.to(gl.float32)[None, :, :]
        acc += gl.sum(products, axis=1)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def broadcast_layout(BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, num_warps: int, TILE_M: int, TILE_N: int,
                     LANES_N: int, warp_size: int = 32) -> gl.BlockedLayout:
    """The 3D (M, K, N) layout whose slices are ``fma_layouts``' three layouts: K entirely inside each thread."""
    lanes_m = warp_size // LANES_N
    warps_m = BLOCK_M // (TILE_M * lanes_m)
    return gl.BlockedLayout(size_per_thread=[TILE_M, BLOCK_K, TILE_N], threads_per_warp=[lanes_m, 1, LANES_N],
                            warps_per_cta=[warps_m, 1, num_warps // warps_m], order=[2, 1, 0])
