"""The tuning command of lesson 32: time configurations of the tuning space (gluon_course.nvidia.dispatch) on model
shapes, on the GPU, and write the dispatch table with its provenance.

    python tools/gpu/tune_linear.py results/tuning/nvidia-h200-linear.json
        every candidate (dispatch.candidates) on every model shape: a new table
    python tools/gpu/tune_linear.py OUT.json --merge results/tuning/nvidia-h200-linear.json \\
            --only 512x6144x4096,128x4096x4096 [--budget 140]
        a re-tune of the named shapes only: each shape's entry in the table is timed again beside the candidates the
        space gained since the first table (dispatch.new_candidates; with --space deep, only
        the deep rings of dispatch.deep_candidates; with --space wide, only the wide tiles and narrow swap-AB tiles
        of dispatch.wide_candidates; with --space hint, only the entry's own configuration with W_FIRST 0 and 1,
        W's L2 hint off and on, where the entry left it to the dispatch rule), and the table, with those entries
        merged, is
        written to OUT (which may be the table itself). Shapes are taken in the order given; at --budget seconds the
        re-tune stops and says which shapes it left as they were.

Each candidate is first checked against an fp32 reference on the shape's own random inputs (a wrong fast kernel
never wins), then timed as a user calls it: do_bench's median (L2 flushed before each call), warm, in one process.
In a re-tune a new configuration replaces the entry only when its median is at least 2% below the entry's own,
timed in the same run (less is within what two do_bench medians of one kernel differ by). Every candidate's time
goes into the table; a candidate that failed is kept with why. Run it on an otherwise idle GPU. It also prints each
winner beside F.linear, one do_bench pair each (informs only: the lesson's figures time the table in interleaved
pairs).
"""
import argparse
import datetime
import gzip
import json
import os
import subprocess
import time

import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

from gluon_course import load_solution
from gluon_course.measure.gemm import MODEL_SHAPES, compare_gemm, tolerance
from gluon_course.measure.families import FAMILIES
from gluon_course.nvidia.dispatch import (BASE, KEYS, SMS, candidates, deep_candidates, from_file, new_candidates,
                                          survey_candidates, wide_candidates)

def hint_candidates(entry_config: dict) -> list[dict]:
    """``--space hint``: the entry's own configuration with W's L2 hint off and on (W_FIRST 0 and 1, explicit), so
    that a shape whose rule-given W_FIRST loses gets the other written into its entry."""
    return [{**entry_config, "W_FIRST": v} for v in (0, 1)]


SPACES = {"new": new_candidates, "deep": deep_candidates, "wide": wide_candidates, "hint": hint_candidates}

# W_FIRST None in a row: the dispatch rule's (1 for M ≤ 512); 0 or 1: set by the entry.
ROW_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "num_warps", "SPLIT_K", "SWAP_AB", "BLOCK_N2", "W_FIRST")
SURVEY_REP = 10                  # do_bench's rep (ms) in a survey: thousands of timings, each of µs to a few ms
BETTER_BY = 0.98                 # a re-tune's new configuration must be this fraction of the entry's time or less
HOW = ("tools/gpu/tune_linear.py: candidates checked against an fp32 reference, then do_bench median (warmup 10 ms, "
       "rep 40 ms, L2 flushed), B = w.t() (W N × K)")


def parse_shapes(text: str) -> list:
    shapes = []
    for item in filter(None, text.split(",")):
        try:
            M, N, K = (int(x) for x in item.lower().split("x"))
        except ValueError:
            raise SystemExit(f"--only: {item!r} is not M x N x K (write it as 512x6144x4096)") from None
        if (M, N, K) not in MODEL_SHAPES:
            raise SystemExit(f"--only: {M}×{N}×{K} is not one of lesson 32's model shapes "
                             "(gluon_course.measure.gemm.MODEL_SHAPES)")
        shapes.append((M, N, K))
    return shapes


def us(fn, rep: int = 40) -> float:
    return 1e3 * do_bench(fn, warmup=min(10, rep), rep=rep, return_mode="median")


def time_candidates(lesson, M, N, K, configs, rep: int = 40) -> tuple:
    torch.manual_seed(M * 7 + N * 3 + K)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    b = w.t()
    ref = (a.double() @ b.double()).float()
    timed = []
    for cfg in configs:
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        row = {key: cfg[key] for key in ROW_KEYS}
        try:
            f = lesson.Linear(config=cfg)
            f(a, b, c)
            torch.cuda.synchronize()
            problem = compare_gemm(c, ref, tolerance(K, torch.bfloat16))
            if problem:
                row["failed"] = problem[:200]
            else:
                row["us"] = round(us(lambda: f(a, b, c), rep), 2)
        except Exception as e:  # noqa: BLE001 - a candidate that cannot run is recorded, never chosen
            row["failed"] = f"{type(e).__name__}: {str(e)[:200]}"
        timed.append(row)
    lib = round(us(lambda: F.linear(a, w), rep), 2)
    del a, w, b, ref
    return timed, lib


