"""Lesson 26's checks: two steps per trip of the K loop (twice version 5's loop: 256 MFMAs, two waits, two
barriers), each step's MFMAs first; the registers against the wall of 512, with nothing spilled; the host model; on
an AMD GPU correctness and the figure."""
from gluon_course.amd import K_MULTIPLE
from gluon_course.grading import LessonChecks
from gluon_course.amd import (budget_check, BudgetFacts, compiled, config_check, correctness_check,
                                           headline_figure, host_model_check, loop_check, loop_waits_check,
                                           masked_check, order_check, prologue_check, refusal_check)
from gluon_course.amd import time_model_check

__all__ = ["CHECKS", "compiled"]

# Two of version 5's steps per trip: two tiles' MFMAs, copies and reads, a wait and a barrier each, one branch.
LOOP = {"mfma": 256, "buffer_load_dwordx4 … lds": 32, "ds_read_b128": 64, "s_barrier": 2, "branches": 1}
WHY = "two K steps per trip, each one tile's MFMAs, copies and reads"
ORDER = ["MFMA", "vmcnt(0)", "barrier", "buffer load → LDS", "LDS read"]
WAITS = [0, 0]                      # each step waits for the next tile's group, the only one in flight
LDS_BYTES = 135104


# The time model (amd.time_model), the steady K step in fp16: lesson 25's solution reaches 57.4% in the model, this
# one 57.7%; the lesson claims at least 55%: unrolled, the loop does version 5's work per step, no slower.
PIECES = ((256, 64), (64, 256))   # read from LDS: the tiles (memory.lds gives their bank conflicts)
TIME = (0.55, "unrolled twice, the loop does version 5's work per step: no slower in the model")

CHECKS = LessonChecks(
    targets=("gfx950",),
    teaches="unrolling the K loop ×2: two sets of operand registers used in turn instead of a copy, and the "
            "register wall of 512 VGPRs per lane",
    machine_code=[
        loop_check("loop_gfx950", "gfx950: the K loop holds 256 v_mfma_f32_16x16x32, 32 buffer_load_dwordx4 … lds, "
                   "64 ds_read_b128, 2 barriers, 1 branch: two steps per trip (fp16 and bf16)", "gfx950", LOOP, WHY),
        order_check("mfma_first", "gfx950", ORDER, "each step multiplies registers read by the step before"),
        loop_waits_check("copy_waits", "gfx950", WAITS, "each step waits for the next tile's group only"),
        prologue_check("prologue", "gfx950", 32, 16, "lesson 25's prologue"),
        budget_check("budget_gfx950", "gfx950", BudgetFacts(LDS_BYTES, why="two sets of operand registers and the "
                                                                          "accumulator must fit 512, unspilled")),
        masked_check("masked_mnk"),
        config_check(),
        time_model_check("time_model", 6, *TIME, previous="25", pieces=PIECES),
        host_model_check(),
    ],
    correctness=[correctness_check(shapes="aligned"), refusal_check(k_multiple=K_MULTIPLE)],
    figures=[headline_figure(6)],
)
