# Lesson 33 starter, generated from solutions/33-past-the-library/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 33   (`make starters` rewrites it: keep a copy)
"""Lesson 33 · What the library does beyond v9.

Lesson 19's two consumer warpgroups shared one 128 × 256 tile: they waited for the same slots, multiplied together,
and stored C together, so while C's tile left through shared memory the tensor cores had nothing to do. cuBLAS's and
CUTLASS's Hopper kernels do more than v9 does. Here each step is a whole kernel that adds one of those things:

1. **Ping-pong consumers** (``pingpong_kernel``): each consumer warpgroup owns a whole tile (128 × 128, its own
   accumulator) and the two take the program's tiles in turn. Two *order barriers* pass the tensor cores from one to
   the other, so one warpgroup's epilogue runs while the other's products do.
2. **A cluster with TMA multicast** (``cluster_kernel``): two programs (CTAs) of a cluster compute two tiles of C one
   above the other, which need the same tile of B; one copy of it is read from L2 and written into both CTAs' shared
   memory (``tma.async_load(..., multicast=True)``). A slot of B may be refilled only when *both* CTAs are done with
   it: its release barrier is the cluster's, counting both.
3. **C in subtiles, and the order of tiles** (``subtile_kernel``): step 1's kernel storing each consumer's tile as
   two 128 × 64 halves through one 128 × 64 buffer (``tma.store_wait`` paces them), which frees shared memory for a
   fifth slot; and the tiles taken in lesson 17's grouped order or in a snake through the same groups (``SNAKE``).

Timed on an H200 beside v9 and cuBLAS, none of the three is faster than v9: v9 stays the course's fastest GEMM.
``matmul`` runs step 2, the one that carries the cluster; ``pingpong_matmul`` and ``subtile_matmul`` run steps 1
and 3.
"""
from collections import OrderedDict

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from gluon_course.nvidia import launch as kept
from gluon_course.nvidia.hopper import resident_clusters, require_hopper, require_wgmma_tile, tma_descriptor
from gluon_course.validate import empty_product, require_matmul_args

# Each consumer warpgroup's tile is 128 × 128 (128 fp32 accumulator registers a thread: a 128 × 256 tile would need
# 256, more than a thread may hold); 4 slots of 32 KiB and two C buffers of 32 KiB fill 192 KiB. One producer warp.
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "STAGES": 4, "GROUP_M": 8, "LOAD_REGS": 40,
          "MMA_REGS": 232}
# Step 2 adds the cluster: CLUSTER_M CTAs stacked along M share B's tile.
CLUSTER_CONFIG = {**CONFIG, "CLUSTER_M": 2}
# Step 3: C_BUFFERS buffers of 128 × 64 per consumer (16 KiB each) instead of one of 128 × 128: 5 slots of 32 KiB and
# two such buffers are 192 KiB. SNAKE 1 walks the groups as a snake, 0 in lesson 17's grouped order.
SUBTILE_CONFIG = {**CONFIG, "STAGES": 5, "SNAKE": 1, "C_BUFFERS": 1}
CONSUMER_WARPS = gl.constexpr(4)          # one warpgroup per consumer


def wgmma_layout(BLOCK_N: int, cga_layout=()):
    """The accumulator of one consumer warpgroup (4 warps, 16 rows each of every 64; two wgmma rows of 64 cover 128).
    ``cga_layout`` (the cluster step) says which CTA of the cluster holds which rows."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[CONSUMER_WARPS, 1], instr_shape=[16, BLOCK_N, 16],
                                     cga_layout=list(cga_layout))


@gluon.jit
def grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    """(pid_m, pid_n) of tile number ``tile`` in lesson 17's grouped order."""
    tiles_per_group = GROUP_M * num_pid_n
    first_pid_m = (tile // tiles_per_group) * GROUP_M
    group_rows = gl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile % tiles_per_group) % group_rows
    pid_n = (tile % tiles_per_group) // group_rows
    return pid_m, pid_n


