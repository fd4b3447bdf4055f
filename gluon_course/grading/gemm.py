"""What the GEMM lessons' checks share: a figure's measure (the lesson's ``matmul`` timed against the library in
the same run), a range drawn around the first clean run with that run's provenance, and the check that a
launcher refuses wrong inputs with a sentence."""
from __future__ import annotations

from typing import Callable

from .checks import CourseTarget, Expectation, Reference
from .errors import explain

# The run the GEMM lessons' ranges were drawn from: every figure measured in one process on an idle GPU
# (tools/gpu/figures.py), the code as committed then. The recordings in results/ come after it.
FIRST_RUN = "NVIDIA H200 (132 SMs at 1980 MHz), Triton 3.9.0, torch 2.11.0+cu130, 2026-11-30, commit afd2a75"
# The range a correct kernel gates on: from 0.6× to 1.5× the first run's figure. Wide on purpose: the other GPUs of
# the class (an H100's memory bandwidth and clocks, a different cuBLAS) move a ratio to the library, and a
# learner's correct kernel may pick other details than ours.
BELOW, ABOVE = 0.6, 1.5
DTYPE_NAMES = ("bf16", "fp16")


def gemm_measure(M: int, N: int, K: int, dtype: str, label: str, b_layout: str = "row", **config) -> Callable:
    """A Figure's ``measure``: the lesson module's ``matmul(a, b, c, **config)`` as a fraction of the library;
    ``b_layout="col"`` hands it B as the transpose of an N × K matrix (the library gets the same B)."""
    if dtype not in DTYPE_NAMES:
        raise ValueError(f"dtype is one of {DTYPE_NAMES}, not {dtype!r}")

    def measure(mod):
        import torch

        from ..measure.gemm import gemm_figure

        torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        return gemm_figure(lambda a, b, c: mod.matmul(a, b, c, **config), M, N, K, torch_dtype, label=label,
                           b_layout=b_layout)
    return measure


# The trials the ranges of lessons 15-19 were drawn from: the same kernels at the same configurations, each figure the
# median of 3 interleaved pairs against cuBLAS, on an otherwise idle H200 (tools/gpu/tune.py; results/trials/).
TRIAL_RUN = ("NVIDIA H200, Triton 3.9.0, torch 2.11.0+cu130, 2026-12-01, trials of the lessons' kernels "
             "(results/trials/nvidia-h200-2026-12-01-wgmma-tiles-and-prototypes.json and …-v9-tiles.json)")


def around_first_run(value: float, text: str, why: str, references: tuple[Reference, ...] = (),
                     target: CourseTarget | None = None, ceiling: str = "cuBLAS", unit: str | None = None,
                     below: float = BELOW, above: float = ABOVE, run: str = FIRST_RUN,
                     classes: dict | None = None) -> Expectation:
    """The expectation for a figure whose first clean run (``run``, by default lessons 10-14's) measured ``value``
    (``text`` says how much of what): ``below``–``above`` times it, ``why`` first, the run's provenance after it.
    ``classes``: the ranges of other GPU classes where the ratio does not carry over (``Expectation.classes``)."""
    if not value > 0:
        raise ValueError(f"the first run's figure must be a positive number, not {value!r}")
    shown = f"{100 * value:.1f}% of {ceiling}" if unit is None else f"{value:g} {unit}"
    full_why = (f"{why}. The first clean run ({run}) measured {text} = {shown}; the range runs from "
                f"{below:g}× to {above:g}× that, room for the other GPUs of the class")
    first = Reference(round(value, 4), f"of {ceiling}" if unit is None else unit, f"{run}: {text}")
    return Expectation(round(value * below, 4), round(value * above, 4), ceiling, full_why, (first, *references),
                       unit=unit, target=target, classes=classes or {})


def gemm_class_ranges(first: tuple, bound: str, below: float = 0.5, above: float = 2.0, classes=None) -> dict:
    """The ranges on the GPUs before Hopper and on RTX 50 of a GEMM figure whose first clean run on the H200 was
    ``first`` = (its ratio, "… vs cuBLAS 722"): ``grading.classes.gemm_share`` of every datasheet GPU, ``below`` ×
    the lowest of a class to ``above`` × its highest. Written for those classes (``classes``, by default the four of
    ``AMPERE_ADA_RTX50``), not run on them."""
    import re

    from .classes import AMPERE_ADA_RTX50, class_ranges, gemm_share, gemm_why

    found = re.search(r"cuBLAS (\d+(?:\.\d+)?)", first[1])
    if found is None:
        raise ValueError(f"the first run's text must name cuBLAS's TFLOPS ('… vs cuBLAS 722'), not {first[1]!r}")
    return class_ranges(gemm_share(first[0], float(found.group(1)), bound), gemm_why(bound),
                        classes=classes or AMPERE_ADA_RTX50, below=below, above=above, shown="{:.2f}×")


