"""Lesson 11's checks: the operand layouts, mma.sync in the machine code of sm_90 and sm_100, the loads that feed
it, the masks; correctness and the sanitizer on a GPU; TFLOPS against cuBLAS, and what mma.sync itself reaches."""
import torch

from gluon_course.grading import Check, Figure, LessonChecks, Reference
from gluon_course.grading.classes import AMPERE_ADA_RTX50, MMA_SYNC_REACH, class_ranges
from gluon_course.grading.facts import Facts, facts_check
from gluon_course.grading.gemm import (around_first_run, empty_operands, gemm_class_ranges, gemm_masks_problem,
                                       gemm_measure, refuses)
from gluon_course.grading.gemm_kernel import GemmKernel, spill_sentence
from gluon_course.machine import compile_cached
from gluon_course.measure import Measurement
from gluon_course.measure.gemm import check_gemm, gemm_inputs, library_tflops
from gluon_course.measure.isolated import check_isolated, sanitizer_check
from gluon_course.memory.layouts import to_linear

TOOLS = ("memcheck",)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
# The opcode of one m16n8k16 mma.sync with fp32 accumulation, as the pinned Triton's ptxas spells it.
HMMA = {"bf16": "HMMA.16816.F32.BF16", "fp16": "HMMA.16816.F32"}

# What a launch of an 8192³ problem would see: every size and row stride a multiple of 16, the unit strides 1.
SIZES = ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")
UNIT_STRIDES = ("stride_ak", "stride_bn", "stride_cn")


def signature(dtype: str) -> dict:
    return {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{dtype}", **{name: "i32" for name in SIZES}}


def compiled(mod, target: str, dtype: str = "bf16", config: dict | None = None):
    """matmul_kernel compiled for ``target`` with the module's own layouts at the course's tile (COURSE_TILE; ``config``
    changes some of it), so that a learner's CONFIG cannot move the counts the checks assert: config_fits compiles
    the learner's CONFIG."""
    cfg = {**COURSE_TILE, **(config or {})}
    num_warps, warps_m = cfg.pop("num_warps"), cfg.pop("warps_m")
    acc_layout, a_layout, b_layout = mod.mma_layouts(num_warps, warps_m, DTYPES[dtype].itemsize)
    constexprs = {**cfg, "acc_layout": acc_layout, "a_layout": a_layout, "b_layout": b_layout,
                  **{name: 1 for name in UNIT_STRIDES}}
    return compile_cached(mod.matmul_kernel, target, signature=signature(dtype), constexprs=constexprs,
                          aligned=("a_ptr", "b_ptr", "c_ptr") + SIZES, num_warps=num_warps)


def _layouts(mod, cfg, dtype):
    acc_layout, a_layout, b_layout = mod.mma_layouts(cfg["num_warps"], cfg["warps_m"], DTYPES[dtype].itemsize)
    return {"acc_layout": acc_layout, "a_layout": a_layout, "b_layout": b_layout}


# The solution's CONFIG, the course's tile: what the launcher passes besides the tile is the three mma.sync layouts.
COURSE_TILE = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "warps_m": 2}
KERNEL = GemmKernel("pointer", constexprs=_layouts, fixed=COURSE_TILE)


def model(mod):
    return KERNEL.model_check(mod)


