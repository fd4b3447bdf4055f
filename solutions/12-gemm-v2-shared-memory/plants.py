"""Planted mistakes of lesson 12: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant).

A missing barrier between the shared-memory stores and the ldmatrix reads cannot be planted in this version:
Triton's membar pass, which always runs, puts both barriers in (BAR.SYNC × 2 per K step) whatever the kernel
says. The race that racecheck exists for comes with asynchronous copies (lesson 13), where the kernel itself
must wait."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("the plain row-by-row shared layout where the lesson asks for the NVMMA swizzle: 4- and 8-way "
          "conflicts on every ldmatrix",
          "    a_shared = gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_K], gl.bfloat16)\n"
          "    b_shared = gl.NVMMASharedLayout.get_default_for([BLOCK_K, BLOCK_N], gl.bfloat16)\n",
          "    a_shared, b_shared = PLAIN, PLAIN\n",
          rejected_by="ldmatrix_conflict_free", gpu=False),
    Plant("the vector sized for float32 (4 elements): 8-byte loads and stores instead of 16-byte ones",
          "    vector = VECTOR_BYTES // element_bytes", "    vector = 4",
          rejected_by="machine_code_sm_90", gpu=False),
    Plant("lanes run down the columns first (order=[0, 1]): each warp's loads scatter over 32 rows",
          "warps_per_cta=[num_warps, 1], order=[1, 0])", "warps_per_cta=[num_warps, 1], order=[0, 1])",
          rejected_by="coalesced_layout_vectors", gpu=False),
    Plant("B's K tail is not masked: the last K step multiplies rows of B past its end",
          "        b_mask = ((k + offs_bk)[:, None] < K) & (offs_bn[None, :] < N)",
          "        b_mask = (offs_bk[:, None] >= 0) & (offs_bn[None, :] < N)",
          rejected_by="gemm_correct", gpu=True),
    Plant("A's rows are not bounded by M (only stored rows are masked): C is right, but the last row of tiles "
          "reads past the end of A, which only memcheck sees",
          "        a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)",
          "        a_mask = (offs_am[:, None] >= 0) & ((k + offs_ak)[None, :] < K)",
          rejected_by="sanitizer_clean", gpu=True),
    Plant("A's rows are not bounded by M, caught by the host model: the last row of programs reads past A's end",
          "a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)",
          "a_mask = (k + offs_ak)[None, :] < K",
          rejected_by="host_model", gpu=False),
    Plant("the vector sized for float32 (4 elements), seen in an A100's (sm_80) machine code: 8-byte accesses",
          "    vector = VECTOR_BYTES // element_bytes", "    vector = 4",
          rejected_by="staged_sm_80", gpu=False),
    # ---- an exception raised in passing: the learner reads the course's sentence (the place, the likely cause) ----
    Plant("coalesced_layout builds its layout but does not return it: the caller gets None, and the learner reads "
          "that a function returned nothing (a missing return?)",
          "    return gl.BlockedLayout(size_per_thread=[1, vector], threads_per_warp=[32 // lanes_along_row, "
          "lanes_along_row],",
          "    layout = gl.BlockedLayout(size_per_thread=[1, vector], threads_per_warp=[32 // lanes_along_row, "
          "lanes_along_row],",
          rejected_by="coalesced_layout_vectors", in_passing=True),
]
