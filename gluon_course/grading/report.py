"""Tables generated from ``results/`` and the lessons' own metadata (never typed by hand): the website's
results page and the README's lesson table. ``python -m gluon_course tables`` rewrites both; a test fails
when the committed ones are stale."""
from __future__ import annotations

from pathlib import Path

from . import records
from ..course import lessons

RESULTS_BEGIN = "<!-- BEGIN GENERATED RESULTS (python -m gluon_course tables) -->"
README_BEGIN = "<!-- BEGIN GENERATED LESSON TABLE (python -m gluon_course tables) -->"
END = "<!-- END GENERATED {} -->"

VENDOR = {"sm_90": "Hopper", "sm_100": "Blackwell", "gfx950": "MI350/MI355", "gfx942": "MI300"}


def _figure_cell(fig, entry) -> str:
    e = fig.expect
    if entry is None:
        return f"{fig.title}: not recorded"
    return f"{fig.title}: {entry['text'].split(' vs ')[0]}, {e.format(entry['value'])}"


def results_markdown(gpu_slug: str = records.DEFAULT_RECORDING) -> str:
    data = records.load(gpu_slug)
    figures = data["figures"]
    lines = [f"### {data['gpu'] or gpu_slug}", ""]
    if not figures:
        return "\n".join(lines + ["Nothing recorded yet.", ""])
    stamps = sorted({(e["triton"], e["torch"], e["date"], e["commit"]) for e in figures.values()})
    for triton, torch, date, commit in stamps:
        lines.append(f"Triton {triton} · torch {torch} · {date} · commit `{commit}`")
    lines += ["", "| lesson | figure | measured | = | range (gates) | verdict | course target |",
              "|---|---|---|---|---|---|---|"]
    checks = []
    for number, the in lessons().items():
        spec = the.checks
        if spec.planned:
            continue
        for fig in spec.figures:
            entry = figures.get(records.figure_key(number, fig.key))
            target = "" if fig.expect.target is None else (
                fig.expect.target_line(entry["value"]) if entry else "")
            if entry is None:
                lines.append(f"| {number} | {fig.title} | not recorded | | {fig.expect.describe()} | | {target} |")
                continue
            lines.append(f"| {number} | {fig.title} | {entry['text']} | {fig.expect.format(entry['value'])} | "
                         f"{fig.expect.describe()} | {fig.expect.verdict(entry['value'])} | {target} |")
        for check in spec.correctness:
            entry = figures.get(records.check_key(number, check.key))
            status = "not recorded" if entry is None else ("✓ passed" if entry["passed"] else f"✗ {entry['detail']}")
            checks.append(f"| {number} | {check.title} | {status} |")
    lines += ["", "Correctness checks run on the GPU in the same recording:", "",
              "| lesson | check | result |", "|---|---|---|", *checks, ""]
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
                cells.append(_figure_cell(fig, entry))
                if entry:
                    recorded = True
                    stamps.add((entry["triton"], entry["torch"].split("+")[0], entry["date"]))
        status = "; ".join(cells) if recorded else "written; not recorded on a GPU yet"
        lines.append(f"| {number} | {the.title} | {spec.teaches} | {targets} | {status or '—'} |")
    lines.append("")
    if stamps:
        lines.append("Recorded with " + "; ".join(f"Triton {t}, torch {p}, {d}" for t, p, d in sorted(stamps))
                     + f" (`results/{gpu_slug}.json`).")
    return "\n".join(lines)


def _replace_between(path: Path, begin: str, end: str, body: str, write: bool) -> bool:
    text = path.read_text()
    if begin not in text or end not in text:
        raise ValueError(f"{path} has no generated-table markers ({begin} … {end})")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    new = f"{head}{begin}\n{body}\n{end}{tail}"
    if write and new != text:
        path.write_text(new)
    return new != text


def update_tables(root: Path, write: bool = True) -> list[str]:
    """Rewrite the generated parts of ``book/results.md`` and ``README.md``; return the files that changed
    (or, with ``write=False``, that are stale)."""
    changed = []
    if _replace_between(root / "book" / "results.md", RESULTS_BEGIN, END.format("RESULTS"), results_markdown(), write):
        changed.append("book/results.md")
    if _replace_between(root / "README.md", README_BEGIN, END.format("LESSON TABLE"), readme_table(), write):
        changed.append("README.md")
    return changed
