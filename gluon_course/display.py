"""Small display helpers for notebooks: source code, text tables and the bandwidth chart."""
from __future__ import annotations

import inspect
import textwrap


def show_source(obj) -> None:
    """Print a function's source as it is in its file (one source of truth: never a pasted copy).

    A ``@gluon.jit`` kernel or a ``triton.autotune`` wrapper is unwrapped to the Python function; the
    ``### BEGIN/END SOLUTION`` marker lines are left out."""
    from .course import SOLUTION_BEGIN as BEGIN, SOLUTION_END as END

    fn = getattr(obj, "fn", obj)
    fn = getattr(fn, "fn", fn)
    lines = textwrap.dedent(inspect.getsource(fn)).rstrip().splitlines()
    print("\n".join(line for line in lines if not (BEGIN.match(line) or END.match(line))))


def show_diff(before, after, context: int = 2) -> None:
    """What changed from one version of a kernel to the next, as a unified diff of the two functions' source
    (read from their files: one source of truth). ``before``/``after`` are kernels or functions."""
    import difflib

    from .course import SOLUTION_BEGIN as BEGIN, SOLUTION_END as END

    def lines(obj):
        fn = getattr(getattr(obj, "fn", obj), "fn", getattr(obj, "fn", obj))
        text = textwrap.dedent(inspect.getsource(fn)).rstrip().splitlines()
        return [line for line in text if not (BEGIN.match(line) or END.match(line))], inspect.getsourcefile(fn)

    (a, a_file), (b, b_file) = lines(before), lines(after)
    name = lambda path: "/".join(path.replace("\\", "/").split("/")[-2:])  # noqa: E731
    diff = difflib.unified_diff(a, b, fromfile=name(a_file), tofile=name(b_file), n=context, lineterm="")
    print("\n".join(diff) or "(no difference)")


def table(rows: list[list], headers: list[str]) -> None:
    """A plain-text table (what nbval compares, and what reads well on the website)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = lambda r: "  ".join(c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(r, widths)).rstrip()
    print(line(cells[0]))
    print("  ".join("-" * w for w in widths))
    for r in cells[1:]:
        print(line(r))


def _numeric(text: str) -> bool:
    return text.replace(".", "", 1).replace("%", "").replace("×", "").replace(",", "").strip().isdigit()


def bandwidth_chart(shown: dict, title: str, ceiling_label: str = "device copy (ceiling)"):
    """Bars of TB/s for several figures, with the copy ceiling measured in the same run drawn across them. Figures
    from a recording (a ``recorded`` label, as ``Lab.figure`` gives them where it cannot measure) say so under the
    title: ``[recorded: NVIDIA H200, 2026-11-30, the solution]``."""
    import matplotlib.pyplot as plt

    labels = list(shown)
    rates = [s.details["tbs"] for s in shown.values()]
    ceiling = max(s.details["ceiling_tbs"] for s in shown.values())
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(labels) + 2), 3.4))
    bars = ax.bar(labels, rates, color="#4C78A8")
    ax.axhline(ceiling, color="#E45756", linestyle="--", linewidth=1.5)
    # The label sits above the line at the left edge, clear of the bars' own percentages.
    ax.text(-0.45, ceiling * 1.09, f"{ceiling_label}: {ceiling:.2f} TB/s", va="bottom", ha="left",
            color="#E45756", fontsize=9)
    for bar, s in zip(bars, shown.values()):
        ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height(), f"{100 * s.value:.0f}%", ha="center",
                va="bottom", fontsize=9)
    ax.set_ylabel("TB/s (read + write)")
    ax.set_ylim(0, ceiling * 1.25)
    recorded = sorted({s.recorded.strip() for s in shown.values() if getattr(s, "recorded", "")})
    ax.set_title("\n".join([title, *recorded]), fontsize=10)
    fig.tight_layout()
    plt.show()


def tflops_chart(bars: dict, title: str, library: float | None = None, library_label: str = "cuBLAS (same run)"):
    """Bars of TFLOPS (``{label: tflops}``, earlier versions first), with the library's figure drawn across."""
    import matplotlib.pyplot as plt

    labels, values = list(bars), list(bars.values())
    fig, ax = plt.subplots(figsize=(max(5, 1.0 * len(labels) + 2), 3.4))
    colours = ["#9DB7D5"] * (len(labels) - 1) + ["#4C78A8"]
    drawn = ax.bar(labels, values, color=colours)
    top = max(values + ([library] if library else []))
    if library:
        ax.axhline(library, color="#E45756", linestyle="--", linewidth=1.5)
        ax.text(-0.4, library, f" {library_label}: {library:.0f}", va="bottom", ha="left", color="#E45756",
                fontsize=9)
    for bar, value in zip(drawn, values):
        note = f"{value:.0f}" + (f"\n{100 * value / library:.0f}%" if library else "")
        ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height(), note, ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("TFLOPS")
    ax.set_ylim(0, top * 1.25)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    plt.show()


