"""Lesson 21 · AMD GEMM v1: buffer loads.

Version 0 guarded every load with a mask, and on AMD a mask that differs between the lanes of a wave becomes a
branch around the load: 16 of them in the K loop, more than a hundred in the kernel. Version 1 loads and stores
through *buffer* instructions instead: one scalar base pointer per tensor (in four scalar registers, the buffer
descriptor, which also holds the buffer's size) plus a 32-bit offset per lane. The hardware checks every offset
against the size and returns zeros for those past it (a store past it is dropped), so Triton turns a mask into an
offset moved out of range, with no branch. The rest of the kernel is version 0's.
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
    # (m, k) at m·stride_am + k; B is K-contiguous, element (k, n) at k + n·stride_bn. Buffer loads take these
    # offsets (32-bit, in elements) from the tensor's base pointer instead of a 64-bit pointer per element.
    offs_am = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, a_copy))
    offs_ak = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, a_copy))
    offs_bk = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(1, b_copy))
    offs_bn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, b_copy))
    a_offsets = offs_am[:, None] * stride_am + offs_ak[None, :]
    b_offsets = offs_bk[:, None] + offs_bn[None, :] * stride_bn

    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    for k in range(0, K, BLOCK_K):
        a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)
        b_mask = ((k + offs_bk)[:, None] < K) & (offs_bn[None, :] < N)
        ### BEGIN SOLUTION: load the two tiles with buffer_load (base pointer + offsets; the masks as before), then multiply them into acc with mfma
        # A masked-off lane's offset is moved past the buffer's end, where the hardware's range check returns 0: the
        # same zeros as other=0.0, without a branch.
        a = cdna3.buffer_load(a_ptr, a_offsets, mask=a_mask, other=0.0)
        b = cdna3.buffer_load(b_ptr, b_offsets, mask=b_mask, other=0.0)
        acc = cdna3.mfma(gl.convert_layout(a, a_layout), gl.convert_layout(b, b_layout), acc)
        ### END SOLUTION
        a_offsets += BLOCK_K
        b_offsets += BLOCK_K

    # C is stored from the accumulator's own layout (each lane holds 4 consecutive columns of a row), rounded to the
    # inputs' dtype; the mask stops at the M and N edges.
    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    ### BEGIN SOLUTION: store acc into C with buffer_store (masked at the M and N edges: a masked-off store is dropped)
    c_offsets = offs_cm[:, None] * stride_cm + offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    cdna3.buffer_store(acc.to(c_ptr.dtype.element_ty), c_ptr, c_offsets, mask=c_mask)
    ### END SOLUTION


def matmul(a, b, c=None, **config):
    """C = A·B (A row-major, B K-contiguous) on an AMD gfx950 or gfx942 GPU; returns ``c``."""
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_amd_gemm_args(a, b, c)        # buffer offsets: each tensor at most 2 GiB
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
