"""Lesson 13's checks: the pipeline in the machine code (cp.async copies, commit groups, the wait depth, the ring's
shared memory) for sm_90 and sm_100, correctness on odd shapes through both copy paths, the sanitizers, and the
speed against cuBLAS."""
import re

import torch

from gluon_course.course import load_module_file
from gluon_course.grading import Check, CourseTarget, Figure, LessonChecks, Passed, Reference
from gluon_course.grading.classes import AMPERE_ADA_RTX50
from gluon_course.grading.counts import mismatch
from gluon_course.grading.facts import Facts, facts_check
from gluon_course.grading.gemm import (around_first_run, empty_operands, gemm_class_ranges, gemm_masks_problem,
                                       gemm_measure, refuses)
from gluon_course.grading.gemm_kernel import GemmKernel
from gluon_course.machine import compile_cached
from gluon_course.measure.gemm import GEMM_ODD_SHAPES, check_gemm, gemm_inputs
from gluon_course.measure.isolated import check_isolated, sanitizer_check

# The configuration the machine-code checks compile: the solution's CONFIG, fixed here so that a learner's
# own CONFIG cannot move the counts.
TILE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32}
NUM_WARPS = 4
WARPS_M = 2
STAGES = 3
# An 8192³ launch: every integer argument a multiple of 16 and every pointer 16-byte aligned, and the unit
# strides (stride_ak, stride_bn, stride_cn) equal to 1, which a launch turns into constants.
INTEGERS = ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")
UNIT_STRIDES = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}
DTYPES = {"bf16": "HMMA.16816.F32.BF16", "fp16": "HMMA.16816.F32"}

# One tile of A (128 × 32) and one of B (32 × 128), 2 bytes an element: 16 KiB, which 128 threads copy 16 bytes
# per LDGSTS: 16384 B / (128 × 16 B) = 8 copies per tile, 4 per operand.
TILE_BYTES = (TILE["BLOCK_M"] * TILE["BLOCK_K"] + TILE["BLOCK_K"] * TILE["BLOCK_N"]) * 2
COPIES_PER_TILE = TILE_BYTES // (32 * NUM_WARPS * 16)
# What the pinned Triton 3.9.0 emits for the whole kernel at STAGES = 3 (the same on sm_90 and sm_100): the
# prologue's STAGES-1 tiles and the loop's one, each closed by a commit group; one wait in the loop and one after
# it; per loop iteration and warp (a 64 × 64 piece of C, 2 × 2 warps): 2 K-steps × 4 × 8 = 64 mma.sync (m16n8k16),
# 8 ldmatrix.x4 for A (4 × 2 blocks of 16 × 16) and 8 transposed ones for B (2 × 4); no global load into
# registers at all.
EXPECTED = {
    "LDGSTS.E.BYPASS.128": STAGES * COPIES_PER_TILE,
    "LDGDEPBAR": STAGES,
    "DEPBAR.LE": 2,
    "LDSM.16.M88.4": 8,
    "LDSM.16.MT88.4": 8,
    "BAR.SYNC.DEFER_BLOCKING": 2,
}
HMMA_COUNT = 64
PIPELINE_OPS = r"LDGSTS|LDGDEPBAR|DEPBAR|LDSM|BAR\.|HMMA|LDG\b"


def compiled(mod, target="sm_90", dtype="bf16", stages=STAGES, aligned=True):
    """matmul_kernel as an aligned launch compiles it (``aligned=False``: the register path for odd rows)."""
    signature = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{dtype}", **{n: "i32" for n in INTEGERS}}
    constexprs = {**TILE, **UNIT_STRIDES, **mod.kernel_layouts(**TILE, num_warps=NUM_WARPS, warps_m=WARPS_M),
                  "STAGES": stages, "ASYNC_COPY": aligned}
    return compile_cached(mod.matmul_kernel, target, signature=signature, constexprs=constexprs,
                          aligned=tuple(signature) if aligned else ("a_ptr", "b_ptr", "c_ptr"), num_warps=NUM_WARPS)


def pipeline_ops(k) -> dict:
    return {op: n for op, n in sorted(k.opcodes().items()) if re.match(PIPELINE_OPS, op)}


# ASYNC_COPY is the path the launcher takes for rows cp.async can copy (K and N multiples of 8): the model's shapes.
MODEL_SHAPES = ((300, 264, 520), (129, 136, 72), (1, 8, 8))
# The course's configuration; what the launcher passes besides the tile: lesson 12's layouts, the ring's depth, and
# ASYNC_COPY (true for rows cp.async can copy: the shapes of a benchmark).
KERNEL = GemmKernel("pointer", fixed={**TILE, "num_warps": NUM_WARPS, "warps_m": WARPS_M, "STAGES": STAGES},
                    extra_tile_keys=("STAGES",), model_shapes=MODEL_SHAPES,
                    constexprs=lambda mod, cfg, dtype: {
                        **mod.kernel_layouts(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps=cfg["num_warps"],
                                             warps_m=cfg["warps_m"]), "ASYNC_COPY": True})


