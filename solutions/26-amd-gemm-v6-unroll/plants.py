"""Planted mistakes of lesson 26: each must be rejected by the check whose key it names."""
from pathlib import Path

from gluon_course.grading import Plant

# One plant rewrites the whole loop: the text it replaces is read from the solution, so it cannot drift.
_SOLUTION = (Path(__file__).parent / "solution.py").read_text()
_LOOP = _SOLUTION[_SOLUTION.index("    acc = gl.zeros([BLOCK_M, BLOCK_N]"):_SOLUTION.index("    # C from the accumulator")]
_TWO_ACCUMULATORS = (_LOOP.replace("    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)\n",
                                   "    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)\n"
                                   "    acc_odd = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)\n")
                     .replace("acc = cdna3.mfma(a_odd, b_odd, acc)", "acc_odd = cdna3.mfma(a_odd, b_odd, acc_odd)")
                     + "    acc += acc_odd\n")

PLANTS = [
    Plant("an unroll that spills: the odd steps accumulate into an accumulator of their own (summed at the end), so "
          "two 256 × 256 accumulators are live at once, 512 registers before any operand",
          _LOOP, _TWO_ACCUMULATORS, rejected_by="budget_gfx950"),
    Plant("the second step waits with wait_group(1): with one group in flight that waits for nothing, and tile i + 2 "
          "is read before its copies land",
          "        acc = cdna3.mfma(a_odd, b_odd, acc)\n        async_copy.wait_group(0)\n",
          "        acc = cdna3.mfma(a_odd, b_odd, acc)\n        async_copy.wait_group(1)\n",
          rejected_by="host_model"),
    Plant("the same wait, seen in the machine code: the second step's s_waitcnt lets 16 copies stay in flight",
          "        acc = cdna3.mfma(a_odd, b_odd, acc)\n        async_copy.wait_group(0)\n",
          "        acc = cdna3.mfma(a_odd, b_odd, acc)\n        async_copy.wait_group(1)\n",
          rejected_by="copy_waits"),
    Plant("the second step refills buffer 0 (which holds tile i + 2, not yet read) instead of buffer 1",
          "        async_copy.buffer_load_to_shared(a_smem.index(1), a_ptr, a_offsets,",
          "        async_copy.buffer_load_to_shared(a_smem.index(0), a_ptr, a_offsets,",
          rejected_by="exact_odd_shapes", gpu=True),
]
