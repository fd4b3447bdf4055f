"""Lesson 34 · fp8 on Hopper: e4m3 operands and their scales.

An fp8 number (e4m3: 4 exponent bits, 3 mantissa bits) is one byte, so a tile of fp8 costs half the shared memory and
half the copies of a bf16 tile, and Hopper's tensor cores do twice the products per cycle on it. What fp8 cannot do is
hold a layer's values as they are: its largest finite number is 448 and it keeps 4 significant bits. So a tensor is
*quantized* first: divided by a scale that brings its largest magnitude to 448, rounded to e4m3, and the scale kept
(one per tensor, or one per row). The kernel multiplies fp8 by fp8 into fp32, as lesson 19's does bf16, and applies the
scales once per tile, in the epilogue: C = (s_a · s_w) ⊙ (A_q · W_qᵀ), written in bf16.
"""
from collections import OrderedDict

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)
from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, allocate_tensor_memory, tcgen05_mma

from gluon_course.course import load_solution
from gluon_course.nvidia import fp8_small_m
from gluon_course.nvidia import launch as kept
from gluon_course.nvidia.fp8 import E4M3_MAX, require_fp8_linear_args
from gluon_course.nvidia.hopper import require_hopper, require_wgmma_tile, tma_descriptor

# Lesson 19's tile and warpgroups, with BLOCK_K 128: a row of a tile is 128 fp8 bytes, the 128-byte swizzle's width,
# and a slot (A 16 KiB + W 32 KiB) is the same 48 KiB as lesson 19's bf16 slot at BLOCK_K 64.
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "num_warps": 8, "STAGES": 3, "GROUP_M": 8,
          "LOAD_REGS": 40}


# -- quantization (torch, on any device) -----------------------------------------------------------

def quantize(x: torch.Tensor, per_row: bool = False, scale: torch.Tensor | None = None):
    """``x`` (2D, any float dtype) as e4m3 and its fp32 scale: x ≈ x_q · scale. One scale for the tensor (shape (1,)),
    or one per row (shape (rows,)); each maps its largest magnitude to e4m3's largest finite value, 448. With
    ``scale`` given (a static scale, calibrated on earlier data), values past ±448 · scale saturate to ±448."""
    x = x.float()
    ### BEGIN SOLUTION: the scale from the amax (unless given), and x divided by it, saturated to ±448, rounded to e4m3
    if scale is None:
        amax = x.abs().amax(dim=1) if per_row else x.abs().amax().reshape(1)
        # An all-zero row has no magnitude to map: any scale keeps it zero, and 1 keeps the division defined.
        scale = torch.where(amax > 0, amax / E4M3_MAX, torch.ones_like(amax))
    scaled = x / (scale.reshape(-1, 1) if per_row else scale)
    # e4m3 has no infinity: a value past its range becomes 448 or NaN, whichever the conversion does. Clamp first, so
    # that the answer is 448 under either.
    x_q = scaled.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    ### END SOLUTION
    return x_q, scale


