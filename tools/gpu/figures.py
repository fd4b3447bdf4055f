"""GPU session helper: measure every figure of the given lessons in ONE process (the library's time per shape is
measured once and shared), then time the given lessons' solutions at other tile configurations (what was tried).

    python tools/gpu/figures.py out.json 10 11 12 13 14 --sweep 13 14

Writes raw values to OUT.json and prints a table. Nothing is recorded into results/: `record` does that.
"""
import json
import sys
import time

import torch

from gluon_course import load_checks, load_solution
from gluon_course.grading.runner import measure_figure
from gluon_course.measure.gemm import gemm_figure

# Tiles tried for the pipelined versions (bf16 8192³), beside each lesson's CONFIG.
SWEEP = [
    {"STAGES": 4},
    {"num_warps": 8, "warps_m": 4},
    {"num_warps": 8, "warps_m": 2, "STAGES": 4},
    {"BLOCK_K": 64, "STAGES": 3},
    {"BLOCK_K": 64, "STAGES": 4, "num_warps": 8, "warps_m": 4},
    {"BLOCK_N": 256, "num_warps": 8, "warps_m": 2},
    # wgmma lessons (15 on): no warps_m; num_warps 8 is two warpgroups stacked along M
    {"BLOCK_K": 64},
    {"BLOCK_K": 64, "STAGES": 4},
    {"num_warps": 8, "BLOCK_N": 256},
    {"num_warps": 8, "BLOCK_N": 256, "BLOCK_K": 64},
    {"GROUP_M": 4},
    {"GROUP_M": 16},
    {"programs_per_sm": 2},
]


def main(argv):
    out_file, rest = argv[0], argv[1:]
    sweep = rest[rest.index("--sweep") + 1:] if "--sweep" in rest else []
    numbers = rest[:rest.index("--sweep")] if "--sweep" in rest else rest
    results = {"gpu": torch.cuda.get_device_name(), "figures": {}, "sweep": {}}
    for n in numbers:
        mod, checks = load_solution(n), load_checks(n).CHECKS
        for fig in checks.figures:
            started = time.time()
            try:
                o = measure_figure(fig, mod, n)
                entry = {"value": o.value, "text": o.text, "verdict": o.verdict, "details": o.details}
            except Exception as e:  # noqa: BLE001 - keep measuring the rest
                entry = {"error": f"{type(e).__name__}: {e}"}
            entry["seconds"] = round(time.time() - started, 1)
            results["figures"][f"{n}/{fig.key}"] = entry
            print(f"{n}/{fig.key:<26} {entry.get('value', float('nan')):8.4f}  {entry.get('text', entry.get('error'))}",
                  flush=True)
            json.dump(results, open(out_file, "w"), indent=1, default=str)
    for n in sweep:
        mod = load_solution(n)
        for extra in SWEEP:
            if set(extra) - set(getattr(mod, "CONFIG", extra)):
                continue          # a knob this lesson's launcher does not have (warps_m without mma_v2's grid)
            label = " ".join(f"{k}={v}" for k, v in extra.items())
            try:
                m = gemm_figure(lambda a, b, c: mod.matmul(a, b, c, **extra), 8192, 8192, 8192, torch.bfloat16,
                                label=f"{n} {label}")
                entry = {"value": m.value, "text": m.text}
            except Exception as e:  # noqa: BLE001
                entry = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            results["sweep"][f"{n} {label}"] = entry
            print(f"sweep {n} {label:<50} {entry.get('value', float('nan')):6.3f}  {entry.get('text', entry.get('error'))}",
                  flush=True)
            json.dump(results, open(out_file, "w"), indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
