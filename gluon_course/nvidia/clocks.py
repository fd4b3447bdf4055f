"""Lesson 33's chart and table of issue 23's item 4: per GEMM version, TFLOPS beside the SM clock it ran at, from a
clocks figure's details (gluon_course.measure.clocks.clocks_figure); where none is recorded each says so and shows
nothing."""
from __future__ import annotations

from ..measure.clocks import FIELDS


def clock_table(shown, reference: str = "v9", library: str = "cuBLAS") -> dict | None:
    """Print one line per version of a clocks figure: its TFLOPS, its speed over ``reference``'s and over
    ``library``'s (all timed in the same run, so the two quotients need no second timing), the median SM clock it ran
    at and its TFLOPS per GHz of that clock. A figure from a recording says so at the end of the first line. Returns
    {version: (over reference, over library)}, or None when nothing is recorded."""
    versions = (getattr(shown, "details", None) or {}).get("versions")
    if not versions:
        print("clock table: not recorded yet (it reads the clocks figure's details from a GPU run)")
        return None
    missing = [name for name in (reference, library) if name not in versions]
    if missing:
        raise ValueError(f"the clocks figure timed no {' and no '.join(missing)} to compare the versions with")
    rounds = shown.details.get("rounds", "several")
    print(f"one run, every version in {rounds} interleaved rounds, the SM clock sampled during each timing"
          f"{getattr(shown, 'recorded', '')}")
    width = max(len(name) for name in versions)
    quotients = {}
    for name, v in versions.items():
        over = (v["tflops"] / versions[reference]["tflops"], v["tflops"] / versions[library]["tflops"])
        quotients[name] = over
        print(f"{name:<{width}}  {v['tflops']:.0f} TFLOPS = {over[0]:.3f}× {reference}, {over[1]:.3f}× {library}; "
              f"at {v['sm_mhz']:.0f} MHz, {1000 * v['tflops'] / v['sm_mhz']:.0f} TFLOPS per GHz")
    return quotients


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
