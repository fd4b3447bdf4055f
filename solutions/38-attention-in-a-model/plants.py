"""Planted mistakes of lesson 38: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant). The first six are the probe's (issue 42's groundwork);
the rest are what a learner filling the two gaps, or writing the launchers, would plausibly get wrong."""
from gluon_course.grading import Plant

PLANTS = [
    # ---- the probe's six ----
    Plant("the combine adds the splits' sums without bringing them to the common maximum",
          "            acc = acc + w[:, None] * o_t\n            l_sum = l_sum + w * l_t",
          "            acc = acc + o_t\n            l_sum = l_sum + l_t", rejected_by="decode_model"),
    Plant("the splits combined in the order they arrive: the combining program starts after its own split",
          "            t = t0 + u\n            in_use = t < used\n",
          "            in_use = t0 + u < used\n            t = (gl.program_id(0) + 1 + t0 + u) % used\n",
          rejected_by="combine_order"),
    Plant("the last split's keys masked at the split's end only, not at the sequence's",
          "        s = mask_keys(s, start + j * BLOCK_N, stop, mma_layout)",
          "        s = mask_keys(s, start + j * BLOCK_N, start + chunk, mma_layout)", rejected_by="decode_model"),
    Plant("the KV head of query head h taken as h % Hkv (heads interleaved) instead of h // GROUP",
          "    return b * (HQ // GROUP) + h // GROUP", "    return b * (HQ // GROUP) + h % (HQ // GROUP)",
          rejected_by="prefill_model"),
    Plant("the counter never reset: the next call's programs count from `splits`, and none combines",
          '        gl.atomic_xchg(arrivals_ptr + kv_head, 0, sem="relaxed", scope="gpu")\n', "",
          rejected_by="decode_model"),
    Plant("the partial announced before it is stored: the last program may combine what the scratch held before",
          """    if n_blocks > 0:
        store_partial(o, m_i, l_i, part_o_ptr, part_m_ptr, part_l_ptr, kv_head * splits + split, GROUP, mma_layout)
    # Every thread's part of the partial stored before one thread announces it (the barrier, then the atomic's
    # release); the last program's acquire makes every other program's partial visible to it.
    gl.barrier()
    arrived = gl.atomic_add(arrivals_ptr + kv_head, 1, sem="acq_rel", scope="gpu")""",
          """    arrived = gl.atomic_add(arrivals_ptr + kv_head, 1, sem="acq_rel", scope="gpu")
    if n_blocks > 0:
        store_partial(o, m_i, l_i, part_o_ptr, part_m_ptr, part_l_ptr, kv_head * splits + split, GROUP, mma_layout)
    gl.barrier()""", rejected_by="decode_model"),
    # ---- gap 1: the combine ----
    Plant("the rescale inverted: 2^(m − m_s), which grows where it should shrink",
          "gl.exp2(m_t - m), 0.0)", "gl.exp2(m - m_t), 0.0)", rejected_by="decode_model"),
    Plant("O's partials rescaled but not the sums l_s: the denominator mixes scales",
          "        l_sum = l_sum + w * l_t", "        l_sum = l_sum + l_t", rejected_by="decode_model"),
    Plant("e^x for the rescale where m is kept in log2 units (qk_scale holds log2 e)",
          "gl.exp2(m_t - m), 0.0)", "gl.exp(m_t - m), 0.0)", rejected_by="decode_model"),
    Plant("the combine reads every split of the plan, also those past the sequence's end that stored nothing",
          "        used = gl.minimum(gl.cdiv(seq_len, chunk), splits)", "        used = splits",
          rejected_by="decode_model"),
    # ---- gap 2: the head mapping ----
    Plant("the KV head without the sequence: h // GROUP, so every sequence reads the first one's K and V",
          "    return b * (HQ // GROUP) + h // GROUP", "    return h // GROUP", rejected_by="prefill_model"),
    Plant("the sequence's KV heads counted at the query heads' stride: b · HQ + h // GROUP",
          "    return b * (HQ // GROUP) + h // GROUP", "    return b * HQ + h // GROUP", rejected_by="prefill_model"),
    Plant("the group taken as the KV heads' count: h // Hkv, right only where GROUP = Hkv",
          "    return b * (HQ // GROUP) + h // GROUP", "    return b * (HQ // GROUP) + h // (HQ // GROUP)",
          rejected_by="prefill_model"),
    # ---- the decode's loop, the split rule, the launchers and the block ----
    Plant("the keys masked at the split's end only where the sequence ends later: an off-by-one that reads the key "
          "at the sequence's length", "    return gl.where((cols < stop)[None, :], s, float(\"-inf\"))",
          "    return gl.where((cols <= stop)[None, :], s, float(\"-inf\"))", rejected_by="decode_model"),
    Plant("the query rows of a KV head taken at the KV heads' stride (rows kv_head + r · Hkv)",
          "    ptrs = q_ptr + (kv_head * GROUP + rows)[:, None] * HEAD_DIM + cols[None, :]",
          "    ptrs = q_ptr + (kv_head + rows * GROUP)[:, None] * HEAD_DIM + cols[None, :]",
          rejected_by="decode_model"),
    Plant("the ring's refill issued for the block just read, not the one STAGES ahead",
          "            load_block(k_desc, v_desc, k_ring, v_ring, ready, row0, j + STAGES, STAGES)",
          "            load_block(k_desc, v_desc, k_ring, v_ring, ready, row0, j + 1, STAGES)",
          rejected_by="decode_model"),
    Plant("the split rule counts one program a KV head whatever the batch: 8 × batch too many splits at batch 16",
          "    heads = batch * kv_heads", "    heads = kv_heads", rejected_by="split_rule"),
    Plant("the split rule fills both program slots of every SM: twice the splits, each a partial for the combine",
          "               per_sm: int = SPLIT_PROGRAMS_PER_SM, min_blocks: int = 2)",
          "               per_sm: int = PROGRAMS_PER_SM, min_blocks: int = 2)", rejected_by="split_rule"),
    Plant("the chunk not rounded to whole key blocks: every split's last block partial",
          "    chunk = -(-(-(-L // wanted)) // block_n) * block_n", "    chunk = -(-L // wanted)",
          rejected_by="split_rule"),
    Plant("the decode launcher accepts a GQA ratio that does not divide: the last query heads read no KV head",
          "    if Hkv < 1 or Hq % Hkv:", "    if Hkv < 1:", rejected_by="refusals"),
    Plant("the decode launcher accepts sequences of 0 keys: a KV head with no split to combine, O never written",
          "        if low < 1 or high > L:", "        if high > L:", rejected_by="refusals"),
    Plant("the decode launcher does not check that the output is separate from its inputs",
          "        require_separate_output(out, \"out\", q=q, k_cache=k_cache, v_cache=v_cache, seq_lens=seq_lens)\n",
          "", rejected_by="refusals"),
    Plant("the block's step counts the new token before writing it: its K and V one position too far",
          "        at = self.seq_lens.long()               # each sequence's next free position",
          "        at = self.seq_lens.long() + 1", rejected_by="block_model"),
    # ---- found by an outsider's one-mistake variants (the model's ring as deep as the launcher's, a ratio-3 shape,
    # large scores, poisoned scratch, the block's prefill, copies never waited, the plan's own launch compiled) ----
    Plant("the ring's ready parity counted for 2 slots whatever STAGES is: in the launcher's 3-slot ring a wait "
          "asks for a phase a trip ahead",
          "        mbarrier.wait(ready.index(slot), (j // STAGES) & 1)",
          "        mbarrier.wait(ready.index(slot), (j // 2) & 1)", rejected_by="decode_model"),
    Plant("the ring's refill bounded one block too far: the last refill loads a block no wait ever covers",
          "        if j + STAGES < n_blocks:", "        if j + STAGES <= n_blocks:", rejected_by="decode_model"),
    Plant("the combine weighs split s by 2^m_s, the common maximum not subtracted: fine for small scores, inf/inf "
          "once m_s passes 128", "gl.exp2(m_t - m), 0.0)", "gl.exp2(m_t), 0.0)",
          rejected_by="decode_model"),
    Plant("the running maxima kept in a bf16 scratch: each split's weight 2^(m_s − m) off by up to 2^(1/2) at large "
          "scores", "        self.part_m = torch.empty(places, dtype=torch.float32, device=q.device)",
          "        self.part_m = torch.empty(places, dtype=torch.bfloat16, device=q.device)",
          rejected_by="decode_model"),
    Plant("the combine's rows padded to GROUP, not to a power of 2: gl.arange(0, 3) at 6 query heads on 2",
          '"GROUP_P2": 1 << (group - 1).bit_length()', '"GROUP_P2": group', rejected_by="decode_model"),
    Plant("the combine's maximum taken over every split of the plan, also those that stored nothing (the scratch "
          "holds whatever it held)",
          "    for t0 in range(0, used, UNROLL):\n        for u in gl.static_range(UNROLL):\n            live = t0 + u < used",
          "    for t0 in range(0, splits, UNROLL):\n        for u in gl.static_range(UNROLL):\n            live = t0 + u < splits",
          rejected_by="decode_model"),
    Plant("the unrolled sums' last step not masked past ``used``: up to UNROLL − 1 splits that stored nothing added",
          "            in_use = t < used\n", "            in_use = t < splits\n", rejected_by="decode_model"),
    Plant("the counters made with torch.empty: the first call counts from whatever the memory held",
          "        self.arrivals = torch.zeros(B * Hkv, dtype=torch.int32, device=q.device)",
          "        self.arrivals = torch.empty(B * Hkv, dtype=torch.int32, device=q.device)",
          rejected_by="decode_model"),
    Plant("the block's prefill attends without the causal mask: each prompt token sees the ones after it",
          "gqa_attention(q.contiguous(), k.contiguous(), v.contiguous(), causal=True)",
          "gqa_attention(q.contiguous(), k.contiguous(), v.contiguous(), causal=False)", rejected_by="block_model"),
    Plant("the decode launched on 8 warps with its layouts built for DECODE_CONFIG's 4",
          '        self.kwargs = {**decode_constexprs(group, cfg), "num_warps": cfg["num_warps"]}',
          '        self.kwargs = {**decode_constexprs(group, cfg), "num_warps": 8}', rejected_by="decode_sm_90"),
    Plant("the combine reads the partials' O through L1 (no .cg)",
          "                          mask=(valid & in_use)[:, None], other=0.0, cache_modifier=\".cg\")",
          "                          mask=(valid & in_use)[:, None], other=0.0)", rejected_by="decode_sm_90"),
    # ---- caught on a GPU ----
    Plant("the ring's ready parity counted for 2 slots whatever STAGES is: in the launcher's 3-slot ring a wait "
          "returns before its block has landed",
          "        mbarrier.wait(ready.index(slot), (j // STAGES) & 1)",
          "        mbarrier.wait(ready.index(slot), (j // 2) & 1)", rejected_by="correct_attention", gpu=True),
]
