"""Planted mistakes of lesson 16: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

REFILL = ("        load_tiles(a_desc, b_desc, ready, a_ring, b_ring, pid_m * BLOCK_M, pid_n * BLOCK_N, i + STAGES - 1,\n"
          "                   STAGES, i + STAGES - 1 < k_tiles)\n")

PLANTS = [
    # ---- caught without a GPU ----
    Plant("the wait keeps lesson 15's depth 0: correct, but each step's products are waited for before the next tile, "
          "as in lesson 15",
          "warpgroup_mma_wait(1, deps=", "warpgroup_mma_wait(0, deps=",
          rejected_by="wait_depth", gpu=False),
    Plant("the refill moved before the wait (right after the products start): the previous step's products may still "
          "be reading the slot TMA overwrites",
          "        acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b_ring.index(slot)))\n"
          "        # Only now may TMA overwrite that slot: tile i + STAGES - 1 goes exactly there.\n" + REFILL,
          "        # Only now may TMA overwrite that slot: tile i + STAGES - 1 goes exactly there.\n" + REFILL
          + "        acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b_ring.index(slot)))\n",
          rejected_by="refill_after_wait", gpu=False),
    Plant("the store's mask admits one column too many (offs_cn < N + 1): the mask compares N, so the check that "
          "only asked whether N reached a comparison accepted it",
          "    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)",
          "    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N + 1)", rejected_by="store_masked", gpu=False),
    # ---- caught on a GPU ----
    Plant("the refill one tile too far ahead (tile i + STAGES): it lands in the slot being read, and tile STAGES - 1 is "
          "never asked for, so its barrier never completes and the kernel hangs",
          "pid_n * BLOCK_N, i + STAGES - 1,\n                   STAGES, i + STAGES - 1 < k_tiles)",
          "pid_n * BLOCK_N, i + STAGES,\n                   STAGES, i + STAGES < k_tiles)",
          rejected_by="correct_tma_shapes", gpu=True),
    Plant("use_acc=False: every K step's products overwrite acc instead of adding to it",
          "acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc, is_async=True)",
          "acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc, is_async=True, use_acc=False)",
          rejected_by="correct_tma_shapes", gpu=True),
    Plant("a ring of 5 slots: 5 × 48 KiB is 240 KiB, more than the 227 KiB a program may have",
          '"num_warps": 8, "STAGES": 4}', '"num_warps": 8, "STAGES": 5}',
          rejected_by="config_fits", gpu=False),
    Plant("the 128 × 256 tile on one warpgroup (num_warps=4): 256 accumulator registers a thread, more than a thread "
          "may have, so ptxas spills them to the stack frame (which cuobjdump reports as STACK, with LOCAL 0)",
          '"num_warps": 8, "STAGES": 4}', '"num_warps": 4, "STAGES": 4}', rejected_by="config_fits", gpu=False),
    Plant("the refill one tile too far ahead, caught by the host model: it overwrites the slot the running group reads",
          "pid_n * BLOCK_N, i + STAGES - 1,\n                   STAGES, i + STAGES - 1 < k_tiles)",
          "pid_n * BLOCK_N, i + STAGES,\n                   STAGES, i + STAGES < k_tiles)",
          rejected_by="host_model", gpu=False),
]