def dequantize(x_q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """What ``quantize`` kept, in fp32: x_q · scale (per tensor or per row)."""
    return x_q.float() * (scale.reshape(-1, 1) if scale.numel() > 1 else scale.reshape(()))


# -- the kernel --------------------------------------------------------------------------------------

def wgmma_layout(num_warps: int, BLOCK_N: int):
    """wgmma's accumulator (version 3): warps stacked along M, 16 rows each; one instruction spans BLOCK_N columns
    and 32 of K for fp8 (32 bytes, as 16 bf16 are)."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_N, 32])


def kernel_layouts(num_warps: int, BLOCK_N: int) -> dict:
    """The layout constexprs of matmul_kernel: what matmul passes, what the checks compile."""
    return {"acc_layout": wgmma_layout(num_warps, BLOCK_N)}


@gluon.jit
def grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    """(pid_m, pid_n) of tile number ``tile`` in lesson 17's grouped order."""
    tiles_per_group = GROUP_M * num_pid_n
    first_pid_m = (tile // tiles_per_group) * GROUP_M
    group_rows = gl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile % tiles_per_group) % group_rows
    pid_n = (tile % tiles_per_group) // group_rows
    return pid_m, pid_n


@gluon.jit
def load_partition(a_desc, w_desc, a_ring, w_ring, ready, empty, M, N, K, STAGES: gl.constexpr,
                   GROUP_M: gl.constexpr):
    """The producer (one warp), lesson 19's with W as N × K: both tiles are K-major, [BLOCK_M, BLOCK_K] of A and
    [BLOCK_N, BLOCK_K] of W."""
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = w_desc.block_shape[0]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(empty.index(slot), ((step // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + w_desc.block_type.nbytes)
            tma.async_load(a_desc, [pid_m * BLOCK_M, k * BLOCK_K], ready.index(slot), a_ring.index(slot))
            tma.async_load(w_desc, [pid_n * BLOCK_N, k * BLOCK_K], ready.index(slot), w_ring.index(slot))
            step += 1


@gluon.jit
def apply_scales(acc, a_scale_ptr, w_scale_ptr, pid_m, pid_n, M, N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                 acc_layout: gl.constexpr, A_PER_ROW: gl.constexpr, W_PER_ROW: gl.constexpr):
    """Tile (pid_m, pid_n) of the fp32 sum times its scales: A's (one, or one per row of C) and W's (one, or one per
    column of C). Both kernels call it once per tile, after their K loop (Hopper's mma_partition, Blackwell's kernel)."""
    ### BEGIN SOLUTION: the scales, once per tile: A's (one, or one per row of C) and W's (one, or one per column)
    # Every product of a sum shares its row's scale of A and its column's scale of W, so the scales multiply the
    # finished sum: BLOCK_M × BLOCK_N multiplies per tile, not one per product.
    rows = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    cols = pid_n * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    if A_PER_ROW:
        acc = acc * gl.expand_dims(gl.load(a_scale_ptr + rows, mask=rows < M, other=0.0), 1)
    else:
        acc = acc * gl.load(a_scale_ptr)
    if W_PER_ROW:
        # W's row n holds the weights of C's column n.
        acc = acc * gl.expand_dims(gl.load(w_scale_ptr + cols, mask=cols < N, other=0.0), 0)
    else:
        acc = acc * gl.load(w_scale_ptr)
    ### END SOLUTION
    return acc


@gluon.jit
def mma_partition(c_desc, a_ring, w_ring, c_smem, ready, empty, a_scale_ptr, w_scale_ptr, M, N, K,
                  STAGES: gl.constexpr, GROUP_M: gl.constexpr, acc_layout: gl.constexpr, A_PER_ROW: gl.constexpr,
                  W_PER_ROW: gl.constexpr):
    """The consumers (two warpgroups): lesson 19's K loop on fp8 tiles, then the scales, then C's tile by TMA."""
    BLOCK_M: gl.constexpr = c_desc.block_shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_shape[1]
    BLOCK_K: gl.constexpr = a_ring.shape[2]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
            # fp8 wgmma reads both operands K-major from shared memory: W's N × K tile, viewed as K × N (no data moves).
            w = w_ring.index(slot).permute((1, 0))
            acc = warpgroup_mma(a_ring.index(slot), w, acc, is_async=True)
            acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), w))
            mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES), pred=k > 0)
            step += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES))
        acc = apply_scales(acc, a_scale_ptr, w_scale_ptr, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, acc_layout,
                           A_PER_ROW, W_PER_ROW)
        # Lesson 19's epilogue: the last tile's store done, C's tile into shared memory, fenced, handed to TMA.
        tma.store_wait(0)
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_store(c_desc, [pid_m * BLOCK_M, pid_n * BLOCK_N], c_smem)
    tma.store_wait(0)


