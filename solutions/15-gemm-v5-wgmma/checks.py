"""Lesson 15's checks: wgmma machine code on sm_90 (the instruction does not exist elsewhere), the host model, correctness
and hang protection on a GPU, and the figures against cuBLAS and against lesson 14."""
from triton.experimental.gluon import language as gl

from gluon_course.course import load_module_file
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks
from gluon_course.grading import tma_gemm
from gluon_course.grading.gemm import gemm_measure, speedup_over, store_mask_missing, sweep_measure
from gluon_course.grading.gemm_kernel import GemmKernel

# Lesson 14's tile (its CONFIG) and one warpgroup, compiled as a launch of an 8192³ problem sees it.
TILE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "STAGES": 3, "num_warps": 4}


def _constexprs(mod, cfg, dtype):
    layouts = mod.kernel_layouts(cfg["num_warps"], cfg["BLOCK_N"])
    require_wgmma_layout(layouts["acc_layout"])
    return layouts


KERNEL = GemmKernel("tma", fixed=TILE, extra_tile_keys=("STAGES",), constexprs=lambda *a: _constexprs(*a))

# What the pinned Triton 3.9.0 emits on sm_90 for this tile, bf16 and fp16 alike. Per K step of 32 the warpgroup
# issues 2 (rows 0-63 and 64-127) × 2 (K 0-15 and 16-31) m64n128k16 products, fenced by one WARPGROUP.ARRIVE
# (wgmma.fence) and waited for by one WARPGROUP.DEPBAR.LE (wgmma.wait_group 0): the call is synchronous.
IN_LOOP = {"WARPGROUP.ARRIVE": 1, "WARPGROUP.DEPBAR.LE": 1, "UTMALDG.2D": 2, "SYNCS.ARRIVE.TRANS64": 1,
           "SYNCS.PHASECHK.TRANS64.TRYWAIT": 1}
MMA_PER_STEP = 4
INSTR_N = 128
HGMMA = {dtype: tma_gemm.HGMMA_OPCODE[dtype].format(n=INSTR_N) for dtype in ("bf16", "fp16")}
# The producer is lesson 14's, instruction for instruction.
MBARRIER_OPS = {"UTMALDG.2D": 6, "SYNCS.EXCH.64": 3, "SYNCS.ARRIVE.TRANS64": 3, "SYNCS.PHASECHK.TRANS64.TRYWAIT": 2,
                "SYNCS.CCTL.IV": 3}
# Gone from the loop: ldmatrix, mma.sync, and the proxy fence lesson 14 needed between ldmatrix's reads (the
# threads' own accesses) and TMA's next write (the asynchronous proxy): wgmma reads through that proxy too.
ABSENT = tma_gemm.NOT_IN_WGMMA_KERNELS
REGISTERS = 154                     # lesson 14: 198, with its ldmatrix fragments
SHARED_BYTES = 3 * (128 * 32 + 32 * 128) * 2 + 3 * 8


def require_wgmma_layout(layout) -> None:
    """Refuse, with a sentence, an accumulator layout wgmma cannot take. Triton 3.9.0 does not report this one as
    an error: LLVM stops the whole process (``Dot's a/b's encoding should be of DotOperandEncodingAttr``)."""
    version = getattr(layout, "version", None)
    if not isinstance(layout, gl.NVMMADistributedLayout) or list(version)[:1] != [3]:
        raise ValueError(f"wgmma accumulates in NVMMADistributedLayout(version=[3, 0], ...), not {layout}: "
                         "version 2 is mma.sync's layout (lessons 11-14)")


def compiled(mod, target="sm_90", dtype="bf16"):
    """The lesson's kernel for ``target`` at the course's tile, as a launch with 8192³ operands sees it."""
    return KERNEL.compile(mod, target, dtype)


def main_loop(k):
    """(first, last) address of the K loop: the smallest loop whose body holds the wgmma instructions."""
    return k.loop_holding("HGMMA")


def in_main_loop(k) -> dict:
    return k.opcodes_between(*main_loop(k))


def accumulator_layout(mod):
    layout = mod.wgmma_layout(TILE["num_warps"], TILE["BLOCK_N"])
    require_wgmma_layout(layout)
    want = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[TILE["num_warps"], 1], instr_shape=[16, 128, 16])
    if layout != want:
        return (f"wgmma_layout(4, 128) is {layout}; expected {want}: the 4 warps of the warpgroup stacked along M "
                "(16 rows each), one instruction as wide as the tile's 128 columns, 16 of K")
    return None


def signature(mod):
    """The wgmma K loop, bf16 and fp16: IN_LOOP plus 4 HGMMA per K step, nothing left of ldmatrix or mma.sync, and
    lesson 14's producer."""
    for dtype in ("bf16", "fp16"):
        problem = tma_gemm.wgmma_signature(compiled(mod, "sm_90", dtype), dtype, IN_LOOP, MMA_PER_STEP, INSTR_N,
                                           MBARRIER_OPS)
        if problem:
            return problem
    return None


