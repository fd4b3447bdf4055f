"""Lesson 34's GPU steps (tools/gpu/session-fp8.sh runs them, each under its own time limit):

    python tools/gpu/fp8_session.py correct OUT.json   # what torch does here, torch._scaled_mm against the reference,
                                                       # the kernel on the odd shapes, the refusals, the error figure
    python tools/gpu/fp8_session.py time OUT.json      # tile candidates against torch._scaled_mm and bf16 v9

Every kernel is checked against the fp64 product of the dequantized inputs before it is timed (nvidia.fp8)."""
import json
import sys
import time

import torch

from gluon_course import load_checks, load_solution
from gluon_course.measure.timing import paired_ms
from gluon_course.nvidia import fp8

# The lesson's CONFIG first, then two others of the same shared memory (about 208 KiB): a BLOCK_K of 64 with twice the
# slots (64-byte swizzle, twice the barrier waits per product), and the tile turned 256 × 128.
CANDIDATES = {"128x256x128 s3": {}, "128x256x64 s6": {"BLOCK_K": 64, "STAGES": 6},
              "256x128x128 s3": {"BLOCK_M": 256, "BLOCK_N": 128}}
SHAPES = ((8192, 8192, 8192),) + load_checks("34").SWEEP


def _save(path, data):
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


def correct(path):
    mod, checks = load_solution("34"), load_checks("34")
    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
    probe = torch.tensor([447.0, 500.0, 1e6, float("inf")])
    out["e4m3_cast_cpu"] = probe.to(fp8.FP8).float().tolist()
    out["e4m3_cast_cuda"] = probe.cuda().to(fp8.FP8).float().cpu().tolist()
    for per_row in (False, True):
        a, w, sa, sw = fp8.fp8_inputs(1000, 1000, 1008, per_row)
        ref = fp8.reference(a, w, sa, sw)
        for fast in (True, False):
            c = fp8.scaled_mm(a, w, sa, sw, torch.empty(1000, 1000, dtype=torch.bfloat16, device="cuda"), fast)
            out[f"scaled_mm_per_row={per_row}_fast={fast}"] = (
                fp8.compare(c, ref, fp8.allowed_error(ref, a, w, sa, sw)) or "within the bound")
    t = time.time()
    out["correct_fp8_shapes"] = fp8.check_fp8(lambda a, w, sa, sw, c: mod.matmul(a, w, sa, sw, c)) or "passed"
    out["launcher_refuses"] = checks.launcher_refuses(mod) or "passed"
    out["correct_s"] = round(time.time() - t, 1)
    m = checks.CHECKS.figure("error_8192").measure(mod)
    out["error_8192"] = {"value": m.value, "text": m.text, "details": m.details}
    _save(path, out)
    for k, v in out.items():
        print(f"{k}: {v}")
    return 0 if out["correct_fp8_shapes"] == "passed" and out["launcher_refuses"] == "passed" and m.value <= 1 else 1


def _tflops(M, N, K, ms):
    return 2 * M * N * K / (ms * 1e-3) / 1e12


def timing(path):
    mod, v9 = load_solution("34"), load_solution("19")
    rows = {}
    for shape in SHAPES:
        M, N, K = shape
        a, w, sa, sw = fp8.fp8_inputs(M, N, K, per_row=False)
        ref = fp8.reference(a, w, sa, sw)
        allowed = fp8.allowed_error(ref, a, w, sa, sw)
        c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        lib = torch.empty_like(c)
        key = "×".join(map(str, shape))
        rows[key] = {}
        for name, over in CANDIDATES.items():
            c.fill_(float("nan"))
            mod.matmul(a, w, sa, sw, c, **over)
            problem = fp8.compare(c, ref, allowed)
            if problem:
                rows[key][name] = {"wrong": problem}
                continue
            p = paired_ms(lambda: mod.matmul(a, w, sa, sw, c, **over), lambda: fp8.scaled_mm(a, w, sa, sw, lib))
            rows[key][name] = {"over_scaled_mm_fast": round(p.ratio, 4), "tflops": round(_tflops(M, N, K, p.kernel), 1),
                               "scaled_mm_fast_tflops": round(_tflops(M, N, K, p.ceiling), 1), "ratios": p.details()["ratios"]}
        if shape == (8192, 8192, 8192):
            best = max((n for n in CANDIDATES if "tflops" in rows[key][n]), key=lambda n: rows[key][n]["tflops"])
            p = paired_ms(lambda: mod.matmul(a, w, sa, sw, c, **CANDIDATES[best]),
                          lambda: fp8.scaled_mm(a, w, sa, sw, lib, fast_accum=False))
            rows[key]["scaled_mm_promoted"] = {"candidate": best, "over_scaled_mm_promoted": round(p.ratio, 4),
                                               "scaled_mm_promoted_tflops": round(_tflops(M, N, K, p.ceiling), 1)}
            a16, w16 = fp8.dequantized(a, sa).to(torch.bfloat16), fp8.dequantized(w, sw).to(torch.bfloat16)
            c16 = torch.empty_like(c)
            for name, over in CANDIDATES.items():
                if "tflops" not in rows[key][name]:
                    continue
                p = paired_ms(lambda: mod.matmul(a, w, sa, sw, c, **over), lambda: v9.matmul(a16, w16.t(), c16))
                rows[key][name]["over_bf16_v9"] = round(p.ratio, 4)
                rows[key][name]["bf16_v9_tflops"] = round(_tflops(M, N, K, p.ceiling), 1)
            del a16, w16, c16
        del a, w, ref, allowed, c, lib
        torch.cuda.empty_cache()
        _save(path, rows)
        print(key, json.dumps(rows[key]), flush=True)
    return 0


if __name__ == "__main__":
    step, path = sys.argv[1], sys.argv[2]
    sys.exit({"correct": correct, "time": timing}[step](path))
