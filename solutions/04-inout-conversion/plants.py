"""Planted mistakes of lesson 04: each is the solution with one plausible mistake, and names the key
of the check that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("no conversion: the tile is stored straight from the load layout (correct, but every store is scalar)",
          "    tile = gl.convert_layout(tile, store_layout)\n",
          "    gl.store(out_ptr + in_cols * M + in_rows, tile, mask=(in_rows < M) & (in_cols < N))\n    return\n",
          rejected_by="inout_sm_90", gpu=False),
    Plant("copy_layouts gives the store side the load side's layout: nothing is converted",
          "store_layout = contiguous_along(0, BLOCK_M, BLOCK_N, R, num_warps, warp_size)",
          "store_layout = contiguous_along(1, BLOCK_M, BLOCK_N, R, num_warps, warp_size)",
          rejected_by="tile_sweep_resources", gpu=False),
    Plant("the layout ignores R (one element per thread): 16-byte accesses are lost on both sides",
          "size_per_thread[dim] = R\n", "size_per_thread[dim] = 1\n",
          rejected_by="layouts_walk_the_axis", gpu=False),
    Plant("off-by-one mask on the second axis of the store: writes one column past the end",
          "mask=(out_rows < M) & (out_cols < N))", "mask=(out_rows < M) & (out_cols <= N))",
          rejected_by="inout_exact_on_odd_shapes", gpu=True),
    Plant("output offsets with the input's row stride (out[i, j] at i * N + j): values land in the wrong place",
          "gl.store(out_ptr + out_cols * M + out_rows,", "gl.store(out_ptr + out_rows * N + out_cols,",
          rejected_by="inout_exact_on_odd_shapes", gpu=True),
    Plant("no conversion, seen in an A100's (sm_80) machine code: no shared memory, scalar stores",
          "    tile = gl.convert_layout(tile, store_layout)\n",
          "    gl.store(out_ptr + in_cols * M + in_rows, tile, mask=(in_rows < M) & (in_cols < N))\n    return\n",
          rejected_by="inout_sm_80", gpu=False),
]
