"""Lesson 37 · The FA3 schedule on Hopper: the softmax under the tensor cores.

Lesson 36's v2 does one thing at a time in its consumers: S = Q·Kᵀ, then the softmax while the tensor cores wait,
then P·V. FlashAttention-3's schedule hides the softmax behind products. The steps here build on lesson 36's device
functions (``key_blocks``, ``mask_scores``, ``store_output``, v2's producer warp and K/V ring) and lesson 33's turns
(``take_turn``, ``pass_turn``):

- ``attention_v3_kernel``, **the next S first** (``next_s_blocks``): block j+1's S = Q·K_{j+1}ᵀ is issued (an
  asynchronous wgmma) before block j's softmax and retired after it, so the tensor cores compute it while the
  consumers take the exponentials. The first block's S is computed before the loops, the last block (no next S)
  after them.
- ``attention_v4_kernel``, **ping-pong in FA3's order** (``pingpong_blocks``): two consumer warpgroups, each on its
  own 64 of the program's 128 queries over one shared ring (its empty barriers count two arrivals), take turns at
  the tensor cores through two order mbarriers. A turn issues S_{j+1} and block j's P·V back to back and is handed
  over at once; the softmax of S_{j+1} then runs while the other warpgroup's products use the tensor cores. Register
  reallocation gives the producer warp 24 registers and the consumers what that frees (``consumer_registers``).
- ``attention_v5_kernel``, **one program an SM over the tiles** (``v5_consumer``, ``v5_tile``): v4's partitions
  walking tile after tile, the producer running ahead across tiles (Q released after each tile's last S, the ring's
  and the turns' counts carried from tile to tile), the tiles taken at run time from a counter in global memory that
  the last program to stop resets.
"""
import math

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

from gluon_course.course import load_solution
from gluon_course.nvidia.hopper import require_hopper
from gluon_course.validate import require_separate_output

v36 = load_solution("36")
v33 = load_solution("33")
# Lesson 36's device functions as they are (the blocks a tile visits, the mask, the store, v2's producer warp), and
# lesson 33's order barriers.
key_blocks, mask_scores, store_output, load_partition = (v36.key_blocks, v36.mask_scores, v36.store_output,
                                                         v36.v2_load_partition)
take_turn, pass_turn = v33.take_turn, v33.pass_turn
LOG2E = v36.LOG2E


# -- The softmax, split where the products need it --------------------------------------------------------------------

@gluon.jit
def softmax_scores(s, m_i, l_i, qk_scale, o_layout: gl.constexpr):
    """Lesson 36's online_softmax without O's rescale and without P's conversion: P in fp32 (S's layout), alpha (the
    old sums' rescale, in O's row layout), the new m and l. Here a P·V may still be in flight when the softmax runs:
    it reads O's registers and the previous block's bf16 P, so O's rescale and P's conversion wait for it; the
    exponentials need not."""
    m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
    alpha = gl.exp2(m_i - m_new)
    p = gl.exp2(s * qk_scale - m_new[:, None])
    l_new = l_i * alpha + gl.sum(p, axis=1)
    return p, gl.convert_layout(alpha, gl.SliceLayout(1, o_layout)), m_new, l_new


@gluon.jit
def p_operand(p, o_layout: gl.constexpr):
    """P rounded to bf16, in the layout wgmma reads its A operand from registers (lesson 36's conversion, free)."""
    return gl.convert_layout(p.to(gl.bfloat16), gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2))


# -- v3: the next block's S issued before this block's softmax ------------------------------------------------------

