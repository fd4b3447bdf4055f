"""Issue 23, a probe: lesson 19's cooperative consumers (two warpgroups on one 128 × 256 tile) with what lesson 33's
steps added to the ping-pong kernel: C in subtiles (which frees shared memory for a fourth slot), the snake order, and a
cluster of two CTAs along M with B's tile multicast. Lesson 33's recording (2026-12-03) had every ping-pong step below
v9 at 8192³ (v10.3 687 TFLOPS against v9's 725); this asks whether the same ideas on v9's tile go past it.

    python tools/probes/probe_coop.py --compile                CPU: every variant compiled for sm_90 (shared memory, registers)
    python tools/probes/probe_coop.py OUT.json [--sweep]       GPU: correctness on odd shapes, then interleaved timings
    python tools/probes/probe_coop.py OUT.json --sweep --wide  GPU: the same for lesson 33's kernels on 64 × 256 tiles

A variant is (STAGES, C_SPLIT, SNAKE, CLUSTER_M): C_SPLIT 1 stores the 128 × 256 tile at once through one buffer (v9's
epilogue), 2 as two 128 × 128 halves and 4 as four 128 × 64 quarters, each through one of C_BUFFERS buffers paced by
``tma.store_wait``. Not a lesson: if a variant wins it becomes lesson 33's step 4, with its checks and plants.

Its one run (H200, 2026-12-03, commit 836a37ba7d; results/trials/nvidia-h200-2026-12-03-coop.json): every variant
correct, none past v9 (sweep geomeans 0.998-1.011x cuBLAS). That commit held its own copies of lesson 33's
``ordered_tile`` and ``store_subtile`` and wrote B's copy once per case; this file takes the two from lesson 33 and
issues B's copy in one call (the same listings: every instruction count compiled on the CPU unchanged).
"""
import json
import statistics
import sys
import time

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

from gluon_course import load_solution

BASE = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "STAGES": 3, "GROUP_M": 8, "LOAD_REGS": 40,
        "C_SPLIT": 1, "C_BUFFERS": 1, "SNAKE": 0, "CLUSTER_M": 1}
NUM_WARPS = 8                      # two consumer warpgroups, as lesson 19's
# name -> what differs from BASE. 4 slots of 48 KiB (192 KiB) leave 32 KiB for C: half a tile, or two quarters.
VARIANTS = {
    "coop 3 slots (v9's)": {},
    "coop 4 slots, halves": {"STAGES": 4, "C_SPLIT": 2},
    "coop 4 slots, quarters x2": {"STAGES": 4, "C_SPLIT": 4, "C_BUFFERS": 2},
    "coop 4 slots, quarters x2, snake": {"STAGES": 4, "C_SPLIT": 4, "C_BUFFERS": 2, "SNAKE": 1},
    "coop cluster 2, 3 slots": {"CLUSTER_M": 2},
    "coop cluster 2, 4 slots, quarters x2": {"CLUSTER_M": 2, "STAGES": 4, "C_SPLIT": 4, "C_BUFFERS": 2},
}


# --wide: lesson 33's own kernels (through its launchers) with a 64 × 256 tile a consumer, W's 256 columns as v9 has
# them, in place of 128 × 128: the same 128 accumulator registers a thread and the same bytes of shared memory read per
# product as v9's consumers. 4 slots of 40 KiB and two 64 × 256 C buffers are 224 KiB; in halves, 192 KiB.
WIDE = {
    "v10.1 64x256, 4 slots": ("pingpong", {"BLOCK_M": 64, "BLOCK_N": 256}),
    "v10.3 64x256, 4 slots, snake": ("subtile", {"BLOCK_M": 64, "BLOCK_N": 256, "STAGES": 4}),
    "v10.3 64x256, 4 slots, snake, G16": ("subtile", {"BLOCK_M": 64, "BLOCK_N": 256, "STAGES": 4, "GROUP_M": 16}),
}


