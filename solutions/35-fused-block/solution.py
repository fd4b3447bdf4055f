"""Lesson 35 · The GEMM does the model's work.

A transformer block calls its GEMMs with small elementwise steps between them: after the gate and up projections,
SiLU(gate) · up; after the o and down projections, the residual add. Each of those steps is a kernel of its own that
reads its inputs from HBM and writes its output back, and at decode each GEMM is a kernel too short to fill the GPU
from its start to its end. This lesson moves the elementwise work into the GEMM's epilogue, while C is still fp32 in
the consumers' registers, and lets each kernel start before the previous one ends:

1. **Q, K and V as one GEMM**: their weights stacked into one W (N = 4096 + 2 · 1024), one kernel instead of three.
2. **SwiGLU in the epilogue** (``silu_times``): the gate's and up's rows of W interleaved in blocks of BLOCK_N, so
   one tile of the GEMM holds gate's and up's sums for the same columns of H in two accumulators (lesson 32's wide
   tile); the epilogue writes only H = SiLU(gate) · up, rounded once.
3. **The residual in the epilogue** (``add_residual``): R's tile loaded in the accumulator's own layout and added
   before the one rounding to bf16.
4. **Programmatic dependent launch** (``PDL``): the next kernel is launched while this one is still running; its
   producer loads the first tiles of W, which no kernel writes, and only then waits (``gdc_wait``) for the previous
   kernel's output, A.

The K loop is lesson 32's (``load_step`` and ``unit_products``, imported from it): only the epilogue and the
producer's first steps are new. ``fused_linear`` launches one GEMM; ``FusedBlock`` is lesson 32's transformer block
with its seven projections done by four fused GEMMs.
"""
from collections import OrderedDict

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait

from gluon_course.course import load_solution
from gluon_course.nvidia import launch as kept
from gluon_course.nvidia.hopper import require_hopper, tma_descriptor
from gluon_course.nvidia.tiles import grouped_tile

v32 = load_solution("32")
# Lesson 32's device functions as they are: the producer's K step and the consumers' K loop (its wide tile, two
# accumulators, holds SwiGLU's gate and up).
load_step, unit_products = v32.load_step, v32.unit_products

EPILOGUES = ("plain", "swiglu", "residual")
# The SwiGLU GEMM's W: gate's and up's rows interleaved in blocks of GATE_UP_BLOCK (interleave_gate_up), which is
# the BLOCK_N of every SwiGLU configuration: the weights are laid out once, for the tile that reads them.
GATE_UP_BLOCK = 128
SMS = 132                   # the H100's and H200's SMs, where no GPU is there to ask


# -- The kernel --------------------------------------------------------------------------------------------------------

