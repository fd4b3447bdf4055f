"""Issue 42, lesson 37's groundwork: the FA3 schedule on Hopper, one idea a step, on lesson 36's attention v2.

Lesson 37 (solutions/37-fa3-schedule) now teaches ``v3`` and ``v4_pv`` (its v4), with their checks and plants; this
probe keeps the variants that lost (``v4``, ``v3_pv``) beside them for the GPU step's timing and the compile's
findings below, and takes the lesson's ``softmax_scores`` and ``p_operand``.

The steps (each an sm_90 kernel that runs in the host model; lesson 36's key_blocks, mask_scores, store_output and v2's
producer warp and K/V ring reused, lesson 33's take_turn and pass_turn):

- ``v3``, **intra-warpgroup overlap** (``attention_v3_kernel``, ``overlapped_blocks``): v2's consumers (the default
  partition's two warpgroups on 128 queries), but block j+1's S = Q·K_{j+1}ᵀ is issued (async wgmma) before block j's
  softmax and retired after it, together with block j's P·V, before the loop's back edge; then K_{j+1}'s and V_j's
  slots go back to the producer. The last block is peeled after the loops (no next S) and always masked.
- ``v4``, **ping-pong consumers** (``attention_v4_kernel``): two consumer warpgroups (the default partition and a
  worker of 4 warps), each on its own 64 of the program's 128 queries, over one shared K/V ring whose empty barriers
  count two arrivals; they take turns at the tensor cores through two order mbarriers, a turn issuing block j's P·V
  and block j+1's S; register reallocation: producer LOAD_REGS 24, consumer 1 MMA_REGS 240, consumer 0 what is left.
- ``v3_pv`` and ``v4_pv``: the same kernels in FA3's order (``pv_overlapped_blocks``, PV_OVERLAP): S_{j+1} and block
  j's P·V issued back to back (one turn), S_{j+1} retired alone (depth 1), block j+1's softmax meant to run while
  P·V j does, then P·V retired (depth 0) and P converted to bf16 (after the wait, as FA3 does).

What the compiles show (Triton 3.9.0, sm_90, head dim 128, CONFIGS; ``--compile`` prints the table for head dim 64
and 128, causal and not):

- All four launch 12 warps at 168 registers, spill nothing, use 160 KiB of shared memory (Q 32 KiB, two slots of K
  and V at 32 KiB each) and carry no ptxas note. 2 × 128 queries instead (BLOCK_M 256): v4 spills 12 508 bytes and
  ptxas serializes its wgmma (note C7511, insufficient registers for the wgmma pipeline), v4_pv spills 5 568 (C7512).
- v3's key loop (causal, unmasked): ``wait:k_ready S×2 EX2×5 S EX2×13 S … S wait:v_ready PV×8 wait<0> arrive:k_empty
  arrive:v_empty``:
  ptxas spreads the softmax's 66 MUFU.EX2 (64 scores and 2 rows a thread) between the 8 HGMMAs of S_{j+1}; one
  wgmma wait a block. A first version that left P·V j in flight across the back edge (retired in the next block,
  depth 1) got ptxas's note C7514 ("wgmma.mma_async instructions are serialized due to non wgmma instructions reading
  accumulator registers of a wgmma between start and end of the pipeline stage") and a WARPGROUP.DEPBAR 0 after
  every HGMMA of the kernel: nothing may be in flight at the back edge.
- Because block j's softmax does not depend on S_{j+1}, ptxas hoists its exponentials above a wait for S_{j+1}
  written before the softmax (66 of 66 EX2 still between S's HGMMAs): that mistake costs nothing here; only S_{j+1}
  issued after the softmax (a plant) leaves the exponentials outside S's shadow (2 of 66).
- v4: the same loop, and the turn's handover (``arrive:turn[1]``) comes after the last of the 66 EX2: the softmax
  hoisted into S's issue delays the handover, so the other consumer's turn starts only after this one's
  exponentials — which defeats the ping-pong as compiled (the GPU step times it).
- v3_pv, v4_pv: ``S×8 wait:v_ready PV×8 arrive:turn[1] wait<1> arrive:k_empty wait<0> arrive:v_empty EX2×66``:
  the handover right after the products, but ptxas sinks the softmax below the wait that retires P·V (0 to 3 of 66
  EX2 before it), although the PTX has all 66 ex2 between wait_group 1 and wait_group 0; converting P after the wait
  and head dim 64 change nothing. So v4_pv's softmax overlaps the other warpgroup's products only, not its own P·V.
- USETMAXREG in address order: v3 TRY_ALLOC 240 (×3), DEALLOC 24, TRY_ALLOC 24 (×4), as lesson 18's kernel at
  LOAD_REGS 24; v4 TRY_ALLOC 256, DEALLOC 240, TRY_ALLOC 256, DEALLOC 120, TRY_ALLOC 240, DEALLOC 120, DEALLOC 24,
  TRY_ALLOC 120, DEALLOC 24, TRY_ALLOC 120 (240 + 240 + 24 registers over three warpgroups is 168 × 384).

The host model (``--model``) runs every step on lesson 36's odd shapes and one causal head of 200 queries over 230 keys
(so that v4's 128-query tiles have unmasked blocks), causal and not, and with scores past exp2's range: O within the
fp64 reference's bound, each element of a NaN-poisoned O written once, no race on a ring slot, no hang. The plants
(``PLANTS``): a V slot released before its P·V retires (both orders: the model's race on v_ring), the empty barriers
counting one arrival (the model's hang), S_{j+1} issued after the softmax and the order barriers skipped (the compile
facts: EX2 under S, turn waits and passes per loop). The model cannot reject skipped order barriers: the kernel stays
correct, and its schedule (an arrive hands the turn to any partition it wakes) alternates the two consumers anyway;
only the GPU's timing shows what the turns buy. ``HARMLESS``: a K slot released before the wait that retires S_{j+1}
is not a mistake with v2's producer (it refills that slot only after the V slot the same wait frees); the model
accepts it.

    python tools/probes/probe_attention_fa3.py --model     CPU: the host model on every step; the model's plants
    python tools/probes/probe_attention_fa3.py --compile   CPU: the table of SASS facts, the compile facts on every
                                                            step, the compile's plants
    python tools/probes/probe_attention_fa3.py OUT.json    GPU: correctness on lesson 36's odd shapes (both head dims,
                                                            causal and not), then TFLOPS of v2, v3, v3_pv, v4, v4_pv
                                                            and SDPA's backends at S = 1k, 4k, 16k, head dim 128
                                                            (16k tokens × 32 heads), interleaved; a JSON and a table;
                                                            ends itself after 540 s
"""
from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (mbarrier, warpgroup_mma, warpgroup_mma_init,
                                                              warpgroup_mma_wait)

