"""Shared checks and figures for the memory lessons (01–05): every one of them is some kind of copy."""
from __future__ import annotations

import torch

from .tensors import compare, guarded_empty, poison, random_tensor
from .timing import L2_DEFEATING_BYTES, Measurement, bench_ms, copy_ceiling_tbs, tbs

# Sizes that are not multiples of any block size the course uses, plus one exact multiple.
ODD_SIZES_1D = (1, 33, 2047, 2049, 65_536, 1_000_003)


def check_copy(launch, shapes=ODD_SIZES_1D, dtype=torch.float32, make_input=None, out_strides=None) -> str | None:
    """Run ``launch(x, out)`` on fresh random inputs of each shape; the output is poisoned and guarded.

    ``make_input(shape)`` may build a non-contiguous input (a transposed or strided view); ``out_strides``
    gives the output's strides. Returns ``None`` when every case is exact, else the first failure.
    """
    for shape in shapes:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        # The input also sits inside a larger buffer, so a kernel that reads past its end reads our margin
        # instead of faulting (and the poisoned output then shows the mistake).
        x = make_input(shape) if make_input else _padded_random(shape, dtype)
        guard = guarded_empty(x.shape, x.dtype, strides=out_strides(x.shape) if out_strides else None)
        launch(x, guard.tensor)
        torch.cuda.synchronize()
        problem = compare(guard.tensor, x)
        if problem:
            return f"shape {list(shape)}: {problem}"
        if not guard.margins_untouched():
            return f"shape {list(shape)}: wrote outside the output (past its first or last element)"
    return None


def _padded_random(shape, dtype, margin: int = 4096) -> torch.Tensor:
    numel = 1
    for s in shape:
        numel *= s
    buffer = random_tensor((numel + 2 * margin,), dtype)
    return buffer[margin: margin + numel].view(shape)


def copy_figure(launch, numel: int = L2_DEFEATING_BYTES // 4, dtype=torch.float32, make_input=None,
                make_output=None, label: str = "") -> Measurement:
    """Bandwidth of ``launch(x, out)`` as a fraction of the device copy measured in the same process.

    Read + written bytes are counted. The result is checked (exact) before timing.
    """
    ceiling = copy_ceiling_tbs()
    x = make_input() if make_input else random_tensor((numel,), dtype)
    out = make_output(x) if make_output else torch.empty_like(x)
    poison(out)
    launch(x, out)
    torch.cuda.synchronize()
    problem = compare(out, x)
    if problem:
        raise AssertionError(f"{label or 'copy'} is wrong on the benchmark input: {problem}")
    ms = bench_ms(lambda: launch(x, out))
    moved = 2 * x.numel() * x.element_size()
    rate = tbs(moved, ms)
    del x, out
    return Measurement(rate / ceiling, f"{rate:.3f} TB/s vs copy {ceiling:.2f} TB/s",
                       {"tbs": rate, "ceiling_tbs": ceiling, "ms": ms, "bytes": moved})


# -- 2D copies (lessons 03–05) ---------------------------------------------------------------------

# Shapes that are not multiples of any tile the course uses, both orientations, one row, one column.
ODD_SHAPES_2D = ((1, 1), (1, 4097), (4097, 1), (5, 33), (33, 2049), (2047, 3), (129, 257), (1000, 1003), (48, 4112))
# 16384 × 16384 float32 = 1 GiB per tensor, 20× the H200's L2: every figure streams from HBM.
BIG_SIDE = 16_384


def big_square(side: int = BIG_SIDE, dtype=torch.float32) -> torch.Tensor:
    """A fresh random ``side × side`` tensor, large enough to defeat the L2 cache."""
    return random_tensor((side, side), dtype)


def column_major(shape) -> tuple[int, int]:
    """Strides of a column-major (M, N) tensor: element (i, j) at i + j * M."""
    return (1, shape[0])


def transposed_output(x: torch.Tensor) -> torch.Tensor:
    """A column-major output for ``x``: the ``.T`` view of a contiguous (N, M) tensor."""
    M, N = x.shape
    return torch.empty((N, M), dtype=x.dtype, device=x.device).T


def empty_like_strides(x: torch.Tensor) -> torch.Tensor:
    """An output with exactly ``x``'s shape and strides (``torch.empty_like`` may make it contiguous)."""
    return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
