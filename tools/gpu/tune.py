"""GPU session helper: what was tried. Times GEMM variants (a lesson's solution at another configuration, plain
Triton) in ONE process, each against torch.matmul in interleaved pairs, checks each first on odd shapes in a child
process under a time limit, and writes a trial file (not a recording) with provenance.

    python tools/gpu/tune.py OUT.json PLAN.json

PLAN.json: {"correct": [[lesson, config], ...], "figures": [[label, lesson, config, [M, N, K], dtype], ...],
            "sweep": [[label, lesson, config], ...]}; ``lesson`` is a lesson number, or "triton" for the course's
plain-Triton kernel (gluon_course.measure.plain_triton).
"""
import datetime
import json
import sys
import time

import torch
import triton

from gluon_course import load_solution
from gluon_course.measure import gemm as harness
from gluon_course.measure import plain_triton

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def launcher(lesson, config):
    if lesson == "triton":
        return lambda a, b, c: plain_triton.matmul(a, b, c)
    mod = load_solution(lesson)
    return lambda a, b, c: mod.matmul(a, b, c, **config)


def main(out_file, plan_file):
    plan = json.load(open(plan_file))
    out = {"what": "GEMM variants timed against torch.matmul in interleaved pairs (median of 3 pairs' ratios); a "
                   "trial, not a recording (tools/gpu/tune.py)",
           "gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
           "date": datetime.date.today().isoformat(), "correct": {}, "figures": {}, "sweep": {}}

    def save():
        json.dump(out, open(out_file, "w"), indent=1, default=str)

    from gluon_course.measure.isolated import check_in_child
    for lesson, config in plan.get("correct", []):
        started = time.time()
        key = f"{lesson} {json.dumps(config, sort_keys=True)}"
        problem = check_in_child(f"{__file__}:correct_child", [lesson, json.dumps(config)], timeout=120)
        out["correct"][key] = {"problem": problem, "seconds": round(time.time() - started, 1)}
        print(f"correct {key:<60} {'ok' if problem is None else problem[:200]}", flush=True)
        save()
    for label, lesson, config, shape, dtype in plan.get("figures", []):
        started = time.time()
        try:
            m = harness.gemm_figure(launcher(lesson, config), *shape, DTYPES[dtype], label=label,
                                    b_layout="col" if "NxK" in label else "row")
            entry = {"value": m.value, "text": m.text, "details": m.details}
            if lesson == "triton":
                entry["chosen"] = plain_triton.chosen_config(*shape)
        except Exception as e:  # noqa: BLE001 - keep measuring the rest
            entry = {"error": f"{type(e).__name__}: {str(e)[:400]}"}
        entry["seconds"] = round(time.time() - started, 1)
        out["figures"][label] = entry
        print(f"figure {label:<44} {entry.get('value', float('nan')):6.3f} spread "
              f"{entry.get('details', {}).get('spread', float('nan')):.3f}  {entry.get('text', entry.get('error'))}",
              flush=True)
        save()
    for label, lesson, config in plan.get("sweep", []):
        ratios, texts = {}, {}
        for shape in harness.GEMM_SWEEP_SHAPES:
            try:
                m = harness.gemm_figure(launcher(lesson, config), *shape, torch.bfloat16, label=label)
                ratios[shape], texts[shape] = m.value, f"{m.text}, spread {m.details['spread']:.3f}"
            except Exception as e:  # noqa: BLE001
                texts[shape] = f"{type(e).__name__}: {str(e)[:200]}"
            print(f"sweep {label:<30} {shape} {ratios.get(shape, float('nan')):.3f} {texts[shape]}", flush=True)
        entry = {"ratios": {"×".join(map(str, s)): r for s, r in ratios.items()},
                 "texts": {"×".join(map(str, s)): t for s, t in texts.items()}}
        if ratios:
            summary = harness.summarise(ratios)
            entry.update(geomean=summary.geomean, worst=["×".join(map(str, summary.worst[0])), summary.worst[1]])
        out["sweep"][label] = entry
        save()
    print("\nsummary")
    for label, e in out["figures"].items():
        print(f"  {label:<44} {e.get('value', float('nan')):6.3f}  {e.get('text', e.get('error', ''))[:60]}")
    for label, e in out["sweep"].items():
        print(f"  sweep {label:<38} geomean {e.get('geomean', float('nan')):.3f} worst {e.get('worst')}")
    return 0


def correct_child(lesson: str, config: str) -> str | None:
    """Odd shapes TMA can take, and shapes with several tiles per program, bf16 and fp16 (B K×N and, for a launcher
    that takes it, B as the transpose of an N×K matrix)."""
    from gluon_course.grading.tma_gemm import MANY_TILES, TMA_SHAPES

    run = launcher(lesson, json.loads(config))
    problem = harness.check_gemm(run, shapes=TMA_SHAPES + MANY_TILES)
    if problem is None and lesson == "19":
        problem = harness.check_gemm(run, shapes=TMA_SHAPES + MANY_TILES, b_layout="col")
    return problem


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
