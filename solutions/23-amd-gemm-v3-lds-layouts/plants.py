"""Planted mistakes of lesson 23: each must be rejected by the check whose key it names."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("matmul still launches version 2's plain layouts (the default left at 'plain'): correct, 4-way conflicts",
          'num_warps: int = 4, lds: str = "padded") -> dict:', 'num_warps: int = 4, lds: str = "plain") -> dict:',
          rejected_by="launched_conflict_free"),
    Plant("the padded tiles are written by lesson 20's copy layouts (a BlockedLayout): a wave's 64 vectors are no "
          "longer one contiguous run of the padded layout, and the copy cannot be lowered",
          "        a_copy = copy_layout_for(a_shared, [BLOCK_M, BLOCK_K], num_warps)\n",
          "        a_copy = tile_copy_layouts(BLOCK_M, BLOCK_N, BLOCK_K, num_warps)[0]\n",
          rejected_by="loop_gfx950"),
    Plant("the copy layout gives the lanes the offset bits before the lane's own vector: each lane's 8 elements are no "
          "longer consecutive in LDS",
          "lane_bases=bases[v:v + lanes]", "lane_bases=bases[:lanes]",
          rejected_by="copy_layout"),
    Plant("A's row mask compares with N instead of M (a copy-and-paste slip): for M > N the rows of A past N are "
          "copied as zeros and the lower rows of C come out wrong",
          "a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)",
          "a_mask = (offs_am[:, None] < N) & ((k + offs_ak)[None, :] < K)",
          rejected_by="exact_odd_shapes", gpu=True),
    Plant("A's row mask compares with N instead of M (caught on the CPU by the host model, whose problems include "
          "M > N)",
          "a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)",
          "a_mask = (offs_am[:, None] < N) & ((k + offs_ak)[None, :] < K)",
          rejected_by="host_model"),
]
