"""Lesson 38 · Attention in a model: grouped-query prefill and split-KV decode.

A model's attention differs from lesson 36's in two ways. Its key/value heads are fewer than its query heads
(grouped-query attention, GQA: lesson 32's block has 32 query heads on 8 KV heads, each KV head shared by a group of
GROUP = 4 query heads), and most of its calls are **decode**: one new query a sequence against every key the sequence
has cached so far.

- ``gqa_prefill_kernel``: lesson 37's v4 as it is (two consumer warpgroups taking turns at the tensor cores, one
  producer warp), with K and V read from the KV head of the program's query head (``kv_head_of``).
- ``decode_kernel``: one program per (split of the keys, KV head): the GROUP query rows of that KV head against its
  chunk of the cache, K and V through a TMA ring, lesson 36's online softmax on mma.sync; each program writes its
  partial (unnormalized O, running max m and sum l) to a scratch and counts itself at its KV head's counter, and the
  last to arrive combines the partials in split order (``combine_splits``), so that O has the same bits whichever
  program arrives last. ``split_rule`` decides how many splits fill the GPU.
- ``DecodingBlock``: lesson 32's block stepping one token a sequence over its KV cache, attention by the decode.
"""
import math

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

from gluon_course.course import load_solution
from gluon_course.nvidia.hopper import require_hopper
from gluon_course.validate import require_separate_output

# Lesson 37's v4 (its consumers, lesson 36's producer) for the prefill; lesson 36's online softmax for the decode.
lesson36 = load_solution("36")
lesson37 = load_solution("37")
v4_consumer, load_partition = lesson37.v4_consumer, lesson37.load_partition
online_softmax = lesson36.online_softmax
LOG2E = lesson36.LOG2E
SMS = 132                   # the H100's and H200's SMs, where no GPU is there to ask


# -- 1. Prefill with grouped-query heads -------------------------------------------------------------------------------
#
# Q is (batch, Hq, Sq, D), K and V (batch, Hkv, Sk, D), Hq = GROUP · Hkv; the kernels see each as a matrix of
# batch·heads·S rows. Program (query tile, b·Hq + h) reads K's and V's rows of KV head b·Hkv + h // GROUP.

@gluon.jit
def kv_head_of(bh, HQ: gl.constexpr, GROUP: gl.constexpr):
    """The KV head (its index b·Hkv + j among K's and V's batch·Hkv heads) that query head ``bh`` = b·HQ + h reads:
    query heads GROUP·j to GROUP·j + GROUP − 1 of a sequence share KV head j of the same sequence."""
    ### BEGIN SOLUTION: the sequence and the query head within it, then the KV head of the same sequence
    b = bh // HQ
    h = bh % HQ
    return b * (HQ // GROUP) + h // GROUP
    ### END SOLUTION


@gluon.jit
def gqa_prefill_kernel(q_desc, k_desc, v_desc, o_ptr, Sq, Sk, qk_scale, CAUSAL: gl.constexpr, s_layout: gl.constexpr,
                       o_layout: gl.constexpr, STAGES: gl.constexpr, LOAD_REGS: gl.constexpr,
                       MMA_REGS: gl.constexpr, HQ: gl.constexpr, GROUP: gl.constexpr):
    """Lesson 37's v4 with grouped heads: its two consumers unchanged (Q and O are the query head's), its producer
    given the KV head to copy K and V from."""
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
        mbarrier.init(turn.index(c), count=1)
    kv_bh = kv_head_of(gl.program_id(1), HQ, GROUP)
    gl.warp_specialize([
        (v4_consumer, (0, q_smem.slice(0, ROWS), k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty,
                       turn.index(0), turn.index(1), o_ptr, Sq, Sk, qk_scale, CAUSAL, STAGES, TILE_M, s_layout,
                       o_layout)),
        (v4_consumer, (1, q_smem.slice(ROWS, ROWS), k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty,
                       turn.index(1), turn.index(0), o_ptr, Sq, Sk, qk_scale, CAUSAL, STAGES, TILE_M, s_layout,
                       o_layout)),
        (load_partition, (q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready,
                          v_empty, kv_bh, Sq, Sk, CAUSAL, STAGES)),
    ], [4, 1], [MMA_REGS, LOAD_REGS])
    mbarrier.invalidate(q_bar)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(k_ready.index(i))
        mbarrier.invalidate(k_empty.index(i))
        mbarrier.invalidate(v_ready.index(i))
        mbarrier.invalidate(v_empty.index(i))
    for c in gl.static_range(2):
        mbarrier.invalidate(turn.index(c))


PREFILL_CONFIG = lesson37.CONFIGS["v4"]
HEAD_DIMS = lesson36.HEAD_DIMS


def prefill_constexprs(cfg: dict, head_dim: int, causal: bool, hq: int, group: int) -> dict:
    """The prefill kernel's constexprs besides its descriptors: lesson 37's for v4, and the heads' grouping."""
    return {**lesson37.constexprs("v4", cfg, head_dim, causal), "HQ": hq, "GROUP": group}


def require_bf16_4d(**tensors) -> None:
    """A ValueError with a sentence for a tensor the kernels cannot read: not bf16, not 4-D, not contiguous."""
    for name, t in tensors.items():
        if t.dtype != torch.bfloat16:
            raise ValueError(f"{name} is {t.dtype}: these kernels take bfloat16 (convert with .to(torch.bfloat16))")
        if t.dim() != 4:
            raise ValueError(f"{name} has shape {tuple(t.shape)}: (batch, heads, sequence, head dim) expected")
        if not t.is_contiguous():
            raise ValueError(f"{name} is not contiguous (strides {tuple(t.stride())}): pass {name}.contiguous()")


def require_gqa_heads(q, k, v) -> int:
    """GROUP = Hq / Hkv, or a ValueError with a sentence."""
    B, Hq, _, D = q.shape
    if k.shape != v.shape:
        raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)}: K and V must have the same shape")
    if k.shape[0] != B or k.shape[3] != D:
        raise ValueError(f"q {tuple(q.shape)}, k {tuple(k.shape)}: K and V must match Q in batch and head dim")
    Hkv = k.shape[1]
    if Hkv < 1 or Hq % Hkv:
        raise ValueError(f"{Hq} query heads over {Hkv} KV heads: each KV head must serve the same whole number of "
                         f"query heads, so Hq must be a multiple of Hkv ({Hq} is not a multiple of {Hkv})")
    if D not in HEAD_DIMS:
        raise ValueError(f"head dim {D}: these kernels are built for {' or '.join(map(str, HEAD_DIMS))}")
    return Hq // Hkv


