"""Tables generated from ``results/`` and the lessons' own metadata (never typed by hand): the website's results page
(with the NVIDIA GEMM's progression chart), its home page's lesson tables and the README's lesson table.
``python -m gluon_course tables`` rewrites them with the other generated pages (``gluon_course.website.update_tables``);
a test fails when a committed one is stale."""
from __future__ import annotations

import textwrap
from pathlib import Path

from ..amd.lab import NOT_MEASURED
from ..course import lessons
from ..grading import records
from .pages import lesson_parts, png_description, replace_between, toc_parts

RESULTS_BEGIN = "<!-- BEGIN GENERATED RESULTS (python -m gluon_course tables) -->"
README_BEGIN = "<!-- BEGIN GENERATED LESSON TABLE (python -m gluon_course tables) -->"
HOME_BEGIN = "<!-- BEGIN GENERATED LESSONS (python -m gluon_course tables) -->"
RECORDING_BEGIN = "<!-- BEGIN GENERATED RECORDING (python -m gluon_course tables) -->"
END = "<!-- END GENERATED {} -->"

VENDOR = {"sm_75": "T4", "sm_80": "A100", "sm_86": "RTX 30, A10", "sm_89": "RTX 40, L4", "sm_90": "Hopper",
          "sm_100": "Blackwell", "sm_120": "RTX 50", "gfx950": "MI350/MI355", "gfx942": "MI300"}


def _on(entry, data) -> str:
    """`` (on the NVIDIA H100 80GB HBM3)`` after a figure that another GPU's recording stands in for."""
    return f" (on the {entry['gpu']})" if records.stood_in(entry, data) else ""


def _figure_cell(fig, entry, data) -> str:
    e = fig.expect
    if entry is None:
        return f"{fig.title}: not recorded"
    return f"{fig.title}: {entry['text'].split(' vs ')[0]}, {e.format(entry['value'])}{_on(entry, data)}"


def _range_text(expect) -> str:
    """``2.0%–12.0% of copy`` (the table's heading says it is the expected range)."""
    text = expect.describe()
    return text[len("expected "):] if text.startswith("expected ") else text


def results_markdown(gpu_slug: str = records.DEFAULT_RECORDING) -> str:
    """The recorded figures and GPU checks of one GPU, one pair of tables per part of the course. Five columns at most,
    so that the tables fit the page of the website at 1280 px: the ratio and the absolute figures share a cell, and a
    course target sits beside the verdict it qualifies."""
    data = records.load(gpu_slug)
    figures = data["figures"]
    lines = [f"### {data['gpu'] or gpu_slug}", ""]
    if not figures:
        return "\n".join(lines + ["Nothing recorded yet.", ""])
    stamps = sorted({(_on(e, data), e["triton"], e["torch"], e["date"], e["commit"]) for e in figures.values()})
    lines += ["Recorded with:", ""]
    for on, triton, torch, date, commit in stamps:
        lines.append(f"* Triton {triton} · torch {torch} · {date} · commit `{commit}`" +
                     (f"{on}: the lessons not yet recorded on the {data['gpu']} show this recording" if on else ""))
    shown = [number for number, the in lessons().items()
             if not the.checks.planned and set(the.checks.targets) & set(records.vendor_targets(gpu_slug))]
    for caption, numbers in lesson_parts(shown):
        rows, checks = [], []
        for number in numbers:
            spec = lessons()[number].checks
            for fig in spec.figures:
                entry = figures.get(records.figure_key(number, fig.key))
                if entry is None:
                    rows.append(f"| {number} | {fig.title} | not recorded | {_range_text(fig.expect)} | |")
                    continue
                verdict = fig.expect.verdict(entry["value"])
                target = fig.expect.target_line(entry["value"])
                rows.append(f"| {number} | {fig.title} | **{fig.expect.format(entry['value'])}**: {entry['text']}"
                            f"{_on(entry, data)} | "
                            f"{_range_text(fig.expect)} | {verdict}" + (f"; {target}" if target else "") + " |")
            for check in spec.correctness:
                entry = figures.get(records.check_key(number, check.key))
                status = ("not recorded" if entry is None else
                          ("✓\u00a0passed" if entry["passed"] else f"✗ {entry['detail']}") + _on(entry, data))
                checks.append(f"| {number} | {check.title} | {status} |")
        lines += ["", f"#### {caption}", ""]
        if rows:
            lines += ["| lesson | figure | measured | range (gates) | verdict |", "|---|---|---|---|---|", *rows]
        if checks:
            lines += ["", "Their correctness checks, run on the GPU in the same recording:", "",
                      "| lesson | check | result |", "|---|---|---|", *checks]
        if set(numbers) & set(PROGRESSION_LESSONS) and progression_bars(gpu_slug):
            lines += ["", progression_markdown(gpu_slug).rstrip("\n")]
    lines.append("")
    return "\n".join(lines)


