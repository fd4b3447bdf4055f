"""Issue 23: cuBLASLt's own tile at 8192³, 320 × 128, in Gluon.

torch.profiler names the kernel cuBLASLt runs at 8192³ (results/trials/nvidia-h200-2026-12-03-pingpong-fp8-wide-bf16-
library-kernels.json): ``nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB`` for bf16 and ``nvjet_sm90_qqtst_320x128_128x3_
1x2_h_bz_coopB`` for fp8, 384 threads (a producer and two consumer warpgroups), 188 636 bytes of shared memory, 132
CTAs as 66 clusters of 2. The name does not say which side of the row-major C the 320 runs along (cuBLAS is
column-major, where C's sides swap); the bytes are the same either way, and this probe puts it along N, as 320 of W's
rows: a step copies 128 + 320 rows of operands for 128 × 320 products, 7% fewer bytes a product than lesson 19's
128 + 256 for 128 × 256.

A tensor's sides are powers of two in Triton 3.9.0, so the tile is held as two: W's 320 rows come in two TMA copies
(a 256-row box and a 64-row one, into two rings), each consumer warpgroup (64 rows) keeps two accumulators, 64 × 256
and 64 × 64 (128 + 32 = 160 registers a thread), and issues two wgmma a step; C leaves in five 128 × 64 subtiles
through one or two 16 KiB buffers. 3 slots of 16 + 32 + 8 KiB (bf16, 64 of K) or the same bytes for fp8 (128 of K)
and one C buffer: 188 604 bytes compiled, 32 fewer than the library's. ``CLUSTER_M`` 2 stacks two CTAs along M that
share W's two copies by multicast (the library's cluster is 1 × 2; along which side of C, its name does not say).
Otherwise probe_coop's kernel (lesson 19's consumers with lesson 33's tile order, paced subtile stores and cluster
barriers).

Its run (H200, 2026-12-03, commit f1d947f56c; results/trials/nvidia-h200-2026-12-03-wide-tile-and-fp8-parity.json):
every variant correct on the GPU; at 8192³ 1.018x and 1.027x (cluster) cuBLAS in bf16 (v9 1.051x in the same run) and
1.009x torch._scaled_mm in fp8 with and without the cluster (lesson 34 1.021x); on the smaller shapes 0.77-0.95x,
where 320 columns leave the last wave of tiles short (at 4096³, 32 × 13 = 416 tiles on 132 SMs, 3.15 waves) and the
library runs a 256 × 128 tile. That commit's "2 C buffers" variant had a race the GPU check missed and ``--model``
finds (five subtiles a tile through buffers picked by the subtile's place in its tile); ``store_sub`` now picks them
by a running count. Fixed, it read 1.009x (bf16) and 1.013x (fp8) at 8192³ (commit 47fdb99d36,
results/trials/nvidia-h200-2026-12-03-pingpong-strips.json).

    python tools/probes/probe_wide_tile.py --compile        CPU: every variant compiled for sm_90, bf16 and fp8
    python tools/probes/probe_wide_tile.py --model          CPU: the kernels in the course's host model, exact
    python tools/probes/probe_wide_tile.py bf16 OUT.json    GPU: correct on odd shapes, the bf16 sweep beside v9, cuBLAS
    python tools/probes/probe_wide_tile.py fp8 OUT.json     GPU: correct on odd shapes, the fp8 sweep beside lesson 34
"""
import importlib.util
import pathlib
import sys

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)


