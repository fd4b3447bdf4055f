"""Lesson 31's checks: on the CPU, what the plans keep and when they are built afresh (driven with CPU tensors: no
launch happens before a plan is built), what the descriptors keep of a tensor, and lesson 19's kernel at CONFIG for
sm_90; on a GPU, correctness with plans and descriptors kept, memory reused at one address, a CUDA graph, the
refusals; and the figures: host microseconds per call beside cuBLAS's, and do_bench beside a CUDA-graph replay."""
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks, Reference
from gluon_course.grading import tma_gemm
from gluon_course.grading.gemm import refuses
from gluon_course.grading.gemm_kernel import fits
from gluon_course.machine import compile_cached, tensor_descriptor_type
from gluon_course.nvidia.kept_plans import KeptLauncher, descriptors_check, gemm_operands, plans_check, valid_plan

# The probe of 2026-12-01 (results/trials/nvidia-h200-2026-12-01-call-cost-and-model-shapes.json, H200, Triton
# 3.9.0, torch 2.11): lesson 19's matmul() 114-157 µs per call, this lesson's launcher 14.2, torch.matmul(out=) 16.1
# and F.linear 20.3, plain Triton 42-64; do_bench over the graph replay 0.91 at 2048² × 8192 (cuBLAS 0.94).
PROBE = "NVIDIA H200, Triton 3.9.0, torch 2.11.0+cu130, 2026-12-01, tools/probes/probe_call_cost.py (a trial)"
HOST_SHAPE = (512, 4096, 4096)                   # A·Wᵀ, W 4096 × 4096 as nn.Linear keeps it


def _kept(mod):
    """Lesson 31's launcher as the toolkit's plan and descriptor checks drive it: a fresh Matmul, its plans kept by
    ``signature``, each plan's descriptors by ``_descriptors_for`` (A, B's N × K view where B is w.t(), C)."""
    import torch

    f = mod.Matmul()
    return KeptLauncher(operands=gemm_operands, tma={"A": 0, "B": 1, "C": 2},
                        plan=lambda args: f.plan(*args), plans=lambda: f.plans, plans_kept=mod.PLANS_KEPT,
                        descriptors=lambda p, args: p._descriptors_for(*args), descriptors_kept=mod.DESCRIPTORS_KEPT,
                        signature=mod.signature, other_dtype=torch.float16)


# A plan per signature (found again at any address; afresh for another shape, row stride, dtype, and for a view of A, B
# or C at every offset TMA refuses, each refused with TMA's rule; at most PLANS_KEPT, the newest never dropped), and
# descriptors per address (not per Python object; no tensor held; at most DESCRIPTORS_KEPT per plan): the toolkit's
# checks (gluon_course.nvidia.kept_plans), shared with lessons 32, 33 and 34.
plans = plans_check(_kept)
descriptors = descriptors_check(_kept)


def encoded_launch(mod):
    """With Triton's driver stood in for (its encoding and its C launch; everything between is Triton's own code): the
    plan's launch hands driver.c exactly what Triton's CompiledKernel.run would, encodes a kept descriptor set once,
    and encodes anew, with the new address, when C moves."""
    from gluon_course.nvidia.launch import RawLaunch, StubDriver, stub_compiled

    a, b, c = gemm_operands(256, 512, 384)
    p, problem = valid_plan(_kept(mod), (a, b, c))      # or the sentence of the plans check, where it has none
    if problem:
        return problem
    with StubDriver() as driver:
        k = stub_compiled(mod.v9.matmul_kernel, _compiled(mod, False), num_warps=p.num_warps)
        p.compiled, p.raw, p.grid, p.stream = k, RawLaunch.of(k), (3, 1, 1), driver.get_current_stream
        if p.raw is None:
            return "RawLaunch refused a kernel with no scratch memory: every call would encode its descriptors again"
        p.launch(a, b, c)
        p.launch(a, b, c)
        if driver.encodings != 3:
            return (f"two launches with the same tensors encoded {driver.encodings} CUtensorMaps: the three of a kept "
                    "descriptor set are encoded on its first launch and kept")
        descs = p._descriptors_for(a, b, c)
        k.run(3, 1, 1, 0, k.function, k.packed_metadata, None, None, None, *descs, *p.rest)
        ours, triton_s = driver.launches[1][-1], driver.launches[2][-1]
        if list(ours) != list(triton_s):
            return ("the launch hands driver.c other arguments than Triton's own launcher would for the same "
                    f"descriptors: {list(ours)[:8]} … against {list(triton_s)[:8]} …")
        moved = c.clone()
        p.launch(a, b, moved)
        maps = [x for x in driver.launches[-1][-1] if isinstance(x, tuple) and len(x) == 8]
        if len(maps) != 3 or maps[2][0] != moved.data_ptr():
            return ("a C at another address was launched with a CUtensorMap of address "
                    f"{maps[2][0] if len(maps) == 3 else None}, not C's {moved.data_ptr()}: the encoded maps must be "
                    "kept per descriptor set, not per plan")
    return None


