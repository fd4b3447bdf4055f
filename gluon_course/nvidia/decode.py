"""Lesson 38's checks and figures: attention in a model, grouped-query (GQA) prefill and split-KV decode, on Hopper.

Without a GPU:

- the host model, through the lesson's own launchers on CPU tensors (``model.launcher.ModelGPU``, what torch.empty
  returns poisoned): the GQA prefill at odd shapes and ratios, causal and not; the decode, its ring as deep as the
  launcher's, at odd lengths (a single key, lengths that are not multiples of the key block, one to many splits),
  GQA ratios 1, 3, 4 and 8, scores past fp32's exp2 range, two calls on one plan (the counters at 0 before and
  after), the cache past each length holding stale rows that would dominate the softmax if read; the combine's bits
  with the programs run in launch order and in reverse; the block's prefill and decode steps on a small block. All
  against fp64 within ``attention.reference``'s bound, O poisoned (NaN) and each element written once;
- the split rule at the issue's decode shapes, and the launchers' refusals (they come before any GPU is touched);
- the compiled code (``decode_facts``): sm_90 SASS of the decode kernel as DecodePlan launches it (its layouts on
  its num_warps; fits two programs an SM, one key loop on TMA, the products on mma.sync, one MUFU.EX2 a score held
  and one a row, every load of the combine from L2), and lesson 36's facts on the GQA prefill kernel.

On a GPU: ``correct`` (odd shapes, poisoned and guarded O, in a child process), ``sanitizer_clean`` and the figures:
``decode_measure`` (against SDPA's backends with enable_gqa, each call in CUDA graphs replayed in turn, and the
cache's bytes over the time as a fraction of the device copy's bandwidth), ``prefill_measure`` and
``block_decode_measure``.
"""
from __future__ import annotations

import json
import math

import numpy as np
import torch

from . import attention

CHILD_LIMIT_S = 300
MODEL_HEAD_DIM = 64
MODEL_SMS = 6
# The prefill in the model at lesson 37's model tile for v4 (128 queries, two consumers of 64, keys in blocks of 32,
# 2 slots). (batch, Hq, Hkv, Sq, Sk): ratio 4 with 2 KV heads, one query and one key, ratio 2 over two sequences with
# tails past every block, Sq ≠ Sk both ways.
PREFILL_MODEL_CFG = attention.FA3_MODEL_CFGS["v4"]
PREFILL_MODEL_SHAPES = ((1, 8, 2, 17, 17), (1, 2, 2, 1, 1), (2, 4, 2, 100, 100), (1, 8, 2, 17, 100),
                        (2, 4, 1, 100, 17))
# Keys in blocks of 16 on 4 warps, the ring as deep as the launcher's (DECODE_CONFIG's STAGES, decode_model_cfg): a
# wait's parity written for another depth shows in the model too.
DECODE_MODEL_CFG = {"BLOCK_N": 16, "STAGES": 2, "num_warps": 4}
# (batch, Hq, Hkv, L, seq_lens), on 6 SMs (12 program slots for split_rule): ratio 4, a sequence at the cache's full
# length in 4 splits of 32 keys (the last 4 keys: a partial block) beside a shorter one (37: two splits of four used);
# ratio 1 with a single key, a full sequence and an odd one; ratio 8 over one KV head, lengths 1 to 100 in one call
# (one split used to all four, whole and partial blocks); ratio 3 (GROUP_P2 = 4 > GROUP: the combine's padding rows),
# 200 keys in 3 splits of 80 (5 blocks: the ring wraps) beside a sequence of 29 (one split used of three).
DECODE_MODEL_SHAPES = ((2, 4, 1, 100, (100, 37)), (3, 2, 2, 50, (1, 50, 23)), (6, 8, 1, 100, (1, 15, 16, 33, 64, 100)),
                       (2, 6, 2, 200, (200, 29)))
# Large scores (attention.LARGE_SCALE on Q and K): the 4 splits' maxima m_s run from −16 to 148 in log2 units, most
# between 50 and 130, so that 2^m_s overflows fp32 (past 2^128) unless the combine subtracts the common maximum, and
# m_s kept in bf16 is off by up to 1/2.
DECODE_LARGE_SHAPE = (1, 4, 1, 100, (100,))
# The combine's bits in two program orders (O kept in fp32): 7 splits of 16 keys (the last 4), so that the last program
# to arrive differs and a sum of three or more terms can change its bits with the order of its additions.
ORDER_SHAPE, ORDER_SPLITS = (1, 8, 2, 100, (100,)), 7


# -- the host model ---------------------------------------------------------------------------------------------------

def gqa_inputs(B, Hq, Hkv, Sq, Sk, D, seed=0, scale: float = 1.0):
    """Q, K, V, normal entries (Q's and K's times ``scale``) rounded to bf16."""
    rng = np.random.default_rng(seed)
    q = attention.bf16(rng.standard_normal((B, Hq, Sq, D)) * scale)
    k = attention.bf16(rng.standard_normal((B, Hkv, Sk, D)) * scale)
    v = attention.bf16(rng.standard_normal((B, Hkv, Sk, D)))
    return q, k, v


def decode_inputs(B, Hq, Hkv, L, seq_lens, D, seed=0, scale: float = 1.0):
    """Q, K, V with the cache past each sequence's length holding stale rows: keys 8× larger (each would take most of
    the softmax if it were read), values of 64."""
    q, k, v = gqa_inputs(B, Hq, Hkv, 1, L, D, seed, scale)
    for b, n in enumerate(seq_lens):
        k[b, :, n:] = attention.bf16(k[b, :, n:] * 8)
        v[b, :, n:] = 64.0
    return q, k, v


