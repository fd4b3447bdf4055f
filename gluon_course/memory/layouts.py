"""Host-side views of a layout: who owns which element, what it costs in registers, and pictures.

Every Gluon layout is a *linear layout*: a list of basis vectors for the register bits, the lane bits
and the warp bits of a thread's position. Element coordinates are the XOR of the bases whose bit is set
(arithmetic over GF(2)). Triton 3.9 converts any layout to that form; this module asks it to, and then
answers questions about the result with plain Python.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import reduce

from triton.experimental.gluon import language as gl


def to_linear(layout, shape) -> gl.DistributedLinearLayout:
    """The linear-layout form of ``layout`` on a tensor of ``shape`` (Triton's own conversion)."""
    from triton._C.libtriton import gluon_ir, ir

    if isinstance(layout, (gl.DistributedLinearLayout, gl.SharedLinearLayout)):
        return layout
    context = ir.context()
    ir.load_dialects(context)
    builder = gluon_ir.GluonOpBuilder(context)
    return builder.to_linear_layout(layout._to_ir(builder), [int(s) for s in shape])


def _xor(vectors, rank):
    return tuple(reduce(lambda a, b: a ^ b, column, 0) for column in zip(*vectors)) if vectors else (0,) * rank


def coordinate(linear, register: int, lane: int, warp: int) -> tuple[int, ...]:
    """The element held by ``register`` of ``lane`` in ``warp``: XOR of the bases whose bits are set."""
    rank = len(linear.shape)
    chosen = [b for i, b in enumerate(linear.reg_bases) if register >> i & 1]
    chosen += [b for i, b in enumerate(linear.lane_bases) if lane >> i & 1]
    chosen += [b for i, b in enumerate(linear.warp_bases) if warp >> i & 1]
    return _xor(chosen, rank)


def owners(layout, shape) -> dict[tuple[int, ...], list[tuple[int, int, int]]]:
    """For each element, every ``(warp, lane, register)`` that holds a copy of it."""
    linear = to_linear(layout, shape)
    table: dict[tuple[int, ...], list[tuple[int, int, int]]] = {}
    for w in range(1 << len(linear.warp_bases)):
        for t in range(1 << len(linear.lane_bases)):
            for r in range(1 << len(linear.reg_bases)):
                table.setdefault(coordinate(linear, r, t, w), []).append((w, t, r))
    return table


@dataclass(frozen=True)
class RegisterBudget:
    shape: tuple[int, ...]
    registers_per_thread: int   # values each thread holds for this tensor
    threads: int                # threads in the block (lanes × warps)
    physical: int               # registers across the block = registers_per_thread × threads
    logical: int                # distinct elements of the tensor

    @property
    def broadcast(self) -> int:
        """How many copies of each element the block keeps (1 = none wasted)."""
        return self.physical // self.logical

    def __str__(self) -> str:
        extra = "" if self.broadcast == 1 else f"  ← each element held {self.broadcast}×"
        return (f"tensor {list(self.shape)}: {self.registers_per_thread} registers/thread × {self.threads} threads "
                f"= {self.physical} registers for {self.logical} elements{extra}")


def register_budget(layout, shape, element_bits: int = 32) -> RegisterBudget:
    """Registers a tensor of ``shape`` costs under ``layout`` (32-bit elements: one register each)."""
    linear = to_linear(layout, shape)
    per_thread = (1 << len(linear.reg_bases)) * max(1, element_bits // 32)
    if element_bits < 32:
        per_thread = max(1, (1 << len(linear.reg_bases)) * element_bits // 32)
    threads = 1 << (len(linear.lane_bases) + len(linear.warp_bases))
    return RegisterBudget(tuple(int(s) for s in shape), per_thread, threads, per_thread * threads,
                          math.prod(int(s) for s in shape))


def block_shape(layout: gl.BlockedLayout) -> list[int]:
    """The tile one pass of a BlockedLayout covers: size_per_thread × threads_per_warp × warps_per_cta."""
    return [s * t * w for s, t, w in zip(layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta)]


def thread_tile(layout: gl.BlockedLayout) -> str:
    """Thread 0's own ``size_per_thread`` tile, each cell showing which of its registers holds it (T:r)."""
    rows, cols = (layout.size_per_thread + [1])[:2] if len(layout.size_per_thread) == 1 else layout.size_per_thread[:2]
    if len(layout.size_per_thread) == 1:
        rows, cols = 1, layout.size_per_thread[0]
    linear = to_linear(layout, block_shape(layout))
    cell = {}
    for r in range(1 << len(linear.reg_bases)):
        c = coordinate(linear, r, 0, 0)
        c = (0, c[0]) if len(c) == 1 else c
        if c[0] < rows and c[1] < cols:
            cell.setdefault(c, r)
    lines = []
    for i in range(rows):
        lines.append(" [" + ", ".join(f"T:{cell[(i, j)]}" for j in range(cols)) + "]")
    return "[" + ",\n".join(lines)[1:] + "]"


def owner_grid(layout, shape, max_cols: int = 32) -> str:
    """The whole tensor as text, each element labelled ``w.t:r`` (warp.lane:register) of its first owner."""
    table = owners(layout, shape)
    if len(shape) == 1:
        shape = (1, shape[0])
        table = {(0, k[0]): v for k, v in table.items()}
    rows, cols = int(shape[0]), min(int(shape[1]), max_cols)
    lines = []
    for i in range(rows):
        cells = []
        for j in range(cols):
            w, t, r = table[(i, j)][0]
            cells.append(f"{w}.{t}:{r}".rjust(7))
        lines.append(" ".join(cells) + (" ..." if shape[1] > max_cols else ""))
    return "\n".join(lines)


def draw(layout, shape, ax=None, title: str | None = None, annotate: bool | None = None):
    """A picture of the layout: one cell per element, coloured by warp, shaded by lane, labelled lane:register.

    Without ``ax`` it draws its own figure and shows it; with ``ax`` it draws there and returns it."""
    import matplotlib.pyplot as plt
    from matplotlib import colors as mcolors

    table = owners(layout, shape)
    two_d = tuple(int(s) for s in shape) if len(shape) == 2 else (1, int(shape[0]))
    if len(shape) == 1:
        table = {(0, k[0]): v for k, v in table.items()}
    rows, cols = two_d
    own_figure = ax is None
    if own_figure:
        _, ax = plt.subplots(figsize=(min(14, 0.45 * cols + 1.5), min(10, 0.45 * rows + 1.2)))
    palette = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D"]
    lanes = max(t for v in table.values() for _, t, _ in v) + 1
    if annotate is None:
        annotate = rows * cols <= 512
    for (i, j), held in table.items():
        w, t, r = held[0]
        base = mcolors.to_rgb(palette[w % len(palette)])
        shade = 0.55 + 0.45 * (t / max(1, lanes - 1))
        colour = tuple(1 - (1 - c) * shade for c in base)
        ax.add_patch(plt.Rectangle((j, i), 1, 1, facecolor=colour, edgecolor="white", linewidth=0.6))
        if annotate:
            label = f"{t}:{r}" + ("*" if len(held) > 1 else "")
            ax.text(j + 0.5, i + 0.5, label, ha="center", va="center", fontsize=6 if cols > 16 else 8)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    warps = sorted({held[0][0] for held in table.values()})
    handles = [plt.Rectangle((0, 0), 1, 1, color=palette[w % len(palette)]) for w in warps]
    ax.legend(handles, [f"warp {w}" for w in warps], loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    ax.set_title(title or f"{_short(layout)} on {list(shape)}  (label lane:register; * = held by several)",
                 fontsize=9)
    if own_figure:           # a notebook cell shows the picture and prints nothing else
        plt.show()
        return None
    return ax


def _short(layout) -> str:
    if isinstance(layout, gl.BlockedLayout):
        return (f"Blocked(spt={layout.size_per_thread}, tpw={layout.threads_per_warp}, "
                f"wpc={layout.warps_per_cta}, order={layout.order})")
    return type(layout).__name__
