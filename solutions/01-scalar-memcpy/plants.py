"""Planted mistakes of lesson 01: each is the solution with one plausible mistake, and names the key
of the check that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("grid rounds down, so the tail is never copied",
          "return (triton.cdiv(numel, XBLOCK),)", "return (numel // XBLOCK,)",
          rejected_by="grid_covers_every_element", gpu=False),
    Plant("vectorised by hand where the lesson asks for the scalar loop (loads 4 elements at once)",
          "    for i in range(start, end):\n        # A scalar load and a scalar store: one 4-byte element per iteration.\n"
          "        value = gl.load(in_ptr + i)\n        gl.store(out_ptr + i, value)",
          "    offs = start + gl.arange(0, XBLOCK, layout=gl.BlockedLayout([4], [32], [4], [0]))\n"
          "    gl.store(out_ptr + offs, gl.load(in_ptr + offs, mask=offs < end), mask=offs < end)",
          rejected_by="scalar_loop_sm_90", gpu=False),
    Plant("no bound at the end of the tensor: the last program runs past numel",
          "end = gl.minimum(start + XBLOCK, numel)", "end = start + XBLOCK",
          rejected_by="exact_on_odd_sizes", gpu=True),
    Plant("no bound at the end of the tensor, seen without a GPU: numel is never compared",
          "end = gl.minimum(start + XBLOCK, numel)", "end = start + XBLOCK",
          rejected_by="bounded_by_numel", gpu=False),
    Plant("vectorised by hand, seen on an RTX 30 / A10 class GPU's machine code: 16-byte loads, no scalar loop",
          "    for i in range(start, end):\n        # A scalar load and a scalar store: one 4-byte element per iteration.\n"
          "        value = gl.load(in_ptr + i)\n        gl.store(out_ptr + i, value)",
          "    offs = start + gl.arange(0, XBLOCK, layout=gl.BlockedLayout([4], [32], [4], [0]))\n"
          "    gl.store(out_ptr + offs, gl.load(in_ptr + offs, mask=offs < end), mask=offs < end)",
          rejected_by="scalar_loop_sm_86", gpu=False),
]
