"""Timing: do_bench medians, rates, and ceilings measured in the same process."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import torch

from .device import require_gpu
from .tensors import random_tensor

# Big enough that one copy moves 2 GiB: about 34× the 60 MiB of L2 the H200 reports, so every run reads HBM.
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


def paired_rounds(kernels: dict, ceiling, rounds: int = PAIRS, bench=None) -> dict:
    """``paired_ms`` for several kernels against one ceiling, interleaved: each round times every kernel in turn,
    each right after a timing of the ceiling. Returns {name: Paired}. ``bench`` (default ``bench_ms``) times one
    callable; the tools/probes probes that rank candidates against a library use this."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, not {rounds}")
    bench = bench or bench_ms
    out = {name: Paired([], []) for name in kernels}
    for _ in range(rounds):
        for name, fn in kernels.items():
            out[name].ceiling_ms.append(bench(ceiling))
            out[name].kernel_ms.append(bench(fn))
    return out


def paired_row(paired: Paired, flop: float) -> dict:
    """One candidate's entry in a probe's results: each timing, each pair's ratio, their median and the rate of the
    median kernel time (``flop`` floating-point operations a call)."""
    return {"kernel_ms": paired.kernel_ms, "library_ms": paired.ceiling_ms, "ratios": paired.ratios,
            "ratio": paired.ratio, "tflops": flop / (paired.kernel * 1e-3) / 1e12}


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


def host_us_per_call(fn, calls: int = 200, repeats: int = 7) -> float:
    """Microseconds of host time one call of ``fn`` takes to issue its GPU work: the least of ``repeats`` rounds.

    The GPU is first given a sleep long enough to outlast the calls, so no call ever waits for it: the time
    measured is the host's alone (argument checks, descriptors, Triton's binding, the driver's launch), which
    ``do_bench`` cannot separate from the kernel's. The least round, not the median: what else the host does
    (another thread, the garbage collector) only ever adds time. ``fn`` must have run once before (compiled,
    autotuned, warm)."""
    return host_us_per_call_each({"fn": fn}, calls, repeats)["fn"]


def host_us_per_call_each(fns: dict, calls: int = 200, repeats: int = 7) -> dict:
    """``host_us_per_call`` for several functions, their rounds interleaved (one round of each, then the next), so
    that a host busier for a while slows every one of them alike."""
    require_gpu("the host cost of a call")
    rounds = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            torch.cuda.synchronize()
            # ~2 GHz × (400 µs per call, far more than any launcher here) of sleeping: the queue never drains.
            torch.cuda._sleep(int(2e9 * 400e-6 * calls))
            t0 = _now()
            for _ in range(calls):
                fn()
            rounds[name].append((_now() - t0) / calls * 1e6)
            torch.cuda.synchronize()
    return {name: min(r) for name, r in rounds.items()}


def _now() -> float:
    import time

    return time.perf_counter()


def _captured(body, calls: int):
    """A CUDA graph of ``calls`` calls of ``body``, warmed once on a side stream first, as capture requires."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            body()
    return graph


def _replay_ms(graph, replays: int) -> float:
    """The median milliseconds of ``replays`` replays of ``graph``, after one untimed replay."""
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return _median(times)


def replayed_in_turn(graphs: dict, calls: int, rounds: int = 15) -> dict:
    """CUDA graphs of ``calls`` calls each, replayed once a round in turn, ``rounds`` rounds: each one's median µs of a
    call. Interleaved, so that a change of clock or temperature during the run reaches them all alike."""
    times = {name: [] for name in graphs}
    for _ in range(rounds):
        for name, graph in graphs.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) * 1000 / calls)
    return {name: _median(t) for name, t in times.items()}


def graph_ms(fn, calls: int = 20, replays: int = 10) -> float:
    """Milliseconds of GPU time per call of ``fn``, its launches replayed from a CUDA graph: no host between the
    kernels, so this is the kernel's own time (the median of ``replays`` replays of ``calls`` captured calls).

    Inputs stay where the graph captured them, so whatever fits in L2 stays there between calls: for a GEMM that
    streams its operands from HBM once per call (small M), this reads high; ``do_bench`` flushes L2 first."""
    require_gpu("a CUDA-graph timing")
    graph = _captured(fn, calls)
    ms = _replay_ms(graph, replays) / calls
    del graph
    return ms


def cold_kernel_ms(fn, calls: int = 10, replays: int = 5, flush_bytes: int = 256 << 20, flush: str = "read") -> float:
    """Milliseconds of GPU time per call of ``fn`` with L2 emptied before each call, without do_bench's own cost per
    call (an event pair and the launch's latency around a short kernel).

    Two CUDA graphs are replayed: ``calls`` × (empty L2 through a 256 MiB buffer, ``fn``) and ``calls`` × (the
    emptying alone); the difference over ``calls`` is what ``fn`` adds. For a kernel that streams its operands from
    HBM once (a GEMM at small M) this is the time to set against the memory roofline.

    How L2 is emptied matters. ``flush="read"`` (the default) reads the buffer: L2 is left holding the buffer's clean
    lines, and ``fn`` pays for its own bytes only. ``flush="write"`` overwrites the buffer, as do_bench does: L2 is
    left full of dirty lines, and ``fn``, bringing its own lines in, pays for writing back those it evicts: the
    flush's own writes, charged to ``fn`` (on an H200, in lesson 32's two recordings of 2026-12-02: 1.3–2.8 µs more
    for a 32 MiB W, 6.5–8.4 µs for W's 1002 MiB, both kernels of its decode rows)."""
    require_gpu("a cold-L2 kernel timing")
    if flush not in ("read", "write"):
        raise ValueError(f"flush={flush!r}: 'read' (L2 left clean) or 'write' (L2 left dirty, as do_bench leaves it)")
    buffer = torch.zeros(flush_bytes // 4, dtype=torch.int32, device="cuda")
    empty_l2 = (lambda: buffer.sum()) if flush == "read" else (lambda: buffer.zero_())  # noqa: E731
    with_fn = _captured(lambda: (empty_l2(), fn()), calls)
    alone = _captured(empty_l2, calls)
    both, flushes = _replay_ms(with_fn, replays), _replay_ms(alone, replays)
    del with_fn, alone, buffer
    return max(both - flushes, 0.0) / calls


class ClockSampler:
    """The SM clock (MHz) and board power (W) sampled by nvidia-smi every ``period_ms`` while the block runs:
    a power-capped GPU runs its tensor cores below their boost clock, and a share of peak should say at which.

        with ClockSampler() as clocks:
            ...time something...
        clocks.median_mhz, clocks.median_w"""

    def __init__(self, period_ms: int = 50):
        self.period_ms, self.samples, self._proc = period_ms, [], None

    def __enter__(self):
        import shutil
        import subprocess

        tool = shutil.which("nvidia-smi")
        if tool:
            self._proc = subprocess.Popen([tool, "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                                           f"-lms={self.period_ms}", "-i", str(torch.cuda.current_device())],
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        return self

    def __exit__(self, *exc):
        if self._proc is None:
            return False
        self._proc.terminate()
        out, _ = self._proc.communicate(timeout=5)
        for line in out.splitlines():
            try:
                mhz, watts = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.samples.append((mhz, watts))
        return False

    @property
    def median_mhz(self) -> float:
        return _median([s[0] for s in self.samples]) if self.samples else float("nan")

    @property
    def median_w(self) -> float:
        return _median([s[1] for s in self.samples]) if self.samples else float("nan")
