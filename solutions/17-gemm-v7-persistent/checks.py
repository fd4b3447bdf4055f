"""Lesson 17's checks: a persistent tile loop around lesson 16's pipeline on sm_90 (the ring set up once, the
store inside the tile loop, as many programs as fit), the grouped order evaluated on the host, the host model,
correctness and hang protection on a GPU, and the figures against cuBLAS and against lesson 16."""
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks, NotChecked
from gluon_course.grading import tma_gemm
from gluon_course.grading.gemm import (from_trial, gemm_measure, plain_triton_measure, speedup_over, store_mask_missing,
                                       sweep_measure)
from gluon_course.grading.gemm_kernel import GemmKernel
from gluon_course.machine.occupancy import occupancy_of

# The lesson's CONFIG (lesson 16's tile and ring, 8 rows of tiles per group), as a launch of an 8192³ problem sees it.
TILE = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "STAGES": 4, "GROUP_M": 8, "num_warps": 8}


def _programs(M, N, cfg, sms):
    """As many programs as fit (programs_per_sm on each SM), never more than there are tiles: the launcher's rule."""
    tiles = -(-M // cfg["BLOCK_M"]) * -(-N // cfg["BLOCK_N"])
    return min(tiles, sms * cfg.get("programs_per_sm", 1))


KERNEL = GemmKernel("tma", fixed=TILE, extra_tile_keys=("STAGES", "GROUP_M"), grid=_programs,
                    ignore=("num_warps", "programs_per_sm"),
                    constexprs=lambda mod, cfg, dtype: mod.kernel_layouts(cfg["num_warps"], cfg["BLOCK_N"]))
# Lesson 16's K loop, instruction for instruction (its counts: same tile, same ring).
IN_LOOP = {"WARPGROUP.ARRIVE": 1, "WARPGROUP.DEPBAR.LE": 1, "UTMALDG.2D": 2, "SYNCS.ARRIVE.TRANS64": 1,
           "SYNCS.PHASECHK.TRANS64.TRYWAIT": 1}
MMA_PER_STEP, INSTR_N = 4, 256
MBARRIER_OPS = {"UTMALDG.2D": 8, "SYNCS.EXCH.64": 4, "SYNCS.ARRIVE.TRANS64": 4, "SYNCS.PHASECHK.TRANS64.TRYWAIT": 2,
                "SYNCS.CCTL.IV": 4}
REGISTERS = 154                     # lesson 16's: the tile loop's counters fit in what the accumulator leaves
SHARED_BYTES = 4 * (128 * 64 + 64 * 256) * 2 + 4 * 8
PROGRAMS_PER_SM = 1                 # a 192 KiB ring: a second program's would not fit in the SM's 228 KiB


def compiled(mod, target="sm_90", dtype="bf16"):
    """The lesson's kernel for ``target`` at the course's tile, as a launch with 8192³ operands sees it."""
    return KERNEL.compile(mod, target, dtype)


def main_loop(k):
    return k.loop_holding("HGMMA")


def _tile_loop(k):
    """(first, last) of the smallest loop that encloses the K loop: the loop over tiles, or None."""
    first, last = main_loop(k)
    outer = [(a, b) for a, b in k.loops() if a < first and b > last]
    return min(outer, key=lambda s: s[1] - s[0]) if outer else None


def pipeline(mod):
    """Lesson 16's asynchronous pipeline inside: the same instructions per K step, the same producer."""
    for dtype in ("bf16", "fp16"):
        k = compiled(mod, "sm_90", dtype)
        problem = tma_gemm.wgmma_signature(k, dtype, IN_LOOP, MMA_PER_STEP, INSTR_N, MBARRIER_OPS)
        if problem:
            return problem
        problem = tma_gemm.wait_depth_problem(k, in_loop=1, after=0)
        if problem:
            return f"{dtype}: {problem}"
        depths = [depth for _, depth in tma_gemm.wgmma_waits(k)]
        if len(depths) != 2:
            return (f"{dtype}: wgmma waits of depth {depths}; expected one of depth 1 in the K loop and one of 0 "
                    "per tile")
    return None


def at_tile_and_config(mod):
    """(label, compiled kernel): at the course's tile and at the learner's CONFIG (bf16)."""
    yield "at the course's tile", compiled(mod)
    yield "at your CONFIG", KERNEL.compile(mod, "sm_90", "bf16", dict(mod.CONFIG))


def persistent_loop(mod):
    """One program, many tiles: a loop around the K loop that strides by the number of programs and stores C."""
    for where, k in at_tile_and_config(mod):
        problem = _persistent_problem(k)
        if problem:
            return f"{where}: {problem}"
    return None


def _persistent_problem(k):
    outer = _tile_loop(k)
    if outer is None:
        return "no loop around the K loop: each program does one tile (lesson 16); walk over tiles instead"
    stores = [i.address for i in k.instructions() if i.opcode.startswith("STG")]
    if not stores or not all(outer[0] <= a <= outer[1] for a in stores):
        return "the store of C is not inside the tile loop: every tile a program computes must be stored"
    if "num_programs" not in k.ttgir:
        return ("the tile loop does not step by gl.num_programs(0): every program would walk from its first tile to "
                "the last, and tiles would be computed several times")
    return None


def ring_set_up_once(mod):
    """mbarrier.init before the tile loop and invalidate after it: the ring lives as long as the program."""
    for where, k in at_tile_and_config(mod):
        problem = _ring_problem(k)
        if problem:
            return f"{where}: {problem}"
    return None


def _ring_problem(k):
    outer = _tile_loop(k)
    if outer is None:
        return "no tile loop"
    inits = [i.address for i in k.instructions() if i.opcode == "SYNCS.EXCH.64"]
    retires = [i.address for i in k.instructions() if i.opcode == "SYNCS.CCTL.IV"]
    if any(outer[0] <= a <= outer[1] for a in inits + retires):
        return ("the barriers are initialised or invalidated inside the tile loop: set the ring up once per program, "
                "and let the step count carry slots and phases from one tile to the next")
    return None


def programs_fit(mod):
    """At the course's tile: its registers and shared memory, exactly. At the learner's CONFIG: programs_per_sm is what
    fits on an SM."""
    problem = compiled(mod).resource_mismatch(REGISTERS, SHARED_BYTES)
    if problem:
        return f"at the course's tile: {problem}"
    cfg = dict(mod.CONFIG)
    k = KERNEL.compile(mod, "sm_90", "bf16", cfg)
    fits = occupancy_of(k, cfg["num_warps"]).blocks
    if fits != cfg["programs_per_sm"]:
        return (f"at your CONFIG {fits} programs fit on an SM but CONFIG launches {cfg['programs_per_sm']} per SM: a "
                "persistent grid should be exactly what the GPU holds at once")
    return None


def store_masked(mod):
    return store_mask_missing(compiled(mod))


def grouped_order(mod):
    """The learner's grouped_tile, evaluated on the host over whole grids: every tile of C exactly once, for grids
    with a last group of fewer rows and for several GROUP_M."""
    from gluon_course.model import ModelUnsupported
    from gluon_course.model.orders import visits_each_once

    for num_pid_m, num_pid_n in ((1, 1), (3, 5), (8, 8), (9, 4), (17, 3), (64, 32)):
        for group_m in (1, 3, 8):
            try:
                problem = visits_each_once(mod.grouped_tile, num_pid_m, num_pid_n, group_m)
            except ModelUnsupported as e:
                return NotChecked(f"the host model does not model {e}, so it could not evaluate grouped_tile; on a "
                                  "GPU the correctness checks still judge every tile")
            if problem:
                return f"grouped_tile with GROUP_M={group_m}: {problem}"
    return None


def model(mod):
    # 3 programs for the host model's problems: 9 and more tiles of C, so every program does several.
    return KERNEL.model_check(mod, sms=3)


# -- on a GPU ------------------------------------------------------------------------------------

# Lesson 14's shapes have at most 66 tiles of C: fewer than an H200's 132 programs, so no program would do a second
# tile. Two more shapes give programs several tiles each (33 × 9 = 297 and 16 × 17 = 272 tiles of 128 × 256), with
# K steps per tile (4 and 2) that are and are not a multiple of the ring's 4 slots, so slots and phases must carry
# across tiles either way.
SHAPES = tma_gemm.TMA_SHAPES + tma_gemm.MANY_TILES


def correct(mod):
    return tma_gemm.correct(mod, SHAPES)


def launcher_refuses(mod):
    return tma_gemm.launcher_refuses(mod)


def sanitizer_clean(mod):
    # 6 tiles on 2 programs: each program does 3, so the sanitizers see the phases carried across tiles.
    return tma_gemm.sanitizer_clean(mod, tma_gemm.PERSISTENT_SMALL)


# -- figures -------------------------------------------------------------------------------------

WHY = ("lesson 16's pipeline in a persistent grid, one program per SM, visiting tiles in grouped order")
WHY_V6 = ("lesson 16's kernel timed in the same process; a persistent grid need not win at every size, so the gate starts "
          "below 1")
WHY_TRITON = ("plain Triton is the bar from v7 on: the course's tl.dot kernel in grouped order, autotuned over 6 "
              "configurations (gluon_course/measure/plain_triton.py), timed against cuBLAS in the same process")
TARGET = CourseTarget(0.90, why="the course's target for v7: 90% of cuBLAS at 8192³")
TARGET_V6 = CourseTarget(1.0, why="v7 at least as fast as v6: tiles shared in L2, barriers set up once per program")
# The H200 trial of this kernel at its CONFIG, of lesson 16's and of plain Triton (grading.gemm.TRIAL_RUN).
TRIAL = {"bf16_8192": (0.962, "v7 at 128 × 256 × 64, 4 slots, 1 program per SM, 652 TFLOPS vs cuBLAS 679"),
         "fp16_8192": ("bf16_8192",), "bf16_4096": ("bf16_8192",), "sweep_bf16": ("bf16_8192",),
         "vs_v6_bf16_8192": (1.034, "v7 0.962 over v6 0.930, both of cuBLAS in the trial"),
         "triton_bf16_8192": (0.952, "plain Triton autotuned, 647 TFLOPS vs cuBLAS 680"),
         "over_triton_sweep": (1.011, "v7 0.962 over plain Triton 0.952 at 8192³ (no sweep of v7 was tried)")}


def _figure(key, title, M, N, K, dtype_name, headline=False, target=None):
    return Figure(key, title, gemm_measure(M, N, K, dtype_name, f"v7 persistent {dtype_name}"),
                  from_trial(TRIAL, key, WHY, tma_gemm.DESIGN_RUN, target=target), headline=headline)


CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="a persistent grid (as many programs as fit, each walking over tiles of C) in grouped order; the "
            "ring's slots and phases carried across tiles by a step count",
    machine_code=[
        Check("pipeline_sm_90", "sm_90, at the course's tile 128×256×64 (8 warps, STAGES 4, GROUP_M 8): lesson 16's K "
              "loop inside (4 HGMMA, wait depth 1, refill after it) and its TMA and mbarrier ops (bf16 and "
              "fp16)", pipeline, target="sm_90"),
        Check("persistent_loop", "sm_90, at the course's tile and at your CONFIG: a tile loop around the K loop, "
              "stepping by the number of programs, with the store of C inside it", persistent_loop, target="sm_90"),
        Check("ring_set_up_once", "sm_90, at the course's tile and at your CONFIG: the barriers are initialised before "
              "the tile loop and retired after it",
              ring_set_up_once, target="sm_90"),
        Check("programs_fit", f"sm_90: at the course's tile {REGISTERS} registers, no spills, {SHARED_BYTES} shared "
              f"bytes ({PROGRAMS_PER_SM} program per SM fits); at your CONFIG, its programs_per_sm exactly what "
              "fits", programs_fit, target="sm_90"),
        Check("store_masked", "sm_90, at the course's tile: the store of C is masked by rows < M and columns < "
              "N", store_masked, target="sm_90"),
        Check("config_fits", "your CONFIG, compiled for sm_90, fits one SM with no spills",
              KERNEL.config_fits(("sm_90",)), target="sm_90"),
        Check("grouped_order", "grouped_tile, evaluated on the host over grids of 1 × 1 to 64 × 32 tiles with GROUP_M "
              "1, 3 and 8, visits every tile of C exactly once", grouped_order),
        Check("host_model", tma_gemm.HOST_MODEL + "; 3 programs, several tiles each", model),
    ],
    correctness=[
        Check("correct_tma_shapes", "matmul is correct on odd shapes with K, N multiples of 8, and on two with "
              "several tiles per program (bf16 and fp16; poisoned, guarded C), all in a child process that must finish "
              "within 90 s", correct, gpu=True),
        Check("launcher_refuses", tma_gemm.REFUSALS, launcher_refuses, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck, racecheck and synccheck report nothing on a "
              "129×520×200 launch on 2 programs (3 tiles each)", sanitizer_clean, gpu=True),
    ],
    figures=[
        _figure("bf16_8192", "bf16 8192³", 8192, 8192, 8192, "bf16", headline=True, target=TARGET),
        _figure("fp16_8192", "fp16 8192³", 8192, 8192, 8192, "fp16"),
        _figure("bf16_4096", "bf16 4096³", 4096, 4096, 4096, "bf16"),
        Figure("vs_v6_bf16_8192", "v7 over v6, bf16 8192³", speedup_over("16", "v6", "v7"),
               from_trial(TRIAL, "vs_v6_bf16_8192", WHY_V6, ceiling="v6", unit="× v6", below=0.75, target=TARGET_V6)),
        Figure("sweep_bf16", "bf16 sweep, geomean", sweep_measure("v7"),
               from_trial(TRIAL, "sweep_bf16", WHY + "; the geomean of the 7 sweep shapes", tma_gemm.DESIGN_RUN)),
        Figure("triton_bf16_8192", "plain Triton, bf16 8192³", plain_triton_measure(8192, 8192, 8192),
               from_trial(TRIAL, "triton_bf16_8192", WHY_TRITON)),
        Figure("over_triton_sweep", "over plain Triton, sweep geomean", sweep_measure("v7", against="triton"),
               from_trial(TRIAL, "over_triton_sweep", "the course's plain-Triton kernel timed in the same process, per "
                          "shape; the geomean of the 7 shapes' ratios", ceiling="plain Triton", unit="× plain Triton",
                          below=0.75, target=CourseTarget(1.0, why="faster than plain Triton"))),
    ],
)
