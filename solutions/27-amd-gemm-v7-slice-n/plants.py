"""Planted mistakes of lesson 27: each must be rejected by the check whose key it names."""
from pathlib import Path

from gluon_course.grading import Plant

_SOLUTION = (Path(__file__).parent / "solution.py").read_text()
_LEFT = '            acc_left = cdna3.mfma(a, bl, acc_left, cd_regclass="a")\n'
_RIGHT = '            acc_right = cdna3.mfma(a, br, acc_right, cd_regclass="a")\n'
_REGIONS = _SOLUTION[_SOLUTION.index(_LEFT):_SOLUTION.index(_RIGHT) + len(_RIGHT)]

PLANTS = [
    Plant("the loop's MFMAs leave the accumulators' register file to the compiler (no cd_regclass): correct, but "
          "Triton 3.9.0 keeps them in ordinary VGPRs, the operands go to the AGPRs, and the loop moves values between "
          "the two files",
          _REGIONS, _REGIONS.replace(', cd_regclass="a")', ")"), rejected_by="agpr_accumulators"),
    Plant("cd_regclass=\"a\" left off the right region's MFMA only (the left one keeps it): correct, but the loop's "
          "right-half MFMAs then accumulate partly in ordinary VGPRs, and a count of moves or AGPRs alone does not "
          "show it",
          _RIGHT, _RIGHT.replace(', cd_regclass="a")', ")"), rejected_by="agpr_accumulators"),
    Plant("the right region waits with wait_group(3): the next tile's A and left half may still be in flight when "
          "they are read",
          _RIGHT + "            async_copy.wait_group(2)\n", _RIGHT + "            async_copy.wait_group(3)\n",
          rejected_by="host_model"),
    Plant("the right region's copy of B's right half is left out: from the third tile on, the right half is "
          "multiplied from a stale buffer (and the regions copy 12, 0, 12, 0)",
          "            copy_right(br_smem.index(s), b_ptr, br_offsets, br_cols, b_k, k0, K)\n", "",
          rejected_by="region_copies"),
    Plant("the right region reads the next tile's left half from buffer s (this tile's, being refilled) instead "
          "of 1 - s",
          "            bl = bl_smem.index(1 - s).load(b_layout)\n", "            bl = bl_smem.index(s).load(b_layout)\n",
          rejected_by="exact_odd_shapes", gpu=True),
]
