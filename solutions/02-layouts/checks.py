"""Lesson 02's checks: the R sweep's machine code, the mask, correctness on odd sizes, and the measured sweep."""
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks, Reference
from gluon_course.grading.checks import on_classes
from gluon_course.grading.classes import AMPERE_ADA_RTX50, datasheet_figures
from gluon_course.grading.facts import Facts, facts_check
from gluon_course.grading.gemm import access_masks_problem
from gluon_course.machine import compile_cached, warp_size
from gluon_course.measure import Measurement
from gluon_course.measure.copies import check_copy, copy_figure
from gluon_course.memory.layouts import to_linear

SIGNATURE = {"in_ptr": "*fp32", "out_ptr": "*fp32", "numel": "i32"}
ALIGNED = ["in_ptr", "out_ptr", "numel"]
R_VALUES = (1, 2, 4, 8, 16)
NUM_WARPS = 4
# Same bytes per thread on both vendors: 16 float32 per thread = 2048 elements on NVIDIA (128 threads),
# 4096 on AMD (256 threads: a wavefront has 64 lanes).
XBLOCK = {"sm_75": 2048, "sm_80": 2048, "sm_86": 2048, "sm_89": 2048, "sm_90": 2048, "sm_100": 2048, "sm_120": 2048,
          "gfx950": 4096, "gfx942": 4096}

# What the pinned Triton 3.9.0 emits for the tile copy, per R: {opcode: count} for loads (stores match).
EXPECTED_LOADS = {
    "sm_90": {1: {"LDG.E": 16}, 2: {"LDG.E.64": 8}, 4: {"LDG.E.128": 4}, 8: {"LDG.E.128": 4}, 16: {"LDG.E.128": 4}},
    "gfx950": {1: {"global_load_dword": 16}, 2: {"global_load_dwordx2": 8}, 4: {"global_load_dwordx4": 4},
               8: {"global_load_dwordx4": 4}, 16: {"global_load_dwordx4": 4}},
}


def compiled(mod, target, R, aligned=ALIGNED):
    layout = mod.tile_layout(R, NUM_WARPS, warp_size(target))
    return compile_cached(mod.tile_copy_kernel, target, signature=SIGNATURE,
                          constexprs={"XBLOCK": XBLOCK[target], "layout": layout}, aligned=tuple(aligned),
                          num_warps=NUM_WARPS)


def _sweep(target):
    def run(mod):
        for R in R_VALUES:
            k = compiled(mod, target, R)
            loads, stores = dict(k.global_loads()), dict(k.global_stores())
            want = EXPECTED_LOADS[target][R]
            want_stores = {op.replace("LDG", "STG").replace("load", "store"): n for op, n in want.items()}
            if loads != want or stores != want_stores:
                return f"R={R}: loads {loads}, stores {stores}; expected loads {want}, stores {want_stores}"
        return None
    return run


def layout_is_r_consecutive(mod):
    """Thread 0 must own elements 0..R-1, lane 1 the next R, warp 1 starts after 32 lanes."""
    for R in R_VALUES:
        linear = to_linear(mod.tile_layout(R, NUM_WARPS, 32), [R * 32 * NUM_WARPS])
        want_reg = [[1 << i] for i in range(R.bit_length() - 1)]
        want_lane = [[R << i] for i in range(5)]
        want_warp = [[R * 32 << i] for i in range(2)]
        if (linear.reg_bases, linear.lane_bases, linear.warp_bases) != (want_reg, want_lane, want_warp):
            return (f"R={R}: registers {linear.reg_bases}, lanes {linear.lane_bases}, warps {linear.warp_bases}; "
                    f"expected registers {want_reg}, lanes {want_lane}, warps {want_warp}")
    return None


def unaligned_numel_loses_vectors(mod):
    """The same R=4 layout without the promise that numel is a multiple of 16: the mask forces scalar loads."""
    k = compiled(mod, "sm_90", 4, aligned=("in_ptr", "out_ptr"))
    if dict(k.global_loads()) != {"LDG.E": 16}:
        return f"expected 16 × LDG.E without the numel hint, got {dict(k.global_loads())}"
    return None


def masked_by_numel(mod):
    """The tail mask is visible in the compiled code: numel must reach a comparison."""
    k = compiled(mod, "sm_90", 4)
    if "numel" not in k.compared_arguments():
        return ("numel is never compared with the offsets: without the mask the last tile reads and writes past "
                "the end of the tensor (mask = offsets < numel)")
    # Each access's own mask, exactly offsets < numel: a masked load does not mask the store.
    return (access_masks_problem(k, "load", ("numel",), "the load")
            or access_masks_problem(k, "store", ("numel",), "the store"))