def model(mod):
    return KERNEL.model_check(mod)


# What the machine code's pipeline instructions are, for the sentences of a count that is off.
NAMES = {"LDGSTS.E.BYPASS.128": "a 16-byte cp.async copy", "LDGDEPBAR": "a commit group",
         "DEPBAR.LE": "a wait_group", "LDSM.16.M88.4": "ldmatrix of A", "LDSM.16.MT88.4": "ldmatrix of B (transposed)"}
HINTS = {"LDGDEPBAR": ("a commit_group is missing: one per tile, in the prologue and in the loop", "a commit too many"),
       "DEPBAR.LE": ("a wait_group is missing (one in the loop, one after it)", "a wait too many"),
       "LDGSTS.E.BYPASS.128": ("a tile's copies are missing (prologue or loop)", "copies of a tile too many")}


def _pipeline(target):
    def run(mod):
        for dtype, hmma in DTYPES.items():
            found = pipeline_ops(compiled(mod, target, dtype))
            want = {**EXPECTED, hmma: HMMA_COUNT}
            problem = mismatch(found, dict(sorted(want.items())), "in the whole kernel", dtype, NAMES, HINTS)
            if problem:
                return problem
        return None
    return run


def copies_overlap_the_loop(mod):
    """sm_90: inside the K loop, one tile's copies (8 LDGSTS), its commit, one wait, and all the tensor-core work."""
    k = compiled(mod)
    inside = {name: k.count_in_loops(pattern) for name, pattern in
              (("LDGSTS", r"LDGSTS\b"), ("LDGDEPBAR", r"LDGDEPBAR\b"), ("DEPBAR", r"DEPBAR\b"),
               ("LDSM", r"LDSM\b"), ("HMMA", r"HMMA\b"))}
    want = {"LDGSTS": COPIES_PER_TILE, "LDGDEPBAR": 1, "DEPBAR": 1, "LDSM": 16, "HMMA": HMMA_COUNT}
    if inside != want:
        return (f"inside the loop: {inside}; expected {want} (the prologue copies STAGES-1 tiles before the loop, "
                "each iteration copies one more tile and computes on one)")
    return None


def _waits(k) -> list[int]:
    """The immediates of DEPBAR.LE SB0, n (cp.async.wait_group n), in program order."""
    return [int(m.group(1), 16) for ins in k.instructions() if ins.opcode == "DEPBAR.LE"
            for m in [re.search(r"SB0,\s*0x([0-9a-f]+)", ins.text)] if m]


def wait_depth(mod):
    """For STAGES = 2, 3, 4 the loop waits until at most STAGES-2 groups are in flight, then drains with 0."""
    for stages in (2, 3, 4):
        waits = _waits(compiled(mod, stages=stages))
        if waits != [stages - 2, 0]:
            return (f"STAGES={stages}: the waits are DEPBAR.LE SB0 {waits}; expected [{stages - 2}, 0]: in the loop "
                    f"wait_group(STAGES - 2) (tile i's group is the oldest of STAGES-1 in flight), after it "
                    "wait_group(0)")
    return None


def ring_bytes(mod):
    """Shared memory = STAGES × (one tile of A + one of B) = STAGES × 16 KiB, and 8 × STAGES copies."""
    found = {}
    for stages in (2, 3, 4):
        k = compiled(mod, stages=stages)
        found[stages] = (k.shared_bytes, k.count("LDGSTS.E.BYPASS.128"))
    want = {s: (s * TILE_BYTES, s * COPIES_PER_TILE) for s in (2, 3, 4)}
    if found != want:
        return (f"(shared bytes, LDGSTS) per STAGES: {found}; expected {want}: a ring of STAGES buffers of "
                f"{TILE_BYTES} bytes, STAGES-1 tiles copied before the loop and one in it")
    return None


def registers_fit(mod):
    for target in ("sm_90", "sm_100"):
        k = compiled(mod, target)
        if k.registers >= 255 or k.spills:
            return f"{target}: {k.registers} registers, {k.spills} spill bytes; the kernel must fit in 255 without spills"
    return Passed(f"{compiled(mod).registers} registers on sm_90, {compiled(mod, 'sm_100').registers} on sm_100, "
                  "no spills")


def masked_by_m_n_k(mod):
    """Each copy's own mask (masked-off vectors are zero-filled) and the store's, every bound exact."""
    return gemm_masks_problem(compiled(mod))


def register_path_for_odd_rows(mod):
    """Rows whose 16-byte vectors are not provably aligned compile to plain loads (no cp.async)."""
    k = compiled(mod, aligned=False)
    if k.count_matching(r"LDGSTS") or not k.count_matching(r"LDG\b"):
        return f"the ASYNC_COPY=False kernel has {pipeline_ops(k)}; expected plain LDG loads and no LDGSTS"
    return None


