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
lesson 32's device functions; the scales are lesson 34's ``apply_scales``. What is new here is the fp8 kernel that
puts them together (``small_m_kernel``), its launcher and the rule.

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

tests/test_probe_kernels.py runs the two CPU checks on a reduced set, and the plants the host model must reject.
"""
from __future__ import annotations

import json
import statistics
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

from gluon_course import load_solution
from gluon_course.nvidia import fp8 as FP8_TOOLS
from gluon_course.nvidia import fp8_small_m as SMALL_M
from gluon_course.nvidia import launch as kept
from gluon_course.nvidia.hopper import require_hopper, require_wgmma_tile, tma_descriptor

LESSON32 = load_solution("32")
LESSON34 = load_solution("34")
# Lesson 32's device functions, as they are: the producer's K step (both operands K-major here), the consumers' K loop
# (wgmma with one step in flight), the offsets of an fp32 tile in the scratch, the store of a tile (transposed for
# swap-AB), a unit's tile and slice of K. Lesson 34's scales, applied once per tile.
load_step = LESSON32.load_step
unit_products = LESSON32.unit_products
tile_offsets = LESSON32.tile_offsets
store_strips = LESSON32.store_strips
work_unit = LESSON32.work_unit
apply_scales = LESSON34.apply_scales
W_STREAMED = LESSON32.W_STREAMED


# -- The kernel ------------------------------------------------------------------------------------------------------
# Its A and B are what it multiplies: without swap-AB the activations (M × K) and W (N × K); with it W and the
# activations, and its M and N are then the launcher's N and M. Both are K-major either way: the kernel's A tile is
# [BLOCK_M, BLOCK_K], its B tile [BLOCK_N, BLOCK_K] viewed K × N. ``a_scale_ptr`` and ``w_scale_ptr`` are always the
# launcher's A's and W's scales, whichever operand of the kernel each belongs to.

@gluon.jit
def small_m_loads(a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, SPLIT_K, STAGES: gl.constexpr,
                  GROUP_M: gl.constexpr, A_POLICY: gl.constexpr, B_POLICY: gl.constexpr):
    """The producer (one warp): lesson 32's K steps, unit by unit (a tile's slices of K are consecutive units)."""
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[0]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for unit in range(gl.program_id(0), num_pid_m * num_pid_n * SPLIT_K, gl.num_programs(0)):
        tile, split, pid_m, pid_n, k_first, k_last = work_unit(unit, num_pid_m, num_pid_n, k_tiles, SPLIT_K, GROUP_M)
        for k in range(k_first, k_last):
            # A K-major (A_KM), B N × K (not B_KN), no second strip
            load_step(a_desc, b_desc, b_desc, a_ring, b_ring, b_ring, ready, empty, step, pid_m, pid_n, k, STAGES,
                      True, False, 0, A_POLICY, B_POLICY)
            step += 1


@gluon.jit
def scale_and_store(acc, c_desc, c_smem, a_scale_ptr, w_scale_ptr, pid_m, pid_n, M, N, acc_layout: gl.constexpr,
                    A_PER_ROW: gl.constexpr, W_PER_ROW: gl.constexpr, SWAP_AB: gl.constexpr):
    """A finished fp32 tile times its scales, then to C by TMA. Without swap-AB the tile's rows are C's rows (A's
    scales) and its columns C's columns (W's); with it, its rows are W's rows and its columns A's rows, so W's scales
    go with the rows and A's with the columns, each bounded by the kernel's own M and N."""
    BLOCK_M: gl.constexpr = acc.shape[0]
    BLOCK_N: gl.constexpr = acc.shape[1]
    if SWAP_AB:
        acc = apply_scales(acc, w_scale_ptr, a_scale_ptr, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, acc_layout, W_PER_ROW,
                           A_PER_ROW)
    else:
        acc = apply_scales(acc, a_scale_ptr, w_scale_ptr, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, acc_layout, A_PER_ROW,
                           W_PER_ROW)
    store_strips(c_desc, c_smem, c_desc, c_smem, acc, acc, pid_m, pid_n, BLOCK_M, BLOCK_N, 0, SWAP_AB)


@gluon.jit
def small_m_mma(c_desc, a_ring, b_ring, c_smem, ready, empty, a_scale_ptr, w_scale_ptr, partial_ptr, arrivals_ptr, M,
                N, K, SPLIT_K, STAGES: gl.constexpr, GROUP_M: gl.constexpr, acc_layout: gl.constexpr,
                A_PER_ROW: gl.constexpr, W_PER_ROW: gl.constexpr, SPLIT: gl.constexpr, SWAP_AB: gl.constexpr):
    """The consumers: each unit's products (lesson 32's K loop on fp8 tiles). Unsplit, the tile is scaled and stored.
    Split, the unit's fp32 sum goes to its slice of the tile's scratch and the unit counts itself at the tile's
    counter; the unit that arrives last adds the SPLIT_K slices in slice order, scales the sum once, stores C and
    resets the counter."""
    BLOCK_M: gl.constexpr = a_ring.shape[1]
    BLOCK_K: gl.constexpr = a_ring.shape[2]
    BLOCK_N: gl.constexpr = b_ring.shape[1]
    TILE: gl.constexpr = BLOCK_M * BLOCK_N
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for unit in range(gl.program_id(0), num_pid_m * num_pid_n * SPLIT_K, gl.num_programs(0)):
        tile, split, pid_m, pid_n, k_first, k_last = work_unit(unit, num_pid_m, num_pid_n, k_tiles, SPLIT_K, GROUP_M)
        acc, _, step = unit_products(a_ring, b_ring, b_ring, ready, empty, step, k_first, k_last, STAGES, acc_layout,
                                     acc_layout, True, False, 0)
        if not SPLIT:
            scale_and_store(acc, c_desc, c_smem, a_scale_ptr, w_scale_ptr, pid_m, pid_n, M, N, acc_layout, A_PER_ROW,
                            W_PER_ROW, SWAP_AB)
        else:
            in_tile = tile_offsets(BLOCK_M, BLOCK_N, acc_layout)
            slices = partial_ptr + tile * (SPLIT_K * TILE)
            gl.store(slices + split * TILE + in_tile, acc)
            # Every consumer thread's part of the slice stored before one thread announces it (the barrier, then the
            # atomic's release); the last unit's acquire makes every other unit's slice visible to it.
            gl.barrier()
            arrived = gl.atomic_add(arrivals_ptr + tile, 1, sem="acq_rel", scope="gpu")
            if arrived == SPLIT_K - 1:
                # Slice 0 first, then 1, 2, ...: the same additions in the same order whichever unit arrived last.
                # .cg: from L2, where the other SMs' slices are; this SM's L1 may hold nothing of them.
                total = gl.load(slices + in_tile, cache_modifier=".cg")
                for s in range(1, SPLIT_K):
                    total += gl.load(slices + s * TILE + in_tile, cache_modifier=".cg")
                scale_and_store(total, c_desc, c_smem, a_scale_ptr, w_scale_ptr, pid_m, pid_n, M, N, acc_layout,
                                A_PER_ROW, W_PER_ROW, SWAP_AB)
                gl.atomic_xchg(arrivals_ptr + tile, 0, sem="relaxed", scope="gpu")
    tma.store_wait(0)


@gluon.jit(do_not_specialize=["M", "N", "K", "SPLIT_K"])
def small_m_kernel(a_desc, b_desc, c_desc, a_scale_ptr, w_scale_ptr, partial_ptr, arrivals_ptr, M, N, K, SPLIT_K,
                   BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, acc_layout: gl.constexpr,
                   STAGES: gl.constexpr, GROUP_M: gl.constexpr, LOAD_REGS: gl.constexpr, A_PER_ROW: gl.constexpr,
                   W_PER_ROW: gl.constexpr, SPLIT: gl.constexpr, SWAP_AB: gl.constexpr, A_POLICY: gl.constexpr,
                   B_POLICY: gl.constexpr):
    """C = (A·Wᵀ) scaled, in BLOCK_M × BLOCK_N tiles of the kernel's product (of Cᵀ with SWAP_AB), each tile's K steps
    in SPLIT_K slices (SPLIT: SPLIT_K > 1). M, N, K and SPLIT_K are not specialised on (TMA clips every edge), so one
    compile serves every shape of a configuration. ``partial_ptr``: SPLIT_K fp32 tiles per tile of the kernel's
    product; ``arrivals_ptr``: a counter per tile, 0 before and after a launch. ``A_POLICY``, ``B_POLICY``: the L2
    priority of the kernel's A and B copies (W's gets lesson 32's evict_first hint, W_STREAMED, or None)."""
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([
        (small_m_mma, (c_desc, a_ring, b_ring, c_smem, ready, empty, a_scale_ptr, w_scale_ptr, partial_ptr,
                       arrivals_ptr, M, N, K, SPLIT_K, STAGES, GROUP_M, acc_layout, A_PER_ROW, W_PER_ROW, SPLIT,
                       SWAP_AB)),
        (small_m_loads, (a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, SPLIT_K, STAGES, GROUP_M, A_POLICY,
                         B_POLICY)),
    ], [1], [LOAD_REGS])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


