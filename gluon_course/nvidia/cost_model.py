"""A cost model of lesson 32's kernel: how long one configuration takes on one shape, from the shape, the tile and a
few constants of the GPU fitted on timings, so that a dispatcher can rank every candidate of the tuning space for a
shape no one has timed.

The kernel is persistent: ``min(units, SMs)`` programs, a work unit being one tile of C (one slice of K when K is
split). A program runs its units one after the other, so the busiest program runs ``rounds = ⌈units / programs⌉`` of
them, and the launch lasts about as long as it does (``persistent_grid``; lesson 32's dispatcher hands the model the
lesson's own count, its exercise, through the ``grid`` parameter). One unit is

    t_unit = t_fixed + steps · t_step + (split-K: its fp32 slice stored, and read back by the tile's last unit)

``steps`` being the K steps of its slice. A K step costs what the slowest of three things needs:

    t_step = max(t_tile,                                  the tile's own pace: its wgmma products, issue, waits
                 copied bytes · programs / L2 bandwidth,  the copies into shared memory, sharing L2 among the SMs
                 latency / (STAGES − 1))                  Little's law: a ring of STAGES slots keeps STAGES − 1
                                                          copies in flight, so a step can come no faster

``t_tile`` is a constant of each tile (its BLOCK_M, its columns, BLOCK_K and warps, swapped or not), fitted: what a
tile's products cost does not depend on the shape it is used for. Under all of it lies the bytes the launch must
move through HBM (A and W once, C once, split-K's slices written and read), at HBM's bandwidth:

    t = t_launch + ‖(rounds · t_unit, hbm_bytes / HBM bandwidth)‖₄

(the 4-norm: the larger of the two, rounded near the corner where they meet, as a kernel close to HBM's time loses
some bandwidth to its own pace). ``fit`` finds the constants from timings (the survey of the tuning command,
tools/gpu/tune_linear.py --survey) by least squares on log t, over the candidates within NEAR_BEST of their shape's
fastest; ``rank`` orders a shape's candidates by the model. What the model leaves out: the grouped order's L2 reuse
beyond reading A and W once, the epilogue's overlap with the next tile, clocks that drop under power, and any tile it
was not fitted on (it refuses those). The dispatcher built on it is judged on model families the fit never saw
(``leave_one_family_out``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

SMS = 132
SOFTNESS = 4                 # the norm that joins the SMs' time and HBM's
NEAR_BEST = 1.3              # the fit reads the candidates within this factor of their shape's fastest
GLOBALS = ("launch_us", "unit_us", "l2_tbs", "hbm_tbs", "slice_us_per_mib", "latency_us")
START = {"launch_us": 5.0, "unit_us": 1.5, "l2_tbs": 15.0, "hbm_tbs": 4.0, "slice_us_per_mib": 20.0,
         "latency_us": 1.0}


def tile_of(cfg: dict) -> str:
    """The name of a configuration's tile, as the model keeps its constant: ``128x256 k64 w8``, ``swap 128x16 k128
    w4``, ``128x192 k64 w8`` for a wide tile."""
    cols = cfg["BLOCK_N"] + (cfg.get("BLOCK_N2") or 0)
    return (f"{'swap ' if cfg.get('SWAP_AB') else ''}{cfg['BLOCK_M']}x{cols} k{cfg['BLOCK_K']}x{cfg['STAGES']} "
            f"w{cfg['num_warps']}")


@dataclass
class Constants:
    """The GPU's constants (µs, TB/s) and each tile's pace (µs a K step)."""
    globals: dict = field(default_factory=lambda: dict(START))
    tiles: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"globals": {k: round(v, 4) for k, v in self.globals.items()},
                "tiles": {k: round(v, 5) for k, v in sorted(self.tiles.items())}}

    @classmethod
    def from_dict(cls, d: dict) -> "Constants":
        return cls(dict(d["globals"]), dict(d["tiles"]))


def _cdiv(a, b):
    return -(-a // b)


def persistent_grid(units: int, sms: int) -> tuple[int, int]:
    """(programs, rounds) of a persistent launch of ``units`` work units on ``sms`` SMs: one program an SM at most and
    never more than the units; the busiest program runs ⌈units / programs⌉ of them."""
    programs = min(units, sms)
    return programs, _cdiv(units, programs)


def work(M: int, N: int, K: int, cfg: dict, sms: int = SMS, grid=None) -> dict:
    """The counts of one configuration on one shape (B as w.t(), bf16): programs, rounds, steps, the bytes a step
    copies, the slice's MiB, the HBM bytes. ``grid(units, sms)`` gives (programs, rounds) (``persistent_grid`` when
    None)."""
    swap = bool(cfg.get("SWAP_AB"))
    kM, kN = (N, M) if swap else (M, N)
    BM, BN, BK = cfg["BLOCK_M"], cfg["BLOCK_N"] + (cfg.get("BLOCK_N2") or 0), cfg["BLOCK_K"]
    split = cfg.get("SPLIT_K", 1)
    tiles = _cdiv(kM, BM) * _cdiv(kN, BN)
    units = tiles * split
    programs, rounds = (grid or persistent_grid)(units, sms)
    # TMA copies only the rows of a box that lie inside the tensor (the rest is zero-filled in shared memory): a
    # 128-row tile of one token's activations reads one row of them.
    copied = (min(BM, kM) + min(BN, kN)) * BK * 2.0
    slice_mib = BM * BN * 4 / 2**20 if split > 1 else 0.0
    hbm = 2.0 * (M * K + N * K + M * N) + (2 * tiles * (split - 1) * BM * BN * 4 if split > 1 else 0)
    return {"tile": tile_of(cfg), "programs": programs, "rounds": rounds,
            "steps": _cdiv(_cdiv(K, BK), split), "stages": cfg["STAGES"], "copied": copied,
            "slice_mib": slice_mib, "split": split, "hbm": hbm}


def _arrays(works: list[dict], tile_names: list[str]) -> dict:
    index = {t: i for i, t in enumerate(tile_names)}
    cols = {k: np.array([w[k] for w in works], dtype=float) for k in ("programs", "rounds", "steps", "stages",
                                                                       "copied", "slice_mib", "split", "hbm")}
    cols["tile"] = np.array([index[w["tile"]] for w in works])
    return cols


def _predict(g: dict, tile_us: np.ndarray, a: dict) -> np.ndarray:
    copies = a["copied"] * a["programs"] / (g["l2_tbs"] * 1e6)
    step = np.maximum(np.maximum(tile_us[a["tile"]], copies), g["latency_us"] / (a["stages"] - 1))
    # split-K: each unit stores its slice, and the tile's last unit reads the other split − 1 back: the busiest
    # program's share is about ``split`` slices' traffic
    unit = g["unit_us"] + a["steps"] * step + a["split"] * a["slice_mib"] * g["slice_us_per_mib"]
    sms_time, hbm_time = a["rounds"] * unit, a["hbm"] / (g["hbm_tbs"] * 1e6)
    return g["launch_us"] + (sms_time ** SOFTNESS + hbm_time ** SOFTNESS) ** (1 / SOFTNESS)


class UnknownTile(ValueError):
    pass


def predict(c: Constants, M: int, N: int, K: int, cfg: dict, sms: int = SMS) -> float:
    """µs for one launch of ``cfg`` on M × N × K."""
    w = work(M, N, K, cfg, sms)
    if w["tile"] not in c.tiles:
        raise UnknownTile(f"the cost model was not fitted on the tile {w['tile']}: add it to the survey and fit again")
    names = list(c.tiles)
    return float(_predict(c.globals, np.array([c.tiles[t] for t in names]), _arrays([w], names))[0])


def _vector(c: Constants, names: list[str]) -> np.ndarray:
    return np.log([c.globals[k] for k in GLOBALS] + [c.tiles[t] for t in names])


def _unpack(v, names):
    e = np.exp(v)
    return dict(zip(GLOBALS, e[:len(GLOBALS)])), e[len(GLOBALS):]


def near_best(rows, factor: float | None = None) -> list:
    """The rows ((M, N, K, config, µs) each) within ``factor`` (NEAR_BEST) of the fastest of their shape."""
    factor = factor or NEAR_BEST
    fastest = {}
    for M, N, K, _, us in rows:
        fastest[(M, N, K)] = min(us, fastest.get((M, N, K), us))
    return [r for r in rows if r[-1] <= factor * fastest[r[:3]]]


def fit(rows, sms: int = SMS, iterations: int = 60) -> Constants:
    """The constants that minimise the squared error of log t over the rows within NEAR_BEST of their shape's
    fastest (a dispatcher must rank the good candidates right; how far behind a hopeless one is does not matter):
    Levenberg–Marquardt on the logarithms of the constants, with a numeric Jacobian."""
    rows = near_best(rows)
    works = [work(M, N, K, cfg, sms) for M, N, K, cfg, _ in rows]
    names = sorted({w["tile"] for w in works})
    a = _arrays(works, names)
    log_t = np.log([r[-1] for r in rows])
    # Each tile's start: the fastest step its timings allow (its best time, less the launch, over its steps), so
    # that every tile's own pace starts where it binds.
    start = Constants(dict(START), {})
    for w, r in zip(works, rows):
        pace = max(1e-3, (r[-1] - START["launch_us"]) / (w["rounds"] * w["steps"]))
        start.tiles[w["tile"]] = min(start.tiles.get(w["tile"], pace), pace)
    v = _vector(start, names)

    def residual(v):
        g, tiles = _unpack(v, names)
        return np.log(_predict(g, tiles, a)) - log_t

    r = residual(v)
    damping = 1e-2
    for _ in range(iterations):
        h = 1e-4
        jac = np.empty((len(r), len(v)))
        for i in range(len(v)):
            dv = v.copy()
            dv[i] += h
            jac[:, i] = (residual(dv) - r) / h
        jtj, jtr = jac.T @ jac, jac.T @ r
        while True:
            step = np.linalg.solve(jtj + damping * np.diag(np.diag(jtj) + 1e-9), -jtr)
            trial = residual(v + step)
            if trial @ trial < r @ r:
                v, r, damping = v + step, trial, max(damping / 3, 1e-7)
                break
            damping *= 4
            if damping > 1e6:
                break
        if damping > 1e6 or np.abs(step).max() < 1e-6:
            break
    g, tiles = _unpack(v, names)
    return Constants({k: float(x) for k, x in g.items()}, {t: float(x) for t, x in zip(names, tiles)})


def rank(c: Constants, M: int, N: int, K: int, space, sms: int = SMS, grid=None) -> list[tuple[float, dict]]:
    """(predicted µs, configuration) for each candidate of ``space`` whose tile the model knows, fastest first;
    ``grid`` as ``work``'s."""
    known = [cfg for cfg in space if tile_of(cfg) in c.tiles]
    if not known:
        return []
    names = list(c.tiles)
    t = _predict(c.globals, np.array([c.tiles[n] for n in names]),
                 _arrays([work(M, N, K, cfg, sms, grid) for cfg in known], names))
    order = np.argsort(t, kind="stable")
    return [(float(t[i]), known[i]) for i in order]


