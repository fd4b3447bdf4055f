"""Measuring on a GPU: correct first, then fast.

Every measurement in the course follows the same order:

1. fresh random input (never zeros: zeros hide unwritten outputs and can run faster than real data);
2. an output *poisoned* first (NaN), inside a guarded buffer whose margins must stay untouched, so an
   unwritten element or a write past the end cannot pass;
3. the result compared with a reference computed by PyTorch (in float64 where arithmetic is involved);
4. only then timing, with ``triton.testing.do_bench`` (warm-up, many repetitions, median) on tensors
   far larger than the L2 cache, against a ceiling measured in the same process.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

# Big enough that one copy moves 2 GiB: about 40× the H200's 50 MB L2, so every run reads HBM.
L2_DEFEATING_BYTES = 1 << 30


class NoGPU(RuntimeError):
    """Raised when something needs a CUDA/ROCm GPU and this machine has none."""


def has_gpu() -> bool:
    return torch.cuda.is_available()


def require_gpu(what: str = "this") -> None:
    if not has_gpu():
        raise NoGPU(f"{what} needs a GPU and torch sees none here; on a CPU-only machine the course shows "
                    "the recorded figures from results/ instead (see book/setup)")


def gpu_name() -> str:
    return torch.cuda.get_device_name() if has_gpu() else "no GPU"


def require_capability(major: int, what: str) -> None:
    """Refuse clearly on a GPU that lacks a feature (e.g. TMA and wgmma need compute capability 9.0)."""
    require_gpu(what)
    if torch.version.hip is None and torch.cuda.get_device_capability()[0] < major:
        cap = ".".join(map(str, torch.cuda.get_device_capability()))
        raise RuntimeError(f"{what} needs an NVIDIA GPU of compute capability {major}.0 or newer; "
                           f"this {gpu_name()} is {cap}")


# -- inputs and outputs ------------------------------------------------------------------------

def random_tensor(shape, dtype=torch.float32, device="cuda", seed: int | None = None) -> torch.Tensor:
    """Fresh random data. Floats: standard normal. Integers: the full range of the type."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed if seed is not None else torch.seed() % (2**31))
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype, device=device, generator=generator)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, dtype=dtype, device=device, generator=generator)


def poison(t: torch.Tensor) -> torch.Tensor:
    """Fill with a value no correct kernel writes: NaN for floats, the type's minimum for integers."""
    if t.dtype.is_floating_point:
        return t.fill_(float("nan"))
    return t.fill_(torch.iinfo(t.dtype).min)


@dataclass
class Guarded:
    """An output tensor that sits inside a larger poisoned buffer: writes past its ends are caught."""
    buffer: torch.Tensor
    tensor: torch.Tensor
    margin: int

    def margins_untouched(self) -> bool:
        flat = self.buffer.view(-1)
        before, after = flat[: self.margin], flat[flat.numel() - self.margin:]
        return bool(_is_poison(before).all() and _is_poison(after).all())


def _is_poison(t: torch.Tensor) -> torch.Tensor:
    return torch.isnan(t) if t.dtype.is_floating_point else t == torch.iinfo(t.dtype).min


def guarded_empty(shape, dtype=torch.float32, device="cuda", margin: int = 4096,
                  strides: tuple[int, ...] | None = None) -> Guarded:
    """A poisoned output of ``shape`` (optionally with ``strides``) with ``margin`` poisoned elements on each side.

    The margin is 4096 elements (16 KiB for float32), a whole block's worth for the course's kernels,
    so an off-by-one mask or a missing bound lands in it.
    """
    if strides is None:
        strides = [1] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * shape[i + 1]
    span = 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    buffer = poison(torch.empty(span + 2 * margin, dtype=dtype, device=device))
    tensor = torch.as_strided(buffer, tuple(shape), tuple(strides), storage_offset=margin)
    return Guarded(buffer, tensor, margin)


def compare(out: torch.Tensor, ref: torch.Tensor, exact: bool = True, rtol: float = 1e-5) -> str | None:
    """``None`` when ``out`` matches ``ref``; otherwise one sentence that says what is wrong."""
    if out.shape != ref.shape:
        return f"shape {tuple(out.shape)} instead of {tuple(ref.shape)}"
    unwritten = _is_poison(out) & ~_is_poison(ref)
    if unwritten.any():
        where = unwritten.nonzero()[0].tolist()
        return f"{int(unwritten.sum())} element(s) never written (first at index {where})"
    if exact:
        wrong = out != ref
        if out.dtype.is_floating_point:
            wrong &= ~(torch.isnan(out) & torch.isnan(ref))
        if wrong.any():
            where = wrong.nonzero()[0].tolist()
            return (f"{int(wrong.sum())} element(s) differ (first at index {where}: "
                    f"got {out[tuple(where)].item()}, expected {ref[tuple(where)].item()})")
        return None
    err = relative_error(out, ref)
    return None if err <= rtol else f"relative error {err:.2e} above {rtol:.0e}"


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖ / ‖ref‖ in float64; NaN anywhere gives infinity."""
    o, r = out.double(), ref.double()
    if torch.isnan(o).any():
        return math.inf
    return float(torch.linalg.vector_norm(o - r) / torch.linalg.vector_norm(r).clamp_min(1e-300))


# -- timing --------------------------------------------------------------------------------------

def bench_ms(fn) -> float:
    """Median milliseconds of ``fn`` (triton's do_bench: warm-up 25 ms, then 100 ms of repetitions)."""
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=100, return_mode="median"))


def tbs(bytes_moved: int, ms: float) -> float:
    """Terabytes per second (10**12 bytes) from bytes read + written and milliseconds."""
    return bytes_moved / (ms * 1e-3) / 1e12


@functools.lru_cache(maxsize=None)
def copy_ceiling_tbs(nbytes: int = L2_DEFEATING_BYTES) -> float:
    """The memory ceiling, measured now: PyTorch's device-to-device copy of ``nbytes`` (read + write counted).

    Measured once per process; every memory lesson's expected range is a fraction of this figure,
    so the range holds on any GPU.
    """
    require_gpu("the copy ceiling")
    src = random_tensor((nbytes // 4,), torch.float32)
    dst = torch.empty_like(src)
    ms = bench_ms(lambda: dst.copy_(src))
    del src, dst
    torch.cuda.empty_cache()
    return tbs(2 * nbytes, ms)


def free_cache() -> None:
    if has_gpu():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
