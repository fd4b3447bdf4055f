"""The AMD lessons' layouts (20 on): the MFMA instruction of each target and its accumulator and operand layouts, the
copy layouts of the tiles, the LDS layouts (plain, swizzled, padded) and the direct-to-LDS copy layouts that write them.

The problem of every AMD lesson: C = A·B with A (M×K) row-major, B (K×N) **K-contiguous** (column-major: ``b.stride(0)
== 1``, i.e. ``b = w.T`` for a row-major N×K ``w``, the way ``torch.nn.Linear`` stores its weight), C (M×N) row-major,
fp16 or bf16 in, fp32 accumulated, C in the input dtype. With K contiguous in both operands, every lane of an MFMA
operand holds consecutive K elements of one row of A or one column of B, and those are consecutive bytes in memory:
16-byte loads and ``ds_read_b128`` for both operands, no transposition anywhere.
"""
from __future__ import annotations

from dataclasses import dataclass


# The MFMA instruction of each target for fp16/bf16 with fp32 accumulation, and the layout that goes with it.
#   gfx950 (CDNA4): v_mfma_f32_16x16x32_{f16,bf16}: 16×16 outputs, K = 32 per instruction, 8 K elements per lane
#   gfx942 (CDNA3): v_mfma_f32_16x16x16_{f16,bf16}: K = 16, 4 K elements per lane
# AMDMFMALayout's version is the CDNA generation the instruction belongs to (Triton's _layouts.py: 3 = gfx942,
# 4 = gfx950); k_width is how many consecutive K elements each lane holds for one instruction.


@dataclass(frozen=True)
class Mfma:
    target: str
    version: int
    instr_shape: tuple[int, int, int]
    k_width: int

    def opcode(self, dtype: str) -> str:
        """The instruction's name in the listing: ``v_mfma_f32_16x16x32_f16``, ``v_mfma_f32_16x16x16_bf16``."""
        if dtype not in ("fp16", "bf16"):
            raise ValueError(f"dtype is 'fp16' or 'bf16', not {dtype!r}")
        m, n, k = self.instr_shape
        return f"v_mfma_f32_{m}x{n}x{k}_{'f16' if dtype == 'fp16' else 'bf16'}"


MFMA = {"gfx950": Mfma("gfx950", 4, (16, 16, 32), 8), "gfx942": Mfma("gfx942", 3, (16, 16, 16), 4)}
# The widest vector one lane of a direct-to-LDS copy (buffer_load ... lds) moves: 16 bytes on gfx950, 4 on gfx942.
# Triton 3.9.0 says so when it lowers amdg.buffer_load_to_local for gfx942 with 16 bytes per lane ("the coalesced
# 128-bit direct-to-LDS transaction width is not supported on this target"), and compiles 4 (buffer_load_dword ... lds).
DIRECT_COPY_BYTES = {"gfx950": 16, "gfx942": 4}
WARP_SIZE = 64          # lanes per wavefront on CDNA
GL_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}


def mfma_layouts(target: str = "gfx950", warps: tuple[int, int] = (2, 2)):
    """(accumulator, A operand, B operand) layouts of the target's 16×16 MFMA over ``warps`` (along M, along N).

    ``transposed=True`` gives each lane of the accumulator consecutive elements along N (a row of C), which is what
    the store of C wants."""
    from triton.experimental.gluon import language as gl

    if target not in MFMA:
        raise ValueError(f"no MFMA layout for {target!r}; the AMD lessons compile for {', '.join(MFMA)}")
    m = MFMA[target]
    acc = gl.amd.AMDMFMALayout(version=m.version, instr_shape=list(m.instr_shape), transposed=True,
                               warps_per_cta=list(warps))
    return (acc, gl.DotOperandLayout(operand_index=0, parent=acc, k_width=m.k_width),
            gl.DotOperandLayout(operand_index=1, parent=acc, k_width=m.k_width))