# small_m_kernel's arguments after the descriptors, scales, scratch and sizes, in its parameters' order.
CONSTEXPR_ORDER = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "acc_layout", "STAGES", "GROUP_M", "LOAD_REGS", "A_PER_ROW",
                   "W_PER_ROW", "SPLIT", "SWAP_AB", "A_POLICY", "B_POLICY")
# Lesson 34's configuration with split-K, swap-AB and lesson 32's L2 hint on W (W_FIRST: 1 on, 0 off).
CONFIG = {**LESSON34.CONFIG, "SPLIT_K": 1, "SWAP_AB": False, "W_FIRST": 1}


def kernel_constexprs(cfg: dict, a_per_row: bool, w_per_row: bool) -> dict:
    """small_m_kernel's constexprs for a configuration and the two scale kinds. W is the kernel's A under swap-AB and
    its B otherwise, so its L2 hint goes with that operand's copies."""
    swap = bool(cfg["SWAP_AB"])
    hint = W_STREAMED if cfg["W_FIRST"] else None
    return {"BLOCK_M": cfg["BLOCK_M"], "BLOCK_N": cfg["BLOCK_N"], "BLOCK_K": cfg["BLOCK_K"],
            "acc_layout": LESSON34.wgmma_layout(cfg["num_warps"], cfg["BLOCK_N"]), "STAGES": cfg["STAGES"],
            "GROUP_M": cfg["GROUP_M"], "LOAD_REGS": cfg["LOAD_REGS"], "A_PER_ROW": a_per_row, "W_PER_ROW": w_per_row,
            "SPLIT": cfg["SPLIT_K"] > 1, "SWAP_AB": swap, "A_POLICY": hint if swap else None,
            "B_POLICY": None if swap else hint}


