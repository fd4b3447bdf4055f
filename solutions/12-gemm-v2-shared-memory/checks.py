"""Lesson 12's checks: the machine code of shared-memory staging (coalesced 16-byte loads, STS.128, two barriers,
LDSM, HMMA) on sm_90 and sm_100, ldmatrix bank conflicts predicted on the CPU, correctness and the sanitizers on
a GPU, Nsight Compute's count of ldmatrix wavefronts, and the speed against cuBLAS."""
from __future__ import annotations

import math

import torch

from gluon_course.grading import Check, Expectation, Figure, LessonChecks, Reference
from gluon_course.grading.classes import AMPERE_ADA_RTX50
from gluon_course.grading.facts import Facts, facts_check
from gluon_course.grading.gemm import (FIRST_RUN, around_first_run, empty_operands, gemm_class_ranges,
                                       gemm_masks_problem, gemm_measure,
                                       refuses)
from gluon_course.grading.gemm_kernel import GemmKernel
from gluon_course.machine import compile_cached
from gluon_course.measure import Measurement
from gluon_course.measure.gemm import check_gemm, gemm_inputs
from gluon_course.measure.isolated import check_isolated, sanitizer_check
from gluon_course.memory.banks import (ldmatrix_report, ldmatrix_wavefronts, shared_access,
                                       triton_bank_conflicts)
from gluon_course.memory.layouts import to_linear

# -- compiling the kernel as a launch of an 8192³ problem would ------------------------------------

NUM_WARPS, WARPS_M = 4, 2
COURSE_TILE = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}
RUNTIME = {"a_ptr": "*{t}", "b_ptr": "*{t}", "c_ptr": "*{t}", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
# A launch specializes integer arguments equal to 1 into constants: the unit strides of row-major A, B and C.
UNIT_STRIDES = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}
ALIGNED = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def tile(mod) -> dict:
    """BLOCK_M, BLOCK_N, BLOCK_K of the course's tile (128, 64, 32: version 1's tile, the solution's CONFIG): the
    checks assert counts at it, whatever a learner's CONFIG says (config_fits compiles that)."""
    return {name: COURSE_TILE[name] for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}


def shapes(mod):
    """The shapes of A's and B's shared tiles: [BLOCK_M, BLOCK_K] and [BLOCK_K, BLOCK_N]."""
    t = tile(mod)
    return [t["BLOCK_M"], t["BLOCK_K"]], [t["BLOCK_K"], t["BLOCK_N"]]


def compiled(mod, target: str = "sm_90", dtype: str = "bf16", swizzled: bool = True):
    """matmul_kernel with the module's CONFIG and layouts, compiled for ``target`` as an 8192³ launch would be."""
    layouts = mod.kernel_layouts(**tile(mod), num_warps=NUM_WARPS, warps_m=WARPS_M, swizzled=swizzled,
                                 element_bytes=DTYPES[dtype].itemsize)
    signature = {name: kind.format(t=dtype) for name, kind in RUNTIME.items()}
    return compile_cached(mod.matmul_kernel, target, signature=signature,
                          constexprs={**tile(mod), **layouts, **UNIT_STRIDES}, aligned=ALIGNED, num_warps=NUM_WARPS)


# -- what the pinned Triton 3.9.0 emits (128 × 64 × 32 tile, 4 warps as 2 × 2; the same on sm_90 and sm_100) ------

HMMA = {"bf16": "HMMA.16816.F32.BF16", "fp16": "HMMA.16816.F32"}

# The solution's CONFIG; what the launcher passes besides the tile: the mma.sync layouts, the coalesced load layouts
# and the (swizzled) shared layouts.
KERNEL = GemmKernel("pointer", fixed={"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "warps_m": 2,
                                      "swizzled": True},
                    constexprs=lambda mod, cfg, dtype: mod.kernel_layouts(
                        cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps=cfg["num_warps"],
                        warps_m=cfg["warps_m"], swizzled=cfg.get("swizzled", True),
                        element_bytes=DTYPES[dtype].itemsize))