def resources(mod):
    k = compiled(mod)
    got, want = (k.registers, k.spills, k.shared_bytes), (REGISTERS, 0, SHARED_BYTES)
    if got != want:
        return (f"{k.registers} registers, {k.spills} spill bytes, {k.shared_bytes} shared bytes; expected "
                f"{REGISTERS} registers, no spills, {SHARED_BYTES} shared bytes (lesson 14's ring and barriers)")
    return None


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

DESIGN_RUN = tma_gemm.DESIGN_RUN
WHY = ("provisional: set before this kernel ever ran on a GPU. wgmma removes the ldmatrix loads and issues 4 "
       "instructions per K step instead of 64, but here each call waits for its own products before the next "
       "iteration starts (synchronous), so the tensor cores idle during every wait and barrier; expected between "
       "lesson 14 (0.69× recorded) and the design run's asynchronous wgmma kernel (0.97×). Wide until the first run")
WHY_V4 = ("provisional: set before this kernel ever ran on a GPU. Lesson 14's kernel at the same tile and ring, "
          "timed in the same process: only the consumer differs")
TARGET_V4 = CourseTarget(1.0, why="v5 faster than v4: the tensor cores' own instruction instead of mma.sync")


def _figure(key, title, M, N, K, dtype_name, headline=False):
    return Figure(key, title, gemm_measure(M, N, K, dtype_name, f"v5 wgmma {dtype_name}"),
                  Expectation(0.45, 1.05, "cuBLAS", WHY, DESIGN_RUN), headline=headline)


CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="`warpgroup_mma` (wgmma): a warpgroup multiplies tiles straight from the TMA ring's shared memory into "
            "an `NVMMADistributedLayout` version 3 accumulator; no ldmatrix; Hopper only",
    machine_code=[
        Check("accumulator_layout", "wgmma_layout: version 3, the warpgroup's 4 warps along M, instr_shape "
              "[16, 128, 16]", accumulator_layout),
        Check("wgmma_sm_90", "sm_90: 4 × HGMMA.64x128x16 per K step between one WARPGROUP.ARRIVE and one "
              "WARPGROUP.DEPBAR.LE, all in the loop; no LDSM, no HMMA, no proxy fence; lesson 14's TMA and "
              "mbarrier ops (bf16 and fp16)", signature, target="sm_90"),
        Check("resources_sm_90", f"sm_90: {REGISTERS} registers (lesson 14: 198), no spills, {SHARED_BYTES} shared "
              "bytes", resources, target="sm_90"),
        Check("store_masked", "sm_90: the store of C is masked by M and N", store_masked, target="sm_90"),
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
        _figure("bf16_8192", "bf16 8192³", 8192, 8192, 8192, "bf16", headline=True),
        _figure("fp16_8192", "fp16 8192³", 8192, 8192, 8192, "fp16"),
        _figure("bf16_4096", "bf16 4096³", 4096, 4096, 4096, "bf16"),
        Figure("vs_v4_bf16_8192", "v5 over v4, bf16 8192³", speedup_over("14", "v4", "v5"),
               Expectation(0.9, 2.5, "v4", WHY_V4, unit="× v4", target=TARGET_V4)),
        Figure("sweep_bf16", "bf16 sweep, geomean", sweep_measure("v5"),
               Expectation(0.45, 1.1, "cuBLAS", WHY + "; the geomean of the 7 sweep shapes", tma_gemm.DESIGN_RUN)),
    ],
)


# -- what other targets make of it (the notebook runs this in a child process) --------------------------------

def compile_for(module_file: str, target: str) -> None:
    """Compile the lesson's kernel for ``target`` and print its wgmma count. For a child process: on a target
    without wgmma, Triton 3.9.0's LLVM stops the process instead of raising an error."""
    k = compiled(load_module_file(module_file), target)
    print({op: n for op, n in k.opcodes().items() if "MMA" in op})


def llvm_verdict(module_file: str, target: str) -> str:
    """One line: what compiling for ``target`` gave, the compiler's last words if it stopped the process."""
    import os

    from gluon_course.measure.isolated import run_isolated

    os.environ["GLUON_COURSE_PASS_STDERR"] = "1"
    try:
        run = run_isolated(f"{__file__}:compile_for", [module_file, target], timeout=120)
    finally:
        del os.environ["GLUON_COURSE_PASS_STDERR"]
    errors = [line for line in run.output.splitlines() if line.startswith("LLVM ERROR")]
    if run.returncode == 0:
        return f"{target}: compiled, {run.output.strip().splitlines()[-1]}"
    return f"{target}: the compiler stopped the process (exit status {run.returncode}): " + \
        (errors[-1] if errors else run.output.strip()[-200:])
