"""Two questions lesson 32's recordings leave open, for one GPU call (tools/probes/probe_decode.sh runs both).

  python tools/probes/probe_decode.py names OUT.json
      For every model shape, the kernels F.linear launches (names, grids, blocks, registers, shared memory) from
      torch.profiler: what cuBLAS runs where lesson 32's table loses (512x6144x4096, 128x4096x4096, ...).

  python tools/probes/probe_decode.py one WHO M N K
      Warm up WHO (ours: lesson 32's linear; flinear: F.linear; sum: torch.sum of W) on an M x N x K decode shape,
      then call it once more inside the NVTX range "probe": the launch that ncu profiles (--nvtx-include probe/).
      Under ncu with --cache-control all the kernel starts with L2 flushed, as cold_kernel_ms's read does, and
      gpu__time_duration is the kernel alone: if it is close to the cold-L2 figure (13-14 us at 16x4096x4096), the
      cost that does not grow with W is inside the kernel (first loads' latency, ramp); if it is close to W's bytes
      at full bandwidth (about 7.5 us), it is outside (launch, graph replay).
"""
from __future__ import annotations

import json
import sys

import torch
import torch.nn.functional as F

from gluon_course.measure.linear import linear_inputs


def _caller(who: str, M: int, N: int, K: int):
    a, w, c = linear_inputs(M, N, K, seed=0)           # the operands lesson 32's figures time
    if who == "ours" or who.startswith("ours@"):
        # ours@BLOCK_M=64,BLOCK_N=128,STAGES=8,num_warps=4: one configuration forced instead of the table's
        from gluon_course import load_solution

        linear = load_solution("32").linear
        config = {k: int(v) for k, v in (kv.split("=") for kv in who[5:].split(",") if kv)}
        return lambda: linear(a, w.t(), c, **config)
    if who == "flinear":
        return lambda: F.linear(a, w)
    if who == "sum":
        return lambda: torch.sum(w)
    raise SystemExit(f"WHO is ours, ours@KEY=VALUE,..., flinear or sum, not {who!r}")


def one(who: str, M: int, N: int, K: int) -> None:
    from gluon_course.measure.ncu import launch_in_range

    launch_in_range(_caller(who, M, N, K), warmups=5)    # compile, plan, warm the launcher


def names(out: str) -> None:
    from gluon_course.measure.device import kernels_launched
    from gluon_course.measure.gemm import MODEL_SHAPES

    found = {}
    for M, N, K in MODEL_SHAPES:
        a, w, _ = linear_inputs(M, N, K, seed=0)
        kernels = kernels_launched(lambda: F.linear(a, w))
        found[f"{M}x{N}x{K}"] = kernels
        print(f"{M}x{N}x{K}", " + ".join(f"{k['name'][:70]} grid {k['grid']}" for k in kernels), flush=True)
    json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "shapes": found},
              open(out, "w"), indent=1)


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "names":
        names(sys.argv[2] if len(sys.argv) > 2 else "cublas-kernels.json")
    elif len(sys.argv) == 6 and sys.argv[1] == "one":
        one(sys.argv[2], *map(int, sys.argv[3:]))
    else:
        raise SystemExit(__doc__)
