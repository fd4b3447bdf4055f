"""Lesson 29's checks: the workgroup → tile order on the host against a model of the dispatch (round robin over 8
XCDs): every tile exactly once, and few strips of A and B per XCD; version 8's loop unchanged; the host model; on an
AMD GPU correctness and the figure."""
from gluon_course.amd import K_MULTIPLE
from gluon_course.grading import LessonChecks
from gluon_course import amd
from gluon_course.amd import (accumulator_check, budget_check, BudgetFacts, config_check,
                                           correctness_check, headline_figure, host_model_check, loop_check,
                                           loop_waits_check, masked_check, refusal_check, region_check,
                                           xcd_order_check)
from gluon_course.amd import group_size_check, time_model_check

__all__ = ["CHECKS", "compiled", "order", "order_constexprs"]


def order_constexprs(mod) -> dict:
    """The order's constexprs as the module's launcher passes them: its CONFIG's GROUP_M and NUM_XCDS (the
    solution's are the vendor's GROUP_M = 4 and the 8 XCDs of an MI350/MI355). What is graded is what runs."""
    return amd.config_constexprs(mod, ("GROUP_M", "NUM_XCDS"))


def compiled(mod, target="gfx950", dtype="fp16"):
    return amd.compiled(mod, target, dtype, layouts={**mod.kernel_layouts(target), **order_constexprs(mod)})


def order(mod):
    """The kernel's own tile function, on the host, at the module's CONFIG: workgroup id → (row, column) of tiles."""
    from gluon_course.model.run import patched

    tile_of, constexprs = patched(mod.tile_of), order_constexprs(mod)
    return lambda pid, num_pid_m, num_pid_n: tile_of(pid, num_pid_m, num_pid_n, constexprs["GROUP_M"],
                                                     constexprs["NUM_XCDS"])


# Grids of tiles: square, tall, wide, fewer tiles than XCDs, and tile counts that 8 XCDs do not divide (5 × 5 and
# 10 × 25 leave most XCDs one tile short, so the remap must shift their starts).
SHAPES = ((16, 16), (32, 32), (15, 17), (10, 25), (5, 5), (33, 7), (3, 5), (2, 3), (1, 1))
# The most strips (row strips of A + column strips of B) one XCD reads in a wave of 256 workgroups: 4 rows × 8
# columns of tiles, 12, where row-major order gives 18 on 16 × 16 tiles and XCD-remapped row-major 33 on 32 × 32.
STRIPS = {(16, 16): 12, (32, 32): 12}
# The grids the group size is weighed on: square, a power of two of tiles along each side (as the headline's 16 × 16).
GROUP_GRIDS = ((16, 16), (32, 32))
LOOP = {"mfma": 256, "buffer_load_dwordx4 … lds": 32, "ds_read_b128": 64, "s_barrier": 8, "branches": 2}


# The time model (amd.time_model), the steady K step in fp16: lesson 28's solution reaches 73.7% in the model, and so
# does this one: the same loop (the order of the tiles acts through the L2, which the model leaves out); the lesson
# claims at least 67%.
PIECES = ((128, 64), (64, 128))   # read from LDS: the halves of A and B (memory.lds gives their bank conflicts)
TIME = (0.67, "version 8's loop: the order of the tiles changes nothing the model sees")

CHECKS = LessonChecks(
    targets=("gfx950",),
    teaches="XCD-aware order: workgroup ids remapped so that each of the 8 XCDs computes a contiguous, grouped "
            "block of tiles that share rows of A and columns of B in its own L2",
    machine_code=[
        xcd_order_check("xcd_order", order, SHAPES, STRIPS, "each XCD's tiles a 4 × 8 block: 4 rows of A, 8 "
                        "columns of B", settings=order_constexprs),
        group_size_check("group_size", order, order_constexprs, GROUP_GRIDS),
        loop_check("loop_gfx950", "gfx950: version 8's K loop, unchanged: 256 v_mfma_f32_16x16x32, 32 "
                   "buffer_load_dwordx4 … lds, 64 ds_read_b128, 8 barriers, 2 branches (fp16 and bf16)", "gfx950",
                   LOOP, "the order changes which tile, not how it is computed", compile_=compiled),
        region_check("region_copies", "gfx950", [4] * 8, 2, "version 8's regions", compile_=compiled),
        loop_waits_check("copy_waits", "gfx950", [20] * 8, "version 8's waits", compile_=compiled),
        accumulator_check("agpr_accumulators", "gfx950", 256, 0, "version 8's accumulators", compile_=compiled),
        budget_check("budget_gfx950", "gfx950", BudgetFacts(135040, why="version 8's LDS"), compile_=compiled),
        masked_check("masked_mnk", compile_=compiled),
        config_check(),
        time_model_check("time_model", 9, *TIME, previous="28", pieces=PIECES, compile_=compiled),
        host_model_check(extra=order_constexprs, compile_=compiled),
    ],
    correctness=[correctness_check(shapes="aligned"), refusal_check(k_multiple=K_MULTIPLE)],
    figures=[headline_figure(9)],
)
