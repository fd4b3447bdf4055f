"""Strides decide the layout: which axis of a tensor is contiguous in memory, and a layout that follows it.

A 2D tensor's element ``(i, j)`` sits at ``i * stride[0] + j * stride[1]`` elements from its start. A warp
reads fast when its 32 lanes (64 on AMD) read neighbouring addresses, so the lanes must run along the axis
whose stride is 1. A row-major tensor has it on axis 1; its transpose ``x.T`` (the same memory) on axis 0.
Everything here is plain host code on shape and stride tuples: it runs, and is tested, without a GPU.

    >>> unit_stride_axis((4096, 8192), (8192, 1))
    1
    >>> unit_stride_axis((8192, 4096), (1, 8192))      # x.T of a contiguous (4096, 8192) tensor
    0
    >>> layout_for_strides((8192, 4096), (1, 8192), R=4)
    BlockedLayout(size_per_thread=[4, 1], threads_per_warp=[32, 1], warps_per_cta=[4, 1], order=[0, 1], ...)
"""
from __future__ import annotations

from triton.experimental.gluon import language as gl


class NoUnitStride(ValueError):
    """No axis of the tensor is contiguous in memory, so no layout can make a warp's loads coalesce."""


def _power_of_two(name: str, value: int, low: int = 1, high: int | None = None) -> None:
    if not isinstance(value, int) or value < low or value & (value - 1) or (high is not None and value > high):
        limit = f" between {low} and {high}" if high is not None else f" of at least {low}"
        raise ValueError(f"{name}={value!r}: a layout needs a power of two{limit}")


def unit_stride_axis(shape, strides) -> int:
    """The axis along which neighbouring elements are neighbours in memory (its stride is 1).

    Axes of size 1 do not count: their stride is never used, and PyTorch may report anything there. When
    several axes qualify (a tensor of one element) the last one wins, as for a row-major tensor. A tensor
    with no such axis (every other column, say) gets a ``NoUnitStride`` error that says what to do.
    """
    shape, strides = tuple(int(s) for s in shape), tuple(int(s) for s in strides)
    if len(shape) != len(strides):
        raise ValueError(f"shape {shape} has {len(shape)} axes but strides {strides} has {len(strides)}")
    if not shape:
        raise ValueError("a tensor with no axes (a scalar) has no layout to choose")
    candidates = [axis for axis, (size, stride) in enumerate(zip(shape, strides)) if size > 1 and stride == 1]
    if candidates:
        return candidates[-1]
    if all(size <= 1 for size in shape):
        return len(shape) - 1
    raise NoUnitStride(
        f"no axis of this tensor has stride 1 (shape {shape}, strides {strides}): whatever the layout, the lanes "
        "of a warp would read scattered addresses. Copy it with .contiguous() first, or pick the axis yourself "
        "(the launchers take fast_axis=) and accept uncoalesced loads")


def layout_along(axis: int, rank: int = 2, R: int = 1, num_warps: int = 4, warp_size: int = 32) -> gl.BlockedLayout:
    """A BlockedLayout whose registers, lanes and warps all run along ``axis``.

    Each thread owns ``R`` consecutive elements of that axis, the lanes of a warp sit side by side after one
    another, then the warps follow. One pass covers ``R * warp_size * num_warps`` elements of ``axis`` and 1
    of every other axis; a larger tile repeats the pattern in more registers.
    """
    if rank not in (1, 2):
        raise ValueError(f"rank {rank}: the course's copies are 1D or 2D")
    if axis not in range(rank):
        raise ValueError(f"axis {axis} does not exist in a {rank}D tensor")
    _power_of_two("R", R, 1, 16)
    _power_of_two("num_warps", num_warps, 1, 32)
    if warp_size not in (32, 64):
        raise ValueError(f"warp_size={warp_size}: NVIDIA warps have 32 lanes, AMD CDNA wavefronts 64")

    def along(n: int) -> list[int]:
        return [n if a == axis else 1 for a in range(rank)]

    order = [axis] + [a for a in reversed(range(rank)) if a != axis]
    return gl.BlockedLayout(size_per_thread=along(R), threads_per_warp=along(warp_size),
                            warps_per_cta=along(num_warps), order=order)


def layout_for_strides(shape, strides, R: int = 1, num_warps: int = 4, warp_size: int = 32) -> gl.BlockedLayout:
    """The layout that coalesces a warp's loads for a tensor with these strides (see ``unit_stride_axis``)."""
    return layout_along(unit_stride_axis(shape, strides), len(tuple(shape)), R, num_warps, warp_size)
