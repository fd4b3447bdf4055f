"""Lesson 32's stream-K, kept as a probe: it lost on every shape it was timed on, and no entry of the dispatch table
uses it. It was lesson 32's kernel, launcher, checks and tuning space until the lesson was cut to one idea (issue 43):
all of it is here, run against the lesson's own K loop, producer step and epilogue.

Wave quantization: 96 tiles of 128 × 256 leave 36 of the H200's 132 SMs idle at 512 × 6144 × 4096, and 192 tiles of
128 × 128 make 1.45 waves. Split-K multiplies the work units by a whole factor, so they still come in waves that do
not divide evenly. **Stream-K** cuts the K steps themselves: ``streamk_kernel`` lays the K steps of the first SK_TILES
tiles end to end and gives each program an equal range of them (within one step), so a range may start and end
inside a tile; the other tiles go whole, one per program in turn. ``STREAM_K = 1`` shares only the tiles of the last,
partial wave; ``STREAM_K = 2`` that wave and one full wave before it (all the tiles, when there are fewer). A tile
that several programs touch is finished as split-K's is: each stores its fp32 partial and counts itself at the tile's
counter; the last to arrive adds the partials in program order, whoever it is, so the bits are the same on every run.
No program waits for another, so the kernel cannot deadlock however many of its programs are resident at once.

What it found (H200, Triton 3.9.0; lesson 32's lab notes, book/lab-notes/32.md, tell it in full): the re-tune of
2026-12-02 (tools/gpu/tune_linear.py --merge ... --only ..., when stream-K was part of the tuning space) timed 48
stream-K configurations on five shapes beside their table entries, every one correct first; none won, the fastest of
each shape taking 1.07× to 1.32× the entry's time (the timings are the entries' candidates in
results/tuning/nvidia-h200-linear.json). Nsight Compute at 512 × 6144 × 4096 (probe_streamk_ncu.sh,
results/trials/nvidia-h200-2026-12-03-streamk-ncu.json) found the partials going out to HBM and, with two waves
shared, the operands read from HBM three times over.

    python tools/probes/probe_streamk.py --model          CPU: the host model on each path, both program orders, B
                                                          either way, and the same bits whichever program is last
    python tools/probes/probe_streamk.py --compile        CPU: every stream-K configuration of the space compiled
                                                          for sm_90 (no spills; the release, atomic and .cg reads)
    python tools/probes/probe_streamk.py time OUT.json [--only 512x6144x4096,...]
                                                          GPU: each shape's table entry beside its stream-K
                                                          candidates, timed as the re-tune timed them
    python tools/probes/probe_streamk.py one KEY=VALUE,... M N K
                                                          GPU: one launch in the NVTX range "probe" (for Nsight
                                                          Compute: probe_streamk_ncu.sh)

tests/test_streamk.py runs the two CPU steps and the plants that the host model must still reject.
"""
from __future__ import annotations

import json
import sys
from collections import OrderedDict

import numpy as np
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

from gluon_course import load_solution
from gluon_course.nvidia import launch as kept
from gluon_course.nvidia.dispatch import BASE, SMS, SWAP_ROWS, _cdiv, _ring_fits
from gluon_course.nvidia.hopper import require_hopper, require_wgmma_tile, tma_descriptor
from gluon_course.nvidia.tiles import grouped_tile
from gluon_course.validate import require_matmul_args

LESSON = load_solution("32")
# The lesson's device functions this kernel is built from: its producer's K step, its consumers' K loop, the offsets
# of an fp32 tile in a scratch buffer, and its epilogue.
load_step = LESSON.load_step
unit_products = LESSON.unit_products
tile_offsets = LESSON.tile_offsets
store_strips = LESSON.store_strips


# -- The tuning space it was timed in ---------------------------------------------------------------------------------
# The tiles whose stream-K kernel fits one SM with no spills on sm_90 (compile_check compiles each). 128 × 256 with 8
# warps spills there (as split-K's kernel does at that tile), so it is not one of them.
STREAMK_TILES = ((128, 128, 64, 4, 4), (128, 128, 64, 6, 4), (128, 128, 64, 4, 8), (64, 256, 64, 4, 4),
                 (64, 128, 64, 6, 4), (128, 64, 64, 8, 4))