def blackwell_r4(mod):
    k = compiled(mod, "sm_100", 4)
    return None if dict(k.global_loads()) == {"LDG.E.128": 4} else f"sm_100 R=4 loads {dict(k.global_loads())}"


# R=4 on the GPUs before Hopper and on RTX 50, against sm_90 (Triton 3.9.0, XBLOCK 2048, 4 warps): the same four
# 16-byte loads and stores; the registers differ by two.
R4 = {
    "sm_90": Facts({"LDG.E.128": 4, "STG.E.128": 4}, registers=26),
    "sm_80": Facts({"LDG.E.128": 4, "STG.E.128": 4}, registers=24),
    "sm_86": Facts({"LDG.E.128": 4, "STG.E.128": 4}, registers=26),
    "sm_89": Facts({"LDG.E.128": 4, "STG.E.128": 4}, registers=26),
    "sm_120": Facts({"LDG.E.128": 4, "STG.E.128": 4}, registers=26),
}


def compiled_r4(mod, target):
    return compiled(mod, target, 4)


def correct_for_every_r(mod):
    for R in R_VALUES:
        problem = check_copy(lambda x, out: mod.tile_copy(x, out, R=R))
        if problem:
            return f"R={R}, {problem}"
    return None


def tile_figure(R, XBLOCK_=2048, num_warps=4, numel=None):
    def measure(mod):
        kwargs = {} if numel is None else {"numel": numel}
        return copy_figure(lambda x, out: mod.tile_copy(x, out, R=R, XBLOCK=XBLOCK_, num_warps=num_warps),
                           label=f"tile copy R={R}", **kwargs)
    return measure


BEST_CONFIGS = [(1, 2048, 4), (2, 2048, 4), (4, 2048, 4), (2, 4096, 8), (4, 4096, 4), (4, 8192, 8)]


def best_tile(mod):
    best, best_config = None, None
    for R, xb, nw in BEST_CONFIGS:
        m = tile_figure(R, xb, nw)(mod)
        if best is None or m.value > best.value:
            best, best_config = m, (R, xb, nw)
    R, xb, nw = best_config
    # Which config wins can change from run to run (they are within a percent): details, not text.
    return Measurement(best.value, best.text, {**best.details, "R": R, "XBLOCK": xb, "num_warps": nw})


def _ref(fraction, tbs, R):
    return (Reference(fraction, "of copy", f"NVIDIA H200, R={R}, XBLOCK 2048, 4 warps: {tbs} TB/s, "
                      "this course's design run 2026-11-29"),
            Reference(GB200[R], "TB/s", "GB200, upstream python/tutorials/gluon/02-layouts.py comment"))


GB200 = {1: 6.574, 2: 6.476, 4: 6.474, 8: 6.502, 16: 6.214}
WHY_WIDE = "R = 1, 2, 4 keep a warp's loads on consecutive addresses; the design run on an H200 gave 96–98%"
WHY_NARROW = ("R = 8 and 16 still issue 16-byte loads, but one instruction's 32 lanes now spread over 2× or 4× "
              "the address range: on the H200 that cost a quarter (R=8) to a third (R=16) of the bandwidth")
# Where the H200's loss does not carry over: upstream's GB200 lost nothing at R=8 and 5% at R=16 (the references), so
# the loss is the H200's memory system's, not the layout's; on the other classes the floor stays and the ceiling is the
# device copy.
WHY_SPREAD = ("R = 8 and 16 lost a quarter and a third of the bandwidth on the H200, but nothing and 5% on upstream's "
              "GB200: how much a wider spread of addresses per instruction costs depends on the GPU, so on this class "
              "the range keeps the H200's floor and lets the copy reach the device copy. Written for the class, not "
              "run on one")
ODD_NUMEL_CLASSES = on_classes(
    AMPERE_ADA_RTX50, 0.60, 1.05,
    "4-byte accesses, four times the instructions of R=4: the H200 lost 18% to them; a GPU with fewer DRAM bytes per "
    f"SM clock ({datasheet_figures('bytes_per_sm_clock')}, from the vendors' datasheets) hides them behind memory, so "
    "on this class the range keeps the H200's floor and lets the copy reach the device copy. Written for the class, "
    "not run on one")
