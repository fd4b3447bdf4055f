"""Launching a kernel in clusters in the host model (``model.cluster`` says how a cluster's CTAs are modelled):
``run_cluster``, ``model.run`` for clusters; ``run_together``, a grid's programs run side by side in one cluster's
turns (a persistent kernel's); and ``gemm_launch``, ``model.gemm.tma_launch`` for a GEMM launched in clusters
(lesson 33's cluster kernel)."""
from __future__ import annotations

import itertools

from . import shims
from .cluster import Cluster
from .gemm import _gl_dtype
from .run import _LAUNCHES, kernel_code_running, patched
from .runtime import ModelError, ModelUnsupported, Partition, Program
from .shims import HostTensorDescriptor


# -- running a cluster launch ---------------------------------------------------------------------------------------

def run_cluster(kernel, grid, *args, num_ctas: int, num_warps: int = 4, order=None, schedule: str = "round robin",
                **kwargs) -> list[Program]:
    """``model.run`` for a kernel launched with ``num_ctas`` CTAs a cluster: ``grid`` counts clusters (programs:
    ``gl.program_id`` is the cluster's number), each run as ``num_ctas`` CTAs (``schedule``: see the module's
    docstring). Returns every CTA's Program (its ``cta`` says which), cluster by cluster."""
    if num_ctas < 1 or num_ctas & (num_ctas - 1):
        raise ValueError(f"num_ctas={num_ctas}: a power of two")
    body = patched(kernel)
    grid = (grid,) if isinstance(grid, int) else tuple(int(g) for g in grid)
    grid = grid + (1,) * (3 - len(grid))
    launch = next(_LAUNCHES)
    pids = [(x, y, z) for z, y, x in itertools.product(*(range(g) for g in reversed(grid)))]
    numbers = range(len(pids)) if order is None else [int(i) for i in order]
    if sorted(numbers) != list(range(len(pids))):
        raise ValueError(f"order must list each of the {len(pids)} programs once")
    programs = []
    for number in numbers:
        pid = pids[number]
        cluster = Cluster(num_ctas, schedule)
        for cta in range(num_ctas):
            prog = Program(pid, grid, num_warps)
            prog.index, prog.launch = number * num_ctas + cta, launch
            prog.cta, prog.cluster = cta, cluster
            prog.cluster_arrivals, prog.past_inits = 0, False
            prog.partitions = [Partition("program", pid, grid, num_warps, cta=cta)]
            cluster.ctas.append(prog)
        try:
            with kernel_code_running():
                cluster.run(lambda: body(*args, **kwargs))
                for prog in cluster.ctas:
                    shims.require_drained(prog.partitions[0])
        except ModelError as e:
            e.args = (f"program {pid[0]} (a cluster of {num_ctas} CTAs), {e.args[0] if e.args else e}",)
            raise
        programs.extend(cluster.ctas)
    return programs


def run_together(kernel, grid, *args, num_warps: int = 4, **kwargs) -> list[Program]:
    """``model.run`` with the grid's programs running together, their partitions taking turns round robin at every
    point where one blocks (``model.cluster``'s round robin, over every program's partitions; each program keeps its
    own program id, shared memory, barriers and copies, with none of a cluster's sharing or barriers): for a
    persistent kernel whose programs take work from a counter
    in global memory (lesson 37's v5), so that the work spreads over the programs as on a GPU, where ``model.run``
    runs one program to its end before the next starts."""
    body = patched(kernel)
    grid = (grid,) if isinstance(grid, int) else tuple(int(g) for g in grid)
    grid = grid + (1,) * (3 - len(grid))
    launch = next(_LAUNCHES)
    pids = [(x, y, z) for z, y, x in itertools.product(*(range(g) for g in reversed(grid)))]
    cluster = Cluster(len(pids))
    for number, pid in enumerate(pids):
        prog = Program(pid, grid, num_warps)
        prog.index, prog.launch = number, launch
        prog.together = cluster
        prog.partitions = [Partition("program", pid, grid, num_warps)]
        cluster.ctas.append(prog)
    with kernel_code_running():
        cluster.run(lambda: body(*args, **kwargs))
        for prog in cluster.ctas:
            shims.require_drained(prog.partitions[0])
    return cluster.ctas


# -- a GEMM launched in clusters ------------------------------------------------------------------------------------

def gemm_launch(kernel, tile: dict, grid, constexprs: dict, cga: dict, num_ctas: int, dtype: str = "bf16",
                b_layout: str = "row", num_warps: int = 4, c_block=None, schedule: str = "round robin"):
    """``model.gemm.tma_launch`` for a kernel launched in clusters of ``num_ctas`` CTAs: ``kernel(a_desc, b_desc,
    c_desc, M, N, K, **constexprs)`` with descriptors whose layouts carry ``cga`` (``{"a": bases, "b": ..., "c":
    ...}``, what the launcher passes). ``tile``'s BLOCK_M, BLOCK_N, BLOCK_K are the cluster's tile (A's box
    BLOCK_M × BLOCK_K, B's BLOCK_K × BLOCK_N or its transpose, C's BLOCK_M × BLOCK_N or ``c_block``); ``grid(M, N)``
    counts clusters; ``schedule``: ``run_cluster``'s."""
    from triton.experimental.gluon import language as gl

    gl_dtype = _gl_dtype(dtype)
    BM, BN, BK = tile["BLOCK_M"], tile["BLOCK_N"], tile["BLOCK_K"]

    def layout(block, bases):
        return gl.NVMMASharedLayout.get_default_for(block, gl_dtype, cga_layout=[list(b) for b in bases] or None)

    def launch(a_buf, b_buf, c_buf, M, N, K):
        blocks = {"a": [BM, BK], "b": [BN, BK] if b_layout == "col" else [BK, BN], "c": list(c_block or [BM, BN])}
        descs = [HostTensorDescriptor(buf, blocks[name], layout(blocks[name], cga.get(name, [])))
                 for name, buf in (("a", a_buf), ("b", b_buf), ("c", c_buf))]
        return run_cluster(kernel, grid(M, N), *descs, M, N, K, num_ctas=num_ctas, num_warps=num_warps,
                           schedule=schedule, **constexprs)
    return launch