def from_trial(trial: dict, key: str, why: str, references: tuple[Reference, ...] = (), **kw) -> Expectation:
    """The range of figure ``key`` around its value in ``trial`` ({key: (value, text)}, the lesson's figures as the
    H200 trials measured them; see TRIAL_RUN). A figure no trial measured names the one it borrows instead,
    ``{key: ("bf16_8192",)}``: its range is drawn around that figure's value, 0.5× to 1.5×, and says so."""
    entry = trial[key]
    if len(entry) == 1:
        value, text = trial[entry[0]]
        why = (f"{why}. No trial measured this figure: the range is drawn around the trial's {entry[0]} "
               f"({text}), from 0.5× to 1.5×")
        kw = {"below": 0.5, "above": 1.5, **kw}
        text = f"{entry[0]}: {text}"
    else:
        value, text = entry
    return around_first_run(value, text, why, references, run=TRIAL_RUN, **kw)


def cpu_operands(M: int, N: int, K: int, dtype=None):
    """A (M × K), B as ``w.t()`` of an N × K W (as nn.Linear keeps it) and C (M × N), empty CPU tensors (bf16 by
    default): what a launcher's plan is built from before any GPU is asked for (``refuses`` on the CPU)."""
    import torch

    dtype = dtype or torch.bfloat16
    w = torch.empty(N, K, dtype=dtype)
    return torch.empty(M, K, dtype=dtype), w.t(), torch.empty(M, N, dtype=dtype)


def refuses(cases: dict) -> str | None:
    """``cases``: {what: (call, error type or tuple, words)}. Each call must raise that error with a message that
    contains every word. None when all do, else one sentence about the first that does not (in the course's words:
    no exception's type name)."""
    for what, (call, error, words) in cases.items():
        expected = error if isinstance(error, tuple) else (error,)
        try:
            call()
        except expected as e:
            text = str(e)
            if not text:
                return f"{what}: refused without a sentence; the refusal must say what to fix"
            missing = [w for w in words if w not in text]
            if missing:
                return f"{what}: the refusal says “{text}”, without {missing}"
            continue
        except Exception as e:  # noqa: BLE001 - any other failure is the wrong one
            return (f"{what}: it fails inside the launcher ({explain(e)}) instead of being refused: the launcher must "
                    "check it first and refuse it with a sentence that says what to fix")
        return f"{what}: accepted; the launcher must refuse it with a sentence that says what to fix"
    return None


def plain_triton_measure(M: int, N: int, K: int, dtype: str = "bf16") -> Callable:
    """A Figure's ``measure`` that ignores the lesson module: the course's plain-Triton kernel
    (measure.plain_triton, autotuned) as a fraction of the library, timed in pairs in this process."""
    def measure(mod):
        import torch

        from ..measure import plain_triton
        from ..measure.gemm import gemm_figure

        torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        m = gemm_figure(plain_triton.matmul, M, N, K, torch_dtype, label="plain Triton")
        # Which configuration the autotuner chose is a measurement too: in the details, not in the text.
        m.details["chosen"] = plain_triton.chosen_config(M, N, K)
        return m
    return measure


def over_plain_triton_measure(M: int, N: int, K: int, dtype: str = "bf16", pairs: int | None = None,
                              version: str = "the kernel", **config) -> Callable:
    """A Figure's ``measure``: the module's ``matmul(a, b, c, **config)`` over the course's plain-Triton kernel
    (autotuned) at one shape, both checked, then timed against each other in ``pairs`` interleaved pairs (default
    measure.timing.PAIRS); the figure is the median pair's ratio."""
    def measure(mod):
        import torch

        from ..measure import plain_triton
        from ..measure.gemm import paired_speedup
        from ..measure.timing import PAIRS

        torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        m = paired_speedup(lambda a, b, c: mod.matmul(a, b, c, **config), plain_triton.matmul, M, N, K, torch_dtype,
                           label=f"{version} over plain Triton", pairs=pairs or PAIRS)
        # The median pair's own rates, which divide to the figure (each side's median time comes from any pair).
        now, then = m.details["median_pair_tflops"]
        m.text = f"{now:.0f} TFLOPS vs plain Triton's {then:.0f} TFLOPS in the median pair"
        m.details["triton_config"] = plain_triton.chosen_config(M, N, K)
        return m
    return measure


