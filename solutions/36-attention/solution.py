"""Lesson 36 · Attention v0 to v2: the online softmax on tensor cores.

Attention is O = softmax(Q·Kᵀ · sm_scale) · V for each head: two matrix products with a row softmax between them.
Written as three kernels (S = Q·Kᵀ, the softmax, P·V) it writes S and P to memory, Sq × Sk numbers per head, which
at long sequences is far more than Q, K, V and O together. The kernels here never hold a whole row of S: one program
takes a block of BLOCK_M queries and walks the keys in blocks of BLOCK_N, keeping each row's running maximum m, the
running sum l of its exponentials and the running O in fp32 registers (the *online softmax*, ``online_softmax``). A
block whose maximum is larger than the running one rescales l and O by 2^(m_old − m_new) before adding its own.

- ``attention_v0_kernel``: Q's tile copied once by TMA; for each key block, K's and V's tiles copied by TMA into one
  buffer each; S = Q·Kᵀ by wgmma from shared memory; the online softmax in registers; O += P·V by wgmma with P taken
  from registers as the A operand. Synchronous: every copy waited for, every wgmma finished before the next line.
- ``attention_v2_kernel``: the same math, K and V through a ring of STAGES slots filled by a producer warp (lesson
  18's warp specialization), each slot with ready and empty mbarriers for K and for V apart.

Masking (``key_blocks``, ``mask_scores``): blocks of keys that every query of the tile may see run without a mask;
only the last, partial block and, with ``CAUSAL``, the blocks on the diagonal set masked scores to −inf; blocks above
the diagonal are never visited. Causal is PyTorch's ``is_causal``: query i sees keys j ≤ i, counted from the first
query and the first key whatever Sq and Sk.
"""
import math

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

from gluon_course.nvidia.hopper import require_hopper
from gluon_course.validate import require_separate_output

LOG2E = 1.4426950408889634          # log2(e): e^x = 2^(x · log2 e)


# -- The kernels -------------------------------------------------------------------------------------------------------
#
# Q, K, V and O are (batch, heads, S, HEAD_DIM) bf16, contiguous, seen by the kernels as 2-D matrices of
# batch·heads·S rows. A tile that runs past a head's last key holds the next head's keys (or TMA's zeros past the
# tensor): they are masked (−inf). A tile that runs past a head's last query holds rows that are never stored.
# One program per (block of BLOCK_M queries, batch·head).

@gluon.jit
def key_blocks(m0, Sk, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
    """The key blocks a query tile at row ``m0`` visits: blocks [0, n_full) need no mask (every key valid for every
    query of the tile), blocks [n_full, n_all) do (the last, partial block of keys; with CAUSAL the diagonal blocks).
    Causal is torch's ``is_causal``: query i sees keys j ≤ i (aligned at the top-left, whatever Sq and Sk), so every
    query sees key 0 and no row is ever empty. BLOCK_M is a multiple of BLOCK_N, so m0 is a multiple of BLOCK_N."""
    if CAUSAL:
        n_full = gl.minimum(m0 // BLOCK_N, Sk // BLOCK_N)
        n_all = gl.cdiv(gl.minimum(m0 + BLOCK_M, Sk), BLOCK_N)
    else:
        n_full = Sk // BLOCK_N
        n_all = gl.cdiv(Sk, BLOCK_N)
    return n_full, n_all


@gluon.jit
def online_softmax(s, m_i, l_i, o, qk_scale, o_layout: gl.constexpr):
    """One key block's step of the online softmax, in fp32 registers. ``s``: the block's raw scores Q·Kᵀ (−inf where
    masked); ``m_i``: the running maximum of the scaled scores (in log2 units), ``l_i``: the running sum of
    2^(score − m_i), ``o``: the running Σ p·V. Returns P (bf16, in the layout wgmma reads its A operand from
    registers), O rescaled to the new maximum, and the new m and l.

    ``qk_scale`` = sm_scale·log2(e): e^(x·sm_scale) = 2^(x·qk_scale), so one multiply-add per score
    (x·qk_scale − m) feeds exp2 (MUFU.EX2) directly."""
    ### BEGIN SOLUTION: the new running maximum, the old sums' rescale, P, the new running sum, O rescaled
    m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
    alpha = gl.exp2(m_i - m_new)                       # 2^(m_old − m_new) ≤ 1: what the old sums are worth now
    p = gl.exp2(s * qk_scale - m_new[:, None])
    l_new = l_i * alpha + gl.sum(p, axis=1)
    o = o * gl.convert_layout(alpha, gl.SliceLayout(1, o_layout))[:, None]
    ### END SOLUTION
    p_op = gl.convert_layout(p.to(gl.bfloat16), gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2))
    return p_op, o, m_new, l_new


@gluon.jit
def mask_scores(s, m0, n0, Sk, CAUSAL: gl.constexpr, s_layout: gl.constexpr):
    """S with −inf where the key is past the last one (n ≥ Sk) or, with CAUSAL, after the query (n > m)."""
    BLOCK_M: gl.constexpr = s.shape[0]
    BLOCK_N: gl.constexpr = s.shape[1]
    ### BEGIN SOLUTION: −inf for keys past Sk and, with CAUSAL, for keys after the query
    rows = m0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, s_layout))
    cols = n0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    valid = cols[None, :] < Sk
    if CAUSAL:
        valid = valid & (cols[None, :] <= rows[:, None])
    return gl.where(valid, s, float("-inf"))
    ### END SOLUTION