def _load(name):
    spec = importlib.util.spec_from_file_location(name, pathlib.Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


coop = _load("probe_coop")
cluster = _load("probe_fp8_cluster")
ordered_tile, halves, release = coop.ordered_tile, coop.halves, coop.release

NUM_WARPS = 8
WIDE, EXTRA = 256, 64               # W's 320 rows of a tile: a 256-row box and a 64-row one
BASE = {"BLOCK_M": 128, "BLOCK_K": 64, "STAGES": 3, "GROUP_M": 8, "LOAD_REGS": 40, "C_BUFFERS": 1, "SNAKE": 0,
        "CLUSTER_M": 1}
VARIANTS = {
    "128x320, 3 slots": {},
    "128x320, 3 slots, 2 C buffers": {"C_BUFFERS": 2},
    "128x320, 3 slots, cluster 2": {"CLUSTER_M": 2},
}


@gluon.jit
def wide_load(a_desc, b_desc, b2_desc, a_ring, b_ring, b2_ring, ready, empty, b_empty, M, N, K,
              STAGES: gl.constexpr, GROUP_M: gl.constexpr, B_KN: gl.constexpr, SNAKE: gl.constexpr,
              CLUSTER_M: gl.constexpr):
    ROWS: gl.constexpr = a_desc.block_shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_shape[1]
    B_COLS: gl.constexpr = b_desc.block_shape[1] if B_KN else b_desc.block_shape[0]
    B2_COLS: gl.constexpr = b2_desc.block_shape[1] if B_KN else b2_desc.block_shape[0]
    BLOCK_N: gl.constexpr = B_COLS + B2_COLS
    num_pid_m = gl.cdiv(M, ROWS)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = ordered_tile(tile, num_pid_m, num_pid_n, GROUP_M, SNAKE)
        n0 = pid_n * BLOCK_N
        for k in range(k_tiles):
            slot = step % STAGES
            phase = ((step // STAGES) & 1) ^ 1
            mbarrier.wait(empty.index(slot), phase)
            mbarrier.expect(ready.index(slot),
                            a_desc.nbytes_per_cta + b_desc.nbytes_per_cta + b2_desc.nbytes_per_cta)
            tma.async_load(a_desc, [pid_m * ROWS, k * BLOCK_K], ready.index(slot), a_ring.index(slot))
            if CLUSTER_M > 1:                   # W's slots must be free in every CTA before the multicasts fill them
                mbarrier.wait(b_empty.index(slot), phase)
            if B_KN:
                tma.async_load(b_desc, [k * BLOCK_K, n0], ready.index(slot), b_ring.index(slot),
                               multicast=CLUSTER_M > 1)
                tma.async_load(b2_desc, [k * BLOCK_K, n0 + B_COLS], ready.index(slot), b2_ring.index(slot),
                               multicast=CLUSTER_M > 1)
            else:
                tma.async_load(b_desc, [n0, k * BLOCK_K], ready.index(slot), b_ring.index(slot),
                               multicast=CLUSTER_M > 1)
                tma.async_load(b2_desc, [n0 + B_COLS, k * BLOCK_K], ready.index(slot), b2_ring.index(slot),
                               multicast=CLUSTER_M > 1)
            step += 1


@gluon.jit
def store_sub(c_desc, c_smem, part, row, col, n, C_BUFFERS: gl.constexpr):
    """The program's subtile number ``n`` (counted over all its tiles) through buffer n % C_BUFFERS. A tile has five
    subtiles, an odd number, so the buffer cannot be the subtile's place in its tile (lesson 33's ``store_subtile``
    takes that): with two buffers, a tile's first subtile would reuse the buffer its predecessor's last one is still
    being stored from, past what ``store_wait(C_BUFFERS - 1)`` retires."""
    buffer = c_smem.index(n % C_BUFFERS)
    tma.store_wait(C_BUFFERS - 1)
    buffer.store(part.to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [row, col], buffer)


@gluon.jit
def wide_mma(c_desc, a_ring, b_ring, b2_ring, c_smem, ready, empty, b_empty, M, N, K, STAGES: gl.constexpr,
             GROUP_M: gl.constexpr, acc_layout: gl.constexpr, acc2_layout: gl.constexpr, B_KN: gl.constexpr,
             SNAKE: gl.constexpr, CLUSTER_M: gl.constexpr, C_BUFFERS: gl.constexpr):
    ROWS: gl.constexpr = c_desc.block_shape[0]
    SUB_N: gl.constexpr = c_desc.block_shape[1]                # 64: four subtiles of the wide part, one of the extra
    B_COLS: gl.constexpr = b_ring.shape[2] if B_KN else b_ring.shape[1]
    B2_COLS: gl.constexpr = b2_ring.shape[2] if B_KN else b2_ring.shape[1]
    BLOCK_N: gl.constexpr = B_COLS + B2_COLS
    BLOCK_K: gl.constexpr = a_ring.shape[2]
    num_pid_m = gl.cdiv(M, ROWS)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    step = 0
    stored = 0                              # subtiles of C this program has stored: picks the next one's buffer
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = ordered_tile(tile, num_pid_m, num_pid_n, GROUP_M, SNAKE)
        acc = gl.zeros([ROWS, B_COLS], gl.float32, layout=acc_layout)
        acc2 = gl.zeros([ROWS, B2_COLS], gl.float32, layout=acc2_layout)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
            a = a_ring.index(slot)
            b = b_ring.index(slot) if B_KN else b_ring.index(slot).permute((1, 0))
            b2 = b2_ring.index(slot) if B_KN else b2_ring.index(slot).permute((1, 0))
            acc = warpgroup_mma(a, b, acc, is_async=True)
            acc2 = warpgroup_mma(a, b2, acc2, is_async=True)
            # Two groups a step: at most this step's two still running, so the previous step's slot is read.
            acc, acc2, _, _, _ = warpgroup_mma_wait(2, deps=(acc, acc2, a, b, b2))
            release(empty, b_empty, (step + STAGES - 1) % STAGES, k > 0, CLUSTER_M)
            step += 1
        acc, acc2 = warpgroup_mma_wait(0, deps=(acc, acc2))
        release(empty, b_empty, (step + STAGES - 1) % STAGES, True, CLUSTER_M)
        row = pid_m * ROWS
        col = pid_n * BLOCK_N
        left, right = halves(acc, ROWS, B_COLS)
        q0, q1 = halves(left, ROWS, B_COLS // 2)
        q2, q3 = halves(right, ROWS, B_COLS // 2)
        store_sub(c_desc, c_smem, q0, row, col, stored, C_BUFFERS)
        store_sub(c_desc, c_smem, q1, row, col + SUB_N, stored + 1, C_BUFFERS)
        store_sub(c_desc, c_smem, q2, row, col + 2 * SUB_N, stored + 2, C_BUFFERS)
        store_sub(c_desc, c_smem, q3, row, col + 3 * SUB_N, stored + 3, C_BUFFERS)
        store_sub(c_desc, c_smem, acc2, row, col + 4 * SUB_N, stored + 4, C_BUFFERS)
        stored += 5
    tma.store_wait(0)


@gluon.jit
def wide_kernel(a_desc, b_desc, b2_desc, c_desc, M, N, K, acc_layout: gl.constexpr, acc2_layout: gl.constexpr,
                STAGES: gl.constexpr, GROUP_M: gl.constexpr, LOAD_REGS: gl.constexpr, B_KN: gl.constexpr,
                SNAKE: gl.constexpr, CLUSTER_M: gl.constexpr, C_BUFFERS: gl.constexpr):
    gl.static_assert(gl.num_ctas() == CLUSTER_M, "launch with num_ctas=CLUSTER_M")
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    b2_ring = gl.allocate_shared_memory(b2_desc.dtype, [STAGES] + b2_desc.block_type.shape, b2_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [C_BUFFERS] + c_desc.block_type.shape, c_desc.layout)
    ready = mbarrier.allocate_mbarrier(batch=STAGES)
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
        (wide_mma, (c_desc, a_ring, b_ring, b2_ring, c_smem, ready, empty, b_empty, M, N, K, STAGES, GROUP_M,
                    acc_layout, acc2_layout, B_KN, SNAKE, CLUSTER_M, C_BUFFERS)),
        (wide_load, (a_desc, b_desc, b2_desc, a_ring, b_ring, b2_ring, ready, empty, b_empty, M, N, K, STAGES,
                     GROUP_M, B_KN, SNAKE, CLUSTER_M)),
    ], [1], [LOAD_REGS])
    if CLUSTER_M > 1:
        gl.barrier(cluster=True)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))
        if CLUSTER_M > 1:
            mbarrier.invalidate(b_empty.index(s))


def config(cfg: dict, fp8: bool) -> dict:
    """fp8 doubles BLOCK_K (128-byte rows either way) and takes 32 of K a wgmma."""
    return {**cfg, "BLOCK_K": 2 * cfg["BLOCK_K"]} if fp8 else dict(cfg)


def layouts(cfg: dict, fp8: bool) -> dict:
    n = cfg["CLUSTER_M"]
    split = [[1 << i, 0] for i in range(n.bit_length() - 1)]
    k = 32 if fp8 else 16
    return {"ac_cga": split, "b_cga": [[0, 0]] * len(split),
            "acc_layout": gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                                    instr_shape=[16, WIDE, k], cga_layout=split),
            "acc2_layout": gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                                     instr_shape=[16, EXTRA, k], cga_layout=split)}