def prefill_prepared(q, k, v, causal: bool = True, out=None, sm_scale: float | None = None,
                     config: dict | None = None):
    """One launch of the GQA prefill on Q (B, Hq, Sq, D) and K, V (B, Hkv, Sk, D), checked and its descriptors built
    once: (a function of no argument that launches it, ``out``)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    cfg = config or PREFILL_CONFIG
    require_bf16_4d(q=q, k=k, v=v)
    group = require_gqa_heads(q, k, v)
    B, Hq, Sq, D = q.shape
    Sk = k.shape[2]
    if Sq < 1 or Sk < 1:
        raise ValueError(f"Sq = {Sq}, Sk = {Sk}: attention needs at least one query and one key")
    out = torch.empty_like(q) if out is None else out
    if out.shape != q.shape or out.dtype != torch.bfloat16 or not out.is_contiguous():
        raise ValueError(f"out is {tuple(out.shape)} {out.dtype}: it must be a contiguous bfloat16 tensor of Q's shape "
                         f"{tuple(q.shape)} (or None, for a new one)")
    require_separate_output(out, "out", q=q, k=k, v=v)
    require_hopper(q)
    sm_scale = 1 / math.sqrt(D) if sm_scale is None else sm_scale

    def desc(t, rows):
        return TensorDescriptor.from_tensor(t.view(-1, D), [rows, D],
                                            gl.NVMMASharedLayout.get_default_for([rows, D], gl.bfloat16))
    grid = (triton.cdiv(Sq, cfg["BLOCK_M"]), B * Hq)
    args = (desc(q, cfg["BLOCK_M"]), desc(k, cfg["BLOCK_N"]), desc(v, cfg["BLOCK_N"]), out, Sq, Sk, sm_scale * LOG2E)
    kwargs = {**prefill_constexprs(cfg, D, causal, Hq, group), "num_warps": cfg["num_warps"]}

    def launch():
        gqa_prefill_kernel[grid](*args, **kwargs)
    return launch, out


def gqa_attention(q, k, v, causal: bool = True, out=None, sm_scale: float | None = None, config: dict | None = None):
    """softmax(Q·Kᵀ·sm_scale)·V with query head h on KV head h // (Hq / Hkv) (causal as PyTorch's is_causal)."""
    launch, out = prefill_prepared(q, k, v, causal, out, sm_scale, config)
    launch()
    return out


