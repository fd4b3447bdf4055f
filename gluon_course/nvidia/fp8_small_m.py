"""How lesson 34's fp8 kernel picks a tile and a split for a small batch (M ≤ 512): a cost model of four constants,
fitted on a GPU's timings of the candidates, that ranks every candidate of the shape's space.

At a small batch the fp8 product is a stream of W: at M = 16 the products of one MiB of W take ~0.02 µs of an H200's
fp8 tensor cores, reading that MiB ~0.2 µs. What sets the time is how fast the programs that run can pull their bytes,
and that is capped twice: by HBM for the whole launch, and by what one SM keeps in flight for the busiest program. A
persistent launch of ``units`` work units (tiles × SPLIT_K) on S SMs runs ``rounds = ⌈units / programs⌉`` of them on
its busiest program, each of ``steps`` K steps that copy ``(rows of the kernel's A tile + rows of its B tile) ·
BLOCK_K`` bytes and do ``2 · BLOCK_M · BLOCK_N · BLOCK_K`` products (a tile pads the batch: the products of the
padding are paid too). So

    t_sm  = rounds · steps · max(step bytes / copy_gbs, step flops / fp8_tflops)     the busiest program
    t_hbm = (A + W + C + split-K's slices written and read) / hbm_tbs                 the launch's bytes
    t     = ‖(t_sm, t_hbm)‖₄ + rounds · split_us   (the last term only when K is split)

(the 4-norm: the larger of the two, rounded near the corner, as lesson 32's model joins them). ``split_us`` is what a
split unit costs beyond its steps, per round: its fp32 slice stored, the counter, the sum in the last unit, an
epilogue per slice instead of per tile. It is why a split that turns 224 tiles into 896 units (7 rounds) loses to
the two rounds of the unsplit 224: the rounds pay it each time.

The four constants are fitted on the timings of lesson 34's small-M trial (``TRIAL``) by a grid search over round
values (least squares on log t); the rule is judged on weight shapes it was not fitted on
(``leave_one_weight_out``). What the model leaves out: the ring's depth (8 or 12 stages time the same to 2% in the
trial, and the model cannot tell them apart), L2's reuse of the activations across W's tiles, the L2 hint on W, the
epilogue's overlap with the next unit, and clocks under power. Ties (a 64 × 128 swap-AB tile and a 128 × 64 plain one
count the same bytes and products) go to the fewer splits, the shallower ring, then swap-AB.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

SMS = 132                       # an H200's (and an H100 SXM's) SMs
BLOCK_K = 128                   # a tile's row of fp8 bytes: the 128-byte swizzle's width (lesson 34's BLOCK_K)
SHARED_BYTES = 227 * 1024       # what one program may use on Hopper
SWAP_UP_TO_M = 128              # swap-AB's tiles for M ≤ 128; lesson 34's orientation above
LARGEST_SMALL_M = 512           # above: lesson 34's CONFIG (0.96–1.03× torch._scaled_mm from M = 1024, issue 44)
MOST_SPLIT = 8
SWAP_ROWS = (128, 64)           # W's rows per swap-AB tile
SWAP_STAGES = 8                 # the ring's depth for swap-AB tiles, where it fits
# 128 × BLOCK_N tiles in lesson 34's orientation: (BLOCK_N, num_warps, STAGES, most splits). 128 × 256 does not split:
# split, its kernel spills on sm_90 (168 registers a thread).
PLAIN_TILES = ((256, 8, 3, 1), (128, 8, 6, 4), (64, 4, 8, 4))
BASE = {"BLOCK_K": BLOCK_K, "GROUP_M": 8, "LOAD_REGS": 40, "SPLIT_K": 1, "SWAP_AB": False, "W_FIRST": 1}

TRIAL = "results/trials/nvidia-h200-2026-12-05-fp8-small-m.json"
# The trial's weight shapes (N, K): a square layer, an MLP's up/gate and its down projection.
WEIGHTS = ((8192, 8192), (14336, 4096), (4096, 14336))
BATCHES = (16, 128, 512)


@dataclass(frozen=True)
class Constants:
    hbm_tbs: float               # the launch's bytes at this rate (TB/s)
    copy_gbs: float              # one SM's copies at this rate (GB/s)
    fp8_tflops: float            # one SM's fp8 products at this rate (TFLOPS)
    split_us: float              # a split unit's cost beyond its steps, per round (µs)


# The grid the fit searches: round values, wide enough that no fitted constant sits on its edge
# (``fit`` refuses an edge).
GRID = {"hbm_tbs": tuple(x / 10 for x in range(18, 41, 2)), "copy_gbs": tuple(range(40, 221, 20)),
        "fp8_tflops": (4, 6, 8, 10, 12, 14, 16, 18), "split_us": tuple(x / 2 for x in range(0, 17))}
# Fitted on all nine shapes of TRIAL (``fit(trial_rows(load_trial()))``; tests/test_fp8_small_m.py fits again and
# compares).
FITTED = Constants(hbm_tbs=2.6, copy_gbs=100, fp8_tflops=12, split_us=2.5)


# -- The candidates ----------------------------------------------------------------------------------------------------

def ring_fits(block_m: int, block_n: int, stages: int) -> bool:
    """STAGES slots of fp8 tiles, C's bf16 tile and a KiB for the barriers within one program's shared memory."""
    return stages * (block_m + block_n) * BLOCK_K + block_m * block_n * 2 + 1024 <= SHARED_BYTES


def swap_width(M: int) -> int:
    """The batch's side of a swap-AB tile: the power of two ≥ M, at least 16 (wgmma's narrowest useful N here)."""
    return max(16, 1 << max(0, (M - 1).bit_length()))


def tiles(M: int) -> list[dict]:
    """The tiles for M, split-K off: swap-AB's (W's 128 or 64 rows by the batch's width) for M ≤ 128, lesson 34's
    orientation (128 rows of A by 256, 128 or 64 columns of W) for M ≥ 128 (both at 128, the border)."""
    out = []
    if M <= SWAP_UP_TO_M:
        width = swap_width(M)
        for rows in SWAP_ROWS:
            stages = SWAP_STAGES
            while not ring_fits(rows, width, stages):
                stages -= 1
            out.append({**BASE, "BLOCK_M": rows, "BLOCK_N": width, "num_warps": 4, "STAGES": stages,
                        "SWAP_AB": True, "most_split": MOST_SPLIT})
    if M >= SWAP_UP_TO_M:
        out += [{**BASE, "BLOCK_M": 128, "BLOCK_N": bn, "num_warps": warps, "STAGES": stages, "most_split": most}
                for bn, warps, stages, most in PLAIN_TILES]
    return out


def splits(cfg: dict, K: int) -> range:
    """1 up to the tile's most, no slice of K shorter than the ring (a slice with fewer steps than stages has been
    cut below what the ring keeps in flight)."""
    steps = -(-K // BLOCK_K)
    most = 1
    while most < cfg.get("most_split", MOST_SPLIT) and steps // (most + 1) >= cfg["STAGES"]:
        most += 1
    return range(1, most + 1)


def space(M: int, N: int, K: int) -> list[dict]:
    """Every candidate the rule ranks at M × N × K (M ≤ 512): each tile of ``tiles(M)`` at each split it allows."""
    return [{**{k: v for k, v in cfg.items() if k != "most_split"}, "SPLIT_K": s}
            for cfg in tiles(M) for s in splits(cfg, K)]


# -- The model ----------------------------------------------------------------------------------------------------------

def work(M: int, N: int, K: int, cfg: dict, sms: int = SMS) -> dict:
    """The counts of one candidate at M × N × K: units, rounds of the busiest program, K steps a unit, the bytes and
    products of a step (TMA copies only a box's rows inside the tensor: a 16-column swap-AB tile at M = 1 copies one
    row of A), the launch's bytes (fp8 A and W, bf16 C, split-K's fp32 slices written and read back)."""
    swap = bool(cfg.get("SWAP_AB"))
    kM, kN = (N, M) if swap else (M, N)
    BM, BN, split = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg.get("SPLIT_K", 1)
    tile_count = -(-kM // BM) * -(-kN // BN)
    units = tile_count * split
    programs = min(units, sms)
    slices = 2 * tile_count * (split - 1) * BM * BN * 4 if split > 1 else 0
    return {"units": units, "rounds": -(-units // programs), "steps": -(-(-(-K // BLOCK_K)) // split),
            "step_bytes": (min(BM, kM) + min(BN, kN)) * BLOCK_K, "step_flops": 2 * BM * BN * BLOCK_K,
            "launch_bytes": M * K + N * K + 2 * M * N + slices, "split": split}


def _time(c: Constants, w: dict):
    """``predict`` on counts (numbers, or numpy arrays of them: ``fit`` runs every row at once)."""
    import numpy as np

    step_us = np.maximum(w["step_bytes"] / (c.copy_gbs * 1e3), w["step_flops"] / (c.fp8_tflops * 1e6))
    busiest = w["rounds"] * w["steps"] * step_us
    launch = w["launch_bytes"] / (c.hbm_tbs * 1e6)
    return (busiest ** 4 + launch ** 4) ** 0.25 + np.where(w["split"] > 1, w["rounds"] * c.split_us, 0.0)


def predict(c: Constants, M: int, N: int, K: int, cfg: dict, sms: int = SMS) -> float:
    """The model's µs for one launch of ``cfg`` at M × N × K."""
    return float(_time(c, work(M, N, K, cfg, sms)))


