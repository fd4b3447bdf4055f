# Lesson 02 starter, generated from solutions/02-layouts/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 02   (`make starters` rewrites it: keep a copy)
"""Lesson 02 · Layouts.

Lesson 01 copied one element per loop iteration. Here every program loads a whole tile at once, and a
*layout* says which thread holds which element of it. For a 1D copy the layout has one knob that
matters, R = ``size_per_thread``: how many consecutive elements each thread owns, which decides how
wide each load instruction is (4, 8 or 16 bytes).
"""
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from gluon_course.validate import require_copy_pair


def tile_layout(R: int, num_warps: int, warp_size: int = 32) -> gl.BlockedLayout:
    """A 1D layout: each thread owns R consecutive elements, a warp's lanes sit side by side,
    then the warps follow one another. One pass covers R * warp_size * num_warps elements."""
    # TODO gap 1: build the BlockedLayout from R, warp_size and num_warps (a 1D layout has order [0])
    raise NotImplementedError('lesson 02, gap 1 not yet implemented: build the BlockedLayout from R, warp_size and num_warps (a 1D layout has order [0])')


@gluon.jit
def tile_copy_kernel(in_ptr, out_ptr, numel, XBLOCK: gl.constexpr, layout: gl.constexpr):
    pid = gl.program_id(0)
    # TODO gap 2: offsets of this program's XBLOCK elements (in `layout`), a mask for the tail, load, store
    gl.static_assert(False, "lesson 02, gap 2 not yet implemented: offsets of this program's XBLOCK elements (in `layout`), a mask for the tail, load, store")


def tile_copy(x, out, R: int = 4, XBLOCK: int = 2048, num_warps: int = 4):
    """Copy ``x`` into ``out`` (contiguous CUDA tensors of one shape and dtype) one tile per program."""
    require_copy_pair(x, out)
    layout = tile_layout(R, num_warps)
    covered = R * 32 * num_warps
    if XBLOCK % covered:
        raise ValueError(f"XBLOCK={XBLOCK} is not a multiple of the {covered} elements one pass of the layout covers "
                         f"(R={R} × 32 lanes × {num_warps} warps); a smaller XBLOCK would give several threads "
                         "the same element")
    grid = (triton.cdiv(x.numel(), XBLOCK),)
    tile_copy_kernel[grid](x, out, x.numel(), XBLOCK=XBLOCK, layout=layout, num_warps=num_warps)
    return out


# ---- reduction demo (notebook section) ----
# Not an exercise: the notebook compiles this kernel with each layout below and counts what gl.sum costs.
@gluon.jit
def row_sum_kernel(in_ptr, out_ptr, ROWS: gl.constexpr, COLS: gl.constexpr, layout: gl.constexpr):
    """out[i] = the sum of row i of a row-major ROWS x COLS tile, the tile held in ``layout``."""
    # Row and column indices in the two slices of the tile's layout, so that they broadcast into it.
    rows = gl.arange(0, ROWS, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, COLS, layout=gl.SliceLayout(0, layout))
    tile = gl.load(in_ptr + gl.expand_dims(rows, 1) * COLS + gl.expand_dims(cols, 0))
    # One sum per row. Where the additions happen (in a thread, between lanes, between warps) is decided
    # by where `layout` puts the 16 elements of a row, not by this line.
    gl.store(out_ptr + rows, gl.sum(tile, axis=1))


# A 128 x 16 tile with 4 warps, 16 values per thread in every case; only the place of a row changes.
ROW_SUM_SHAPE = (128, 16)
ROW_SUM_LAYOUTS = {
    "row in one thread": gl.BlockedLayout([1, 16], [32, 1], [4, 1], [1, 0]),
    "row across 4 lanes": gl.BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0]),
    "row across 4 warps": gl.BlockedLayout([1, 4], [32, 1], [1, 4], [1, 0]),
}
