"""Issue 23: lesson 33's ping-pong consumers on a 128 × 192 tile a consumer, held as two strips.

Lesson 33's ping-pong consumers overlap one tile's epilogue with the other consumer's products, but each owns a
128 × 128 tile, which copies (128 + 128) operand rows for 128 × 128 products: a third more bytes a product than
lesson 19's shared 128 × 256 tile. A 128 × 256 accumulator would need 256 registers a thread, more than a thread may
hold; 128 × 192 needs 192. A tensor's sides are powers of two in Triton 3.9.0, so the tile is two strips: W's 192
rows come in a 128-row and a 64-row TMA box (probe_wide_tile.py's producer), and each consumer keeps a 128 × 128 and a
128 × 64 accumulator and issues two wgmma a step. It copies (128 + 192) rows for 128 × 192 products, 1/77 an element
against the 128 × 128 tile's 1/64 and the shared 128 × 256 tile's 1/85. C leaves in three 128 × 64 subtiles through
one 16 KiB buffer a consumer. 4 slots of 16 + 16 + 8 KiB (bf16, 64 of K; fp8 the same bytes at 128 of K) and the two
buffers: 192 KiB.

Its run (H200, 2026-12-03, commit 47fdb99d36; results/trials/nvidia-h200-2026-12-03-pingpong-strips.json): every
variant correct; bf16 0.997-1.038x cuBLAS on the sweep's four shapes with N of 8192 or 16384 (v9 1.00-1.03x in the same
run) and 0.69-0.92x on the other three; fp8 1.034-1.038x torch._scaled_mm at 8192³ (lesson 34 1.017x), its sweep
geomeans 0.953-0.963x (lesson 34 0.985x).

    python tools/probes/probe_pingpong_strips.py --compile        CPU: bf16 and fp8 compiled for sm_90
    python tools/probes/probe_pingpong_strips.py --model          CPU: the kernel in the course's host model, exact
    python tools/probes/probe_pingpong_strips.py bf16 OUT.json    GPU: odd shapes, then the bf16 sweep beside v9, cuBLAS
    python tools/probes/probe_pingpong_strips.py fp8 OUT.json     GPU: odd shapes, then the fp8 sweep beside lesson 34
"""
import importlib.util
import pathlib
import sys

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

from gluon_course import load_solution

_spec = importlib.util.spec_from_file_location("probe_wide_tile", pathlib.Path(__file__).with_name("probe_wide_tile.py"))
wide = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wide)
_V10 = load_solution("33")
take_turn, pass_turn, fork_consumers = _V10.take_turn, _V10.pass_turn, _V10.fork_consumers
# Module-level names, so the host model (which patches a kernel's globals) sees them as @gluon.jit functions.
ordered_tile, halves, store_sub, wide_load = wide.ordered_tile, wide.halves, wide.store_sub, wide.wide_load

NUM_WARPS = 4                        # one warpgroup a consumer
STRIP, STRIP2 = 128, 64              # W's 192 rows of a tile
BASE = {"BLOCK_M": 128, "BLOCK_K": 64, "STAGES": 4, "GROUP_M": 8, "LOAD_REGS": 40, "MMA_REGS": 240, "SNAKE": 0,
        "C_BUFFERS": 1, "CLUSTER_M": 1}
VARIANTS = {
    "pingpong 128x192, 4 slots": {},
    "pingpong 128x192, 4 slots, snake": {"SNAKE": 1},
    # Two 16 KiB buffers a consumer: 208 KiB.
    "pingpong 128x192, 4 slots, 2 C buffers": {"C_BUFFERS": 2},
}


@gluon.jit
def strips_consumer(ME: gl.constexpr, c_smem, my_turn, next_turn, c_desc, a_ring, b_ring, b2_ring, ready, empty,
                    M, N, K, STAGES: gl.constexpr, GROUP_M: gl.constexpr, acc_layout: gl.constexpr,
                    acc2_layout: gl.constexpr, B_KN: gl.constexpr, SNAKE: gl.constexpr, C_BUFFERS: gl.constexpr):
    """Lesson 33's subtile consumer with two accumulators: the program's tiles ME, ME + 2, ..., products only while it
    holds the turn, three 128 × 64 subtiles stored while the other consumer multiplies."""
    BLOCK_M: gl.constexpr = c_desc.block_shape[0]
    SUB_N: gl.constexpr = c_desc.block_shape[1]
    B_COLS: gl.constexpr = b_ring.shape[2] if B_KN else b_ring.shape[1]
    B2_COLS: gl.constexpr = b2_ring.shape[2] if B_KN else b2_ring.shape[1]
    BLOCK_N: gl.constexpr = B_COLS + B2_COLS
    BLOCK_K: gl.constexpr = a_ring.shape[2]
    gl.static_assert(SUB_N == B2_COLS, "C's subtile is the narrow strip's width")
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    turns = 0
    local = ME
    for tile in range(gl.program_id(0) + ME * gl.num_programs(0), num_pid_m * num_pid_n, 2 * gl.num_programs(0)):
        pid_m, pid_n = ordered_tile(tile, num_pid_m, num_pid_n, GROUP_M, SNAKE)
        step = local * k_tiles
        take_turn(my_turn, turns, ME)
        acc = gl.zeros([BLOCK_M, B_COLS], gl.float32, layout=acc_layout)
        acc2 = gl.zeros([BLOCK_M, B2_COLS], gl.float32, layout=acc2_layout)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
            a = a_ring.index(slot)
            b = b_ring.index(slot) if B_KN else b_ring.index(slot).permute((1, 0))
            b2 = b2_ring.index(slot) if B_KN else b2_ring.index(slot).permute((1, 0))
            acc = warpgroup_mma(a, b, acc, is_async=True)
            acc2 = warpgroup_mma(a, b2, acc2, is_async=True)
            acc, acc2, _, _, _ = warpgroup_mma_wait(2, deps=(acc, acc2, a, b, b2))
            mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES), pred=k > 0)
            step += 1
        pass_turn(next_turn)
        acc, acc2 = warpgroup_mma_wait(0, deps=(acc, acc2))
        mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES))
        row = pid_m * BLOCK_M
        col = pid_n * BLOCK_N
        left, right = halves(acc, BLOCK_M, B_COLS)
        store_sub(c_desc, c_smem, left, row, col, 3 * turns, C_BUFFERS)
        store_sub(c_desc, c_smem, right, row, col + SUB_N, 3 * turns + 1, C_BUFFERS)
        store_sub(c_desc, c_smem, acc2, row, col + 2 * SUB_N, 3 * turns + 2, C_BUFFERS)
        turns += 1
        local += 2
    tma.store_wait(0)