from gluon_course import load_solution
from gluon_course.nvidia import attention as att

v36 = load_solution("36")
v33 = load_solution("33")
v37 = load_solution("37")
# Lesson 37 took v3 and v4 in FA3's order over (its v3 and v4); this probe keeps all four variants for the GPU step's
# comparison and the compile's findings, on the lesson's softmax split (P in fp32, then its bf16 operand).
softmax_scores, p_operand = v37.softmax_scores, v37.p_operand
# Lesson 36's device functions (the blocks a tile visits, the mask, the store, v2's producer) and lesson 33's turns.
key_blocks, mask_scores, store_output, load_partition = (v36.key_blocks, v36.mask_scores, v36.store_output,
                                                         v36.v2_load_partition)
take_turn, pass_turn = v33.take_turn, v33.pass_turn
LOG2E = v36.LOG2E


# -- the kernels ------------------------------------------------------------------------------------------------------

@gluon.jit
def overlapped_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, my_turn, next_turn, s, o, m_i, l_i,
                      qk_scale, m0, Sk, first, last, STAGES: gl.constexpr, MASKED: gl.constexpr,
                      CAUSAL: gl.constexpr, PINGPONG: gl.constexpr, ME: gl.constexpr, s_layout: gl.constexpr,
                      o_layout: gl.constexpr):
    """Key blocks ``first`` to ``last`` - 1, each of which has a next block. On entry ``s`` holds block ``first``'s
    scores (retired, its K slot released) and no wgmma is in flight. With PINGPONG the consumer holds the tensor
    cores' turn on entry and on exit: a turn issues block j's P·V and block j+1's S."""
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    for j in range(first, last):
        slot = j % STAGES
        nxt = (j + 1) % STAGES
        # S_{j+1} issued now, waited for after this block's softmax: the tensor cores compute it meanwhile.
        mbarrier.wait(k_ready.index(nxt), ((j + 1) // STAGES) & 1)
        k_next = k_ring.index(nxt).permute((1, 0))
        s_next = warpgroup_mma(q_rows, k_next, gl.zeros(s.shape, gl.float32, s_layout), use_acc=False,
                               is_async=True)
        if PINGPONG:
            pass_turn(next_turn)
        if MASKED:
            s = mask_scores(s, m0, j * BLOCK_N, Sk, CAUSAL, s_layout)
        p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)
        p = p_operand(p, o_layout)
        o = o * alpha[:, None]
        if PINGPONG:
            take_turn(my_turn, j + 1, ME)
        mbarrier.wait(v_ready.index(slot), (j // STAGES) & 1)
        v_cur = v_ring.index(slot)
        o = warpgroup_mma(p, v_cur, o, is_async=True)
        # Both retired before the loop's back edge: a wgmma still in flight there (P·V left running into the next
        # block's softmax) makes ptxas serialize every wgmma of the kernel (its note C7514: the loop's register
        # copies read the accumulator). Only then go the two slots back to the producer.
        s, o, _, _, _ = warpgroup_mma_wait(0, deps=(s_next, o, k_next, p, v_cur))
        mbarrier.arrive(k_empty.index(nxt))
        mbarrier.arrive(v_empty.index(slot))
    return s, o, m_i, l_i


@gluon.jit
def pv_overlapped_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, my_turn, next_turn, p, alpha, o,
                         m_i, l_i, qk_scale, m0, Sk, first, last, STAGES: gl.constexpr, MASKED: gl.constexpr,
                         CAUSAL: gl.constexpr, PINGPONG: gl.constexpr, ME: gl.constexpr, s_layout: gl.constexpr,
                         o_layout: gl.constexpr):
    """FA3's order (PV_OVERLAP): iteration j issues S_{j+1} and block j's P·V back to back (one turn with PINGPONG),
    waits for S_{j+1} alone (depth 1) and runs block j+1's softmax while block j's P·V is still running; then retires
    it (depth 0). On entry block ``first``'s P and alpha are in registers and O is retired; ``MASKED`` masks the
    scores of block j+1 (the one whose softmax the iteration runs)."""
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    for j in range(first, last):
        slot = j % STAGES
        nxt = (j + 1) % STAGES
        mbarrier.wait(k_ready.index(nxt), ((j + 1) // STAGES) & 1)
        k_next = k_ring.index(nxt).permute((1, 0))
        if PINGPONG:
            take_turn(my_turn, j + 1, ME)
        s = warpgroup_mma(q_rows, k_next, gl.zeros([q_rows.shape[0], BLOCK_N], gl.float32, s_layout),
                          use_acc=False, is_async=True)
        o = o * alpha[:, None]
        mbarrier.wait(v_ready.index(slot), (j // STAGES) & 1)
        v_cur = v_ring.index(slot)
        p_cur = p
        o = warpgroup_mma(p_cur, v_cur, o, is_async=True)
        if PINGPONG:
            pass_turn(next_turn)
        # In flight: S_{j+1}, then P·V j. Depth 1 retires S_{j+1} only.
        s, _, _ = warpgroup_mma_wait(1, deps=(s, q_rows, k_next))
        mbarrier.arrive(k_empty.index(nxt))
        if MASKED:
            s = mask_scores(s, m0, (j + 1) * BLOCK_N, Sk, CAUSAL, s_layout)
        p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)
        o, _, _ = warpgroup_mma_wait(0, deps=(o, p_cur, v_cur))
        mbarrier.arrive(v_empty.index(slot))
        # Only now into bf16 registers: the P·V just retired read the previous block's P from them (FA3 converts
        # here too).
        p = p_operand(p, o_layout)
    return p, alpha, o, m_i, l_i


@gluon.jit
def fa3_consumer(ME: gl.constexpr, q_rows, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty, my_turn,
                 next_turn, o_ptr, Sq, Sk, qk_scale, CAUSAL: gl.constexpr, STAGES: gl.constexpr,
                 PINGPONG: gl.constexpr, PV_OVERLAP: gl.constexpr, TILE_M: gl.constexpr, s_layout: gl.constexpr,
                 o_layout: gl.constexpr):
    """One consumer: the queries ``q_rows`` (rows ME·ROWS.. of the program's TILE_M) over the key blocks that lesson
    36's key_blocks gives the program's tile (both consumers walk the same blocks: they share the ring)."""
    ROWS: gl.constexpr = q_rows.shape[0]
    HEAD_DIM: gl.constexpr = q_rows.shape[1]
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    tile_m0 = gl.program_id(0) * TILE_M
    m0 = tile_m0 + ME * ROWS
    bh = gl.program_id(1)
    m_i = gl.full([ROWS], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([ROWS], gl.float32, layout=gl.SliceLayout(1, s_layout))
    o = gl.zeros([ROWS, HEAD_DIM], gl.float32, layout=o_layout)
    n_full, n_all = key_blocks(tile_m0, Sk, TILE_M, BLOCK_N, CAUSAL)
    unmasked_end = gl.minimum(n_full, n_all - 1)
    mbarrier.wait(q_bar, 0)

    if PV_OVERLAP:
        # Block 0's S and softmax before the loops (they take a block's P and alpha ready).
        if PINGPONG:
            take_turn(my_turn, 0, ME)
        mbarrier.wait(k_ready.index(0), 0)
        k_first = k_ring.index(0).permute((1, 0))
        s = warpgroup_mma(q_rows, k_first, gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout), use_acc=False,
                          is_async=True)
        if PINGPONG:
            pass_turn(next_turn)
        s, _, _ = warpgroup_mma_wait(0, deps=(s, q_rows, k_first))
        mbarrier.arrive(k_empty.index(0))
        s = mask_scores(s, m0, 0, Sk, CAUSAL, s_layout)          # block 0 masked always (once a program)
        p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)
        p = p_operand(p, o_layout)
        # Iteration j runs block j+1's softmax: unmasked while j+1 < n_full.
        split = gl.maximum(n_full - 1, 0)
        p, alpha, o, m_i, l_i = pv_overlapped_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty,
                                                     my_turn, next_turn, p, alpha, o, m_i, l_i, qk_scale, m0, Sk, 0,
                                                     split, STAGES, False, CAUSAL, PINGPONG, ME, s_layout, o_layout)
        p, alpha, o, m_i, l_i = pv_overlapped_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty,
                                                     my_turn, next_turn, p, alpha, o, m_i, l_i, qk_scale, m0, Sk,
                                                     split, n_all - 1, STAGES, True, CAUSAL, PINGPONG, ME, s_layout,
                                                     o_layout)
        last = n_all - 1
        if PINGPONG:
            take_turn(my_turn, last + 1, ME)
        o = o * alpha[:, None]
        mbarrier.wait(v_ready.index(last % STAGES), (last // STAGES) & 1)
        v_last = v_ring.index(last % STAGES)
        o = warpgroup_mma(p, v_last, o, is_async=True)
        if PINGPONG:
            pass_turn(next_turn)
        o, _, _ = warpgroup_mma_wait(0, deps=(o, p, v_last))
        mbarrier.arrive(v_empty.index(last % STAGES))
    else:
        # Block 0's S, retired before the loops (they take each block's S retired). The turn taken here is passed in
        # the first block's iteration, after S_1 is issued.
        if PINGPONG:
            take_turn(my_turn, 0, ME)
        mbarrier.wait(k_ready.index(0), 0)
        k_first = k_ring.index(0).permute((1, 0))
        s = warpgroup_mma(q_rows, k_first, gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout), use_acc=False,
                          is_async=True)
        s, _, _ = warpgroup_mma_wait(0, deps=(s, q_rows, k_first))
        mbarrier.arrive(k_empty.index(0))

        s, o, m_i, l_i = overlapped_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, my_turn, next_turn,
                                           s, o, m_i, l_i, qk_scale, m0, Sk, 0, unmasked_end, STAGES, False, CAUSAL,
                                           PINGPONG, ME, s_layout, o_layout)
        s, o, m_i, l_i = overlapped_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, my_turn, next_turn,
                                           s, o, m_i, l_i, qk_scale, m0, Sk, unmasked_end, n_all - 1, STAGES, True,
                                           CAUSAL, PINGPONG, ME, s_layout, o_layout)

        # The last block: no next S to issue, and always masked (once a program; a block every key of which is valid
        # comes out of mask_scores as it went in).
        last = n_all - 1
        if PINGPONG:
            pass_turn(next_turn)
        s = mask_scores(s, m0, last * BLOCK_N, Sk, CAUSAL, s_layout)
        p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)
        p = p_operand(p, o_layout)
        o = o * alpha[:, None]
        if PINGPONG:
            take_turn(my_turn, last + 1, ME)
        mbarrier.wait(v_ready.index(last % STAGES), (last // STAGES) & 1)
        v_last = v_ring.index(last % STAGES)
        o = warpgroup_mma(p, v_last, o, is_async=True)
        if PINGPONG:
            pass_turn(next_turn)
        o, _, _ = warpgroup_mma_wait(0, deps=(o, p, v_last))
        mbarrier.arrive(v_empty.index(last % STAGES))
    store_output(o, l_i, o_ptr, bh * Sq + m0, m0, Sq, o_layout)


@gluon.jit
def attention_v3_kernel(q_desc, k_desc, v_desc, o_ptr, Sq, Sk, qk_scale, CAUSAL: gl.constexpr,
                        s_layout: gl.constexpr, o_layout: gl.constexpr, STAGES: gl.constexpr,
                        LOAD_REGS: gl.constexpr, PV_OVERLAP: gl.constexpr):
    """v3: v2's kernel (one producer warp, the default partition's warpgroups as one consumer) with the overlapped
    key loop."""
    TILE_M: gl.constexpr = q_desc.block_shape[0]
    q_smem = gl.allocate_shared_memory(q_desc.dtype, q_desc.block_type.shape, q_desc.layout)
    k_ring = gl.allocate_shared_memory(k_desc.dtype, [STAGES] + k_desc.block_type.shape, k_desc.layout)
    v_ring = gl.allocate_shared_memory(v_desc.dtype, [STAGES] + v_desc.block_type.shape, v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(v_empty.index(i), count=1)
    gl.warp_specialize([
        (fa3_consumer, (0, q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty, None, None, o_ptr, Sq,
                        Sk, qk_scale, CAUSAL, STAGES, False, PV_OVERLAP, TILE_M, s_layout, o_layout)),
        (load_partition, (q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready,
                          v_empty, gl.program_id(1), Sq, Sk, CAUSAL, STAGES)),
    ], [1], [LOAD_REGS])
    mbarrier.invalidate(q_bar)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(k_ready.index(i))
        mbarrier.invalidate(k_empty.index(i))
        mbarrier.invalidate(v_ready.index(i))
        mbarrier.invalidate(v_empty.index(i))


@gluon.jit
def attention_v4_kernel(q_desc, k_desc, v_desc, o_ptr, Sq, Sk, qk_scale, CAUSAL: gl.constexpr,
                        s_layout: gl.constexpr, o_layout: gl.constexpr, STAGES: gl.constexpr,
                        LOAD_REGS: gl.constexpr, MMA_REGS: gl.constexpr, PV_OVERLAP: gl.constexpr):
    """v4: two consumer warpgroups (the default partition and worker 0, 4 warps each), each on half of the program's
    TILE_M queries, taking turns at the tensor cores; one producer warp (worker 1) fills the ring both read."""
    TILE_M: gl.constexpr = q_desc.block_shape[0]
    ROWS: gl.constexpr = TILE_M // 2
    ORDERED: gl.constexpr = True        # the consumers take turns at the tensor cores (the order barriers)
    q_smem = gl.allocate_shared_memory(q_desc.dtype, q_desc.block_type.shape, q_desc.layout)
    k_ring = gl.allocate_shared_memory(k_desc.dtype, [STAGES] + k_desc.block_type.shape, k_desc.layout)
    v_ring = gl.allocate_shared_memory(v_desc.dtype, [STAGES] + v_desc.block_type.shape, v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2)       # both consumers release each slot
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(v_empty.index(i), count=2)
    for c in gl.static_range(2):
        mbarrier.init(turn.index(c), count=1)          # one handover completes a phase
    gl.warp_specialize([
        (fa3_consumer, (0, q_smem.slice(0, ROWS), k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty,
                        turn.index(0), turn.index(1), o_ptr, Sq, Sk, qk_scale, CAUSAL, STAGES, ORDERED, PV_OVERLAP, TILE_M,
                        s_layout, o_layout)),
        (fa3_consumer, (1, q_smem.slice(ROWS, ROWS), k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty,
                        turn.index(1), turn.index(0), o_ptr, Sq, Sk, qk_scale, CAUSAL, STAGES, ORDERED, PV_OVERLAP, TILE_M,
                        s_layout, o_layout)),
        (load_partition, (q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready,
                          v_empty, gl.program_id(1), Sq, Sk, CAUSAL, STAGES)),
    ], [4, 1], [MMA_REGS, LOAD_REGS])
    mbarrier.invalidate(q_bar)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(k_ready.index(i))
        mbarrier.invalidate(k_empty.index(i))
        mbarrier.invalidate(v_ready.index(i))
        mbarrier.invalidate(v_empty.index(i))
    for c in gl.static_range(2):
        mbarrier.invalidate(turn.index(c))


# -- configurations and the launcher (the interface gluon_course.nvidia.attention's helpers call) --------------------

# v3: v2's tile (128 queries over the default partition's two warpgroups); the producer asks for 24 registers (v2: 40)
# so that the consumers get 240 for the extra S in flight. v4: 2 × 64 queries, one warpgroup each; FA3's 24 / 240.
# PV_OVERLAP 0: S_{j+1} issued before block j's softmax and waited for after it (the step as issue 42 words it);
# 1: FA3's order, block j+1's softmax over block j's P·V (``pv_overlapped_blocks``). The _pv versions are the same
# kernels in FA3's order.
CONFIGS = {
    "v2": v36.CONFIGS["v2"],
    "v3": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "STAGES": 2, "LOAD_REGS": 24, "PV_OVERLAP": 0},
    "v4": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 4, "STAGES": 2, "LOAD_REGS": 24, "MMA_REGS": 240,
           "PV_OVERLAP": 0},
}
CONFIGS["v3_pv"] = {**CONFIGS["v3"], "PV_OVERLAP": 1}
CONFIGS["v4_pv"] = {**CONFIGS["v4"], "PV_OVERLAP": 1}
# The host model's: one warpgroup's 64 queries (v4: two of them), keys in blocks of 32, head dim 64, 2 slots.
MODEL_CFGS = {"v3": {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "STAGES": 2, "LOAD_REGS": 24, "PV_OVERLAP": 0},
              "v4": {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 4, "STAGES": 2, "LOAD_REGS": 24, "MMA_REGS": 240,
                     "PV_OVERLAP": 0}}
MODEL_CFGS["v3_pv"] = {**MODEL_CFGS["v3"], "PV_OVERLAP": 1}
MODEL_CFGS["v4_pv"] = {**MODEL_CFGS["v4"], "PV_OVERLAP": 1}
# Lesson 36's odd shapes, and a causal head long enough for v4's 128-query tiles to have unmasked blocks.
MODEL_SHAPES = att.MODEL_SHAPES + ((1, 1, 200, 230),)
KERNELS = {"v2": v36.attention_v2_kernel, "v3": attention_v3_kernel, "v3_pv": attention_v3_kernel,
           "v4": attention_v4_kernel, "v4_pv": attention_v4_kernel}
FA3_VERSIONS = ("v3", "v3_pv", "v4", "v4_pv")


def constexprs(version: str, cfg: dict, head_dim: int, causal: bool) -> dict:
    """The kernel's constexprs besides its descriptors. v4's layouts are one consumer warpgroup's (num_warps 4)."""
    if version == "v2":
        return v36.constexprs(version, cfg, head_dim, causal)
    ce = {"CAUSAL": bool(causal), "s_layout": v36.wgmma_layout(cfg["num_warps"], cfg["BLOCK_N"]),
          "o_layout": v36.wgmma_layout(cfg["num_warps"], head_dim), "STAGES": cfg["STAGES"],
          "LOAD_REGS": cfg["LOAD_REGS"], "PV_OVERLAP": bool(cfg["PV_OVERLAP"])}
    if version.startswith("v4"):
        ce["MMA_REGS"] = cfg["MMA_REGS"]
    return ce


def prepared(q, k, v, causal: bool = False, version: str = "v4", out=None, sm_scale: float | None = None,
             config: dict | None = None):
    """Lesson 36's launcher for these kernels: (a function of no argument that launches ``version``, ``out``)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from gluon_course.nvidia.hopper import require_hopper
    from gluon_course.validate import require_separate_output

    cfg = config or CONFIGS[version]
    v36.require_attention_args(q, k, v, cfg)
    require_hopper(q)
    B, H, Sq, D = q.shape
    out = torch.empty_like(q) if out is None else out
    # Lesson 36's refusals of an output, word for word in its launcher.
    if out.shape != q.shape or out.dtype != torch.bfloat16 or not out.is_contiguous():
        raise ValueError(f"out is {tuple(out.shape)} {out.dtype}: it must be a contiguous bfloat16 tensor of Q's shape "
                         f"{tuple(q.shape)} (or None, for a new one)")
    require_separate_output(out, "out", q=q, k=k, v=v)
    sm_scale = 1 / math.sqrt(D) if sm_scale is None else sm_scale

    def desc(t, rows):
        block = [rows, D]
        return TensorDescriptor.from_tensor(t.view(-1, D), block,
                                            gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16))
    grid = (triton.cdiv(Sq, cfg["BLOCK_M"]), B * H)
    args = (desc(q, cfg["BLOCK_M"]), desc(k, cfg["BLOCK_N"]), desc(v, cfg["BLOCK_N"]), out, Sq, k.shape[2],
            sm_scale * LOG2E)
    kwargs = {**constexprs(version, cfg, D, causal), "num_warps": cfg["num_warps"]}
    kernel = KERNELS[version]

    def launch():
        kernel[grid](*args, **kwargs)
    return launch, out


def attention(q, k, v, causal: bool = False, version: str = "v4", out=None, sm_scale=None, config=None):
    """softmax(Q·Kᵀ·sm_scale)·V by ``version`` (as lesson 36's ``attention``); returns ``out`` (new by default)."""
    launch, out = prepared(q, k, v, causal, version, out, sm_scale, config)
    launch()
    return out


# -- the plants: mistakes the model or the compile facts must reject ----------------------------------------------

# (mistake, old text of this file, new text, the versions it is tried on, what must reject it: "model" or "compile")
PLANTS = [
    ("block j's V slot released before its P·V retires (v3's order)",
     "        s, o, _, _, _ = warpgroup_mma_wait(0, deps=(s_next, o, k_next, p, v_cur))\n"
     "        mbarrier.arrive(k_empty.index(nxt))\n        mbarrier.arrive(v_empty.index(slot))\n",
     "        mbarrier.arrive(v_empty.index(slot))\n"
     "        s, o, _, _, _ = warpgroup_mma_wait(0, deps=(s_next, o, k_next, p, v_cur))\n"
     "        mbarrier.arrive(k_empty.index(nxt))\n",
     ("v3", "v4"), "model"),
    ("block j's V slot released before its P·V retires (FA3's order)",
     "        o, _, _ = warpgroup_mma_wait(0, deps=(o, p_cur, v_cur))\n        mbarrier.arrive(v_empty.index(slot))\n",
     "        mbarrier.arrive(v_empty.index(slot))\n        o, _, _ = warpgroup_mma_wait(0, deps=(o, p_cur, v_cur))\n",
     ("v3_pv", "v4_pv"), "model"),
    ("the order barriers skipped (what the compile shows)",
     "    ORDERED: gl.constexpr = True", "    ORDERED: gl.constexpr = False", ("v4", "v4_pv"), "compile"),
    ("the next block's S issued after this block's softmax (nothing overlaps the softmax)",
     "        mbarrier.wait(k_ready.index(nxt), ((j + 1) // STAGES) & 1)\n"
     "        k_next = k_ring.index(nxt).permute((1, 0))\n"
     "        s_next = warpgroup_mma(q_rows, k_next, gl.zeros(s.shape, gl.float32, s_layout), use_acc=False,\n"
     "                               is_async=True)\n"
     "        if PINGPONG:\n            pass_turn(next_turn)\n"
     "        if MASKED:\n            s = mask_scores(s, m0, j * BLOCK_N, Sk, CAUSAL, s_layout)\n"
     "        p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)\n",
     "        if MASKED:\n            s = mask_scores(s, m0, j * BLOCK_N, Sk, CAUSAL, s_layout)\n"
     "        p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)\n"
     "        mbarrier.wait(k_ready.index(nxt), ((j + 1) // STAGES) & 1)\n"
     "        k_next = k_ring.index(nxt).permute((1, 0))\n"
     "        s_next = warpgroup_mma(q_rows, k_next, gl.zeros(s.shape, gl.float32, s_layout), use_acc=False,\n"
     "                               is_async=True)\n"
     "        if PINGPONG:\n            pass_turn(next_turn)\n",
     ("v3", "v4"), "compile"),
    ("the ring's empty barriers count one arrival where two consumers release each slot",
     "        mbarrier.init(k_empty.index(i), count=2)       # both consumers release each slot\n"
     "        mbarrier.init(v_ready.index(i), count=1)\n        mbarrier.init(v_empty.index(i), count=2)\n",
     "        mbarrier.init(k_empty.index(i), count=1)       # both consumers release each slot\n"
     "        mbarrier.init(v_ready.index(i), count=1)\n        mbarrier.init(v_empty.index(i), count=1)\n",
     ("v4", "v4_pv"), "model"),
]
# Releases that look early but are not mistakes here, which the model must accept: v2's producer loads K_{j+1+STAGES}
# only after V_{j+STAGES}, into the slot of V_j, which the consumers release after the same wait that retires S_{j+1}:
# a K slot released before S_{j+1}'s wait is refilled only after it anyway.
HARMLESS = [
    ("S_{j+1}'s K slot released before the wait that retires it (v3's order)",
     "        s, o, _, _, _ = warpgroup_mma_wait(0, deps=(s_next, o, k_next, p, v_cur))\n"
     "        mbarrier.arrive(k_empty.index(nxt))\n",
     "        mbarrier.arrive(k_empty.index(nxt))\n"
     "        s, o, _, _, _ = warpgroup_mma_wait(0, deps=(s_next, o, k_next, p, v_cur))\n",
     ("v3", "v4"), "model"),
    ("S_{j+1}'s K slot released before the wgmma reading it retires (FA3's order)",
     "        s, _, _ = warpgroup_mma_wait(1, deps=(s, q_rows, k_next))\n        mbarrier.arrive(k_empty.index(nxt))\n",
     "        mbarrier.arrive(k_empty.index(nxt))\n        s, _, _ = warpgroup_mma_wait(1, deps=(s, q_rows, k_next))\n",
     ("v3_pv", "v4_pv"), "model"),
]
# The plants' host-model shapes: a tail block and Sq ≠ Sk, causal and not, enough blocks to refill every slot.
PLANT_SHAPES = ((1, 1, 200, 230), (2, 1, 100, 100))


def planted(old: str, new: str):
    """This file with ``old`` (found exactly once in the kernels' part) replaced by ``new``, loaded as a module."""
    from gluon_course.course import load_module_file

    text = Path(__file__).read_text()
    # Only the kernels and their configurations are planted, not this list of plants, which quotes their text.
    cut = text.index("# -- the plants: ")
    code = text[:cut]
    if code.count(old) != 1:
        raise ValueError(f"a plant's old text occurs {code.count(old)} times in the kernels, not once: {old!r}")
    folder = Path(tempfile.mkdtemp(prefix="probe_fa3_plant_"))
    path = folder / "probe_attention_fa3_planted.py"
    path.write_text(code.replace(old, new) + text[cut:])
    return load_module_file(path, f"probe_attention_fa3_planted_{abs(hash(new))}")


def plant_outcomes(plants=None) -> list[dict]:
    """Each plant on each of its versions: what the step meant to reject it said (None: not rejected)."""
    out = []
    for mistake, old, new, versions, by in plants or PLANTS:
        mod = planted(old, new)
        for version in versions:
            if by == "model":
                said = model_step(mod, (version,), PLANT_SHAPES)
            else:
                said = facts_problem(facts(version, 128, True, mod=mod), mod.CONFIGS[version])
            out.append({"mistake": mistake, "version": version, "by": by, "said": said})
    return out


# -- the host model -------------------------------------------------------------------------------------------------

def model_step(mod=None, versions=FA3_VERSIONS, shapes=None) -> str | None:
    """Each version in the host model on MODEL_SHAPES, causal and not, then with large scores (LARGE_SHAPE): O
    against the fp64 reference within its bound, every element written once into a NaN-poisoned O, no race on a
    ring slot, no hang; then once through the launcher (``attention``: its checks, descriptors, grid and argument
    order, the GPU stood in for by the model). None or a sentence."""
    mod = mod or sys.modules[__name__]
    for version in versions:
        cfg = mod.MODEL_CFGS[version]
        for shape in shapes or mod.MODEL_SHAPES:
            for causal in (False, True):
                problem = att.model_problem(mod, version, shape, causal, cfg=cfg)
                if problem:
                    return problem
        problem = (att.model_problem(mod, version, att.LARGE_SHAPE, False, att.LARGE_SCALE, cfg=cfg)
                   or att.launcher_problem(mod, version, (1, 2, 100, 17), True, cfg=cfg))
        if problem:
            return problem
    return None


# -- the compiled code ----------------------------------------------------------------------------------------------

def barrier_names(version: str, cfg: dict) -> list[str]:
    """The kernel's mbarrier.init calls in order (barrier_offsets reads the listing's offsets in that order)."""
    names = ["q_bar"] + ["k_ready", "k_empty", "v_ready", "v_empty"] * cfg["STAGES"]
    return names + (["turn[0]", "turn[1]"] if version.startswith("v4") else [])


def facts(version: str, head_dim: int, causal: bool, cfg: dict | None = None, mod=None) -> dict:
    """One sm_90 compile of ``version``: resources, ptxas's notes, USETMAXREG, and per key loop lesson 36's
    loop_facts with the loop's order (loop_events) and what it overlaps (overlap_facts)."""
    from gluon_course.grading.tma_gemm import setmaxnreg

    mod = mod or sys.modules[__name__]
    cfg = cfg or mod.CONFIGS[version]
    k = att.compiled(mod, version, head_dim, causal, cfg)
    # loop_facts counts per thread of a consumer: v4's consumer is one warpgroup on half the tile.
    per_consumer = ({**cfg, "BLOCK_M": cfg["BLOCK_M"] // 2} if version.startswith("v4") else cfg)
    barriers = att.barrier_offsets(k, barrier_names(version, cfg))
    loops = []
    for first, last in att.key_loops(k):
        loop = att.loop_facts(k, first, last, per_consumer, head_dim)
        events = att.loop_events(k, first, last, barriers)
        loop.update(att.overlap_facts(events), events=events, waits=[int(n[5:-1]) for n, _ in events
                                                                       if n.startswith("wait<")])
        loops.append(loop)
    return {"name": version, "head_dim": head_dim, "causal": causal, "registers": k.registers, "spills": k.spills,
            "shared_bytes": k.shared_bytes, "notes": k.ptxas_notes(), "setmaxnreg": setmaxnreg(k), "loops": loops,
            "compiled": k}


def facts_problem(f: dict, cfg: dict) -> str | None:
    """What the steps' compiles must show, None when all hold: the kernel fits without spilling and ptxas keeps the
    wgmma asynchronous (no note C7514); lesson 36's per-loop facts (S from shared memory, P·V from registers, one EX2
    a score and a row, no round trip through shared memory, masks only in the masked loops) over 2 key loops per
    consumer; in the order of S_{j+1} before block j's softmax (PV_OVERLAP 0) at least half the EX2 of the loop issued
    while S's products are in flight; for ping-pong (v4) one take and one pass of the turn in each loop."""
    version = f["name"]
    where = f"{version} at head dim {f['head_dim']}{', causal' if f['causal'] else ''}"
    consumers = 2 if version.startswith("v4") else 1
    per_consumer = {**cfg, "BLOCK_M": cfg["BLOCK_M"] // consumers}
    serialized = [n for n in f["notes"] if "serialized" in n]
    if serialized:
        return f"{where}: ptxas serializes the wgmma: {serialized[0]}"
    loops = f["loops"]
    if len(loops) != 2 * consumers:
        return f"{where}: {len(loops)} key loops where {consumers} consumer(s) have two each"
    # lesson 36's facts, loop pair by loop pair (unmasked, masked)
    for c in range(consumers):
        pair = {**f, "loops": loops[2 * c:2 * c + 2]}
        problem = att.facts_problem(pair, per_consumer)
        if problem:
            return problem
    for index, loop in enumerate(loops):
        which = ("unmasked", "masked")[index % 2] + (f" (consumer {index // 2})" if consumers > 1 else "")
        # ptxas may issue a few exponentials before the first of S's HGMMAs (9 of 66 at head dim 64): at least half.
        if not cfg.get("PV_OVERLAP") and 2 * loop["ex2_under_s"] < loop["ex2"]:
            return (f"{where}: the {which} key loop issues {loop['ex2_under_s']} of its {loop['ex2']} MUFU.EX2 while "
                    "the next block's S is in flight: the softmax does not overlap that S (issued after it, or "
                    f"waited for before it) (order: {att.events_text(loop['events'])})")
        if consumers > 1 and (loop["turn_waits"] != 1 or loop["turn_passes"] != 1):
            return (f"{where}: the {which} key loop waits {loop['turn_waits']} time(s) for the tensor cores' turn and "
                    f"passes it {loop['turn_passes']} time(s), where one take and one pass order the consumers' "
                    "products")
    return None


def compile_step(versions=FA3_VERSIONS, head_dims=(128,), mod=None) -> str | None:
    """facts_problem on every version, head dim, causal and not, at CONFIGS. None or a sentence."""
    mod = mod or sys.modules[__name__]
    for version in versions:
        for hd in head_dims:
            for causal in (False, True):
                problem = facts_problem(facts(version, hd, causal, mod=mod), mod.CONFIGS[version])
                if problem:
                    return problem
    return None


def facts_table(versions=("v2",) + FA3_VERSIONS, head_dims=(64, 128), causal_modes=(False, True)) -> str:
    """The SASS facts, loop by loop (for v4 the first consumer's two loops; the second's are its copy)."""
    lines = ["| kernel | hd | causal | regs | smem KiB | USETMAXREG | loop | HGMMA (A from) | EX2 | EX2 under S | "
             "EX2 under P·V | wgmma waits | turn take/pass | turn passed before EX2 | order |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for version in versions:
        for hd in head_dims:
            for causal in causal_modes:
                f = facts(version, hd, causal)
                regs = ", ".join(f"{kind.lower()} {n}" for kind, n in f["setmaxnreg"])
                for which, loop in zip(("unmasked", "masked"), f["loops"][:2]):
                    mma = ", ".join(f"{n}× {key.replace('HGMMA.', '').replace('.F32.BF16', '')}"
                                    for key, n in sorted(loop["hgmma"].items()))
                    under = (loop.get("ex2_under_s", "-"), loop.get("ex2_under_pv", "-"))
                    turn = (f"{loop['turn_waits']}/{loop['turn_passes']}" if version.startswith("v4") else "-")
                    before = loop.get("turn_passed_before_ex2")
                    order = att.events_text(loop["events"]) if "events" in loop else "-"
                    lines.append(f"| {version} | {hd} | {'yes' if causal else 'no'} | {f['registers']} | "
                                 f"{f['shared_bytes'] / 1024:.0f} | {regs} | {which} | {mma} | {loop['ex2']} | "
                                 f"{under[0]} | {under[1]} | {', '.join(map(str, loop['waits']))} | {turn} | "
                                 f"{'-' if before is None else 'yes' if before else 'no'} | {order} |")
    return "\n".join(lines)


# -- the GPU step ---------------------------------------------------------------------------------------------------

TIMED = tuple((S, 128, causal) for S in (1024, 4096, 16384) for causal in (False, True))
TIMED_VERSIONS = ("v2",) + FA3_VERSIONS
WATCHDOG_S = 540


def gpu_correct() -> str | None:
    """Every version on lesson 36's odd shapes (attention.GPU_ODD_SHAPES), head dim 64 and 128, causal and not, O
    NaN-poisoned and guarded, against SDPA's math in fp32 (attention.gpu_check_one). None or a sentence."""
    mod = sys.modules[__name__]
    for version in TIMED_VERSIONS:
        for hd in (64, 128):
            for shape in att.GPU_ODD_SHAPES:
                for causal in (False, True):
                    problem = att.gpu_check_one(mod, version, shape, hd, causal, config=CONFIGS[version])
                    if problem:
                        return f"{version}, head dim {hd}, {shape}{', causal' if causal else ''}: {problem}"
    return None


def time_shape(S: int, head_dim: int, causal: bool) -> dict:
    """TIMED_VERSIONS and SDPA's backends at one shape (attention.TOKENS // S sequences of attention.HEADS heads),
    launches interleaved (attention.interleaved_ms): TFLOPS at 4·B·H·S²·D (half with causal)."""
    B = max(1, att.TOKENS // S)
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(B, att.HEADS, S, head_dim, device="cuda", generator=g).to(torch.bfloat16)
               for _ in range(3))
    out = torch.empty_like(q)
    calls = {version: prepared(q, k, v, causal, version, out=out)[0] for version in TIMED_VERSIONS}
    refused = {}
    for backend in att.SDPA_BACKENDS:
        fn = att.sdpa_call(backend, q, k, v, causal)
        try:
            fn()
            torch.cuda.synchronize()
            calls[backend.split("_")[0].lower()] = fn
        except RuntimeError as e:
            refused[backend] = str(e).splitlines()[0][:200]
    for fn in calls.values():
        fn()
    torch.cuda.synchronize()
    ms = att.interleaved_ms(calls)
    flops = 4 * B * att.HEADS * S * S * head_dim * (0.5 if causal else 1)
    tflops = {name: flops / t / 1e9 for name, t in ms.items()}
    library = {name: t for name, t in tflops.items() if name in ("cudnn", "flash", "efficient")}
    return {"S": S, "batch": B, "heads": att.HEADS, "head_dim": head_dim, "causal": causal, "ms": ms,
            "tflops": tflops, "best_library": max(library, key=library.get) if library else None,
            "refused": refused}


def markdown(rows) -> str:
    names = list(TIMED_VERSIONS) + ["cudnn", "flash", "efficient"]
    lines = ["| S | causal | " + " | ".join(names) + " | v3 / v2 | v4 / v3 | v4_pv / v3_pv | best ours / best SDPA |",
             "|---" * (len(names) + 6) + "|"]
    for row in rows:
        t = row["tflops"]
        ours = max(t[n] for n in TIMED_VERSIONS)
        best = f"{ours / t[row['best_library']]:.2f} ({row['best_library']})" if row["best_library"] else "-"
        lines.append(f"| {row['S']} | {'yes' if row['causal'] else 'no'} | "
                     + " | ".join(f"{t[n]:.0f}" if n in t else "-" for n in names)
                     + f" | {t['v3'] / t['v2']:.2f} | {t['v4'] / t['v3']:.2f} | {t['v4_pv'] / t['v3_pv']:.2f} | {best} |")
    return "\n".join(lines)


def gpu_main(path: str) -> None:
    import faulthandler
    import subprocess
    from datetime import datetime, timezone

    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    t0 = time.time()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    found = {"what": "issue 42, lesson 37's steps: v2 (lesson 36), v3 (next S issued before this block's softmax), v4 "
                     "(v3 with ping-pong consumers), and both in FA3's order (_pv), against SDPA's backends",
             "produced_by": {"probe": "tools/probes/probe_attention_fa3.py",
                             "command": "python tools/probes/probe_attention_fa3.py OUT.json",
                             "established_from": "the run's own output (the probe writes this field)"},
             "gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
             "cuda": torch.version.cuda, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "commit": commit, "configs": {name: {k: v for k, v in cfg.items()} for name, cfg in CONFIGS.items()}}

    def save():
        with open(path, "w") as fh:
            json.dump(found, fh, indent=1)

    problem = gpu_correct()
    found["correct"] = problem or "passed"
    found["correct_seconds"] = round(time.time() - t0, 1)
    save()
    if problem:
        print(f"correctness failed, no timing: {problem}", flush=True)
        return
    print(f"correct ({time.time() - t0:.0f} s)", flush=True)
    rows = []
    for S, hd, causal in TIMED:
        try:
            rows.append(time_shape(S, hd, causal))
        except Exception as e:                        # kept in the JSON; the other rows still run
            found.setdefault("errors", []).append(f"S={S} hd={hd} causal={causal}: {type(e).__name__}: {e}")
            continue
        found["timings"] = rows
        save()
        print(f"S {S}{' causal' if causal else ''}: {time.time() - t0:.0f} s", flush=True)
    found["seconds"] = round(time.time() - t0, 1)
    found["table"] = markdown(rows)
    save()
    print(found["table"])


# -- the command line -----------------------------------------------------------------------------------------------

def report_plants(plants, must_reject: bool) -> list[str]:
    """Each plant's outcome as a line; the lines of those whose outcome is wrong start with 'WRONG'."""
    lines = []
    for o in plant_outcomes(plants):
        ok = bool(o["said"]) == must_reject
        lines.append(f"{'ok' if ok else 'WRONG'}  [{o['by']}, {o['version']}] {o['mistake']}: "
                     f"{o['said'] or 'accepted'}")
    return lines


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--model"]:
        said = model_step()
        print(f"host model: {said or 'v3, v3_pv, v4, v4_pv pass on every shape, causal and not, and large scores'}")
        lines = report_plants([p for p in PLANTS if p[4] == "model"], True) + report_plants(HARMLESS, False)
    elif args[:1] == ["--compile"]:
        print(facts_table())
        said = compile_step(head_dims=(64, 128))
        print(f"compile facts: {said or 'v3, v3_pv, v4, v4_pv hold them at head dim 64 and 128, causal and not'}")
        lines = report_plants([p for p in PLANTS if p[4] == "compile"], True)
    elif len(args) == 1 and args[0].endswith(".json"):
        gpu_main(args[0])
        sys.exit(0)
    else:
        sys.exit(__doc__)
    print("\n".join(lines))
    sys.exit(1 if said or any(line.startswith("WRONG") for line in lines) else 0)
