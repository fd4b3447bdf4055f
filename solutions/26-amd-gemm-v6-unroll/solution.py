"""Lesson 26 · AMD GEMM v6: unroll ×2.

Version 5 reads tile i + 1 into the same variables (a, b) that tile i's MFMAs read: in the vendor's kernel, whose
scheduler interleaves those reads with the MFMAs, the reads must land in other registers, and every step ends with
a block of register copies. Version 6 unrolls the K loop by two and alternates two sets of operand registers: step i
multiplies (a, b) while it reads tile i + 1 into (a_odd, b_odd); step i + 1 multiplies those while it reads tile
i + 2 into (a, b). No copy is needed, by construction; but both sets are live at once, next to a 256-register
accumulator, and the kernel walks into the wall of 512 registers per lane.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.amd import cdna3
from triton.experimental.gluon.language.amd.cdna4 import async_copy

from gluon_course.amd import launch_gemm, padded_gemm_layouts

# Version 5's tile and stages.
CONFIG = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 4}
TARGETS = ("gfx950",)


def kernel_layouts(target: str = "gfx950", BLOCK_M: int = 256, BLOCK_N: int = 256, BLOCK_K: int = 64,
                   num_warps: int = 4) -> dict:
    """The layout constexprs of matmul_kernel: lesson 24's (padded LDS, the copy layouts that write it)."""
    return padded_gemm_layouts(target, (BLOCK_M, BLOCK_K), (BLOCK_K, BLOCK_N), num_warps)


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

    # Lesson 24's offsets: each lane copies one 16-byte vector along K; the offsets advance one tile per copy.
    offs_am = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, a_copy))
    offs_ak = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, a_copy))
    offs_bk = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(1, b_copy))
    offs_bn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, b_copy))
    a_offsets = offs_am[:, None] * stride_am + offs_ak[None, :]
    b_offsets = offs_bk[:, None] + offs_bn[None, :] * stride_bn

    # Two LDS buffers per operand, as in version 4: tile t lives in buffer t % 2.
    a_smem = gl.allocate_shared_memory(a_ptr.dtype.element_ty, [2, BLOCK_M, BLOCK_K], a_shared)
    b_smem = gl.allocate_shared_memory(b_ptr.dtype.element_ty, [2, BLOCK_K, BLOCK_N], b_shared)

    # Prologue: tiles 0 and 1 into buffers 0 and 1, one commit group each (a tile past K is masked off: zeros).
    for t in gl.static_range(2):
        async_copy.buffer_load_to_shared(a_smem.index(t), a_ptr, a_offsets,
                                         mask=(offs_am[:, None] < M) & ((t * BLOCK_K + offs_ak)[None, :] < K))
        async_copy.buffer_load_to_shared(b_smem.index(t), b_ptr, b_offsets,
                                         mask=((t * BLOCK_K + offs_bk)[:, None] < K) & (offs_bn[None, :] < N))
        async_copy.commit_group()
        a_offsets += BLOCK_K
        b_offsets += BLOCK_K
    # Tile 0 into registers once its group has landed (lesson 25's prologue).
    async_copy.wait_group(1)
    gl.barrier()
    a = a_smem.index(0).load(a_layout)
    b = b_smem.index(0).load(b_layout)

    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    # Tiles come in pairs: an odd count is rounded up with one tile past K, which is masked off (zeros).
    num_k = gl.cdiv(gl.cdiv(K, BLOCK_K), 2) * 2
    for i in range(0, num_k - 2, 2):
        ### BEGIN SOLUTION: two steps per trip: tile i from (a, b) while tile i + 1 is read into (a_odd, b_odd), then tile i + 1 from those while tile i + 2 is read into (a, b)
        # Step i: tile i is in (a, b), in registers; tile i + 2 refills buffer 0; tile i + 1 is read into (a_odd, b_odd).
        acc = cdna3.mfma(a, b, acc)
        async_copy.wait_group(0)
        gl.barrier()
        k_next = (i + 2) * BLOCK_K
        async_copy.buffer_load_to_shared(a_smem.index(0), a_ptr, a_offsets,
                                         mask=(offs_am[:, None] < M) & ((k_next + offs_ak)[None, :] < K))
        async_copy.buffer_load_to_shared(b_smem.index(0), b_ptr, b_offsets,
                                         mask=((k_next + offs_bk)[:, None] < K) & (offs_bn[None, :] < N))
        async_copy.commit_group()
        a_odd = a_smem.index(1).load(a_layout)
        b_odd = b_smem.index(1).load(b_layout)
        a_offsets += BLOCK_K
        b_offsets += BLOCK_K
        # Step i + 1: the same with the roles swapped: tile i + 3 refills buffer 1, tile i + 2 is read into (a, b).
        acc = cdna3.mfma(a_odd, b_odd, acc)
        async_copy.wait_group(0)
        gl.barrier()
        k_next = (i + 3) * BLOCK_K
        async_copy.buffer_load_to_shared(a_smem.index(1), a_ptr, a_offsets,
                                         mask=(offs_am[:, None] < M) & ((k_next + offs_ak)[None, :] < K))
        async_copy.buffer_load_to_shared(b_smem.index(1), b_ptr, b_offsets,
                                         mask=((k_next + offs_bk)[:, None] < K) & (offs_bn[None, :] < N))
        async_copy.commit_group()
        a = a_smem.index(0).load(a_layout)
        b = b_smem.index(0).load(b_layout)
        a_offsets += BLOCK_K
        b_offsets += BLOCK_K
        ### END SOLUTION
    # The last pair: tile num_k - 2 is in (a, b); tile num_k - 1 is waited for, read and multiplied.
    acc = cdna3.mfma(a, b, acc)
    async_copy.wait_group(0)
    gl.barrier()
    a_odd = a_smem.index(1).load(a_layout)
    b_odd = b_smem.index(1).load(b_layout)
    acc = cdna3.mfma(a_odd, b_odd, acc)

    # C from the accumulator's own layout, rounded to the inputs' dtype, masked at the M and N edges.
    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    c_offsets = offs_cm[:, None] * stride_cm + offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    cdna3.buffer_store(acc.to(c_ptr.dtype.element_ty), c_ptr, c_offsets, mask=c_mask)


def matmul(a, b, c=None, **config):
    """C = A·B (A row-major, B K-contiguous) on an AMD gfx950 GPU; returns ``c``."""
    return launch_gemm(matmul_kernel, a, b, c, CONFIG, config, TARGETS, kernel_layouts)
