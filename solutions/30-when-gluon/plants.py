"""Planted mistakes of lesson 30: each is the solution with one plausible mistake, and names the key of the check that
must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    # ---- caught without a GPU ----
    Plant("a one-row tile added to the transposing copy's autotuning space: lesson 02's copy shape, but each row of x "
          "is a column of out, so every store of that tile is a scattered 4-byte STG.E",
          "TRANSPOSE_CONFIGS = ((64, 64, 4),", "TRANSPOSE_CONFIGS = ((1, 1024, 4), (64, 64, 4),",
          rejected_by="autotune_spaces_coalesced", gpu=False),
    Plant("the store uses x's offsets (out[i, j] at i * N + j): no transpose, so no conversion either",
          "tl.store(out_ptr + cols[None, :] * M + rows[:, None], tile, mask=mask)",
          "tl.store(out_ptr + rows[:, None] * N + cols[None, :], tile, mask=mask)",
          rejected_by="exercise_sm_90", gpu=False),
    Plant("the mask forgets the columns: the last tile of a row reads and writes past N",
          "mask = (rows[:, None] < M) & (cols[None, :] < N)", "mask = rows[:, None] < M",
          rejected_by="exercise_sm_90", gpu=False),
    Plant("the load is masked, the store is not: the edge tiles write past out's last rows and columns (the mask "
          "check once read the comparisons of the whole kernel, and saw M and N in the load's mask)",
          "tl.store(out_ptr + cols[None, :] * M + rows[:, None], tile, mask=mask)",
          "tl.store(out_ptr + cols[None, :] * M + rows[:, None], tile)", rejected_by="exercise_sm_90", gpu=False),
    Plant("off-by-one on the columns, caught on the CPU: the mask admits column N; it also costs the 16-byte accesses "
          "(N + 1 is not a multiple of 16), which the check once blamed on the store's offsets",
          "mask = (rows[:, None] < M) & (cols[None, :] < N)", "mask = (rows[:, None] < M) & (cols[None, :] <= N)",
          rejected_by="exercise_sm_90", gpu=False),
    # ---- caught on a GPU ----
    Plant("off-by-one on the columns: one column past the end of every row is read and written",
          "mask = (rows[:, None] < M) & (cols[None, :] < N)", "mask = (rows[:, None] < M) & (cols[None, :] <= N)",
          rejected_by="plain_copies_exact", gpu=True),
    Plant("the translated copy's grid rounds down: the tail of a tensor that is not a multiple of BLOCK is not copied",
          "translated_kernel(\"tl_copy_kernel\")[(triton.cdiv(numel, BLOCK),)]",
          "translated_kernel(\"tl_copy_kernel\")[(numel // BLOCK,)]",
          rejected_by="translated_copies_exact", gpu=True),
]