def model(mod):
    return KERNEL.model_check(mod)


def expected_ops(dtype: str) -> dict:
    return {"BAR.SYNC.DEFER_BLOCKING": 2,     # after the stores (read after write), before the next stores (write after read)
            HMMA[dtype]: 32,                   # per warp: a 64 × 32 tile × K 32 = 4 × 4 × 2 instructions of m16n8k16
            "LDG.E.128": 6,                    # 4 for A's 128 × 32 tile, 2 for B's 32 × 64: 16 bytes each
            "LDSM.16.M88.4": 8,                # A, per warp 64 × 32: eight ldmatrix.x4 of 16 × 16
            "LDSM.16.MT88.4": 4,               # B, per warp 32 × 32, transposed on the way (B's rows run along N)
            "STG.E": 32,                       # the epilogue: the accumulator layout holds 2 neighbouring outputs
            "STS.128": 6}                      # the staged tiles, one 16-byte vector per load
SHARED_BYTES = 12288                           # (128 × 32 + 32 × 64) × 2 bytes
IN_LOOP = {"global_load": 6, "shared": 18, "barrier": 2, "mma": 32}   # every one of them, once per K step
# Wavefronts per ldmatrix.x4 (ideal 4). Model: 8 consecutive rows per matrix. Compiled: what the PTX does.
LDSM_MODEL = {True: (4.0, 4.0), False: (16.0, 32.0)}       # (A, B) per swizzled
LDSM_COMPILED = {True: (4.0, 4.0), False: (16.0, 16.0)}    # (ldmatrix, ldmatrix.trans) per swizzled
PLAIN_PRMT = 16    # the byte permutes Triton adds to repack B when it regroups the plain tile's rows


def _ops(k) -> dict:
    return k.family("global_load", "global_store", "shared", "barrier", "mma")


def machine_code(target: str):
    def run(mod):
        for dtype in ("bf16", "fp16"):
            k = compiled(mod, target, dtype)
            if _ops(k) != expected_ops(dtype) or k.shared_bytes != SHARED_BYTES:
                return (f"{target} {dtype}: {_ops(k)} with {k.shared_bytes} shared bytes; expected "
                        f"{expected_ops(dtype)} with {SHARED_BYTES} shared bytes")
            if k.spills:
                return f"{target} {dtype}: {k.spills} bytes of spills ({k.registers} registers)"
        k = compiled(mod, target)
        in_loop = {family: k.count_in_loops(k.family_pattern(family)) for family in IN_LOOP}
        if in_loop != IN_LOOP:
            return f"{target}, inside the K loop: {in_loop}; expected {IN_LOOP} (all of it happens once per K step)"
        return None
    return run


def masks_compare_m_n_k(mod):
    """Each access's own mask: the loads by their K tail and rows < M or columns < N, the store by both edges."""
    return gemm_masks_problem(compiled(mod))


