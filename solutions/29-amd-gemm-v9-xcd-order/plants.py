"""Planted mistakes of lesson 29: each must be rejected by the check whose key it names."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("the number of XCDs with one tile more computed as num_tiles % NUM_XCDS, which is 0 when the tiles divide "
          "evenly: every XCD after the first starts one tile early per XCD before it, and two workgroups get one tile",
          "    tall = num_tiles - (per_xcd - 1) * NUM_XCDS\n", "    tall = num_tiles % NUM_XCDS\n",
          rejected_by="xcd_order"),
    Plant("the uneven split ignored (every XCD starts at per_xcd × x): when 8 does not divide the tiles, the short "
          "XCDs' runs overlap no one but leave tiles out, and the last runs past the end",
          "    first = xcd * per_xcd - gl.maximum(xcd - tall, 0)\n", "    first = xcd * per_xcd\n",
          rejected_by="xcd_order"),
    Plant("XCD and place swapped (xcd = pid // NUM_XCDS): tiles computed twice and others never",
          "    xcd = pid % NUM_XCDS\n    local = pid // NUM_XCDS\n",
          "    xcd = pid // NUM_XCDS\n    local = pid % NUM_XCDS\n",
          rejected_by="xcd_order"),
    Plant("the remap without the grouped order: each XCD's run of tiles laid out row-major, a single row of tiles "
          "with all its columns (33 strips per XCD on 32 × 32 tiles)",
          "    return grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)",
          "    return tile // num_pid_n, tile % num_pid_n",
          rejected_by="xcd_order"),
    Plant("CONFIG remaps for 4 XCDs (NUM_XCDS = 4) where the GPU has 8: the hardware still deals workgroup w to XCD "
          "w % 8, so each XCD gets every other tile of a run (2 rows and 16 columns of tiles: 18 strips on 16 × 16)",
          '"GROUP_M": 4, "NUM_XCDS": 8}', '"GROUP_M": 4, "NUM_XCDS": 4}', rejected_by="xcd_order"),
    Plant("CONFIG's GROUP_M = 1: the remap without grouping, each XCD's run of 32 tiles laid out row-major (2 rows × 16 "
          "columns: 18 strips on 16 × 16 tiles, where GROUP_M = 4 gives 12)",
          '"GROUP_M": 4, "NUM_XCDS": 8}', '"GROUP_M": 1, "NUM_XCDS": 8}', rejected_by="xcd_order"),
    Plant("CONFIG's GROUP_M = 6, which GROUP_M + ⌈32/GROUP_M⌉ counts as good as 4 (12 strips): but a group of 6 rows "
          "is not a whole number of an XCD's runs of 32 tiles, and on 32 × 32 tiles the runs straddle groups",
          '"GROUP_M": 4, "NUM_XCDS": 8}', '"GROUP_M": 6, "NUM_XCDS": 8}', rejected_by="group_size"),
    Plant("row and column of the tile swapped in the kernel: on a grid that is not square, tiles outside C are "
          "computed and tiles of C never",
          "    pid_m, pid_n = tile_of(gl.program_id(0)", "    pid_n, pid_m = tile_of(gl.program_id(0)",
          rejected_by="exact_odd_shapes", gpu=True),
]
