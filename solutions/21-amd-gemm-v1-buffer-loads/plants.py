"""Planted mistakes of lesson 21: each must be rejected by the check whose key it names."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("B is still loaded through pointers and a mask (gl.load): its 8 loads come back with a branch each",
          "b = cdna3.buffer_load(b_ptr, b_offsets, mask=b_mask, other=0.0)",
          "b = gl.load(b_ptr + b_offsets, mask=b_mask, other=0.0)",
          rejected_by="loop_gfx950"),
    Plant("C is stored through pointers and a mask (gl.store): the 64 masked stores of the epilogue bring their "
          "branches back",
          "cdna3.buffer_store(acc.to(c_ptr.dtype.element_ty), c_ptr, c_offsets, mask=c_mask)",
          "gl.store(c_ptr + c_offsets, acc.to(c_ptr.dtype.element_ty), mask=c_mask)",
          rejected_by="branches_gfx950"),
    Plant("B's offsets never advance: every K step multiplies A's next tile by B's first",
          "        b_offsets += BLOCK_K\n", "",
          rejected_by="exact_odd_shapes", gpu=True),
    Plant("the K mask of A is dropped, trusting B's zeros to cancel the K tail: A's last row then reads past A's end, "
          "and 0 × NaN is NaN",
          "a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)",
          "a_mask = offs_am[:, None] < M",
          rejected_by="exact_odd_shapes", gpu=True),
    Plant("the K mask of A is dropped (caught on the CPU by the host model): A's last row of tiles reads past A's end",
          "a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)",
          "a_mask = offs_am[:, None] < M",
          rejected_by="host_model"),
]
