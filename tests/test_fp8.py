"""gluon_course.nvidia.fp8 on the CPU: the launcher's refusals (device left out), the tolerance against torch's own
fp8 GEMM and against a product that lost a K step, the quantizer check against plausible wrong quantizers."""
import pytest
import torch

from gluon_course import load_solution
from gluon_course.nvidia import fp8


def _args(M=129, N=136, K=1024):
    a, w, sa, sw = fp8.fp8_inputs(M, N, K, per_row=True, device="cpu")
    return a, w, sa, sw


@pytest.mark.parametrize("what, change, error, words", [
    ("bf16 operands", lambda a, w, sa, sw: (a.to(torch.bfloat16), w, sa, sw), TypeError, ("quantize",)),
    ("e5m2", lambda a, w, sa, sw: (a.to(torch.float8_e5m2), w, sa, sw), TypeError, ("e4m3",)),
    ("no scale", lambda a, w, sa, sw: (a, w, sa, None), TypeError, ("missing",)),
    ("scale of M + 1", lambda a, w, sa, sw: (a, w, torch.ones(130), sw), ValueError, ("129",)),
    ("fp16 scale", lambda a, w, sa, sw: (a, w, sa.half(), sw), TypeError, ("fp32",)),
    ("N-major W", lambda a, w, sa, sw: (a, w.t().contiguous().t(), sa, sw), ValueError, ("K-major",)),
    ("W of another K", lambda a, w, sa, sw: (a, w[:, :512], sa, sw), ValueError, ("N × K",)),
])
def test_refusals(what, change, error, words):
    with pytest.raises(error) as e:
        fp8.require_fp8_linear_args(*change(*_args()), on_gpu=False)
    assert all(word in str(e.value) for word in words), str(e.value)


def test_tma_rows():
    a, w, sa, sw = _args(K=1000)
    with pytest.raises(ValueError, match="multiple of 16"):
        fp8.require_fp8_linear_args(a, w, sa[:1], sw[:1], on_gpu=False)
    a, w, sa, sw = _args(N=132)
    with pytest.raises(ValueError, match="multiple of 8"):
        fp8.require_fp8_linear_args(a, w, sa, sw, on_gpu=False)
    assert fp8.require_fp8_linear_args(*_args(), on_gpu=False) == (129, 136, 1024, True, True)


def test_tolerance_holds_torch_and_rejects_a_lost_k_step():
    a, w, sa, sw = fp8.fp8_inputs(300, 264, 1008, per_row=True, device="cpu")
    ref = fp8.reference(a, w, sa, sw)
    allowed = fp8.allowed_error(ref, a, w, sa, sw)
    c = fp8.scaled_mm(a, w, sa, sw, torch.empty(300, 264, dtype=torch.bfloat16))
    assert fp8.compare(c, ref, allowed) is None
    a[:, :128] = 0
    lost = fp8.scaled_mm(a, w, sa, sw, torch.empty(300, 264, dtype=torch.bfloat16))
    assert "out of tolerance" in fp8.compare(lost, ref, allowed)


def test_quantizer_check():
    assert fp8.quantizer_problem(load_solution("34").quantize) is None

    def no_abs(x, per_row=False, scale=None):
        amax = x.amax(dim=1) if per_row else x.amax().reshape(1)
        scale = torch.where(amax > 0, amax / 448, torch.ones_like(amax))
        return (x / (scale[:, None] if per_row else scale)).clamp(-448, 448).to(fp8.FP8), scale
    assert fp8.quantizer_problem(no_abs)
