"""Issue 23's fp8 sweep, the one lever left untried: the last, partial wave of tiles. Lesson 34's kernel gives each of
the H200's 132 programs whole 128 × 256 tiles in turn, and every sweep shape ends in a partial wave: 8192³ has 2048
tiles (15.5 waves, so the last wave keeps 64 of 132 SMs busy), 8192 × 14336 × 4096 3584 (27.15), 8192 × 4096 × 14336
1024 (7.76), 8192 × 6144 × 4096 1536 (11.64), 2048 × 4096 × 4096 256 (1.94). Each program runs ceil(waves) tiles
while the average is the waves themselves: 2–3% of the GPU idles at the end of each of these calls.

Stream-K (``streamk_kernel`` of probe_streamk.py, lesson 32's until it left the lesson) shares the K steps of the last partial wave (STREAM_K = 1), or of it and one
full wave before (STREAM_K = 2), evenly among the programs; a shared tile is finished by the last program to arrive
at its counter, which adds the fp32 partials in program order (the same bits on every run). This probe is lesson 34's
kernel with those stream-K units: probe_streamk.py's producer and lesson 32's K loop as they are, lesson 34's scales
and epilogue. Not a lesson: if it wins by more than a run's spread, it becomes lesson 34's last section.

Its three runs (H200, 2026-12-03, commits c94c597fdb, 960a498ff1, d82f09d4b7; all in
results/trials/nvidia-h200-2026-12-03-fp8-streamk.json): correct on the odd shapes, slower than lesson 34's kernel on
every shape (0.64x torch._scaled_mm at 2048x4096x4096, 0.86-0.98x elsewhere, lesson 34's 0.98-1.02x); the fix-up's
read-back of partials that went out to HBM is most of the loss, and with the fix-up dropped it only ties. Lesson 34's
section 4 says so.

    python tools/probes/probe_fp8_streamk.py --compile          CPU: each variant compiled for sm_90 (spills, shared memory)
    python tools/probes/probe_fp8_streamk.py OUT.json           GPU: correctness on odd shapes, then interleaved timings
    python tools/probes/probe_fp8_streamk.py --diagnose OUT.json   GPU: where stream-K's time goes (timings only)
    python tools/probes/probe_fp8_streamk.py --fixup OUT.json      GPU: the fixup in parts (timings only)
    python tools/probes/probe_fp8_streamk.py one NAME M N K        GPU: one launch of FIXUPS[NAME] in NVTX range "probe"
"""
import importlib.util
import json
import statistics
import sys
from pathlib import Path

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from gluon_course import load_solution

_FP8 = load_solution("34")
# Stream-K's units, partials and producer, from probe_streamk.py beside this file (lesson 32's stream-K, at the
# commits this probe ran at); the K loop and tile offsets it builds on are lesson 32's.
_spec = importlib.util.spec_from_file_location("probe_streamk", Path(__file__).with_name("probe_streamk.py"))
_SK = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_SK)
apply_scales = _FP8.apply_scales
streamk_units = _SK.streamk_units
streamk_unit = _SK.streamk_unit
streamk_slot = _SK.streamk_slot
share_partial = _SK.share_partial
add_partials = _SK.add_partials
tile_offsets = _SK.tile_offsets
unit_products = _SK.unit_products
streamk_load_partition = _SK.streamk_load_partition

