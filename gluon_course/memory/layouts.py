"""Host-side views of a layout: who owns which element, what it costs in registers, and pictures.

Every Gluon layout is a *linear layout*: a list of basis vectors for the register bits, the lane bits
and the warp bits of a thread's position. Element coordinates are the XOR of the bases whose bit is set
(arithmetic over GF(2)). Triton 3.9 converts any layout to that form; this module asks it to, and then
answers questions about the result with plain Python.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from triton.experimental.gluon import language as gl


def to_linear(layout, shape) -> gl.DistributedLinearLayout:
    """The linear-layout form of ``layout`` on a tensor of ``shape`` (Triton's own conversion)."""
    if isinstance(layout, (gl.DistributedLinearLayout, gl.SharedLinearLayout)):
        return layout
    _, builder = _layout_builder()
    return builder.to_linear_layout(layout._to_ir(builder), [int(s) for s in shape])


@functools.lru_cache(maxsize=1)
def _layout_builder():
    """One Gluon builder (and its MLIR context, with the dialects loaded) for every conversion of the process: a new
    context for each took most of a conversion's time, and the course converts layouts thousands of times."""
    from triton._C.libtriton import gluon_ir, ir

    context = ir.context()
    ir.load_dialects(context)
    return context, gluon_ir.GluonOpBuilder(context)        # the context lives as long as its builder


def _xor(vectors, rank):
    out = [0] * rank
    for vector in vectors:
        for i in range(rank):
            out[i] ^= vector[i]
    return tuple(out)


def xor_table(bases, rank: int) -> list[tuple[int, ...]]:
    """The XOR of the bases chosen by the bits of every index, ``0`` to ``2**len(bases) - 1``, in that order: the
    element each offset (or register, lane, warp) points at. Built by doubling (the indices with bit ``k`` set are
    those without it, each XORed with base ``k``), one XOR per entry and a whole half at a time: a 64 × 256 tile's
    16384 offsets are met by every bank and LDS model, and choosing the bases of each offset anew cost those models
    most of their time."""
    import numpy as np

    table = np.zeros((1, rank), dtype=np.int64)
    for basis in bases:
        table = np.concatenate([table, table ^ np.asarray(basis, dtype=np.int64).reshape(1, rank)])
    return list(map(tuple, table.tolist()))


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
    rank = len(linear.shape)
    registers, lanes, warps = (xor_table(bases, rank) for bases in (linear.reg_bases, linear.lane_bases,
                                                                     linear.warp_bases))
    table: dict[tuple[int, ...], list[tuple[int, int, int]]] = {}
    for w, at_warp in enumerate(warps):
        for t, at_lane in enumerate(lanes):
            base = tuple(a ^ b for a, b in zip(at_warp, at_lane))
            for r, at_register in enumerate(registers):
                table.setdefault(tuple(a ^ b for a, b in zip(base, at_register)), []).append((w, t, r))
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


_PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D"]


def _owner_table_2d(layout, shape):
    """``owners`` with a 1D tensor drawn as one row: ``({(row, col): owners}, (rows, cols))``."""
    table = owners(layout, shape)
    if len(shape) == 1:
        return {(0, k[0]): v for k, v in table.items()}, (1, int(shape[0]))
    return table, (int(shape[0]), int(shape[1]))


def _window(crop, rows: int, cols: int) -> tuple[int, int, int, int]:
    """The cells to draw, ``(row0, row1, col0, col1)``, ends excluded: all of them (``crop=None``), the
    top-left corner (``crop=(rows, cols)``) or any window (``crop=((row0, row1), (col0, col1))``)."""
    if crop is None:
        return 0, rows, 0, cols
    if isinstance(crop[0], int):
        return 0, min(rows, crop[0]), 0, min(cols, crop[1])
    (r0, r1), (c0, c1) = crop
    return max(0, r0), min(rows, r1), max(0, c0), min(cols, c1)


def _span(start: int, stop: int) -> str:
    return f"{start}–{stop - 1}" if stop - start > 1 else f"{start}"


def _words(items) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def sharing(layout, shape) -> str | None:
    """Where every copy of every element sits, in one sentence; None when no element is held twice.

    A layout is linear, so the positions (warp, lane, register) that hold element 0 are also the offsets
    between the copies of any other element. When those offsets only add to the copy a picture labels
    (its lowest warp, lane and register), one sentence names every owner of every element."""
    linear = to_linear(layout, shape)
    nw, nt, nr = (1 << len(b) for b in (linear.warp_bases, linear.lane_bases, linear.reg_bases))
    zero = (0,) * len(linear.shape)
    kernel = [(w, t, r) for w in range(nw) for t in range(nt) for r in range(nr)
              if coordinate(linear, r, t, w) == zero]
    copies = len(kernel)
    if copies == 1:
        return None
    ws, ts, rs = (sorted({k[i] for k in kernel}) for i in range(3))
    additive = len(ws) * len(ts) * len(rs) == copies and all(
        set(held) == {(held[0][0] + w, held[0][1] + t, held[0][2] + r) for w in ws for t in ts for r in rs}
        for held in owners(layout, shape).values())
    if not additive:
        return f"×{copies} = {copies} copies of every element, each in its own (warp, lane, register)"

    def which(name, symbol, offsets, count):
        if len(offsets) == 1:
            return f"{name} {symbol}"
        if len(offsets) == count:
            return f"every {name} (0–{count - 1})"
        return f"{name}s " + _words([symbol] + [f"{symbol}+{o}" for o in offsets[1:]])

    where = f"{which('register', 'r', rs, nr)} of {which('lane', 't', ts, nt)}"
    if len(ws) == nw:
        where += ", in each of warps " + _words(range(nw))
    elif len(ws) > 1:
        where += ", in " + which("warp", "w", ws, nw) + " (w: the warp its colour shows)"
    return f"×{copies} = {copies} copies of every element: {where}, where t:r is the element's label"


def _cell_colour(warp: int, lane: int, lanes: int):
    """The warp's colour, lighter for low lanes and full for the last lane."""
    from matplotlib import colors as mcolors

    base = mcolors.to_rgb(_PALETTE[warp % len(_PALETTE)])
    shade = 0.55 + 0.45 * (lane / max(1, lanes - 1))
    return tuple(1 - (1 - c) * shade for c in base)


def _box(x: float, y: float, width: float, height: float) -> tuple:
    """The corners of a rectangle, in the order a Rectangle patch draws them."""
    return ((x, y), (x + width, y), (x + width, y + height), (x, y + height))


def _draw_cells(ax, table, window, lanes: int, annotate: bool, fontsize: float) -> None:
    """Fill ``ax`` with the cells of ``window``: colour = warp, shade = lane, label = lane:register.

    An element held by several threads gets ``×N`` (its number of copies) under its label, and when the
    copies sit in several warps, stripes in those warps' colours (the whole cell when unlabelled, a band
    at its foot when labelled). Labelled cells also get a dark line where one thread's elements end."""
    from matplotlib.collections import PolyCollection

    # The cells go in as two collections (the cells, then the stripes over them), not as one artist each: a 256 × 64
    # tile is 16384 cells, and matplotlib's cost per artist (its transforms, its clip path) took most of the time.
    # Each cell is its four corners (a polygon), not a Rectangle patch: building 16384 patches and turning each into
    # a path cost more than drawing them.
    r0, r1, c0, c1 = window
    cells, cell_colours, stripes, stripe_colours = [], [], [], []
    colour = functools.lru_cache(maxsize=None)(_cell_colour)
    for i in range(r0, r1):
        for j in range(c0, c1):
            held = table[(i, j)]
            w, t, r = held[0]
            cells.append(_box(j, i, 1, 1))
            cell_colours.append(colour(w, t, lanes))
            warps = sorted({o[0] for o in held})
            if len(warps) > 1:
                top, height = (i + 0.8, 0.2) if annotate else (i, 1.0)
                for k, ow in enumerate(warps):
                    stripes.append(_box(j + k / len(warps), top, 1 / len(warps), height))
                    stripe_colours.append(colour(ow, t, lanes))
            if not annotate:
                continue
            if len(held) == 1:
                ax.text(j + 0.5, i + 0.5, f"{t}:{r}", ha="center", va="center", fontsize=fontsize)
            else:
                ax.text(j + 0.5, i + 0.32, f"{t}:{r}", ha="center", va="center", fontsize=fontsize)
                ax.text(j + 0.5, i + 0.62, f"×{len(held)}", ha="center", va="center", fontsize=0.8 * fontsize)
    ax.add_collection(PolyCollection(cells, facecolors=cell_colours, edgecolors="white", linewidths=0.6,
                                     zorder=1), autolim=False)
    if stripes:
        ax.add_collection(PolyCollection(stripes, facecolors=stripe_colours, linewidths=0, zorder=1.1),
                          autolim=False)
    if annotate:                 # the borders between threads: where the first owner changes
        for i in range(r0, r1):
            for j in range(c0, c1):
                here = table[(i, j)][0][:2]
                if j + 1 < c1 and table[(i, j + 1)][0][:2] != here:
                    ax.plot([j + 1, j + 1], [i, i + 1], color="#303030", linewidth=1.2)
                if i + 1 < r1 and table[(i + 1, j)][0][:2] != here:
                    ax.plot([j, j + 1], [i + 1, i + 1], color="#303030", linewidth=1.2)
    ax.set_xlim(c0, c1)
    ax.set_ylim(r1, r0)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])


