"""Planted mistakes of lesson 10: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    # ---- caught without a GPU ----
    Plant("k_width copied from a tensor-core layout: a blocked parent has no K packing, and the compiler refuses it",
          "a_layout = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=0)",
          "a_layout = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)",
          rejected_by="fma_sm_90", gpu=False),
    Plant("lanes across and down swapped: each thread gets two register tiles and the program a broadcast half",
          "threads_per_warp=[lanes_m, LANES_N]", "threads_per_warp=[LANES_N, lanes_m]",
          rejected_by="fma_sm_90", gpu=False),
    Plant("the operands are not upcast: a dot of bf16 operands needs 16 values of K per step, and BLOCK_K is 8",
          "acc = gl.dot_fma(a.to(gl.float32), b.to(gl.float32), acc)", "acc = gl.dot_fma(a, b, acc)",
          rejected_by="fma_sm_90", gpu=False),
    Plant("no K-tail mask: the last K-step reads past the end of every row of A and past the last row of B",
          "        # The last step may run past K: those columns of A and rows of B load as 0 and add nothing.\n"
          "        a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)\n"
          "        b_mask = ((k + offs_bk)[:, None] < K) & (offs_bn[None, :] < N)",
          "        a_mask = offs_am[:, None] < M\n"
          "        b_mask = offs_bn[None, :] < N",
          rejected_by="masks_m_n_k", gpu=False),
    Plant("B's K tail unmasked (A's is), caught on the CPU: B's load has its own mask, which never compares K (the "
          "check once read the whole kernel's comparisons, where A's mask holds K)",
          "        # The last step may run past K: those columns of A and rows of B load as 0 and add nothing.\n"
          "        a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)\n"
          "        b_mask = ((k + offs_bk)[:, None] < K) & (offs_bn[None, :] < N)",
          "        # The last step may run past K: those columns of A and rows of B load as 0 and add nothing.\n"
          "        a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)\n"
          "        b_mask = offs_bn[None, :] < N", rejected_by="masks_m_n_k", gpu=False),
    Plant("the store's column bound a tile too far (N + BLOCK_N), caught on the CPU: the mask compares N, but lets "
          "BLOCK_N columns past C's last one through",
          "    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn\n"
          "    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)\n"
          "    gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)\n\n\n# 128 × 128 tile",
          "    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn\n"
          "    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N + BLOCK_N)\n"
          "    gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)\n\n\n# 128 × 128 tile",
          rejected_by="masks_m_n_k", gpu=False),
    # ---- caught on a GPU ----
    Plant("B's K tail unmasked (A's is): the products of the zeros of A with whatever lies past B's last row",
          "        # The last step may run past K: those columns of A and rows of B load as 0 and add nothing.\n"
          "        a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)\n"
          "        b_mask = ((k + offs_bk)[:, None] < K) & (offs_bn[None, :] < N)",
          "        a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)\n"
          "        b_mask = offs_bn[None, :] < N",
          rejected_by="exact_on_odd_shapes", gpu=True),
    Plant("B's pointers step along N instead of K: every K-step multiplies A by the same rows of B, shifted",
          "        ### END SOLUTION\n"
          "        a_ptrs += BLOCK_K * stride_ak\n"
          "        b_ptrs += BLOCK_K * stride_bk",
          "        ### END SOLUTION\n"
          "        a_ptrs += BLOCK_K * stride_ak\n"
          "        b_ptrs += BLOCK_K * stride_bn",
          rejected_by="exact_on_odd_shapes", gpu=True),
    Plant("the store ignores N: the last column of programs writes past the end of each row of C",
          "    # C is stored from the accumulator's own layout, rounded to the inputs' dtype.\n"
          "    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))\n"
          "    offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))\n"
          "    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn\n"
          "    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)",
          "    # C is stored from the accumulator's own layout, rounded to the inputs' dtype.\n"
          "    offs_cm = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))\n"
          "    offs_cn = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))\n"
          "    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn\n"
          "    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N + BLOCK_N)",
          rejected_by="exact_on_odd_shapes", gpu=True),
    Plant("no store mask at all: programs at the edges write past the end of C's allocation",
          "    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)\n"
          "    gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)\n"
          "\n"
          "\n"
          "# 128 × 128 tile",
          "    gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty))\n"
          "\n"
          "\n"
          "# 128 × 128 tile",
          rejected_by="sanitizer_clean", gpu=True),
    Plant("the launcher trusts its arguments: fp32 or mismatched inputs run instead of being refused",
          "    M, N, K = require_matmul_args(a, b, c)\n    cfg = {**CONFIG, **config}",
          "    M, K = a.shape\n    N = b.shape[1]\n    cfg = {**CONFIG, **config}",
          rejected_by="launcher_refuses_bad_inputs", gpu=True),
    # ---- caught without a GPU, by the rules a launch and the host model apply ----
    Plant("acc_layout not declared gl.constexpr: the launcher passes a layout, which a real launch cannot pass as a "
          "run-time argument",
          "acc_layout: gl.constexpr, a_layout: gl.constexpr, b_layout: gl.constexpr):\n    # One program",
          "acc_layout, a_layout: gl.constexpr, b_layout: gl.constexpr):\n    # One program",
          rejected_by="fma_sm_90", gpu=False),
    Plant("B's K tail unmasked (A's is), caught by the host model: the last K step of B reads past its end",
          "        # The last step may run past K: those columns of A and rows of B load as 0 and add nothing.\n"
          "        a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)\n"
          "        b_mask = ((k + offs_bk)[:, None] < K) & (offs_bn[None, :] < N)",
          "        a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)\n"
          "        b_mask = offs_bn[None, :] < N",
          rejected_by="host_model", gpu=False),
    Plant("lanes across and down swapped, seen in RTX 50's (sm_120) machine code: other loads and registers",
          "threads_per_warp=[lanes_m, LANES_N]", "threads_per_warp=[LANES_N, lanes_m]",
          rejected_by="fma_sm_120", gpu=False),
    # ---- an exception raised in passing: the learner reads the course's sentence (the place, the likely cause) ----
    Plant("DotOperandLayout given a keyword it does not take (operand= for operand_index=): Python stops in "
          "fma_layouts, and the learner reads the keyword, the gap, and the keywords the layout takes",
          "a_layout = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=0)",
          "a_layout = gl.DotOperandLayout(operand=0, parent=acc_layout, k_width=0)",
          rejected_by="fma_sm_90", in_passing=True),
]