@gluon.jit
def matmul_kernel(a_desc, w_desc, c_desc, a_scale_ptr, w_scale_ptr, M, N, K, BLOCK_M: gl.constexpr,
                  BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, acc_layout: gl.constexpr, STAGES: gl.constexpr,
                  GROUP_M: gl.constexpr, LOAD_REGS: gl.constexpr, A_PER_ROW: gl.constexpr, W_PER_ROW: gl.constexpr):
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    w_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BLOCK_M, BLOCK_N], c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([
        (mma_partition, (c_desc, a_ring, w_ring, c_smem, ready, empty, a_scale_ptr, w_scale_ptr, M, N, K, STAGES,
                         GROUP_M, acc_layout, A_PER_ROW, W_PER_ROW)),
        (load_partition, (a_desc, w_desc, a_ring, w_ring, ready, empty, M, N, K, STAGES, GROUP_M)),
    ], [1], [LOAD_REGS])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


# matmul_kernel's arguments after the descriptors, scales and sizes, in its parameters' order (constexprs included:
# driver.c skips them, as for CompiledKernel.run).
CONSTEXPR_ORDER = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "acc_layout", "STAGES", "GROUP_M", "LOAD_REGS", "A_PER_ROW",
                   "W_PER_ROW")


class Plan:
    """One signature's launch, kept as lesson 31 keeps it (``gluon_course.nvidia.launch``): the checks run once, when
    the plan is built (the arguments' device aside: ``matmul`` checks it first), the configuration, layouts and grid;
    the descriptors of A, W and C kept by the three addresses and their CUtensorMaps encoded once (``kept.KeptLaunch``).
    The scales are plain pointers: the kernel reads them through ``a_scale_ptr`` and ``w_scale_ptr``, so a scale at
    another address needs nothing rebuilt (its shape, dtype and alignment are in the signature)."""

    def __init__(self, a, w, a_scale, w_scale, c, config: dict, programs=None):
        M, N, K, a_per_row, w_per_row = require_fp8_linear_args(a, w, a_scale, w_scale, c, on_gpu=False)
        self.M, self.N, self.K = M, N, K
        self.empty, self.zero_c = M == 0 or N == 0 or K == 0, K == 0 and M > 0 and N > 0
        self.descriptors = OrderedDict()
        self.stream = None                   # Triton's reader of torch's current stream, at the first launch
        if self.empty:
            return
        unknown = set(config) - set(CONFIG)
        if unknown:
            raise TypeError(f"unknown config keys {sorted(unknown)}; matmul takes {sorted(CONFIG)} and programs")
        if programs is not None and not (isinstance(programs, int) and programs >= 1):
            raise ValueError(f"programs={programs!r}: a positive number of programs, or None for one per SM")
        cfg = {**CONFIG, **config}
        self.num_warps = cfg.pop("num_warps")
        BM, BN, BK = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
        require_wgmma_tile(BM, BN, BK, self.num_warps, cfg["STAGES"])
        self.blocks = ([BM, BK], [BN, BK], [BM, BN])
        for name, t, block in (("a", a, self.blocks[0]), ("w", w, self.blocks[1]), ("c", c, self.blocks[2])):
            tma_descriptor(name, t, block)                     # TMA's rules, each with its sentence
        self.layouts = tuple(gl.NVMMASharedLayout.get_default_for(block, dtype) for block, dtype in
                             zip(self.blocks, (gl.float8e4nv, gl.float8e4nv, gl.bfloat16)))
        self.tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
        self.programs = programs
        self.grid = None
        constexprs = {**cfg, **kernel_layouts(self.num_warps, BN), "A_PER_ROW": a_per_row, "W_PER_ROW": w_per_row}
        self.rest = (M, N, K, *(constexprs[name] for name in CONSTEXPR_ORDER))
        self.launcher = kept.KeptLaunch(matmul_kernel, self.num_warps)

    def descriptors_for(self, a, w, c):
        """A's, W's and C's descriptors, kept by the three addresses (at most DESCRIPTORS_KEPT sets)."""
        return kept.kept_descriptors(self.descriptors, (a.data_ptr(), w.data_ptr(), c.data_ptr()),
                                     lambda: kept.host_descriptors((a, w, c), self.blocks, self.layouts))

    def launch(self, a, w, a_scale, w_scale, c) -> None:
        descs = self.descriptors_for(a, w, c)
        if self.stream is None:
            require_hopper(a)
            sms = torch.cuda.get_device_properties(a.device).multi_processor_count
            self.grid = (min(self.tiles, self.programs or sms), 1, 1)
            self.stream = triton.runtime.driver.active.get_current_stream
        self.launcher(self.grid[0], self.stream(a.device.index), descs, (a_scale, w_scale, *self.rest))


