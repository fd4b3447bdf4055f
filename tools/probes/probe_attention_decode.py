"""Issue 42, lesson 38's groundwork: attention in a model. Two kernels, built and checked without a GPU, to be timed
before any of it goes into a lesson. Lesson 38 (solutions/38-attention-in-a-model) has since taken the GQA prefill,
the mma.sync decode and its device functions, the split rule and the launchers' checks; this probe imports them and
keeps the GQA v0 kernel, the decode's three variants in one kernel and the GPU step that times them.

- **Causal prefill with grouped-query attention** (GQA): Q has Hq heads, K and V Hkv = Hq / GROUP (lesson 32's block:
  32 query heads on 8 KV heads, GROUP 4). Lesson 36's kernels as they are, but for the K and V rows: program
  (query tile, b·Hq + h) reads KV head h // GROUP of the same sequence (``kv_head_of``). v0 passes that head to
  lesson 36's ``v0_key_loop``; v2's producer is lesson 36's with the KV head in its K and V coordinates, its
  consumers lesson 36's ``v2_mma_partition`` unchanged.
- **Decode over a KV cache, split along the keys** (``decode_split_kernel``): one query per sequence and head, a
  cache K, V of (B, Hkv, L, D) of which sequence b uses its first ``seq_lens[b]`` keys. One program per (split s,
  b·Hkv + h): the GROUP query heads of KV head h against keys [s·chunk, (s + 1)·chunk) ∩ [0, seq_len), K and V
  streamed by TMA through a ring of STAGES slots, lesson 36's online softmax; it writes its unnormalized O, its
  running maximum m and sum l (fp32) to a scratch, counts itself at the KV head's counter, and the program that
  arrives last combines the splits **in split order** 0, 1, … (``combine_splits``: O = Σ 2^(m_s − m)·O_s /
  Σ 2^(m_s − m)·l_s, m the largest m_s), so that O has the same bits whichever program combines. That is lesson
  32's split-K protocol (a counter, the last to arrive adds the slices in a fixed order, then resets the counter)
  rather than a second kernel: decode is a few microseconds (17 µs for cuDNN at batch 1 × 4k, issue 42), and a
  second launch would add its own launch gap and tail for a combine that reads 2 KiB a split from L2.

Three ways of doing a key block's two products (``COMPUTE``), compared on their sm_90 code (``--compile``):
``wgmma`` (the GROUP queries padded to wgmma's 64 rows, Q from registers, K and V from the ring), ``mma_v2`` (Ampere's
mma.sync, 16 rows, K and V loaded from the ring into registers) and ``fma`` (CUDA cores: gl.sum of products, lesson
10's way). All three read K and V the same way, by TMA into the ring: decode is a stream of the cache's bytes, and the
number of bytes in flight per SM is what sets its speed, not the unit that multiplies them. What the sm_90 compiles
say (``--compile``, GROUP 4, head dim 128, per key block of 64 keys and per thread): each variant's key loop issues the
same two UTMALDG.2D and no LDG, fits two programs an SM (96 KiB of ring each: 192 KiB of K and V in flight an SM) and
spills nothing; wgmma does the block in 12 HGMMA and about 120 other floating-point instructions but exponentiates 32
scores a thread where 2 are useful (60 of its 64 rows are padding), with no shared-memory load and 4 BAR.SYNC;
mma_v2 in 32 HMMA, 16 LDSM and 10 MUFU.EX2, with 9 BAR.SYNC (its row max and sum cross warps); the CUDA cores in
about 900 FADD/FFMA/FMUL, 64 LDS.128 and 118 SHFL. The CUDA cores' issue is the only one near a block's time budget at
the copy's bandwidth (about 3 500 cycles a block a program at two programs an SM), and their layout spills at GROUP 1
and 8; wgmma (no loads from shared memory to registers, the fewest instructions) is the default, and the GPU step
times all three. Not built: wgmma with the keys on its 64-row side (Sᵀ = K·Qᵀ, Q and P in shared memory as B), which
would waste 2× instead of 16×.

    python tools/probes/probe_attention_decode.py --model     CPU: both kernels in the host model on small odd shapes
    python tools/probes/probe_attention_decode.py --compile   CPU: sm_90 compiles, the table of facts
    python tools/probes/probe_attention_decode.py --plants    CPU: the one-mistake variants and what rejects each
    python tools/probes/probe_attention_decode.py --plan      CPU: the split rule at the timed shapes
    python tools/probes/probe_attention_decode.py OUT.json    GPU: correctness, then decode timings against SDPA

tests/test_probe_attention_decode.py runs the CPU steps on a reduced set, and the plants.
"""
from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma

from gluon_course import load_solution
from gluon_course.nvidia import attention
from gluon_course.nvidia.hopper import require_hopper

LESSON = load_solution("36")
# Lesson 36's device functions, as they are: v0's key loop (its ``bh`` is only ever K's and V's head), the online
# softmax, the key blocks and the masks.
v0_key_loop = LESSON.v0_key_loop
online_softmax, key_blocks, store_output = LESSON.online_softmax, LESSON.key_blocks, LESSON.store_output
LOG2E = LESSON.LOG2E
# Lesson 38 took the GQA prefill (lesson 36's v2 with its producer given the KV head), the mma.sync decode, the
# decode's device functions, the split rule and the launchers' checks from this probe. What stays here: the GQA v0
# kernel, the decode's wgmma and CUDA-core variants beside mma.sync (one kernel, COMPUTE), and the GPU step that
# times all three.
LESSON38 = load_solution("38")
kv_head_of, require_bf16_4d, require_gqa_heads = LESSON38.kv_head_of, LESSON38.require_bf16_4d, \
    LESSON38.require_gqa_heads
load_block, load_queries, mask_keys = LESSON38.load_block, LESSON38.load_queries, LESSON38.mask_keys
combine_splits = LESSON38.combine_splits
SMS = LESSON38.SMS          # the H100's and H200's SMs, where no GPU is there to ask


def split_rule(batch: int, kv_heads: int, L: int, block_n: int, sms: int = SMS, min_blocks: int = 2):
    """Lesson 38's split rule as this probe ran it: aiming at two programs an SM (the lesson has since aimed at one,
    after probe_decode_splits timed both)."""
    return LESSON38.split_rule(batch, kv_heads, L, block_n, sms, per_sm=2, min_blocks=min_blocks)




# == 1. Prefill with grouped-query attention ===========================================================================

