"""Planted mistakes of lesson 37: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    # ---- caught without a GPU: the host model ----
    Plant("v3: block j's V slot released before its P·V retires: the producer may refill it under the tensor cores",
          "        s, o, _, _, _ = warpgroup_mma_wait(0, deps=(s_next, o, k_next, p, v_cur))\n"
          "        mbarrier.arrive(k_empty.index(nxt))\n        mbarrier.arrive(v_empty.index(slot))\n",
          "        mbarrier.arrive(v_empty.index(slot))\n"
          "        s, o, _, _, _ = warpgroup_mma_wait(0, deps=(s_next, o, k_next, p, v_cur))\n"
          "        mbarrier.arrive(k_empty.index(nxt))\n", rejected_by="v3_model"),
    Plant("v4: block j's V slot released before its P·V retires (FA3's order, where P·V outlives S_{j+1}'s wait)",
          "        o, _, _ = warpgroup_mma_wait(0, deps=(o, p_cur, v_cur))\n        mbarrier.arrive(v_empty.index(slot))\n",
          "        mbarrier.arrive(v_empty.index(slot))\n        o, _, _ = warpgroup_mma_wait(0, deps=(o, p_cur, v_cur))\n",
          rejected_by="v4_model"),
    Plant("v4: the ring's empty barriers count one arrival where two consumers release each slot",
          "        mbarrier.init(k_empty.index(i), count=2)       # both consumers release each slot\n"
          "        mbarrier.init(v_ready.index(i), count=1)\n        mbarrier.init(v_empty.index(i), count=2)\n",
          "        mbarrier.init(k_empty.index(i), count=1)       # both consumers release each slot\n"
          "        mbarrier.init(v_ready.index(i), count=1)\n        mbarrier.init(v_empty.index(i), count=1)\n",
          rejected_by="v4_model"),
    Plant("v3 (gap 1): S_{j+1} computed from block j's slot",
          "        k_next = k_ring.index(nxt).permute((1, 0))\n        s_next = ",
          "        k_next = k_ring.index(slot).permute((1, 0))\n        s_next = ", rejected_by="v3_model"),
    Plant("v3 (gap 1): K_{j+1}'s ready barrier waited at block j's parity: S_{j+1} may read the slot before it lands",
          "        mbarrier.wait(k_ready.index(nxt), ((j + 1) // STAGES) & 1)\n        k_next = k_ring.index(nxt).permute("
          "(1, 0))\n        s_next",
          "        mbarrier.wait(k_ready.index(nxt), (j // STAGES) & 1)\n        k_next = k_ring.index(nxt).permute("
          "(1, 0))\n        s_next", rejected_by="v3_model"),
    Plant("v3: the last block's scores left unmasked (the partial block of keys, the diagonal)",
          "    s = mask_scores(s, m0, last * BLOCK_N, Sk, CAUSAL, s_layout)\n", "", rejected_by="v3_model"),
    Plant("P taken against the old maximum (the running max updated after its use)",
          "    p = gl.exp2(s * qk_scale - m_new[:, None])", "    p = gl.exp2(s * qk_scale - m_i[:, None])",
          rejected_by="v3_model"),
    Plant("v4: O not rescaled before P·V j adds to it",
          "                          use_acc=False, is_async=True)\n        o = o * alpha[:, None]\n",
          "                          use_acc=False, is_async=True)\n", rejected_by="v4_model"),
    Plant("v4: the unmasked loop runs one iteration too far (the first diagonal block's softmax unmasked)",
          "unmasked while j+1 < n_full.\n    split = gl.maximum(n_full - 1, 0)",
          "unmasked while j+1 < n_full.\n    split = n_full", rejected_by="v4_model"),
    Plant("v4 (gap 2): take_turn counts block j's turn where the loop's are turn0 + j + 1 (block 0's came first): a consumer "
          "takes two turns in a row", "        take_turn(my_turn, turn0 + j + 1, ME)\n",
          "        take_turn(my_turn, turn0 + j, ME)\n", rejected_by="v4_model"),
    Plant("v3: the unmasked loop runs to n_full where the last block has no next S: with every block full, the last one "
          "is visited twice (its next K never comes)", "unmasked_end = gl.minimum(n_full, n_all - 1)",
          "unmasked_end = n_full", rejected_by="v3_model"),
    # ---- v5: one program an SM over the tiles ----
    Plant("v5 (gap 6): the ring's block count not carried over whole: the next tile's first block waited for in the "
          "wrong slot", "        c0 += n_all\n", "        c0 += n_all - 1\n", rejected_by="v5_model"),
    Plant("v5 (gap 6): a tile's turns counted one a block, without block 0's S: the next tile's first turn taken at "
          "the wrong parity", "        turn0 += n_all + 1\n", "        turn0 += n_all\n", rejected_by="v5_model"),
    Plant("v5 (gap 5): Q released at the tile's start, before its S products: the next tile's Q may land under them",
          "    first = c0 % STAGES\n", "    first = c0 % STAGES\n    mbarrier.arrive(q_empty)\n",
          rejected_by="v5_model"),
    Plant("v5 (gap 5): Q never released: the producer waits for it before the next tile's copy",
          "    mbarrier.arrive(q_empty)\n    ### END SOLUTION", "    ### END SOLUTION", rejected_by="v5_model"),
    Plant("v5 (gap 6): the next tile counted on (t + 1) instead of read from the word: right only while one program "
          "takes every tile", "        t = gl.max(tile_word.load(mine), axis=0).to(gl.int32)\n        ### END SOLUTION",
          "        t = t + 1\n        ### END SOLUTION", rejected_by="v5_model"),
    Plant("v5: past the last tile the producer stops without a word: the consumers wait for a Q that never comes",
          "    mbarrier.arrive(q_bar)\n", "", rejected_by="v5_model"),
    Plant("v5: the last program to stop counted as the P-th arrival where the count starts at 0: the counter is "
          "never reset, and the next launch finds no tile", "    if stopped == gl.num_programs(0) - 1:",
          "    if stopped == gl.num_programs(0):", rejected_by="v5_model"),
    Plant("v5: the tiles of different heads interleaved (t % BH) while the query tile comes from t % n_m_tiles: some "
          "tiles taken twice, others never", "    return n_m_tiles - 1 - t % n_m_tiles, t // n_m_tiles",
          "    return n_m_tiles - 1 - t % n_m_tiles, t % n_m_tiles", rejected_by="v5_model"),
    Plant("v5: launched on v4's grid, one program a tile: most programs find the counter past the last tile",
          "        grid = (min(grid[0] * grid[1], sm_count(q.device)),)\n", "", rejected_by="v5_model"),
    # ---- caught without a GPU: the compiled order and resources ----
    Plant("v3 (gap 1): S_{j+1} issued synchronously: ptxas spreads some exponentials among its HGMMAs, the rest wait "
          "for it", "use_acc=False,\n                               is_async=True)\n",
          "use_acc=False)\n", rejected_by="overlap_sm_90"),
    Plant("v4 (gap 2): the turn taken after S_{j+1} is issued: S_{j+1} lands among the other consumer's products",
          "        take_turn(my_turn, turn0 + j + 1, ME)\n        ### END SOLUTION\n"
          "        s = warpgroup_mma(q_rows, k_next, gl.zeros([q_rows.shape[0], BLOCK_N], gl.float32, s_layout),\n"
          "                          use_acc=False, is_async=True)\n",
          "        ### END SOLUTION\n"
          "        s = warpgroup_mma(q_rows, k_next, gl.zeros([q_rows.shape[0], BLOCK_N], gl.float32, s_layout),\n"
          "                          use_acc=False, is_async=True)\n        take_turn(my_turn, turn0 + j + 1, ME)\n",
          rejected_by="turn_sm_90"),
    Plant("v4: S_{j+1} retired with P·V j (depth 0): block j+1's softmax waits for P·V j",
          "        s, _, _ = warpgroup_mma_wait(1, deps=(s, q_rows, k_next))\n",
          "        s, _, _ = warpgroup_mma_wait(0, deps=(s, q_rows, k_next))\n", rejected_by="turn_sm_90"),
    Plant("P rounded to fp16 for a bf16 V: the compiler cannot lower that wgmma (the sentence, not MLIR's)",
          "gl.convert_layout(p.to(gl.bfloat16)", "gl.convert_layout(p.to(gl.float16)",
          rejected_by="lesson36_facts_sm_90"),
    Plant("v3: the next block's S issued after this block's softmax (nothing runs under the softmax)",
          "        ### BEGIN SOLUTION: issue block j+1's S = Q·K_{j+1}ᵀ as an asynchronous wgmma (k_next, s_next), not "
          "waited for\n"
          "        mbarrier.wait(k_ready.index(nxt), ((j + 1) // STAGES) & 1)\n"
          "        k_next = k_ring.index(nxt).permute((1, 0))\n"
          "        s_next = warpgroup_mma(q_rows, k_next, gl.zeros(s.shape, gl.float32, s_layout), use_acc=False,\n"
          "                               is_async=True)\n"
          "        ### END SOLUTION\n"
          "        # Block j's softmax, while the tensor cores compute S_{j+1}.\n"
          "        if MASKED:\n            s = mask_scores(s, m0, j * BLOCK_N, Sk, CAUSAL, s_layout)\n"
          "        p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)\n",
          "        if MASKED:\n            s = mask_scores(s, m0, j * BLOCK_N, Sk, CAUSAL, s_layout)\n"
          "        p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)\n"
          "        mbarrier.wait(k_ready.index(nxt), ((j + 1) // STAGES) & 1)\n"
          "        k_next = k_ring.index(nxt).permute((1, 0))\n"
          "        s_next = warpgroup_mma(q_rows, k_next, gl.zeros(s.shape, gl.float32, s_layout), use_acc=False,\n"
          "                               is_async=True)\n", rejected_by="overlap_sm_90"),
    Plant("v4 (gap 2): the turn never taken in the key loop: the consumers' products interleave as they come",
          "        take_turn(my_turn, turn0 + j + 1, ME)\n", "", rejected_by="turn_sm_90"),
    Plant("v4 (gap 3): the turn handed over after the softmax (the order whose handover waits for the exponentials)",
          "        pass_turn(next_turn)\n        ### END SOLUTION\n"
          "        # In flight: S_{j+1}, then P·V j. Depth 1 retires S_{j+1} only.\n"
          "        s, _, _ = warpgroup_mma_wait(1, deps=(s, q_rows, k_next))\n"
          "        mbarrier.arrive(k_empty.index(nxt))\n"
          "        if MASKED:\n            s = mask_scores(s, m0, (j + 1) * BLOCK_N, Sk, CAUSAL, s_layout)\n"
          "        p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)\n",
          "        ### END SOLUTION\n"
          "        # In flight: S_{j+1}, then P·V j. Depth 1 retires S_{j+1} only.\n"
          "        s, _, _ = warpgroup_mma_wait(1, deps=(s, q_rows, k_next))\n"
          "        mbarrier.arrive(k_empty.index(nxt))\n"
          "        if MASKED:\n            s = mask_scores(s, m0, (j + 1) * BLOCK_N, Sk, CAUSAL, s_layout)\n"
          "        p, alpha, m_i, l_i = softmax_scores(s, m_i, l_i, qk_scale, o_layout)\n"
          "        pass_turn(next_turn)\n", rejected_by="turn_sm_90"),
    Plant("gap 4: the producer's registers not subtracted: two consumers at 252 and the producer at 24 need more than "
          "the launch holds", "    return (warpgroups * launched - load_regs) // consumers // 8 * 8",
          "    return (warpgroups * launched) // consumers // 8 * 8", rejected_by="resources_sm_90"),
    # ---- caught on a GPU ----

    Plant("the launcher checks nothing of Q, K and V (lesson 36's refusals dropped): fp16 read as bf16",
          "    v36.require_attention_args(q, k, v, cfg)\n", "", rejected_by="launcher_refuses", gpu=True),
    Plant("the launcher lets the output share memory with an input",
          '    require_separate_output(out, "out", q=q, k=k, v=v)\n', "", rejected_by="launcher_refuses", gpu=True),
]
