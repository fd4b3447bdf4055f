"""Planted mistakes of lesson 20: each must be rejected by the check whose key it names."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("B is indexed as if it were row-major (N contiguous): each lane's 8 elements are no longer consecutive "
          "in memory, so the 16-byte loads fall apart into 2-byte ones (and on a GPU the product is wrong)",
          "b_ptrs = b_ptr + offs_bk[:, None] + offs_bn[None, :] * stride_bn",
          "b_ptrs = b_ptr + offs_bk[:, None] * stride_bn + offs_bn[None, :]",
          rejected_by="loop_gfx950"),
    Plant("the loads are masked along K only, as in the vendor's tutorial: rows of A past M and columns of B past N "
          "are read from beyond the tensors",
          "a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)",
          "a_mask = (k + offs_ak)[None, :] < K",
          rejected_by="masked_mnk"),
    Plant("masked-off elements of A read as 1.0 instead of 0.0: the K tail adds junk to every element of C",
          "a = gl.load(a_ptrs, mask=a_mask, other=0.0)",
          "a = gl.load(a_ptrs, mask=a_mask, other=1.0)",
          rejected_by="exact_odd_shapes", gpu=True),
    Plant("the pointers advance by one element instead of one tile: every K step reads almost the same columns",
          "        a_ptrs += BLOCK_K\n",
          "        a_ptrs += 1\n",
          rejected_by="exact_odd_shapes", gpu=True),
    Plant("the pointers of A advance by one element instead of one tile (caught on the CPU by the host model, which "
          "runs the kernel's own code with numpy)",
          "        a_ptrs += BLOCK_K\n", "        a_ptrs += 1\n",
          rejected_by="host_model"),
]
