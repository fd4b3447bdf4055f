# Lesson 04 starter, generated from solutions/04-inout-conversion/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 04   (`make starters` rewrites it: keep a copy)
"""Lesson 04 · In/out layout conversion.

Lesson 03 chose one layout per copy, following the input's strides. That fails when the input and the
output are contiguous along *different* axes, as in a transposing copy ``out = x.T`` made real: a layout
whose threads walk along the input's rows coalesces the load and scatters the store, and the mirror
layout does the opposite. Here the kernel loads the tile in one layout, hands it to another with
``gl.convert_layout`` (a round trip through shared memory), and stores it in the second layout.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from gluon_course.validate import require_2d_pair, require_power_of_two
from gluon_course.memory.layouts import block_shape


def contiguous_along(dim: int, BLOCK_M: int, BLOCK_N: int, R: int, num_warps: int,
                     warp_size: int = 32) -> gl.BlockedLayout:
    """A layout for a BLOCK_M × BLOCK_N tile whose threads walk along axis ``dim`` (0 or 1): each thread owns
    R consecutive elements of that axis, the lanes of a warp sit side by side along it (as many as fit in
    the tile), and the warps are stacked along the other axis."""
    # TODO gap 1: size_per_thread, threads_per_warp, warps_per_cta and order for threads that walk along `dim`
    raise NotImplementedError('lesson 04, gap 1 not yet implemented: size_per_thread, threads_per_warp, warps_per_cta and order for threads that walk along `dim`')


def copy_layouts(BLOCK_M: int, BLOCK_N: int, R: int, num_warps: int, warp_size: int = 32):
    """(load layout, store layout) for a row-major input and a column-major output."""
    load_layout = contiguous_along(1, BLOCK_M, BLOCK_N, R, num_warps, warp_size)    # x[i, j]: j is contiguous
    store_layout = contiguous_along(0, BLOCK_M, BLOCK_N, R, num_warps, warp_size)   # out[i, j]: i is contiguous
    return load_layout, store_layout


@gluon.jit
def inout_copy_kernel(in_ptr, out_ptr, M, N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                      load_layout: gl.constexpr, store_layout: gl.constexpr, GROUP_M: gl.constexpr):
    # A 1D grid (a 2D grid would stop at 65535 tiles on its y axis). Tiles are handed out in groups of GROUP_M
    # tile-rows: inside a group, neighbouring programs go down the rows, so their column-major stores land
    # side by side; with GROUP_M = 1 they go along N, so their row-major loads do (lesson 03's order).
    pid = gl.program_id(0)
    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * tiles_n)
    rows_in_group = gl.minimum(tiles_m - group * GROUP_M, GROUP_M)   # the last group may be shorter
    in_group = pid % (GROUP_M * tiles_n)
    first_row = (group * GROUP_M + in_group % rows_in_group) * BLOCK_M
    first_col = (in_group // rows_in_group) * BLOCK_N

    # Load: x is row-major (x[i, j] at i * N + j), and load_layout walks along j.
    in_rows = first_row + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, load_layout))
    in_cols = first_col + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, load_layout))
    in_rows = gl.expand_dims(in_rows, 1)
    in_cols = gl.expand_dims(in_cols, 0)
    tile = gl.load(in_ptr + in_rows * N + in_cols, mask=(in_rows < M) & (in_cols < N))

    # TODO gap 2: hand the tile to store_layout, then store it: out is column-major (out[i, j] at j * M + i)
    gl.static_assert(False, 'lesson 04, gap 2 not yet implemented: hand the tile to store_layout, then store it: out is column-major (out[i, j] at j * M + i)')


@gluon.jit
def free_conversion_probe_kernel(out_ptr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, from_layout: gl.constexpr,
                                 to_layout: gl.constexpr):
    """Compiles only if moving a tile from `from_layout` to `to_layout` is free (no data leaves its thread):
    assert_trivial=True turns a conversion that needs shared memory into a compile error."""
    rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, from_layout))
    cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, from_layout))
    tile = gl.expand_dims(rows, 1) * BLOCK_N + gl.expand_dims(cols, 0)
    tile = gl.convert_layout(tile, to_layout, assert_trivial=True)
    rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, to_layout))
    cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, to_layout))
    gl.store(out_ptr + gl.expand_dims(rows, 1) * BLOCK_N + gl.expand_dims(cols, 0), tile)


def _launch(x, out, BLOCK_M, BLOCK_N, load_layout, store_layout, num_warps, GROUP_M=1):
    M, N = require_2d_pair(x, out, x_layout="row-major", out_layout="column-major")
    require_power_of_two("BLOCK_M", BLOCK_M)
    require_power_of_two("BLOCK_N", BLOCK_N)
    for layout in (load_layout, store_layout):
        if any(covered > block for covered, block in zip(block_shape(layout), (BLOCK_M, BLOCK_N))):
            raise ValueError(f"one pass of {layout} covers {block_shape(layout)}, more than the {BLOCK_M} × {BLOCK_N} "
                             "tile: threads would hold copies of the same elements; use a bigger tile or fewer warps")
    if GROUP_M < 1:
        raise ValueError(f"GROUP_M={GROUP_M}: a group holds at least one tile-row")
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    inout_copy_kernel[grid](x, out, M, N, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, load_layout=load_layout,
                            store_layout=store_layout, GROUP_M=GROUP_M, num_warps=num_warps)
    return out


def inout_copy(x, out, BLOCK_M: int = 64, BLOCK_N: int = 64, R: int = 4, num_warps: int = 4, GROUP_M: int = 1):
    """out[i, j] = x[i, j] for a row-major ``x`` and a column-major ``out`` (both M × N): a transposing copy,
    loaded along x's rows and stored along out's columns, converted in between."""
    if R & (R - 1) or min(BLOCK_M, BLOCK_N) < R:
        raise ValueError(f"R={R} must be a power of two no larger than the {BLOCK_M} × {BLOCK_N} tile's sides")
    load_layout, store_layout = copy_layouts(BLOCK_M, BLOCK_N, R, num_warps)
    return _launch(x, out, BLOCK_M, BLOCK_N, load_layout, store_layout, num_warps, GROUP_M)


def single_layout_copy(x, out, dim: int, BLOCK_M: int = 64, BLOCK_N: int = 64, R: int = 4, num_warps: int = 4):
    """The same copy with ONE layout for both sides (threads walk along ``dim``): the conversion is then
    a no-op, and one of the two sides is scattered. For comparison only."""
    layout = contiguous_along(dim, BLOCK_M, BLOCK_N, R, num_warps)
    return _launch(x, out, BLOCK_M, BLOCK_N, layout, layout, num_warps)


def transpose(x, **tile):
    """``x.T`` made real: a new contiguous (N, M) tensor. Its .T view is the column-major M × N output."""
    out = torch.empty((x.shape[1], x.shape[0]), dtype=x.dtype, device=x.device)
    inout_copy(x, out.T, **tile)
    return out
