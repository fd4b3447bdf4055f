"""Issue 44, item 3: fp8 for small batches. Lesson 34's kernel has one tile, 128 × 256, and at a small batch it covers
the few rows of A with mostly empty tiles and leaves most SMs idle: 0.54× torch._scaled_mm at 16 × 8192 × 8192 and
0.57× at 128 × 8192 × 8192 (H200, issue 44). This probe is the fp8 kernel with lesson 32's two ways to cut such a
problem, and a rule that picks between them, to be timed before any of it goes into a lesson:

- **swap-AB**: the kernel computes Cᵀ = W·Aᵀ, so that W's N rows fill wgmma's 64-row side and the batch's M rows sit
  on its narrow N side (BLOCK_N of 16 to 128). fp8 wgmma reads both operands K-major from shared memory: the PTX this
  kernel compiles to, ``wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {...}, %rd7, %rd8, %p47, 1, 1``, takes
  both operands as shared-memory descriptors with no transpose operands (lesson 32's bf16 form ends ``1, 1, 0, 0``:
  imm-trans-a and imm-trans-b), and Triton 3.9.0 fails to lower an N-major fp8 operand
  (``gluon_course.nvidia.fp8.operand_majors`` compiles one both ways). So the kernel's A is W's N × K tile as it is,
  its B the activations' M × K tile viewed K × N, both K contiguous, as lesson 34 views W; the SASS holds
  QGMMA.64x{BLOCK_N}x32.F32.E4M3.E4M3. The scales swap roles with the operands: W's (one per row of W) go with the
  rows of the Cᵀ tile, A's (one per row of A) with its columns; the tile is stored transposed, at C's coordinates
  (lesson 32's ``store_tile``).
- **split-K** with a fixed order: a tile's K steps in SPLIT_K slices, each unit storing its fp32 sum to a scratch
  buffer and counting itself at the tile's counter; the unit that arrives last adds the slices in slice order (0, 1,
  …, whichever unit it is, so C has the same bits on every run), applies the scales once, stores C and resets the
  counter for the next call (lesson 32's protocol).

The producer's K step, the consumers' K loop, the scratch offsets, the transposed store and the work units are
lesson 32's device functions; the scales are lesson 34's ``apply_scales``. The fp8 kernel that puts them together
(``small_m_kernel``), its plan and its launcher (``small_m_matmul``) are now lesson 34's section 6, imported here; the
rule is gluon_course.nvidia.fp8_small_m's cost model, and so are the CPU checks. What stays here: the first trial's
fill rule, the candidates the GPU step times, and the GPU step.

    python tools/probes/probe_fp8_small_m.py --model        CPU: each path in the host model (scales per tensor, per
                                                            row, mixed), and the same bits in any program order
    python tools/probes/probe_fp8_small_m.py --compile      CPU: every candidate compiled for sm_90 (fits one SM, no
                                                            spills, QGMMA in the K loop, the split-K protocol): 32
                                                            compiles, about 50 s cold on 2 cores, 10 s warm
    python tools/probes/probe_fp8_small_m.py --plan         CPU: the rule's pick and the candidates for each shape
    python tools/probes/probe_fp8_small_m.py OUT.json [MxNxK ...]
                                                            GPU: correctness on odd shapes (a child process with a time
                                                            limit), then interleaved timings against torch._scaled_mm
                                                            at TIMED_SHAPES (or the shapes given)

tests/test_probe_kernels.py runs the two CPU checks on a reduced set; the plants they reject are lesson 34's
(solutions/34-gemm-fp8/plants.py, run by tests/test_lessons.py).
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import torch
import triton

from gluon_course import load_solution
from gluon_course.nvidia import fp8 as FP8_TOOLS
from gluon_course.nvidia import fp8_small_m as SMALL_M

LESSON34 = load_solution("34")
# The kernel, its plan and its launcher are lesson 34's section 6 (small_m_kernel: lesson 32's device functions with
# lesson 34's scales); the host-model and sm_90 checks are gluon_course.nvidia.fp8_small_m's, which lesson 34's checks
# run too. What stays here: the first trial's fill rule, the candidates the GPU step times, and the GPU step.
small_m_kernel = LESSON34.small_m_kernel
SmallMPlan = LESSON34.SmallMPlan
CONFIG = LESSON34.SMALL_M_CONFIG
kernel_constexprs = LESSON34.small_m_constexprs
kernel_blocks = LESSON34.small_m_blocks
# matmul(a, w, a_scale, w_scale, c, **config): small_m_kernel at ``config`` over CONFIG, or the cost model's pick for
# the shape when ``config`` is empty (CONFIG's 128 × 256 tile above M = 512).
matmul = LESSON34.small_m_matmul


# -- The rule ---------------------------------------------------------------------------------------------------------
# Which tile and split a shape gets, for M from 1 to 512 (above that, lesson 34's CONFIG, which issue 44 found at
# 0.96–1.03× torch._scaled_mm from M = 1024 up). BLOCK_K stays lesson 34's 128 (a tile's row is 128 fp8 bytes, the
# 128-byte swizzle's width).
#
# - M ≤ 128: swap-AB. W's rows fill wgmma's 64-row side and the batch pads to BLOCK_N = max(16, the power of two ≥ M)
#   (16 at the least, as lesson 32's rule pads), so from M = 16 up the kernel does less than 2× the products it must
#   (1.9× at M = 17: 32 columns for 17 rows), where lesson 34's 128-row tile does 8× at M = 16. The shape is then a
#   stream of W: the products of one MiB of W take ~0.02 µs of the H200's fp8 tensor cores at M = 16 and ~0.14 µs at
#   M = 128 (1979 dense TFLOPS, its datasheet's), against ~0.22 µs to read that MiB at 4.8 TB/s. What sets the speed
#   is how many SMs stream W and how many bytes each keeps in flight: so the ring is deep, 8 stages where they fit (a
#   stage is (BLOCK_M + BLOCK_N) × 128 bytes; 6 for 128 × 128), and the tiles are W's rows in blocks of 128 or 64.
# - 128 < M ≤ 512: lesson 34's orientation, tiles of 128 rows of A by 256, 128 or 64 columns of W.
#
# In each family, the rule counts waves. A launch of U work units (tiles × SPLIT_K) on S SMs runs in
# R = ⌈U / S⌉ rounds (one program per SM, program p runs units p, p + S, ...; lesson 32's persistent_grid), and the
# time is about R rounds of one unit, while only U of the R·S unit slots do work: the fill U / (R·S). 128 tiles on 132
# SMs fill 97%; 224 fill 85% (two rounds, the second 70% busy). Splitting K multiplies the units (each does 1/SPLIT_K of
# a tile's steps) and can turn a short last round into a full one: 224 tiles split 4 ways are 896 units in 7 rounds,
# 97%. A split costs a fp32 slice stored and read back per unit and the sum in the last unit, so the rule takes the
# first candidate, fewest splits first and the larger tile first within a split, that fills ≥ FULL_ENOUGH of its
# rounds; where none does, the best-filling one. It never splits so far that a slice has fewer K steps than the ring
# has stages (a program that runs one unit fills its ring once; with fewer steps than stages the split has cut the
# work below what the ring keeps in flight, and the unit's epilogue and sum are paid on a slice that short).
#
# What the rule leaves out, for the GPU step to show: the tile's own speed (a 64 × 16 wgmma does less per instruction
# than a 64 × 256 one), the split's traffic (at 128 × 14336 × 4096 the rule's 4-way split of 64 × 128 tiles writes and
# reads 28 MiB of slices beside W's 56 MiB), L2's reuse of A and W across tiles, and the hint on W's copies (kept on,
# as lesson 32's rule keeps it for M ≤ 512). The candidates (``candidates``) are the rule's pick and its neighbours, so
# that the timings say where it is wrong.

SMS = 132
BLOCK_K = 128
SWAP_UP_TO_M = 128
FULL_ENOUGH = 0.90
SWAP_ROWS = (128, 64)                          # W's rows per swap-AB tile, larger first
SWAP_STAGES = 8                                # the ring's depth for swap-AB tiles, where it fits
MOST_SWAP_SPLIT = 8
# 128 × BLOCK_N tiles for 128 < M ≤ 512: (BLOCK_N, num_warps, STAGES, most splits). The ring is the deepest that fits
# with C's tile (ring_fits); 128 × 256 does not split: small_m_kernel split at that tile spills on sm_90 (96 bytes of
# spill stores at 168 registers a thread; lesson 32's bf16 split kernel does the same there, probe_streamk.py says).
PLAIN_TILES = ((256, 8, 3, 1), (128, 8, 6, 4), (64, 4, 8, 4))
SHARED_BYTES = 227 * 1024                      # what one program may use on Hopper (232448 bytes)


def ring_fits(block_m: int, block_n: int, stages: int) -> bool:
    """STAGES slots of fp8 A and B tiles (BLOCK_K = 128, one byte an element), C's bf16 tile and a KiB for the
    barriers within one program's shared memory."""
    return stages * (block_m + block_n) * BLOCK_K + block_m * block_n * 2 + 1024 <= SHARED_BYTES