def readme_table(gpu_slug: str = records.DEFAULT_RECORDING) -> str:
    data = records.load(gpu_slug)
    gpu = data["gpu"] or gpu_slug
    lines = [f"| # | Lesson | What it teaches | compiles for | recorded on the {gpu} (same-run ratios) |",
             "|---|---|---|---|---|"]
    stamps = set()
    for number, the in lessons().items():
        spec = the.checks
        targets = ", ".join(f"{t} ({VENDOR[t]})" for t in spec.targets)
        if spec.planned:
            lines.append(f"| {number} | {the.title} | {spec.teaches} | {targets} | planned: not written yet |")
            continue
        cells, recorded = [], False
        for fig in spec.figures:
            if fig.headline:
                entry = data["figures"].get(records.figure_key(number, fig.key))
                cells.append(_figure_cell(fig, entry, data))
                if entry:
                    recorded = True
                    if not records.stood_in(entry, data):        # the stand-in GPU is named in its cell
                        stamps.add((entry["triton"], entry["torch"].split("+")[0], entry["date"]))
        unmeasured = ("written; not measured: no AMD GPU was available" if set(spec.targets) <= {"gfx950", "gfx942"}
                      else "written; not recorded on a GPU yet")
        status = "; ".join(cells) if recorded else unmeasured
        lines.append(f"| {number} | {the.title} | {spec.teaches} | {targets} | {status or '—'} |")
    lines.append("")
    if stamps:
        lines.append(_stamp_line(stamps, gpu_slug))
    return "\n".join(lines)


def recording_line(gpu_slug: str = records.DEFAULT_RECORDING) -> str:
    """The README's word on which versions the course's recording ran with, from the figures' own provenance, and
    which lessons another GPU's recording stands in for (records.STAND_INS)."""
    data = records.load_file(gpu_slug)
    entries = data["figures"].values()
    if not entries:
        return f"* **The course's recording** (`results/{gpu_slug}.json`): nothing recorded yet."
    tritons = ", ".join(sorted({e["triton"] for e in entries}))
    torches = ", ".join(sorted({e["torch"] for e in entries}))
    dates = sorted({e["date"] for e in entries})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    line = (f"* **The course's recording** (`results/{gpu_slug}.json`, what the notebooks and the website show): "
            f"{data['gpu'] or gpu_slug}, Triton {tritons}, torch {torches}, {when}.")
    for other in records.STAND_INS.get(gpu_slug, ()):
        theirs = records.load_file(other)
        missing = sorted({k.split("/")[0] for k in theirs["figures"] if k not in data["figures"]})
        if missing:
            line += (f" Where it has no entry (in lessons {', '.join(missing)}), `results/{other}.json` stands in: "
                     f"{theirs['gpu']}, each figure labelled with that GPU.")
    return line


def _stamp_line(stamps, gpu_slug: str) -> str:
    return ("Recorded with " + "; ".join(f"Triton {t}, torch {p}, {d}" for t, p, d in sorted(stamps))
            + f" (`results/{gpu_slug}.json`).")


