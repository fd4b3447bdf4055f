"""Every GEMM launcher of the course reaches its kernel's launch with plain Python numbers, on the CPU.

The empty-product test stops each launcher before any device work; this one lets it go all the way to the launch.
CPU tensors pass the "must be on a GPU" rule, the GPU-only helpers answer as an H200 or an MI355 would, and every
@gluon.jit / @triton.jit kernel in the lesson's module is replaced by a recorder. A launcher passes when it launches
one of them on a grid of positive ints with launch options (num_warps, num_ctas, num_stages) that are ints, not a
``gl.constexpr``: lesson 33's first GPU run failed there (``num_warps=constexpr[4]``), in Python no CPU test had run.
Lessons 31 to 34 launch through ``nvidia.launch`` (maps encoded once, driver.c's launch): their tests drive that path
with the toolkit's stub driver instead (tests/test_fp8.py, tests/test_v10_launch.py, and lessons 31 and 32's
encoded_launch checks)."""
from __future__ import annotations

import types

import pytest
import torch
from triton.runtime.jit import JITFunction

from gluon_course import amd, load_solution, validate
from gluon_course.nvidia import hopper

from test_empty_products import AMD_LESSONS, gemm_launchers

NVIDIA_LESSONS = [f"{n}" for n in (*range(10, 20), 30)]
LESSONS = NVIDIA_LESSONS + AMD_LESSONS
OPTIONS = ("num_warps", "num_ctas", "num_stages")


class Recorder:
    """Stands for a kernel: ``kernel[grid](...)`` records the grid and the launch options."""

    def __init__(self, name: str, launches: list):
        self.name, self.launches = name, launches

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.launches.append((self.name, grid if isinstance(grid, tuple) else grid, kwargs))
        return launch

    def warmup(self, *args, **kwargs):
        raise RuntimeError("no compile on the CPU here")


def _properties():
    return types.SimpleNamespace(multi_processor_count=132, name="stand-in", major=9, minor=0,
                                 gcnArchName="gfx950", total_memory=141 * 2**30, warp_size=32)


@pytest.fixture
def recorded(monkeypatch):
    launches = []
    monkeypatch.setattr(validate, "require_cuda_tensor", lambda name, t: None)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda *a, **k: _properties())
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    # An H200's answer to "is this Hopper", an MI355's to "which AMD GPU" (the lesson's first target).
    stand_ins = {"require_hopper": lambda *a, **k: None,
                 "require_amd_gpu": lambda targets, t=None: targets[0],
                 "translated_kernel": lambda name, *a, **k: Recorder(f"translated {name}", launches),
                 "resident_clusters": lambda kernel, args, kwargs, cluster, device: 132 // cluster}
    for module in (hopper, amd.launch):
        for name, stand_in in stand_ins.items():
            if hasattr(module, name):
                monkeypatch.setattr(module, name, stand_in)

    def arm(mod):
        for name, value in list(vars(mod).items()):
            if isinstance(value, JITFunction):
                monkeypatch.setattr(mod, name, Recorder(name, launches))
            elif name in stand_ins:
                monkeypatch.setattr(mod, name, stand_ins[name])
    return types.SimpleNamespace(arm=arm, launches=launches)


def _cases():
    return [(n, name) for n in LESSONS for name in gemm_launchers(load_solution(n))]


@pytest.mark.parametrize("number, name", _cases())
def test_the_launcher_reaches_its_kernel_with_ints(number, name, recorded):
    mod = load_solution(number)
    recorded.arm(mod)
    launcher = getattr(mod, name)
    M, N, K = 200, 256, 256
    a = torch.randn(M, K).to(torch.bfloat16)
    b = torch.randn(N, K).to(torch.bfloat16).t() if number in AMD_LESSONS else torch.randn(K, N).to(torch.bfloat16)
    try:
        launcher(a, b, torch.empty(M, N, dtype=torch.bfloat16))
    except (ValueError, TypeError, NotImplementedError) as e:
        # A launcher may refuse bf16 or this shape with a sentence (lesson 10 takes fp16 too): try fp16, then say.
        a, b = a.half(), b.half()
        try:
            launcher(a, b, torch.empty(M, N, dtype=torch.float16))
        except (ValueError, TypeError, NotImplementedError) as e2:
            pytest.fail(f"lesson {number} {name} refused a {M}×{N}×{K} product in bf16 ({e}) and fp16 ({e2})")
    assert recorded.launches, f"lesson {number} {name} returned without launching a kernel"
    for kernel, grid, kwargs in recorded.launches:
        grid = grid if isinstance(grid, tuple) else (grid,)
        assert all(type(g) is int and g >= 1 for g in grid), f"lesson {number} {name}: {kernel}[{grid}]"
        for option in OPTIONS:
            if option in kwargs:
                assert type(kwargs[option]) is int, \
                    f"lesson {number} {name}: {kernel} launched with {option}={kwargs[option]!r}, not an int"


@pytest.mark.parametrize("number, name", _cases())
def test_the_launcher_refuses_a_c_that_is_an_input(number, name, recorded):
    """C the memory of A (or overlapping B) is refused with the course's sentence before any launch, as torch refuses
    ``torch.matmul(a, b, out=a)``: the kernel would overwrite an input other programs still read."""
    mod = load_solution(number)
    recorded.arm(mod)
    launcher = getattr(mod, name)
    for dtype in (torch.bfloat16, torch.float16):
        a = torch.randn(256, 256).to(dtype)
        b = torch.randn(256, 256).to(dtype)
        b = b.t() if number in AMD_LESSONS else b
        for c, which in ((a, "a"), (b.t().contiguous().t() if number in AMD_LESSONS else b, "b")):
            try:
                launcher(a, b, c)
            except TypeError:
                break                          # this launcher takes the other dtype: the loop tries it
            except ValueError as e:
                assert f"the memory of {which}" in str(e), f"lesson {number} {name}: {e}"
                assert not recorded.launches, f"lesson {number} {name} launched before refusing"
                continue
            pytest.fail(f"lesson {number} {name} accepted C = {which}")
        else:
            return
    pytest.fail(f"lesson {number} {name} took neither bf16 nor fp16")


@pytest.mark.parametrize("number", ["31", "32"])
def test_a_kept_plan_refuses_a_c_that_is_an_input(number):
    """Lessons 31 and 32 keep a plan per signature: a later call whose C is A, under a plan built for separate tensors
    of the same shapes, is refused where the kept plan meets new addresses (lesson 31's launch; nvidia.launch's
    host_descriptors, which lessons 32-34 build their descriptors with), before anything touches a device."""
    mod = load_solution(number)
    a = torch.randn(256, 256).to(torch.bfloat16)
    w = torch.randn(256, 256).to(torch.bfloat16)
    c = torch.empty(256, 256, dtype=torch.bfloat16)
    plan = (mod.Matmul() if number == "31" else mod.Linear(config={})).plan(a, w.t(), c)
    with pytest.raises(ValueError, match="c is the memory of"):
        if number == "31":
            plan.launch(a, w.t(), a)
        else:
            plan.descriptors_for(a, w.t(), a)