# Lesson 33's tile order (SNAKE 0: lesson 17's grouped order) and its paced subtile store, as they are there.
_V10 = load_solution("33")
ordered_tile = _V10.ordered_tile
store_part = _V10.store_subtile


@gluon.jit
def coop_load(a_desc, b_desc, a_ring, b_ring, ready, empty, b_empty, M, N, K, STAGES: gl.constexpr,
              GROUP_M: gl.constexpr, B_KN: gl.constexpr, SNAKE: gl.constexpr, CLUSTER_M: gl.constexpr,
              MULTICAST: gl.constexpr):
    ROWS: gl.constexpr = a_desc.block_shape[0]                 # the cluster's rows (CLUSTER_M × BLOCK_M)
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_shape[1] if B_KN else b_desc.block_shape[0]
    num_pid_m = gl.cdiv(M, ROWS)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = ordered_tile(tile, num_pid_m, num_pid_n, GROUP_M, SNAKE)
        for k in range(k_tiles):
            slot = step % STAGES
            phase = ((step // STAGES) & 1) ^ 1
            mbarrier.wait(empty.index(slot), phase)
            mbarrier.expect(ready.index(slot), a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
            tma.async_load(a_desc, [pid_m * ROWS, k * BLOCK_K], ready.index(slot), a_ring.index(slot))
            if CLUSTER_M > 1:                   # B's slot must be free in every CTA before the multicast fills it
                mbarrier.wait(b_empty.index(slot), phase)
            b_at = [k * BLOCK_K, pid_n * BLOCK_N] if B_KN else [pid_n * BLOCK_N, k * BLOCK_K]
            tma.async_load(b_desc, b_at, ready.index(slot), b_ring.index(slot), multicast=MULTICAST)
            step += 1


@gluon.jit
def release(empty, b_empty, slot, pred, CLUSTER_M: gl.constexpr):
    mbarrier.arrive(empty.index(slot), pred=pred)
    if CLUSTER_M > 1:
        mbarrier.arrive(b_empty.index(slot), pred=pred)


@gluon.jit
def halves(x, ROWS: gl.constexpr, COLS: gl.constexpr):
    return gl.split(x.reshape([ROWS, 2, COLS // 2]).permute((0, 2, 1)))


@gluon.jit
def coop_mma(c_desc, a_ring, b_ring, c_smem, ready, empty, b_empty, M, N, K, STAGES: gl.constexpr,
             GROUP_M: gl.constexpr, acc_layout: gl.constexpr, B_KN: gl.constexpr, SNAKE: gl.constexpr,
             CLUSTER_M: gl.constexpr, C_SPLIT: gl.constexpr, C_BUFFERS: gl.constexpr):
    ROWS: gl.constexpr = c_desc.block_shape[0]
    SUB_N: gl.constexpr = c_desc.block_shape[1]
    BLOCK_N: gl.constexpr = C_SPLIT * SUB_N
    BLOCK_K: gl.constexpr = a_ring.shape[2]
    num_pid_m = gl.cdiv(M, ROWS)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = ordered_tile(tile, num_pid_m, num_pid_n, GROUP_M, SNAKE)
        acc = gl.zeros([ROWS, BLOCK_N], gl.float32, layout=acc_layout)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
            b = b_ring.index(slot) if B_KN else b_ring.index(slot).permute((1, 0))
            acc = warpgroup_mma(a_ring.index(slot), b, acc, is_async=True)
            acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b))
            release(empty, b_empty, (step + STAGES - 1) % STAGES, k > 0, CLUSTER_M)
            step += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        release(empty, b_empty, (step + STAGES - 1) % STAGES, True, CLUSTER_M)
        row = pid_m * ROWS
        col = pid_n * BLOCK_N
        if C_SPLIT == 1:
            store_part(c_desc, c_smem, acc, row, col, 0, C_BUFFERS)
        elif C_SPLIT == 2:
            left, right = halves(acc, ROWS, BLOCK_N)
            store_part(c_desc, c_smem, left, row, col, 0, C_BUFFERS)
            store_part(c_desc, c_smem, right, row, col + SUB_N, 1, C_BUFFERS)
        else:
            left, right = halves(acc, ROWS, BLOCK_N)
            q0, q1 = halves(left, ROWS, BLOCK_N // 2)
            q2, q3 = halves(right, ROWS, BLOCK_N // 2)
            store_part(c_desc, c_smem, q0, row, col, 0, C_BUFFERS)
            store_part(c_desc, c_smem, q1, row, col + SUB_N, 1, C_BUFFERS)
            store_part(c_desc, c_smem, q2, row, col + 2 * SUB_N, 2, C_BUFFERS)
            store_part(c_desc, c_smem, q3, row, col + 3 * SUB_N, 3, C_BUFFERS)
    tma.store_wait(0)


@gluon.jit
def coop_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                BLOCK_K: gl.constexpr, acc_layout: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                LOAD_REGS: gl.constexpr, B_KN: gl.constexpr, SNAKE: gl.constexpr, CLUSTER_M: gl.constexpr,
                C_SPLIT: gl.constexpr, C_BUFFERS: gl.constexpr, MULTICAST: gl.constexpr = None):
    """MULTICAST (None: CLUSTER_M > 1) False in a cluster: every CTA copies B's tile itself (probe_fp8_cluster asks
    what Nsight Compute's L2 counters make of a multicast)."""
    gl.static_assert(gl.num_ctas() == CLUSTER_M, "launch with num_ctas=CLUSTER_M")
    MC: gl.constexpr = CLUSTER_M > 1 if MULTICAST is None else MULTICAST
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [C_BUFFERS] + c_desc.block_type.shape, c_desc.layout)
    ready = mbarrier.allocate_mbarrier(batch=STAGES)          # one per CTA (a cluster's layout when there is one)
    empty = mbarrier.allocate_mbarrier(batch=STAGES)
    if CLUSTER_M > 1:
        b_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout(cga_layout=[[0]]))
    else:
        b_empty = empty
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
        if CLUSTER_M > 1:
            mbarrier.init(b_empty.index(s), count=1)
    gl.warp_specialize([
        (coop_mma, (c_desc, a_ring, b_ring, c_smem, ready, empty, b_empty, M, N, K, STAGES, GROUP_M, acc_layout,
                    B_KN, SNAKE, CLUSTER_M, C_SPLIT, C_BUFFERS)),
        (coop_load, (a_desc, b_desc, a_ring, b_ring, ready, empty, b_empty, M, N, K, STAGES, GROUP_M, B_KN, SNAKE,
                     CLUSTER_M, MC)),
    ], [1], [LOAD_REGS])
    if CLUSTER_M > 1:
        gl.barrier(cluster=True)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))
        if CLUSTER_M > 1:
            mbarrier.invalidate(b_empty.index(s))


def layouts(cfg: dict) -> dict:
    """cga bases (A's and C's rows split between the cluster's CTAs, B's tile in both), the accumulator's layout."""
    n = cfg["CLUSTER_M"]
    split = [[1 << i, 0] for i in range(n.bit_length() - 1)]
    acc = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                    instr_shape=[16, cfg["BLOCK_N"], 16], cga_layout=split)
    return {"ac_cga": split, "b_cga": [[0, 0]] * len(split), "acc_layout": acc}