# -- Fitting on the survey, and judging on families the fit never saw -------------------------------------------------

def survey_rows(survey: dict, families=None) -> list[tuple]:
    """(M, N, K, config, µs, family) for every candidate that ran in a survey (tools/gpu/tune_linear.py --survey),
    of the named families (all when None)."""
    rows = []
    for shape in survey["rows"]:
        if families is not None and shape["family"] not in families:
            continue
        for cand in shape["candidates"]:
            if "us" in cand:
                cfg = {k: v for k, v in cand.items() if k != "us"}
                cfg["BLOCK_N2"] = cfg.get("BLOCK_N2") or 0
                rows.append((shape["M"], shape["N"], shape["K"], cfg, cand["us"], shape["family"]))
    return rows


def _same(a: dict, b: dict) -> bool:
    keys = ("BLOCK_M", "BLOCK_N", "BLOCK_N2", "BLOCK_K", "STAGES", "num_warps", "SPLIT_K", "SWAP_AB")
    return all((a.get(k) or 0) == (b.get(k) or 0) for k in keys)


def judge(c: Constants, survey: dict, family: str, sms: int = SMS) -> dict:
    """The model's pick on each shape of ``family``, judged by the survey's own timings: each shape's F.linear time
    over the pick's (the figure a user sees), over the fastest candidate's (the best the space allows), and the
    geometric means and the worst; each shape names its pick and the fastest candidate (tile and split)."""
    shapes = []
    for shape in survey["rows"]:
        if shape["family"] != family:
            continue
        ran = [cand for cand in shape["candidates"] if "us" in cand]
        if not ran:
            continue
        M, N, K = shape["M"], shape["N"], shape["K"]
        ranked = rank(c, M, N, K, ran, sms)
        pick = ranked[0][1]
        fastest = min(ran, key=lambda cand: cand["us"])
        best = fastest["us"]
        shapes.append({"M": M, "N": N, "K": K, "projection": shape["projection"], "pick": tile_of(pick),
                       "split": pick["SPLIT_K"], "pick_us": pick["us"], "best_us": best,
                       "best": tile_of(fastest), "best_split": fastest["SPLIT_K"],
                       "f_linear_us": shape["f_linear_us"], "vs_f_linear": shape["f_linear_us"] / pick["us"],
                       "of_best": best / pick["us"]})

    def geomean(key):
        return math.exp(sum(math.log(s[key]) for s in shapes) / len(shapes))

    return {"family": family, "shapes": shapes, "vs_f_linear": geomean("vs_f_linear"),
            "worst_vs_f_linear": min(s["vs_f_linear"] for s in shapes), "of_best": geomean("of_best"),
            "best_vs_f_linear": math.exp(sum(math.log(s["f_linear_us"] / s["best_us"]) for s in shapes) / len(shapes))}