# -- on a GPU -------------------------------------------------------------------------------------------

# Shapes whose rows cp.async can copy (K and N multiples of 16) and that still have every tail: M past a tile,
# N past a tile, K a tile and a half (one masked half-tile), K shorter than the prologue (2 tiles < STAGES-1),
# and one 16-wide K tile. GEMM_ODD_SHAPES (K = 1, 65, 1000, 4097, N = 33, 129, 255) take the register path.
ASYNC_SHAPES = ((129, 272, 1040), (1000, 1008, 48), (17, 16, 16), (4097, 144, 4112))


def small_launch(module_file: str) -> None:
    """One launch through each copy path: 129×257×200 (odd rows: registers), 129×272×208 (cp.async, K tail)."""
    mod = load_module_file(module_file)
    for M, N, K in ((129, 257, 200), (129, 272, 208)):
        a, b = gemm_inputs(M, N, K, torch.bfloat16)
        mod.matmul(a, b)
    torch.cuda.synchronize()


def exact_on_odd_shapes(mod):
    problem = check_isolated(f"{__file__}:small_launch", [mod.__file__])
    if problem:
        return problem
    for M, N, K in ASYNC_SHAPES:
        a, b = gemm_inputs(M, N, K, torch.bfloat16)
        if not mod.can_copy_async(a, b):
            return f"{M}×{N}×{K} should take the cp.async path (K and N multiples of 16), but can_copy_async says no"
    return check_gemm(lambda a, b, c: mod.matmul(a, b, c), shapes=GEMM_ODD_SHAPES + ASYNC_SHAPES)


def launcher_refuses_wrong_inputs(mod):
    a, b = gemm_inputs(64, 64, 64, torch.bfloat16)
    problem = empty_operands(mod)
    if problem:
        return problem
    return refuses({
        "fp32 inputs": (lambda: mod.matmul(a.float(), b.float()), TypeError, ["bfloat16"]),
        "mismatched K": (lambda: mod.matmul(a, b[:32]), ValueError, ["K"]),
        "non-contiguous B": (lambda: mod.matmul(a, b.t().contiguous().t()), ValueError, ["contiguous"]),
        "STAGES=1": (lambda: mod.matmul(a, b, STAGES=1), ValueError, ["ring"]),
    })


TOOLS = ("memcheck", "racecheck", "synccheck")


def sanitizer_clean(mod):
    return sanitizer_check(f"{__file__}:small_launch", [mod.__file__], tools=TOOLS)


# -- figures --------------------------------------------------------------------------------------------

DESIGN_RUN = "the course's design run on an NVIDIA H200, bf16 8192³"
REFERENCES = (
    Reference(0.56, "× cuBLAS", f"plain Triton tl.dot with DISABLE_MMA_V3=1, i.e. mma.sync fed by cp.async: "
              f"361–411 TFLOPS = 0.53–0.59× cuBLAS, {DESIGN_RUN}"),
    Reference(0.86, "× cuBLAS", f"plain Triton tl.dot, default (wgmma + TMA): 0.78–0.94× cuBLAS, {DESIGN_RUN}"),
    Reference(689, "TFLOPS", f"cuBLAS (torch.matmul): 672–706 TFLOPS, {DESIGN_RUN}"),
)
WHY = ("a mma.sync kernel whose copies are hidden by a cp.async ring; plain Triton's own mma.sync + cp.async "
       "pipeline reached 0.53–0.59× cuBLAS on the H200 in the design run")
TARGET = CourseTarget(0.50, why="the course aims for v3 at half of cuBLAS or more: about what Triton's own "
                      "mma.sync + cp.async pipeline reaches (0.53–0.59× in the design run)")
# The first clean run (grading.gemm.FIRST_RUN).
FIRST = {"bf16_8192": (0.5451, "394 TFLOPS vs cuBLAS 722"), "fp16_8192": (0.5744, "389 TFLOPS vs cuBLAS 678"),
         "bf16_4096": (0.5631, "412 TFLOPS vs cuBLAS 731")}
WAVES_4096 = ("; at 4096³ the 1024 programs make 3.9 waves of 264 (2 per SM), so the partly filled last wave weighs "
              "more than at 8192³")


def _figure(key, title, M, N, K, dtype, why=WHY, target=None, headline=False):
    return Figure(key, title, gemm_measure(M, N, K, dtype, f"v3 {dtype} {M}×{N}×{K}"),
                  around_first_run(*FIRST[key], why, REFERENCES, target=target,
                                   classes=gemm_class_ranges(FIRST[key], "mma.sync", below=0.5, above=1.25)),
                  headline=headline)