# M and N far apart (M and N exchanged anywhere on the way leaves tiles of C out), tiles of 128 × 256 cut by every
# edge, K in 2 and 4 steps.
LAUNCHER_PROBLEMS = ((300, 40, 136), (17, 264, 200))


def launcher_path(mod):
    """The plan's own path (its checks, descriptors, grid and the kernel's arguments, as Plan.launch hands them to
    lesson 19's kernel) with the GPU stood in for by the host model (model.launcher, 3 SMs): C exact, each element
    written once, B K × N and as w.t() (called twice: the second through the kept plan and descriptors)."""
    from gluon_course.grading import NotChecked
    from gluon_course.model import ModelUnsupported
    from gluon_course.model import gemm as model_gemm

    for b_layout in ("col", "row"):
        f = mod.Matmul()
        try:
            problem = model_gemm.check_launcher(lambda a, b, c: f.plan(a, b, c).launch(a, b, c), LAUNCHER_PROBLEMS,
                                                b_layout=b_layout, calls=2 if b_layout == "col" else 1)
        except ModelUnsupported as e:
            return NotChecked(f"the host model does not model {e}")
        if problem:
            return (f"through the plan (checks, descriptors, grid, arguments), B "
                    f"{'K × N' if b_layout == 'row' else 'as w.t()'}: {problem}")
    return None


def plan_refusal_cases(mod) -> dict:
    """What the launcher must refuse before anything reaches a GPU, with CPU tensors: its own refusal (an unknown
    key; tests/test_launcher_paths.py holds the cases to every raise of the launcher's code) and the toolkit's checks
    the plan calls (the operands, TMA's 16-byte rule, the wgmma tile). {what: (call, error, words)}."""
    from gluon_course.grading.gemm import cpu_operands as operands

    return {
        "an unknown config key": (lambda: mod.Matmul({"BLOCK_SIZE": 64}), TypeError, ("BLOCK_SIZE",)),
        "B with 190 rows for A's 200 columns": (lambda: mod.Matmul().plan(*(lambda a, b, c: (a, b[:190], c))(
            *operands(17, 264, 200))), ValueError, ("190",)),
        "K = 199 bf16 (398-byte rows of A)": (lambda: mod.Matmul().plan(*operands(17, 264, 199)), ValueError,
                                              ("16", "lesson 13")),
        "num_warps=2 (half a warpgroup)": (lambda: mod.Matmul({"num_warps": 2}).plan(*operands(17, 264, 200)),
                                           ValueError, ("warpgroup",)),
    }


def plan_refusals(mod):
    """Every refusal of the launcher reached, on the CPU, with its sentence (plan_refusal_cases)."""
    from gluon_course.grading.gemm import refuses

    return refuses(plan_refusal_cases(mod))


