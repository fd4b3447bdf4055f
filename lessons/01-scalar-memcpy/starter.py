# Lesson 01 starter, generated from solutions/01-scalar-memcpy/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 01   (`make starters` rewrites it: keep a copy)
"""Lesson 01 · A scalar memcpy.

The first Gluon kernel: every program (one thread block on the GPU) copies XBLOCK consecutive elements,
one element at a time. It is correct and simple, and it is slow on purpose: the lesson measures how slow
and reads the machine code to see why. Lesson 02 fixes it with a layout.
"""
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from gluon_course.validate import require_copy_pair


@gluon.jit
def scalar_copy_kernel(in_ptr, out_ptr, numel, XBLOCK: gl.constexpr):
    # Which block of XBLOCK elements is ours: program 0 copies [0, XBLOCK), program 1 the next XBLOCK, ...
    pid = gl.program_id(0)
    # TODO gap 1: copy elements [pid*XBLOCK, min(pid*XBLOCK + XBLOCK, numel)) one at a time
    gl.static_assert(False, 'lesson 01, gap 1 not yet implemented: copy elements [pid*XBLOCK, min(pid*XBLOCK + XBLOCK, numel)) one at a time')


def copy_grid(numel: int, XBLOCK: int) -> tuple[int]:
    """How many programs to launch so that every element has one: a 1-tuple, the grid's x axis."""
    # TODO gap 2: one program per XBLOCK elements, rounding up so the tail is covered
    raise NotImplementedError('lesson 01, gap 2 not yet implemented: one program per XBLOCK elements, rounding up so the tail is covered')


def scalar_copy(x, out, XBLOCK: int = 2048):
    """Copy ``x`` into ``out`` (same shape and dtype, contiguous CUDA tensors) with the scalar kernel."""
    require_copy_pair(x, out)
    scalar_copy_kernel[copy_grid(x.numel(), XBLOCK)](x, out, x.numel(), XBLOCK=XBLOCK)
    return out


# The same kernel, with XBLOCK chosen by measurement. triton.autotune works on Gluon kernels unchanged:
# on the first call for a given `numel` it times every config and keeps the fastest.
XBLOCK_CHOICES = [256, 512, 1024, 2048, 4096, 8192]
scalar_copy_autotuned_kernel = triton.autotune(
    configs=[triton.Config({"XBLOCK": xblock}) for xblock in XBLOCK_CHOICES],
    key=["numel"],
)(scalar_copy_kernel)


def scalar_copy_autotuned(x, out):
    """Copy with the autotuned kernel; afterwards ``best_xblock()`` says which XBLOCK won."""
    require_copy_pair(x, out)
    numel = x.numel()
    scalar_copy_autotuned_kernel[lambda meta: copy_grid(numel, meta["XBLOCK"])](x, out, numel)
    return out


def best_xblock() -> int:
    """The XBLOCK the autotuner chose last (it keeps one choice per `numel`)."""
    return scalar_copy_autotuned_kernel.best_config.kwargs["XBLOCK"]