@gluon.jit
def store_output(o, l_i, o_ptr, row0, m0, Sq, o_layout: gl.constexpr):
    """O / l rounded to bf16 and stored with a mask: rows m0 + r < Sq of this head only (the tile's other rows
    belong to the next head, or to nothing)."""
    BLOCK_M: gl.constexpr = o.shape[0]
    HEAD_DIM: gl.constexpr = o.shape[1]
    o = o / gl.convert_layout(l_i, gl.SliceLayout(1, o_layout))[:, None]
    rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, o_layout))
    cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, o_layout))
    ptrs = o_ptr + (row0 + rows)[:, None] * HEAD_DIM + cols[None, :]
    gl.store(ptrs, o.to(gl.bfloat16), mask=((m0 + rows) < Sq)[:, None])


@gluon.jit
def v0_key_loop(q_smem, k_smem, v_smem, bars, k_desc, v_desc, o, m_i, l_i, qk_scale, bh, m0, Sk, first, last,
                MASKED: gl.constexpr, CAUSAL: gl.constexpr, s_layout: gl.constexpr, o_layout: gl.constexpr):
    """v0's key blocks ``first`` to ``last``: each block's K and V copied by TMA into the one buffer each has (K's
    barrier is bars[1], V's bars[2]; block j completes their phase j, so the wait's parity is j & 1), S = Q·Kᵀ by
    wgmma from shared memory, masked only where ``MASKED``, the online softmax, O += P·V by wgmma with P from
    registers. Synchronous: a wgmma without is_async has finished reading K or V when the next line runs, so the next
    block's copies may overwrite them."""
    BLOCK_M: gl.constexpr = q_smem.shape[0]
    BLOCK_N: gl.constexpr = k_smem.shape[0]
    for j in range(first, last):
        n0 = j * BLOCK_N
        mbarrier.expect(bars.index(1), k_desc.block_type.nbytes)
        tma.async_load(k_desc, [bh * Sk + n0, 0], bars.index(1), k_smem)
        mbarrier.expect(bars.index(2), v_desc.block_type.nbytes)
        tma.async_load(v_desc, [bh * Sk + n0, 0], bars.index(2), v_smem)
        mbarrier.wait(bars.index(1), j & 1)
        s = warpgroup_mma(q_smem, k_smem.permute((1, 0)), gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout),
                          use_acc=False)
        if MASKED:
            s = mask_scores(s, m0, n0, Sk, CAUSAL, s_layout)
        p, o, m_i, l_i = online_softmax(s, m_i, l_i, o, qk_scale, o_layout)
        mbarrier.wait(bars.index(2), j & 1)
        o = warpgroup_mma(p, v_smem, o)
    return o, m_i, l_i


