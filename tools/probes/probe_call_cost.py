"""A GPU probe for lessons 31 and 32: what one call of each GEMM launcher costs on the host, split into its parts,
do_bench beside a CUDA-graph replay, lesson 31's launcher checked for correctness (odd shapes, both layouts of B,
memory reused at one address with another shape), and the model shapes of lesson 32 with the single tile of
lessons 19 and 31.

    python tools/probes/probe_call_cost.py OUT.json

All times in microseconds unless a key says otherwise. A trial, not a recording.
"""
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from triton.testing import do_bench

from gluon_course import load_solution
from gluon_course.nvidia.hopper import tma_descriptor
from gluon_course.measure import plain_triton
from gluon_course.measure.gemm import check_gemm, fp32_reductions
from gluon_course.measure.timing import graph_ms, host_us_per_call
from gluon_course.validate import require_matmul_args

out = sys.argv[1]
started = time.time()
result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
import triton  # noqa: E402

result["triton"] = triton.__version__
v9 = load_solution("19")
l31 = load_solution("31")
bf16 = torch.bfloat16


def weights(N, K):
    return torch.randn(N, K, device="cuda", dtype=bf16)


def bench_us(fn):
    return 1e3 * do_bench(fn, warmup=25, rep=100, return_mode="median")


# 1. Host cost of one call, and its parts (512 × 4096 × 4096, W N × K as nn.Linear keeps it).
M, N, K = 512, 4096, 4096
a = torch.randn(M, K, device="cuda", dtype=bf16)
w = weights(N, K)
wt = w.t()
b_kn = wt.contiguous()
c = torch.empty(M, N, device="cuda", dtype=bf16)
mm = l31.Matmul()
cfg = dict(v9.CONFIG)
nw = cfg.pop("num_warps")
descs = (tma_descriptor("a", a, [128, 64]), tma_descriptor("b", w, [256, 64]), tma_descriptor("c", c, [128, 256]))
sms = torch.cuda.get_device_properties(0).multi_processor_count
grid = (min(sms, 4 * 16),)
layouts = v9.kernel_layouts(nw, cfg["BLOCK_N"])
compiled = v9.matmul_kernel[grid](*descs, M, N, K, **cfg, **layouts, B_KN=False, num_warps=nw)
stream = triton.runtime.driver.active.get_current_stream(0)
calls = {
    "F.linear": lambda: F.linear(a, w),
    "torch.matmul out=": lambda: torch.matmul(a, wt, out=c),
    "plain Triton": lambda: plain_triton.matmul(a, b_kn, c),
    "v9 matmul()": lambda: v9.matmul(a, wt, c),
    "lesson 31 Matmul": lambda: mm(a, wt, c),
    "lesson 31 Matmul, c=None": lambda: mm(a, wt),
    "part: require_matmul_args": lambda: require_matmul_args(a, wt, c, b_either_way=True),
    "part: 3 tma_descriptor": lambda: (tma_descriptor("a", a, [128, 64]), tma_descriptor("b", w, [256, 64]),
                                       tma_descriptor("c", c, [128, 256])),
    "part: kernel_layouts": lambda: v9.kernel_layouts(nw, cfg["BLOCK_N"]),
    "part: JIT launch, descriptors built": lambda: v9.matmul_kernel[grid](*descs, M, N, K, **cfg, **layouts,
                                                                          B_KN=False, num_warps=nw),
    "part: CompiledKernel.run, descriptors built": lambda: compiled.run(
        grid[0], 1, 1, stream, compiled.function, compiled.packed_metadata, None, None, None, *descs, M, N, K,
        128, 256, 64, layouts["acc_layout"], cfg["STAGES"], cfg["GROUP_M"], cfg["LOAD_REGS"], False),
    "part: lesson 31 plan lookup": lambda: mm.plan(a, wt, c),
    "part: torch.empty C": lambda: torch.empty(M, N, device="cuda", dtype=bf16),
}
for fn in calls.values():
    fn()
torch.cuda.synchronize()
result["host_us"] = {name: round(host_us_per_call(fn), 2) for name, fn in calls.items()}
print("host µs per call:", json.dumps(result["host_us"], indent=1), flush=True)

# 2. Correctness of lesson 31's launcher.
checks = {}
with fp32_reductions():
    from gluon_course.grading.tma_gemm import MANY_TILES, TMA_SHAPES

    shapes = TMA_SHAPES + MANY_TILES
    checks["odd shapes, B K×N"] = check_gemm(lambda a_, b_, c_: l31.matmul(a_, b_, c_), shapes) or "ok"
    checks["odd shapes, B N×K"] = check_gemm(lambda a_, b_, c_: l31.matmul(a_, b_, c_), shapes, b_layout="col") or "ok"
    checks["odd shapes again (plans kept)"] = check_gemm(lambda a_, b_, c_: l31.matmul(a_, b_, c_), shapes) or "ok"
    # The same address with another shape: free a tensor, allocate another of the same bytes.
    x = torch.randn(256, 1024, device="cuda", dtype=bf16)
    y = torch.randn(1024, 512, device="cuda", dtype=bf16)
    l31.matmul(x, y)
    ptr = x.data_ptr()
    del x
    x2 = torch.randn(512, 512, device="cuda", dtype=bf16)
    y2 = torch.randn(512, 512, device="cuda", dtype=bf16)
    got = l31.matmul(x2, y2)
    ref = (x2.double() @ y2.double()).to(bf16)
    checks["same address, another shape"] = {"same_address": x2.data_ptr() == ptr,
                                             "max_abs_err": float((got.double() - ref.double()).abs().max())}
