"""Lesson 10's checks: fp32 FFMAs (no tensor-core instruction) in the K loop on sm_90 and sm_100, the register
tile's cost in registers, the masks, correctness on odd shapes, a clean sanitizer run, and the figures against
cuBLAS with the FP32 FMA peak of the GPU recorded beside them."""
import re
import subprocess

import torch

from gluon_course.grading import Check, Figure, LessonChecks, Reference
from gluon_course.grading.classes import AMPERE_ADA_RTX50
from gluon_course.grading.facts import Facts, facts_check
from gluon_course.grading.gemm import (around_first_run, empty_operands, gemm_class_ranges, gemm_masks_problem,
                                       gemm_measure, refuses)
from gluon_course.grading.gemm_kernel import GemmKernel
from gluon_course.machine import compile_cached
from gluon_course.measure import Measurement
from gluon_course.measure.gemm import check_gemm, gemm_inputs
from gluon_course.measure.isolated import check_isolated, sanitizer_check

# The config every machine-code check compiles: the solution's CONFIG, fixed here so that the counts below
# stay what they are even if a learner experiments with CONFIG.
TILE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 8}
REGISTER_TILE = {"TILE_M": 8, "TILE_N": 8, "LANES_N": 4}
NUM_WARPS = 8
# What a launch on row-major 8192 × 8192 matrices sees: pointers 16-byte aligned, sizes and row strides
# multiples of 16, and the unit strides turned into the constant 1 (Triton does that to any integer equal to 1).
ALIGNED = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
UNIT_STRIDES = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}
DTYPES = ("bf16", "fp16")
# Accumulators times K values per step, divided over the 256 threads: 128 · 128 · 8 / 256 = 512 FMAs per thread.
FMAS_PER_THREAD_PER_K_STEP = TILE["BLOCK_M"] * TILE["BLOCK_N"] * TILE["BLOCK_K"] // (NUM_WARPS * 32)


