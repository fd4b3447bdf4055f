# Lesson 19 starter, generated from solutions/19-gemm-v9-epilogue/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 19   (`make starters` rewrites it: keep a copy)
"""Lesson 19 · GEMM v9: the epilogue overlapped, and the last 5%.

Lesson 18's consumers stored each tile of C from their registers with plain stores, and the next tile's products
waited until every store had left. Here the epilogue goes through shared memory: the consumers write the tile
into a shared buffer, fence, and hand it to TMA (``tma.async_store``), which writes it to global memory on its own
while the consumers start the next tile; they wait for that store only when they need the buffer again, one tile
later (``tma.store_wait``). The launcher also takes B as the transpose of an N × K matrix (how ``nn.Linear`` keeps
its weights): wgmma reads either from shared memory, so only the TMA descriptor and a ``permute`` of the slot change.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from gluon_course.nvidia.hopper import require_hopper, require_wgmma_tile, tma_descriptor
from gluon_course.validate import empty_product, require_matmul_args

# Lesson 18's tile, warpgroups and order; 3 slots (144 KiB) now that C's tile takes 64 KiB of shared memory too.
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "STAGES": 3, "GROUP_M": 8,
          "LOAD_REGS": 40}


def wgmma_layout(num_warps: int, BLOCK_N: int):
    """The accumulator layout of wgmma: version 3, warps stacked along M (each warpgroup 64 rows), one instruction
    spanning the tile's BLOCK_N columns, 16 of K per instruction."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_N, 16])


def kernel_layouts(num_warps: int, BLOCK_N: int) -> dict:
    """The layout constexprs of matmul_kernel: what matmul passes, what the checks compile."""
    return {"acc_layout": wgmma_layout(num_warps, BLOCK_N)}


@gluon.jit
def grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    """(pid_m, pid_n) of tile number ``tile`` in lesson 17's grouped order."""
    tiles_per_group = GROUP_M * num_pid_n
    first_pid_m = (tile // tiles_per_group) * GROUP_M
    group_rows = gl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile % tiles_per_group) % group_rows
    pid_n = (tile % tiles_per_group) // group_rows
    return pid_m, pid_n


@gluon.jit
def load_partition(a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, STAGES: gl.constexpr,
                   GROUP_M: gl.constexpr, B_KN: gl.constexpr):
    """The producer (one warp), lesson 18's; B's tile is [BLOCK_K, BLOCK_N] of a K × N matrix, or [BLOCK_N, BLOCK_K]
    of an N × K one (``B_KN`` false)."""
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1] if B_KN else b_desc.block_shape[0]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(empty.index(slot), ((step // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            tma.async_load(a_desc, [pid_m * BLOCK_M, k * BLOCK_K], ready.index(slot), a_ring.index(slot))
            # TODO gap 1: B's tile of this K step: its coordinates in a K × N matrix, or in an N × K one
            gl.static_assert(False, "lesson 19, gap 1 not yet implemented: B's tile of this K step: its coordinates in a K × N matrix, or in an N × K one")
            step += 1


@gluon.jit
def mma_partition(c_desc, a_ring, b_ring, c_smem, ready, empty, M, N, K, STAGES: gl.constexpr,
                  GROUP_M: gl.constexpr, acc_layout: gl.constexpr, B_KN: gl.constexpr):
    """The consumers (two warpgroups): lesson 18's products, and C's tile handed to TMA through shared memory."""
    BLOCK_M: gl.constexpr = c_desc.block_shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_shape[1]
    BLOCK_K: gl.constexpr = a_ring.shape[2]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
            # wgmma takes B as a K × N view of shared memory: an N × K tile is viewed transposed (no data moves; the
            # matrix descriptor says the tile is K-major, as A's is).
            b = b_ring.index(slot) if B_KN else b_ring.index(slot).permute((1, 0))
            acc = warpgroup_mma(a_ring.index(slot), b, acc, is_async=True)
            acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b))
            mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES), pred=k > 0)
            step += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES))
        # TODO gap 2: C's tile through shared memory: wait for the last tile's store, write, fence, start the store
        gl.static_assert(False, "lesson 19, gap 2 not yet implemented: C's tile through shared memory: wait for the last tile's store, write, fence, start the store")
    # The last tile's store must finish before the program (and its shared memory) ends.
    tma.store_wait(0)


@gluon.jit
def matmul_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                  BLOCK_K: gl.constexpr, acc_layout: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                  LOAD_REGS: gl.constexpr, B_KN: gl.constexpr):
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BLOCK_M, BLOCK_N], c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([
        (mma_partition, (c_desc, a_ring, b_ring, c_smem, ready, empty, M, N, K, STAGES, GROUP_M, acc_layout, B_KN)),
        (load_partition, (a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, STAGES, GROUP_M, B_KN)),
    ], [1], [LOAD_REGS])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


def b_is_k_by_n(b) -> bool:
    """True for B stored K × N row-major (unit stride along N), False for the transpose of an N × K row-major matrix
    (unit stride along K: ``w.t()`` of ``nn.Linear`` weights)."""
    return b.shape[1] <= 1 or b.stride(1) == 1


def matmul(a, b, c=None, programs=None, **config):
    """C = A·B by lesson 18's kernel with a TMA-store epilogue; returns ``c``. B is K × N row-major or the transpose
    of an N × K row-major matrix (``w.t()``); A and C row-major. Rows must start on 16-byte boundaries (K and N
    multiples of 8 for bf16 and fp16). Hopper only (sm_90). ``programs`` sets the grid (default: one per SM)."""
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    # B K × N row-major, or the transpose of an N × K row-major matrix: both have rows of unit stride one way.
    M, N, K = require_matmul_args(a, b, c, b_either_way=True)
    b_kn = b_is_k_by_n(b)
    if empty_product(a, b, c):          # M, N or K is 0: what torch.matmul returns
        return c
    unknown = set(config) - set(CONFIG)
    if unknown:
        raise TypeError(f"unknown config keys {sorted(unknown)}; matmul takes {sorted(CONFIG)} and programs")
    if programs is not None and not (isinstance(programs, int) and programs >= 1):
        raise ValueError(f"programs={programs!r}: a positive number of programs, or None for one per SM")
    require_hopper(a)
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    cfg = {**CONFIG, **config}
    num_warps = cfg.pop("num_warps")
    require_wgmma_tile(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps, cfg["STAGES"])
    a_desc = tma_descriptor("a", a, [cfg["BLOCK_M"], cfg["BLOCK_K"]])
    if b_kn:
        b_desc = tma_descriptor("b", b, [cfg["BLOCK_K"], cfg["BLOCK_N"]])
    else:
        b_desc = tma_descriptor("b (as N × K)", b.t(), [cfg["BLOCK_N"], cfg["BLOCK_K"]])
    c_desc = tma_descriptor("c", c, [cfg["BLOCK_M"], cfg["BLOCK_N"]])
    tiles = triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
    grid = (min(tiles, programs or sms),)
    matmul_kernel[grid](a_desc, b_desc, c_desc, M, N, K, **cfg, **kernel_layouts(num_warps, cfg["BLOCK_N"]),
                        B_KN=b_kn, num_warps=num_warps)
    return c
