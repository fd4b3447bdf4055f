"""Lesson 23 · AMD GEMM v3: LDS layouts.

Version 2 copies each tile into LDS row after row, K fastest, exactly as it lies in memory. The MFMA operands are
then read with ``ds_read_b128``: each lane 16 bytes of one row, 16 rows per instruction. Rows 128 bytes apart in
a plain tile sit in the same banks every other row, so four lanes of one LDS phase ask the same banks for
different words: a 4-way conflict, four times the LDS cycles. Version 3 changes only the LDS layouts, not the
kernel: a *padded* layout (``PaddedSharedLayout``) reorders the rows and inserts 16 spare elements after every
512, which spreads the rows of a read over all 64 banks. Triton computes one for a given MFMA operand
(``compute_efficient_padded_shared_layout``); the copies must then write LDS in an order of their own, a
``DistributedLinearLayout`` read off the padded layout, because a direct-to-LDS copy writes one contiguous run per
wave and instruction.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.amd import cdna3, cdna4
from triton.experimental.gluon.language.amd.cdna4 import async_copy

from gluon_course.amd import (K_MULTIPLE, WARP_SIZE, lds_layouts, mfma_layouts, require_amd_gemm_args,
                              require_amd_gpu, require_tile, tile_copy_layouts)
from gluon_course.validate import empty_product

# The vendor's tile: 256 × 256 × 64, 4 waves, 2 along M × 2 along N; each holds 128 × 128 elements of C, not a
# quarter of the tile but every other 16 × 16 block along M and along N (the accumulator layout's waves repeat
# every 32 rows and columns: lesson 20 draws it).
CONFIG = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 4}
# gfx950 only: gfx942's direct-to-LDS loads move at most 4 bytes per lane, and these tiles are copied 16 at a time.
TARGETS = ("gfx950",)


def copy_layout_for(shared, shape, num_warps: int = 4, vector: int = 8) -> gl.DistributedLinearLayout:
    """The layout in which a direct-to-LDS copy writes ``shared`` (a padded layout) one contiguous run per wave and
    instruction: the offset bases of the layout, dealt out in order to each lane's vector, the lanes of a wave, the
    waves, and the lane's further vectors."""
    ### BEGIN SOLUTION: deal the padded layout's offset bases out to registers, lanes and waves, in that order
    # A copy instruction takes one LDS address per wave and writes the lanes' 16-byte vectors one after the other:
    # so the first offset bits must be a lane's own elements, the next ones the lanes, then the waves. The bits
    # left over are the further vectors each lane copies (more registers).
    bases = [list(basis) for basis in shared.offset_bases]
    v, lanes, waves = vector.bit_length() - 1, WARP_SIZE.bit_length() - 1, num_warps.bit_length() - 1
    return gl.DistributedLinearLayout(reg_bases=bases[:v] + bases[v + lanes + waves:],
                                      lane_bases=bases[v:v + lanes], warp_bases=bases[v + lanes:v + lanes + waves],
                                      block_bases=[], shape=list(shape))
    ### END SOLUTION


def kernel_layouts(target: str = "gfx950", BLOCK_M: int = 256, BLOCK_N: int = 256, BLOCK_K: int = 64,
                   num_warps: int = 4, lds: str = "padded") -> dict:
    """The layout constexprs of matmul_kernel for ``target``: what matmul passes, what the checks compile.
    ``lds`` picks the LDS layouts: ``"padded"`` (this lesson's), ``"plain"`` (version 2's) or ``"swizzled"``."""
    acc_layout, a_layout, b_layout = mfma_layouts(target)
    if lds == "padded":
        # (The padding depends on the element's width only: the same layouts serve fp16 and bf16.)
        ### BEGIN SOLUTION: the padded LDS layouts Triton computes for the two operands, and the copy layouts that write them
        a_shared = cdna4.compute_efficient_padded_shared_layout(a_layout, [BLOCK_M, BLOCK_K], gl.float16)
        b_shared = cdna4.compute_efficient_padded_shared_layout(b_layout, [BLOCK_K, BLOCK_N], gl.float16)
        a_copy = copy_layout_for(a_shared, [BLOCK_M, BLOCK_K], num_warps)
        b_copy = copy_layout_for(b_shared, [BLOCK_K, BLOCK_N], num_warps)
        ### END SOLUTION
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
