"""Lesson 34's checks: the quantizer on the CPU (its conversions made non-saturating); in the sm_90 machine code of your
CONFIG, fp8 wgmma (QGMMA) in the K loop and the scales applied once per tile after it, each scale's load bounded by its
own dimension; the launcher's plan and the kernel in the host model, C against the scaled product in every scale mode;
the course's tile's exact resources; the Blackwell variant's tcgen05 fp8 products (sm_100, compiled only); the
small-batch path (swap-AB, split-K in a fixed order) in the host model, in the sm_90 listing and in its plan; on a GPU,
correctness on odd shapes with each operand's scale per tensor or per row (the mixed modes too), the refusals, the
small-batch path's correctness, and the figures against torch._scaled_mm and lesson 19's bf16 kernel."""
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks
from gluon_course.grading import tma_gemm
from gluon_course.grading.counts import mismatch
from gluon_course.grading.gemm_kernel import fits
from gluon_course.nvidia import fp8, fp8_small_m
from gluon_course.nvidia.kept_plans import KeptLauncher, kept_plans_check
from gluon_course.nvidia.launch import DESCRIPTORS_KEPT, PLANS_KEPT

TILE = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "num_warps": 8, "STAGES": 3, "GROUP_M": 8, "LOAD_REGS": 40}
SCALES = {"per-row scales": (True, True), "per-tensor scales": (False, False)}
# The course's tile on sm_90 (Triton 3.9.0): lesson 19's 168 registers and 213164 shared bytes (3 slots of 16 + 32 KiB,
# C's 64 KiB tile, the barriers), for both kinds of scales.
REGISTERS, SHARED_BYTES = 168, 213164
# The consumers' K loop, as lesson 19's: one slot wait, one wgmma fence, one wait of depth 1, one release; no copy.
CONSUMER_LOOP = {"WARPGROUP.ARRIVE": 1, "WARPGROUP.DEPBAR.LE": 1, "SYNCS.PHASECHK.TRANS64.TRYWAIT": 1,
                 "SYNCS.ARRIVE.TRANS64.A1T0": 1, "UTMALDG.2D": 0, "FMUL": 0, "LDG.E": 0, "LDG.E.64": 0}
HINTS = {"FMUL": ("", "the K loop multiplies: the scales belong after it, once per tile (every product of a sum shares "
                  "its row's and its column's scale)"),
         "LDG.E": ("", "the K loop reads global memory with the threads: a scale loaded per K step")}


def _cfg(mod):
    return {**TILE, **getattr(mod, "CONFIG", {})}