# name -> (STREAM_K, config over lesson 34's CONFIG, FIXUP); STREAM_K None is lesson 34's own kernel through its
# launcher, 0 this file's kernel with no tile shared (every tile whole, as lesson 34's).
VARIANTS = {
    "lesson 34": (None, {}, 1),
    "stream-K 1": (1, {}, 1),
    "stream-K 2": (2, {}, 1),
}
# --diagnose: where stream-K's time goes (its first run: 0.64-0.94x lesson 34's kernel). FIXUP 0 drops the shared
# tiles' partials (C wrong there, so no correctness step): what the partials' stores, counters and additions cost.
DIAGNOSE = {
    "lesson 34": (None, {}, 1),
    "this kernel, no tile shared": (0, {}, 1),
    "stream-K 1": (1, {}, 1),
    "stream-K 1, no fixup": (1, {}, 0),
    "stream-K 2, no fixup": (2, {}, 0),
}
DIAGNOSE_SHAPES = ((2048, 4096, 4096), (8192, 14336, 4096), (8192, 8192, 8192))
# --fixup: the fixup in parts (its second run: the fixup, not the units, is what stream-K loses).
FIXUPS = {
    "lesson 34": (None, {}, 1),
    "stream-K 1": (1, {}, 1),
    "stream-K 1, partials stored, counted, none read": (1, {}, 2),
    "stream-K 1, partials stored only": (1, {}, 3),
    "stream-K 1, no fixup": (1, {}, 0),
}
FIXUP_SHAPES = ((2048, 4096, 4096), (8192, 14336, 4096))
SHAPES = ((8192, 8192, 8192), (2048, 4096, 4096), (8192, 14336, 4096), (8192, 4096, 14336), (8192, 6144, 4096))
ODD_SHAPES = ((129, 520, 208), (1000, 1032, 4096), (777, 2056, 1040), (2048, 4096, 4096))
ROUNDS = 3


@gluon.jit
def sk_store(acc, c_desc, c_smem, a_scale_ptr, w_scale_ptr, pid_m, pid_n, M, N, acc_layout: gl.constexpr,
             A_PER_ROW: gl.constexpr, W_PER_ROW: gl.constexpr):
    """Lesson 34's epilogue: the scales, then C's tile by TMA."""
    BLOCK_M: gl.constexpr = c_desc.block_shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_shape[1]
    acc = apply_scales(acc, a_scale_ptr, w_scale_ptr, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N, acc_layout, A_PER_ROW,
                       W_PER_ROW)
    tma.store_wait(0)
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [pid_m * BLOCK_M, pid_n * BLOCK_N], c_smem)


@gluon.jit
def sk_mma(c_desc, a_ring, w_ring, c_smem, ready, empty, a_scale_ptr, w_scale_ptr, partial_ptr, flags_ptr, M, N, K,
           SK_TILES, STAGES: gl.constexpr, GROUP_M: gl.constexpr, acc_layout: gl.constexpr, A_PER_ROW: gl.constexpr,
           W_PER_ROW: gl.constexpr, FIXUP: gl.constexpr):
    """Lesson 34's consumers over stream-K's units: a tile had whole goes to C; a shared one's partial to its slot and
    the tile's counter; the last to arrive adds the partials in program order, scales and stores C, resets the
    counter. FIXUP 1 is that; the others are diagnoses only (C wrong in the shared tiles): 0 drops a shared tile's
    partial (nothing stored or counted), 2 stores and counts it and the last to arrive stores its own partial as C
    (no partial read back), 3 stores it and nothing more (no counter, no C)."""
    BLOCK_M: gl.constexpr = c_desc.block_shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_shape[1]
    BLOCK_K: gl.constexpr = a_ring.shape[2]
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    programs = gl.num_programs(0)
    sk_steps = SK_TILES * k_tiles
    step = 0
    for i in range(streamk_units(programs, num_pid_m * num_pid_n, SK_TILES, k_tiles)):
        tile, pid_m, pid_n, k0, k1, q0, q1 = streamk_unit(i, programs, SK_TILES, k_tiles, num_pid_m, num_pid_n,
                                                          GROUP_M)
        # Lesson 32's K loop over the unit's steps: A K-major, W's N × K tile viewed K × N, no second strip.
        acc, _, step = unit_products(a_ring, w_ring, w_ring, ready, empty, step, k0, k1, STAGES, acc_layout,
                                     acc_layout, True, False, 0)
        if q0 == q1:
            sk_store(acc, c_desc, c_smem, a_scale_ptr, w_scale_ptr, pid_m, pid_n, M, N, acc_layout, A_PER_ROW,
                     W_PER_ROW)
        elif FIXUP == 3:
            mine = streamk_slot(gl.program_id(0), tile, programs, sk_steps, k_tiles)
            gl.store(partial_ptr + mine * (BLOCK_M * BLOCK_N) + tile_offsets(BLOCK_M, BLOCK_N, acc_layout), acc)
        elif FIXUP > 0:
            mine = streamk_slot(gl.program_id(0), tile, programs, sk_steps, k_tiles)
            arrived = share_partial(acc, partial_ptr, flags_ptr, tile, mine, acc_layout)
            if arrived == q1 - q0:
                if FIXUP == 1:
                    acc = add_partials(partial_ptr, tile, q0, q1, programs, sk_steps, k_tiles, BLOCK_M, BLOCK_N,
                                       acc_layout)
                sk_store(acc, c_desc, c_smem, a_scale_ptr, w_scale_ptr, pid_m, pid_n, M, N, acc_layout, A_PER_ROW,
                         W_PER_ROW)
                gl.atomic_xchg(flags_ptr + tile, 0, sem="relaxed", scope="gpu")
    tma.store_wait(0)


