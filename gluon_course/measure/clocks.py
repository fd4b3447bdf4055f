"""The SM clock and board power while a kernel is timed (lesson 33, issue 23's item 4): nvidia-smi sampling beside
each timing, and one figure that times several GEMM versions in interleaved rounds and keeps, per version, what a
chart of TFLOPS against clock needs."""
from __future__ import annotations

import statistics
import subprocess

from .timing import Measurement

# What a clocks figure's details carry, per version: the chart (gluon_course.nvidia.clocks) reads exactly these.
FIELDS = ("ms", "tflops", "sm_mhz", "watts", "samples")


class Sampler:
    """``with Sampler() as s: ...`` samples the current GPU's SM clock (MHz) and board power (W) every ``period_ms``
    with nvidia-smi; ``s.samples`` holds (MHz, W) pairs afterwards, none where nvidia-smi is missing."""

    def __init__(self, period_ms: int = 50):
        self.period_ms, self.samples, self._proc = period_ms, [], None

    def __enter__(self):
        import torch

        self.samples = []
        try:
            self._proc = subprocess.Popen(["nvidia-smi", f"--id={torch.cuda.current_device()}",
                                           "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                                           "-lms", str(self.period_ms)], stdout=subprocess.PIPE, text=True)
        except OSError:
            self._proc = None
        return self

    def __exit__(self, *exc):
        if self._proc is None:
            return
        self._proc.terminate()
        text, _ = self._proc.communicate()
        for line in text.splitlines():
            try:
                mhz, watts = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.samples.append((mhz, watts))

    def median(self) -> tuple[float, float]:
        if not self.samples:
            return float("nan"), float("nan")
        return statistics.median(s[0] for s in self.samples), statistics.median(s[1] for s in self.samples)


def clocks_figure(versions: dict, M: int, N: int, K: int, headline: str, library: str = "cuBLAS",
                  rounds: int = 3) -> Measurement:
    """Time every ``versions[name](a, b, c)`` (bf16, B K × N) in ``rounds`` interleaved rounds of do_bench, sampling
    clock and power during each timing. The value is ``headline``'s speed over ``library``'s (both in ``versions``);
    the details hold, per version, the median ms, TFLOPS, SM clock (MHz), power (W) and the number of samples."""
    import torch
    from triton.testing import do_bench

    from .gemm import gemm_inputs

    a, b = gemm_inputs(M, N, K, torch.bfloat16)
    c = torch.empty(M, N, dtype=torch.bfloat16, device=a.device)
    for fn in versions.values():
        fn(a, b, c)
    runs = {name: [] for name in versions}
    for _ in range(rounds):
        for name, fn in versions.items():
            with Sampler() as sampler:
                ms = float(do_bench(lambda: fn(a, b, c), warmup=25, rep=150, return_mode="median"))
            runs[name].append((ms, *sampler.median(), len(sampler.samples)))
    per = {}
    for name, r in runs.items():
        ms = statistics.median(x[0] for x in r)
        per[name] = {"ms": ms, "tflops": 2 * M * N * K / ms / 1e9, "sm_mhz": statistics.median(x[1] for x in r),
                     "watts": statistics.median(x[2] for x in r), "samples": sum(x[3] for x in r)}
    value = per[library]["ms"] / per[headline]["ms"]
    text = (f"{headline} {per[headline]['tflops']:.0f} TFLOPS at {per[headline]['sm_mhz']:.0f} MHz vs {library} "
            f"{per[library]['tflops']:.0f} TFLOPS at {per[library]['sm_mhz']:.0f} MHz")
    return Measurement(value, text, {"shape": [M, N, K], "rounds": rounds, "library": library, "versions": per})