def _warp_handles(table):
    """Legend entries for every warp that holds some element (a broadcast element counts all its owners)."""
    import matplotlib.pyplot as plt

    warps = sorted({w for held in table.values() for w, _, _ in held})
    return [plt.Rectangle((0, 0), 1, 1, color=_PALETTE[w % len(_PALETTE)]) for w in warps], [f"warp {w}" for w in warps]


def draw(layout, shape, ax=None, title: str | None = None, annotate: bool | None = None, crop=None):
    """A picture of the layout: one cell per element, coloured by warp, shaded by lane, labelled lane:register.

    An element that several threads hold shows its first owner (lowest warp, lane, register) and ``×N``,
    its number of copies; the note under the picture says where every copy sits. ``crop`` draws only part
    of the tensor (see ``_window``). Without ``ax`` it draws its own figure and shows it; with ``ax`` it
    draws there and returns it."""
    import textwrap

    import matplotlib.pyplot as plt

    table, (rows, cols) = _owner_table_2d(layout, shape)
    window = _window(crop, rows, cols)
    wrows, wcols = window[1] - window[0], window[3] - window[2]
    own_figure = ax is None
    fontsize = 6 if wcols > 16 else 8
    if own_figure:       # cells of 0.34 inch (34 pixels at 100 dpi) where the picture fits in 7 × 10 inches
        cell = min(0.34, 7.0 / wcols, 10.0 / wrows)
        fontsize = max(5.0, 7.5 * cell / 0.34)
        _, ax = plt.subplots(figsize=(cell * wcols + 1.6, cell * wrows + 1.0))
    lanes = max(t for v in table.values() for _, t, _ in v) + 1
    if annotate is None:
        annotate = wrows * wcols <= 512
    _draw_cells(ax, table, window, lanes, annotate, fontsize)
    ax.legend(*_warp_handles(table), loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    shared = sharing(layout, shape)
    where = "" if crop is None else f", rows {_span(*window[:2])}, columns {_span(*window[2:])}"
    ax.set_title(title or f"{_short(layout)} on {list(shape)}{where}  (label lane:register"
                 + ("; ×N: held N times)" if shared else ")"), fontsize=9)
    if shared and annotate:
        ax.set_xlabel(textwrap.fill(shared, 70), fontsize=8)
    if own_figure:           # a notebook cell shows the picture and prints nothing else
        plt.show()
        return None
    return ax


def draw_with_crop(layout, shape, crop=(16, 16), title: str | None = None, cell_inches: float = 0.34):
    """The whole tensor (colour: warp, shade: lane) beside a crop large enough to label, lane:register.

    ``crop`` as in ``draw``, outlined on the whole tensor. Each cell of the crop is ``cell_inches`` wide:
    a 16-column crop and its overview make a picture about 750 pixels wide at 100 dpi, the width of a
    book page, so the labels are read at the size they are drawn. Shows the figure."""
    import textwrap

    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    table, (rows, cols) = _owner_table_2d(layout, shape)
    window = _window(crop, rows, cols)
    wrows, wcols = window[1] - window[0], window[3] - window[2]
    crop_w, crop_h = wcols * cell_inches, wrows * cell_inches
    cell = min(crop_h / rows, 2.4 / cols)       # the whole tensor: as tall as the crop, at most 2.4 inches wide
    whole_w, whole_h = cols * cell, rows * cell
    shared = sharing(layout, shape)
    # Every size in inches: margins, the two pictures side by side, the title above, legend and note below.
    left, gap, right, top, bottom = 0.15, 0.45, 0.15, 0.65, 0.45 + (0.5 if shared else 0)
    height = max(crop_h, whole_h)
    fig_w, fig_h = left + whole_w + gap + crop_w + right, top + height + bottom
    fig = plt.figure(figsize=(fig_w, fig_h))
    whole = fig.add_axes((left / fig_w, (bottom + height - whole_h) / fig_h, whole_w / fig_w, whole_h / fig_h))
    zoom = fig.add_axes(((left + whole_w + gap) / fig_w, (bottom + height - crop_h) / fig_h, crop_w / fig_w,
                         crop_h / fig_h))
    lanes = max(t for v in table.values() for _, t, _ in v) + 1
    _draw_cells(whole, table, (0, rows, 0, cols), lanes, annotate=False, fontsize=6)
    whole.add_patch(Rectangle((window[2], window[0]), wcols, wrows, fill=False, edgecolor="black", linewidth=1.8))
    whole.set_title(f"whole, {rows} × {cols}" if len(shape) == 2 else f"whole, {cols}", fontsize=8)
    _draw_cells(zoom, table, window, lanes, annotate=True, fontsize=7.5 if cell_inches >= 0.3 else 6)
    zoom.set_title(f"rows {_span(*window[:2])}, columns {_span(*window[2:])}, labelled lane:register", fontsize=8)
    handles, labels = _warp_handles(table)
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, (bottom - 0.4) / fig_h),
               ncol=len(labels), fontsize=8, frameon=False)
    if shared:
        if any(len({o[0] for o in held}) > 1 for held in table.values()):
            shared += "; the stripes show the warps that hold copies"
        fig.text(0.5, 0.05 / fig_h, textwrap.fill(shared, int(15 * fig_w)), ha="center", va="bottom", fontsize=8)
    fig.suptitle(title or f"{_short(layout)} on {list(shape)}", fontsize=9, y=1 - 0.12 / fig_h, va="top")
    plt.show()