# -- 2. Decode: the keys split across programs, the partials combined in a fixed order --------------------------------
#
# q (B, Hq, 1, D); the caches K, V (B, Hkv, L, D), of which sequence b uses its first seq_lens[b] keys. Query head
# b·Hq + h is row b·Hq + h of Q's (B·Hq, D) view; the GROUP query heads of KV head kv = b·Hkv + j are rows
# kv·GROUP + r, since b·Hq + j·GROUP + r = (b·Hkv + j)·GROUP + r.

@gluon.jit
def load_block(k_desc, v_desc, k_ring, v_ring, ready, row0, j, STAGES: gl.constexpr):
    """Block j of this split's keys (cache rows row0 + j·BLOCK_N on) into slot j % STAGES, K and V on the slot's one
    barrier. Rows past the cache's end come as zeros (TMA); rows past the sequence are masked (mask_keys)."""
    BLOCK_N: gl.constexpr = k_desc.block_shape[0]
    slot = j % STAGES
    mbarrier.expect(ready.index(slot), k_desc.block_type.nbytes + v_desc.block_type.nbytes)
    tma.async_load(k_desc, [row0 + j * BLOCK_N, 0], ready.index(slot), k_ring.index(slot))
    tma.async_load(v_desc, [row0 + j * BLOCK_N, 0], ready.index(slot), v_ring.index(slot))


@gluon.jit
def load_queries(q_ptr, kv_head, GROUP: gl.constexpr, QROWS: gl.constexpr, HEAD_DIM: gl.constexpr,
                 layout: gl.constexpr):
    """The GROUP query rows of KV head ``kv_head``, padded with zero rows to the QROWS rows of mma.sync."""
    rows = gl.arange(0, QROWS, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, layout))
    ptrs = q_ptr + (kv_head * GROUP + rows)[:, None] * HEAD_DIM + cols[None, :]
    return gl.load(ptrs, mask=(rows < GROUP)[:, None], other=0.0)


@gluon.jit
def mask_keys(s, n0, stop, s_layout: gl.constexpr):
    """−inf for the keys of the block at n0 at or past ``stop`` (the split's end or the sequence's, whichever comes
    first: the cache holds other rows there, the next head's keys or stale ones)."""
    BLOCK_N: gl.constexpr = s.shape[1]
    cols = n0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    return gl.where((cols < stop)[None, :], s, float("-inf"))


@gluon.jit
def store_partial(o, m_i, l_i, part_o_ptr, part_m_ptr, part_l_ptr, index, GROUP: gl.constexpr,
                  mma_layout: gl.constexpr):
    """This split's unnormalized O (GROUP × HEAD_DIM), m and l (GROUP each) in fp32 at place ``index`` =
    kv_head·splits + split of the scratch; the padding rows are not stored."""
    QROWS: gl.constexpr = o.shape[0]
    HEAD_DIM: gl.constexpr = o.shape[1]
    rows = gl.arange(0, QROWS, layout=gl.SliceLayout(1, mma_layout))
    cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, mma_layout))
    gl.store(part_o_ptr + (index * GROUP + rows)[:, None] * HEAD_DIM + cols[None, :], o,
             mask=(rows < GROUP)[:, None])
    gl.store(part_m_ptr + index * GROUP + rows, m_i, mask=rows < GROUP)
    gl.store(part_l_ptr + index * GROUP + rows, l_i, mask=rows < GROUP)


