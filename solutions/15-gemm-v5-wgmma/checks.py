"""Lesson 15's checks: wgmma machine code on sm_90 (the instruction does not exist elsewhere), correctness and hang
protection on a GPU, and the figures against cuBLAS and against lesson 14."""
from triton.experimental.gluon import language as gl

from gluon_course.course import load_checks, load_module_file
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks, Reference
from gluon_course.grading.gemm import gemm_measure, refuses, speedup_over, store_mask_missing
from gluon_course.machine import compile_cached, tensor_descriptor_type

GL_DTYPES = {"bf16": gl.bfloat16, "fp16": gl.float16}
# Lesson 14's tile (its CONFIG) and one warpgroup, compiled as a launch of an 8192³ problem sees it.
TILE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "STAGES": 3}
NUM_WARPS = 4
HGMMA = {"bf16": "HGMMA.64x128x16.F32.BF16", "fp16": "HGMMA.64x128x16.F32"}

# What the pinned Triton 3.9.0 emits on sm_90 for this tile, bf16 and fp16 alike. Per K step of 32 the warpgroup
# issues 2 (rows 0-63 and 64-127) × 2 (K 0-15 and 16-31) m64n128k16 products, fenced by one WARPGROUP.ARRIVE
# (wgmma.fence) and waited for by one WARPGROUP.DEPBAR.LE (wgmma.wait_group 0): the call is synchronous.
IN_LOOP = {"WARPGROUP.ARRIVE": 1, "WARPGROUP.DEPBAR.LE": 1, "UTMALDG.2D": 2, "SYNCS.ARRIVE.TRANS64": 1,
           "SYNCS.PHASECHK.TRANS64.TRYWAIT": 1}
MMA_PER_STEP = 4
# The producer is lesson 14's, instruction for instruction.
MBARRIER_OPS = {"UTMALDG.2D": 6, "SYNCS.EXCH.64": 3, "SYNCS.ARRIVE.TRANS64": 3, "SYNCS.PHASECHK.TRANS64.TRYWAIT": 2,
                "SYNCS.CCTL.IV": 3}
# Gone from the loop: ldmatrix, mma.sync, and the proxy fence lesson 14 needed between ldmatrix's reads (the
# threads' own accesses) and TMA's next write (the asynchronous proxy): wgmma reads through that proxy too.
ABSENT = ("LDSM", "HMMA", "FENCE.VIEW.ASYNC")
REGISTERS = 154                     # lesson 14: 198, with its ldmatrix fragments
SHARED_BYTES = 3 * (128 * 32 + 32 * 128) * 2 + 3 * 8


def require_wgmma_layout(layout) -> None:
    """Refuse, with a sentence, an accumulator layout wgmma cannot take. Triton 3.9.0 does not report this one as
    an error: LLVM stops the whole process (``Dot's a/b's encoding should be of DotOperandEncodingAttr``)."""
    version = getattr(layout, "version", None)
    if not isinstance(layout, gl.NVMMADistributedLayout) or list(version)[:1] != [3]:
        raise ValueError(f"wgmma accumulates in NVMMADistributedLayout(version=[3, 0], ...), not {layout}: "
                         "version 2 is mma.sync's layout (lessons 11-14)")


def compiled(mod, target="sm_90", dtype="bf16", tile=None):
    """The lesson's kernel for ``target`` with descriptors for ``tile``, as a launch with 8192³ operands sees it."""
    t = dict(TILE if tile is None else tile)
    layouts = mod.kernel_layouts(NUM_WARPS, t["BLOCK_N"])
    require_wgmma_layout(layouts["acc_layout"])
    a_block, b_block = [t["BLOCK_M"], t["BLOCK_K"]], [t["BLOCK_K"], t["BLOCK_N"]]
    a_layout = gl.NVMMASharedLayout.get_default_for(a_block, GL_DTYPES[dtype])
    b_layout = gl.NVMMASharedLayout.get_default_for(b_block, GL_DTYPES[dtype])
    signature = {"a_desc": tensor_descriptor_type(dtype, a_block, a_layout),
                 "b_desc": tensor_descriptor_type(dtype, b_block, b_layout),
                 "c_ptr": f"*{dtype}", "M": "i32", "N": "i32", "K": "i32", "stride_cm": "i32"}
    return compile_cached(mod.matmul_kernel, target, signature=signature, constexprs={**t, "stride_cn": 1, **layouts},
                          aligned=("c_ptr", "M", "N", "K", "stride_cm"), num_warps=NUM_WARPS)


