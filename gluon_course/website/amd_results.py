"""The AMD part of the results page: the K loop's instruction mix of every AMD GEMM version, compiled here (no GPU
needed, exact for the pinned Triton), drawn once and kept as a PNG whose text chunk holds the numbers it was drawn
from, and a line for the figures that only an AMD GPU can measure. ``website.update_tables`` calls ``update``."""
from __future__ import annotations

import json
from pathlib import Path

from .. import amd
from .pages import png_description, replace_between

BEGIN = "<!-- BEGIN GENERATED AMD SECTION (python -m gluon_course tables) -->"
END = "<!-- END GENERATED AMD SECTION -->"
IMAGE = "images/amd-gfx950-instruction-mix.png"      # under book/
TIME_IMAGE = "images/amd-gfx950-time-model.png"      # under book/
RECORD = amd.time_model.RECORD                       # the time model's figure of every AMD version, and its sweep
WHAT_IF = (500, 2000)                                 # other memory round trips the page shows the model at
# How the charts are drawn, the last part of each PNG's description: a new layout (same numbers) changes it, so that
# `python -m gluon_course tables` redraws the charts and its test sees a chart drawn the old way as stale.
DRAWING = "layout 2: 9 inches wide or less, text 7 pt or more"


def _description(rows: dict) -> str:
    """The numbers the plot shows, as latin-1 text (what a PNG text chunk holds): the mixes and the vendor's
    efficiencies beside them."""
    text = "; ".join(f"{label}: " + ", ".join(f"{k} {v}" for k, v in mix.items() if v) for label, mix in rows.items())
    vendor = "; ".join(f"v{v}: {eff}" + "".join(f", {c} {e}" for c, _, e in amd.VENDOR_VARIANTS.get(v, ()))
                       for v, (_, eff) in sorted(amd.VENDOR.items()))
    return (text + " | vendor MFMA efficiency: " + vendor + " | " + DRAWING).replace("→", "->").replace("×", "x")


# The website's column of text is 676 to 688 pixels wide at a 1280-pixel window: a chart drawn WIDTH inches wide shows
# there at 75 pixels per inch or more, so that its smallest text (7 pt) is at least 7 pixels high without a zoom
# (tests/test_book.py checks it). A click opens it at full size (book/_ext/full_size_figures.py).
WIDTH = 9.0


def draw(path: Path, rows: dict) -> None:
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(WIDTH, 0.58 * len(rows) + 2.9), sharey=False,
                                      gridspec_kw={"width_ratios": [3.0, 1.25]})
    amd.mix_chart(rows, "The K loop of each AMD GEMM version,\ngfx950 fp16 (Triton 3.9.0, compiled on a CPU)",
                  ax=left)
    left.tick_params(axis="y", labelsize=8)
    left.tick_params(axis="x", labelsize=8)
    left.set_xlabel(textwrap.fill(left.get_xlabel(), 55), fontsize=8)
    # The categories' key under both panels, in the figure's own width (mix_chart puts it under its axes).
    handles, names = left.get_legend_handles_labels()
    left.get_legend().remove()
    fig.legend(handles, names, loc="lower center", ncol=4, fontsize=8, frameon=False)
    amd.vendor_chart(right, list(rows))
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Description": _description(rows), "Software": None})
    plt.close(fig)


