"""Planted mistakes of lesson 25: each must be rejected by the check whose key it names."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("the loop waits with wait_group(1): with one group in flight that waits for nothing, and tile i + 1 is read "
          "from LDS while its copies may still be on their way (a prefetch that waits for the wrong group)",
          "        async_copy.wait_group(0)\n        gl.barrier()\n        async_copy.buffer_load_to_shared(a_smem",
          "        async_copy.wait_group(1)\n        gl.barrier()\n        async_copy.buffer_load_to_shared(a_smem",
          rejected_by="copy_wait"),
    Plant("the same wrong wait, seen by the host model: the read of tile i + 1 overtakes its copy",
          "        async_copy.wait_group(0)\n        gl.barrier()\n        async_copy.buffer_load_to_shared(a_smem",
          "        async_copy.wait_group(1)\n        gl.barrier()\n        async_copy.buffer_load_to_shared(a_smem",
          rejected_by="host_model"),
    Plant("the step multiplies tile i read from LDS again, as version 4 did, instead of the registers read the step "
          "before: correct, but the MFMAs wait for the reads once more",
          "        acc = cdna3.mfma(a, b, acc)\n        # Tile i + 1's group",
          "        acc = cdna3.mfma(a_smem.index(i % 2).load(a_layout), b_smem.index(i % 2).load(b_layout), acc)\n"
          "        # Tile i + 1's group",
          rejected_by="mfma_first"),
    Plant("the prologue waits for both tiles (wait_group(0)): correct, but tile 1's copies are waited for before the "
          "loop starts",
          "    async_copy.wait_group(1)\n    gl.barrier()\n    a = a_smem.index(0)",
          "    async_copy.wait_group(0)\n    gl.barrier()\n    a = a_smem.index(0)",
          rejected_by="prologue"),
    Plant("a scheduling wall (gl.amd.hint.sched_barrier()) right after the step's MFMAs: LLVM may no longer move the "
          "copies of tile i + 2 up among them, and they issue in one burst after the last MFMA; the first instruction "
          "of each kind keeps its place, the step's time does not",
          "        acc = cdna3.mfma(a, b, acc)\n        # Tile i + 1's group",
          "        acc = cdna3.mfma(a, b, acc)\n        gl.amd.hint.sched_barrier()\n        # Tile i + 1's group",
          rejected_by="time_model"),
    Plant("a scheduling wall between the copies of tile i + 2 and the reads of tile i + 1: LLVM then issues the wait, "
          "the barrier and the copies ahead of the step's MFMAs, which wait behind them",
          "        async_copy.commit_group()\n        # Tile i + 1 from LDS",
          "        async_copy.commit_group()\n        gl.amd.hint.sched_barrier()\n        # Tile i + 1 from LDS",
          rejected_by="mfma_first"),
    Plant("the step reads buffer i % 2 (tile i, which the copies of tile i + 2 are refilling) instead of (i + 1) % 2",
          "        a = a_smem.index((i + 1) % 2).load(a_layout)\n", "        a = a_smem.index(i % 2).load(a_layout)\n",
          rejected_by="exact_odd_shapes", gpu=True),
]
