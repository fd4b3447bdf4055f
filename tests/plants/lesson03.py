"""Plants for lesson 03 (transposition and strides)."""
from planted import Plant

PLANTS = [
    Plant("03", "plan_copy always lays the lanes along axis 1 (a row-major habit): x.T reads one sector per lane",
          "fast = unit_stride_axis((M, N), in_strides) if fast_axis is None else fast_axis",
          "fast = 1 if fast_axis is None else fast_axis",
          "plan_copy follows the strides", gpu=False),
    Plant("03", "tiles handed out down axis 0 first whatever the strides (the order of a 2D grid with rows on axis 0)",
          "axis0_tiles_first = (fast if tiles_first is None else tiles_first) == 0",
          "axis0_tiles_first = True if tiles_first is None else tiles_first == 0",
          "plan_copy follows the strides", gpu=False),
    Plant("03", "SliceLayout dims swapped: the row indices get the layout of the column indices",
          "rows = tile_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, layout))\n"
          "    cols = tile_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, layout))",
          "rows = tile_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, layout))\n"
          "    cols = tile_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, layout))",
          "sm_90: 4 × LDG.E.128 row-major", gpu=False),
    Plant("03", "grid axis 1 trusted up to 2**31 - 1, like axis 0",
          "GRID_LIMITS = (2**31 - 1, 65_535, 65_535)", "GRID_LIMITS = (2**31 - 1, 2**31 - 1, 65_535)",
          "require_grid_fits refuses", gpu=False),
    Plant("03", "the mask ignores the second axis: the last tile of each row runs past column N",
          "mask = (rows_2d < M) & (cols_2d < N)", "mask = (rows_2d < M) & (cols_2d >= 0)",
          "copy_2d is exact on odd shapes", gpu=True),
    Plant("03", "the launcher skips the grid check and lets CUDA refuse the launch",
          "    require_grid_fits(plan.grid)\n    M, N = x.shape", "    M, N = x.shape",
          "a raw launch with 65536 programs", gpu=True),
]