def kernel_blocks(cfg: dict) -> tuple:
    """The TMA boxes of the kernel's A, B and C: [BLOCK_M, BLOCK_K], [BLOCK_N, BLOCK_K], and C's tile, transposed
    ([BLOCK_N, BLOCK_M] of C) under swap-AB."""
    BM, BN, BK = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    return [BM, BK], [BN, BK], ([BN, BM] if cfg["SWAP_AB"] else [BM, BN])


# -- The launcher -----------------------------------------------------------------------------------------------------

class SmallMPlan:
    """One signature's launch of small_m_kernel, kept as lesson 34 keeps its plan: the checks (lesson 34's contract,
    ``require_fp8_linear_args``), the configuration, the kernel's operand views (W and A exchanged under swap-AB), the
    descriptors kept by address with their CUtensorMaps encoded once (``kept.KeptLaunch``), the persistent grid, and
    split-K's scratch (one set per stream)."""

    def __init__(self, a, w, a_scale, w_scale, c, config: dict, programs: int | None = None):
        M, N, K, a_per_row, w_per_row = FP8_TOOLS.require_fp8_linear_args(a, w, a_scale, w_scale, c, on_gpu=False)
        unknown = set(config) - set(CONFIG)
        if unknown:
            raise TypeError(f"unknown config keys {sorted(unknown)}; this launcher takes {sorted(CONFIG)}")
        cfg = {**CONFIG, **config}
        self.M, self.N, self.K, self.config = M, N, K, cfg
        self.empty, self.zero_c = M == 0 or N == 0 or K == 0, K == 0 and M > 0 and N > 0
        self.descriptors, self.scratch, self.stream, self.grid = OrderedDict(), {}, None, None
        self.programs = programs
        if self.empty:
            return
        self.num_warps = cfg["num_warps"]
        BM, BN, BK, split = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], cfg["SPLIT_K"]
        require_wgmma_tile(BM, BN, BK, self.num_warps, cfg["STAGES"])
        if not (isinstance(split, int) and 1 <= split <= triton.cdiv(K, BK)):
            raise ValueError(f"SPLIT_K={split!r}: between 1 and the K steps of the tile ({triton.cdiv(K, BK)} at "
                             f"K={K}, BLOCK_K={BK}), so that no slice of K is empty")
        if cfg["W_FIRST"] not in (0, 1):
            raise ValueError(f"W_FIRST={cfg['W_FIRST']!r}: 1 (W's copies with L2's evict_first hint) or 0 (none)")
        self.swap_ab = bool(cfg["SWAP_AB"])
        self.kernel_mn = (N, M) if self.swap_ab else (M, N)
        self.blocks = kernel_blocks(cfg)
        self.layouts = tuple(gl.NVMMASharedLayout.get_default_for(block, dtype) for block, dtype in
                             zip(self.blocks, (gl.float8e4nv, gl.float8e4nv, gl.bfloat16)))
        ka, kb = self.operands(a, w)
        for name, t, block in (("the kernel's A", ka, self.blocks[0]), ("the kernel's B", kb, self.blocks[1]),
                               ("c", c, self.blocks[2])):
            tma_descriptor(name, t, block)                     # TMA's rules, each with its sentence
        kM, kN = self.kernel_mn
        self.tiles = triton.cdiv(kM, BM) * triton.cdiv(kN, BN)
        self.units = self.tiles * split
        if self.tiles * split * BM * BN >= 2 ** 31:
            raise ValueError(f"SPLIT_K={split} at {M}×{N}×{K}: the scratch's {self.tiles * split * BM * BN} fp32 "
                             "cells pass the kernel's 32-bit offsets; split fewer ways or use a larger tile")
        ce = kernel_constexprs(cfg, a_per_row, w_per_row)
        self.rest = (kM, kN, K, split, *(ce[name] for name in CONSTEXPR_ORDER))
        self.launcher = kept.KeptLaunch(small_m_kernel, self.num_warps)

    def operands(self, a, w):
        """The kernel's A and B: (W, A) under swap-AB, else (A, W); both N × K or M × K row-major, K-major."""
        return (w, a) if self.swap_ab else (a, w)

    def set_grid(self, sms: int) -> None:
        """One program per SM at most (``programs``, when given, in place of the SMs), never more than the units."""
        self.grid = (min(self.units, self.programs or sms), 1, 1)

    def scratch_for(self, device, stream: int):
        """Split-K's fp32 slices and per-tile counters for ``stream``: the counters start at 0 and every tile's last
        unit sets its counter back to 0, so the set serves every later launch on that stream."""
        found = self.scratch.get(stream)
        if found is None:
            cfg = self.config
            cells = self.tiles * cfg["SPLIT_K"] * cfg["BLOCK_M"] * cfg["BLOCK_N"] if cfg["SPLIT_K"] > 1 else 1
            found = self.scratch[stream] = (torch.empty(cells, dtype=torch.float32, device=device),
                                            torch.zeros(self.tiles if cfg["SPLIT_K"] > 1 else 1, dtype=torch.int32,
                                                        device=device))
        return found

    def descriptors_for(self, a, w, c):
        def make():
            ka, kb = self.operands(a, w)
            return kept.host_descriptors((ka, kb, c), self.blocks, self.layouts)
        return kept.kept_descriptors(self.descriptors, (a.data_ptr(), w.data_ptr(), c.data_ptr()), make)

    def launch(self, a, w, a_scale, w_scale, c) -> None:
        descs = self.descriptors_for(a, w, c)
        if self.stream is None:
            require_hopper(a)
            if self.grid is None:
                self.set_grid(torch.cuda.get_device_properties(a.device).multi_processor_count)
            self.stream = triton.runtime.driver.active.get_current_stream
        stream = self.stream(a.device.index)
        partial, arrivals = self.scratch_for(a.device, stream)
        self.launcher(self.grid[0], stream, descs, (a_scale, w_scale, partial, arrivals, *self.rest))