def warp_grid(layout, shape):
    """A 2D tensor's elements by the warp that holds them (the lowest, when several do): a numpy array of ``shape``."""
    import numpy as np

    table, (rows, cols) = _owner_table_2d(layout, shape)
    grid = np.empty((rows, cols), dtype=np.int64)
    for (i, j), held in table.items():
        grid[i, j] = min(w for w, _, _ in held)
    return grid


def draw_warps(layout, shape, block: int | None = None, title: str | None = None, unit: str = "warp",
               size: float = 5.0):
    """A whole 2D tensor coloured by the warp that holds each element, one pixel per element (a picture that stays
    readable at 256 × 256), with a grid every ``block`` elements (an instruction's tile, say). ``unit`` names the
    warps in the legend ("wave" on AMD). Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    grid = warp_grid(layout, shape)
    warps = int(grid.max()) + 1
    fig, ax = plt.subplots(figsize=(size + 1.6, size))
    ax.imshow(grid, cmap=ListedColormap([_PALETTE[w % len(_PALETTE)] for w in range(warps)]), vmin=-0.5,
              vmax=warps - 0.5, interpolation="nearest")
    rows, cols = grid.shape
    if block:
        for x in range(block, cols, block):
            ax.axvline(x - 0.5, color="white", linewidth=0.4)
        for y in range(block, rows, block):
            ax.axhline(y - 0.5, color="white", linewidth=0.4)
    ax.set_xticks([0, cols - 1], ["0", str(cols - 1)])
    ax.set_yticks([0, rows - 1], ["0", str(rows - 1)])
    ax.set_xlabel("column", fontsize=8)
    ax.set_ylabel("row", fontsize=8)
    ax.legend(handles=[Patch(color=_PALETTE[w % len(_PALETTE)], label=f"{unit} {w}") for w in range(warps)],
              loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    ax.set_title(title or f"{_short(layout)} on {list(shape)}, by {unit}", fontsize=9)
    fig.tight_layout()
    return fig


def _short(layout) -> str:
    if isinstance(layout, gl.BlockedLayout):
        return (f"Blocked(spt={layout.size_per_thread}, tpw={layout.threads_per_warp}, "
                f"wpc={layout.warps_per_cta}, order={layout.order})")
    return type(layout).__name__
