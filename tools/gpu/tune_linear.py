"""The tuning command of lesson 32: time every configuration of the tuning space (gluon_course.nvidia.dispatch
.candidates) on each model shape, on the GPU, and write the dispatch table with its provenance.

    python tools/gpu/tune_linear.py results/tuning/nvidia-h200-linear.json

Each candidate is first checked against an fp32 reference on the shape's own random inputs (a wrong fast kernel
never wins), then timed as a user calls it: do_bench's median (L2 flushed before each call), warm, in one process.
The winner of each shape and every candidate's time go into the table; a candidate that failed is kept with why.
Run it on an otherwise idle GPU. It also prints each winner beside F.linear, one do_bench pair each (informs only:
the lesson's figures time the table in interleaved pairs).
"""
import datetime
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

from gluon_course import load_solution
from gluon_course.measure.gemm import MODEL_SHAPES, compare_gemm, tolerance
from gluon_course.nvidia.dispatch import KEYS, SMS, candidates

out = sys.argv[1]
started = time.time()
lesson = load_solution("32")
sms = torch.cuda.get_device_properties(0).multi_processor_count
bf16 = torch.bfloat16


def us(fn) -> float:
    return 1e3 * do_bench(fn, warmup=10, rep=40, return_mode="median")


entries, log = [], []
for M, N, K in MODEL_SHAPES:
    torch.manual_seed(M * 7 + N * 3 + K)
    a = torch.randn(M, K, device="cuda", dtype=bf16)
    w = torch.randn(N, K, device="cuda", dtype=bf16)
    b = w.t()
    ref = (a.double() @ b.double()).float()
    timed = []
    for cfg in candidates(M, N, K, sms):
        c = torch.full((M, N), float("nan"), device="cuda", dtype=bf16)
        row = {key: cfg[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "num_warps", "SPLIT_K",
                                          "SWAP_AB")}
        try:
            f = lesson.Linear(config=cfg)
            f(a, b, c)
            torch.cuda.synchronize()
            problem = compare_gemm(c, ref, tolerance(K, bf16))
            if problem:
                row["failed"] = problem[:200]
            else:
                row["us"] = round(us(lambda: f(a, b, c)), 2)
        except Exception as e:  # noqa: BLE001 - a candidate that cannot run is recorded, never chosen
            row["failed"] = f"{type(e).__name__}: {str(e)[:200]}"
        timed.append(row)
    ok = [r for r in timed if "us" in r]
    best = min(ok, key=lambda r: r["us"])
    config = {key: best[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "num_warps", "SPLIT_K", "SWAP_AB")}
    lib = round(us(lambda: F.linear(a, w)), 2)
    entries.append({"M": M, "N": N, "K": K, "b": "nk", "config": config, "us": best["us"], "f_linear_us": lib,
                    "candidates": timed})
    print(f"{M:>5}×{N:>6}×{K:>5}  best {best['us']:9.2f} µs  F.linear {lib:9.2f} µs  ({lib / best['us']:.2f}×)  "
          f"{config}  [{len(ok)} of {len(timed)} ran]", flush=True)
    del a, w, b, ref

try:
    commit = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], capture_output=True, text=True).stdout.strip()
except OSError:
    commit = ""
commit = os.environ.get("GLUON_COURSE_COMMIT") or commit     # the checkout there may carry an older .git
table = {"provenance": {"gpu": torch.cuda.get_device_name(), "sms": sms, "triton": triton.__version__,
                        "torch": torch.__version__, "date": datetime.date.today().isoformat(),
                        "commit": commit or None, "seconds": round(time.time() - started, 1),
                        "how": "tools/gpu/tune_linear.py: every candidate of gluon_course.nvidia.dispatch.candidates "
                               "checked against an fp32 reference, then do_bench median (warmup 10 ms, rep 40 ms, L2 "
                               "flushed), B = w.t() (W N × K)"},
         "sms": sms, "keys": list(KEYS), "entries": entries}
json.dump(table, open(out, "w"), indent=1)
print(f"wrote {out}: {len(entries)} shapes in {time.time() - started:.0f} s (default SM count {SMS}, here {sms})")