_PLANS = OrderedDict()


def matmul(a, w, a_scale, w_scale, c=None, **config):
    """C = (A·Wᵀ) scaled, bf16 (lesson 34's contract), at ``config`` over CONFIG, or the rule's configuration for the
    shape when ``config`` is empty; a plan kept per signature and configuration."""
    if c is None:
        c = torch.empty((a.shape[0], w.shape[0]), dtype=torch.bfloat16, device=a.device)
    if not config:
        config = rule(a.shape[0], w.shape[0], a.shape[1])
    key = (kept.signature(a, w, c, a_scale, w_scale), tuple(sorted(config.items())))
    found = _PLANS.get(key)
    if found is None:
        found = kept.keep(_PLANS, key, SmallMPlan(a, w, a_scale, w_scale, c, config), kept.PLANS_KEPT)
    if found.empty:
        if found.zero_c:
            c.zero_()
        return c
    found.launch(a, w, a_scale, w_scale, c)
    return c


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


# -- Without a GPU: the host model ------------------------------------------------------------------------------------

class KernelInModel(FP8_TOOLS.KernelInModel):
    """``gluon_course.nvidia.fp8.KernelInModel`` (the plan's launch with the host model in the GPU's place) with what
    this kernel adds: split-K's scratch (fp32 slices, int32 counters), copied back into its torch tensors after the
    launch as a GPU leaves them for the next call; the programs run in ``order`` (``model.run``'s); C kept in fp32
    when ``c_fp32`` (every bit of a sum shows: ``c_values`` holds it after the launch)."""

    def __init__(self, kernel, num_warps: int, tensors: dict, order=None, c_fp32: bool = False):
        super().__init__(kernel, num_warps, tensors)
        self.order, self.c_fp32, self.c_values = order, c_fp32, None

    def _buffers(self):
        from gluon_course.model import Buffer

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

    HANDED = "A, W, C, the two scales and split-K's scratch"
    WRITTEN_TWICE = "a tile of C stored by two units (split-K: more than one unit thinks it arrived last?)"

    def _element_bytes(self, buf) -> int:
        return 4 if buf.dtype == gl.float32 else self.tensors[buf.name].element_size()

    def _run_options(self, grid_x: int) -> dict:
        return {"order": self.order(grid_x) if callable(self.order) else self.order}

    def _read_past(self, scale: str) -> str:
        return (f"the kernel reads {scale} past its end ({self.tensors[scale].numel()} elements): is it indexed by "
                "the other dimension? Under swap-AB the kernel's rows are W's (W's scales) and its columns A's rows "
                "(A's scales); without it, A's scales go with the rows and W's with the columns")

    def _after(self, buffers: dict) -> None:
        if self.c_fp32:
            self.c_values = buffers[self.tensors["c"].data_ptr()].values().copy()
        for name in ("partial", "arrivals"):
            t = self.tensors[name]
            t.copy_(torch.from_numpy(buffers[t.data_ptr()].values().copy()).to(t.dtype))