@gluon.jit
def attention_v0_kernel(q_desc, k_desc, v_desc, o_ptr, Sq, Sk, qk_scale, CAUSAL: gl.constexpr,
                        s_layout: gl.constexpr, o_layout: gl.constexpr):
    """v0: one program per (query tile, batch·head); Q's tile copied once, then the unmasked key blocks, then the
    masked ones (the partial last block; with CAUSAL the diagonal ones), one at a time (v0_key_loop)."""
    BLOCK_M: gl.constexpr = q_desc.block_shape[0]
    HEAD_DIM: gl.constexpr = q_desc.block_shape[1]
    BLOCK_N: gl.constexpr = k_desc.block_shape[0]
    m0 = gl.program_id(0) * BLOCK_M
    bh = gl.program_id(1)

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
    o, m_i, l_i = v0_key_loop(q_smem, k_smem, v_smem, bars, k_desc, v_desc, o, m_i, l_i, qk_scale, bh, m0, Sk, 0,
                              n_full, False, CAUSAL, s_layout, o_layout)
    o, m_i, l_i = v0_key_loop(q_smem, k_smem, v_smem, bars, k_desc, v_desc, o, m_i, l_i, qk_scale, bh, m0, Sk,
                              n_full, n_all, True, CAUSAL, s_layout, o_layout)
    for i in gl.static_range(3):
        mbarrier.invalidate(bars.index(i))
    store_output(o, l_i, o_ptr, bh * Sq + m0, m0, Sq, o_layout)


