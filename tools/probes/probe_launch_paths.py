"""Host cost of one call of lessons 31 and 32's launchers by two launch paths, beside cuBLAS and plain Triton in the
same process: the old path (the compiled kernel's CompiledKernel.run with the kept host descriptors, which Triton
encodes into CUtensorMaps again on every call) and the new (driver.c's launch with the maps encoded once:
gluon_course.nvidia.launch.RawLaunch), and the parts of a call.

    python tools/probes/probe_launch_paths.py OUT.json              on the GPU (a trial, not a recording)
    python tools/probes/probe_launch_paths.py OUT.json --cpu-proxy  on any machine: a CPU proxy

With ``--cpu-proxy`` nothing reaches a GPU: Triton's driver is stood in for (nvidia.launch.StubDriver: the encoding
returns a stand-in map, the C launch does nothing), CPU tensors stand in for the operands, and each path runs from
the plan lookup on (the launcher's first lines, the CUDA-tensor test, cannot run on CPU tensors). Everything else a
call runs is the course's and Triton's own Python. The proxy leaves out what the stubs stand for (the driver's
cuTensorMapEncodeTiled, three per call on the old path; the driver's launch, once on both), so it shows the Python
each path saves, not a GPU figure. All times are µs per call.
"""
import json
import sys
import time
import timeit

import torch

from gluon_course import load_solution
from gluon_course.course import load_checks
from gluon_course.nvidia.launch import RawLaunch, StubDriver, stub_compiled

M, N, K = 512, 4096, 4096                 # lesson 31's HOST_SHAPE: A·Wᵀ, W 4096 × 4096 as nn.Linear keeps it
l31, l32 = load_solution("31"), load_solution("32")


def proxy_us(fn, calls=20000, repeats=7) -> float:
    fn()
    return min(timeit.repeat(fn, number=calls, repeat=repeats)) / calls * 1e6


def cpu_proxy() -> dict:
    from gluon_course.machine import compile_cached, tensor_descriptor_type  # noqa: F401 - compile for sm_90 here

    a = torch.randn(M, K).to(torch.bfloat16)
    w = torch.randn(N, K).to(torch.bfloat16)
    b, c = w.t(), torch.empty(M, N, dtype=torch.bfloat16)
    checks31, checks32 = load_checks("31"), load_checks("32")
    out = {}
    with StubDriver(record=False) as driver:
        # Lesson 31: lesson 19's kernel at CONFIG.
        paths = {}
        for name in ("old", "new"):
            mm = l31.Matmul()
            p = mm.plan(a, b, c)
            k = stub_compiled(l31.v9.matmul_kernel, checks31._compiled(l31, False), num_warps=p.num_warps)
            p.compiled, p.grid, p.stream = k, (p.tiles, 1, 1), driver.get_current_stream
            p.raw = RawLaunch.of(k) if name == "new" else None
            paths[name] = (mm, p)
        for name, (mm, p) in paths.items():
            out[f"lesson31_{name}"] = proxy_us(lambda: mm.plan(a, b, c).launch(a, b, c))
        mm, p = paths["new"]
        descs = p._descriptors_for(a, b, c)
        k = p.compiled
        out["part: lesson31 signature + plan lookup"] = proxy_us(lambda: mm.plan(a, b, c))
        out["part: lesson31 descriptors lookup"] = proxy_us(lambda: p._descriptors_for(a, b, c))
        out["part: lesson31 encoded lookup"] = proxy_us(lambda: p._encoded_for(descs))
        out["part: CompiledKernel.run, kept descriptors (stub encode + launch)"] = proxy_us(
            lambda: k.run(p.grid[0], 1, 1, 0, k.function, k.packed_metadata, None, None, None, *descs, *p.rest))
        args = p._encoded_for(descs)
        out["part: RawLaunch, encoded (stub launch)"] = proxy_us(lambda: p.raw(p.grid[0], 0, args))
        # Lesson 32: the table's configuration for this shape.
        for name in ("old", "new"):
            lin = l32.Linear(table=l32._this_gpus_table())
            p = lin.plan(a, b, c)
            k = stub_compiled(l32.linear_kernel, checks32._compiled(l32, p.config), num_warps=p.num_warps)
            p.grid, p.stream = (p.units, 1, 1), driver.get_current_stream
            p.launcher.compiled = k
            p.launcher.raw = RawLaunch.of(k) if name == "new" else None
            out[f"lesson32_{name}"] = proxy_us(lambda: lin.plan(a, b, c).launch(a, b, c))
    return {k: round(v, 3) for k, v in out.items()}