MODEL_PROGRAMS = 3


def model_launch(config: dict, programs: int | None = MODEL_PROGRAMS, calls: int = 2, order=None,
                 c_fp32: bool = False, sums=None):
    """``launch(a, w, a_scale, w_scale, c)`` on CPU tensors for ``fp8.check_fp8``: SmallMPlan built from the tensors
    (its checks, operand views, descriptors, scratch, arguments) and its ``launch`` run with the host model in the
    GPU's place (``KernelInModel``), on ``programs`` programs (None: one per work unit), ``calls`` times on the same
    plan and scratch, every counter back at 0 after each call. ``order``, ``c_fp32``: as KernelInModel's; with
    ``sums`` (a list), each call's fp32 C is appended to it."""
    from gluon_course.model import ModelError

    def launch(a, w, a_scale, w_scale, c):
        plan = SmallMPlan(a, w, a_scale, w_scale, c, config, programs)
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
            plan.launcher = KernelInModel(small_m_kernel, plan.num_warps, tensors, order, c_fp32)
            plan.launch(a, w, a_scale, w_scale, c)
            left = torch.nonzero(arrivals).flatten()
            if left.numel():
                raise ModelError(f"after call {call + 1}, split-K's counter of tile {int(left[0])} is "
                                 f"{int(arrivals[left[0]])}, not 0: the next call would count from there (the tile's "
                                 "last unit resets it)")
            if sums is not None:
                sums.append(plan.launcher.c_values)
    return launch


