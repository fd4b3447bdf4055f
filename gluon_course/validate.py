"""Argument checks for the lessons' launchers: a wrong input gets a sentence that says what to do."""
from __future__ import annotations

import torch

INT32_MAX = 2**31 - 1


def require_cuda_tensor(name: str, t) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cuda":
        raise ValueError(f"{name} is on {t.device}; Gluon kernels run on a GPU: move it with {name}.cuda() "
                         "(on a machine without a GPU, compile instead: see gluon_course.compile)")


def require_copy_pair(x, out, *, contiguous: bool = True) -> None:
    """``x`` and ``out``: CUDA tensors of one shape and dtype, small enough for 32-bit offsets."""
    require_cuda_tensor("x", x)
    require_cuda_tensor("out", out)
    if x.shape != out.shape:
        raise ValueError(f"x has shape {tuple(x.shape)} but out has {tuple(out.shape)}; a copy needs the same shape")
    if x.dtype != out.dtype:
        raise TypeError(f"x is {x.dtype} but out is {out.dtype}; this copy does not convert, pass out of x's dtype")
    if contiguous and not (x.is_contiguous() and out.is_contiguous()):
        which = "x" if not x.is_contiguous() else "out"
        raise ValueError(f"{which} is not contiguous (strides {tuple((x if which == 'x' else out).stride())}); "
                         "this 1D copy treats memory as one flat run: call .contiguous() first, or use the "
                         "strided 2D copy of lesson 03")
    if x.numel() > INT32_MAX:
        raise ValueError(f"x has {x.numel()} elements; the course's copies index with 32-bit integers "
                         f"(at most {INT32_MAX}): split the tensor")
