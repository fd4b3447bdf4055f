"""M, N or K = 0 on every GEMM launcher of the course, both vendors (lessons 10-30, and the toolkit's plain Triton):
the launcher returns what torch.matmul returns, before it needs a GPU.

No GPU is needed to prove it. CPU tensors pass the launchers' argument checks once the "must be on the GPU" rule is
set aside; every kernel the launcher could launch, and every function it would call that needs a device, is replaced
by a tripwire; and ``validate.empty_product`` by a spy. A launcher passes when it returns ``c`` equal to
``torch.matmul(a, b)``, its empty-product test said True, and no tripwire fired: it returned early, before any
device work. (The GPU check ``launcher_errors`` runs the same sizes on a GPU.)"""
from __future__ import annotations

import inspect
import types

import pytest
import torch
from triton.runtime.jit import JITFunction

from gluon_course import amd, lessons, load_solution, validate
from gluon_course.nvidia import hopper

# Every lesson with a GEMM launcher: the NVIDIA track, the AMD track, and lesson 30's translations.
GEMM_LESSONS = [f"{n}" for n in (*range(10, 20), *range(20, 30), 30)]
AMD_LESSONS = [f"{n}" for n in range(20, 30)]
SIZES = ((0, 64, 64), (64, 0, 64), (64, 64, 0), (0, 0, 0), (0, 48, 0))
# What a launcher may call only after its empty-product test: names in its module (and in the toolkit modules
# that the shared launchers call) that need a GPU or launch work on one.
DEVICE_NAMES = ("require_hopper", "require_amd_gpu", "tma_descriptor", "translated_kernel", "TensorDescriptor")


class Tripwire:
    """Stands for something a launcher must not reach with an empty product; reaching it records the name."""

    def __init__(self, name: str, fired: list):
        self.name, self.fired = name, fired

    def __call__(self, *args, **kwargs):
        self.fired.append(self.name)
        raise AssertionError(f"{self.name} was reached")

    def __getitem__(self, grid):
        self.fired.append(f"{self.name}[grid]")
        raise AssertionError(f"{self.name} was launched")


def gemm_launchers(mod) -> dict:
    """The GEMM launchers a solution defines: its own module-level functions named ``matmul`` or ``*_matmul``."""
    return {name: fn for name, fn in vars(mod).items()
            if inspect.isfunction(fn) and fn.__module__ == mod.__name__ and (name == "matmul" or
                                                                            name.endswith("_matmul"))}


def _cases():
    out = []
    for number in GEMM_LESSONS:
        for name in gemm_launchers(load_solution(number)):
            out.append((number, name))
    return out


def test_every_gemm_lesson_has_a_launcher():
    known = lessons()
    for number in GEMM_LESSONS:
        assert number in known, f"lesson {number} is gone: update GEMM_LESSONS"
        assert gemm_launchers(load_solution(number)), f"lesson {number}'s solution has no matmul launcher"


@pytest.fixture
def armed(monkeypatch):
    """CPU tensors through the argument checks; tripwires on the device; a spy on empty_product."""
    fired, answers = [], []
    monkeypatch.setattr(validate, "require_cuda_tensor", lambda name, t: None)
    real = validate.empty_product

    def spy(a, b, c):
        answer = real(a, b, c)
        answers.append(answer)
        return answer

    monkeypatch.setattr(validate, "empty_product", spy)
    for name in ("get_device_properties", "current_device", "synchronize", "get_device_name"):
        monkeypatch.setattr(torch.cuda, name, Tripwire(f"torch.cuda.{name}", fired))
    for module in (amd.launch, hopper):
        for name in DEVICE_NAMES:
            if hasattr(module, name):
                monkeypatch.setattr(module, name, Tripwire(f"{module.__name__}.{name}", fired))

    def arm(mod):
        for name, value in list(vars(mod).items()):
            if isinstance(value, JITFunction) or name in DEVICE_NAMES:
                monkeypatch.setattr(mod, name, Tripwire(name, fired))
        if hasattr(mod, "empty_product"):
            monkeypatch.setattr(mod, "empty_product", spy)
    return types.SimpleNamespace(arm=arm, fired=fired, answers=answers)


def _operands(M, N, K, dtype, b_k_contiguous):
    a = torch.randn(M, K).to(dtype)
    b = torch.randn(N, K).to(dtype).t() if b_k_contiguous else torch.randn(K, N).to(dtype)
    return a, b


@pytest.mark.parametrize("number, name", _cases())
def test_an_empty_product_returns_what_torch_matmul_returns_before_any_device_work(number, name, armed):
    mod = load_solution(number)
    armed.arm(mod)
    launcher = getattr(mod, name)
    b_k_contiguous = number in AMD_LESSONS          # the AMD track reads B K-contiguous (b = w.T)
    for dtype in (torch.float16, torch.bfloat16):
        for M, N, K in SIZES:
            a, b = _operands(M, N, K, dtype, b_k_contiguous)
            want = torch.matmul(a.float(), b.float()).to(dtype)
            for given in (True, False):
                c = torch.full((M, N), float("nan"), dtype=dtype) if given else None
                calls = len(armed.answers)
                out = launcher(a, b, c)
                where = f"lesson {number} {name}, {M}×{N}×{K} {dtype}, c {'given' if given else 'None'}"
                assert not armed.fired, f"{where}: reached {armed.fired} before returning"
                assert armed.answers[calls:] == [True], f"{where}: its empty-product test said {armed.answers[calls:]}"
                assert out is not None and out.shape == (M, N) and out.dtype == dtype, where
                assert given is False or out is c, f"{where}: the launcher must return the c it was given"
                assert torch.equal(out, want), f"{where}: C is not torch.matmul's ({out})"


def test_the_toolkits_plain_triton_matmul_returns_early_too(armed):
    from gluon_course.measure import plain_triton

    armed.arm(plain_triton)
    for M, N, K in SIZES:
        a, b = _operands(M, N, K, torch.float16, False)
        out = plain_triton.matmul(a, b, torch.full((M, N), float("nan"), dtype=torch.float16))
        assert not armed.fired and torch.equal(out, torch.matmul(a.float(), b.float()).half()), (M, N, K)


def test_the_amd_contract_lets_pytorchs_strides_of_empty_tensors_through():
    """PyTorch gives a 64 × 0 tensor strides (1, 1): the direct-to-LDS launchers' rule that row strides be multiples
    of 16 is about elements that exist, and refused it before the launcher could answer with zeros."""
    a, b = torch.randn(64, 0).half(), torch.randn(48, 0).half().t()
    assert a.stride() == (1, 1) and b.stride() == (1, 1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(validate, "require_cuda_tensor", lambda name, t: None)
        assert amd.require_amd_gemm_args(a, b, torch.empty(64, 48).half(), k_multiple=16) == (64, 48, 0)