def markdown(rows: dict) -> str:
    if not rows:
        return ""
    def steps(mix):
        n = mix["MFMA"] // amd.MFMA_PER_STEP
        return f" over {n} K steps" if n > 1 else ""
    listed = "; ".join(f"{label}: {sum(mix.values())} instructions{steps(mix)}, {mix['MFMA']} MFMA"
                       for label, mix in rows.items())
    return "\n".join([
        "### AMD gfx950 (MI350/MI355)", "",
        f"Figures: {amd.NOT_MEASURED}. The lessons' ranges are provisional ratios to hipBLASLt; each lesson shows "
        "the vendor's own figures beside them, labelled as the vendor's.", "",
        "#### The K loop, version by version (compiled for gfx950, fp16)", "",
        "![Stacked bars: instructions per category in the K loop of each AMD GEMM version]"
        f"({IMAGE})", "",
        f"Each bar counts the instructions of one trip of the K loop of one wave, by what they keep busy: {listed}.",
        "",
        "Beside the bars, AMD's own MFMA efficiency for each version (the busy share of the MFMA pipe in their thread "
        "traces, MI355, fp16 4096 × 4096 × 8192, their chart in ROCm/gfx950-gluon-tutorials at commit 04322ed8, "
        "their own build of Triton): filled, their base kernel; hollow, their best configuration, which needs tools "
        "Triton 3.9.0 does not have (" + "; ".join(f"{t}: {d}" for t, d in amd.VENDOR_TOOLS.items()) + ").",
        ""])


# -- the time model beside AMD's figures -----------------------------------------------------------------------

def time_rows(numbers=None) -> dict:
    """``{"v0 MFMA from registers": (lesson number, Prediction, Comparison, {latency: busy share}), ...}``: the time
    model on every AMD lesson's solution (gfx950, fp16), AMD's figure for the version beside it, and the model at the
    round trips of ``WHAT_IF``."""
    from ..course import lessons

    out = {}
    for number, the in lessons().items():
        if number not in (numbers or amd.AMD_LESSONS) or the.planned:
            continue
        version = int(number) - 20
        p, said = amd.lesson_prediction(number)
        what_if = {lat: round(amd.lesson_prediction(number, memory_latency=lat)[0].mfma_busy, 4) for lat in WHAT_IF}
        out[amd.version_label(number)] = (number, p, amd.time_model.compare(version, p), what_if, said)
    return out


def sensitivity_loops(numbers=None) -> dict:
    """``{version: (instructions, the reads' worst conflict, K steps per trip)}``: what ``time_model.sensitivity``
    runs, every AMD lesson's solution (gfx950, fp16)."""
    from ..course import lessons

    return {int(number) - 20: amd.lesson_loop(number)[:3] for number, the in lessons().items()
            if number in (numbers or amd.AMD_LESSONS) and not the.planned}


def record(rows: dict, sweep: dict | None = None) -> dict:
    """The record of ``RECORD``: one entry per version, keyed ``NN/time_model`` as a lesson's figures are, its value
    the model's share of the MFMA peak, its details AMD's figure, the ratio and what the step waits for; the
    constants and what the model leaves out beside them; and ``sweep`` (``time_model.sensitivity``), each constant
    varied alone. Deterministic: the CPU computes it from the listings."""
    import triton

    from ..amd import time_model as tm

    figures = {}
    for label, (number, p, c, what_if, said) in rows.items():
        figures[f"{number}/time_model"] = {
            "kind": "model", "title": label, "value": round(p.mfma_busy, 4),
            "text": f"{p.step_clocks:.0f} clocks per K step, {p.budget['MFMA'] / p.steps:.0f} of them MFMA",
            "details": {"clocks_per_trip": round(p.trip_clocks), "k_steps_per_trip": p.steps,
                        "mfma_clocks_per_trip": round(p.mfma_clocks), "lds_reads": said,
                        "limited_by": p.limited_by(), "mfma_idle_clocks": p.idle_by_reason(),
                        "vendor_mfma_efficiency": c.vendor, "vendor_tflops_share_of_peak": round(c.vendor_tflops_share, 4),
                        "vendor_source": "ROCm/gfx950-gluon-tutorials kernels/gemm/a16w16/images/"
                                         "gen_performance_chart.py at 04322ed8 (MI355, fp16 4096x4096x8192, base)",
                        "ratio": round(c.ratio, 3), "within_target": c.within,
                        "at_memory_latency": {str(k): v for k, v in what_if.items()}}}
    return {"model": "gluon_course.amd.time_model", "target": "gfx950", "dtype": "fp16", "triton": triton.__version__,
            "course_target": f"within ±{tm.TARGET:.0%} of AMD's figure (informs, never gates)",
            "constants": [{"name": k.name, "value": k.value, "unit": k.unit, "source": k.source}
                          for k in tm.GFX950.constants()],
            "leaves_out": list(tm.LEAVES_OUT), "figures": figures,
            **({"sensitivity": sweep} if sweep is not None else {})}