def blocks(cfg: dict, b_kn: bool):
    rows, BN, BK = cfg["CLUSTER_M"] * cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    return [rows, BK], ([BK, BN] if b_kn else [BN, BK]), [rows, BN // cfg["C_SPLIT"]]


def constexprs(cfg: dict, b_kn: bool) -> dict:
    keys = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "GROUP_M", "LOAD_REGS", "SNAKE", "CLUSTER_M", "C_SPLIT",
            "C_BUFFERS")
    return {**{k: cfg[k] for k in keys}, "acc_layout": layouts(cfg)["acc_layout"], "B_KN": b_kn, "MULTICAST": None}


def compile_all() -> None:
    from gluon_course.machine import compile_cached, tensor_descriptor_type

    for name, diff in VARIANTS.items():
        cfg = {**BASE, **diff}
        lay = layouts(cfg)
        ac, bc = lay["ac_cga"] or None, lay["b_cga"] or None
        for b_kn in (True, False):
            a_blk, b_blk, c_blk = blocks(cfg, b_kn)

            def desc(block, cga):
                shared = gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16, cga_layout=cga)
                return tensor_descriptor_type("bf16", block, shared)

            sig = {"a_desc": desc(a_blk, ac), "b_desc": desc(b_blk, bc), "c_desc": desc(c_blk, ac),
                   "M": "i32", "N": "i32", "K": "i32"}
            options = {"num_ctas": cfg["CLUSTER_M"]} if cfg["CLUSTER_M"] > 1 else {}
            t0 = time.time()
            try:
                k = compile_cached(coop_kernel, "sm_90", signature=sig, constexprs=constexprs(cfg, b_kn),
                                   aligned=("M", "N", "K"), num_warps=NUM_WARPS, **options)
                print(f"{name:40s} B {'K×N' if b_kn else 'N×K'}: ok {time.time() - t0:.0f} s, {k.shared_bytes} B "
                      f"shared, {k.registers} registers, {k.resources.get('spill_stores', 0)} spill stores",
                      flush=True)
            except Exception as e:  # noqa: BLE001 - a probe: say which variant fails and why
                print(f"{name:40s} B {'K×N' if b_kn else 'N×K'}: FAILED {type(e).__name__}: {str(e)[:600]}",
                      flush=True)