@gluon.jit
def next_s_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, s, o, m_i, l_i, qk_scale, m0, Sk,
                  first, last, STAGES: gl.constexpr, MASKED: gl.constexpr, CAUSAL: gl.constexpr,
                  s_layout: gl.constexpr, o_layout: gl.constexpr):
    """Key blocks ``first`` to ``last`` - 1, each of which has a next block. On entry ``s`` holds block ``first``'s
    scores (retired, its K slot released) and no wgmma is in flight; on exit ``s`` holds block ``last``'s."""
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    for j in range(first, last):
        slot = j % STAGES
        nxt = (j + 1) % STAGES
        ### BEGIN SOLUTION: issue block j+1's S = Q·K_{j+1}ᵀ as an asynchronous wgmma (k_next, s_next), not waited for
        mbarrier.wait(k_ready.index(nxt), ((j + 1) // STAGES) & 1)
        k_next = k_ring.index(nxt).permute((1, 0))
        s_next = warpgroup_mma(q_rows, k_next, gl.zeros(s.shape, gl.float32, s_layout), use_acc=False,
                               is_async=True)
        ### END SOLUTION
        # Block j's softmax, while the tensor cores compute S_{j+1}.
        if MASKED:
            s = mask_scores(s, m0, j * BLOCK_N, Sk, CAUSAL, s_layout)
        p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)
        p = p_operand(p, o_layout)
        o = o * alpha[:, None]
        mbarrier.wait(v_ready.index(slot), (j // STAGES) & 1)
        v_cur = v_ring.index(slot)
        o = warpgroup_mma(p, v_cur, o, is_async=True)
        # Both retired before the loop's back edge: a wgmma still in flight there makes ptxas serialize every wgmma
        # of the kernel (its note C7514). Only then do the two slots go back to the producer.
        s, o, _, _, _ = warpgroup_mma_wait(0, deps=(s_next, o, k_next, p, v_cur))
        mbarrier.arrive(k_empty.index(nxt))
        mbarrier.arrive(v_empty.index(slot))
    return s, o, m_i, l_i


@gluon.jit
def v3_consumer(q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty, o_ptr, Sq, Sk, qk_scale,
                CAUSAL: gl.constexpr, STAGES: gl.constexpr, s_layout: gl.constexpr, o_layout: gl.constexpr):
    """v3's consumers (the default partition: two warpgroups on the program's 128 queries): block 0's S before the
    loops, then next_s_blocks over the unmasked blocks and the masked ones, then the last block, which has no next
    S and is always masked (once a program: a block every key of which is valid comes out of mask_scores as it went
    in)."""
    BLOCK_M: gl.constexpr = q_smem.shape[0]
    HEAD_DIM: gl.constexpr = q_smem.shape[1]
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    m0 = gl.program_id(0) * BLOCK_M
    bh = gl.program_id(1)
    m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([BLOCK_M], gl.float32, layout=gl.SliceLayout(1, s_layout))
    o = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, layout=o_layout)
    n_full, n_all = key_blocks(m0, Sk, BLOCK_M, BLOCK_N, CAUSAL)
    unmasked_end = gl.minimum(n_full, n_all - 1)
    mbarrier.wait(q_bar, 0)

    mbarrier.wait(k_ready.index(0), 0)
    k_first = k_ring.index(0).permute((1, 0))
    s = warpgroup_mma(q_smem, k_first, gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout), use_acc=False,
                      is_async=True)
    s, _, _ = warpgroup_mma_wait(0, deps=(s, q_smem, k_first))
    mbarrier.arrive(k_empty.index(0))
    s, o, m_i, l_i = next_s_blocks(q_smem, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, s, o, m_i, l_i,
                                   qk_scale, m0, Sk, 0, unmasked_end, STAGES, False, CAUSAL, s_layout, o_layout)
    s, o, m_i, l_i = next_s_blocks(q_smem, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, s, o, m_i, l_i,
                                   qk_scale, m0, Sk, unmasked_end, n_all - 1, STAGES, True, CAUSAL, s_layout,
                                   o_layout)
    last = n_all - 1
    s = mask_scores(s, m0, last * BLOCK_N, Sk, CAUSAL, s_layout)
    p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)
    p = p_operand(p, o_layout)
    o = o * alpha[:, None]
    mbarrier.wait(v_ready.index(last % STAGES), (last // STAGES) & 1)
    v_last = v_ring.index(last % STAGES)
    o = warpgroup_mma(p, v_last, o, is_async=True)
    o, _, _ = warpgroup_mma_wait(0, deps=(o, p, v_last))
    mbarrier.arrive(v_empty.index(last % STAGES))
    store_output(o, l_i, o_ptr, bh * Sq + m0, m0, Sq, o_layout)


@gluon.jit
def attention_v3_kernel(q_desc, k_desc, v_desc, o_ptr, Sq, Sk, qk_scale, CAUSAL: gl.constexpr,
                        s_layout: gl.constexpr, o_layout: gl.constexpr, STAGES: gl.constexpr,
                        LOAD_REGS: gl.constexpr):
    """v3: lesson 36's v2 (one producer warp, a ring of STAGES slots for K and for V) with the consumers' key loop
    issuing the next block's S before this block's softmax."""
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
        (v3_consumer, (q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty, o_ptr, Sq, Sk, qk_scale,
                       CAUSAL, STAGES, s_layout, o_layout)),
        (load_partition, (q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready,
                          v_empty, gl.program_id(1), Sq, Sk, CAUSAL, STAGES)),
    ], [1], [LOAD_REGS])
    mbarrier.invalidate(q_bar)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(k_ready.index(i))
        mbarrier.invalidate(k_empty.index(i))
        mbarrier.invalidate(v_ready.index(i))
        mbarrier.invalidate(v_empty.index(i))


