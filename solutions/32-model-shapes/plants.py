"""Planted mistakes of lesson 32: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    # ---- caught without a GPU ----
    Plant("swap-AB's tile of Cᵀ is stored at the kernel's own coordinates, not C's: rows and columns exchanged",
          "tma.async_store(c_desc, [off_n, off_m], c_smem)",
          "tma.async_store(c_desc, [off_m, off_n], c_smem)",
          rejected_by="host_model"),
    Plant("swap-AB's tile of Cᵀ is stored without the permute: a [BLOCK_M, BLOCK_N] tile written into C's "
          "[BLOCK_N, BLOCK_M] buffer",
          "c_smem.store(gl.permute(values, (1, 0)).to(c_desc.dtype))", "c_smem.store(values.to(c_desc.dtype))",
          rejected_by="host_model"),
    Plant("swap-AB's TMA store is handed the tile in registers instead of the shared buffer it was written to",
          "        tma.async_store(c_desc, [off_n, off_m], c_smem)", "        tma.async_store(c_desc, [off_n, off_m], values)",
          rejected_by="host_model"),
    Plant("split-K's slices laid out BLOCK_N × BLOCK_M: the offsets of a slice do not have the accumulator's shape",
          "            in_tile = tile_offsets(BLOCK_M, BLOCK_N, acc_layout)",
          "            in_tile = tile_offsets(BLOCK_N, BLOCK_M, acc_layout)",
          rejected_by="host_model"),
    Plant("each slice of K is k_tiles // SPLIT_K steps long: when SPLIT_K does not divide the steps, the last ones "
          "are never summed",
          "k_last = (split + 1) * k_tiles // SPLIT_K", "k_last = k_first + k_tiles // SPLIT_K",
          rejected_by="host_model"),
    Plant("the tile's counter is never reset: the next call's units count from SPLIT_K and no one adds the slices",
          "                gl.atomic_xchg(arrivals_ptr + tile, 0, sem=\"relaxed\", scope=\"gpu\")\n", "",
          rejected_by="host_model"),
    Plant("split-K: the last unit starts from its own sum in registers and adds the other slices to it (one read "
          "fewer): the order of the additions depends on which unit arrives last, so C's bits change from run to run",
          """                total = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
                total2 = total
                if BLOCK_N2 > 0:
                    total2 = gl.zeros([BLOCK_M, BLOCK_N2], gl.float32, layout=acc2_layout)
                for s in range(SPLIT_K):
                    # .cg: from L2, where the other SMs' slices are; this SM's L1 may hold nothing of them.
                    total += gl.load(slices + s * TILE + in_tile, cache_modifier=".cg")
                    if BLOCK_N2 > 0:
                        total2 += gl.load(slices + s * TILE + in_strip, cache_modifier=".cg")
""",
          """                total = acc
                total2 = acc2
                for s in range(SPLIT_K):
                    if s != split:
                        total += gl.load(slices + s * TILE + in_tile, cache_modifier=".cg")
                        if BLOCK_N2 > 0:
                            total2 += gl.load(slices + s * TILE + in_strip, cache_modifier=".cg")
""",
          rejected_by="split_order"),
    Plant("split-K on a wide tile: the second strip's sum starts from the last unit's own registers (the first strip's "
          "is added in order): its bits depend on which unit arrives last",
          """                total2 = total
                if BLOCK_N2 > 0:
                    total2 = gl.zeros([BLOCK_M, BLOCK_N2], gl.float32, layout=acc2_layout)
                for s in range(SPLIT_K):
                    # .cg: from L2, where the other SMs' slices are; this SM's L1 may hold nothing of them.
                    total += gl.load(slices + s * TILE + in_tile, cache_modifier=".cg")
                    if BLOCK_N2 > 0:
                        total2 += gl.load(slices + s * TILE + in_strip, cache_modifier=".cg")
""",
          """                total2 = acc2
                for s in range(SPLIT_K):
                    total += gl.load(slices + s * TILE + in_tile, cache_modifier=".cg")
                    if BLOCK_N2 > 0:
                        if s != split:
                            total2 += gl.load(slices + s * TILE + in_strip, cache_modifier=".cg")