# bf16 at STAGES 3 on the GPUs before Hopper and on RTX 50, against sm_90 (whole kernel): cp.async is LDGSTS there too,
# with the same commits, waits, ldmatrix and mma.sync; the 48 KiB ring fits the 99 KiB a block may have on sm_86, sm_89
# and sm_120, two blocks to an SM of 100 KiB. The epilogue reads 3 scalars from shared memory where sm_90 and sm_120
# read 6.
RING = {
    target: Facts({"BAR.SYNC.DEFER_BLOCKING": 2, "HMMA.16816.F32.BF16": 64, "LDGSTS.E.BYPASS.128": 24, "LDS": lds,
                   "LDSM.16.M88.4": 8, "LDSM.16.MT88.4": 8, "STG.E": 64}, registers=registers, shared=49152,
                  in_loops=("async_copy", "mma"))
    for target, lds, registers in (("sm_90", 6, 225), ("sm_80", 3, 229), ("sm_86", 3, 221), ("sm_89", 3, 221),
                                   ("sm_120", 6, 216))
}


def compiled_bf16(mod, target):
    return compiled(mod, target, "bf16")


CHECKS = LessonChecks(
    targets=("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"),
    teaches="`cp.async` into a ring of shared buffers: `async_load`, `commit_group`, `wait_group`, prefetch "
            "distance STAGES − 1, the alignment cp.async needs",
    machine_code=[
        Check("pipeline_sm_90", "sm_90, at the course's tile 128×128×32 (4 warps, STAGES 3): 24 × LDGSTS.E.BYPASS.128, "
              "3 commits, 2 waits, 64 HMMA, 16 LDSM, no LDG (bf16 and fp16)", _pipeline("sm_90"), target="sm_90"),
        Check("copies_in_loop_sm_90", "sm_90, at the course's tile: each loop iteration copies one tile (8 LDGSTS) "
              "while 64 HMMA compute",
              copies_overlap_the_loop, target="sm_90"),
        Check("wait_depth_sm_90", "sm_90, at the course's tile: the loop waits with DEPBAR.LE SB0, STAGES−2 (STAGES = "
              "2, 3, 4)", wait_depth,
              target="sm_90"),
        Check("ring_bytes_sm_90", "sm_90, at the course's tile: shared memory = STAGES × 16 KiB, LDGSTS = 8 × STAGES "
              "(STAGES = 2, 3, 4)",
              ring_bytes, target="sm_90"),
        Check("masked_mnk", "sm_90, at the course's tile: each cp.async copy's mask bounds its K tail and its rows < M "
              "(A) or columns < N (B), the store's rows < M and columns < N", masked_by_m_n_k, target="sm_90"),
        Check("register_path_sm_90", "sm_90, at the course's tile: rows cp.async cannot copy compile to plain loads",
              register_path_for_odd_rows, target="sm_90"),
        Check("pipeline_sm_100", "sm_100, at the course's tile: the same pipeline (bf16 and "
              "fp16)", _pipeline("sm_100"), target="sm_100"),
        Check("registers", "at the course's tile: under 255 registers and no spills (sm_90, "
              "sm_100)", registers_fit, target="sm_90"),
        Check("config_fits", "your CONFIG, compiled for sm_80, sm_86, sm_89, sm_90, sm_100 and sm_120, fits one SM "
              "with no spills", KERNEL.config_fits(("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")),
              target="sm_90"),
        Check("host_model", "in the host model (no GPU, at the course's tile): C exact on odd shapes, each element "
              "written once, every slot read after the wait_group that covers its copy, none refilled while "
              "read", model),
        *(facts_check(f"ring_{t}", t, compiled_bf16, RING, num_warps=NUM_WARPS, what="bf16 at the course's tile, "
                      "STAGES 3") for t in AMPERE_ADA_RTX50),
    ],
    correctness=[
        Check("exact_odd_shapes", "one isolated launch ends in time; C exact on odd shapes through both copy paths "
              "(bf16 and fp16, poisoned and guarded C)", exact_on_odd_shapes, gpu=True),
        Check("launcher_errors", "matmul refuses fp32, a K mismatch, a non-contiguous B and STAGES=1 with a sentence; "
              "M, N or K = 0 gives what torch.matmul gives",
              launcher_refuses_wrong_inputs, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck, racecheck and synccheck find nothing",
              sanitizer_clean, gpu=True),
    ],
    figures=[
        _figure("bf16_8192", "v3 cp.async ring, bf16 8192³", 8192, 8192, 8192, "bf16", target=TARGET,
                headline=True),
        _figure("fp16_8192", "v3 cp.async ring, fp16 8192³", 8192, 8192, 8192, "fp16"),
        _figure("bf16_4096", "v3 cp.async ring, bf16 4096³", 4096, 4096, 4096, "bf16", why=WHY + WAVES_4096),
    ],
)
