"""Issue 42: where lesson 38's decode loses at one sequence. Its first recording (H100, 2026-12-05) read 0.65× cuDNN
at 1 × 4 096 keys (32 splits of 128 keys) and 0.78 of the device copy at 1 × 32 768 (32 splits of 1 024), while from
256 MiB of cache up it streamed at the copy's speed. This probe times lesson 38's own DecodePlan at a range of split
counts against SDPA's backends, every candidate in CUDA graphs replayed in turn (no host launch in the time), after
checking each split count correct at that shape:

    python tools/probes/probe_decode_splits.py OUT.json     GPU: a JSON and a table (about two minutes)
    python tools/probes/probe_decode_splits.py --plan       CPU: each shape's splits, chunks and programs

The lesson's split rule is the row "rule"; the others pass ``splits=`` to DecodePlan, which rounds the chunk up to
whole key blocks (so two requested counts can give one plan: the table shows the plan's own splits and chunk).

Its first run (H100, 2026-12-05, results/trials/nvidia-h100-2026-12-05-decode-splits.json) timed a variant whose
combine loops went 8 splits a step, and found the best split count one program an SM at each of its three shapes;
the lesson took both (its split rule now aims at one program an SM, its combine unrolled). The variant is now the
other way round, ``one_at_a_time``: the lesson's module with ``combine_splits``' loops as they were, one split a trip,
where each partial's load is waited for (an L2 round trip) before the next is issued: 2 · splits dependent trips.

    python tools/probes/probe_decode_splits.py --model      CPU: the one-at-a-time variant in the host model (the
                                                            lesson's decode shapes, scores past exp2's range, two
                                                            program orders) and its sm_90 compile facts
"""
from __future__ import annotations

import json
import sys
import time

import torch

from gluon_course import load_solution
from gluon_course.nvidia import decode

LESSON = load_solution("38")

# combine_splits' two loops: as the lesson writes them (8 splits a step), and as its first version did (one
# split a trip, each load waited for before the next is issued).
LESSON_LOOPS = """    for t0 in range(0, used, UNROLL):
        for u in gl.static_range(UNROLL):
            live = t0 + u < used
            m_t = gl.load(part_m_ptr + (first + t0 + u) * GROUP + rows, mask=valid & live, other=0.0,
                          cache_modifier=".cg")
            m = gl.maximum(m, gl.where(live, m_t, float("-inf")))
    acc = gl.zeros([GROUP_P2, HEAD_DIM], gl.float32, layout=io_layout)
    l_sum = gl.zeros([GROUP_P2], gl.float32, layout=gl.SliceLayout(1, io_layout))
    for t0 in range(0, used, UNROLL):
        for u in gl.static_range(UNROLL):
            t = t0 + u
            in_use = t < used
            m_t = gl.load(part_m_ptr + (first + t) * GROUP + rows, mask=valid & in_use, other=0.0,
                          cache_modifier=".cg")
            l_t = gl.load(part_l_ptr + (first + t) * GROUP + rows, mask=valid & in_use, other=0.0,
                          cache_modifier=".cg")
            o_t = gl.load(part_o_ptr + ((first + t) * GROUP + rows)[:, None] * HEAD_DIM + cols[None, :],
                          mask=(valid & in_use)[:, None], other=0.0, cache_modifier=".cg")
            ### BEGIN SOLUTION: split t's sums brought to the common maximum (weight 0 past used), added to acc, l_sum
            w = gl.where(in_use, gl.exp2(m_t - m), 0.0)
            acc = acc + w[:, None] * o_t
            l_sum = l_sum + w * l_t
            ### END SOLUTION
"""
ONE_AT_A_TIME_LOOPS = """    for t in range(used):
        m = gl.maximum(m, gl.load(part_m_ptr + (first + t) * GROUP + rows, mask=valid, other=0.0,
                                  cache_modifier=".cg"))
    acc = gl.zeros([GROUP_P2, HEAD_DIM], gl.float32, layout=io_layout)
    l_sum = gl.zeros([GROUP_P2], gl.float32, layout=gl.SliceLayout(1, io_layout))
    for t in range(used):
        m_t = gl.load(part_m_ptr + (first + t) * GROUP + rows, mask=valid, other=0.0, cache_modifier=".cg")
        l_t = gl.load(part_l_ptr + (first + t) * GROUP + rows, mask=valid, other=0.0, cache_modifier=".cg")
        o_t = gl.load(part_o_ptr + ((first + t) * GROUP + rows)[:, None] * HEAD_DIM + cols[None, :],
                      mask=valid[:, None], other=0.0, cache_modifier=".cg")
        ### BEGIN SOLUTION: split t's sums brought to the common maximum, then added to acc and l_sum
        w = gl.exp2(m_t - m)
        acc = acc + w[:, None] * o_t
        l_sum = l_sum + w * l_t
        ### END SOLUTION
"""


def one_at_a_time_module(directory=None):
    """Lesson 38's solution with combine_splits' loops one split a trip (ONE_AT_A_TIME_LOOPS), imported as a module
    of its own."""
    import tempfile
    from pathlib import Path

    from gluon_course.course import lesson, load_module_file

    text = lesson("38").solution_path.read_text()
    if text.count(LESSON_LOOPS) != 1:
        raise RuntimeError("lesson 38's combine_splits changed: update LESSON_LOOPS in this probe")
    folder = Path(directory or tempfile.mkdtemp(prefix="decode-one-at-a-time-"))
    path = folder / "decode_one_at_a_time.py"
    path.write_text(text.replace(LESSON_LOOPS, ONE_AT_A_TIME_LOOPS))
    return load_module_file(path, "decode_one_at_a_time")


