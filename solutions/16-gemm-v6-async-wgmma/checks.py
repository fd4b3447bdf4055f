"""Lesson 16's checks: asynchronous wgmma on sm_90 (wait depth 1, the refill after the wait) at a tile large enough to
overlap, the host model, correctness and hang protection on a GPU, and the figures against cuBLAS and lesson 15."""
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks
from gluon_course.grading import tma_gemm
from gluon_course.grading.gemm import from_trial, gemm_measure, speedup_over, store_mask_missing, sweep_measure
from gluon_course.grading.gemm_kernel import GemmKernel

# The lesson's CONFIG: 128 × 256 × 64 in two warpgroups, 4 ring slots, compiled as an 8192³ launch sees it.
TILE = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "STAGES": 4, "num_warps": 8}
KERNEL = GemmKernel("tma", fixed=TILE, extra_tile_keys=("STAGES",),
                    constexprs=lambda mod, cfg, dtype: mod.kernel_layouts(cfg["num_warps"], cfg["BLOCK_N"]))

# What the pinned Triton 3.9.0 emits on sm_90 for this tile, bf16 and fp16 alike. Per K step of 64 each warpgroup
# issues 4 m64n256k16 products (K 0-15, ..., 48-63; the code is per thread, so the count is 4 whichever warpgroup
# runs it) after one WARPGROUP.ARRIVE; the wait in the loop is WARPGROUP.DEPBAR.LE gsb0, 0x1 (wgmma.wait_group 1:
# one group may still run) and a second one, 0x0, after the loop. The refill (2 UTMALDG) comes after the wait.
IN_LOOP = {"WARPGROUP.ARRIVE": 1, "WARPGROUP.DEPBAR.LE": 1, "UTMALDG.2D": 2, "SYNCS.ARRIVE.TRANS64": 1,
           "SYNCS.PHASECHK.TRANS64.TRYWAIT": 1}
MMA_PER_STEP = 4
INSTR_N = 256
# 4 slots, 3 refills before the loop and 1 in it; one barrier per slot.
MBARRIER_OPS = {"UTMALDG.2D": 8, "SYNCS.EXCH.64": 4, "SYNCS.ARRIVE.TRANS64": 4, "SYNCS.PHASECHK.TRANS64.TRYWAIT": 2,
                "SYNCS.CCTL.IV": 4}
# 128 accumulator registers a thread (a warpgroup's 64 × 256 fp32 over its 128 threads), and the rest.
REGISTERS = 154
SHARED_BYTES = 4 * (128 * 64 + 64 * 256) * 2 + 4 * 8


def compiled(mod, target="sm_90", dtype="bf16"):
    """The lesson's kernel for ``target`` at the course's tile, as a launch with 8192³ operands sees it."""
    return KERNEL.compile(mod, target, dtype)


def main_loop(k):
    return k.loop_holding("HGMMA")


def in_main_loop(k) -> dict:
    return k.opcodes_between(*main_loop(k))


wgmma_waits = tma_gemm.wgmma_waits


def wgmma_signature(mod):
    for dtype in ("bf16", "fp16"):
        k = compiled(mod, "sm_90", dtype)
        problem = tma_gemm.wgmma_signature(k, dtype, IN_LOOP, MMA_PER_STEP, INSTR_N, MBARRIER_OPS)
        if problem:
            return problem
        if k.count("WARPGROUP.DEPBAR.LE") != 2:
            return (f"{dtype}: {k.count('WARPGROUP.DEPBAR.LE')} × WARPGROUP.DEPBAR.LE; expected 2: one in the loop, "
                    "one after it for the last group")
    return None


def at_tile_and_config(mod):
    """(label, compiled kernel): at the course's tile, bf16 and fp16, and at the learner's CONFIG (bf16)."""
    for dtype in ("bf16", "fp16"):
        yield f"{dtype}, at the course's tile", compiled(mod, "sm_90", dtype)
    yield "bf16, at your CONFIG", KERNEL.compile(mod, "sm_90", "bf16", dict(mod.CONFIG))


def wait_depth(mod):
    """The operands of the waits (WARPGROUP.DEPBAR.LE gsb0, 0x1 in the K loop, 0x0 after it)."""
    for where, k in at_tile_and_config(mod):
        problem = tma_gemm.wait_depth_problem(k, in_loop=1, after=0)
        if problem:
            return f"{where}: {problem}"
        after = [d for a, d in wgmma_waits(k) if a > main_loop(k)[1]]
        if after != [0]:
            return (f"{where}: after the K loop the waits have depth {after}; expected [0]: one wait for the last "
                    "products")
    return None


def refill_after_wait(mod):
    """The TMA refill of slot (i - 1) % STAGES must follow the wait that retires the products reading it."""
    for where, k in at_tile_and_config(mod):
        problem = _refill_problem(k)
        if problem:
            return f"{where}: {problem}"
    return None


def _refill_problem(k):
    first, last = main_loop(k)
    wait = [a for a, d in wgmma_waits(k) if first <= a <= last]
    copies = [i.address for i in k.instructions() if first <= i.address <= last and i.opcode == "UTMALDG.2D"]
    if not wait or not copies:
        return f"the loop has waits at {wait} and TMA copies at {copies}; expected one wait, then the refill's copies"
    early = [a for a in copies if a < wait[0]]
    if early:
        return (f"{len(early)} TMA copies in the loop come before the wgmma wait: the refill would overwrite the slot "
                "the previous step's products may still be reading; move it after warpgroup_mma_wait(1)")
    return None


