"""Which GPU classes a lesson's GPU checks are written for, and which lessons run on a class.

A *class* is a compile target (``machine.targets``): the GPUs Triton compiles that code for, "sm_86" for every GPU
of compute capability 8.6 (RTX 30, A10, A40), "gfx942" for an MI300X. A lesson's GPU checks and figures are written
for the classes among its declared targets, narrowed by its launcher: a solution that calls
``gluon_course.nvidia.hopper.require_hopper`` refuses every GPU but a Hopper, so its GPU checks are sm_90's alone,
whatever other target its machine code is also read for (lesson 15 reads a Blackwell kernel's sm_100 code, never run).

The support matrix (``website.support``) and the refusal of a launcher that needs Hopper (``nvidia.hopper``) both
read it from here, so that the page and the sentence a learner reads on the GPU agree.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from ..course import lessons
from ..machine.targets import GPU_NAMES


def calls(path: Path, name: str) -> bool:
    """Whether the module at ``path`` calls a function called ``name`` (``name(...)`` or ``module.name(...)``)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == name) or (isinstance(f, ast.Attribute) and f.attr == name):
                return True
    return False


def gpu_classes(the) -> tuple[str, ...]:
    """The declared targets a lesson's GPU checks are written for: all of them, except that a solution that calls
    ``require_hopper`` (which refuses every GPU but a Hopper, AMD's included) keeps only sm_90."""
    targets = tuple(the.checks.targets)
    if calls(the.solution_path, "require_hopper"):
        return tuple(t for t in targets if t == "sm_90")
    return targets


def lessons_on(gpu_class: str) -> list[str]:
    """The written lessons whose GPU checks are written for ``gpu_class``, in order: ``lessons_on("sm_86")``."""
    return [number for number, the in lessons().items()
            if not the.checks.planned and gpu_class in gpu_classes(the)]


def spans(numbers: list[str]) -> str:
    """["01", "02", "03", "10"] -> "01–03, 10" (consecutive lesson numbers as one span)."""
    runs: list[list[str]] = []
    for n in numbers:
        if runs and int(n) == int(runs[-1][-1]) + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs)


def class_named(gpu_class: str) -> str:
    """``"sm_86 (Ampere: RTX 30, A10, A40)"``; a class the course has no name for is its target name alone."""
    return f"{gpu_class} ({GPU_NAMES[gpu_class]})" if gpu_class in GPU_NAMES else gpu_class


def what_runs_on(gpu_class: str | None) -> str:
    """What the course runs on a GPU of ``gpu_class``, as the end of a sentence: "lessons 01–05 and 10–13 run on
    it", or, for a class no lesson declares, that its machine-code checks run there as on any machine."""
    if gpu_class is None:
        return "no lesson's GPU checks run without a GPU; every lesson's machine-code checks do"
    numbers = lessons_on(gpu_class)
    if not numbers:
        return ("no lesson's GPU checks are written for it; every lesson's machine-code checks run there, as on any "
                "machine")
    listed = spans(numbers)
    head, _, last = listed.rpartition(", ")
    listed = f"{head} and {last}" if head else listed
    return f"lesson{'s' if len(numbers) > 1 else ''} {listed} run{'' if len(numbers) > 1 else 's'} on it"


# ---- what the classes are made of: the figures a range written for a class (not run on it) is worked out from ----

