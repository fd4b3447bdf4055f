# Lesson 17 starter, generated from solutions/17-gemm-v7-persistent/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 17   (`make starters` rewrites it: keep a copy)
"""Lesson 17 · GEMM v7: a persistent grid in grouped order.

Lessons 10-16 launched one program per tile of C: at 8192³ with lesson 16's 128 × 256 tiles that is 2048 programs,
taken by the SMs one at a time, each setting up its barriers before its first copy. Here the grid is only as large
as the GPU holds at once, and each program walks over tiles of C: tile, tile + programs, tile + 2 × programs, ...
The barriers are set up once per program, and a count of the K steps the program has done keeps slots and phases
running across tiles. The tiles are visited in *grouped* order: GROUP_M rows of tiles at a time, column by column,
so the programs working at the same moment share A's and B's tiles in L2 instead of each reading their own.

What persistence does not remove: each tile still begins by filling the ring (the first STAGES - 1 copies are
issued inside the tile loop, after the previous tile's store), so the tensor cores wait at the start of every
tile. Lesson 18 gives the copies to a warp of their own, which runs ahead into the next tile while the others
finish this one.
"""
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

from gluon_course.nvidia.hopper import require_hopper, require_wgmma_tile, tma_descriptor
from gluon_course.validate import empty_product, require_matmul_args

# Lesson 16's tile, warpgroups and ring; 8 rows of tiles per group; 1 program per SM, as many as fit (the 192 KiB
# ring leaves no room for a second: the occupancy check in this lesson's checks holds the two together).
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "STAGES": 4, "GROUP_M": 8,
          "programs_per_sm": 1}


def wgmma_layout(num_warps: int, BLOCK_N: int):
    """The accumulator layout of wgmma: version 3, warps stacked along M (a warpgroup is 4 warps, 16 rows each,
    64 rows per instruction), one instruction spanning the tile's BLOCK_N columns, 16 of K per instruction."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_N, 16])


def kernel_layouts(num_warps: int, BLOCK_N: int) -> dict:
    """The layout constexprs of matmul_kernel: what matmul passes, what the checks compile. Only the accumulator's
    now: A and B are read where TMA put them, in the descriptors' shared layouts."""
    return {"acc_layout": wgmma_layout(num_warps, BLOCK_N)}


@gluon.jit
def load_tiles(a_desc, b_desc, ready, a_ring, b_ring, off_m, off_n, k_index, step, STAGES: gl.constexpr, pred):
    """Start the TMA copies of A's and B's tiles number ``k_index`` (along K) into ring slot ``step % STAGES``, where
    ``step`` counts every K step of this program across its tiles of C. Nothing happens where ``pred`` is false."""
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    slot = step % STAGES
    # A tile that hangs over the edge of A or B still lands whole (zero-filled), so the count is always the full
    # tiles' bytes. expect() is also the barrier's one arrival: without it the phase could never complete.
    mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)
    tma.async_load(a_desc, [off_m, k_index * BLOCK_K], ready.index(slot), a_ring.index(slot), pred=pred)
    tma.async_load(b_desc, [k_index * BLOCK_K, off_n], ready.index(slot), b_ring.index(slot), pred=pred)


@gluon.jit
def grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    """(pid_m, pid_n) of tile number ``tile`` in grouped order: GROUP_M rows of tiles at a time, down each column
    of the group before the next column (the last group may have fewer rows)."""
    # TODO gap 1: tile number → (row of tiles, column of tiles), GROUP_M rows at a time, column by column
    gl.static_assert(False, 'lesson 17, gap 1 not yet implemented: tile number → (row of tiles, column of tiles), GROUP_M rows at a time, column by column')
    return pid_m, pid_n


@gluon.jit
def matmul_kernel(a_desc, b_desc, c_ptr, M, N, K, stride_cm, stride_cn,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  acc_layout: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr):
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)

    # The ring and its barriers, once per program, for all the tiles it will do.
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BLOCK_K, BLOCK_N], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)

    # K steps this program has done so far, over all its tiles: step s uses slot s % STAGES, and is trip
    # s // STAGES round the ring, so its barrier's phase parity is (s // STAGES) & 1.
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        # Lesson 16's pipeline for this tile; the ring's slots and phases come from the program's step count.
        for s in gl.static_range(STAGES - 1):
            load_tiles(a_desc, b_desc, ready, a_ring, b_ring, off_m, off_n, s, step + s, STAGES, s < k_tiles)
        acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
        for i in range(k_tiles):
            # TODO gap 2: K step i of this tile is the program's step + i: its slot, and the phase to wait for
            gl.static_assert(False, "lesson 17, gap 2 not yet implemented: K step i of this tile is the program's step + i: its slot, and the phase to wait for")
            acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc, is_async=True)
            acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b_ring.index(slot)))
            load_tiles(a_desc, b_desc, ready, a_ring, b_ring, off_m, off_n, i + STAGES - 1, step + i + STAGES - 1,
                       STAGES, i + STAGES - 1 < k_tiles)
        acc = warpgroup_mma_wait(0, deps=(acc,))
        step += k_tiles

        # C's tile, stored from the accumulator's own layout, rounded to the inputs' dtype, masked at the edges.
        offs_cm = off_m + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, acc_layout))
        offs_cn = off_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
        c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)

    # Every copy that was started has been waited for: the barriers can be retired.
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))


def matmul(a, b, c=None, programs=None, **config):
    """C = A·B by wgmma, A and B copied by TMA into a ring of shared buffers; returns ``c``. The rows of A and B
    must start on 16-byte boundaries (K and N multiples of 8 for bf16 and fp16). Hopper only (sm_90). ``programs``
    sets the grid (default: as many as the GPU holds at once); fewer give each program more tiles."""
    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_matmul_args(a, b, c)
    if empty_product(a, b, c):          # M, N or K is 0: what torch.matmul returns
        return c
    unknown = set(config) - set(CONFIG)
    if unknown:
        raise TypeError(f"unknown config keys {sorted(unknown)}; matmul takes {sorted(CONFIG)}")
    cfg = {**CONFIG, **config}
    num_warps, programs_per_sm = cfg.pop("num_warps"), cfg.pop("programs_per_sm")
    require_wgmma_tile(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], num_warps, cfg["STAGES"])
    for name, value in (("GROUP_M", cfg["GROUP_M"]), ("programs_per_sm", programs_per_sm)):
        if not (isinstance(value, int) and value >= 1):
            raise ValueError(f"{name}={value!r}: a positive integer")
    require_hopper(a)
    a_desc = tma_descriptor("a", a, [cfg["BLOCK_M"], cfg["BLOCK_K"]])
    b_desc = tma_descriptor("b", b, [cfg["BLOCK_K"], cfg["BLOCK_N"]])
    # As many programs as the GPU holds at once (never more than there are tiles): each walks over tiles.
    tiles = triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    if programs is not None and not (isinstance(programs, int) and programs >= 1):
        raise ValueError(f"programs={programs!r}: a positive number of programs, or None for as many as fit")
    grid = (min(tiles, programs or sms * programs_per_sm),)
    matmul_kernel[grid](a_desc, b_desc, c, M, N, K, c.stride(0), c.stride(1), **cfg,
                        **kernel_layouts(num_warps, cfg["BLOCK_N"]), num_warps=num_warps)
    return c