@gluon.jit(do_not_specialize=["M", "N", "K", "SK_TILES"])
def streamk_fp8_kernel(a_desc, w_desc, c_desc, a_scale_ptr, w_scale_ptr, partial_ptr, flags_ptr, M, N, K, SK_TILES,
                       BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, acc_layout: gl.constexpr,
                       STAGES: gl.constexpr, GROUP_M: gl.constexpr, LOAD_REGS: gl.constexpr, A_PER_ROW: gl.constexpr,
                       W_PER_ROW: gl.constexpr, FIXUP: gl.constexpr = 1):
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    w_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BLOCK_M, BLOCK_N], c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([
        (sk_mma, (c_desc, a_ring, w_ring, c_smem, ready, empty, a_scale_ptr, w_scale_ptr, partial_ptr, flags_ptr, M,
                  N, K, SK_TILES, STAGES, GROUP_M, acc_layout, A_PER_ROW, W_PER_ROW, FIXUP)),
        # lesson 32's stream-K producer as it is: A K-major (A_KM), W N × K (B_KN False)
        (streamk_load_partition, (a_desc, w_desc, a_ring, w_ring, ready, empty, M, N, K, SK_TILES, STAGES, GROUP_M,
                                  True, False)),
    ], [1], [LOAD_REGS])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


def compiled(cfg=None, a_per_row=False, w_per_row=False, fixup=1):
    """streamk_fp8_kernel compiled for sm_90 on the CPU, as the launcher below calls it."""
    from gluon_course.machine import compile_cached, tensor_descriptor_type

    cfg = {**_FP8.CONFIG, **(cfg or {})}
    bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]

    def desc(dtype, gl_dtype, block):
        return tensor_descriptor_type(dtype, block, gl.NVMMASharedLayout.get_default_for(block, gl_dtype))

    signature = {"a_desc": desc("fp8e4nv", gl.float8e4nv, [bm, bk]), "w_desc": desc("fp8e4nv", gl.float8e4nv, [bn, bk]),
                 "c_desc": desc("bf16", gl.bfloat16, [bm, bn]), "a_scale_ptr": "*fp32", "w_scale_ptr": "*fp32",
                 "partial_ptr": "*fp32", "flags_ptr": "*i32", "M": "i32", "N": "i32", "K": "i32", "SK_TILES": "i32"}
    constexprs = {k: cfg[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "GROUP_M", "LOAD_REGS")}
    constexprs.update(_FP8.kernel_layouts(cfg["num_warps"], bn), A_PER_ROW=a_per_row, W_PER_ROW=w_per_row,
                      FIXUP=fixup)
    return compile_cached(streamk_fp8_kernel, "sm_90", signature=signature, constexprs=constexprs,
                          aligned=("a_scale_ptr", "w_scale_ptr", "partial_ptr", "flags_ptr"),
                          num_warps=cfg["num_warps"])