@gluon.jit
def strips_kernel(a_desc, b_desc, b2_desc, c_desc, M, N, K, acc_layout: gl.constexpr, acc2_layout: gl.constexpr,
                  STAGES: gl.constexpr, GROUP_M: gl.constexpr, LOAD_REGS: gl.constexpr, MMA_REGS: gl.constexpr,
                  B_KN: gl.constexpr, SNAKE: gl.constexpr, C_BUFFERS: gl.constexpr):
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    b2_ring = gl.allocate_shared_memory(b2_desc.dtype, [STAGES] + b2_desc.block_type.shape, b2_desc.layout)
    c_smem0 = gl.allocate_shared_memory(c_desc.dtype, [C_BUFFERS] + c_desc.block_type.shape, c_desc.layout)
    c_smem1 = gl.allocate_shared_memory(c_desc.dtype, [C_BUFFERS] + c_desc.block_type.shape, c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    for c in gl.static_range(2):
        mbarrier.init(turn.index(c), count=1)
    fork_consumers(strips_consumer,
                   (c_desc, a_ring, b_ring, b2_ring, ready, empty, M, N, K, STAGES, GROUP_M, acc_layout, acc2_layout,
                    B_KN, SNAKE, C_BUFFERS),
                   c_smem0, c_smem1, turn,
                   wide_load,
                   (a_desc, b_desc, b2_desc, a_ring, b_ring, b2_ring, ready, empty, empty, M, N, K, STAGES, GROUP_M,
                    B_KN, SNAKE, 1),
                   LOAD_REGS, MMA_REGS)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))
    for c in gl.static_range(2):
        mbarrier.invalidate(turn.index(c))


def layouts(cfg: dict, fp8: bool) -> dict:
    k = 32 if fp8 else 16
    return {"ac_cga": [], "b_cga": [],
            "acc_layout": gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                                    instr_shape=[16, STRIP, k]),
            "acc2_layout": gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                                     instr_shape=[16, STRIP2, k])}


def blocks(cfg: dict, b_kn: bool):
    rows, bk = cfg["BLOCK_M"], cfg["BLOCK_K"]
    part = (lambda cols: [bk, cols]) if b_kn else (lambda cols: [cols, bk])
    return [rows, bk], part(STRIP), part(STRIP2), [rows, STRIP2]


def constexprs(cfg: dict, fp8: bool, b_kn: bool) -> dict:
    lay = layouts(cfg, fp8)
    return {"acc_layout": lay["acc_layout"], "acc2_layout": lay["acc2_layout"], "B_KN": b_kn,
            **{k: cfg[k] for k in ("STAGES", "GROUP_M", "LOAD_REGS", "MMA_REGS", "SNAKE", "C_BUFFERS")}}


class Launch(wide.Launch):
    """probe_wide_tile's launch with this kernel, its warps, boxes and 192-wide tiles."""
    kernel, num_warps, tile_n = strips_kernel, NUM_WARPS, STRIP + STRIP2

    def layouts(self):
        return layouts(self.cfg, self.fp8)

    def blocks(self, b_kn):
        return blocks(self.cfg, b_kn)

    def constexprs(self, b_kn):
        return constexprs(self.cfg, self.fp8, b_kn)


if __name__ == "__main__":
    if sys.argv[1:] == ["--compile"]:
        wide.compile_all(VARIANTS, Launch, BASE)
    elif sys.argv[1:] == ["--model"]:
        from gluon_course.model import gemm as model_gemm

        turns = (lambda programs: model_gemm.consumers_take_turns(programs, stores_per_tile=3))
        sys.exit(0 if wide.host_check(VARIANTS, Launch, BASE, rule=turns) else 1)
    elif sys.argv[1] == "bf16":
        wide.coop.gpu(sys.argv[2], True, ours={n: Launch({**BASE, **d}) for n, d in VARIANTS.items()})
    elif sys.argv[1] == "fp8":
        wide.cluster.main(sys.argv[2], VARIANTS, make=lambda cfg: Launch(cfg, fp8=True), base=BASE)