@gluon.jit
def fused_load_partition(a_desc, b_desc, a_ring, b_ring, b2_ring, ready, empty, M, N, K, STAGES: gl.constexpr,
                         GROUP_M: gl.constexpr, BLOCK_N2: gl.constexpr, PDL: gl.constexpr):
    """The producer (one warp): lesson 32's, one tile of C a unit. A wide tile's second strip (SwiGLU's up rows) comes
    through the same descriptor as the first, BLOCK_N rows further down W. With ``PDL``, the first tile's first STAGES
    steps load W before gdc_wait and A after it."""
    BLOCK_M: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[0]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N + BLOCK_N2)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    first = gl.program_id(0)
    if PDL:
        # Every slot of the ring is free at the start. W is weights: no kernel writes it, so its first tiles may be
        # loaded while the previous kernel still runs. Each slot's expect() counts A's bytes too; they come later.
        pid_m, pid_n = grouped_tile(first, num_pid_m, num_pid_n, GROUP_M)
        n = pid_n * (BLOCK_N + BLOCK_N2)
        W_STRIPS: gl.constexpr = 2 if BLOCK_N2 > 0 else 1
        early = min(STAGES, k_tiles)
        for k in range(early):
            mbarrier.expect(ready.index(k), a_desc.block_type.nbytes + W_STRIPS * b_desc.block_type.nbytes)
            tma.async_load(b_desc, [n, k * BLOCK_K], ready.index(k), b_ring.index(k))
            if BLOCK_N2 > 0:
                tma.async_load(b_desc, [n + BLOCK_N, k * BLOCK_K], ready.index(k), b2_ring.index(k))
        # A is the previous kernel's output: from here on it is complete and visible.
        gdc_wait()
        for k in range(early):
            tma.async_load(a_desc, [pid_m * BLOCK_M, k * BLOCK_K], ready.index(k), a_ring.index(k))
        for k in range(early, k_tiles):
            load_step(a_desc, b_desc, b_desc, a_ring, b_ring, b2_ring, ready, empty, k, pid_m, pid_n, k, STAGES,
                      True, False, BLOCK_N2, None, None)
        step = k_tiles
        first += gl.num_programs(0)
    for tile in range(first, num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        for k in range(k_tiles):
            load_step(a_desc, b_desc, b_desc, a_ring, b_ring, b2_ring, ready, empty, step, pid_m, pid_n, k, STAGES,
                      True, False, BLOCK_N2, None, None)
            step += 1
    if PDL:
        # Every load of this program is issued: the next kernel may be scheduled (a hint; its gdc_wait still waits
        # for this whole grid to finish).
        gdc_launch_dependents()


@gluon.jit
def silu_times(gate, up):
    """H = SiLU(gate) · up, elementwise on the two fp32 accumulators (same shape, same layout): SiLU(g) = g · σ(g)
    = g / (1 + e^(−g))."""
    ### BEGIN SOLUTION: SiLU of the gate's sums times the up's sums, in fp32
    return gate / (1.0 + gl.exp(-gate)) * up
    ### END SOLUTION


@gluon.jit
def add_residual(acc, r_ptr, stride_rm, off_m, off_n, M, N, acc_layout: gl.constexpr):
    """acc + R's tile at (off_m, off_n), in fp32. R is bf16, row-major, rows ``stride_rm`` elements apart, M × N."""
    BLOCK_M: gl.constexpr = acc.shape[0]
    BLOCK_N: gl.constexpr = acc.shape[1]
    ### BEGIN SOLUTION: R's tile in the accumulator's layout, rows past M and columns past N masked, added in fp32
    rows = off_m + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    cols = off_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    r = gl.load(r_ptr + rows[:, None] * stride_rm + cols[None, :], mask=inside, other=0.0)
    return acc + r.to(gl.float32)
    ### END SOLUTION


@gluon.jit
def fused_mma_partition(c_desc, a_ring, b_ring, b2_ring, c_smem, ready, empty, r_ptr, stride_rm, M, N, K, N_OUT,
                        STAGES: gl.constexpr, GROUP_M: gl.constexpr, acc_layout: gl.constexpr,
                        BLOCK_N2: gl.constexpr, EPILOGUE: gl.constexpr):
    """The consumers: lesson 32's K loop per tile (unit_products), then the epilogue on the finished fp32 sums, one
    rounding to bf16 and one TMA store of BLOCK_M × BLOCK_N at C's coordinates (C has ``N_OUT`` columns)."""
    BLOCK_M: gl.constexpr = a_ring.shape[1]
    BLOCK_N: gl.constexpr = b_ring.shape[1]
    BLOCK_K: gl.constexpr = a_ring.shape[2]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N + BLOCK_N2)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        acc, acc2, step = unit_products(a_ring, b_ring, b2_ring, ready, empty, step, 0, k_tiles, STAGES, acc_layout,
                                        acc_layout, True, False, BLOCK_N2)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N                # C's columns: SwiGLU's two strips make one strip of H
        if EPILOGUE == "swiglu":
            out = silu_times(acc, acc2)
        elif EPILOGUE == "residual":
            out = add_residual(acc, r_ptr, stride_rm, off_m, off_n, M, N_OUT, acc_layout)
        else:
            out = acc
        tma.store_wait(0)                      # the previous tile's store has left c_smem
        c_smem.store(out.to(c_desc.dtype))
        fence_async_shared()
        tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)


