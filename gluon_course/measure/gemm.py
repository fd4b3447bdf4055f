"""Shared checks and figures for the GEMM lessons (10–29): C = A·B, checked first, then timed against the library.

The contract of every GEMM kernel in the course: A is M×K, B is K×N, C is M×N, all row-major (B column-major
where a lesson says so); inputs bf16 or fp16; products accumulated in fp32; C written in the input dtype.
A launcher is called as ``launch(a, b, c)``.
"""
from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass, field

import torch

from .device import free_cache, is_rocm, require_gpu
from .tensors import guarded_empty, is_poison, poison, random_tensor
from .timing import PAIRS, Measurement, bench_ms, graph_ms, paired_ms, tflops

GEMM_DTYPES = (torch.bfloat16, torch.float16)
_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16"}
# Half an ulp of the output, relative: bf16 keeps 8 significant bits, fp16 keeps 11.
HALF_ULP = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}
FP32_HALF_ULP = 2.0**-24

# (M, N, K): one element, odd sizes, tile multiples, K tails of 40 (K = 1000) and 1 (K = 4097) past a 64-wide tile.
GEMM_ODD_SHAPES = ((1, 1, 1), (17, 33, 65), (128, 128, 128), (1000, 1000, 1000), (4097, 129, 1000),
                   (256, 512, 4097), (127, 255, 64))
# The bf16 sweep of lessons 15–19 and the capstone (M, N, K).
GEMM_SWEEP_SHAPES = ((8192, 8192, 8192), (4096, 4096, 4096), (8192, 8192, 2048), (8192, 8192, 16384),
                     (16384, 16384, 4096), (4096, 4096, 16384), (2048, 2048, 8192))
# The shapes a model runs (lesson 32): A·Wᵀ for M tokens against the projections of an 8B-class transformer,
# (N, K) = attention q/o (4096, 4096), fused q/k/v (6144, 4096), the MLP's up/gate (14336, 4096) and down
# (4096, 14336), each at M = 1 (one token decoded) ... 8192 (a long prefill); and a 128256-word output layer at
# M = 1, 16, 2048. 31 shapes, (M, N, K).
MODEL_M = (1, 16, 64, 128, 512, 2048, 8192)
MODEL_NK = ((4096, 4096), (6144, 4096), (14336, 4096), (4096, 14336))
MODEL_SHAPES = tuple((m, n, k) for n, k in MODEL_NK for m in MODEL_M) + tuple((m, 128256, 4096) for m in (1, 16, 2048))


# -- arguments -----------------------------------------------------------------------------------

def _require_dtype(dtype) -> None:
    if dtype not in GEMM_DTYPES:
        raise TypeError(f"the course's GEMMs take torch.bfloat16 or torch.float16, not {dtype}: "
                        "convert the inputs with .to(torch.bfloat16)")


def _require_shape(shape) -> tuple[int, int, int]:
    if not (isinstance(shape, (tuple, list)) and len(shape) == 3
            and all(isinstance(s, int) and s > 0 for s in shape)):
        raise ValueError(f"a GEMM shape is (M, N, K), three positive integers, not {shape!r}")
    return tuple(shape)


def _require_operands(a: torch.Tensor, b: torch.Tensor) -> None:
    _require_dtype(a.dtype)
    if b.dtype != a.dtype:
        raise TypeError(f"A is {a.dtype} but B is {b.dtype}: give both the same dtype")
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"A and B must be matrices (got {a.dim()}-D and {b.dim()}-D): reshape them to M×K and K×N")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"A is {a.shape[0]}×{a.shape[1]} but B is {b.shape[0]}×{b.shape[1]}: "
                         f"B needs K = {a.shape[1]} rows, one for each column of A")


def _shape_text(shape) -> str:
    return "×".join(str(s) for s in shape)


# -- inputs, reference, tolerance -------------------------------------------------------------------

