# Lesson 18 starter, generated from solutions/18-gemm-v8-warp-specialized/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 18   (`make starters` rewrites it: keep a copy)
"""Lesson 18 · GEMM v8: warp specialization.

Lesson 17's eight warps did everything in turn: wait for a tile, start the products, wait for them, issue the
next copies, and at the end of every tile store C and fill the ring again before the tensor cores could go on.
Here the program splits into two *partitions* that run at the same time on different warps: one warp only copies
(the producer), the two warpgroups only multiply (the consumers). They talk through two barriers per ring slot:
``ready[s]`` (the producer's copies into slot s have landed) and ``empty[s]`` (the consumers are done reading slot s).
The producer runs ahead as far as the ring allows, also into the next tile while the consumers store this one, and
``gl.warp_specialize`` hands it few registers so that the consumers may take more.

At the end, ``blackwell_matmul_kernel``: the same partitions for Blackwell (sm_100), where one more warp issues tcgen05
products into tensor memory and the default partition only stores C; compiled, never run (no Blackwell GPU here).
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.language.nvidia.blackwell import (TensorMemoryLayout, allocate_tensor_memory,
                                                                 tcgen05_commit, tcgen05_mma)

from gluon_course.nvidia.hopper import require_hopper, require_wgmma_tile, tma_descriptor
from gluon_course.validate import empty_product, require_matmul_args

# Lesson 17's tile, ring and order: 128 × 256 × 64 in two consumer warpgroups (num_warps = 8), 4 slots, groups of
# 8 rows of tiles; one producer warp, its warpgroup's 4 warps at LOAD_REGS registers (the consumers: 232 for 40).
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "STAGES": 4, "GROUP_M": 8,
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
                   GROUP_M: gl.constexpr):
    """The producer (one warp): for every tile this program owns, every K step's tiles of A and B into the ring."""
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0                        # K steps copied so far by this program, over all its tiles
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        for k in range(k_tiles):
            slot = step % STAGES
            # TODO gap 1: wait until the consumers have released the slot, then copy step's tiles of A and B into it
            gl.static_assert(False, "lesson 18, gap 1 not yet implemented: wait until the consumers have released the slot, then copy step's tiles of A and B into it")
            step += 1


@gluon.jit
def mma_partition(c_ptr, a_ring, b_ring, ready, empty, M, N, K, stride_cm, stride_cn,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, STAGES: gl.constexpr,
                  GROUP_M: gl.constexpr, acc_layout: gl.constexpr):
    """The consumers (the two warpgroups): lesson 17's products and store, with no copy and no address of A or B."""
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0                        # the same count as the producer's: both walk the same tiles and K steps
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
            acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc, is_async=True)
            acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b_ring.index(slot)))
            # TODO gap 2: the previous step's products are done: release the slot they read to the producer
            gl.static_assert(False, "lesson 18, gap 2 not yet implemented: the previous step's products are done: release the slot they read to the producer")
            step += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        # The tile's last slot is free now that every product is done.
        mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES))

        # C's tile, stored from the accumulator's own layout, rounded to the inputs' dtype, masked at the edges.
        # Meanwhile the producer is already filling the ring with the next tile's first steps.
        offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
        offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
        c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


@gluon.jit
def matmul_kernel(a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  acc_layout: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr, LOAD_REGS: gl.constexpr):
    # The ring and two barriers per slot, once per program, before the partitions start: both use them.
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BLOCK_K, BLOCK_N], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        # ready: the producer's expect() is its one arrival (then the bytes); empty: one arrival from the consumers.
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    # TODO gap 3: fork into the consumers (the default partition, on this kernel's warps) and a one-warp producer
    gl.static_assert(False, "lesson 18, gap 3 not yet implemented: fork into the consumers (the default partition, on this kernel's warps) and a one-warp producer")
    # Both partitions are done: every copy was waited for, every barrier is idle.
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


def matmul(a, b, c=None, programs=None, **config):
    """C = A·B by a warp-specialized persistent wgmma kernel; returns ``c``. The rows of A and B must start on 16-byte
    boundaries (K and N multiples of 8 for bf16 and fp16). Hopper only (sm_90). ``programs`` sets the grid (default:
    as many as the GPU holds at once, one per SM)."""
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_matmul_args(a, b, c)
    if empty_product(a, b, c):          # M, N or K is 0: what torch.matmul returns
        return c
    unknown = set(config) - set(CONFIG)
    if unknown:
        raise TypeError(f"unknown config keys {sorted(unknown)}; matmul takes {sorted(CONFIG)} and programs")
    cfg = {**CONFIG, **config}
    num_warps = cfg.pop("num_warps")
    require_wgmma_tile(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps, cfg["STAGES"])
    if not (isinstance(cfg["LOAD_REGS"], int) and 24 <= cfg["LOAD_REGS"] <= 256 and cfg["LOAD_REGS"] % 8 == 0):
        raise ValueError(f"LOAD_REGS={cfg['LOAD_REGS']!r}: setmaxnreg takes a multiple of 8 from 24 to 256")
    if programs is not None and not (isinstance(programs, int) and programs >= 1):
        raise ValueError(f"programs={programs!r}: a positive number of programs, or None for one per SM")
    require_hopper(a)
    a_desc = tma_descriptor("a", a, [cfg["BLOCK_M"], cfg["BLOCK_K"]])
    b_desc = tma_descriptor("b", b, [cfg["BLOCK_K"], cfg["BLOCK_N"]])
    tiles = triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    grid = (min(tiles, programs or sms),)
    matmul_kernel[grid](a_desc, b_desc, c, M, N, K, c.stride(0), c.stride(1), **cfg,
                        **kernel_layouts(num_warps, cfg["BLOCK_N"]), num_warps=num_warps)
    return c