def ratio_chart(figures: dict, title: str, provenance: str, ceiling: str = "cuBLAS", bar: dict | None = None,
                highlight: str | None = None):
    """Bars of same-run ratios (``{label: shown figure}`` whose ``value`` is a fraction of the ceiling timed in the
    same run, earlier versions first), each with the range of its pairs' ratios as a whisker, and the ceiling at 1.
    ``bar`` ({label: shown figure}) draws another kernel's ratio across the chart as a dashed line (plain Triton).
    ``provenance`` (GPU and date) goes under the title: a chart of figures from different runs says so. The bar
    ``highlight`` (this lesson's) is drawn darker; None highlights none."""
    import matplotlib.pyplot as plt

    labels = list(figures)
    values = [f.value for f in figures.values()]
    low = [max(0.0, v - min(f.details.get("ratios") or [v])) for v, f in zip(values, figures.values())]
    high = [max(0.0, max(f.details.get("ratios") or [v]) - v) for v, f in zip(values, figures.values())]
    fig, ax = plt.subplots(figsize=(max(5, 0.95 * len(labels) + 2), 3.5))
    colours = ["#4C78A8" if label == highlight else "#9DB7D5" for label in labels]
    drawn = ax.bar(labels, values, color=colours, yerr=[low, high], capsize=3, ecolor="#555555")
    ax.axhline(1.0, color="#E45756", linestyle="--", linewidth=1.5)
    ax.text(-0.45, 1.01, f"{ceiling} (same run) = 1", va="bottom", ha="left", color="#E45756", fontsize=9)
    for label, other in (bar or {}).items():
        ax.axhline(other.value, color="#54A24B", linestyle=":", linewidth=1.5)
        ax.text(len(labels) - 0.55, other.value + 0.01, f"{label}: {other.value:.2f}×", va="bottom", ha="right",
                color="#54A24B", fontsize=9)
    for b, value in zip(drawn, values):
        ax.text(b.get_x() + b.get_width() / 2, value + 0.02, f"{value:.2f}×", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel(f"fraction of {ceiling}")
    ax.set_ylim(0, 1.3)
    ax.set_title(f"{title}\n{provenance}", fontsize=9)
    fig.tight_layout()
    plt.show()


def time_split_chart(rows: dict, floor: float, floor_label: str, title: str, provenance: str, unit: str = "µs"):
    """Horizontal bars, one a row (``{label: {part: value, ...}}``, the parts stacked in order), with a floor drawn
    across them as a dashed line (a roofline): where a step's time goes, beside the least it could take."""
    import matplotlib.pyplot as plt

    labels = list(rows)
    parts = list(dict.fromkeys(part for row in rows.values() for part in row))
    colours = ["#4C78A8", "#9DB7D5", "#F58518", "#72B7B2"]
    fig, ax = plt.subplots(figsize=(8, 0.8 * len(labels) + 2.0))
    left = [0.0] * len(labels)
    for i, part in enumerate(parts):
        values = [rows[label].get(part, 0.0) for label in labels]
        ax.barh(labels, values, left=left, color=colours[i % len(colours)], label=part)
        for y, (x0, v) in enumerate(zip(left, values)):
            if v:
                ax.text(x0 + v / 2, y, f"{v:.0f}", ha="center", va="center", fontsize=8, color="white")
        left = [a + b for a, b in zip(left, values)]
    for y, total in enumerate(left):
        ax.text(total + 1, y, f"{total:.0f} {unit}", va="center", fontsize=8)
    ax.axvline(floor, color="#E45756", linestyle="--", linewidth=1.5)
    ax.set_xlim(0, max(left + [floor]) * 1.18)
    ax.set_ylim(len(labels) - 0.5, -1.0)          # the first row on top, and room above it for the floor's label
    ax.text(floor, -0.75, f" {floor_label}: {floor:.0f} {unit}", color="#E45756", fontsize=8, va="center")
    ax.set_xlabel(unit)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=len(parts), fontsize=8, frameon=False)
    ax.set_title(f"{title}\n{provenance}", fontsize=9)
    fig.tight_layout()
    plt.show()