def _compiled(mod, b_kn: bool, dtype: str = "bf16"):
    from triton.experimental.gluon import language as gl

    cfg = dict(mod.CONFIG)
    nw = cfg.pop("num_warps")
    BM, BN, BK = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    gdt = {"bf16": gl.bfloat16, "fp16": gl.float16}[dtype]

    def desc(block):
        return tensor_descriptor_type(dtype, block, gl.NVMMASharedLayout.get_default_for(block, gdt))

    signature = {"a_desc": desc([BM, BK]), "b_desc": desc([BK, BN] if b_kn else [BN, BK]), "c_desc": desc([BM, BN]),
                 "M": "i32", "N": "i32", "K": "i32"}
    return compile_cached(mod.v9.matmul_kernel, "sm_90", signature=signature, aligned=("M", "N", "K"),
                          constexprs={**cfg, **mod.v9.kernel_layouts(nw, BN), "B_KN": b_kn}, num_warps=nw)


def kernel(mod):
    """The kernel the plans launch is lesson 19's at CONFIG: its HGMMA products and TMA store, fitting one SM."""
    for b_kn in (True, False):
        k = _compiled(mod, b_kn)
        if not k.count_matching("HGMMA") or not k.count("UTMASTG.2D"):
            return "the compiled kernel has no HGMMA or no TMA store: the plans must launch lesson 19's kernel"
        problem = fits(k, mod.CONFIG["num_warps"], mod.CONFIG)
        if problem:
            return f"CONFIG on sm_90: {problem}"
    return None


# -- on a GPU ------------------------------------------------------------------------------------