STREAMK_SWAP_RINGS = ((64, 4), (128, 4))
# The five shapes the re-tune of 2026-12-02 timed it on: those the recording before it had left furthest below F.linear.
TIMED_SHAPES = ((512, 6144, 4096), (128, 4096, 4096), (128, 6144, 4096), (64, 4096, 4096), (512, 14336, 4096))


def streamk_grid(tiles: int, k_steps: int, sms: int, waves: int) -> tuple[int, int]:
    """Stream-K's (programs, SK_TILES) for ``STREAM_K = waves`` ≥ 1: the tiles of the last, partial wave and
    ``waves − 1`` full waves before it are shared step by step (all of them when there are fewer), the rest go whole;
    no more programs than shared K steps, so no program's range is empty. SK_TILES = 0 (the tiles fill whole waves
    and ``waves`` is 1) leaves every tile whole."""
    if waves < 1:
        raise ValueError(f"STREAM_K={waves!r}: the waves of tiles stream-K shares, 1 or more")
    sk = min(tiles, tiles % sms + (waves - 1) * sms)
    return (min(sms, sk * k_steps) if sk else min(sms, tiles)), sk


def streamk_candidates(M: int, N: int, K: int, sms: int = SMS) -> list[dict]:
    """Stream-K over the last partial wave (STREAM_K = 1) and over it and one full wave more (2), for each tile of
    STREAMK_TILES whose tiles leave a wave partly empty and make fewer than four waves; swap-AB's tiles (64 or 128
    rows of W, the rings of STREAMK_SWAP_RINGS) for M ≤ 128. A setting that shares no tile, or the same tiles as
    the one before it, is left out. W's L2 hint is off: this kernel's copies take none."""
    found = []

    def add(cfg, tiles, k_steps):
        if tiles % sms == 0 or tiles >= 4 * sms:
            return
        shared = set()
        for waves in (1, 2):
            sk = streamk_grid(tiles, k_steps, sms, waves)[1]
            if sk and sk not in shared:
                shared.add(sk)
                found.append({**cfg, "W_FIRST": 0, "STREAM_K": waves})

    for bm, bn, bk, stages, warps in STREAMK_TILES:
        add({**BASE, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "STAGES": stages, "num_warps": warps},
            _cdiv(M, bm) * _cdiv(N, bn), _cdiv(K, bk))
    if M <= 128:
        width = max(16, 1 << max(0, (M - 1).bit_length()))
        for rows in SWAP_ROWS:
            for block_k, stages in STREAMK_SWAP_RINGS:
                if _ring_fits(rows, width, block_k, stages, rows * width * 2):
                    add({**BASE, "BLOCK_M": rows, "BLOCK_N": width, "BLOCK_K": block_k, "STAGES": stages,
                         "num_warps": 4, "SWAP_AB": True}, _cdiv(N, rows), _cdiv(K, block_k))
    return found


# -- The kernel ---------------------------------------------------------------------------------------------------------
# The variant here: "stream-K, last to arrive reduces", with data-parallel tiles after it. The first SK_TILES tiles
# (in the grouped order) are one run of SK_TILES × k_tiles K steps cut into as many equal ranges as there are
# programs; a range may start and end inside a tile. The other tiles go whole to the programs in turn.

@gluon.jit
def streamk_units(programs, tiles, SK_TILES, k_tiles):
    """How many units program ``gl.program_id(0)`` runs: the tiles its stream-K range touches, then its share of the
    data-parallel tiles. The launcher keeps ``programs`` ≤ SK_TILES × k_tiles (or SK_TILES = 0), so no range is
    empty."""
    pid = gl.program_id(0)
    sk_steps = SK_TILES * k_tiles
    begin = pid * sk_steps // programs
    end = (pid + 1) * sk_steps // programs
    return (end + k_tiles - 1) // k_tiles - begin // k_tiles + (tiles - SK_TILES - pid + programs - 1) // programs


