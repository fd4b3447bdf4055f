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
          "off_n = pid_n * (2 * BLOCK_N)         # C's columns", rejected_by="swiglu_model"),
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
          "    tma.store_wait(0)                          # the previous tile's store has left c_smem\n", "",
          rejected_by="plain_model"),
    Plant("gdc_wait before W's first copies: correct, but nothing of the kernel's start overlaps the previous one",
          "        n = pid_n * (BLOCK_N + BLOCK_N2)\n        W_STRIPS",
          "        gdc_wait()\n        n = pid_n * (BLOCK_N + BLOCK_N2)\n        W_STRIPS",
          rejected_by="pdl_sm_90"),
    Plant("A's first tiles loaded with W's, before gdc_wait: under PDL the previous kernel may still be writing A",
          "                tma.async_load(b_desc, [n, k * BLOCK_K], ready.index(i), b_ring.index(i), cache_policy=B_POLICY)\n",
          "                tma.async_load(b_desc, [n, k * BLOCK_K], ready.index(i), b_ring.index(i), cache_policy=B_POLICY)\n"
          "                tma.async_load(a_desc, [pid_m * BLOCK_M, k * BLOCK_K], ready.index(i), a_ring.index(i))\n",
          rejected_by="pdl_sm_90"),
    Plant("gdc_launch_dependents left out: the next kernel is launched only when this whole grid has ended",
          "        gdc_launch_dependents()\n", "        pass\n", rejected_by="pdl_sm_90"),
    Plant("under PDL, the consumers read R before the producer's gdc_wait (an early load, to hide its latency): the "
          "previous kernel may still be writing R",
          "    step = 0\n    for unit in range(gl.program_id(0), num_pid_m * num_pid_n * SPLIT_K, gl.num_programs(0)):\n"
          "        tile, split",
          "    step = 0\n    r_early = gl.load(r_ptr)\n"
          "    for unit in range(gl.program_id(0), num_pid_m * num_pid_n * SPLIT_K, gl.num_programs(0)):\n"
          "        tile, split",
          rejected_by="residual_model"),
    Plant("the launcher hands the kernel K as R's row stride (R's rows are N apart)",
          "(rr, partial, arrivals, kM, kN, K, n_out, rr.stride(0), split,",
          "(rr, partial, arrivals, kM, kN, K, n_out, K, split,", rejected_by="residual_model"),
    Plant("the launcher compiles the kernel for PDL but launches it without launch_pdl: gdc_wait waits for nothing, "
          "and the next kernel waits for this one to end",
          'options = {"launch_pdl": True} if self.pdl else {}', "options = {}", rejected_by="residual_model"),
    Plant("the sums rounded to bf16 before R is added: two roundings where the fused epilogue needs one",
          "return acc + r.to(gl.float32)", "return acc.to(gl.bfloat16).to(gl.float32) + r.to(gl.float32)",
          rejected_by="residual_model"),
    Plant("SiLU as g·e^g / (1 + e^g): right until e^g overflows fp32 (g past 88), then inf / inf is NaN",
          "return gate / (1.0 + gl.exp(-gate)) * up", "return gate * gl.exp(gate) / (1.0 + gl.exp(gate)) * up",
          rejected_by="swiglu_model"),
    Plant("R's columns masked only in the last tile of rows: a tile of whole rows reads past R's last column",
          "inside = (rows[:, None] < M) & (cols[None, :] < N)",
          "inside = (rows[:, None] < M) & ((cols[None, :] < N) | (off_m + BLOCK_M <= M))", rejected_by="residual_model"),
    Plant("R's row stride taken as its width: wrong when R is a slice of a wider matrix",
          "r = gl.load(r_ptr + rows[:, None] * stride_rm + cols[None, :], mask=inside, other=0.0)",
          "r = gl.load(r_ptr + rows[:, None] * N + cols[None, :], mask=inside, other=0.0)",
          rejected_by="residual_model"),
    Plant("the early W copies not bounded by K's steps: a K of fewer steps than slots loads tiles it never uses",
          "early = min(STAGES, k_last - k_first)", "early = STAGES", rejected_by="swiglu_model"),
    Plant("launch_pdl on whether or not PDL was asked for", 'options = {"launch_pdl": True} if self.pdl else {}',
          'options = {"launch_pdl": True}', rejected_by="plain_model"),
    Plant("one program a SM whatever the tiles: under PDL a program with no tile loads one and its ring never drains",
          "launch(min(tiles * split, sms), stream, descs,", "launch(sms, stream, descs,", rejected_by="swiglu_model"),
    # ---- the decode path (swap-AB, split-K) ----
    Plant("the residual added by every unit to its slice before the sum: under split-K, R added SPLIT_K times",
          "            arrived = publish_slice(acc, partial_ptr, arrivals_ptr, tile, split, SPLIT_K, acc_layout)",
          "            if EPILOGUE == \"residual\":\n"
          "                acc = add_residual(acc, r_ptr, stride_rm, pid_n * BLOCK_N, pid_m * BLOCK_M, N, N_OUT, "
          "acc_layout, SWAP_AB)\n"
          "            arrived = publish_slice(acc, partial_ptr, arrivals_ptr, tile, split, SPLIT_K, acc_layout)",
          rejected_by="residual_model"),
    Plant("every unit finishes its own slice (SiLU · up of a partial sum, stored) before the last unit's sum is stored "
          "over it",
          "            arrived = publish_slice(acc, partial_ptr, arrivals_ptr, tile, split, SPLIT_K, acc_layout)",
          "            finish_tile(acc, acc2, c_desc, c_smem, r_ptr, stride_rm, pid_m, pid_n, M, N, N_OUT, acc_layout, "
          "EPILOGUE, SWAP_AB)\n"
          "            arrived = publish_slice(acc, partial_ptr, arrivals_ptr, tile, split, SPLIT_K, acc_layout)",
          rejected_by="swiglu_model"),
    Plant("R read untransposed under swap-AB: the tile of Cᵀ indexed as if its rows were C's rows",
          "r = gl.load(r_ptr + rows[None, :] * stride_rm + cols[:, None], mask=inside, other=0.0)",
          "r = gl.load(r_ptr + cols[:, None] * stride_rm + rows[None, :], mask=inside, other=0.0)",
          rejected_by="residual_model"),
    Plant("split-K's counter never reset: the next launch counts on from SPLIT_K and no unit reduces",
          "                reopen(arrivals_ptr, tile)\n", "", rejected_by="plain_model"),
    Plant("the slices summed in arrival order: the reducing unit starts from its own registers, then adds the others, "
          "so the sum's order (and its bits) depends on which unit arrives last",
          "                total = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)\n"
          "                for s in range(SPLIT_K):\n"
          "                    total += read_slice(partial_ptr, tile, s, SPLIT_K, BLOCK_M, BLOCK_N, acc_layout)",
          "                total = acc\n"
          "                for s in range(SPLIT_K):\n"
          "                    if s != split:\n"
          "                        total += read_slice(partial_ptr, tile, s, SPLIT_K, BLOCK_M, BLOCK_N, acc_layout)",
          rejected_by="split_order_model"),
    Plant("gate and up swapped under swap-AB: SiLU of up's half of the tile",
          "out = silu_times(gate, up)", "out = silu_times(up, gate)", rejected_by="swiglu_model"),
    Plant("SwiGLU's swap-AB tile one block of W tall: gate's rows only, its 'up' half the next block of gate",
          "bm, bk = 2 * GATE_UP_BLOCK, 64", "bm, bk = GATE_UP_BLOCK, 64", rejected_by="swiglu_model"),
    Plant("under swap-AB the activations' first tiles loaded with W's, before gdc_wait",
          "                tma.async_load(a_desc, [pid_m * BLOCK_M, k * BLOCK_K], ready.index(i), a_ring.index(i),\n"
          "                               cache_policy=A_POLICY)\n",
          "                tma.async_load(a_desc, [pid_m * BLOCK_M, k * BLOCK_K], ready.index(i), a_ring.index(i),\n"
          "                               cache_policy=A_POLICY)\n"
          "                tma.async_load(b_desc, [n, k * BLOCK_K], ready.index(i), b_ring.index(i))\n",
          rejected_by="pdl_sm_90"),
    Plant("decode without swap-AB: config_for never takes lesson 32's pick (M ≤ 16 tiled as M ≤ 64)",
          "    if M <= DECODE_M:\n        found", "    if False:\n        found", rejected_by="decode_sm_90"),
    # ---- caught on a GPU ----
    Plant("the down projection's residual taken from the block's input x instead of the attention's output x1",
          'return fused_linear(h, b.down.weight, "residual", r=x1, pdl=self.pdl)',
          'return fused_linear(h, b.down.weight, "residual", r=flat, pdl=self.pdl)', rejected_by="block_matches",
          gpu=True),
    Plant("K's and V's weights stacked in the other order: the split hands attention V as K",
          "torch.cat([block.q.weight, block.k.weight, block.v.weight])",
          "torch.cat([block.q.weight, block.v.weight, block.k.weight])", rejected_by="block_matches", gpu=True),
]
