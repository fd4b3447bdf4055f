"""Lesson 20's checks: the K loop of v0 on gfx950 and gfx942 (MFMA count, loads, the trip through LDS, the branches
masks cost), its budget, the masks; on an AMD GPU correctness and the figure against hipBLASLt."""
from gluon_course.grading import LessonChecks
from gluon_course.amd import (budget_check, BudgetFacts, compiled, config_check, correctness_check,
                                           headline_figure, host_model_check, loop_check, masked_check, refusal_check)
from gluon_course.amd import time_model_check

# One K step (BLOCK_K = 64) of one wave, as Triton 3.9.0 compiles it. Each wave holds 128 × 128 elements of C: 8 × 8
# blocks of 16 × 16 (every other one along M and along N), each needing 64 / 32 = 2 MFMAs of K = 32 on gfx950 (4 of K = 16 on gfx942). The two tiles, 256 × 64
# and 64 × 256 of 2 bytes, are 64 KiB, moved by 256 lanes 16 bytes at a time: 16 loads per lane. convert_layout
# writes them to LDS (16 ds_write_b128) and reads them back in the MFMA operand layouts (32 ds_read_b128: each wave
# reads its 128 rows of A and 128 columns of B, half of each tile); every masked load is a branch around it, and the
# loop adds its exit test and its jump back.
LOOP = {
    "gfx950": {"mfma": 128, "global_load_dwordx4": 16, "ds_write_b128": 16, "ds_read_b128": 32, "s_barrier": 32,
               "branches": 18},
    "gfx942": {"mfma": 256, "global_load_dwordx4": 16, "ds_write_b128": 16, "ds_read_b128": 32, "s_barrier": 16,
               "branches": 18},
}
WHY = ("each wave: 8 × 8 MFMA tiles × K steps per tile; 16 vector loads per lane; convert_layout through LDS; "
       "one branch per masked load, the loop's exit test and its jump back")
# convert_layout's scratch in LDS (Triton sizes it per conversion); no scratch memory, registers within the file.
BUDGET = {"gfx950": BudgetFacts(4096, why="convert_layout's LDS scratch"),
          "gfx942": BudgetFacts(8192, why="convert_layout's LDS scratch")}


# The time model (amd.time_model), the steady K step in fp16: v0 reaches 29.5% in the model: each step waits a memory
# round trip for its loads, then for every LDS trip of convert_layout; the lesson claims at least 25%.
PIECES = None   # no LDS layout of its own: convert_layout's scratch, its reads taken as conflict-free
TIME = (0.25, "v0 waits for its loads a whole memory round trip per step, then for each LDS trip of convert_layout")

CHECKS = LessonChecks(
    targets=("gfx950", "gfx942"),
    teaches="MFMA layouts (`AMDMFMALayout`, `DotOperandLayout`), masked loads in 16-byte copy layouts, "
            "`convert_layout` into the operand layouts, `mfma`; what the masks cost in branches",
    machine_code=[
        loop_check("loop_gfx950", "gfx950: the K loop holds 128 v_mfma_f32_16x16x32, 16 global_load_dwordx4, "
                   "16 ds_write_b128 + 32 ds_read_b128, 32 barriers, 18 branches (fp16 and bf16)", "gfx950",
                   LOOP["gfx950"], WHY),
        budget_check("budget_gfx950", "gfx950", BUDGET["gfx950"]),
        masked_check("masked_mnk"),
        config_check(),
        time_model_check("time_model", 0, *TIME, pieces=PIECES),
        host_model_check(any_k=True),
        loop_check("loop_gfx942", "gfx942: 256 v_mfma_f32_16x16x16 (half the K per instruction), the same loads, "
                   "LDS trips and branches (fp16 and bf16)", "gfx942", LOOP["gfx942"], WHY),
        budget_check("budget_gfx942", "gfx942", BUDGET["gfx942"]),
    ],
    correctness=[correctness_check(shapes="any"), refusal_check()],
    figures=[headline_figure(0)],
)
