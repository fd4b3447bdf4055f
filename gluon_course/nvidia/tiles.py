"""Device helpers the Hopper GEMM kernels share (``@gluon.jit`` functions a kernel calls).

- ``grouped_tile``: lesson 17's grouped order of C's tiles (lesson 17 writes it as its exercise; lessons 18 and 19
  keep their own copy), for the kernels written after the GEMM series (lesson 32).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    """(pid_m, pid_n) of tile number ``tile`` in lesson 17's grouped order: GROUP_M rows of tiles at a time, walked
    down each column of the group, so that a wave of programs shares few rows of A and few columns of B in L2."""
    tiles_per_group = GROUP_M * num_pid_n
    first_pid_m = (tile // tiles_per_group) * GROUP_M
    group_rows = gl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile % tiles_per_group) % group_rows
    pid_n = (tile % tiles_per_group) // group_rows
    return pid_m, pid_n
