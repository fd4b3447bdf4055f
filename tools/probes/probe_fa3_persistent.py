"""Issue 42: lesson 37's v4 made persistent, for the short sequences. Its recording (H100, 2026-12-05) read v4 at
0.82× and 0.73× cuDNN at S = 1 024 (not causal, causal), where a program's 128 queries meet only 8 key blocks (4 on
average with the mask), so each program's start (Q's copy, the ring's fill, block 0's S before anything overlaps it)
and end (the last P·V, O's store) weigh on few iterations; other tiles did not help
(results/trials/nvidia-h100-2026-12-05-fa3-configs.json).

``persistent_kernel`` is v4 with one change of schedule: one program an SM, each taking tiles t = pid, pid + P, …
(P programs) of the B·H·⌈Sq/128⌉ tiles, the tiles of one head in a row (their K and V stay in L2), the heaviest
query tile of a head first (causal: the last rows see the most keys). The producer warp runs ahead across tiles: it
copies the next tile's Q as soon as both consumers are done with this tile's (a ``q_empty`` barrier, counted by the
two consumers after their last S), and its K and V into the same ring, whose slot counter and phases carry on from
tile to tile; the consumers' turn counter carries on too. So the next tile's first copies and S overlap this tile's
last P·V and O's store. Lesson 37's device functions are used as they are; the ring's and the turn's counters start
at the tile's offset (``c0``, ``turn0``) in ``persistent_blocks``, a copy of lesson 37's ``pingpong_blocks`` with those
two offsets.

``dynamic_kernel`` is the same with the tiles handed out at run time: the producer takes each next tile from a counter
in global memory and passes its number to the consumers through a word of shared memory (see its comment).

Runs on an H100, 2026-12-05 (TFLOPS; the JSONs under results/trials/nvidia-h100-2026-12-05-fa3-persistent*.json):
the static kernel gained on every non-causal shape and lost on the causal ones (1k causal 277 against v4's 310: with
the tiles dealt at launch, the causal tiles' unequal work leaves some programs running long after the others); the
dynamic one was correct on odd shapes at both head dims (twice each, its counter zeroed at each launch) and ahead of
v4 everywhere: 1k 502 / 350 (v4 438 / 311, cuDNN 555 / 430), 4k 593 / 537 (v4 562 / 484, cuDNN 591 / 509), 16k causal
586 (559, 548), head dim 64 at 4k 418 / 386 (399 / 362, cuDNN 458 / 414). compute-sanitizer (``--sanitize``): memcheck
and synccheck clean; racecheck reports hazards on the tile number's shared word, between the producer's store and the
consumers' load after their q_bar wait, and at the kernels' first line (Triton's own code): not yet settled.

    python tools/probes/probe_fa3_persistent.py --model     CPU: the kernel in the host model (lesson 36's odd shapes,
                                                            causal and not, on 1 to 3 programs so that programs take
                                                            several tiles) and its sm_90 compile (lesson 37's facts)
    python tools/probes/probe_fa3_persistent.py --sanitize  GPU: compute-sanitizer memcheck, synccheck, racecheck on
                                                            both kernels (small odd shapes, 3 programs)
    python tools/probes/probe_fa3_persistent.py --race-repro  GPU: racecheck on a minimal kernel that passes a word of
                                                            shared memory across an mbarrier, as the dynamic kernel
                                                            passes its tile number (not yet run)
    python tools/probes/probe_fa3_persistent.py OUT.json    GPU: correctness on odd shapes at both head dims, then the
                                                            kernel, lesson 37's v4 and SDPA's backends interleaved at
                                                            lesson 37's short and long shapes; a JSON and a table
"""
from __future__ import annotations

import json
import math
import sys
import time

import numpy as np
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

from gluon_course import load_solution
from gluon_course.nvidia import attention

L37 = load_solution("37")
key_blocks, mask_scores, store_output = L37.key_blocks, L37.mask_scores, L37.store_output
softmax_scores, p_operand, take_turn, pass_turn = L37.softmax_scores, L37.p_operand, L37.take_turn, L37.pass_turn
LOG2E = L37.LOG2E
SMS = 132
WATCHDOG_S = 400


@gluon.jit
def tile_of(t, n_m_tiles):
    """Tile t's (query tile, b·H + h): the tiles of one head in a row, its heaviest (last) query tile first."""
    return n_m_tiles - 1 - t % n_m_tiles, t // n_m_tiles