def gpu_probe() -> dict:
    import torch.nn.functional as F
    from triton.backends.nvidia.driver import make_tensordesc_arg

    from gluon_course.measure import plain_triton
    from gluon_course.measure.gemm import compare_gemm, reference, tolerance
    from gluon_course.measure.timing import host_us_per_call_each

    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    b, c = w.t(), torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    launchers = {}
    for name in ("old", "new"):
        mm, lin = l31.Matmul(), l32.Linear(table=l32._this_gpus_table())
        mm(a, b, c)
        lin(a, b, c)
        if name == "old":                  # the same plans, launched as before: CompiledKernel.run every call
            mm.plan(a, b, c).raw = None
            lin.plan(a, b, c).launcher.raw = None
        launchers[name] = (mm, lin)
    ref = reference(a, b)
    correct = {}
    for name, (mm, lin) in launchers.items():
        for who, f in (("lesson31", mm), ("lesson32", lin)):
            c.fill_(float("nan"))
            f(a, b, c)
            torch.cuda.synchronize()
            correct[f"{who}_{name}"] = compare_gemm(c, ref, tolerance(K, torch.bfloat16)) or "ok"
    raw_used = {"lesson31": launchers["new"][0].plan(a, b, c).raw is not None,
                "lesson32": launchers["new"][1].plan(a, b, c).launcher.raw is not None}
    p = launchers["new"][0].plan(a, b, c)
    descs = p._descriptors_for(a, b, c)
    meta = p.compiled.metadata.tensordesc_meta
    calls = {"cublas": lambda: torch.matmul(a, b, out=c), "f_linear": lambda: F.linear(a, w),
             "plain_triton": lambda: plain_triton.matmul(a, b, c),
             "lesson31_old": lambda: launchers["old"][0](a, b, c), "lesson31_new": lambda: launchers["new"][0](a, b, c),
             "lesson32_old": lambda: launchers["old"][1](a, b, c), "lesson32_new": lambda: launchers["new"][1](a, b, c),
             "part: 3 × make_tensordesc_arg (encode)": lambda: [make_tensordesc_arg(d, m, None)
                                                               for d, m in zip(descs, meta)]}
    for fn in calls.values():
        fn()
    torch.cuda.synchronize()
    us = host_us_per_call_each(calls)
    return {"host_us": {k: round(v, 2) for k, v in us.items()}, "correct": correct, "raw_launch_used": raw_used,
            "gpu": torch.cuda.get_device_name()}


def main():
    out = sys.argv[1]
    started = time.time()
    if "--cpu-proxy" in sys.argv:
        result = {"cpu_proxy": cpu_proxy(), "note": "CPU proxy: driver stubbed, no GPU; µs of Python per call"}
    else:
        result = gpu_probe()
    import triton

    result.update({"triton": triton.__version__, "torch": torch.__version__, "shape": [M, N, K],
                   "seconds": round(time.time() - started, 1)})
    json.dump(result, open(out, "w"), indent=1)
    rows = result.get("host_us") or result["cpu_proxy"]
    for k, v in rows.items():
        print(f"{k:60s} {v:8.2f} µs")
    if "host_us" in rows or "host_us" in result:
        h = result["host_us"]
        print(f"lesson 31 new/cuBLAS {h['lesson31_new'] / h['cublas']:.2f}×, old/cuBLAS "
              f"{h['lesson31_old'] / h['cublas']:.2f}×; correct {result['correct']}; raw used {result['raw_launch_used']}")


if __name__ == "__main__":
    main()