class StreamKPlan:
    """One shape's launch of streamk_fp8_kernel: descriptors, grid, SK_TILES and the scratch (two fp32 tiles per
    program, one counter per tile, zero before and after every launch) made once; the kernel called through
    lesson 34's kept launch (``gluon_course.nvidia.launch.KeptLaunch``), so the host's time per call is lesson 34's."""

    def __init__(self, a, w, a_scale, w_scale, c, stream_k, cfg=None, fixup=1):
        from gluon_course.nvidia import launch as kept
        from gluon_course.nvidia.fp8 import require_fp8_linear_args

        M, N, K, a_row, w_row = require_fp8_linear_args(a, w, a_scale, w_scale, c)
        cfg = {**_FP8.CONFIG, **(cfg or {})}
        self.num_warps = cfg.pop("num_warps")
        bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
        blocks = ([bm, bk], [bn, bk], [bm, bn])
        layouts = [gl.NVMMASharedLayout.get_default_for(b, d)
                   for b, d in zip(blocks, (gl.float8e4nv, gl.float8e4nv, gl.bfloat16))]
        self.descs = kept.host_descriptors((a, w, c), blocks, layouts)
        tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count
        self.programs, self.sk_tiles = (_SK.streamk_grid(tiles, triton.cdiv(K, bk), sms, stream_k) if stream_k
                                        else (min(sms, tiles), 0))
        self.partial = torch.empty(2 * self.programs * bm * bn, dtype=torch.float32, device=a.device)
        self.flags = torch.zeros(tiles, dtype=torch.int32, device=a.device)
        constexprs = {**cfg, **_FP8.kernel_layouts(self.num_warps, bn), "A_PER_ROW": a_row, "W_PER_ROW": w_row}
        self.rest = (a_scale, w_scale, self.partial, self.flags, M, N, K, self.sk_tiles,
                     *(constexprs[name] for name in _FP8.CONSTEXPR_ORDER), fixup)
        self.launcher = kept.KeptLaunch(streamk_fp8_kernel, self.num_warps)
        self.stream = triton.runtime.driver.active.get_current_stream
        self.device = a.device.index

    def __call__(self):
        self.launcher(self.programs, self.stream(self.device), self.descs, self.rest)


def compile_report():
    """CPU: every stream-K variant compiled for sm_90 (both scale kinds), its registers, spills and shared memory."""
    from gluon_course.grading.gemm_kernel import fits

    for a_row, w_row in ((False, False), (True, True)):
        k = compiled(None, a_row, w_row)
        problem = fits(k, _FP8.CONFIG["num_warps"], dict(_FP8.CONFIG))
        print(f"per-row scales {a_row}: registers {k.resources.get('registers')}, spills {k.spills}, "
              f"shared {k.shared_bytes} B: {problem or 'fits, no spills'}")


def one(name, M, N, K):
    from gluon_course.measure.ncu import launch_in_range
    from gluon_course.nvidia import fp8

    stream_k, cfg, fixup = FIXUPS[name]
    a, w, sa, sw = fp8.fp8_inputs(M, N, K, False)
    c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
    fn = (lambda: _FP8.matmul(a, w, sa, sw, c, **cfg)) if stream_k is None else \
        StreamKPlan(a, w, sa, sw, c, stream_k, cfg, fixup)
    launch_in_range(fn)