@gluon.jit
def combine_splits(part_o_ptr, part_m_ptr, part_l_ptr, o_ptr, kv_head, used, splits, GROUP: gl.constexpr,
                   GROUP_P2: gl.constexpr, HEAD_DIM: gl.constexpr, io_layout: gl.constexpr):
    """O of KV head ``kv_head``'s GROUP query heads from its first ``used`` splits (those that held keys): m the
    largest m_s, then O = Σ 2^(m_s − m)·O_s / Σ 2^(m_s − m)·l_s, the splits added in order 0, 1, …, used − 1 whichever
    program runs this. The loads are .cg (from L2): the other programs' partials were never in this SM's L1.

    Both loops go UNROLL splits at a time: the UNROLL loads of a step do not depend on one another, so they are in
    flight together, where a loop of one split a trip waits for each load (an L2 round trip) before it issues the
    next. A split past ``used`` loads nothing and weighs 0: the sums are still added in split order."""
    UNROLL: gl.constexpr = 8
    rows = gl.arange(0, GROUP_P2, layout=gl.SliceLayout(1, io_layout))
    cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, io_layout))
    valid = rows < GROUP
    first = kv_head * splits
    m = gl.full([GROUP_P2], float("-inf"), gl.float32, layout=gl.SliceLayout(1, io_layout))
    for t0 in range(0, used, UNROLL):
        for u in gl.static_range(UNROLL):
            live = t0 + u < used
            m_t = gl.load(part_m_ptr + (first + t0 + u) * GROUP + rows, mask=valid & live, other=0.0,
                          cache_modifier=".cg")
            m = gl.maximum(m, gl.where(live, m_t, float("-inf")))
    acc = gl.zeros([GROUP_P2, HEAD_DIM], gl.float32, layout=io_layout)
    l_sum = gl.zeros([GROUP_P2], gl.float32, layout=gl.SliceLayout(1, io_layout))
    for t0 in range(0, used, UNROLL):
        for u in gl.static_range(UNROLL):
            t = t0 + u
            in_use = t < used
            m_t = gl.load(part_m_ptr + (first + t) * GROUP + rows, mask=valid & in_use, other=0.0,
                          cache_modifier=".cg")
            l_t = gl.load(part_l_ptr + (first + t) * GROUP + rows, mask=valid & in_use, other=0.0,
                          cache_modifier=".cg")
            o_t = gl.load(part_o_ptr + ((first + t) * GROUP + rows)[:, None] * HEAD_DIM + cols[None, :],
                          mask=(valid & in_use)[:, None], other=0.0, cache_modifier=".cg")
            ### BEGIN SOLUTION: split t's sums brought to the common maximum (weight 0 past used), added to acc, l_sum
            w = gl.where(in_use, gl.exp2(m_t - m), 0.0)
            acc = acc + w[:, None] * o_t
            l_sum = l_sum + w * l_t
            ### END SOLUTION
    out = acc / l_sum[:, None]
    # O rounded once, to O's own type (bf16; fp32 for a check that reads every bit of the sums).
    gl.store(o_ptr + (kv_head * GROUP + rows)[:, None] * HEAD_DIM + cols[None, :], out.to(o_ptr.dtype.element_ty),
             mask=valid[:, None])


