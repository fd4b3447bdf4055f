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
    M, N, K = require_matmul_args(a, b, c, b_either_way=True)      # tl.dot takes B either way: by its strides
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


# -- The model shapes (lesson 32): the same kernel with split-K, over a space a Triton user would write -------------
# (BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, num_stages, num_warps). The first four are tiles for many rows; then tiles that
# split K for shapes with fewer tiles than SMs; then small BLOCK_M for a few rows (tl.dot takes mma.sync there, as
# wgmma needs 64 rows). prune() drops what a user would not try for a shape: a BLOCK_M over twice the rows, a split
# longer than K's steps, a split when the tiles already fill the GPU.
LINEAR_CONFIGS = ((128, 256, 64, 1, 3, 8), (128, 128, 64, 1, 4, 4), (128, 256, 32, 1, 4, 8), (64, 256, 64, 1, 4, 4),
                  (128, 128, 64, 2, 4, 4), (128, 128, 64, 4, 4, 4), (64, 128, 128, 2, 4, 4), (64, 128, 128, 4, 4, 4),
                  (16, 128, 128, 4, 5, 4), (16, 128, 128, 8, 5, 4), (32, 128, 128, 4, 4, 4), (16, 256, 128, 4, 4, 4),
                  (32, 64, 128, 8, 4, 4), (64, 64, 128, 8, 4, 4))
SMS = 132


def _linear_configs():
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": 8, "SPLIT_K": s}, num_stages=st,
                          num_warps=w) for m, n, k, s, st, w in LINEAR_CONFIGS]


def prune(configs, named_args, **kwargs):
    M, N, K = named_args["M"], named_args["N"], named_args["K"]
    kept = []
    for c in configs:
        kw = c.kwargs
        tiles = triton.cdiv(M, kw["BLOCK_M"]) * triton.cdiv(N, kw["BLOCK_N"])
        if kw["BLOCK_M"] > 2 * max(16, M) or kw["SPLIT_K"] > triton.cdiv(K, kw["BLOCK_K"]):
            continue
        if kw["SPLIT_K"] > 1 and tiles >= SMS:
            continue
        kept.append(c)
    return kept or configs[:1]


@triton.autotune(configs=_linear_configs(), key=["M", "N", "K"], prune_configs_by={"early_config_prune": prune})
@triton.jit
def tl_linear_kernel(a_ptr, b_ptr, c_ptr, partial_ptr, arrivals_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                     stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr):
    """tl_matmul_kernel with K split SPLIT_K ways: program ``pid`` sums slice ``pid % SPLIT_K`` of tile
    ``pid // SPLIT_K``; the last to arrive at the tile's counter adds the slices in order (deterministic, as lesson
    32's kernel does) and resets the counter."""
    pid = tl.program_id(0)
    tile = pid // SPLIT_K
    split = pid % SPLIT_K
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * num_pid_n
    first_pid_m = (tile // tiles_per_group) * GROUP_M
    group_rows = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile % tiles_per_group) % group_rows
    pid_n = (tile % tiles_per_group) // group_rows
    k_tiles = tl.cdiv(K, BLOCK_K)
    k_first = split * k_tiles // SPLIT_K
    k_last = (split + 1) * k_tiles // SPLIT_K
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = k_first * BLOCK_K + tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(k_first, k_last):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (tl.arange(0, BLOCK_K)[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(tl.arange(0, BLOCK_K)[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if SPLIT_K == 1:
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)
    else:
        in_tile = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
        slices = partial_ptr + tile * (SPLIT_K * BLOCK_M * BLOCK_N)
        tl.store(slices + split * (BLOCK_M * BLOCK_N) + in_tile, acc)
        tl.debug_barrier()
        arrived = tl.atomic_add(arrivals_ptr + tile, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLIT_K - 1:
            total = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
            for s in range(SPLIT_K):
                total += tl.load(slices + s * (BLOCK_M * BLOCK_N) + in_tile, cache_modifier=".cg")
            tl.store(c_ptrs, total.to(c_ptr.dtype.element_ty), mask=c_mask)
            tl.atomic_xchg(arrivals_ptr + tile, 0)


_SCRATCH: dict = {}


def linear(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None) -> torch.Tensor:
    """C = A·B with plain Triton for the model shapes (B K × N or w.t()), autotuned per (M, N, K) over
    ``LINEAR_CONFIGS`` (split-K included). The scratch for the slices is sized for any configuration of the space."""
    from ..validate import empty_product, require_matmul_args

    if c is None:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_matmul_args(a, b, c, b_either_way=True)
    if empty_product(a, b, c):
        return c
    key = (M, N, a.device)
    if key not in _SCRATCH:
        most = max(s for *_, s, _, _ in ((m, n, k, s, st, w) for m, n, k, s, st, w in LINEAR_CONFIGS))
        cells = triton.cdiv(M, 16) * 16 * triton.cdiv(N, 64) * 64 * most
        _SCRATCH[key] = (torch.empty(cells, dtype=torch.float32, device=a.device),
                         torch.zeros(triton.cdiv(M, 16) * triton.cdiv(N, 64), dtype=torch.int32, device=a.device))
    partial, arrivals = _SCRATCH[key]
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]) * meta["SPLIT_K"],)  # noqa
    tl_linear_kernel[grid](a, b, c, partial, arrivals, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                           c.stride(0), c.stride(1))
    return c


def chosen_linear_config(M: int, N: int, K: int) -> str:
    """The configuration ``linear``'s autotuner picked for a shape (after a call), as text."""
    for key, config in tl_linear_kernel.cache.items():
        if tuple(key[:3]) == (M, N, K):
            kw = config.kwargs
            return (f"{kw['BLOCK_M']}×{kw['BLOCK_N']}×{kw['BLOCK_K']}, split {kw['SPLIT_K']}, {config.num_stages} "
                    f"stages, {config.num_warps} warps")
    return "not tuned yet"


# -- Attention (lesson 36's bar) -------------------------------------------------------------------------------------
# The same forward attention as lesson 36's kernels in plain Triton: one program per block of queries and head, the
# key loop with tl.dot for S and for P·V, the online softmax in fp32 with exp2, causal masks on the diagonal blocks
# only, autotuned over the configurations below: (BLOCK_M, BLOCK_N, num_stages, num_warps).
ATTENTION_CONFIGS = ((128, 64, 3, 4), (128, 128, 2, 8), (128, 64, 4, 8), (64, 64, 3, 4))


def _attention_configs():
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_stages=s, num_warps=w)
            for m, n, s, w in ATTENTION_CONFIGS]


