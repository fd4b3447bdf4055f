"""Lesson 19's checks: the TMA-store epilogue in the machine code of sm_90 (the tile written to shared memory by
stmatrix, fenced, stored by one UTMASTG; no plain stores of C), both layouts of B, both configurations fitting an
SM, the host model (the store's wait and fence included), correctness and hang protection on a GPU, and the figures
against cuBLAS, lesson 18 and plain Triton on the sweep."""
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks
from gluon_course.grading import tma_gemm
from gluon_course.grading.counts import mismatch
from gluon_course.grading.gemm import from_trial, gemm_measure, speedup_over, sweep_measure
from gluon_course.grading.gemm_kernel import GemmKernel
from gluon_course.model.gemm import store_overlaps_next_tile

TILE = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "STAGES": 3, "GROUP_M": 8, "num_warps": 8, "LOAD_REGS": 40}


def _programs(M, N, cfg, sms):
    return min(-(-M // cfg["BLOCK_M"]) * -(-N // cfg["BLOCK_N"]), sms)


def _kernel(b_kn: bool, tile=TILE) -> GemmKernel:
    return GemmKernel("tma_store", fixed=tile, extra_tile_keys=("STAGES", "GROUP_M", "LOAD_REGS"), grid=_programs,
                      constexprs=lambda mod, cfg, dtype: {**mod.kernel_layouts(cfg["num_warps"], cfg["BLOCK_N"]),
                                                          "B_KN": b_kn})


KERNEL = _kernel(True)                       # B K × N row-major
KERNEL_NK = _kernel(False)                   # B the transpose of an N × K row-major matrix (nn.Linear's weights)

# What the pinned Triton 3.9.0 emits on sm_90 for this tile, bf16 and fp16 alike.
# The epilogue: C's 128 × 256 tile leaves the accumulator by 16 stmatrix.x4 per thread (STSM.16.M88.4) into the
# NVMMA-swizzled c_smem, one proxy fence (FENCE.VIEW.ASYNC.S) before TMA reads it, one UTMASTG.2D and its flush
# (UTMACMDFLUSH); the waits for it are the two bulk-group waits (DEPBAR.LE SB0: store_wait before the next tile's
# write and at the end). No STG: C is never stored by the threads.
EPILOGUE = {"STSM.16.M88.4": 16, "UTMASTG.2D": 1, "UTMACMDFLUSH": 1, "FENCE.VIEW.ASYNC.S": 2, "DEPBAR.LE": 2,
            "STG.E": 0}
# B's tiles: K × N, a 64 × 256 tile is 4 boxes of 64 columns (128-byte swizzling), and A's 1; N × K, B's 256 × 64
# tile is one box (64 elements wide already).
COPIES = {True: 5, False: 2}
CONSUMER_LOOP = {"WARPGROUP.ARRIVE": 1, "WARPGROUP.DEPBAR.LE": 1, "SYNCS.PHASECHK.TRANS64.TRYWAIT": 1,
                 "BAR.SYNC.DEFER_BLOCKING": 1, "SYNCS.ARRIVE.TRANS64.A1T0": 1, "UTMALDG.2D": 0}
REGISTERS = 168
# 3 slots × 48 KiB (147456) + C's tile (65536) + 6 barriers and what warp_specialize keeps.
SHARED_BYTES = 213164
NAMES = {"STSM.16.M88.4": "stmatrix (registers to shared memory)", "UTMASTG.2D": "a TMA store",
         "FENCE.VIEW.ASYNC.S": "a proxy fence", "DEPBAR.LE": "a bulk-group wait (tma.store_wait)",
         "STG.E": "a plain store of C"}
HINTS = {"FENCE.VIEW.ASYNC.S": ("fence_async_shared() is missing between c_smem.store and the TMA store", ""),
       "UTMASTG.2D": ("C's tile is not stored by TMA (tma.async_store)", ""),
       "STG.E": ("", "C is stored by the threads: the epilogue should go through c_smem and tma.async_store"),
       "DEPBAR.LE": ("a tma.store_wait is missing (before c_smem is written again, and at the end)", "")}


def compiled(mod, target="sm_90", dtype="bf16", b_kn=True):
    return (KERNEL if b_kn else KERNEL_NK).compile(mod, target, dtype)


def epilogue(mod):
    for dtype in ("bf16", "fp16"):
        k = compiled(mod, "sm_90", dtype)
        problem = mismatch({op: k.count(op) for op in EPILOGUE}, EPILOGUE, "in the whole kernel", dtype, NAMES, HINTS)
        if problem:
            return problem
    return None


def both_layouts_of_b(mod):
    """The same consumers for either B; the producer's copies per K step: 5 boxes (K × N) or 2 (N × K)."""
    for b_kn, copies in COPIES.items():
        k = compiled(mod, b_kn=b_kn)
        loop = k.opcodes_between(*k.loop_holding("HGMMA"))
        want = {**CONSUMER_LOOP, "HGMMA.64x256x16.F32.BF16": 4}
        what = "B K × N" if b_kn else "B as N × K"
        problem = mismatch({op: loop.get(op, 0) for op in want}, want, f"in the consumers' K loop ({what})")
        if problem:
            return problem
        problem = tma_gemm.wait_depth_problem(k, in_loop=1, after=0, who=f"the consumers' K loop ({what})")
        if problem:
            return problem
        if k.count("UTMALDG.2D") != copies:
            return (f"{what}: {k.count('UTMALDG.2D')} TMA box copies; expected {copies} (A's tile in one box, B's in "
                    f"{copies - 1})")
    return None


def resources(mod):
    return compiled(mod).resource_mismatch(REGISTERS, SHARED_BYTES)


def reallocation_of_config(mod):
    """The learner's CONFIG, both layouts of B: lesson 18's register reallocation kept (ptxas drops it when the
    consumers would be left too few), the producer's warpgroup at LOAD_REGS, the consumers at what that leaves them."""
    cfg = dict(mod.CONFIG)
    for kernel, what in ((KERNEL, "B K × N"), (KERNEL_NK, "B as N × K")):
        k = kernel.compile(mod, "sm_90", "bf16", cfg)
        problem = tma_gemm.register_split_problem(k, cfg["num_warps"], cfg["LOAD_REGS"])
        if problem:
            shown = ", ".join(f"{key}={value}" for key, value in cfg.items())
            return f"CONFIG ({shown}), {what}: {problem}"
    return None


def model(mod):
    for kernel, what in ((KERNEL, "B K × N"), (KERNEL_NK, "B as N × K")):
        problem = kernel.model_check(mod, sms=3, rule=store_overlaps_next_tile)
        if problem:
            return f"{what}: {problem}" if isinstance(problem, str) else problem
    return None


# -- on a GPU ------------------------------------------------------------------------------------

def correct_both_here(module_file: str, shapes: str) -> str | None:
    """Correct with B K × N and with B the transpose of an N × K matrix (for a child process)."""
    import json

    from gluon_course.course import load_module_file
    from gluon_course.measure.gemm import check_gemm

    mod = load_module_file(module_file)
    shapes = [tuple(s) for s in json.loads(shapes)]
    return (check_gemm(lambda a, b, c: mod.matmul(a, b, c), shapes=shapes)
            or check_gemm(lambda a, b, c: mod.matmul(a, b, c), shapes=shapes, b_layout="col"))


def correct(mod):
    import json

    from gluon_course.measure.isolated import check_in_child

    shapes = tma_gemm.TMA_SHAPES + tma_gemm.MANY_TILES
    return check_in_child(f"{__file__}:correct_both_here", [mod.__file__, json.dumps([list(s) for s in shapes])],
                          timeout=2 * tma_gemm.CHILD_LIMIT_S)


def launcher_refuses(mod):
    import torch

    from gluon_course.grading.gemm import refuses
    from gluon_course.measure.gemm import gemm_inputs

    a, _ = gemm_inputs(128, 128, 64, torch.bfloat16)
    b_strided = torch.randn(128, 256, device="cuda").to(torch.bfloat16)[::2, ::2]     # 64 × 128, strides (512, 2)
    return tma_gemm.launcher_refuses(mod) or refuses({
        "B with neither unit stride (a strided view)": (lambda: mod.matmul(a, b_strided), ValueError, ("w.t()",))})


def sanitizer_clean(mod):
    return tma_gemm.sanitizer_clean(mod, tma_gemm.PERSISTENT_SMALL, warp_specialized=True)


# -- figures -------------------------------------------------------------------------------------

WHY = "lesson 18's kernel with C's tile stored by TMA from shared memory while the next tile is computed"
TARGET = CourseTarget(1.0, why="the course's target for v9: the sweep's geomean ≥ 1.00× cuBLAS")
# The H200 trials of this kernel at its CONFIG (grading.gemm.TRIAL_RUN).
TRIAL = {"bf16_8192": (1.037, "v9 at CONFIG, 696 TFLOPS vs cuBLAS 672"),
         "fp16_8192": (1.021, "v9 fp16, 685 TFLOPS vs cuBLAS 666"),
         "bf16_8192_b_nk": (1.024, "v9 with B as N × K, 702 TFLOPS vs cuBLAS 686 (second trial)"),
         "bf16_4096": (0.991, "v9 at 4096³, 693 TFLOPS vs cuBLAS 699 (second trial)"),
         "vs_v8_bf16_8192": (1.072, "v9 1.037 over v8 0.967, both of cuBLAS in the first trial"),
         "sweep_bf16": (0.925, "v9's sweep in the first trial: geomean 0.925, worst 0.505 at 2048 × 2048 × 8192"),
         "over_triton_sweep": (0.988, "v9's sweep geomean 0.925 over plain Triton's 0.936")}


def _figure(key, title, M, N, K, dtype_name, headline=False, b_layout="row"):
    return Figure(key, title, gemm_measure(M, N, K, dtype_name, f"v9 {dtype_name}", b_layout=b_layout),
                  from_trial(TRIAL, key, WHY, tma_gemm.DESIGN_RUN), headline=headline)


CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="the epilogue through shared memory and `tma.async_store`, overlapped with the next tile (`store_wait` "
            "one tile later); B either K×N or N×K (weights); a tile per problem size, tuned on the sweep",
    machine_code=[
        Check("epilogue_sm_90", "sm_90, at the course's tile 128×256×64 (8 consumer warps, STAGES 3, LOAD_REGS 40): C "
              "leaves by 16 STSM into shared memory, a proxy fence, one UTMASTG.2D and two bulk-group waits; no STG "
              "(bf16 and fp16)", epilogue, target="sm_90"),
        Check("b_layouts_sm_90", "sm_90, at the course's tile: the same consumers' K loop for B K × N and B N × K, its "
              "wgmma wait of depth 1 (0 after it); the producer copies 5 boxes per K step (K × N) or 2 (N × "
              "K)", both_layouts_of_b, target="sm_90"),
        Check("resources_sm_90", f"sm_90, at the course's tile: {REGISTERS} registers at launch, no spills, "
              f"{SHARED_BYTES} shared bytes (3 slots and C's tile)", resources, target="sm_90"),
        Check("config_fits", "your CONFIG, compiled for sm_90, fits one SM with no spills",
              KERNEL.config_fits(("sm_90",)), target="sm_90"),
        Check("reallocation_of_config", "your CONFIG, compiled for sm_90 (both layouts of B): register reallocation "
              "kept (USETMAXREG with the consumers' count and the producer's), the producer's warpgroup at LOAD_REGS, "
              "the consumers at what the launch's registers leave them", reallocation_of_config, target="sm_90"),
        Check("host_model", tma_gemm.HOST_MODEL + "; C's shared buffer written only after the last store that "
              "read it, fenced before TMA reads it; each tile's store still running when the next tile's products "
              "start; both layouts of B", model),
    ],
    correctness=[
        Check("correct_tma_shapes", "matmul is correct on odd shapes with K, N multiples of 8, and on two with "
              "several tiles per program, with B K × N and with B the transpose of an N × K matrix (bf16 and fp16; "
              "poisoned, guarded C), all in a child process that must finish within 180 s", correct, gpu=True),
        Check("launcher_refuses", tma_gemm.REFUSALS + "; a B with neither unit stride", launcher_refuses, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck, racecheck and synccheck report nothing on a "
              "129×520×200 launch on 2 programs (3 tiles each)", sanitizer_clean, gpu=True),
    ],
    figures=[
        _figure("bf16_8192", "bf16 8192³", 8192, 8192, 8192, "bf16", headline=True),
        _figure("fp16_8192", "fp16 8192³", 8192, 8192, 8192, "fp16"),
        _figure("bf16_8192_b_nk", "bf16 8192³, B as N × K", 8192, 8192, 8192, "bf16", b_layout="col"),
        _figure("bf16_4096", "bf16 4096³", 4096, 4096, 4096, "bf16"),
        Figure("vs_v8_bf16_8192", "v9 over v8, bf16 8192³", speedup_over("18", "v8", "v9"),
               from_trial(TRIAL, "vs_v8_bf16_8192", "lesson 18's kernel timed in the same process (its own CONFIG: 4 "
                          "slots, C stored from registers)", ceiling="v8", unit="× v8", below=0.75,
                          target=CourseTarget(1.0, why="v9 at least as fast as v8"))),
        Figure("sweep_bf16", "bf16 sweep, geomean", sweep_measure("v9"),
               from_trial(TRIAL, "sweep_bf16", WHY + "; the geomean of the 7 sweep shapes", tma_gemm.DESIGN_RUN,
                          target=TARGET)),
        Figure("over_triton_sweep", "over plain Triton, sweep geomean", sweep_measure("v9", against="triton"),
               from_trial(TRIAL, "over_triton_sweep", "the course's plain-Triton kernel timed in the same process, per "
                          "shape; the geomean of the 7 shapes' ratios", ceiling="plain Triton", unit="× plain Triton",
                          below=0.75, target=CourseTarget(1.0, why="faster than plain Triton on the sweep"))),
    ],
)
