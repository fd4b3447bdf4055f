# Lesson 05 starter, generated from solutions/05-linear-layouts/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 05   (`make starters` rewrites it: keep a copy)
"""Lesson 05 · Linear layouts.

Every layout of lessons 02-04 is, underneath, a *linear layout*: a short list of basis vectors, one for
each bit of a thread's register index, lane index and warp index. The element a thread holds is the XOR
of the bases whose bits are set. Seen that way, two layouts are equal when their bases are equal, a
reshape, permute, join or split only relabels the bases (it moves no data), and a shared-memory layout is
one more list of bases, from a byte offset to an element, that we can choose so that a warp's 32 lanes
land in 32 different banks.

This file holds the kernels of the lesson:

* ``same_layout_1d_kernel`` / ``same_layout_2d_kernel``: compile only when converting between two layouts
  keeps every element in its lane and warp (``convert_layout(..., assert_trivial=True)``): the conversion is
  free, which is weaker than the layouts being equal (equal layouts have equal bases);
* ``interleave_kernel`` / ``deinterleave_kernel``: ``gl.join`` + ``gl.reshape`` and ``gl.reshape`` +
  ``gl.split``, free in the layout the compiler infers;
* ``permute_transpose_kernel``: ``gl.permute`` on a tile, free, and what that does *not* buy;
* ``smem_transpose_kernel``: a transpose staged through shared memory, with a plain or a swizzled
  shared layout.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from gluon_course.validate import require_2d_pair, require_interleaved
from gluon_course.memory.layouts import to_linear

# -- 1. Layouts as bases ---------------------------------------------------------------------------


def vector_row_layout(tile: int, num_warps: int, warp_size: int = 32) -> gl.DistributedLinearLayout:
    """A [tile, tile] layout, written as bases: each thread holds 4 consecutive elements of a row (one
    16-byte vector of float32), 8 lanes cover 32 consecutive columns (128 bytes), the remaining lane bits
    and then the warps step down the rows, and the registers repeat that pattern over the rest of the tile
    (first along the columns, then along the rows).

    It is the same layout as ``gl.BlockedLayout([1, 4], [warp_size // 8, 8], [num_warps, 1], [1, 0])``
    on a [tile, tile] tensor; writing it by hand shows what each of those numbers means."""
    if tile < 32 or tile & (tile - 1):
        raise ValueError(f"tile must be a power of two of at least 32 (8 lanes × 4 columns), got {tile}")
    rows_per_pass = warp_size // 8 * num_warps
    if rows_per_pass > tile:
        raise ValueError(f"{num_warps} warps of {warp_size} lanes cover {rows_per_pass} rows per pass, more than "
                         f"the tile's {tile}: use a bigger tile or fewer warps")
    # TODO gap 1: list the bases (register, lane, warp) of the layout described above, [row, column] each
    raise NotImplementedError('lesson 05, gap 1 not yet implemented: list the bases (register, lane, warp) of the layout described above, [row, column] each')
    return gl.DistributedLinearLayout(reg_bases=registers, lane_bases=lanes, warp_bases=warps, block_bases=[],
                                      shape=[tile, tile])


def transposed(layout, shape=None) -> gl.DistributedLinearLayout:
    """The same hardware-to-element map with the two coordinates swapped in every basis (``shape`` is needed
    for a layout that is not already a ``DistributedLinearLayout``).

    This is what ``gl.permute(x, [1, 0])`` does to a 2D tensor's layout: the thread that held x[i, j]
    now holds xᵀ[j, i], so the bases only trade places. Read as a layout of the *un-permuted* tile, the
    same bases say: where a lane used to walk along the row, it now walks down the column."""
    linear = to_linear(layout, shape) if shape is not None else layout
    if not isinstance(linear, gl.DistributedLinearLayout) or len(linear.shape) != 2:
        raise ValueError("transposed() takes a 2D DistributedLinearLayout, or any 2D layout with its shape")
    swap = lambda bases: [[b[1], b[0]] for b in bases]  # noqa: E731
    return gl.DistributedLinearLayout(reg_bases=swap(linear.reg_bases), lane_bases=swap(linear.lane_bases),
                                      warp_bases=swap(linear.warp_bases), block_bases=[],
                                      shape=[linear.shape[1], linear.shape[0]])


@gluon.jit
def same_layout_1d_kernel(out_ptr, N: gl.constexpr, src: gl.constexpr, dst: gl.constexpr):
    """Compiles only if converting from ``src`` to ``dst`` keeps every element in the same lane of the same
    warp: ``assert_trivial=True`` turns a conversion that would move data between threads into a compile
    error. The register that holds an element may change (``src`` and ``dst`` may differ in the order of
    their register bases), so this proves the conversion free, not the two layouts equal: compare their
    bases for that."""
    offsets = gl.arange(0, N, layout=src)
    moved = gl.convert_layout(offsets, dst, assert_trivial=True)
    gl.store(out_ptr + moved, moved)


@gluon.jit
def same_layout_2d_kernel(out_ptr, ROWS: gl.constexpr, COLS: gl.constexpr, src: gl.constexpr, dst: gl.constexpr):
    """The 2D version: element (i, j) of a [ROWS, COLS] tile, built in ``src``, must already sit in the lane
    and warp that ``dst`` gives it (in any of that thread's registers)."""
    i = gl.arange(0, ROWS, layout=gl.SliceLayout(1, src))
    j = gl.arange(0, COLS, layout=gl.SliceLayout(0, src))
    offsets = i[:, None] * COLS + j[None, :]
    moved = gl.convert_layout(offsets, dst, assert_trivial=True)
    gl.store(out_ptr + moved, moved)


# -- 2. Free reshapes: join, reshape, split, permute ------------------------------------------------


@gluon.jit
def interleave_kernel(a_ptr, b_ptr, out_ptr, numel, XBLOCK: gl.constexpr, layout: gl.constexpr,
                      out_layout: gl.constexpr):
    """out[2k] = a[k], out[2k + 1] = b[k]. With ``out_layout`` None the result is stored in the layout the
    compiler infers for join + reshape (free); otherwise it is converted to ``out_layout`` first."""
    pid = gl.program_id(0)
    offsets = pid * XBLOCK + gl.arange(0, XBLOCK, layout=layout)
    mask = offsets < numel
    a = gl.load(a_ptr + offsets, mask=mask)
    b = gl.load(b_ptr + offsets, mask=mask)
    # TODO gap 2: join a and b into [XBLOCK, 2] pairs, then reshape the pairs into 2 * XBLOCK values
    gl.static_assert(False, 'lesson 05, gap 2 not yet implemented: join a and b into [XBLOCK, 2] pairs, then reshape the pairs into 2 * XBLOCK values')
    if out_layout is not None:
        # Asking for another layout than the inferred one is a real data movement (shared memory or shuffles).
        flat = gl.convert_layout(flat, out_layout)
    out_offsets = 2 * pid * XBLOCK + gl.arange(0, 2 * XBLOCK, layout=flat.type.layout)
    gl.store(out_ptr + out_offsets, flat, mask=out_offsets < 2 * numel)


@gluon.jit
def deinterleave_kernel(x_ptr, a_ptr, b_ptr, numel, XBLOCK: gl.constexpr, layout: gl.constexpr,
                        pair_layout: gl.constexpr):
    """a[k] = x[2k], b[k] = x[2k + 1]: the inverse of interleave. ``split`` needs both halves of a pair in one
    thread's registers; with a ``layout`` of one element per thread, ``pair_layout`` must move them there."""
    pid = gl.program_id(0)
    offsets = 2 * pid * XBLOCK + gl.arange(0, 2 * XBLOCK, layout=layout)
    x = gl.load(x_ptr + offsets, mask=offsets < 2 * numel)
    pairs = gl.reshape(x, [XBLOCK, 2])
    if pair_layout is not None:
        pairs = gl.convert_layout(pairs, pair_layout)
    a, b = gl.split(pairs)
    out_offsets = pid * XBLOCK + gl.arange(0, XBLOCK, layout=a.type.layout)
    out_mask = out_offsets < numel
    gl.store(a_ptr + out_offsets, a, mask=out_mask)
    gl.store(b_ptr + out_offsets, b, mask=out_mask)


@gluon.jit
def permute_transpose_kernel(in_ptr, out_ptr, M, N, stride_in, stride_out, TILE: gl.constexpr,
                             row_layout: gl.constexpr, permuted_layout: gl.constexpr):
    """out[i, j] = in[i, j] with ``in`` row-major and ``out`` column-major, by permuting a tile in registers.

    The permute is free (``assert_trivial`` proves that converting its result to ``permuted_layout`` keeps
    every element in its thread), but it moves no data:
    the lanes that walked along a row of ``in`` now walk along a row of ``out``, which is strided."""
    pid = gl.program_id(0)
    tiles_n = gl.cdiv(N, TILE)
    i0 = (pid // tiles_n) * TILE
    j0 = (pid % tiles_n) * TILE
    i = i0 + gl.arange(0, TILE, layout=gl.SliceLayout(1, row_layout))
    j = j0 + gl.arange(0, TILE, layout=gl.SliceLayout(0, row_layout))
    tile = gl.load(in_ptr + i[:, None] * stride_in + j[None, :], mask=(i[:, None] < M) & (j[None, :] < N))
    flipped = gl.convert_layout(gl.permute(tile, [1, 0]), permuted_layout, assert_trivial=True)  # [j, i]
    j = j0 + gl.arange(0, TILE, layout=gl.SliceLayout(1, permuted_layout))
    i = i0 + gl.arange(0, TILE, layout=gl.SliceLayout(0, permuted_layout))
    gl.store(out_ptr + j[:, None] * stride_out + i[None, :], flipped, mask=(j[:, None] < N) & (i[None, :] < M))


# -- 3. Shared-memory layouts: a transpose staged through shared memory ------------------------------


@gluon.jit
def smem_transpose_kernel(in_ptr, out_ptr, M, N, stride_in, stride_out, TILE: gl.constexpr,
                          row_layout: gl.constexpr, column_layout: gl.constexpr, shared_layout: gl.constexpr):
    """out[i, j] = in[i, j] with ``in`` row-major (element at i * stride_in + j) and ``out`` column-major
    (element at i + j * stride_out): a transpose of the storage, one TILE × TILE tile per program.

    Global reads are coalesced in ``row_layout`` (lanes along j), global writes in ``column_layout`` (lanes
    along i); the tile changes hands through shared memory, stored in ``shared_layout``."""
    pid = gl.program_id(0)
    tiles_n = gl.cdiv(N, TILE)
    i0 = (pid // tiles_n) * TILE
    j0 = (pid % tiles_n) * TILE
    i = i0 + gl.arange(0, TILE, layout=gl.SliceLayout(1, row_layout))
    j = j0 + gl.arange(0, TILE, layout=gl.SliceLayout(0, row_layout))
    tile = gl.load(in_ptr + i[:, None] * stride_in + j[None, :], mask=(i[:, None] < M) & (j[None, :] < N))
    # TODO gap 3: write the tile to shared memory (in shared_layout) and read it back in column_layout
    gl.static_assert(False, 'lesson 05, gap 3 not yet implemented: write the tile to shared memory (in shared_layout) and read it back in column_layout')
    i = i0 + gl.arange(0, TILE, layout=gl.SliceLayout(1, column_layout))
    j = j0 + gl.arange(0, TILE, layout=gl.SliceLayout(0, column_layout))
    gl.store(out_ptr + i[:, None] + j[None, :] * stride_out, tile, mask=(i[:, None] < M) & (j[None, :] < N))


PLAIN = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
# Scalar accesses: column c of row r is stored at column c ^ (r % 32), so a warp reading 32 rows of one
# column touches 32 different banks.
SCALAR_SWIZZLE = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=32, order=[1, 0])
# 16-byte vectors: groups of 4 columns stay together (vec=4) and the group index is XORed with
# (r // 4) % 8, the row bits that the lanes of the column layout walk.
VECTOR_SWIZZLE = gl.SwizzledSharedLayout(vec=4, per_phase=4, max_phase=8, order=[1, 0])

TRANSPOSES = ("scalar_plain", "scalar_swizzled", "vector_plain", "vector_swizzled")


def transpose_layouts(config: str, tile: int = 64, num_warps: int = 4, warp_size: int = 32):
    """(row_layout, column_layout, shared_layout) of one transpose configuration.

    ``scalar``: one element per thread and access, a warp's lanes along a whole row (then a whole column).
    ``vector``: four consecutive elements per thread (16-byte global accesses), ``vector_row_layout``.
    ``plain``: shared memory row by row; ``swizzled``: the XOR pattern that suits the access."""
    if config not in TRANSPOSES:
        raise ValueError(f"unknown transpose {config!r}; choose one of {', '.join(TRANSPOSES)}")
    access, shared = config.split("_")
    if access == "scalar":
        if warp_size > tile:
            raise ValueError(f"a scalar row layout puts {warp_size} lanes along a row: tile must be ≥ {warp_size}")
        row = gl.BlockedLayout([1, 1], [1, warp_size], [num_warps, 1], [1, 0])
        column = gl.BlockedLayout([1, 1], [warp_size, 1], [1, num_warps], [0, 1])
        swizzle = SCALAR_SWIZZLE
    else:
        row = vector_row_layout(tile, num_warps, warp_size)
        column = transposed(row)
        swizzle = VECTOR_SWIZZLE
    return row, column, (PLAIN if shared == "plain" else swizzle)


def _device_warp_size() -> int:
    return 64 if torch.version.hip is not None else 32


def transpose_copy(x, out, config: str = "vector_swizzled", TILE: int = 64, num_warps: int = 4):
    """Copy ``x`` (rows contiguous) into ``out`` (columns contiguous, e.g. ``torch.empty(N, M).t()``) through
    shared memory, with one of ``TRANSPOSES`` as the layouts."""
    M, N = require_2d_pair(x, out, x_layout="contiguous rows", out_layout="contiguous columns")
    row, column, shared = transpose_layouts(config, TILE, num_warps, _device_warp_size())
    grid = (triton.cdiv(M, TILE) * triton.cdiv(N, TILE),)
    smem_transpose_kernel[grid](x, out, M, N, x.stride(0), out.stride(1), TILE=TILE, row_layout=row,
                                column_layout=column, shared_layout=shared, num_warps=num_warps)
    return out


def permute_copy(x, out, TILE: int = 64, num_warps: int = 4):
    """The same copy as ``transpose_copy``, with ``gl.permute`` in registers instead of shared memory: each
    warp loads along a row of ``x`` (coalesced) and, since the permute moves nothing, stores along a row
    of ``out``'s storage too, 32 lanes into 32 different columns."""
    M, N = require_2d_pair(x, out, x_layout="contiguous rows", out_layout="contiguous columns")
    row, _, _ = transpose_layouts("scalar_plain", TILE, num_warps, _device_warp_size())
    grid = (triton.cdiv(M, TILE) * triton.cdiv(N, TILE),)
    permute_transpose_kernel[grid](x, out, M, N, x.stride(0), out.stride(1), TILE=TILE, row_layout=row,
                                   permuted_layout=transposed(row, [TILE, TILE]), num_warps=num_warps)
    return out


def _pair_block(R: int, num_warps: int, XBLOCK: int, warp_size: int) -> gl.BlockedLayout:
    layout = gl.BlockedLayout([R], [warp_size], [num_warps], [0])
    if XBLOCK % (R * warp_size * num_warps):
        raise ValueError(f"XBLOCK={XBLOCK} must be a multiple of R × {warp_size} lanes × {num_warps} warps "
                         f"= {R * warp_size * num_warps}")
    return layout


def interleave(a, b, out, R: int = 4, XBLOCK: int = 1024, num_warps: int = 4, out_R: int | None = None):
    """out = [a0, b0, a1, b1, ...]. ``out_R`` None stores in the layout join + reshape infer (free); an
    integer asks for ``BlockedLayout([out_R])`` instead, which costs a conversion."""
    require_interleaved(out, a, b)
    warp_size = _device_warp_size()
    layout = _pair_block(R, num_warps, XBLOCK, warp_size)
    out_layout = None if out_R is None else gl.BlockedLayout([out_R], [warp_size], [num_warps], [0])
    grid = (triton.cdiv(a.numel(), XBLOCK),)
    interleave_kernel[grid](a, b, out, a.numel(), XBLOCK=XBLOCK, layout=layout, out_layout=out_layout,
                            num_warps=num_warps)
    return out


def deinterleave(x, a, b, R: int = 4, XBLOCK: int = 1024, num_warps: int = 4):
    """a = x[0::2], b = x[1::2]. With R = 1 a pair straddles two lanes, so it is first converted to a layout
    that keeps each pair in one thread (not free); with R ≥ 2 the split is free."""
    require_interleaved(x, a, b, whole_name="x")
    warp_size = _device_warp_size()
    layout = _pair_block(R, num_warps, 2 * XBLOCK, warp_size)
    pair_layout = None if R > 1 else gl.BlockedLayout([1, 2], [warp_size, 1], [num_warps, 1], [1, 0])
    grid = (triton.cdiv(a.numel(), XBLOCK),)
    deinterleave_kernel[grid](x, a, b, a.numel(), XBLOCK=XBLOCK, layout=layout, pair_layout=pair_layout,
                              num_warps=num_warps)
    return a, b