# -- 1. ping-pong consumers ----------------------------------------------------------------------------------------

@gluon.jit
def pingpong_load(a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, STAGES: gl.constexpr,
                  GROUP_M: gl.constexpr, B_KN: gl.constexpr):
    """The producer (one warp), lesson 19's: every tile of the program in order, every K step into the ring. That the
    tiles alternate between two consumers changes nothing here: each slot is read by one of them."""
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
            if B_KN:
                tma.async_load(b_desc, [k * BLOCK_K, pid_n * BLOCK_N], ready.index(slot), b_ring.index(slot))
            else:
                tma.async_load(b_desc, [pid_n * BLOCK_N, k * BLOCK_K], ready.index(slot), b_ring.index(slot))
            step += 1


@gluon.jit
def take_turn(my_turn, turns, ME: gl.constexpr):
    """Consumer ME waits for its turn at the tensor cores before its tile's first product (every step's consumers call
    it: ping-pong, cluster and subtile)."""
    # TODO gap 1: wait for the turn: consumer 0 starts (its first wait passes), consumer 1 waits for 0's handover
    gl.static_assert(False, "lesson 33, gap 1 not yet implemented: wait for the turn: consumer 0 starts (its first wait passes), consumer 1 waits for 0's handover")


@gluon.jit
def pass_turn(next_turn):
    """A consumer hands the tensor cores to the other one once its tile's last product is issued."""
    # TODO gap 2: every product of this tile is issued: hand the tensor cores to the other consumer
    gl.static_assert(False, 'lesson 33, gap 2 not yet implemented: every product of this tile is issued: hand the tensor cores to the other consumer')


@gluon.jit
def pingpong_consumer(ME: gl.constexpr, c_smem, my_turn, next_turn, c_desc, a_ring, b_ring, ready, empty, M, N, K,
                      STAGES: gl.constexpr, GROUP_M: gl.constexpr, acc_layout: gl.constexpr, B_KN: gl.constexpr):
    """Consumer ``ME`` (0 or 1, one warpgroup): the program's tiles number ME, ME + 2, ME + 4, ... It multiplies only
    while it holds the turn (``my_turn``), hands the turn on (``next_turn``) once its last product is issued, and
    stores its tile while the other consumer multiplies."""
    BLOCK_M: gl.constexpr = c_desc.block_shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_shape[1]
    BLOCK_K: gl.constexpr = a_ring.shape[2]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    turns = 0                               # tiles this consumer has done: the phase of its order barrier
    local = ME                              # the tile's number among the program's tiles
    for tile in range(gl.program_id(0) + ME * gl.num_programs(0), num_pid_m * num_pid_n, 2 * gl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        step = local * k_tiles              # where this tile's K steps sit in the producer's sequence
        take_turn(my_turn, turns, ME)
        acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
            b = b_ring.index(slot) if B_KN else b_ring.index(slot).permute((1, 0))
            acc = warpgroup_mma(a_ring.index(slot), b, acc, is_async=True)
            acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b))
            mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES), pred=k > 0)
            step += 1
        pass_turn(next_turn)
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES))
        # Lesson 19's epilogue, into this consumer's own buffer: the other consumer's products run meanwhile.
        tma.store_wait(0)
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_store(c_desc, [pid_m * BLOCK_M, pid_n * BLOCK_N], c_smem)
        turns += 1
        local += 2
    tma.store_wait(0)


@gluon.jit
def partition(fn: gl.constexpr, own, shared):
    """One partition of ``fork_consumers``: calls ``fn(*own, *shared)``. In Triton 3.9.0 the fork calls each
    partition's function as it receives it: a @gluon.jit function named at module level works, but one passed in as an
    argument (``consumer``, ``producer``) arrives as a constexpr, which an ordinary call unwraps and the fork does not.
    Nor can the two tuples be joined first: ``own + shared`` drops the constexprs of ``shared``."""
    fn(*own, *shared)


