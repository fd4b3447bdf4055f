# Lesson 20 starter, generated from solutions/20-amd-gemm-v0-mfma/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 20   (`make starters` rewrites it: keep a copy)
"""Lesson 20 · AMD GEMM v0: MFMA from registers.

The first AMD version of the course's matrix multiplication, for gfx950 (MI350, MI355) and gfx942 (MI300). Each
program computes one 256 × 256 tile of C with 4 wavefronts of 64 lanes, 2 × 2 over the tile. In every K step it
loads a 256 × 64 tile of A and a 64 × 256 tile of B with plain masked loads, in layouts that read whole 16-byte
vectors, moves them into the layouts the matrix instruction wants (``convert_layout``: a trip through LDS), and
multiplies them with ``mfma``: ``v_mfma_f32_16x16x32_f16`` on gfx950, 16 × 16 outputs and 32 of K per instruction,
accumulated in fp32. Nothing is overlapped yet; the next four lessons change one thing each.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.amd import cdna3

from gluon_course.amd import mfma_layouts, require_amd_gemm_args, require_amd_gpu, require_tile, tile_copy_layouts
from gluon_course.validate import empty_product

# The vendor's tile: 256 × 256 × 64, 4 waves, 2 along M × 2 along N; each holds 128 × 128 elements of C, not a
# quarter of the tile but every other 16 × 16 block along M and along N (the accumulator layout's waves repeat
# every 32 rows and columns: lesson 20 draws it).
CONFIG = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 4}
TARGETS = ("gfx950", "gfx942")


def kernel_layouts(target: str = "gfx950", BLOCK_M: int = 256, BLOCK_N: int = 256, BLOCK_K: int = 64,
                   num_warps: int = 4) -> dict:
    """The layout constexprs of matmul_kernel for ``target``: what matmul passes, what the checks compile."""
    acc_layout, a_layout, b_layout = mfma_layouts(target)
    a_copy, b_copy = tile_copy_layouts(BLOCK_M, BLOCK_N, BLOCK_K, num_warps)
    return {"acc_layout": acc_layout, "a_layout": a_layout, "b_layout": b_layout, "a_copy": a_copy, "b_copy": b_copy}


@gluon.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bn, stride_cm,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  acc_layout: gl.constexpr, a_layout: gl.constexpr, b_layout: gl.constexpr,
                  a_copy: gl.constexpr, b_copy: gl.constexpr):
    # One program per BLOCK_M × BLOCK_N tile of C, in row-major order.
    pid = gl.program_id(0)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n

    # Indices in the slices of the copy layouts: each lane moves one 16-byte vector along K. A is row-major, element
    # (m, k) at m·stride_am + k; B is K-contiguous, element (k, n) at k + n·stride_bn.
    offs_am = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, a_copy))
    offs_ak = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, a_copy))
    offs_bk = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(1, b_copy))
    offs_bn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, b_copy))
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_ak[None, :]
    b_ptrs = b_ptr + offs_bk[:, None] + offs_bn[None, :] * stride_bn

    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    for k in range(0, K, BLOCK_K):
        # TODO gap 1: load the two tiles at k (rows past M, columns past N and the K tail read as 0), then multiply them into acc with mfma
        gl.static_assert(False, 'lesson 20, gap 1 not yet implemented: load the two tiles at k (rows past M, columns past N and the K tail read as 0), then multiply them into acc with mfma')
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K

    # C is stored from the accumulator's own layout (each lane holds 4 consecutive columns of a row), rounded to the
    # inputs' dtype; the mask stops at the M and N edges.
    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    # TODO gap 2: store acc into C, rounded to C's dtype, masked at the M and N edges
    gl.static_assert(False, "lesson 20, gap 2 not yet implemented: store acc into C, rounded to C's dtype, masked at the M and N edges")


def matmul(a, b, c=None, **config):
    """C = A·B (A row-major, B K-contiguous) on an AMD gfx950 or gfx942 GPU; returns ``c``."""
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_amd_gemm_args(a, b, c, buffer_ops=False)
    if empty_product(a, b, c):          # M, N or K is 0: what torch.matmul returns
        return c
    unknown = set(config) - set(CONFIG)
    if unknown:
        raise TypeError(f"unknown config keys {sorted(unknown)}; matmul takes {sorted(CONFIG)}")
    cfg = {**CONFIG, **config}
    target = require_amd_gpu(TARGETS, a)
    require_tile(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], cfg["num_warps"], target)
    num_warps = cfg.pop("num_warps")
    grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(1), c.stride(0), **cfg,
                        **kernel_layouts(target, **cfg, num_warps=num_warps), num_warps=num_warps)
    return c
