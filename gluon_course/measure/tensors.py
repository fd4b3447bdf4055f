"""Inputs and outputs for measuring on a GPU: fresh random data, poisoned and guarded outputs, comparisons.

Every measurement in the course follows the same order:

1. fresh random input (never zeros: zeros hide unwritten outputs and can run faster than real data);
2. an output *poisoned* first (NaN), inside a guarded buffer whose margins must stay untouched, so an
   unwritten element or a write past the end cannot pass;
3. the result compared with a reference computed by PyTorch (in float64 where arithmetic is involved);
4. only then timing, with ``triton.testing.do_bench`` (warm-up, many repetitions, median) on tensors
   far larger than the L2 cache, against a ceiling measured in the same process.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch


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
        return bool(is_poison(before).all() and is_poison(after).all())


def is_poison(t: torch.Tensor) -> torch.Tensor:
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
    unwritten = is_poison(out) & ~is_poison(ref)
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