def main(path, variants=VARIANTS, shapes=SHAPES, odd_shapes=ODD_SHAPES):
    from gluon_course.measure.device import free_cache
    from gluon_course.measure.timing import paired_rounds, paired_row
    from gluon_course.nvidia import fp8

    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "rounds": ROUNDS, "variants": {n: {"STREAM_K": v[0], **v[1], "FIXUP": v[2]} for n, v in variants.items()},
           "correct": {}, "shapes": {}}

    def caller(name, a, w, sa, sw, c):
        stream_k, cfg, fixup = variants[name]
        if stream_k is None:
            return lambda: _FP8.matmul(a, w, sa, sw, c, **cfg)
        return StreamKPlan(a, w, sa, sw, c, stream_k, cfg, fixup)

    # Correctness first: odd shapes (tails past every tile edge), both scale kinds, C poisoned; each variant twice,
    # the second call's bits equal to the first's (the counters reset, the sum in program order).
    for M, N, K in odd_shapes:
        for per_row in (False, True):
            a, w, sa, sw = fp8.fp8_inputs(M, N, K, per_row)
            ref = fp8.reference(a, w, sa, sw)
            allowed = fp8.allowed_error(ref, a, w, sa, sw)
            for name in variants:
                c = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
                try:
                    fn = caller(name, a, w, sa, sw, c)
                    fn()
                    torch.cuda.synchronize()
                    first = c.clone()
                    problem = fp8.compare(c, ref, allowed)
                    c.fill_(float("nan"))
                    fn()
                    torch.cuda.synchronize()
                    if not problem and not torch.equal(c.view(torch.int16), first.view(torch.int16)):
                        problem = "a second call gave other bits"
                except Exception as e:  # noqa: BLE001 - a variant that fails is its entry
                    problem = f"{type(e).__name__}: {str(e)[:300]}"
                out["correct"].setdefault(name, {})[f"{M}x{N}x{K}{' per row' if per_row else ''}"] = problem or "ok"
            del a, w, sa, sw, ref, allowed
    json.dump(out, open(path, "w"), indent=1)
    good = [n for n in variants if all(v == "ok" for v in out["correct"].get(n, {}).values())]

    for M, N, K in shapes:
        a, w, sa, sw = fp8.fp8_inputs(M, N, K, False)
        lib_c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        library = lambda: fp8.scaled_mm(a, w, sa, sw, lib_c, True)  # noqa: E731
        row, calls = {}, {}
        for name in good:
            c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
            calls[name] = caller(name, a, w, sa, sw, c)
            calls[name]()
            row[name] = {}
            if isinstance(calls[name], StreamKPlan):
                row[name]["programs"], row[name]["sk_tiles"] = calls[name].programs, calls[name].sk_tiles
        for name, paired in paired_rounds(calls, library, ROUNDS).items():
            row[name].update(paired_row(paired, 2 * M * N * K))
        out["shapes"][f"{M}x{N}x{K}"] = row
        json.dump(out, open(path, "w"), indent=1)
        del a, w, sa, sw, lib_c, calls
        free_cache()

    for name, results in out["correct"].items():
        bad = {s: p for s, p in results.items() if p != "ok"}
        print(f"{name}: {'correct on every odd shape' if not bad else bad}")
    print(f"{'shape':18}" + "".join(f"{n:>22}" for n in good))
    for shape, row in out["shapes"].items():
        print(f"{shape:18}" + "".join(f"{row[n]['ratio']:>15.3f} {row[n]['tflops']:6.0f}" for n in good))
    for n in good:
        ratios = [row[n]["ratio"] for s, row in out["shapes"].items() if s != "8192x8192x8192"]
        print(f"{n}: sweep geomean {statistics.geometric_mean(ratios):.3f}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--compile"]:
        compile_report()
    elif sys.argv[1] == "--fixup":
        main(sys.argv[2], FIXUPS, FIXUP_SHAPES, ())
    elif sys.argv[1] == "one":
        # one NAME M N K: warm up, then one launch inside the NVTX range "probe" (what ncu --nvtx-include probe/ sees)
        one(" ".join(sys.argv[2:-3]), *map(int, sys.argv[-3:]))
    elif sys.argv[1] == "--diagnose":
        # The variants that drop partials are timed without a correctness step; the others were checked in the first run.
        main(sys.argv[2], DIAGNOSE, DIAGNOSE_SHAPES, ())
    else:
        main(sys.argv[1])