@gluon.jit
def fork_consumers(consumer: gl.constexpr, shared, c_smem0, c_smem1, turn, producer: gl.constexpr, producer_args,
                   LOAD_REGS: gl.constexpr, MMA_REGS: gl.constexpr):
    """The fork every step's kernel ends in: two ping-pong consumers, each called as
    ``consumer(ME, c_smem, my_turn, next_turn, *shared)`` (its own C buffer, ``c_smem0`` or ``c_smem1``, and its two
    turn barriers out of ``turn``, then what both consumers take), and the producer, ``producer(*producer_args)``."""
    # TODO gap 3: three partitions: consumer 0 (the default, the kernel's 4 warps), consumer 1 (4 warps), the producer
    gl.static_assert(False, "lesson 33, gap 3 not yet implemented: three partitions: consumer 0 (the default, the kernel's 4 warps), consumer 1 (4 warps), the producer")


@gluon.jit
def pingpong_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                    BLOCK_K: gl.constexpr, acc_layout: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                    LOAD_REGS: gl.constexpr, MMA_REGS: gl.constexpr, B_KN: gl.constexpr):
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [2, BLOCK_M, BLOCK_N], c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    for c in gl.static_range(2):
        mbarrier.init(turn.index(c), count=1)      # one handover (one arrive) completes a phase
    fork_consumers(pingpong_consumer,
                   (c_desc, a_ring, b_ring, ready, empty, M, N, K, STAGES, GROUP_M, acc_layout, B_KN),
                   c_smem.index(0), c_smem.index(1), turn,
                   pingpong_load, (a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, STAGES, GROUP_M, B_KN),
                   LOAD_REGS, MMA_REGS)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))
    for c in gl.static_range(2):
        mbarrier.invalidate(turn.index(c))


# -- 2. a cluster with TMA multicast ---------------------------------------------------------------------------------
# Gluon writes a cluster's kernel once, for the whole cluster: the tiles below are the cluster's (CLUSTER_M × BLOCK_M
# rows of A and C), and each tensor's layout says which CTA holds which part (``cga_layout``): A's and C's rows are
# split between the CTAs, B's tile is held whole by both. program_id is the cluster's number.

def cluster_layouts(cluster: int) -> dict:
    """Which CTA of a cluster of ``cluster`` (stacked along M) holds which part of each tile, as ``cga_layout`` bases:
    A's and C's rows split (CTA i holds the i-th BLOCK_M rows: bases [1, 0], [2, 0], ...), B's tile held whole by
    every CTA (bases [0, 0]: the multicast's destination). What ``matmul`` passes, what the checks compile."""
    # TODO gap 4: A's and C's rows split between the CTAs, B's tile broadcast to all of them
    raise NotImplementedError("lesson 33, gap 4 not yet implemented: A's and C's rows split between the CTAs, B's tile broadcast to all of them")


