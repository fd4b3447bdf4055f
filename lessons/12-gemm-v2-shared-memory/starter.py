# Lesson 12 starter, generated from solutions/12-gemm-v2-shared-memory/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 12   (`make starters` rewrites it: keep a copy)
"""Lesson 12 · GEMM v2: shared-memory staging.

Version 1 loaded each A and B tile from global memory straight into the registers that ``mma_v2`` reads
(``DotOperandLayout``): narrow loads, and every element fetched by two warps. Version 2 loads each tile once per
program, coalesced (a ``BlockedLayout`` with 16-byte vectors along the contiguous axis), writes it to shared
memory, and reads it back in the dot-operand layouts. That read compiles to ``ldmatrix`` (``LDSM``): one
instruction hands a warp four 8 × 8 matrices. Whether it costs 4 shared-memory wavefronts or 16 is decided by
the shared layout: the XOR swizzle of ``NVMMASharedLayout``, or a plain row-by-row layout.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2

from gluon_course.validate import empty_product, require_matmul_args, require_power_of_two

# ldmatrix hands each thread one 32-bit register per 8 × 8 matrix: two consecutive K elements of 16 bits. That
# is k_width 2; with version 1's k_width 4 Triton reads A with LDS.64 instead of ldmatrix.
K_BYTES_PER_THREAD = 4
VECTOR_BYTES = 16      # the widest global load (LDG.E.128) and shared store (STS.128) per thread


def mma_layouts(num_warps: int, warps_m: int, element_bytes: int):
    """The accumulator layout of mma.sync m16n8 over the warps (``warps_m`` of them along M), and the layouts in
    which A (operand 0) and B (operand 1) must reach it."""
    acc_layout = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[warps_m, num_warps // warps_m],
                                           instr_shape=[16, 8])
    k_width = K_BYTES_PER_THREAD // element_bytes
    a_layout = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=k_width)
    b_layout = gl.DotOperandLayout(operand_index=1, parent=acc_layout, k_width=k_width)
    return acc_layout, a_layout, b_layout


def coalesced_layout(rows: int, cols: int, num_warps: int, element_bytes: int = 2) -> gl.BlockedLayout:
    """A layout for loading a row-major rows × cols tile from global memory: each thread one 16-byte vector of
    a row, a warp's lanes side by side along the row (then down the rows), the warps stacked down the tile."""
    # TODO gap 1: 16-byte vectors along the columns, lanes along the row first, warps down the rows
    raise NotImplementedError('lesson 12, gap 1 not yet implemented: 16-byte vectors along the columns, lanes along the row first, warps down the rows')


PLAIN = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])


def shared_layouts(BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, swizzled: bool = True):
    """(A's, B's) shared-memory layouts: the swizzle NVIDIA's tensor-core paths expect, or PLAIN (row after row,
    no swizzle) to see what the swizzle is for."""
    if not swizzled:
        return PLAIN, PLAIN
    # TODO gap 2: the NVMMA swizzle for a BLOCK_M × BLOCK_K tile of A and a BLOCK_K × BLOCK_N tile of B
    raise NotImplementedError('lesson 12, gap 2 not yet implemented: the NVMMA swizzle for a BLOCK_M × BLOCK_K tile of A and a BLOCK_K × BLOCK_N tile of B')
    return a_shared, b_shared


@gluon.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  acc_layout: gl.constexpr, a_layout: gl.constexpr, b_layout: gl.constexpr,
                  a_load: gl.constexpr, b_load: gl.constexpr, a_shared: gl.constexpr, b_shared: gl.constexpr):
    # One program per BLOCK_M × BLOCK_N tile of C, in row-major order.
    pid = gl.program_id(0)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n

    # Index vectors in the slices of the coalesced load layouts: each thread loads one 16-byte vector of a row.
    offs_am = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, a_load))
    offs_ak = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, a_load))
    offs_bk = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(1, b_load))
    offs_bn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, b_load))
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_ak[None, :] * stride_ak
    b_ptrs = b_ptr + offs_bk[:, None] * stride_bk + offs_bn[None, :] * stride_bn

    # One shared-memory buffer per operand, allocated once and reused by every K step.
    a_smem = gl.allocate_shared_memory(a_ptr.dtype.element_ty, [BLOCK_M, BLOCK_K], a_shared)
    b_smem = gl.allocate_shared_memory(b_ptr.dtype.element_ty, [BLOCK_K, BLOCK_N], b_shared)

    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    for k in range(0, K, BLOCK_K):
        # The last step may run past K: those columns of A and rows of B load as 0 and add nothing.
        a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)
        b_mask = ((k + offs_bk)[:, None] < K) & (offs_bn[None, :] < N)
        a = gl.load(a_ptrs, mask=a_mask, other=0.0)
        b = gl.load(b_ptrs, mask=b_mask, other=0.0)
        # TODO gap 3: stage both tiles through shared memory, read them back in the operand layouts, mma_v2
        gl.static_assert(False, 'lesson 12, gap 3 not yet implemented: stage both tiles through shared memory, read them back in the operand layouts, mma_v2')
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    # C is stored from the accumulator's own layout, rounded to the inputs' dtype.
    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