def leave_one_family_out(survey: dict, sms: int = SMS) -> dict:
    """For each family of the survey in turn: the model fitted on the other families' timings only, judged on the
    family left out (``judge``). Returns {family: judgement}."""
    families = list(survey["families"])
    out = {}
    for left_out in families:
        rows = [r[:5] for r in survey_rows(survey, [f for f in families if f != left_out])]
        out[left_out] = judge(fit(rows, sms), survey, left_out, sms)
    return out


# -- The model in the dispatcher, and the figure that judges it ----------------------------------------------------

# The family the dispatch table was tuned on (lesson 32's MODEL_SHAPES are its layers): the other families of the
# survey are the ones the table does not list.
TABLE_FAMILY = "llama-3-8b"


def pick(c: Constants, M: int, N: int, K: int, space, sms: int = SMS, grid=None) -> dict:
    """The configuration of ``space`` the model ranks first for M × N × K (the dispatcher hands it the survey's
    space, dispatch.survey_candidates, and lesson 32's persistent_grid as ``grid``)."""
    ranked = rank(c, M, N, K, space, sms, grid)
    if not ranked:
        raise UnknownTile(f"the cost model knows none of the tiles the space offers for {M}×{N}×{K}: fit it on a "
                          "survey of this space")
    return dict(ranked[0][1])


def survey_path(gpu_slug: str = "nvidia-h200"):
    """Where a GPU's survey is kept: gzip-compressed JSON (the survey is thousands of timings; compressed, a tenth of
    the size, which keeps the repository small enough to travel)."""
    from ..course import repo_root

    return repo_root() / "results" / "tuning" / f"{gpu_slug}-survey.json.gz"


def load_survey(gpu_slug: str = "nvidia-h200") -> dict | None:
    import gzip
    import json

    path = survey_path(gpu_slug)
    return json.loads(gzip.decompress(path.read_bytes())) if path.exists() else None


def fitted(gpu_slug: str = "nvidia-h200", leave_out: str | None = None) -> Constants | None:
    """The model fitted on this GPU's survey (every family, or all but ``leave_out``), or None without a survey.
    Fitting takes about a second; the answer is kept per process."""
    key = (gpu_slug, leave_out)
    if key not in _FITTED:
        survey = load_survey(gpu_slug)
        families = None if survey is None else [f for f in survey["families"] if f != leave_out]
        _FITTED[key] = None if survey is None else fit([r[:5] for r in survey_rows(survey, families)],
                                                        survey.get("sms", SMS))
    return _FITTED[key]


_FITTED: dict = {}
