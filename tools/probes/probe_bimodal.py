"""A GPU probe of the bimodal timings at 2048 × 2048 × 8192 (lessons 17-19's over-Triton sweeps): is the slow mode
the GPU (the kernel itself runs long) or the host (the launch takes longer than do_bench's cache flush hides)?

    python tools/probes/probe_bimodal.py OUT.json [M N K]

For v7, v8, v9 and plain Triton it records: repeated do_bench medians alone and interleaved with plain Triton
and with cuBLAS (the course's pairs), every repetition of one do_bench (return_mode="all"), the host's time to
enqueue one launch, and the GPU's time for the same launches replayed from a CUDA graph (no host in the loop).
"""
import json
import statistics
import sys
import time

import torch
from triton.testing import do_bench

from gluon_course import load_solution
from gluon_course.measure import plain_triton

out = sys.argv[1]
M, N, K = (int(x) for x in sys.argv[2:5]) if len(sys.argv) >= 5 else (2048, 2048, 8192)
flops = 2 * M * N * K
torch.manual_seed(0)
a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
kernels = {f"v{v}": (lambda mod: (lambda: mod.matmul(a, b, c)))(load_solution(n))
           for v, n in (("7", "17"), ("8", "18"), ("9", "19"))}
kernels["triton"] = lambda: plain_triton.matmul(a, b, c)
kernels["cublas"] = lambda: torch.matmul(a, b, out=c)
for fn in kernels.values():          # compile, autotune, warm
    fn()
torch.cuda.synchronize()


def tf(ms):
    return round(flops / ms / 1e9, 1)


def bench(fn, mode="median"):
    return do_bench(fn, warmup=25, rep=100, return_mode=mode)


result = {"shape": [M, N, K], "gpu": torch.cuda.get_device_name(), "triton_config": plain_triton.chosen_config(M, N, K)}
# 1. Each alone, 8 do_bench medians in a row; then interleaved pairs as the course times them.
result["alone"] = {name: [tf(bench(fn)) for _ in range(8)] for name, fn in kernels.items()}
for partner in ("triton", "cublas"):
    for name in ("v7", "v8", "v9"):
        pairs = []
        for _ in range(8):
            p = tf(bench(kernels[partner]))
            pairs.append((tf(bench(kernels[name])), p))
        result[f"{name}_with_{partner}"] = pairs
# 2. Every repetition of one do_bench, as percentiles (TFLOPS).
for name in ("v9", "v8", "triton"):
    times = sorted(bench(kernels[name], "all"))
    result[f"{name}_reps"] = {q: tf(times[int(q / 100 * (len(times) - 1))]) for q in (0, 10, 25, 50, 75, 90, 100)}
    result[f"{name}_reps"]["n"] = len(times)
# 3. Host: the time to enqueue one launch (the GPU kept busy by a long queue, so nothing waits on it).
for name, fn in kernels.items():
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(200):
        fn()
    enqueue = (time.perf_counter() - t0) / 200
    torch.cuda.synchronize()
    result.setdefault("host_us_per_launch", {})[name] = round(enqueue * 1e6, 1)
# 4. The same launches replayed from a CUDA graph: the kernel's own time, no host between launches.
for name in ("v7", "v8", "v9", "triton", "cublas"):
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            kernels[name]()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(20):
                kernels[name]()
        g.replay()
        torch.cuda.synchronize()
        runs = []
        for _ in range(10):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            g.replay()
            e1.record()
            torch.cuda.synchronize()
            runs.append(tf(e0.elapsed_time(e1) / 20))
        result.setdefault("graph", {})[name] = runs
    except Exception as e:  # noqa: BLE001 - a probe: say what failed and go on
        result.setdefault("graph", {})[name] = f"failed: {type(e).__name__}: {str(e)[:200]}"
json.dump(result, open(out, "w"), indent=1)
print(f"{M}×{N}×{K}  plain Triton config: {result['triton_config']}")
for name, v in result["alone"].items():
    print(f"alone {name:7} median {statistics.median(v):6.1f}  min {min(v):6.1f}  max {max(v):6.1f} TFLOPS")
for key in [k for k in result if "_with_" in k]:
    ks = [p[0] for p in result[key]]
    print(f"{key:18} kernel min {min(ks):6.1f} max {max(ks):6.1f}; partner {[p[1] for p in result[key]]}")
for name in ("v9", "v8", "triton"):
    print(f"{name} reps", result[f"{name}_reps"])
print("host µs per launch", result["host_us_per_launch"])
for name, v in result["graph"].items():
    print(f"graph {name:7}", v if isinstance(v, str) else f"min {min(v):6.1f} max {max(v):6.1f}")