_PLANS = OrderedDict()


def plan(a, w, a_scale, w_scale, c, programs=None, **config) -> Plan:
    """The kept plan for these arguments' signature (shapes, strides, dtypes, devices, 16-byte alignment of A, W, C
    and both scales), the configuration and ``programs``; built, with every check, the first time."""
    key = (kept.signature(a, w, c, a_scale, w_scale), tuple(sorted(config.items())), programs)
    found = _PLANS.get(key)
    if found is None:
        found = kept.keep(_PLANS, key, Plan(a, w, a_scale, w_scale, c, config, programs), kept.PLANS_KEPT)
    else:
        _PLANS.move_to_end(key)
    return found


def matmul(a, w, a_scale, w_scale, c=None, programs=None, **config):
    """C = (A·Wᵀ) scaled, in bf16; returns ``c``. A (M × K) and W (N × K, nn.Linear's layout) are e4m3
    (torch.float8_e4m3fn), row-major; ``a_scale`` fp32 of one element or M (per row of A), ``w_scale`` of one or N
    (per row of W: per column of C); C[i, j] = a_scale[i] · w_scale[j] · Σ_k A[i, k] · W[j, k]. K must be a multiple of
    16 and N of 8 (TMA's 16-byte rows). Hopper only (sm_90). ``programs`` sets the grid (default: one per SM). A call
    with the signature of an earlier one reuses its plan (``plan``): no check, descriptor or encoding is redone. Given
    no ``config``, a batch of M ≤ 512 goes to ``small_m_matmul`` (the next section); a ``config`` keeps this kernel
    at any M."""
    tensors = (a, w, a_scale, w_scale) + ((c,) if c is not None else ())
    if not all(isinstance(t, torch.Tensor) and t.is_cuda for t in tensors):
        require_fp8_linear_args(a, w, a_scale, w_scale, c)             # the sentence for what is not on the GPU
    if c is None:
        if a.dim() != 2 or w.dim() != 2:
            require_fp8_linear_args(a, w, a_scale, w_scale)            # "must be a matrix"
        c = torch.empty((a.shape[0], w.shape[0]), dtype=torch.bfloat16, device=a.device)
    if not config and a.dim() == 2 and a.shape[0] <= fp8_small_m.LARGEST_SMALL_M:
        # A small batch: the next section's kernel, at the tile and split the cost model ranks first for the shape.
        return small_m_matmul(a, w, a_scale, w_scale, c, programs)
    p = plan(a, w, a_scale, w_scale, c, programs, **config)
    if p.empty:
        if p.zero_c:
            c.zero_()
        return c
    p.launch(a, w, a_scale, w_scale, c)
    return c


# -- Small batches (M ≤ 512): swap-AB and split-K, as lesson 32 cuts a bf16 GEMM --------------------------------------
# At M = 16 the 128 × 256 tile above covers 16 rows of A with 128 and makes 32 tiles of 8192 × 8192 for 132 SMs: most
# of every tile's products are padding and three quarters of the SMs have nothing to do. The product is then a stream
# of W, and what sets its speed is how many SMs pull W's bytes. Lesson 32's two ways to cut it carry over to fp8:
#
# - swap-AB: the kernel computes Cᵀ = W·Aᵀ, so W's N rows fill wgmma's 64-row side and the batch sits on its narrow N
#   side (16 to 128 columns). fp8 wgmma reads both operands K-major (section 2), and so they are: the kernel's A is
#   W's N × K tile as it lies, its B the activations' M × K tile viewed K × N, as the kernel above views W. The scales
#   swap roles with the operands: W's go with the rows of the Cᵀ tile, A's with its columns.
# - split-K with a fixed order: a tile's K steps in SPLIT_K slices; each unit stores its fp32 sum to a scratch slice
#   and counts itself at the tile's counter, and the unit that arrives last adds the slices in slice order (0, 1, ...,
#   whichever unit it is, so C has the same bits on every run), scales the sum once, stores C and resets the counter.
#
# The producer's K step, the consumers' K loop, the scratch's offsets, the (transposed) store of a tile and the work
# units are lesson 32's device functions, as they are; the scales are this lesson's apply_scales. Which tile and split
# a shape gets is gluon_course.nvidia.fp8_small_m's cost model (four constants fitted on an H200's timings).

