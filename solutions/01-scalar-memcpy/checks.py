"""Lesson 01's checks: the scalar loop in the machine code, the bound at the end of the tensor, the grid, and the
copy measured against the device copy."""
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks, Reference
from gluon_course.grading.classes import AMPERE_ADA_RTX50, class_ranges, datasheet, resident_blocks
from gluon_course.grading.facts import Facts, facts_check
from gluon_course.machine import compile_cached
from gluon_course.measure.copies import check_copy, copy_figure

SIGNATURE = {"in_ptr": "*fp32", "out_ptr": "*fp32", "numel": "i32"}
ALIGNED = ["in_ptr", "out_ptr", "numel"]


def compiled(mod, target, XBLOCK=2048):
    return compile_cached(mod.scalar_copy_kernel, target, signature=SIGNATURE, constexprs={"XBLOCK": XBLOCK},
                          aligned=ALIGNED)


def scalar_loop(target, load):
    def run(mod):
        k = compiled(mod, target)
        loads = k.global_loads()
        if set(loads) != {load}:
            return f"expected only 32-bit loads ({load}), found {dict(loads)}"
        if k.count_in_loops(k.family_pattern("global_load")) == 0 or k.count_in_loops(k.family_pattern("global_store")) == 0:
            return "the loads and stores are not inside a loop: the kernel should walk its XBLOCK elements one by one"
        return None
    return run


def bounded_by_numel(mod):
    """Without a GPU the compiled code still shows whether numel bounds the loop (a min or a comparison)."""
    if "numel" not in compiled(mod, "sm_90").compared_arguments():
        return ("numel is never compared with anything: the last program would copy a whole XBLOCK past the end "
                "of the tensor (stop at gl.minimum(start + XBLOCK, numel))")
    return None


def compiles_for_blackwell(mod):
    compiled(mod, "sm_100")
    return None


# The scalar loop on the GPUs before Hopper and on RTX 50, against sm_90 (Triton 3.9.0, XBLOCK 2048, 4 warps): the
# loop unrolled 8 times, one 4-byte load and store each; only the registers ptxas settles on differ.
SCALAR_LOOP = {
    "sm_90": Facts({"LDG.E": 8, "STG.E": 8}, registers=18, in_loops=("global_load", "global_store")),
    "sm_80": Facts({"LDG.E": 8, "STG.E": 8}, registers=18, in_loops=("global_load", "global_store")),
    "sm_86": Facts({"LDG.E": 8, "STG.E": 8}, registers=18, in_loops=("global_load", "global_store")),
    "sm_89": Facts({"LDG.E": 8, "STG.E": 8}, registers=18, in_loops=("global_load", "global_store")),
    "sm_120": Facts({"LDG.E": 8, "STG.E": 8}, registers=16, in_loops=("global_load", "global_store")),
}


def grid_covers_every_element(mod):
    for numel, XBLOCK, want in [(10_000, 2048, 5), (4096, 2048, 2), (1, 256, 1), (2**28, 2048, 131_072)]:
        got = tuple(mod.copy_grid(numel, XBLOCK))
        if got != (want,):
            return f"copy_grid({numel}, {XBLOCK}) = {got}, expected ({want},): every element needs a program"
    return None


def correct_on_odd_sizes(mod):
    return check_copy(lambda x, out: mod.scalar_copy(x, out))


def autotuned_correct(mod):
    return check_copy(lambda x, out: mod.scalar_copy_autotuned(x, out), shapes=(2049, 1_000_003))


def scalar_2048(mod):
    return copy_figure(lambda x, out: mod.scalar_copy(x, out, XBLOCK=2048), label="scalar copy")


def scalar_autotuned(mod):
    m = copy_figure(lambda x, out: mod.scalar_copy_autotuned(x, out), label="autotuned scalar copy")
    # The winner can change from run to run (the configs are close), so it goes into the details, not the text.
    m.details["best_xblock"] = mod.best_xblock()
    return m


def scalar_share(gpu):
    """The H200's 5.5% of the copy on another GPU: the loop waits on memory one element at a time, so its rate follows
    the SMs times the 4-warp blocks each holds, while the copy's follows DRAM bandwidth."""
    h200 = datasheet("H200")
    blocks = gpu.sms * resident_blocks(gpu.gpu_class, 128) / (h200.sms * resident_blocks("sm_90", 128))
    return 0.055 * blocks * h200.dram_gbs / gpu.dram_gbs


SCALAR_RANGE = Expectation(
    0.02, 0.12, "copy",
    "a scalar loop moves 4 bytes per iteration per block, so it is bound by instruction issue, not by memory: our "
    "H200 run measured 5.5–5.6% (2026-11-29, XBLOCK 2048); upstream's GB200 comment is about 8% of peak. The range "
    "is wide because the share depends on the ratio of issue rate to memory bandwidth, which differs between GPUs",
    (Reference(0.237, "TB/s", "NVIDIA H200, XBLOCK 2048, Triton 3.6 and 3.9, this course, 2026-11-29"),
     Reference(0.666, "TB/s", "GB200, XBLOCK 2048, upstream python/tutorials/gluon/01-intro.py comment")),
    classes=class_ranges(scalar_share, "the loop's rate follows the SMs times the 4-warp blocks each holds (16 on "
                         "sm_80 and sm_90, 12 on sm_86, sm_89 and sm_120: 1536 threads per SM), the copy's the DRAM "
                         "bandwidth, so a GPU with fewer bytes per SM clock gives the loop a larger share; the H200's "
                         "5.5% scaled by both"))

CHECKS = LessonChecks(
    targets=("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "gfx950"),
    teaches="the first Gluon kernel, the grid, a scalar copy loop, autotuning `XBLOCK`",
    machine_code=[
        Check("scalar_loop_sm_90", "sm_90: scalar 32-bit loads and stores inside a loop",
              scalar_loop("sm_90", "LDG.E"), target="sm_90"),
        Check("scalar_loop_gfx950", "gfx950: scalar global_load_dword inside a loop",
              scalar_loop("gfx950", "global_load_dword"), target="gfx950"),
        Check("bounded_by_numel", "sm_90: numel bounds the loop (the compiled code compares with it)",
              bounded_by_numel, target="sm_90"),
        Check("compiles_sm_100", "sm_100: compiles for Blackwell", compiles_for_blackwell, target="sm_100"),
        Check("grid_covers_every_element", "copy_grid covers every element", grid_covers_every_element),
        *(facts_check(f"scalar_loop_{t}", t, compiled, SCALAR_LOOP, num_warps=4, what="the scalar loop")
          for t in AMPERE_ADA_RTX50),
    ],
    correctness=[
        Check("exact_on_odd_sizes", "scalar_copy is exact on odd sizes (random data, poisoned and guarded output)",
              correct_on_odd_sizes, gpu=True),
        Check("autotuned_exact", "scalar_copy_autotuned is exact", autotuned_correct, gpu=True),
    ],
    figures=[
        Figure("scalar_copy_xblock2048", "scalar copy, XBLOCK 2048", scalar_2048, SCALAR_RANGE, headline=True),
        Figure("scalar_copy_autotuned", "scalar copy, autotuned XBLOCK", scalar_autotuned, SCALAR_RANGE),
    ],
)