def grouped_reference(q, k, v, causal: bool, seq_lens=None):
    """attention.reference (fp64, with its bound) with each KV head repeated for its query heads, sequence b over its
    first seq_lens[b] keys."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    sm_scale = 1 / math.sqrt(q.shape[-1])
    if seq_lens is None:
        return attention.reference(q, k, v, causal, sm_scale)
    parts = [attention.reference(q[b:b + 1], k[b:b + 1, :, :n], v[b:b + 1, :, :n], causal, sm_scale)
             for b, n in enumerate(seq_lens)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def in_model(call, tensors: dict, out, order=None, calls: int = 1):
    """``call()`` (a launcher on CPU tensors) ``calls`` times with the host model in the GPU's place: (O's values as
    fp32 numpy, how often the last call wrote each element), or a sentence (a str), or NotChecked."""
    from ..model import ModelError, ModelUnsupported
    from ..model.launcher import ModelGPU

    with np.errstate(over="ignore", invalid="ignore"), ModelGPU(MODEL_SMS, order=order, poison_empty=True) as gpu:
        for name, t in tensors.items():
            gpu.add(t, name)
        gpu.add(out, "O")
        try:
            for _ in range(calls):
                call()
        except ModelUnsupported as e:
            return attention.not_modelled(e)
        except ModelError as e:
            return str(e)
        writes = gpu.writes(out)
    return out.float().numpy(), writes


def prefill_model_problem(mod, shape, causal: bool):
    B, Hq, Hkv, Sq, Sk = shape
    where = (f"GQA prefill{', causal' if causal else ''}, batch {B}, {Hq} query heads on {Hkv} KV heads, Sq {Sq}, "
             f"Sk {Sk}")
    q, k, v = gqa_inputs(B, Hq, Hkv, Sq, Sk, MODEL_HEAD_DIM)
    tq, tk, tv = (torch.from_numpy(x).to(torch.bfloat16) for x in (q, k, v))
    out = torch.full(tq.shape, float("nan"), dtype=torch.bfloat16)
    got = in_model(lambda: mod.gqa_attention(tq, tk, tv, causal, out=out, config=PREFILL_MODEL_CFG),
                   {"Q": tq, "K": tk, "V": tv}, out)
    if not isinstance(got, tuple):
        return got if not isinstance(got, str) else f"in the host model, {where}: {got}"
    want, bound = grouped_reference(q, k, v, causal)
    problem = attention.compare(got[0], want, bound, got[1])
    return f"in the host model, {where}: {problem}" if problem else None


def decode_model_cfg(mod) -> dict:
    """DECODE_MODEL_CFG with the ring as deep as the lesson's launcher makes it."""
    return {**DECODE_MODEL_CFG, "STAGES": int(mod.DECODE_CONFIG["STAGES"])}


def decode_in_model(mod, shape, out_dtype=torch.bfloat16, splits=None, order=None, calls: int = 2,
                    scale: float = 1.0):
    """The lesson's decode launcher in the host model at ``shape``, ``calls`` times on one plan (its counters carried
    from one call to the next as on a GPU; its scratch from torch.empty poisoned): (O, writes, want, bound, plan), or
    a sentence, or NotChecked."""
    B, Hq, Hkv, L, lens = shape
    q, k, v = decode_inputs(B, Hq, Hkv, L, lens, MODEL_HEAD_DIM, scale=scale)
    tq, tk, tv = (torch.from_numpy(x).to(torch.bfloat16) for x in (q, k, v))
    seq_lens = torch.tensor(lens, dtype=torch.int32)
    out = torch.full(tq.shape, float("nan"), dtype=out_dtype)
    plan = []

    def call():
        from ..model import ModelError

        if not plan:
            plan.append(mod.DecodePlan(tq, tk, tv, seq_lens, out, splits, decode_model_cfg(mod)))
            start = torch.nonzero(plan[0].arrivals).flatten()
            if start.numel():
                raise ModelError(f"before the first call, the counter of KV head {int(start[0])} is "
                                 f"{int(plan[0].arrivals[start[0]])}, not 0: the plan's counters must start at 0 "
                                 "(torch.zeros; torch.empty holds whatever the memory held)")
        plan[0].launch()
        left = torch.nonzero(plan[0].arrivals).flatten()
        if left.numel():
            raise ModelError(f"after a call, the counter of KV head {int(left[0])} is {int(plan[0].arrivals[left[0]])}"
                             ", not 0: the next call would count from there (the last program of the KV head resets "
                             "it)")
    got = in_model(call, {"Q": tq, "K cache": tk, "V cache": tv, "seq_lens": seq_lens}, out, order, calls)
    if not isinstance(got, tuple):
        return got
    want, bound = grouped_reference(q, k, v, False, lens)
    return got[0], got[1], want, bound, plan[0]


def decode_model_problem(mod, shape, scale: float = 1.0):
    B, Hq, Hkv, L, lens = shape
    where = (f"decode, batch {B}, {Hq} query heads on {Hkv} KV heads, a cache of {L} keys, seq_lens {list(lens)}"
             + (f", scores scaled ×{scale ** 2:g}" if scale != 1 else ""))
    found = decode_in_model(mod, shape, scale=scale)
    if not isinstance(found, tuple):
        return found if not isinstance(found, str) else f"in the host model, {where}: {found}"
    got, writes, want, bound, plan = found
    problem = attention.compare(got, want, bound, writes)
    where += f" ({plan.splits} splits of {plan.chunk} keys)"
    if problem and scale != 1:
        problem += (" — only with large scores: each split's maximum m_s is far past fp32's exp2 range here (2^m_s "
                    "overflows past 2^128), so the combine must weigh split s by 2^(m_s − m), m the largest m_s, and "
                    "keep m_s in fp32")
    return f"in the host model, {where}, after two calls: {problem}" if problem else None


def program_orders() -> dict:
    """Two schedules a GPU can produce: programs in launch order, and reversed."""
    return {"in launch order": None, "in reverse": lambda n: list(range(n - 1, -1, -1))}


def same_bits_in_two_orders(mod, shape=ORDER_SHAPE, splits=ORDER_SPLITS):
    """None when O, kept in fp32, has the same bits with the programs run in launch order and in reverse (another
    program arrives last at each KV head, and combines); else a sentence."""
    first = None
    for name, order in program_orders().items():
        found = decode_in_model(mod, shape, torch.float32, splits, order, calls=1)
        if not isinstance(found, tuple):
            return found if not isinstance(found, str) else f"in the host model, programs run {name}: {found}"
        got = found[0]
        if first is None:
            first = (name, got)
            continue
        differ = got.view(np.uint32) != first[1].view(np.uint32)
        if differ.any():
            where = tuple(int(i) for i in np.argwhere(differ)[0])
            return (f"decode in {splits} splits: O{list(where)} is {float(got[where])!r} with the programs run {name} "
                    f"but {float(first[1][where])!r} run {first[0]} ({int(differ.sum())} elements differ): the splits "
                    "are combined in an order that depends on which program arrives last; add them in split order, "
                    "whichever program adds them")
    return None


def prefill_model_check(shapes=PREFILL_MODEL_SHAPES):
    """A check: the GQA prefill through its launcher in the host model at each shape, causal and not."""
    def check(mod):
        for shape in shapes:
            for causal in (False, True):
                problem = prefill_model_problem(mod, shape, causal)
                if problem:
                    return problem
        return None
    return check


def decode_model_check(shapes=DECODE_MODEL_SHAPES, large=DECODE_LARGE_SHAPE):
    """A check: the decode through its launcher in the host model at each shape, two calls on one plan; then at
    ``large`` with scores past fp32's exp2 range."""
    def check(mod):
        for shape in shapes:
            problem = decode_model_problem(mod, shape)
            if problem:
                return problem
        return decode_model_problem(mod, large, attention.LARGE_SCALE) if large else None
    return check


