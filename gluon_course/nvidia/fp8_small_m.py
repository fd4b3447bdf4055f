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


# -- Lesson 34's checks of its small-batch path (small_m_kernel, SmallMPlan, small_m_matmul) -----------------------------
# Each takes the lesson's module (the solution, or a learner's copy): the kernel, the plan and the launcher are the
# module's own; what is here is the counting, the host model's stand-in for the GPU and the compiler's facts.

def slices_fit(cfg: dict, K: int) -> bool:
    """Unsplit, or every slice of K at least as many steps as the ring has stages (what SmallMPlan accepts)."""
    split = cfg.get("SPLIT_K", 1)
    return split == 1 or -(-K // cfg.get("BLOCK_K", BLOCK_K)) // split >= cfg["STAGES"]


def _kernel_in_model():
    """The host model's stand-in for small_m_kernel's launch (``fp8.KernelInModel`` with what split-K adds)."""
    import numpy as np
    import torch
    from triton.experimental.gluon import language as gl

    from . import fp8

    class SplitKernelInModel(fp8.KernelInModel):
        """``fp8.KernelInModel`` with split-K's scratch (fp32 slices, int32 counters), copied back into its torch
        tensors after the launch as a GPU leaves them for the next call; the programs run in ``order`` (``model.run``'s);
        C kept in fp32 when ``c_fp32`` (every bit of a sum shows: ``c_values`` holds it after the launch)."""

        HANDED = "A, W, C, the two scales and split-K's scratch"
        WRITTEN_TWICE = "a tile of C stored by two units (split-K: more than one unit thinks it arrived last?)"

        def __init__(self, kernel, num_warps: int, tensors: dict, order=None, c_fp32: bool = False):
            super().__init__(kernel, num_warps, tensors)
            self.order, self.c_fp32, self.c_values = order, c_fp32, None

        def _buffers(self):
            from ..model import Buffer

            scratch = {n: t for n, t in self.tensors.items() if n in ("partial", "arrivals")}
            operands, self.tensors = self.tensors, {n: t for n, t in self.tensors.items() if n not in scratch}
            try:
                out = super()._buffers()
            finally:
                self.tensors = operands
            for name, t in scratch.items():
                out[t.data_ptr()] = Buffer(name, t.float().numpy(), gl.int32 if t.dtype == torch.int32 else gl.float32)
            if self.c_fp32:
                c = self.tensors["c"]
                out[c.data_ptr()] = Buffer("c", np.zeros(tuple(c.shape), np.float32), gl.float32, poison=True)
            return out

        def _element_bytes(self, buf) -> int:
            return 4 if buf.dtype == gl.float32 else self.tensors[buf.name].element_size()

        def _run_options(self, grid_x: int) -> dict:
            return {"order": self.order(grid_x) if callable(self.order) else self.order}

        def _read_past(self, scale: str) -> str:
            return (f"the kernel reads {scale} past its end ({self.tensors[scale].numel()} elements): is it indexed "
                    "by the other dimension? Under swap-AB the kernel's rows are W's (W's scales) and its columns A's "
                    "rows (A's scales); without it, A's scales go with the rows and W's with the columns")

        def _after(self, buffers: dict) -> None:
            if self.c_fp32:
                self.c_values = buffers[self.tensors["c"].data_ptr()].values().copy()
            for name in ("partial", "arrivals"):
                t = self.tensors[name]
                t.copy_(torch.from_numpy(buffers[t.data_ptr()].values().copy()).to(t.dtype))

    return SplitKernelInModel


MODEL_PROGRAMS = 3


def model_launch(mod, config: dict, programs: int | None = MODEL_PROGRAMS, calls: int = 2, order=None,
                 c_fp32: bool = False, sums=None):
    """``launch(a, w, a_scale, w_scale, c)`` on CPU tensors for ``fp8.check_fp8``: the module's SmallMPlan built from
    the tensors (its checks, operand views, descriptors, scratch, arguments) and its ``launch`` run with the host
    model in the GPU's place, on ``programs`` programs (None: one per work unit), ``calls`` times on the same plan and
    scratch, every counter back at 0 after each call. ``order``: the programs' order (``model.run``'s); ``c_fp32``: C
    kept in fp32; with ``sums`` (a list), each call's fp32 C is appended to it."""
    from ..model import ModelError

    in_model = _kernel_in_model()

    def launch(a, w, a_scale, w_scale, c):
        plan = mod.SmallMPlan(a, w, a_scale, w_scale, c, config, programs)
        if plan.empty:
            if plan.zero_c:
                c.zero_()
            return
        plan.set_grid(plan.units)
        plan.stream = lambda device_index: 0
        partial, arrivals = plan.scratch_for(a.device, 0)
        tensors = {"a": a, "w": w, "a_scale": a_scale, "w_scale": w_scale, "c": c, "partial": partial,
                   "arrivals": arrivals}
        for call in range(calls):
            plan.launcher = in_model(mod.small_m_kernel, plan.num_warps, tensors, order, c_fp32)
            plan.launch(a, w, a_scale, w_scale, c)
            left = [i for i, n in enumerate(arrivals.tolist()) if n]
            if left:
                raise ModelError(f"after call {call + 1}, split-K's counter of tile {left[0]} is "
                                 f"{int(arrivals[left[0]])}, not 0: the next call would count from there (the tile's "
                                 "last unit resets it)")
            if sums is not None:
                sums.append(plan.launcher.c_values)
    return launch


# The paths, on tiles small enough for the model (it runs every product in numpy; the tile's sizes are constexprs of
# the same code): both orientations, unsplit and split, and a 128-row tile on 4 warps (two wgmma rows a warpgroup) in
# each. Splits of 3: the fewest where the order of the slices' additions can change a sum's bits ((a + b) + c against
# a + (b + c); a + b = b + a in fp32), on a ring of 2 so that a slice of 2 K steps is not shorter than the ring.
MODEL_PATHS = {
    "swap-AB, 64 × 16 tiles": {"BLOCK_M": 64, "BLOCK_N": 16, "num_warps": 4, "STAGES": 3, "SWAP_AB": True},
    "swap-AB, 64 × 32 tiles, K split 3 ways": {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "STAGES": 2,
                                               "SWAP_AB": True, "SPLIT_K": 3},
    "swap-AB, 128 × 16 tiles, K split 2 ways": {"BLOCK_M": 128, "BLOCK_N": 16, "num_warps": 4, "STAGES": 2,
                                                "SWAP_AB": True, "SPLIT_K": 2},
    "64 × 32 tiles, K split 3 ways": {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "STAGES": 2, "SPLIT_K": 3},
    "128 × 32 tiles": {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 4, "STAGES": 2},
}
# Odd M from 1 to 511: under swap-AB the batch's side of a tile (16 or 32 columns) cut by M, one to thirty-two such
# tiles; without it, 17 rows inside one tile, 511 over four of 128 or eight of 64. N past every tile's edge (136 =
# 2·64 + 8 = 4·32 + 8, 200 = 3·64 + 8, 40 = 32 + 8), K past the 128-wide step (272 = 2·128 + 16: 3 steps, 144: 2; 656
# = 5·128 + 16: 6 steps, slices of 2 when split 3 ways, 3 when split 2 ways, none shorter than a ring of 2).
MODEL_SHAPES = ((1, 136, 272), (17, 200, 656), (511, 40, 144))
# The scales' kinds the host model runs: per row on one operand and per tensor on the other, both ways round. Each
# operand's scale is met both ways, and a scale applied on the wrong side of C misses the bound by 2× or more
# (``fp8.fp8_inputs``' scales), which per row on both, or per tensor on both, could hide.
MODEL_MODES = ("A per row, W per tensor", "A per tensor, W per row")
# Split-K's sum in several program orders (one unit a program, C in fp32): the last unit to arrive at a tile is its
# last slice's, then its first's, then one in between (model.gemm.PROGRAM_ORDERS).
ORDER_PATHS = {"swap-AB, 64 × 32 tiles, K split 3 ways": (17, 136, 656),
               "64 × 32 tiles, K split 3 ways": (100, 72, 656)}


def host_model_problem(mod, paths=None, shapes=MODEL_SHAPES, modes=MODEL_MODES, show=None):
    """Each path of ``paths`` (default MODEL_PATHS) through the module's SmallMPlan in the host model on 3 programs,
    twice on the same plan, at each shape whose K its split allows, in each scale mode of ``modes``: ``fp8.check_fp8``
    (C within fp8's bound of the reference, nothing written outside C), each element written once, no scale read past
    its end, every counter back at 0 after each call. None, or one sentence naming the path."""
    from ..grading import NotChecked
    from ..model import ModelError, ModelUnsupported
    from . import fp8

    for what, config in (MODEL_PATHS if paths is None else paths).items():
        usable = [s for s in shapes if slices_fit(config, s[2])]
        try:
            problem = fp8.check_fp8(model_launch(mod, config), usable, modes=modes, device="cpu", caught=(ModelError,))
        except ModelUnsupported as e:
            return NotChecked(f"the host model does not model {e}")
        if problem:
            return f"{what}, in the host model, {problem}"
        if show:
            show(f"  {what}: within the bound at {', '.join('×'.join(map(str, s)) for s in usable)}, "
                 f"{len(modes)} scale modes, two calls each")
    return None


def same_bits_problem(mod, paths=None, show=None):
    """Each split path of ``paths`` (default ORDER_PATHS: name -> shape) with C's fp32 bits the same with the programs
    run in every order of ``model.gemm.PROGRAM_ORDERS``, one unit a program. fp8 inputs from ``fp8.fp8_inputs``
    (values across e4m3's exponents, so that an fp32 sum's low bits depend on the order of its additions), scales per
    row. None, or one sentence."""
    import numpy as np
    import torch

    from ..model import ModelError
    from ..model.gemm import PROGRAM_ORDERS
    from . import fp8

    for what, (M, N, K) in (ORDER_PATHS if paths is None else paths).items():
        a, w, sa, sw = fp8.fp8_inputs(M, N, K, True, device="cpu", seed=44)
        first = None
        for name, order in PROGRAM_ORDERS.items():
            sums = []
            try:
                model_launch(mod, MODEL_PATHS[what], programs=None, calls=1, order=order, c_fp32=True, sums=sums)(
                    a, w, sa, sw, torch.empty(M, N, dtype=torch.bfloat16))
            except ModelError as e:
                return f"{what}, {M}×{N}×{K}, programs run {name}: {e}"
            got = sums[0]
            if first is None:
                first = (name, got)
            elif not np.array_equal(got.view(np.uint32), first[1].view(np.uint32)):
                i, j = map(int, np.argwhere(got.view(np.uint32) != first[1].view(np.uint32))[0])
                shown = [np.format_float_positional(x) for x in (got[i, j], first[1][i, j])]
                return (f"{what}, {M}×{N}×{K}: C[{i}, {j}] is {shown[0]} with the programs run {name} but "
                        f"{shown[1]} run {first[0]}: the order in which the slices are added depends on which unit "
                        "arrives last; add them in slice order, whichever unit adds them")
        if show:
            show(f"  {what}: the same fp32 bits at {M}×{N}×{K} in the programs' orders ({', '.join(PROGRAM_ORDERS)})")
    return None


# -- The compiler's facts (sm_90) --------------------------------------------------------------------------------------

def compiled(mod, cfg: dict, a_per_row: bool = False, w_per_row: bool = False):
    """The module's small_m_kernel compiled for sm_90 on the CPU, as its SmallMPlan launches it at ``cfg`` (over its
    SMALL_M_CONFIG)."""
    from triton.experimental.gluon import language as gl

    from ..machine import compile_cached, tensor_descriptor_type

    cfg = {**mod.SMALL_M_CONFIG, **cfg}
    blocks = mod.small_m_blocks(cfg)

    def desc(dtype, gl_dtype, block):
        return tensor_descriptor_type(dtype, block, gl.NVMMASharedLayout.get_default_for(block, gl_dtype))

    signature = {"a_desc": desc("fp8e4nv", gl.float8e4nv, blocks[0]),
                 "b_desc": desc("fp8e4nv", gl.float8e4nv, blocks[1]), "c_desc": desc("bf16", gl.bfloat16, blocks[2]),
                 "a_scale_ptr": "*fp32", "w_scale_ptr": "*fp32", "partial_ptr": "*fp32", "arrivals_ptr": "*i32",
                 "M": "i32", "N": "i32", "K": "i32", "SPLIT_K": "i32"}
    return compile_cached(mod.small_m_kernel, "sm_90", signature=signature,
                          constexprs=mod.small_m_constexprs(cfg, a_per_row, w_per_row),
                          aligned=("a_scale_ptr", "w_scale_ptr", "partial_ptr", "arrivals_ptr"),
                          num_warps=cfg["num_warps"])


# The split path's protocol in the sm_90 listing (lesson 32's): one atomic add that announces a slice, after the
# release fence; one reset; C by one TMA store (only the last unit stores).
SPLIT_OPS = {"ATOMG.E.ADD.STRONG.GPU": 1, "ATOMG.E.EXCH.STRONG.GPU": 1, "MEMBAR.ALL.GPU": 1, "UTMASTG.2D": 1}


def listing_problem(k, cfg: dict, unsplit=None) -> str | None:
    """One configuration's sm_90 listing: fits one SM with no spills and no serialized wgmma; QGMMA (fp8 wgmma,
    64 × BLOCK_N × 32, E4M3 × E4M3 into F32) in the K loop, BLOCK_M / (16·num_warps) · BLOCK_K / 32 of them a step and
    none elsewhere, no HGMMA; and, split, the protocol: the slice stored, the consumers' barrier, the release and the
    atomic in that order, the slices read back from L2 (.cg: LDG ... STRONG.GPU), the reset, one TMA store.
    ``unsplit``: the same configuration's listing unsplit (its loads by the threads are the scales')."""
    from ..grading.gemm_kernel import fits
    from . import fp8

    problem = fits(k, cfg["num_warps"], cfg)
    if problem:
        return problem
    if any("serialized" in note for note in k.ptxas_notes()):
        return "ptxas serializes the wgmma instructions (for want of registers)"
    ops = k.opcodes()
    if any(op.startswith("HGMMA") for op in ops):
        return "HGMMA in the kernel: 16-bit products, where the operands must stay e4m3"
    opcode = fp8.QGMMA.format(n=cfg["BLOCK_N"])
    per_step = cfg["BLOCK_M"] // (16 * cfg["num_warps"]) * (cfg["BLOCK_K"] // 32)
    every = {op: n for op, n in ops.items() if op.startswith("QGMMA")}
    if every != {opcode: per_step}:
        return f"the kernel's fp8 wgmma are {every}; expected {per_step} × {opcode}"
    loop = k.opcodes_between(*k.loop_holding("QGMMA"))
    if loop.get(opcode, 0) != per_step:
        return f"the K loop holds {loop.get(opcode, 0)} × {opcode}; expected all {per_step} of the step there"
    if cfg.get("SPLIT_K", 1) == 1:
        return None
    counts = {op: k.count(op) for op in SPLIT_OPS}
    if counts != SPLIT_OPS:
        return f"the split kernel's listing holds {counts}; expected {SPLIT_OPS}"
    at = [(i.address, i.opcode, i.text) for i in k.instructions()]
    atomic = next(a for a, op, _ in at if op == "ATOMG.E.ADD.STRONG.GPU")
    stores = [a for a, op, _ in at if op.startswith("STG.E") and a < atomic]
    if not stores:
        return "no slice is stored before the atomic add that announces it"
    if not [a for a, op, text in at if op.startswith("BAR.SYNC") and stores[-1] < a < atomic]:
        return "no barrier among the consumers between the slice's stores and the atomic add"
    if not [a for a, op, _ in at if op == "MEMBAR.ALL.GPU" and stores[-1] < a < atomic]:
        return "no release fence (MEMBAR.ALL.GPU) between the slice's stores and the atomic add"
    # After the atomic: the slices' reads, and the scales' (as many loads as the unsplit kernel's, which reads
    # nothing else with the threads). Every other load must come from L2.
    reads = [text for a, op, text in at if op.startswith("LDG") and a > atomic]
    scale_loads = sum(n for op, n in unsplit.opcodes().items() if op.startswith("LDG")) if unsplit else 0
    plain = [t for t in reads if "STRONG.GPU" not in t]
    if len(reads) == len(plain) or len(plain) > scale_loads:
        return (f"the last unit reads the slices without cache_modifier='.cg' ({len(plain)} loads after the atomic "
                f"without STRONG.GPU, where the scales take {scale_loads}): this SM's L1 may serve a stale line "
                "instead of the other SMs' slices in L2")
    return None


# What the lesson's check compiles: the cost model's picks at 16 × 14336 × 4096 (swap-AB 64 × 16 on a ring of 8) and
# 128 × 4096 × 14336 (swap-AB 64 × 128, K split 2 ways), and a plain tile of lesson 34's orientation split 4 ways
# (the space's 128 × 128 at 512 rows): each path the dispatch takes, each with per-tensor and per-row scales.
COMPILED_PICKS = {"swap-AB 64 × 16, 8 stages (16 × 14336 × 4096)": (16, 14336, 4096),
                  "swap-AB 64 × 128, K split 2 ways (128 × 4096 × 14336)": (128, 4096, 14336)}
COMPILED_PLAIN = {"128 × 128, 6 stages, K split 4 ways": {**BASE, "BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8,
                                                           "STAGES": 6, "SPLIT_K": 4}}


def compile_problem(mod, configs=None, show=None) -> str | None:
    """sm_90: each configuration of ``configs`` (name -> config; default the rule's picks at COMPILED_PICKS and
    COMPILED_PLAIN) with per-tensor and per-row scales: ``listing_problem``, and for swap-AB a QGMMA 64 × BLOCK_N with
    BLOCK_N the batch's side. None, or one sentence naming the configuration."""
    if configs is None:
        configs = {name: rule(*shape) for name, shape in COMPILED_PICKS.items()}
        configs.update(COMPILED_PLAIN)
    for name, cfg in configs.items():
        full = {**mod.SMALL_M_CONFIG, **cfg}
        for a_row, w_row in ((False, False), (True, True)):
            k = compiled(mod, full, a_row, w_row)
            unsplit = compiled(mod, {**full, "SPLIT_K": 1}, a_row, w_row) if full["SPLIT_K"] > 1 else None
            problem = listing_problem(k, full, unsplit)
            scales = "per-row" if a_row else "per-tensor"
            if problem:
                return f"{name}, {scales} scales: {problem}"
            if show:
                show(f"  {name:50} {scales:10} {k.registers} registers, {k.shared_bytes} shared bytes: ok")
    return None


# -- The plan's configuration and refusals (host code, CPU tensors) -----------------------------------------------------

# Shapes where SmallMPlan, given no configuration, must take the cost model's pick: each weight shape of the trial at
# an odd batch, both orientations, split and unsplit picks among them.
PLAN_SHAPES = ((1, 8192, 8192), (17, 14336, 4096), (100, 4096, 14336), (129, 8192, 8192), (300, 4096, 14336),
               (511, 14336, 4096))
# Explicit configurations SmallMPlan must refuse at 16 × 1024 × K, with the words its sentence must hold: a slice
# shorter than the ring (K = 2048: 16 steps in 4 slices of 4, a ring of 8), and more slices than K steps.
REFUSED = {"a slice of 4 K steps on a ring of 8": (2048, {"BLOCK_M": 64, "BLOCK_N": 16, "num_warps": 4, "STAGES": 8,
                                                          "SWAP_AB": True, "SPLIT_K": 4}, "STAGES"),
           "3 slices of 2 K steps": (256, {"BLOCK_M": 64, "BLOCK_N": 16, "num_warps": 4, "STAGES": 2,
                                           "SWAP_AB": True, "SPLIT_K": 3}, "SPLIT_K=3")}
# ... and one it must accept: the same tile and split at K = 4096 (slices of 8 steps, the ring's 8).
ACCEPTED = (4096, REFUSED["a slice of 4 K steps on a ring of 8"][1])


def _empty_operands(M: int, N: int, K: int):
    """A, W, per-row scales and C on the CPU, unfilled: the plan reads their shapes, strides and dtypes only."""
    import torch

    e4m3 = torch.float8_e4m3fn
    return (torch.empty(M, K, dtype=e4m3), torch.empty(N, K, dtype=e4m3), torch.ones(M), torch.ones(N),
            torch.empty(M, N, dtype=torch.bfloat16))


def plan_problem(mod) -> str | None:
    """The module's SmallMPlan, on CPU tensors: given no configuration, the cost model's pick (``rule``) at each of
    PLAN_SHAPES; an explicit split refused, with a sentence naming it, where a slice of K would be shorter than the
    ring or empty (REFUSED), and accepted where it is not (ACCEPTED). None, or one sentence."""
    for M, N, K in PLAN_SHAPES:
        try:
            plan = mod.SmallMPlan(*_empty_operands(M, N, K), {}, None)
        except (TypeError, ValueError) as e:
            return f"SmallMPlan refuses the cost model's own pick at {M}×{N}×{K}: {e}"
        want = {**mod.SMALL_M_CONFIG, **rule(M, N, K)}
        if plan.config != want:
            diff = {k: plan.config.get(k) for k in want if plan.config.get(k) != want[k]}
            return (f"at {M}×{N}×{K} with no configuration, SmallMPlan takes {diff}; the cost model's pick "
                    f"(fp8_small_m.rule) is {({k: want[k] for k in diff})}")
    K, cfg = ACCEPTED
    try:
        mod.SmallMPlan(*_empty_operands(16, 1024, K), cfg, None)
    except (TypeError, ValueError) as e:
        return (f"SmallMPlan refuses SPLIT_K={cfg['SPLIT_K']} at K={K}, slices of {K // BLOCK_K // cfg['SPLIT_K']} "
                f"steps on a ring of {cfg['STAGES']}: {e}")
    for what, (K, cfg, words) in REFUSED.items():
        try:
            mod.SmallMPlan(*_empty_operands(16, 1024, K), cfg, None)
        except ValueError as e:
            if words not in str(e):
                return f"SmallMPlan refuses {what} (K = {K}) with a sentence that does not name {words}: {e}"
            continue
        return (f"SmallMPlan accepts SPLIT_K={cfg['SPLIT_K']} at K={K} ({what}, STAGES={cfg['STAGES']}): a slice "
                "shorter than the ring has been cut below what the ring keeps in flight (or is empty); refuse it "
                "with a sentence")
    return None


# -- On a GPU ----------------------------------------------------------------------------------------------------------

# Each path at a tile the cost model picks, on odd shapes in every scale mode; "the dispatch" is the module's matmul
# with no configuration (the cost model's pick for each shape, through small_m_matmul for M ≤ 512).
GPU_PATHS = {
    "swap-AB 64 × 16": {"BLOCK_M": 64, "BLOCK_N": 16, "num_warps": 4, "STAGES": 8, "SWAP_AB": True},
    "swap-AB 64 × 128, K split 3 ways": {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 4, "STAGES": 8, "SWAP_AB": True,
                                         "SPLIT_K": 3},
    "128 × 64, K split 3 ways": {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4, "STAGES": 8, "SPLIT_K": 3},
    "128 × 128": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "STAGES": 6},
    "the dispatch": None,
}
# Odd shapes: M of 1, 17, 100 and 300 (swap-AB's 16-, 32- and 128-column tiles cut by M; 300 above the swap border),
# N past the edges of 64- and 128-row tiles (136, 1000, 4104), K multiples of 16 past 128-wide steps (208: 2 steps,
# 1040: 9, 4112: 33); and N = 14336 at M = 17 and 300, where every path's tile makes more units than an H200's 132
# programs, so that programs run several units and slices.
ODD_SHAPES = ((1, 136, 1040), (17, 1000, 4112), (100, 4104, 208), (300, 1000, 1040), (17, 14336, 4112),
              (300, 14336, 4112))