@gluon.jit
def cluster_load(a_desc, b_desc, a_ring, b_ring, ready, empty, b_empty, M, N, K, STAGES: gl.constexpr,
                 GROUP_M: gl.constexpr, B_KN: gl.constexpr):
    """The producer of each CTA. A: each CTA copies its own rows. B: one copy, multicast into both CTAs' slots
    (Triton 3.9.0 issues it from the cluster's first CTA, with the mask of every CTA that holds B's tile)."""
    CLUSTER_BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1] if B_KN else b_desc.block_shape[0]
    num_pid_m = gl.cdiv(M, CLUSTER_BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        for k in range(k_tiles):
            slot = step % STAGES
            phase = ((step // STAGES) & 1) ^ 1
            # This CTA's consumers are done with the slot: its part of A may be overwritten.
            mbarrier.wait(empty.index(slot), phase)
            # Per CTA: its rows of A, and all of B's tile (which the multicast brings).
            mbarrier.expect(ready.index(slot), a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
            tma.async_load(a_desc, [pid_m * CLUSTER_BLOCK_M, k * BLOCK_K], ready.index(slot), a_ring.index(slot))
            # TODO gap 5: B's tile goes to both CTAs: wait until both have released the slot, then multicast it
            gl.static_assert(False, "lesson 33, gap 5 not yet implemented: B's tile goes to both CTAs: wait until both have released the slot, then multicast it")
            step += 1


@gluon.jit
def release_slot(empty, b_empty, slot, pred):
    """A consumer of the cluster is done with ring slot ``slot``: A's half of it goes back to this CTA's producer, B's
    to the cluster's (both CTAs must release it before B's next tile is multicast into it)."""
    # TODO gap 6: release the slot to this CTA's producer (A's part) and to the cluster's (B's part)
    gl.static_assert(False, "lesson 33, gap 6 not yet implemented: release the slot to this CTA's producer (A's part) and to the cluster's (B's part)")


@gluon.jit
def cluster_consumer(ME: gl.constexpr, c_smem, my_turn, next_turn, c_desc, a_ring, b_ring, ready, empty, b_empty,
                     M, N, K, STAGES: gl.constexpr, GROUP_M: gl.constexpr, acc_layout: gl.constexpr,
                     B_KN: gl.constexpr):
    """Step 1's consumer on the cluster's tile (each CTA multiplies its own rows); a slot is released twice: to this
    CTA's producer (``empty``, for A) and to the cluster's (``b_empty``, for B)."""
    CLUSTER_BLOCK_M: gl.constexpr = c_desc.block_shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_shape[1]
    BLOCK_K: gl.constexpr = a_ring.shape[2]
    num_pid_m = gl.cdiv(M, CLUSTER_BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    turns = 0
    local = ME
    for tile in range(gl.program_id(0) + ME * gl.num_programs(0), num_pid_m * num_pid_n, 2 * gl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        step = local * k_tiles
        take_turn(my_turn, turns, ME)
        acc = gl.zeros([CLUSTER_BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
            b = b_ring.index(slot) if B_KN else b_ring.index(slot).permute((1, 0))
            acc = warpgroup_mma(a_ring.index(slot), b, acc, is_async=True)
            acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b))
            release_slot(empty, b_empty, (step + STAGES - 1) % STAGES, k > 0)   # the previous step's slot
            step += 1
        pass_turn(next_turn)
        acc = warpgroup_mma_wait(0, deps=(acc,))
        release_slot(empty, b_empty, (step + STAGES - 1) % STAGES, True)        # the tile's last slot
        tma.store_wait(0)
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_store(c_desc, [pid_m * CLUSTER_BLOCK_M, pid_n * BLOCK_N], c_smem)
        turns += 1
        local += 2
    tma.store_wait(0)


@gluon.jit
def cluster_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                   BLOCK_K: gl.constexpr, acc_layout: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                   LOAD_REGS: gl.constexpr, MMA_REGS: gl.constexpr, CLUSTER_M: gl.constexpr, B_KN: gl.constexpr):
    gl.static_assert(gl.num_ctas() == CLUSTER_M, "launch with num_ctas=CLUSTER_M")
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [2] + c_desc.block_type.shape, c_desc.layout)
    # One barrier per CTA (each CTA's own copies and releases) ...
    ready = mbarrier.allocate_mbarrier(batch=STAGES)
    empty = mbarrier.allocate_mbarrier(batch=STAGES)
    turn = mbarrier.allocate_mbarrier(batch=2)
    # TODO gap 7: ... and one for the whole cluster: B's slot is free when both CTAs have released it
    gl.static_assert(False, "lesson 33, gap 7 not yet implemented: ... and one for the whole cluster: B's slot is free when both CTAs have released it")
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
        mbarrier.init(b_empty.index(s), count=1)
    for c in gl.static_range(2):
        mbarrier.init(turn.index(c), count=1)
    fork_consumers(cluster_consumer,
                   (c_desc, a_ring, b_ring, ready, empty, b_empty, M, N, K, STAGES, GROUP_M, acc_layout, B_KN),
                   c_smem.index(0), c_smem.index(1), turn,
                   cluster_load,
                   (a_desc, b_desc, a_ring, b_ring, ready, empty, b_empty, M, N, K, STAGES, GROUP_M, B_KN),
                   LOAD_REGS, MMA_REGS)
    # The other CTA's last releases may still be on their way to this CTA's b_empty: no barrier is retired before
    # every CTA of the cluster is here.
    gl.barrier(cluster=True)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))
        mbarrier.invalidate(b_empty.index(s))
    for c in gl.static_range(2):
        mbarrier.invalidate(turn.index(c))


# -- 3. C in subtiles, and the order of tiles ------------------------------------------------------------------------

@gluon.jit
def ordered_tile(tile, num_pid_m, num_pid_n, GROUP_M: gl.constexpr, SNAKE: gl.constexpr):
    """(pid_m, pid_n) of tile number ``tile``: lesson 17's groups of GROUP_M rows, each walked column by column.
    Grouped (SNAKE 0): every column top-down, every group left to right. Snake (SNAKE 1): odd columns bottom-up and
    odd groups right to left, so that within a group each tile's successor is its neighbour, and a group starts at
    the columns where the group before it ended."""
    tiles_per_group = GROUP_M * num_pid_n
    group = tile // tiles_per_group
    first_pid_m = group * GROUP_M
    group_rows = gl.minimum(num_pid_m - first_pid_m, GROUP_M)
    row = (tile % tiles_per_group) % group_rows
    col = (tile % tiles_per_group) // group_rows
    if SNAKE:
        # TODO gap 8: mirror the row in odd columns and the column in odd groups
        gl.static_assert(False, 'lesson 33, gap 8 not yet implemented: mirror the row in odd columns and the column in odd groups')
    return first_pid_m + row, col


@gluon.jit
def subtile_load(a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, STAGES: gl.constexpr,
                 GROUP_M: gl.constexpr, B_KN: gl.constexpr, SNAKE: gl.constexpr):
    """Step 1's producer, its tiles in ``ordered_tile``'s order (the consumers must use the same one)."""
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1] if B_KN else b_desc.block_shape[0]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = ordered_tile(tile, num_pid_m, num_pid_n, GROUP_M, SNAKE)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(empty.index(slot), ((step // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            tma.async_load(a_desc, [pid_m * BLOCK_M, k * BLOCK_K], ready.index(slot), a_ring.index(slot))
            if B_KN:
                tma.async_load(b_desc, [k * BLOCK_K, pid_n * BLOCK_N], ready.index(slot), b_ring.index(slot))
            else:
                tma.async_load(b_desc, [pid_n * BLOCK_N, k * BLOCK_K], ready.index(slot), b_ring.index(slot))
            step += 1


@gluon.jit
def store_subtile(c_desc, c_smem, part, row, col, J: gl.constexpr, C_BUFFERS: gl.constexpr):
    """Subtile J of a tile into buffer J % C_BUFFERS, then to C by TMA. The stores still in flight are the last
    C_BUFFERS - 1 subtiles' plus the one that last read this buffer, the oldest: ``store_wait(C_BUFFERS - 1)`` retires
    exactly that one before the threads overwrite the buffer."""
    buffer = c_smem.index(J % C_BUFFERS)
    # TODO gap 9: wait for the store that last read this buffer, write the subtile, fence, store
    gl.static_assert(False, 'lesson 33, gap 9 not yet implemented: wait for the store that last read this buffer, write the subtile, fence, store')


@gluon.jit
def subtile_consumer(ME: gl.constexpr, c_smem, my_turn, next_turn, c_desc, a_ring, b_ring, ready, empty, M, N, K,
                     STAGES: gl.constexpr, GROUP_M: gl.constexpr, acc_layout: gl.constexpr, B_KN: gl.constexpr,
                     SNAKE: gl.constexpr, C_BUFFERS: gl.constexpr):
    """Step 1's consumer with the producer's order of tiles, storing its 128 × 128 tile as two 128 × 64 halves."""
    BLOCK_M: gl.constexpr = c_desc.block_shape[0]
    SUB_N: gl.constexpr = c_desc.block_shape[1]
    BLOCK_N: gl.constexpr = 2 * SUB_N
    BLOCK_K: gl.constexpr = a_ring.shape[2]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    turns = 0
    local = ME
    for tile in range(gl.program_id(0) + ME * gl.num_programs(0), num_pid_m * num_pid_n, 2 * gl.num_programs(0)):
        pid_m, pid_n = ordered_tile(tile, num_pid_m, num_pid_n, GROUP_M, SNAKE)
        step = local * k_tiles
        take_turn(my_turn, turns, ME)
        acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
            b = b_ring.index(slot) if B_KN else b_ring.index(slot).permute((1, 0))
            acc = warpgroup_mma(a_ring.index(slot), b, acc, is_async=True)
            acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b))
            mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES), pred=k > 0)
            step += 1
        pass_turn(next_turn)
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES))
        # TODO gap 10: split the accumulator's columns in two halves (registers only) and store each as a subtile
        gl.static_assert(False, "lesson 33, gap 10 not yet implemented: split the accumulator's columns in two halves (registers only) and store each as a subtile")
        turns += 1
        local += 2
    tma.store_wait(0)