def _order(c: Constants, M: int, N: int, K: int, cfg: dict):
    """The ranking key: the model's time (to 0.01 µs), then fewer splits, a shallower ring, swap-AB first."""
    return (round(predict(c, M, N, K, cfg), 2), cfg.get("SPLIT_K", 1), cfg["STAGES"], not cfg.get("SWAP_AB"))


def rank(c: Constants, M: int, N: int, K: int, candidates) -> list:
    """``candidates`` fastest first by the model."""
    return sorted(candidates, key=lambda cfg: _order(c, M, N, K, cfg))


def rule(M: int, N: int, K: int, c: Constants = FITTED) -> dict | None:
    """The candidate of ``space`` the model ranks first at M × N × K, or None above LARGEST_SMALL_M (lesson 34's
    CONFIG's shapes)."""
    if M > LARGEST_SMALL_M:
        return None
    return dict(rank(c, M, N, K, space(M, N, K))[0])


# -- Fitting on the trial, and judging on weight shapes the fit never saw -----------------------------------------------

def load_trial(path: str | None = None) -> dict:
    import json

    from ..course import repo_root

    return json.loads((repo_root() / (path or TRIAL)).read_text(encoding="utf-8"))


def trial_rows(trial: dict) -> list[tuple]:
    """(M, N, K, config, µs, ratio to torch._scaled_mm, label) for every candidate the trial timed with W's L2 hint on
    (the kernel's default; the hint-off rows are the same configurations slower), µs the fastest of its rounds."""
    rows = []
    for shape, row in trial["shapes"].items():
        M, N, K = map(int, shape.split("x"))
        for name, r in row.items():
            if name == "lesson 34" or "ratio" not in r or not r["config"].get("W_FIRST", 1):
                continue
            rows.append((M, N, K, r["config"], min(r["kernel_ms"]) * 1000, r["ratio"], r["label"]))
    return rows