def home_markdown(gpu_slug: str = records.DEFAULT_RECORDING) -> str:
    """The home page's lessons, one table per part of the site: each lesson linked, what it teaches, and its headline
    figures as recorded (a planned lesson is left out until it is written)."""
    data = records.load(gpu_slug)
    gpu = data["gpu"] or gpu_slug
    on_site = {page for _, pages in toc_parts() for page in pages}
    written = [number for number, the in lessons().items() if not the.checks.planned]
    lines, stamps = [], set()
    for caption, numbers in lesson_parts(written):
        lines += [f"### {caption}", "", f"| # | lesson | what it teaches | headline figures ({gpu}) |",
                  "|---|---|---|---|"]
        for number in numbers:
            the = lessons()[number]
            spec = the.checks
            page = f"lessons/{the.folder}/lesson"
            title = f"[{the.title}](../{page}.ipynb)" if page in on_site else the.title
            cells = []
            for fig in spec.figures:
                if not fig.headline:
                    continue
                entry = data["figures"].get(records.figure_key(number, fig.key))
                if entry:
                    cells.append(_figure_cell(fig, entry, data))
                    if not records.stood_in(entry, data):        # the stand-in GPU is named in its cell
                        stamps.add((entry["triton"], entry["torch"].split("+")[0], entry["date"]))
            if not cells:
                cells = [NOT_MEASURED if set(spec.targets) <= {"gfx950", "gfx942"} else "not recorded on a GPU yet"]
            lines.append(f"| {number} | {title} | {spec.teaches} | {'; '.join(cells)} |")
        lines.append("")
    if stamps:
        lines.append(_stamp_line(stamps, gpu_slug) + " Each figure is a share of a ceiling timed in the same run; "
                     "[recorded results](results.md) has every figure with its range and verdict.")
    return "\n".join(lines)


# -- the progression plot of the NVIDIA GEMM part ---------------------------------------------------

PROGRESSION_KEY = "bf16_8192"          # the figure every GEMM version has: bf16 8192³ as a fraction of cuBLAS
PROGRESSION_LESSONS = tuple(f"{n}" for n in range(10, 20))
PROGRESSION_IMAGE = "images/{slug}-gemm-progression.png"   # under book/


def progression_bars(gpu_slug: str = records.DEFAULT_RECORDING) -> list[tuple]:
    """(version label, ratio to cuBLAS, lowest and highest pair's ratio, date) of each recorded NVIDIA GEMM version, in
    order: every ratio is the version's own, timed against cuBLAS in the same run."""
    figures, bars = records.load(gpu_slug)["figures"], []
    for number, the in lessons().items():
        if number not in PROGRESSION_LESSONS or the.planned:
            continue
        entry = figures.get(records.figure_key(number, PROGRESSION_KEY))
        if entry is None:
            continue
        version, _, idea = the.title.split("GEMM ", 1)[-1].partition(": ")
        label = version + "\n" + textwrap.fill(idea, 11, break_long_words=False)
        ratios = entry["details"].get("ratios") or [entry["value"]]
        bars.append((label, round(entry["value"], 4), round(min(ratios), 4), round(max(ratios), 4), entry["date"]))
    return bars


def _triton_line(gpu_slug: str = records.DEFAULT_RECORDING):
    entry = records.load(gpu_slug)["figures"].get(records.figure_key("17", "triton_bf16_8192"))
    return None if entry is None else round(entry["value"], 4)


def _progression_description(bars, triton=None) -> str:
    text = "; ".join(f"{label.replace(chr(10), ' ')} {value:.4f} ({low:.4f}-{high:.4f}, {date})"
                     for label, value, low, high, date in bars)
    return text + (f"; plain Triton {triton:.4f}" if triton else "")