@dataclass(frozen=True)
class Datasheet:
    """One GPU as its vendor's datasheet describes it: SMs, boost clock, DRAM bandwidth, FP32 lanes per SM, and the
    tensor cores' dense bf16 FLOP per SM and clock with fp32 accumulation (what a GEMM that accumulates in fp32
    gets: the GeForce parts of Ampere, Ada and Blackwell do it at half the rate of their fp16 accumulation, 512
    where the A10, A40 and L4 do 1024)."""
    gpu: str
    gpu_class: str
    sms: int
    boost_mhz: int
    dram_gbs: float
    fp32_lanes: int
    tensor_flop_per_clock: int

    @property
    def fp32_tflops(self) -> float:
        return self.sms * self.fp32_lanes * 2 * self.boost_mhz * 1e6 / 1e12

    @property
    def tensor_tflops(self) -> float:
        return self.sms * self.tensor_flop_per_clock * self.boost_mhz * 1e6 / 1e12

    @property
    def bytes_per_sm_clock(self) -> float:
        """DRAM bytes per SM and clock: how much memory traffic an SM's instructions have to hide behind."""
        return self.dram_gbs * 1e9 / (self.sms * self.boost_mhz * 1e6)


# From the vendors' datasheets and architecture whitepapers (H200, A100 SXM4 80 GB, GeForce RTX 3090 and 3060 12 GB,
# A10, GeForce RTX 4090 and 4060, L4, GeForce RTX 5090 and 5060): the largest and a small GPU of each class learners
# hold. The H200's tensor rate is wgmma's (4096 per SM and clock); mma.sync, which lessons 11-13 use, does not reach it
# there.
DATASHEETS = (
    Datasheet("H200", "sm_90", 132, 1980, 4800, 128, 4096),
    Datasheet("A100", "sm_80", 108, 1410, 2039, 64, 2048),
    Datasheet("RTX 3090", "sm_86", 82, 1695, 936, 128, 512),
    Datasheet("RTX 3060", "sm_86", 28, 1777, 360, 128, 512),
    Datasheet("A10", "sm_86", 72, 1695, 600, 128, 1024),
    Datasheet("RTX 4090", "sm_89", 128, 2520, 1008, 128, 512),
    Datasheet("RTX 4060", "sm_89", 24, 2460, 272, 128, 512),
    Datasheet("L4", "sm_89", 58, 2040, 300, 128, 1024),
    Datasheet("RTX 5090", "sm_120", 170, 2407, 1792, 128, 512),
    Datasheet("RTX 5060", "sm_120", 30, 2497, 448, 128, 512),
)


def datasheet_figures(what: str, fmt: str = "{:.1f}") -> str:
    """One property of every GPU of ``DATASHEETS``, as a list: ``datasheet_figures("bytes_per_sm_clock")`` →
    "H200 18.4, A100 13.4, RTX 3090 6.7, ...". A range's ``why`` quotes it, so that its arithmetic is the table's."""
    return ", ".join(f"{d.gpu} {fmt.format(getattr(d, what))}" for d in DATASHEETS)


# The classes the lessons before TMA (01–05, 10–13) declare besides Hopper and datacenter Blackwell: Ampere (A100;
# RTX 30, A10), Ada (RTX 40, L4) and Blackwell's RTX 50, the GPUs learners hold at home and in cloud notebooks.
AMPERE_ADA_RTX50 = ("sm_80", "sm_86", "sm_89", "sm_120")
# Those of them whose GPUs all have GDDR memory (RTX 30 / A10 / A40, RTX 40 / L4 / L40, RTX 50): a few DRAM bytes per
# SM clock where an A100 or an H200 has more than a dozen (``datasheet_figures("bytes_per_sm_clock")``).
GDDR_CLASSES = ("sm_86", "sm_89", "sm_120")


def class_ranges(estimate, why: str, classes=AMPERE_ADA_RTX50, below: float = 0.5, above: float = 2.0,
                 shown: str = "{:.1%}") -> dict:
    """The ranges of a figure on ``classes``, worked out from ``DATASHEETS`` where the ratio it was measured at does
    not carry over: ``estimate(datasheet)`` is the figure one GPU should reach by ``why``'s reasoning, and a class's
    range runs from ``below`` × its lowest GPU's estimate to ``above`` × its highest. Each range's ``why`` says so,
    with every GPU's estimate: written for the class, not run on one."""
    from .checks import ClassRange

    estimates = {d.gpu: estimate(d) for d in DATASHEETS}
    listed = ", ".join(f"{gpu} {shown.format(v)}" for gpu, v in estimates.items())
    out = {}
    for cls in classes:
        mine = [estimates[d.gpu] for d in DATASHEETS if d.gpu_class == cls]
        if not mine:
            raise ValueError(f"no GPU of {cls} in DATASHEETS to work its range out from")
        out[cls] = ClassRange(round(below * min(mine), 4), round(above * max(mine), 4),
                              f"{why}. Worked out from the vendors' datasheets, not measured: {listed}; the range "
                              f"runs from {below:g}× the lowest of {cls}'s GPUs to {above:g}× the highest")
    return out