def blocks(cfg: dict, b_kn: bool):
    """A's, W's two parts' and C's boxes (a CTA's rows times the cluster's CTAs)."""
    rows, bk = cfg["CLUSTER_M"] * cfg["BLOCK_M"], cfg["BLOCK_K"]
    part = (lambda cols: [bk, cols]) if b_kn else (lambda cols: [cols, bk])
    return [rows, bk], part(WIDE), part(EXTRA), [rows, EXTRA]


def constexprs(cfg: dict, fp8: bool, b_kn: bool) -> dict:
    lay = layouts(cfg, fp8)
    return {"acc_layout": lay["acc_layout"], "acc2_layout": lay["acc2_layout"], "B_KN": b_kn,
            **{k: cfg[k] for k in ("STAGES", "GROUP_M", "LOAD_REGS", "SNAKE", "CLUSTER_M", "C_BUFFERS")}}


def compile_all(variants=None, make=None, base=BASE) -> None:
    """Every variant compiled for sm_90 on the CPU (bf16 with both layouts of B, fp8 with W N × K): shared memory,
    registers, spills, the wgmma opcodes. ``make(cfg, fp8)`` a Launch (probe_pingpong_strips.py passes its own)."""
    from gluon_course.grading.gemm_kernel import fits

    make = make or Launch
    for fp8 in (False, True):
        for name, diff in (variants or VARIANTS).items():
            launch = make({**base, **diff}, fp8=fp8)
            for b_kn in ((False,) if fp8 else (True, False)):
                k = launch.compiled(b_kn)
                gmma = {op: n for op, n in k.opcodes().items() if "GMMA" in op}
                serial = any("serialized" in note for note in k.ptxas_notes())
                print(f"{'fp8' if fp8 else 'bf16'} {name:32s} B {'K×N' if b_kn else 'N×K'}: {k.shared_bytes} B shared, "
                      f"{k.registers} registers, {fits(k, launch.num_warps, launch.cfg) or 'fits, no spills'}; {gmma}"
                      f"{'; wgmma SERIALIZED' if serial else ''}", flush=True)