def draw_progression(path: Path, bars, gpu: str, triton=None) -> None:
    """Bars of each version's ratio to cuBLAS timed in its own run (bf16 8192³), its pairs' range as a whisker, and
    plain Triton's ratio as a line, written to ``path``; the data go into the PNG's description."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [b[0] for b in bars]
    values = [b[1] for b in bars]
    fig, ax = plt.subplots(figsize=(9, 4.2), dpi=150)
    drawn = ax.bar(labels, values, color="#4C78A8",
                   yerr=[[v - b[2] for v, b in zip(values, bars)], [b[3] - v for v, b in zip(values, bars)]],
                   capsize=3, ecolor="#555555")
    ax.axhline(1.0, color="#E45756", linestyle="--", linewidth=1.5, label="cuBLAS (each version's own run) = 1")
    if triton:
        ax.axhline(triton, color="#54A24B", linestyle=":", linewidth=1.5, label=f"plain Triton (lesson 17): {triton:.2f}×")
    for bar, value in zip(drawn, values):
        ax.text(bar.get_x() + bar.get_width() / 2, value + 0.03, f"{value:.2f}×", ha="center", va="bottom", fontsize=8)
    dates = sorted({b[4] for b in bars})
    ax.set_ylabel("fraction of cuBLAS (bf16 8192³)", fontsize=10)
    ax.set_ylim(0, 1.3)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title(f"GEMM versions on the {gpu}, {' to '.join([dates[0], dates[-1]] if len(dates) > 1 else dates)}: "
                 "each bar's ratio to cuBLAS timed in the same run", fontsize=9)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Description": _progression_description(bars, triton), "Software": None})
    plt.close(fig)


def progression_markdown(gpu_slug: str = records.DEFAULT_RECORDING) -> str:
    bars = progression_bars(gpu_slug)
    if not bars:
        return ""
    gpu = records.load(gpu_slug)["gpu"] or gpu_slug
    # The bar labels are wrapped for the plot; unwrapped for the text ("shared-\nmemory" is "shared-memory").
    listed = ", ".join(f"{label.replace('-' + chr(10), '-').replace(chr(10), ' ')} {value:.2f}× ({low:.2f}–{high:.2f})"
                       for label, value, low, high, _ in bars)
    triton = _triton_line(gpu_slug)
    return "\n".join([
        f"#### The NVIDIA GEMM, version by version ({gpu}, bf16 8192³)", "",
        f"![Bar chart of each GEMM version's bf16 8192³ ratio to cuBLAS timed in the same run]"
        f"({PROGRESSION_IMAGE.format(slug=gpu_slug)})", "",
        f"Each bar is a version's recorded ratio to cuBLAS timed in the same run (the median of 3 interleaved pairs; "
        f"the whisker spans the pairs): {listed}." + (f" Plain Triton, the bar from v7 on: {triton:.2f}×." if triton
                                                      else ""), ""])


def _update_progression(root: Path, write: bool, gpu_slug: str = records.DEFAULT_RECORDING) -> bool:
    bars = progression_bars(gpu_slug)
    path = root / "book" / PROGRESSION_IMAGE.format(slug=gpu_slug)
    if not bars:
        return False
    triton = _triton_line(gpu_slug)
    if png_description(path) == _progression_description(bars, triton):
        return False
    if write:
        draw_progression(path, bars, records.load(gpu_slug)["gpu"] or gpu_slug, triton)
    return True


def update(root: Path, write: bool) -> list[str]:
    """Redraw the progression chart (only when its numbers changed) and rewrite the generated parts of
    ``book/results.md``, ``README.md`` (the lesson table, the recording's versions) and ``book/intro.md``; return the files that changed (or, with ``write=False``,
    that are stale)."""
    changed = []
    if _update_progression(root, write):
        changed.append("book/" + PROGRESSION_IMAGE.format(slug=records.DEFAULT_RECORDING))
    if replace_between(root / "book" / "results.md", RESULTS_BEGIN, END.format("RESULTS"), results_markdown(), write):
        changed.append("book/results.md")
    if replace_between(root / "README.md", README_BEGIN, END.format("LESSON TABLE"), readme_table(), write):
        changed.append("README.md")
    if replace_between(root / "book" / "intro.md", HOME_BEGIN, END.format("LESSONS"), home_markdown(), write):
        changed.append("book/intro.md")
    if replace_between(root / "README.md", RECORDING_BEGIN, END.format("RECORDING"), recording_line(), write):
        changed.append("README.md")
    return changed