CHECKS = LessonChecks(
    targets=("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "gfx950"),
    teaches="`BlockedLayout`'s four parameters, register budget, the broadcast trap, vector width R",
    machine_code=[
        Check("layout_r_consecutive", "tile_layout gives each thread R consecutive elements, lanes then warps",
              layout_is_r_consecutive),
        Check("r_sweep_sm_90", "sm_90: R sweep gives 16 × LDG.E, 8 × LDG.E.64, then 4 × LDG.E.128", _sweep("sm_90"),
              target="sm_90"),
        Check("r_sweep_gfx950", "gfx950: R sweep gives global_load_dword, _dwordx2, _dwordx4", _sweep("gfx950"),
              target="gfx950"),
        Check("r4_sm_100", "sm_100: R=4 gives 4 × LDG.E.128", blackwell_r4, target="sm_100"),
        Check("unaligned_numel_scalar", "sm_90: without the numel % 16 hint the mask forces 16 × LDG.E",
              unaligned_numel_loses_vectors, target="sm_90"),
        Check("masked_by_numel", "sm_90: the tail mask compares the offsets with numel", masked_by_numel,
              target="sm_90"),
        *(facts_check(f"r4_{t}", t, compiled_r4, R4, num_warps=NUM_WARPS, what="R=4") for t in AMPERE_ADA_RTX50),
    ],
    correctness=[
        Check("exact_every_r", "tile_copy is exact for R = 1…16 on odd sizes (random data, poisoned and guarded "
              "output)", correct_for_every_r, gpu=True),
    ],
    figures=[
        Figure("tile_copy_R1", "tile copy, R=1", tile_figure(1), Expectation(0.85, None, "copy", WHY_WIDE, _ref(0.97, 4.14, 1))),
        Figure("tile_copy_R2", "tile copy, R=2", tile_figure(2), Expectation(0.85, None, "copy", WHY_WIDE, _ref(0.98, 4.19, 2))),
        Figure("tile_copy_R4", "tile copy, R=4", tile_figure(4), Expectation(0.85, None, "copy", WHY_WIDE, _ref(0.96, 4.10, 4))),
        Figure("tile_copy_R8", "tile copy, R=8", tile_figure(8),
               Expectation(0.55, 0.95, "copy", WHY_NARROW, _ref(0.75, 3.21, 8),
                           classes=on_classes(AMPERE_ADA_RTX50, 0.55, 1.05, WHY_SPREAD))),
        Figure("tile_copy_R16", "tile copy, R=16", tile_figure(16, 2048, 4),
               Expectation(0.45, 0.90, "copy", WHY_NARROW, _ref(0.64, 2.75, 16),
                           classes=on_classes(AMPERE_ADA_RTX50, 0.45, 1.05, WHY_SPREAD))),
        Figure("tile_copy_R4_odd_numel", "tile copy, R=4, numel = 2**28 - 1", tile_figure(4, numel=2**28 - 1),
               Expectation(0.60, 0.95, "copy",
                           "an odd numel compiles to 4-byte LDG.E; with R=4 a lane's 4 elements are 16 bytes from "
                           "its neighbour's, so each scalar instruction touches 16 sectors for 128 useful bytes. "
                           "We first expected ≥ 85% (R=1 reaches 97%); the first recorded H200 run gave 81.6%, "
                           "and this range is set around it, wide enough for other GPUs whose caches absorb the "
                           "scattered sectors better or worse",
                           (Reference(3.468, "TB/s", "NVIDIA H200, this course's first recorded run, 2026-11-29"),),
                           classes=ODD_NUMEL_CLASSES)),
        Figure("tile_copy_best", "best tile copy (small tuning sweep)", best_tile,
               Expectation(0.88, None, "copy",
                           "a correct tile copy with 4- to 16-byte coalesced accesses streams at close to the device "
                           "copy on any recent GPU; the range leaves room for GPUs whose copy engine path is faster "
                           "than a kernel's loads and stores",
                           (Reference(0.978, "of copy", "NVIDIA H200, this course's first recorded run, 2026-11-29"),
                            Reference(0.98, "of copy", "R=2 on the H200, design run 2026-11-29")),
                           target=CourseTarget(0.97, why="the course aims for a tile copy within 3% of the device "
                                               "copy: 97.8% on the H200 (2026-11-29)")),
               headline=True),
    ],
)