def correct_kept_here(module_file: str) -> str | None:
    """Odd shapes with B K × N and as w.t(), each twice (the second time through kept plans and descriptors), then
    memory freed and reused at one address with another shape (for a child process)."""
    import torch

    from gluon_course.course import load_module_file
    from gluon_course.measure.gemm import check_gemm

    mod = load_module_file(module_file)
    shapes = tma_gemm.TMA_SHAPES + tma_gemm.MANY_TILES
    for layout in ("row", "col", "row"):
        problem = check_gemm(lambda a, b, c: mod.matmul(a, b, c), shapes=shapes, b_layout=layout)
        if problem:
            return f"B {'K × N' if layout == 'row' else 'as w.t()'}: {problem}"
    x = torch.randn(256, 1024, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(1024, 512, device="cuda", dtype=torch.bfloat16)
    mod.matmul(x, y)
    address = x.data_ptr()
    del x
    x = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(512, 512, device="cuda", dtype=torch.bfloat16)
    if x.data_ptr() != address:
        return "the allocator did not reuse the freed address, so this check could not test it"
    got = mod.matmul(x, y)
    want = (x.double() @ y.double()).to(torch.bfloat16)
    if not torch.allclose(got.float(), want.float(), rtol=2 ** -7, atol=0.25):
        return "a 512 × 512 A at the address of a freed 256 × 1024 A gave a wrong C: a stale descriptor"
    return None


def correct(mod):
    from gluon_course.measure.isolated import check_in_child

    return check_in_child(f"{__file__}:correct_kept_here", [mod.__file__], timeout=3 * tma_gemm.CHILD_LIMIT_S)


def launcher_refuses(mod):
    import torch

    from gluon_course.measure.gemm import gemm_inputs

    a, b = gemm_inputs(128, 128, 64, torch.bfloat16)
    mod.matmul(a, b)                               # a plan for this signature now exists
    storage = torch.empty(128 * 64 + 8, device="cuda", dtype=torch.bfloat16)
    shifted = storage[1:1 + 128 * 64].view(128, 64)
    return tma_gemm.launcher_refuses(mod) or refuses({
        "A 2 bytes past a 16-byte boundary, with a kept plan for its shape": (lambda: mod.matmul(shifted, b),
                                                                           ValueError, ("16",)),
        "A on the CPU": (lambda: mod.matmul(a.cpu(), b), ValueError, ("cuda",))})


def graph_replay(mod):
    """The launcher inside a CUDA graph: captured once, replayed with new data in the same buffers."""
    import torch

    from gluon_course.measure.gemm import compare_gemm, reference, tolerance

    a = torch.randn(1000, 1024, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(1024, 520, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(1000, 520, device="cuda", dtype=torch.bfloat16)
    mod.matmul(a, b, c)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        mod.matmul(a, b, c)
    for _ in range(2):
        a.copy_(torch.randn_like(a))
        c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        problem = compare_gemm(c, reference(a, b), tolerance(1024, torch.bfloat16))
        if problem:
            return f"a replay of the captured call: {problem}"
    return None


# -- figures -------------------------------------------------------------------------------------

def _host_inputs():
    import torch

    M, N, K = HOST_SHAPE
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    return a, w, torch.empty(M, N, device="cuda", dtype=torch.bfloat16)


def host_costs(mod) -> dict:
    """µs of host time per call: this launcher, torch.matmul into C (cuBLAS), F.linear, plain Triton, lesson 19's."""
    import torch.nn.functional as F

    from gluon_course.course import load_solution
    from gluon_course.measure import plain_triton
    from gluon_course.measure.timing import host_us_per_call_each

    a, w, c = _host_inputs()
    b = w.t()
    v9 = load_solution("19")
    import torch

    calls = {"course": lambda: mod.matmul(a, b, c), "cublas": lambda: torch.matmul(a, b, out=c),
             "f_linear": lambda: F.linear(a, w), "plain_triton": lambda: plain_triton.matmul(a, b, c),
             "lesson19": lambda: v9.matmul(a, b, c)}
    for fn in calls.values():
        fn()
    return host_us_per_call_each(calls)


def host_cost_measure(mod):
    from gluon_course.measure.timing import Measurement

    us = host_costs(mod)
    return Measurement(us["course"], f"{us['course']:.1f} µs per call (cuBLAS {us['cublas']:.1f}, plain Triton "
                                     f"{us['plain_triton']:.1f}, lesson 19 {us['lesson19']:.1f})",
                       {**{f"{k}_us": round(v, 2) for k, v in us.items()}, "shape": list(HOST_SHAPE)})


def host_ratio_measure(mod):
    from gluon_course.measure.timing import Measurement

    us = host_costs(mod)
    ratio = us["course"] / us["cublas"]
    return Measurement(ratio, f"{us['course']:.1f} µs vs cuBLAS {us['cublas']:.1f} µs per call",
                       {f"{k}_us": round(v, 2) for k, v in us.items()})


def bench_over_graph(M, N, K):
    def measure(mod):
        import torch

        from gluon_course.course import load_solution
        from gluon_course.measure.timing import Measurement, bench_ms, graph_ms

        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        v9 = load_solution("19")
        rows = {}
        for name, fn in (("course", lambda: mod.matmul(a, b, c)), ("cublas", lambda: torch.matmul(a, b, out=c)),
                         ("lesson19", lambda: v9.matmul(a, b, c))):
            fn()
            bench, graph = bench_ms(fn), graph_ms(fn)
            rows[name] = (bench, graph)
        bench, graph = rows["course"]
        return Measurement(graph / bench, f"do_bench {1e3 * bench:.1f} µs, graph {1e3 * graph:.1f} µs (cuBLAS "
                                          f"{rows['cublas'][1] / rows['cublas'][0]:.2f}, lesson 19 "
                                          f"{rows['lesson19'][1] / rows['lesson19'][0]:.2f})",
                           {f"{k}_bench_us": round(1e3 * v[0], 2) for k, v in rows.items()} |
                           {f"{k}_graph_us": round(1e3 * v[1], 2) for k, v in rows.items()})
    return measure


HOST_WHY = ("the host's time to issue one call of matmul at 512 × 4096 × 4096 (W as w.t()), the GPU kept busy by a "
            "sleep so that no call waits for it; the least of 7 rounds of 200 calls, each launcher's rounds interleaved "
            "with the others'; it depends on the host's CPU, not the GPU, so the range is wide")
GRAPH_WHY = ("the kernel's time replayed from a CUDA graph (no host between launches, L2 kept warm between the calls) "
             "over its do_bench median (L2 flushed, an event pair around each call); do_bench also counts each launch's "
             "latency on the GPU and reads the operands from HBM, as cuBLAS's do too, so a launcher with no host cost "
             "left reads about what cuBLAS reads")

CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="what one call of a GEMM costs on the host, split into its parts; do_bench against a CUDA-graph replay; "
            "a launcher that keeps a plan per signature (checks, tile, layouts, grid, compiled kernel) and TMA "
            "descriptors by address with their CUtensorMaps encoded once, launched through driver.c's own launch call",
    machine_code=[
        Check("plans", "a plan is kept per signature and built afresh when a shape, stride, dtype or alignment "
              "changes; a new signature's checks run (host code, CPU tensors)", plans),
        Check("descriptors", "descriptors are kept by address, describe the tensor exactly, never hold it, and "
              "are bounded per plan (host code, CPU tensors)", descriptors),
        Check("encoded_launch", "with Triton's driver stood in for, a launch hands driver.c what Triton's own "
              "launcher would, encodes a kept set of descriptors once, and encodes anew for another address (host "
              "code, CPU tensors)", encoded_launch),
        Check("launcher_path", "the host model runs lesson 19's kernel as the plan launches it (its descriptors, "
              "grid and arguments in the kernel's order): C exact, each element written once, a second call through "
              "the kept plan and descriptors too, B either way (host code, CPU tensors)", launcher_path),
        Check("plan_refusals", "on CPU tensors, the launcher refuses an unknown key, a mismatched K, rows TMA "
              "cannot read and half a warpgroup, each with its sentence", plan_refusals),
        Check("kernel_sm_90", "sm_90: the plans launch lesson 19's kernel (HGMMA, UTMASTG) at your CONFIG, fitting "
              "one SM with no spills, B either way", kernel, target="sm_90"),
    ],
    correctness=[
        Check("correct_kept", "correct on odd shapes with B K × N and as w.t(), again through kept plans, and with "
              "memory freed and reused at one address with another shape (bf16 and fp16; poisoned, guarded C), in "
              "a child process", correct, gpu=True),
        Check("launcher_refuses", tma_gemm.REFUSALS + "; a misaligned A after a kept plan for its shape; a CPU "
              "tensor", launcher_refuses, gpu=True),
        Check("graph_replay", "a call captured in a CUDA graph and replayed with new data is correct", graph_replay,
              gpu=True),
    ],
    figures=[
        Figure("host_cost", "host µs per call", host_cost_measure,
               Expectation(None, 60.0, "µs", HOST_WHY, (Reference(14.2, "µs", f"{PROBE}: this launcher"),
                                                        Reference(16.1, "µs", f"{PROBE}: torch.matmul(out=)"),
                                                        Reference(114.0, "µs", f"{PROBE}: lesson 19's matmul()")),
                           unit="µs per call", target=CourseTarget(None, 20.0, "at most 20 µs per call on the H200")),
               headline=True),
        Figure("host_vs_cublas", "host cost over cuBLAS's", host_ratio_measure,
               Expectation(None, 2.5, "cuBLAS", HOST_WHY + "; as a multiple of cuBLAS's in the same run",
                           (Reference(0.88, "× cuBLAS", PROBE),), unit="× cuBLAS's host time",
                           target=CourseTarget(None, 1.25, "at most 1.25× cuBLAS's host time"))),
        Figure("graph_2048", "graph over do_bench, 2048²×8192", bench_over_graph(2048, 2048, 8192),
               Expectation(0.8, 1.05, "do_bench", GRAPH_WHY, (Reference(0.91, "graph/do_bench", PROBE),),
                           unit="graph time / do_bench time",
                           target=CourseTarget(0.95, None, "do_bench within 5% of the graph replay"))),
        Figure("graph_4096", "graph over do_bench, 4096³", bench_over_graph(4096, 4096, 4096),
               Expectation(0.8, 1.05, "do_bench", GRAPH_WHY, (Reference(0.95, "graph/do_bench", PROBE),),
                           unit="graph time / do_bench time",
                           target=CourseTarget(0.95, None, "do_bench within 5% of the graph replay"))),
    ],
)