def fit(rows) -> Constants:
    """The grid point that minimises Σ (log predicted − log timed)² over ``rows``; refuses a point on the grid's
    edge (the grid would be too narrow to say where the best lies)."""
    import numpy as np

    counts = [work(*r[:4]) for r in rows]
    w = {key: np.array([n[key] for n in counts], dtype=float) for key in counts[0]}
    timed = np.log([r[4] for r in rows])
    best = None
    for point in itertools.product(*GRID.values()):
        c = Constants(*point)
        err = float(((np.log(_time(c, w)) - timed) ** 2).sum())
        if best is None or err < best[0]:
            best = (err, c)
    c = best[1]
    for name, values in GRID.items():
        if getattr(c, name) in (values[0], values[-1]) and name != "split_us":
            raise ValueError(f"the fit's {name} is {getattr(c, name)}, on the edge of its grid: widen GRID")
    return c


def judge(c: Constants, rows, shapes) -> list[dict]:
    """At each shape of ``shapes``: the candidate the model ranks first among those the trial timed there, its
    ratio to torch._scaled_mm, and the best timed candidate's."""
    out = []
    for M, N, K in shapes:
        here = [r for r in rows if r[:3] == (M, N, K)]
        picked = min(here, key=lambda r: _order(c, M, N, K, r[3]))
        best = max(here, key=lambda r: r[5])
        out.append({"shape": (M, N, K), "pick": picked[6], "ratio": picked[5], "best": best[6],
                    "best_ratio": best[5]})
    return out


def leave_one_weight_out(trial: dict) -> dict:
    """For each weight shape (N, K) in turn: the model fitted on the other two's six shapes, judged at the three
    batches of the one left out. Returns {(N, K): {"constants": ..., "shapes": judge's rows}}."""
    rows = trial_rows(trial)
    out = {}
    for N, K in WEIGHTS:
        fitted_on = [r for r in rows if (r[1], r[2]) != (N, K)]
        c = fit(fitted_on)
        out[(N, K)] = {"constants": c, "shapes": judge(c, rows, [(M, N, K) for M in BATCHES])}
    return out


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


def validation_table(trial: dict) -> str:
    """The leave-one-weight-out judgement as text: one line a shape, then the geomean and worst of the picks and of
    the best timed candidates."""
    lines = [f"{'shape':16} {'left out, the model picks':24} {'ratio':>6}   {'best timed':24} {'ratio':>6}"]
    picks, bests = [], []
    for (N, K), found in leave_one_weight_out(trial).items():
        for s in found["shapes"]:
            picks.append(s["ratio"])
            bests.append(s["best_ratio"])
            lines.append(f"{'x'.join(map(str, s['shape'])):16} {s['pick']:24} {s['ratio']:6.3f}   {s['best']:24} "
                         f"{s['best_ratio']:6.3f}")
    lines.append(f"picks: geomean {geomean(picks):.3f}×, worst {min(picks):.3f}×; best timed: geomean "
                 f"{geomean(bests):.3f}×, worst {min(bests):.3f}× (× torch._scaled_mm, fast accumulation)")
    return "\n".join(lines)
