"""Lesson 33's chart of issue 23's item 4: per GEMM version, TFLOPS beside the SM clock it ran at, from a clocks
figure's details (gluon_course.measure.clocks.clocks_figure); where none is recorded it says so and draws nothing."""
from __future__ import annotations

from ..measure.clocks import FIELDS


def clock_chart(shown, title: str = "bf16 8192³: speed and SM clock per version"):
    """Two bar panels sharing the versions: TFLOPS, and the median SM clock (with board power written on each bar).
    ``shown`` is what ``Lab.figure`` returned; returns the figure, or None when nothing is recorded."""
    versions = (getattr(shown, "details", None) or {}).get("versions")
    if not versions:
        print("clock and power chart: not recorded yet (it draws the clocks figure's details from a GPU run)")
        return None
    missing = [f"{name}: {field}" for name, v in versions.items() for field in FIELDS if field not in v]
    if missing:
        raise ValueError(f"the clocks figure's details lack what the chart needs ({', '.join(missing[:4])})")
    import matplotlib.pyplot as plt

    names = list(versions)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.4), sharey=True)
    left.barh(names, [versions[n]["tflops"] for n in names], color="tab:blue")
    left.set_xlabel("TFLOPS (median of the rounds)")
    left.invert_yaxis()
    bars = right.barh(names, [versions[n]["sm_mhz"] for n in names], color="tab:orange")
    for bar, n in zip(bars, names):
        right.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {versions[n]['watts']:.0f} W",
                   va="center", fontsize=8)
    right.set_xlabel("SM clock, MHz (median sample; board power at the bar's end)")
    fig.suptitle(title)
    fig.tight_layout()
    return fig
