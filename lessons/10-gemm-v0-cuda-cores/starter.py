# Lesson 10 starter, generated from solutions/10-gemm-v0-cuda-cores/solution.py: do not edit the course copy.
# Fill in each "TODO gap" below, then run:  python -m gluon_course check 10 --file <this file>
"""Lesson 10 · GEMM v0: CUDA cores.

What this lesson teaches, in two or three sentences: the one new idea, and what it changes in the machine
code and in the measured figure.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def gemm_v0_cuda_cores_kernel(in_ptr, out_ptr, numel, XBLOCK: gl.constexpr, layout: gl.constexpr):
    pid = gl.program_id(0)
    # TODO gap 1: the one idea of this lesson, in one sentence (the starter shows this line as its gap)
    gl.static_assert(False, 'lesson 10, gap 1 not yet implemented: the one idea of this lesson, in one sentence (the starter shows this line as its gap)')