result["correct"] = checks
print("correct:", checks, flush=True)

# 3. do_bench beside the graph: the trap, and the launcher that closes it.
trap = {}
for (M, N, K) in ((2048, 2048, 8192), (4096, 4096, 4096), (512, 4096, 4096)):
    a = torch.randn(M, K, device="cuda", dtype=bf16)
    b = torch.randn(K, N, device="cuda", dtype=bf16)
    c = torch.empty(M, N, device="cuda", dtype=bf16)
    row = {}
    for name, fn in (("cublas", lambda: torch.matmul(a, b, out=c)), ("v9", lambda: v9.matmul(a, b, c)),
                     ("lesson31", lambda: mm(a, b, c)), ("triton", lambda: plain_triton.matmul(a, b, c))):
        fn()
        row[name] = {"bench_us": round(bench_us(fn), 2), "graph_us": round(1e3 * graph_ms(fn), 2)}
    trap[f"{M}x{N}x{K}"] = row
result["bench_vs_graph"] = trap
print("bench vs graph:", json.dumps(trap, indent=1), flush=True)

# 4. The model shapes (A·Wᵀ, W N × K), the single tile: F.linear, v9, lesson 31, plain Triton (W pre-transposed).
MS = (1, 16, 64, 128, 512, 2048, 8192)
NK = ((4096, 4096), (6144, 4096), (14336, 4096), (4096, 14336))
shapes = [(m, n, k) for (n, k) in NK for m in MS] + [(m, 128256, 4096) for m in (1, 16, 2048)]
table = {}
for (M, N, K) in shapes:
    a = torch.randn(M, K, device="cuda", dtype=bf16)
    w = weights(N, K)
    wt, b_kn = w.t(), w.t().contiguous()
    c = torch.empty(M, N, device="cuda", dtype=bf16)
    row = {}
    for name, fn in (("F.linear", lambda: F.linear(a, w)), ("v9", lambda: v9.matmul(a, wt, c)),
                     ("lesson31", lambda: mm(a, wt, c)), ("triton", lambda: plain_triton.matmul(a, b_kn, c))):
        try:
            fn()
            row[name] = {"bench_us": round(bench_us(fn), 2), "graph_us": round(1e3 * graph_ms(fn), 2)}
        except Exception as e:  # noqa: BLE001 - a probe: say what failed and go on
            row[name] = f"failed: {type(e).__name__}: {str(e)[:160]}"
    row["triton_config"] = plain_triton.chosen_config(M, N, K)
    table[f"{M}x{N}x{K}"] = row
    del a, w, wt, b_kn, c
    print(M, N, K, {k: v for k, v in row.items()}, flush=True)
result["model_shapes"] = table

# 5. Lesson 19's kernel at other tiles on some model shapes (no split-K, no swap-AB): how far tiles alone go.
TILES = ((128, 256, 3, 8), (128, 128, 4, 8), (128, 128, 4, 4), (64, 256, 4, 4), (64, 128, 6, 4), (64, 64, 8, 4))
sweep = {}
for (M, N, K) in [(m, n, k) for (n, k) in ((4096, 4096), (14336, 4096)) for m in (16, 128, 512, 2048)]:
    if time.time() - started > 420:
        sweep["stopped"] = "time"
        break
    a = torch.randn(M, K, device="cuda", dtype=bf16)
    w = weights(N, K)
    wt = w.t()
    c = torch.empty(M, N, device="cuda", dtype=bf16)
    lib = {"bench_us": round(bench_us(lambda: F.linear(a, w)), 2), "graph_us": round(1e3 * graph_ms(lambda: F.linear(a, w)), 2)}
    row = {"F.linear": lib}
    for bm, bn, st, nw in TILES:
        try:
            f = l31.Matmul({"BLOCK_M": bm, "BLOCK_N": bn, "STAGES": st, "num_warps": nw})
            f(a, wt, c)
            row[f"{bm}x{bn} s{st} w{nw}"] = {"bench_us": round(bench_us(lambda: f(a, wt, c)), 2),
                                             "graph_us": round(1e3 * graph_ms(lambda: f(a, wt, c)), 2)}
        except Exception as e:  # noqa: BLE001
            row[f"{bm}x{bn} s{st} w{nw}"] = f"failed: {type(e).__name__}: {str(e)[:160]}"
    sweep[f"{M}x{N}x{K}"] = row
    best = min((v["graph_us"], k) for k, v in row.items() if isinstance(v, dict) and k != "F.linear")
    print("tiles", M, N, K, "F.linear graph", lib["graph_us"], "best", best, flush=True)
result["tile_sweep"] = sweep
result["seconds"] = round(time.time() - started, 1)
json.dump(result, open(out, "w"), indent=1)


def ratio(row, name, key="bench_us"):
    try:
        return row["F.linear"][key] / row[name][key]
    except (KeyError, TypeError):
        return float("nan")


print(f"{'shape':>18} {'v9':>6} {'L31':>6} {'triton':>6}  (F.linear time / kernel time, do_bench; graph)")
for s, row in table.items():
    print(f"{s:>18} {ratio(row, 'v9'):6.2f} {ratio(row, 'lesson31'):6.2f} {ratio(row, 'triton'):6.2f}   "
          f"{ratio(row, 'v9', 'graph_us'):6.2f} {ratio(row, 'lesson31', 'graph_us'):6.2f}")
for name in ("v9", "lesson31", "triton"):
    print(name, "geomean", round(statistics.geometric_mean([ratio(r, name) for r in table.values()
                                                             if ratio(r, name) == ratio(r, name)]), 3))
print("seconds", result["seconds"])