def coalesced_layout_vectors(mod):
    """Each thread loads 8 consecutive 16-bit elements of a row (one 16-byte vector); lanes continue along the row."""
    for rows, cols in ((128, 32), (32, 64), (64, 128), (16, 256)):
        layout = mod.coalesced_layout(rows, cols, NUM_WARPS)
        linear = to_linear(layout, [rows, cols])
        vector = [[0, 1], [0, 2], [0, 4]]
        lanes_along = min(32, cols // 8).bit_length() - 1
        want_lanes = [[0, 8 << i] for i in range(lanes_along)]
        if linear.reg_bases[:3] != vector or linear.lane_bases[:lanes_along] != want_lanes:
            return (f"{rows} × {cols}: registers {linear.reg_bases[:3]}, lanes {linear.lane_bases}; expected the first "
                    f"three register bases {vector} (a 16-byte vector) and lanes starting {want_lanes}")
    return None


def ldmatrix_conflict_free(mod):
    """The shared layouts the lesson asks for: every 8 × 8 matrix ldmatrix reads in one wavefront (model and compiled
    code), and the STS.128 stores of the coalesced tiles without conflicts either."""
    a_shared, b_shared = mod.shared_layouts(**tile(mod))
    a_shape, b_shape = shapes(mod)
    try:
        model = (ldmatrix_wavefronts(a_shared, a_shape).wavefronts_per_instruction,
                 ldmatrix_wavefronts(b_shared, b_shape).wavefronts_per_instruction)
    except ValueError as e:
        return f"ldmatrix cannot read these layouts: {e}"
    if model != LDSM_MODEL[True]:
        return (f"predicted ldmatrix wavefronts per instruction (A, B) = {model}, expected {LDSM_MODEL[True]} "
                "(4 = one per 8 × 8 matrix): the shared layout puts rows of one matrix in the same banks")
    report = ldmatrix_report(compiled(mod), NUM_WARPS)
    got = (report.per_instruction("ldmatrix"), report.per_instruction("ldmatrix.trans"))
    if got != LDSM_COMPILED[True]:
        return f"the compiled ldmatrix take {got} wavefronts per instruction (A, B); expected {LDSM_COMPILED[True]}"
    layouts = mod.kernel_layouts(**tile(mod), num_warps=NUM_WARPS, warps_m=WARPS_M)
    for name, shape in (("a", a_shape), ("b", b_shape)):
        store = shared_access(layouts[f"{name}_load"], layouts[f"{name}_shared"], shape, element_bytes=2)
        conflicts = triton_bank_conflicts(layouts[f"{name}_load"], layouts[f"{name}_shared"], shape, 16)
        if store.conflicts or conflicts:
            return f"storing {name.upper()}'s tile: {store} (gl.bank_conflicts {conflicts})"
    return None


def plain_costs_wavefronts(mod):
    """The comparison of the lesson: the plain layout, same instructions, 4× and up to 8× the ldmatrix wavefronts."""
    plain, swizzled = compiled(mod, swizzled=False), compiled(mod)
    if _ops(plain) != _ops(swizzled):
        return f"plain and swizzled differ in their memory instructions: {_ops(plain)} vs {_ops(swizzled)}"
    a_plain, b_plain = mod.shared_layouts(**tile(mod), swizzled=False)
    a_shape, b_shape = shapes(mod)
    model = (ldmatrix_wavefronts(a_plain, a_shape).wavefronts_per_instruction,
             ldmatrix_wavefronts(b_plain, b_shape).wavefronts_per_instruction)
    report = ldmatrix_report(plain, NUM_WARPS)
    got = (report.per_instruction("ldmatrix"), report.per_instruction("ldmatrix.trans"))
    if model != LDSM_MODEL[False] or got != LDSM_COMPILED[False] or plain.count("PRMT") != PLAIN_PRMT:
        return (f"plain layout: model {model}, compiled {got}, {plain.count('PRMT')} PRMT; expected model "
                f"{LDSM_MODEL[False]}, compiled {LDSM_COMPILED[False]}, {PLAIN_PRMT} PRMT")
    return None


# -- GPU checks -----------------------------------------------------------------------------------

SMALL_SHAPE = (129, 257, 200)
TOOLS = ("memcheck", "racecheck", "synccheck")


def small_launch(module_file: str, swizzled: str = "1") -> None:
    """One launch on an odd shape, in a process of its own (run_isolated, compute-sanitizer)."""
    import os
    # Without PyTorch's caching allocator every tensor is one cudaMalloc of its own size, so memcheck sees a read
    # past the end of A or B as out of bounds instead of landing in a neighbour inside a cached block.
    os.environ.setdefault("PYTORCH_NO_CUDA_MEMORY_CACHING", "1")
    from gluon_course.course import load_module_file

    mod = load_module_file(module_file)
    a, b = gemm_inputs(*SMALL_SHAPE, torch.bfloat16)
    mod.matmul(a, b, swizzled=swizzled == "1")
    torch.cuda.synchronize()


def gemm_correct(mod):
    problem = check_isolated(f"{__file__}:small_launch", [mod.__file__])
    if problem:
        return f"{SMALL_SHAPE[0]}×{SMALL_SHAPE[1]}×{SMALL_SHAPE[2]}: {problem}"
    for swizzled in (True, False):
        problem = check_gemm(lambda a, b, c: mod.matmul(a, b, c, swizzled=swizzled))
        if problem:
            return f"{'swizzled' if swizzled else 'plain'} shared layout: {problem}"
    return None


def refuses_wrong_inputs(mod):
    a, b = gemm_inputs(64, 48, 32, torch.bfloat16)
    return empty_operands(mod) or refuses({"fp32 inputs": (lambda: mod.matmul(a.float(), b.float()), TypeError, ()),
                    "mismatched K": (lambda: mod.matmul(a, b[:16]), ValueError, ()),
                    "a non-contiguous A (a transposed view)":
                        (lambda: mod.matmul(a.t().contiguous().t(), b), ValueError, ())})


def sanitizer_clean(mod):
    return sanitizer_check(f"{__file__}:small_launch", [mod.__file__], tools=TOOLS)


# -- Nsight Compute: ldmatrix wavefronts of one launch -----------------------------------------------

LDSM_WAVEFRONTS = "sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"
LDSM_INSTRUCTIONS = "sm__sass_inst_executed_op_ldsm.sum"
ST_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"
ST_INSTRUCTIONS = "smsp__inst_executed_op_shared_st.sum"
LDSM_METRICS = (LDSM_WAVEFRONTS, LDSM_INSTRUCTIONS, ST_WAVEFRONTS, ST_INSTRUCTIONS)
NCU_SIDE = 1024          # 64 tiles × 32 K steps: a launch of microseconds, seconds under ncu


def ncu_launch(path: str, layout: str) -> None:
    """The profiled process: one NCU_SIDE³ bf16 product with the module at ``path``, ``layout`` swizzled or plain."""
    from gluon_course.course import load_module_file

    mod = load_module_file(path)
    a, b = gemm_inputs(NCU_SIDE, NCU_SIDE, NCU_SIDE, torch.bfloat16)
    mod.matmul(a, b, swizzled=layout == "swizzled")
    torch.cuda.synchronize()


def profile_ldsm(mod, layout: str) -> dict[str, float]:
    from gluon_course.measure import ncu

    return ncu.profile_launch(f"{__file__}:ncu_launch", [mod.__file__, layout], kernel="matmul_kernel",
                              metrics=LDSM_METRICS)


def ldsm_figure(layout: str):
    def measure(mod):
        predicted = ldmatrix_report(compiled(mod, swizzled=layout == "swizzled"), NUM_WARPS).wavefronts_per_instruction
        v = profile_ldsm(mod, layout)
        per_ldsm = v[LDSM_WAVEFRONTS] / v[LDSM_INSTRUCTIONS]
        per_store = v[ST_WAVEFRONTS] / v[ST_INSTRUCTIONS] if v[ST_INSTRUCTIONS] else math.nan
        return Measurement(per_ldsm, f"{per_ldsm:.2f} per LDSM (predicted {predicted:g}), {per_store:.2f} per STS.128",
                           {"ldsm": per_ldsm, "store": per_store, "predicted": predicted, **v})
    return measure


# -- expected ranges ------------------------------------------------------------------------------

DESIGN = "NVIDIA H200, this course's design run, a trial, not a recording"
REFERENCES = (
    Reference(0.56, "of cuBLAS", f"{DESIGN} (2026-11-30): plain Triton tl.dot with DISABLE_MMA_V3=1 (mma.sync + cp.async, "
              "pipelined), bf16 8192³, 361–411 TFLOPS = 0.53–0.59× cuBLAS"),
    Reference(0.86, "of cuBLAS", f"{DESIGN} (2026-11-30): plain Triton tl.dot (wgmma), 0.78–0.94× cuBLAS"),
    Reference(689, "TFLOPS", f"{DESIGN} (2026-11-29 and 2026-11-30): cuBLAS bf16 8192³, 672–706 TFLOPS"),
)
# The first clean run (grading.gemm.FIRST_RUN).
FIRST = {"bf16_8192": (0.2810, "203 TFLOPS vs cuBLAS 722"), "fp16_8192": (0.2988, "203 TFLOPS vs cuBLAS 678"),
         "bf16_4096": (0.2492, "182 TFLOPS vs cuBLAS 731"), "plain_bf16_8192": (0.1595, "115 TFLOPS vs cuBLAS 722")}
WHY_SPEED = ("mma_v2 fed from swizzled shared memory, one 128 × 64 tile per program, no pipelining: each K step "
             "waits for its global loads, then for two barriers, so the tensor cores idle for much of it; the "
             "pipelined mma.sync kernel of the design run (cp.async, lesson 13's idea) reached 0.53–0.59×")
WHY_PLAIN = ("the same kernel with the plain shared layout: the same memory instructions, but 16 wavefronts per "
             "ldmatrix instead of 4, so shared memory sets its ceiling: the first run gave 57% of the swizzled "
             "kernel's TFLOPS")
WHY_WAVES = ("predicted on the CPU from the compiled kernel's ldmatrix addresses (gluon_course.memory.banks."
             "ldmatrix_report); Nsight Compute counts the LDSM wavefronts and instructions of one 1024³ launch "
             "(sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm / sm__sass_inst_executed_op_ldsm). The "
             "count is a property of the addresses, not of the GPU's speed, hence the narrow range")


def _speed(key, why=WHY_SPEED):
    # On the other classes: the H200's FLOP per SM clock, at most what mma.sync gives there (written, not run).
    below = 0.4 if key.startswith("plain") else 0.5
    return around_first_run(*FIRST[key], why, REFERENCES,
                            classes=gemm_class_ranges(FIRST[key], "mma.sync", below=below, above=1.25))


# bf16 on the GPUs before Hopper and on RTX 50, against sm_90 (whole kernel, the course's tile): the same loads, stores
# to shared memory, ldmatrix, barriers and mma.sync, the same 12 KiB of shared memory.
STAGED = {
    target: Facts({"BAR.SYNC.DEFER_BLOCKING": 2, "HMMA.16816.F32.BF16": 32, "LDG.E.128": 6, "LDSM.16.M88.4": 8,
                   "LDSM.16.MT88.4": 4, "STG.E": 32, "STS.128": 6}, registers=registers, shared=12288,
                  in_loops=("mma", "shared"))
    for target, registers in (("sm_90", 130), ("sm_80", 130), ("sm_86", 130), ("sm_89", 130), ("sm_120", 128))
}


def compiled_bf16(mod, target):
    return compiled(mod, target, "bf16")


def _waves(low, high, predicted):
    return Expectation(low, high, "ideal", WHY_WAVES,
                       (Reference(predicted, "wavefronts/LDSM", "predicted here: ldmatrix_report of the compiled "
                                  "kernel"),
                        Reference(predicted, "wavefronts/LDSM", f"{FIRST_RUN}, Nsight Compute: {predicted:g}.00")),
                       unit="wavefronts/LDSM")


CHECKS = LessonChecks(
    targets=("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"),
    teaches="coalesced tile loads staged through shared memory, ldmatrix into mma_v2, swizzled vs plain shared "
            "layouts (ldmatrix bank conflicts predicted and counted)",
    machine_code=[
        Check("machine_code_sm_90", "sm_90, at the course's tile 128×64×32 (4 warps, 2 along M): 6× LDG.E.128, 6× "
              "STS.128, 2× BAR.SYNC, 8× LDSM.16.M88.4 (A), 4× LDSM.16.MT88.4 (B), 32× HMMA.16816.F32.BF16 (.F32 for "
              "fp16), all in the K loop; 12288 shared bytes, no spills", machine_code("sm_90"), target="sm_90"),
        Check("machine_code_sm_100", "sm_100, at the course's tile: the same instructions and counts (bf16 and fp16), "
              "all in the K loop, 12288 shared bytes, no spills",
              machine_code("sm_100"), target="sm_100"),
        Check("masks_compare_m_n_k", "sm_90, at the course's tile: each load's mask bounds its K tail and its rows < M "
              "(A) or columns < N (B), the store's rows < M and columns < N",
              masks_compare_m_n_k, target="sm_90"),
        Check("coalesced_layout_vectors", "coalesced_layout (4 warps; tiles 128×32, 32×64, 64×128, 16×256) gives each "
              "thread a 16-byte vector along a row, the lanes continuing along it", coalesced_layout_vectors),
        Check("ldmatrix_conflict_free", "sm_90, at the course's tile: the shared layouts let every ldmatrix read an 8 "
              "× 8 matrix in one wavefront (4 per LDSM.x4, predicted from the layouts and from the compiled "
              "addresses); stores conflict-free", ldmatrix_conflict_free, target="sm_90"),
        Check("plain_costs_wavefronts", "sm_90, at the course's tile: the plain layout compiles to the same memory "
              "instructions (+16 PRMT) at 16 wavefronts per LDSM", plain_costs_wavefronts, target="sm_90"),
        Check("config_fits", "your CONFIG, compiled for sm_80, sm_86, sm_89, sm_90, sm_100 and sm_120, fits one SM "
              "with no spills", KERNEL.config_fits(("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")),
              target="sm_90"),
        Check("host_model", "in the host model (no GPU, at the course's tile): C exact on odd shapes, each element "
              "written once, every read inside A and B", model),
        *(facts_check(f"staged_{t}", t, compiled_bf16, STAGED, num_warps=NUM_WARPS, what="bf16 at the course's tile")
          for t in AMPERE_ADA_RTX50),
    ],
    correctness=[
        Check("gemm_correct", "matmul is within tolerance on odd shapes, bf16 and fp16, swizzled and plain (one "
              "launch first in a process of its own, so a hang is reported, not waited for)", gemm_correct, gpu=True),
        Check("refuses_wrong_inputs", "matmul refuses fp32 inputs, a mismatched K and a non-contiguous A with a "
              "message; M, N or K = 0 gives what torch.matmul gives", refuses_wrong_inputs, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck, racecheck and synccheck find nothing on a 129×257×200 "
              "launch", sanitizer_clean, gpu=True),
    ],
    figures=[
        Figure("bf16_8192", "bf16 8192³, swizzled", gemm_measure(8192, 8192, 8192, "bf16", "v2 bf16 8192³"),
               _speed("bf16_8192"), headline=True),
        Figure("fp16_8192", "fp16 8192³, swizzled", gemm_measure(8192, 8192, 8192, "fp16", "v2 fp16 8192³"),
               _speed("fp16_8192")),
        Figure("bf16_4096", "bf16 4096³, swizzled", gemm_measure(4096, 4096, 4096, "bf16", "v2 bf16 4096³"),
               _speed("bf16_4096")),
        Figure("plain_bf16_8192", "bf16 8192³, plain shared layout",
               gemm_measure(8192, 8192, 8192, "bf16", "v2 plain bf16 8192³", swizzled=False),
               _speed("plain_bf16_8192", WHY_PLAIN)),
        Figure("ldsm_wavefronts_swizzled", "ncu: wavefronts per LDSM, swizzled", ldsm_figure("swizzled"),
               _waves(3.8, 4.3, 4.0)),
        Figure("ldsm_wavefronts_plain", "ncu: wavefronts per LDSM, plain", ldsm_figure("plain"),
               _waves(15.0, 17.0, 16.0)),
    ],
)
