"""Lesson 21's checks: buffer loads and stores instead of masked loads and stores: the K loop without its branches,
four branches left in the whole kernel, the VGPRs it costs; on an AMD GPU correctness and the figure."""
from gluon_course.grading import Check, LessonChecks
from gluon_course.amd import (budget_check, BudgetFacts, compiled, config_check, correctness_check,
                                           headline_figure, host_model_check, loop_check, masked_check, refusal_check)
from gluon_course.amd import time_model_check
from gluon_course.amd import amdgcn

# Version 0's K loop with buffer_load_dwordx4 for global_load_dwordx4, and one branch left: the loop's own.
LOOP = {
    "gfx950": {"mfma": 128, "buffer_load_dwordx4": 16, "ds_write_b128": 16, "ds_read_b128": 32, "s_barrier": 32,
               "branches": 1},
    "gfx942": {"mfma": 256, "buffer_load_dwordx4": 16, "ds_write_b128": 16, "ds_read_b128": 32, "s_barrier": 16,
               "branches": 1},
}
WHY = "v0's loop, the loads through buffer descriptors and their masks as out-of-range offsets: no branch per load"
# The whole kernel (Triton 3.9.0): the jump at the entry past the block that loads the kernel arguments, the test
# that skips the loop when there is no K step, the loop's branch back, and the jump past the skipped-loop path to the
# store. Version 0 had 141: every masked load and every masked store of C sat behind its own branch.
KERNEL_BRANCHES = 4
BUDGET = {"gfx950": BudgetFacts(4096, why="convert_layout's LDS scratch"),
          "gfx942": BudgetFacts(8192, why="convert_layout's LDS scratch")}


def kernel_branches(target):
    def run(mod):
        for dtype in ("fp16", "bf16"):
            k = compiled(mod, target, dtype)
            found = amdgcn.branches(k)
            if found != KERNEL_BRANCHES:
                stores = {op: n for op, n in k.opcodes().items() if "store" in op}
                return (f"{dtype}: {found} branches in the kernel; expected {KERNEL_BRANCHES}: every load and the "
                        f"store of C go through buffer instructions, whose masks cost no branch (stores: {stores})")
        return None
    return Check(f"branches_{target}", f"{target}: {KERNEL_BRANCHES} branches in the whole kernel (version 0: 141), "
                 "C stored by buffer_store (fp16 and bf16)", run, target=target)



# The time model (amd.time_model), the steady K step in fp16: lesson 20's solution reaches 29.5% in the model, this
# one 27.6% (Triton 3.9.0's v1 issues 201 moves between the register files per step); the lesson claims at least 25%:
# buffer loads alone buy no time.
PIECES = None   # no LDS layout of its own: convert_layout's scratch, its reads taken as conflict-free
TIME = (0.25, "version 0's loop with buffer loads: the same waits, more moves between register files")

CHECKS = LessonChecks(
    targets=("gfx950", "gfx942"),
    teaches="`buffer_load` / `buffer_store`: a base pointer and 32-bit offsets, the hardware's range check instead "
            "of branches around masked loads, and what that costs in VGPRs",
    machine_code=[
        loop_check("loop_gfx950", "gfx950: the K loop holds 128 v_mfma_f32_16x16x32, 16 buffer_load_dwordx4, "
                   "16 ds_write_b128 + 32 ds_read_b128, 32 barriers and 1 branch (fp16 and bf16)", "gfx950",
                   LOOP["gfx950"], WHY),
        kernel_branches("gfx950"),
        budget_check("budget_gfx950", "gfx950", BUDGET["gfx950"]),
        masked_check("masked_mnk"),
        config_check(),
        time_model_check("time_model", 1, *TIME, previous="20", pieces=PIECES),
        host_model_check(any_k=True),
        loop_check("loop_gfx942", "gfx942: 256 v_mfma_f32_16x16x16, the same buffer loads and 1 branch (fp16 and "
                   "bf16)", "gfx942", LOOP["gfx942"], WHY),
        kernel_branches("gfx942"),
    ],
    correctness=[correctness_check(shapes="any"), refusal_check()],
    figures=[headline_figure(1)],
)