class Launch:
    """One variant's launcher for one signature: descriptors kept by the three addresses, encoded once."""

    def __init__(self, cfg: dict):
        self.cfg, self.plans = cfg, {}

    def __call__(self, a, b, c):
        import torch
        import triton

        from gluon_course.nvidia import launch as kept
        from gluon_course.nvidia.hopper import resident_clusters, tma_descriptor

        b_kn = b.shape[1] <= 1 or b.stride(1) == 1
        key = (kept.signature(a, b, c), a.data_ptr(), b.data_ptr(), c.data_ptr())
        p = self.plans.get(key)
        if p is None:
            cfg, lay = self.cfg, layouts(self.cfg)
            M, K = a.shape
            N = b.shape[1]
            a_blk, b_blk, c_blk = blocks(cfg, b_kn)
            descs = (tma_descriptor("a", a, a_blk, cga=lay["ac_cga"] or None),
                     tma_descriptor("b", b if b_kn else b.t(), b_blk, cga=lay["b_cga"] or None),
                     tma_descriptor("c", c, c_blk, cga=lay["ac_cga"] or None))
            ce = constexprs(cfg, b_kn)
            values = {"M": M, "N": N, "K": K, **ce}
            rest = tuple(values[n] for n in coop_kernel.arg_names[3:])
            n = cfg["CLUSTER_M"]
            options = {"num_ctas": n} if n > 1 else {}
            tiles = triton.cdiv(M, n * cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
            sms = torch.cuda.get_device_properties(a.device).multi_processor_count
            programs = (resident_clusters(coop_kernel, (*descs, M, N, K), {**ce, "num_warps": NUM_WARPS, **options},
                                          n, a.device) if n > 1 else sms)
            p = self.plans[key] = (kept.KeptLaunch(coop_kernel, NUM_WARPS, **options), min(tiles, programs),
                                   descs, rest)
        launcher, grid, descs, rest = p
        launcher(grid, torch.cuda.current_stream().cuda_stream, descs, rest)
        return c


def gpu(out: str, sweep: bool, wide: bool = False, ours: dict | None = None) -> None:
    """``ours``: name -> launch(a, b, c) to check and time instead of VARIANTS (probe_wide_tile.py's)."""
    import torch
    import triton

    from gluon_course.grading import tma_gemm
    from gluon_course.measure.clocks import Sampler
    from gluon_course.measure.gemm import GEMM_SWEEP_SHAPES, check_gemm, gemm_inputs
    from gluon_course.measure.timing import graph_ms

    v9, v10 = load_solution("19"), _V10
    if ours is not None:
        ours = dict(ours)
    elif wide:
        steps = {"pingpong": v10.pingpong_matmul, "subtile": v10.subtile_matmul}
        ours = {name: (lambda a, b, c, fn=steps[step], cfg=cfg: fn(a, b, c, **cfg)) for name, (step, cfg) in WIDE.items()}
    else:
        ours = {name: Launch({**BASE, **diff}) for name, diff in VARIANTS.items()}
    result = {"correct": {}, "timing": {}}
    shapes = tma_gemm.TMA_SHAPES + tma_gemm.MANY_TILES
    for name, fn in list(ours.items()):
        problems = []
        t0 = time.time()
        for layout in ("row", "col"):
            try:
                problems.append(check_gemm(fn, shapes=shapes, dtypes=(torch.bfloat16,), b_layout=layout))
            except Exception as e:  # noqa: BLE001 - one variant's failure must not hide the others
                problems.append(f"raised {type(e).__name__}: {e}"[:300])
        bad = [p for p in problems if p]
        result["correct"][name] = bad[0] if bad else "ok"
        print(f"correct {name:40s}: {bad[0] if bad else 'ok'} ({time.time() - t0:.0f} s)", flush=True)
        if bad:
            del ours[name]
    json.dump(result, open(out, "w"), indent=1)
    versions = {"v9": lambda a, b, c: v9.matmul(a, b, c),
                "v10.3 snake": lambda a, b, c: v10.subtile_matmul(a, b, c, SNAKE=1), **ours,
                "cuBLAS": lambda a, b, c: torch.matmul(a, b, out=c)}
    sampler = Sampler()
    for M, N, K in (GEMM_SWEEP_SHAPES if sweep else GEMM_SWEEP_SHAPES[:1]):
        a, b = gemm_inputs(M, N, K, torch.bfloat16)
        c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        for fn in versions.values():
            fn(a, b, c)
        times = {n: [] for n in versions}
        mhz = {n: [] for n in versions}
        for _ in range(3):
            for name, fn in versions.items():
                with sampler:
                    times[name].append(triton.testing.do_bench(lambda: fn(a, b, c), warmup=25, rep=120))
                mhz[name].append(sampler.median()[0])
        graphs = {n: graph_ms(lambda: fn(a, b, c)) for n, fn in versions.items()}
        shape = f"{M}x{N}x{K}"
        lib, lib_g = statistics.median(times["cuBLAS"]), graphs["cuBLAS"]
        result["timing"][shape] = {n: {"ms": statistics.median(times[n]), "ms_each": times[n],
                                       "over_cublas": lib / statistics.median(times[n]),
                                       "graph_ms": graphs[n], "graph_over_cublas": lib_g / graphs[n],
                                       "tflops": 2 * M * N * K / statistics.median(times[n]) / 1e9,
                                       "sm_mhz": statistics.median(mhz[n])} for n in versions}
        json.dump(result, open(out, "w"), indent=1)
        print(shape + "  " + "  ".join(f"{n}: {r['over_cublas']:.3f} (g {r['graph_over_cublas']:.3f})"
                                       for n, r in result["timing"][shape].items()), flush=True)
    print("\n---- summary: do_bench ratio to cuBLAS (graph ratio), median of 3 interleaved rounds")
    for n in versions:
        rs = [result["timing"][s][n]["over_cublas"] for s in result["timing"]]
        gs = [result["timing"][s][n]["graph_over_cublas"] for s in result["timing"]]
        geo = statistics.geometric_mean(rs)
        print(f"{n:40s} geomean {geo:.3f} worst {min(rs):.3f} (graph geomean {statistics.geometric_mean(gs):.3f})  "
              + " ".join(f"{r:.3f}" for r in rs))


if __name__ == "__main__":
    if sys.argv[1] == "--compile":
        compile_all()
    else:
        gpu(sys.argv[1], "--sweep" in sys.argv, "--wide" in sys.argv)