@gluon.jit
def streamk_unit(i, programs, SK_TILES, k_tiles, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    """Unit ``i`` of this program: its tile (number and grouped coordinates), the K steps [k0, k1) it sums and the
    first and last programs that share the tile (q0 == q1: this program has it whole)."""
    pid = gl.program_id(0)
    sk_steps = SK_TILES * k_tiles
    begin = pid * sk_steps // programs
    end = (pid + 1) * sk_steps // programs
    touched = (end + k_tiles - 1) // k_tiles - begin // k_tiles
    tile = SK_TILES + pid + (i - touched) * programs
    k0 = 0
    k1 = k_tiles
    q0 = pid
    q1 = pid
    if i < touched:
        tile = begin // k_tiles + i
        k0 = max(begin - tile * k_tiles, 0)
        k1 = min(end - tile * k_tiles, k_tiles)
        # Program q's range starts at q·sk_steps // programs: the owner of step s is ((s + 1)·programs − 1) // sk_steps.
        q0 = ((tile * k_tiles + 1) * programs - 1) // sk_steps
        q1 = ((tile + 1) * k_tiles * programs - 1) // sk_steps
    pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
    return tile, pid_m, pid_n, k0, k1, q0, q1


@gluon.jit
def streamk_slot(q, tile, programs, sk_steps, k_tiles):
    """Where program ``q`` keeps its partial of ``tile``: two slots per program, 2q for the first tile its range
    touches and 2q + 1 for its last (a range shares at most those two: the tiles between are its alone)."""
    return 2 * q + min(tile - (q * sk_steps // programs) // k_tiles, 1)


@gluon.jit
def share_partial(acc, partial_ptr, flags_ptr, tile, slot, acc_layout: gl.constexpr):
    """Store this program's fp32 partial of a shared tile in its slot, then count it in the tile's counter: the
    consumers' barrier first (every thread's part stored), then one thread's atomic, whose release publishes the
    partial to the program that acquires the count. Returns the count before this arrival."""
    BLOCK_M: gl.constexpr = acc.shape[0]
    BLOCK_N: gl.constexpr = acc.shape[1]
    gl.store(partial_ptr + slot * (BLOCK_M * BLOCK_N) + tile_offsets(BLOCK_M, BLOCK_N, acc_layout), acc)
    gl.barrier()
    return gl.atomic_add(flags_ptr + tile, 1, sem="acq_rel", scope="gpu")


@gluon.jit
def add_partials(partial_ptr, tile, q0, q1, programs, sk_steps, k_tiles, BLOCK_M: gl.constexpr,
                 BLOCK_N: gl.constexpr, acc_layout: gl.constexpr):
    """The tile's partials added in program order, q0's first, read from L2 (.cg): the same additions in the same
    order whichever program arrived last."""
    in_tile = tile_offsets(BLOCK_M, BLOCK_N, acc_layout)
    total = gl.load(partial_ptr + streamk_slot(q0, tile, programs, sk_steps, k_tiles) * (BLOCK_M * BLOCK_N)
                    + in_tile, cache_modifier=".cg")
    for q in range(q0 + 1, q1 + 1):
        total += gl.load(partial_ptr + streamk_slot(q, tile, programs, sk_steps, k_tiles) * (BLOCK_M * BLOCK_N)
                         + in_tile, cache_modifier=".cg")
    return total


@gluon.jit
def streamk_load_partition(a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, SK_TILES, STAGES: gl.constexpr,
                           GROUP_M: gl.constexpr, A_KM: gl.constexpr, B_KN: gl.constexpr):
    """The producer: lesson 32's K steps (load_step), unit by unit of streamk_unit."""
    BLOCK_M: gl.constexpr = a_desc.block_shape[0] if A_KM else a_desc.block_shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1] if A_KM else a_desc.block_shape[0]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1] if B_KN else b_desc.block_shape[0]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    programs = gl.num_programs(0)
    step = 0
    for i in range(streamk_units(programs, num_pid_m * num_pid_n, SK_TILES, k_tiles)):
        tile, pid_m, pid_n, k0, k1, q0, q1 = streamk_unit(i, programs, SK_TILES, k_tiles, num_pid_m, num_pid_n,
                                                          GROUP_M)
        for k in range(k0, k1):
            load_step(a_desc, b_desc, b_desc, a_ring, b_ring, b_ring, ready, empty, step, pid_m, pid_n, k, STAGES,
                      A_KM, B_KN, 0, None, None)
            step += 1


@gluon.jit
def streamk_mma_partition(c_desc, a_ring, b_ring, c_smem, ready, empty, partial_ptr, flags_ptr, M, N, K, SK_TILES,
                          STAGES: gl.constexpr, GROUP_M: gl.constexpr, acc_layout: gl.constexpr, A_KM: gl.constexpr,
                          B_KN: gl.constexpr, SWAP_AB: gl.constexpr):
    """The consumers: each unit's products as lesson 32's (unit_products); a tile this program has whole goes to C, a
    shared one to share_partial, and the program that arrives last at its counter adds the partials (add_partials),
    stores C and resets the counter for the next call."""
    BLOCK_M: gl.constexpr = a_ring.shape[1] if A_KM else a_ring.shape[2]
    BLOCK_K: gl.constexpr = a_ring.shape[2] if A_KM else a_ring.shape[1]
    BLOCK_N: gl.constexpr = b_ring.shape[2] if B_KN else b_ring.shape[1]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    programs = gl.num_programs(0)
    sk_steps = SK_TILES * k_tiles
    step = 0
    for i in range(streamk_units(programs, num_pid_m * num_pid_n, SK_TILES, k_tiles)):
        tile, pid_m, pid_n, k0, k1, q0, q1 = streamk_unit(i, programs, SK_TILES, k_tiles, num_pid_m, num_pid_n,
                                                          GROUP_M)
        acc, _, step = unit_products(a_ring, b_ring, b_ring, ready, empty, step, k0, k1, STAGES, acc_layout,
                                     acc_layout, A_KM, B_KN, 0)
        if q0 == q1:
            store_strips(c_desc, c_smem, c_desc, c_smem, acc, acc, pid_m, pid_n, BLOCK_M, BLOCK_N, 0, SWAP_AB)
        else:
            mine = streamk_slot(gl.program_id(0), tile, programs, sk_steps, k_tiles)
            arrived = share_partial(acc, partial_ptr, flags_ptr, tile, mine, acc_layout)
            if arrived == q1 - q0:
                acc = add_partials(partial_ptr, tile, q0, q1, programs, sk_steps, k_tiles, BLOCK_M, BLOCK_N,
                                   acc_layout)
                store_strips(c_desc, c_smem, c_desc, c_smem, acc, acc, pid_m, pid_n, BLOCK_M, BLOCK_N, 0, SWAP_AB)
                gl.atomic_xchg(flags_ptr + tile, 0, sem="relaxed", scope="gpu")
    tma.store_wait(0)


@gluon.jit(do_not_specialize=["M", "N", "K", "SK_TILES"])
def streamk_kernel(a_desc, b_desc, c_desc, partial_ptr, flags_ptr, M, N, K, SK_TILES, BLOCK_M: gl.constexpr,
                   BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, acc_layout: gl.constexpr, STAGES: gl.constexpr,
                   GROUP_M: gl.constexpr, LOAD_REGS: gl.constexpr, A_KM: gl.constexpr, B_KN: gl.constexpr,
                   SWAP_AB: gl.constexpr):
    """Lesson 32's product with stream-K's units (streamk_unit): the first SK_TILES tiles' K steps shared evenly by
    the programs, the other tiles whole. ``partial_ptr``: two fp32 tiles per program; ``flags_ptr``: one counter per
    tile, 0 before and after a launch."""
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([
        (streamk_mma_partition, (c_desc, a_ring, b_ring, c_smem, ready, empty, partial_ptr, flags_ptr, M, N, K,
                                 SK_TILES, STAGES, GROUP_M, acc_layout, A_KM, B_KN, SWAP_AB)),
        (streamk_load_partition, (a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, SK_TILES, STAGES, GROUP_M,
                                  A_KM, B_KN)),
    ], [1], [LOAD_REGS])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


# streamk_kernel's constexprs, in its parameters' order: lesson 32's kernel_args less what this kernel lacks (a split
# epilogue, a second strip, L2 hints).
STREAMK_ORDER = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "acc_layout", "STAGES", "GROUP_M", "LOAD_REGS", "A_KM", "B_KN",
                 "SWAP_AB")