v32 = load_solution("32")
load_step, unit_products, tile_offsets, store_strips, work_unit = (v32.load_step, v32.unit_products, v32.tile_offsets,
                                                                   v32.store_strips, v32.work_unit)
W_STREAMED = v32.W_STREAMED             # lesson 32's L2 hint for W's copies: read once, evicted first


@gluon.jit
def small_m_loads(a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, SPLIT_K, STAGES: gl.constexpr,
                  GROUP_M: gl.constexpr, A_POLICY: gl.constexpr, B_POLICY: gl.constexpr):
    """The producer (one warp): lesson 32's K steps, unit by unit (a tile's slices of K are consecutive units). The
    kernel's A and B are both K-major: [BLOCK_M, BLOCK_K] and [BLOCK_N, BLOCK_K] tiles."""
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
                # The next launch on this scratch counts from 0 again.
                gl.atomic_xchg(arrivals_ptr + tile, 0, sem="relaxed", scope="gpu")
    tma.store_wait(0)


@gluon.jit(do_not_specialize=["M", "N", "K", "SPLIT_K"])
def small_m_kernel(a_desc, b_desc, c_desc, a_scale_ptr, w_scale_ptr, partial_ptr, arrivals_ptr, M, N, K, SPLIT_K,
                   BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, acc_layout: gl.constexpr,
                   STAGES: gl.constexpr, GROUP_M: gl.constexpr, LOAD_REGS: gl.constexpr, A_PER_ROW: gl.constexpr,
                   W_PER_ROW: gl.constexpr, SPLIT: gl.constexpr, SWAP_AB: gl.constexpr, A_POLICY: gl.constexpr,
                   B_POLICY: gl.constexpr):
    """C = (A·Wᵀ) scaled, in BLOCK_M × BLOCK_N tiles of the kernel's product (of Cᵀ with SWAP_AB: its A is then W and
    its M and N are C's N and M), each tile's K steps in SPLIT_K slices (SPLIT: SPLIT_K > 1). ``a_scale_ptr`` and
    ``w_scale_ptr`` are always the caller's A's and W's scales, whichever operand of the kernel each belongs to. M, N,
    K and SPLIT_K are not specialised on (TMA clips every edge), so one compile serves every shape of a
    configuration. ``partial_ptr``: SPLIT_K fp32 tiles per tile; ``arrivals_ptr``: a counter per tile, 0 before and
    after a launch. ``A_POLICY``, ``B_POLICY``: the L2 hint of the kernel's A and B copies (W_STREAMED on W's, or
    None)."""
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
SMALL_M_CONSTEXPR_ORDER = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "acc_layout", "STAGES", "GROUP_M", "LOAD_REGS",
                           "A_PER_ROW", "W_PER_ROW", "SPLIT", "SWAP_AB", "A_POLICY", "B_POLICY")
# The configuration small_m_matmul takes: CONFIG's keys, split-K, swap-AB and lesson 32's L2 hint on W (W_FIRST: 1 on,
# 0 off). Unset keys are CONFIG's tile, unsplit, not swapped, the hint on.
SMALL_M_CONFIG = {**CONFIG, "SPLIT_K": 1, "SWAP_AB": False, "W_FIRST": 1}


