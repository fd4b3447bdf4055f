# Lesson 27 starter, generated from solutions/27-amd-gemm-v7-slice-n/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 27   (`make starters` rewrites it: keep a copy)
"""Lesson 27 · AMD GEMM v7: slice N, accumulators in AGPRs.

Version 6 holds two full sets of operand registers and a 256 × 256 accumulator at once: 512 registers of 512, and
Triton 3.9.0's allocator shuffles values between the two register files to make them fit. Version 7 cuts the tile
of C into a left and a right half (slices along N). Each half of B is copied, read and multiplied on its own, one
region after the other, so only one half of B sits in registers at a time; and the MFMAs are told to keep their
accumulators in the accumulation registers (``cd_regclass="a"``), the AGPRs: the half of the register file that
MFMAs, loads, stores and LDS instructions can use but the rest of the vector ALU cannot, leaving the ordinary
registers to the operands.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.amd import cdna3
from triton.experimental.gluon.language.amd.cdna4 import async_copy

from gluon_course.amd import launch_gemm, padded_gemm_layouts

CONFIG = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 4}
TARGETS = ("gfx950",)


def kernel_layouts(target: str = "gfx950", BLOCK_M: int = 256, BLOCK_N: int = 256, BLOCK_K: int = 64,
                   num_warps: int = 4) -> dict:
    """The layout constexprs of matmul_kernel: B's layouts are those of one half, BLOCK_K × BLOCK_N / 2."""
    return padded_gemm_layouts(target, (BLOCK_M, BLOCK_K), (BLOCK_K, BLOCK_N // 2), num_warps)


@gluon.jit
def copy_a_and_left(a_dst, bl_dst, a_ptr, b_ptr, a_offsets, bl_offsets, a_rows, bl_cols, a_k, b_k, k0, K):
    """One commit group: the tile of A and the left half of B's tile at K offset ``k0`` (their offsets point there)."""
    async_copy.buffer_load_to_shared(a_dst, a_ptr, a_offsets, mask=a_rows & (k0 + a_k < K))
    async_copy.buffer_load_to_shared(bl_dst, b_ptr, bl_offsets, mask=(k0 + b_k < K) & bl_cols)
    async_copy.commit_group()


@gluon.jit
def copy_right(br_dst, b_ptr, br_offsets, br_cols, b_k, k0, K):
    """One commit group: the right half of B's tile at K offset ``k0``."""
    async_copy.buffer_load_to_shared(br_dst, b_ptr, br_offsets, mask=(k0 + b_k < K) & br_cols)
    async_copy.commit_group()


@gluon.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bn, stride_cm,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  acc_layout: gl.constexpr, a_layout: gl.constexpr, b_layout: gl.constexpr,
                  a_copy: gl.constexpr, b_copy: gl.constexpr, a_shared: gl.constexpr, b_shared: gl.constexpr):
    HALF_N: gl.constexpr = BLOCK_N // 2
    pid = gl.program_id(0)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n

    # A's tile as before; B's in two halves of HALF_N columns, the right half HALF_N columns after the left.
    offs_am = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, a_copy))
    a_k = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, a_copy))[None, :]
    b_k = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(1, b_copy))[:, None]
    offs_bl = pid_n * BLOCK_N + gl.arange(0, HALF_N, layout=gl.SliceLayout(0, b_copy))
    offs_br = offs_bl + HALF_N
    a_rows = offs_am[:, None] < M
    bl_cols = offs_bl[None, :] < N
    br_cols = offs_br[None, :] < N
    a_offsets = offs_am[:, None] * stride_am + a_k
    bl_offsets = b_k + offs_bl[None, :] * stride_bn
    br_offsets = b_k + offs_br[None, :] * stride_bn

    # Two stages of A, of B's left half and of B's right half: three allocations.
    a_smem = gl.allocate_shared_memory(a_ptr.dtype.element_ty, [2, BLOCK_M, BLOCK_K], a_shared)
    bl_smem = gl.allocate_shared_memory(b_ptr.dtype.element_ty, [2, BLOCK_K, HALF_N], b_shared)
    br_smem = gl.allocate_shared_memory(b_ptr.dtype.element_ty, [2, BLOCK_K, HALF_N], b_shared)

    # Prologue: tiles 0 and 1, each as two groups (A with B's left half, then B's right half).
    for t in gl.static_range(2):
        copy_a_and_left(a_smem.index(t), bl_smem.index(t), a_ptr, b_ptr, a_offsets, bl_offsets, a_rows, bl_cols,
                        a_k, b_k, t * BLOCK_K, K)
        copy_right(br_smem.index(t), b_ptr, br_offsets, br_cols, b_k, t * BLOCK_K, K)
        a_offsets += BLOCK_K
        bl_offsets += BLOCK_K
        br_offsets += BLOCK_K
    # Four groups in flight; tile 0's first (A, left) may have three after it.
    async_copy.wait_group(3)
    gl.barrier()
    a = a_smem.index(0).load(a_layout)
    bl = bl_smem.index(0).load(b_layout)

    acc_left = gl.zeros([BLOCK_M, HALF_N], gl.float32, layout=acc_layout)
    acc_right = gl.zeros([BLOCK_M, HALF_N], gl.float32, layout=acc_layout)
    num_k = gl.cdiv(gl.cdiv(K, BLOCK_K), 2) * 2
    for i in range(0, num_k - 2, 2):
        for s in gl.static_range(2):
            # Step i + s: tile i + s lives in buffer s; tile i + s + 2 refills it; tile i + s + 1 is in buffer 1 - s.
            k0 = (i + s + 2) * BLOCK_K
            # TODO gap 1: the left region (multiply the left half; wait for and read the right half; refill A and the left half), then the right region (multiply the right half; wait for and read the next tile's A and left half; refill the right half)
            gl.static_assert(False, "lesson 27, gap 1 not yet implemented: the left region (multiply the left half; wait for and read the right half; refill A and the left half), then the right region (multiply the right half; wait for and read the next tile's A and left half; refill the right half)")
            a_offsets += BLOCK_K
            bl_offsets += BLOCK_K
            br_offsets += BLOCK_K
    # The last two tiles: nothing more to copy, so the waits count down to zero.
    acc_left = cdna3.mfma(a, bl, acc_left, cd_regclass="a")
    async_copy.wait_group(2)
    gl.barrier()
    br = br_smem.index(0).load(b_layout)
    acc_right = cdna3.mfma(a, br, acc_right, cd_regclass="a")
    async_copy.wait_group(1)
    gl.barrier()
    a = a_smem.index(1).load(a_layout)
    bl = bl_smem.index(1).load(b_layout)
    acc_left = cdna3.mfma(a, bl, acc_left, cd_regclass="a")
    async_copy.wait_group(0)
    gl.barrier()
    br = br_smem.index(1).load(b_layout)
    acc_right = cdna3.mfma(a, br, acc_right, cd_regclass="a")

    # C in two halves, each from its accumulator's own layout, masked at the M and N edges.
    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    offs_cn = pid_n * BLOCK_N + gl.arange(0, HALF_N, layout=gl.SliceLayout(0, acc_layout))
    c_offsets = offs_cm[:, None] * stride_cm + offs_cn[None, :]
    cdna3.buffer_store(acc_left.to(c_ptr.dtype.element_ty), c_ptr, c_offsets,
                       mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
    cdna3.buffer_store(acc_right.to(c_ptr.dtype.element_ty), c_ptr, c_offsets + HALF_N,
                       mask=(offs_cm[:, None] < M) & (offs_cn[None, :] + HALF_N < N))


def matmul(a, b, c=None, **config):
    """C = A·B (A row-major, B K-contiguous) on an AMD gfx950 GPU; returns ``c``."""
    return launch_gemm(matmul_kernel, a, b, c, CONFIG, config, TARGETS, kernel_layouts)
