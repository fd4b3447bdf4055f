"""Argument checks for the lessons' launchers: a wrong input gets a sentence that says what to do."""
from __future__ import annotations

import torch

INT32_MAX = 2**31 - 1


def require_cuda_tensor(name: str, t) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cuda":
        raise ValueError(f"{name} is on {t.device}; Gluon kernels run on a GPU: move it with {name}.cuda() "
                         "(on a machine without a GPU, compile instead: see gluon_course.machine)")


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


# What a 2D argument's memory must look like, by name (the launchers pass one of these).
LAYOUT_NEEDS = {
    "any": None,
    "contiguous rows": (1, "contiguous rows (stride(1) == 1)", "copy it with .contiguous() first"),
    "contiguous columns": (0, "contiguous columns (column-major: stride(0) == 1)",
                           "make one with torch.empty(N, M, device='cuda').T"),
    "row-major": (1, "dense row-major strides (N, 1)", "copy it with .contiguous() first"),
    "column-major": (0, "dense column-major strides (1, M): contiguous columns",
                     "pass the .T view of a contiguous (N, M) tensor, e.g. torch.empty(N, M, device='cuda').T"),
}


def _require_layout(name: str, t, need: str) -> None:
    if need not in LAYOUT_NEEDS:
        raise ValueError(f"unknown layout requirement {need!r}; one of {', '.join(LAYOUT_NEEDS)}")
    if LAYOUT_NEEDS[need] is None:
        return
    axis, what, fix = LAYOUT_NEEDS[need]
    M, N = t.shape
    if need in ("row-major", "column-major"):
        want = (N, 1) if need == "row-major" else (1, M)
        # Axes of length 1 have no meaningful stride, so only the others must match.
        wrong = any(size > 1 and got != w for size, got, w in zip(t.shape, t.stride(), want))
    else:
        wrong = t.shape[axis] > 1 and t.stride(axis) != 1
    if wrong:
        raise ValueError(f"{name} has strides {tuple(t.stride())}; this kernel needs {what} for shape "
                         f"{tuple(t.shape)}: {fix}")


def require_2d_pair(x, out, *, x_layout: str = "any", out_layout: str = "any") -> tuple[int, int]:
    """``x`` and ``out``: CUDA tensors of one 2D shape and dtype, each laid out as the kernel needs
    (``LAYOUT_NEEDS``), no two elements of ``out`` at one address, every offset within 32 bits. Returns (M, N)."""
    require_cuda_tensor("x", x)
    require_cuda_tensor("out", out)
    if x.dim() != 2 or out.dim() != 2:
        raise ValueError(f"x is {x.dim()}D and out is {out.dim()}D; this kernel takes 2D tensors "
                         "(view a 1D tensor as (1, n))")
    if x.shape != out.shape:
        raise ValueError(f"x has shape {tuple(x.shape)} but out has {tuple(out.shape)}; both must have one shape "
                         "(for a transpose, pass out as the .T view of a (N, M) tensor)")
    if x.dtype != out.dtype:
        raise TypeError(f"x is {x.dtype} but out is {out.dtype}; this kernel does not convert, pass out of x's dtype")
    if any(size > 1 and stride == 0 for size, stride in zip(out.shape, out.stride())):
        raise ValueError(f"out has a zero stride (strides {tuple(out.stride())}): several of its elements share "
                         "one address, so the kernel would race; pass a real tensor (e.g. torch.empty_like(x))")
    _require_layout("x", x, x_layout)
    _require_layout("out", out, out_layout)
    for name, t in (("x", x), ("out", out)):
        last = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
        if last > INT32_MAX:
            raise ValueError(f"{name}'s last element sits {last} elements from its first; the kernel indexes with "
                             f"32-bit integers (at most {INT32_MAX}): split the tensor")
    return tuple(x.shape)


def require_power_of_two(name: str, value: int) -> None:
    if not isinstance(value, int) or value < 1 or value & (value - 1):
        raise ValueError(f"{name}={value!r} must be a power of two (gl.arange and layouts need one)")


def require_interleaved(whole, a, b, whole_name: str = "out") -> None:
    """``whole`` holds ``a`` and ``b`` interleaved: three contiguous CUDA tensors of one dtype, ``a`` and ``b``
    1D of one length, ``whole`` 1D of twice that, within 32-bit offsets."""
    names = (whole_name, "a", "b")
    for name, t in zip(names, (whole, a, b)):
        require_cuda_tensor(name, t)
        if not t.is_contiguous():
            raise ValueError(f"{name} is not contiguous (strides {tuple(t.stride())}): call .contiguous() first")
        if t.dtype != whole.dtype:
            raise TypeError(f"{name} is {t.dtype} but {whole_name} is {whole.dtype}; use one dtype")
    if a.shape != b.shape or a.dim() != 1:
        raise ValueError(f"a and b must be 1D of one length, got {tuple(a.shape)} and {tuple(b.shape)}")
    if whole.shape != (2 * a.numel(),):
        raise ValueError(f"{whole_name} must be 1D of twice their length ({2 * a.numel()}), got {tuple(whole.shape)}")
    if whole.numel() > INT32_MAX:
        raise ValueError(f"{whole_name} has {whole.numel()} elements; the kernels index with 32-bit integers")