def small_m_constexprs(cfg: dict, a_per_row: bool, w_per_row: bool) -> dict:
    """small_m_kernel's constexprs for a configuration and the two kinds of scales. W is the kernel's A under swap-AB
    and its B otherwise, so its L2 hint goes with that operand's copies."""
    swap = bool(cfg["SWAP_AB"])
    hint = W_STREAMED if cfg["W_FIRST"] else None
    return {"BLOCK_M": cfg["BLOCK_M"], "BLOCK_N": cfg["BLOCK_N"], "BLOCK_K": cfg["BLOCK_K"],
            "acc_layout": wgmma_layout(cfg["num_warps"], cfg["BLOCK_N"]), "STAGES": cfg["STAGES"],
            "GROUP_M": cfg["GROUP_M"], "LOAD_REGS": cfg["LOAD_REGS"], "A_PER_ROW": a_per_row, "W_PER_ROW": w_per_row,
            "SPLIT": cfg["SPLIT_K"] > 1, "SWAP_AB": swap, "A_POLICY": hint if swap else None,
            "B_POLICY": None if swap else hint}


def small_m_blocks(cfg: dict) -> tuple:
    """The TMA boxes of the kernel's A, B and C: [BLOCK_M, BLOCK_K], [BLOCK_N, BLOCK_K], and C's tile, transposed
    ([BLOCK_N, BLOCK_M] of C) under swap-AB."""
    BM, BN, BK = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    return [BM, BK], [BN, BK], ([BN, BM] if cfg["SWAP_AB"] else [BM, BN])


class SmallMPlan:
    """One signature's launch of small_m_kernel, kept as ``Plan`` is: the checks (the same contract,
    ``require_fp8_linear_args``), the configuration (``config`` over SMALL_M_CONFIG, or the cost model's pick for the
    shape when ``config`` is empty), the kernel's operands (W and A exchanged under swap-AB), the descriptors kept by
    address, the persistent grid, and split-K's scratch (one set per stream)."""

    def __init__(self, a, w, a_scale, w_scale, c, config: dict, programs=None):
        M, N, K, a_per_row, w_per_row = require_fp8_linear_args(a, w, a_scale, w_scale, c, on_gpu=False)
        unknown = set(config) - set(SMALL_M_CONFIG)
        if unknown:
            raise TypeError(f"unknown config keys {sorted(unknown)}; small_m_matmul takes {sorted(SMALL_M_CONFIG)}")
        if programs is not None and not (isinstance(programs, int) and programs >= 1):
            raise ValueError(f"programs={programs!r}: a positive number of programs, or None for one per SM")
        self.M, self.N, self.K, self.programs = M, N, K, programs
        self.empty, self.zero_c = M == 0 or N == 0 or K == 0, K == 0 and M > 0 and N > 0
        self.descriptors, self.scratch, self.stream, self.grid = OrderedDict(), {}, None, None
        if self.empty:
            return
        picked = {} if config else (fp8_small_m.rule(M, N, K) or {})
        cfg = self.config = {**SMALL_M_CONFIG, **picked, **config}
        self.num_warps = cfg["num_warps"]
        BM, BN, BK, split = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], cfg["SPLIT_K"]
        require_wgmma_tile(BM, BN, BK, self.num_warps, cfg["STAGES"])
        steps = triton.cdiv(K, BK)
        if not (isinstance(split, int) and split >= 1):
            raise ValueError(f"SPLIT_K={split!r}: a positive number of slices of K (1: unsplit)")
        # A slice of fewer K steps than the ring's stages has been cut below what the ring keeps in flight: each unit
        # pays a slice stored, a count and its share of the sum on fewer steps than the copies it overlaps.
        if split > 1 and steps // split < cfg["STAGES"]:
            raise ValueError(f"SPLIT_K={split} at K={K}: slices of {steps // split} K step(s) of {BK}, fewer than the "
                             f"ring's STAGES={cfg['STAGES']}; split at most {max(1, steps // cfg['STAGES'])} ways here, "
                             "or use a shallower ring")
        if cfg["W_FIRST"] not in (0, 1):
            raise ValueError(f"W_FIRST={cfg['W_FIRST']!r}: 1 (W's copies with L2's evict_first hint) or 0 (none)")
        self.swap_ab = bool(cfg["SWAP_AB"])
        self.kernel_mn = (N, M) if self.swap_ab else (M, N)
        self.blocks = small_m_blocks(cfg)
        self.layouts = tuple(gl.NVMMASharedLayout.get_default_for(block, dtype) for block, dtype in
                             zip(self.blocks, (gl.float8e4nv, gl.float8e4nv, gl.bfloat16)))
        ka, kb = self.operands(a, w)
        for name, t, block in (("the kernel's A (W under swap-AB)", ka, self.blocks[0]),
                               ("the kernel's B (A under swap-AB)", kb, self.blocks[1]), ("c", c, self.blocks[2])):
            tma_descriptor(name, t, block)                     # TMA's rules, each with its sentence
        kM, kN = self.kernel_mn
        self.tiles = triton.cdiv(kM, BM) * triton.cdiv(kN, BN)
        self.units = self.tiles * split
        if self.units * BM * BN >= 2 ** 31:
            raise ValueError(f"SPLIT_K={split} at {M}×{N}×{K}: the scratch's {self.units * BM * BN} fp32 cells pass "
                             "the kernel's 32-bit offsets; split fewer ways or use a larger tile")
        constexprs = small_m_constexprs(cfg, a_per_row, w_per_row)
        self.rest = (kM, kN, K, split, *(constexprs[name] for name in SMALL_M_CONSTEXPR_ORDER))
        self.launcher = kept.KeptLaunch(small_m_kernel, self.num_warps)

    def operands(self, a, w):
        """The kernel's A and B: (W, A) under swap-AB, else (A, W); both row-major, K-major."""
        return (w, a) if self.swap_ab else (a, w)

    def set_grid(self, sms: int) -> None:
        """One program per SM at most (``programs``, when given, in place of the SMs), never more than the units."""
        self.grid = (min(self.units, self.programs or sms), 1, 1)

    def scratch_for(self, device, stream: int):
        """Split-K's fp32 slices and per-tile counters for ``stream``: the counters start at 0 and every tile's last
        unit sets its counter back to 0, so the set serves every later launch on that stream."""
        found = self.scratch.get(stream)
        if found is None:
            split = self.config["SPLIT_K"] > 1
            cells = self.units * self.config["BLOCK_M"] * self.config["BLOCK_N"] if split else 1
            found = self.scratch[stream] = (torch.empty(cells, dtype=torch.float32, device=device),
                                            torch.zeros(self.tiles if split else 1, dtype=torch.int32, device=device))
        return found

    def descriptors_for(self, a, w, c):
        def make():
            ka, kb = self.operands(a, w)
            return kept.host_descriptors((ka, kb, c), self.blocks, self.layouts)
        addresses = (a.data_ptr(), w.data_ptr(), c.data_ptr())      # the caller's A, W and C, whichever way round
        return kept.kept_descriptors(self.descriptors, addresses, make)

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


