"""Lesson 15's checks: wgmma machine code on sm_90 (the instruction does not exist elsewhere), the host model, correctness
and hang protection on a GPU, and the figures against cuBLAS and against lesson 14; and the Blackwell kernel's machine
code on sm_100 (compiled only: no Blackwell GPU here)."""
from triton.experimental.gluon import language as gl

from gluon_course.nvidia import blackwell
from gluon_course.course import load_module_file
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks
from gluon_course.grading import tma_gemm
from gluon_course.grading.gemm import from_trial, gemm_measure, speedup_over, store_mask_missing, sweep_measure
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
    return compiled(mod).resource_mismatch(REGISTERS, SHARED_BYTES, "lesson 14's ring and barriers")


def store_masked(mod):
    return store_mask_missing(compiled(mod))


def model(mod):
    return KERNEL.model_check(mod)


# -- What changes on Blackwell (sm_100): blackwell_matmul_kernel, compiled here, never run --------------------------

BLACKWELL = GemmKernel("tma", fixed=TILE, extra_tile_keys=("STAGES",), constexprs=lambda *a: {},
                       name="blackwell_matmul_kernel")
# What the pinned Triton 3.9.0 emits on sm_100 for the same tile (bf16). Per K step of 32: the wait for the slot, the
# refill (one expect, two copies), 2 UTCHMMA (tcgen05.mma: 128 rows × 128 columns × 16 of K each), one UTCBAR (the
# commit that mbarriers=[mma_done] asks for) and the wait on mma_done; no proxy fence.
BW_IN_LOOP = {"SYNCS.PHASECHK.TRANS64.TRYWAIT": 2, "UTCBAR": 1, "UTMALDG.2D": 2, "SYNCS.ARRIVE.TRANS64": 1,
              "FENCE.VIEW.ASYNC.S": 0}
BW_MMA_PER_STEP = 2
# The whole kernel's tcgen05 instructions: tensor memory allocated (the attempt and its retry) and released, the
# products and their commit, and one tcgen05.ld of the accumulator's 128 columns.
BW_TCGEN05 = {"LDTM.x128": 1, "UTCATOMSWS.AND": 1, "UTCATOMSWS.FIND_AND_SET.ALIGN": 2, "UTCBAR": 1, "UTCHMMA": 2}
BW_TMEM_COLUMNS = 128               # 128 lanes × 128 columns of 32 bits: the fp32 128 × 128 accumulator
BW_REGISTERS = 138                  # the wgmma kernel: 154, its accumulator in registers for the whole loop
BW_SHARED_BYTES = 49192             # the ring (49152), 3 + 1 barriers, and 8 bytes that align mma_done
BW_WHY = {"UTCBAR": ("no commit: mbarriers=[mma_done] on tcgen05_mma is what makes the products arrive there; "
                     "without it the wait on mma_done never returns", ""),
          "SYNCS.PHASECHK.TRANS64.TRYWAIT": ("a wait is missing: without the wait on mma_done, the next step refills "
                                             "the slot the products may still be reading", ""),
          "UTCHMMA": ("", "more products per K step than one per 16 of K: a TensorMemoryLayout block of fewer rows "
                      "than the tile's 128 splits every product")}


def blackwell_compiled(mod, dtype="bf16"):
    return BLACKWELL.compile(mod, "sm_100", dtype)


def blackwell_signature(mod):
    return blackwell.signature(blackwell_compiled(mod), BW_IN_LOOP, BW_MMA_PER_STEP, BW_TCGEN05, BW_WHY)


def blackwell_resources(mod):
    return blackwell.resource_mismatch(blackwell_compiled(mod), BW_REGISTERS, BW_SHARED_BYTES, BW_TMEM_COLUMNS)


# -- on a GPU ------------------------------------------------------------------------------------

def correct(mod):
    return tma_gemm.correct(mod)


def launcher_refuses(mod):
    return tma_gemm.launcher_refuses(mod)


def sanitizer_clean(mod):
    return tma_gemm.sanitizer_clean(mod)


# -- figures -------------------------------------------------------------------------------------

DESIGN_RUN = tma_gemm.DESIGN_RUN
WHY = ("wgmma removes the ldmatrix loads and issues 4 instructions per K step instead of 64, but here each call waits "
       "for its own products before the next iteration starts (synchronous), so the tensor cores idle during every "
       "wait and barrier")