def host_check(variants=None, make=None, base=BASE, shapes=((300, 264, 520), (129, 700, 72), (1, 8, 8)),
               rule=None) -> bool:
    """CPU: every variant's kernel run by the course's host model (gluon_course.model, one partition at a time at each
    wait), bf16 with both layouts of B on a few programs, against the exact product; prints one line a variant.
    ``rule(programs)``: a check of the programs' traces as well (probe_pingpong_strips: the consumers' turns)."""
    from triton.experimental.gluon import language as gl

    from gluon_course.model import ModelUnsupported, gemm as model_gemm
    from gluon_course.model import run as run_kernel
    from gluon_course.model.shims import HostTensorDescriptor

    make = make or Launch
    ok = True
    for name, diff in (variants or VARIANTS).items():
        launch = make({**base, **diff})
        if launch.cfg.get("CLUSTER_M", 1) > 1:
            print(f"{name:34s}: not modelled here (this check launches one CTA a program; a cluster runs in "
                  "gluon_course.model.cluster_launch)")
            continue
        for b_layout in ("row", "col"):
            b_kn = b_layout == "row"

            def run(a_buf, b_buf, c_buf, M, N, K, launch=launch, b_kn=b_kn):
                descs = [HostTensorDescriptor(buf, block, gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16))
                         for buf, block in zip((a_buf, b_buf, b_buf, c_buf), launch.blocks(b_kn))]
                tiles = -(-M // launch.cfg["BLOCK_M"]) * -(-N // launch.tile_n)
                return run_kernel(launch.kernel, min(3, tiles), *descs, M, N, K, num_warps=launch.num_warps,
                                  **launch.constexprs(b_kn))
            try:
                problem = model_gemm.check(run, shapes, b_layout=b_layout,
                                           tile=(launch.cfg["BLOCK_M"], launch.tile_n), rule=rule)
            except ModelUnsupported as e:
                problem = f"not modelled: {e}"
            ok = ok and problem is None
            print(f"{name:34s} B {'K×N' if b_kn else 'N×K'}: {problem or 'exact, every element written once'}",
                  flush=True)
    return ok


class Launch:
    """One variant's launch for one set of tensors (bf16 A·B with B either way, or fp8 A·Wᵀ), descriptors kept by the
    addresses, the grid one program per SM (or the clusters the GPU holds at once). The kernel, its warps, its tile's
    width and its boxes are the attributes and methods below (probe_pingpong_strips.py overrides them)."""
    kernel, num_warps, tile_n = wide_kernel, NUM_WARPS, WIDE + EXTRA

    def __init__(self, cfg: dict, fp8: bool = False):
        self.fp8, self.cfg, self.plans = fp8, config(cfg, fp8), {}

    def layouts(self) -> dict:
        return layouts(self.cfg, self.fp8)

    def blocks(self, b_kn: bool):
        return blocks(self.cfg, b_kn)

    def constexprs(self, b_kn: bool) -> dict:
        return constexprs(self.cfg, self.fp8, b_kn)

    def compiled(self, b_kn: bool):
        """The variant compiled for sm_90 (on the CPU too)."""
        from gluon_course.machine import compile_cached, tensor_descriptor_type

        lay = self.layouts()
        ab, gl_ab = ("fp8e4nv", gl.float8e4nv) if self.fp8 else ("bf16", gl.bfloat16)

        def desc(dtype, gl_dtype, block, cga):
            return tensor_descriptor_type(dtype, block, gl.NVMMASharedLayout.get_default_for(
                block, gl_dtype, cga_layout=cga or None))

        a_blk, b_blk, b2_blk, c_blk = self.blocks(b_kn)
        sig = {"a_desc": desc(ab, gl_ab, a_blk, lay["ac_cga"]), "b_desc": desc(ab, gl_ab, b_blk, lay["b_cga"]),
               "b2_desc": desc(ab, gl_ab, b2_blk, lay["b_cga"]),
               "c_desc": desc("bf16", gl.bfloat16, c_blk, lay["ac_cga"]), "M": "i32", "N": "i32", "K": "i32"}
        n = self.cfg.get("CLUSTER_M", 1)
        options = {"num_ctas": n} if n > 1 else {}
        return compile_cached(self.kernel, "sm_90", signature=sig, constexprs=self.constexprs(b_kn),
                              aligned=("M", "N", "K"), num_warps=self.num_warps, **options)

    def __call__(self, a, b, c):
        import torch
        import triton

        from gluon_course.nvidia import launch as kept
        from gluon_course.nvidia.hopper import resident_clusters, tma_descriptor

        # fp8: b is W (N × K). bf16: b is K × N, row-major or the transpose of an N × K one.
        b_kn = not self.fp8 and (b.shape[1] <= 1 or b.stride(1) == 1)
        key = (kept.signature(a, b, c), a.data_ptr(), b.data_ptr(), c.data_ptr())
        p = self.plans.get(key)
        if p is None:
            cfg, lay = self.cfg, self.layouts()
            M, K = a.shape
            N = b.shape[0] if self.fp8 else b.shape[1]
            w = b if (self.fp8 or b_kn) else b.t()
            a_blk, b_blk, b2_blk, c_blk = self.blocks(b_kn)
            descs = (tma_descriptor("a", a, a_blk, cga=lay["ac_cga"] or None),
                     tma_descriptor("b", w, b_blk, cga=lay["b_cga"] or None),
                     tma_descriptor("b2", w, b2_blk, cga=lay["b_cga"] or None),
                     tma_descriptor("c", c, c_blk, cga=lay["ac_cga"] or None))
            ce = self.constexprs(b_kn)
            values = {"M": M, "N": N, "K": K, **ce}
            rest = tuple(values[n] for n in self.kernel.arg_names[4:])
            n = cfg.get("CLUSTER_M", 1)
            options = {"num_ctas": n} if n > 1 else {}
            tiles = triton.cdiv(M, n * cfg["BLOCK_M"]) * triton.cdiv(N, self.tile_n)
            sms = torch.cuda.get_device_properties(a.device).multi_processor_count
            programs = (resident_clusters(self.kernel, (*descs, M, N, K),
                                          {**ce, "num_warps": self.num_warps, **options}, n, a.device)
                        if n > 1 else sms)
            p = self.plans[key] = (kept.KeptLaunch(self.kernel, self.num_warps, **options), min(tiles, programs),
                                   descs, rest)
        launcher, grid, descs, rest = p
        launcher(grid, torch.cuda.current_stream().cuda_stream, descs, rest)
        return c


if __name__ == "__main__":
    if sys.argv[1:] == ["--compile"]:
        compile_all()
    elif sys.argv[1:] == ["--model"]:
        sys.exit(0 if host_check() else 1)
    else:                                   # bf16|fp8 OUT.json [WORDS]: only the variants whose names contain WORDS
        chosen = {n: d for n, d in VARIANTS.items() if " ".join(sys.argv[3:]) in n}
        if sys.argv[1] == "bf16":
            coop.gpu(sys.argv[2], True, ours={n: Launch({**BASE, **d}) for n, d in chosen.items()})
        else:
            cluster.main(sys.argv[2], chosen, make=lambda cfg: Launch(cfg, fp8=True), base=BASE)