@gluon.jit
def v2_load_partition(q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty,
                      kv_bh, Sq, Sk, CAUSAL: gl.constexpr, STAGES: gl.constexpr):
    """v2's producer (one warp): Q's tile once, then each key block's K and V into ring slot j % STAGES, each on its
    own barrier, so that S = Q·Kᵀ may start before V has landed. A slot is refilled once the consumers have released
    it (its ``empty`` barrier; the first trip's wait, parity 1 on a fresh barrier, returns at once). K and V come
    from head ``kv_bh`` of their batch·heads rows: the program's own head here, the KV head a group of query heads
    shares in lesson 38."""
    BLOCK_M: gl.constexpr = q_desc.block_shape[0]
    BLOCK_N: gl.constexpr = k_desc.block_shape[0]
    m0 = gl.program_id(0) * BLOCK_M
    bh = gl.program_id(1)
    mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    tma.async_load(q_desc, [bh * Sq + m0, 0], q_bar, q_smem)
    n_full, n_all = key_blocks(m0, Sk, BLOCK_M, BLOCK_N, CAUSAL)
    for j in range(n_all):
        slot = j % STAGES
        free = ((j // STAGES) & 1) ^ 1
        mbarrier.wait(k_empty.index(slot), free)
        mbarrier.expect(k_ready.index(slot), k_desc.block_type.nbytes)
        tma.async_load(k_desc, [kv_bh * Sk + j * BLOCK_N, 0], k_ready.index(slot), k_ring.index(slot))
        mbarrier.wait(v_empty.index(slot), free)
        mbarrier.expect(v_ready.index(slot), v_desc.block_type.nbytes)
        tma.async_load(v_desc, [kv_bh * Sk + j * BLOCK_N, 0], v_ready.index(slot), v_ring.index(slot))


@gluon.jit
def v2_key_loop(q_smem, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, o, m_i, l_i, qk_scale, m0, Sk, first,
                last, STAGES: gl.constexpr, MASKED: gl.constexpr, CAUSAL: gl.constexpr, s_layout: gl.constexpr,
                o_layout: gl.constexpr):
    """v2's consumers over key blocks ``first`` to ``last``: wait for K's slot, S = Q·Kᵀ, retire that wgmma, release
    K's slot; the softmax; wait for V's slot, O += P·V, retire, release V's slot. A slot goes back to the producer
    only after the wgmma that reads it has retired (warpgroup_mma_wait): an arrive before that lets TMA overwrite a
    tile the tensor cores may still be reading."""
    BLOCK_M: gl.constexpr = q_smem.shape[0]
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    for j in range(first, last):
        slot = j % STAGES
        ready = (j // STAGES) & 1
        mbarrier.wait(k_ready.index(slot), ready)
        k_t = k_ring.index(slot).permute((1, 0))
        s = warpgroup_mma(q_smem, k_t, gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout), use_acc=False,
                          is_async=True)
        s, _, _ = warpgroup_mma_wait(0, deps=(s, q_smem, k_t))
        mbarrier.arrive(k_empty.index(slot))
        if MASKED:
            s = mask_scores(s, m0, j * BLOCK_N, Sk, CAUSAL, s_layout)
        p, o, m_i, l_i = online_softmax(s, m_i, l_i, o, qk_scale, o_layout)
        mbarrier.wait(v_ready.index(slot), ready)
        o = warpgroup_mma(p, v_ring.index(slot), o, is_async=True)
        o, _, _ = warpgroup_mma_wait(0, deps=(o, p, v_ring.index(slot)))
        mbarrier.arrive(v_empty.index(slot))
    return o, m_i, l_i


@gluon.jit
def v2_mma_partition(q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty, o_ptr, Sq, Sk, qk_scale,
                     CAUSAL: gl.constexpr, STAGES: gl.constexpr, s_layout: gl.constexpr, o_layout: gl.constexpr):
    """v2's consumers (the default partition, num_warps warps): v0's loops on the ring's slots, then O / l stored."""
    BLOCK_M: gl.constexpr = q_smem.shape[0]
    HEAD_DIM: gl.constexpr = q_smem.shape[1]
    BLOCK_N: gl.constexpr = k_ring.shape[1]
    m0 = gl.program_id(0) * BLOCK_M
    bh = gl.program_id(1)
    m_i = gl.full([BLOCK_M], float("-inf"), gl.float32, layout=gl.SliceLayout(1, s_layout))
    l_i = gl.zeros([BLOCK_M], gl.float32, layout=gl.SliceLayout(1, s_layout))
    o = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, layout=o_layout)
    n_full, n_all = key_blocks(m0, Sk, BLOCK_M, BLOCK_N, CAUSAL)
    mbarrier.wait(q_bar, 0)
    o, m_i, l_i = v2_key_loop(q_smem, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, o, m_i, l_i, qk_scale, m0,
                              Sk, 0, n_full, STAGES, False, CAUSAL, s_layout, o_layout)
    o, m_i, l_i = v2_key_loop(q_smem, k_ring, v_ring, k_ready, k_empty, v_ready, v_empty, o, m_i, l_i, qk_scale, m0,
                              Sk, n_full, n_all, STAGES, True, CAUSAL, s_layout, o_layout)
    store_output(o, l_i, o_ptr, bh * Sq + m0, m0, Sq, o_layout)


@gluon.jit
def attention_v2_kernel(q_desc, k_desc, v_desc, o_ptr, Sq, Sk, qk_scale, CAUSAL: gl.constexpr,
                        s_layout: gl.constexpr, o_layout: gl.constexpr, STAGES: gl.constexpr,
                        LOAD_REGS: gl.constexpr):
    """v2: v0's math, K and V through a ring of STAGES slots filled by a producer warp (gl.warp_specialize), with
    ready and empty mbarriers per slot and per operand."""
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
        (v2_mma_partition, (q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready, v_empty, o_ptr, Sq, Sk,
                            qk_scale, CAUSAL, STAGES, s_layout, o_layout)),
        (v2_load_partition, (q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready,
                             v_empty, gl.program_id(1), Sq, Sk, CAUSAL, STAGES)),
    ], [1], [LOAD_REGS])
    mbarrier.invalidate(q_bar)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(k_ready.index(i))
        mbarrier.invalidate(k_empty.index(i))
        mbarrier.invalidate(v_ready.index(i))
        mbarrier.invalidate(v_empty.index(i))


# -- Configurations and the launcher ----------------------------------------------------------------------------------

