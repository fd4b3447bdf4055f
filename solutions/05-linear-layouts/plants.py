"""Planted mistakes of lesson 05: each is the solution with one plausible mistake, and names the key
of the check that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("a lane basis points down the rows instead of along them (a wrong hand-written basis)",
          "lanes = [[0, 4], [0, 8], [0, 16]]", "lanes = [[0, 4], [0, 8], [16, 0]]",
          rejected_by="hand_written_bases", gpu=False),
    Plant("the 16-byte vector's two register bases listed in the wrong order",
          "registers = [[0, 1], [0, 2]]", "registers = [[0, 2], [0, 1]]",
          rejected_by="hand_written_bases", gpu=False),
    Plant("the swizzle XORs only 8 rows into the column: 4-way conflicts on the scalar loads",
          "SCALAR_SWIZZLE = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=32, order=[1, 0])",
          "SCALAR_SWIZZLE = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=8, order=[1, 0])",
          rejected_by="bank_conflicts_predicted", gpu=False),
    Plant("the staged tile is read back in the row layout: the store's offsets no longer match",
          "    tile = staged.load(column_layout)", "    tile = staged.load(row_layout)",
          rejected_by="transposes_sm_90", gpu=False),
    Plant("interleave converts its pairs to a layout of its own choosing instead of the inferred one",
          "    flat = gl.reshape(pairs, [2 * XBLOCK])",
          "    flat = gl.convert_layout(gl.reshape(pairs, [2 * XBLOCK]), layout)",
          rejected_by="interleave_sm_90", gpu=False),
    Plant("join with its operands swapped: b0 a0 b1 a1 ... (same machine code, wrong data)",
          "pairs = gl.join(a, b)", "pairs = gl.join(b, a)",
          rejected_by="pairs_exact", gpu=True),
    Plant("the tile is read back through a transposed view of shared memory: a wrong layout, wrong data",
          "    tile = staged.load(column_layout)", "    tile = staged.permute([1, 0]).load(column_layout)",
          rejected_by="transposes_exact", gpu=True),
    Plant("the store's mask compares i with N and j with M: wrong on every non-square matrix",
          "tile, mask=(i[:, None] < M) & (j[None, :] < N))", "tile, mask=(i[:, None] < N) & (j[None, :] < M))",
          rejected_by="transposes_exact", gpu=True),
]