def model_check(mod=None) -> str | None:
    """CPU: the one-at-a-time variant through lesson 38's own host-model and compile checks (decode shapes, scores past
    exp2's range, the same bits with the programs in two orders, the sm_90 compile's facts at head dim 128 and 64)."""
    mod = mod or one_at_a_time_module()
    return (decode.decode_model_check()(mod) or decode.order_check(mod) or decode.decode_facts_check()(mod))
SHAPES = ((1, 4096), (1, 32768), (4, 8192)) + tuple(s for s in decode.TIMED if s[0] > 1)   # batch × keys
SPLITS = (None, 1, 2, 4, 8, 16, 32)                       # None: the lesson's split rule
WATCHDOG_S = 300


def inputs(batch: int, L: int):
    g = torch.Generator(device="cuda").manual_seed(2)
    q = torch.randn(batch, decode.HQ, 1, decode.HEAD_DIM, device="cuda", generator=g).to(torch.bfloat16)
    k, v = (torch.randn(batch, decode.HKV, L, decode.HEAD_DIM, device="cuda", generator=g).to(torch.bfloat16)
            for _ in "kv")
    return q, k, v, torch.full((batch,), L, dtype=torch.int32, device="cuda")


def sweep(batch: int, L: int, copy_tbs: float, variants: dict) -> dict:
    """Each variant's plan at each split count (checked first with decode.gpu_decode_problem at this shape) and SDPA's
    backends, in CUDA graphs replayed in turn: µs and the cache's bytes over the time as a fraction of the copy's
    bandwidth."""
    q, k, v, seq_lens = inputs(batch, L)
    calls, plans, problems = {}, {}, {}
    for variant, mod in variants.items():
        for s in SPLITS:
            name = f"{variant} {'rule' if s is None else f'splits={s}'}"
            shape = (batch, decode.HQ, decode.HKV, L, (L,) * batch)
            problem = decode.gpu_decode_problem(mod, shape, make_plan=lambda q_, k_, v_, n_, o_, s=s, mod=mod:
                                                mod.DecodePlan(q_, k_, v_, n_, o_, splits=s))
            if problem:
                problems[name] = problem
                continue
            plan = mod.DecodePlan(q, k, v, seq_lens, splits=s)
            plans[name] = {"splits": plan.splits, "chunk": plan.chunk}
            calls[name] = plan.launch
    library, refused = decode.sdpa_backends(q, k, v, False)
    us, not_captured = decode.graphs_in_turn({**calls, **library})
    nbytes = 2 * k.numel() * k.element_size()
    return {"batch": batch, "L": L, "cache_bytes": nbytes, "plans": plans, "us": us,
            "fraction_of_copy": {n: nbytes / (t * 1e-6) / 1e12 / copy_tbs for n, t in us.items()},
            "incorrect": problems, "refused": {**refused, **not_captured}}


def plan_report() -> str:
    """CPU: the plan each split count gives at each shape (DecodePlan's own rounding), from the lesson's split rule."""
    lines = ["| batch × L | asked | splits | chunk | programs |", "|---|---|---|---|---|"]
    cfg_block = LESSON.DECODE_CONFIG["BLOCK_N"]
    for batch, L in SHAPES:
        for s in SPLITS:
            if s is None:
                splits, chunk = LESSON.split_rule(batch, decode.HKV, L, cfg_block, 132)
            else:
                chunk = -(-(-(-L // s)) // cfg_block) * cfg_block
                splits = -(-L // chunk)
            lines.append(f"| {batch} × {L} | {'rule' if s is None else s} | {splits} | {chunk} | "
                         f"{splits * batch * decode.HKV} |")
    return "\n".join(lines)


def gpu_main(path: str) -> None:
    import faulthandler
    from datetime import datetime, timezone

    import triton
    from gluon_course.measure.timing import copy_ceiling_tbs

    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    t0 = time.time()
    found = {"what": "issue 42: lesson 38's decode (and its combine one split a trip) at several split counts against "
                     "SDPA's backends, in CUDA graphs",
             "produced_by": {"probe": "tools/probes/probe_decode_splits.py",
                             "command": "python tools/probes/probe_decode_splits.py OUT.json",
                             "established_from": "the run's own output (the probe writes this field)"},
             "gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
             "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "rows": []}
    copy = copy_ceiling_tbs()
    found["copy_tbs"] = copy
    variants = {"lesson": LESSON, "one_at_a_time": one_at_a_time_module()}
    for batch, L in SHAPES:
        found["rows"].append(sweep(batch, L, copy, variants))
        with open(path, "w") as fh:
            json.dump(found, fh, indent=1)
    found["seconds"] = round(time.time() - t0, 1)
    with open(path, "w") as fh:
        json.dump(found, fh, indent=1)
    print(f"copy {copy:.2f} TB/s\n\n| batch × L | candidate | splits | chunk | µs | of the copy |\n|---|---|---|---|---|---|")
    for row in found["rows"]:
        for name, t in sorted(row["us"].items(), key=lambda kv: kv[1]):
            plan = row["plans"].get(name, {})
            print(f"| {row['batch']} × {row['L']} | {name} | {plan.get('splits', '')} | {plan.get('chunk', '')} | "
                  f"{t:.1f} | {row['fraction_of_copy'][name]:.2f} |")
        for name, why in row["incorrect"].items():
            print(f"| {row['batch']} × {row['L']} | {name} | incorrect: {why} | | | |")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--plan"]:
        print(plan_report())
    elif args[:1] == ["--model"]:
        t0 = time.time()
        print(f"the one-at-a-time combine: {model_check() or 'passes lesson 38’s host-model and compile checks'} "
              f"({time.time() - t0:.0f} s)")
    elif args and not args[0].startswith("-"):
        gpu_main(args[0])
    else:
        print(__doc__)
