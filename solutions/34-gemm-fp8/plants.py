"""Planted mistakes of lesson 34: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    # ---- caught without a GPU ----
    Plant("the amax taken as the largest value, not the largest magnitude: a row whose outlier is negative gets a "
          "scale too small, and the outlier saturates",
          "amax = x.abs().amax(dim=1) if per_row else x.abs().amax().reshape(1)",
          "amax = x.amax(dim=1) if per_row else x.amax().reshape(1)", rejected_by="quantizer"),
    Plant("the scale taken as amax / 448 for an all-zero row too: its scale is 0 and x / scale is 0 / 0, NaN",
          "scale = torch.where(amax > 0, amax / E4M3_MAX, torch.ones_like(amax))", "scale = amax / E4M3_MAX",
          rejected_by="quantizer"),
    Plant("the scale inverted (448 / amax): x_q · scale no longer gives x back",
          "scale = torch.where(amax > 0, amax / E4M3_MAX, torch.ones_like(amax))",
          "scale = torch.where(amax > 0, E4M3_MAX / amax, torch.ones_like(amax))", rejected_by="quantizer"),
    Plant("A's scale applied to the accumulator at every K step: the sum is scaled once per step instead of once",
          "acc = warpgroup_mma(a_ring.index(slot), w, acc, is_async=True)",
          "acc = warpgroup_mma(a_ring.index(slot), w, acc * gl.load(a_scale_ptr), is_async=True)",
          rejected_by="scales_in_epilogue_sm_90"),
    Plant("W's per-row scales (one per column of C) bounded by M, the rows' size: past column M they read zeros, and "
          "with N > M they miss the last columns",
          "C's column n.\n        acc = acc * gl.expand_dims(gl.load(w_scale_ptr + cols, mask=cols < N,",
          "C's column n.\n        acc = acc * gl.expand_dims(gl.load(w_scale_ptr + cols, mask=cols < M,",
          rejected_by="scales_in_epilogue_sm_90"),
    Plant("the per-tensor scales applied twice (once for each operand, then their product again)",
          "        acc = acc * gl.load(w_scale_ptr)\n    ### END SOLUTION",
          "        acc = acc * gl.load(w_scale_ptr)\n    acc = acc * (gl.load(a_scale_ptr) * gl.load(w_scale_ptr))\n"
          "    ### END SOLUTION", rejected_by="scales_in_epilogue_sm_90"),
    Plant("the clamp left out, the saturation left to the cast: right where torch's cast saturates (2.12 on), NaN "
          "where it does not (torch before 2.12, on the CPU and on CUDA)",
          "x_q = scaled.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)", "x_q = scaled.to(torch.float8_e4m3fn)",
          rejected_by="quantizer"),
    Plant("the amax per row taken over dim=0: one per column of x, which does not broadcast against x's rows",
          "amax = x.abs().amax(dim=1) if per_row", "amax = x.abs().amax(dim=0) if per_row", rejected_by="quantizer"),
    Plant("the per-row scale divided as a row: torch lines it up with x's columns",
          "scaled = x / (scale.reshape(-1, 1) if per_row else scale)", "scaled = x / scale", rejected_by="quantizer"),
    Plant("A's and W's scale pointers swapped in the consumers' call of apply_scales: A's scales read per column of C "
          "and W's per row (harmless per tensor, where the two multiply alike)",
          "acc = apply_scales(acc, a_scale_ptr, w_scale_ptr, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, acc_layout,\n",
          "acc = apply_scales(acc, w_scale_ptr, a_scale_ptr, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, acc_layout,\n",
          rejected_by="host_model"),
    Plant("A's and W's scales swapped in the plan's launch: the kernel's a_scale_ptr is W's scale",
          "descs, (a_scale, w_scale, *self.rest))", "descs, (w_scale, a_scale, *self.rest))", rejected_by="host_model"),
    Plant("the per-row flags swapped in the plan: with one operand per row and the other per tensor, the kernel reads "
          "the single scale one per row and the per-row one once",
          '"A_PER_ROW": a_per_row, "W_PER_ROW": w_per_row}', '"A_PER_ROW": w_per_row, "W_PER_ROW": a_per_row}',
          rejected_by="host_model"),
    Plant("A's per-tensor scale applied twice and W's never",
          "else:\n        acc = acc * gl.load(w_scale_ptr)", "else:\n        acc = acc * gl.load(a_scale_ptr)",
          rejected_by="host_model"),
    Plant("the rows of A's scales offset by pid_n, the tile's column: a tile off the diagonal gets another tile's "
          "rows' scales",
          "rows = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))\n    cols",
          "rows = pid_n * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))\n    cols",
          rejected_by="host_model"),
    Plant("a ring of 4 slots beside C's 64 KiB tile: 4 × 48 KiB + 64 KiB = 256 KiB, more than a program may use",
          '"num_warps": 8, "STAGES": 3, "GROUP_M": 8,', '"num_warps": 8, "STAGES": 4, "GROUP_M": 8,',
          rejected_by="config_fits"),
    Plant("the Blackwell kernel adds its first product to a tensor memory that was never written (use_acc=True)",
          "acc_tmem, use_acc=i > 0,", "acc_tmem, use_acc=True,", rejected_by="tcgen05_fp8_sm_100"),
    # ---- issue 39: the plans matmul keeps (the toolkit's checks, gluon_course.nvidia.kept_plans) ----
    Plant("the descriptors are kept by A's and W's addresses only: a C at another address is written through the "
          "descriptor of the first C",
          "kept.kept_descriptors(self.descriptors, (a.data_ptr(), w.data_ptr(), c.data_ptr()),",
          "kept.kept_descriptors(self.descriptors, (a.data_ptr(), w.data_ptr()),", rejected_by="kept_plans"),
    # ---- the small-batch path (section 6): swap-AB and split-K ----
    Plant("swap-AB's scales not swapped: A's applied along the rows of the Cᵀ tile (W's rows), W's along its columns",
          "acc = apply_scales(acc, w_scale_ptr, a_scale_ptr, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, acc_layout, "
          "W_PER_ROW,\n                           A_PER_ROW)",
          "acc = apply_scales(acc, a_scale_ptr, w_scale_ptr, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, acc_layout, "
          "A_PER_ROW,\n                           W_PER_ROW)", rejected_by="small_m_host_model"),
    Plant("split-K's last unit starts from its own sum and adds the other slices in slice order: the additions' order "
          "depends on which unit arrives last",
          """                total = gl.load(slices + in_tile, cache_modifier=".cg")
                for s in range(1, SPLIT_K):
                    total += gl.load(slices + s * TILE + in_tile, cache_modifier=".cg")""",
          """                total = acc
                for s in range(SPLIT_K):
                    if s != split:
                        total += gl.load(slices + s * TILE + in_tile, cache_modifier=".cg")""",
          rejected_by="small_m_same_bits"),
    Plant("split-K's counter never reset: the next call on the same scratch counts from SPLIT_K, and no unit of it "
          "arrives last",
          """                gl.atomic_xchg(arrivals_ptr + tile, 0, sem="relaxed", scope="gpu")\n""", "",
          rejected_by="small_m_host_model"),
    Plant("the plan hands the kernel C's M and N under swap-AB, not exchanged: the kernel's rows are W's N",
          "self.kernel_mn = (N, M) if self.swap_ab else (M, N)", "self.kernel_mn = (M, N)",
          rejected_by="small_m_host_model"),
    Plant("the plan refuses only an empty slice: a split whose slices are shorter than the ring is accepted",
          'if split > 1 and steps // split < cfg["STAGES"]:', "if split > steps:", rejected_by="small_m_plan"),
    Plant("the last unit reads the other units' slices through L1 (no cache_modifier='.cg'): this SM's L1 may hold a "
          "stale line of a slice another SM wrote to L2",
          """                total = gl.load(slices + in_tile, cache_modifier=".cg")
                for s in range(1, SPLIT_K):
                    total += gl.load(slices + s * TILE + in_tile, cache_modifier=".cg")""",
          """                total = gl.load(slices + in_tile)
                for s in range(1, SPLIT_K):
                    total += gl.load(slices + s * TILE + in_tile)""",
          rejected_by="small_m_sm_90"),
    # ---- caught on a GPU ----
    Plant("A's per-row scales read without the tile's offset: every tile of C gets the first tile's rows' scales",
          "rows = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))\n    cols",
          "rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))\n    cols",
          rejected_by="correct_fp8_shapes", gpu=True),
    Plant("the per-row flags swapped in the plan (on a GPU: the mixed modes, A per row with W per tensor and the "
          "reverse; a read past the single scale faults nothing there, and A's rows or W's columns come out scaled by "
          "one scale)",
          '"A_PER_ROW": a_per_row, "W_PER_ROW": w_per_row}', '"A_PER_ROW": w_per_row, "W_PER_ROW": a_per_row}',
          rejected_by="correct_fp8_shapes", gpu=True),
    Plant("use_acc=False: every K step's products overwrite acc instead of adding to it",
          "acc = warpgroup_mma(a_ring.index(slot), w, acc, is_async=True)",
          "acc = warpgroup_mma(a_ring.index(slot), w, acc, is_async=True, use_acc=False)",
          rejected_by="correct_fp8_shapes", gpu=True),
    Plant("matmul sends a small batch to the small-batch path only when given a configuration: with none, M = 16 "
          "runs on the 128 × 256 tile",
          "if not config and a.dim() == 2 and a.shape[0] <= fp8_small_m.LARGEST_SMALL_M:",
          "if config and a.dim() == 2 and a.shape[0] <= fp8_small_m.LARGEST_SMALL_M:",
          rejected_by="correct_small_m", gpu=True),
    # ---- the quantizer's check says the likely cause of an exception quantize raised on its way ----
    Plant("the e4m3 dtype misspelt (torch.float8_e4m3): quantize stops at the conversion, and the check names the "
          "line and the name torch has (float8_e4m3fn), not the exception's text",
          "x_q = scaled.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)",
          "x_q = scaled.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3)",
          rejected_by="quantizer"),
]
