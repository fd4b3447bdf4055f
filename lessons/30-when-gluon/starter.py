# Lesson 30 starter, generated from solutions/30-when-gluon/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 30   (`make starters` rewrites it: keep a copy)
"""Lesson 30 · When to reach for Gluon.

Three kernels the course built in Gluon (lesson 02's copy, lesson 04's transposing copy, lesson 19's GEMM), here in
plain Triton (``tl``), where the compiler chooses the layouts, the shared-memory staging and the pipeline. The same
plain-Triton kernels put through Triton 3.9.0's Triton-to-Gluon translator are in ``translated/`` (written by
``python -m gluon_course translate 30``), and ``one_step.py`` is the translated GEMM with one change. The lesson
compares the rows of each kernel: what the compiler made of them, how many lines they take, how fast they run.
"""
import functools
from pathlib import Path

import triton
import triton.language as tl
from triton.experimental.gluon import language as gl  # noqa: F401 (a gap in the starter stops with gl.static_assert)

from gluon_course.measure.plain_triton import CONFIGS as GEMM_CONFIGS  # noqa: F401 (the GEMM's autotuning space)
from gluon_course.validate import empty_product, require_2d_pair, require_copy_pair, require_matmul_args

# The plain-Triton copies are autotuned over these small spaces (the GEMM's is measure.plain_triton.CONFIGS):
# the copy over (BLOCK, num_warps), 8 to 64 elements per thread; the transposing copy over (BLOCK_M, BLOCK_N,
# num_warps), four of lesson 04's six tiles.
COPY_CONFIGS = ((1024, 4), (2048, 4), (4096, 4), (4096, 8), (8192, 8))
TRANSPOSE_CONFIGS = ((64, 64, 4), (64, 64, 8), (128, 64, 8), (64, 128, 8))
# The kernels `python -m gluon_course translate 30` hands to the translator.
TRANSLATED = ("tl_copy_kernel", "tl_transpose_kernel", "tl_matmul_kernel")
# The translated GEMM's default tile: the configuration plain Triton's autotuner chose at bf16 8192³ on the H200
# (lesson 17's recording, 2026-12-01). num_stages is not a parameter: the translator drops the pipeline.
GEMM_CONFIG = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 8}


@triton.jit
def tl_copy_kernel(in_ptr, out_ptr, numel, BLOCK: tl.constexpr):
    """Lesson 02's copy in plain Triton: no layout anywhere; the compiler picks one for the load and the store."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < numel
    tl.store(out_ptr + offsets, tl.load(in_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def tl_transpose_kernel(in_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Lesson 04's transposing copy in plain Triton: x row-major (x[i, j] at i * N + j), out column-major
    (out[i, j] at j * M + i), one BLOCK_M × BLOCK_N tile per program, tiles in row-major order."""
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BLOCK_N)
    # TODO gap 1: the tile's rows and columns, the mask on both axes, load from x, store to out
    gl.static_assert(False, "lesson 30, gap 1 not yet implemented: the tile's rows and columns, the mask on both axes, load from x, store to out")


@triton.jit
def tl_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # The body of measure.plain_triton.tl_matmul_kernel (a test keeps them equal), without its @triton.autotune:
    # the translator copies decorators into its output, so the autotuned one would come out autotuned again.
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


# -- plain Triton, autotuned -------------------------------------------------------------------------------------

tl_copy_tuned = triton.autotune([triton.Config({"BLOCK": b}, num_warps=w) for b, w in COPY_CONFIGS],
                                key=["numel"])(tl_copy_kernel)
tl_transpose_tuned = triton.autotune([triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w)
                                      for bm, bn, w in TRANSPOSE_CONFIGS], key=["M", "N"])(tl_transpose_kernel)


def tl_copy(x, out):
    """Copy ``x`` into ``out`` (contiguous GPU tensors of one shape and dtype), autotuned over COPY_CONFIGS."""
    require_copy_pair(x, out)
    numel = x.numel()
    tl_copy_tuned[lambda meta: (triton.cdiv(numel, meta["BLOCK"]),)](x, out, numel)
    return out


def tl_transpose_copy(x, out):
    """out[i, j] = x[i, j] for a row-major ``x`` and a column-major ``out`` (lesson 04's contract), autotuned over
    TRANSPOSE_CONFIGS."""
    M, N = require_2d_pair(x, out, x_layout="row-major", out_layout="column-major")
    tl_transpose_tuned[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)](x, out, M, N)
    return out


# -- the translator's output, and the translated GEMM one step further --------------------------------------------

@functools.cache
def translated_kernel(name: str, one_step: bool = False):
    """A committed translation (sm90) of one of TRANSLATED, or with ``one_step`` the GEMM of one_step.py."""
    from gluon_course.course import load_module_file
    from gluon_course.grading.translate import load_translated

    if one_step:
        return load_module_file(Path(__file__).with_name("one_step.py"), "gluon_course_30_one_step").tl_matmul_kernel
    return getattr(load_translated("30", name, "sm_90"), name)


def translated_copy(x, out, BLOCK: int = 4096, num_warps: int = 4):
    """The translated copy, one BLOCK of elements per program (no autotuning: the translation has none)."""
    require_copy_pair(x, out)
    numel = x.numel()
    translated_kernel("tl_copy_kernel")[(triton.cdiv(numel, BLOCK),)](x, out, numel, BLOCK=BLOCK, num_warps=num_warps)
    return out


def translated_transpose_copy(x, out, BLOCK_M: int = 64, BLOCK_N: int = 64, num_warps: int = 4):
    """The translated transposing copy (lesson 04's contract), one tile per program."""
    M, N = require_2d_pair(x, out, x_layout="row-major", out_layout="column-major")
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    translated_kernel("tl_transpose_kernel")[grid](x, out, M, N, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                                   num_warps=num_warps)
    return out


def translated_matmul(a, b, c=None, one_step: bool = False, **config):
    """C = A·B by the translated GEMM (``one_step``: one_step.py's), at GEMM_CONFIG or the ``config`` given. A, B and
    C row-major, bf16 or fp16; Hopper only: the translation's tl.dot is wgmma (sm90)."""
    from gluon_course.nvidia.hopper import require_hopper

    if c is None and hasattr(a, "shape") and hasattr(b, "shape") and a.dim() == b.dim() == 2:
        c = a.new_empty((a.shape[0], b.shape[1]))
    M, N, K = require_matmul_args(a, b, c)
    if empty_product(a, b, c):
        return c
    unknown = set(config) - set(GEMM_CONFIG)
    if unknown:
        raise TypeError(f"unknown config keys {sorted(unknown)}; translated_matmul takes {sorted(GEMM_CONFIG)}")
    cfg = {**GEMM_CONFIG, **config}
    num_warps = cfg.pop("num_warps")
    if num_warps % 4 or cfg["BLOCK_M"] % 64:
        raise ValueError(f"num_warps={num_warps}, BLOCK_M={cfg['BLOCK_M']}: the translation's tl.dot takes wgmma only "
                         "for whole warpgroups (num_warps a multiple of 4) and BLOCK_M a multiple of 64")
    require_hopper(a)
    grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
    translated_kernel("tl_matmul_kernel", one_step)[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                                          b.stride(1), c.stride(0), c.stride(1), **cfg,
                                                          num_warps=num_warps)
    return c


def one_step_matmul(a, b, c=None, **config):
    """The translated GEMM with one_step.py's change."""
    return translated_matmul(a, b, c, one_step=True, **config)
