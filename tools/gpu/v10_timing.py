"""Lesson 33's GPU session, steps (a) and (b): correctness of each v10 step on odd shapes against an fp32 reference,
then one table of interleaved pairs (v9, v10 step 1, v10 step 2, cuBLAS) with the SM clock and power sampled during
every timing. Usage: python tools/gpu/v10_timing.py correct|time OUT.json [--sweep]

Correctness here is bf16 only (the session's minute); `python -m gluon_course check 33` adds fp16 and the sanitizers."""
import json
import statistics
import sys
import threading
import time

import torch
import triton

from gluon_course import load_solution
from gluon_course.grading import tma_gemm
from gluon_course.measure.gemm import GEMM_SWEEP_SHAPES, check_gemm, gemm_inputs


class Sampler:
    """The SM clock (MHz) and board power (W) while a timing runs: nvidia-smi sampling every 50 ms beside it."""

    def __enter__(self):
        import subprocess

        self.samples = []
        try:
            self._proc = subprocess.Popen(["nvidia-smi", f"--id={torch.cuda.current_device()}",
                                           "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                                           "-lms", "50"], stdout=subprocess.PIPE, text=True)
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

    def median(self):
        if not self.samples:
            return float("nan"), float("nan")
        return statistics.median(s[0] for s in self.samples), statistics.median(s[1] for s in self.samples)


def correct(out):
    v10 = load_solution("33")
    shapes = tma_gemm.TMA_SHAPES + tma_gemm.MANY_TILES
    results = {}
    for name, launch, where in (("v10 step 1 (ping-pong)", lambda a, b, c: v10.pingpong_matmul(a, b, c), shapes),
                                ("v10 step 2 (cluster)", lambda a, b, c: v10.matmul(a, b, c), shapes),
                                ("v10 step 2 on 3 clusters", lambda a, b, c: v10.matmul(a, b, c, programs=3),
                                 ((300, 264, 520), (129, 136, 200), (4097, 2056, 200)))):
        for b_layout in ("row", "col"):
            t0 = time.time()
            problem = check_gemm(launch, shapes=where, dtypes=(torch.bfloat16,), b_layout=b_layout)
            results[f"{name}, B {b_layout}"] = problem or "ok"
            print(f"{name:28s} B {b_layout}: {problem or 'correct'} ({time.time() - t0:.1f} s)", flush=True)
    json.dump(results, open(out, "w"), indent=1)
    return all(v == "ok" for v in results.values())


def time_all(out, sweep):
    v9, v10 = load_solution("19"), load_solution("33")
    versions = {"v9": lambda a, b, c: v9.matmul(a, b, c), "v10.1 ping-pong": lambda a, b, c: v10.pingpong_matmul(a, b, c),
                "v10.2 cluster": lambda a, b, c: v10.matmul(a, b, c), "cuBLAS": lambda a, b, c: torch.matmul(a, b, out=c)}
    sampler = Sampler()
    rows = {}
    for M, N, K in (GEMM_SWEEP_SHAPES if sweep else GEMM_SWEEP_SHAPES[:1]):
        a, b = gemm_inputs(M, N, K, torch.bfloat16)
        c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        for fn in versions.values():
            fn(a, b, c)                                   # compile and warm up
        times = {name: [] for name in versions}
        clocks = {name: [] for name in versions}
        for _ in range(3):                                # interleaved: each round times every version once
            for name, fn in versions.items():
                with sampler:
                    ms = triton.testing.do_bench(lambda: fn(a, b, c), warmup=25, rep=150)
                times[name].append(ms)
                clocks[name].append(sampler.median())
        shape = f"{M}x{N}x{K}"
        rows[shape] = {}
        for name in versions:
            ms = statistics.median(times[name])
            mhz = statistics.median(x[0] for x in clocks[name])
            watts = statistics.median(x[1] for x in clocks[name])
            rows[shape][name] = {"ms": ms, "tflops": 2 * M * N * K / ms / 1e9, "sm_mhz": mhz, "watts": watts}
        lib = rows[shape]["cuBLAS"]["ms"]
        print(f"{shape}: " + "  ".join(f"{n} {r['tflops']:.0f} TF ({lib / r['ms']:.3f}×, {r['sm_mhz']:.0f} MHz, "
                                       f"{r['watts']:.0f} W)" for n, r in rows[shape].items()), flush=True)
        json.dump(rows, open(out, "w"), indent=1)
    print("\nsummary (ratio to cuBLAS, median of 3 interleaved rounds)")
    print(f"{'shape':22s}" + "".join(f"{n:>18s}" for n in versions))
    for shape, r in rows.items():
        lib = r["cuBLAS"]["ms"]
        print(f"{shape:22s}" + "".join(f"{lib / v['ms']:>11.3f}× {v['sm_mhz']:4.0f}" for v in r.values()))


if __name__ == "__main__":
    what, out = sys.argv[1], sys.argv[2]
    if what == "correct":
        sys.exit(0 if correct(out) else 1)
    time_all(out, "--sweep" in sys.argv)