def compiled_peak(mod, target: str, dtype: str = "bf16"):
    """mma_peak_kernel at the course's tile (the solution's PEAK_CONFIG is its CONFIG)."""
    cfg = dict(COURSE_TILE)
    num_warps, warps_m = cfg.pop("num_warps"), cfg.pop("warps_m")
    acc_layout, a_layout, b_layout = mod.mma_layouts(num_warps, warps_m, DTYPES[dtype].itemsize)
    return compile_cached(mod.mma_peak_kernel, target,
                          signature={"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "out_ptr": "*fp32", "steps": "i32"},
                          constexprs={**cfg, "acc_layout": acc_layout, "a_layout": a_layout, "b_layout": b_layout},
                          aligned=("a_ptr", "b_ptr", "out_ptr"), num_warps=num_warps)


# bf16 on the GPUs before Hopper and on RTX 50, against sm_90 (whole kernel, the course's tile): the same mma.sync
# m16n8k16 (HMMA.16816.F32.BF16), the same loads and stores, no shared memory; 185 registers on sm_80, 168 elsewhere.
MMA_KERNEL = {
    target: Facts({"HMMA.16816.F32.BF16": 32, "LDG.E.64": 16, "LDG.E.U16": 32, "STG.E": 32}, registers=registers,
                  in_loops=("mma",))
    for target, registers in (("sm_90", 168), ("sm_80", 185), ("sm_86", 168), ("sm_89", 168), ("sm_120", 168))
}


def compiled_bf16(mod, target):
    return compiled(mod, target, "bf16")


# CONFIG: 128 × 64 × 32 tiles, 4 warps as 2 (along M) × 2 (along N); each warp owns 64 × 32 elements of C, in
# 16 × 8 blocks. Per warp and K-step: (64/16) × (32/8) × (32/16) = 32 mma.sync; per thread: its warp's 64 rows
# of A in 16 8-byte loads (k_width 4: four consecutive K elements each), 32 columns of B in 32 2-byte loads.
EXPECTED = {
    "mma_per_k_step": 32,
    "loads": {"LDG.E.64": 16, "LDG.E.U16": 32},
    "stores": {"STG.E": 32},
}


# -- CPU: the layouts --------------------------------------------------------------------------------

def operand_layouts(mod):
    """k_width must count 16-bit elements: 4 consecutive K elements (8 bytes) per thread and row, nothing held twice."""
    acc_layout, a_layout, b_layout = mod.mma_layouts(4, 2, 2)
    if list(acc_layout.version) != [2, 0] or list(acc_layout.instr_shape) != [16, 8] \
            or list(acc_layout.warps_per_cta) != [2, 2]:
        return (f"the accumulator layout is version {acc_layout.version}, instr_shape {acc_layout.instr_shape}, "
                f"warps_per_cta {acc_layout.warps_per_cta}; mma.sync (mma_v2) needs version [2, 0], instr_shape "
                "[16, 8], and here 4 warps as [2, 2] (warps_m=2 along M)")
    for name, layout, index, k_axis, shape in (("A", a_layout, 0, 1, [128, 32]), ("B", b_layout, 1, 0, [32, 64])):
        if layout.operand_index != index or layout.parent != acc_layout:
            return f"{name}'s layout must be operand {index} of the accumulator layout (parent=acc_layout)"
        if layout.k_width < 2:
            return (f"{name} has k_width={layout.k_width}: mma.sync reads its operands as 32-bit registers, so a "
                    "thread must hold at least 2 consecutive 16-bit elements along K (the compiler aborts on "
                    "'kWidth must be >= max(32 / bitwidth, 1)')")
        linear = to_linear(layout, shape)
        run = 1
        for basis in linear.reg_bases:
            if basis[k_axis] == run and basis[1 - k_axis] == 0:
                run *= 2
            else:
                break
        doubled = any(not any(basis) for basis in linear.reg_bases)
        if run != 4 or doubled:
            return (f"{name} (k_width={layout.k_width}) gives each thread {run} consecutive K elements"
                    f"{' and holds some elements twice' if doubled else ''}; k_width counts elements, and 8 bytes "
                    "of a 2-byte type is k_width=4: the 4 K elements one m16n8k16 takes from each thread and row")
    return None


# -- CPU: machine code -------------------------------------------------------------------------------

def _mma(target):
    def run(mod):
        for dtype in ("bf16", "fp16"):
            k = compiled(mod, target, dtype)
            want = {HMMA[dtype]: EXPECTED["mma_per_k_step"]}
            got = k.family("mma", "wgmma")
            if got != want:
                return f"{dtype}: tensor-core instructions {got}, expected {want}"
            inside = k.count_in_loops(k.family_pattern("mma"))
            if inside != want[HMMA[dtype]]:
                return f"{dtype}: {inside} of the {want[HMMA[dtype]]} {HMMA[dtype]} sit inside the K loop"
            if k.count_in_loops(k.family_pattern("fma")):
                return f"{dtype}: FFMA inside the K loop: the product is still computed on the CUDA cores"
        return None
    return run


def _loads(target):
    def run(mod):
        k = compiled(mod, target, "bf16")
        loads, stores = dict(k.global_loads()), dict(k.global_stores())
        if loads != EXPECTED["loads"] or stores != EXPECTED["stores"]:
            return (f"loads {loads}, stores {stores}; expected loads {EXPECTED['loads']} (A in 8-byte runs of K, "
                    f"B one element at a time), stores {EXPECTED['stores']}")
        inside = k.count_in_loops(k.family_pattern("global_load"))
        if inside != sum(loads.values()):
            return f"only {inside} of the {sum(loads.values())} global loads sit inside the K loop"
        moved = k.family("shared", "barrier", "shuffle")
        if moved or k.shared_bytes:
            return (f"{moved or ''} {k.shared_bytes} shared bytes: the operands must go from global memory straight "
                    "into the dot-operand layouts, with no conversion through shared memory").strip()
        return None
    return run


def no_spills(mod):
    for target in ("sm_90", "sm_100"):
        k = compiled(mod, target, "bf16")
        r = k.resources
        if k.spills:
            return f"{target}: {spill_sentence(k)}: the tile's registers do not fit, values go to local memory"
        if r["stack_bytes"] or r["local_stores"]:
            return (f"{target}: {k.registers} registers, a {r['stack_bytes']}-byte stack frame, {r['local_stores']} "
                    "STL (no spills): the kernel keeps values in local memory; every value should live in registers")
    return None


def masked_by_m_n_k(mod):
    """Each access's own mask: the loads by their K tail and rows < M or columns < N, the store by both edges."""
    return gemm_masks_problem(compiled(mod, "sm_90", "bf16"))


def peak_loop_is_pure_mma(mod):
    k = compiled_peak(mod, "sm_90")
    inside = k.count_in_loops(k.family_pattern("mma"))
    memory = k.count_in_loops(k.family_pattern("global_load", "global_store", "shared"))
    if inside != EXPECTED["mma_per_k_step"] or memory:
        return (f"mma_peak_kernel's loop holds {inside} HMMA and {memory} memory instructions; expected "
                f"{EXPECTED['mma_per_k_step']} HMMA and none")
    return None


# -- GPU ---------------------------------------------------------------------------------------------

def small_launch(module_file: str) -> None:
    """One small odd launch (129 × 257 × 200 bf16), in a child process (see gluon_course.measure.isolated)."""
    from gluon_course.course import load_module_file

    mod = load_module_file(module_file)
    a, b = gemm_inputs(129, 257, 200, torch.bfloat16)
    mod.matmul(a, b)
    torch.cuda.synchronize()


def exact_on_odd_shapes(mod):
    problem = check_isolated(f"{__file__}:small_launch", [mod.__file__])
    if problem:
        return problem
    return check_gemm(lambda a, b, c: mod.matmul(a, b, c))


def refuses_wrong_inputs(mod):
    a, b = gemm_inputs(64, 64, 64, torch.bfloat16)
    either = (TypeError, ValueError)
    return empty_operands(mod) or refuses({"fp32 inputs": (lambda: mod.matmul(a.float(), b.float()), either, ()),
                    "mismatched K": (lambda: mod.matmul(a, b[:32]), either, ()),
                    "a non-contiguous along its rows": (lambda: mod.matmul(a[:, ::2], b[:32]), either, ())})


def sanitizer_clean(mod):
    return sanitizer_check(f"{__file__}:small_launch", [mod.__file__], tools=TOOLS)


# -- figures -----------------------------------------------------------------------------------------

def mma_peak(mod):
    rate = mod.mma_peak_tflops()
    library = library_tflops(8192, 8192, 8192, torch.bfloat16)
    return Measurement(rate, f"{rate:.0f} TFLOPS (cuBLAS bf16 8192³: {library:.0f} TFLOPS)",
                       {"tflops": rate, "library_tflops": library})


DESIGN_RUN = (Reference(0.53, "of cuBLAS", "plain Triton tl.dot with DISABLE_MMA_V3=1 (mma.sync + cp.async) on the "
                        "H200, bf16 8192³: 361–411 TFLOPS = 0.53–0.59× cuBLAS, the course's design run, 2026-11-30 (a trial, not a recording)"),
              Reference(0.78, "of cuBLAS", "plain Triton tl.dot (wgmma) on the H200, bf16 8192³: 0.78–0.94× cuBLAS, "
                        "the course's design run, 2026-11-30 (a trial, not a recording); cuBLAS 672–706 TFLOPS in the design "
                        "runs of 2026-11-29 and 2026-11-30"))
WHY = ("mma.sync fed straight from global memory: no shared memory, A and B each loaded by two warps, B 2 bytes at "
       "a time, the loads of a K-step not overlapped with its mma.sync; far below Triton's own mma.sync kernel "
       "(shared memory + cp.async: 0.53–0.59× cuBLAS in the design run), five times lesson 10's CUDA cores")
WHY_PEAK = ("mma.sync on register-resident operands, nothing else in the loop: what the tensor cores give through "
            "mma.sync on this GPU; the H200's dense bf16 peak by the datasheet, about 990 TFLOPS, is reached only "
            "through wgmma (lesson 15)")
PEAK_REFERENCES = (Reference(990, "TFLOPS", "H200 SXM dense bf16 peak, NVIDIA's datasheet (wgmma)"),)
# The first clean run (grading.gemm.FIRST_RUN).
FIRST = {"bf16_8192": (0.1638, "118 TFLOPS vs cuBLAS 722"), "fp16_8192": (0.1743, "118 TFLOPS vs cuBLAS 678"),
         "bf16_4096": (0.1454, "106 TFLOPS vs cuBLAS 731")}


def _figure(key, title, M, N, K, dtype, headline=False):
    return Figure(key, title, gemm_measure(M, N, K, dtype, f"v1 {dtype} {M}×{N}×{K}"),
                  around_first_run(*FIRST[key], WHY, DESIGN_RUN,
                                   classes=gemm_class_ranges(FIRST[key], "mma.sync", below=0.3, above=1.25)),
                  headline=headline)


# mma.sync on register-resident operands reaches the tensor rate with fp32 accumulation on the GPUs before Hopper
# and on RTX 50 (mma.sync is their only tensor-core instruction), assumed at MMA_SYNC_REACH of it; in TFLOPS, so the
# range spans the small and the large GPUs of each class.
PEAK_FIRST_RUN = 635      # TFLOPS, the first clean run's mma_v2_peak on the H200
PEAK_CLASSES = class_ranges(
    lambda gpu: PEAK_FIRST_RUN if gpu.gpu_class == "sm_90" else MMA_SYNC_REACH * gpu.tensor_tflops,
    f"mma.sync is the tensor cores' own instruction before Hopper and on RTX 50, assumed to reach {MMA_SYNC_REACH:.0%} "
    "of the GPU's dense bf16 rate with fp32 accumulation (half rate on the GeForce parts); an absolute figure, so the "
    "range spans the class's small and large GPUs", below=0.6, above=1.2, shown="{:.0f} TFLOPS")


CHECKS = LessonChecks(
    targets=("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"),
    teaches="`mma_v2` (mma.sync) with `NVMMADistributedLayout` and `DotOperandLayout`, `k_width`, operands loaded "
            "from global memory straight into registers, and what mma.sync reaches on Hopper",
    machine_code=[
        Check("operand_layouts", "mma_layouts for the course's 4 warps (2 along M) and 2-byte elements: accumulator "
              "m16n8 over the warps; A and B with k_width 4 (8 bytes of K per thread and row)", operand_layouts),
        Check("mma_sm_90", f"sm_90, at the course's tile 128×64×32 (4 warps, 2 along M): {EXPECTED['mma_per_k_step']} "
              "HMMA.16816.F32.BF16 (bf16) / HMMA.16816.F32 (fp16) per K-step, all in the loop, no FFMA "
              "there", _mma("sm_90"), target="sm_90"),
        Check("loads_sm_90", "sm_90, at the course's tile: 16 × LDG.E.64 for A, 32 × LDG.E.U16 for B per K-step, 32 × "
              "STG.E for C; no shared memory", _loads("sm_90"), target="sm_90"),
        Check("mma_sm_100", "sm_100, at the course's tile: the same HMMA counts, all in the "
              "loop", _mma("sm_100"), target="sm_100"),
        Check("loads_sm_100", "sm_100, at the course's tile: the same loads and stores, no shared "
              "memory", _loads("sm_100"),
              target="sm_100"),
        Check("no_spills", "at the course's tile 128×64×32 the kernel fits in registers on sm_90 and sm_100 (no "
              "spills, no stack frame)", no_spills),
        Check("masked_by_m_n_k", "sm_90, at the course's tile: each load's mask bounds its K tail and its rows < M (A) "
              "or columns < N (B), the store's rows < M and columns < N", masked_by_m_n_k, target="sm_90"),
        Check("peak_loop_pure_mma", "sm_90, at the course's tile: mma_peak_kernel's loop holds only the "
              "HMMAs", peak_loop_is_pure_mma,
              target="sm_90"),
        Check("config_fits", "your CONFIG, compiled for sm_80, sm_86, sm_89, sm_90, sm_100 and sm_120, fits one SM "
              "with no spills", KERNEL.config_fits(("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")),
              target="sm_90"),
        Check("host_model", "in the host model (no GPU, at the course's tile): C exact on odd shapes, each element "
              "written once, every read inside A and B", model),
        *(facts_check(f"mma_{t}", t, compiled_bf16, MMA_KERNEL, num_warps=4, what="bf16 at the course's tile")
          for t in AMPERE_ADA_RTX50),
    ],
    correctness=[
        Check("exact_odd_shapes", "matmul is exact to the stated tolerance on odd shapes, bf16 and fp16 (poisoned, "
              "guarded C; one launch in a child process first)", exact_on_odd_shapes, gpu=True),
        Check("refuses_wrong_inputs", "matmul refuses fp32 inputs, a mismatched K and a non-contiguous A with a "
              "sentence; M, N or K = 0 gives what torch.matmul gives", refuses_wrong_inputs, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck finds nothing in a 129 × 257 × 200 launch",
              sanitizer_clean, gpu=True),
    ],
    figures=[
        _figure("bf16_8192", "bf16 8192³", 8192, 8192, 8192, "bf16", headline=True),
        _figure("fp16_8192", "fp16 8192³", 8192, 8192, 8192, "fp16"),
        _figure("bf16_4096", "bf16 4096³", 4096, 4096, 4096, "bf16"),
        Figure("mma_v2_peak", "mma.sync peak (registers only)", mma_peak,
               around_first_run(PEAK_FIRST_RUN, "635 TFLOPS (cuBLAS bf16 8192³: 722)", WHY_PEAK, PEAK_REFERENCES,
                                ceiling="mma.sync", unit="TFLOPS", classes=PEAK_CLASSES)),
    ],
)
