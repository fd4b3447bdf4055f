"""Plants for lessons 01 and 02."""
from planted import Plant

PLANTS = [
    Plant("01", "grid rounds down, so the tail is never copied",
          "return (triton.cdiv(numel, XBLOCK),)", "return (numel // XBLOCK,)",
          "copy_grid covers every element", gpu=False),
    Plant("01", "vectorised by hand where the lesson asks for the scalar loop (loads 4 elements at once)",
          "    for i in range(start, end):\n        # A scalar load and a scalar store: one 4-byte element per iteration.\n"
          "        value = gl.load(in_ptr + i)\n        gl.store(out_ptr + i, value)",
          "    offs = start + gl.arange(0, XBLOCK, layout=gl.BlockedLayout([4], [32], [4], [0]))\n"
          "    gl.store(out_ptr + offs, gl.load(in_ptr + offs, mask=offs < end), mask=offs < end)",
          "sm_90: scalar 32-bit loads and stores inside a loop", gpu=False),
    Plant("01", "no bound at the end of the tensor: the last program runs past numel",
          "end = gl.minimum(start + XBLOCK, numel)", "end = start + XBLOCK",
          "scalar_copy is exact on odd sizes", gpu=True),
    Plant("02", "the layout ignores R (always one element per thread): vector loads are lost",
          "size_per_thread=[R]", "size_per_thread=[1]",
          "tile_layout gives each thread R consecutive elements", gpu=False),
    Plant("02", "lanes and registers swapped (order within a thread lost): R=4 becomes 4 scalar loads",
          "return gl.BlockedLayout(size_per_thread=[R], threads_per_warp=[warp_size], warps_per_cta=[num_warps],\n"
          "                            order=[0])",
          "return gl.DistributedLinearLayout(\n"
          "        reg_bases=[[warp_size * num_warps << i] for i in range(R.bit_length() - 1)],\n"
          "        lane_bases=[[1 << i] for i in range(warp_size.bit_length() - 1)],\n"
          "        warp_bases=[[warp_size << i] for i in range(num_warps.bit_length() - 1)],\n"
          "        block_bases=[], shape=[R * warp_size * num_warps])",
          "sm_90: R sweep", gpu=False),
    Plant("02", "off-by-one mask: writes one element past the end",
          "mask = offsets < numel", "mask = offsets <= numel",
          "tile_copy is exact", gpu=True),
]
