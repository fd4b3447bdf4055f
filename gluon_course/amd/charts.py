"""The AMD lessons' pictures, drawn from what the compiler produced or from the kernel's own order functions, never from
typed-in numbers:

* ``mixes``, ``mix_table``, ``mix_chart``: the K loop's instruction mix of every AMD version, category by category
  (the notebooks and the results page), with ``vendor_chart``, the vendor's MFMA efficiency beside it;
* ``issue_chart``: the K loop of each version as a strip, one thin bar per instruction in issue order, coloured by
  what it keeps busy (MFMA, LDS read, copy into LDS, wait, barrier, AGPR move, spill). Where the reads sit against
  the MFMAs (lesson 25) or how the copies cluster (lesson 28) is seen at a glance.
* ``register_chart``: arch VGPRs and AGPRs per lane of each version against the 512 a lane has (lessons 26-27).
* ``xcd_map``: a grid of tiles of C coloured by the XCD that computes each, under an order, XCD 0's tiles outlined,
  with a key of the XCDs' colours (lesson 29).
* ``step_chart``, ``lesson_step_chart``: the time model's steady trip of the K loop as lanes over time (the wave's issue
  slot and its waits, the MFMA pipe, the LDS, the vector memory path), version under version (lessons 20-29);
  ``time_chart``: the model's share of the MFMA peak per version beside AMD's figure.
"""
from __future__ import annotations

from . import amdgcn
from .figure import VENDOR, VENDOR_VARIANTS
from .kernel import compiled


AMD_LESSONS = tuple(f"{n}" for n in range(20, 30))


MFMA_PER_STEP = 128          # v_mfma_f32_16x16x32 per K step of 64 per wave at the lessons' 256 × 256 tile


MIX_COLOURS = {"MFMA": "#4C78A8", "LDS read": "#72B7B2", "LDS write": "#54A24B", "buffer load → LDS": "#EECA3B",
               "buffer load": "#F58518", "global load": "#E45756", "store": "#B279A2", "wait": "#FF9DA6",
               "barrier": "#9D755D", "branch": "#000000", "AGPR move": "#BAB0AC", "VALU": "#D8B5A5", "SALU": "#79706E", "scratch": "#D62728",
               "other": "#DDDDDD"}


def version_label(number: str) -> str:
    """``"v0 MFMA from registers"`` from lesson 20's title ``AMD GEMM v0: MFMA from registers``."""
    from ..course import lesson

    return lesson(number).title.split("GEMM ", 1)[-1].replace(":", "")


def mixes(numbers=None, target: str = "gfx950", dtype: str = "fp16") -> dict[str, dict]:
    """The K loop's instruction mix of each AMD lesson's solution (20 on; those that exist and are not planned),
    compiled for ``target``: ``{"v0 MFMA from registers": {"MFMA": 128, ...}, ...}``. Lessons 25-29 join by existing."""
    from ..course import lessons, load_checks, load_solution

    out = {}
    for number, the in lessons().items():
        if number not in (numbers or AMD_LESSONS) or the.planned or target not in the.checks.targets:
            continue
        checks = load_checks(number)
        compile_ = getattr(checks, "compiled", compiled)
        out[version_label(number)] = amdgcn.instruction_mix(compile_(load_solution(number), target, dtype))
    return out


def mix_chart(rows: dict[str, dict], title: str, ax=None, highlight: str | None = None):
    """Stacked horizontal bars: one per version (first at the top), one colour per ``amdgcn.MIX`` category, the
    total at the end of each bar. Returns the figure (or None when drawn into ``ax``)."""
    import matplotlib.pyplot as plt

    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 0.55 * len(rows) + 1.6))
    labels = list(rows)[::-1]
    left = [0] * len(labels)
    for name, _ in amdgcn.MIX:
        widths = [rows[label][name] for label in labels]
        if not any(widths):
            continue
        ax.barh(labels, widths, left=left, color=MIX_COLOURS[name], label=name, edgecolor="white", linewidth=0.4)
        left = [a + b for a, b in zip(left, widths)]
    for y, total in enumerate(left):
        steps = rows[labels[y]]["MFMA"] // MFMA_PER_STEP
        ax.text(total + 4, y, str(total) + (f" ({steps} K steps)" if steps > 1 else ""), va="center", fontsize=8)
    for tick in ax.get_yticklabels():
        tick.set_fontweight("bold" if highlight and tick.get_text() == highlight else "normal")
    ax.set_xlabel("instructions in the K loop (static count, one wave, one trip: one K step of 64 unless marked)",
                  fontsize=9)
    ax.set_xlim(0, max(left) * 1.22)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=5, fontsize=8, frameon=False)
    if fig is not None:
        fig.tight_layout()
    return fig


