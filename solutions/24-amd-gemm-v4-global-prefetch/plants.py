"""Planted mistakes of lesson 24: each must be rejected by the check whose key it names."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("the loop waits for every group (wait_group(0)): correct, but tile i + 1's copies are waited for at once, "
          "so nothing overlaps, as in version 3",
          "        async_copy.wait_group(1)\n", "        async_copy.wait_group(0)\n",
          rejected_by="next_tile_in_flight"),
    Plant("the loop waits with wait_group(2): with two groups in flight that waits for nothing, and tile i is read "
          "before its copies land",
          "        async_copy.wait_group(1)\n", "        async_copy.wait_group(2)\n",
          rejected_by="next_tile_in_flight"),
    Plant("the prologue's copies of tile 0 are left out: the loop starts from a group that was never issued",
          "    async_copy.buffer_load_to_shared(a_smem.index(0), a_ptr, a_offsets, mask=(offs_am[:, None] < M) & "
          "(offs_ak[None, :] < K))\n", "",
          rejected_by="prologue"),
    Plant("CONFIG asks for BLOCK_K = 128: two stages of 256 × 128 and 128 × 256 padded tiles take 264 KiB of LDS, "
          "more than the 160 KiB a gfx950 workgroup may allocate (the launch would fail)",
          'CONFIG = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 4}',
          'CONFIG = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 128, "num_warps": 4}',
          rejected_by="config_fits"),
    Plant("the prologue copies tile 0 into buffer 1: the first step multiplies whatever buffer 0 held",
          "async_copy.buffer_load_to_shared(b_smem.index(0), b_ptr, b_offsets,",
          "async_copy.buffer_load_to_shared(b_smem.index(1), b_ptr, b_offsets,",
          rejected_by="exact_odd_shapes", gpu=True),
    Plant("the MFMAs read buffer (i + 1) % 2, whose copies the step has just started, instead of i % 2: the machine "
          "code has the same instructions and waits, only the host model sees the read overtake its copy",
          "acc = cdna3.mfma(a_smem.index(i % 2).load(a_layout), b_smem.index(i % 2).load(b_layout), acc)",
          "acc = cdna3.mfma(a_smem.index((i + 1) % 2).load(a_layout), b_smem.index((i + 1) % 2).load(b_layout), acc)",
          rejected_by="host_model"),
]
