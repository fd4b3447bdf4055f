"""Issue 42's GPU questions about lesson 36's attention kernels (solutions/36-attention), beyond the lesson's figures:
v0 and v2 at two key-block widths each (BLOCK_N 128 as the lesson runs them, and 64 with a deeper ring for v2), head
dim 64 and 128, against PyTorch's SDPA backends (cuDNN, FlashAttention-2, memory-efficient) and the course's plain
Triton attention, at S = 1k to 16k, causal and not.

Correctness first: the lesson's own check (gluon_course.nvidia.attention.correct) on the lesson's configurations,
then each extra configuration on the same odd shapes; the run ends itself after 540 s.

    python tools/probes/probe_attention.py --model     CPU: lesson 36's host-model checks on its solution
    python tools/probes/probe_attention.py --compile   CPU: lesson 36's sm_90 checks, and the table of SASS facts
    python tools/probes/probe_attention.py OUT.json    GPU: the steps above; a JSON and a table

The probe first held its own copy of the kernels and the lesson's checks (commit 911b1cf); lesson 36 holds them now.
"""
from __future__ import annotations

import json
import sys
import time

import torch
import triton

from gluon_course import load_checks, load_solution
from gluon_course.measure import plain_triton
from gluon_course.nvidia import attention

LESSON = load_solution("36")
# (the lesson's version, its configuration): the lesson's two and one narrower key block each.
CONFIGS = {"v0": ("v0", LESSON.CONFIGS["v0"]), "v2": ("v2", LESSON.CONFIGS["v2"]),
           "v0_n64": ("v0", {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8}),
           "v2_n64": ("v2", {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "STAGES": 3, "LOAD_REGS": 40})}
TIMED = [(S, 128, c) for S in (1024, 4096, 8192, 16384) for c in (True, False)] + [(4096, 64, c) for c in (True, False)]
WATCHDOG_S = 540


