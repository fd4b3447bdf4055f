"""The results table of the website, generated from ``results/<gpu>.json`` (never typed by hand)."""
from __future__ import annotations

from . import records
from .course import LESSONS
from .spec import spec_for

BEGIN = "<!-- BEGIN GENERATED RESULTS (python -m gluon_course results-page) -->"
END = "<!-- END GENERATED RESULTS -->"


def results_markdown(gpu_slug: str = records.DEFAULT_RECORDING) -> str:
    data = records.load(gpu_slug)
    figures = data["figures"]
    lines = [f"### {data['gpu'] or gpu_slug}", ""]
    if not figures:
        return "\n".join(lines + ["Nothing recorded yet.", ""])
    stamps = sorted({(e["triton"], e["torch"], e["date"], e["commit"]) for e in figures.values()})
    for triton, torch, date, commit in stamps:
        lines.append(f"Triton {triton} · torch {torch} · {date} · commit `{commit}`")
    lines += ["", "| lesson | figure | measured | = | expected | verdict |", "|---|---|---|---|---|---|"]
    checks = []
    for number, the in LESSONS.items():
        if not the.solution_path.exists():
            continue
        spec = spec_for(number)
        for fig in spec.figures:
            entry = figures.get(f"{number}/{fig.key}")
            if entry is None:
                lines.append(f"| {number} | {fig.title} | not recorded | | {fig.expect.describe()} | |")
                continue
            lines.append(f"| {number} | {fig.title} | {entry['text']} | {fig.expect.format(entry['value'])} | "
                         f"{fig.expect.describe()} | {fig.expect.verdict(entry['value'])} |")
        for check in spec.gpu_checks:
            entry = next((e for k, e in figures.items() if k.startswith(f"{number}/check/")
                          and e["name"] == check.name), None)
            status = "not recorded" if entry is None else ("✓ passed" if entry["passed"] else f"✗ {entry['detail']}")
            checks.append(f"| {number} | {check.name} | {status} |")
    lines += ["", "Correctness checks run on the GPU in the same recording:", "",
              "| lesson | check | result |", "|---|---|---|", *checks, ""]
    return "\n".join(lines)


def update_results_page(path) -> bool:
    """Rewrite the generated part of ``book/results.md``; True if it changed."""
    from pathlib import Path

    page = Path(path)
    text = page.read_text()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{page} has no generated-results markers ({BEGIN} … {END})")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{results_markdown()}\n{END}{tail}"
    changed = new != text
    page.write_text(new)
    return changed
