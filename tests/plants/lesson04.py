"""Plants for lesson 04 (in/out layout conversion)."""
from planted import Plant

PLANTS = [
    Plant("04", "no conversion: the tile is stored straight from the load layout (correct, but every store is scalar)",
          "    tile = gl.convert_layout(tile, store_layout)\n",
          "    gl.store(out_ptr + in_cols * M + in_rows, tile, mask=(in_rows < M) & (in_cols < N))\n    return\n",
          "sm_90: load layout → store layout", gpu=False),
    Plant("04", "copy_layouts gives the store side the load side's layout: nothing is converted",
          "store_layout = contiguous_along(0, BLOCK_M, BLOCK_N, R, num_warps, warp_size)",
          "store_layout = contiguous_along(1, BLOCK_M, BLOCK_N, R, num_warps, warp_size)",
          "sm_90: tile sweep", gpu=False),
    Plant("04", "the layout ignores R (one element per thread): 16-byte accesses are lost on both sides",
          "size_per_thread[dim] = R\n", "size_per_thread[dim] = 1\n",
          "contiguous_along: R consecutive elements per thread", gpu=False),
    Plant("04", "off-by-one mask on the second axis of the store: writes one column past the end",
          "mask=(out_rows < M) & (out_cols < N))", "mask=(out_rows < M) & (out_cols <= N))",
          "inout_copy is exact on odd shapes", gpu=True),
    Plant("04", "output offsets with the input's row stride (out[i, j] at i * N + j): values land in the wrong place",
          "gl.store(out_ptr + out_cols * M + out_rows,", "gl.store(out_ptr + out_rows * N + out_cols,",
          "inout_copy is exact on odd shapes", gpu=True),
]