def gemm_inputs(M: int, N: int, K: int, dtype=torch.bfloat16, seed: int | None = None, b_layout: str = "row",
                device="cuda") -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh A (M×K) and B (K×N): standard normal (mean 0, std 1) rounded to ``dtype``.

    Unit variance keeps every element of C near √K (≤ ~700 at K = 16384), far inside fp16's 65504.
    Each matrix sits inside a larger buffer whose margins are NaN: a kernel that reads past an end
    (an unmasked K tail, say) gets NaN in C instead of lucky zeros. ``b_layout="col"`` gives a
    column-major B (a transposed N×K matrix, strides (1, K)).
    """
    M, N, K = _require_shape((M, N, K))
    _require_dtype(dtype)
    if b_layout not in ("row", "col"):
        raise ValueError(f"b_layout is 'row' (K×N row-major) or 'col' (column-major), not {b_layout!r}")
    a = _inside_nan_margins(random_tensor((M, K), dtype, device, seed))
    b_seed = None if seed is None else seed + 1
    if b_layout == "col":
        return a, _inside_nan_margins(random_tensor((N, K), dtype, device, b_seed)).t()
    return a, _inside_nan_margins(random_tensor((K, N), dtype, device, b_seed))


def _inside_nan_margins(t: torch.Tensor, margin: int = 4096) -> torch.Tensor:
    # 4096 elements keep the data 16-byte aligned, as TMA descriptors require.
    buffer = poison(torch.empty(t.numel() + 2 * margin, dtype=t.dtype, device=t.device))
    return buffer[margin: margin + t.numel()].view(t.shape).copy_(t)


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A·B in float32, computed in float64 from the upcast inputs (on their device).

    Float64 makes the reference exact for our purpose (its error, ~K·2^-53, is a million times below
    the tolerance), and no fp32 matmul runs, so TF32 cannot creep in and no global flag is touched.
    Costs an fp64 GEMM: ~20 ms at 8192³ on an H200.
    """
    _require_operands(a, b)
    return (a.double() @ b.double()).float()


@dataclass(frozen=True)
class Tolerance:
    """|c − ref| ≤ atol + rtol·|ref|, elementwise; ``why`` says where the numbers come from."""
    atol: float
    rtol: float
    why: str


def tolerance(K: int, dtype) -> Tolerance:
    """The elementwise tolerance for a correct fp32-accumulated bf16/fp16 GEMM on ``gemm_inputs`` data.

    Derivation (u: half an ulp of the output, 2^-8 for bf16, 2^-11 for fp16; e = 2^-24, fp32's):
    - a product of two bf16 or fp16 numbers is exact in fp32 (8+8 or 11+11 significant bits ≤ 24);
    - summing K products in fp32 rounds each partial sum s_k, by at most e·|s_k| (2e on tensor cores
      that truncate). With unit-variance inputs |s_k| ~ √k ≤ √K, so the K roundings add at most
      K·2e·√K even if all point the same way (random ones give ~e·K: √K times less). We allow twice
      that for partial sums that wander further: atol = 4·K·√K·e ("K·e relative, times |ref| ~ √K");
    - rounding C to bf16/fp16 adds at most u·|c|: rtol = u (fp16's subnormal step 2^-24 < atol);
    - the reference is float64 (then fp32: 2^-24·|ref| < atol), so only the kernel's error counts.
    Loose enough: a simulated accumulator that truncates at every step uses 15% of atol at K = 16384.
    Tight enough: dropping even one product (|a·b| ~ 0.6) exceeds it for many elements, since atol is
    0.06 at K = 4097 (0.5 at K = 16384) and u·√K is 0.25 (bf16) or 0.03 (fp16) there.
    """
    _require_dtype(dtype)
    if not (isinstance(K, int) and K > 0):
        raise ValueError(f"K is the length of the sum, a positive integer, not {K!r}")
    u = HALF_ULP[dtype]
    atol = 4 * K * math.sqrt(K) * FP32_HALF_ULP
    why = (f"|c − ref| ≤ atol + rtol·|ref| with atol = 4·K·√K·2^-24 = {atol:.3g} (fp32 accumulation over "
           f"K = {K}, |ref| ~ √K) and rtol = {u:.3g} (half an ulp of {_NAMES[dtype]}, the output rounding)")
    return Tolerance(atol, u, why)