def _time_description(rows: dict) -> str:
    text = "; ".join(f"{label}: model {c.predicted:.4f}, AMD {c.vendor:.4f}, ratio {c.ratio:.3f}"
                     for label, (_, _, c, _, _) in rows.items())
    return (text + " | " + DRAWING).replace("→", "->").replace("×", "x").replace("±", "+-")


def draw_time(path: Path, rows: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = amd.time_chart({label: c for label, (_, _, c, _, _) in rows.items()},
                         "The time model's share of the MFMA peak beside AMD's MFMA efficiency, per version")
    fig.set_dpi(150)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Description": _time_description(rows), "Software": None})
    plt.close(fig)


def order_line(rows: dict) -> str:
    """Where the model's order of the versions differs from AMD's, in words (each neighbouring pair)."""
    items = list(rows.values())
    said = []
    for (_, _, a, _, _), (_, _, b, _, _) in zip(items, items[1:]):
        model_up = round(b.predicted, 3) - round(a.predicted, 3)
        vendor_up = b.vendor - a.vendor
        if model_up == 0:
            said.append(f"v{a.version} and v{b.version} level in the model (AMD: {vendor_up * 100:+.1f} points)")
        elif (model_up > 0) != (vendor_up > 0):
            said.append(f"v{b.version} {'above' if model_up > 0 else 'below'} v{a.version} in the model "
                        f"({model_up * 100:+.1f} points), {'below' if vendor_up < 0 else 'above'} it in AMD's figures "
                        f"({vendor_up * 100:+.1f})")
    return ("The model orders every neighbouring pair as AMD's figures do." if not said else
            "Where the model's order differs from AMD's: " + "; ".join(said) + ".")


def time_markdown(rows: dict) -> str:
    from ..amd import time_model as tm

    lines = ["#### The time model beside AMD's figures (gfx950, fp16)", "",
             "The time model (`gluon_course.amd.time_model`) issues each version's compiled K loop as one wave would, "
             "on a CPU, against the rates and queues of the units the four waves of a workgroup share, and predicts "
             "the share of the K step the MFMA pipe is busy: the share of the MFMA peak the loop reaches, at any "
             "clock. AMD's chart gives the same quantity from their thread traces (MFMA efficiency: MFMA cycles of "
             "the main loop over its cycles, per SIMD), so the two stand side by side. The course target is the model "
             f"within ±{tm.TARGET:.0%} of AMD's figure for every version; it informs and never gates a learner. "
             "AMD's kernels are compiled by their own Triton, ours by Triton 3.9.0: the listings differ, and so "
             "can the figures (lessons 27-29 keep the accumulators in AGPRs, as AMD's base kernels do not).", "",
             f"![Bars: the model's share of the MFMA peak per version; dots: AMD's MFMA efficiency]({TIME_IMAGE})", "",
             "| version | the model: share of the MFMA peak | clocks per K step | waits most for | AMD's MFMA "
             "efficiency (chart at 04322ed8) | model / AMD | at 500 / 2000 clocks of memory latency |",
             "|---|---|---|---|---|---|---|"]
    for label, (number, p, c, what_if, _) in rows.items():
        mark = "✓" if c.within else "✗ outside ±20%"
        lines.append(f"| {label} (lesson {number}) | **{c.predicted:.1%}** | {p.step_clocks:.0f} | {p.limited_by()} | "
                     f"{c.vendor:.1%} | {c.ratio:.2f} {mark} | "
                     + " / ".join(f"{what_if[lat]:.1%}" for lat in WHAT_IF) + " |")
    lines += ["", order_line(rows), "",
              f"The record: `{RECORD}` (written by `python -m gluon_course tables`, one entry `NN/time_model` per "
              "version). The constants, each with its source:", ""]
    lines += [f"* {k}" for k in tm.GFX950.constants()]
    lines += ["", "gfx942's constants (the gfx942 lines of lessons 20-22; an MI300X's own figure where a document gives "
              "one, gfx950's carried over and marked assumed where none was found):", ""]
    lines += [f"* {k}" for k in tm.GFX942.constants()]
    lines += ["", "What the model leaves out:", ""] + [f"* {item}" for item in tm.LEAVES_OUT] + [""]
    return "\n".join(lines)


def sensitivity_markdown(sweep: dict | None) -> str:
    """What the agreement rests on: the sweep of ``RECORD`` as a table, and the sentence it supports."""
    from ..amd import time_model as tm

    if not sweep:
        return ""
    n = len(sweep["versions"])
    table, _ = tm.sensitivity_table(sweep)
    grid = ", ".join(f"×{f:g}" for f in tm.SWEEP)
    fine = "; ".join(f"the {name}: " + ", ".join(f"×{f:g}" for f in grid_) for name, grid_ in tm.FINE_SWEEP.items())
    lines = ["#### What the agreement rests on", "",
             f"Each constant varied alone, the others kept, over {grid} of its value ({fine}; the two queues: every "
             "whole depth from 1 to twice the model's), and the versions that stay within "
             f"±{tm.TARGET:.0%} of AMD's figure at each value (of {n}; `time_model.sensitivity`, kept in the record "
             "above). A span that ends at the first or last value swept may go on beyond it.", "",
             f"| constant | the model's | all {n} within | versions within ±{tm.TARGET:.0%} at each value swept |",
             "|---|---|---|---|"]
    for (name, value, held, _), r in zip(table, sweep["rows"]):
        cells = " · ".join((f"**{tm.number(v['value'], r['unit'])}: {len(v['within'])}**" if v["value"] == r["value"]
                            else f"{tm.number(v['value'], r['unit'])}: {len(v['within'])}") for v in r["values"])
        lines.append(f"| {name} | {value} | {held} | {cells} |")
    lines += ["", tm.agreement_words(sweep["rows"], n), ""]
    return "\n".join(lines)


def update(root: Path, write: bool) -> list[str]:
    """Redraw the mix (only when its numbers changed) and rewrite the AMD section of book/results.md; return the
    files that changed (or, with ``write=False``, that are stale)."""
    from ..machine.compile import BackendMissing

    try:
        rows = amd.mixes()
        timed = time_rows()
        loops = sensitivity_loops()
    except BackendMissing:         # a Triton without AMD's code generator cannot check the section: leave it as is
        return []
    changed = []
    path = root / "book" / IMAGE
    if rows and png_description(path) != _description(rows):
        if write:
            draw(path, rows)
        changed.append("book/" + IMAGE)
    path = root / "book" / TIME_IMAGE
    if timed and png_description(path) != _time_description(timed):
        if write:
            draw_time(path, timed)
        changed.append("book/" + TIME_IMAGE)
    path = root / RECORD
    # The sweep runs the model some five hundred times: it is kept in the record with a digest of what it read, and
    # run again only when that changes (a check without writing reports the record stale instead).
    kept = json.loads(path.read_text()).get("sensitivity") if path.exists() else None
    sweep = kept if kept and kept.get("inputs") == amd.time_model.sensitivity_inputs(loops) else None
    if sweep is None and write:
        sweep = amd.time_model.sensitivity(loops)
    text = json.dumps(record(timed, sweep), indent=1, ensure_ascii=False) + "\n"
    if not path.exists() or path.read_text() != text:
        if write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        changed.append(RECORD)
    results = root / "book" / "results.md"
    if BEGIN not in results.read_text():
        if write:
            results.write_text(results.read_text().rstrip("\n") + f"\n\n{BEGIN}\n{END}\n")
        else:
            return changed + ["book/results.md"]
    section = markdown(rows) + "\n" + time_markdown(timed) + "\n" + sensitivity_markdown(sweep or kept)
    if replace_between(results, BEGIN, END, section.rstrip("\n") + "\n", write):
        changed.append("book/results.md")
    return changed