def tile_copy_layouts(BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, num_warps: int, element_bytes: int = 2,
                      vector_bytes: int = 16):
    """Coalesced layouts for one tile of A (BLOCK_M × BLOCK_K, K fastest) and one of B (BLOCK_K × BLOCK_N, K fastest
    too: B is K-contiguous). Each lane moves one vector of ``vector_bytes`` along K (16; 4 for gfx942's direct-to-LDS
    copies); the lanes of a wave cover whole vectors' columns of K first, then rows; the waves stack along M (A) or N
    (B)."""
    from triton.experimental.gluon import language as gl

    vector = vector_bytes // element_bytes
    lanes_along_k = min(WARP_SIZE, BLOCK_K // vector)
    a = gl.BlockedLayout(size_per_thread=[1, vector], threads_per_warp=[WARP_SIZE // lanes_along_k, lanes_along_k],
                         warps_per_cta=[num_warps, 1], order=[1, 0])
    b = gl.BlockedLayout(size_per_thread=[vector, 1], threads_per_warp=[lanes_along_k, WARP_SIZE // lanes_along_k],
                         warps_per_cta=[1, num_warps], order=[0, 1])
    return a, b


def lds_layouts(kind: str = "plain"):
    """(A's, B's) LDS layout for 256 × 64 / 64 × 256 tiles with K fastest: ``"plain"`` (row after row, no
    swizzle) or ``"swizzled"`` (Triton's XOR swizzle: vectors of 8, 2 rows per phase, up to 8 phases)."""
    from triton.experimental.gluon import language as gl

    if kind == "plain":
        return gl.SwizzledSharedLayout(1, 1, 1, order=[1, 0]), gl.SwizzledSharedLayout(1, 1, 1, order=[0, 1])
    if kind == "swizzled":
        return gl.SwizzledSharedLayout(8, 2, 8, order=[1, 0]), gl.SwizzledSharedLayout(8, 2, 8, order=[0, 1])
    raise ValueError(f"kind is 'plain' or 'swizzled', not {kind!r}")


def padded_gemm_layouts(target: str = "gfx950", a_shape=(256, 64), b_shape=(64, 256), num_warps: int = 4,
                        warps: tuple[int, int] = (2, 2)) -> dict:
    """The layout constexprs of the padded-LDS kernels (lessons 24 on), for operand pieces of ``a_shape`` (rows of A
    × BLOCK_K) and ``b_shape`` (BLOCK_K × columns of B): the MFMA layouts, lesson 23's padded LDS layouts
    (``compute_efficient_padded_shared_layout``) and the direct-to-LDS copy layouts that write them one run at a time.
    A sliced kernel (lessons 27-29) passes the shape of one slice, a half of A or of B.

    The keys are the kernels' constexpr names: ``acc_layout, a_layout, b_layout, a_copy, b_copy, a_shared,
    b_shared``."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.amd import cdna4

    from ..memory.lds import direct_copy_layout

    acc_layout, a_layout, b_layout = mfma_layouts(target, warps)
    a_shared = cdna4.compute_efficient_padded_shared_layout(a_layout, list(a_shape), gl.float16)
    b_shared = cdna4.compute_efficient_padded_shared_layout(b_layout, list(b_shape), gl.float16)
    if a_shared is None or b_shared is None:
        raise ValueError(f"Triton has no padded LDS layout for pieces {list(a_shape)} of A and {list(b_shape)} of B "
                         "with this MFMA; use the lessons' 256 × 256 × 64 tile")
    return {"acc_layout": acc_layout, "a_layout": a_layout, "b_layout": b_layout,
            "a_copy": direct_copy_layout(a_shared, list(a_shape), 8, WARP_SIZE, num_warps),
            "b_copy": direct_copy_layout(b_shared, list(b_shape), 8, WARP_SIZE, num_warps),
            "a_shared": a_shared, "b_shared": b_shared}