def constexprs(cfg: dict, b_kn: bool) -> dict:
    """streamk_kernel's constexprs for a configuration, from lesson 32's kernel_args (its tile, layouts, operand
    orders)."""
    ce = LESSON.kernel_args({**cfg, "SPLIT_K": 1, "BLOCK_N2": 0, "W_FIRST": 0}, bool(cfg["SWAP_AB"]), b_kn)
    return {name: ce[name] for name in STREAMK_ORDER}


# -- The launcher ---------------------------------------------------------------------------------------------------

class StreamKPlan:
    """Lesson 32's plan, for streamk_kernel: one signature's checks, configuration, layouts, grid (streamk_grid, checked
    to fit the kernel's int32 index arithmetic), two fp32 tiles of scratch per program and a counter per tile, and the
    kept launch (gluon_course.nvidia.launch)."""

    def __init__(self, a, b, c, config: dict, sms: int | None = None):
        M, N, K = require_matmul_args(a, b, c, b_either_way=True, on_gpu=False)
        cfg = {**LESSON.CONFIG, **{k: v for k, v in config.items() if k != "STREAM_K"}}
        self.stream_k = config.get("STREAM_K")
        if not (isinstance(self.stream_k, int) and self.stream_k >= 1) or cfg["SPLIT_K"] != 1 or cfg["BLOCK_N2"]:
            raise ValueError(f"STREAM_K={self.stream_k!r}, SPLIT_K={cfg['SPLIT_K']!r}, BLOCK_N2={cfg['BLOCK_N2']!r}: "
                             "STREAM_K is the waves of tiles stream-K shares (1 or more); it splits no K and has no "
                             "second strip")
        if cfg["W_FIRST"]:
            raise ValueError(f"W_FIRST={cfg['W_FIRST']!r}: the stream-K kernel's copies take no L2 hint")
        require_wgmma_tile(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], cfg["num_warps"], cfg["STAGES"])
        self.config, self.num_warps, self.swap_ab = cfg, cfg["num_warps"], bool(cfg["SWAP_AB"])
        self.b_kn = b.shape[1] <= 1 or b.stride(1) == 1
        self.constexprs = constexprs(cfg, self.b_kn)
        ka, kb, kM, kN = LESSON.operand_views(a, b, self.b_kn, self.swap_ab)
        self.kernel_mnk = (kM, kN, K)
        BM, BN, BK = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
        self.blocks = ([BM, BK] if self.constexprs["A_KM"] else [BK, BM],
                       [BK, BN] if self.constexprs["B_KN"] else [BN, BK],
                       [BN, BM] if self.swap_ab else [BM, BN])
        dtype = LESSON.GL_DTYPES[a.dtype]
        self.layouts = tuple(gl.NVMMASharedLayout.get_default_for(block, dtype) for block in self.blocks)
        for name, t, block in (("A", ka, self.blocks[0]), ("B", kb, self.blocks[1]), ("c", c, self.blocks[2])):
            tma_descriptor(name, t, block)
        self.tiles = triton.cdiv(kM, BM) * triton.cdiv(kN, BN)
        self.descriptors, self.scratch, self.grid, self.stream = OrderedDict(), {}, None, None
        self.launcher = kept.KeptLaunch(streamk_kernel, self.num_warps)
        if sms is not None:
            self.set_grid(sms)

    def set_grid(self, sms: int) -> None:
        kM, kN, K = self.kernel_mnk
        k_steps = triton.cdiv(K, self.config["BLOCK_K"])
        programs, self.sk_tiles = streamk_grid(self.tiles, k_steps, sms, self.stream_k)
        if (self.sk_tiles * k_steps + 1) * programs >= 2 ** 31:
            raise ValueError(f"stream-K at {kM}×{kN}×{K}: {self.sk_tiles} shared tiles × {k_steps} K steps × "
                             f"{programs} programs overflow the kernel's int32 arithmetic; use fewer waves or a "
                             "larger tile")
        self.grid = (programs, 1, 1)
        self.rest = (kM, kN, K, self.sk_tiles, *self.constexprs.values())

    def scratch_for(self, device, stream: int):
        """Two fp32 tiles per program and a counter per tile, one set per stream; every shared tile's last program
        resets its counter, so the set serves every later launch."""
        found = self.scratch.get(stream)
        if found is None:
            cells = 2 * self.grid[0] * self.config["BLOCK_M"] * self.config["BLOCK_N"]
            found = self.scratch[stream] = (torch.empty(cells, dtype=torch.float32, device=device),
                                            torch.zeros(self.tiles, dtype=torch.int32, device=device))
        return found

    def launch(self, a, b, c) -> None:
        def make():
            ka, kb, _, _ = LESSON.operand_views(a, b, self.b_kn, self.swap_ab)
            return kept.host_descriptors((ka, kb, c), self.blocks, self.layouts)
        descs = kept.kept_descriptors(self.descriptors, (a.data_ptr(), b.data_ptr(), c.data_ptr()), make)
        if self.stream is None:
            require_hopper(a)
            if self.grid is None:
                self.set_grid(torch.cuda.get_device_properties(a.device).multi_processor_count)
            self.stream = triton.runtime.driver.active.get_current_stream
        stream = self.stream(a.device.index)
        self.launcher(self.grid[0], stream, descs, (*self.scratch_for(a.device, stream), *self.rest))