def provenance(started, sms) -> dict:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = ""
    commit = os.environ.get("GLUON_COURSE_COMMIT") or commit     # the checkout there may carry an older .git
    return {"gpu": torch.cuda.get_device_name(), "sms": sms, "triton": triton.__version__, "torch": torch.__version__,
            "date": datetime.date.today().isoformat(), "commit": commit or None,
            "seconds": round(time.time() - started, 1)}


def full(out, lesson, sms, started):
    entries = []
    for M, N, K in MODEL_SHAPES:
        timed, lib = time_candidates(lesson, M, N, K, candidates(M, N, K, sms))
        ok = [r for r in timed if "us" in r]
        best = min(ok, key=lambda r: r["us"])
        config = {key: best[key] for key in ROW_KEYS}
        entries.append({"M": M, "N": N, "K": K, "b": "nk", "config": config, "us": best["us"], "f_linear_us": lib,
                        "candidates": timed})
        print(f"{M:>5}×{N:>6}×{K:>5}  best {best['us']:9.2f} µs  F.linear {lib:9.2f} µs  ({lib / best['us']:.2f}×)  "
              f"{config}  [{len(ok)} of {len(timed)} ran]", flush=True)
    table = {"provenance": {**provenance(started, sms), "how": HOW + "; every candidate of dispatch.candidates"},
             "sms": sms, "keys": list(KEYS), "entries": entries}
    json.dump(table, open(out, "w"), indent=1)
    print(f"wrote {out}: {len(entries)} shapes in {time.time() - started:.0f} s (default SM count {SMS}, here {sms})")


def retune(out, table_path, shapes, budget, lesson, sms, started, space="new"):
    table = json.load(open(table_path))
    by_shape = {(e["M"], e["N"], e["K"]): e for e in table["entries"] if e["b"] == "nk"}
    done, left, changed = [], [], []
    for M, N, K in shapes:
        if time.time() - started > budget:
            left.append(f"{M}x{N}x{K}")
            continue
        entry = by_shape.get((M, N, K))
        if entry is None:
            raise SystemExit(f"{table_path} has no entry for {M}×{N}×{K}: run the full tuning first")
        # An entry as the file holds it: keys added since it was written take BASE's value, a retired one (STREAM_K:
        # 0) is dropped (dispatch.from_file).
        config = from_file(entry["config"], f"{table_path}: entry {M}×{N}×{K}")
        old = {key: {**BASE, **config}[key] for key in ROW_KEYS}
        new = hint_candidates({**config, **old}) if space == "hint" else SPACES[space](M, N, K, sms)
        timed, lib = time_candidates(lesson, M, N, K, [{**config, **old}] + new)
        old_row, rows = timed[0], timed[1:]
        ok = [r for r in rows if "us" in r]
        best = min(ok, key=lambda r: r["us"]) if ok else None
        old_us = old_row.get("us")
        replace = best is not None and (old_us is None or best["us"] <= BETTER_BY * old_us)
        when = {"date": datetime.date.today().isoformat(), "commit": os.environ.get("GLUON_COURSE_COMMIT"),
                "entry_us_now": old_us, "entry_config": old, "new_candidates": len(new), "space": space,
                "f_linear_us": lib}
        for r in rows:
            r["retune"] = when["date"]
        entry["candidates"] = entry.get("candidates", []) + rows
        if replace:
            entry["config"] = {key: best[key] for key in ROW_KEYS}
            entry["us"] = best["us"]
            changed.append(f"{M}x{N}x{K}")
        elif old_us is not None:
            entry["us"] = old_us
        entry["f_linear_us"] = lib
        entry.setdefault("retunes", []).append({**when, "replaced": replace})
        done.append(f"{M}x{N}x{K}")
        now = entry["us"]
        print(f"{M:>5}×{N:>6}×{K:>5}  entry {old_us} µs, best new {best and best['us']} µs -> "
              f"{'NEW ' + str(entry['config']) if replace else 'kept'}  F.linear {lib} µs ({lib / now:.2f}×)  "
              f"[{len(ok)} of {len(rows)} new ran]", flush=True)
    table["keys"] = list(KEYS)                      # a space may have added keys since the table was first written
    table["provenance"].setdefault("retunes", []).append({
        **provenance(started, sms), "how": HOW + "; the named shapes' entries timed again beside "
        f"{'tune_linear.' if space == 'hint' else 'dispatch.'}{SPACES[space].__name__}, replaced only at "
        f"{BETTER_BY:.2f}× the entry's time or less",
        "shapes": done, "replaced": changed, "left_for_time": left})
    json.dump(table, open(out, "w"), indent=1)
    print(f"wrote {out}: {len(done)} shapes re-tuned ({len(changed)} changed), {len(left)} left for time, in "
          f"{time.time() - started:.0f} s")