@gluon.jit(do_not_specialize=["M", "N", "K", "N_OUT", "stride_rm"])
def fused_kernel(a_desc, b_desc, c_desc, r_ptr, M, N, K, N_OUT, stride_rm, BLOCK_M: gl.constexpr,
                 BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, acc_layout: gl.constexpr, STAGES: gl.constexpr,
                 GROUP_M: gl.constexpr, LOAD_REGS: gl.constexpr, EPILOGUE: gl.constexpr, PDL: gl.constexpr):
    """C = epilogue(A·Wᵀ): A M × K, W N × K (for SwiGLU the interleaved W, N twice H's padded width), C M × N_OUT, in
    tiles of BLOCK_M × BLOCK_N of C, persistent over the grid. ``r_ptr``: R for the residual (unread otherwise)."""
    BLOCK_N2: gl.constexpr = BLOCK_N if EPILOGUE == "swiglu" else 0
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    b2_ring = b_ring
    if BLOCK_N2 > 0:
        b2_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([
        (fused_mma_partition, (c_desc, a_ring, b_ring, b2_ring, c_smem, ready, empty, r_ptr, stride_rm, M, N, K,
                               N_OUT, STAGES, GROUP_M, acc_layout, BLOCK_N2, EPILOGUE)),
        (fused_load_partition, (a_desc, b_desc, a_ring, b_ring, b2_ring, ready, empty, M, N, K, STAGES, GROUP_M,
                                BLOCK_N2, PDL)),
    ], [1], [LOAD_REGS])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


# -- W for SwiGLU, and the configurations --------------------------------------------------------------------------------