@gluon.jit
def subtile_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                   BLOCK_K: gl.constexpr, acc_layout: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                   LOAD_REGS: gl.constexpr, MMA_REGS: gl.constexpr, B_KN: gl.constexpr, SNAKE: gl.constexpr,
                   C_BUFFERS: gl.constexpr):
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    # Each consumer's own C_BUFFERS buffers of one subtile (c_desc's block, BLOCK_M × BLOCK_N / 2).
    c_smem0 = gl.allocate_shared_memory(c_desc.dtype, [C_BUFFERS] + c_desc.block_type.shape, c_desc.layout)
    c_smem1 = gl.allocate_shared_memory(c_desc.dtype, [C_BUFFERS] + c_desc.block_type.shape, c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    for c in gl.static_range(2):
        mbarrier.init(turn.index(c), count=1)
    fork_consumers(subtile_consumer,
                   (c_desc, a_ring, b_ring, ready, empty, M, N, K, STAGES, GROUP_M, acc_layout, B_KN, SNAKE, C_BUFFERS),
                   c_smem0, c_smem1, turn,
                   subtile_load, (a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, STAGES, GROUP_M, B_KN, SNAKE),
                   LOAD_REGS, MMA_REGS)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))
    for c in gl.static_range(2):
        mbarrier.invalidate(turn.index(c))