def vendor_chart(ax, labels: list[str]):
    """Beside ``mix_chart``'s bars (same rows, ``labels`` top first, each ``"vN ..."``): the vendor's MFMA efficiency
    per version, their base kernel (filled) and their best configuration (hollow, which needs their tools), labelled
    as theirs with the commit of their chart."""
    rows = labels[::-1]
    for y, label in enumerate(rows):
        version = int(label.split()[0][1:])
        if version not in VENDOR:
            continue
        base = VENDOR[version][1]
        ax.plot([base * 100], [y], "o", color="#D62728")
        ax.text(base * 100, y + 0.22, f"{base:.0%}", fontsize=7, color="#D62728", ha="center", va="bottom")
        variants = VENDOR_VARIANTS.get(version, ())
        if variants:
            config, _, best = max(variants, key=lambda v: v[2])
            ax.plot([best * 100], [y], "o", markerfacecolor="white", markeredgecolor="#D62728")
            ax.plot([base * 100, best * 100], [y, y], color="#D62728", linewidth=0.6, linestyle=":")
            # The best figure above its dot, the tools it needs under the row, ending at the dot: the panel stays
            # narrow, and every label is as large as the chart's smallest (7 pt).
            ax.text(best * 100, y + 0.22, f"{best:.0%}", fontsize=7, color="#D62728", ha="center", va="bottom")
            ax.text(best * 100 + 3, y - 0.22, f"+{config}", fontsize=7, color="#D62728", ha="right", va="top")
    ax.set_yticks(range(len(rows)), [""] * len(rows))
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlim(0, 110)
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel("MFMA busy, % (AMD's traces)", fontsize=8)
    ax.set_title("AMD's figures, not ours:\nMI355, their Triton (chart of\ngfx950-gluon-tutorials @04322ed8)\n"
                 "filled: base; hollow: best,\nwhich needs their tools", fontsize=7)