def swap_width(M: int) -> int:
    """The batch's side of a swap-AB tile: the power of two ≥ M, at least 16."""
    return max(16, 1 << max(0, (M - 1).bit_length()))


def fill(units: int, sms: int = SMS) -> float:
    """The fraction of the rounds' unit slots that do work: U / (⌈U / S⌉ · S)."""
    return units / (-(-units // sms) * sms)


def family(M: int) -> list[dict]:
    """The rule's tiles for M, larger first (split-K off): swap-AB's for M ≤ 128, lesson 34's orientation above."""
    if M <= SWAP_UP_TO_M:
        width = swap_width(M)
        out = []
        for rows in SWAP_ROWS:
            stages = SWAP_STAGES
            while not ring_fits(rows, width, stages):
                stages -= 1
            out.append({**CONFIG, "BLOCK_M": rows, "BLOCK_N": width, "num_warps": 4, "STAGES": stages,
                        "SWAP_AB": True, "MOST_SPLIT": MOST_SWAP_SPLIT})
        return out
    return [{**CONFIG, "BLOCK_M": 128, "BLOCK_N": bn, "num_warps": warps, "STAGES": stages, "MOST_SPLIT": most}
            for bn, warps, stages, most in PLAIN_TILES]


def tiles_of(cfg: dict, M: int, N: int) -> int:
    rows, cols = (N, M) if cfg["SWAP_AB"] else (M, N)
    return -(-rows // cfg["BLOCK_M"]) * -(-cols // cfg["BLOCK_N"])


def splits_allowed(cfg: dict, K: int) -> range:
    """1 up to the tile's most, no slice shorter than the ring (K steps per slice ≥ STAGES, unsplit always allowed)."""
    steps = -(-K // BLOCK_K)
    most = 1
    while most < cfg["MOST_SPLIT"] and steps // (most + 1) >= cfg["STAGES"]:
        most += 1
    return range(1, most + 1)


def fill_rule(M: int, N: int, K: int, sms: int = SMS) -> dict:
    """The first trial's rule (2026-12-05): the configuration for M × N × K by the fill of its rounds (M ≤ 512: the
    comment above; above, lesson 34's CONFIG). It lost where it split tiles that already made more than a wave (0.38×
    at 128 × 14336 × 4096); ``rule`` replaced it and the GPU step times it beside the new one."""
    if M > 512:
        return dict(CONFIG)
    tiles = family(M)
    best, best_fill = None, -1.0
    for split in range(1, max(t["MOST_SPLIT"] for t in tiles) + 1):
        for cfg in tiles:
            if split not in splits_allowed(cfg, K):
                continue
            f = fill(tiles_of(cfg, M, N) * split, sms)
            if f >= FULL_ENOUGH:
                return _clean({**cfg, "SPLIT_K": split})
            if f > best_fill:
                best, best_fill = {**cfg, "SPLIT_K": split}, f
    return _clean(best)


def rule(M: int, N: int, K: int) -> dict:
    """The configuration for M × N × K: for M ≤ 512 the candidate that gluon_course.nvidia.fp8_small_m's cost model
    (four constants fitted on the first trial's timings, validated leaving one weight shape out) ranks first among
    its space; above, lesson 34's CONFIG."""
    picked = SMALL_M.rule(M, N, K)
    return dict(CONFIG) if picked is None else _clean(picked)


def _clean(cfg: dict) -> dict:
    return {k: v for k, v in cfg.items() if k in CONFIG}


def best_split(cfg: dict, M: int, N: int, K: int, sms: int = SMS) -> int:
    """The fewest splits that give the tile its best fill (1 when no split fills better)."""
    options = [(fill(tiles_of(cfg, M, N) * s, sms), -s) for s in splits_allowed(cfg, K)]
    return -max(options)[1]


def name_of(cfg: dict) -> str:
    cfg = {**CONFIG, **cfg}
    return (f"{'swap ' if cfg['SWAP_AB'] else ''}{cfg['BLOCK_M']}x{cfg['BLOCK_N']} w{cfg['num_warps']} "
            f"s{cfg['STAGES']} k{cfg['SPLIT_K']}" + ("" if cfg["W_FIRST"] else " no-hint"))


# Deeper rings for the swap-AB tiles of 16 and 32 columns, where cuBLAS's kernel names at decode shapes read as 16
# stages of 64 × 16 (lesson 32's DEEP_SWAP_RINGS comment); the GPU step times them beside the rule's 8.
DEEP_SWAP_STAGES = 12


def candidates(M: int, N: int, K: int, sms: int = SMS) -> dict:
    """What the GPU step times at one shape, by name: the rule's pick, the same without the L2 hint on W, every tile
    of the shape's family unsplit and at its best split, swap-AB's narrow tiles with a deeper ring; at M = 128 (the
    families' border) the other family's tiles too. Lesson 34's own kernel is timed beside them (not listed here)."""
    picked = rule(M, N, K)
    found = {"rule": picked, "rule, no hint": {**picked, "W_FIRST": 0}}
    if M <= 512 and fill_rule(M, N, K, sms) != picked:
        found["the first trial's rule"] = fill_rule(M, N, K, sms)
    tiles = family(M) + (family(SWAP_UP_TO_M + 1) if M == SWAP_UP_TO_M else [])
    for cfg in tiles:
        for split in sorted({1, best_split(cfg, M, N, K, sms)}):
            found.setdefault(name_of({**_clean(cfg), "SPLIT_K": split}), _clean({**cfg, "SPLIT_K": split}))
        if cfg["SWAP_AB"] and cfg["BLOCK_N"] <= 32 and ring_fits(cfg["BLOCK_M"], cfg["BLOCK_N"], DEEP_SWAP_STAGES):
            deep = {**cfg, "STAGES": DEEP_SWAP_STAGES}
            split = best_split(deep, M, N, K, sms)
            found.setdefault(name_of({**_clean(deep), "SPLIT_K": split}), _clean({**deep, "SPLIT_K": split}))
    # The rule's pick appears once, under "rule", and the first trial's under its name.
    named = {"rule": picked, "the first trial's rule": found.get("the first trial's rule")}
    return {name: cfg for name, cfg in found.items() if name in named or cfg not in named.values()}


# M ∈ {16, 128, 512} on three weight shapes (N, K): a square layer, an MLP's up/gate (N = 14336, K = 4096) and its
# down projection (N = 4096, K = 14336).
WEIGHTS = ((8192, 8192), (14336, 4096), (4096, 14336))
BATCHES = (16, 128, 512)
TIMED_SHAPES = tuple((M, N, K) for M in BATCHES for N, K in WEIGHTS)


# -- Without a GPU: the host model and the compiler (gluon_course.nvidia.fp8_small_m's checks, on lesson 34's code) --

MODEL_PATHS, MODEL_SHAPES, ORDER_PATHS = SMALL_M.MODEL_PATHS, SMALL_M.MODEL_SHAPES, SMALL_M.ORDER_PATHS


def host_check(paths=None, shapes=MODEL_SHAPES, modes=tuple(FP8_TOOLS.SCALE_MODES), order_paths=None,
               show=None) -> str | None:
    """Each path of ``paths`` (default MODEL_PATHS) in the host model at ``shapes`` in each scale mode of ``modes``
    (``fp8_small_m.host_model_problem``), then each split path of ``order_paths`` (default ORDER_PATHS) with the same
    fp32 bits in every program order (``fp8_small_m.same_bits_problem``). None, or one sentence naming the path."""
    return (SMALL_M.host_model_problem(LESSON34, paths, shapes, modes, show=show) or
            SMALL_M.same_bits_problem(LESSON34, order_paths, show=show))


def compiled(cfg: dict, a_per_row: bool = False, w_per_row: bool = False):
    """lesson 34's small_m_kernel compiled for sm_90 on the CPU at ``cfg`` (over CONFIG)."""
    return SMALL_M.compiled(LESSON34, cfg, a_per_row, w_per_row)


listing_problem = SMALL_M.listing_problem


def compile_key(cfg: dict) -> tuple:
    """What a compile of small_m_kernel depends on (M, N, K and SPLIT_K are not specialised on: only whether K is
    split)."""
    cfg = {**CONFIG, **cfg}
    return (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_warps"], cfg["STAGES"], bool(cfg["SWAP_AB"]), cfg["SPLIT_K"] > 1,
            cfg["W_FIRST"])


# The shapes whose rule picks --compile compiles beside the timed candidates: M from 1 to 512 on the timed weights and
# on two smaller ones (GQA's k/v at N = 1024, a 4096 square).
RULE_SHAPES = tuple((M, N, K) for M in (1, 8, 16, 32, 64, 100, 128, 200, 256, 384, 512)
                    for N, K in WEIGHTS + ((1024, 4096), (4096, 4096)))


def all_configs(shapes=TIMED_SHAPES, rule_shapes=RULE_SHAPES) -> dict:
    """Every distinct compile of the GPU step's candidates at ``shapes`` and of the rule at ``rule_shapes``: compile
    key -> (a name, the configuration)."""
    found = {}
    for M, N, K in shapes:
        for name, cfg in candidates(M, N, K).items():
            found.setdefault(compile_key(cfg), (f"{name} at {M}×{N}×{K}", cfg))
    for M, N, K in rule_shapes:
        cfg = rule(M, N, K)
        found.setdefault(compile_key(cfg), (f"the rule at {M}×{N}×{K}", cfg))
    return found


def compile_check(configs=None, show=print) -> str | None:
    """sm_90: each configuration of ``configs`` (name -> config; default every candidate and rule pick,
    ``all_configs``) with per-tensor scales, and the first of each path (swap-AB or not, split or not) with per-row
    scales too: ``listing_problem``. ``show`` gets one line per compile. None, or one sentence naming the
    configuration."""
    configs = configs if configs is not None else {name: cfg for name, cfg in all_configs().values()}
    paths = set()
    for name, cfg in configs.items():
        full = {**CONFIG, **cfg}
        modes = ((False, False),) if path_of(full) in paths else ((False, False), (True, True))
        paths.add(path_of(full))
        for a_row, w_row in modes:
            k = compiled(full, a_row, w_row)
            unsplit = compiled({**full, "SPLIT_K": 1}, a_row, w_row) if full["SPLIT_K"] > 1 else None
            problem = listing_problem(k, full, unsplit)
            scales = "per-row" if a_row else "per-tensor"
            if problem:
                return f"{name_of(full)} ({name}), {scales} scales: {problem}"
            if show:
                show(f"  {name_of(full):30} {scales:10} registers {k.registers}, shared {k.shared_bytes:6} B, "
                     f"{k.count(FP8_TOOLS.QGMMA.format(n=full['BLOCK_N']))} QGMMA a K step: ok")
    return None


# -- On a GPU ---------------------------------------------------------------------------------------------------------

ROUNDS = 3
# The paths on the GPU, at tiles the rule picks, checked on odd shapes in every scale mode before anything is timed;
# "the rule" is matmul with no configuration, the rule's pick for each shape.
GPU_PATHS = {
    "swap-AB 64 × 16": {"BLOCK_M": 64, "BLOCK_N": 16, "num_warps": 4, "STAGES": 8, "SWAP_AB": True},
    "swap-AB 128 × 32, K split 4 ways": {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 4, "STAGES": 8, "SWAP_AB": True,
                                         "SPLIT_K": 4},
    "swap-AB 64 × 128, K split 3 ways": {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 4, "STAGES": 8,
                                         "SWAP_AB": True, "SPLIT_K": 3},
    "swap-AB 128 × 128, K split 2 ways": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 4, "STAGES": 6,
                                          "SWAP_AB": True, "SPLIT_K": 2},
    "128 × 64, K split 3 ways": {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4, "STAGES": 8, "SPLIT_K": 3},
    "128 × 128": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "STAGES": 6},
    "128 × 128, K split 2 ways": {"BLOCK_M": 128, "BLOCK_N": 128, "num_warps": 8, "STAGES": 6, "SPLIT_K": 2},
    "128 × 256": {"BLOCK_M": 128, "BLOCK_N": 256, "num_warps": 8, "STAGES": 3},
    "the rule": {},
}
# Odd shapes: M of 1, 17, 100 and 300 (swap-AB's 16-, 32- and 128-column tiles cut by M; 300 above the swap border),
# N past the edges of 64- and 128-row tiles (136, 1000, 4104), K multiples of 16 past 128-wide steps (208: 2 steps,
# 1040: 9, 4112: 33); and N = 14336 at M = 17 and 300, where every path's tile makes more units than an H200's 132
# programs (224 of 64 rows of W; 168 of 128 × 256), so that programs run several units and slices.
ODD_SHAPES = ((1, 136, 1040), (17, 1000, 4112), (100, 4104, 208), (300, 1000, 1040), (17, 14336, 4112),
              (300, 14336, 1040))
CORRECT_LIMIT_S = 420


# The longest a candidate's first call and check (its compile included) and a shape's timing rounds may take in the
# parent process before it gives up (the correctness step's child has its own limit, CORRECT_LIMIT_S).
CHECK_LIMIT_S, TIMING_LIMIT_S = 120, 300


class Watchdog:
    """A step with a time limit, in this process: past ``seconds``, ``on_expiry()`` runs (it writes the JSON with the
    step's name) and the process ends with status 3. A kernel that never finishes blocks the main thread in the
    driver; the timer's thread still runs, so a hang cannot outlast the limit (the caller's ``timeout`` aside)."""

    def __init__(self, seconds: float, on_expiry):
        self.seconds, self.on_expiry = seconds, on_expiry

    def __enter__(self):
        import threading

        self.timer = threading.Timer(self.seconds, self._fire)
        self.timer.daemon = True
        self.timer.start()
        return self

    def _fire(self):
        import os

        try:
            self.on_expiry()
        finally:
            print(f"a step ran past {self.seconds} s: stopped (see the JSON's 'hung')", flush=True)
            os._exit(3)

    def __exit__(self, *exc):
        self.timer.cancel()
        return False


def path_of(cfg: dict) -> str:
    cfg = {**CONFIG, **cfg}
    return ("swap-AB" if cfg["SWAP_AB"] else "plain") + (", split" if cfg["SPLIT_K"] > 1 else "")


def correct_here(results_path: str) -> str | None:
    """GPU (a child process of ``main``): each path of GPU_PATHS on ODD_SHAPES in every scale mode (``fp8.check_fp8``:
    poisoned, guarded C; the reference and bound of gluon_course.nvidia.fp8), then a second call on the same plan
    (split-K's counters left at 0 by the first) with the same bits. Writes {path: "ok" or a sentence} to
    ``results_path`` after each path ("running" before it, so a hang shows where); returns None or the first
    sentence."""
    results, first = {}, None

    def save():
        Path(results_path).write_text(json.dumps(results, indent=1))

    for what, cfg in GPU_PATHS.items():
        results[what] = "running"
        save()
        usable = [s for s in ODD_SHAPES if not cfg or SMALL_M.slices_fit({**CONFIG, **cfg}, s[2])]
        problem = FP8_TOOLS.check_fp8(lambda a, w, sa, sw, c: matmul(a, w, sa, sw, c, **cfg), usable)
        if problem is None:
            for M, N, K in usable:
                a, w, sa, sw = FP8_TOOLS.fp8_inputs(M, N, K, True)
                c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
                matmul(a, w, sa, sw, c, **cfg)
                again = c.clone()
                matmul(a, w, sa, sw, again, **cfg)
                torch.cuda.synchronize()
                if not torch.equal(c.view(torch.int16), again.view(torch.int16)):
                    problem = f"shape {M}×{N}×{K}: a second call gave other bits"
                    break
        results[what] = problem or "ok"
        first = first or (problem and f"{what}: {problem}")
        save()
    return first


def main(path: str, shapes=TIMED_SHAPES, rounds: int = ROUNDS) -> None:
    """GPU: correctness first (``correct_here`` in a child process, killed after CORRECT_LIMIT_S), then at each shape
    lesson 34's kernel and every candidate whose path was correct, each checked at the shape (and, split, its bits
    again on a second call), timed in ``rounds`` interleaved rounds of (torch._scaled_mm with fast accumulation,
    candidate) do_bench pairs; per-tensor scales, bf16 C. The JSON is rewritten after each step; a candidate's first
    calls and each shape's timings run under a Watchdog (CHECK_LIMIT_S, TIMING_LIMIT_S), so a hang ends the run with
    the JSON naming it ('hung')."""
    import datetime
    import subprocess
    import tempfile

    from gluon_course.measure.device import free_cache
    from gluon_course.measure.isolated import check_in_child
    from gluon_course.measure.timing import paired_rounds, paired_row

    here = Path(__file__).resolve()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=here.parent).stdout.strip()
    out = {"gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "commit": commit,
           "rounds": rounds, "library": "torch._scaled_mm, use_fast_accum=True, per-tensor scales, bf16 out",
           "ratio": "library time / candidate time, median of the rounds' pairs", "correct": {}, "shapes": {}}

    def save():
        Path(path).write_text(json.dumps(out, indent=1))

    def hung(what):
        out["hung"] = what
        save()

    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "correct.json"
        said = check_in_child(f"{here}:correct_here", [str(results)], timeout=CORRECT_LIMIT_S)
        out["correct"] = json.loads(results.read_text()) if results.exists() else {}
    out["correct_summary"] = said or "every path correct on every odd shape and scale mode"
    for what, verdict in out["correct"].items():
        if verdict == "running":
            out["correct"][what] = f"did not finish: {said}"
    save()
    good = {path_of(GPU_PATHS[w]) for w, v in out["correct"].items() if v == "ok" and GPU_PATHS[w]}
    if out["correct"].get("the rule") != "ok":
        good = set()                         # the rule's picks span every path: time nothing unchecked

    for M, N, K in shapes:
        a, w, sa, sw = FP8_TOOLS.fp8_inputs(M, N, K, False)
        ref = FP8_TOOLS.reference(a, w, sa, sw)
        allowed = FP8_TOOLS.allowed_error(ref, a, w, sa, sw)
        lib_c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        library = lambda: FP8_TOOLS.scaled_mm(a, w, sa, sw, lib_c, True)  # noqa: E731
        c34 = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        row = {"lesson 34": {"config": dict(LESSON34.CONFIG)}}
        calls = {"lesson 34": lambda: LESSON34.matmul(a, w, sa, sw, c34)}
        for name, cfg in candidates(M, N, K).items():
            row[name] = {"config": cfg, "label": name_of(cfg), "path": path_of(cfg),
                         "units": tiles_of({**CONFIG, **cfg}, M, N) * cfg["SPLIT_K"]}
            if path_of(cfg) not in good:
                row[name]["error"] = "not timed: its path was not shown correct"
                continue
            c = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
            try:
                with Watchdog(CHECK_LIMIT_S, lambda: hung(f"{name} at {M}x{N}x{K}, its first calls")):
                    matmul(a, w, sa, sw, c, **cfg)
                    torch.cuda.synchronize()
                    problem = FP8_TOOLS.compare(c, ref, allowed)
                    if not problem and cfg["SPLIT_K"] > 1:
                        first = c.clone()
                        matmul(a, w, sa, sw, c, **cfg)
                        torch.cuda.synchronize()
                        if not torch.equal(c.view(torch.int16), first.view(torch.int16)):
                            problem = "a second call gave other bits"
            except Exception as e:  # noqa: BLE001 - a candidate that fails is its row
                problem = f"{type(e).__name__}: {str(e)[:300]}"
            if problem:
                row[name]["error"] = problem
                continue
            calls[name] = (lambda cfg=cfg, c=c: matmul(a, w, sa, sw, c, **cfg))
        del ref, allowed
        with Watchdog(TIMING_LIMIT_S, lambda: hung(f"the timing rounds at {M}x{N}x{K}")):
            timed = paired_rounds(calls, library, rounds)
        for name, paired in timed.items():
            row[name].update(paired_row(paired, 2 * M * N * K))
        out["shapes"][f"{M}x{N}x{K}"] = row
        save()
        del a, w, sa, sw, lib_c, c34, calls
        free_cache()
    summary = summarize(out)
    out["summary"] = summary
    save()
    print(f"correctness: {out['correct_summary']}")
    for what, verdict in out["correct"].items():
        print(f"  {what}: {verdict}")
    print(table(out))


def summarize(out: dict) -> dict:
    """Per shape: lesson 34's ratio, the rule's, the best candidate's; the geomean and worst of the rule and of the
    best over the shapes."""
    per, rule_r, best_r = {}, [], []
    for shape, row in out["shapes"].items():
        timed = {n: r["ratio"] for n, r in row.items() if "ratio" in r}
        mine = {n: r for n, r in timed.items() if n != "lesson 34"}
        best = max(mine, key=mine.get) if mine else None
        per[shape] = {"lesson 34": timed.get("lesson 34"), "rule": timed.get("rule"), "best": best,
                      "best_ratio": mine.get(best), "rule_label": row["rule"].get("label")}
        if "rule" in timed:
            rule_r.append((timed["rule"], shape))
        if best:
            best_r.append((mine[best], shape))

    def stats(pairs):
        if not pairs:
            return None
        return {"geomean": statistics.geometric_mean(r for r, _ in pairs), "worst": list(min(pairs))}
    return {"per_shape": per, "rule": stats(rule_r), "best": stats(best_r)}


def table(out: dict) -> str:
    lines = [f"{'shape':18} {'lesson 34':>9} {'rule':>6}  {'rule picks':34} {'best':>6}  best candidate"]
    for shape, s in out["summary"]["per_shape"].items():
        f = (lambda x: f"{x:6.3f}" if x is not None else "     -")  # noqa: E731
        lines.append(f"{shape:18} {f(s['lesson 34']):>9} {f(s['rule'])}  {s['rule_label'] or '-':34} "
                     f"{f(s['best_ratio'])}  {s['best'] or '-'}")
    for who in ("rule", "best"):
        s = out["summary"][who]
        if s:
            lines.append(f"{who}: geomean {s['geomean']:.3f}× torch._scaled_mm, worst {s['worst'][0]:.3f}× at "
                         f"{s['worst'][1]}")
    return "\n".join(lines)


def plan_report() -> str:
    """CPU: the rule's pick and the candidates at each timed shape, and the rule over M at the timed weights."""
    lines = []
    for M, N, K in TIMED_SHAPES:
        picked = rule(M, N, K)
        units = tiles_of({**CONFIG, **picked}, M, N) * picked["SPLIT_K"]
        lines.append(f"{M}x{N}x{K}: the rule picks {name_of(picked)} ({units} units, fill {fill(units):.2f}); "
                     f"{len(candidates(M, N, K))} candidates:")
        for name, cfg in candidates(M, N, K).items():
            u = tiles_of({**CONFIG, **cfg}, M, N) * cfg["SPLIT_K"]
            lines.append(f"    {name:36} {name_of(cfg):34} {u:5} units, fill {fill(u):.2f}")
    lines.append("the rule over M (N x K):")
    for N, K in WEIGHTS:
        picks = ", ".join(f"{M}: {name_of(rule(M, N, K))}" for M in (1, 16, 32, 64, 128, 256, 512))
        lines.append(f"  {N}x{K}: {picks}")
    lines.append(f"distinct compiles for --compile: {len(all_configs())}")
    return "\n".join(lines)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["--model"]:
        said = host_check(show=print)
        print(said or "the host model: every path correct within fp8's bound in every scale mode (per tensor, per "
                      "row, mixed), each element of C written once, the counters back at 0 after each of two calls; "
                      "split-K's fp32 bits the same in every program order")
        sys.exit(1 if said else 0)
    elif args == ["--compile"]:
        said = compile_check()
        print(said or "sm_90: every candidate and rule pick fits one SM with no spills, fp8 wgmma (QGMMA) in the K "
                      "loop; the split kernels hold the protocol")
        sys.exit(1 if said else 0)
    elif args == ["--plan"]:
        print(plan_report())
    elif args and not args[0].startswith("-"):
        # OUT.json [MxNxK ...]: the timed shapes, or those given
        main(args[0], tuple(tuple(int(x) for x in a.split("x")) for a in args[1:]) or TIMED_SHAPES)
    else:
        sys.exit(__doc__)