# Version 1's tile: 128 × 64 × 32, 4 warps as 2 (along M) × 2 (along N); swizzled=False picks PLAIN shared layouts.
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "warps_m": 2, "swizzled": True}


def kernel_layouts(BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, num_warps: int, warps_m: int, swizzled: bool = True,
                   element_bytes: int = 2) -> dict:
    """The layout constexprs of matmul_kernel for one tile configuration (what matmul passes, what the checks
    compile)."""
    acc_layout, a_layout, b_layout = mma_layouts(num_warps, warps_m, element_bytes)
    a_shared, b_shared = shared_layouts(BLOCK_M, BLOCK_N, BLOCK_K, swizzled)
    return {"acc_layout": acc_layout, "a_layout": a_layout, "b_layout": b_layout,
            "a_load": coalesced_layout(BLOCK_M, BLOCK_K, num_warps, element_bytes),
            "b_load": coalesced_layout(BLOCK_K, BLOCK_N, num_warps, element_bytes),
            "a_shared": a_shared, "b_shared": b_shared}


def check_tile_config(BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, num_warps: int, warps_m: int) -> None:
    """Refuse a tile the layouts cannot cover once: 16 × 8 blocks per warp, ldmatrix.x4 on B reads 32 of K, and
    one pass of a coalesced load layout must fit in the tile (else two threads store the same element)."""
    for name, value in (("BLOCK_M", BLOCK_M), ("BLOCK_N", BLOCK_N), ("BLOCK_K", BLOCK_K), ("num_warps", num_warps),
                        ("warps_m", warps_m)):
        require_power_of_two(name, value)
    if warps_m > num_warps:
        raise ValueError(f"warps_m={warps_m} is more than num_warps={num_warps}")
    warps_n = num_warps // warps_m
    if BLOCK_M < 16 * warps_m or BLOCK_N < 8 * warps_n or BLOCK_K < 32:
        raise ValueError(f"a {BLOCK_M} × {BLOCK_N} × {BLOCK_K} tile is too small for {warps_m} × {warps_n} warps: "
                         f"BLOCK_M ≥ {16 * warps_m}, BLOCK_N ≥ {8 * warps_n}, BLOCK_K ≥ 32")
    for rows, cols in ((BLOCK_M, BLOCK_K), (BLOCK_K, BLOCK_N)):
        layout = coalesced_layout(rows, cols, num_warps)
        covered = layout.threads_per_warp[0] * num_warps
        if covered > rows:
            raise ValueError(f"a {rows} × {cols} tile has fewer rows than the {covered} one pass of its coalesced "
                             f"layout covers with {num_warps} warps: use a taller tile or fewer warps")


def matmul(a, b, c=None, **config):
    """C = A·B on the tensor cores, A and B staged through shared memory; returns ``c``."""
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_matmul_args(a, b, c)
    if empty_product(a, b, c):          # M, N or K is 0: what torch.matmul returns
        return c
    unknown = set(config) - set(CONFIG)
    if unknown:
        raise TypeError(f"unknown config keys {sorted(unknown)}; matmul takes {sorted(CONFIG)}")
    cfg = {**CONFIG, **config}
    num_warps, warps_m, swizzled = cfg.pop("num_warps"), cfg.pop("warps_m"), cfg.pop("swizzled")
    check_tile_config(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps, warps_m)
    layouts = kernel_layouts(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps, warps_m, swizzled,
                             a.element_size())
    grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        **cfg, **layouts, num_warps=num_warps)
    return c