CORRECT_LIMIT_S = 420


def correct_here(module_file: str) -> str | None:
    """GPU (a child process): each path of GPU_PATHS on ODD_SHAPES whose K its split allows, in every scale mode
    (``fp8.check_fp8``: poisoned, guarded C, fp8's bound), then a second call on the same plan (split-K's counters
    left at 0 by the first) with the same bits; the dispatch builds a SmallMPlan for each of these shapes (M ≤ 512)
    and none for M = 513. None, or the first sentence."""
    import torch

    from ..course import load_module_file
    from ..grading.runner import sentence_in_child
    from . import fp8

    mod = load_module_file(module_file)

    def run():
        for what, cfg in GPU_PATHS.items():
            call = ((lambda a, w, sa, sw, c: mod.matmul(a, w, sa, sw, c)) if cfg is None else
                    (lambda a, w, sa, sw, c, cfg=cfg: mod.small_m_matmul(a, w, sa, sw, c, **cfg)))
            usable = [s for s in ODD_SHAPES if cfg is None or slices_fit(cfg, s[2])]
            before = len(mod._SMALL_M_PLANS)
            problem = fp8.check_fp8(call, usable)
            if problem:
                return f"{what}: {problem}"
            if cfg is None and len(mod._SMALL_M_PLANS) == before:
                return "the dispatch: matmul with no configuration at M ≤ 512 built no SmallMPlan (small_m_matmul)"
            for M, N, K in usable:
                a, w, sa, sw = fp8.fp8_inputs(M, N, K, True)
                c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
                call(a, w, sa, sw, c)
                again = c.clone()
                call(a, w, sa, sw, again)
                torch.cuda.synchronize()
                if not torch.equal(c.view(torch.int16), again.view(torch.int16)):
                    return f"{what}, shape {M}×{N}×{K}: a second call gave other bits"
        a, w, sa, sw = fp8.fp8_inputs(513, 136, 208, True)
        before = len(mod._SMALL_M_PLANS)
        mod.matmul(a, w, sa, sw)
        if len(mod._SMALL_M_PLANS) != before:
            return "the dispatch: matmul at M = 513 built a SmallMPlan; above 512 rows it keeps the 128 × 256 kernel"
        return None

    return sentence_in_child(module_file, run, "34")


def correct(mod) -> str | None:
    """Lesson 34's GPU check of its small-batch path: ``correct_here`` in a child process with a time limit."""
    from ..measure.isolated import check_in_child

    return check_in_child(f"{__file__}:correct_here", [mod.__file__], timeout=CORRECT_LIMIT_S)


# The figure's shapes: M ∈ {16, 128, 512} on the trial's three weight shapes.
FIGURE_SHAPES = tuple((M, N, K) for M in BATCHES for N, K in WEIGHTS)
