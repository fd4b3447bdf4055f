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