def _shape_of(cfg):
    """(QGMMA opcode, per K step, FMUL per tile) for a configuration: each warpgroup's instruction is 64 rows × BLOCK_N
    (up to 256) × 32 of K; a thread holds BLOCK_M·BLOCK_N / (32·num_warps) accumulators and multiplies each by two
    scales."""
    warps = cfg["num_warps"]
    n = min(cfg["BLOCK_N"], 256)
    per_step = (cfg["BLOCK_M"] // (16 * warps)) * (cfg["BLOCK_N"] // n) * (cfg["BLOCK_K"] // 32)
    return fp8.QGMMA.format(n=n), per_step, 2 * cfg["BLOCK_M"] * cfg["BLOCK_N"] // (32 * warps)


def _compiled(mod, scales, cfg=None):
    a_row, w_row = SCALES[scales]
    return fp8.compile_fp8(mod, cfg or _cfg(mod), "sm_90", a_row, w_row)


def fp8_k_loop(mod):
    """Your CONFIG: QGMMA (fp8 wgmma) in the K loop, BLOCK_K/32 per warpgroup and K step, every QGMMA of the kernel
    there, no HGMMA, lesson 19's consumer loop around them (its wait of depth 1), nothing scaled or loaded there."""
    cfg = _cfg(mod)
    opcode, per_step, _ = _shape_of(cfg)
    for scales in SCALES:
        k = _compiled(mod, scales)
        ops = k.opcodes()
        if any(op.startswith("HGMMA") for op in ops):
            return f"{scales}: HGMMA in the kernel: 16-bit products; the operands must stay e4m3 (gl.float8e4nv)"
        if not any(op.startswith("QGMMA") for op in ops):
            return f"{scales}: no QGMMA (fp8 wgmma) at all; the products must come from warpgroup_mma on e4m3 tiles"
        loop = k.opcodes_between(*k.loop_holding("QGMMA"))
        want = {**CONSUMER_LOOP, opcode: per_step}
        problem = mismatch({op: loop.get(op, 0) for op in want}, want, f"in the consumers' K loop ({scales})",
                           why=HINTS)
        if problem:
            return problem
        every = {op: n for op, n in ops.items() if op.startswith("QGMMA")}
        if every != {opcode: per_step}:
            return f"{scales}: {every}; expected {per_step} × {opcode}, all in the K loop"
        problem = tma_gemm.wait_depth_problem(k, in_loop=1, after=0, who=f"the consumers' K loop ({scales})",
                                              mma="QGMMA")
        if problem:
            return problem
    return None


def _scale_loads(k):
    """The kernel's loads by the threads (the scales: A's and W's tiles come by TMA), each with its mask's bounds."""
    return [m for m in k.masks() if m["op"] == "load"]


def scales_in_epilogue(mod):
    """Your CONFIG: after the K loop, two FMUL per accumulator element (A's scale, W's); per-row scales read once per
    tile, A's masked by rows < M and W's by columns < N, exactly; per-tensor scales by two unmasked loads."""
    cfg = _cfg(mod)
    _, _, fmul = _shape_of(cfg)
    for scales, (a_row, _) in SCALES.items():
        k = _compiled(mod, scales)
        first, last = k.loop_holding("QGMMA")
        inside = k.opcodes_between(first, last)
        if inside.get("FMUL", 0) or any(op.startswith("LDG") for op in inside):
            return (f"{scales}: the K loop holds {inside.get('FMUL', 0)} FMUL and "
                    f"{sum(n for op, n in inside.items() if op.startswith('LDG'))} loads: the scales are applied in "
                    "the loop, once per K step; they belong after it, once per tile")
        got = k.count("FMUL")
        if got != fmul:
            return (f"{scales}: {got} FMUL in the kernel; expected {fmul}, two per accumulator element a thread holds "
                    f"({fmul // 2}): A's scale and W's, once per tile")
        loads = _scale_loads(k)
        if not a_row:
            masked = [m for m in loads if m["masked"]]
            if masked:
                return f"{scales}: {len(masked)} masked loads; a per-tensor scale is one element, read without a mask"
            continue
        bounds = sorted(tuple(sorted(m["bounds"])) for m in loads if m["masked"])
        if bounds != [("M",), ("N",)]:
            return (f"{scales}: the scale loads are bounded by {bounds or 'nothing'}; expected one by M (A's scale, one "
                    "per row of C: rows < M) and one by N (W's, one per column of C: columns < N)")
        for m in loads:
            (arg, offsets), = m["bounds"].items()
            if any(o != 0 for o in offsets):
                return (f"{scales}: a scale's mask bounds its indices by < {arg} {'+' if max(offsets) > 0 else '-'} "
                        f"{abs(max(offsets, key=abs))}; the bound is < {arg}")
    return None


def resources(mod):
    for scales in SCALES:
        problem = _compiled(mod, scales, TILE).resource_mismatch(REGISTERS, SHARED_BYTES)
        if problem:
            return f"{scales}: {problem}"
    return None


def config_fits(mod):
    cfg = _cfg(mod)
    shown = ", ".join(f"{key}={value}" for key, value in cfg.items())
    for scales in SCALES:
        k = _compiled(mod, scales)
        problem = fits(k, cfg["num_warps"], cfg) or tma_gemm.register_split_problem(k, cfg["num_warps"],
                                                                                    cfg["LOAD_REGS"])
        if problem:
            return f"CONFIG ({shown}), {scales}: {problem}"
    return None


def quantizer(mod):
    return fp8.quantizer_problem(mod.quantize)


# -- Blackwell (sm_100): blackwell_matmul_kernel, compiled here, never run -----------------------------

BW_TILE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "STAGES": 3, "num_warps": 4}
# Triton 3.9.0 on sm_100: tcgen05.mma of kind f8f6f4 is UTCQMMA (UTCHMMA is the 16-bit one); K 32 each, so 4 per K step
# of 128, the first with the step's accumulate predicate, the rest UPT; one commit (UTCBAR) per step; the accumulator's
# 128 columns of TMEM read back by one LDTM.x128; no QGMMA or HGMMA.
BW_PER_STEP = 4
BW_TCGEN05 = {"UTCQMMA": 4, "UTCBAR": 1, "LDTM.x128": 1, "UTCATOMSWS.FIND_AND_SET.ALIGN": 2, "UTCATOMSWS.AND": 1}


