"""Planted mistakes of lesson 02: each is the solution with one plausible mistake, and names the key
of the check that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("the layout ignores R (always one element per thread): vector loads are lost",
          "size_per_thread=[R]", "size_per_thread=[1]",
          rejected_by="layout_r_consecutive", gpu=False),
    Plant("lanes and registers swapped (order within a thread lost): R=4 becomes 4 scalar loads",
          "return gl.BlockedLayout(size_per_thread=[R], threads_per_warp=[warp_size], warps_per_cta=[num_warps],\n"
          "                            order=[0])",
          "return gl.DistributedLinearLayout(\n"
          "        reg_bases=[[warp_size * num_warps << i] for i in range(R.bit_length() - 1)],\n"
          "        lane_bases=[[1 << i] for i in range(warp_size.bit_length() - 1)],\n"
          "        warp_bases=[[warp_size << i] for i in range(num_warps.bit_length() - 1)],\n"
          "        block_bases=[], shape=[R * warp_size * num_warps])",
          rejected_by="r_sweep_sm_90", gpu=False),
    Plant("the load is masked, the store is not: the last tile writes past the end of out (numel reaches the load's "
          "mask, which is all the check once asked)",
          "gl.store(out_ptr + offsets, values, mask=mask)", "gl.store(out_ptr + offsets, values)",
          rejected_by="masked_by_numel", gpu=False),
    Plant("off-by-one mask, caught on the CPU: offsets <= numel lets one element past the end through",
          "mask = offsets < numel", "mask = offsets <= numel", rejected_by="masked_by_numel", gpu=False),
    Plant("off-by-one mask: writes one element past the end",
          "mask = offsets < numel", "mask = offsets <= numel",
          rejected_by="exact_every_r", gpu=True),
    Plant("lanes and registers swapped, seen in Ada's (sm_89) machine code: R=4 becomes 16 scalar loads",
          "return gl.BlockedLayout(size_per_thread=[R], threads_per_warp=[warp_size], warps_per_cta=[num_warps],\n"
          "                            order=[0])",
          "return gl.DistributedLinearLayout(\n"
          "        reg_bases=[[warp_size * num_warps << i] for i in range(R.bit_length() - 1)],\n"
          "        lane_bases=[[1 << i] for i in range(warp_size.bit_length() - 1)],\n"
          "        warp_bases=[[warp_size << i] for i in range(num_warps.bit_length() - 1)],\n"
          "        block_bases=[], shape=[R * warp_size * num_warps])",
          rejected_by="r4_sm_89", gpu=False),
]