def signature(dtype: str) -> dict:
    return {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{dtype}", "M": "i32", "N": "i32", "K": "i32",
            "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}


def _layouts(mod, cfg, dtype):
    acc_layout, a_layout, b_layout = mod.fma_layouts(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_warps"],
                                                     **{k: cfg[k] for k in REGISTER_TILE})
    return {"acc_layout": acc_layout, "a_layout": a_layout, "b_layout": b_layout}


# What the launcher passes besides the tile: the three layouts of the register tile (CONFIG's TILE_M, TILE_N, LANES_N).
KERNEL = GemmKernel("pointer", constexprs=_layouts, fixed={**TILE, **REGISTER_TILE, "num_warps": NUM_WARPS})


def compiled(mod, target: str, dtype: str = "bf16"):
    return KERNEL.compile(mod, target, dtype)


def model(mod):
    return KERNEL.model_check(mod)


# What the pinned Triton 3.9.0 emits, per target and dtype. In the K loop: the FMAs (sm_100 pairs them: one
# FFMA2 is two fp32 FMAs), the upcast of the 128 bf16/fp16 operands a thread loads per K-step (bf16 becomes
# fp32 by moving its 16 bits to the top of a 32-bit register: a shift, or on sm_100 also a multiply by 65536,
# after a byte permute for the upper one of each pair; fp16 needs a real conversion), and 16 16-byte loads.
# Then registers per thread (exact), and no spills, no shared memory anywhere.
EXPECTED = {
    ("sm_90", "bf16"): {"loop": {"FFMA": 512, "SHF.L.U32": 128, "PRMT": 64, "LDG.E.128": 16}, "registers": 177},
    ("sm_90", "fp16"): {"loop": {"FFMA": 512, "HADD2.F32": 128, "LDG.E.128": 16}, "registers": 193},
    ("sm_100", "bf16"): {"loop": {"FFMA2": 256, "SHF.L.U32": 85, "IMAD.U32": 43, "PRMT": 64, "LDG.E.128": 16},
                         "registers": 188},
    ("sm_100", "fp16"): {"loop": {"FFMA2": 256, "HADD2.F32": 128, "LDG.E.128": 16}, "registers": 190},
}
# bf16 on the GPUs before Hopper and on RTX 50, against sm_90 (whole kernel): the same 512 FFMA (no FFMA2 pairs there:
# sm_100 alone pairs them), 16 16-byte loads and 8 16-byte stores; between 177 and 205 registers, one block of 8 warps
# per SM.
FMA_KERNEL = {
    target: Facts({"FFMA": 512, "LDG.E.128": 16, "STG.E.128": 8}, registers=registers, in_loops=("fma",))
    for target, registers in (("sm_90", 177), ("sm_80", 191), ("sm_86", 205), ("sm_89", 205), ("sm_120", 185))
}


def compiled_bf16(mod, target):
    return compiled(mod, target, "bf16")


# Opcodes that would mean the work went elsewhere than fp32 FMAs on the CUDA cores.
NOT_EXPECTED = r"(HMMA|HGMMA|UTCHMMA|UTCQMMA|FMUL|FADD)\b"


def loop_counts(k, opcodes) -> dict:
    return {op: k.count_in_loops(rf"{op.replace('.', r'[.]')}$") for op in opcodes}


def fma_signature(target: str):
    def run(mod):
        for dtype in DTYPES:
            k = compiled(mod, target, dtype)
            want = EXPECTED[(target, dtype)]
            got = loop_counts(k, want["loop"])
            if got != want["loop"]:
                return (f"{dtype}: in the K loop {got}; expected {want['loop']} (512 fp32 FMAs per thread per K-step: "
                        f"an 8 × 8 register tile times BLOCK_K = 8)")
            stray = {op: n for op, n in k.opcodes().items() if re.match(NOT_EXPECTED, op)}
            if stray:
                return f"{dtype}: found {stray}; the products must be fp32 FMAs only (no tensor cores, no separate FMUL/FADD)"
            problem = k.resource_mismatch(want["registers"], 0)
            if problem:
                return f"{dtype}: {problem}"
        return None
    return run


def masks_m_n_k(mod):
    """Each access's own mask (TTGIR): A's and B's loads by their K tail and rows < M or columns < N, C's store by
    rows < M and columns < N, every bound exact."""
    return gemm_masks_problem(compiled(mod, "sm_90"))


def operands_broadcast(mod):
    """A's layout gives every thread its TILE_M rows × all BLOCK_K columns, shared by the lanes and warps along N."""
    from gluon_course.memory.layouts import register_budget

    _, a_layout, b_layout = mod.fma_layouts(TILE["BLOCK_M"], TILE["BLOCK_N"], NUM_WARPS, **REGISTER_TILE)
    a = register_budget(a_layout, [TILE["BLOCK_M"], TILE["BLOCK_K"]], element_bits=16)
    b = register_budget(b_layout, [TILE["BLOCK_K"], TILE["BLOCK_N"]], element_bits=16)
    # 8 rows × 8 k of bf16 = 32 registers per thread; 16 threads hold each element of A (4 lanes × 4 warps
    # along N), 16 each of B (8 lanes × 2 warps along M).
    if (a.registers_per_thread, b.registers_per_thread) != (32, 32):
        return (f"A takes {a.registers_per_thread} and B {b.registers_per_thread} registers per thread; expected 32 "
                "each (an 8 × 8 block of bf16: the thread's 8 rows of A or 8 columns of B, all 8 values of k)")
    return None


# ---- GPU checks ----

def small_launch(module_file: str) -> None:
    """One launch on an odd shape (129 × 257 × 200 bf16), run in a child process by the checks below."""
    import os

    from gluon_course.course import load_module_file

    # memcheck sees only what cudaMalloc handed out; PyTorch's caching allocator carves tensors out of larger
    # blocks, so a write just past C would land in memory the tool counts as valid. One allocation per tensor.
    os.environ.setdefault("PYTORCH_NO_CUDA_MEMORY_CACHING", "1")
    mod = load_module_file(module_file)
    a, b = gemm_inputs(129, 257, 200, torch.bfloat16)
    mod.matmul(a, b)
    torch.cuda.synchronize()


def correct_on_odd_shapes(mod):
    # First in a child process under a time limit, so that a kernel that never finishes is reported, not waited on.
    problem = check_isolated(f"{__file__}:small_launch", [mod.__file__])
    return problem or check_gemm(lambda a, b, c: mod.matmul(a, b, c))


def launcher_refuses_bad_inputs(mod):
    a, b = gemm_inputs(64, 64, 64, torch.bfloat16)
    either = (TypeError, ValueError)
    problem = empty_operands(mod)
    if problem:
        return problem
    return refuses({
        "fp32 inputs": (lambda: mod.matmul(a.float(), b.float()), either, ()),
        "mismatched K": (lambda: mod.matmul(a, gemm_inputs(64, 64, 65, torch.bfloat16)[1]), either, ()),
        "a column-major A": (lambda: mod.matmul(a.t().contiguous().t(), b), either, ()),
        "BLOCK_M=96 (not a power of two)": (lambda: mod.matmul(a, b, BLOCK_M=96), either, ()),
    })


TOOLS = ("memcheck",)


def sanitizer_clean(mod):
    return sanitizer_check(f"{__file__}:small_launch", [mod.__file__], tools=TOOLS)


# ---- the ceiling in this version's own terms ----

# FP32 results per clock per SM, from the CUDA C++ Programming Guide's table of arithmetic instruction
# throughput ("32-bit floating-point add, multiply, multiply-add"), by compute capability.
FP32_LANES_PER_SM = {(8, 0): 64, (8, 6): 128, (8, 9): 128, (9, 0): 128, (10, 0): 128, (12, 0): 128}


def max_sm_clock_mhz() -> float | None:
    """The GPU's highest SM clock (nvidia-smi's clocks.max.sm), or None where nvidia-smi cannot say."""
    uuid = str(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "uuid", "") or "")
    if uuid and not uuid.startswith(("GPU-", "MIG-")):
        uuid = f"GPU-{uuid}"
    query = ["--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"]
    # First this GPU by its UUID; then, if that fails, whatever nvidia-smi lists (used only if it lists one GPU).
    for selector in ([f"--id={uuid}"] if uuid else []) + [None]:
        try:
            out = subprocess.run(["nvidia-smi", *([selector] if selector else []), *query], capture_output=True,
                                 text=True, timeout=20, check=True).stdout.split()
        except (OSError, subprocess.SubprocessError):
            continue
        if len(out) == 1:           # one GPU named, or only one GPU here
            try:
                return float(out[0])
            except ValueError:
                return None
    return None