def resources(mod):
    return compiled(mod).resource_mismatch(REGISTERS, SHARED_BYTES, "4 slots of A's and B's tiles and their barriers")


def store_masked(mod):
    return store_mask_missing(compiled(mod))


def model(mod):
    return KERNEL.model_check(mod)


# -- on a GPU ------------------------------------------------------------------------------------

def correct(mod):
    return tma_gemm.correct(mod)


def launcher_refuses(mod):
    return tma_gemm.launcher_refuses(mod)


def sanitizer_clean(mod):
    return tma_gemm.sanitizer_clean(mod)


# -- figures -------------------------------------------------------------------------------------

WHY = ("lesson 15's kernel with the products of one K step running while the next tile is waited for and the slot "
       "refilled, at a 128 × 256 × 64 tile in two warpgroups with 4 slots")
WHY_V5 = ("lesson 15's kernel launched at this lesson's CONFIG (the same tile, warpgroups and ring), timed in the same "
          "process: the wait depth and the refill's place are the only difference")
TARGET_V5 = CourseTarget(1.0, why="v6 faster than v5: the tensor cores no longer wait for the warps")
TARGET = CourseTarget(0.85, why="the course's target for v6: 85% of cuBLAS at 8192³")
# The H200 trial of this kernel at its CONFIG, and of lesson 15's at the same tile (grading.gemm.TRIAL_RUN).
TRIAL = {"bf16_8192": (0.930, "v6 at 128 × 256 × 64, 8 warps, 4 slots, 624 TFLOPS vs cuBLAS 671"),
         "fp16_8192": ("bf16_8192",), "bf16_4096": ("bf16_8192",), "sweep_bf16": ("bf16_8192",),
         "vs_v5_bf16_8192": (1.167, "v6 0.930 over v5 at the same tile 0.797, both of cuBLAS in the trial")}


def _figure(key, title, M, N, K, dtype_name, headline=False, target=None):
    return Figure(key, title, gemm_measure(M, N, K, dtype_name, f"v6 async wgmma {dtype_name}"),
                  from_trial(TRIAL, key, WHY, tma_gemm.DESIGN_RUN, target=target), headline=headline)


CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="asynchronous `warpgroup_mma(..., is_async=True)` and `warpgroup_mma_wait(1)`: the products of one K "
            "step run while the next tile is waited for; a ring slot is refilled only after the products that read it",
    machine_code=[
        Check("wgmma_sm_90", "sm_90, at the course's tile 128×256×64 (8 warps, STAGES 4): 4 × HGMMA.64x256x16 per K "
              "step after one WARPGROUP.ARRIVE, one WARPGROUP.DEPBAR.LE in the loop and one after it; no LDSM, no "
              "HMMA, no proxy fence; the TMA and mbarrier ops of a 4-slot ring (bf16 and "
              "fp16)", wgmma_signature, target="sm_90"),
        Check("wait_depth", "sm_90, at the course's tile and at your CONFIG: the loop waits with depth 1 (one group "
              "may run on), the end with depth 0",
              wait_depth, target="sm_90"),
        Check("refill_after_wait", "sm_90, at the course's tile and at your CONFIG: the loop's TMA refill comes after "
              "the wgmma wait", refill_after_wait,
              target="sm_90"),
        Check("resources_sm_90", f"sm_90, at the course's tile: {REGISTERS} registers, no spills, {SHARED_BYTES} "
              "shared bytes",
              resources, target="sm_90"),
        Check("store_masked", "sm_90, at the course's tile: the store of C is masked by rows < M and columns < "
              "N", store_masked, target="sm_90"),
        Check("config_fits", "your CONFIG, compiled for sm_90, fits one SM with no spills",
              KERNEL.config_fits(("sm_90",)), target="sm_90"),
        Check("host_model", tma_gemm.HOST_MODEL, model),
    ],
    correctness=[
        Check("correct_tma_shapes", "matmul is correct on odd shapes with K, N multiples of 8 (bf16 and fp16; "
              "poisoned, guarded C), all in a child process that must finish within 90 s", correct, gpu=True),
        Check("launcher_refuses", tma_gemm.REFUSALS, launcher_refuses, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck, racecheck and synccheck report nothing on a "
              "129×136×200 launch", sanitizer_clean, gpu=True),
    ],
    figures=[
        _figure("bf16_8192", "bf16 8192³", 8192, 8192, 8192, "bf16", headline=True, target=TARGET),
        _figure("fp16_8192", "fp16 8192³", 8192, 8192, 8192, "fp16"),
        _figure("bf16_4096", "bf16 4096³", 4096, 4096, 4096, "bf16"),
        Figure("vs_v5_bf16_8192", "v6 over v5, bf16 8192³", speedup_over("15", "v5", "v6", previous_config=TILE),
               from_trial(TRIAL, "vs_v5_bf16_8192", WHY_V5, ceiling="v5", unit="× v5", below=0.75, target=TARGET_V5)),
        Figure("sweep_bf16", "bf16 sweep, geomean", sweep_measure("v6"),
               from_trial(TRIAL, "sweep_bf16", WHY + "; the geomean of the 7 sweep shapes", tma_gemm.DESIGN_RUN)),
    ],
)