def tcgen05_fp8(mod):
    k = fp8.compile_fp8(mod, BW_TILE, "sm_100", True, True, name="blackwell_matmul_kernel")
    ops = k.opcodes()
    hopper = {op: n for op, n in ops.items() if op.startswith(("HGMMA", "QGMMA", "WARPGROUP."))}
    if hopper:
        return f"{hopper} in an sm_100 kernel: wgmma is Hopper's instruction; Blackwell's is tcgen05_mma"
    if not ops.get("UTCQMMA"):
        return "no UTCQMMA (tcgen05.mma on fp8) at all: the products must come from tcgen05_mma on the e4m3 tiles"
    first, last = k.loop_holding("UTCQMMA")
    loop = k.opcodes_between(first, last)
    problem = mismatch({op: loop.get(op, 0) for op in ("UTCQMMA", "UTCBAR", "FMUL", "FMUL2")},
                       {"UTCQMMA": BW_PER_STEP, "UTCBAR": 1, "FMUL": 0, "FMUL2": 0}, "in the K loop (sm_100)")
    if problem:
        return problem
    flags = [i.text.rsplit(",", 1)[1].strip() for i in k.instructions()
             if i.opcode == "UTCQMMA" and first <= i.address <= last]
    if flags[0] == "UPT" or any(f != "UPT" for f in flags[1:]):
        return (f"the products' accumulate flags are {flags}; expected a predicate on the first of the step and UPT on "
                "the others: tensor memory is allocated without a value, so a tile's first product must overwrite it "
                "(use_acc=False on the first K step) and every later one add to it")
    problem = mismatch({op: n for op, n in ops.items() if op.startswith(("UTC", "LDTM"))}, BW_TCGEN05,
                       "in the whole kernel (tcgen05 instructions, sm_100)")
    if problem:
        return problem
    if k.spills:
        return f"sm_100: {k.spills} bytes of spills at 128 × 128 × 128 on 4 warps; expected none"
    return None


def _kept(mod):
    """matmul's plans (kept by the toolkit's code, gluon_course.nvidia.launch) as the toolkit's checks drive them: A,
    W, their per-row scales and C; TMA reads A and W and writes C."""
    import torch

    def operands(M, N, K, dtype=None):
        return (*fp8.fp8_inputs(M, N, K, per_row=True, device="cpu"), torch.empty(M, N, dtype=torch.bfloat16))
    return KeptLauncher(operands=operands, tma={"A": 0, "W": 1, "C": 4}, plan=lambda args: mod.plan(*args),
                        plans=lambda: mod._PLANS, plans_kept=PLANS_KEPT, descriptors_kept=DESCRIPTORS_KEPT)


kept_plans = kept_plans_check(_kept)        # lesson 31's checks of plans and descriptors (nvidia.kept_plans)


# -- on a GPU ------------------------------------------------------------------------------------------

def correct(mod):
    import json

    from gluon_course.measure.isolated import check_in_child

    return check_in_child(f"{fp8.__file__}:correct_here", [mod.__file__, json.dumps([list(s) for s in fp8.FP8_SHAPES])],
                          timeout=2 * tma_gemm.CHILD_LIMIT_S)


