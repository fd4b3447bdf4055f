"""Planted mistakes of lesson 35: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    # ---- caught without a GPU ----
    Plant("SiLU left out: gate times up, a plain gated product (GLU without its activation)",
          "return gate / (1.0 + gl.exp(-gate)) * up", "return gate * up", rejected_by="swiglu_model"),
    Plant("the sigmoid taken for SiLU: σ(gate) · up, without the gate's own factor",
          "return gate / (1.0 + gl.exp(-gate)) * up", "return up / (1.0 + gl.exp(-gate))",
          rejected_by="swiglu_model"),
    Plant("e^(+g) for e^(−g): SiLU's curve mirrored",
          "return gate / (1.0 + gl.exp(-gate)) * up", "return gate / (1.0 + gl.exp(gate)) * up",
          rejected_by="swiglu_model"),
    Plant("the 'numerically stable' sigmoid, e^(−g) for g ≥ 0 and e^g for g < 0: right values (fp32's e^(−g) "
          "overflowing to inf gives SiLU's limit, 0, anyway), two exponentials an element where one does",
          "return gate / (1.0 + gl.exp(-gate)) * up",
          "return gl.where(gate >= 0, gate / (1.0 + gl.exp(-gate)), gate * gl.exp(gate) / (1.0 + gl.exp(gate))) * up",
          rejected_by="swiglu_sm_90"),
    Plant("gate and up swapped in the consumers' call: SiLU applied to up's sums",
          "out = silu_times(acc, acc2)", "out = silu_times(acc2, acc)", rejected_by="swiglu_model"),
    Plant("gate's and up's blocks interleaved in the other order (up first): the tile's first strip is up's",
          "return torch.cat([g, u], dim=1)", "return torch.cat([u, g], dim=1)", rejected_by="swiglu_model"),
    Plant("the SwiGLU tile's BLOCK_N not the width W was interleaved at: its up strip is another block of gate",
          "        bn = GATE_UP_BLOCK", "        bn = GATE_UP_BLOCK // 2", rejected_by="swiglu_model"),
    Plant("H stored at W's columns (two strips a tile) instead of H's (one): every other block of H skipped",
          "off_n = pid_n * BLOCK_N                # C's columns",
          "off_n = pid_n * (BLOCK_N + BLOCK_N2)   # C's columns", rejected_by="swiglu_model"),
    Plant("R's rows not masked: the last tile reads R's rows past M, memory that is not R's",
          "inside = (rows[:, None] < M) & (cols[None, :] < N)", "inside = cols[None, :] < N",
          rejected_by="residual_model"),
    Plant("R's columns not masked: a tile past C's right edge reads the next row of R",
          "inside = (rows[:, None] < M) & (cols[None, :] < N)", "inside = rows[:, None] < M",
          rejected_by="residual_model"),
    Plant("R indexed with its strides swapped: R read as if it were column-major",
          "r = gl.load(r_ptr + rows[:, None] * stride_rm + cols[None, :], mask=inside, other=0.0)",
          "r = gl.load(r_ptr + rows[:, None] + cols[None, :] * stride_rm, mask=inside, other=0.0)",
          rejected_by="residual_model"),
    Plant("R's tile read at the tile's first row and column for every tile: the offsets left out",
          "rows = off_m + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))",
          "rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))", rejected_by="residual_model"),
    Plant("the previous tile's store not waited for: c_smem rewritten while TMA may still be reading it",
          "        tma.store_wait(0)                      # the previous tile's store has left c_smem\n", "",
          rejected_by="plain_model"),
    Plant("gdc_wait before W's first copies: correct, but nothing of the kernel's start overlaps the previous one",
          "        pid_m, pid_n = grouped_tile(first, num_pid_m, num_pid_n, GROUP_M)\n        n = pid_n",
          "        gdc_wait()\n        pid_m, pid_n = grouped_tile(first, num_pid_m, num_pid_n, GROUP_M)\n        n = pid_n",
          rejected_by="pdl_sm_90"),
    Plant("A's first tiles loaded with W's, before gdc_wait: under PDL the previous kernel may still be writing A",
          "            tma.async_load(b_desc, [n, k * BLOCK_K], ready.index(k), b_ring.index(k))\n",
          "            tma.async_load(b_desc, [n, k * BLOCK_K], ready.index(k), b_ring.index(k))\n"
          "            tma.async_load(a_desc, [pid_m * BLOCK_M, k * BLOCK_K], ready.index(k), a_ring.index(k))\n",
          rejected_by="pdl_sm_90"),
    Plant("gdc_launch_dependents left out: the next kernel is launched only when this whole grid has ended",
          "        gdc_launch_dependents()\n", "        pass\n", rejected_by="pdl_sm_90"),
    Plant("under PDL, the consumers read R before the producer's gdc_wait (an early load, to hide its latency): the "
          "previous kernel may still be writing R",
          "    step = 0\n    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):\n"
          "        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)\n        acc, acc2, step",
          "    step = 0\n    r_early = gl.load(r_ptr)\n"
          "    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):\n"
          "        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)\n        acc, acc2, step",
          rejected_by="residual_model"),
    Plant("the launcher hands the kernel K as R's row stride (R's rows are N apart)",
          "launch(min(tiles, sms), stream, descs, (rr, M, N, K, n_out, rr.stride(0), *ce))",
          "launch(min(tiles, sms), stream, descs, (rr, M, N, K, n_out, K, *ce))", rejected_by="residual_model"),
    Plant("the launcher compiles the kernel for PDL but launches it without launch_pdl: gdc_wait waits for nothing, "
          "and the next kernel waits for this one to end",
          'options = {"launch_pdl": True} if self.pdl else {}', "options = {}", rejected_by="residual_model"),
    # ---- caught on a GPU ----
    Plant("the down projection's residual taken from the block's input x instead of the attention's output x1",
          'return fused_linear(h, b.down.weight, "residual", r=x1, pdl=self.pdl)',
          'return fused_linear(h, b.down.weight, "residual", r=flat, pdl=self.pdl)', rejected_by="block_matches",
          gpu=True),
    Plant("K's and V's weights stacked in the other order: the split hands attention V as K",
          "torch.cat([block.q.weight, block.k.weight, block.v.weight])",
          "torch.cat([block.q.weight, block.v.weight, block.k.weight])", rejected_by="block_matches", gpu=True),
]