_SMALL_M_PLANS = OrderedDict()


def small_m_plan(a, w, a_scale, w_scale, c, programs=None, **config) -> SmallMPlan:
    """The kept SmallMPlan for these arguments' signature, ``config`` and ``programs`` (the cost model runs once, when
    the plan is built)."""
    key = (kept.signature(a, w, c, a_scale, w_scale), tuple(sorted(config.items())), programs)
    found = _SMALL_M_PLANS.get(key)
    if found is None:
        found = kept.keep(_SMALL_M_PLANS, key, SmallMPlan(a, w, a_scale, w_scale, c, config, programs),
                          kept.PLANS_KEPT)
    else:
        _SMALL_M_PLANS.move_to_end(key)
    return found


def small_m_matmul(a, w, a_scale, w_scale, c=None, programs=None, **config):
    """``matmul``'s contract through small_m_kernel: at ``config`` over SMALL_M_CONFIG, or, with none, the tile and
    split gluon_course.nvidia.fp8_small_m's cost model ranks first for the shape (M ≤ 512; above, CONFIG's tile).
    ``matmul`` calls it for M ≤ 512 when given no configuration."""
    tensors = (a, w, a_scale, w_scale) + ((c,) if c is not None else ())
    if not all(isinstance(t, torch.Tensor) and t.is_cuda for t in tensors):
        require_fp8_linear_args(a, w, a_scale, w_scale, c)
    if c is None:
        if a.dim() != 2 or w.dim() != 2:
            require_fp8_linear_args(a, w, a_scale, w_scale)
        c = torch.empty((a.shape[0], w.shape[0]), dtype=torch.bfloat16, device=a.device)
    p = small_m_plan(a, w, a_scale, w_scale, c, programs, **config)
    if p.empty:
        if p.zero_c:
            c.zero_()
        return c
    p.launch(a, w, a_scale, w_scale, c)
    return c


