"""Issue 23's fp8 sweep: does a cluster that multicasts W pay for fp8, where it did not for bf16?

In bf16 (tools/probes/probe_coop.py, 2026-12-03) a 2-CTA cluster multicasting B moved lesson 19's kernel by less than a
run's spread. Lesson 34's 128 × 256 × 128 step copies 16 KiB of A and 32 KiB of W into shared memory for 8.4 MFLOP:
about 7.6 TB/s out of L2 at 1300 TFLOPS, as much as bf16's 128 × 256 × 64 step asks at 700 (8.2 TB/s). Two CTAs
stacked along M that share W's tile read 16 + 16 KiB a step each instead of 48, a third less.

Its run (H200, 2026-12-03, commit 2af9a8dc94; results/trials/nvidia-h200-2026-12-03-fp8-cluster.json): every variant
correct, the cluster's sweep geomean 0.985x torch._scaled_mm against lesson 34's 1.002x; L2 at 34.6% of its peak
during lesson 34's launch at 8192³ (Nsight Compute). Lesson 34's section 4 says so.

The kernel is probe_coop's ``coop_kernel`` (lesson 19's two consumer warpgroups on one tile, lesson 33's cluster and
subtile epilogue) as it is, given e4m3 descriptors and fp8's wgmma layout (32 of K an instruction). It applies no
scales: the comparison is with lesson 34's kernel and ``torch._scaled_mm`` given scales of 1 (the scales cost lesson
34's epilogue one multiply an element, once per tile). Not a lesson: if a variant wins by more than a run's spread it
goes into lesson 34 with its scales, checks and plants.

    python tools/probes/probe_fp8_cluster.py --compile     CPU: every variant compiled for sm_90
    python tools/probes/probe_fp8_cluster.py OUT.json      GPU: correctness on odd shapes, then interleaved timings
    python tools/probes/probe_fp8_cluster.py --parity OUT.json    GPU: lesson 34 alone, 9 interleaved rounds a shape
    python tools/probes/probe_fp8_cluster.py one NAME M N K   GPU: one launch in NVTX range "probe" (for ncu)
    python tools/probes/probe_fp8_cluster.py --counters OUT.json   GPU: COUNTED checked and timed at two shapes
    OUT=$OUT bash tools/probes/probe_fp8_counters.sh        GPU: that, and Nsight Compute's L2 counters for each
    OUT=$OUT bash tools/probes/probe_fp8_cluster.sh         GPU: both, ncu on lesson 34's kernel and the cluster at 8192³
"""
import importlib.util
import json
import pathlib
import statistics
import sys

from triton.experimental.gluon import language as gl

from gluon_course import load_solution

_spec = importlib.util.spec_from_file_location("probe_coop", pathlib.Path(__file__).with_name("probe_coop.py"))
coop = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coop)
_FP8 = load_solution("34")

NUM_WARPS = 8
BASE = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "STAGES": 3, "GROUP_M": 8, "LOAD_REGS": 40,
        "C_SPLIT": 1, "C_BUFFERS": 1, "SNAKE": 0, "CLUSTER_M": 1}
# 3 slots of 48 KiB and C's 64 KiB tile: 208 KiB; 4 slots leave 32 KiB for C, two 128 × 64 quarters.
VARIANTS = {
    "coop (lesson 34's tile)": {},
    "coop, 4 slots, quarters x2": {"STAGES": 4, "C_SPLIT": 4, "C_BUFFERS": 2},
    "cluster 2, W multicast": {"CLUSTER_M": 2},
    "cluster 2, 4 slots, quarters x2": {"CLUSTER_M": 2, "STAGES": 4, "C_SPLIT": 4, "C_BUFFERS": 2},
}
# --counters: what Nsight Compute's L2 counters make of a multicast. The cluster with every CTA copying W's tile
# itself (MULTICAST False: the same copies as no cluster, the cluster's barriers kept) beside the two above.
COUNTED = {
    "coop (lesson 34's tile)": {},
    "cluster 2, W multicast": {"CLUSTER_M": 2},
    "cluster 2, no multicast": {"CLUSTER_M": 2, "MULTICAST": False},
}
SHAPES = ((8192, 8192, 8192), (2048, 4096, 4096), (8192, 14336, 4096), (8192, 4096, 14336), (8192, 6144, 4096))
ODD_SHAPES = ((129, 520, 208), (1000, 1032, 4096), (777, 2056, 1040), (300, 4096, 512))
ROUNDS = 3


def layouts(cfg: dict) -> dict:
    n = cfg["CLUSTER_M"]
    split = [[1 << i, 0] for i in range(n.bit_length() - 1)]
    acc = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NUM_WARPS, 1],
                                    instr_shape=[16, cfg["BLOCK_N"], 32], cga_layout=split)
    return {"ac_cga": split, "w_cga": [[0, 0]] * len(split), "acc_layout": acc}