def mix_table(rows: dict[str, dict]) -> list[list]:
    """The mixes as table rows (category, then one count per version), categories every version lacks left out."""
    names = [name for name, _ in amdgcn.MIX if any(r[name] for r in rows.values())]
    return [[name] + [r[name] for r in rows.values()] for name in names] + \
        [["total"] + [sum(r.values()) for r in rows.values()]]


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
    """One panel per order (``{"row-major": fn, ...}``, each ``fn(pid, num_pid_m, num_pid_n)``), two to a row: the
    grid of tiles of C, each tile coloured by the XCD of the workgroup that computes it (round robin dispatch), XCD 0's
    tiles outlined, and above each panel the strips of A and B that XCD 0 reads. A key of the XCDs' colours below."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Patch, Rectangle

    from ..model import xcd

    columns = min(2, len(orders))
    rows_of_panels = -(-len(orders) // columns)
    fig, axes = plt.subplots(rows_of_panels, columns, figsize=(3.9 * columns + 0.4, 4.2 * rows_of_panels + 1.0),
                             squeeze=False, layout="constrained")
    cmap = plt.get_cmap("tab10", xcds)
    for ax, (name, fn) in zip(axes.flat, orders.items()):
        rows, cols = xcd.workgroup_tiles(fn, num_pid_m, num_pid_n)
        grid = np.full((num_pid_m, num_pid_n), -1)
        grid[rows, cols] = xcd.xcd_of(len(rows), xcds)
        ax.imshow(grid, cmap=cmap, vmin=-0.5, vmax=xcds - 0.5)
        for i, j in zip(*np.nonzero(grid == 0)):
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=0.9))
        strips = [s for s in xcd.xcd_strips(rows, cols, xcd.CUS_PER_XCD["gfx950"], xcds) if s.xcd == 0]
        first = strips[0]
        ax.set_title(f"{name}\nXCD 0: {first.a_strips} rows of A + {first.b_strips} columns of B", fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in list(axes.flat)[len(orders):]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=11)
    key = [Patch(facecolor=cmap(x), label=f"XCD {x}") for x in range(xcds)]
    key.append(Patch(facecolor="white", edgecolor="black", linewidth=0.9, label="XCD 0's tiles"))
    fig.legend(handles=key, loc="outside lower center", ncol=(xcds + 2) // 2, fontsize=9, frameon=False)
    return fig


# -- the time model's pictures -----------------------------------------------------------------------------------

STALL_COLOURS = {"vmcnt": "#E45756", "lgkmcnt": "#FF9DA6", "VMEM queue": "#F58518", "LDS queue": "#8E6C8A",
                 "MFMA pipe": "#C6DBEF"}

# The lanes of ``step_chart``, top to bottom: the wave's issue slot, then the units it keeps busy.
STEP_LANES = ("issue slot", "MFMA pipe", "LDS", "vector memory (TCP)")
_UNIT_OF = {"mfma": "MFMA pipe", "lds": "LDS", "vmem": "vector memory (TCP)"}
_ISSUE_COLOURS = {"mfma": MIX_COLOURS["MFMA"], "lds": MIX_COLOURS["LDS read"], "vmem": MIX_COLOURS["buffer load → LDS"],
                  "wait": "#000000"}


def _clipped(spans, lo: float, hi: float) -> list[tuple[float, float]]:
    return [(max(a, lo), min(b, hi) - max(a, lo)) for a, b in spans if b > lo and a < hi]


def step_lanes(p) -> dict:
    """What ``step_chart`` draws for one ``time_model.Prediction``, in clocks from the start of the steady trip (the
    window ``[0, p.trip_clocks]``): per lane, the ``(start, width)`` spans of the units' work (earlier trips' work that
    reaches into the window included, this trip's cut at its end); ``"issue"``: ``(clock, kind)`` per instruction;
    ``"stalls"``: ``(start, width, reason)`` per wait; ``"busy"``: each unit's busy share of the window."""
    from .time_model import MACHINES

    t0, T = p.start, p.trip_clocks
    issue = MACHINES[p.target].issue.value
    out = {lane: [] for lane in STEP_LANES[1:]}
    for e in list(p.carried) + list(p.events):
        lane = _UNIT_OF.get(e.kind)
        if lane:
            out[lane].append((e.start - t0, e.end - t0))
    for lane in out:
        out[lane] = _clipped(sorted(out[lane]), 0.0, T)
    busy = {}
    for lane, spans in out.items():
        covered, cursor = 0.0, 0.0
        for a, w in spans:
            a, b = max(a, cursor), a + w
            if b > a:
                covered, cursor = covered + b - a, b
        busy[lane] = covered / T
    out["issue"] = [(e.issue - t0, e.kind, issue) for e in p.events]
    out["stalls"] = [(s.start - t0, s.end - s.start, s.reason) for s in p.stalls if s.end > s.start]
    out["busy"] = busy
    return out