@gluon.jit
def gqa_v0_kernel(q_desc, k_desc, v_desc, o_ptr, Sq, Sk, qk_scale, CAUSAL: gl.constexpr, s_layout: gl.constexpr,
                  o_layout: gl.constexpr, HQ: gl.constexpr, GROUP: gl.constexpr):
    """Lesson 36's v0 with K and V read from the query head's KV head: its v0_key_loop takes that head."""
    BLOCK_M: gl.constexpr = q_desc.block_shape[0]
    HEAD_DIM: gl.constexpr = q_desc.block_shape[1]
    BLOCK_N: gl.constexpr = k_desc.block_shape[0]
    m0 = gl.program_id(0) * BLOCK_M
    bh = gl.program_id(1)
    kv_bh = kv_head_of(bh, HQ, GROUP)

    q_smem = gl.allocate_shared_memory(q_desc.dtype, q_desc.block_type.shape, q_desc.layout)
    k_smem = gl.allocate_shared_memory(k_desc.dtype, k_desc.block_type.shape, k_desc.layout)
    v_smem = gl.allocate_shared_memory(v_desc.dtype, v_desc.block_type.shape, v_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [3, 1], mbarrier.MBarrierLayout())     # Q's, K's, V's
    for i in gl.static_range(3):
        mbarrier.init(bars.index(i), count=1)
    mbarrier.expect(bars.index(0), q_desc.block_type.nbytes)
    tma.async_load(q_desc, [bh * Sq + m0, 0], bars.index(0), q_smem)
    mbarrier.wait(bars.index(0), 0)

    m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([BLOCK_M], gl.float32, layout=gl.SliceLayout(1, s_layout))
    o = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, layout=o_layout)
    n_full, n_all = key_blocks(m0, Sk, BLOCK_M, BLOCK_N, CAUSAL)
    o, m_i, l_i = v0_key_loop(q_smem, k_smem, v_smem, bars, k_desc, v_desc, o, m_i, l_i, qk_scale, kv_bh, m0, Sk, 0,
                              n_full, False, CAUSAL, s_layout, o_layout)
    o, m_i, l_i = v0_key_loop(q_smem, k_smem, v_smem, bars, k_desc, v_desc, o, m_i, l_i, qk_scale, kv_bh, m0, Sk,
                              n_full, n_all, True, CAUSAL, s_layout, o_layout)
    for i in gl.static_range(3):
        mbarrier.invalidate(bars.index(i))
    store_output(o, l_i, o_ptr, bh * Sq + m0, m0, Sq, o_layout)


@gluon.jit
def gqa_v2_kernel(q_desc, k_desc, v_desc, o_ptr, Sq, Sk, qk_scale, CAUSAL: gl.constexpr, s_layout: gl.constexpr,
                  o_layout: gl.constexpr, STAGES: gl.constexpr, LOAD_REGS: gl.constexpr, HQ: gl.constexpr,
                  GROUP: gl.constexpr):
    """Lesson 36's v2 with grouped heads, its producer given the KV head: lesson 38's prefill when this probe ran
    (lesson 38 has since moved to lesson 37's v4), kept here as the probe measured it."""
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
    kv_bh = kv_head_of(gl.program_id(1), HQ, GROUP)
    gl.warp_specialize([
        (LESSON.v2_mma_partition, (q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty, o_ptr, Sq, Sk,
                                   qk_scale, CAUSAL, STAGES, s_layout, o_layout)),
        (LESSON.v2_load_partition, (q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready,
                                    v_empty, kv_bh, Sq, Sk, CAUSAL, STAGES)),
    ], [1], [LOAD_REGS])
    mbarrier.invalidate(q_bar)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(k_ready.index(i))
        mbarrier.invalidate(k_empty.index(i))
        mbarrier.invalidate(v_ready.index(i))
        mbarrier.invalidate(v_empty.index(i))


GQA_KERNELS = {"v0": gqa_v0_kernel, "v2": gqa_v2_kernel}


def gqa_constexprs(version: str, cfg: dict, head_dim: int, causal: bool, heads: int, group: int) -> dict:
    return {**LESSON.constexprs(version, cfg, head_dim, causal), "HQ": heads, "GROUP": group}


def gqa_prepared(q, k, v, causal: bool = True, version: str = "v2", out=None, sm_scale: float | None = None,
                 config: dict | None = None):
    """One launch of the GQA prefill ``version`` on Q (B, Hq, Sq, D) and K, V (B, Hkv, Sk, D): (launch, out)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    cfg = config or LESSON.CONFIGS[version]
    require_bf16_4d(q=q, k=k, v=v)
    group = require_gqa_heads(q, k, v)
    B, Hq, Sq, D = q.shape
    Sk = k.shape[2]
    if Sq < 1 or Sk < 1:
        raise ValueError(f"Sq = {Sq}, Sk = {Sk}: attention needs at least one query and one key")
    require_hopper(q)
    out = torch.empty_like(q) if out is None else out
    sm_scale = 1 / math.sqrt(D) if sm_scale is None else sm_scale

    def desc(t, rows):
        return TensorDescriptor.from_tensor(t.view(-1, D), [rows, D],
                                            gl.NVMMASharedLayout.get_default_for([rows, D], gl.bfloat16))
    grid = (triton.cdiv(Sq, cfg["BLOCK_M"]), B * Hq)
    args = (desc(q, cfg["BLOCK_M"]), desc(k, cfg["BLOCK_N"]), desc(v, cfg["BLOCK_N"]), out, Sq, Sk, sm_scale * LOG2E)
    kwargs = {**gqa_constexprs(version, cfg, D, causal, Hq, group), "num_warps": cfg["num_warps"]}
    kernel = GQA_KERNELS[version]

    def launch():
        kernel[grid](*args, **kwargs)
    return launch, out


def gqa_attention(q, k, v, causal: bool = True, version: str = "v2", out=None, config: dict | None = None):
    launch, out = gqa_prepared(q, k, v, causal, version, out, config=config)
    launch()
    return out


# == 2. Decode: the keys split across programs, the splits combined in a fixed order ==================================

@gluon.jit
def block_scores(q, k_smem, COMPUTE: gl.constexpr, s_layout: gl.constexpr, kv_layout: gl.constexpr):
    """S = Q·Kᵀ for one key block (QROWS × BLOCK_N, fp32): by wgmma (Q from registers, K from the ring), by mma.sync
    (K loaded from the ring into registers) or on CUDA cores (products summed over the head dim)."""
    QROWS: gl.constexpr = q.shape[0]
    BLOCK_N: gl.constexpr = k_smem.shape[0]
    if COMPUTE == "wgmma":
        s = warpgroup_mma(q, k_smem.permute((1, 0)), gl.zeros([QROWS, BLOCK_N], gl.float32, s_layout),
                          use_acc=False)
    elif COMPUTE == "mma_v2":
        k_t = k_smem.permute((1, 0)).load(gl.DotOperandLayout(operand_index=1, parent=s_layout, k_width=2))
        s = mma_v2(q, k_t, gl.zeros([QROWS, BLOCK_N], gl.float32, s_layout))
    else:
        k = k_smem.load(kv_layout).to(gl.float32)
        s = gl.sum(gl.expand_dims(q, 1) * gl.expand_dims(k, 0), axis=2)
    return s


@gluon.jit
def add_values(p, o, v_smem, COMPUTE: gl.constexpr, o_layout: gl.constexpr, kv_layout: gl.constexpr):
    """O += P·V for one key block: P bf16 in registers for the tensor cores (lesson 36's online_softmax made it so),
    fp32 for the CUDA cores."""
    if COMPUTE == "wgmma":
        o = warpgroup_mma(p, v_smem, o)
    elif COMPUTE == "mma_v2":
        v = v_smem.load(gl.DotOperandLayout(operand_index=1, parent=o_layout, k_width=2))
        o = mma_v2(p, v, o)
    else:
        v = v_smem.load(kv_layout).to(gl.float32)
        o = o + gl.sum(gl.expand_dims(p, 2) * gl.expand_dims(v, 0), axis=1)
    return o


@gluon.jit
def fma_softmax_step(s, m_i, l_i, o, qk_scale, o_layout: gl.constexpr):
    """Lesson 36's online_softmax for the CUDA cores: the same running max, rescale and sum, P left in fp32 in the
    scores' layout (the products take it as it is)."""
    m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
    alpha = gl.exp2(m_i - m_new)
    p = gl.exp2(s * qk_scale - m_new[:, None])
    l_new = l_i * alpha + gl.sum(p, axis=1)
    o = o * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
    return p, o, m_new, l_new


@gluon.jit
def store_partial(o, m_i, l_i, part_o_ptr, part_m_ptr, part_l_ptr, index, GROUP: gl.constexpr,
                  s_layout: gl.constexpr, o_layout: gl.constexpr):
    """This split's unnormalized O (GROUP × HEAD_DIM), m and l (GROUP each) in fp32 at place ``index`` =
    kv_head·splits + split of the scratch; the MMA's padding rows are not stored."""
    QROWS: gl.constexpr = o.shape[0]
    HEAD_DIM: gl.constexpr = o.shape[1]
    rows = gl.arange(0, QROWS, layout=gl.SliceLayout(1, o_layout))
    cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, o_layout))
    gl.store(part_o_ptr + (index * GROUP + rows)[:, None] * HEAD_DIM + cols[None, :], o,
             mask=(rows < GROUP)[:, None])
    r = gl.arange(0, QROWS, layout=gl.SliceLayout(1, s_layout))
    gl.store(part_m_ptr + index * GROUP + r, m_i, mask=r < GROUP)
    gl.store(part_l_ptr + index * GROUP + r, l_i, mask=r < GROUP)


