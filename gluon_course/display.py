"""Small display helpers for notebooks: source code, text tables and the bandwidth chart."""
from __future__ import annotations

import inspect
import textwrap


def show_source(obj) -> None:
    """Print a function's source as it is in its file (one source of truth: never a pasted copy).

    A ``@gluon.jit`` kernel or a ``triton.autotune`` wrapper is unwrapped to the Python function; the
    ``### BEGIN/END SOLUTION`` marker lines are left out."""
    from .grading.starters import BEGIN, END

    fn = getattr(obj, "fn", obj)
    fn = getattr(fn, "fn", fn)
    lines = textwrap.dedent(inspect.getsource(fn)).rstrip().splitlines()
    print("\n".join(line for line in lines if not (BEGIN.match(line) or END.match(line))))


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
    """Bars of TB/s for several figures, with the copy ceiling measured in the same run drawn across them."""
    import matplotlib.pyplot as plt

    labels = list(shown)
    rates = [s.details["tbs"] for s in shown.values()]
    ceiling = max(s.details["ceiling_tbs"] for s in shown.values())
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(labels) + 2), 3.4))
    bars = ax.bar(labels, rates, color="#4C78A8")
    ax.axhline(ceiling, color="#E45756", linestyle="--", linewidth=1.5)
    ax.text(len(labels) - 0.5, ceiling, f" {ceiling_label}", va="bottom", ha="right", color="#E45756", fontsize=9)
    for bar, s in zip(bars, shown.values()):
        ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height(), f"{100 * s.value:.0f}%", ha="center",
                va="bottom", fontsize=9)
    ax.set_ylabel("TB/s (read + write)")
    ax.set_ylim(0, ceiling * 1.18)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    plt.show()
