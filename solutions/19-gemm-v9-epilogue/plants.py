"""Planted mistakes of lesson 19: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

EPILOGUE_TAIL = ("        c_smem.store(acc.to(c_desc.dtype))\n"
                 "        # The threads' writes to shared memory must be visible to TMA, which reads through the "
                 "asynchronous proxy.\n"
                 "        fence_async_shared()\n"
                 "        # TMA clips the tile at C's edges: no mask. The consumers go on to the next tile while it writes.\n"
                 "        tma.async_store(c_desc, [pid_m * BLOCK_M, pid_n * BLOCK_N], c_smem)\n")

PLANTS = [
    # ---- caught without a GPU ----
    Plant("no fence_async_shared() between the threads' write of C's tile and TMA's read of it. Triton 3.9.0's proxy-"
          "fence pass inserts one anyway (the machine code is the same, FENCE.VIEW.ASYNC.S included), so this kernel "
          "works with this compiler; the host model holds the kernel to what it says, as the PTX memory model does",
          "        fence_async_shared()\n        # TMA clips", "        # TMA clips",
          rejected_by="host_model", gpu=False),
    Plant("the buffer is rewritten before the last tile's TMA store has read it (no store_wait before the write)",
          "        tma.store_wait(0)\n        c_smem.store", "        c_smem.store",
          rejected_by="host_model", gpu=False),
    Plant("the consumers wait for every group in the K loop (warpgroup_mma_wait(0)): correct, but each step's products "
          "are waited for before the next slot; the loop still holds one WARPGROUP.DEPBAR.LE, of depth 0",
          "acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b))",
          "acc, _, _ = warpgroup_mma_wait(0, deps=(acc, a_ring.index(slot), b))",
          rejected_by="b_layouts_sm_90", gpu=False),
    Plant("the store's wait moved from before the next write of c_smem to right after the store: the same two "
          "bulk-group waits in the listing, no race, but each tile waits for its own store before the next tile's "
          "products, so the store overlaps nothing (the lesson's point is gone)",
          "        tma.store_wait(0)\n" + EPILOGUE_TAIL, EPILOGUE_TAIL + "        tma.store_wait(0)\n",
          rejected_by="host_model", gpu=False),
    Plant("LOAD_REGS 232 in CONFIG: the consumers would be left 136 registers, so ptxas drops every setmaxnreg and "
          "all warps run at the launch's count; the checks at the course's tile (LOAD_REGS 40) cannot see it",
          '"GROUP_M": 8,\n          "LOAD_REGS": 40}', '"GROUP_M": 8,\n          "LOAD_REGS": 232}',
          rejected_by="reallocation_of_config", gpu=False),
    Plant("the consumers wait on ready with the producer's parity (^ 1): each slot is read one trip early, the first "
          "trip's without any wait",
          "mbarrier.wait(ready.index(slot), (step // STAGES) & 1)",
          "mbarrier.wait(ready.index(slot), ((step // STAGES) & 1) ^ 1)", rejected_by="host_model", gpu=False),
    Plant("an N × K B read at K × N coordinates: the products use the wrong tiles of the weights",
          "                tma.async_load(b_desc, [pid_n * BLOCK_N, k * BLOCK_K], ready.index(slot), b_ring.index(slot))",
          "                tma.async_load(b_desc, [k * BLOCK_K, pid_n * BLOCK_N], ready.index(slot), b_ring.index(slot))",
          rejected_by="host_model", gpu=False),
    Plant("a ring of 4 slots beside C's 64 KiB tile: 4 × 48 KiB + 64 KiB = 256 KiB, more than a program may use",
          '"num_warps": 8, "STAGES": 3, "GROUP_M": 8,', '"num_warps": 8, "STAGES": 4, "GROUP_M": 8,',
          rejected_by="config_fits", gpu=False),
    Plant("the program ends without waiting for its last TMA store: its shared memory may be reused while TMA reads it",
          "    # The last tile's store must finish before the program (and its shared memory) ends.\n    tma.store_wait(0)\n",
          "", rejected_by="host_model", gpu=False),
    # ---- caught on a GPU ----
    Plant("the producer's first trip waits on a fresh empty barrier with parity 0: a hang, killed by the child "
          "process's time limit",
          "mbarrier.wait(empty.index(slot), ((step // STAGES) & 1) ^ 1)",
          "mbarrier.wait(empty.index(slot), (step // STAGES) & 1)",
          rejected_by="correct_tma_shapes", gpu=True),
    Plant("use_acc=False: every K step's products overwrite acc instead of adding to it",
          "acc = warpgroup_mma(a_ring.index(slot), b, acc, is_async=True)",
          "acc = warpgroup_mma(a_ring.index(slot), b, acc, is_async=True, use_acc=False)",
          rejected_by="correct_tma_shapes", gpu=True),
]
