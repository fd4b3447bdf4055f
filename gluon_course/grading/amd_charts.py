"""Pictures of the AMD lessons' machine code and orders (lessons 25 on), drawn from what the compiler produced or from
the kernel's own order functions, never from typed-in numbers:

* ``issue_chart``: the K loop of each version as a strip, one thin bar per instruction in issue order, coloured by
  what it keeps busy (MFMA, LDS read, copy into LDS, wait, barrier, AGPR move, spill). Where the reads sit against
  the MFMAs (lesson 25) or how the copies cluster (lesson 28) is seen at a glance.
* ``register_chart``: arch VGPRs and AGPRs per lane of each version against the 512 a lane has (lessons 26-27).
* ``xcd_map``: a grid of tiles of C coloured by the XCD that computes each, under an order (lesson 29).
"""
from __future__ import annotations

from ..machine import amdgcn
from .amd_gemm import MIX_COLOURS

# The categories the strip tells apart; everything else (VALU, SALU, nops) is drawn light grey.
STRIP = ("MFMA", "LDS read", "buffer load → LDS", "wait", "barrier", "AGPR move", "scratch", "branch")
_OTHER = "#EEEEEE"


def issue_chart(loops: dict, title: str, width: float = 11.0):
    """One strip per version (``{"v4": compiled, ...}``, first at the top): the instructions of its K loop in issue
    order, one bar each. A version whose loop covers two K steps (unrolled) is drawn at half width per instruction
    so that the strips compare per K step: ``{"v6": (compiled, 2)}``."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig, ax = plt.subplots(figsize=(width, 0.55 * len(loops) + 1.4))
    labels = list(loops)[::-1]
    longest = 0.0
    for y, label in enumerate(labels):
        entry = loops[label]
        k, steps = entry if isinstance(entry, tuple) else (entry, 1)
        instructions = amdgcn.main_loop(k).instructions
        step = 1.0 / steps
        longest = max(longest, len(instructions) * step)
        by_colour: dict[str, list] = {}
        for i, ins in enumerate(instructions):
            cat = amdgcn.category(ins)
            colour = MIX_COLOURS[cat] if cat in STRIP else _OTHER
            by_colour.setdefault(colour, []).append((i * step, step))
        for colour, spans in by_colour.items():
            ax.broken_barh(spans, (y - 0.38, 0.76), facecolors=colour, linewidth=0)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlim(0, longest * 1.01)
    ax.set_xlabel("instructions of the K loop, in issue order, per K step of 64 (an unrolled loop's two steps "
                  "share one strip)", fontsize=9)
    ax.set_title(title, fontsize=10)
    handles = [Patch(facecolor=MIX_COLOURS[c], label=c) for c in STRIP] + [Patch(facecolor=_OTHER, label="other")]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=5, fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def register_chart(budgets: dict, title: str, limit: int = 512):
    """Stacked bars of arch VGPRs and AGPRs per lane (``{"v5": amdgcn.Budget, ...}``) against ``limit``, with the
    scratch bytes of a version that spills written beside its bar."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 0.5 * len(budgets) + 1.5))
    labels = list(budgets)[::-1]
    arch = [budgets[l].arch_vgprs for l in labels]
    acc = [budgets[l].agprs for l in labels]
    # The unified file rounds the arch part up to a multiple of 4 before the AGPRs start (.vgpr_count).
    ax.barh(labels, arch, color="#4C78A8", label="arch VGPRs")
    ax.barh(labels, acc, left=[budgets[l].vgprs - a for l, a in zip(labels, acc)], color="#BAB0AC", label="AGPRs")
    for y, label in enumerate(labels):
        b = budgets[label]
        note = f"{b.vgprs}" + (f", {b.scratch_bytes} B scratch (spills)" if b.scratch_bytes else "")
        ax.text(b.vgprs + 6, y, note, va="center", fontsize=8, color="#D62728" if b.scratch_bytes else "black")
    ax.axvline(limit, color="#D62728", linestyle="--", linewidth=1)
    ax.text(limit, len(labels) - 0.4, f" {limit} per lane", color="#D62728", fontsize=8, va="bottom")
    ax.set_xlim(0, limit * 1.35)
    ax.set_xlabel("registers per lane (one wave per SIMD)", fontsize=9)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def xcd_map(orders: dict, num_pid_m: int, num_pid_n: int, title: str, xcds: int = 8):
    """Side by side, one panel per order (``{"row-major": fn, ...}``, each ``fn(pid, num_pid_m, num_pid_n)``): the
    grid of tiles of C, each tile coloured by the XCD of the workgroup that computes it (round robin dispatch)."""
    import matplotlib.pyplot as plt
    import numpy as np

    from ..model import xcd

    fig, axes = plt.subplots(1, len(orders), figsize=(3.6 * len(orders), 3.9))
    axes = np.atleast_1d(axes)
    cmap = plt.get_cmap("tab10", xcds)
    for ax, (name, fn) in zip(axes, orders.items()):
        rows, cols = xcd.workgroup_tiles(fn, num_pid_m, num_pid_n)
        grid = np.full((num_pid_m, num_pid_n), -1)
        grid[rows, cols] = xcd.xcd_of(len(rows), xcds)
        ax.imshow(grid, cmap=cmap, vmin=-0.5, vmax=xcds - 0.5)
        strips = [s for s in xcd.xcd_strips(rows, cols, xcd.CUS_PER_XCD["gfx950"], xcds) if s.xcd == 0]
        first = strips[0]
        ax.set_title(f"{name}\nXCD 0: {first.a_strips} rows of A + {first.b_strips} columns of B", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return fig
