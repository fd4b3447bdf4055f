"""Lesson 16's checks: asynchronous wgmma on sm_90 (wait depth 1, the refill after the wait), correctness and hang
protection on a GPU, and the figures against cuBLAS and against lesson 15."""
from gluon_course.course import load_checks
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks
from gluon_course.grading.gemm import gemm_measure, speedup_over, store_mask_missing

# Lesson 15's checks compile the kernel, find its loop and run the GPU checks for any module of this shape; this
# lesson reuses them at its own tile and adds what is new: the wait depth and where the refill sits.
V5 = load_checks("15")
main_loop, in_main_loop, HGMMA = V5.main_loop, V5.in_main_loop, V5.HGMMA
correct, launcher_refuses, sanitizer_clean, DESIGN_RUN = V5.correct, V5.launcher_refuses, V5.sanitizer_clean, \
    V5.DESIGN_RUN
# The lesson's CONFIG (lesson 15's), compiled as a launch of an 8192³ problem sees it.
TILE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "STAGES": 3}

# What the pinned Triton 3.9.0 emits on sm_90 for this tile, bf16 and fp16 alike: lesson 15's 4 m64n128k16 products
# per K step after one WARPGROUP.ARRIVE, but the wait in the loop is WARPGROUP.DEPBAR.LE gsb0, 0x1 (wgmma.wait_group
# 1: one group may still run) and a second one, 0x0, after the loop. The refill (2 UTMALDG) comes after the wait.
IN_LOOP = {"WARPGROUP.ARRIVE": 1, "WARPGROUP.DEPBAR.LE": 1, "UTMALDG.2D": 2, "SYNCS.ARRIVE.TRANS64": 1,
           "SYNCS.PHASECHK.TRANS64.TRYWAIT": 1}
MMA_PER_STEP = 4
# Lesson 15's producer: 3 slots, 2 refills before the loop and 1 in it; one barrier per slot.
MBARRIER_OPS = V5.MBARRIER_OPS
ABSENT = ("LDSM", "HMMA", "FENCE.VIEW.ASYNC")
REGISTERS = 154                     # lesson 15's: the same accumulator
SHARED_BYTES = V5.SHARED_BYTES


def compiled(mod, target="sm_90", dtype="bf16"):
    """The lesson's kernel for ``target`` at this lesson's tile, as a launch with 8192³ operands sees it."""
    return V5.compiled(mod, target, dtype, TILE)


def wgmma_signature(mod):
    problem = V5.signature(mod, compiled, IN_LOOP, MBARRIER_OPS)
    if problem:
        return problem
    for dtype in ("bf16", "fp16"):
        k = compiled(mod, "sm_90", dtype)
        if k.count("WARPGROUP.DEPBAR.LE") != 2:
            return (f"{dtype}: {k.count('WARPGROUP.DEPBAR.LE')} × WARPGROUP.DEPBAR.LE; expected 2: one in the loop, "
                    "one after it for the last group")
    return None


def wgmma_waits(k):
    """(address, depth) of every WARPGROUP.DEPBAR.LE: the depth is how many groups may still be running."""
    return [(i.address, int(i.text.rsplit(",", 1)[1].strip().rstrip(";"), 0)) for i in k.instructions()
            if i.opcode == "WARPGROUP.DEPBAR.LE"]


def wait_depth(mod):
    k = compiled(mod)
    first, last = main_loop(k)
    inside = [d for a, d in wgmma_waits(k) if first <= a <= last]
    after = [d for a, d in wgmma_waits(k) if a > last]
    if inside != [1]:
        return (f"the loop waits with depth {inside} (WARPGROUP.DEPBAR.LE); expected [1]: warpgroup_mma_wait(1) lets "
                "this step's products run on while the next tile is waited for (0 is lesson 15's synchronous wait)")
    if after != [0]:
        return f"after the loop the waits have depth {after}; expected [0]: the last products must finish before C"
    return None