def compare_gemm(c: torch.Tensor, ref: torch.Tensor, tol: Tolerance) -> str | None:
    """``None`` when every element of ``c`` is within ``tol`` of ``ref``; else one clause naming the first one out."""
    if tuple(c.shape) != tuple(ref.shape):
        return f"C has shape {tuple(c.shape)} instead of {tuple(ref.shape)}"
    unwritten = is_poison(c) & ~torch.isnan(ref)
    if unwritten.any():
        i, j = _first(unwritten)
        return f"{int(unwritten.sum())} element(s) still NaN, never written (first at [{i}, {j}])"
    allowed = tol.atol + tol.rtol * ref.double().abs()
    wrong = ~((c.double() - ref.double()).abs() <= allowed)  # NaN and inf count as wrong
    if not wrong.any():
        return None
    i, j = _first(wrong)
    return (f"{int(wrong.sum())} element(s) out of tolerance, first at [{i}, {j}]: got {c[i, j].item():.6g}, "
            f"expected {ref[i, j].item():.6g} ± {allowed[i, j].item():.3g}")


def _first(mask: torch.Tensor) -> tuple[int, int]:
    # argmax returns the first maximum: the first True, without listing every index of a huge mask.
    return divmod(int(mask.flatten().to(torch.uint8).argmax()), mask.shape[1])


# -- correctness ---------------------------------------------------------------------------------

def check_gemm(launch, shapes=GEMM_ODD_SHAPES, dtypes=GEMM_DTYPES, b_layout: str = "row") -> str | None:
    """Run ``launch(a, b, c)`` on fresh inputs for each shape and dtype; C is NaN inside a guarded buffer.

    Then: no element left NaN, nothing written outside C, every element within ``tolerance``.
    Returns ``None`` when all pass, else one sentence about the first failure.
    """
    shapes = [_require_shape(s) for s in shapes]
    for dtype in dtypes:
        _require_dtype(dtype)
    require_gpu("check_gemm")
    for M, N, K in shapes:
        for dtype in dtypes:
            a, b = gemm_inputs(M, N, K, dtype, b_layout=b_layout)
            guard = guarded_empty((M, N), dtype)
            launch(a, b, guard.tensor)
            torch.cuda.synchronize()
            where = f"shape {M}×{N}×{K} {_NAMES[dtype]}"
            problem = compare_gemm(guard.tensor, reference(a, b), tolerance(K, dtype))
            if problem:
                return f"{where}: {problem}."
            if not guard.margins_untouched():
                return f"{where}: wrote outside C (before its first or past its last element)."
    return None


# -- speed ---------------------------------------------------------------------------------------

def library_name() -> str:
    """The library behind torch.matmul here: hipBLASLt on ROCm (torch's default there), cuBLAS on NVIDIA."""
    return "hipBLASLt" if is_rocm() else "cuBLAS"


@contextlib.contextmanager
def fp32_reductions():
    """Hold torch.matmul to the course's contract (every sum in fp32) inside this block, then restore the flags.

    By default PyTorch lets the library add split-K partial sums in bf16/fp16: on an H200 (torch 2.11)
    torch.matmul at 256×512×4097 bf16 then misses the tolerance by 7×. The library is timed under this;
    wrap ``check_gemm`` in it when torch.matmul itself is the kernel under test.
    """
    flags = torch.backends.cuda.matmul
    names = ("allow_bf16_reduced_precision_reduction", "allow_fp16_reduced_precision_reduction",
             "allow_fp16_accumulation")
    saved = {name: getattr(flags, name) for name in names}
    try:
        for name in names:
            setattr(flags, name, False)
        yield
    finally:
        for name, value in saved.items():
            setattr(flags, name, value)


