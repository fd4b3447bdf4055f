"""Which configuration a GEMM shape gets (lesson 32): a table written by a tuning run on a GPU, committed with its
provenance, for the shapes it lists; for every other shape, the candidate of the tuning space that a cost model,
fitted on the same GPU's timings, ranks first.

A table is a JSON file (``results/tuning/<gpu>-linear.json``):

    {"provenance": {"gpu": ..., "triton": ..., "torch": ..., "date": ..., "commit": ..., "how": ...},
     "entries": [{"M": 16, "N": 4096, "K": 4096, "b": "nk", "config": {...}, "us": 11.2, "candidates": 14}, ...]}

``b`` is "nk" for B given as w.t() (W N × K row-major, how ``nn.Linear`` keeps it) and "kn" for B K × N row-major.

For a shape the table lacks, in order:
1. where this GPU has a survey (``results/tuning/<gpu>-survey.json``, written by ``tools/gpu/tune_linear.py
   --survey``), the cost model fitted on it (``cost_model``) ranks every candidate of ``survey_candidates`` for the
   shape, and the first is taken;
2. without a survey, the same (N, K, b) in the table: the entry of the nearest M (by log₂ M; a tie goes to the larger
   M), with SPLIT_K lowered to what this K allows;
3. otherwise by the shape: M ≤ 64 swaps A and B (a 128-row tile of W, M padded to a power of two ≥ 16) and splits K
   until the work units fill the SMs, up to 8 ways; a shape whose 128 × 128 tiles are fewer than the SMs takes that
   tile and splits K the same way, up to 4; everything else takes lesson 19's 128 × 256 tile.

And for every shape, unless its entry sets W_FIRST itself: W's copies carry L2's evict_first priority (W_FIRST = 1)
when M ≤ 512. On the H200 the hint took 1 to 3 µs off do_bench's figure on each of six shapes with M from 16 to 512,
by sparing the write-back of the lines do_bench's L2 overwrite leaves dirty
(results/trials/nvidia-h200-2026-12-03-cache-policy.json); above M = 512 W is read by many row blocks over a longer
kernel, and no run has measured the hint there.
"""
# (Lesson 32's notebook prints the list above.) The recording of 2026-12-03 that first ran the last rule found it
# slower at the output layer (1 × 128256 × 4096). The re-tune after it (tools/gpu/tune_linear.py --space hint,
# 2026-12-03) timed every entry with W_FIRST 0 and 1: it wrote W_FIRST = 0 into the output layer's two decode entries
# and W_FIRST = 1 into two with M = 2048, and left the rule's choice everywhere else (book/lab-notes/32.md).
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

# The SM count the rule plans for when it is not told (an H100 SXM or H200 has 132).
SMS = 132
BASE = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "STAGES": 3, "GROUP_M": 8, "LOAD_REGS": 40,
        "SPLIT_K": 1, "SWAP_AB": False, "BLOCK_N2": 0, "W_FIRST": None}
KEYS = tuple(BASE)
# Keys a table written before they were retired may hold, with the one value they may have there: STREAM_K, the
# waves of tiles stream-K shared (0 for none), which the re-tunes wrote into the entries they touched while stream-K
# was in the space (15 of the committed table's 31). Stream-K lost on every shape it was timed on and no entry uses
# it; it lives in tools/probes/probe_streamk.py now.
RETIRED = {"STREAM_K": 0}
# The largest M whose shapes load W with the evict_first hint when their entry does not say (the docstring's last
# rule).
W_FIRST_UP_TO_M = 512


def w_first(M: int, cfg: dict | None = None) -> int:
    """The docstring's last rule: 1 (W's copies evict_first) for M ≤ W_FIRST_UP_TO_M, else 0."""
    return int(M <= W_FIRST_UP_TO_M)