def interleave_gate_up(w_gate: torch.Tensor, w_up: torch.Tensor, block_n: int = GATE_UP_BLOCK) -> torch.Tensor:
    """W for the SwiGLU epilogue, made once with the weights: gate's and up's rows (each N × K) in blocks of
    ``block_n``, block j of gate, then block j of up, so that a tile's up strip lies BLOCK_N rows below its gate strip.
    A last block shorter than ``block_n`` is padded with zero rows (H's columns there are SiLU(0) · 0 = 0, and the
    store clips them)."""
    if w_gate.shape != w_up.shape or w_gate.dim() != 2:
        raise ValueError(f"W_gate {tuple(w_gate.shape)} and W_up {tuple(w_up.shape)} must be two N × K matrices of "
                         "one shape (nn.Linear's weights of the gate and up projections)")
    N, K = w_gate.shape
    blocks = -(-N // block_n)
    pad = blocks * block_n - N
    g = torch.cat([w_gate, w_gate.new_zeros(pad, K)]).reshape(blocks, 1, block_n, K)
    u = torch.cat([w_up, w_up.new_zeros(pad, K)]).reshape(blocks, 1, block_n, K)
    return torch.cat([g, u], dim=1).reshape(2 * blocks * block_n, K).contiguous()


def busy_fraction(tiles: int, sms: int) -> float:
    """The share of the SMs' rounds that hold a tile: tiles / (rounds · sms), rounds = ⌈tiles / sms⌉."""
    return tiles / (-(-tiles // sms) * sms)


def decode_width(N: int, sms: int = SMS) -> int:
    """BLOCK_N at decode for C's N columns (64 or 32): the one whose tiles keep the larger share of the SMs busy,
    the wider on a tie. At decode each tile streams its own rows of W, so an idle SM is W's bandwidth lost: 4096
    columns make 64 tiles of 64 (64 of 132 SMs busy) but 128 tiles of 32."""
    return max((64, 32), key=lambda w: (round(busy_fraction(-(-N // w), sms), 6), w))


def config_for(M: int, epilogue: str, N: int, sms: int = SMS) -> dict:
    """The tile of one GEMM at M rows, C's N columns. Decode (M ≤ 64): 64-row tiles (wgmma's least), BLOCK_K 128 (64
    for SwiGLU's two wide strips), the ring as deep as shared memory allows (about 200 KiB). Prefill: lesson 19's
    128 × 256, as 128 × (128 + 128) for SwiGLU; the residual at 128 × 128, because R's tile, loaded in the
    accumulator's layout, needs as many registers again."""
    if epilogue == "swiglu":
        bm, bk, stages, warps = (64, 64, 5, 4) if M <= 64 else (128, 64, 3, 8)
        bn = GATE_UP_BLOCK
    elif M <= 64:
        bm, bk, warps = 64, 128, 4
        bn = decode_width(N, sms)
        stages = 6 if bn == 64 else 8
    elif epilogue == "residual":
        bm, bn, bk, stages, warps = 128, 128, 64, 4, 8
    else:
        bm, bn, bk, stages, warps = 128, 256, 64, 3, 8
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "STAGES": stages, "num_warps": warps, "GROUP_M": 8,
            "LOAD_REGS": 40}


def constexprs(cfg: dict, epilogue: str, pdl: bool) -> dict:
    """fused_kernel's constexpr arguments for one configuration, in the kernel's order."""
    return {"BLOCK_M": cfg["BLOCK_M"], "BLOCK_N": cfg["BLOCK_N"], "BLOCK_K": cfg["BLOCK_K"],
            "acc_layout": v32.wgmma_layout(cfg["num_warps"], cfg["BLOCK_N"]), "STAGES": cfg["STAGES"],
            "GROUP_M": cfg["GROUP_M"], "LOAD_REGS": cfg["LOAD_REGS"], "EPILOGUE": epilogue, "PDL": bool(pdl)}


# -- The launcher ------------------------------------------------------------------------------------------------------

def _require_fusable(a, w, c, r, epilogue: str) -> int:
    """C's columns, or a ValueError that says what to change."""
    if epilogue not in EPILOGUES:
        raise ValueError(f"epilogue={epilogue!r}: one of {', '.join(EPILOGUES)}")
    for name, t in (("A", a), ("W", w), ("C", c), ("R", r)):
        if t is None:
            continue
        if t.dtype != torch.bfloat16:
            raise ValueError(f"{name} is {t.dtype}: every operand of the fused GEMMs is bf16 (convert with .to("
                             "torch.bfloat16); lesson 34 is the fp8 one)")
        if t.dim() != 2:
            raise ValueError(f"{name} has {t.dim()} dimensions: pass a matrix (reshape(-1, features) first)")
    if a.shape[1] != w.shape[1]:
        raise ValueError(f"A is {a.shape[0]}×{a.shape[1]} and W {w.shape[0]}×{w.shape[1]}: W is nn.Linear's N × K "
                         "weight, so their K (the second dimensions) must be equal")
    if epilogue == "swiglu" and w.shape[0] % (2 * GATE_UP_BLOCK):
        raise ValueError(f"W has {w.shape[0]} rows, not a multiple of {2 * GATE_UP_BLOCK}: the SwiGLU GEMM takes "
                         "gate's and up's weights as interleave_gate_up(w_gate, w_up) lays them out")
    n_out = c.shape[1] if c is not None else (w.shape[0] // 2 if epilogue == "swiglu" else w.shape[0])
    widest = w.shape[0] // 2 if epilogue == "swiglu" else w.shape[0]
    if n_out > widest or (c is not None and c.shape[0] != a.shape[0]):
        raise ValueError(f"C is {tuple(c.shape)}: it must be {a.shape[0]} × {widest}" +
                         (" or fewer columns (H's width without the padding)" if epilogue == "swiglu" else ""))
    if epilogue == "residual" and (r is None or tuple(r.shape) != (a.shape[0], n_out) or r.stride(1) != 1):
        found = "no R" if r is None else f"R {tuple(r.shape)} with strides {tuple(r.stride())}"
        raise ValueError(f"the residual epilogue adds R, the same shape as C ({a.shape[0]} × {n_out}) with its rows "
                         f"contiguous; got {found}")
    return n_out


class FusedLinear:
    """One fused GEMM: C = epilogue(A·Wᵀ), as ``fused_linear`` calls it. Keeps a compiled launch per configuration
    and the descriptors per set of addresses (lesson 31's kept launch), and launches with PDL when ``pdl``."""

    def __init__(self, epilogue: str = "plain", pdl: bool = False):
        self.epilogue, self.pdl = epilogue, pdl
        self.launches, self.descriptors = {}, OrderedDict()

    def __call__(self, a, w, c=None, r=None, stream=None):
        n_out = _require_fusable(a, w, c, r, self.epilogue)
        require_hopper(a)
        M, K = a.shape
        N = w.shape[0]
        if c is None:
            c = torch.empty(M, n_out, device=a.device, dtype=torch.bfloat16)
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count
        cfg = config_for(M, self.epilogue, n_out, sms)
        key = tuple(cfg.items())
        if key not in self.launches:
            options = {"launch_pdl": True} if self.pdl else {}
            self.launches[key] = (kept.KeptLaunch(fused_kernel, cfg["num_warps"], **options),
                                  tuple(constexprs(cfg, self.epilogue, self.pdl).values()))
        launch, ce = self.launches[key]
        BM, BN, BK = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]

        def make():
            blocks = ([BM, BK], [BN, BK], [BM, BN])
            for name, t, block in zip("AWC", (a, w, c), blocks):
                tma_descriptor(name, t, block)         # TMA's 16-byte rule, refused with a sentence
            layouts = [gl.NVMMASharedLayout.get_default_for(b, gl.bfloat16) for b in blocks]
            # Kept by address, holding no tensor (lesson 31): a kept descriptor never keeps freed memory alive.
            return kept.host_descriptors((a, w, c), blocks, layouts)
        descs = kept.kept_descriptors(self.descriptors, (key, kept.signature(a, w, c), a.data_ptr(), w.data_ptr(),
                                                         c.data_ptr()), make)
        tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN * (2 if self.epilogue == "swiglu" else 1))
        stream = stream if stream is not None else triton.runtime.driver.active.get_current_stream(a.device.index)
        rr = r if r is not None else c
        launch(min(tiles, sms), stream, descs, (rr, M, N, K, n_out, rr.stride(0), *ce))
        return c


_FUSED = {}


def fused_linear(a, w, epilogue: str = "plain", r=None, c=None, pdl: bool = False):
    """C = A·Wᵀ (``"plain"``), SiLU(A·W_gateᵀ) · (A·W_upᵀ) (``"swiglu"``, w = interleave_gate_up(w_gate, w_up)) or
    A·Wᵀ + R (``"residual"``), bf16 in and out, fp32 sums, one rounding. ``pdl``: launched with programmatic
    dependent launch, overlapping the previous kernel in the stream."""
    if (epilogue, pdl) not in _FUSED:
        _FUSED[(epilogue, pdl)] = FusedLinear(epilogue, pdl)
    return _FUSED[(epilogue, pdl)](a, w, c, r)


# -- The block ---------------------------------------------------------------------------------------------------------

class FusedBlock(torch.nn.Module):
    """Lesson 32's transformer block (gluon_course.measure.linear.Block) with its seven projections as four fused
    GEMMs, sharing that block's weights (the stacked and interleaved copies are made once, here): QKV; o with the
    residual x; gate and up with SwiGLU; down with the residual. Norms and attention as in the block."""

    def __init__(self, block, pdl: bool = False):
        super().__init__()
        self.block, self.pdl = block, pdl
        self.w_qkv = torch.cat([block.q.weight, block.k.weight, block.v.weight]).contiguous()
        self.w_gate_up = interleave_gate_up(block.gate.weight, block.up.weight)
        self.mlp = block.gate.weight.shape[0]
        self.sizes = (block.q.weight.shape[0], block.k.weight.shape[0], block.v.weight.shape[0])

    def forward(self, x):                      # x: (batch, tokens, hidden), as the block takes it
        b, F = self.block, torch.nn.functional
        B, T, H = x.shape
        flat = x.reshape(B * T, H)
        qkv = fused_linear(b.norm1(x).reshape(B * T, H), self.w_qkv, pdl=self.pdl)
        q, k, v = qkv.split(self.sizes, dim=1)
        q = q.reshape(B, T, b.heads, b.head_dim).transpose(1, 2)
        k = k.reshape(B, T, b.kv_heads, b.head_dim).transpose(1, 2)
        v = v.reshape(B, T, b.kv_heads, b.head_dim).transpose(1, 2)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1, enable_gqa=True)
        att = att.transpose(1, 2).reshape(B * T, H)
        x1 = fused_linear(att, b.o.weight, "residual", r=flat, pdl=self.pdl)
        h = fused_linear(b.norm2(x1).reshape(B * T, H), self.w_gate_up, "swiglu",
                         c=torch.empty(B * T, self.mlp, device=x.device, dtype=x.dtype), pdl=self.pdl)
        return fused_linear(h, b.down.weight, "residual", r=x1, pdl=self.pdl).reshape(B, T, H)