@functools.lru_cache(maxsize=None)
def library_matmul_ms(M: int, N: int, K: int, dtype=torch.bfloat16) -> float:
    """Median ms of torch.matmul (sums in fp32) on fresh inputs of this shape, measured once per process (for a
    ceiling shown beside a figure that is not a ratio to it; GEMM figures time the library in pairs instead)."""
    M, N, K = _require_shape((M, N, K))
    _require_dtype(dtype)
    require_gpu("the library matmul ceiling")
    a, b = gemm_inputs(M, N, K, dtype)
    c = torch.empty(M, N, dtype=dtype, device=a.device)
    with fp32_reductions():
        ms = bench_ms(lambda: torch.matmul(a, b, out=c))
    del a, b, c
    free_cache()
    return ms


def library_tflops(M: int, N: int, K: int, dtype=torch.bfloat16) -> float:
    """torch.matmul's TFLOPS at this shape: the ceiling each GEMM lesson's figure is a fraction of."""
    return tflops(M, N, K, library_matmul_ms(M, N, K, dtype))


def gemm_figure(launch, M: int = 8192, N: int = 8192, K: int = 8192, dtype=torch.bfloat16, label: str = "",
                b_layout: str = "row", pairs: int = PAIRS) -> Measurement:
    """TFLOPS of ``launch(a, b, c)`` as a fraction of torch.matmul's, both timed in this process, interleaved:
    ``pairs`` (library, kernel) pairs, each a do_bench median, the figure the median of the pairs' ratios and
    ``details["spread"]`` how far the ratios spread around it.

    The output is checked against ``reference`` (torch's float64 matmul) on the benchmark inputs first.
    No input rotation: these GEMMs are compute-bound (8192³ does ~2700 FLOP per byte of A, B and C, every
    sweep shape over 900, the H200's ridge is ~200), so a warm L2 would barely change the time.
    """
    M, N, K = _require_shape((M, N, K))
    _require_dtype(dtype)
    require_gpu("a GEMM figure")
    a, b = gemm_inputs(M, N, K, dtype, b_layout=b_layout)
    c = poison(torch.empty(M, N, dtype=dtype, device=a.device))
    launch(a, b, c)
    torch.cuda.synchronize()
    problem = compare_gemm(c, reference(a, b), tolerance(K, dtype))
    if problem:
        raise AssertionError(f"{label or 'the kernel'} is wrong on the {M}×{N}×{K} {_NAMES[dtype]} "
                             f"benchmark input: {problem}.")
    library_c = torch.empty(M, N, dtype=dtype, device=a.device)
    with fp32_reductions():
        timed = paired_ms(lambda: launch(a, b, c), lambda: torch.matmul(a, b, out=library_c), pairs)
        # The CUDA-graph twin (lesson 31): the same launches replayed with no host between them, the kernel alone.
        # Kept beside the do_bench figure, which it does not replace: a launcher whose host time exceeds the
        # kernel's reads lower under do_bench than here.
        graph = {"graph_ms": graph_ms(lambda: launch(a, b, c)),
                 "library_graph_ms": graph_ms(lambda: torch.matmul(a, b, out=library_c))}
    del a, b, c, library_c
    free_cache()
    rate, library = tflops(M, N, K, timed.kernel), tflops(M, N, K, timed.ceiling)
    return Measurement(timed.ratio, f"{rate:.0f} TFLOPS vs {library_name()} {library:.0f} TFLOPS",
                       {"tflops": rate, "library_tflops": library, "ms": timed.kernel, "library_ms": timed.ceiling,
                        "M": M, "N": N, "K": K, "dtype": _NAMES[dtype], **timed.details(), **graph,
                        "graph_ratio": graph["library_graph_ms"] / graph["graph_ms"]})


