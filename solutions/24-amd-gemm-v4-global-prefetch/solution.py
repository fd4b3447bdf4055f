"""Lesson 24 · AMD GEMM v4: global prefetch.

Versions 2 and 3 start the copies of a tile and wait for them at once: every K step pays the whole latency of global
memory before its first MFMA, and the MFMAs stand still meanwhile. Version 4 keeps two LDS buffers per operand. While
the MFMAs read tile i from one buffer, the copies of tile i + 1 fill the other; the wait before the reads
(``wait_group(1)``) lets the newest group, tile i + 1's, stay in flight, so only tile i's copies, started a whole
step earlier, must have landed. Two padded 256 × 64 tiles of one operand take 66 KiB of LDS (67 552 bytes), both
operands 132 KiB (135 104 bytes), which gfx950's 160 KiB per CU holds; gfx942's 64 KiB would not.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.amd import cdna3, cdna4
from triton.experimental.gluon.language.amd.cdna4 import async_copy

from gluon_course.amd import (K_MULTIPLE, WARP_SIZE, lds_layouts, mfma_layouts, require_amd_gemm_args,
                              require_amd_gpu, require_tile, tile_copy_layouts)
from gluon_course.memory.lds import direct_copy_layout
from gluon_course.validate import empty_product

# The vendor's tile: 256 × 256 × 64, 4 waves, 2 along M × 2 along N; each holds 128 × 128 elements of C, not a
# quarter of the tile but every other 16 × 16 block along M and along N (the accumulator layout's waves repeat
# every 32 rows and columns: lesson 20 draws it).
CONFIG = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 4}
# gfx950 only: gfx942's direct-to-LDS loads move at most 4 bytes per lane, and these tiles are copied 16 at a time.
TARGETS = ("gfx950",)
# (And two stages of padded tiles of A and B, 132 KiB of LDS, would not fit gfx942's 64 KiB per CU.)


def kernel_layouts(target: str = "gfx950", BLOCK_M: int = 256, BLOCK_N: int = 256, BLOCK_K: int = 64,
                   num_warps: int = 4, lds: str = "padded") -> dict:
    """The layout constexprs of matmul_kernel for ``target``: what matmul passes, what the checks compile.
    ``lds`` picks the LDS layouts: ``"padded"`` (lesson 23's, launched), ``"plain"`` or ``"swizzled"``."""
    acc_layout, a_layout, b_layout = mfma_layouts(target)
    if lds == "padded":
        # Lesson 23's layouts; its copy_layout_for is kept in the toolkit as direct_copy_layout.
        # (The padding depends on the element's width only: the same layouts serve fp16 and bf16.)
        a_shared = cdna4.compute_efficient_padded_shared_layout(a_layout, [BLOCK_M, BLOCK_K], gl.float16)
        b_shared = cdna4.compute_efficient_padded_shared_layout(b_layout, [BLOCK_K, BLOCK_N], gl.float16)
        a_copy = direct_copy_layout(a_shared, [BLOCK_M, BLOCK_K], 8, WARP_SIZE, num_warps)
        b_copy = direct_copy_layout(b_shared, [BLOCK_K, BLOCK_N], 8, WARP_SIZE, num_warps)
    else:
        # The unpadded layouts are written by lesson 20's copy layouts: 16 bytes per lane along K.
        a_shared, b_shared = lds_layouts(lds)
        a_copy, b_copy = tile_copy_layouts(BLOCK_M, BLOCK_N, BLOCK_K, num_warps)
    if a_shared is None or b_shared is None:
        raise ValueError(f"Triton has no padded layout for a {BLOCK_M} × {BLOCK_N} × {BLOCK_K} tile of this MFMA; "
                         "use the lesson's 256 × 256 × 64, or lds='swizzled'")
    return {"acc_layout": acc_layout, "a_layout": a_layout, "b_layout": b_layout, "a_copy": a_copy, "b_copy": b_copy,
            "a_shared": a_shared, "b_shared": b_shared}


@gluon.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bn, stride_cm,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  acc_layout: gl.constexpr, a_layout: gl.constexpr, b_layout: gl.constexpr,
                  a_copy: gl.constexpr, b_copy: gl.constexpr, a_shared: gl.constexpr, b_shared: gl.constexpr):
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

    # Two LDS buffers per operand: while the MFMAs read one, the copies of the next tile fill the other.
    a_smem = gl.allocate_shared_memory(a_ptr.dtype.element_ty, [2, BLOCK_M, BLOCK_K], a_shared)
    b_smem = gl.allocate_shared_memory(b_ptr.dtype.element_ty, [2, BLOCK_K, BLOCK_N], b_shared)

    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    ### BEGIN SOLUTION: before the loop, start copying tile 0 into buffer 0 (one commit group); the offsets then point at tile 1
    async_copy.buffer_load_to_shared(a_smem.index(0), a_ptr, a_offsets, mask=(offs_am[:, None] < M) & (offs_ak[None, :] < K))
    async_copy.buffer_load_to_shared(b_smem.index(0), b_ptr, b_offsets, mask=(offs_bk[:, None] < K) & (offs_bn[None, :] < N))
    async_copy.commit_group()
    a_offsets += BLOCK_K
    b_offsets += BLOCK_K
    ### END SOLUTION
    for i in range(gl.cdiv(K, BLOCK_K)):
        # The next tile starts at k_next; on the last step it lies past the end of K, so its copies are masked off
        # entirely: they read nothing and write zeros into the buffer nobody reads again.
        k_next = (i + 1) * BLOCK_K
        a_mask = (offs_am[:, None] < M) & ((k_next + offs_ak)[None, :] < K)
        b_mask = ((k_next + offs_bk)[:, None] < K) & (offs_bn[None, :] < N)
        ### BEGIN SOLUTION: copy tile i + 1 into the other buffer, then wait for tile i only (one group may stay in flight) and multiply it
        # Every wave must be done reading buffer (i + 1) % 2, which held tile i - 1, before the copies refill it.
        gl.barrier()
        async_copy.buffer_load_to_shared(a_smem.index((i + 1) % 2), a_ptr, a_offsets, mask=a_mask)
        async_copy.buffer_load_to_shared(b_smem.index((i + 1) % 2), b_ptr, b_offsets, mask=b_mask)
        async_copy.commit_group()
        # Two groups are in flight, tile i's and tile i + 1's; at most one may remain: tile i's has landed.
        async_copy.wait_group(1)
        gl.barrier()
        acc = cdna3.mfma(a_smem.index(i % 2).load(a_layout), b_smem.index(i % 2).load(b_layout), acc)
        ### END SOLUTION
        a_offsets += BLOCK_K
        b_offsets += BLOCK_K
    # The last group (the masked-off tile past K) may still be in flight: no program ends with copies into its LDS.
    async_copy.wait_group(0)

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
    """C = A·B (A row-major, B K-contiguous) on an AMD gfx950 GPU; returns ``c``."""
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    # Buffer offsets: each tensor at most 2 GiB; 16-byte copies: K and the row strides multiples of 16.
    M, N, K = require_amd_gemm_args(a, b, c, k_multiple=K_MULTIPLE)
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