def launcher_refuses(mod):
    import torch

    from gluon_course.grading.gemm import refuses

    a, w, sa, sw = fp8.fp8_inputs(129, 136, 1024, per_row=True)
    b_kn = w.t().contiguous()                                   # K × N: its transpose is W, but N-major
    a_k, w_k, _, _ = fp8.fp8_inputs(129, 136, 1000, per_row=False)
    w_n, _, _, _ = fp8.fp8_inputs(132, 8, 1024, per_row=False)
    return refuses({
        "bf16 operands": (lambda: mod.matmul(a.to(torch.bfloat16), w.to(torch.bfloat16), sa, sw), TypeError,
                          ("quantize",)),
        "e5m2 operands": (lambda: mod.matmul(a.to(torch.float8_e5m2), w.to(torch.float8_e5m2), sa, sw), TypeError,
                          ("e4m3",)),
        "no scale for W": (lambda: mod.matmul(a, w, sa, None), TypeError, ("missing",)),
        "A's scale of M + 1 elements": (lambda: mod.matmul(a, w, torch.ones(130, device="cuda"), sw), ValueError,
                                        ("129",)),
        "an fp16 scale": (lambda: mod.matmul(a, w, sa.half(), sw), TypeError, ("fp32",)),
        "W given N-major (the transpose of a K × N matrix)": (lambda: mod.matmul(a, b_kn.t(), sa, sw), ValueError,
                                                              ("K-major", "contiguous")),
        "K = 1000 (not a multiple of 16)": (lambda: mod.matmul(a_k, w_k, sa[:1], sw[:1]), ValueError, ("16", "Pad")),
        "N = 132 (not a multiple of 8)": (lambda: mod.matmul(w_n[:8], w_n, sa[:1], sw[:1]), ValueError, ("8",)),
        "W of another K": (lambda: mod.matmul(a, w[:, :512], sa, sw), ValueError, ("N × K",)),
    })


# -- figures -----------------------------------------------------------------------------------------

# Lesson 32's model shapes with M ≥ 2048 (measure.gemm.MODEL_SHAPES): attention's projection, the MLP's up/gate and
# down, and the fused q/k/v at a prefill of 8192 tokens.
SWEEP = ((2048, 4096, 4096), (8192, 14336, 4096), (8192, 4096, 14336), (8192, 6144, 4096))
PROVISIONAL = ("no clean run of this kernel yet: the range is provisional, set from what fp8 on Hopper allows, to be "
               "redrawn around the first clean run (grading.gemm.around_first_run)")
LIBRARY = ("torch._scaled_mm (cuBLASLt) on the same fp8 inputs in the same process, with use_fast_accum=True: the "
           "library's accumulation without promotion, which is what Triton 3.9.0's fp8 wgmma does on sm_90 "
           "(max_num_imprecise_acc_default = 2**30); interleaved pairs, the median pair's ratio. A probe on an H200 "
           "(2026-12-01, per-tensor scales, bf16 out) timed torch._scaled_mm at 1269 TFLOPS at 8192³, 1.65–1.85× bf16 "
           "cuBLAS")


def _versus_library(low, high, why, target):
    return Expectation(low, high, "torch._scaled_mm", f"{why}; {PROVISIONAL}", unit="× torch._scaled_mm",
                       target=CourseTarget(target, why="the course's target for fp8: at least torch._scaled_mm"))


SMALL_M_LIBRARY = (LIBRARY + "; the geomean of 9 shapes, M ∈ {16, 128, 512} on three weight shapes (8192 × 8192, "
                   "14336 × 4096, 4096 × 14336), matmul with no configuration: the small-batch path at the cost "
                   "model's pick")