def paired_speedup(launch, before, M: int = 8192, N: int = 8192, K: int = 8192, dtype=torch.bfloat16,
                   label: str = "", pairs: int = PAIRS) -> Measurement:
    """``launch`` against ``before`` (an earlier version) at one shape: both checked first, then timed in
    interleaved pairs; the figure is the median pair's TFLOPS ratio (this over before)."""
    M, N, K = _require_shape((M, N, K))
    require_gpu("a speed-up figure")
    a, b = gemm_inputs(M, N, K, dtype)
    c = poison(torch.empty(M, N, dtype=dtype, device=a.device))
    ref = reference(a, b)
    for name, fn in (("this version", launch), ("the version before", before)):
        c.fill_(float("nan"))
        fn(a, b, c)
        torch.cuda.synchronize()
        problem = compare_gemm(c, ref, tolerance(K, dtype))
        if problem:
            raise AssertionError(f"{label}: {name} is wrong on the {M}×{N}×{K} benchmark input: {problem}.")
    del ref
    timed = paired_ms(lambda: launch(a, b, c), lambda: before(a, b, c), pairs)
    # The CUDA-graph twin (lesson 31), as gemm_figure keeps it: both versions with no host between the launches.
    graph = {"graph_ms": graph_ms(lambda: launch(a, b, c)), "before_graph_ms": graph_ms(lambda: before(a, b, c))}
    del a, b, c
    free_cache()
    now, then = tflops(M, N, K, timed.kernel), tflops(M, N, K, timed.ceiling)
    pair = [tflops(M, N, K, ms) for ms in timed.median_pair]
    return Measurement(timed.ratio, f"{now:.0f} TFLOPS vs {then:.0f} TFLOPS",
                       {"tflops": now, "before_tflops": then, "median_pair_tflops": [round(r, 1) for r in pair],
                        **timed.details(), **graph, "graph_ratio": graph["before_graph_ms"] / graph["graph_ms"]})


# -- shape sweep ---------------------------------------------------------------------------------

@dataclass
class SweepResult:
    """Ratios to the library per (M, N, K), their geometric mean and the worst (shape, ratio)."""
    ratios: dict
    geomean: float
    worst: tuple
    texts: dict = field(default_factory=dict)

    def table(self) -> str:
        lines = [f"{'M×N×K':<20} {'ratio':>6}  figure"]
        lines += [f"{_shape_text(s):<20} {r:>5.2f}×  {self.texts.get(s, '')}".rstrip()
                  for s, r in self.ratios.items()]
        shape, ratio = self.worst
        lines.append(f"geomean {self.geomean:.2f}×, worst {ratio:.2f}× at {_shape_text(shape)}")
        return "\n".join(lines)


def summarise(ratios: dict, texts: dict | None = None) -> SweepResult:
    """Geometric mean and worst of ``ratios`` ({(M, N, K): kernel/library}); pure arithmetic, no GPU."""
    if not ratios:
        raise ValueError("summarise needs at least one (M, N, K) → ratio entry")
    for shape, ratio in ratios.items():
        if not (isinstance(ratio, (int, float)) and math.isfinite(ratio) and ratio > 0):
            raise ValueError(f"the ratio for {_shape_text(shape)} is {ratio!r}; every ratio must be a positive "
                             "number (re-measure that shape)")
    geomean = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
    worst = min(ratios, key=ratios.get)
    return SweepResult(dict(ratios), geomean, (worst, ratios[worst]), dict(texts or {}))


def sweep(launch, shapes=GEMM_SWEEP_SHAPES, dtype=torch.bfloat16, label: str = "") -> SweepResult:
    """``gemm_figure`` at each shape (checked, then timed against the library), summarised."""
    figures = {_require_shape(s): gemm_figure(launch, *s, dtype=dtype, label=label) for s in shapes}
    return summarise({s: f.value for s, f in figures.items()}, {s: f.text for s, f in figures.items()})