def fma_peak() -> dict:
    """The FP32 FMA peak of this GPU: SMs × FP32 lanes per SM × 2 FLOP × the highest SM clock (None if unknown)."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    lanes = FP32_LANES_PER_SM.get((props.major, props.minor))
    clock = max_sm_clock_mhz()
    peak = None if lanes is None or clock is None else props.multi_processor_count * lanes * 2 * clock * 1e6 / 1e12
    return {"sm_count": props.multi_processor_count, "fp32_lanes_per_sm": lanes, "sm_clock_mhz": clock,
            "fma_peak_tflops": peak}


def fma_figure(M, N, K, dtype, label):
    """gemm_measure (a fraction of cuBLAS in the same run), with the FP32 FMA peak recorded in its details."""
    ratio = gemm_measure(M, N, K, dtype, label)

    def measure(mod):
        m = ratio(mod)
        peak = fma_peak()
        share = None if not peak["fma_peak_tflops"] else m.details["tflops"] / peak["fma_peak_tflops"]
        return Measurement(m.value, m.text, {**m.details, **peak, "fraction_of_fma_peak": share})
    return measure


WHY = ("fp32 FMAs on the CUDA cores cannot pass the GPU's FP32 FMA peak (an H200: 132 SMs × 128 lanes × 2 FLOP × "
       "1.98 GHz ≈ 67 TFLOPS, a tenth of what cuBLAS reaches in bf16 on its tensor cores), and only 512 of the 778 "
       "instructions of the K loop are FFMAs, which caps it near 44 TFLOPS (0.06× cuBLAS); loads that wait on "
       "memory with 8 warps per SM take more: the first run reached a third of the FMA peak")
REFERENCES = (
    Reference(66.9, "TFLOPS", "NVIDIA H200 FP32 FMA peak, 132 SMs × 128 FP32 lanes × 2 FLOP × 1980 MHz"),
    Reference(0.56, "of cuBLAS", "plain Triton tl.dot on the H200, bf16 8192³, DISABLE_MMA_V3=1 (mma.sync + "
              "cp.async): 361–411 TFLOPS = 0.53–0.59× cuBLAS, this course's design run, 2026-11-30 (a trial, not a recording)"),
    Reference(0.86, "of cuBLAS", "plain Triton tl.dot on the H200, bf16 8192³, default (wgmma): 0.78–0.94× cuBLAS, "
              "this course's design run, 2026-11-30 (a trial, not a recording); cuBLAS 672–706 TFLOPS in the "
              "design runs of 2026-11-29 and 2026-11-30"),
)
# The first clean run (grading.gemm.FIRST_RUN): ratio to cuBLAS and what it was.
FIRST = {"bf16_8192": (0.0315, "23 TFLOPS vs cuBLAS 722 (34% of the FMA peak)"),
         "fp16_8192": (0.0350, "24 TFLOPS vs cuBLAS 678 (35% of the FMA peak)"),
         "bf16_4096": (0.0308, "22 TFLOPS vs cuBLAS 731 (34% of the FMA peak)")}


def _figure(key, title, M, N, K, dtype, headline=False):
    value, text = FIRST[key]
    return Figure(key, title, fma_figure(M, N, K, dtype, label=f"v0 {title}"),
                  around_first_run(value, text, WHY, REFERENCES, classes=gemm_class_ranges(FIRST[key], "fma")),
                  headline=headline)


CHECKS = LessonChecks(
    targets=("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"),
    teaches="a register tile of C per thread, a K loop of fp32 FMAs (`gl.dot_fma`) on the CUDA cores, why it is "
            "issue- and memory-bound",
    machine_code=[
        Check("fma_sm_90", "sm_90, at the course's tile 128×128×8 (8 × 8 register tile, 8 warps): 512 FFMA per K-step "
              "in the loop, the bf16/fp16 upcasts, 16-byte loads, no HMMA; 177 / 193 registers, no "
              "spills", fma_signature("sm_90"), target="sm_90"),
        Check("fma_sm_100", "sm_100, at the course's tile: the same 512 FMAs as 256 paired FFMA2, no tensor-core "
              "instruction; 188 / 190 registers, no spills", fma_signature("sm_100"), target="sm_100"),
        Check("masks_m_n_k", "sm_90, at the course's tile: each load's mask bounds its K tail (< K) and its rows < M "
              "(A) or columns < N (B), the store's rows < M and columns < N", masks_m_n_k,
              target="sm_90"),
        Check("operands_broadcast", "fma_layouts at the course's tile: each thread holds its 8 rows of A and 8 columns "
              "of B for the whole K-step (32 registers each)", operands_broadcast),
        Check("config_fits", "your CONFIG, compiled for sm_80, sm_86, sm_89, sm_90, sm_100 and sm_120, fits one SM "
              "with no spills", KERNEL.config_fits(("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")),
              target="sm_90"),
        Check("host_model", "in the host model (no GPU, at the course's tile): C exact on odd shapes, each element "
              "written once, every read inside A and B", model),
        *(facts_check(f"fma_{t}", t, compiled_bf16, FMA_KERNEL, num_warps=NUM_WARPS, what="bf16 at the course's tile")
          for t in AMPERE_ADA_RTX50),
    ],
    correctness=[
        Check("exact_on_odd_shapes", "C = A·B within the fp32-accumulation tolerance on odd shapes, bf16 and fp16 "
              "(poisoned, guarded C)", correct_on_odd_shapes, gpu=True),
        Check("launcher_refuses_bad_inputs", "the launcher refuses fp32, mismatched K, a column-major A and a tile "
              "that is not a power of two, with an error; M, N or K = 0 gives what torch.matmul gives",
              launcher_refuses_bad_inputs, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck finds nothing on an odd shape", sanitizer_clean,
              gpu=True),
    ],
    figures=[
        _figure("bf16_8192", "bf16 8192³", 8192, 8192, 8192, "bf16", headline=True),
        _figure("fp16_8192", "fp16 8192³", 8192, 8192, 8192, "fp16"),
        _figure("bf16_4096", "bf16 4096³", 4096, 4096, 4096, "bf16"),
    ],
)