@triton.jit
def _attention_blocks(q, acc, m_i, l_i, k_ptrs, v_ptrs, stride_kn, stride_vn, start_m, Sk, qk_scale, first, last,
                      offs_m, offs_n, MASKED: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr):
    for start_n in range(first, last, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_ptrs + start_n * stride_kn, mask=(cols < Sk)[None, :], other=0.0)
        s = tl.dot(q, k) * qk_scale
        if MASKED:
            valid = cols[None, :] < Sk
            if CAUSAL:
                valid = valid & (cols[None, :] <= offs_m[:, None])
            s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptrs + start_n * stride_vn, mask=(cols < Sk)[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, m_i, l_i


@triton.autotune(configs=_attention_configs(), key=["Sq", "Sk", "HEAD_DIM", "CAUSAL"])
@triton.jit
def tl_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, Sq, Sk, qk_scale, stride_qh, stride_qm, stride_kh, stride_kn,
                        stride_vh, stride_vn, stride_oh, stride_om, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + bh * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :], mask=(offs_m < Sq)[:, None],
                other=0.0)
    k_ptrs = k_ptr + bh * stride_kh + offs_n[None, :] * stride_kn + offs_d[:, None]       # Kᵀ's tile: D × BLOCK_N
    v_ptrs = v_ptr + bh * stride_vh + offs_n[:, None] * stride_vn + offs_d[None, :]
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    if CAUSAL:
        full = tl.minimum(start_m // BLOCK_N * BLOCK_N, Sk // BLOCK_N * BLOCK_N)
        end = tl.minimum(start_m + BLOCK_M, Sk)
    else:
        full = Sk // BLOCK_N * BLOCK_N
        end = Sk
    acc, m_i, l_i = _attention_blocks(q, acc, m_i, l_i, k_ptrs, v_ptrs, stride_kn, stride_vn, start_m, Sk, qk_scale,
                                      0, full, offs_m, offs_n, False, CAUSAL, BLOCK_N)
    acc, m_i, l_i = _attention_blocks(q, acc, m_i, l_i, k_ptrs, v_ptrs, stride_kn, stride_vn, start_m, Sk, qk_scale,
                                      full, end, offs_m, offs_n, True, CAUSAL, BLOCK_N)
    acc = acc / l_i[:, None]
    tl.store(o_ptr + bh * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=(offs_m < Sq)[:, None])


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, out=None) -> torch.Tensor:
    """softmax(Q·Kᵀ/√D)·V (causal as PyTorch's is_causal) for contiguous (batch, heads, S, D) bf16 tensors."""
    B, H, Sq, D = q.shape
    Sk = k.shape[2]
    out = torch.empty_like(q) if out is None else out
    qk_scale = 1.4426950408889634 / D ** 0.5
    grid = lambda meta: (triton.cdiv(Sq, meta["BLOCK_M"]), B * H)  # noqa: E731
    tl_attention_kernel[grid](q, k, v, out, Sq, Sk, qk_scale, Sq * D, D, Sk * D, D, Sk * D, D, Sq * D, D,
                              HEAD_DIM=D, CAUSAL=causal)
    return out