class StreamKLinear:
    """C = A·B through streamk_kernel at one configuration, a plan kept per signature (as lesson 32's Linear)."""

    def __init__(self, config: dict):
        self.config, self.plans = dict(config), {}

    def __call__(self, a, b, c):
        key = kept.signature(a, b, c)
        plan = self.plans.get(key) or self.plans.setdefault(key, StreamKPlan(a, b, c, self.config))
        plan.launch(a, b, c)
        return c


# -- Without a GPU: the host model and the compiler ------------------------------------------------------------------

# Small tiles for the host model; "every tile": STREAM_K = 3 on the model's few programs shares all of them (a program's
# range may then hold shared tiles at both ends and whole ones between), "after data-parallel tiles": STREAM_K = 1
# shares only the last partial wave.
MODEL_PATHS = {"stream-K, every tile": ({"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "STAGES": 3, "STREAM_K": 3}, 7),
               "stream-K after data-parallel tiles": ({"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "STAGES": 3,
                                                       "STREAM_K": 1}, 4),
               "swap-AB, stream-K": ({"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "STAGES": 3, "SWAP_AB": True,
                                      "STREAM_K": 1}, 5)}
# Odd M from 1 up (8193 scaled down to what the model runs), N and K multiples of 8.
MODEL_PROBLEMS = ((1, 72, 520), (17, 136, 392), (129, 264, 200), (300, 40, 136), (513, 24, 72))
# 17 × 136 × 392 on 9 programs: 3 tiles of 7 K steps, 21 steps, 2 or 3 per program: tile 0 is shared by 3 programs,
# the least for which the order of additions can change a sum's bits (a + b and b + a are the same in fp32).
DETERMINISM = ((17, 136, 392), 9)


def model_launch(cfg: dict, b_layout: str, programs: int, order=None, c_dtype: str | None = None):
    """streamk_kernel's launch in the host model on ``programs`` programs, run in ``order`` (the model's; a callable
    of the number of programs may give it): the descriptors, SK_TILES from streamk_grid, two fp32 tiles of scratch a
    program, the counters, which must be back at 0 when the launch ends. ``c_dtype="fp32"`` keeps C in fp32, so that
    every bit of a sum shows."""
    from gluon_course.model import Buffer, HostTensorDescriptor, ModelError, Pointer
    from gluon_course.model.run import run as run_kernel

    cfg = {**LESSON.CONFIG, **cfg}
    ce = constexprs(cfg, b_layout == "row")
    swap_ab = bool(cfg["SWAP_AB"])
    BM, BN, BK = ce["BLOCK_M"], ce["BLOCK_N"], ce["BLOCK_K"]
    c_gl = gl.float32 if c_dtype == "fp32" else gl.bfloat16

    def launch(a_buf, b_buf, c_buf, M, N, K):
        ka, kb, kM, kN = (b_buf, a_buf, N, M) if swap_ab else (a_buf, b_buf, M, N)
        blocks = ([BM, BK] if ce["A_KM"] else [BK, BM], [BK, BN] if ce["B_KN"] else [BN, BK],
                  [BN, BM] if swap_ab else [BM, BN])
        descs = [HostTensorDescriptor(buf, block, gl.NVMMASharedLayout.get_default_for(block, dt),
                                      element_bytes=4 if dt == gl.float32 else 2)
                 for buf, block, dt in zip((ka, kb, c_buf), blocks, (gl.bfloat16, gl.bfloat16, c_gl))]
        tiles = -(-kM // BM) * -(-kN // BN)
        grid, sk = streamk_grid(tiles, -(-K // BK), programs, cfg["STREAM_K"])
        partial = Buffer("stream-K partials", np.zeros(2 * grid * BM * BN, np.float32), gl.float32)
        flags = Buffer("stream-K counters", np.zeros(tiles, np.float32), gl.int32)
        runs = run_kernel(streamk_kernel, grid, *descs, Pointer(partial), Pointer(flags), kM, kN, K, sk,
                          num_warps=cfg["num_warps"], order=order(grid) if callable(order) else order, **ce)
        left = np.flatnonzero(flags.values())
        if left.size:
            raise ModelError(f"stream-K's counter of tile {int(left[0])} is {flags.values()[left[0]]:g} after the "
                             "launch, not 0: the next call would count from there (reset it when the tile is done)")
        return runs
    return launch


def host_check() -> str | None:
    """Each path, B either way, programs run first to last and last to first, in the host model: C exact, each element
    written once, every partial read only after an acquire of the release that follows its store, every counter back
    at 0; and C's bits the same whichever program arrives last at a tile three programs share (the programs in three
    orders, C in fp32, random bf16 operands). None, or one sentence."""
    from gluon_course.model import gemm as model_gemm

    for what, (cfg, programs) in MODEL_PATHS.items():
        for b_layout in ("col", "row"):
            for order in ("first to last", "last to first"):
                problem = model_gemm.check(model_launch(cfg, b_layout, programs, model_gemm.PROGRAM_ORDERS[order]),
                                           MODEL_PROBLEMS, b_layout=b_layout)
                if problem:
                    return f"{what}, B {'K × N' if b_layout == 'row' else 'as w.t()'}, programs run {order}: {problem}"
    shape, programs = DETERMINISM
    cfg = MODEL_PATHS["stream-K, every tile"][0]
    problem = model_gemm.same_bits_in_any_order(
        lambda order: model_launch(cfg, "col", programs, order=order, c_dtype="fp32"), [shape], b_layout="col")
    return f"stream-K, every tile: {problem}" if problem else None


def compiled(cfg: dict, b_kn: bool = False):
    from gluon_course.machine import compile_cached, tensor_descriptor_type

    cfg = {**LESSON.CONFIG, **cfg}
    ce = constexprs(cfg, b_kn)
    BM, BN, BK = ce["BLOCK_M"], ce["BLOCK_N"], ce["BLOCK_K"]

    def desc(block):
        return tensor_descriptor_type("bf16", block, gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16))

    blocks = ([BM, BK] if ce["A_KM"] else [BK, BM], [BK, BN] if ce["B_KN"] else [BN, BK],
              [BN, BM] if cfg["SWAP_AB"] else [BM, BN])
    signature = {"a_desc": desc(blocks[0]), "b_desc": desc(blocks[1]), "c_desc": desc(blocks[2]),
                 "partial_ptr": "*fp32", "flags_ptr": "*i32", "M": "i32", "N": "i32", "K": "i32", "SK_TILES": "i32"}
    return compile_cached(streamk_kernel, "sm_90", signature=signature, constexprs=ce,
                          aligned=("partial_ptr", "flags_ptr"), num_warps=cfg["num_warps"])


# The kernel holds C's tile by TMA twice (a tile had whole; a shared tile's sum), one atomic add and one reset, the
# release fence.
PROTOCOL_OPS = {"ATOMG.E.ADD.STRONG.GPU": 1, "ATOMG.E.EXCH.STRONG.GPU": 1, "MEMBAR.ALL.GPU": 1, "UTMASTG.2D": 2}


def compile_check(shapes=None) -> str | None:
    """sm_90: every stream-K configuration of the space on lesson 32's model shapes (or ``shapes``) compiles and fits
    one SM with no spills; the first one's listing holds the protocol: partials stored, the release fence before the
    atomic add that announces them, the partials read back from L2 (.cg), the reset. None, or one sentence."""
    from gluon_course.grading.gemm_kernel import fits
    from gluon_course.measure.gemm import MODEL_SHAPES

    seen = set()
    for M, N, K in shapes or MODEL_SHAPES:
        for cfg in streamk_candidates(M, N, K):
            key = tuple(cfg[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "num_warps", "SWAP_AB"))
            if key in seen:
                continue
            seen.add(key)
            k = compiled(cfg)
            problem = fits(k, cfg["num_warps"], {**LESSON.CONFIG, **cfg})
            if problem:
                return f"stream-K at {cfg}: {problem}"
            if len(seen) == 1:
                counts = {op: k.count(op) for op in PROTOCOL_OPS}
                if counts != PROTOCOL_OPS:
                    return f"stream-K's listing holds {counts}, expected {PROTOCOL_OPS}"
                at = [(i.address, i.opcode, i.text) for i in k.instructions()]
                atomic = next(a for a, op, _ in at if op == "ATOMG.E.ADD.STRONG.GPU")
                stores = [a for a, op, _ in at if op.startswith("STG.E") and a < atomic]
                fence = [a for a, op, _ in at if op == "MEMBAR.ALL.GPU" and (stores or [atomic])[-1] < a < atomic]
                if not stores or not fence:
                    return ("stream-K: the partial is not stored, then fenced (release), before the atomic add that "
                            "announces it")
                reads = [text for a, op, text in at if op.startswith("LDG") and a > atomic]
                if not reads or any("STRONG.GPU" not in t for t in reads):
                    return "stream-K: the partials are not read back from L2 (.cg: LDG ... STRONG.GPU)"
    return None


# -- On a GPU ----------------------------------------------------------------------------------------------------------

def _config(text: str) -> dict:
    return {k: int(v) for k, v in (kv.split("=") for kv in text.split(",") if kv)}


def one(config: str, M: int, N: int, K: int) -> None:
    """One launch at ``config`` (KEY=VALUE,... over lesson 32's CONFIG, STREAM_K among them) inside the NVTX range
    "probe", after five warm-up calls: what probe_streamk_ncu.sh profiles."""
    from gluon_course.measure.linear import linear_inputs
    from gluon_course.measure.ncu import launch_in_range

    a, w, c = linear_inputs(M, N, K, seed=0)
    f = StreamKLinear(_config(config))
    launch_in_range(lambda: f(a, w.t(), c), warmups=5)


def time_shapes(out: str, shapes) -> None:
    """Each shape's table entry, then its stream-K candidates, checked against an fp32 reference and timed by
    tools/gpu/tune_linear.py's own time_candidates (do_bench's median, L2 flushed), F.linear beside them."""
    import importlib.util

    from gluon_course.course import repo_root
    from gluon_course.nvidia.dispatch import table_for

    spec = importlib.util.spec_from_file_location("tune_linear", repo_root() / "tools" / "gpu" / "tune_linear.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)

    class Either:                                   # what time_candidates calls: lesson.Linear(config=...)
        @staticmethod
        def Linear(config):
            return StreamKLinear(config) if config.get("STREAM_K") else LESSON.Linear(config=config)

    table, found = table_for("nvidia-h200"), {}
    for M, N, K in shapes:
        configs = [table.config(M, N, K)] + streamk_candidates(M, N, K)
        rows, lib = tool.time_candidates(Either, M, N, K, configs)
        for row, cfg in zip(rows, configs):
            row["STREAM_K"] = cfg.get("STREAM_K", 0)
        found[f"{M}x{N}x{K}"] = {"entry": rows[0], "streamk": rows[1:], "f_linear_us": lib}
        ok = [r["us"] for r in rows[1:] if "us" in r]
        print(f"{M}x{N}x{K}: entry {rows[0].get('us')} µs, fastest stream-K {min(ok) if ok else None} µs, "
              f"F.linear {lib} µs", flush=True)
    json.dump({"gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
               "shapes": found}, open(out, "w"), indent=1)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--model"]:
        said = host_check()
        print(said or "the host model: every stream-K path exact, both program orders, B either way; the same bits "
                      "whichever program arrives last")
        sys.exit(1 if said else 0)
    elif args[:1] == ["--compile"]:
        said = compile_check()
        print(said or "sm_90: every stream-K configuration of the space fits one SM with no spills; the protocol holds")
        sys.exit(1 if said else 0)
    elif args[:1] == ["one"] and len(args) == 5:
        one(args[1], *map(int, args[2:]))
    elif args[:1] == ["time"] and len(args) in (2, 4):
        only = args[3] if len(args) == 4 and args[2] == "--only" else ""
        shapes = [tuple(int(x) for x in s.split("x")) for s in only.split(",") if s] or list(TIMED_SHAPES)
        time_shapes(args[1], shapes)
    else:
        sys.exit(__doc__)