# -- What changes on Blackwell (sm_100) -------------------------------------------------------------------------------
# The same producer (load_partition, unchanged: Blackwell's mbarrier and tma are Hopper's) and ring, but the products
# move out of the default partition: on Blackwell one thread issues them and the accumulator lives in tensor memory,
# so a single warp does all the multiplying and the default partition's warps only store C. Compiled on the CPU for
# sm_100 by the checks, never run: the course has no Blackwell GPU, so there is no launcher for it either.

@gluon.jit
def blackwell_mma_partition(a_ring, b_ring, ready, empty, acc_tmem, acc_ready, acc_empty, M, N, K,
                            BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                            STAGES: gl.constexpr):
    """One warp: every K step's products into the accumulator in tensor memory; it never waits for them itself."""
    num_tiles = gl.cdiv(M, BLOCK_M) * gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0                        # the producer's count: both walk the same tiles and K steps
    tiles = 0                       # tiles done by this program: the phase of acc_ready and acc_empty
    for tile in range(gl.program_id(0), num_tiles, gl.num_programs(0)):
        # The epilogue must have read the last tile out of tensor memory before this tile's first product overwrites
        # it (parity as the producer's wait on empty: the first tile passes).
        mbarrier.wait(acc_empty, (tiles & 1) ^ 1)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
            # The release is the tensor cores' own: empty[slot] gets its arrival when these products are done, so the
            # slot goes back to the producer without a wait here (lesson 18's consumers waited, then arrived).
            tcgen05_mma(a_ring.index(slot), b_ring.index(slot), acc_tmem, use_acc=k > 0,
                        mbarriers=[empty.index(slot)])
            step += 1
        # One arrival on acc_ready once every product issued so far is done: the tile's accumulator is complete.
        tcgen05_commit(acc_ready)
        tiles += 1


@gluon.jit
def blackwell_epilogue_partition(c_ptr, acc_tmem, acc_ready, acc_empty, M, N, stride_cm, stride_cn,
                                 BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, GROUP_M: gl.constexpr):
    """The default partition: each tile's accumulator out of tensor memory and into C."""
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    # The layout of the instruction that reads tensor memory, for this partition's warps (the kernel's num_warps).
    acc_layout: gl.constexpr = acc_tmem.get_reg_layout()
    tiles = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        mbarrier.wait(acc_ready, tiles & 1)
        c = acc_tmem.load(acc_layout).to(c_ptr.dtype.element_ty)
        # In registers now: the MMA warp may start the next tile in tensor memory while this one is stored.
        mbarrier.arrive(acc_empty)
        offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
        offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
        c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        gl.store(c_ptrs, c, mask=c_mask)
        tiles += 1


@gluon.jit
def blackwell_matmul_kernel(a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn,
                            BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                            STAGES: gl.constexpr, GROUP_M: gl.constexpr):
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BLOCK_K, BLOCK_N], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    # One more pair, for the accumulator: acc_ready (the MMA warp's commit: the tile's products are done) and
    # acc_empty (the epilogue's arrival: the tile is out of tensor memory).
    acc_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    acc_empty = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    mbarrier.init(acc_ready, count=1)
    mbarrier.init(acc_empty, count=1)
    # Tensor memory, like shared memory, is allocated before the fork: two partitions use it.
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N],
                                      TensorMemoryLayout(block=(BLOCK_M, BLOCK_N), col_stride=1))
    # The epilogue on the kernel's warps (the default partition), then one warp each for the copies and the products.
    # No worker_num_regs: no partition holds the accumulator while the products run, so none needs registers moved.
    gl.warp_specialize([
        (blackwell_epilogue_partition, (c_ptr, acc_tmem, acc_ready, acc_empty, M, N, stride_cm, stride_cn,
                                        BLOCK_M, BLOCK_N, GROUP_M)),
        (load_partition, (a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, STAGES, GROUP_M)),
        (blackwell_mma_partition, (a_ring, b_ring, ready, empty, acc_tmem, acc_ready, acc_empty, M, N, K,
                                   BLOCK_M, BLOCK_N, BLOCK_K, STAGES)),
    ], [1, 1])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))
    mbarrier.invalidate(acc_ready)
    mbarrier.invalidate(acc_empty)