# -- launchers -----------------------------------------------------------------------------------------------------

def b_is_k_by_n(b) -> bool:
    """True for B stored K × N row-major, False for the transpose of an N × K row-major matrix (``w.t()``)."""
    return b.shape[1] <= 1 or b.stride(1) == 1


def _prepare(a, b, c, programs, config, defaults, on_gpu=True):
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_matmul_args(a, b, c, b_either_way=True, on_gpu=on_gpu)
    unknown = set(config) - set(defaults)
    if unknown:
        raise TypeError(f"unknown config keys {sorted(unknown)}; this launcher takes {sorted(defaults)} and programs")
    if programs is not None and not (isinstance(programs, int) and programs >= 1):
        raise ValueError(f"programs={programs!r}: a positive number of programs, or None for one per SM")
    cfg = {**defaults, **config}
    for name in ("LOAD_REGS", "MMA_REGS"):
        if not (isinstance(cfg[name], int) and 24 <= cfg[name] <= 256 and cfg[name] % 8 == 0):
            raise ValueError(f"{name}={cfg[name]!r}: setmaxnreg takes a multiple of 8 from 24 to 256")
    return c, M, N, K, cfg


def _descriptors(a, b, c, cfg, rows, c_cols=None):
    """TMA descriptors of A's [rows, BLOCK_K] tiles, B's (K × N or N × K), C's [rows, BLOCK_N]; ``rows`` is a CTA's
    BLOCK_M, or a cluster's CLUSTER_M × BLOCK_M."""
    BM, BN, BK = rows, cfg["BLOCK_N"], cfg["BLOCK_K"]
    if b_is_k_by_n(b):
        b_desc = tma_descriptor("b", b, [BK, BN], cga=cfg.get("b_cga"))
    else:
        b_desc = tma_descriptor("b (as N × K)", b.t(), [BN, BK], cga=cfg.get("b_cga"))
    return (tma_descriptor("a", a, [BM, BK], cga=cfg.get("ac_cga")), b_desc,
            tma_descriptor("c", c, [BM, c_cols or BN], cga=cfg.get("ac_cga")))


