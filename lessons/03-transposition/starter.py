# Lesson 03 starter, generated from solutions/03-transposition/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 03   (`make starters` rewrites it: keep a copy)
"""Lesson 03 · Transposition and strides.

Lesson 02 copied a flat run of memory. A 2D tensor is a view: element ``(i, j)`` sits at
``i * stride[0] + j * stride[1]``, and a transposed or sliced tensor is the same memory read with other
strides. This lesson's copy takes any strides. Its offsets come from one ``gl.arange`` per axis (each in a
``SliceLayout`` of the 2D layout) combined by broadcasting, and the layout itself is chosen from the input's
strides: the lanes of a warp must walk the axis whose stride is 1, or every lane reads its own sector.
"""
from dataclasses import dataclass

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from gluon_course.validate import require_2d_pair
from gluon_course.memory.strides import layout_along, unit_stride_axis

# CUDA's grid limits: axis 0 takes up to 2**31 - 1 programs, axes 1 and 2 only 65535 each.
GRID_LIMITS = (2**31 - 1, 65_535, 65_535)


@gluon.jit
def copy_2d_kernel(in_ptr, out_ptr, M, N, in_stride_m, in_stride_n, out_stride_m, out_stride_n,
                   BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, layout: gl.constexpr,
                   AXIS0_TILES_FIRST: gl.constexpr):
    # The grid is flat: one axis of programs, unfolded here into a tile (tile_m, tile_n). A 2D grid would
    # hit the 65535-program limit of grid axis 1 on a tall tensor; axis 0 takes 2**31 - 1.
    pid = gl.program_id(0)
    # TODO gap 1: unfold pid into (tile_m, tile_n); consecutive programs take neighbouring tiles along axis 0 if AXIS0_TILES_FIRST, else along axis 1
    gl.static_assert(False, 'lesson 03, gap 1 not yet implemented: unfold pid into (tile_m, tile_n); consecutive programs take neighbouring tiles along axis 0 if AXIS0_TILES_FIRST, else along axis 1')
    # TODO gap 2: row and column indices (one gl.arange per axis, in SliceLayouts of `layout`), broadcast to 2D offsets for the input and the output, a mask on both axes, load, store
    gl.static_assert(False, 'lesson 03, gap 2 not yet implemented: row and column indices (one gl.arange per axis, in SliceLayouts of `layout`), broadcast to 2D offsets for the input and the output, a mask on both axes, load, store')


@dataclass(frozen=True)
class CopyPlan:
    """Everything the launch needs besides the tensors: chosen on the host from shape and strides."""
    fast_axis: int              # the axis the lanes walk along
    layout: gl.BlockedLayout
    block: tuple[int, int]      # (BLOCK_M, BLOCK_N)
    axis0_tiles_first: bool     # consecutive programs take neighbouring tiles along axis 0
    grid: tuple[int, ...]
    num_warps: int


def plan_copy(shape, in_strides, *, R: int = 4, num_warps: int = 4, block_fast: int | None = None, rows: int = 1,
              warp_size: int = 32, fast_axis: int | None = None, tiles_first: int | None = None) -> CopyPlan:
    """Choose the layout, the tile and the program order for copying a tensor of ``shape`` and ``in_strides``.

    ``fast_axis`` (default: the input's unit-stride axis) is the axis the lanes walk: each thread owns R
    consecutive elements of it. A tile is ``block_fast`` elements along it (default: 16 per thread) by ``rows``
    along the other axis. ``tiles_first`` (default: the fast axis) is the axis along which consecutive programs
    take neighbouring tiles. Pass ``fast_axis``/``tiles_first`` only to reproduce a deliberate mistake.
    """
    M, N = (int(s) for s in shape)
    per_pass = R * warp_size * num_warps
    block_fast = 16 * warp_size * num_warps if block_fast is None else block_fast
    if block_fast % per_pass:
        raise ValueError(f"block_fast={block_fast} is not a multiple of the {per_pass} elements one pass of the "
                         f"layout covers (R={R} × {warp_size} lanes × {num_warps} warps)")
    if rows < 1 or rows & (rows - 1):
        raise ValueError(f"rows={rows}: a tile's extent along an axis must be a power of two")
    # TODO gap 3: pick the fast axis from the strides (gluon_course.memory.strides.unit_stride_axis), the layout along it (layout_along), the tile (block_fast along the fast axis, rows along the other) and the program order
    raise NotImplementedError('lesson 03, gap 3 not yet implemented: pick the fast axis from the strides (gluon_course.memory.strides.unit_stride_axis), the layout along it (layout_along), the tile (block_fast along the fast axis, rows along the other) and the program order')
    grid = (triton.cdiv(M, block[0]) * triton.cdiv(N, block[1]),)
    return CopyPlan(fast, layout, block, axis0_tiles_first, grid, num_warps)


def require_grid_fits(grid) -> None:
    """Refuse, before CUDA does, a grid that the GPU cannot launch (CUDA would only say 'invalid argument')."""
    for axis, (programs, limit) in enumerate(zip(grid, GRID_LIMITS)):
        if programs > limit:
            raise ValueError(
                f"grid {tuple(grid)} has {programs} programs on axis {axis}, but CUDA launches at most {limit} "
                f"there (axis 0: 2**31 - 1; axes 1 and 2: 65535). Fold the tiles onto axis 0 (a flat grid, as "
                "plan_copy does, unfolded with // and % in the kernel), or let each program loop over several tiles")
    if len(grid) > 3:
        raise ValueError(f"grid {tuple(grid)} has {len(grid)} axes; a GPU grid has at most 3")


def launch_plan(plan: CopyPlan, x, out):
    """Launch ``copy_2d_kernel`` as ``plan`` says; the grid is checked against the GPU's limits first."""
    require_grid_fits(plan.grid)
    M, N = x.shape
    copy_2d_kernel[plan.grid](x, out, M, N, x.stride(0), x.stride(1), out.stride(0), out.stride(1),
                              BLOCK_M=plan.block[0], BLOCK_N=plan.block[1], layout=plan.layout,
                              AXIS0_TILES_FIRST=plan.axis0_tiles_first, num_warps=plan.num_warps)
    return out


def copy_2d(x, out, *, R: int = 4, num_warps: int = 4, block_fast: int | None = None, rows: int = 1,
            fast_axis: int | None = None, tiles_first: int | None = None):
    """Copy the 2D tensor ``x`` into ``out`` (same shape and dtype; any strides), with a layout chosen from
    ``x``'s strides. Keyword arguments as in ``plan_copy``."""
    require_2d_pair(x, out)
    if x.numel() == 0:
        return out
    warp_size = 64 if torch.version.hip else 32
    plan = plan_copy(tuple(x.shape), tuple(x.stride()), R=R, num_warps=num_warps, block_fast=block_fast, rows=rows,
                     warp_size=warp_size, fast_axis=fast_axis, tiles_first=tiles_first)
    return launch_plan(plan, x, out)
