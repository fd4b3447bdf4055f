"""Timing: do_bench medians, rates, and ceilings measured in the same process."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import torch

from .device import require_gpu
from .tensors import random_tensor

# Big enough that one copy moves 2 GiB: about 40× the H200's 50 MB L2, so every run reads HBM.
L2_DEFEATING_BYTES = 1 << 30


@dataclass
class Measurement:
    """One measured figure: ``value`` in its expectation's unit (usually a fraction of a ceiling), the text a
    learner reads ("4.14 TB/s vs copy 4.27 TB/s"), and the raw numbers behind it."""
    value: float
    text: str
    details: dict = field(default_factory=dict)


def bench_ms(fn) -> float:
    """Median milliseconds of ``fn`` (triton's do_bench: warm-up 25 ms, then 100 ms of repetitions)."""
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


# GEMM figures: how many (kernel, library) pairs are timed, interleaved; the figure is the median pair's ratio.
PAIRS = 3


@dataclass
class Paired:
    """Interleaved timings of a kernel and its ceiling, one ratio per pair (the ceiling's time over the kernel's:
    the kernel's rate as a fraction of the ceiling's). ``ratio`` is the median of the ratios, ``spread`` their
    range around it ((max − min) / median), so a figure says how much it moved while it was measured."""
    kernel_ms: list
    ceiling_ms: list

    @property
    def ratios(self) -> list:
        return [c / k for k, c in zip(self.kernel_ms, self.ceiling_ms)]

    @property
    def ratio(self) -> float:
        return _median(self.ratios)

    @property
    def spread(self) -> float:
        r = self.ratios
        return (max(r) - min(r)) / self.ratio

    @property
    def kernel(self) -> float:
        """The kernel's median time (ms)."""
        return _median(self.kernel_ms)

    @property
    def ceiling(self) -> float:
        return _median(self.ceiling_ms)

    @property
    def median_pair(self) -> tuple[float, float]:
        """(kernel ms, ceiling ms) of the pair whose ratio is ``ratio`` (an odd number of pairs; with an even number
        the median falls between two pairs, and each side's median time is given instead). Its two rates divide to
        the figure, which each side's median time, taken from different pairs, need not."""
        if len(self.kernel_ms) % 2 == 0:
            return self.kernel, self.ceiling
        i = sorted(range(len(self.ratios)), key=self.ratios.__getitem__)[len(self.ratios) // 2]
        return self.kernel_ms[i], self.ceiling_ms[i]

    def details(self) -> dict:
        return {"pairs": len(self.kernel_ms), "ratios": [round(r, 4) for r in self.ratios],
                "spread": round(self.spread, 4), "kernel_ms_each": [round(m, 5) for m in self.kernel_ms],
                "ceiling_ms_each": [round(m, 5) for m in self.ceiling_ms]}


def _median(values) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def paired_ms(kernel, ceiling, pairs: int = PAIRS) -> Paired:
    """Time ``kernel`` and ``ceiling`` alternately, ``pairs`` times each (each a do_bench median, warm): a GPU whose
    clock or neighbours change during the measurement moves both sides of a pair alike, and the ratio holds."""
    if pairs < 1:
        raise ValueError(f"pairs must be at least 1, not {pairs}")
    k, c = [], []
    for _ in range(pairs):
        c.append(bench_ms(ceiling))
        k.append(bench_ms(kernel))
    return Paired(k, c)


def tbs(bytes_moved: int, ms: float) -> float:
    """Terabytes per second (10**12 bytes) from bytes read + written and milliseconds."""
    return bytes_moved / (ms * 1e-3) / 1e12


@functools.lru_cache(maxsize=None)
def copy_ceiling_tbs(nbytes: int = L2_DEFEATING_BYTES) -> float:
    """The memory ceiling, measured now: PyTorch's device-to-device copy of ``nbytes`` (read + write counted).

    Measured once per process; every memory lesson's expected range is a fraction of this figure,
    so the range holds on any GPU.
    """
    require_gpu("the copy ceiling")
    src = random_tensor((nbytes // 4,), torch.float32)
    dst = torch.empty_like(src)
    ms = bench_ms(lambda: dst.copy_(src))
    del src, dst
    torch.cuda.empty_cache()
    return tbs(2 * nbytes, ms)


def tflops(m: int, n: int, k: int, ms: float) -> float:
    """Tera floating-point operations per second of an M×N×K matrix product: 2·M·N·K / time."""
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12
