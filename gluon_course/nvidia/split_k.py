"""Split-K's fixed-order protocol, for the kernels after lesson 32 (lesson 35's fused GEMMs): device helpers a
kernel calls, and the scratch its launcher keeps.

Lesson 32 teaches the protocol (its ``mma_partition`` writes it out): a tile of C shared by SPLIT_K work units, each
summing a slice of K; each unit writes its fp32 sums to its own slice of the tile's scratch and announces it on the
tile's counter; the unit that arrives last adds the SPLIT_K slices in the order 0, 1, … (the same order whichever
unit that is, so the result is the same bits on every run), finishes the tile and sets the counter back to 0 for the
next launch. Here the same steps are functions, so that a kernel can put its own epilogue between the sum and the
store:

- ``publish_slice``: a unit's sums to its slice, then its arrival; returns how many units had arrived before it;
- ``read_slice``: one slice of a tile, from L2 (the reducing unit's loop over ``s`` = 0, 1, … is the caller's);
- ``reopen``: the tile's counter back to 0, by the unit that reduced it;
- ``SplitScratch``: the slices and counters a launcher keeps, one set per stream and configuration.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def tile_offsets(BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, acc_layout: gl.constexpr):
    """Where each element of a BLOCK_M × BLOCK_N accumulator lies in a row-major fp32 tile of the scratch."""
    rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
    cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    return rows[:, None] * BLOCK_N + cols[None, :]


@gluon.jit
def publish_slice(acc, partial_ptr, arrivals_ptr, tile, split, SPLIT_K, acc_layout: gl.constexpr):
    """Unit ``split`` of tile ``tile``: its fp32 sums ``acc`` written to the tile's slice ``split`` of the scratch
    (``partial_ptr``: SPLIT_K slices a tile, tile after tile), then its arrival counted on the tile's counter. Returns
    the count before this unit's arrival: SPLIT_K − 1 for the last unit, the one that reduces."""
    BLOCK_M: gl.constexpr = acc.shape[0]
    BLOCK_N: gl.constexpr = acc.shape[1]
    TILE: gl.constexpr = BLOCK_M * BLOCK_N
    gl.store(partial_ptr + (tile * SPLIT_K + split) * TILE + tile_offsets(BLOCK_M, BLOCK_N, acc_layout), acc)
    # Every consumer thread's slice is written before one thread announces it (the atomic's release, after the
    # partition's barrier); the last to arrive sees every other unit's slice (its acquire).
    gl.barrier()
    return gl.atomic_add(arrivals_ptr + tile, 1, sem="acq_rel", scope="gpu")


@gluon.jit
def read_slice(partial_ptr, tile, s, SPLIT_K, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
               acc_layout: gl.constexpr):
    """Slice ``s`` of tile ``tile``'s scratch, in the accumulator's layout. .cg: from L2, where the other SMs' slices
    are; this SM's L1 may hold nothing of them."""
    TILE: gl.constexpr = BLOCK_M * BLOCK_N
    return gl.load(partial_ptr + (tile * SPLIT_K + s) * TILE + tile_offsets(BLOCK_M, BLOCK_N, acc_layout),
                   cache_modifier=".cg")


@gluon.jit
def reopen(arrivals_ptr, tile):
    """Tile ``tile``'s counter back to 0 by the unit that reduced it, after its sum: the next launch (a later call,
    or a CUDA graph's next replay) starts from 0 without a memset."""
    gl.atomic_xchg(arrivals_ptr + tile, 0, sem="relaxed", scope="gpu")


class SplitScratch:
    """Split-K's fp32 slices and per-tile counters as a launcher keeps them: one set per (stream, configuration,
    tiles), made on first use with the counters at 0 and reused by every later launch (each tile's reducing unit
    sets its counter back to 0). Per stream because two streams running the same GEMM at once must not share
    counters; made on the stream's first launch, which inside a CUDA graph's capture puts the memset in the graph."""

    def __init__(self):
        self.sets = {}

    def get(self, device, stream: int, key, tiles: int, split: int, tile_elements: int):
        """(slices, counters) for ``tiles`` tiles of ``tile_elements`` fp32 sums, ``split`` slices each; one element
        each when ``split`` is 1 (the kernel does not read them)."""
        import torch

        found = self.sets.get((stream, key, tiles))
        if found is None:
            cells, counters = (tiles * split * tile_elements, tiles) if split > 1 else (1, 1)
            found = self.sets[(stream, key, tiles)] = (
                torch.empty(cells, dtype=torch.float32, device=device),
                torch.zeros(counters, dtype=torch.int32, device=device))
        return found