# -- What changes on Blackwell (sm_100) -------------------------------------------------------------------------------
# The same fp8 product and epilogue for Blackwell's tensor cores, as lessons 15 and 18 end: compiled on the CPU for
# sm_100 by the checks, never run (the course has no Blackwell GPU, so there is no launcher). One tile per program, a
# ring of STAGES slots filled STAGES - 1 steps ahead; tcgen05_mma takes the e4m3 tiles as wgmma does (W's N × K tile
# viewed K × N) into an fp32 accumulator in tensor memory, and the scales multiply it once it is back in registers.

@gluon.jit
def blackwell_matmul_kernel(a_desc, w_desc, c_desc, a_scale_ptr, w_scale_ptr, M, N, K, BLOCK_M: gl.constexpr,
                            BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, STAGES: gl.constexpr,
                            A_PER_ROW: gl.constexpr, W_PER_ROW: gl.constexpr):
    pid_m = gl.program_id(0) // gl.cdiv(N, BLOCK_N)
    pid_n = gl.program_id(0) % gl.cdiv(N, BLOCK_N)
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    w_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mma_done = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
    mbarrier.init(mma_done, count=1)
    k_tiles = gl.cdiv(K, BLOCK_K)
    for s in gl.static_range(STAGES - 1):
        mbarrier.expect(ready.index(s), a_desc.block_type.nbytes + w_desc.block_type.nbytes, pred=s < k_tiles)
        tma.async_load(a_desc, [pid_m * BLOCK_M, s * BLOCK_K], ready.index(s), a_ring.index(s), pred=s < k_tiles)
        tma.async_load(w_desc, [pid_n * BLOCK_N, s * BLOCK_K], ready.index(s), w_ring.index(s), pred=s < k_tiles)
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N],
                                      TensorMemoryLayout(block=(BLOCK_M, BLOCK_N), col_stride=1))
    for i in range(k_tiles):
        slot = i % STAGES
        mbarrier.wait(ready.index(slot), (i // STAGES) & 1)
        # Refill the slot that step i - 1 read (the wait on mma_done below retired it), STAGES - 1 steps ahead.
        nxt = i + STAGES - 1
        mbarrier.expect(ready.index(nxt % STAGES), a_desc.block_type.nbytes + w_desc.block_type.nbytes,
                        pred=nxt < k_tiles)
        tma.async_load(a_desc, [pid_m * BLOCK_M, nxt * BLOCK_K], ready.index(nxt % STAGES), a_ring.index(nxt % STAGES),
                       pred=nxt < k_tiles)
        tma.async_load(w_desc, [pid_n * BLOCK_N, nxt * BLOCK_K], ready.index(nxt % STAGES), w_ring.index(nxt % STAGES),
                       pred=nxt < k_tiles)
        tcgen05_mma(a_ring.index(slot), w_ring.index(slot).permute((1, 0)), acc_tmem, use_acc=i > 0,
                    mbarriers=[mma_done])
        mbarrier.wait(mma_done, i & 1)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
    mbarrier.invalidate(mma_done)
    # Out of tensor memory into registers, then the same scales as mma_partition's (apply_scales), once per tile.
    acc_layout: gl.constexpr = acc_tmem.get_reg_layout()
    acc = acc_tmem.load(acc_layout)
    acc = apply_scales(acc, a_scale_ptr, w_scale_ptr, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, acc_layout, A_PER_ROW,
                       W_PER_ROW)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BLOCK_M, BLOCK_N], c_desc.layout)
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [pid_m * BLOCK_M, pid_n * BLOCK_N], c_smem)
    tma.store_wait(0)
