"""Issue 42: lesson 37's v4 where it is short of cuDNN, at other tiles. Its first recording (H100, 2026-12-05) read v4
at 0.82× and 0.73× cuDNN at S = 1 024 (not causal, causal) and 0.88× and 0.87× at head dim 64 (S = 4 096), where from
4 096 tokens at head dim 128 it is at or past cuDNN. The lesson's one configuration (CONFIGS["v4"]: 128 queries, keys
in blocks of 128, 2 ring slots) was chosen at head dim 128. This probe times v4 at the other tiles that compile and
fit on sm_90 with lesson 37's facts (keys in blocks of 64 or 128, 2 or 3 slots; 128 queries are what two consumer
warpgroups of 64 rows take), each checked correct first at lesson 36's odd shapes, against SDPA's backends:

    python tools/probes/probe_fa3_configs.py --compile   CPU: each candidate's sm_90 compile and lesson 37's facts
    python tools/probes/probe_fa3_configs.py OUT.json    GPU: correctness, then the candidates and SDPA's backends
                                                         interleaved at each shape; a JSON and a table (~2 minutes)
Its run on an H100 (2026-12-05, results/trials/nvidia-h100-2026-12-05-fa3-configs.json): every candidate correct;
the lesson's tile (BN128 ST2) the fastest at all five shapes (475 / 316 TFLOPS at 1k not causal / causal, 411 / 368 at
head dim 64, against cuDNN's 578 / 438 / 469 / 421). The losses at 1k and head dim 64 are not the tile's.
"""
from __future__ import annotations

import json
import sys
import time

import torch

from gluon_course import load_solution
from gluon_course.nvidia import attention

LESSON = load_solution("37")
BASE = LESSON.CONFIGS["v4"]
CANDIDATES = {f"BN{bn} ST{st}": {**BASE, "BLOCK_N": bn, "STAGES": st} for bn in (64, 128) for st in (2, 3)}
# (S, head dim, causal): the recording's short shapes, and 4k at head dim 128 causal as the control.
SHAPES = ((1024, 128, False), (1024, 128, True), (4096, 64, False), (4096, 64, True), (4096, 128, True))
WATCHDOG_S = 300


def compile_report() -> str:
    """CPU: each candidate at both head dims, causal: registers, spills, shared memory, lesson 37's facts."""
    lines = ["| candidate | head dim | registers | spills | shared KiB | lesson 37's facts |", "|---|---|---|---|---|---|"]
    for name, cfg in CANDIDATES.items():
        for hd in (64, 128):
            f = attention.fa3_facts(LESSON, "v4", hd, True, True, cfg=cfg)
            problem = attention.fa3_facts_problem(f, cfg, ("fit", "lesson36", "turn", "split"))
            lines.append(f"| {name} | {hd} | {f['registers']} | {f['spills']} | {f['shared_bytes'] // 1024} | "
                         f"{problem or 'hold'} |")
    return "\n".join(lines)


def gpu_main(path: str) -> None:
    import faulthandler
    from datetime import datetime, timezone

    import triton

    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    t0 = time.time()
    found = {"what": "issue 42: lesson 37's v4 at other tiles (keys in blocks of 64 or 128, 2 or 3 slots) against "
                     "SDPA's backends at the recording's short shapes",
             "produced_by": {"probe": "tools/probes/probe_fa3_configs.py",
                             "command": "python tools/probes/probe_fa3_configs.py OUT.json",
                             "established_from": "the run's own output (the probe writes this field)"},
             "gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
             "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "candidates": CANDIDATES,
             "incorrect": {}, "rows": []}
    for name, cfg in CANDIDATES.items():
        for hd in (64, 128):
            for shape in attention.GPU_ODD_SHAPES:
                for causal in (False, True):
                    problem = attention.gpu_check_one(LESSON, "v4", shape, hd, causal, config=cfg)
                    if problem:
                        found["incorrect"].setdefault(name, f"{shape} hd {hd} causal {causal}: {problem}")
    with open(path, "w") as fh:
        json.dump(found, fh, indent=1)
    for S, hd, causal in SHAPES:
        B = max(1, attention.TOKENS // S)
        g = torch.Generator(device="cuda").manual_seed(1)
        q, k, v = (torch.randn(B, attention.HEADS, S, hd, device="cuda", generator=g).to(torch.bfloat16)
                   for _ in range(3))
        out = torch.empty_like(q)
        calls = {name: LESSON.prepared(q, k, v, causal, "v4", out=out, config=cfg)[0]
                 for name, cfg in CANDIDATES.items() if name not in found["incorrect"]}
        for backend in ("CUDNN_ATTENTION", "FLASH_ATTENTION"):
            fn = attention.sdpa_call(backend, q, k, v, causal)
            if not attention.sdpa_refusal(fn):
                calls[backend.split("_")[0].lower()] = fn
        for fn in calls.values():
            fn()
        torch.cuda.synchronize()
        ms = attention.interleaved_ms(calls)
        flops = 4 * B * attention.HEADS * S * S * hd * (0.5 if causal else 1)
        found["rows"].append({"S": S, "head_dim": hd, "causal": causal, "batch": B,
                              "tflops": {n: round(flops / t / 1e9, 1) for n, t in ms.items()}})
        with open(path, "w") as fh:
            json.dump(found, fh, indent=1)
        del q, k, v, out
    found["seconds"] = round(time.time() - t0, 1)
    with open(path, "w") as fh:
        json.dump(found, fh, indent=1)
    names = list(found["rows"][0]["tflops"])
    print("incorrect:", found["incorrect"] or "none")
    print("| S | head dim | causal | " + " | ".join(names) + " |\n|---|---|---|" + "---|" * len(names))
    for row in found["rows"]:
        print(f"| {row['S']} | {row['head_dim']} | {row['causal']} | "
              + " | ".join(f"{row['tflops'].get(n, 0):.0f}" for n in names) + " |")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--compile"]:
        print(compile_report())
    elif args and not args[0].startswith("-"):
        gpu_main(args[0])
    else:
        print(__doc__)