# The paths, on tiles small enough for the model (it runs every product in numpy; the tile's sizes are constexprs of
# the same code): both orientations, unsplit and split, and a 128-row tile on 4 warps (two wgmma rows a warpgroup) in
# each. Splits of 3: the fewest where the order of the slices' additions can change a sum's bits ((a + b) + c against
# a + (b + c); a + b = b + a in fp32).
MODEL_PATHS = {
    "swap-AB, 64 × 16 tiles": {"BLOCK_M": 64, "BLOCK_N": 16, "num_warps": 4, "STAGES": 3, "SWAP_AB": True},
    "swap-AB, 64 × 32 tiles, K split 3 ways": {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "STAGES": 3,
                                               "SWAP_AB": True, "SPLIT_K": 3},
    "swap-AB, 128 × 16 tiles, K split 2 ways": {"BLOCK_M": 128, "BLOCK_N": 16, "num_warps": 4, "STAGES": 2,
                                                "SWAP_AB": True, "SPLIT_K": 2},
    "64 × 32 tiles, K split 3 ways": {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "STAGES": 3, "SPLIT_K": 3},
    "128 × 32 tiles": {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 4, "STAGES": 2},
}
# Odd M (1, 17, 100): under swap-AB the batch's side of a tile (16 or 32 columns) cut by M, one to seven such tiles;
# without it, 100 rows over two 64-row tiles or inside one of 128. N past every tile's edge (136 = 2·64 + 8 = 4·32 + 8,
# 200 = 3·64 + 8), K past the 128-wide step (272 = 2·128 + 16: 3 steps; 400: 4 steps, slices of 1, 1 and 2 when split
# 3 ways).
MODEL_SHAPES = ((1, 136, 272), (17, 200, 400), (100, 136, 400))
# Split-K's sum in several program orders (one unit a program, C in fp32): the last unit to arrive at a tile is its
# last slice's, then its first's, then one in between (model.gemm.PROGRAM_ORDERS).
ORDER_PATHS = {"swap-AB, 64 × 32 tiles, K split 3 ways": (17, 136, 400),
               "64 × 32 tiles, K split 3 ways": (100, 72, 400)}