def sweep_measure(version: str, against: str = "library", dtype: str = "bf16", **config) -> Callable:
    """A Figure's ``measure``: the module's matmul on the course's sweep of shapes (measure.gemm.GEMM_SWEEP_SHAPES),
    each shape timed in interleaved pairs against the library (``against="library"``) or against the course's
    plain-Triton kernel (``"triton"``); the figure is the geometric mean of the shapes' ratios, the details hold
    every ratio and the worst."""
    if against not in ("library", "triton"):
        raise ValueError(f"against is 'library' or 'triton', not {against!r}")

    def measure(mod):
        import torch

        from ..measure import Measurement
        from ..measure.gemm import GEMM_SWEEP_SHAPES, gemm_figure, summarise

        torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        run = (lambda a, b, c: mod.matmul(a, b, c, **config))
        ratios, texts, spreads, graphs = {}, {}, {}, {}
        for shape in GEMM_SWEEP_SHAPES:
            if against == "library":
                m = gemm_figure(run, *shape, torch_dtype, label=f"{version} {shape}")
            else:
                m = over_plain_triton_measure(*shape, dtype, version=version, **config)(mod)
            ratios[shape], texts[shape], spreads[shape] = m.value, m.text, m.details["spread"]
            graphs[shape] = m.details.get("graph_ratio")          # the same ratio from CUDA-graph replays
        summary = summarise(ratios, texts)
        (worst_shape, worst) = summary.worst
        shape_text = "×".join(map(str, worst_shape))
        name = "plain Triton" if against == "triton" else "the library"
        # The worst shape is in the details, not the text: which shape is worst may change from run to run.
        return Measurement(summary.geomean, f"geomean {summary.geomean:.2f}× {name}, worst {worst:.2f}×",
                           {"ratios": {"×".join(map(str, s)): r for s, r in ratios.items()},
                            "texts": {"×".join(map(str, s)): t for s, t in texts.items()},
                            "spreads": {"×".join(map(str, s)): v for s, v in spreads.items()},
                            "graph_ratios": {"×".join(map(str, s)): g for s, g in graphs.items()},
                            "worst": [shape_text, worst], "against": against})
    return measure


def empty_operands(mod, dtype: str = "bf16", b_layout: str = "row") -> str | None:
    """M, N or K = 0: the launcher returns what torch.matmul returns (an empty C; zeros when K = 0), or None.
    ``b_layout="col"`` hands it B as the transpose of an N × K matrix (the AMD lessons' K-contiguous B)."""
    import torch

    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    for M, N, K in ((0, 64, 64), (64, 0, 64), (64, 64, 0)):
        a = torch.randn(M, K, device="cuda").to(torch_dtype)
        b = (torch.randn(N, K, device="cuda").to(torch_dtype).t() if b_layout == "col"
             else torch.randn(K, N, device="cuda").to(torch_dtype))
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch_dtype)
        try:
            out = mod.matmul(a, b, c)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - any refusal is the wrong answer here
            return (f"{M}×{N}×{K}: {explain(e)}; an empty product should return what torch.matmul returns: an "
                    "empty C, or zeros when K = 0")
        if out is None or tuple(out.shape) != (M, N) or not bool((out == 0).all()):
            return f"{M}×{N}×{K}: C is not what torch.matmul returns (zeros when K = 0, empty when M or N is 0)"
    return None


def speedup_over(previous_lesson: str, previous: str, this: str, M: int = 8192, N: int = 8192, K: int = 8192,
                 dtype: str = "bf16", previous_config: dict | None = None) -> Callable:
    """A Figure's ``measure``: this lesson's TFLOPS over an earlier lesson's solution (``previous_lesson``), both
    timed in this process at the same shape, in interleaved pairs (the median pair's ratio). ``previous`` and
    ``this`` name the versions ("v3", "v4") in the text; ``previous_config`` launches the earlier version at another
    configuration (this lesson's tile, so that only the lesson's idea differs)."""
    def measure(mod):
        import torch

        from ..course import load_solution
        from ..measure.gemm import paired_speedup

        before = load_solution(previous_lesson)
        torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        m = paired_speedup(lambda a, b, c: mod.matmul(a, b, c), lambda a, b, c: before.matmul(a, b, c, **(previous_config or {})), M, N, K,
                           torch_dtype, label=f"{this} over {previous}")
        m.text = f"{m.details['tflops']:.0f} TFLOPS vs {previous}'s {m.details['before_tflops']:.0f} TFLOPS"
        m.details[f"{this}_tflops"], m.details[f"{previous}_tflops"] = m.details["tflops"], m.details["before_tflops"]
        return m
    return measure