def resident_blocks(gpu_class: str, threads: int) -> int:
    """Blocks of ``threads`` threads an SM of ``gpu_class`` holds when nothing but threads and blocks limit it."""
    from ..machine.occupancy import LIMITS

    limits = LIMITS[gpu_class]
    return min(limits.threads_per_sm // threads, limits.blocks_per_sm)


def datasheet(gpu: str) -> Datasheet:
    """The ``DATASHEETS`` entry of ``gpu`` ("H200")."""
    for d in DATASHEETS:
        if d.gpu == gpu:
            return d
    raise KeyError(f"no datasheet for {gpu!r}; known: {', '.join(d.gpu for d in DATASHEETS)}")


# What a class range of a GEMM figure assumes besides the datasheets (assumptions, not measurements): cuBLAS reaches
# this share of a GPU's tensor peak at the course's sizes where it runs mma.sync (every class before Hopper, and
# RTX 50), and a kernel built on mma.sync at most this share.
CUBLAS_REACH = 0.85
MMA_SYNC_REACH = 0.9


def gemm_share(first: float, cublas_tflops: float, bound: str):
    """``estimate(datasheet)`` for ``class_ranges`` of a GEMM figure that measured ``first`` × cuBLAS on the H200
    (cuBLAS at ``cublas_tflops`` there): on another GPU the kernel keeps what bounds it, against cuBLAS at ``CUBLAS_REACH`` of
    that GPU's tensor peak. ``bound="fma"``: the same share of the FP32 FMA peak (lesson 10's CUDA cores);
    ``"mma.sync"``: the same FLOP per SM and clock, capped at ``MMA_SYNC_REACH`` of the GPU's tensor rate (the
    GeForce parts' half-rate fp32 accumulation caps it early)."""
    if bound not in ("fma", "mma.sync"):
        raise ValueError(f"bound is 'fma' or 'mma.sync', not {bound!r}")
    h200 = datasheet("H200")

    def estimate(gpu: Datasheet) -> float:
        if gpu.gpu == h200.gpu:
            return first
        cublas = CUBLAS_REACH * gpu.tensor_tflops
        if bound == "fma":
            return first * cublas_tflops / h200.fp32_tflops * gpu.fp32_tflops / cublas
        per_clock = first * cublas_tflops * 1e12 / (h200.sms * h200.boost_mhz * 1e6)
        reached = min(per_clock, MMA_SYNC_REACH * gpu.tensor_flop_per_clock)
        return reached * gpu.sms * gpu.boost_mhz * 1e6 / 1e12 / cublas
    return estimate


def gemm_why(bound: str) -> str:
    """The reasoning ``gemm_share`` follows, as the start of a class range's ``why``."""
    kept = ("the same share of the GPU's FP32 FMA peak as on the H200" if bound == "fma" else
            "the same FLOP per SM and clock as on the H200, at most "
            f"{MMA_SYNC_REACH:.0%} of the GPU's tensor rate (mma.sync with fp32 accumulation: half rate on the "
            "GeForce parts)")
    return (f"cuBLAS runs mma.sync on this class, assumed at {CUBLAS_REACH:.0%} of the tensor peak (dense bf16, fp32 "
            f"accumulation); the kernel is assumed to keep {kept}")