def order_check(mod):
    """A check: the combine's bits the same with the programs run in launch order and in reverse."""
    return same_bits_in_two_orders(mod)


# -- the split rule and the refusals (host code) ----------------------------------------------------------------------

HQ, HKV, HEAD_DIM = 32, 8, 128
# (batch, cache length): issue 42's decode shapes.
TIMED = ((1, 4096), (1, 32768), (16, 4096), (16, 32768), (64, 8192))


def split_rule_problem(mod) -> str | None:
    """The lesson's split_rule at the issue's decode shapes (and at odd lengths): chunks a whole number of key blocks
    that cover the cache once; the programs (splits × batch × KV heads) at most one an SM (132), and more than half
    the SMs unless a chunk is down to its two blocks or one split already fills them."""
    block = mod.DECODE_CONFIG["BLOCK_N"]
    slots = mod.SMS
    for batch, L in TIMED + ((1, 1), (3, 100), (2, 5000), (1, 100000)):
        splits, chunk = mod.split_rule(batch, HKV, L, block)
        programs = splits * batch * HKV
        where = f"split_rule at batch {batch} × {L} keys, {HKV} KV heads: {splits} splits of {chunk} keys"
        if chunk % block or not (splits - 1) * chunk < L <= splits * chunk:
            return (f"{where}, which is not a whole number of {block}-key blocks covering the {L} keys once (the "
                    "last split holds the remainder)")
        if programs > slots and splits > 1:
            return (f"{where}: {programs} programs, more than one on each of the {slots} SMs: more splits, each a "
                    "partial for the combine to read, where one program an SM already streams the cache")
        if programs <= slots // 2 and chunk > 2 * block:
            return (f"{where}: {programs} programs leave more than half of the GPU's {slots} SMs idle while each "
                    "program's chunk could still be cut")
    return None


def refusal_cases(mod):
    """(what, call, words its sentence must hold) for each input the launchers must refuse; CPU tensors: every
    refusal comes before a launcher touches a GPU."""
    bf = torch.bfloat16
    q = torch.zeros(2, 8, 1, 64, dtype=bf)
    k = torch.zeros(2, 2, 40, 64, dtype=bf)
    lens = torch.tensor([40, 7], dtype=torch.int32)
    pq = torch.zeros(1, 6, 17, 64, dtype=bf)
    pk = torch.zeros(1, 4, 17, 64, dtype=bf)
    return [
        ("a decode query in fp16", lambda: mod.DecodePlan(q.half(), k, k, lens), "bfloat16"),
        ("a transposed K cache", lambda: mod.DecodePlan(q, k.transpose(2, 3), k, lens), "contiguous"),
        ("head dim 96", lambda: mod.DecodePlan(torch.zeros(2, 8, 1, 96, dtype=bf), torch.zeros(2, 2, 40, 96, dtype=bf),
                                               torch.zeros(2, 2, 40, 96, dtype=bf), lens), "head dim 96"),
        ("8 query heads on 3 KV heads", lambda: mod.DecodePlan(q, k[:, :1].expand(2, 3, 40, 64).contiguous(),
                                                                k[:, :1].expand(2, 3, 40, 64).contiguous(), lens),
         "multiple of"),
        ("a sequence of 0 keys", lambda: mod.DecodePlan(q, k, k, torch.tensor([40, 0], dtype=torch.int32)),
         "at least one key"),
        ("a sequence past the cache", lambda: mod.DecodePlan(q, k, k, torch.tensor([41, 7], dtype=torch.int32)),
         "at most the cache's 40"),
        ("int64 lengths", lambda: mod.DecodePlan(q, k, k, lens.long()), "int32"),
        ("two queries a sequence", lambda: mod.DecodePlan(torch.zeros(2, 8, 2, 64, dtype=bf), k, k, lens), "one"),
        ("an output written over q", lambda: mod.DecodePlan(q, k, k, lens, out=q), "memory"),
        ("a prefill of 6 query heads on 4 KV heads", lambda: mod.gqa_attention(pq, pk, pk), "multiple of"),
        ("a prefill output written over Q", lambda: mod.gqa_attention(pq[:, :4].contiguous(), pk, pk, out=pk),
         "memory"),
    ]


def refusals_problem(mod) -> str | None:
    """Each of refusal_cases refused with a ValueError holding its words."""
    for what, call, words in refusal_cases(mod):
        try:
            call()
        except ValueError as e:
            if words not in str(e):
                return (f"{what}: refused, but with “{str(e)[:160]}”, which does not name the problem (expected a "
                        f"sentence about “{words}”)")
            continue
        except Exception as e:                   # noqa: BLE001 - anything but the launcher's sentence is a failure
            from ..grading.errors import explain
            return f"{what}: the launcher did not refuse it with a sentence ({explain(e)})"
        return f"{what}: the launcher accepted it"
    return None


# -- the block in the model --------------------------------------------------------------------------------------------

def small_block(seed: int = 0):
    """Lesson 32's block at a size the host model runs: hidden 256, 4 query heads on 2 KV heads of 64, MLP 384."""
    from ..measure.linear import Block

    torch.manual_seed(seed)
    block = Block(hidden=256, heads=4, kv_heads=2, mlp=384).to(torch.bfloat16)
    for p in block.parameters():
        p.requires_grad_(False)
    return block


def block_reference_step(block, k_all, v_all, x, causal: bool = False):
    """The block on ``x`` with attention by SDPA's math over K and V ``k_all``, ``v_all`` (fp32 on the bf16 values):
    a decode step over the whole cache, or (causal) the prompt's prefill."""
    b, (B, T, H) = block, x.shape
    h = b.norm1(x)
    q = b.q(h).view(B, T, b.heads, b.head_dim).transpose(1, 2)
    att = torch.nn.functional.scaled_dot_product_attention(q.float(), k_all.float(), v_all.float(), is_causal=causal,
                                                           enable_gqa=True)
    x = x + b.o(att.to(x.dtype).transpose(1, 2).reshape(B, T, H))
    h = b.norm2(x)
    return x + b.down(torch.nn.functional.silu(b.gate(h)) * b.up(h))


def block_output_off(got, want):
    """None when the block's output ``got`` is within twice the bf16 rounding of ``want`` plus 2^-6 of its scale;
    else (the largest error, that bound)."""
    err = float((got.float() - want.float()).abs().max())
    tol = 2 * 2.0 ** -8 * float(want.float().abs().max()) + 2.0 ** -6
    return None if err <= tol else (err, tol)


