"""Lesson 17's checks: a persistent tile loop around lesson 16's pipeline on sm_90 (the ring set up once, the
store inside the tile loop, as many programs as fit), correctness and hang protection on a GPU, and the figures
against cuBLAS and against lesson 16."""
from gluon_course.course import load_checks
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks
from gluon_course.grading.gemm import gemm_measure, speedup_over, store_mask_missing
from gluon_course.machine.occupancy import occupancy_of

# Lessons 14 and 15's checks compile the kernel and run the GPU checks for any module of this shape; lesson 16's
# know the asynchronous pipeline's signature. This lesson adds the tile loop.
V4, V5, V6 = load_checks("14"), load_checks("15"), load_checks("16")
main_loop, in_main_loop = V5.main_loop, V5.in_main_loop
launcher_refuses, sanitizer_clean, DESIGN_RUN = V5.launcher_refuses, V5.sanitizer_clean, V5.DESIGN_RUN
# The lesson's CONFIG (lesson 16's tile and ring, 8 rows of tiles per group), as a launch of an 8192³ problem sees it.
TILE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "STAGES": 3, "GROUP_M": 8}
REGISTERS = 156                     # lesson 16: 154; the tile loop's counters cost 2
PROGRAMS_PER_SM = 3                 # what 156 registers × 128 threads allow on sm_90 (65536 registers per SM)


def compiled(mod, target="sm_90", dtype="bf16"):
    """The lesson's kernel for ``target`` at this lesson's tile, as a launch with 8192³ operands sees it."""
    return V5.compiled(mod, target, dtype, TILE)


def _tile_loop(k):
    """(first, last) of the smallest loop that encloses the K loop: the loop over tiles, or None."""
    first, last = main_loop(k)
    outer = [(a, b) for a, b in k.loops() if a < first and b > last]
    return min(outer, key=lambda s: s[1] - s[0]) if outer else None


def pipeline(mod):
    """Lesson 16's asynchronous pipeline inside: the same instructions per K step, the same producer."""
    problem = V5.signature(mod, compiled, V6.IN_LOOP, V6.MBARRIER_OPS)
    if problem:
        return problem
    for dtype in ("bf16", "fp16"):
        depths = [depth for _, depth in V6.wgmma_waits(compiled(mod, "sm_90", dtype))]
        if sorted(depths) != [0, 1]:
            return (f"{dtype}: wgmma waits of depth {depths}; expected one of depth 1 in the K loop and one of 0 "
                    "per tile")
    return None


def persistent_loop(mod):
    """One program, many tiles: a loop around the K loop that strides by the number of programs and stores C."""
    k = compiled(mod)
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
    k = compiled(mod)
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
    k = compiled(mod)
    got = (k.registers, k.spills, k.shared_bytes)
    if got != (REGISTERS, 0, V5.SHARED_BYTES):
        return (f"{k.registers} registers, {k.spills} spill bytes, {k.shared_bytes} shared bytes; expected "
                f"{REGISTERS}, no spills, {V5.SHARED_BYTES}")
    fits = occupancy_of(k, 4).blocks
    if fits != mod.CONFIG["programs_per_sm"]:
        return (f"{fits} programs fit on an SM but CONFIG launches {mod.CONFIG['programs_per_sm']} per SM: a "
                "persistent grid should be exactly what the GPU holds at once")
    return None


def store_masked(mod):
    return store_mask_missing(compiled(mod))


# -- on a GPU ------------------------------------------------------------------------------------

# Lesson 14's shapes have at most 66 tiles of C: fewer than an H200's 396 programs, so no program would do a
# second tile. Two more shapes give programs several tiles each (561 and 528 tiles), with K steps per tile (7 and 3)
# that are not a multiple of 3 or are, so the ring's slots and phases must carry across tiles either way.
SHAPES = V4.TMA_SHAPES + ((4097, 2056, 200), (2000, 4104, 72))


def correct_here(module_file: str) -> str | None:
    """The correctness check itself (for a child process: a barrier that never completes hangs there)."""
    from gluon_course.course import load_module_file
    from gluon_course.measure.gemm import check_gemm

    mod = load_module_file(module_file)
    return check_gemm(lambda a, b, c: mod.matmul(a, b, c), shapes=SHAPES)


def correct(mod):
    from gluon_course.measure.isolated import check_in_child

    return check_in_child(f"{__file__}:correct_here", [mod.__file__], timeout=V4.CHILD_LIMIT_S)


# -- figures -------------------------------------------------------------------------------------

WHY = ("provisional: set before this kernel ever ran on a GPU. Lesson 16's pipeline in a persistent grid visiting "
       "tiles in grouped order; the design run's asynchronous wgmma kernel (128 × 256 × 64, 8 warps, grouped order) "
       "reached 0.97× cuBLAS. Wide until the first run")
WHY_V6 = ("provisional: set before this kernel ever ran on a GPU. Lesson 16's kernel timed in the same process; a "
          "persistent grid need not win at every size, so the gate starts below 1")
TARGET_V6 = CourseTarget(1.0, why="v7 at least as fast as v6: tiles shared in L2, no start-up per tile")


def _figure(key, title, M, N, K, dtype_name, headline=False):
    return Figure(key, title, gemm_measure(M, N, K, dtype_name, f"v7 persistent {dtype_name}"),
                  Expectation(0.5, 1.1, "cuBLAS", WHY, DESIGN_RUN), headline=headline)


CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="a persistent grid (as many programs as fit, each walking over tiles of C) in grouped order; the "
            "ring's slots and phases carried across tiles by a step count",
    machine_code=[
        Check("pipeline_sm_90", "sm_90: lesson 16's K loop inside (4 HGMMA, wait depth 1, refill after it) and its "
              "TMA and mbarrier ops (bf16 and fp16)", pipeline, target="sm_90"),
        Check("persistent_loop", "sm_90: a tile loop around the K loop, stepping by the number of programs, with "
              "the store of C inside it", persistent_loop, target="sm_90"),
        Check("ring_set_up_once", "sm_90: the barriers are initialised before the tile loop and retired after it",
              ring_set_up_once, target="sm_90"),
        Check("programs_fit", f"sm_90: {REGISTERS} registers, no spills; CONFIG's {PROGRAMS_PER_SM} programs per "
              "SM are exactly what fits", programs_fit, target="sm_90"),
        Check("store_masked", "sm_90: the store of C is masked by M and N", store_masked, target="sm_90"),
    ],
    correctness=[
        Check("correct_tma_shapes", "matmul is correct on odd shapes with K, N multiples of 8, and on two with "
              "several tiles per program (bf16 and fp16; poisoned, guarded C), all in a child process that must finish "
              "within 90 s", correct, gpu=True),
        Check("launcher_refuses", "the launcher refuses K = 1001 bf16 (TMA's 16-byte rule), fp32 and half a "
              "warpgroup, with sentences", launcher_refuses, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck, racecheck and synccheck report nothing on a "
              "129×136×200 launch", sanitizer_clean, gpu=True),
    ],
    figures=[
        _figure("bf16_8192", "bf16 8192³", 8192, 8192, 8192, "bf16", headline=True),
        _figure("fp16_8192", "fp16 8192³", 8192, 8192, 8192, "fp16"),
        _figure("bf16_4096", "bf16 4096³", 4096, 4096, 4096, "bf16"),
        Figure("vs_v6_bf16_8192", "v7 over v6, bf16 8192³", speedup_over("16", "v6", "v7"),
               Expectation(0.8, 2.0, "v6", WHY_V6, unit="× v6", target=TARGET_V6)),
    ],
)
