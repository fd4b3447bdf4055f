"""Planted mistakes of lesson 18: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

RELEASE = "            mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES), pred=k > 0)\n"
GAP = ("            ### BEGIN SOLUTION: the previous step's products are done: release the slot they read to the "
       "producer\n"
       "            # Not this step's slot: its products may still be reading it. The first K step of a tile has nothing to\n"
       "            # release here: the previous tile's last slot was released after its final wait.\n")
RETIRE = "            acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b_ring.index(slot)))\n"
EPILOGUE_READ = "        c = acc_tmem.load(acc_layout).to(c_ptr.dtype.element_ty)\n"
EPILOGUE_COMMENT = ("        # In registers now: the MMA warp may start the next tile in tensor memory while this one is "
                    "stored.\n")
EPILOGUE_RELEASE = "        mbarrier.arrive(acc_empty)\n"
WS_CALL = ("        (mma_partition, (c_ptr, a_ring, b_ring, ready, empty, M, N, K, stride_cm, stride_cn,\n"
           "                         BLOCK_M, BLOCK_N, BLOCK_K, STAGES, GROUP_M, acc_layout)),\n"
           "        (load_partition, (a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, STAGES, GROUP_M)),\n"
           "    ], [1], [LOAD_REGS])")
WS_SWAPPED = ("        (load_partition, (a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, STAGES, GROUP_M)),\n"
              "        (mma_partition, (c_ptr, a_ring, b_ring, ready, empty, M, N, K, stride_cm, stride_cn,\n"
              "                         BLOCK_M, BLOCK_N, BLOCK_K, STAGES, GROUP_M, acc_layout)),\n"
              "    ], {counts})")

PLANTS = [
    # ---- caught without a GPU ----
    Plant("the producer does not ask for its registers (no worker_num_regs): no register reallocation, so the "
          "consumers cannot take more than the launch gave them",
          "    ], [1], [LOAD_REGS])", "    ], [1])",
          rejected_by="partitions_sm_90", gpu=False),
    Plant("the producer asks for 232 registers, as many as a consumer keeps: the consumers get no more than that",
          "    ], [1], [LOAD_REGS])", "    ], [1], [232])",
          rejected_by="partitions_sm_90", gpu=False),
    Plant("one consumer warpgroup for the 128 × 256 tile (num_warps=4): a thread would hold 256 accumulator registers, "
          "so ptxas spills hundreds of bytes to the stack frame (cuobjdump's STACK; LOCAL stays 0) and serializes the "
          "wgmma instructions",
          '"num_warps": 8, "STAGES": 4', '"num_warps": 4, "STAGES": 4', rejected_by="config_fits", gpu=False),
    Plant("the consumers wait for every group in the K loop (warpgroup_mma_wait(0)): correct, but no product runs on "
          "while the next slot is waited for; the loop still holds one WARPGROUP.DEPBAR.LE, of depth 0",
          "acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b_ring.index(slot)))",
          "acc, _, _ = warpgroup_mma_wait(0, deps=(acc, a_ring.index(slot), b_ring.index(slot)))",
          rejected_by="consumer_loop_sm_90", gpu=False),
    Plant("LOAD_REGS 232 in CONFIG: the consumers would be left 136 registers, so ptxas drops every setmaxnreg (its "
          "note C7507) and all warps run at the launch's count; partitions_sm_90 compiles the course's LOAD_REGS 40",
          '"GROUP_M": 8,\n          "LOAD_REGS": 40}', '"GROUP_M": 8,\n          "LOAD_REGS": 232}',
          rejected_by="reallocation_of_config", gpu=False),
    Plant("a four-warp producer (worker_num_warps=[4]): it asks for its 40 registers, but its warpgroup has no idle "
          "warp, so the listing holds one TRY_ALLOC 0x28 and two DEALLOC 0x18 where a one-warp producer has two and three",
          "    ], [1], [LOAD_REGS])", "    ], [4], [LOAD_REGS])", rejected_by="partitions_sm_90", gpu=False),
    Plant("the partitions in the wrong order, the producer first: it runs on the kernel's 8 warps, the consumers on "
          "the one worker warp, where their accumulator layout (built for 8 warps) cannot be",
          WS_CALL, WS_SWAPPED.format(counts="[1], [LOAD_REGS]"), rejected_by="partitions_sm_90", gpu=False),
    Plant("the partitions in the wrong order with the consumers given 8 worker warps: 16 warps leave 128 registers a "
          "thread, and ptxas refuses the accumulator's wgmma (a PTXASError, translated)",
          WS_CALL, WS_SWAPPED.format(counts="[8], [LOAD_REGS]"), rejected_by="partitions_sm_90", gpu=False),
    Plant("the producer's first trip waits for a release that never comes (parity 0 instead of 1 on a fresh empty "
          "barrier): both partitions wait for each other, caught by the host model",
          "mbarrier.wait(empty.index(slot), ((step // STAGES) & 1) ^ 1)",
          "mbarrier.wait(empty.index(slot), (step // STAGES) & 1)",
          rejected_by="host_model", gpu=False),
    Plant("the consumers wait on ready with the producer's parity (^ 1): their first trip does not wait at all, and "
          "every later wait is for the slot's copy of the previous trip, so each slot is read one trip early; the host "
          "model says so at the first read of a slot no copy has reached",
          "            mbarrier.wait(ready.index(slot), (step // STAGES) & 1)\n            acc = warpgroup_mma",
          "            mbarrier.wait(ready.index(slot), ((step // STAGES) & 1) ^ 1)\n            acc = warpgroup_mma",
          rejected_by="host_model", gpu=False),
    Plant("the slot is released before the wait that retires its products: TMA may overwrite it while wgmma reads "
          "it, caught by the host model (which lets the producer run the moment a slot is released)",
          RETIRE + GAP + RELEASE + "            ### END SOLUTION\n",
          GAP + RELEASE + "            ### END SOLUTION\n" + RETIRE, rejected_by="host_model", gpu=False),
    Plant("the release names this step's slot instead of the previous one: the producer overwrites the slot the "
          "running products read, caught by the host model",
          "mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES), pred=k > 0)",
          "mbarrier.arrive(empty.index(slot))", rejected_by="host_model", gpu=False),
    # ---- caught on a GPU ----
    Plant("the tile's last slot is never released: the producer waits for it forever on the program's next tile "
          "(a hang, killed by the child process's time limit)",
          "        mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES))\n\n",
          "\n", rejected_by="correct_tma_shapes", gpu=True),
    Plant("use_acc=False: every K step's products overwrite acc instead of adding to it",
          "acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc, is_async=True)",
          "acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc, is_async=True, use_acc=False)",
          rejected_by="correct_tma_shapes", gpu=True),
    # ---- the Blackwell kernel (sm_100, compiled only) ----
    Plant("Blackwell: the products release nothing (no mbarriers= on tcgen05_mma): the producer waits for its second "
          "trip round the ring forever (a hang on a GPU)",
          "use_acc=k > 0,\n                        mbarriers=[empty.index(slot)])", "use_acc=k > 0)",
          rejected_by="tcgen05_mma_loop_sm_100", gpu=False),
    Plant("Blackwell: no tcgen05_commit(acc_ready) after a tile's products: the epilogue waits for its first tile "
          "forever (a hang on a GPU)",
          "        tcgen05_commit(acc_ready)\n", "", rejected_by="tcgen05_mma_loop_sm_100", gpu=False),
    Plant("Blackwell: use_acc left at its default (True): each tile's products add to the previous tile's sums, the "
          "first tile's to whatever tensor memory held",
          "use_acc=k > 0,\n                        mbarriers", "mbarriers", rejected_by="tcgen05_mma_loop_sm_100",
          gpu=False),
    Plant("Blackwell: the epilogue hands the accumulator back before reading it: the MMA warp may overwrite tensor "
          "memory with the next tile while the epilogue still reads this one",
          EPILOGUE_READ + EPILOGUE_COMMENT + EPILOGUE_RELEASE, EPILOGUE_RELEASE + EPILOGUE_READ + EPILOGUE_COMMENT,
          rejected_by="tcgen05_epilogue_sm_100", gpu=False),
]
