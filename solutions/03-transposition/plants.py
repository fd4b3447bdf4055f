"""Planted mistakes of lesson 03: each is the solution with one plausible mistake, and names the key
of the check that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("plan_copy always lays the lanes along axis 1 (a row-major habit): x.T reads one sector per lane",
          "fast = unit_stride_axis((M, N), in_strides) if fast_axis is None else fast_axis",
          "fast = 1 if fast_axis is None else fast_axis",
          rejected_by="plan_follows_strides", gpu=False),
    Plant("tiles handed out down axis 0 first whatever the strides (the order of a 2D grid with rows on axis 0)",
          "axis0_tiles_first = (fast if tiles_first is None else tiles_first) == 0",
          "axis0_tiles_first = True if tiles_first is None else tiles_first == 0",
          rejected_by="plan_follows_strides", gpu=False),
    Plant("SliceLayout dims swapped: the row indices get the layout of the column indices",
          "rows = tile_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, layout))\n"
          "    cols = tile_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, layout))",
          "rows = tile_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, layout))\n"
          "    cols = tile_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, layout))",
          rejected_by="widths_sm_90", gpu=False),
    Plant("grid axis 1 trusted up to 2**31 - 1, like axis 0",
          "GRID_LIMITS = (2**31 - 1, 65_535, 65_535)", "GRID_LIMITS = (2**31 - 1, 2**31 - 1, 65_535)",
          rejected_by="refuses_oversized_grids", gpu=False),
    Plant("the mask ignores the second axis: the last tile of each row runs past column N",
          "mask = (rows_2d < M) & (cols_2d < N)", "mask = (rows_2d < M) & (cols_2d >= 0)",
          rejected_by="exact_on_odd_shapes", gpu=True),
    Plant("the launcher skips the grid check and lets CUDA refuse the launch",
          "    require_grid_fits(plan.grid)\n    M, N = x.shape", "    M, N = x.shape",
          rejected_by="grid_axis_1_limit", gpu=True),
    Plant("a row-only mask, seen without a GPU: N is never compared",
          "mask = (rows_2d < M) & (cols_2d < N)", "mask = rows_2d < M",
          rejected_by="masked_on_both_axes", gpu=False),
    Plant("SliceLayout dims swapped, seen in RTX 50's (sm_120) machine code for x.T with the column layout",
          "rows = tile_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, layout))\n"
          "    cols = tile_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, layout))",
          "rows = tile_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, layout))\n"
          "    cols = tile_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, layout))",
          rejected_by="column_layout_sm_120", gpu=False),
]