def survey(out, lesson, sms, started, families, budget, rep=SURVEY_REP):
    """``--survey``: every configuration of dispatch.survey_candidates on every shape of the named families
    (gluon_course.measure.families), F.linear beside each shape three times, written to ``out`` after every shape
    (a run cut short keeps what it timed). The cost model of lesson 32 is fitted on this file."""
    data = {"provenance": {**provenance(started, sms), "how": HOW.replace("rep 40 ms", f"rep {rep} ms")
                           + "; every configuration of dispatch.survey_candidates on the families' shapes; F.linear "
                             "three times a shape (its median kept)"},
            "sms": sms, "families": {}, "rows": []}
    for name in families:
        family = FAMILIES[name]
        data["families"][name] = {"source": family.source, "tp": family.tp}
        for M, N, K, projection in family.shapes():
            if time.time() - started > budget:
                data["provenance"].setdefault("left_for_time", []).append(f"{name}:{M}x{N}x{K}")
                continue
            timed, lib = time_candidates(lesson, M, N, K, survey_candidates(M, N, K, sms), rep)
            libs = sorted([lib] + [round(us(lambda: F.linear(*_linear_inputs(M, N, K)), rep), 2) for _ in range(2)])
            ok = [r for r in timed if "us" in r]
            best = min(ok, key=lambda r: r["us"]) if ok else None
            data["rows"].append({"family": name, "projection": projection, "M": M, "N": N, "K": K,
                                 "f_linear_us": libs[1], "candidates": timed})
            data["provenance"]["seconds"] = round(time.time() - started, 1)
            text = json.dumps(data, separators=(",", ":"))
            # results/tuning/<gpu>-survey.json.gz is where the cost model reads it: gzip when the name says so
            open(out, "wb").write(gzip.compress(text.encode())) if out.endswith(".gz") else open(out, "w").write(text)
            print(f"{name:>16} {projection:>13} {M:>5}×{N:>6}×{K:>5}  best {best and best['us']:>9} µs  F.linear "
                  f"{libs[1]:9.2f} µs  [{len(ok)} of {len(timed)} ran]  {time.time() - started:5.0f} s", flush=True)
    print(f"wrote {out}: {len(data['rows'])} shapes in {time.time() - started:.0f} s")


_INPUTS = {}


def _linear_inputs(M, N, K):
    """F.linear's inputs for one shape, made once (the survey times F.linear again after the candidates)."""
    if (M, N, K) not in _INPUTS:
        _INPUTS.clear()
        _INPUTS[(M, N, K)] = (torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
                              torch.randn(N, K, device="cuda", dtype=torch.bfloat16))
    return _INPUTS[(M, N, K)]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--merge", help="the table to re-tune (only with --only)")
    p.add_argument("--only", help="comma-separated model shapes MxNxK to re-tune")
    p.add_argument("--budget", type=float, default=1e9, help="seconds after which a re-tune takes no new shape")
    p.add_argument("--space", choices=sorted(SPACES), default="new",
                   help="what a re-tune times beside each entry: everything the space gained since the first table "
                        "(new), only the deep rings added on 2026-12-02 (deep), only the wide tiles and narrow "
                        "swap-AB tiles (wide), or the entry itself with W's L2 hint off and on (hint)")
    p.add_argument("--survey", help="comma-separated families of gluon_course.measure.families (or 'all'): time "
                                     "every configuration of dispatch.survey_candidates on their shapes")
    p.add_argument("--rep", type=int, default=SURVEY_REP, help="do_bench's rep (ms) in a survey")
    args = p.parse_args(argv)
    if args.survey:
        names = list(FAMILIES) if args.survey == "all" else args.survey.split(",")
        unknown = [n for n in names if n not in FAMILIES]
        if unknown:
            raise SystemExit(f"--survey: unknown families {unknown}; the course has {', '.join(FAMILIES)}")
        started = time.time()
        survey(args.out, load_solution("32"), torch.cuda.get_device_properties(0).multi_processor_count, started,
               names, args.budget, args.rep)
        return
    if bool(args.merge) != bool(args.only):
        raise SystemExit("--merge and --only go together: the table to re-tune and the shapes to re-tune in it")
    shapes = parse_shapes(args.only) if args.only else None
    started = time.time()
    lesson = load_solution("32")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if shapes:
        retune(args.out, args.merge, shapes, args.budget, lesson, sms, started, args.space)
    else:
        full(args.out, lesson, sms, started)


if __name__ == "__main__":
    main()
