"""Lesson 33's GPU session: (a) correctness of each v10 step on odd shapes against an fp32 reference, its compiles
done first and timed apart; (b) one table of interleaved timings (v9, v10 steps 1 to 3, cuBLAS) with the SM clock and
power sampled during every timing; (c) one launch each of v9, step 1 and step 2 at 8192³ for Nsight Compute.

    python tools/gpu/v10_timing.py warmup OUT.json     compile every (kernel, B layout, specialization) the checks use
    python tools/gpu/v10_timing.py correct OUT.json    every case in its own try; OUT.json rewritten after each
    python tools/gpu/v10_timing.py time OUT.json [--sweep]
    python tools/gpu/v10_timing.py once v9|pingpong|cluster     two launches at 8192³ (ncu skips the first)

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
from gluon_course.measure.clocks import Sampler
from gluon_course.measure.gemm import GEMM_SWEEP_SHAPES, check_gemm, gemm_inputs


ORDER_SHAPES = ((300, 264, 520), (129, 136, 200), (4097, 2056, 200))   # cluster tiles overhanging M; 3 clusters


def cases():
    """(name, B layout, launch, shapes): the four (kernel, B layout) pairs of steps 1 and 2, step 2 on 3 clusters (a
    grid that does not divide the tiles), step 3 in both orders."""
    v10 = load_solution("33")
    shapes = tma_gemm.TMA_SHAPES + tma_gemm.MANY_TILES
    launchers = (("v10 step 1 (ping-pong)", lambda a, b, c: v10.pingpong_matmul(a, b, c), shapes),
                 ("v10 step 2 (cluster)", lambda a, b, c: v10.matmul(a, b, c), shapes),
                 ("v10 step 2 on 3 clusters", lambda a, b, c: v10.matmul(a, b, c, programs=3), ORDER_SHAPES),
                 ("v10 step 3 (subtiles, snake)", lambda a, b, c: v10.subtile_matmul(a, b, c), shapes),
                 ("v10 step 3 (subtiles, grouped)", lambda a, b, c: v10.subtile_matmul(a, b, c, SNAKE=0), shapes))
    return [(name, layout, launch, where) for name, launch, where in launchers for layout in ("row", "col")]


def specializations(shapes):
    """One shape per way Triton 3.9.0 specializes an integer argument (divisible by 16, equal to 1) over M, N, K: a
    launch on each compiles every variant the checks will use."""
    seen = {}
    for shape in shapes:
        seen.setdefault(tuple((x % 16 == 0, x == 1) for x in shape), shape)
    return list(seen.values())


def warmup(out):
    """Compile before any check is timed: each case's launcher, once per specialization of its shapes."""
    results = {}
    for name, layout, launch, where in cases():
        key = f"{name}, B {layout}"
        t0 = time.time()
        try:
            for M, N, K in specializations(where):
                a, b = gemm_inputs(M, N, K, torch.bfloat16, b_layout=layout)
                launch(a, b, torch.empty(M, N, dtype=torch.bfloat16, device="cuda"))
            torch.cuda.synchronize()
            results[key] = {"seconds": round(time.time() - t0, 1)}
        except Exception as e:  # noqa: BLE001 - recorded, and the other cases still compile
            results[key] = {"seconds": round(time.time() - t0, 1), "error": f"{type(e).__name__}: {e}"[:400]}
        print(f"compile {key:42s} {results[key]}", flush=True)
        json.dump(results, open(out, "w"), indent=1)
    return all("error" not in r for r in results.values())


def correct(out):
    results = {}
    for name, layout, launch, where in cases():
        key = f"{name}, B {layout}"
        t0 = time.time()
        try:
            problem = check_gemm(launch, shapes=where, dtypes=(torch.bfloat16,), b_layout=layout)
        except Exception as e:  # noqa: BLE001 - one case's failure must not hide the others
            problem = f"raised {type(e).__name__}: {e}"[:400]
        results[key] = problem or "ok"
        print(f"{key:42s}: {problem or 'correct'} ({time.time() - t0:.1f} s)", flush=True)
        json.dump(results, open(out, "w"), indent=1)
    return all(v == "ok" for v in results.values())


def once(which):
    """Two launches at 8192³ bf16 (the first may compile; Nsight Compute is told to skip it)."""
    v9, v10 = load_solution("19"), load_solution("33")
    fn = {"v9": v9.matmul, "pingpong": v10.pingpong_matmul, "cluster": v10.matmul}[which]
    a, b = gemm_inputs(8192, 8192, 8192, torch.bfloat16)
    c = torch.empty(8192, 8192, dtype=torch.bfloat16, device="cuda")
    for _ in range(2):
        fn(a, b, c)
    torch.cuda.synchronize()


def time_all(out, sweep):
    v9, v10 = load_solution("19"), load_solution("33")
    versions = {"v9": lambda a, b, c: v9.matmul(a, b, c), "v10.1 ping-pong": lambda a, b, c: v10.pingpong_matmul(a, b, c),
                "v10.2 cluster": lambda a, b, c: v10.matmul(a, b, c),
                "v10.3 subtiles, grouped": lambda a, b, c: v10.subtile_matmul(a, b, c, SNAKE=0),
                "v10.3 subtiles, snake": lambda a, b, c: v10.subtile_matmul(a, b, c, SNAKE=1),
                "cuBLAS": lambda a, b, c: torch.matmul(a, b, out=c)}
    sampler = Sampler()
    rows = {}
    for M, N, K in (GEMM_SWEEP_SHAPES if sweep else GEMM_SWEEP_SHAPES[:1]):
        a, b = gemm_inputs(M, N, K, torch.bfloat16)
        c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        for name, fn in list(versions.items()):
            try:
                fn(a, b, c)                               # compile and warm up
            except Exception as e:  # noqa: BLE001 - a version that fails is left out of the table, and said so
                print(f"{name} at {M}x{N}x{K}: {type(e).__name__}: {e}"[:300], flush=True)
                del versions[name]
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
    what, arg = sys.argv[1], sys.argv[2]
    if what in ("warmup", "correct"):
        sys.exit(0 if {"warmup": warmup, "correct": correct}[what](arg) else 1)
    if what == "once":
        once(arg)
    else:
        time_all(arg, "--sweep" in sys.argv)