def block_model_problem(mod, batch: int = 2, prompt: int = 5, steps: int = 2, capacity: int = 40) -> str | None:
    """The lesson's DecodingBlock on small_block in the host model: its prefill on a prompt of ``prompt`` tokens,
    then ``steps`` decode steps; after each, the cache holds the tokens' K and V at their positions, seq_lens counts
    them, and the output matches the block run with SDPA (causal over the prompt; over the same cache for a step),
    within twice the bf16 rounding of the output plus 2^-6 of its scale."""
    from ..model import ModelError, ModelUnsupported
    from ..model.launcher import ModelGPU

    block = small_block()
    g = torch.Generator().manual_seed(3)
    xs = [torch.randn(batch, prompt if i == 0 else 1, 256, generator=g).to(torch.bfloat16) for i in range(steps + 1)]
    with np.errstate(over="ignore", invalid="ignore"), ModelGPU(MODEL_SMS, poison_empty=True) as gpu:
        dec = mod.DecodingBlock(block, batch, capacity, device="cpu")
        for t, name in ((dec.k_cache, "K cache"), (dec.v_cache, "V cache"), (dec.seq_lens, "seq_lens"),
                        (dec.q, "q")):
            gpu.add(t, name)
        try:
            with torch.no_grad():
                got = dec.prefill(xs[0])
                _, k, v = dec._projections(xs[0])
                if not (torch.equal(dec.k_cache[:, :, :prompt], k) and torch.equal(dec.v_cache[:, :, :prompt], v)) \
                        or int(dec.seq_lens.min()) != prompt or int(dec.seq_lens.max()) != prompt:
                    return (f"after the prefill of {prompt} tokens: the cache does not hold the prompt's K and V at "
                            f"positions 0 to {prompt - 1}, or seq_lens is not {prompt}: the prefill must write them "
                            "all and count them")
                off = block_output_off(got, block_reference_step(block, k, v, xs[0], causal=True))
                if off:
                    return (f"the prefill (batch {batch}, {prompt} tokens): the block's output is off by {off[0]:.3g}, "
                            f"more than {off[1]:.3g}, against the same block with SDPA, causal (is the prompt's "
                            "attention causal, each token seeing itself and the tokens before it?)")
                for i in range(1, steps + 1):
                    got = dec.step(xs[i]).float()
                    n = prompt + i
                    want = block_reference_step(block, dec.k_cache[:, :, :n], dec.v_cache[:, :, :n], xs[i]).float()
                    _, k_new, _ = dec._projections(xs[i])
                    if not torch.equal(dec.k_cache[:, :, n - 1], k_new[:, :, 0]) or \
                            int(dec.seq_lens.min()) != n or int(dec.seq_lens.max()) != n:
                        return (f"after decode step {i}: the cache does not hold the step's K at position {n - 1}, "
                                f"or seq_lens is not {n}: the step must write its K and V at each sequence's length, "
                                "then count it")
                    off = block_output_off(got, want)
                    if off:
                        return (f"decode step {i} (batch {batch}, {n} keys): the block's output is off by "
                                f"{off[0]:.3g}, more than {off[1]:.3g}, against the same block with SDPA over the same "
                                "cache")
        except ModelUnsupported as e:
            return attention.not_modelled(e)
        except ModelError as e:
            return f"in the host model, the block's decode step: {e}"
    return None


# -- the compiler -------------------------------------------------------------------------------------------------------