def facts_table() -> str:
    """The SASS facts of every configuration, head dim 64 and 128, causal and not, loop by loop."""
    lines = ["| kernel | hd | causal | regs | smem KiB | loop | HGMMA (A from) | EX2 / (scores + rows) | FSEL | "
             "STS+LDS | SHFL | BAR.SYNC |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, (version, cfg) in CONFIGS.items():
        for hd in (64, 128):
            for causal in (False, True):
                f = attention.kernel_facts(LESSON, version, hd, causal, cfg)
                for which, loop in zip(("unmasked", "masked"), f["loops"]):
                    mma = ", ".join(f"{n}× {key.replace('HGMMA.', '').replace('.F32.BF16', '')}"
                                    for key, n in sorted(loop["hgmma"].items()))
                    lines.append(f"| {name} | {hd} | {'yes' if causal else 'no'} | {f['registers']} | "
                                 f"{f['shared_bytes'] / 1024:.0f} | {which} | {mma} | {loop['ex2']} / "
                                 f"({loop['scores_per_thread']} + {loop['rows_per_thread']}) | {loop['fsel']} | "
                                 f"{loop['shared_stores'] + loop['shared_loads']} | {loop['shuffles']} | "
                                 f"{loop['cta_barriers']} |")
    return "\n".join(lines)


def time_shape(S: int, head_dim: int, causal: bool) -> dict:
    """Every configuration, plain Triton and SDPA's backends at one shape, launches interleaved: TFLOPS each."""
    B = max(1, attention.TOKENS // S)
    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(B, attention.HEADS, S, head_dim, device="cuda", generator=g).to(torch.bfloat16)
               for _ in range(3))
    out = torch.empty_like(q)
    calls = {name: LESSON.prepared(q, k, v, causal, version, out=out, config=cfg)[0]
             for name, (version, cfg) in CONFIGS.items()}
    calls["triton"] = lambda: plain_triton.attention(q, k, v, causal, out=out)
    refused = {}
    for backend in attention.SDPA_BACKENDS:
        fn = attention.sdpa_call(backend, q, k, v, causal)
        try:
            fn()
            torch.cuda.synchronize()
            calls[backend.split("_")[0].lower()] = fn
        except RuntimeError as e:
            refused[backend] = str(e).splitlines()[0][:200]
    for fn in calls.values():
        fn()
    torch.cuda.synchronize()
    ms = attention.interleaved_ms(calls)
    flops = 4 * B * attention.HEADS * S * S * head_dim * (0.5 if causal else 1)
    tflops = {name: flops / t / 1e9 for name, t in ms.items()}
    library = {name: t for name, t in tflops.items() if name in ("cudnn", "flash", "efficient")}
    return {"S": S, "batch": B, "head_dim": head_dim, "causal": causal, "ms": ms, "tflops": tflops,
            "best_library": max(library, key=library.get) if library else None, "refused": refused}


def gpu_main(path: str) -> None:
    import faulthandler
    import subprocess
    from datetime import datetime, timezone

    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    t0 = time.time()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    found = {"what": "issue 42: lesson 36's attention v0 and v2 at two key-block widths, against SDPA's backends and "
                     "plain Triton",
             "produced_by": {"probe": "tools/probes/probe_attention.py",
                             "command": "python tools/probes/probe_attention.py OUT.json",
                             "established_from": "the run's own output (the probe writes this field)"},
             "gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
             "cuda": torch.version.cuda, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "commit": commit, "configs": {name: cfg for name, (_, cfg) in CONFIGS.items()}}

    def save():
        with open(path, "w") as fh:
            json.dump(found, fh, indent=1)

    problem = attention.correct(LESSON)
    for name, (version, cfg) in CONFIGS.items():
        if problem is None and name not in LESSON.CONFIGS:
            for shape in attention.GPU_ODD_SHAPES:
                for hd in (64, 128):
                    for causal in (False, True):
                        problem = problem or attention.gpu_check_one(LESSON, version, shape, hd, causal, config=cfg)
    found["correct"] = problem or "passed"
    save()
    if problem:
        print(f"correctness failed, no timing: {problem}", flush=True)
        return
    print(f"correct ({time.time() - t0:.0f} s)", flush=True)

    rows = []
    for S, hd, causal in TIMED:
        try:
            rows.append(time_shape(S, hd, causal))
        except Exception as e:                        # kept in the JSON; the other rows still run
            found.setdefault("errors", []).append(f"S={S} hd={hd} causal={causal}: {type(e).__name__}: {e}")
            continue
        found["timings"] = rows
        save()
    found["seconds"] = round(time.time() - t0, 1)
    save()
    names = list(CONFIGS) + ["triton", "cudnn", "flash", "efficient"]
    print("\n| S | hd | causal | " + " | ".join(names) + " | best ours / best SDPA |")
    print("|---" * (len(names) + 4) + "|")
    for row in rows:
        t = row["tflops"]
        ours = max(t[n] for n in CONFIGS)
        ratio = f"{ours / t[row['best_library']]:.2f} ({row['best_library']})" if row["best_library"] else "-"
        print(f"| {row['S']} | {row['head_dim']} | {'yes' if row['causal'] else 'no'} | "
              + " | ".join(f"{t[n]:.0f}" if n in t else "-" for n in names) + f" | {ratio} |")


def cpu_checks(keys) -> str | None:
    """Lesson 36's checks of those keys on its solution: None, or the first failure's sentence."""
    from gluon_course.grading.runner import run_check

    checks = load_checks("36").CHECKS
    for key in keys:
        outcome = run_check(checks.check(key), LESSON, "36")
        if outcome.failed:
            return f"{key}: {outcome.detail}"
    return None


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--model"]:
        said = cpu_checks(("v0_model", "v2_model"))
    elif args[:1] == ["--compile"]:
        print(facts_table())
        said = cpu_checks(("tensor_cores_sm_90", "exp2_sm_90", "registers_sm_90", "masks_sm_90", "resources_sm_90"))
    elif len(args) == 1 and args[0].endswith(".json"):
        gpu_main(args[0])
        sys.exit(0)
    else:
        sys.exit(__doc__)
    print(said or "lesson 36's solution passes them")
    sys.exit(1 if said else 0)