def same_bits_in_any_order(config: dict, shape) -> str | None:
    """None when C's fp32 bits are the same with the programs run in every order of ``model.gemm.PROGRAM_ORDERS``;
    else a sentence. fp8 inputs from ``fp8.fp8_inputs`` (values across e4m3's exponents, so that an fp32 sum's low
    bits depend on the order of its additions), scales per row."""
    from gluon_course.model import ModelError
    from gluon_course.model.gemm import PROGRAM_ORDERS

    M, N, K = shape
    a, w, sa, sw = FP8_TOOLS.fp8_inputs(M, N, K, True, device="cpu", seed=44)
    first = None
    for name, order in PROGRAM_ORDERS.items():
        sums = []
        try:
            model_launch(config, programs=None, calls=1, order=order, c_fp32=True, sums=sums)(
                a, w, sa, sw, torch.empty(M, N, dtype=torch.bfloat16))
        except ModelError as e:
            return f"{M}×{N}×{K}, programs run {name}: {e}"
        got = sums[0]
        if first is None:
            first = (name, got)
        elif not np.array_equal(got.view(np.uint32), first[1].view(np.uint32)):
            i, j = map(int, np.argwhere(got.view(np.uint32) != first[1].view(np.uint32))[0])
            shown = [np.format_float_positional(x) for x in (got[i, j], first[1][i, j])]
            return (f"{M}×{N}×{K}: C[{i}, {j}] is {shown[0]} with the programs run {name} but {shown[1]} "
                    f"run {first[0]}: the order in which the slices are added depends on which unit arrives last; "
                    "add them in slice order, whichever unit adds them")
    return None