def decode_launch(mod, head_dim: int = HEAD_DIM, group: int = HQ // HKV) -> tuple[dict, int, list]:
    """What the lesson's DecodePlan launches decode_kernel with, at ``group`` query heads on 8 KV heads, a cache of
    256 keys: (its constexprs, its num_warps, its key block's shape), from a plan made on CPU tensors (the host model
    standing in for the GPU)."""
    from ..model.launcher import ModelGPU

    q = torch.zeros(1, group * HKV, 1, head_dim, dtype=torch.bfloat16)
    k = torch.zeros(1, HKV, 256, head_dim, dtype=torch.bfloat16)
    with ModelGPU(132):
        plan = mod.DecodePlan(q, k, k.clone(), torch.tensor([256], dtype=torch.int32))
    constexprs = dict(plan.kwargs)
    return constexprs, int(constexprs.pop("num_warps", 4)), [int(n) for n in plan.k_desc.block_shape]


def decode_compiled(mod, head_dim: int = HEAD_DIM, group: int = HQ // HKV):
    """The lesson's decode_kernel compiled for sm_90 as DecodePlan launches it (its constexprs and num_warps)."""
    from triton.experimental.gluon import language as gl

    from ..machine import compile_cached, tensor_descriptor_type

    constexprs, num_warps, block = decode_launch(mod, head_dim, group)
    desc = tensor_descriptor_type("bf16", block, gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16))
    signature = {"q_ptr": "*bf16", "k_desc": desc, "v_desc": desc, "o_ptr": "*bf16", "seq_lens_ptr": "*i32",
                 "part_o_ptr": "*fp32", "part_m_ptr": "*fp32", "part_l_ptr": "*fp32", "arrivals_ptr": "*i32",
                 "H_KV": "i32", "L": "i32", "chunk": "i32", "splits": "i32", "qk_scale": "fp32"}
    return compile_cached(mod.decode_kernel, "sm_90", signature=signature, constexprs=constexprs,
                          aligned=("q_ptr", "o_ptr", "part_o_ptr"), num_warps=num_warps)


def prefill_compiled(mod, head_dim: int = HEAD_DIM, causal: bool = True):
    """The lesson's GQA prefill kernel compiled for sm_90 at its configuration, 32 query heads on 8."""
    from triton.experimental.gluon import language as gl

    from ..machine import compile_cached, tensor_descriptor_type

    cfg = mod.PREFILL_CONFIG

    def desc(rows):
        return tensor_descriptor_type("bf16", [rows, head_dim],
                                      gl.NVMMASharedLayout.get_default_for([rows, head_dim], gl.bfloat16))
    signature = {"q_desc": desc(cfg["BLOCK_M"]), "k_desc": desc(cfg["BLOCK_N"]), "v_desc": desc(cfg["BLOCK_N"]),
                 "o_ptr": "*bf16", "Sq": "i32", "Sk": "i32", "qk_scale": "fp32"}
    constexprs = mod.prefill_constexprs(cfg, head_dim, causal, HQ, HQ // HKV)
    return compile_cached(mod.gqa_prefill_kernel, "sm_90", signature=signature, constexprs=constexprs,
                          aligned=("o_ptr",), num_warps=cfg["num_warps"])


def _loops(k) -> list[tuple[int, int]]:
    """Loop bodies: (target, branch) of each backward branch, conditional or not (ptxas closes a rotated loop with an
    unconditional one), before the kernel's last EXIT. An mbarrier wait's slow path lies past that EXIT (its retry,
    and its jump back into the code): not a loop of the kernel."""
    import re

    instructions = list(k.instructions())
    exits = [ins.address for ins in instructions if re.match(r"(@!?U?P\w+\s+)?EXIT\b", ins.text)]
    end = max(exits) if exits else float("inf")
    spans = []
    for ins in instructions:
        m = re.search(r"\bBRA\s+0x([0-9a-f]+)", ins.text)
        if m and int(m.group(1), 16) < ins.address < end:
            spans.append((int(m.group(1), 16), ins.address))
    return sorted(spans)


def decode_facts(mod, head_dim: int = HEAD_DIM, group: int = HQ // HKV) -> dict:
    """The facts of one decode compile: resources and programs an SM; the key loop's instructions per key block (the
    loop that holds MUFU.EX2 and TMA's copies); the combine's loops (those that load with .STRONG.GPU: from L2)."""
    from ..machine.occupancy import occupancy_of

    cfg = mod.DECODE_CONFIG
    k = decode_compiled(mod, head_dim, group)
    loops = _loops(k)
    key = [span for span in loops if "MUFU.EX2" in k.opcodes_between(*span) and
           "UTMALDG.2D" in k.opcodes_between(*span)]
    combine = [span for span in loops if any(op.startswith("LDG") and "STRONG" in op
                                             for op in k.opcodes_between(*span))]
    ops = k.opcodes_between(*key[0]) if len(key) == 1 else {}
    count = lambda *prefixes: sum(n for op, n in ops.items() if op.startswith(prefixes))  # noqa: E731
    threads = 32 * cfg["num_warps"]
    qrows = mod.QROWS
    return {"registers": k.registers, "spills": k.spills, "shared_bytes": k.shared_bytes,
            "programs_per_sm": occupancy_of(k, cfg["num_warps"]).blocks, "key_loops": len(key),
            "tma_loads": count("UTMALDG"), "global_loads": {op: n for op, n in ops.items() if op.startswith("LDG")},
            "products": {op: n for op, n in ops.items() if op.startswith(("HGMMA", "HMMA"))},
            "fp_ops": count("FADD", "FFMA", "FMUL"), "ex2": count("MUFU.EX2"),
            "scores_per_thread": qrows * cfg["BLOCK_N"] // threads, "rows_per_thread": 2,
            "useful_scores_per_thread": group * cfg["BLOCK_N"] / threads,
            "shared_loads": count("LDS"), "shared_stores": count("STS"), "cta_barriers": count("BAR.SYNC"),
            "combine_loops": len(combine),
            "combine_l1_loads": sorted({op for span in combine for op in k.opcodes_between(*span)
                                        if op.startswith("LDG") and "STRONG" not in op}),
            "bytes_in_flight": cfg["STAGES"] * 2 * cfg["BLOCK_N"] * head_dim * 2,
            "compiled": k}


def decode_facts_problem(mod, f: dict, head_dim: int = HEAD_DIM) -> str | None:
    """What the lesson asserts of its decode compile: it fits PROGRAMS_PER_SM programs an SM (from batch 32, more
    programs than SMs, a second program waits in each) with no spills; one key loop, whose K and V come as two TMA copies a block with no global load; S and P·V on
    mma.sync and nothing else; one MUFU.EX2 a score a thread holds and one a row (the rescale); a combine that reads
    the partials from L2."""
    from ..grading.gemm_kernel import fits

    cfg = mod.DECODE_CONFIG
    where = f"the decode kernel at head dim {head_dim}"
    problem = fits(f["compiled"], cfg["num_warps"], cfg)
    if problem:
        return f"{where}: {problem}"
    if f["programs_per_sm"] < mod.PROGRAMS_PER_SM:
        return (f"{where}: {f['programs_per_sm']} program(s) an SM where the lesson counts on {mod.PROGRAMS_PER_SM} "
                f"({f['shared_bytes']} bytes of shared memory, {f['registers']} registers a thread)")
    if f["key_loops"] != 1:
        return f"{where}: {f['key_loops']} loops hold TMA copies and exponentials, where the kernel has one key loop"
    if f["tma_loads"] != 2 or f["global_loads"]:
        return (f"{where}: the key loop issues {f['tma_loads']} TMA copies and global loads {f['global_loads']}, where "
                "K's and V's block come as two TMA copies and nothing else is read from global memory")
    # S (QROWS × BLOCK_N over HEAD_DIM) and P·V (QROWS × HEAD_DIM over BLOCK_N), each in m16n8k16 steps, the warps
    # side by side along the products' columns.
    want = 2 * (mod.QROWS // 16) * (cfg["BLOCK_N"] // 8) * (head_dim // 16) // cfg["num_warps"]
    if f["products"] != {"HMMA.16816.F32.BF16": want}:
        return (f"{where}: the key loop's products are {f['products']}, where S and P·V on mma.sync make "
                f"{want}× HMMA.16816.F32.BF16 a warp")
    if f["ex2"] != f["scores_per_thread"] + f["rows_per_thread"]:
        return (f"{where}: {f['ex2']} MUFU.EX2 in the key loop where each of a thread's {f['scores_per_thread']} "
                f"scores takes one and each of its {f['rows_per_thread']} rows one more (the rescale)")
    if f["combine_l1_loads"]:
        return (f"{where}: the combine's loops also load with {', '.join(f['combine_l1_loads'])}, through L1, where "
                "each of the other programs' partials (m, l and O) comes from L2: cache_modifier=\".cg\" on every "
                "load of the scratch (LDG ….STRONG.GPU)")
    if not f["combine_loops"]:
        return f"{where}: no loop reads the partials from L2 (LDG .STRONG.GPU): where is the combine?"
    return None


def decode_launch_problem(mod, head_dim: int = HEAD_DIM) -> str | None:
    """None when each layout DecodePlan passes to decode_kernel spreads over the warps it launches with; else a
    sentence (the compiler refuses such a kernel, with an assertion that names neither)."""
    constexprs, num_warps, _ = decode_launch(mod, head_dim)
    for name, value in constexprs.items():
        warps = getattr(value, "warps_per_cta", None)
        if warps is not None and math.prod(warps) != num_warps:
            return (f"DecodePlan launches decode_kernel with num_warps={num_warps}, but its {name} spreads over "
                    f"warps_per_cta {list(warps)} = {math.prod(warps)} warps: a layout must cover the warps the "
                    "kernel runs with (the compiler refuses it); build the layouts and num_warps from one config")
    return None


def decode_facts_check(head_dims=(128, 64)):
    def check(mod):
        for hd in head_dims:
            problem = decode_launch_problem(mod, hd) or decode_facts_problem(mod, decode_facts(mod, hd), hd)
            if problem:
                return problem
        return None
    return check


class _PrefillAsV4:
    """Lesson 38's prefill seen as lesson 37's v4 (KERNELS, CONFIGS, constexprs), 32 query heads on 8, so that lesson
    37's compile facts (attention.fa3_facts) read it."""

    def __init__(self, mod):
        self.KERNELS = {"v4": mod.gqa_prefill_kernel}
        self.CONFIGS = {"v4": mod.PREFILL_CONFIG}
        self._constexprs = mod.prefill_constexprs

    def constexprs(self, version, cfg, head_dim, causal):
        return self._constexprs(cfg, head_dim, causal, HQ, HQ // HKV)


def prefill_facts_check(mod):
    """Lesson 37's facts of v4 (attention.fa3_facts_problem: fit, lesson 36's per-loop facts, the turn, the register
    split) on the GQA prefill kernel, causal, head dim 128: grouped heads change which rows the producer copies and
    nothing in the consumers' code."""
    return attention.fa3_facts_problem(prefill_facts(mod), mod.PREFILL_CONFIG, ("fit", "lesson36", "turn", "split"))


def prefill_facts(mod, head_dim: int = HEAD_DIM, causal: bool = True) -> dict:
    """attention.fa3_facts of the lesson's GQA prefill, 32 query heads on 8 (its key loops per consumer, registers,
    USETMAXREG, the turn's waits and passes)."""
    f = attention.fa3_facts(_PrefillAsV4(mod), "v4", head_dim, causal, True)
    f["name"] = "the GQA prefill"
    return f


# -- on a GPU -----------------------------------------------------------------------------------------------------------

GPU_DECODE_ODD = ((1, 32, 8, 1, (1,)), (3, 32, 8, 1000, (1000, 1, 777)), (2, 8, 8, 5000, (4099, 5000)),
                  (1, 32, 8, 20000, (19999,)), (2, 16, 2, 300, (65, 300)))
GPU_PREFILL_ODD = ((1, 32, 8, 1, 1), (2, 8, 2, 100, 300), (1, 32, 8, 1000, 1000), (2, 4, 4, 300, 129))


def gpu_decode_problem(mod, shape, head_dim: int = HEAD_DIM, seed: int = 0, make_plan=None) -> str | None:
    """Two decodes on one plan at ``shape`` (batch, Hq, Hkv, L, seq_lens), O poisoned and guarded, the cache past each
    length holding large finite stale rows, against fp32 math on the GPU within attention.gpu_reference's bound.
    (Stale rows must be finite: a masked key's P is 0, and 0 · NaN is NaN.) ``make_plan(q, k, v, seq_lens, out)``
    builds the plan (default: the lesson's ``mod.DecodePlan``; the decode probe passes its variants')."""
    from ..measure.tensors import guarded_empty, is_poison

    B, Hq, Hkv, L, lens = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(B, Hq, 1, head_dim, device="cuda", generator=g).to(torch.bfloat16)
    k = torch.randn(B, Hkv, L, head_dim, device="cuda", generator=g).to(torch.bfloat16)
    v = torch.randn(B, Hkv, L, head_dim, device="cuda", generator=g).to(torch.bfloat16)
    for b, n in enumerate(lens):
        k[b, :, n:] *= 8
        v[b, :, n:] = 64
    seq_lens = torch.tensor(lens, dtype=torch.int32, device="cuda")
    out = guarded_empty((B, Hq, 1, head_dim), dtype=torch.bfloat16)
    plan = (make_plan or mod.DecodePlan)(q, k, v, seq_lens, out.tensor)
    for _ in range(2):                                  # twice: the counters must be back at 0 after a call
        plan.launch()
    torch.cuda.synchronize()
    got = out.tensor.float()
    if is_poison(got).any():
        return f"{int(is_poison(got).sum())} element(s) of O never written (still NaN)"
    if not out.margins_untouched():
        return "a write past O's ends (the guard margins changed)"
    if plan.arrivals.any():
        return "a counter not back at 0 after the call"
    group = Hq // Hkv
    for b, n in enumerate(lens):
        kb = k[b:b + 1, :, :n].repeat_interleave(group, 1)
        vb = v[b:b + 1, :, :n].repeat_interleave(group, 1)
        want, bound = attention.gpu_reference(q[b:b + 1], kb, vb, False)
        bad = (got[b:b + 1] - want).abs() > bound
        if bad.any():
            where = bad.nonzero()[0].tolist()
            return (f"sequence {b} ({n} keys, {plan.splits} splits of {plan.chunk}): {int(bad.sum())} element(s) "
                    f"outside the bound, first O{where}")
    return None


def gpu_prefill_problem(mod, shape, causal: bool, head_dim: int = HEAD_DIM) -> str | None:
    from ..measure.tensors import guarded_empty, is_poison

    B, Hq, Hkv, Sq, Sk = shape
    g = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(B, Hq, Sq, head_dim, device="cuda", generator=g).to(torch.bfloat16)
    k, v = (torch.randn(B, Hkv, Sk, head_dim, device="cuda", generator=g).to(torch.bfloat16) for _ in "kv")
    out = guarded_empty((B, Hq, Sq, head_dim), dtype=torch.bfloat16)
    mod.gqa_attention(q, k, v, causal, out=out.tensor)
    torch.cuda.synchronize()
    got = out.tensor.float()
    if is_poison(got).any():
        return f"{int(is_poison(got).sum())} element(s) of O never written (still NaN)"
    if not out.margins_untouched():
        return "a write past O's ends (the guard margins changed)"
    want, bound = attention.gpu_reference(q, k.repeat_interleave(Hq // Hkv, 1), v.repeat_interleave(Hq // Hkv, 1),
                                          causal)
    bad = (got - want).abs() > bound
    if bad.any():
        return f"{int(bad.sum())} element(s) outside the bound, first O{bad.nonzero()[0].tolist()}"
    return None


def correct_here(module_file: str) -> str | None:
    """The correctness check itself, in a child process (a counter or barrier that never completes hangs there)."""
    from ..course import load_module_file
    from ..grading.runner import sentence_in_child

    mod = load_module_file(module_file)

    def run():
        for hd in (64, 128):
            for shape in GPU_PREFILL_ODD:
                for causal in (False, True):
                    problem = gpu_prefill_problem(mod, shape, causal, hd)
                    if problem:
                        return f"GQA prefill, head dim {hd}, (batch, Hq, Hkv, Sq, Sk) = {shape}" \
                               f"{', causal' if causal else ''}: {problem}"
            for shape in GPU_DECODE_ODD:
                problem = gpu_decode_problem(mod, shape, hd)
                if problem:
                    return f"decode, head dim {hd}, (batch, Hq, Hkv, L, seq_lens) = {shape}: {problem}"
        return None
    return sentence_in_child(module_file, run)


def correct(mod) -> str | None:
    """Prefill and decode at both head dims on odd shapes, in one child process under a limit."""
    from ..measure.isolated import check_in_child

    return check_in_child(f"{__file__}:correct_here", [mod.__file__], timeout=CHILD_LIMIT_S)


def small_launch(module_file: str) -> None:
    """For compute-sanitizer, in a child process: the prefill on a small odd causal problem and the decode on odd
    lengths, twice on one plan."""
    from ..course import load_module_file

    mod = load_module_file(module_file)
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(2, 8, 200, 64, device="cuda", generator=g).to(torch.bfloat16)
    k, v = (torch.randn(2, 2, 300, 64, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
    mod.gqa_attention(q, k, v, True)
    q1 = torch.randn(3, 8, 1, 128, device="cuda", generator=g).to(torch.bfloat16)
    kc, vc = (torch.randn(3, 2, 3000, 128, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
    plan = mod.DecodePlan(q1, kc, vc, torch.tensor([3000, 1, 1234], dtype=torch.int32, device="cuda"))
    plan.launch()
    plan.launch()
    torch.cuda.synchronize()


def sanitizer_clean(mod) -> str | None:
    """compute-sanitizer memcheck and synccheck on ``small_launch`` (each tool its own child process)."""
    from ..measure.isolated import sanitizer_check

    return sanitizer_check(f"{__file__}:small_launch", [mod.__file__], tools=("memcheck", "synccheck"))


GRAPH_CALLS = 10


def graphs_in_turn(calls: dict, rounds: int = 15) -> tuple[dict, dict]:
    """Each candidate captured in a CUDA graph of GRAPH_CALLS calls, the graphs replayed in turn (the kernels' own
    time, no host launch between them): (median µs a call by name, {name: why} for a candidate that could not be
    captured)."""
    from ..measure.timing import _captured, replayed_in_turn

    graphs, refused = {}, {}
    for name, fn in calls.items():
        try:
            graphs[name] = _captured(fn, GRAPH_CALLS)
        except RuntimeError as e:
            refused[name] = str(e).splitlines()[0][:200]
    torch.cuda.synchronize()
    return replayed_in_turn(graphs, GRAPH_CALLS, rounds), refused


def sdpa_backends(q, k, v, causal: bool):
    """SDPA's backends that take this problem (enable_gqa), each as a function of no argument: ({short name: call},
    {backend: why refused})."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    calls, refused = {}, {}
    for backend in attention.SDPA_BACKENDS:
        chosen = getattr(SDPBackend, backend)

        def fn(chosen=chosen):
            with sdpa_kernel([chosen]):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        problem = attention.sdpa_refusal(fn)
        if problem:
            refused[backend] = problem
        else:
            calls[backend.split("_")[0].lower()] = fn
    return calls, refused


def time_decode(mod, batch: int, L: int, copy_tbs: float) -> dict:
    """The lesson's decode and SDPA's backends at one shape of TIMED, in CUDA graphs replayed in turn: µs, and the
    cache's bytes over the time as a fraction of the device copy's bandwidth (a cache that fits in L2, 1 × 4k's 17 MB,
    is read from L2 after the first call of a graph: its fraction can pass 1)."""
    g = torch.Generator(device="cuda").manual_seed(2)
    q = torch.randn(batch, HQ, 1, HEAD_DIM, device="cuda", generator=g).to(torch.bfloat16)
    k, v = (torch.randn(batch, HKV, L, HEAD_DIM, device="cuda", generator=g).to(torch.bfloat16) for _ in "kv")
    seq_lens = torch.full((batch,), L, dtype=torch.int32, device="cuda")
    plan = mod.DecodePlan(q, k, v, seq_lens)
    calls, refused = sdpa_backends(q, k, v, False)
    calls = {"gluon": plan.launch, **calls}
    us, not_captured = graphs_in_turn(calls)
    # The same calls launched from the host, back to back (as the probe's trial timed them): where a call's host side
    # outlasts its kernel, this reads the host's time, and the gap to ``us`` is that floor.
    eager_us = {name: t * 1e3 for name, t in attention.interleaved_ms(
        {n: f for n, f in calls.items() if n not in not_captured}, rounds=5).items()}
    nbytes = 2 * k.numel() * k.element_size()
    fraction = {name: nbytes / (t * 1e-6) / 1e12 / copy_tbs for name, t in us.items()}
    library = {n: t for n, t in us.items() if n in ("cudnn", "flash", "efficient")}
    best = min(library, key=library.get) if library else None
    return {"batch": batch, "L": L, "cache_bytes": nbytes, "splits": plan.splits, "chunk": plan.chunk, "us": us, "eager_us": eager_us,
            "fraction_of_copy": fraction, "best_library": best,
            "over_best": library[best] / us["gluon"] if best and "gluon" in us else None,
            "refused": {**refused, **not_captured}}


def decode_measure():
    """A figure: the geomean over TIMED of the best SDPA backend's time over the lesson's decode's; the details hold
    each shape's times, its splits and each candidate's fraction of the device copy's bandwidth (measured in the same
    run)."""
    def measure(mod):
        from ..measure.timing import Measurement, copy_ceiling_tbs

        problem = correct(mod)
        if problem:
            raise AssertionError(problem)
        copy = copy_ceiling_tbs()
        rows = [time_decode(mod, batch, L, copy) for batch, L in TIMED]
        ratios = [r["over_best"] for r in rows]
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        worst = min(range(len(rows)), key=lambda i: ratios[i])
        fractions = ", ".join(f"{r['batch']}×{r['L'] // 1024}k {r['fraction_of_copy']['gluon']:.2f}" for r in rows)
        text = (f"geomean {geomean:.2f}× the best SDPA backend over {len(rows)} shapes, worst {ratios[worst]:.2f}× "
                f"({rows[worst]['batch']} × {rows[worst]['L']}); of the copy's {copy:.2f} TB/s: {fractions}")
        return Measurement(geomean, text, json.loads(json.dumps({"copy_tbs": copy, "shapes": rows,
                                                                  "ratios": ratios})))
    return measure


PREFILL_TIMED = (4096, 16384)          # S, causal, 16 384 tokens × 32 query heads on 8 KV heads, head dim 128


def prefill_measure():
    """A figure: the geomean over PREFILL_TIMED (causal) of the lesson's GQA prefill's TFLOPS over the best SDPA
    backend's (enable_gqa), launches interleaved as lesson 36's figures are."""
    def measure(mod):
        from ..measure.timing import Measurement

        problem = correct(mod)
        if problem:
            raise AssertionError(problem)
        rows = []
        for S in PREFILL_TIMED:
            B = max(1, attention.TOKENS // S)
            g = torch.Generator(device="cuda").manual_seed(1)
            q = torch.randn(B, HQ, S, HEAD_DIM, device="cuda", generator=g).to(torch.bfloat16)
            k, v = (torch.randn(B, HKV, S, HEAD_DIM, device="cuda", generator=g).to(torch.bfloat16) for _ in "kv")
            calls, refused = sdpa_backends(q, k, v, True)
            calls = {"gluon": mod.prefill_prepared(q, k, v, True)[0], **calls}
            ms = attention.interleaved_ms(calls)
            flops = 2 * B * HQ * S * S * HEAD_DIM               # causal: half of 4·B·H·S²·D
            tflops = {n: round(flops / t / 1e9, 1) for n, t in ms.items()}
            library = {n: t for n, t in tflops.items() if n != "gluon"}
            best = max(library, key=library.get)
            rows.append({"S": S, "batch": B, "tflops": tflops, "best_library": best, "refused": refused,
                         "over_best": tflops["gluon"] / tflops[best]})
            del q, k, v
        ratios = [r["over_best"] for r in rows]
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        text = ", ".join(f"S {r['S']}: {r['tflops']['gluon']:.0f} TFLOPS, {r['over_best']:.2f}× {r['best_library']}"
                         for r in rows)
        return Measurement(geomean, text, json.loads(json.dumps({"shapes": rows, "ratios": ratios})))
    return measure


BLOCK_BATCH, BLOCK_CONTEXT = 16, 4096


def block_decode_measure():
    """A figure: lesson 32's block (hidden 4096, 32 query heads on 8 KV heads) taking one decode step a sequence at
    batch 16 over 4 096 cached keys, attention by the lesson's decode (DecodingBlock.step) against the same block with
    SDPA over the same cache (enable_gqa, PyTorch's choice of backend): the SDPA block's time over the lesson's, each
    step captured in CUDA graphs replayed in turn. The cache stays at its length during the timing (the step's write
    of K and V and its count are replaced by a fixed length), so that every replay reads the same bytes."""
    def measure(mod):
        from ..measure.linear import Block
        from ..measure.timing import Measurement

        problem = correct(mod)
        if problem:
            raise AssertionError(problem)
        torch.manual_seed(0)
        block = Block().to(device="cuda", dtype=torch.bfloat16)
        for p in block.parameters():
            p.requires_grad_(False)
        dec = mod.DecodingBlock(block, BLOCK_BATCH, BLOCK_CONTEXT + 1)
        g = torch.Generator(device="cuda").manual_seed(4)
        dec.k_cache.normal_(generator=g)
        dec.v_cache.normal_(generator=g)
        dec.seq_lens.fill_(BLOCK_CONTEXT)
        x = torch.randn(BLOCK_BATCH, 1, 4096, device="cuda", generator=g).to(torch.bfloat16)
        with torch.no_grad():
            dec.step(x)                                   # the plan, made once; the cache now BLOCK_CONTEXT + 1 keys
            n = BLOCK_CONTEXT + 1
            k_all, v_all = dec.k_cache[:, :, :n], dec.v_cache[:, :, :n]

            def ours():
                q, _, _ = dec._projections(x)
                dec.q.copy_(q)
                return dec._rest(x, dec.plan.launch())

            def theirs():
                q, _, _ = dec._projections(x)
                att = torch.nn.functional.scaled_dot_product_attention(q, k_all, v_all, enable_gqa=True)
                return dec._rest(x, att)
            err = float((ours().float() - theirs().float()).abs().max())
            us, refused = graphs_in_turn({"gluon": ours, "torch": theirs})
        if refused:
            raise AssertionError(f"a step could not be captured in a CUDA graph: {refused}")
        value = us["torch"] / us["gluon"]
        text = f"{us['gluon']:.0f} µs a step, with SDPA {us['torch']:.0f} µs (batch {BLOCK_BATCH}, {n} keys)"
        return Measurement(value, text, {"us": us, "batch": BLOCK_BATCH, "keys": n, "max_abs_difference": err})
    return measure


# -- the picture ------------------------------------------------------------------------------------------------------

def split_picture(mod, L: int = 1000, seq_len: int = 700, batch: int = 1, kv_heads: int = 2, sms: int = 8):
    """One KV head's cache of L keys cut by the lesson's split_rule (on a GPU of ``sms`` SMs, ``batch`` × ``kv_heads``
    KV heads): each split a program, its key blocks drawn, the keys past ``seq_len`` grey (never read); below, the
    combine adding the used splits' partials in split order."""
    import matplotlib.pyplot as plt

    block = mod.DECODE_CONFIG["BLOCK_N"]
    splits, chunk = mod.split_rule(batch, kv_heads, L, block, sms)
    used = min(-(-seq_len // chunk), splits)
    fig, ax = plt.subplots(figsize=(9, 2.8))
    colours = plt.get_cmap("tab10")
    for s in range(splits):
        start, stop = s * chunk, min((s + 1) * chunk, L)
        read = max(0, min(stop, seq_len) - start)
        ax.broken_barh([(start, read)], (1.2, 0.8), facecolors=colours(s % 10), alpha=0.8)
        if stop > start + read:
            ax.broken_barh([(start + read, stop - start - read)], (1.2, 0.8), facecolors="#DDDDDD")
        for b in range(start, stop, block):
            ax.plot([b, b], [1.2, 2.0], color="white", linewidth=0.6)
        ax.text((start + stop) / 2, 2.15, f"program {s}", ha="center", fontsize=8)
        if s < used:
            ax.annotate("", xy=(L / 2, 0.45), xytext=((start + stop) / 2, 1.15),
                        arrowprops={"arrowstyle": "->", "color": colours(s % 10), "lw": 1})
            ax.text((start + stop) / 2, 0.8, f"m{s}, l{s}, O{s}", ha="center", fontsize=7)
    ax.text(L / 2, 0.2, "the last program to arrive: m = max m_s;  O = Σ 2^(m_s − m)·O_s / Σ 2^(m_s − m)·l_s, "
            f"s = 0 … {used - 1} in order", ha="center", fontsize=8,
            bbox={"boxstyle": "round", "facecolor": "#F5F5F5", "edgecolor": "#999999"})
    ax.axvline(seq_len, color="black", linestyle="--", linewidth=0.8)
    ax.text(seq_len, 2.5, f" seq_len {seq_len}", fontsize=8)
    ax.set_xlim(0, L)
    ax.set_ylim(0, 2.8)
    ax.set_yticks([])
    ax.set_xlabel(f"key (the cache holds {L}; blocks of {block}; grey: past the sequence, never read)")
    ax.set_title(f"One KV head: {splits} splits of {chunk} keys ({batch} × {kv_heads} KV heads on {sms} SMs, one "
                 "program an SM)", fontsize=10)
    fig.tight_layout()
    plt.show()