# -- v4: two consumer warpgroups taking turns, in FA3's order ----------------------------------------------------------

@gluon.jit
def pingpong_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, my_turn, next_turn, p, alpha, o, m_i,
                    l_i, qk_scale, m0, Sk, first, last, c0, turn0, STAGES: gl.constexpr, MASKED: gl.constexpr,
                    CAUSAL: gl.constexpr, ME: gl.constexpr, s_layout: gl.constexpr, o_layout: gl.constexpr):
    """Iterations ``first`` to ``last`` - 1 of consumer ME: iteration j takes the tensor cores' turn, issues block
    j+1's S and block j's P·V back to back, hands the turn over, retires S_{j+1} alone (depth 1), runs block j+1's
    softmax (masked where ``MASKED``), then retires P·V j. That is the source's order; in the sm_90 code ptxas moves
    the softmax's exponentials below the wait that retires P·V j (attention.schedule_events reads the compiled order).
    On entry block ``first``'s P and alpha are in registers and O is retired. ``c0`` and ``turn0``: the ring's block
    count and the turn count before this tile (0 in v4; v5 carries them from tile to tile), so that block j of the
    tile sits in slot (c0 + j) % STAGES and its products take turn turn0 + j + 1."""
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    for j in range(first, last):
        slot = (c0 + j) % STAGES
        nxt = (c0 + j + 1) % STAGES
        mbarrier.wait(k_ready.index(nxt), ((c0 + j + 1) // STAGES) & 1)
        k_next = k_ring.index(nxt).permute((1, 0))
        ### BEGIN SOLUTION: wait for this consumer's turn at the tensor cores (turn turn0 + j + 1: block 0's S took turn0)
        take_turn(my_turn, turn0 + j + 1, ME)
        ### END SOLUTION
        s = warpgroup_mma(q_rows, k_next, gl.zeros([q_rows.shape[0], BLOCK_N], gl.float32, s_layout),
                          use_acc=False, is_async=True)
        o = o * alpha[:, None]
        mbarrier.wait(v_ready.index(slot), ((c0 + j) // STAGES) & 1)
        v_cur = v_ring.index(slot)
        p_cur = p
        o = warpgroup_mma(p_cur, v_cur, o, is_async=True)
        ### BEGIN SOLUTION: both products of the turn are issued: hand the tensor cores to the other consumer
        pass_turn(next_turn)
        ### END SOLUTION
        # In flight: S_{j+1}, then P·V j. Depth 1 retires S_{j+1} only.
        s, _, _ = warpgroup_mma_wait(1, deps=(s, q_rows, k_next))
        mbarrier.arrive(k_empty.index(nxt))
        if MASKED:
            s = mask_scores(s, m0, (j + 1) * BLOCK_N, Sk, CAUSAL, s_layout)
        p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)
        o, _, _ = warpgroup_mma_wait(0, deps=(o, p_cur, v_cur))
        mbarrier.arrive(v_empty.index(slot))
        # Only now into bf16 registers: the P·V just retired read the previous block's P from them.
        p = p_operand(p, o_layout)
    return p, alpha, o, m_i, l_i


@gluon.jit
def v4_consumer(ME: gl.constexpr, q_rows, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty, my_turn,
                next_turn, o_ptr, Sq, Sk, qk_scale, CAUSAL: gl.constexpr, STAGES: gl.constexpr,
                TILE_M: gl.constexpr, s_layout: gl.constexpr, o_layout: gl.constexpr):
    """Consumer ME (one warpgroup): the queries ``q_rows``, rows ME·ROWS.. of the program's TILE_M, over the key blocks
    lesson 36's key_blocks gives the whole tile (both consumers walk the same blocks: they share the ring). Block 0's
    S and softmax come before the loops, the last block's P·V after them; every product is issued in a turn."""
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
    mbarrier.wait(q_bar, 0)

    take_turn(my_turn, 0, ME)
    mbarrier.wait(k_ready.index(0), 0)
    k_first = k_ring.index(0).permute((1, 0))
    s = warpgroup_mma(q_rows, k_first, gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout), use_acc=False,
                      is_async=True)
    pass_turn(next_turn)
    s, _, _ = warpgroup_mma_wait(0, deps=(s, q_rows, k_first))
    mbarrier.arrive(k_empty.index(0))
    s = mask_scores(s, m0, 0, Sk, CAUSAL, s_layout)          # block 0 masked always (once a program)
    p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)
    p = p_operand(p, o_layout)
    # Iteration j runs block j+1's softmax: unmasked while j+1 < n_full.
    split = gl.maximum(n_full - 1, 0)
    p, alpha, o, m_i, l_i = pingpong_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, my_turn,
                                            next_turn, p, alpha, o, m_i, l_i, qk_scale, m0, Sk, 0, split, 0, 0,
                                            STAGES, False, CAUSAL, ME, s_layout, o_layout)
    p, alpha, o, m_i, l_i = pingpong_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, my_turn,
                                            next_turn, p, alpha, o, m_i, l_i, qk_scale, m0, Sk, split, n_all - 1,
                                            0, 0, STAGES, True, CAUSAL, ME, s_layout, o_layout)
    last = n_all - 1
    take_turn(my_turn, last + 1, ME)
    o = o * alpha[:, None]
    mbarrier.wait(v_ready.index(last % STAGES), (last // STAGES) & 1)
    v_last = v_ring.index(last % STAGES)
    o = warpgroup_mma(p, v_last, o, is_async=True)
    pass_turn(next_turn)
    o, _, _ = warpgroup_mma_wait(0, deps=(o, p, v_last))
    mbarrier.arrive(v_empty.index(last % STAGES))
    store_output(o, l_i, o_ptr, bh * Sq + m0, m0, Sq, o_layout)


@gluon.jit
def attention_v4_kernel(q_desc, k_desc, v_desc, o_ptr, Sq, Sk, qk_scale, CAUSAL: gl.constexpr,
                        s_layout: gl.constexpr, o_layout: gl.constexpr, STAGES: gl.constexpr,
                        LOAD_REGS: gl.constexpr, MMA_REGS: gl.constexpr):
    """v4: two consumer warpgroups (the default partition and worker 0, 4 warps each), each on half of the program's
    TILE_M queries, taking turns at the tensor cores; one producer warp (worker 1) fills the ring both read."""
    TILE_M: gl.constexpr = q_desc.block_shape[0]
    ROWS: gl.constexpr = TILE_M // 2
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
        (v4_consumer, (0, q_smem.slice(0, ROWS), k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty,
                       turn.index(0), turn.index(1), o_ptr, Sq, Sk, qk_scale, CAUSAL, STAGES, TILE_M, s_layout,
                       o_layout)),
        (v4_consumer, (1, q_smem.slice(ROWS, ROWS), k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty,
                       turn.index(1), turn.index(0), o_ptr, Sq, Sk, qk_scale, CAUSAL, STAGES, TILE_M, s_layout,
                       o_layout)),
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


# -- v4's register split ------------------------------------------------------------------------------------------

REGISTER_FILE = 65536        # 32-bit registers an SM holds (sm_90), shared by the program's warps


def consumer_registers(load_regs: int, consumers: int = 2) -> int:
    """The registers a thread each consumer warpgroup asks for (MMA_REGS) when the producer's asks for
    ``load_regs``: setmaxnreg moves registers between warpgroups, never beyond what the launch holds. The producer's
    one warp holds a warpgroup's share (setmaxnreg counts by warpgroup), so the program is consumers + 1 warpgroups of
    128 threads; setmaxnreg takes multiples of 8."""
    ### BEGIN SOLUTION: the launch's registers a thread, then what the producer gives back, shared by the consumers
    warpgroups = consumers + 1
    launched = REGISTER_FILE // (128 * warpgroups) // 8 * 8
    return (warpgroups * launched - load_regs) // consumers // 8 * 8
    ### END SOLUTION


# -- v5: one program an SM, the tiles taken at run time --------------------------------------------------------------
#
# A v4 program walks one tile's key blocks: 8 at S = 1 024 (4.5 on average with the causal mask), so its start (Q's copy,
# the ring's fill, block 0's S before anything overlaps it) and its end (the last P·V, O's store) weigh on few
# iterations. v5 keeps one program an SM that takes tile after tile, its producer running ahead across tiles: the next
# tile's Q is copied as soon as both consumers are done with this tile's (q_empty), its K and V go into the same ring,
# whose block counter carries on (as the consumers' turn counter does), so the next tile's first copies and S overlap
# this tile's last P·V and O's store. The tiles are taken from a counter in global memory at run time, as a GPU hands
# a grid's next block to the SM that frees up: dealt at launch, the causal tiles' unequal work would leave some
# programs running long after the others. The producer passes each tile's number to the consumers through a word of
# shared memory, written before Q's copy is announced on q_bar.

TILE_WORD = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])