def refill_after_wait(mod):
    """The TMA refill of slot (i - 1) % STAGES must follow the wait that retires the products reading it."""
    k = compiled(mod)
    first, last = main_loop(k)
    wait = [a for a, d in wgmma_waits(k) if first <= a <= last]
    copies = [i.address for i in k.instructions() if first <= i.address <= last and i.opcode == "UTMALDG.2D"]
    if not wait or not copies:
        return f"the loop has waits at {wait} and TMA copies at {copies}; expected one wait and two copies"
    early = [a for a in copies if a < wait[0]]
    if early:
        return (f"{len(early)} TMA copies in the loop come before the wgmma wait: the refill would overwrite the slot "
                "the previous step's products may still be reading; move it after warpgroup_mma_wait(1)")
    return None


def resources(mod):
    k = compiled(mod)
    got, want = (k.registers, k.spills, k.shared_bytes), (REGISTERS, 0, SHARED_BYTES)
    if got != want:
        return (f"{k.registers} registers, {k.spills} spill bytes, {k.shared_bytes} shared bytes; expected "
                f"{REGISTERS} registers, no spills, {SHARED_BYTES} shared bytes (lesson 15's ring and barriers)")
    return None


def store_masked(mod):
    return store_mask_missing(compiled(mod))


# -- figures -------------------------------------------------------------------------------------

WHY = ("provisional: set before this kernel ever ran on a GPU. Lesson 15's kernel with the products of one K step "
       "running while the next tile is waited for and the slot refilled; the design run's asynchronous wgmma kernel "
       "(a larger 128 × 256 × 64 tile, 8 warps) reached 0.97× cuBLAS. Wide until the first run")
WHY_V5 = ("provisional: set before this kernel ever ran on a GPU. Lesson 15's kernel timed in the same process: the "
          "wait depth and the refill's place are the only difference")
TARGET_V5 = CourseTarget(1.0, why="v6 faster than v5: the tensor cores no longer wait for the warps")


def _figure(key, title, M, N, K, dtype_name, headline=False):
    return Figure(key, title, gemm_measure(M, N, K, dtype_name, f"v6 async wgmma {dtype_name}"),
                  Expectation(0.5, 1.1, "cuBLAS", WHY, DESIGN_RUN), headline=headline)


CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="asynchronous `warpgroup_mma(..., is_async=True)` and `warpgroup_mma_wait(1)`: the products of one K "
            "step run while the next tile is waited for; a ring slot is refilled only after the products that read it",
    machine_code=[
        Check("wgmma_sm_90", "sm_90: 4 × HGMMA.64x128x16 per K step after one WARPGROUP.ARRIVE, one "
              "WARPGROUP.DEPBAR.LE in the loop and one after it; no LDSM, no HMMA, no proxy fence; lesson 15's TMA "
              "and mbarrier ops (bf16 and fp16)", wgmma_signature, target="sm_90"),
        Check("wait_depth", "sm_90: the loop waits with depth 1 (one group may run on), the end with depth 0",
              wait_depth, target="sm_90"),
        Check("refill_after_wait", "sm_90: the loop's TMA refill comes after the wgmma wait", refill_after_wait,
              target="sm_90"),
        Check("resources_sm_90", f"sm_90: {REGISTERS} registers, no spills, {SHARED_BYTES} shared bytes",
              resources, target="sm_90"),
        Check("store_masked", "sm_90: the store of C is masked by M and N", store_masked, target="sm_90"),
    ],
    correctness=[
        Check("correct_tma_shapes", "matmul is correct on odd shapes with K, N multiples of 8 (bf16 and fp16; "
              "poisoned, guarded C), all in a child process that must finish within 90 s", correct, gpu=True),
        Check("launcher_refuses", "the launcher refuses K = 1001 bf16 (TMA's 16-byte rule), fp32 and half a "
              "warpgroup, with sentences", launcher_refuses, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck, racecheck and synccheck report nothing on a "
              "129×136×200 launch", sanitizer_clean, gpu=True),
    ],
    figures=[
        _figure("bf16_8192", "bf16 8192³", 8192, 8192, 8192, "bf16", headline=True),
        _figure("fp16_8192", "fp16 8192³", 8192, 8192, 8192, "fp16"),
        _figure("bf16_4096", "bf16 4096³", 4096, 4096, 4096, "bf16"),
        Figure("vs_v5_bf16_8192", "v6 over v5, bf16 8192³", speedup_over("15", "v5", "v6"),
               Expectation(0.9, 2.5, "v5", WHY_V5, unit="× v5", target=TARGET_V5)),
    ],
)