def from_file(config: dict, where: str) -> dict:
    """An entry's configuration as a table file holds it, a retired key (RETIRED) dropped where it has its retired
    value; any other value of a retired key, or a key the dispatcher does not know, is refused with a sentence."""
    for key, value in RETIRED.items():
        if key in config and config[key] != value:
            raise ValueError(f"{where}: {key}={config[key]!r}, a configuration the dispatcher no longer has (stream-K "
                             "lost on every shape it was timed on: tools/probes/probe_streamk.py); re-tune this entry")
    found = {k: v for k, v in config.items() if k not in RETIRED}
    unknown = set(found) - set(KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    return found


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _splits(units: int, k_steps: int, sms: int, most: int) -> int:
    """The split of K that brings ``units`` tiles closest to filling ``sms`` SMs, at most ``most`` and never more
    than the K steps (no empty slice)."""
    split = 1
    while split < most and units * split * 2 <= sms and split * 2 <= k_steps:
        split *= 2
    return split


def rule(M: int, N: int, K: int, b_kn: bool = False, sms: int = SMS) -> dict:
    """Rule 3 of the module's docstring: a configuration from the shape alone."""
    k_steps = _cdiv(K, 64)
    hint = {"W_FIRST": w_first(M)}
    if M <= 64:
        width = max(16, 1 << max(0, (M - 1).bit_length()))
        tiles = _cdiv(N, 128)
        return {**BASE, "BLOCK_M": 128, "BLOCK_N": width, "num_warps": 4, "STAGES": 6, "SWAP_AB": True,
                "SPLIT_K": _splits(tiles, k_steps, sms, 8), **hint}
    tiles = _cdiv(M, 128) * _cdiv(N, 128)
    if tiles < sms:
        return {**BASE, "BLOCK_N": 128, "num_warps": 4, "STAGES": 4, "SPLIT_K": _splits(tiles, k_steps, sms, 4),
                **hint}
    return {**BASE, **hint}


@dataclass
class DispatchTable:
    entries: dict = field(default_factory=dict)        # (M, N, K, "nk" | "kn") -> config
    provenance: dict = field(default_factory=dict)
    sms: int = SMS
    model: object = None                               # cost_model.Constants: ranks the space for unlisted shapes
    grid: object = None                                # the model's persistent grid, (units, SMs) -> (programs, rounds)

    @classmethod
    def load(cls, path: str | Path) -> "DispatchTable":
        data = json.loads(Path(path).read_text())
        entries = {}
        for e in data["entries"]:
            config = from_file(e["config"], f"{path}: entry {e['M']}×{e['N']}×{e['K']}")
            entries[(e["M"], e["N"], e["K"], e["b"])] = {**BASE, **config}
        return cls(entries, data.get("provenance", {}), data.get("sms", SMS))

    def config(self, M: int, N: int, K: int, b_kn: bool = False) -> dict:
        """The configuration for one shape: the table's, else the cost model's pick (1), else the module's rules (2,
        then 3); W_FIRST by the last rule where the entry leaves it unset."""
        cfg = self._config(M, N, K, b_kn)
        if cfg.get("W_FIRST") is None:
            cfg["W_FIRST"] = w_first(M, cfg)
        return cfg

    def _config(self, M: int, N: int, K: int, b_kn: bool) -> dict:
        b = "kn" if b_kn else "nk"
        found = self.entries.get((M, N, K, b))
        if found is not None:
            return dict(found)
        if self.model is not None and M > 0 and N > 0 and K > 0:
            # A shape the table lacks: the cost model ranks the survey's space for it (cost_model.pick), counting
            # rounds with ``grid`` (the lesson's persistent_grid, or the model's own). Without a fitted model (no
            # survey on this GPU), the two rules below.
            from .cost_model import pick

            return {**BASE, **pick(self.model, M, N, K, survey_candidates(M, N, K, self.sms), self.sms, self.grid)}
        same = [m for (m, n, k, bb) in self.entries if (n, k, bb) == (N, K, b)]
        if same and M > 0:
            nearest = min(same, key=lambda m: (abs(math.log2(m) - math.log2(M)), -m))
            cfg = dict(self.entries[(nearest, N, K, b)])
            steps = _cdiv(K, cfg["BLOCK_K"])
            cfg["SPLIT_K"] = max(1, min(cfg["SPLIT_K"], steps))
            if cfg["SWAP_AB"] and M > cfg["BLOCK_N"] * 4:
                return rule(M, N, K, b_kn, self.sms)     # a swap tile sized for a few rows would waste most of it
            return cfg
        return rule(M, N, K, b_kn, self.sms)

    def to_json(self) -> dict:
        return {"provenance": self.provenance, "sms": self.sms,
                "entries": [{"M": m, "N": n, "K": k, "b": b, "config": {key: cfg[key] for key in KEYS}}
                            for (m, n, k, b), cfg in sorted(self.entries.items())]}


# -- The tuning space: what the tuning command (tools/gpu/tune_linear.py) times for each shape ----------------------
# Tiles without swap-AB: (BLOCK_M, BLOCK_N, BLOCK_K, STAGES, num_warps); with swap-AB: W's rows per tile
# (BLOCK_M), the activations' rows padded to a power of two (BLOCK_N), and the ring (BLOCK_K, STAGES).
TILES = ((128, 256, 64, 3, 8), (128, 128, 64, 4, 8), (128, 128, 64, 4, 4), (128, 128, 64, 6, 4),
         (128, 128, 128, 3, 8), (64, 128, 64, 6, 4), (64, 256, 64, 4, 4))
SWAP_ROWS = (64, 128)
SWAP_RINGS = ((64, 4), (64, 8), (128, 4))          # (BLOCK_K, STAGES): the ring W streams through
# Added after the first table, for the shapes it left below F.linear (M from 64 to 512): tiles of 64 columns or rows
# that give those shapes more programs, with deeper rings; and the swap-AB rings between those above. BLOCK_N = 192
# (4 × 32 = 128 tiles at 512 × 6144, one wave) is no single accumulator: every Gluon tensor's shape is a power of two
# in Triton 3.9.0 (triton/_utils.py, validate_block_shape); WIDE_TILES below write it as two strips.
MORE_TILES = ((128, 64, 64, 8, 4), (64, 128, 64, 8, 4), (64, 64, 64, 8, 4), (128, 128, 64, 5, 8))
MORE_SWAP_RINGS = ((64, 6), (128, 3))
# Added on 2026-12-02, after cuBLAS's kernel names on the model shapes (tools/probes/probe_decode.py, torch.profiler):
# read as nvjet's names are commonly read (tile, then K step × stages, then cluster), where M ≤ 128 it streams W
# through rings of 7 to 16 stages of BLOCK_K = 64 (nvjet_sm90_tst_64x16_64x16_2x1: a 64 × 16 tile, 16 stages, at
# 16 × 4096 × 4096), up to twice the deepest ring above. A small-M GEMM is a stream of W: the bytes in flight per SM,
# not the tile, set its speed. The deepest rings that fit one SM's shared memory (_ring_fits leaves out those that
# do not); the re-tune of 2026-12-02 replaced 6 entries with them, none with 16 stages.
DEEP_TILES = ((64, 64, 64, 12, 4),)
DEEP_SWAP_RINGS = ((64, 12), (64, 16), (128, 6))
# Stream-K (added after the second tuning run, timed in the third on five shapes, where it won none) left the space
# with its kernel: its tiles and candidates are in tools/probes/probe_streamk.py.
# Added on 2026-12-02 (after the deep rings), for the shapes the re-tunes left below F.linear. Wide tiles (BLOCK_M,
# BLOCK_N, BLOCK_N2, BLOCK_K, STAGES, num_warps): BLOCK_N + BLOCK_N2 columns in two strips, each a power of two as every Gluon tensor's
# side is in Triton 3.9.0 (triton/_utils.py, validate_block_shape). 128 × 192 is the tile cuBLAS's kernel name gives
# at 512 × 6144 × 4096 (nvjet_sm90_tst_192x128_64x5: 192 of W's rows by 128 of A's, as cuBLAS sees Cᵀ), 4 × 32 =
# 128 tiles, one wave of 132 SMs where 128 × 128 makes 1.45 and 128 × 256 leaves 36 SMs idle.
WIDE_TILES = ((128, 128, 64, 64, 4, 8), (64, 128, 64, 64, 6, 4))
# Swap-AB with the activations' rows cut in two or four (BLOCK_N below M's power of two): more tiles without
# split-K's reduction (cuBLAS's name at 64 × 4096 × 4096, nvjet_sm90_tst_64x32: 64 of W's rows by 32 of A's, 128
# tiles).
NARROW_SWAP_RINGS = ((64, 8), (64, 12), (128, 4))
SHARED_BYTES = 227 * 1024          # what one program may use on Hopper (232448 bytes)


def _ring_fits(block_m: int, block_n: int, block_k: int, stages: int, c_bytes: int) -> bool:
    return stages * (block_m + block_n) * block_k * 2 + c_bytes + 1024 <= SHARED_BYTES


def _space(M: int, N: int, K: int, sms: int, tiles_, splits, swap_rings) -> list[dict]:
    found = []
    for bm, bn, bk, stages, warps in tiles_:
        tiles = _cdiv(M, bm) * _cdiv(N, bn)
        for split in splits:
            if split > 1 and (tiles >= 2 * sms or tiles * split > 3 * sms or split > _cdiv(K, bk)):
                continue
            found.append({**BASE, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "STAGES": stages,
                          "num_warps": warps, "SPLIT_K": split})
    if M <= 128:
        width = max(16, 1 << max(0, (M - 1).bit_length()))
        for rows in SWAP_ROWS:
            tiles = _cdiv(N, rows)
            for block_k, stages in swap_rings:
                if not _ring_fits(rows, width, block_k, stages, rows * width * 2):
                    continue
                for split in (1, 2, 4, 8):
                    if split > 1 and (tiles >= sms or split > _cdiv(K, block_k)):
                        continue
                    found.append({**BASE, "BLOCK_M": rows, "BLOCK_N": width, "BLOCK_K": block_k, "STAGES": stages,
                                  "num_warps": 4, "SPLIT_K": split, "SWAP_AB": True})
    return found


def first_candidates(M: int, N: int, K: int, sms: int = SMS) -> list[dict]:
    """The tuning space of the first table (2026-12-01): each tile of TILES unsplit, and split 2, 3 or 4 ways where
    its tiles are fewer than two waves of the SMs (at most three waves of work units); swap-AB only for M ≤ 128,
    split up to 8 ways where its tiles leave SMs idle."""
    return _space(M, N, K, sms, TILES, (1, 2, 3, 4), SWAP_RINGS)


def _key(cfg: dict) -> tuple:
    return tuple(cfg[k] for k in KEYS)


def deep_candidates(M: int, N: int, K: int, sms: int = SMS) -> list[dict]:
    """The deep rings added on 2026-12-02 (DEEP_TILES, DEEP_SWAP_RINGS), split as the rest of the space is: what
    ``tune_linear.py --space deep`` times beside a shape's entry."""
    tiles_ = DEEP_TILES if M > 16 else ()          # a 64-row tile of A for one to 16 rows is swap-AB's job
    return [c for c in _space(M, N, K, sms, tiles_, (1, 2, 3, 4, 6, 8), DEEP_SWAP_RINGS)
            if _ring_fits(c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c["STAGES"], c["BLOCK_M"] * c["BLOCK_N"] * 2)]


def wide_candidates(M: int, N: int, K: int, sms: int = SMS) -> list[dict]:
    """The wide tiles of WIDE_TILES (split as the rest of the space is) and, for 32 < M ≤ 128, swap-AB with the
    activations' rows in two or four tiles (NARROW_SWAP_RINGS, unsplit or split 2 ways): what ``tune_linear.py
    --space wide`` times beside a shape's entry."""
    found = []
    for bm, bn, bn2, bk, stages, warps in WIDE_TILES:
        if not _ring_fits(bm, bn + bn2, bk, stages, bm * (bn + bn2) * 2):
            continue
        tiles = _cdiv(M, bm) * _cdiv(N, bn + bn2)
        for split in (1, 2, 3, 4):
            if split > 1 and (tiles >= 2 * sms or tiles * split > 3 * sms or split > _cdiv(K, bk)):
                continue
            found.append({**BASE, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_N2": bn2, "BLOCK_K": bk, "STAGES": stages,
                          "num_warps": warps, "SPLIT_K": split})
    if 32 < M <= 128:
        width = max(16, 1 << max(0, (M - 1).bit_length()))
        for narrow in (width // 2, width // 4):
            for rows in SWAP_ROWS:
                for block_k, stages in NARROW_SWAP_RINGS:
                    if not _ring_fits(rows, narrow, block_k, stages, rows * narrow * 2):
                        continue
                    for split in (1, 2):
                        found.append({**BASE, "BLOCK_M": rows, "BLOCK_N": narrow, "BLOCK_K": block_k,
                                      "STAGES": stages, "num_warps": 4, "SPLIT_K": split, "SWAP_AB": True})
    return found


def new_candidates(M: int, N: int, K: int, sms: int = SMS) -> list[dict]:
    """What the space gained after the first table: MORE_TILES, splits of 6 and 8 ways for every tile, the
    rings of MORE_SWAP_RINGS, the deep rings (deep_candidates) and the wide tiles (wide_candidates); only the
    configurations the first space lacks. (Stream-K's candidates were among them until it left the space.)"""
    first = {_key(c) for c in first_candidates(M, N, K, sms)}
    found, seen = [], set()
    for c in (_space(M, N, K, sms, TILES + MORE_TILES, (1, 2, 3, 4, 6, 8), SWAP_RINGS + MORE_SWAP_RINGS)
              + deep_candidates(M, N, K, sms) + wide_candidates(M, N, K, sms)):
        if _key(c) not in first and _key(c) not in seen:
            seen.add(_key(c))
            found.append(c)
    return found


def candidates(M: int, N: int, K: int, sms: int = SMS) -> list[dict]:
    """Every configuration the tuning command times for a shape: the first space and what it gained since."""
    return first_candidates(M, N, K, sms) + new_candidates(M, N, K, sms)


# -- Which table a GPU reads --------------------------------------------------------------------------------------
TUNED_ON = "nvidia-h200"            # the GPU the course's committed table was tuned on


def table_path(gpu_slug: str = TUNED_ON) -> Path:
    from ..course import repo_root

    return repo_root() / "results" / "tuning" / f"{gpu_slug}-linear.json"


def table_for(gpu_slug: str | None) -> DispatchTable:
    """The table tuned on this GPU model if the course has one, else the H200's (tuned there: on another GPU of the
    class it still picks valid configurations, which the tuning command can re-tune), else no table (the rule); with
    the cost model fitted on the same GPU's survey for the shapes the table lacks, where that GPU has a survey."""
    from .cost_model import fitted

    for slug in ((gpu_slug,) if gpu_slug else ()) + (TUNED_ON,):
        path = table_path(slug)
        if path.exists():
            table = DispatchTable.load(path)
            table.model = fitted(slug)
            return table
    return DispatchTable()


# -- The survey space: what the cost model is fitted on (tools/gpu/tune_linear.py --survey) --------------------------
# The tiles of the space above, with more ways to cut
# small problems: K split up to 16 ways where a tile grid leaves most SMs idle (a 128 × 512 C is four 128 × 128
# tiles), and swap-AB's activation columns cut to half or a quarter of M's power of two, split too.
SURVEY_TILES = ((128, 256, 64, 3, 8), (128, 128, 64, 4, 8), (128, 128, 64, 6, 4), (128, 128, 128, 3, 8),
                (64, 128, 64, 6, 4), (64, 256, 64, 4, 4), (128, 64, 64, 8, 4), (64, 64, 64, 8, 4),
                (64, 64, 64, 12, 4))
SURVEY_WIDE = ((128, 128, 64, 64, 4, 8), (64, 128, 64, 64, 6, 4))
# Added after the dispatcher's first recording on families it was not fitted on (2026-12-05): its seven shapes below
# 0.85× F.linear were M = 1024 or 4096 with N from 128 to 5120, and on six of them the pick was the survey's fastest
# candidate or within 0.2% of it, 0.83–0.91× F.linear in the survey (the space's loss, not the model's ranking). At
# 1024 × 5120, 128 × 128 makes 320 tiles, three rounds of 132 SMs of which the last keeps 56 busy, and 128 × 192 makes
# 216, two rounds the second keeping 84 busy; 128 × 160 (128 + 32 columns) makes 256, the second round keeping 124
# busy, as at 4096 × 1280. 64 × 160 is its 64-row twin. The survey has not timed them yet: until it does, the cost
# model knows no pace for them and ranks without them.
SURVEY_WIDE_FILL = ((128, 128, 32, 64, 4, 8), (64, 128, 32, 64, 6, 4))
SURVEY_SPLITS = (1, 2, 3, 4, 6, 8, 16)
SURVEY_SWAP_RINGS = ((64, 8), (128, 4), (128, 6))
# A split is surveyed only where the tiles are less than a wave, its units at most SURVEY_UNITS_WAVES waves, and
# each slice at least SURVEY_MIN_SLICE K steps long (a shorter slice is all prologue and epilogue).
SURVEY_UNITS_WAVES = 2
SURVEY_MIN_SLICE = 2


def _split_ok(tiles: int, split: int, k_steps: int, sms: int) -> bool:
    if split == 1:
        return True
    return tiles < sms and tiles * split <= SURVEY_UNITS_WAVES * sms and k_steps >= split * SURVEY_MIN_SLICE


def survey_candidates(M: int, N: int, K: int, sms: int = SMS) -> list[dict]:
    """Every configuration the survey times for one shape (B as w.t()): the tiles of SURVEY_TILES, SURVEY_WIDE and
    SURVEY_WIDE_FILL (only those of 64 rows for M ≤ 32), each unsplit and split where ``_split_ok`` allows; for M ≤ 128, swap-AB with 64 or 128 rows of W a tile, the
    activations' columns at M's power of two (at least 16) and, for M > 32, half and a quarter of it, each ring of
    SURVEY_SWAP_RINGS that fits, split the same way. W's L2 hint is left to the rule (W_FIRST None)."""
    found = []
    for bm, bn, bk, stages, warps in SURVEY_TILES:
        if M <= 32 and bm > 64:
            continue                  # a tile of 128 rows for 32 rows or fewer: the 64-row tiles show what it costs
        tiles, k_steps = _cdiv(M, bm) * _cdiv(N, bn), _cdiv(K, bk)
        for split in SURVEY_SPLITS:
            if _split_ok(tiles, split, k_steps, sms):
                found.append({**BASE, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "STAGES": stages,
                              "num_warps": warps, "SPLIT_K": split})
    for bm, bn, bn2, bk, stages, warps in SURVEY_WIDE + SURVEY_WIDE_FILL:
        if M <= 32 and bm > 64:
            continue
        if not _ring_fits(bm, bn + bn2, bk, stages, bm * (bn + bn2) * 2):
            continue
        tiles, k_steps = _cdiv(M, bm) * _cdiv(N, bn + bn2), _cdiv(K, bk)
        for split in SURVEY_SPLITS:
            if _split_ok(tiles, split, k_steps, sms):
                found.append({**BASE, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_N2": bn2, "BLOCK_K": bk,
                              "STAGES": stages, "num_warps": warps, "SPLIT_K": split})
    if M <= 128:
        width = max(16, 1 << max(0, (M - 1).bit_length()))
        widths = [w for w in (width, width // 2, width // 4) if w >= 16] if M > 32 else [width]
        for narrow in widths:
            for rows in SWAP_ROWS:
                tiles = _cdiv(N, rows) * _cdiv(M, narrow)
                for block_k, stages in SURVEY_SWAP_RINGS:
                    if not _ring_fits(rows, narrow, block_k, stages, rows * narrow * 2):
                        continue
                    for split in SURVEY_SPLITS:
                        if _split_ok(tiles, split, _cdiv(K, block_k), sms):
                            found.append({**BASE, "BLOCK_M": rows, "BLOCK_N": narrow, "BLOCK_K": block_k,
                                          "STAGES": stages, "num_warps": 4, "SPLIT_K": split, "SWAP_AB": True})
    return found


# -- The figure that judges the dispatcher on families it was not fitted on (lesson 32) --------------------------------

def unseen_families_table(lesson, pairs: int = 3, rep_ms: int = 20, families=None) -> dict:
    """The dispatcher on model families it was not fitted on, timed as a user calls it: for each family of the survey
    but the table's (TABLE_FAMILY), the model fitted without that family picks each shape's configuration, and
    ``lesson.Linear(table=...)`` (the dispatcher with that model and no entries) is timed against ``F.linear`` in ``pairs`` interleaved do_bench pairs (median,
    L2 flushed, ``rep_ms`` each), after a correctness check against the fp32 reference."""
    import torch.nn.functional as F
    from triton.testing import do_bench

    from ..measure.gemm import compare_gemm, reference, tolerance
    from ..measure.linear import linear_inputs
    from ..measure.timing import paired_rounds

    from .cost_model import TABLE_FAMILY, fitted, load_survey, tile_of

    survey = load_survey()
    names = families or [f for f in survey["families"] if f != TABLE_FAMILY]
    bench = lambda fn: float(do_bench(fn, warmup=5, rep=rep_ms, return_mode="median"))  # noqa: E731
    shapes, seen = {}, set()
    for family in names:
        # The dispatcher as a user reaches it (Linear(table=...)), its model fitted without this family, and no table
        # entries: every shape of the family is one the table does not list.
        # The lesson's own count of rounds (persistent_grid), as its dispatcher uses it.
        table = DispatchTable(model=fitted(leave_out=family), grid=lesson.persistent_grid)
        for row in survey["rows"]:
            if row["family"] != family or (row["M"], row["N"], row["K"]) in seen:
                continue
            M, N, K = row["M"], row["N"], row["K"]
            seen.add((M, N, K))
            cfg = table.config(M, N, K, False)
            a, w, c = linear_inputs(M, N, K, seed=len(shapes))
            f = lesson.Linear(table=table)
            c.fill_(float("nan"))
            f(a, w.t(), c)
            problem = compare_gemm(c, reference(a, w.t()), tolerance(K, c.dtype))
            if problem:
                raise AssertionError(f"the configuration the model picked for {M}×{N}×{K} ({tile_of(cfg)}, split "
                                     f"{cfg['SPLIT_K']}) is wrong: {problem}")
            p = paired_rounds({"ours": lambda: f(a, w.t(), c)}, lambda: F.linear(a, w), pairs, bench)["ours"]
            shapes[f"{M}x{N}x{K}"] = {"family": family, "projection": row["projection"], "ratio": round(p.ratio, 4),
                                      "pairs": [round(r, 4) for r in p.ratios], "us": round(1e3 * p.kernel, 2),
                                      "f_linear_us": round(1e3 * p.ceiling, 2), "pick": tile_of(cfg),
                                      "split": cfg["SPLIT_K"]}
            del a, w, c
    by_family = {}
    for s in shapes.values():
        by_family.setdefault(s["family"], []).append(s["ratio"])

    def geomean(xs):
        return math.exp(sum(map(math.log, xs)) / len(xs))

    ratios = [s["ratio"] for s in shapes.values()]
    return {"shapes": shapes, "geomean": geomean(ratios), "worst": min(ratios),
            "worst_shape": min(shapes, key=lambda k: shapes[k]["ratio"]),
            "families": {f: {"geomean": round(geomean(r), 4), "worst": min(r), "shapes": len(r)}
                         for f, r in by_family.items()},
            "worst_family_geomean": min(geomean(r) for r in by_family.values())}
