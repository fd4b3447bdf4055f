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
    with the signature of an earlier one reuses its plan (``plan``): no check, descriptor or encoding is redone."""
    tensors = (a, w, a_scale, w_scale) + ((c,) if c is not None else ())
    if not all(isinstance(t, torch.Tensor) and t.is_cuda for t in tensors):
        require_fp8_linear_args(a, w, a_scale, w_scale, c)             # the sentence for what is not on the GPU
    if c is None:
        if a.dim() != 2 or w.dim() != 2:
            require_fp8_linear_args(a, w, a_scale, w_scale)            # "must be a matrix"
        c = torch.empty((a.shape[0], w.shape[0]), dtype=torch.bfloat16, device=a.device)
    p = plan(a, w, a_scale, w_scale, c, programs, **config)
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
