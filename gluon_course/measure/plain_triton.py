"""The bar the Gluon GEMMs are judged against beside the library: the same problem in plain Triton (``tl.dot``),
grouped order, autotuned over a small configuration space stated here. Written the way a Triton user would write
it, nothing more: if Gluon cannot beat this, Gluon is not worth its cost for a GEMM."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

# The space the autotuner searches (the same six configurations as the course's design run, 2026-12-01):
# (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps). GROUP_M is 8 throughout.
CONFIGS = ((128, 128, 64, 4, 4), (128, 256, 64, 3, 8), (128, 128, 32, 4, 4), (256, 128, 64, 3, 8),
           (128, 256, 32, 4, 8), (64, 256, 64, 4, 4))


def _configs():
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": 8}, num_stages=s, num_warps=w)
            for m, n, k, s, w in CONFIGS]


@triton.autotune(configs=_configs(), key=["M", "N", "K"])
@triton.jit
def tl_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * num_pid_n
    first_pid_m = (pid // tiles_per_group) * GROUP_M
    group_rows = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % tiles_per_group) % group_rows
    pid_n = (pid % tiles_per_group) // group_rows
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None) -> torch.Tensor:
    """C = A·B with plain Triton, autotuned per (M, N, K) over ``CONFIGS`` (the first call of a shape tunes)."""
    from ..validate import empty_product, require_matmul_args

    if c is None:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_matmul_args(a, b, c)
    if empty_product(a, b, c):          # M, N or K is 0: what torch.matmul returns (no grid of 0 programs)
        return c
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    tl_matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                           c.stride(1))
    return c


def chosen_config(M: int, N: int, K: int) -> str:
    """The configuration the autotuner picked for a shape it has tuned (after a call), as text."""
    for key, config in tl_matmul_kernel.cache.items():
        if tuple(key[:3]) == (M, N, K):
            kw = config.kwargs
            return (f"{kw['BLOCK_M']}×{kw['BLOCK_N']}×{kw['BLOCK_K']}, {config.num_stages} stages, "
                    f"{config.num_warps} warps")
    return "not tuned yet"