@gluon.jit
def persistent_load(q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, q_empty, k_ready, k_empty, v_ready,
                    v_empty, Sq, Sk, n_m_tiles, n_tiles, CAUSAL: gl.constexpr, STAGES: gl.constexpr):
    """The producer warp over this program's tiles: Q once both consumers released the last tile's, then each key
    block's K and V into ring slot c % STAGES, c counted across tiles."""
    TILE_M: gl.constexpr = q_desc.block_shape[0]
    BLOCK_N: gl.constexpr = k_desc.block_shape[0]
    c = 0
    i = 0
    for t in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
        m_tile, bh = tile_of(t, n_m_tiles)
        m0 = m_tile * TILE_M
        mbarrier.wait(q_empty, (i & 1) ^ 1)
        mbarrier.expect(q_bar, q_desc.block_type.nbytes)
        tma.async_load(q_desc, [bh * Sq + m0, 0], q_bar, q_smem)
        n_full, n_all = key_blocks(m0, Sk, TILE_M, BLOCK_N, CAUSAL)
        for j in range(n_all):
            slot = c % STAGES
            free = ((c // STAGES) & 1) ^ 1
            mbarrier.wait(k_empty.index(slot), free)
            mbarrier.expect(k_ready.index(slot), k_desc.block_type.nbytes)
            tma.async_load(k_desc, [bh * Sk + j * BLOCK_N, 0], k_ready.index(slot), k_ring.index(slot))
            mbarrier.wait(v_empty.index(slot), free)
            mbarrier.expect(v_ready.index(slot), v_desc.block_type.nbytes)
            tma.async_load(v_desc, [bh * Sk + j * BLOCK_N, 0], v_ready.index(slot), v_ring.index(slot))
            c += 1
        i += 1


@gluon.jit
def persistent_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, my_turn, next_turn, p, alpha, o,
                      m_i, l_i, qk_scale, m0, Sk, first, last, c0, turn0, STAGES: gl.constexpr,
                      MASKED: gl.constexpr, CAUSAL: gl.constexpr, ME: gl.constexpr, s_layout: gl.constexpr,
                      o_layout: gl.constexpr):
    """Lesson 37's pingpong_blocks with the ring's counter starting at c0 and the turns at turn0 (this tile's)."""
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    for j in range(first, last):
        slot = (c0 + j) % STAGES
        nxt = (c0 + j + 1) % STAGES
        mbarrier.wait(k_ready.index(nxt), ((c0 + j + 1) // STAGES) & 1)
        k_next = k_ring.index(nxt).permute((1, 0))
        take_turn(my_turn, turn0 + j + 1, ME)
        s = warpgroup_mma(q_rows, k_next, gl.zeros([q_rows.shape[0], BLOCK_N], gl.float32, s_layout),
                          use_acc=False, is_async=True)
        o = o * alpha[:, None]
        mbarrier.wait(v_ready.index(slot), ((c0 + j) // STAGES) & 1)
        v_cur = v_ring.index(slot)
        p_cur = p
        o = warpgroup_mma(p_cur, v_cur, o, is_async=True)
        pass_turn(next_turn)
        s, _, _ = warpgroup_mma_wait(1, deps=(s, q_rows, k_next))
        mbarrier.arrive(k_empty.index(nxt))
        if MASKED:
            s = mask_scores(s, m0, (j + 1) * BLOCK_N, Sk, CAUSAL, s_layout)
        p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)
        o, _, _ = warpgroup_mma_wait(0, deps=(o, p_cur, v_cur))
        mbarrier.arrive(v_empty.index(slot))
        p = p_operand(p, o_layout)
    return p, alpha, o, m_i, l_i


@gluon.jit
def consumer_tile(ME: gl.constexpr, q_rows, k_ring, v_ring, q_empty, k_ready, k_empty, v_ready, v_empty, my_turn,
                  next_turn, o_ptr, Sq, Sk, qk_scale, m_tile, bh, c0, turn0, CAUSAL: gl.constexpr,
                  STAGES: gl.constexpr, TILE_M: gl.constexpr, s_layout: gl.constexpr, o_layout: gl.constexpr):
    """Lesson 37's v4_consumer on one tile, its Q already waited for, the ring's counter at c0 and the turns at
    turn0; Q released (q_empty) once the tile's last S has retired. Returns the tile's key blocks (n_all)."""
    ROWS: gl.constexpr = q_rows.shape[0]
    HEAD_DIM: gl.constexpr = q_rows.shape[1]
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    tile_m0 = m_tile * TILE_M
    m0 = tile_m0 + ME * ROWS
    m_i = gl.full([ROWS], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([ROWS], gl.float32, layout=gl.SliceLayout(1, s_layout))
    o = gl.zeros([ROWS, HEAD_DIM], gl.float32, layout=o_layout)
    n_full, n_all = key_blocks(tile_m0, Sk, TILE_M, BLOCK_N, CAUSAL)

    take_turn(my_turn, turn0, ME)
    mbarrier.wait(k_ready.index(c0 % STAGES), (c0 // STAGES) & 1)
    k_first = k_ring.index(c0 % STAGES).permute((1, 0))
    s = warpgroup_mma(q_rows, k_first, gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout), use_acc=False,
                      is_async=True)
    pass_turn(next_turn)
    s, _, _ = warpgroup_mma_wait(0, deps=(s, q_rows, k_first))
    mbarrier.arrive(k_empty.index(c0 % STAGES))
    s = mask_scores(s, m0, 0, Sk, CAUSAL, s_layout)
    p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)
    p = p_operand(p, o_layout)
    split = gl.maximum(n_full - 1, 0)
    p, alpha, o, m_i, l_i = persistent_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty,
                                              my_turn, next_turn, p, alpha, o, m_i, l_i, qk_scale, m0, Sk, 0,
                                              split, c0, turn0, STAGES, False, CAUSAL, ME, s_layout, o_layout)
    p, alpha, o, m_i, l_i = persistent_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty,
                                              my_turn, next_turn, p, alpha, o, m_i, l_i, qk_scale, m0, Sk,
                                              split, n_all - 1, c0, turn0, STAGES, True, CAUSAL, ME, s_layout,
                                              o_layout)
    # Every S of the tile has retired: Q's buffer may take the next tile's.
    mbarrier.arrive(q_empty)
    last = n_all - 1
    take_turn(my_turn, turn0 + last + 1, ME)
    o = o * alpha[:, None]
    mbarrier.wait(v_ready.index((c0 + last) % STAGES), ((c0 + last) // STAGES) & 1)
    v_last = v_ring.index((c0 + last) % STAGES)
    o = warpgroup_mma(p, v_last, o, is_async=True)
    pass_turn(next_turn)
    o, _, _ = warpgroup_mma_wait(0, deps=(o, p, v_last))
    mbarrier.arrive(v_empty.index((c0 + last) % STAGES))
    store_output(o, l_i, o_ptr, bh * Sq + m0, m0, Sq, o_layout)
    return n_all


@gluon.jit
def persistent_consumer(ME: gl.constexpr, q_rows, k_ring, v_ring, q_bar, q_empty, k_ready, k_empty, v_ready, v_empty,
                        my_turn, next_turn, o_ptr, Sq, Sk, qk_scale, n_m_tiles, n_tiles, CAUSAL: gl.constexpr,
                        STAGES: gl.constexpr, TILE_M: gl.constexpr, s_layout: gl.constexpr,
                        o_layout: gl.constexpr):
    """The consumers over this program's tiles, in the order tile_of gives."""
    c0 = 0
    turn0 = 0
    i = 0
    for t in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
        m_tile, bh = tile_of(t, n_m_tiles)
        mbarrier.wait(q_bar, i & 1)
        n_all = consumer_tile(ME, q_rows, k_ring, v_ring, q_empty, k_ready, k_empty, v_ready, v_empty, my_turn,
                              next_turn, o_ptr, Sq, Sk, qk_scale, m_tile, bh, c0, turn0, CAUSAL, STAGES, TILE_M,
                              s_layout, o_layout)
        c0 += n_all
        turn0 += n_all + 1
        i += 1


@gluon.jit
def persistent_kernel(q_desc, k_desc, v_desc, o_ptr, Sq, Sk, qk_scale, BH, CAUSAL: gl.constexpr,
                      s_layout: gl.constexpr, o_layout: gl.constexpr, STAGES: gl.constexpr,
                      LOAD_REGS: gl.constexpr, MMA_REGS: gl.constexpr):
    """v4 over several tiles a program (grid: min(tiles, SMs))."""
    TILE_M: gl.constexpr = q_desc.block_shape[0]
    ROWS: gl.constexpr = TILE_M // 2
    n_m_tiles = gl.cdiv(Sq, TILE_M)
    n_tiles = n_m_tiles * BH
    q_smem = gl.allocate_shared_memory(q_desc.dtype, q_desc.block_type.shape, q_desc.layout)
    k_ring = gl.allocate_shared_memory(k_desc.dtype, [STAGES] + k_desc.block_type.shape, k_desc.layout)
    v_ring = gl.allocate_shared_memory(v_desc.dtype, [STAGES] + v_desc.block_type.shape, v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    mbarrier.init(q_empty, count=2)                    # both consumers release Q
    for s in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(s), count=1)
        mbarrier.init(k_empty.index(s), count=2)
        mbarrier.init(v_ready.index(s), count=1)
        mbarrier.init(v_empty.index(s), count=2)
    for c in gl.static_range(2):
        mbarrier.init(turn.index(c), count=1)
    gl.warp_specialize([
        (persistent_consumer, (0, q_smem.slice(0, ROWS), k_ring, v_ring, q_bar, q_empty, k_ready, k_empty, v_ready,
                               v_empty, turn.index(0), turn.index(1), o_ptr, Sq, Sk, qk_scale, n_m_tiles, n_tiles,
                               CAUSAL, STAGES, TILE_M, s_layout, o_layout)),
        (persistent_consumer, (1, q_smem.slice(ROWS, ROWS), k_ring, v_ring, q_bar, q_empty, k_ready, k_empty,
                               v_ready, v_empty, turn.index(1), turn.index(0), o_ptr, Sq, Sk, qk_scale, n_m_tiles,
                               n_tiles, CAUSAL, STAGES, TILE_M, s_layout, o_layout)),
        (persistent_load, (q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, q_empty, k_ready, k_empty, v_ready,
                           v_empty, Sq, Sk, n_m_tiles, n_tiles, CAUSAL, STAGES)),
    ], [4, 1], [MMA_REGS, LOAD_REGS])
    mbarrier.invalidate(q_bar)
    mbarrier.invalidate(q_empty)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(k_ready.index(s))
        mbarrier.invalidate(k_empty.index(s))
        mbarrier.invalidate(v_ready.index(s))
        mbarrier.invalidate(v_empty.index(s))
    for c in gl.static_range(2):
        mbarrier.invalidate(turn.index(c))


# -- the same, with the tiles handed out at run time (causal tiles differ in work) ------------------------------------
#
# With the tiles dealt round-robin, a program's tiles are fixed at launch, and causal tiles of one head differ up to
# n_m_tiles-fold in key blocks: some programs end long after others. Here the producer takes each next tile from a
# counter in global memory (atomic_add), as an SM that frees up takes the next block of a grid, and passes its number
# to the consumers through shared memory, written before Q's copy is announced on q_bar (whose wait makes it visible).
# Past the last tile it writes n_tiles and arrives on q_bar alone: the consumers stop.

SCALAR_SMEM = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])


@gluon.jit
def dynamic_load(q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, q_empty, k_ready, k_empty, v_ready, v_empty,
                 tile_smem, counter_ptr, Sq, Sk, n_m_tiles, n_tiles, CAUSAL: gl.constexpr, STAGES: gl.constexpr):
    TILE_M: gl.constexpr = q_desc.block_shape[0]
    BLOCK_N: gl.constexpr = k_desc.block_shape[0]
    one: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
    c = 0
    i = 0
    t = gl.atomic_add(counter_ptr, 1).to(gl.int32)
    while t < n_tiles:
        m_tile, bh = tile_of(t, n_m_tiles)
        m0 = m_tile * TILE_M
        mbarrier.wait(q_empty, (i & 1) ^ 1)
        tile_smem.store(gl.full([1], t, gl.int32, layout=one))
        mbarrier.expect(q_bar, q_desc.block_type.nbytes)
        tma.async_load(q_desc, [bh * Sq + m0, 0], q_bar, q_smem)
        n_full, n_all = key_blocks(m0, Sk, TILE_M, BLOCK_N, CAUSAL)
        for j in range(n_all):
            slot = c % STAGES
            free = ((c // STAGES) & 1) ^ 1
            mbarrier.wait(k_empty.index(slot), free)
            mbarrier.expect(k_ready.index(slot), k_desc.block_type.nbytes)
            tma.async_load(k_desc, [bh * Sk + j * BLOCK_N, 0], k_ready.index(slot), k_ring.index(slot))
            mbarrier.wait(v_empty.index(slot), free)
            mbarrier.expect(v_ready.index(slot), v_desc.block_type.nbytes)
            tma.async_load(v_desc, [bh * Sk + j * BLOCK_N, 0], v_ready.index(slot), v_ring.index(slot))
            c += 1
        i += 1
        t = gl.atomic_add(counter_ptr, 1).to(gl.int32)
    mbarrier.wait(q_empty, (i & 1) ^ 1)
    tile_smem.store(gl.full([1], n_tiles, gl.int32, layout=one))
    mbarrier.arrive(q_bar)


@gluon.jit
def dynamic_consumer(ME: gl.constexpr, q_rows, k_ring, v_ring, q_bar, q_empty, k_ready, k_empty, v_ready, v_empty,
                     my_turn, next_turn, tile_smem, o_ptr, Sq, Sk, qk_scale, n_m_tiles, n_tiles,
                     CAUSAL: gl.constexpr, STAGES: gl.constexpr, TILE_M: gl.constexpr, s_layout: gl.constexpr,
                     o_layout: gl.constexpr):
    WARPS: gl.constexpr = gl.num_warps()
    mine: gl.constexpr = gl.BlockedLayout([1], [32], [WARPS], [0])
    c0 = 0
    turn0 = 0
    i = 0
    mbarrier.wait(q_bar, 0)
    t = gl.max(tile_smem.load(mine), axis=0).to(gl.int32)
    while t < n_tiles:
        m_tile, bh = tile_of(t, n_m_tiles)
        n_all = consumer_tile(ME, q_rows, k_ring, v_ring, q_empty, k_ready, k_empty, v_ready, v_empty, my_turn,
                              next_turn, o_ptr, Sq, Sk, qk_scale, m_tile, bh, c0, turn0, CAUSAL, STAGES, TILE_M,
                              s_layout, o_layout)
        c0 += n_all
        turn0 += n_all + 1
        i += 1
        mbarrier.wait(q_bar, i & 1)
        t = gl.max(tile_smem.load(mine), axis=0).to(gl.int32)


@gluon.jit
def dynamic_kernel(q_desc, k_desc, v_desc, o_ptr, counter_ptr, Sq, Sk, qk_scale, BH, CAUSAL: gl.constexpr,
                   s_layout: gl.constexpr, o_layout: gl.constexpr, STAGES: gl.constexpr, LOAD_REGS: gl.constexpr,
                   MMA_REGS: gl.constexpr):
    """persistent_kernel with the tiles taken from ``counter_ptr`` (0 at launch) at run time."""
    TILE_M: gl.constexpr = q_desc.block_shape[0]
    ROWS: gl.constexpr = TILE_M // 2
    n_m_tiles = gl.cdiv(Sq, TILE_M)
    n_tiles = n_m_tiles * BH
    q_smem = gl.allocate_shared_memory(q_desc.dtype, q_desc.block_type.shape, q_desc.layout)
    k_ring = gl.allocate_shared_memory(k_desc.dtype, [STAGES] + k_desc.block_type.shape, k_desc.layout)
    v_ring = gl.allocate_shared_memory(v_desc.dtype, [STAGES] + v_desc.block_type.shape, v_desc.layout)
    tile_smem = gl.allocate_shared_memory(gl.int32, [1], SCALAR_SMEM)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    mbarrier.init(q_empty, count=2)
    for s in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(s), count=1)
        mbarrier.init(k_empty.index(s), count=2)
        mbarrier.init(v_ready.index(s), count=1)
        mbarrier.init(v_empty.index(s), count=2)
    for c in gl.static_range(2):
        mbarrier.init(turn.index(c), count=1)
    gl.warp_specialize([
        (dynamic_consumer, (0, q_smem.slice(0, ROWS), k_ring, v_ring, q_bar, q_empty, k_ready, k_empty, v_ready,
                            v_empty, turn.index(0), turn.index(1), tile_smem, o_ptr, Sq, Sk, qk_scale, n_m_tiles,
                            n_tiles, CAUSAL, STAGES, TILE_M, s_layout, o_layout)),
        (dynamic_consumer, (1, q_smem.slice(ROWS, ROWS), k_ring, v_ring, q_bar, q_empty, k_ready, k_empty, v_ready,
                            v_empty, turn.index(1), turn.index(0), tile_smem, o_ptr, Sq, Sk, qk_scale, n_m_tiles,
                            n_tiles, CAUSAL, STAGES, TILE_M, s_layout, o_layout)),
        (dynamic_load, (q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, q_empty, k_ready, k_empty, v_ready,
                        v_empty, tile_smem, counter_ptr, Sq, Sk, n_m_tiles, n_tiles, CAUSAL, STAGES)),
    ], [4, 1], [MMA_REGS, LOAD_REGS])
    mbarrier.invalidate(q_bar)
    mbarrier.invalidate(q_empty)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(k_ready.index(s))
        mbarrier.invalidate(k_empty.index(s))
        mbarrier.invalidate(v_ready.index(s))
        mbarrier.invalidate(v_empty.index(s))
    for c in gl.static_range(2):
        mbarrier.invalidate(turn.index(c))


# -- the launcher, and lesson 37's interface for attention's helpers ---------------------------------------------------

CONFIGS = {"v4": L37.CONFIGS["v4"]}
KERNELS = {"v4": persistent_kernel}


def constexprs(version, cfg, head_dim, causal):
    return L37.constexprs("v4", cfg, head_dim, causal)


def prepared(q, k, v, causal: bool = False, version: str = "v4", out=None, sm_scale: float | None = None,
             config: dict | None = None, programs: int | None = None, dynamic: bool = False):
    """Lesson 37's launcher for the persistent kernel (``dynamic``: the one that takes its tiles at run time, its
    counter zeroed before each launch): grid min(tiles, ``programs`` or the GPU's SMs)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    cfg = config or CONFIGS["v4"]
    L37.v36.require_attention_args(q, k, v, cfg)
    B, H, Sq, D = q.shape
    out = torch.empty_like(q) if out is None else out
    sm_scale = 1 / math.sqrt(D) if sm_scale is None else sm_scale

    def desc(t, rows):
        block = [rows, D]
        return TensorDescriptor.from_tensor(t.view(-1, D), block,
                                            gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16))
    tiles = triton.cdiv(Sq, cfg["BLOCK_M"]) * B * H
    if programs is None:
        programs = torch.cuda.get_device_properties(q.device).multi_processor_count if q.is_cuda else 3
    grid = (min(tiles, programs),)
    args = (desc(q, cfg["BLOCK_M"]), desc(k, cfg["BLOCK_N"]), desc(v, cfg["BLOCK_N"]), out, Sq, k.shape[2],
            sm_scale * LOG2E, B * H)
    kwargs = {**constexprs("v4", cfg, D, causal), "num_warps": cfg["num_warps"]}
    if not dynamic:
        def launch():
            persistent_kernel[grid](*args, **kwargs)
        return launch, out
    counter = torch.zeros(1, dtype=torch.int32, device=q.device)
    dargs = args[:4] + (counter,) + args[4:]

    def launch_dynamic():
        counter.zero_()
        dynamic_kernel[grid](*dargs, **kwargs)
    return launch_dynamic, out


def attention_call(q, k, v, causal: bool = False, version: str = "v4", out=None, sm_scale: float | None = None,
                   config: dict | None = None, dynamic: bool = False):
    launch, out = prepared(q, k, v, causal, version, out, sm_scale, config, dynamic=dynamic)
    launch()
    return out


# -- CPU ---------------------------------------------------------------------------------------------------------------

MODEL_SHAPES = attention.FA3_MODEL_SHAPES


def model_run(shape, causal: bool, programs: int, cfg=None, stages: int | None = None, dynamic: bool = False):
    """The kernel in the host model on ``programs`` programs: (O, writes, runs, want, bound)."""
    from gluon_course.model import Buffer, HostTensorDescriptor, Pointer
    from gluon_course.model.run import run as run_kernel

    cfg = dict(cfg or attention.FA3_MODEL_CFGS["v4"])
    if stages:
        cfg["STAGES"] = stages
    B, H, Sq, Sk = shape
    D = attention.MODEL_HEAD_DIM
    q, k, v = attention.inputs(B, H, Sq, Sk, D)
    bufs = [Buffer(n, x.reshape(-1, D).astype(np.float32), gl.bfloat16) for n, x in (("Q", q), ("K", k), ("V", v))]
    o_buf = Buffer("O", np.zeros((B * H * Sq, D), np.float32), gl.bfloat16, poison=True)
    descs = [HostTensorDescriptor(buf, [rows, D], gl.NVMMASharedLayout.get_default_for([rows, D], gl.bfloat16))
             for buf, rows in zip(bufs, (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_N"]))]
    tiles = -(-Sq // cfg["BLOCK_M"]) * B * H
    counter = [Pointer(Buffer("counter", np.zeros(1, np.float32), gl.int32))] if dynamic else []
    with np.errstate(over="ignore", invalid="ignore"):
        runs = run_kernel(dynamic_kernel if dynamic else persistent_kernel, (min(tiles, programs),), *descs,
                          Pointer(o_buf), *counter, Sq, Sk, LOG2E / math.sqrt(D), B * H, num_warps=cfg["num_warps"],
                          **constexprs("v4", cfg, D, causal))
    want, bound = attention.reference(q, k, v, causal, 1 / math.sqrt(D))
    shape4 = (B, H, Sq, D)
    return o_buf.values().reshape(shape4), o_buf.writes.reshape(shape4), runs, want, bound


def turns_alternate(runs, tiles_of_program) -> str | None:
    """The two consumers' wgmma issues alternate by turn across all of a program's tiles: a tile of n_all key blocks
    is n_all + 1 turns a consumer (attention.turns_alternate's count, one tile a program), so a program's issues come
    in len(issues) / 2 + 2·tiles runs by consumer, consumer 0 first."""
    for prog in runs:
        issues = [e["partition"] for e in prog.trace if e["what"] == "wgmma"]
        runs_by = [who for i, who in enumerate(issues) if i == 0 or issues[i - 1] != who]
        want = len(issues) // 2 + 2 * tiles_of_program(prog.pid[0])
        if issues and (runs_by[0] != "default partition" or len(runs_by) != want):
            return (f"program {prog.pid[0]}: {len(issues)} products in {len(runs_by)} runs by consumer where their "
                    f"turns make {want}, consumer 0 first")
    return None


def model_check(dynamic: bool = False) -> str | None:
    """CPU: every model shape, causal and not, on 1, 2 and 3 programs (so that a program takes several tiles of
    several heads, and the ring's and turns' counters carry over), and three ring slots once; O within the bound,
    each element written once, no copy unread, the turns alternating across tiles."""
    for shape in MODEL_SHAPES:
        for causal in (False, True):
            for programs in (1, 2, 3):
                got, writes, runs, want, bound = model_run(shape, causal, programs, dynamic=dynamic)
                tiles = -(-shape[2] // attention.FA3_MODEL_CFGS["v4"]["BLOCK_M"]) * shape[0] * shape[1]
                grid = min(tiles, programs)
                problem = (attention.compare(got, want, bound, writes) or attention.unread_copies(runs)
                           or (None if dynamic else turns_alternate(runs, lambda pid: len(range(pid, tiles, grid)))))
                if problem:
                    return f"{shape} causal={causal} on {programs} program(s): {problem}"
    got, writes, runs, want, bound = model_run((2, 2, 200, 230), True, 2, stages=3, dynamic=dynamic)
    return attention.compare(got, want, bound, writes)


class _AsModule:
    KERNELS, CONFIGS = KERNELS, CONFIGS

    @staticmethod
    def constexprs(version, cfg, head_dim, causal):
        return constexprs(version, cfg, head_dim, causal)


def compile_check(dynamic: bool = False) -> str | None:
    """CPU: the sm_90 compile at both head dims, causal and not, against lesson 37's facts of v4 (fit, lesson 36's
    per-loop facts, the turn, the register split). The compile's signature adds BH (i32)."""
    from gluon_course.machine import compile_cached, tensor_descriptor_type

    cfg = CONFIGS["v4"]
    saved = attention.compiled

    def compiled(mod, version, head_dim, causal, cfg=None):
        cfg = cfg or CONFIGS["v4"]

        def desc(block):
            return tensor_descriptor_type("bf16", block, gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16))
        signature = {"q_desc": desc([cfg["BLOCK_M"], head_dim]), "k_desc": desc([cfg["BLOCK_N"], head_dim]),
                     "v_desc": desc([cfg["BLOCK_N"], head_dim]), "o_ptr": "*bf16",
                     **({"counter_ptr": "*i32"} if dynamic else {}), "Sq": "i32", "Sk": "i32",
                     "qk_scale": "fp32", "BH": "i32"}
        return compile_cached(dynamic_kernel if dynamic else persistent_kernel, "sm_90", signature=signature,
                              constexprs=constexprs(version, cfg, head_dim, causal), aligned=("o_ptr",),
                              num_warps=cfg["num_warps"])
    names = attention.fa3_barrier_names
    loops = attention.key_loops

    def innermost(k):
        # The loop over a program's tiles holds each consumer's two key loops: lesson 37's facts read those.
        spans = loops(k)
        return [a for a in spans if not any(b != a and a[0] <= b[0] and b[1] <= a[1] for b in spans)]
    attention.key_loops = innermost
    attention.compiled = compiled
    attention.fa3_barrier_names = lambda cfg, pingpong: names(cfg, pingpong)[:1] + ["q_empty"] + names(cfg, pingpong)[1:]
    try:
        for hd in (64, 128):
            for causal in (False, True):
                f = attention.fa3_facts(_AsModule, "v4", hd, causal, True)
                problem = attention.fa3_facts_problem(f, cfg, ("fit", "lesson36", "turn", "split"))
                if problem:
                    return problem
    finally:
        attention.compiled = saved
        attention.fa3_barrier_names = names
        attention.key_loops = loops
    return None


# -- GPU ---------------------------------------------------------------------------------------------------------------

def small_launch(_unused: str = "") -> None:
    """For compute-sanitizer, in a child process: both kernels on a small odd causal problem and a non-causal one,
    on 3 programs (so that each takes several tiles), the dynamic one twice."""
    g = torch.Generator(device="cuda").manual_seed(0)
    for shape, causal in (((2, 3, 300, 300), True), ((1, 4, 200, 130), False)):
        q, k, v = (torch.randn(*shape[:2], n, 64, device="cuda", generator=g).to(torch.bfloat16)
                   for n in (shape[2], shape[3], shape[3]))
        prepared(q, k, v, causal, programs=3)[0]()
        launch = prepared(q, k, v, causal, programs=3, dynamic=True)[0]
        launch()
        launch()
    torch.cuda.synchronize()


def sanitize() -> str | None:
    """GPU: compute-sanitizer memcheck, synccheck and racecheck on small_launch."""
    from gluon_course.measure.isolated import sanitizer_check

    return sanitizer_check(f"{__file__}:small_launch", [""], tools=("memcheck", "synccheck", "racecheck"))


# A minimal kernel for racecheck's report on the tile number's word: one warp stores a word of shared memory and
# arrives on an mbarrier, the default partition waits on it and reads the word (nothing else: no TMA, no ring).
@gluon.jit
def word_producer(word, bar):
    one: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
    word.store(gl.full([1], 7, gl.int32, layout=one))
    mbarrier.arrive(bar)


@gluon.jit
def word_consumer(word, bar, out_ptr):
    WARPS: gl.constexpr = gl.num_warps()
    mine: gl.constexpr = gl.BlockedLayout([1], [32], [WARPS], [0])
    mbarrier.wait(bar, 0)
    got = gl.max(word.load(mine), axis=0)
    gl.store(out_ptr + gl.program_id(0), got)


@gluon.jit
def word_kernel(out_ptr):
    word = gl.allocate_shared_memory(gl.int32, [1], SCALAR_SMEM)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    gl.warp_specialize([(word_consumer, (word, bar, out_ptr)), (word_producer, (word, bar))], [1], [24])
    mbarrier.invalidate(bar)


# The same hand-over with one word a lane: lane i stores word i, lane 0 arrives, and the readers read word 0 alone,
# so every word they read was written by the thread that arrived. Where racecheck reports the kernel above and not
# this one, it counts an arrive as releasing its own thread's stores only (the bar.warp.sync before the arrive, which
# orders the other lanes' stores before it in PTX's memory model, not taken into account).
@gluon.jit
def lane_word_producer(words, bar):
    lanes: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
    words.store((gl.arange(0, 32, layout=lanes) + 7).to(gl.int8))   # bytes: no stmatrix, one st.shared a lane
    mbarrier.arrive(bar)


@gluon.jit
def lane_word_consumer(words, bar, out_ptr):
    WARPS: gl.constexpr = gl.num_warps()
    mine: gl.constexpr = gl.BlockedLayout([1], [32], [WARPS], [0])
    mbarrier.wait(bar, 0)
    got = gl.max(words.slice(0, 1).load(mine).to(gl.int32), axis=0)
    gl.store(out_ptr + gl.program_id(0), got)


@gluon.jit
def lane_word_kernel(out_ptr):
    words = gl.allocate_shared_memory(gl.int8, [32], SCALAR_SMEM)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    gl.warp_specialize([(lane_word_consumer, (words, bar, out_ptr)), (lane_word_producer, (words, bar))], [1], [24])
    mbarrier.invalidate(bar)


def word_launch(which: str = "") -> None:
    kernel = lane_word_kernel if which == "lane" else word_kernel
    out = torch.zeros(264, dtype=torch.int32, device="cuda")
    for _ in range(10):
        kernel[(264,)](out, num_warps=4)
    torch.cuda.synchronize()
    assert int(out.min()) == 7 == int(out.max()), out


def race_repro() -> str:
    """GPU: racecheck on word_launch, both kernels; their reports' lines (or that they are clean)."""
    from gluon_course.measure.isolated import run_isolated

    said = []
    for which in ("", "lane"):
        run = run_isolated(f"{__file__}:word_launch", [which], timeout=120, tool="racecheck")
        lines = [l for l in run.output.splitlines() if "hazard" in l.lower() or "probe_fa3_persistent.py" in l
                 or "SUMMARY" in l or "Error" in l]
        said.append(f"{which or 'one replicated word'}: racecheck exit {run.returncode}:\n" + "\n".join(lines[:8]))
    return "\n".join(said)


SHAPES = ((1024, 128, False), (1024, 128, True), (4096, 128, False), (4096, 128, True), (16384, 128, True),
          (4096, 64, False), (4096, 64, True))


def gpu_main(path: str) -> None:
    import faulthandler
    from datetime import datetime, timezone

    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    t0 = time.time()
    found = {"what": "issue 42: lesson 37's v4 made persistent (one program an SM over the tiles, the producer "
                     "running ahead across tiles) against lesson 37's v4 and SDPA",
             "produced_by": {"probe": "tools/probes/probe_fa3_persistent.py",
                             "command": "python tools/probes/probe_fa3_persistent.py OUT.json",
                             "established_from": "the run's own output (the probe writes this field)"},
             "gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
             "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "incorrect": {}, "rows": []}
    for dynamic in (False, True):
        wrapped = type("Persistent", (), {"attention": staticmethod(
            lambda *a, dynamic=dynamic, **kw: attention_call(*a, dynamic=dynamic, **kw))})
        for hd in (64, 128):
            for shape in attention.GPU_ODD_SHAPES + ((3, 5, 1000, 1000), (2, 40, 300, 300)):
                for causal in (False, True):
                    for seed in (0, 1):              # the dynamic kernel twice: its counter zeroed at each launch
                        problem = attention.gpu_check_one(wrapped, "v4", shape, hd, causal, seed=seed)
                        if problem:
                            found["incorrect"][f"dynamic={dynamic} {shape} hd {hd} causal {causal}"] = problem
    with open(path, "w") as fh:
        json.dump(found, fh, indent=1)
    if found["incorrect"]:
        print("incorrect, no timing:", found["incorrect"])
        return
    for S, hd, causal in SHAPES:
        B = max(1, attention.TOKENS // S)
        g = torch.Generator(device="cuda").manual_seed(1)
        q, k, v = (torch.randn(B, attention.HEADS, S, hd, device="cuda", generator=g).to(torch.bfloat16)
                   for _ in range(3))
        out = torch.empty_like(q)
        calls = {"persistent": prepared(q, k, v, causal, out=out)[0],
                 "dynamic": prepared(q, k, v, causal, out=out, dynamic=True)[0],
                 "v4": L37.prepared(q, k, v, causal, "v4", out=out)[0]}
        for backend in ("CUDNN_ATTENTION", "FLASH_ATTENTION"):
            fn = attention.sdpa_call(backend, q, k, v, causal)
            if not attention.sdpa_refusal(fn):
                calls[backend.split("_")[0].lower()] = fn
        for fn in calls.values():
            fn()
        torch.cuda.synchronize()
        ms = attention.interleaved_ms(calls)
        flops = 4 * B * attention.HEADS * S * S * hd * (0.5 if causal else 1)
        found["rows"].append({"S": S, "head_dim": hd, "causal": causal, "batch": B,
                              "tflops": {n: round(flops / t / 1e9, 1) for n, t in ms.items()}})
        with open(path, "w") as fh:
            json.dump(found, fh, indent=1)
        del q, k, v, out
    found["seconds"] = round(time.time() - t0, 1)
    with open(path, "w") as fh:
        json.dump(found, fh, indent=1)
    names = list(found["rows"][0]["tflops"])
    print("| S | head dim | causal | " + " | ".join(names) + " |\n|---|---|---|" + "---|" * len(names))
    for row in found["rows"]:
        print(f"| {row['S']} | {row['head_dim']} | {row['causal']} | "
              + " | ".join(f"{row['tflops'].get(n, 0):.0f}" for n in names) + " |")


VERSUS_SHAPES = ((1024, True), (4096, False), (8192, False), (16384, False), (16384, True))


def versus_lesson(path: str, rounds: int = 3) -> None:
    """GPU: lesson 37's v4 and v5 beside this probe's dynamic kernel, head dim 128, interleaved in one process,
    ``rounds`` times over the shapes (the lesson's recording read v5 below v4 on long non-causal shapes where this
    probe had read the dynamic kernel above it)."""
    from datetime import datetime, timezone

    found = {"what": "issue 42: lesson 37's v5 against its v4 and the probe's dynamic kernel, interleaved",
             "produced_by": {"probe": "tools/probes/probe_fa3_persistent.py",
                             "command": "python tools/probes/probe_fa3_persistent.py --versus-lesson OUT.json",
                             "established_from": "the run's own output (the probe writes this field)"},
             "gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
             "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "rows": []}
    for r in range(rounds):
        for S, causal in VERSUS_SHAPES:
            B, hd = max(1, attention.TOKENS // S), 128
            g = torch.Generator(device="cuda").manual_seed(1)
            q, k, v = (torch.randn(B, attention.HEADS, S, hd, device="cuda", generator=g).to(torch.bfloat16)
                       for _ in range(3))
            out = torch.empty_like(q)
            calls = {"lesson v4": L37.prepared(q, k, v, causal, "v4", out=out)[0],
                     "lesson v5": L37.prepared(q, k, v, causal, "v5", out=out)[0],
                     "probe dynamic": prepared(q, k, v, causal, out=out, dynamic=True)[0]}
            for fn in calls.values():
                fn()
            torch.cuda.synchronize()
            ms = attention.interleaved_ms(calls)
            flops = 4 * B * attention.HEADS * S * S * hd * (0.5 if causal else 1)
            found["rows"].append({"round": r, "S": S, "causal": causal, "batch": B,
                                  "tflops": {n: round(flops / t / 1e9, 1) for n, t in ms.items()}})
            with open(path, "w") as fh:
                json.dump(found, fh, indent=1)
            del q, k, v, out
    names = list(found["rows"][0]["tflops"])
    print("| round | S | causal | " + " | ".join(names) + " |")
    for row in found["rows"]:
        print(f"| {row['round']} | {row['S']} | {row['causal']} | "
              + " | ".join(f"{row['tflops'][n]:.0f}" for n in names) + " |")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--model"]:
        for dynamic in (False, True):
            name = "dynamic" if dynamic else "persistent"
            t = time.time()
            print(f"{name}, host model: {model_check(dynamic) or 'O within the bound everywhere'} "
                  f"({time.time() - t:.0f} s)")
            t = time.time()
            print(f"{name}, sm_90 compile: {compile_check(dynamic) or 'lesson 37 facts of v4 hold at both head dims'} "
                  f"({time.time() - t:.0f} s)")
    elif args[:1] == ["--versus-lesson"]:
        versus_lesson(args[1])
    elif args[:1] == ["--race-repro"]:
        print(race_repro())
    elif args[:1] == ["--sanitize"]:
        print(f"compute-sanitizer: {sanitize() or 'memcheck, synccheck and racecheck clean'}")
    elif args and not args[0].startswith("-"):
        gpu_main(args[0])
    else:
        print(__doc__)