# What each bound counts: (one, several, the comparison a mask needs).
UNITS = {"M": ("row", "rows", "rows < M"), "N": ("column", "columns", "columns < N"),
         "K": ("element of K", "elements of K", "its K tail masked, k + offs_k < K"),
         "numel": ("offset", "offsets", "offsets < numel")}


def _unit(arg: str):
    return UNITS.get(arg, ("index", "indices", f"indices < {arg}"))


def bound_problem(what: str, bounds: dict, arg: str) -> str | None:
    """None when ``bounds`` (one access's, from ``Compiled.masks()``) hold ``index < arg`` exactly; else a sentence:
    the bound is missing, or lets indices past the last through (``< N + 1``, ``<= N``), or leaves the last out."""
    one, several, need = _unit(arg)
    offsets = bounds.get(arg)
    if not offsets:
        return f"the mask of {what} never compares {arg}: it needs {need}"
    off = max(offsets, key=abs)
    if off > 0:
        seen = f"< {arg} + {off}" if off > 1 else f"< {arg} + 1 (or <= {arg})"
        extra = f"one {one}" if off == 1 else f"{off} {several}"
        return (f"the mask of {what} bounds the {several} by {seen}: it lets {extra} past the last through, outside "
                f"the tensor; the bound is < {arg}")
    if off < 0:
        left = f"the last {one}" if off == -1 else f"the last {-off} {several}"
        return f"the mask of {what} bounds the {several} by < {arg} - {-off}: it leaves out {left}; the bound is < {arg}"
    return None


def access_masks_problem(kernel, op: str, arguments, what: str) -> str | None:
    """None when every ``op`` ("load" or "store") of the compiled ``kernel`` is masked by ``index < argument``, exactly,
    for each of ``arguments`` (rows < M, columns < N); else a sentence about the first access that is not."""
    accesses = [m for m in kernel.masks() if m["op"] == op]
    if not accesses:
        return f"the kernel has no {op} for {what}"
    for m in accesses:
        if not m["masked"]:
            need = " and ".join(_unit(a)[2] for a in arguments)
            verb = "writes" if op == "store" else "reads"
            edge = ("in the edge tiles it {} past the tensor's last rows and columns" if set(arguments) <= {"M", "N"}
                    else "in the last tile it {} past the tensor's end").format(verb)
            return f"{what} has no mask: {edge} ({need})"
        for arg in arguments:
            problem = bound_problem(what, m["bounds"], arg)
            if problem:
                return problem
    return None


def gemm_masks_problem(kernel, loads: bool = True) -> str | None:
    """A pointer GEMM's masks, access by access: C's store bounded by rows < M and columns < N; with ``loads``, every
    load of A or B masked, bounded by its K tail (< K) and by rows < M (A) or columns < N (B). Exact bounds: an
    offset (``< N + 1``, ``<= N``) is named."""
    problem = access_masks_problem(kernel, "store", ("M", "N"), "the store of C")
    if problem or not loads:
        return problem
    for i, m in enumerate(a for a in kernel.masks() if a["op"] == "load"):
        what = f"load {i + 1} of A or B"
        if not m["masked"]:
            return f"{what} has no mask: the last tiles read past A and B (rows < M or columns < N, and the K tail < K)"
        edges = [a for a in ("M", "N") if a in m["bounds"]]
        if not edges:
            return f"the mask of {what} compares neither M nor N: A's loads need rows < M, B's columns < N"
        for arg in edges + ["K"]:
            problem = bound_problem(what, m["bounds"], arg)
            if problem:
                return problem
    return None


def store_mask_missing(kernel) -> str | None:
    """None when the compiled ``kernel``'s store of C is masked by rows < M and columns < N, exactly; else a sentence.
    TMA's zero fill covers loads only."""
    problem = access_masks_problem(kernel, "store", ("M", "N"), "the store of C")
    if problem and "has no mask" in problem:
        return problem + ": TMA's zero fill covers loads only, so the store of C needs its own mask"
    return problem
