# Lesson 13 starter, generated from solutions/13-gemm-v3-cp-async/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 13   (`make starters` rewrites it: keep a copy)
"""Lesson 13 · GEMM v3: a cp.async pipeline.

Version 2 staged each tile of A and B through shared memory, but every thread first loaded its part into
registers and waited for it before storing it: each K step paid the full latency of global memory. Version 3
copies with ``cp.async`` (``LDGSTS`` in the machine code), which goes from global memory straight into shared
memory without waiting, into a ring of STAGES buffers: while the tensor cores work on tile i, the copies of
tiles i + 1 … i + STAGES − 1 are in flight. ``commit_group`` closes one tile's copies into a group and
``wait_group(n)`` waits until at most n groups are still in flight.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy, mma_v2

from gluon_course.validate import empty_product, require_matmul_args, require_power_of_two

# Lesson 12's tile widened to 128 × 128 (4 warps as 2 × 2, each a 64 × 64 piece of C), and a ring of 3 stages.
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 4, "warps_m": 2, "STAGES": 3}
# ldmatrix hands each thread two consecutive K elements of 16 bits per 8 × 8 matrix: k_width 2.
K_BYTES_PER_THREAD = 4
VECTOR_BYTES = 16      # the widest cp.async (LDGSTS.128): 8 bf16 / fp16 elements per thread and copy


def mma_layouts(num_warps: int, warps_m: int, element_bytes: int):
    """The accumulator layout of mma.sync m16n8 over the warps (``warps_m`` of them along M), and the layouts in
    which A (operand 0) and B (operand 1) must reach it: lesson 12's."""
    acc_layout = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[warps_m, num_warps // warps_m],
                                           instr_shape=[16, 8])
    k_width = K_BYTES_PER_THREAD // element_bytes
    a_layout = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=k_width)
    b_layout = gl.DotOperandLayout(operand_index=1, parent=acc_layout, k_width=k_width)
    return acc_layout, a_layout, b_layout


def coalesced_layout(rows: int, cols: int, num_warps: int, element_bytes: int = 2) -> gl.BlockedLayout:
    """Lesson 12's copy layout: each thread one 16-byte vector of a row, a warp's lanes along the row first, the
    warps down the tile. cp.async copies exactly these vectors."""
    vector = VECTOR_BYTES // element_bytes
    lanes_along_row = min(32, cols // vector)
    return gl.BlockedLayout(size_per_thread=[1, vector], threads_per_warp=[32 // lanes_along_row, lanes_along_row],
                            warps_per_cta=[num_warps, 1], order=[1, 0])


def kernel_layouts(BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, num_warps: int, warps_m: int,
                   element_bytes: int = 2) -> dict:
    """The layout constexprs of matmul_kernel (lesson 12's, swizzled): what matmul passes, what the checks compile.
    The NVMMA swizzle of one tile is the swizzle of every buffer of the ring."""
    acc_layout, a_layout, b_layout = mma_layouts(num_warps, warps_m, element_bytes)
    return {"acc_layout": acc_layout, "a_layout": a_layout, "b_layout": b_layout,
            "a_load": coalesced_layout(BLOCK_M, BLOCK_K, num_warps, element_bytes),
            "b_load": coalesced_layout(BLOCK_K, BLOCK_N, num_warps, element_bytes),
            "a_shared": gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_K], gl.bfloat16),
            "b_shared": gl.NVMMASharedLayout.get_default_for([BLOCK_K, BLOCK_N], gl.bfloat16)}


def can_copy_async(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether every 16-byte vector of A's and B's tiles starts on a 16-byte boundary, as the compiler can prove it.

    cp.async copies 4, 8 or 16 bytes, never one 2-byte element. The compiler knows an integer argument is a
    multiple of 16 (and a pointer 16-byte aligned) when the launch says so; for anything else it assumes one
    element, and refuses: "cp.async does not support transfers smaller than 4 bytes". So the rows of A and B
    (K, N and their row strides), and the masks along them, must come in whole multiples of 16 elements."""
    return (all(v % 16 == 0 for v in (a.shape[1], b.shape[1], a.stride(0), b.stride(0)))
            and a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0)


@gluon.jit
def copy_tile(dst, ptrs, mask, ASYNC_COPY: gl.constexpr):
    """Copy one tile from global to shared memory; masked-off elements become zeros."""
    if ASYNC_COPY:
        # TODO gap 1: start the copy of the tile at ptrs into dst with cp.async (the mask zero-fills)
        gl.static_assert(False, 'lesson 13, gap 1 not yet implemented: start the copy of the tile at ptrs into dst with cp.async (the mask zero-fills)')
    else:
        # Rows that cp.async cannot copy (see can_copy_async) go through registers, as in lesson 12.
        dst.store(gl.load(ptrs, mask=mask, other=0.0))


@gluon.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  acc_layout: gl.constexpr, a_layout: gl.constexpr, b_layout: gl.constexpr,
                  a_load: gl.constexpr, b_load: gl.constexpr, a_shared: gl.constexpr, b_shared: gl.constexpr,
                  STAGES: gl.constexpr, ASYNC_COPY: gl.constexpr):
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

    # TODO gap 2: a ring of STAGES buffers per operand; start copying tiles 0 … STAGES-2, one commit group each
    gl.static_assert(False, 'lesson 13, gap 2 not yet implemented: a ring of STAGES buffers per operand; start copying tiles 0 … STAGES-2, one commit group each')

    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    for i in range(gl.cdiv(K, BLOCK_K)):
        # TODO gap 3: wait for tile i, copy tile i + STAGES - 1 into the slot freed last iteration, compute on tile i
        gl.static_assert(False, 'lesson 13, gap 3 not yet implemented: wait for tile i, copy tile i + STAGES - 1 into the slot freed last iteration, compute on tile i')
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    # The last STAGES-1 groups (tiles past the end of K, all masked off) may still be pending: no program may end
    # with copies in flight into its shared memory.
    async_copy.wait_group(0)

    # C is stored from the accumulator's own layout, rounded to the inputs' dtype.
    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def check_tile_config(BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, num_warps: int, warps_m: int, STAGES: int) -> None:
    """Refuse a configuration the layouts cannot cover (lesson 12's rules) or a ring too short to overlap anything."""
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
        covered = coalesced_layout(rows, cols, num_warps).threads_per_warp[0] * num_warps
        if covered > rows:
            raise ValueError(f"a {rows} × {cols} tile has fewer rows than the {covered} one pass of its coalesced "
                             f"layout covers with {num_warps} warps: use a taller tile or fewer warps")
    if not (isinstance(STAGES, int) and STAGES >= 2):
        raise ValueError(f"STAGES={STAGES!r}: the ring needs at least 2 buffers, one read by the tensor cores while "
                         "copies fill the other")


def matmul(a, b, c=None, **config):
    """C = A·B on the tensor cores, A and B copied by cp.async into a ring of shared buffers; returns ``c``."""
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_matmul_args(a, b, c)
    if empty_product(a, b, c):          # M, N or K is 0: what torch.matmul returns
        return c
    unknown = set(config) - set(CONFIG)
    if unknown:
        raise TypeError(f"unknown config keys {sorted(unknown)}; matmul takes {sorted(CONFIG)}")
    cfg = {**CONFIG, **config}
    num_warps, warps_m = cfg.pop("num_warps"), cfg.pop("warps_m")
    check_tile_config(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps, warps_m, cfg["STAGES"])
    layouts = kernel_layouts(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps, warps_m, a.element_size())
    grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        **cfg, **layouts, ASYNC_COPY=can_copy_async(a, b), num_warps=num_warps)
    return c