# 128 queries a program over two consumer warpgroups (64 rows each, wgmma's height), keys in blocks of BLOCK_N. v2's
# ring: 2 slots of K and V at BLOCK_N 128 (Q's 32 KiB and 2 × 64 KiB at head dim 128).
CONFIGS = {
    "v0": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8},
    "v2": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "STAGES": 2, "LOAD_REGS": 40},
}
HEAD_DIMS = (64, 128)


def wgmma_layout(num_warps: int, n: int):
    """wgmma's accumulator layout: warps stacked along M (a warpgroup's 4 warps take 64 rows), n columns."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, n, 16])


def constexprs(version: str, cfg: dict, head_dim: int, causal: bool) -> dict:
    """The kernel's constexprs besides its descriptors: S's accumulator is BLOCK_N wide, O's HEAD_DIM."""
    ce = {"CAUSAL": bool(causal), "s_layout": wgmma_layout(cfg["num_warps"], cfg["BLOCK_N"]),
          "o_layout": wgmma_layout(cfg["num_warps"], head_dim)}
    if version == "v2":
        ce.update({"STAGES": cfg["STAGES"], "LOAD_REGS": cfg["LOAD_REGS"]})
    return ce


KERNELS = {"v0": attention_v0_kernel, "v2": attention_v2_kernel}


def require_attention_args(q, k, v, cfg: dict) -> None:
    """A ValueError with a sentence for what the kernels cannot take."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype != torch.bfloat16:
            raise ValueError(f"{name} is {t.dtype}: these kernels take bfloat16 Q, K and V (convert with "
                             ".to(torch.bfloat16))")
        if t.dim() != 4:
            raise ValueError(f"{name} has shape {tuple(t.shape)}: (batch, heads, sequence, head dim) expected")
        if not t.is_contiguous():
            raise ValueError(f"{name} is not contiguous (strides {tuple(t.stride())}): pass {name}.contiguous()")
    B, H, Sq, D = q.shape
    if k.shape != v.shape or k.shape[:2] != (B, H) or k.shape[3] != D:
        raise ValueError(f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: K and V must match each "
                         "other, and Q in batch, heads and head dim (grouped-query heads are lesson 38's)")
    if D not in HEAD_DIMS:
        raise ValueError(f"head dim {D}: these kernels are built for {' or '.join(map(str, HEAD_DIMS))}")
    if k.shape[2] < 1 or Sq < 1:
        raise ValueError(f"Sq = {Sq}, Sk = {k.shape[2]}: attention needs at least one query and one key")
    if cfg["BLOCK_M"] % cfg["BLOCK_N"]:
        raise ValueError(f"BLOCK_M {cfg['BLOCK_M']} is not a multiple of BLOCK_N {cfg['BLOCK_N']}: key_blocks "
                         "counts the diagonal blocks on that assumption")


def prepared(q, k, v, causal: bool = False, version: str = "v2", out=None, sm_scale: float | None = None,
             config: dict | None = None):
    """One launch of ``version`` (v0 or v2, at CONFIGS[version] or ``config``) on these tensors, checked and its
    descriptors built once: (a function of no argument that launches it, ``out``)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    cfg = config or CONFIGS[version]
    require_attention_args(q, k, v, cfg)
    require_hopper(q)
    B, H, Sq, D = q.shape
    Sk = k.shape[2]
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
    # qk_scale folds log2(e) into sm_scale: the kernels' exponentials are exp2 (one MUFU.EX2 each).
    args = (desc(q, cfg["BLOCK_M"]), desc(k, cfg["BLOCK_N"]), desc(v, cfg["BLOCK_N"]), out, Sq, Sk, sm_scale * LOG2E)
    kwargs = {**constexprs(version, cfg, D, causal), "num_warps": cfg["num_warps"]}
    kernel = KERNELS[version]

    def launch():
        kernel[grid](*args, **kwargs)
    return launch, out


def attention(q, k, v, causal: bool = False, version: str = "v2", out=None, sm_scale: float | None = None,
              config: dict | None = None):
    """softmax(Q·Kᵀ·sm_scale)·V (causal as PyTorch's is_causal) by ``version``; returns ``out`` (new by default)."""
    launch, out = prepared(q, k, v, causal, version, out, sm_scale, config)
    launch()
    return out