WHY_V4 = ("lesson 14's kernel at the same tile and ring, timed in the same process: only the consumer differs. The gate "
          "starts below 1: a correct kernel need not win on every GPU of the class")
TARGET_V4 = CourseTarget(1.0, why="v5 faster than v4: the tensor cores' own instruction instead of mma.sync")
# The H200 trial of this kernel at its CONFIG (grading.gemm.TRIAL_RUN); v4's figure from lessons 10-14's first run.
TRIAL = {"bf16_8192": (0.740, "v5 at CONFIG, 515 TFLOPS vs cuBLAS 692"), "fp16_8192": ("bf16_8192",),
         "bf16_4096": ("bf16_8192",), "sweep_bf16": ("bf16_8192",),
         "vs_v4_bf16_8192": (1.217, "v5 0.740 (this trial) over v4 0.608 (lessons 10-14's first run)")}


def _figure(key, title, M, N, K, dtype_name, headline=False):
    return Figure(key, title, gemm_measure(M, N, K, dtype_name, f"v5 wgmma {dtype_name}"),
                  from_trial(TRIAL, key, WHY, DESIGN_RUN), headline=headline)


CHECKS = LessonChecks(
    targets=("sm_90", "sm_100"),
    teaches="`warpgroup_mma` (wgmma): a warpgroup multiplies tiles straight from the TMA ring's shared memory into "
            "an `NVMMADistributedLayout` version 3 accumulator; no ldmatrix; Hopper only. On Blackwell: the same "
            "step with `tcgen05_mma` into tensor memory (compiled, not run)",
    machine_code=[
        Check("accumulator_layout", "wgmma_layout(4, 128), the course's tile: version 3, the warpgroup's 4 warps along "
              "M, instr_shape [16, 128, 16]", accumulator_layout),
        Check("wgmma_sm_90", "sm_90, at the course's tile 128×128×32 (one warpgroup, STAGES 3): 4 × HGMMA.64x128x16 "
              "per K step between one WARPGROUP.ARRIVE and one WARPGROUP.DEPBAR.LE, all in the loop; no LDSM, no HMMA, "
              "no proxy fence; lesson 14's TMA and mbarrier ops (bf16 and fp16)", signature, target="sm_90"),
        Check("resources_sm_90", f"sm_90, at the course's tile: {REGISTERS} registers (lesson 14: 198), no spills, "
              f"{SHARED_BYTES} shared bytes", resources, target="sm_90"),
        Check("store_masked", "sm_90, at the course's tile: the store of C is masked by rows < M and columns < "
              "N", store_masked, target="sm_90"),
        Check("config_fits", "your CONFIG, compiled for sm_90, fits one SM with no spills",
              KERNEL.config_fits(("sm_90",)), target="sm_90"),
        Check("host_model", tma_gemm.HOST_MODEL, model),
        Check("tcgen05_sm_100", "sm_100, blackwell_matmul_kernel at the course's tile: 2 × UTCHMMA per K step, the "
              "first accumulating from the second step on, one UTCBAR (the commit to mma_done) and its wait; tensor "
              "memory allocated and released, read once (LDTM.x128); no HGMMA, no WARPGROUP "
              "(bf16)", blackwell_signature, target="sm_100"),
        Check("tmem_resources_sm_100", f"sm_100, blackwell_matmul_kernel at the course's tile: {BW_TMEM_COLUMNS} TMEM "
              f"columns, {BW_REGISTERS} registers (wgmma: 154), no spills, {BW_SHARED_BYTES} shared "
              "bytes", blackwell_resources,
              target="sm_100"),
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
               from_trial(TRIAL, "vs_v4_bf16_8192", WHY_V4, ceiling="v4", unit="× v4", below=0.75, target=TARGET_V4)),
        Figure("sweep_bf16", "bf16 sweep, geomean", sweep_measure("v5"),
               from_trial(TRIAL, "sweep_bf16", WHY + "; the geomean of the 7 sweep shapes", DESIGN_RUN)),
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
        # The counts compile_for printed (the child's stderr may add lines after them, e.g. nanobind's leak report).
        counts = [line for line in run.output.splitlines() if line.startswith("{")]
        return f"{target}: compiled, {(counts or run.output.strip().splitlines())[-1]}"
    return f"{target}: the compiler stopped the process (exit status {run.returncode}): " + \
        (errors[-1] if errors else run.output.strip()[-200:])
