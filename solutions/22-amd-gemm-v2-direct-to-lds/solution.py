"""Lesson 22 · AMD GEMM v2: direct-to-LDS copies.

Versions 0 and 1 brought each tile into registers, wrote it to LDS and read it back in the MFMA operand layouts
(``convert_layout``). On gfx950 a buffer load can write LDS itself: ``buffer_load_dwordx4 … lds`` takes a per-lane
global offset and one LDS address per wave, and the 16 bytes of each lane land in LDS without touching a register.
Gluon spells it ``async_copy.buffer_load_to_shared``; like cp.async on NVIDIA it is asynchronous, grouped by
``commit_group`` and waited for with ``wait_group``. The tiles now live in LDS buffers the kernel allocates, and
the MFMA operands are read from them with ``.load(layout)``. No ``ds_write`` is left, and the registers that held
the tiles are free.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.amd import cdna3
from triton.experimental.gluon.language.amd.cdna4 import async_copy

from gluon_course.amd import (DIRECT_COPY_BYTES, K_MULTIPLE, lds_layouts, mfma_layouts, require_amd_gemm_args, require_amd_gpu,
                              require_tile, tile_copy_layouts)
from gluon_course.validate import empty_product

# The vendor's tile: 256 × 256 × 64, 4 waves, 2 along M × 2 along N; each holds 128 × 128 elements of C, not a
# quarter of the tile but every other 16 × 16 block along M and along N (the accumulator layout's waves repeat
# every 32 rows and columns: lesson 20 draws it).
CONFIG = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 4}
# gfx950, and gfx942 (MI300X) too: its direct-to-LDS copies move at most 4 bytes per lane, so there the same tiles
# take four times as many copies (kernel_layouts picks the vector for the target).
TARGETS = ("gfx950", "gfx942")


def kernel_layouts(target: str = "gfx950", BLOCK_M: int = 256, BLOCK_N: int = 256, BLOCK_K: int = 64,
                   num_warps: int = 4) -> dict:
    """The layout constexprs of matmul_kernel for ``target``: what matmul passes, what the checks compile."""
    acc_layout, a_layout, b_layout = mfma_layouts(target)
    # Each lane copies the widest vector the target's direct-to-LDS copy takes: 16 bytes on gfx950, 4 on gfx942.
    a_copy, b_copy = tile_copy_layouts(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, vector_bytes=DIRECT_COPY_BYTES[target])
    # Plain (unswizzled) LDS tiles with K fastest, as the copies write them: lane after lane, a vector each.
    a_shared, b_shared = lds_layouts("plain")
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

    # Indices in the slices of the copy layouts: each lane moves one vector along K (16 bytes; 4 on gfx942). A is
    # row-major, element (m, k) at m·stride_am + k; B is K-contiguous, element (k, n) at k + n·stride_bn. Buffer
    # loads take these offsets (32-bit, in elements) from the tensor's base pointer, not a 64-bit pointer each.
    offs_am = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, a_copy))
    offs_ak = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, a_copy))
    offs_bk = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(1, b_copy))
    offs_bn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, b_copy))
    a_offsets = offs_am[:, None] * stride_am + offs_ak[None, :]
    b_offsets = offs_bk[:, None] + offs_bn[None, :] * stride_bn

    # One LDS buffer per operand, allocated once and refilled every K step.
    a_smem = gl.allocate_shared_memory(a_ptr.dtype.element_ty, [BLOCK_M, BLOCK_K], a_shared)
    b_smem = gl.allocate_shared_memory(b_ptr.dtype.element_ty, [BLOCK_K, BLOCK_N], b_shared)

    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    for k in range(0, K, BLOCK_K):
        a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)
        b_mask = ((k + offs_bk)[:, None] < K) & (offs_bn[None, :] < N)
        ### BEGIN SOLUTION: copy both tiles straight into LDS (masked, without other=), wait for the copies, then read the operands from LDS and multiply
        # Every wave must be done reading the tiles of the last step before they are overwritten.
        gl.barrier()
        # A masked-off lane's offset is moved past the buffer's end, and the range check returns zeros, which the
        # copy writes into LDS. (other=0.0 would make Triton also write the zeros with a ds_write, behind a branch.)
        async_copy.buffer_load_to_shared(a_smem, a_ptr, a_offsets, mask=a_mask)
        async_copy.buffer_load_to_shared(b_smem, b_ptr, b_offsets, mask=b_mask)
        async_copy.commit_group()
        # wait_group(0): this wave's copies have landed; the barrier: every wave's have.
        async_copy.wait_group(0)
        gl.barrier()
        acc = cdna3.mfma(a_smem.load(a_layout), b_smem.load(b_layout), acc)
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