@gluon.jit
def tile_of(t, n_m_tiles):
    """Tile t's (query tile, b·H + h): a head's tiles one after another (its K and V stay in L2 while they run), the
    last query tile first (with the causal mask it has the most key blocks)."""
    return n_m_tiles - 1 - t % n_m_tiles, t // n_m_tiles


@gluon.jit
def v5_load_partition(q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, q_empty, k_ready, k_empty, v_ready,
                      v_empty, tile_word, tiles_ptr, Sq, Sk, n_m_tiles, n_tiles, CAUSAL: gl.constexpr,
                      STAGES: gl.constexpr):
    """v5's producer: takes tiles from the counter at tiles_ptr[0] until they run out; for each, the tile's number
    into the shared word, Q once both consumers released the last one's, then lesson 36's K and V copies into ring
    slot c % STAGES, c counted across tiles. Past the last tile: n_tiles into the word and an arrival on q_bar with
    no copy (the consumers stop); the last program to stop zeroes the counter for the next launch. (It is known by a
    second word that counts the programs that stopped, as lesson 32's split-K counter knew its last program.)"""
    TILE_M: gl.constexpr = q_desc.block_shape[0]
    BLOCK_N: gl.constexpr = k_desc.block_shape[0]
    one_warp: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
    c = 0
    i = 0
    t = gl.atomic_add(tiles_ptr, 1).to(gl.int32)       # the counter's old value: this program's first tile
    while t < n_tiles:
        m_tile, bh = tile_of(t, n_m_tiles)
        m0 = m_tile * TILE_M
        mbarrier.wait(q_empty, (i & 1) ^ 1)              # both consumers done with the last tile's Q
        # Every lane of the warp stores the word; the barrier orders all those stores before the one lane's arrive
        # on q_bar (a release), whose completed wait (an acquire) lets the consumers read it.
        tile_word.store(gl.full([1], t, gl.int32, layout=one_warp))
        gl.barrier()
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
        t = gl.atomic_add(tiles_ptr, 1).to(gl.int32)
    mbarrier.wait(q_empty, (i & 1) ^ 1)
    tile_word.store(gl.full([1], n_tiles, gl.int32, layout=one_warp))
    gl.barrier()
    mbarrier.arrive(q_bar)
    # Every program's last take came before its count here (acq_rel): the last to count zeroes both words.
    stopped = gl.atomic_add(tiles_ptr + 1, 1, sem="acq_rel")
    if stopped == gl.num_programs(0) - 1:
        gl.atomic_xchg(tiles_ptr, 0)
        gl.atomic_xchg(tiles_ptr + 1, 0)