@gluon.jit(do_not_specialize=["H_KV", "L", "chunk", "splits"])
def decode_kernel(q_ptr, k_desc, v_desc, o_ptr, seq_lens_ptr, part_o_ptr, part_m_ptr, part_l_ptr, arrivals_ptr, H_KV,
                  L, chunk, splits, qk_scale, GROUP: gl.constexpr, GROUP_P2: gl.constexpr, QROWS: gl.constexpr,
                  STAGES: gl.constexpr, mma_layout: gl.constexpr, io_layout: gl.constexpr):
    """One program per (split, b·H_KV + h): keys [split·chunk, (split + 1)·chunk) of sequence b (its first
    seq_lens[b] count), the GROUP query heads of KV head h, K and V through a ring of STAGES slots; its partial to the
    scratch, then lesson 32's split-K counter: the last of the KV head's ``splits`` programs to arrive combines them
    (combine_splits) and resets the counter for the next call."""
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
    for i in gl.static_range(STAGES):               # the ring filled first: STAGES blocks in flight
        if i < n_blocks:
            load_block(k_desc, v_desc, k_ring, v_ring, ready, row0, i, STAGES)

    k_operand: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=mma_layout, k_width=2)
    q = load_queries(q_ptr, kv_head, GROUP, QROWS, HEAD_DIM,
                     gl.DotOperandLayout(operand_index=0, parent=mma_layout, k_width=2))
    m_i = gl.full([QROWS], float("-inf"), gl.float32, layout=gl.SliceLayout(1, mma_layout))
    l_i = gl.zeros([QROWS], gl.float32, layout=gl.SliceLayout(1, mma_layout))
    o = gl.zeros([QROWS, HEAD_DIM], gl.float32, layout=mma_layout)
    for j in range(n_blocks):
        slot = j % STAGES
        mbarrier.wait(ready.index(slot), (j // STAGES) & 1)
        k_t = k_ring.index(slot).permute((1, 0)).load(k_operand)
        s = mma_v2(q, k_t, gl.zeros([QROWS, BLOCK_N], gl.float32, mma_layout))
        s = mask_keys(s, start + j * BLOCK_N, stop, mma_layout)
        p, o, m_i, l_i = online_softmax(s, m_i, l_i, o, qk_scale, mma_layout)
        o = mma_v2(p, v_ring.index(slot).load(k_operand), o)
        # K and V of the slot are in registers now: the slot may take block j + STAGES.
        if j + STAGES < n_blocks:
            load_block(k_desc, v_desc, k_ring, v_ring, ready, row0, j + STAGES, STAGES)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(i))

    if n_blocks > 0:
        store_partial(o, m_i, l_i, part_o_ptr, part_m_ptr, part_l_ptr, kv_head * splits + split, GROUP, mma_layout)
    # Every thread's part of the partial stored before one thread announces it (the barrier, then the atomic's
    # release); the last program's acquire makes every other program's partial visible to it.
    gl.barrier()
    arrived = gl.atomic_add(arrivals_ptr + kv_head, 1, sem="acq_rel", scope="gpu")
    if arrived == splits - 1:
        used = gl.minimum(gl.cdiv(seq_len, chunk), splits)
        combine_splits(part_o_ptr, part_m_ptr, part_l_ptr, o_ptr, kv_head, used, splits, GROUP, GROUP_P2, HEAD_DIM,
                       io_layout)
        gl.atomic_xchg(arrivals_ptr + kv_head, 0, sem="relaxed", scope="gpu")


# Keys in blocks of 64, three slots of K and V (96 KiB at head dim 128: two programs fit an SM), 4 warps side by side
# along the keys (S) and the head dim (O); mma.sync's 16 rows hold up to 16 query heads a KV head.
DECODE_CONFIG = {"BLOCK_N": 64, "STAGES": 3, "num_warps": 4}
QROWS = 16
PROGRAMS_PER_SM = 2         # what fits at DECODE_CONFIG: 2 × 96 KiB of ring at head dim 128, 228 KiB an SM
SPLIT_PROGRAMS_PER_SM = 1   # what the split rule aims at: one program an SM (section 5 says why)


def decode_constexprs(group: int, cfg: dict) -> dict:
    nw = cfg["num_warps"]
    return {"GROUP": group, "GROUP_P2": 1 << (group - 1).bit_length(), "QROWS": QROWS, "STAGES": cfg["STAGES"],
            "mma_layout": gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[1, nw], instr_shape=[16, 8]),
            "io_layout": gl.BlockedLayout([1, 4], [1, 32], [nw, 1], [1, 0])}