""",
          rejected_by="split_order"),
    Plant("operand_views leaves M and N as they are under swap-AB: the kernel, which computes Cᵀ, counts W's rows "
          "as the activations' and leaves tiles of C out",
          "    return (b if b_kn else b.t()), a, N, M", "    return (b if b_kn else b.t()), a, M, N",
          rejected_by="launcher_paths"),
    Plant("the plan no longer refuses SPLIT_K above the K steps: a slice of K may be empty, and its unit, which waits "
          "for no K step, still releases the ring slot of the step before (one arrival too many for the producer)",
          "if not (isinstance(split, int) and 1 <= split <= triton.cdiv(K, BK)):",
          "if not (isinstance(split, int) and 1 <= split):",
          rejected_by="plan_refusals"),
    Plant("the atomic that announces a slice is relaxed: another SM may see the count before the slice itself",
          'arrived = gl.atomic_add(arrivals_ptr + tile, 1, sem="acq_rel", scope="gpu")',
          'arrived = gl.atomic_add(arrivals_ptr + tile, 1, sem="relaxed", scope="gpu")',
          rejected_by="split_protocol_sm_90"),
    Plant("no barrier before the atomic: one thread may announce the slice before the others have stored theirs",
          "            gl.barrier()\n", "", rejected_by="host_model"),
    Plant("the last unit reads the slices through L1 (no cache_modifier): a stale line may stand for another SM's slice",
          'total += gl.load(slices + s * TILE + in_tile, cache_modifier=".cg")',
          "total += gl.load(slices + s * TILE + in_tile)",
          rejected_by="split_protocol_sm_90"),
    Plant("a unit's first K step releases a ring slot when K's slice does not start at 0: the producer refills a slot "
          "the consumers are still reading",
          "mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES), pred=k > k_first)",
          "mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES), pred=k > 0)",
          rejected_by="host_model"),
    Plant("the rounds of a persistent grid counted as units // programs: a last round that is only partly full is "
          "left out, and the cost model prices 192 tiles on 132 SMs as one round",
          "rounds = -(-units // programs)", "rounds = units // programs", rejected_by="persistent_grid"),
    Plant("one program an SM whatever the units: a launch of 16 tiles gets 132 programs, and the cost model shares L2 "
          "among 132 programs where 16 run",
          "programs = min(units, sms)", "programs = sms", rejected_by="persistent_grid"),
    Plant("the evict_first hint on the activations' copies instead of W's: the policies' sides swapped",
          '"A_POLICY": W_STREAMED if config.get("W_FIRST") and swap_ab else None',
          '"A_POLICY": W_STREAMED if config.get("W_FIRST") and not swap_ab else None',
          rejected_by="w_hint_sm_90"),
    Plant("a wide tile's second strip is stored over its first: its columns start at the tile's, not BLOCK_N to "
          "their right",
          "store_tile(c2_desc, c2_smem, acc2, pid_m * BLOCK_M, pid_n * (BLOCK_N + BLOCK_N2) + BLOCK_N, SWAP_AB)",
          "store_tile(c2_desc, c2_smem, acc2, pid_m * BLOCK_M, pid_n * (BLOCK_N + BLOCK_N2), SWAP_AB)",
          rejected_by="host_model"),
    Plant("a wide tile's tiles are counted BLOCK_N columns wide: the grid walks past the tiles that exist and some "
          "programs wait for K steps the producer never loads",
          "    num_pid_n = gl.cdiv(N, BLOCK_N + BLOCK_N2)\n    k_tiles = gl.cdiv(K, BLOCK_K)\n    step = 0\n"
          "    for unit in range(gl.program_id(0), num_pid_m * num_pid_n * SPLIT_K, gl.num_programs(0)):\n"
          "        tile, split, pid_m, pid_n, k_first, k_last = work_unit(unit, num_pid_m, num_pid_n, k_tiles, SPLIT_K, "
          "GROUP_M)\n        acc, acc2",
          "    num_pid_n = gl.cdiv(N, BLOCK_N)\n    k_tiles = gl.cdiv(K, BLOCK_K)\n    step = 0\n"
          "    for unit in range(gl.program_id(0), num_pid_m * num_pid_n * SPLIT_K, gl.num_programs(0)):\n"
          "        tile, split, pid_m, pid_n, k_first, k_last = work_unit(unit, num_pid_m, num_pid_n, k_tiles, SPLIT_K, "
          "GROUP_M)\n        acc, acc2",
          rejected_by="host_model"),
    # ---- issue 39: the plans and descriptors Linear keeps (the toolkit's checks, gluon_course.nvidia.kept_plans) ----
    Plant("the descriptors are kept by the tensors' Python ids: a view of other memory that takes a freed view's id "
          "gets the freed view's descriptors",
          "kept.kept_descriptors(self.descriptors, (a.data_ptr(), b.data_ptr(), c.data_ptr()), make)",
          "kept.kept_descriptors(self.descriptors, (id(a), id(b), id(c)), make)", rejected_by="kept_plans"),
    Plant("past PLANS_KEPT the newest plan is evicted, not the oldest: every new signature rebuilds its plan on every "
          "call", "                self.plans.popitem(last=False)", "                self.plans.popitem()",
          rejected_by="kept_plans"),
    # ---- caught on a GPU ----
    Plant("use_acc=False: every K step's products overwrite acc instead of adding to it",
          "acc = warpgroup_mma(a, b, acc, is_async=True)", "acc = warpgroup_mma(a, b, acc, is_async=True, use_acc=False)",
          rejected_by="correct_paths", gpu=True),
]