class Plan:
    """One signature's launch of one step's kernel, kept as lessons 31 and 32 keep theirs (``gluon_course.nvidia.
    launch``): the checks, the configuration, the layouts and the grid once; the descriptors kept by the three
    addresses and their CUtensorMaps encoded once (``kept.KeptLaunch``). Through the JIT, every call bound the
    kernel's arguments and built three descriptors: host time longer than the kernel at the sweep's smaller shapes,
    which do_bench then counts (lesson 31)."""

    def __init__(self, kernel, a, b, c, programs, config: dict, defaults: dict, cluster: int = 1,
                 c_split: int = 1):
        c, M, N, K, cfg = _prepare(a, b, c, programs, config, defaults, on_gpu=False)   # the launcher asked for the GPU
        self.kernel, self.programs, self.cluster = kernel, programs, cluster
        self.empty = M == 0 or N == 0 or K == 0
        self.descriptors = OrderedDict()
        self.grid = self.stream = None
        if self.empty:
            return
        require_wgmma_tile(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], CONSUMER_WARPS.value, cfg["STAGES"])
        layouts = cluster_layouts(cluster) if cluster > 1 else {}
        self.b_kn = b_is_k_by_n(b)
        rows, BN, BK = cluster * cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
        c_cols = BN // c_split                   # step 3 stores C in subtiles of BLOCK_N / 2 columns
        self.blocks = ([rows, BK], [BK, BN] if self.b_kn else [BN, BK], [rows, c_cols])
        self.kwargs = {**cfg, "acc_layout": wgmma_layout(BN, layouts.get("ac_cga", ())), "B_KN": self.b_kn}
        checked = _descriptors(a, b, c, {**cfg, **layouts}, rows, c_cols)     # TMA's rules, each with its sentence
        self.layouts = tuple(d.layout for d in checked)
        self.tiles = triton.cdiv(M, rows) * triton.cdiv(N, BN)
        # The kernel's arguments after the three descriptors, in its parameters' order (constexprs included:
        # driver.c skips them), for the launches after the first.
        values = {"M": M, "N": N, "K": K, **self.kwargs}
        self.rest = tuple(values[name] for name in kernel.arg_names[3:])
        options = {"num_ctas": cluster} if cluster > 1 else {}
        self.launcher = kept.KeptLaunch(kernel, CONSUMER_WARPS.value, **options)

    def descriptors_for(self, a, b, c):
        """A's, B's and C's descriptors, kept by the three addresses (at most DESCRIPTORS_KEPT sets)."""
        return kept.kept_descriptors(
            self.descriptors, (a.data_ptr(), b.data_ptr(), c.data_ptr()),
            lambda: kept.host_descriptors((a, b if self.b_kn else b.t(), c), self.blocks, self.layouts))

    def launch(self, a, b, c) -> None:
        descs = self.descriptors_for(a, b, c)
        if self.stream is None:
            require_hopper(a)
            programs = self.programs
            if programs is None and self.cluster > 1:
                options = {"num_warps": CONSUMER_WARPS.value, "num_ctas": self.cluster}
                programs = resident_clusters(self.kernel, (*descs, *self.rest[:3]), {**self.kwargs, **options},
                                             self.cluster, a.device)
            elif programs is None:
                programs = torch.cuda.get_device_properties(a.device).multi_processor_count
            self.grid = (min(self.tiles, programs), 1, 1)
            self.stream = triton.runtime.driver.active.get_current_stream
        self.launcher(self.grid[0], self.stream(a.device.index), descs, self.rest)