MATMUL_DTYPES = (torch.bfloat16, torch.float16)


def require_matrix(name: str, t, on_gpu: bool = True) -> None:
    """``t`` is a 2D torch tensor (on the GPU unless ``on_gpu=False``), or a sentence saying what it is instead."""
    if on_gpu:
        require_cuda_tensor(name, t)
    elif not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 2:
        raise ValueError(f"{name} must be a matrix, got {t.dim()} dimensions")


def require_matmul_shapes(a, b, c, on_gpu: bool = True) -> tuple[int, int, int]:
    """What every GEMM of the course (both vendors) asks of its arguments before any stride: ``a`` (M×K), ``b`` (K×N)
    and ``c`` (M×N), GPU tensors of one dtype, bf16 or fp16. Returns (M, N, K). ``on_gpu=False`` leaves out the
    device (a launcher that has checked it already, or a CPU test of the rest)."""
    for name, t in (("a", a), ("b", b), ("c", c)):
        require_matrix(name, t, on_gpu)
    if a.dtype not in MATMUL_DTYPES:
        raise TypeError(f"a is {a.dtype}; the course's GEMMs take torch.bfloat16 or torch.float16: convert with "
                        ".to(torch.bfloat16)")
    if b.dtype != a.dtype or c.dtype != a.dtype:
        raise TypeError(f"a, b and c must share one dtype, got {a.dtype}, {b.dtype} and {c.dtype}")
    M, K = a.shape
    K2, N = b.shape
    if K2 != K:
        raise ValueError(f"a is {M}×{K} but b is {K2}×{N}: b needs K = {K} rows, one for each column of a")
    if tuple(c.shape) != (M, N):
        raise ValueError(f"c is {tuple(c.shape)} but a·b is ({M}, {N})")
    require_separate_output(c, a=a, b=b)
    return M, N, K


def byte_span(t) -> tuple[int, int]:
    """The first and one-past-the-last byte a tensor's elements occupy (0, 0 when it has none)."""
    if t.numel() == 0:
        return 0, 0
    last = sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride()))
    return t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size()


def require_separate_output(c, output_name: str = "c", **inputs) -> None:
    """``c`` shares no memory with any of ``inputs`` (name → tensor): a kernel writes C tile by tile while other
    programs still read the inputs, so an output that is an input, or overlaps one, gives a wrong answer that depends
    on the order the programs ran in. torch refuses the same (``torch.matmul(a, b, out=a)``). Byte ranges are
    compared, as torch's own test does when a view's elements might interleave: an overlap of the ranges is refused."""
    c0, c1 = byte_span(c)
    if c0 == c1:
        return
    for name, t in inputs.items():
        t0, t1 = byte_span(t)
        if t0 < c1 and c0 < t1:
            what = "is" if (t0, t1) == (c0, c1) else "overlaps"
            raise ValueError(f"{output_name} {what} the memory of {name}: the kernel would overwrite {name} while "
                             f"other programs still read it, and {output_name} would depend on the order they run in. "
                             f"Pass an output of its own ({output_name}=None, or torch.empty(...)), or a clone of "
                             f"{name} as the input")


def require_matmul_args(a, b, c, b_either_way: bool = False, on_gpu: bool = True) -> tuple[int, int, int]:
    """The course's GEMM contract: ``require_matmul_shapes``, and each operand with unit stride along its rows
    (row-major; any row stride), offsets within 32 bits. Returns (M, N, K).
    With ``b_either_way``, B may also be the transpose of an N×K row-major matrix (unit stride along K)."""
    M, N, K = require_matmul_shapes(a, b, c, on_gpu=on_gpu)
    for name, t in (("a", a), ("b", b), ("c", c)):
        if b_either_way and name == "b" and t.shape[1] > 1 and t.stride(1) != 1:
            if t.shape[0] > 1 and t.stride(0) != 1:
                raise ValueError(f"b has strides {tuple(t.stride())}: this kernel takes B K × N row-major (strides "
                                 "(N, 1)) or the transpose of an N × K row-major matrix (strides (1, K), w.t()): pass "
                                 "b.contiguous()")
            continue
        if t.shape[1] > 1 and t.stride(1) != 1:
            raise ValueError(f"{name} has strides {tuple(t.stride())}; the kernel needs unit stride along its rows "
                             f"(row-major): pass {name}.contiguous()")
        last = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
        if last > INT32_MAX:
            raise ValueError(f"{name} spans {last} elements; the kernel indexes with 32-bit integers: split it")
    return M, N, K


def empty_product(a, b, c) -> bool:
    """True when A·B has nothing to compute, after making ``c`` what torch.matmul returns: an empty C when M or N is
    0 (nothing to write), zeros when K is 0 (a sum of no products). A launcher returns ``c`` then, before it builds
    descriptors or a grid, which cannot describe an empty matrix."""
    M, K = a.shape
    N = b.shape[1]
    if M == 0 or N == 0:
        return True
    if K == 0:
        c.zero_()
        return True
    return False