@gluon.jit
def v5_tile(ME: gl.constexpr, q_rows, k_ring, v_ring, q_empty, k_ready, k_empty, v_ready, v_empty, my_turn, next_turn,
            o_ptr, Sq, Sk, qk_scale, m_tile, bh, c0, turn0, CAUSAL: gl.constexpr, STAGES: gl.constexpr,
            TILE_M: gl.constexpr, s_layout: gl.constexpr, o_layout: gl.constexpr):
    """v4_consumer on one tile whose Q has landed, the ring's count at c0 and the turns' at turn0; Q released
    (q_empty) once the tile's last S has retired. Returns the tile's key blocks."""
    ROWS: gl.constexpr = q_rows.shape[0]
    HEAD_DIM: gl.constexpr = q_rows.shape[1]
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    tile_m0 = m_tile * TILE_M
    m0 = tile_m0 + ME * ROWS
    m_i = gl.full([ROWS], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([ROWS], gl.float32, layout=gl.SliceLayout(1, s_layout))
    o = gl.zeros([ROWS, HEAD_DIM], gl.float32, layout=o_layout)
    n_full, n_all = key_blocks(tile_m0, Sk, TILE_M, BLOCK_N, CAUSAL)
    first = c0 % STAGES
    take_turn(my_turn, turn0, ME)
    mbarrier.wait(k_ready.index(first), (c0 // STAGES) & 1)
    k_first = k_ring.index(first).permute((1, 0))
    s = warpgroup_mma(q_rows, k_first, gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout), use_acc=False,
                      is_async=True)
    pass_turn(next_turn)
    s, _, _ = warpgroup_mma_wait(0, deps=(s, q_rows, k_first))
    mbarrier.arrive(k_empty.index(first))
    s = mask_scores(s, m0, 0, Sk, CAUSAL, s_layout)
    p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)
    p = p_operand(p, o_layout)
    split = gl.maximum(n_full - 1, 0)
    p, alpha, o, m_i, l_i = pingpong_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, my_turn,
                                            next_turn, p, alpha, o, m_i, l_i, qk_scale, m0, Sk, 0, split, c0, turn0,
                                            STAGES, False, CAUSAL, ME, s_layout, o_layout)
    p, alpha, o, m_i, l_i = pingpong_blocks(q_rows, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, my_turn,
                                            next_turn, p, alpha, o, m_i, l_i, qk_scale, m0, Sk, split, n_all - 1,
                                            c0, turn0, STAGES, True, CAUSAL, ME, s_layout, o_layout)
    ### BEGIN SOLUTION: this consumer is done with Q: let the producer copy the next tile's into its buffer
    # Every S of the tile has retired (the last one inside pingpong_blocks): Q's buffer may take the next tile's.
    mbarrier.arrive(q_empty)
    ### END SOLUTION
    last = c0 + n_all - 1
    take_turn(my_turn, turn0 + n_all, ME)
    o = o * alpha[:, None]
    mbarrier.wait(v_ready.index(last % STAGES), (last // STAGES) & 1)
    v_last = v_ring.index(last % STAGES)
    o = warpgroup_mma(p, v_last, o, is_async=True)
    pass_turn(next_turn)
    o, _, _ = warpgroup_mma_wait(0, deps=(o, p, v_last))
    mbarrier.arrive(v_empty.index(last % STAGES))
    store_output(o, l_i, o_ptr, bh * Sq + m0, m0, Sq, o_layout)
    return n_all


@gluon.jit
def v5_consumer(ME: gl.constexpr, q_rows, k_ring, v_ring, q_bar, q_empty, k_ready, k_empty, v_ready, v_empty,
                my_turn, next_turn, tile_word, o_ptr, Sq, Sk, qk_scale, n_m_tiles, n_tiles, CAUSAL: gl.constexpr,
                STAGES: gl.constexpr, TILE_M: gl.constexpr, s_layout: gl.constexpr, o_layout: gl.constexpr):
    """Consumer ME over the tiles its producer takes: each q_bar phase brings a tile's Q and its number in the word
    (n_tiles: none left); the ring's and the turns' counts carry on from tile to tile."""
    WARPS: gl.constexpr = gl.num_warps()
    mine: gl.constexpr = gl.BlockedLayout([1], [32], [WARPS], [0])
    c0 = 0
    turn0 = 0
    i = 0
    mbarrier.wait(q_bar, 0)
    t = gl.max(tile_word.load(mine), axis=0).to(gl.int32)
    while t < n_tiles:
        m_tile, bh = tile_of(t, n_m_tiles)
        n_all = v5_tile(ME, q_rows, k_ring, v_ring, q_empty, k_ready, k_empty, v_ready, v_empty, my_turn, next_turn,
                        o_ptr, Sq, Sk, qk_scale, m_tile, bh, c0, turn0, CAUSAL, STAGES, TILE_M, s_layout, o_layout)
        ### BEGIN SOLUTION: carry the counts over (a tile's blocks; its turns: one a block and block 0's), then the next tile
        c0 += n_all
        turn0 += n_all + 1
        i += 1
        mbarrier.wait(q_bar, i & 1)
        t = gl.max(tile_word.load(mine), axis=0).to(gl.int32)
        ### END SOLUTION


@gluon.jit
def attention_v5_kernel(q_desc, k_desc, v_desc, o_ptr, tiles_ptr, Sq, Sk, qk_scale, BH, CAUSAL: gl.constexpr,
                        s_layout: gl.constexpr, o_layout: gl.constexpr, STAGES: gl.constexpr,
                        LOAD_REGS: gl.constexpr, MMA_REGS: gl.constexpr):
    """v5: v4's partitions over many tiles a program (grid: as many programs as SMs, or tiles if fewer), the tiles
    taken from the counter tiles_ptr[0] (0 at launch; tiles_ptr[1] counts the programs that stopped)."""
    TILE_M: gl.constexpr = q_desc.block_shape[0]
    ROWS: gl.constexpr = TILE_M // 2
    n_m_tiles = gl.cdiv(Sq, TILE_M)
    n_tiles = n_m_tiles * BH
    q_smem = gl.allocate_shared_memory(q_desc.dtype, q_desc.block_type.shape, q_desc.layout)
    k_ring = gl.allocate_shared_memory(k_desc.dtype, [STAGES] + k_desc.block_type.shape, k_desc.layout)
    v_ring = gl.allocate_shared_memory(v_desc.dtype, [STAGES] + v_desc.block_type.shape, v_desc.layout)
    tile_word = gl.allocate_shared_memory(gl.int32, [1], TILE_WORD)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    mbarrier.init(q_empty, count=2)                    # both consumers release Q
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(v_empty.index(i), count=2)
    for c in gl.static_range(2):
        mbarrier.init(turn.index(c), count=1)
    gl.warp_specialize([
        (v5_consumer, (0, q_smem.slice(0, ROWS), k_ring, v_ring, q_bar, q_empty, k_ready, k_empty, v_ready, v_empty,
                       turn.index(0), turn.index(1), tile_word, o_ptr, Sq, Sk, qk_scale, n_m_tiles, n_tiles, CAUSAL,
                       STAGES, TILE_M, s_layout, o_layout)),
        (v5_consumer, (1, q_smem.slice(ROWS, ROWS), k_ring, v_ring, q_bar, q_empty, k_ready, k_empty, v_ready,
                       v_empty, turn.index(1), turn.index(0), tile_word, o_ptr, Sq, Sk, qk_scale, n_m_tiles, n_tiles,
                       CAUSAL, STAGES, TILE_M, s_layout, o_layout)),
        (v5_load_partition, (q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, q_empty, k_ready, k_empty,
                             v_ready, v_empty, tile_word, tiles_ptr, Sq, Sk, n_m_tiles, n_tiles, CAUSAL, STAGES)),
    ], [4, 1], [MMA_REGS, LOAD_REGS])
    mbarrier.invalidate(q_bar)
    mbarrier.invalidate(q_empty)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(k_ready.index(i))
        mbarrier.invalidate(k_empty.index(i))
        mbarrier.invalidate(v_ready.index(i))
        mbarrier.invalidate(v_empty.index(i))
    for c in gl.static_range(2):
        mbarrier.invalidate(turn.index(c))


# -- Configurations and the launcher ----------------------------------------------------------------------------------

# v3: lesson 36's v2 tile (128 queries over the default partition's two warpgroups, keys in blocks of 128, two ring
# slots); the producer asks for 24 registers (v2: 40). v4: 2 × 64 queries, one warpgroup each, 4 warps a partition;
# MMA_REGS comes from consumer_registers at launch. 2 × 128 queries would spill (lab notes 37). v5: v4's tile, one
# program an SM. "v2" is lesson 36's, launched by the same launcher for the figures' comparison.
CONFIGS = {
    "v2": v36.CONFIGS["v2"],
    "v3": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "STAGES": 2, "LOAD_REGS": 24},
    "v4": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 4, "STAGES": 2, "LOAD_REGS": 24},
    "v5": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 4, "STAGES": 2, "LOAD_REGS": 24},
}
KERNELS = {"v2": v36.attention_v2_kernel, "v3": attention_v3_kernel, "v4": attention_v4_kernel,
           "v5": attention_v5_kernel}
