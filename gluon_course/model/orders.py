"""Tile orders on the host: a learner's ``@gluon.jit`` function that maps a tile number to (row, column) of tiles,
evaluated for every tile number of a grid, to show that every tile is visited exactly once."""
from __future__ import annotations

import numpy as np

from .run import kernel_code_running, patched
from .runtime import ModelError, ModelUnsupported


def tile_order(fn, tiles: int, *args) -> tuple[np.ndarray, np.ndarray]:
    """(pid_m, pid_n) of tile numbers 0 … tiles − 1 under ``fn(tile, *args)`` (the kernel's own function).

    The function runs once per tile number, on a scalar, as one program runs it on the GPU: so Python control flow
    on the scalars (``if``, a ternary) and builtin ``min``/``max``, which Triton compiles, run here too. The scalar
    is a 64-bit numpy integer, so that a division by zero gives a number (0) as it does on a GPU, where it does not
    trap, instead of stopping the evaluation: a wrong order then shows as tiles outside the grid or visited twice. A
    line that Python still cannot run raises ModelUnsupported naming it."""
    body = patched(fn)
    rows, cols = np.empty(tiles, dtype=np.int64), np.empty(tiles, dtype=np.int64)
    for tile in range(tiles):
        with kernel_code_running(), np.errstate(all="ignore"):
            row, col = body(np.int64(tile), *args)
        rows[tile], cols[tile] = int(np.asarray(row)), int(np.asarray(col))
    return rows, cols


def visits_each_once(fn, num_pid_m: int, num_pid_n: int, *args) -> str | None:
    """None when ``fn`` sends the tiles of a num_pid_m × num_pid_n grid to every (row, column) exactly once."""
    tiles = num_pid_m * num_pid_n
    rows, cols = tile_order(fn, tiles, num_pid_m, num_pid_n, *args)
    outside = (rows < 0) | (rows >= num_pid_m) | (cols < 0) | (cols >= num_pid_n)
    if outside.any():
        t = int(np.argmax(outside))
        return (f"on a {num_pid_m} × {num_pid_n} grid of tiles, tile {t} goes to ({rows[t]}, {cols[t]}), outside "
                "the grid")
    seen = np.zeros((num_pid_m, num_pid_n), dtype=np.int64)
    np.add.at(seen, (rows, cols), 1)
    if (seen != 1).any():
        twice = np.argwhere(seen > 1)
        never = np.argwhere(seen == 0)
        parts = []
        if len(twice):
            parts.append(f"{len(twice)} visited more than once (first: ({twice[0][0]}, {twice[0][1]}))")
        if len(never):
            parts.append(f"{len(never)} never visited (first: ({never[0][0]}, {never[0][1]}))")
        return f"on a {num_pid_m} × {num_pid_n} grid of tiles, " + " and ".join(parts)
    return None


def first_difference(fn, expected, *args) -> str | None:
    """None when ``fn(tile, num_pid_m, num_pid_n, *args)`` sends the tiles of a grid in the order ``expected`` gives:
    rows of tile numbers, ``expected[row][col]`` the number of the tile that goes to (row, col), as a lesson prints
    its order. Else a sentence showing the first tile number that goes elsewhere, with the order up to it."""
    num_pid_m, num_pid_n = len(expected), len(expected[0])
    want = {}
    for r, row in enumerate(expected):
        for c, t in enumerate(row):
            want[int(t)] = (r, c)
    rows, cols = tile_order(fn, num_pid_m * num_pid_n, num_pid_m, num_pid_n, *args)
    for t in range(num_pid_m * num_pid_n):
        got = (int(rows[t]), int(cols[t]))
        if got != want[t]:
            start = max(0, t - 4)
            shown = lambda pos: " ".join(f"({r}, {c})" for r, c in pos)      # noqa: E731
            return (f"on a {num_pid_m} × {num_pid_n} grid of tiles, tile {t} goes to {got}, where the order asked for "
                    f"puts it at {want[t]}: tiles {start} to {t} go to "
                    f"{shown((int(rows[i]), int(cols[i])) for i in range(start, t + 1))} instead of "
                    f"{shown(want[i] for i in range(start, t + 1))}")
    return None