_PLANS = OrderedDict()
# Each step's kernel, its configuration, and what C's box is of its tile's columns (step 3 stores halves).
STEPS = {"pingpong": (pingpong_kernel, CONFIG, 1), "cluster": (cluster_kernel, CLUSTER_CONFIG, 1),
         "subtile": (subtile_kernel, SUBTILE_CONFIG, 2)}


def plan(step: str, a, b, c, programs=None, **config) -> Plan:
    """The kept plan of one step's kernel (``"pingpong"``, ``"cluster"`` or ``"subtile"``) for these arguments'
    signature (shapes, strides, dtypes, devices, 16-byte alignment of A, B and C), the configuration and
    ``programs``; built, with every check, the first time."""
    kernel, defaults, c_split = STEPS[step]
    key = (step, kept.signature(a, b, c), tuple(sorted(config.items())), programs)
    found = _PLANS.get(key)
    if found is not None:
        _PLANS.move_to_end(key)
        return found
    cfg = {**defaults, **config}
    if step == "cluster" and cfg["CLUSTER_M"] not in (1, 2, 4):
        raise ValueError(f"CLUSTER_M={cfg['CLUSTER_M']!r}: this kernel stacks 1, 2 or 4 CTAs along M (a power of two; "
                         "Hopper's portable cluster size is at most 8)")
    if step == "subtile" and (cfg["SNAKE"] not in (0, 1) or cfg["C_BUFFERS"] not in (1, 2)):
        raise ValueError(f"SNAKE={cfg['SNAKE']!r}, C_BUFFERS={cfg['C_BUFFERS']!r}: SNAKE is 0 (grouped order) or 1 "
                         "(snake), C_BUFFERS 1 or 2 (subtile buffers per consumer)")
    cluster = cfg["CLUSTER_M"] if step == "cluster" else 1
    return kept.keep(_PLANS, key, Plan(kernel, a, b, c, programs, config, defaults, cluster, c_split),
                     kept.PLANS_KEPT)


def _run(step: str, a, b, c, programs, config):
    """C = A·B by one step's kernel through its kept plan (``plan``); returns ``c``."""
    defaults = STEPS[step][1]
    if not all(isinstance(t, torch.Tensor) and t.is_cuda and t.dim() == 2 for t in (a, b) + ((c,) if c is not None
                                                                                              else ())):
        c = _prepare(a, b, c, programs, config, defaults)[0]     # the sentence for what is not a GPU matrix
    if c is None:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    p = plan(step, a, b, c, programs, **config)
    if p.empty:
        empty_product(a, b, c)
        return c
    p.launch(a, b, c)
    return c


def pingpong_matmul(a, b, c=None, programs=None, **config):
    """C = A·B by step 1's kernel (ping-pong consumers); returns ``c``. B is K × N row-major or ``w.t()`` of an N × K
    one; rows start on 16-byte boundaries (K and N multiples of 8 for bf16/fp16). Hopper only (sm_90). A call with
    the signature of an earlier one reuses its plan (``plan``): no check, descriptor or encoding is redone."""
    return _run("pingpong", a, b, c, programs, config)


def matmul(a, b, c=None, programs=None, **config):
    """C = A·B by step 2's kernel (ping-pong consumers in clusters of CLUSTER_M CTAs along M, B's tile multicast);
    returns ``c``. Same operands as ``pingpong_matmul``. ``programs`` counts clusters (default: as many as the GPU
    holds at once, which may be fewer than SMs / CLUSTER_M: a cluster's CTAs must sit in one GPC)."""
    return _run("cluster", a, b, c, programs, config)


def subtile_matmul(a, b, c=None, programs=None, **config):
    """C = A·B by step 3's kernel (step 1's, C stored in 128 × 64 subtiles, tiles in grouped or snake order);
    returns ``c``. Same operands as ``pingpong_matmul``."""
    return _run("subtile", a, b, c, programs, config)