CHECKS = LessonChecks(
    targets=("sm_90", "sm_100"),
    teaches="fp8 (e4m3) operands through wgmma: quantization with per-tensor and per-row scales from the amax, "
            "saturated at 448; the scales applied once per tile in the epilogue; both operands K-major; BLOCK_K 128",
    machine_code=[
        Check("quantizer", "quantize (on the CPU): e4m3 out, an fp32 scale per tensor or per row mapping the amax to "
              "448, every value one e4m3 rounding from x, a zero row kept zero, values past a given scale's range "
              "clamped to ±448 before the conversion (which the check makes give NaN past the range, as torch's did "
              "before 2.12)", quantizer),
        Check("fp8_k_loop_sm_90", "sm_90, your CONFIG: fp8 wgmma (QGMMA 64×BLOCK_N×32, E4M3 × E4M3 into F32) in the "
              "consumers' K loop, BLOCK_K/32 per warpgroup and step, lesson 19's loop around them, no scale or load "
              "in it (per-row and per-tensor scales)", fp8_k_loop, target="sm_90"),
        Check("scales_in_epilogue_sm_90", "sm_90, your CONFIG: the scales applied after the K loop, two FMUL per "
              "accumulator element; per-row scales loaded once per tile, A's bounded by rows < M, W's by columns < N",
              scales_in_epilogue, target="sm_90"),
        Check("host_model", "in the host model (no GPU): your plan's launch and your kernel's own code at your CONFIG on "
              "3 programs, on odd shapes (tails past every tile edge) with A's and W's scales per tensor, per row and "
              "mixed: C within the GPU check's bound of the scaled product (A's scale per row of C, W's per column), "
              "no scale read past its end, each element of C written once", fp8.host_model_problem),
        Check("resources_sm_90", f"sm_90, at the course's tile 128×256×128 (8 consumer warps, STAGES 3): {REGISTERS} "
              f"registers, no spills, {SHARED_BYTES} shared bytes", resources, target="sm_90"),
        Check("config_fits", "your CONFIG, compiled for sm_90: fits one SM with no spills, register reallocation kept "
              "(the producer at LOAD_REGS)", config_fits, target="sm_90"),
        Check("tcgen05_fp8_sm_100", "sm_100, blackwell_matmul_kernel at 128×128×128 (4 warps): 4 UTCQMMA (tcgen05 fp8) "
              "and one commit per K step, the first product overwriting TMEM, no wgmma, no multiply in the K loop, no "
              "spills", tcgen05_fp8, target="sm_100"),
        Check("small_m_host_model", "the small-batch path in the host model (no GPU): SmallMPlan's launch and "
              "small_m_kernel's own code on 3 programs, swap-AB and lesson 34's orientation, unsplit and K split 2 and "
              "3 ways, at odd M from 1 to 511 with one operand's scales per row and the other's per tensor (both ways "
              "round): C within fp8's bound, no scale read past its end, each element of C written once, split-K's "
              "counters back at 0 after each of two calls", fp8_small_m.host_model_problem),
        Check("small_m_same_bits", "split-K in the host model: C's fp32 bits the same with the programs run in three "
              "orders (the last unit to arrive at a tile its last slice's, its first's, one between), under swap-AB "
              "and not", fp8_small_m.same_bits_problem),
        Check("small_m_sm_90", "sm_90, small_m_kernel at the cost model's picks (swap-AB 64×16 unsplit, swap-AB "
              "64×128 split 2 ways) and a 128×128 tile split 4 ways, scales per tensor and per row: QGMMA 64×BLOCK_N "
              "in the K loop only, no spills, no serialized wgmma; split, the slice stored, the barrier, the release "
              "and the atomic in that order, the slices read from L2, the counter reset", fp8_small_m.compile_problem,
              target="sm_90"),
        Check("small_m_plan", "SmallMPlan, given no configuration, takes the cost model's pick "
              "(gluon_course.nvidia.fp8_small_m) at odd shapes from M = 1 to 511; it refuses, with a sentence, a "
              "split whose slices of K are shorter than the ring or empty (host code, CPU tensors)",
              fp8_small_m.plan_problem),
        Check("kept_plans", "matmul keeps its plans as lesson 31 does: a plan per signature, found again at any "
              "address, built afresh for another shape or row stride and for a view of A, W or C at every offset TMA "
              "refuses (each refused with TMA's rule); descriptors kept by address, not by Python object, holding no "
              "tensor; at most PLANS_KEPT plans and DESCRIPTORS_KEPT sets a plan, the oldest going first (host code, "
              "CPU tensors)", kept_plans),
    ],
    correctness=[
        Check("correct_fp8_shapes", "matmul is correct on odd shapes (K multiples of 16, N of 8, tails past every "
              "tile edge, several tiles per program), with per-tensor and per-row scales, within the bound of "
              "gluon_course.nvidia.fp8 (poisoned, guarded C; a child process with a time limit)", correct, gpu=True),
        Check("correct_small_m", "the small-batch path is correct on odd shapes from M = 1 to 300 (swap-AB 64×16, "
              "swap-AB 64×128 and 128×64 split 3 ways, 128×128, and matmul's dispatch), scales per tensor, per row and "
              "mixed, within fp8's bound; split-K's bits the same on a second call; matmul with no configuration takes "
              "it at M ≤ 512 and not at 513 (a child process with a time limit)", fp8_small_m.correct, gpu=True),
        Check("launcher_refuses", "the launcher refuses bf16 and e5m2 operands, a missing scale, a scale of the wrong "
              "size or dtype, an N-major W, K not a multiple of 16, N not a multiple of 8 and a W of another K, with "
              "sentences", launcher_refuses, gpu=True),
    ],
    figures=[
        Figure("fp8_8192", "fp8 8192³, per-tensor scales", fp8.fp8_measure(8192, 8192, 8192),
               _versus_library(0.5, 1.5, LIBRARY, 1.0), headline=True),
        Figure("fp8_8192_per_row", "fp8 8192³, per-row scales",
               fp8.fp8_measure(8192, 8192, 8192, per_row=True), _versus_library(0.5, 1.5, LIBRARY, 1.0)),
        Figure("sweep_fp8", "fp8, 4 model shapes, geomean",
               fp8.fp8_sweep_measure(SWEEP), _versus_library(0.5, 1.5, LIBRARY + "; the geomean of 4 shapes", 1.0)),
        Figure("over_bf16_v9", "fp8 over bf16 v9, 8192³", fp8.over_bf16_measure("19"),
               Expectation(1.0, 2.2, "bf16 v9", "lesson 19's kernel at its CONFIG on the same values in bf16 (W as "
                           "w.t()), timed in pairs in the same process. Hopper's fp8 tensor cores do twice the products "
                           f"per cycle of bf16, so 2× is the ceiling and a correct kernel beats 1×; {PROVISIONAL}",
                           unit="× bf16 v9", target=CourseTarget(1.6, why="the course's target: ≥ 1.6× its bf16 "
                                                                          "kernel, as cuBLASLt's fp8 is 1.65–1.85× "
                                                                          "bf16 cuBLAS"))),
        Figure("small_m", "fp8 M ≤ 512, 9 shapes, geomean", fp8.fp8_sweep_measure(fp8_small_m.FIGURE_SHAPES),
               Expectation(0.5, 1.5, "torch._scaled_mm", f"{SMALL_M_LIBRARY}; {PROVISIONAL}",
                           unit="× torch._scaled_mm",
                           target=CourseTarget(0.9, why="the course's target for small batches: at least 0.90× "
                                                        "torch._scaled_mm at M = 16, 128 and 512"))),
        Figure("error_8192", "fp8 8192³, error of the bound",
               fp8.error_measure(8192, 8192, 8192),
               Expectation(None, 1.0, "the bound", "the largest |C − ref| over its element's bound (nvidia.fp8: 2^-8 of "
                           "|ref| for bf16's rounding, 2^-9 of ‖a_i‖·‖w_j‖ for the accumulation), ref the fp64 "
                           "product of the dequantized inputs; at most 1 for a correct kernel, and torch._scaled_mm's "
                           "fraction in the details for comparison", unit="of the bound")),
    ],
)