def split_rule(batch: int, kv_heads: int, L: int, block_n: int, sms: int = SMS,
               per_sm: int = SPLIT_PROGRAMS_PER_SM, min_blocks: int = 2) -> tuple[int, int]:
    """(splits, chunk): as many splits as give each SM ``per_sm`` programs once, with batch·kv_heads programs a split
    (more would start a second, partial round; fewer leave SMs idle), none shorter than ``min_blocks`` key blocks;
    the chunk a whole number of key blocks, so that only a sequence's last block is partial."""
    heads = batch * kv_heads
    wanted = max(1, min((sms * per_sm) // heads, -(-L // (min_blocks * block_n))))
    chunk = -(-(-(-L // wanted)) // block_n) * block_n
    return -(-L // chunk), chunk


class DecodePlan:
    """One decode launch worked out once: the checks, the split rule, the descriptors, the scratch (the partials in
    fp32, one counter a KV head, at 0 between calls: the last program of each KV head resets its own). The kernel
    reads seq_lens at each launch, so a plan serves every step of a generation while the lengths grow in place; they
    are checked once, here."""

    def __init__(self, q, k_cache, v_cache, seq_lens, out=None, splits: int | None = None,
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
        if group > QROWS:
            raise ValueError(f"{group} query heads a KV head: the decode's products hold at most {QROWS}")
        if seq_lens.dtype != torch.int32 or tuple(seq_lens.shape) != (B,) or seq_lens.device != q.device:
            raise ValueError(f"seq_lens is {seq_lens.dtype} of shape {tuple(seq_lens.shape)} on {seq_lens.device}: "
                             f"one int32 length a sequence ({B}) on q's device expected")
        low, high = int(seq_lens.min()), int(seq_lens.max())
        if low < 1 or high > L:
            raise ValueError(f"seq_lens runs from {low} to {high}: each sequence needs at least one key and at most "
                             f"the cache's {L}")
        out = torch.empty_like(q) if out is None else out
        if out.shape != q.shape or out.dtype not in (torch.bfloat16, torch.float32) or not out.is_contiguous():
            raise ValueError(f"out is {out.dtype} {tuple(out.shape)}: a contiguous bf16 or fp32 tensor of q's shape "
                             f"{tuple(q.shape)} expected")
        require_separate_output(out, "out", q=q, k_cache=k_cache, v_cache=v_cache, seq_lens=seq_lens)
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
        self.part_o = torch.empty(places * D, dtype=torch.float32, device=q.device)
        self.part_m = torch.empty(places, dtype=torch.float32, device=q.device)
        self.part_l = torch.empty(places, dtype=torch.float32, device=q.device)
        self.arrivals = torch.zeros(B * Hkv, dtype=torch.int32, device=q.device)
        sm_scale = 1 / math.sqrt(D) if sm_scale is None else sm_scale
        self.args = (q, self.k_desc, self.v_desc, out, seq_lens, self.part_o, self.part_m, self.part_l,
                     self.arrivals, Hkv, L, self.chunk, self.splits, sm_scale * LOG2E)
        self.kwargs = {**decode_constexprs(group, cfg), "num_warps": cfg["num_warps"]}

    def launch(self):
        decode_kernel[self.grid](*self.args, **self.kwargs)
        return self.out


def decode_attention(q, k_cache, v_cache, seq_lens, out=None, splits: int | None = None, config: dict | None = None):
    """softmax(q·Kᵀ/√D)·V over each sequence's first seq_lens[b] keys of the cache, query head h on KV head
    h // (Hq / Hkv): O (B, Hq, 1, D)."""
    return DecodePlan(q, k_cache, v_cache, seq_lens, out, splits, config).launch()


# -- 3. In the block ---------------------------------------------------------------------------------------------------

class DecodingBlock:
    """Lesson 32's block (gluon_course.measure.linear.Block: its weights, norms and MLP as they are) generating one
    token a sequence over a KV cache of ``capacity`` positions: ``prefill`` takes the prompts (all of one length) and
    fills the cache, attention by gqa_attention; each ``step`` appends one token's K and V and attends to the cache by
    the decode, through one DecodePlan made at the first step."""

    def __init__(self, block, batch: int, capacity: int, device="cuda"):
        self.block, self.batch = block, batch
        shape = (batch, block.kv_heads, capacity, block.head_dim)
        self.k_cache = torch.zeros(shape, dtype=torch.bfloat16, device=device)
        self.v_cache = torch.zeros(shape, dtype=torch.bfloat16, device=device)
        self.seq_lens = torch.zeros(batch, dtype=torch.int32, device=device)
        self.q = torch.zeros(batch, block.heads, 1, block.head_dim, dtype=torch.bfloat16, device=device)
        self.plan = None

    def _projections(self, x):
        b, (B, T, _) = self.block, x.shape
        h = b.norm1(x)
        q = b.q(h).view(B, T, b.heads, b.head_dim).transpose(1, 2)
        k = b.k(h).view(B, T, b.kv_heads, b.head_dim).transpose(1, 2)
        v = b.v(h).view(B, T, b.kv_heads, b.head_dim).transpose(1, 2)
        return q, k, v

    def _rest(self, x, att):
        b, (B, T, H) = self.block, x.shape
        x = x + b.o(att.transpose(1, 2).reshape(B, T, H))
        h = b.norm2(x)
        return x + b.down(torch.nn.functional.silu(b.gate(h)) * b.up(h))

    def prefill(self, x):                       # x: (batch, tokens, hidden), the prompts
        T = x.shape[1]
        q, k, v = self._projections(x)
        self.k_cache[:, :, :T] = k
        self.v_cache[:, :, :T] = v
        self.seq_lens.fill_(T)
        return self._rest(x, gqa_attention(q.contiguous(), k.contiguous(), v.contiguous(), causal=True))

    def step(self, x):                          # x: (batch, 1, hidden), one new token a sequence
        q, k, v = self._projections(x)
        rows = torch.arange(self.batch, device=x.device)
        at = self.seq_lens.long()               # each sequence's next free position
        self.k_cache[rows, :, at] = k[:, :, 0]
        self.v_cache[rows, :, at] = v[:, :, 0]
        self.seq_lens += 1
        self.q.copy_(q)
        if self.plan is None:
            self.plan = DecodePlan(self.q, self.k_cache, self.v_cache, self.seq_lens)
        return self._rest(x, self.plan.launch())