def host_check(paths=None, shapes=MODEL_SHAPES, modes=tuple(FP8_TOOLS.SCALE_MODES), order_paths=None,
               show=None) -> str | None:
    """Each path of ``paths`` (default MODEL_PATHS) through SmallMPlan in the host model on 3 programs, twice on the
    same plan, at ``shapes`` in each scale mode of ``modes``: C within fp8's bound of the reference (A's scales per row
    of C, W's per column), each element written once, no scale read past its end, every counter back at 0 after each
    call; then each split path of ``order_paths`` (default ORDER_PATHS) with the same fp32 bits in every program order.
    None, or one sentence naming the path; ``show`` gets a line per path that passed."""
    from gluon_course.model import ModelError
    from gluon_course.model.gemm import PROGRAM_ORDERS

    for what, config in (MODEL_PATHS if paths is None else paths).items():
        usable = [s for s in shapes if -(-s[2] // config.get("BLOCK_K", BLOCK_K)) >= config.get("SPLIT_K", 1)]
        problem = FP8_TOOLS.check_fp8(model_launch(config), usable, modes=modes, device="cpu", caught=(ModelError,))
        if problem:
            return f"{what}, in the host model, {problem}"
        if show:
            show(f"  {what}: within the bound at {', '.join('×'.join(map(str, s)) for s in usable)}, "
                 f"{len(modes)} scale modes, two calls each")
    for what, shape in (ORDER_PATHS if order_paths is None else order_paths).items():
        problem = same_bits_in_any_order(MODEL_PATHS[what], shape)
        if problem:
            return f"{what}, in the host model, {problem}"
        if show:
            show(f"  {what}: the same fp32 bits at {'×'.join(map(str, shape))} in the programs' orders "
                 f"({', '.join(PROGRAM_ORDERS)})")
    return None


# -- Without a GPU: the compiler ---------------------------------------------------------------------------------------

def compiled(cfg: dict, a_per_row: bool = False, w_per_row: bool = False):
    """small_m_kernel compiled for sm_90 on the CPU, as SmallMPlan launches it at ``cfg`` (over CONFIG)."""
    from gluon_course.machine import compile_cached, tensor_descriptor_type

    cfg = {**CONFIG, **cfg}
    blocks = kernel_blocks(cfg)

    def desc(dtype, gl_dtype, block):
        return tensor_descriptor_type(dtype, block, gl.NVMMASharedLayout.get_default_for(block, gl_dtype))

    signature = {"a_desc": desc("fp8e4nv", gl.float8e4nv, blocks[0]),
                 "b_desc": desc("fp8e4nv", gl.float8e4nv, blocks[1]), "c_desc": desc("bf16", gl.bfloat16, blocks[2]),
                 "a_scale_ptr": "*fp32", "w_scale_ptr": "*fp32", "partial_ptr": "*fp32", "arrivals_ptr": "*i32",
                 "M": "i32", "N": "i32", "K": "i32", "SPLIT_K": "i32"}
    return compile_cached(small_m_kernel, "sm_90", signature=signature,
                          constexprs=kernel_constexprs(cfg, a_per_row, w_per_row),
                          aligned=("a_scale_ptr", "w_scale_ptr", "partial_ptr", "arrivals_ptr"),
                          num_warps=cfg["num_warps"])


# The split path's protocol in the sm_90 listing (lesson 32's split_protocol): one atomic add that announces a slice,
# after the release fence; one reset; C by one TMA store (only the last unit stores).
SPLIT_OPS = {"ATOMG.E.ADD.STRONG.GPU": 1, "ATOMG.E.EXCH.STRONG.GPU": 1, "MEMBAR.ALL.GPU": 1, "UTMASTG.2D": 1}


def listing_problem(k, cfg: dict, unsplit=None) -> str | None:
    """One configuration's sm_90 listing: fits one SM with no spills and no serialized wgmma; QGMMA (fp8 wgmma,
    64 × BLOCK_N × 32, E4M3 × E4M3 into F32) in the K loop, BLOCK_M / (16·num_warps) · BLOCK_K / 32 of them a step and
    none elsewhere, no HGMMA; and, split, the protocol: the slice stored, the consumers' barrier, the release and the
    atomic in that order, the slices read back from L2 (.cg: LDG ... STRONG.GPU), the reset, one TMA store."""
    from gluon_course.grading.gemm_kernel import fits

    problem = fits(k, cfg["num_warps"], cfg)
    if problem:
        return problem
    if any("serialized" in note for note in k.ptxas_notes()):
        return "ptxas serializes the wgmma instructions (for want of registers)"
    ops = k.opcodes()
    if any(op.startswith("HGMMA") for op in ops):
        return "HGMMA in the kernel: 16-bit products, where the operands must stay e4m3"
    opcode = FP8_TOOLS.QGMMA.format(n=cfg["BLOCK_N"])
    per_step = cfg["BLOCK_M"] // (16 * cfg["num_warps"]) * (cfg["BLOCK_K"] // 32)
    every = {op: n for op, n in ops.items() if op.startswith("QGMMA")}
    if every != {opcode: per_step}:
        return f"the kernel's fp8 wgmma are {every}; expected {per_step} × {opcode}"
    loop = k.opcodes_between(*k.loop_holding("QGMMA"))
    if loop.get(opcode, 0) != per_step:
        return f"the K loop holds {loop.get(opcode, 0)} × {opcode}; expected all {per_step} of the step there"
    if cfg["SPLIT_K"] == 1:
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
    scale_loads = sum(n for op, n in unsplit.opcodes().items() if op.startswith("LDG"))
    plain = [t for t in reads if "STRONG.GPU" not in t]
    if len(reads) == len(plain) or len(plain) > scale_loads:
        return (f"the last unit reads the slices without cache_modifier='.cg' ({len(plain)} loads after the atomic "
                f"without STRONG.GPU, where the scales take {scale_loads}): this SM's L1 may serve a stale line "
                "instead of the other SMs' slices in L2")
    return None


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
        usable = [s for s in ODD_SHAPES if not cfg or -(-s[2] // BLOCK_K) >= cfg.get("SPLIT_K", 1)]
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