def constexprs(cfg: dict) -> dict:
    keys = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "GROUP_M", "LOAD_REGS", "SNAKE", "CLUSTER_M", "C_SPLIT",
            "C_BUFFERS")
    return {**{k: cfg[k] for k in keys}, "acc_layout": layouts(cfg)["acc_layout"], "B_KN": False,
            "MULTICAST": cfg.get("MULTICAST")}


def blocks(cfg: dict):
    rows = cfg["CLUSTER_M"] * cfg["BLOCK_M"]
    return [rows, cfg["BLOCK_K"]], [cfg["BLOCK_N"], cfg["BLOCK_K"]], [rows, cfg["BLOCK_N"] // cfg["C_SPLIT"]]


def compile_all(variants=None, make=None, base=BASE) -> None:
    """Every variant compiled for sm_90 on the CPU: shared memory, registers, spills, the wgmma opcodes."""
    from gluon_course.grading.gemm_kernel import fits

    make = make or Launch
    for name, diff in (variants or {**VARIANTS, **COUNTED}).items():
        launch = make({**base, **diff})
        k = launch.compiled()
        qgmma = {op: n for op, n in k.opcodes().items() if op.startswith(("QGMMA", "HGMMA"))}
        print(f"{name:34s}: {k.shared_bytes} B shared, {k.registers} registers, "
              f"{fits(k, launch.num_warps, launch.cfg) or 'fits, no spills'}; {qgmma}; multicast copies "
              f"{k.opcodes().get('UTMALDG.2D.MULTICAST', 0)}", flush=True)


class Launch:
    """One variant's launch for one set of tensors: descriptors made once, the grid one program per SM (or the
    clusters the GPU holds at once), launched through the course's kept launch. The kernel, its warps, constexprs
    and blocks are the attributes and methods below (probe_fp8_pingpong.py's variants override them)."""
    kernel = coop.coop_kernel
    num_warps = NUM_WARPS

    def __init__(self, cfg: dict):
        self.cfg, self.plans = cfg, {}

    def layouts(self) -> dict:
        return layouts(self.cfg)

    def constexprs(self) -> dict:
        return constexprs(self.cfg)

    def blocks(self):
        return blocks(self.cfg)

    def compiled(self):
        """The variant compiled for sm_90 (on the CPU too)."""
        from gluon_course.machine import compile_cached, tensor_descriptor_type

        lay = self.layouts()
        ac, wc = lay["ac_cga"] or None, lay["w_cga"] or None
        a_blk, w_blk, c_blk = self.blocks()

        def desc(dtype, gl_dtype, block, cga):
            return tensor_descriptor_type(dtype, block, gl.NVMMASharedLayout.get_default_for(block, gl_dtype,
                                                                                             cga_layout=cga))

        sig = {"a_desc": desc("fp8e4nv", gl.float8e4nv, a_blk, ac), "b_desc": desc("fp8e4nv", gl.float8e4nv, w_blk, wc),
               "c_desc": desc("bf16", gl.bfloat16, c_blk, ac), "M": "i32", "N": "i32", "K": "i32"}
        n = self.cfg.get("CLUSTER_M", 1)
        options = {"num_ctas": n} if n > 1 else {}
        return compile_cached(self.kernel, "sm_90", signature=sig, constexprs=self.constexprs(),
                              aligned=("M", "N", "K"), num_warps=self.num_warps, **options)

    def __call__(self, a, w, c):
        import torch
        import triton

        from gluon_course.nvidia import launch as kept
        from gluon_course.nvidia.hopper import resident_clusters, tma_descriptor

        key = (a.data_ptr(), w.data_ptr(), c.data_ptr(), tuple(a.shape), tuple(w.shape))
        p = self.plans.get(key)
        if p is None:
            cfg, lay = self.cfg, self.layouts()
            (M, K), N = a.shape, w.shape[0]
            a_blk, w_blk, c_blk = self.blocks()
            descs = (tma_descriptor("a", a, a_blk, cga=lay["ac_cga"] or None),
                     tma_descriptor("w", w, w_blk, cga=lay["w_cga"] or None),
                     tma_descriptor("c", c, c_blk, cga=lay["ac_cga"] or None))
            ce = self.constexprs()
            values = {"M": M, "N": N, "K": K, **ce}
            rest = tuple(values[n] for n in self.kernel.arg_names[3:])
            n = cfg.get("CLUSTER_M", 1)
            options = {"num_ctas": n} if n > 1 else {}
            tiles = triton.cdiv(M, n * cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
            sms = torch.cuda.get_device_properties(a.device).multi_processor_count
            programs = (resident_clusters(self.kernel, (*descs, M, N, K),
                                          {**ce, "num_warps": self.num_warps, **options}, n, a.device)
                        if n > 1 else sms)
            p = self.plans[key] = (kept.KeptLaunch(self.kernel, self.num_warps, **options), min(tiles, programs),
                                   descs, rest)
        launcher, grid, descs, rest = p
        launcher(grid, torch.cuda.current_stream().cuda_stream, descs, rest)
        return c


def main(path: str, variants=VARIANTS, shapes=SHAPES, make=None, base=BASE, rounds=ROUNDS) -> None:
    import torch
    import triton

    from gluon_course.measure.device import free_cache
    from gluon_course.measure.timing import paired_rounds, paired_row
    from gluon_course.nvidia import fp8

    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "rounds": rounds, "variants": {n: {**base, **d} for n, d in variants.items()}, "grid": {}, "correct": {},
           "shapes": {}}
    make = make or Launch
    ours = {name: make({**base, **diff}) for name, diff in variants.items()}
    one = torch.ones(1, dtype=torch.float32, device="cuda")
    for M, N, K in ODD_SHAPES:
        a, w, _, _ = fp8.fp8_inputs(M, N, K, False)
        ref = fp8.reference(a, w, one, one)
        allowed = fp8.allowed_error(ref, a, w, one, one)
        for name, fn in ours.items():
            c = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
            try:
                fn(a, w, c)
                torch.cuda.synchronize()
                problem = fp8.compare(c, ref, allowed)
            except Exception as e:  # noqa: BLE001 - a variant that fails is its entry
                problem = f"{type(e).__name__}: {str(e)[:300]}"
            out["correct"].setdefault(name, {})[f"{M}x{N}x{K}"] = problem or "ok"
        del a, w, ref, allowed
    json.dump(out, open(path, "w"), indent=1)
    good = [n for n in ours if all(v == "ok" for v in out["correct"][n].values())]
    for fn in ours.values():
        fn.plans.clear()          # the odd shapes' plans: "grid" below reads each shape's own

    for M, N, K in shapes:
        a, w, _, _ = fp8.fp8_inputs(M, N, K, False)
        lib_c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        calls = {"lesson 34": (lambda c=torch.empty_like(lib_c): _FP8.matmul(a, w, one, one, c))}
        for name in good:
            c = torch.empty_like(lib_c)
            calls[name] = (lambda fn=ours[name], c=c: fn(a, w, c))
        library = lambda: fp8.scaled_mm(a, w, one, one, lib_c, True)  # noqa: E731
        row = {}
        for name, fn in calls.items():
            fn()
            row[name] = {}
        out["grid"][f"{M}x{N}x{K}"] = {n: next(iter(ours[n].plans.values()))[1] for n in good}
        for name, paired in paired_rounds(calls, library, rounds).items():
            row[name].update(paired_row(paired, 2 * M * N * K))
        out["shapes"][f"{M}x{N}x{K}"] = row
        json.dump(out, open(path, "w"), indent=1)
        del a, w, lib_c, calls
        for fn in ours.values():
            fn.plans.clear()
        free_cache()

    for name, results in out["correct"].items():
        bad = {s: p for s, p in results.items() if p != "ok"}
        print(f"{name}: {'correct on every odd shape' if not bad else bad}")
    names = ["lesson 34"] + good
    print(f"{'shape':18}" + "".join(f"{n[:26]:>28}" for n in names))
    for shape, row in out["shapes"].items():
        print(f"{shape:18}" + "".join(f"{row[n]['ratio']:>21.3f} {row[n]['tflops']:6.0f}" for n in names))
    for n in names:
        ratios = [row[n]["ratio"] for s, row in out["shapes"].items() if s != "8192x8192x8192"]
        if len(ratios) > 1:
            print(f"{n}: sweep geomean {statistics.geometric_mean(ratios):.3f}")


def one(name: str, M: int, N: int, K: int) -> None:
    """Warm up one variant ("lesson 34" or a VARIANTS name), then one launch inside the NVTX range "probe"."""
    import torch

    from gluon_course.measure.ncu import launch_in_range
    from gluon_course.nvidia import fp8

    a, w, _, _ = fp8.fp8_inputs(M, N, K, False)
    unit = torch.ones(1, dtype=torch.float32, device="cuda")
    c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
    fn = (lambda: _FP8.matmul(a, w, unit, unit, c)) if name == "lesson 34" else \
        (lambda launch=Launch({**BASE, **{**VARIANTS, **COUNTED}[name]}): launch(a, w, c))
    launch_in_range(fn)


if __name__ == "__main__":
    if sys.argv[1:] == ["--compile"]:
        compile_all()
    elif sys.argv[1] == "--counters":
        main(sys.argv[2], COUNTED, ((8192, 8192, 8192), (2048, 4096, 4096)))
    elif sys.argv[1] == "--parity":
        main(sys.argv[2], {}, rounds=9)
    elif sys.argv[1] == "one":
        one(" ".join(sys.argv[2:-3]), *map(int, sys.argv[-3:]))
    else:
        main(sys.argv[1])