def step_chart(predictions: dict, title: str, width: float = 11.0):
    """The steady trip of the K loop of each version as lanes over time (``{"v4": time_model.Prediction, ...}``, one
    panel each, first at the top, on one clock axis): the wave's issue slot (a tick per instruction, coloured MFMA, LDS
    read, copy, ``s_waitcnt`` or other; hatched where the wave waits, coloured by what for: ``vmcnt``, ``lgkmcnt``, a
    full queue of copies or of LDS reads, the MFMA pipe), then the MFMA pipe, the LDS and the vector memory path (the
    TCP taking each copy), each with its busy share of the trip. A dashed line marks where the next trip begins; an
    unrolled loop's trip covers two K steps."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    n = len(STEP_LANES)
    fig, axes = plt.subplots(len(predictions), 1, figsize=(width, 1.5 * len(predictions) + 1.5), squeeze=False,
                             sharex=True)
    longest = max(p.trip_clocks for p in predictions.values())
    unit_colours = {"MFMA pipe": MIX_COLOURS["MFMA"], "LDS": MIX_COLOURS["LDS read"],
                    "vector memory (TCP)": MIX_COLOURS["buffer load → LDS"]}
    for ax, (label, p) in zip(axes[:, 0], predictions.items()):
        lanes = step_lanes(p)
        y_of = {lane: n - 1 - i for i, lane in enumerate(STEP_LANES)}
        for lane, colour in unit_colours.items():
            ax.broken_barh(lanes[lane], (y_of[lane] - 0.38, 0.76), facecolors=colour, linewidth=0)
        y = y_of["issue slot"]
        for start, w, reason in lanes["stalls"]:
            ax.broken_barh([(start, w)], (y - 0.38, 0.76), facecolors="white", edgecolor=STALL_COLOURS[reason],
                           hatch="////", linewidth=0)
        by_kind: dict = {}
        for clock, k, w in lanes["issue"]:
            by_kind.setdefault(_ISSUE_COLOURS.get(k, "#BBBBBB"), []).append((clock, w))
        for colour, spans in by_kind.items():
            ax.broken_barh(spans, (y - 0.38, 0.76), facecolors=colour, linewidth=0)
        ax.axvline(p.trip_clocks, color="#333333", linestyle="--", linewidth=0.8)
        ticks = [lane if lane == "issue slot" else f"{lane} {lanes['busy'][lane]:.0%}" for lane in STEP_LANES]
        ax.set_yticks([y_of[lane] for lane in STEP_LANES], ticks, fontsize=8)
        ax.set_ylim(-0.6, n - 0.4)
        steps = f" ({p.steps} K steps, {p.step_clocks:.0f} per step)" if p.steps > 1 else ""
        ax.set_title(f"{label}: {p.trip_clocks:.0f} clocks per trip{steps}, MFMA pipe busy {p.mfma_busy:.1%}",
                     fontsize=9, loc="left")
        ax.set_xlim(0, longest * 1.03)
    axes[-1, 0].set_xlabel("clocks from the start of the steady trip, one wave of four (the time model on the listing, "
                           "no GPU); dashed: the next trip begins", fontsize=9)
    fig.suptitle(title, fontsize=10)
    handles = ([Patch(facecolor=c, label=f"issue: {k}") for k, c in
                (("MFMA", _ISSUE_COLOURS["mfma"]), ("LDS read", _ISSUE_COLOURS["lds"]),
                 ("copy", _ISSUE_COLOURS["vmem"]), ("s_waitcnt", _ISSUE_COLOURS["wait"]), ("other", "#BBBBBB"))] +
               [Patch(facecolor="white", edgecolor=STALL_COLOURS[r], hatch="////", label=f"waiting: {r}")
                for r in STALL_COLOURS])
    fig.legend(handles=handles, loc="lower center", ncol=5, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.1 if len(predictions) > 1 else 0.16, 1, 0.96))
    return fig


def lesson_step_chart(number: str, previous: bool = True, target: str = "gfx950"):
    """``step_chart`` of lesson ``number``'s solution (20-29), its K loop as the lesson's checks compile it (fp16, the
    reads' conflicts from its own layouts), under the lesson before's (``previous``; none before lesson 20)."""
    from .checks import lesson_prediction

    numbers = [str(int(number) - 1)] if previous and int(number) > 20 else []
    predictions = {}
    for n in numbers + [number]:
        predictions[f"{version_label(n)} (lesson {n})"] = lesson_prediction(n, target)[0]
    return step_chart(predictions, f"The K step as lanes over time, {target} fp16: the steady trip of the K loop "
                      "(amd.time_model on Triton 3.9.0's listing)")


def time_chart(rows: dict, title: str, ax=None):
    """The model's share of the MFMA peak per version (bars) beside AMD's MFMA efficiency (dots, their chart at
    04322ed8), ``rows`` = ``{"v0 …": time_model.Comparison, ...}`` first at the top, with the ±20% band of the course
    target around AMD's figure."""
    import matplotlib.pyplot as plt

    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 0.5 * len(rows) + 1.6))
    labels = list(rows)[::-1]
    from .time_model import TARGET

    for y, label in enumerate(labels):
        c = rows[label]
        ax.barh([y], [c.predicted * 100], color=MIX_COLOURS["MFMA"], height=0.6)
        ax.plot([c.vendor * (1 - TARGET) * 100, c.vendor * (1 + TARGET) * 100], [y, y], color="#D62728", alpha=0.35,
                linewidth=6, solid_capstyle="butt")
        ax.plot([c.vendor * 100], [y], "o", color="#D62728")
        ax.text(max(c.predicted, c.vendor * (1 + TARGET)) * 100 + 1.5, y,
                f"model {c.predicted:.1%} · AMD {c.vendor:.1%} · ×{c.ratio:.2f}", va="center", fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=9)
    ax.set_xlim(0, 130)
    ax.set_xticks([0, 25, 50, 75, 100])
    # One line per mark: the caption stays inside the figure's width (one line of it ran past the right edge).
    ax.set_xlabel("share of the MFMA peak, %\nbars: the time model on Triton 3.9.0's listing, gfx950 fp16\n"
                  f"dots: AMD's MFMA efficiency, MI355, their Triton · band: ±{TARGET:.0%} of AMD's figure",
                  fontsize=8)
    ax.set_title(title, fontsize=10)
    if fig is not None:
        fig.tight_layout()
    return fig
