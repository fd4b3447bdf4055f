"""Which GPU is here, if any, and a clear refusal when a feature is missing."""
from __future__ import annotations

import torch


class NoGPU(RuntimeError):
    """Raised when something needs a CUDA/ROCm GPU and this machine has none."""


def has_gpu() -> bool:
    return torch.cuda.is_available()


def is_rocm() -> bool:
    return torch.version.hip is not None


def gpu_class(device=None) -> str | None:
    """The class of the GPU here, as the course's compile targets name it: ``"sm_86"`` for an NVIDIA GPU of compute
    capability 8.6 (an RTX 3090, an A10), ``"gfx942"`` for an AMD MI300X (read from ``gcnArchName``); None without a
    GPU. A GPU of a class the course has no target for still gets its name (``"sm_75"`` for a T4). ``device``: which
    GPU (default: the current one)."""
    if not has_gpu():
        return None
    device = torch.cuda.current_device() if device is None else device
    if is_rocm():
        arch = getattr(torch.cuda.get_device_properties(device), "gcnArchName", "")
        return arch.split(":")[0]
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}"


def runs_lessons_for(targets) -> bool:
    """Whether the GPU here runs the GPU checks of a lesson compiled for ``targets``: a GPU whose class
    (``gpu_class``) the lesson declares. An RTX 3090 (sm_86) runs the lessons that declare sm_86, an MI300X those that
    declare gfx942; on any other GPU a lesson's machine-code checks run, as on any machine, and its GPU checks do not
    (they are not written for it: lesson 14's TMA on an Ampere GPU, any lesson on a T4)."""
    found = gpu_class()
    return found is not None and found in targets


def require_gpu(what: str = "this") -> None:
    if not has_gpu():
        raise NoGPU(f"{what} needs a GPU and torch sees none here; on a CPU-only machine the course shows "
                    "the recorded figures from results/ instead (see book/setup)")


def gpu_name() -> str:
    return torch.cuda.get_device_name() if has_gpu() else "no GPU"


def device_warp_size() -> int:
    """Threads per warp of the GPU here: 64 on AMD's CDNA GPUs, 32 on NVIDIA."""
    return 64 if is_rocm() else 32


def require_capability(major: int, what: str) -> None:
    """Refuse clearly on a GPU that lacks a feature (e.g. TMA and wgmma need compute capability 9.0)."""
    require_gpu(what)
    if not is_rocm() and torch.cuda.get_device_capability()[0] < major:
        cap = ".".join(map(str, torch.cuda.get_device_capability()))
        raise RuntimeError(f"{what} needs an NVIDIA GPU of compute capability {major}.0 or newer; "
                           f"this {gpu_name()} is {cap}")


def free_cache() -> None:
    if has_gpu():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


KERNEL_ARGS = ("grid", "block", "registers per thread", "shared memory", "blocks per SM")


def kernel_events(trace_events: list) -> list[dict]:
    """The GPU kernels in a chrome trace's events (torch.profiler's export): name, duration in µs and the launch's
    grid, block, registers, shared memory and blocks per SM, in the trace's order."""
    return [{"name": e.get("name"), "us": e.get("dur"), **{k: e.get("args", {}).get(k) for k in KERNEL_ARGS}}
            for e in trace_events if e.get("cat") == "kernel"]


def kernels_launched(fn, warmups: int = 3) -> list[dict]:
    """The kernels one call of ``fn`` launches (``kernel_events`` of its torch.profiler trace), after ``warmups``
    calls: what a library such as cuBLAS picked for a shape."""
    import json
    import os
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    require_gpu("kernels_launched")
    for _ in range(warmups):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as folder:
        trace = os.path.join(folder, "trace.json")
        prof.export_chrome_trace(trace)
        with open(trace) as f:
            return kernel_events(json.load(f).get("traceEvents", []))