@gluon.jit(do_not_specialize=["H_KV", "L", "chunk", "splits"])
def decode_split_kernel(q_ptr, k_desc, v_desc, o_ptr, seq_lens_ptr, part_o_ptr, part_m_ptr, part_l_ptr, arrivals_ptr,
                        H_KV, L, chunk, splits, qk_scale, GROUP: gl.constexpr, GROUP_P2: gl.constexpr,
                        COMPUTE: gl.constexpr, QROWS: gl.constexpr, STAGES: gl.constexpr, q_layout: gl.constexpr,
                        s_layout: gl.constexpr, o_layout: gl.constexpr, kv_layout: gl.constexpr,
                        io_layout: gl.constexpr):
    """One program per (split, b·H_KV + h): keys [split·chunk, (split + 1)·chunk) of sequence b (its first
    seq_lens[b] keys count), the GROUP query heads of KV head h, through a ring of STAGES slots; its partial to the
    scratch, then split-K's counter (lesson 32): the last of the ``splits`` programs of the KV head to arrive combines
    them (combine_splits) and resets the counter for the next call."""
    BLOCK_N: gl.constexpr = k_desc.block_shape[0]
    HEAD_DIM: gl.constexpr = k_desc.block_shape[1]
    split = gl.program_id(0)
    kv_head = gl.program_id(1)
    seq_len = gl.load(seq_lens_ptr + kv_head // H_KV)
    start = split * chunk
    stop = gl.minimum(start + chunk, seq_len)
    n_blocks = gl.cdiv(gl.maximum(stop - start, 0), BLOCK_N)
    row0 = kv_head * L + start

    k_ring = gl.allocate_shared_memory(k_desc.dtype, [STAGES] + k_desc.block_type.shape, k_desc.layout)
    v_ring = gl.allocate_shared_memory(v_desc.dtype, [STAGES] + v_desc.block_type.shape, v_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
    # The ring filled first: STAGES blocks of K and V in flight before the first product.
    for i in gl.static_range(STAGES):
        if i < n_blocks:
            load_block(k_desc, v_desc, k_ring, v_ring, ready, row0, i, STAGES)

    q = load_queries(q_ptr, kv_head, GROUP, QROWS, HEAD_DIM, q_layout)
    if COMPUTE == "fma":
        q = q.to(gl.float32)
    m_i = gl.full([QROWS], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([QROWS], gl.float32, layout=gl.SliceLayout(1, s_layout))
    o = gl.zeros([QROWS, HEAD_DIM], gl.float32, layout=o_layout)
    for j in range(n_blocks):
        slot = j % STAGES
        mbarrier.wait(ready.index(slot), (j // STAGES) & 1)
        s = block_scores(q, k_ring.index(slot), COMPUTE, s_layout, kv_layout)
        s = mask_keys(s, start + j * BLOCK_N, stop, s_layout)
        if COMPUTE == "fma":
            p, o, m_i, l_i = fma_softmax_step(s, m_i, l_i, o, qk_scale, o_layout)
        else:
            p, o, m_i, l_i = online_softmax(s, m_i, l_i, o, qk_scale, o_layout)
        o = add_values(p, o, v_ring.index(slot), COMPUTE, o_layout, kv_layout)
        # The products above are synchronous: the slot is read, and may be refilled with block j + STAGES.
        if j + STAGES < n_blocks:
            load_block(k_desc, v_desc, k_ring, v_ring, ready, row0, j + STAGES, STAGES)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(i))

    if n_blocks > 0:
        store_partial(o, m_i, l_i, part_o_ptr, part_m_ptr, part_l_ptr, kv_head * splits + split, GROUP, s_layout,
                      o_layout)
    # Every thread's part of the partial stored before one thread announces it (the barrier, then the atomic's
    # release); the last program's acquire makes every other program's partial visible to it.
    gl.barrier()
    arrived = gl.atomic_add(arrivals_ptr + kv_head, 1, sem="acq_rel", scope="gpu")
    if arrived == splits - 1:
        used = gl.minimum(gl.cdiv(seq_len, chunk), splits)
        combine_splits(part_o_ptr, part_m_ptr, part_l_ptr, o_ptr, kv_head, used, splits, GROUP, GROUP_P2, HEAD_DIM,
                       io_layout)
        gl.atomic_xchg(arrivals_ptr + kv_head, 0, sem="relaxed", scope="gpu")


COMPUTES = ("wgmma", "mma_v2", "fma")
# Keys in blocks of 64, three slots of K and V (96 KiB at head dim 128: two programs an SM), 4 warps: one warpgroup.
DECODE_CONFIG = {"BLOCK_N": 64, "STAGES": 3, "num_warps": 4}
# Programs resident per SM at DECODE_CONFIG (its shared memory: 2 × 48 KiB a program at head dim 128, 228 KiB an SM;
# ``--compile`` prints each compile's figure).
PROGRAMS_PER_SM = 2


def decode_constexprs(compute: str, group: int, head_dim: int, cfg: dict) -> dict:
    """The layouts of each way of computing, and QROWS, the rows of its products: wgmma's 64, mma.sync's 16, the
    CUDA cores' GROUP (padded to a power of two)."""
    nw, bn = cfg["num_warps"], cfg["BLOCK_N"]
    group_p2 = 1 << (group - 1).bit_length()
    io_layout = gl.BlockedLayout([1, 4], [1, 32], [nw, 1], [1, 0])
    if compute == "wgmma":
        s_layout = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[nw, 1], instr_shape=[16, bn, 16])
        o_layout = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[nw, 1], instr_shape=[16, head_dim, 16])
        q_layout = gl.DotOperandLayout(operand_index=0, parent=s_layout, k_width=2)
        qrows, kv_layout = 64, None
    elif compute == "mma_v2":
        # 16 rows: the warps side by side along the keys (S) and along the head dim (O).
        s_layout = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[1, nw], instr_shape=[16, 8])
        o_layout = s_layout
        q_layout = gl.DotOperandLayout(operand_index=0, parent=s_layout, k_width=2)
        qrows, kv_layout = 16, None
    elif compute == "fma":
        # (query, key, head dim): a warp per query row (GROUP of them), lanes 8 along the keys × 4 along the head dim,
        # 8 contiguous elements of the head dim a thread (16-byte shared-memory reads).
        warps_q = min(group_p2, nw)
        l3 = gl.BlockedLayout([1, 1, 8], [1, 8, 4], [warps_q, nw // warps_q, 1], [2, 1, 0])
        s_layout, o_layout, q_layout = gl.SliceLayout(2, l3), gl.SliceLayout(1, l3), gl.SliceLayout(1, l3)
        qrows, kv_layout = group_p2, gl.SliceLayout(0, l3)
    else:
        raise ValueError(f"compute {compute!r}: one of {', '.join(COMPUTES)}")
    if group > qrows:
        raise ValueError(f"{group} query heads a KV head: more than the {qrows} rows of {compute}'s products")
    return {"GROUP": group, "GROUP_P2": group_p2, "COMPUTE": compute, "QROWS": qrows, "STAGES": cfg["STAGES"],
            "q_layout": q_layout, "s_layout": s_layout, "o_layout": o_layout, "kv_layout": kv_layout,
            "io_layout": io_layout}


class DecodePlan:
    """One decode launch worked out once: the checks, the split rule, the descriptors, the scratch (partials in fp32
    and one counter a KV head, at 0 between calls: the last program of each KV head resets its own)."""

    def __init__(self, q, k_cache, v_cache, seq_lens, compute: str = "wgmma", out=None, splits: int | None = None,
                 config: dict | None = None, sm_scale: float | None = None):
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

        cfg = {**DECODE_CONFIG, **(config or {})}
        require_bf16_4d(q=q, k_cache=k_cache, v_cache=v_cache)
        group = require_gqa_heads(q, k_cache, v_cache)
        B, Hq, Sq, D = q.shape
        Hkv, L = k_cache.shape[1], k_cache.shape[2]
        if Sq != 1:
            raise ValueError(f"q has {Sq} queries a sequence: decode takes one (the newest token); a prompt is "
                             "prefill's (gqa_attention)")
        if seq_lens.dtype != torch.int32 or tuple(seq_lens.shape) != (B,) or seq_lens.device != q.device:
            raise ValueError(f"seq_lens is {seq_lens.dtype} of shape {tuple(seq_lens.shape)} on {seq_lens.device}: "
                             f"one int32 length a sequence ({B}) on q's device expected")
        low, high = int(seq_lens.min()), int(seq_lens.max())        # once, when the plan is made
        if low < 1 or high > L:
            raise ValueError(f"seq_lens runs from {low} to {high}: each sequence needs at least one key and at most "
                             f"the cache's {L}")
        out = torch.empty_like(q) if out is None else out
        if out.shape != q.shape or out.dtype not in (torch.bfloat16, torch.float32) or not out.is_contiguous():
            raise ValueError(f"out is {out.dtype} {tuple(out.shape)}: a contiguous bf16 or fp32 tensor of q's shape")
        require_hopper(q)
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count
        self.splits, self.chunk = split_rule(B, Hkv, L, cfg["BLOCK_N"], sms)
        if splits is not None:
            self.chunk = -(-(-(-L // splits)) // cfg["BLOCK_N"]) * cfg["BLOCK_N"]
            self.splits = -(-L // self.chunk)
        self.out, self.grid, self.num_warps = out, (self.splits, B * Hkv), cfg["num_warps"]
        block = [cfg["BLOCK_N"], D]
        layout = gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16)
        self.k_desc = TensorDescriptor.from_tensor(k_cache.view(-1, D), block, layout)
        self.v_desc = TensorDescriptor.from_tensor(v_cache.view(-1, D), block, layout)
        places = B * Hkv * self.splits * group
        dev = q.device
        self.part_o = torch.empty(places * D, dtype=torch.float32, device=dev)
        self.part_m = torch.empty(places, dtype=torch.float32, device=dev)
        self.part_l = torch.empty(places, dtype=torch.float32, device=dev)
        self.arrivals = torch.zeros(B * Hkv, dtype=torch.int32, device=dev)
        sm_scale = 1 / math.sqrt(D) if sm_scale is None else sm_scale
        self.args = (q, self.k_desc, self.v_desc, out, seq_lens, self.part_o, self.part_m, self.part_l,
                     self.arrivals, Hkv, L, self.chunk, self.splits, sm_scale * LOG2E)
        self.kwargs = {**decode_constexprs(compute, group, D, cfg), "num_warps": cfg["num_warps"]}

    def launch(self):
        decode_split_kernel[self.grid](*self.args, **self.kwargs)
        return self.out


def decode_attention(q, k_cache, v_cache, seq_lens, compute: str = "wgmma", out=None, splits: int | None = None,
                     config: dict | None = None):
    """softmax(q·Kᵀ/√D)·V over each sequence's first seq_lens[b] keys of the cache, query head h on KV head
    h // (Hq/Hkv): O (B, Hq, 1, D)."""
    return DecodePlan(q, k_cache, v_cache, seq_lens, compute, out, splits, config).launch()


# == 3. Without a GPU: the host model ==================================================================================

MODEL_HEAD_DIM = 64
MODEL_GQA_CFGS = attention.MODEL_CFGS                           # lesson 36's model tiles: 64 × 32, head dim 64
# (batch, Hq, Hkv, Sq, Sk): GQA ratios 4 and 1, one query and one key, tails past every block, Sq ≠ Sk both ways.
MODEL_GQA_SHAPES = ((1, 8, 2, 17, 17), (1, 2, 2, 1, 1), (2, 4, 1, 100, 100), (1, 8, 2, 17, 100), (1, 4, 1, 100, 17))
MODEL_DECODE_CFG = {"BLOCK_N": 16, "STAGES": 2, "num_warps": 4}
MODEL_SMS = 6
# (batch, Hq, Hkv, L, seq_lens), on 6 SMs (12 program slots by split_rule): ratio 4, one sequence at the cache's
# full length in 4 splits of 32 keys (the last split 4 keys: a partial block) and one shorter (37: two splits used of
# four); ratio 1 in 2 splits, with one key, a full sequence and an odd one; ratio 4 with 8 query heads, 3 splits.
MODEL_DECODE_SHAPES = ((2, 4, 1, 100, (100, 37)), (3, 2, 2, 50, (1, 50, 23)), (1, 8, 2, 77, (77,)))
# The combine's bits in two program orders (O kept in fp32): 7 splits of 16 keys (the last 4), so that the last
# program to arrive differs (the last split's, then the first's) and a sum of three or more terms can change its bits
# with the order of its additions.
ORDER_SHAPE, ORDER_SPLITS = (1, 8, 2, 100, (100,)), 7


def program_orders() -> dict:
    """Two schedules a GPU can produce: programs in launch order, and reversed."""
    return {"in launch order": None, "in reverse": lambda n: list(range(n - 1, -1, -1))}


def gqa_inputs(B, Hq, Hkv, Sq, Sk, D, seed=0):
    rng = np.random.default_rng(seed)
    q = attention.bf16(rng.standard_normal((B, Hq, Sq, D)))
    k = attention.bf16(rng.standard_normal((B, Hkv, Sk, D)))
    v = attention.bf16(rng.standard_normal((B, Hkv, Sk, D)))
    return q, k, v


def decode_inputs(B, Hq, Hkv, L, seq_lens, D, seed=0):
    """Q, K, V with the cache past each sequence's length holding stale rows: keys 8× larger (each would take most of
    the softmax if it were not masked), values of 64."""
    q, k, v = gqa_inputs(B, Hq, Hkv, 1, L, D, seed)
    for b, n in enumerate(seq_lens):
        k[b, :, n:] = attention.bf16(k[b, :, n:] * 8)
        v[b, :, n:] = 64.0
    return q, k, v


def grouped_reference(q, k, v, causal: bool, seq_lens=None):
    """attention.reference (fp64, with its bound) with each KV head repeated for its query heads, sequence b over
    its first seq_lens[b] keys."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    sm_scale = 1 / math.sqrt(q.shape[-1])
    if seq_lens is None:
        return attention.reference(q, k, v, causal, sm_scale)
    parts = [attention.reference(q[b:b + 1], k[b:b + 1, :, :n], v[b:b + 1, :, :n], causal, sm_scale)
             for b, n in enumerate(seq_lens)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def in_model(call, tensors: dict, out, order=None, calls: int = 1):
    """``call()`` (a launcher on CPU tensors) ``calls`` times with the host model in the GPU's place: O's values as
    fp32 numpy and how often the last call wrote each element, or the model's sentence (a str)."""
    from gluon_course.model import ModelError, ModelUnsupported
    from gluon_course.model.launcher import ModelGPU

    with np.errstate(over="ignore", invalid="ignore"), ModelGPU(MODEL_SMS, order=order) as gpu:
        for name, t in tensors.items():
            gpu.add(t, name)
        gpu.add(out, "O")
        try:
            for _ in range(calls):
                call()
        except ModelUnsupported as e:
            return f"not modelled: {e}"
        except ModelError as e:
            return str(e)
        writes = gpu.writes(out)
    return out.float().numpy(), writes


def gqa_model_problem(version: str, shape, causal: bool) -> str | None:
    B, Hq, Hkv, Sq, Sk = shape
    where = (f"GQA prefill {version}{', causal' if causal else ''}, batch {B}, {Hq} query heads on {Hkv} KV heads, "
             f"Sq {Sq}, Sk {Sk}")
    q, k, v = gqa_inputs(B, Hq, Hkv, Sq, Sk, MODEL_HEAD_DIM)
    tq, tk, tv = (torch.from_numpy(x).to(torch.bfloat16) for x in (q, k, v))
    out = torch.full(tq.shape, float("nan"), dtype=torch.bfloat16)
    got = in_model(lambda: gqa_attention(tq, tk, tv, causal, version, out=out, config=MODEL_GQA_CFGS[version]),
                   {"Q": tq, "K": tk, "V": tv}, out)
    if isinstance(got, str):
        return f"in the host model, {where}: {got}"
    want, bound = grouped_reference(q, k, v, causal)
    problem = attention.compare(got[0], want, bound, got[1])
    return f"in the host model, {where}: {problem}" if problem else None


def decode_in_model(compute: str, shape, out_dtype=torch.bfloat16, splits=None, order=None, calls: int = 2):
    """The decode launcher in the host model at ``shape``, ``calls`` times on one plan (its counters carried from one
    call to the next as on a GPU): (O, writes, want, bound, plan) or a sentence."""
    B, Hq, Hkv, L, lens = shape
    q, k, v = decode_inputs(B, Hq, Hkv, L, lens, MODEL_HEAD_DIM)
    tq, tk, tv = (torch.from_numpy(x).to(torch.bfloat16) for x in (q, k, v))
    seq_lens = torch.tensor(lens, dtype=torch.int32)
    out = torch.full(tq.shape, float("nan"), dtype=out_dtype)
    plan = []

    def call():
        if not plan:
            plan.append(DecodePlan(tq, tk, tv, seq_lens, compute, out, splits, MODEL_DECODE_CFG))
        plan[0].launch()
        left = torch.nonzero(plan[0].arrivals).flatten()
        if left.numel():
            from gluon_course.model import ModelError
            raise ModelError(f"after a call, the counter of KV head {int(left[0])} is {int(plan[0].arrivals[left[0]])}"
                             ", not 0: the next call would count from there (the last program of the KV head resets "
                             "it)")
    got = in_model(call, {"Q": tq, "K cache": tk, "V cache": tv, "seq_lens": seq_lens}, out, order, calls)
    if isinstance(got, str):
        return got
    want, bound = grouped_reference(q, k, v, False, lens)
    return got[0], got[1], want, bound, plan[0]


def decode_model_problem(compute: str, shape) -> str | None:
    B, Hq, Hkv, L, lens = shape
    where = (f"decode by {compute}, batch {B}, {Hq} query heads on {Hkv} KV heads, a cache of {L} keys, "
             f"seq_lens {list(lens)}")
    found = decode_in_model(compute, shape)
    if isinstance(found, str):
        return f"in the host model, {where}: {found}"
    got, writes, want, bound, plan = found
    problem = attention.compare(got, want, bound, writes)
    where += f" ({plan.splits} splits of {plan.chunk} keys)"
    return f"in the host model, {where}, after two calls: {problem}" if problem else None


def same_bits_in_two_orders(compute: str, shape=ORDER_SHAPE, splits=ORDER_SPLITS) -> str | None:
    """None when O, kept in fp32, has the same bits with the programs run in launch order and in reverse (a different
    program arrives last at each KV head, and combines); else a sentence."""
    first = None
    for name, order in program_orders().items():
        found = decode_in_model(compute, shape, torch.float32, splits, order, calls=1)
        if isinstance(found, str):
            return f"in the host model, decode by {compute}, programs run {name}: {found}"
        got = found[0]
        if first is None:
            first = (name, got)
            continue
        differ = got.view(np.uint32) != first[1].view(np.uint32)
        if differ.any():
            where = tuple(int(i) for i in np.argwhere(differ)[0])
            return (f"decode by {compute}, {splits} splits: O{list(where)} is {float(got[where])!r} with the programs "
                    f"run {name} but {float(first[1][where])!r} run {first[0]} ({int(differ.sum())} elements differ): the "
                    "splits are combined in an order that depends on which program arrives last; add them in split "
                    "order, whichever program adds them")
    return None


def host_check(computes=COMPUTES, gqa_shapes=MODEL_GQA_SHAPES, decode_shapes=MODEL_DECODE_SHAPES,
               versions=("v0", "v2"), orders=True, show=None) -> str | None:
    """The GQA prefill (each version, each shape, causal and not) and decode (each way of computing, each shape, two
    calls on one plan) in the host model against the fp64 reference, each element of O written once into a poisoned
    O; then the combine's bits in two program orders. None, or the first sentence."""
    for version in versions:
        for shape in gqa_shapes:
            for causal in (False, True):
                problem = gqa_model_problem(version, shape, causal)
                if problem:
                    return problem
        if show:
            show(f"  GQA prefill {version}: within the bound at {len(gqa_shapes)} shapes, causal and not")
    for compute in computes:
        for shape in decode_shapes:
            problem = decode_model_problem(compute, shape)
            if problem:
                return problem
        if show:
            show(f"  decode by {compute}: within the bound at {len(decode_shapes)} shapes, two calls each")
        if orders:
            problem = same_bits_in_two_orders(compute)
            if problem:
                return problem
            if show:
                show(f"  decode by {compute}: the same fp32 bits with the programs run in launch order and in reverse "
                     f"({ORDER_SPLITS} splits)")
    return None


# == 4. Without a GPU: the compiler ====================================================================================

def decode_compiled(compute: str, head_dim: int = 128, group: int = 4, cfg: dict | None = None):
    """decode_split_kernel compiled for sm_90 as DecodePlan launches it."""
    from gluon_course.machine import compile_cached, tensor_descriptor_type

    cfg = {**DECODE_CONFIG, **(cfg or {})}
    block = [cfg["BLOCK_N"], head_dim]
    desc = tensor_descriptor_type("bf16", block, gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16))
    signature = {"q_ptr": "*bf16", "k_desc": desc, "v_desc": desc, "o_ptr": "*bf16", "seq_lens_ptr": "*i32",
                 "part_o_ptr": "*fp32", "part_m_ptr": "*fp32", "part_l_ptr": "*fp32", "arrivals_ptr": "*i32",
                 "H_KV": "i32", "L": "i32", "chunk": "i32", "splits": "i32", "qk_scale": "fp32"}
    return compile_cached(decode_split_kernel, "sm_90", signature=signature,
                          constexprs=decode_constexprs(compute, group, head_dim, cfg),
                          aligned=("q_ptr", "o_ptr", "part_o_ptr"), num_warps=cfg["num_warps"])


def gqa_compiled(version: str, head_dim: int = 128, causal: bool = True, heads: int = 32, group: int = 4):
    """The GQA prefill kernel compiled for sm_90 at lesson 36's configuration."""
    from gluon_course.machine import compile_cached, tensor_descriptor_type

    cfg = LESSON.CONFIGS[version]

    def desc(rows):
        return tensor_descriptor_type("bf16", [rows, head_dim],
                                      gl.NVMMASharedLayout.get_default_for([rows, head_dim], gl.bfloat16))
    signature = {"q_desc": desc(cfg["BLOCK_M"]), "k_desc": desc(cfg["BLOCK_N"]), "v_desc": desc(cfg["BLOCK_N"]),
                 "o_ptr": "*bf16", "Sq": "i32", "Sk": "i32", "qk_scale": "fp32"}
    return compile_cached(GQA_KERNELS[version], "sm_90", signature=signature,
                          constexprs=gqa_constexprs(version, cfg, head_dim, causal, heads, group), aligned=("o_ptr",),
                          num_warps=cfg["num_warps"])


def _conditional_loops(k) -> list[tuple[int, int]]:
    """Loop bodies closed by a conditional backward branch (an mbarrier wait's slow path jumps back unconditionally:
    not a loop of the kernel)."""
    import re

    spans = []
    for ins in k.instructions():
        m = re.search(r"\bBRA\s+0x([0-9a-f]+)", ins.text)
        if m and ins.text.startswith("@") and int(m.group(1), 16) <= ins.address:
            spans.append((int(m.group(1), 16), ins.address))
    return sorted(spans)


def decode_facts(compute: str, head_dim: int = 128, group: int = 4, cfg: dict | None = None) -> dict:
    """The facts of one compile: resources and programs an SM, then the key loop's instructions per key block (the
    loop that holds MUFU.EX2 and TMA's copies) and the combine's loops (those that read the partials, .STRONG.GPU)."""
    from gluon_course.machine.occupancy import occupancy_of

    cfg = {**DECODE_CONFIG, **(cfg or {})}
    k = decode_compiled(compute, head_dim, group, cfg)
    loops = _conditional_loops(k)

    def ops_in(first, last):
        return k.opcodes_between(first, last)
    key = [span for span in loops if "MUFU.EX2" in ops_in(*span) and "UTMALDG.2D" in ops_in(*span)]
    combine = [span for span in loops if any(op.startswith("LDG") and "STRONG" in op for op in ops_in(*span))]
    ops = ops_in(*key[0]) if len(key) == 1 else {}
    count = lambda *prefixes: sum(n for op, n in ops.items() if op.startswith(prefixes))  # noqa: E731
    threads = 32 * cfg["num_warps"]
    qrows = decode_constexprs(compute, group, head_dim, cfg)["QROWS"]
    # The scores a thread holds and exponentiates: wgmma's and mma.sync's accumulators hold each score once (a thread
    # 2 rows of its warp's 16); the CUDA cores' layout puts 4 lanes along the head dim, each of which ends the
    # reduction with the whole score (4 copies), a warp a query row.
    held = qrows * cfg["BLOCK_N"] / threads * (4 if compute == "fma" else 1)
    rows = 1 if compute == "fma" else 2
    return {"compute": compute, "registers": k.registers, "spills": k.spills, "shared_bytes": k.shared_bytes,
            "programs_per_sm": occupancy_of(k, cfg["num_warps"]).blocks, "key_loops": len(key),
            "tma_loads": count("UTMALDG"), "global_loads": {op: n for op, n in ops.items() if op.startswith("LDG")},
            "products": {op: n for op, n in ops.items() if op.startswith(("HGMMA", "HMMA", "FFMA", "FMUL", "FADD"))},
            "ex2": count("MUFU.EX2"), "scores_per_thread": held, "rows_per_thread": rows,
            "useful_scores_per_thread": group * cfg["BLOCK_N"] / threads,
            "shared_loads": {op: n for op, n in ops.items() if op.startswith(("LDS", "LDSM"))},
            "shared_stores": count("STS"), "shuffles": count("SHFL"), "cta_barriers": count("BAR.SYNC"),
            "bf16_unpacks": count("PRMT", "SHF", "IMAD.U32"), "fsel": count("FSEL"),
            "combine_loops": len(combine), "bytes_in_flight": cfg["STAGES"] * 2 * cfg["BLOCK_N"] * head_dim * 2,
            "compiled": k}


def decode_facts_problem(f: dict, cfg: dict | None = None) -> str | None:
    """What the probe asserts of a decode compile: it fits (two programs an SM at DECODE_CONFIG, the split rule's
    assumption), spills nothing, has one key loop whose K and V come by TMA (two UTMALDG a block: the refill) with no
    LDG of the cache, one MUFU.EX2 a score it holds and one a row (the rescale), the products on the unit named, and a
    combine that reads the partials from L2 (.STRONG.GPU loads)."""
    from gluon_course.grading.gemm_kernel import fits

    cfg = {**DECODE_CONFIG, **(cfg or {})}
    where = f"decode by {f['compute']}"
    problem = fits(f["compiled"], cfg["num_warps"], cfg)
    if problem:
        return f"{where}: {problem}"
    if f["programs_per_sm"] < PROGRAMS_PER_SM:
        return (f"{where}: {f['programs_per_sm']} program(s) an SM where split_rule counts on {PROGRAMS_PER_SM} "
                f"({f['shared_bytes']} bytes of shared memory, {f['registers']} registers a thread)")
    if f["key_loops"] != 1:
        return f"{where}: {f['key_loops']} loops hold TMA copies and exponentials, where the kernel has one key loop"
    if f["tma_loads"] != 2 or f["global_loads"]:
        return (f"{where}: the key loop issues {f['tma_loads']} TMA copies and global loads {f['global_loads']}, where "
                "K's and V's block come as two TMA copies and nothing else is read from global memory")
    want = {"wgmma": ("HGMMA",), "mma_v2": ("HMMA",), "fma": ("FFMA",)}[f["compute"]]
    if not any(op.startswith(want) for op in f["products"]) or \
            (f["compute"] == "fma" and any(op.startswith(("HGMMA", "HMMA")) for op in f["products"])):
        return f"{where}: the key loop's products are {f['products']}, not on {want[0]}"
    if f["ex2"] != f["scores_per_thread"] + f["rows_per_thread"]:
        return (f"{where}: {f['ex2']} MUFU.EX2 in the key loop where each of a thread's {f['scores_per_thread']:g} "
                f"scores takes one and each of its {f['rows_per_thread']} rows one more (the rescale)")
    if not f["combine_loops"]:
        return f"{where}: no loop reads the partials (LDG .STRONG.GPU): where is the combine?"
    return None


def facts_table(computes=COMPUTES, head_dims=(128, 64)) -> str:
    """The sm_90 facts of each way of computing, GROUP 4 (32 query heads on 8 KV heads), per key block of the key
    loop (static instruction counts: the loop body runs once a block)."""
    cfg = DECODE_CONFIG
    lines = [f"Decode, GROUP 4, BLOCK_N {cfg['BLOCK_N']}, {cfg['STAGES']} slots, {cfg['num_warps']} warps; per key "
             "block, per thread, in the key loop:", "",
             "| compute | hd | regs | spills | smem KiB | programs/SM | KiB in flight/SM | loads (K, V) | products | "
             "MUFU.EX2 (scores held + rows; useful scores) | LDS / LDSM | STS | SHFL | BAR.SYNC | FSEL |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for hd in head_dims:
        for compute in computes:
            f = decode_facts(compute, hd)
            loads = f"{f['tma_loads']}× UTMALDG.2D" + (f" + {f['global_loads']}" if f["global_loads"] else "")
            products = ", ".join(f"{n}× {op}" for op, n in sorted(f["products"].items()))
            shared = ", ".join(f"{n}× {op}" for op, n in sorted(f["shared_loads"].items())) or "0"
            lines.append(f"| {compute} | {hd} | {f['registers']} | {f['spills']} | {f['shared_bytes'] / 1024:.0f} | "
                         f"{f['programs_per_sm']} | {f['programs_per_sm'] * f['bytes_in_flight'] / 1024:.0f} | "
                         f"{loads} | {products} | {f['ex2']} ({f['scores_per_thread']:g} + {f['rows_per_thread']}; "
                         f"{f['useful_scores_per_thread']:g}) | {shared} | {f['shared_stores']} | {f['shuffles']} | "
                         f"{f['cta_barriers']} | {f['fsel']} |")
    lines.append("")
    for version in ("v0", "v2"):
        k = gqa_compiled(version)
        hgmma = {}
        for a, b in attention.key_loops(k):
            for op, n in attention.loop_facts(k, a, b, LESSON.CONFIGS[version], 128)["hgmma"].items():
                hgmma[op] = hgmma.get(op, 0) + n
        lines.append(f"GQA prefill {version} (causal, head dim 128, 32 query heads on 8): {k.registers} registers, "
                     f"{k.spills} spills, {k.shared_bytes / 1024:.0f} KiB shared; its two key loops' HGMMAs {hgmma}")
    return "\n".join(lines)


def compile_check(computes=COMPUTES, head_dims=(128, 64), show=None) -> str | None:
    """decode_facts_problem on each way of computing at each head dim, and lesson 36's facts on the GQA prefill
    kernels (attention.facts_problem: the same two key loops, P from registers, masks only where needed)."""
    for hd in head_dims:
        for compute in computes:
            problem = decode_facts_problem(decode_facts(compute, hd))
            if problem:
                return f"head dim {hd}: {problem}"
            if show:
                show(f"  decode by {compute}, head dim {hd}: fits, no spills, one key loop on TMA, the combine's loops")
    for version in ("v0", "v2"):
        cfg = LESSON.CONFIGS[version]
        k = gqa_compiled(version)
        loops = attention.key_loops(k)
        f = {"name": f"GQA {version}", "head_dim": 128, "causal": True, "compiled": k,
             "loops": [attention.loop_facts(k, a, b, cfg, 128) for a, b in loops]}
        problem = attention.facts_problem(f, cfg)
        if problem:
            return problem
        if show:
            show(f"  GQA prefill {version}: lesson 36's facts hold (two key loops, P from registers, masks only where "
                 "needed)")
    return None


# -- One-mistake variants the checks must reject ----------------------------------------------------------------------
# The probe's three plants on its own decode kernel; the other three of its first six (the combine without the rescale,
# the combine in arrival order, the KV head h % Hkv) are now lesson 38's, on the code that moved there.
# (mistake, old text (once in this file), new text, the check that must reject it and its keyword arguments, words
# its sentence must hold). The checks are host_check's parts: ``gqa`` the prefill shapes, ``decode`` the decode shapes
# (two calls on one plan), ``orders`` the combine's bits in two program orders.
PLANTS = [
    ("the last split's keys masked at the split's end only, not at the sequence's",
     "        s = mask_keys(s, start + j * BLOCK_N, stop, s_layout)",
     "        s = mask_keys(s, start + j * BLOCK_N, start + chunk, s_layout)",
     {"versions": (), "orders": False}, "outside the bound"),
    ("the counter never reset: the next call's programs count from `splits`, and none combines",
     '        gl.atomic_xchg(arrivals_ptr + kv_head, 0, sem="relaxed", scope="gpu")\n', "",
     {"versions": (), "orders": False}, "counter of KV head"),
    ("the partial announced before it is stored: the last program may combine what the scratch held before",
     """    if n_blocks > 0:
        store_partial(o, m_i, l_i, part_o_ptr, part_m_ptr, part_l_ptr, kv_head * splits + split, GROUP, s_layout,
                      o_layout)
    # Every thread's part of the partial stored before one thread announces it (the barrier, then the atomic's
    # release); the last program's acquire makes every other program's partial visible to it.
    gl.barrier()
    arrived = gl.atomic_add(arrivals_ptr + kv_head, 1, sem="acq_rel", scope="gpu")""",
     """    arrived = gl.atomic_add(arrivals_ptr + kv_head, 1, sem="acq_rel", scope="gpu")
    if n_blocks > 0:
        store_partial(o, m_i, l_i, part_o_ptr, part_m_ptr, part_l_ptr, kv_head * splits + split, GROUP, s_layout,
                      o_layout)
    gl.barrier()""",
     {"versions": (), "orders": False}, "stored after every release"),
]


def planted(old: str, new: str, directory):
    """This probe with ``old`` replaced by ``new``, loaded as a module from ``directory``."""
    import importlib.util

    source = Path(__file__).read_text(encoding="utf-8")
    marker = "# -- One-mistake variants"
    code, rest = source.split(marker, 1)             # the plants' own text is not the code they change
    if code.count(old) != 1:
        raise ValueError(f"a plant's text occurs {code.count(old)} times in the probe, not once: {old[:60]!r}")
    path = Path(directory) / "probe_attention_decode_planted.py"
    path.write_text(code.replace(old, new) + marker + rest, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"probe_attention_decode_planted_{abs(hash(new))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plant_verdicts(plants=PLANTS, computes=COMPUTES, show=print) -> str | None:
    """Each plant through the check that must reject it: None when every one is rejected with its words."""
    import tempfile

    for what, old, new, only, words in plants:
        with tempfile.TemporaryDirectory() as directory:
            module = planted(old, new, directory)
            kwargs = {"computes": computes, **only}
            said = module.host_check(**kwargs)
        if not said or words not in said:
            return f"the plant '{what}' was not rejected as expected: {said}"
        show(f"  rejected: {what}\n    {said[:300]}")
    return None


# == 5. On a GPU ======================================================================================================

WATCHDOG_S = 540
HQ, HKV, HEAD_DIM = 32, 8, 128
# (batch, cache length): the decode anchors.
TIMED = ((1, 4096), (1, 32768), (16, 4096), (16, 32768), (64, 8192))
GPU_ODD = ((1, 32, 8, 1, (1,)), (3, 32, 8, 1000, (1000, 1, 777)), (2, 8, 8, 5000, (4099, 5000)),
           (1, 32, 8, 20000, (19999,)))


def gpu_decode_problem(compute: str, shape, seed: int = 0) -> str | None:
    """Lesson 38's GPU decode check (gluon_course.nvidia.decode.gpu_decode_problem: two decodes on one plan, O
    poisoned and guarded, stale rows past each length) on this probe's ``compute`` variant."""
    from gluon_course.nvidia import decode

    return decode.gpu_decode_problem(None, shape, HEAD_DIM, seed,
                                     make_plan=lambda q, k, v, seq_lens, out: DecodePlan(q, k, v, seq_lens, compute,
                                                                                          out))


def gpu_gqa_problem(version: str) -> str | None:
    """The GQA prefill at odd shapes, causal and not, against fp32 math with each KV head repeated."""
    from gluon_course.measure.tensors import guarded_empty, is_poison

    for B, Hq, Hkv, Sq, Sk in ((1, 32, 8, 1, 1), (2, 8, 2, 100, 300), (1, 32, 8, 1000, 1000), (2, 4, 4, 300, 129)):
        for causal in (False, True):
            g = torch.Generator(device="cuda").manual_seed(1)
            q = torch.randn(B, Hq, Sq, HEAD_DIM, device="cuda", generator=g).to(torch.bfloat16)
            k, v = (torch.randn(B, Hkv, Sk, HEAD_DIM, device="cuda", generator=g).to(torch.bfloat16) for _ in "kv")
            out = guarded_empty((B, Hq, Sq, HEAD_DIM), dtype=torch.bfloat16)
            gqa_attention(q, k, v, causal, version, out=out.tensor)
            torch.cuda.synchronize()
            got = out.tensor.float()
            want, bound = attention.gpu_reference(q, k.repeat_interleave(Hq // Hkv, 1),
                                                  v.repeat_interleave(Hq // Hkv, 1), causal)
            if is_poison(got).any() or not out.margins_untouched() or ((got - want).abs() > bound).any():
                return f"GQA {version} at {(B, Hq, Hkv, Sq, Sk)}{', causal' if causal else ''}: wrong"
    return None


def time_decode(batch: int, L: int, copy_tbs: float) -> dict:
    """Each way of computing and SDPA's backends (enable_gqa) at one shape, launches interleaved: µs, the cache's
    bytes over the time in TB/s and as a fraction of the device copy's bandwidth."""
    g = torch.Generator(device="cuda").manual_seed(2)
    q = torch.randn(batch, HQ, 1, HEAD_DIM, device="cuda", generator=g).to(torch.bfloat16)
    k, v = (torch.randn(batch, HKV, L, HEAD_DIM, device="cuda", generator=g).to(torch.bfloat16) for _ in "kv")
    seq_lens = torch.full((batch,), L, dtype=torch.int32, device="cuda")
    calls, refused, plans = {}, {}, {}
    for compute in COMPUTES:
        plans[compute] = DecodePlan(q, k, v, seq_lens, compute)
        calls[compute] = plans[compute].launch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for backend in attention.SDPA_BACKENDS:
        chosen = getattr(SDPBackend, backend)

        def fn(chosen=chosen):
            with sdpa_kernel([chosen]):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        try:
            fn()
            torch.cuda.synchronize()
            calls[backend.split("_")[0].lower()] = fn
        except RuntimeError as e:
            refused[backend] = str(e).splitlines()[0][:200]
    for fn in calls.values():
        fn()
    torch.cuda.synchronize()
    ms = attention.interleaved_ms(calls)
    nbytes = 2 * k.numel() * k.element_size()
    tbs = {name: nbytes / (t * 1e-3) / 1e12 for name, t in ms.items()}
    library = {n: t for n, t in tbs.items() if n in ("cudnn", "flash", "efficient")}
    return {"batch": batch, "L": L, "cache_bytes": nbytes, "us": {n: t * 1e3 for n, t in ms.items()}, "tbs": tbs,
            "fraction_of_copy": {n: t / copy_tbs for n, t in tbs.items()},
            "splits": {c: [plans[c].splits, plans[c].chunk] for c in COMPUTES},
            "best_library": max(library, key=library.get) if library else None, "refused": refused}


def gpu_main(path: str) -> None:
    import faulthandler
    import subprocess
    from datetime import datetime, timezone

    from gluon_course.measure.timing import copy_ceiling_tbs

    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    t0 = time.time()
    found = {"what": "issue 42, lesson 38's groundwork: GQA prefill, and split-KV decode by wgmma, mma_v2 and CUDA "
                     "cores against SDPA's backends (enable_gqa)",
             "produced_by": {"probe": "tools/probes/probe_attention_decode.py",
                             "command": "python tools/probes/probe_attention_decode.py OUT.json",
                             "established_from": "the run's own output (the probe writes this field)"},
             "gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
             "cuda": torch.version.cuda, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
             "config": DECODE_CONFIG, "sms": torch.cuda.get_device_properties(0).multi_processor_count}

    def save():
        with open(path, "w") as fh:
            json.dump(found, fh, indent=1)

    problem = None
    for version in ("v0", "v2"):
        problem = problem or gpu_gqa_problem(version)
    for compute in COMPUTES:
        for shape in GPU_ODD:
            if problem is None:
                said = gpu_decode_problem(compute, shape)
                problem = f"decode by {compute} at {shape}: {said}" if said else None
    found["correct"] = problem or "passed"
    save()
    if problem:
        print(f"correctness failed, no timing: {problem}", flush=True)
        return
    print(f"correct ({time.time() - t0:.0f} s)", flush=True)
    copy = copy_ceiling_tbs()
    found["copy_tbs"] = copy
    rows = []
    for batch, L in TIMED:
        try:
            rows.append(time_decode(batch, L, copy))
        except Exception as e:                        # kept in the JSON; the other rows still run
            found.setdefault("errors", []).append(f"{batch} x {L}: {type(e).__name__}: {e}")
            continue
        found["timings"] = rows
        save()
    found["seconds"] = round(time.time() - t0, 1)
    save()
    names = list(COMPUTES) + ["cudnn", "flash", "efficient"]
    print(f"\ncopy ceiling {copy:.2f} TB/s; the cache's bytes over the time, as a fraction of it (µs)\n")
    print("| batch × L | cache MB | " + " | ".join(names) + " | best ours / best SDPA |")
    print("|---" * (len(names) + 3) + "|")
    for r in rows:
        f, us = r["fraction_of_copy"], r["us"]
        ours = max(f[c] for c in COMPUTES)
        ratio = f"{ours / f[r['best_library']]:.2f} ({r['best_library']})" if r["best_library"] else "-"
        print(f"| {r['batch']} × {r['L']} | {r['cache_bytes'] / 1e6:.0f} | "
              + " | ".join(f"{f[n]:.2f} ({us[n]:.0f})" if n in f else "-" for n in names) + f" | {ratio} |")


def plan_report() -> str:
    lines = ["| batch × L | KV heads | splits | chunk | programs | slots (132 SMs × 2) |", "|---|---|---|---|---|---|"]
    for batch, L in TIMED:
        splits, chunk = split_rule(batch, HKV, L, DECODE_CONFIG["BLOCK_N"])
        lines.append(f"| {batch} × {L} | {batch * HKV} | {splits} | {chunk} | {splits * batch * HKV} | "
                     f"{SMS * PROGRAMS_PER_SM} |")
    return "\n".join(lines)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--model"]:
        said = host_check(show=print)
    elif args[:1] == ["--compile"]:
        print(facts_table())
        said = compile_check(show=print)
    elif args[:1] == ["--plants"]:
        said = plant_verdicts()
    elif args[:1] == ["--plan"]:
        print(plan_report())
        said = None
    elif len(args) == 1 and args[0].endswith(".json"):
        gpu_main(args[0])
        sys.exit(0)
    else:
        sys.exit(__doc__)
    print(said or "passed")
    sys.exit(1 if said else 0)