def main_loop(k):
    """(first, last) address of the K loop: the smallest loop whose body holds the wgmma instructions."""
    return k.loop_holding("HGMMA")


def in_main_loop(k) -> dict:
    return k.opcodes_between(*main_loop(k))


def accumulator_layout(mod):
    layout = mod.wgmma_layout(NUM_WARPS, TILE["BLOCK_N"])
    require_wgmma_layout(layout)
    want = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1], instr_shape=[16, 128, 16])
    if layout != want:
        return (f"wgmma_layout(4, 128) is {layout}; expected {want}: the 4 warps of the warpgroup stacked along M "
                "(16 rows each), one instruction as wide as the tile's 128 columns, 16 of K")
    return None


def signature(mod, compile=None, in_loop=None, mbarrier_ops=None) -> str | None:
    """The wgmma K loop, bf16 and fp16: ``in_loop`` plus the HGMMA per K step, nothing left of ldmatrix or mma.sync,
    and the producer's ``mbarrier_ops``. Lessons 16 and 17 call it with their own compile and counts."""
    compile, in_loop = compile or compiled, IN_LOOP if in_loop is None else in_loop
    mbarrier_ops = MBARRIER_OPS if mbarrier_ops is None else mbarrier_ops
    for dtype in ("bf16", "fp16"):
        k = compile(mod, "sm_90", dtype)
        if not any(op.startswith("HGMMA") for op in k.opcodes()):
            return f"{dtype}: no HGMMA (wgmma) at all; the product must come from warpgroup_mma"
        loop = in_main_loop(k)
        want = {**in_loop, HGMMA[dtype]: MMA_PER_STEP}
        got = {op: loop.get(op, 0) for op in want}
        if got != want:
            return f"{dtype}: in the K loop {got}; expected {want}"
        hgmma = {op: n for op, n in k.opcodes().items() if op.startswith("HGMMA")}
        if hgmma != {HGMMA[dtype]: MMA_PER_STEP}:
            return f"{dtype}: {hgmma}; expected {MMA_PER_STEP} × {HGMMA[dtype]}, all in the K loop"
        left = {op: n for op, n in k.opcodes().items() if op.startswith(ABSENT)}
        if left:
            return f"{dtype}: {left} left in the kernel: wgmma reads A and B from shared memory itself"
        ops = {op: n for op, n in sorted(k.opcodes().items()) if op.startswith(("UTMA", "SYNCS"))}
        if ops != mbarrier_ops:
            return f"{dtype}: TMA and mbarrier instructions {ops}; expected {mbarrier_ops}"
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


# -- on a GPU ------------------------------------------------------------------------------------

# Lesson 14's GPU checks take any module with a TMA matmul: the odd shapes (K and N multiples of 8), every launch in
# a child process with a time limit, and the sanitizer's small launch.
V4 = load_checks("14")
correct, sanitizer_clean, small_launch = V4.correct, V4.sanitizer_clean, V4.small_launch


def launcher_refuses(mod):
    import torch

    from gluon_course.measure.gemm import gemm_inputs

    a, b = gemm_inputs(129, 136, 1001, torch.bfloat16)
    return refuses({
        "K = 1001 bf16 (2002-byte rows of A)": (lambda: mod.matmul(a, b), ValueError, ("16", "multiple")),
        "fp32 inputs": (lambda: mod.matmul(a.float(), b.float()), TypeError, ()),
        "num_warps=2 (half a warpgroup)": (lambda: mod.matmul(a[:, :1000], b[:1000], num_warps=2), ValueError,
                                           ("warpgroup",)),
    })


# -- figures -------------------------------------------------------------------------------------

DESIGN_RUN = (
    Reference(0.97, "of cuBLAS", "a plain Gluon TMA + wgmma kernel, 3 stages, 128 × 256 × 64, 8 warps, on the H200, "
              "bf16 8192³: 678 TFLOPS; this course's design run (2026-11-29), a trial, not a recording"),
    Reference(0.86, "of cuBLAS", "plain Triton tl.dot on the H200, bf16 8192³, default (wgmma): 0.78–0.94× cuBLAS; "
              "this course's design run"),
    Reference(0.69, "of cuBLAS", "lesson 14 (v4, mma.sync from the same TMA ring), recorded on the H200, "
              "2026-11-30: 498 TFLOPS"),
)
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
        Figure("vs_v4_bf16_8192", "v5 over v4, bf16 8192³", speedup_over("14", "v4", "v5"),
               Expectation(0.9, 2.5, "v4", WHY_V4, unit="× v4", target=TARGET_V4)),
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
