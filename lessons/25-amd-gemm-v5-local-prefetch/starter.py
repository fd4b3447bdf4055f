# Lesson 25 starter, generated from solutions/25-amd-gemm-v5-local-prefetch/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 25   (`make starters` rewrites it: keep a copy)
"""Lesson 25 · AMD GEMM v5: local prefetch.

Version 4 overlaps the copies of tile i + 1 with the work on tile i, but inside a step the MFMAs still wait for that
step's own LDS reads: read tile i, then multiply it. Version 5 reads one tile ahead into registers as well: step i
multiplies tile i from the registers its reads were issued into during step i - 1, copies tile i + 2 from global
memory into the LDS buffer tile i came from, and issues the reads of tile i + 1 from LDS into a second set of
registers. Three tiles are at three stages at every step: one in the MFMAs, one in LDS, one on its way from global
memory to LDS. The price, on paper, is a second set of operand registers (lesson 26 counts them). What Triton 3.9.0
makes of it (the notebook reads the listing): the reads issue after the step's last MFMA, and the next step's
first MFMAs wait for them; what the version gains there is its copies, spread among the MFMAs.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.amd import cdna3
from triton.experimental.gluon.language.amd.cdna4 import async_copy

from gluon_course.amd import launch_gemm, padded_gemm_layouts

# The vendor's tile: 256 × 256 × 64, 4 waves, 2 along M × 2 along N; each holds 128 × 128 elements of C, not a
# quarter of the tile but every other 16 × 16 block along M and along N (the accumulator layout's waves repeat
# every 32 rows and columns: lesson 20 draws it).
CONFIG = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 4}
# gfx950 only: 16-byte copies into LDS, and two padded stages of A and B (132 KiB) that gfx942's 64 KiB would not hold.
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
    # TODO gap 1: wait for tile 0 only (tile 1's group stays in flight), then read tile 0 into registers
    gl.static_assert(False, "lesson 25, gap 1 not yet implemented: wait for tile 0 only (tile 1's group stays in flight), then read tile 0 into registers")

    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    num_k = gl.cdiv(K, BLOCK_K)
    for i in range(num_k - 1):
        # Tile i + 2 starts at k_next; near the end of K it lies past it, and its copies are masked off.
        k_next = (i + 2) * BLOCK_K
        a_mask = (offs_am[:, None] < M) & ((k_next + offs_ak)[None, :] < K)
        b_mask = ((k_next + offs_bk)[:, None] < K) & (offs_bn[None, :] < N)
        # TODO gap 2: multiply tile i (in registers); wait for tile i + 1; refill buffer i % 2 with tile i + 2; read tile i + 1 into registers
        gl.static_assert(False, 'lesson 25, gap 2 not yet implemented: multiply tile i (in registers); wait for tile i + 1; refill buffer i % 2 with tile i + 2; read tile i + 1 into registers')
        a_offsets += BLOCK_K
        b_offsets += BLOCK_K
    # The last tile is in registers: multiply it. The last group (a tile past K, masked off) must land before the
    # program ends.
    acc = cdna3.mfma(a, b, acc)
    async_copy.wait_group(0)

    # C from the accumulator's own layout, rounded to the inputs' dtype, masked at the M and N edges.
    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    c_offsets = offs_cm[:, None] * stride_cm + offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    cdna3.buffer_store(acc.to(c_ptr.dtype.element_ty), c_ptr, c_offsets, mask=c_mask)


def matmul(a, b, c=None, **config):
    """C = A·B (A row-major, B K-contiguous) on an AMD gfx950 GPU; returns ``c``."""
    return launch_gemm(matmul_kernel, a, b, c, CONFIG, config, TARGETS, kernel_layouts)