PERSISTENT = ("v5",)         # one program an SM over the tiles: its own grid and its counter


def constexprs(version: str, cfg: dict, head_dim: int, causal: bool) -> dict:
    """The kernel's constexprs besides its descriptors (v4's layouts are one consumer warpgroup's: num_warps 4)."""
    if version == "v2":
        return v36.constexprs(version, cfg, head_dim, causal)
    ce = {"CAUSAL": bool(causal), "s_layout": v36.wgmma_layout(cfg["num_warps"], cfg["BLOCK_N"]),
          "o_layout": v36.wgmma_layout(cfg["num_warps"], head_dim), "STAGES": cfg["STAGES"],
          "LOAD_REGS": cfg["LOAD_REGS"]}
    if version in ("v4", "v5"):
        ce["MMA_REGS"] = consumer_registers(cfg["LOAD_REGS"])
    return ce


def sm_count(device) -> int:
    """The GPU's SMs (132 on an H100 SXM or an H200; the host model's stand-in GPU says how many it has)."""
    return torch.cuda.get_device_properties(device).multi_processor_count


def prepared(q, k, v, causal: bool = False, version: str = "v5", out=None, sm_scale: float | None = None,
             config: dict | None = None):
    """One launch of ``version`` (v2, v3, v4 or v5, at CONFIGS[version] or ``config``) on these tensors, checked and
    its descriptors built once: (a function of no argument that launches it, ``out``). Lesson 36's refusals."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    cfg = config or CONFIGS[version]
    v36.require_attention_args(q, k, v, cfg)
    require_hopper(q)
    B, H, Sq, D = q.shape
    out = torch.empty_like(q) if out is None else out
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
    if version in PERSISTENT:
        # The counter and the count of programs that stopped, at 0 between launches (the last program resets them):
        # shared by every launch of this call, so one launch at a time (a stream's launches run one after another).
        tiles = torch.zeros(2, dtype=torch.int32, device=q.device)
        grid = (min(grid[0] * grid[1], sm_count(q.device)),)
        args = args[:4] + (tiles,) + args[4:] + (B * H,)

    def launch():
        kernel[grid](*args, **kwargs)
    return launch, out


def attention(q, k, v, causal: bool = False, version: str = "v5", out=None, sm_scale: float | None = None,
              config: dict | None = None):
    """softmax(Q·Kᵀ·sm_scale)·V (causal as PyTorch's is_causal) by ``version``; returns ``out`` (new by default)."""
    launch, out = prepared(q, k, v, causal, version, out, sm_scale, config)
    launch()
    return out
