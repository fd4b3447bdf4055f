"""Planted mistakes of lesson 33: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

TURN_WAIT = ("    # for phase 0, which consumer 0's first handover completes.\n"
             "    mbarrier.wait(my_turn, (turns & 1) ^ (1 - ME))\n")
CONSUMER_1 = "(consumer, (1, c_smem1, turn.index(1), turn.index(0)), shared)"

PLANTS = [
    # ---- caught without a GPU ----
    Plant("B's release barrier counted for one CTA (a barrier per CTA, as ready's): the first CTA multicasts B's next "
          "tile once its own consumers are done, into the other CTA's slot while that CTA's consumers may still read "
          "it; the listing's inits have no count of 2 and no release crosses the cluster",
          "    b_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout(cga_layout=[[0]]))",
          "    b_empty = mbarrier.allocate_mbarrier(batch=STAGES)",
          rejected_by="cluster_barriers_sm_90", gpu=False),
    Plant("B's tile split between the CTAs along K ([[1, 0]] on its [BLOCK_K, BLOCK_N] tile) instead of held by both, "
          "so that neither CTA would receive all of it: Triton 3.9.0 fails to lower this kernel (its "
          "ConvertTritonGPUToLLVM pass) without a message of its own; the check says, before compiling, which axis "
          "must be split and why (the toolkit's rule of what each CTA's part of C needs). (Gluon computes the "
          "multicast's CTA mask from the destination's layout, so a mask is never written by hand; the check reads it "
          "from the PTX all the same)",
          'return {"ac_cga": split, "b_cga": [[0, 0]] * len(split)}', 'return {"ac_cga": split, "b_cga": split}',
          rejected_by="cluster_sm_90", gpu=False),
    Plant("A's and C's tiles split between the CTAs along their columns ([0, 1]) where the cluster stacks its CTAs "
          "along M: Triton 3.9.0 fails in ConvertTritonGPUToLLVM without a message of its own; the check names the "
          "axis to split (the rows) and why, before compiling",
          "    split = [[1 << i, 0] for i in range(cluster.bit_length() - 1)]",
          "    split = [[0, 1 << i] for i in range(cluster.bit_length() - 1)]",
          rejected_by="cluster_sm_90", gpu=False),
    Plant("B's tile multicast without waiting on the cluster's b_empty: the first CTA's producer refills B's slot in both "
          "CTAs once its own consumers have released it (empty), while the other CTA's consumers may not yet have "
          "read the tile there. Every listing count is the solution's but one wait; the host model, running the "
          "cluster as its two CTAs, reports the multicast that overwrites the other CTA's slot",
          "            mbarrier.wait(b_empty.index(slot), phase)\n", "",
          rejected_by="host_model_cluster", gpu=False),
    Plant("B's slot released on b_empty without its predicate (pred=k > 0): each consumer's first K step of a tile "
          "releases the previous step's slot a second time, so the cluster's barrier completes a phase before the "
          "other CTA is done with the slot and the multicast overwrites it as that CTA's wgmma reads it",
          "    mbarrier.arrive(b_empty.index(slot), pred=pred)\n", "    mbarrier.arrive(b_empty.index(slot))\n",
          rejected_by="host_model_cluster", gpu=False),
    Plant("no cluster barrier before the invalidates: the first CTA retires b_empty while the other CTA's consumers "
          "may still arrive on it",
          "    gl.barrier(cluster=True)\n", "", rejected_by="host_model_cluster", gpu=False),
    Plant("B loaded without multicast=True into a tile both CTAs hold: each CTA's producer copies all of B itself, "
          "twice the L2 reads the cluster was for",
          "ready.index(slot), b_ring.index(slot),\n                               multicast=True)\n            else:",
          "ready.index(slot), b_ring.index(slot))\n            else:",
          rejected_by="cluster_sm_90", gpu=False),
    Plant("the ping-pong order barriers swapped in consumer 1's arguments (it waits on turn[0] and hands over on "
          "turn[1], as consumer 0 does): no one ever hands consumer 0 its second turn",
          CONSUMER_1, "(consumer, (1, c_smem1, turn.index(0), turn.index(1)), shared)",
          rejected_by="host_model", gpu=False),
    Plant("no wait for the turn: consumer 1 starts its tile while consumer 0 still multiplies, and its waits on the "
          "ring run more than a trip ahead of the producer (a wait's parity then names an older phase: it reads a "
          "slot the producer is refilling)",
          TURN_WAIT, "    # for phase 0, which consumer 0's first handover completes.\n", rejected_by="host_model",
          gpu=False),
    Plant("consumer 1 takes the first turn (parity ^ ME): it waits for ring slots behind consumer 0's tile, which "
          "waits for the turn: both wait forever",
          TURN_WAIT, TURN_WAIT.replace("^ (1 - ME)", "^ ME"), rejected_by="host_model", gpu=False),
    Plant("the consumers release A's slot but not B's (no arrive on b_empty): the producer waits for B's slot "
          "forever",
          "    mbarrier.arrive(b_empty.index(slot), pred=pred)\n", "",
          rejected_by="host_model_cluster", gpu=False),
    Plant("the workers' registers swapped in gl.warp_specialize ([LOAD_REGS, MMA_REGS]): consumer 1, compiled for the "
          "launch's 168 registers a thread, is cut to 40 by setmaxnreg while the producer keeps 232; ptxas says "
          "nothing, every other CPU check passes, and on the GPU consumer 1 would run without registers its code uses",
          "        (partition, (producer, (), producer_args)),\n    ], [CONSUMER_WARPS, 1], [MMA_REGS, LOAD_REGS])",
          "        (partition, (producer, (), producer_args)),\n    ], [CONSUMER_WARPS, 1], [LOAD_REGS, MMA_REGS])",
          rejected_by="pingpong_sm_90", gpu=False),
    Plant("STAGES 6 in CONFIG: 6 × 32 KiB of ring and 64 KiB of C buffers, more shared memory than a program may use",
          '"BLOCK_K": 64, "STAGES": 4, "GROUP_M": 8,', '"BLOCK_K": 64, "STAGES": 6, "GROUP_M": 8,',
          rejected_by="config_fits", gpu=False),
    Plant("step 3's subtile stored before its predecessor's store is waited for: store_wait(C_BUFFERS) leaves the "
          "store that last read the buffer in flight (with one buffer: the tile's first half) while the threads "
          "overwrite it with the second half",
          "    tma.store_wait(C_BUFFERS - 1)\n", "    tma.store_wait(C_BUFFERS)\n",
          rejected_by="host_model_subtile", gpu=False),
    Plant("the snake mirrors the row by the group's full height (GROUP_M) instead of its rows: in a partial last "
          "group the odd columns send tiles to rows past the grid and never visit others",
          "row = row + (col % 2) * (group_rows - 1 - 2 * row)", "row = row + (col % 2) * (GROUP_M - 1 - 2 * row)",
          rejected_by="tile_order", gpu=False),
    Plant("the snake without its second mirror: odd groups run left to right like even ones. Every tile is visited "
          "once (the tile_order check's first half passes), but each group starts at the far end of the grid from "
          "where the one before it ended, not the order exercise 3 asks for",
          "        col = col + (group % 2) * (num_pid_n - 1 - 2 * col)\n", "",
          rejected_by="tile_order", gpu=False),
    Plant("the ping-pong turn handed over after the tile's products finish (pass_turn after warpgroup_mma_wait(0)) in "
          "step 1's consumer: C is right and the turns still alternate, but the other consumer's products can no "
          "longer start while this one's last ones run",
          "        pass_turn(next_turn)\n        acc = warpgroup_mma_wait(0, deps=(acc,))\n"
          "        mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES))\n        # Lesson 19's epilogue",
          "        acc = warpgroup_mma_wait(0, deps=(acc,))\n        pass_turn(next_turn)\n"
          "        mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES))\n        # Lesson 19's epilogue",
          rejected_by="host_model", gpu=False),
    Plant("the snake mirrors the column one too far (num_pid_n - 2 * col): odd groups start one column past the grid "
          "and never visit their first column",
          "col = col + (group % 2) * (num_pid_n - 1 - 2 * col)", "col = col + (group % 2) * (num_pid_n - 2 * col)",
          rejected_by="tile_order", gpu=False),
    # ---- issue 39: the plans the launchers keep (the toolkit's checks, gluon_course.nvidia.kept_plans) ----
    Plant("the plan's key leaves C out of the signature: a C 2 bytes past a 16-byte boundary gets the plan of an "
          "aligned C, whose descriptor is then built without TMA's checks",
          "key = (step, kept.signature(a, b, c), tuple(sorted(config.items())), programs)",
          "key = (step, kept.signature(a, b), tuple(sorted(config.items())), programs)", rejected_by="kept_plans",
          gpu=False),
    Plant("step 3's plan gives C's descriptor a whole tile's columns instead of a subtile's: the consumer reads its "
          "tile's width off C's box (two subtiles), so it multiplies for 256 columns where B's box holds 128",
          "        c_cols = BN // c_split", "        c_cols = BN",
          rejected_by="launcher_paths"),
    Plant("the launcher no longer checks setmaxnreg's counts: LOAD_REGS=20, outside setmaxnreg's multiples of 8 from "
          "24 to 256, goes to the kernel unchecked",
          "        if not (isinstance(cfg[name], int) and 24 <= cfg[name] <= 256 and cfg[name] % 8 == 0):",
          "        if not isinstance(cfg[name], int):",
          rejected_by="plan_refusals"),
    # ---- caught on a GPU ----
    Plant("use_acc=False in the cluster's consumers: every K step's products overwrite acc instead of adding to it",
          "            acc = warpgroup_mma(a_ring.index(slot), b, acc, is_async=True)\n"
          "            acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b))\n"
          "            release_slot(",
          "            acc = warpgroup_mma(a_ring.index(slot), b, acc, is_async=True, use_acc=False)\n"
          "            acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b))\n"
          "            release_slot(",
          rejected_by="correct_tma_shapes", gpu=True),
    # ---- an exception raised in passing: the learner reads the course's sentence (the place, the likely cause) ----
    Plant("cluster_layouts uses cluster.bit_length without calling it: the learner reads that a method is used in "
          "arithmetic without its ( ), in cluster_layouts' gap",
          "range(cluster.bit_length() - 1)", "range(cluster.bit_length - 1)",
          rejected_by="cluster_sm_90", in_passing=True),
]
