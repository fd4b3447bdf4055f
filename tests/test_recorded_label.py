"""A verdict from a recording says so where it is printed. On a machine that cannot run a lesson's GPU checks (no GPU,
or one of a class the lesson is not written for) the notebook prints the recording's outcomes: every such line (a
check's ✓ or ✗, a figure's verdict, its course target) ends with ``  [recorded: <GPU>, <date>, the solution]``,
naming whose verdict it is; a line measured live here, on the learner's code or the solution, has no label. The
committed notebooks hold live lines, so nbval's sanitizer removes that label, and only that label, before comparing.

The GPU is stubbed as tests/test_toolkit.py's ``test_a_live_figure_is_measured_once_per_notebook`` does: the checks
and figures of lesson 02 (a correctness check, figures, a course target) "run live" through stand-ins that return
the recorded outcomes, so the live and recorded lines differ in nothing but the label.
"""
from __future__ import annotations

import contextlib
import io

import pytest

from gluon_course.grading import notebook, records
from gluon_course.grading.runner import FigureOutcome, Outcome
from test_nbval_figures import _sanitized

LESSON = "02"
LABEL = "  [recorded: NVIDIA H200, 2026-12-03, the solution]"


def _printed(call) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        call()
    return out.getvalue().splitlines()


def _entry(key: str) -> dict:
    entry = records.load()["figures"].get(key)
    if entry is None:
        pytest.skip(f"{key} is not recorded")
    return entry


def _here(monkeypatch, live: bool) -> notebook.Lab:
    """Lesson 02's Lab on a machine with a GPU of its class (``live``) or without one. Live, each check and figure
    returns what the recording holds for it."""
    monkeypatch.setattr(notebook, "has_gpu", lambda: live)
    monkeypatch.setattr(notebook, "runs_lessons_for", lambda targets: live)
    monkeypatch.setattr(notebook, "_MEASURED", {})
    monkeypatch.delenv("GLUON_COURSE_RECORD", raising=False)

    def run_check(check, module, number=None):
        entry = _entry(records.check_key(LESSON, check.key))
        return Outcome(check.key, check.title, entry["passed"], entry["detail"])

    def measure_figure(fig, module, number=None):
        entry = _entry(records.figure_key(LESSON, fig.key))
        return FigureOutcome(fig.key, fig.title, entry["value"], entry["text"], fig.expect.verdict(entry["value"]),
                             fig.expect.target_line(entry["value"]), entry["details"])

    monkeypatch.setattr(notebook, "run_check", run_check)
    monkeypatch.setattr(notebook, "measure_figure", measure_figure)
    lab = notebook.Lab(LESSON, show_header=False)
    lab._module = object()          # never imported: the stand-ins above do not run it
    return lab


def _verdict_lines(lab: notebook.Lab) -> tuple[list[str], list[str]]:
    """(the correctness lines, the figure lines: each verdict and course-target line) a Lab prints."""
    return (_printed(lab.correctness), _printed(lab.figures))


def test_the_label_names_the_gpu_the_day_and_the_solution():
    assert records.recorded_label({"gpu": "NVIDIA H200", "date": "2026-12-03", "commit": "abc"}) == LABEL


def test_every_recorded_line_says_it_is_recorded(monkeypatch):
    lab = _here(monkeypatch, live=False)
    checks, figures = _verdict_lines(lab)
    assert len(checks) == len(lab.checks.correctness) >= 1
    for check, line in zip(lab.checks.correctness, checks):
        entry = _entry(records.check_key(LESSON, check.key))
        assert line.startswith("✓" if entry["passed"] else "✗") and line.endswith(records.recorded_label(entry)), line
    targets = [line for line in figures if "course target" in line]
    assert targets, "lesson 02 has a course target: its line must be among those checked"
    assert len(figures) == len(lab.checks.figures) + len(targets)
    for line in figures:
        assert "course target" in line or "✓" in line or "✗" in line, line
    dated = {records.recorded_label(_entry(records.figure_key(LESSON, f.key))) for f in lab.checks.figures}
    for line in figures:
        assert any(line.endswith(label) for label in dated), f"a recorded line without its label: {line!r}"
        assert line.count("[recorded:") == 1, line


def test_a_live_line_has_no_label_and_matches_the_recorded_one_through_the_sanitizer(monkeypatch):
    recorded_checks, recorded_figures = _verdict_lines(_here(monkeypatch, live=False))
    live_checks, live_figures = _verdict_lines(_here(monkeypatch, live=True))
    live, recorded = live_checks + live_figures, recorded_checks + recorded_figures
    assert len(live) == len(recorded) and not any("[recorded" in line for line in live), live
    for live_line, recorded_line in zip(live, recorded):
        assert live_line != recorded_line and recorded_line.startswith(live_line), (live_line, recorded_line)
        # What nbval compares: the CPU run's recorded line against the committed live one.
        assert _sanitized(recorded_line) == _sanitized(live_line)


def test_the_sanitizer_removes_the_label_and_nothing_else():
    live = "tile copy, R=4   4.060 TB/s vs copy 4.23 TB/s = 96.1% of copy; expected ≥ 85.0% of copy  ✓ in range"
    assert _sanitized(live + LABEL) == _sanitized(live)
    assert _sanitized(f"{live}{LABEL}\nnext line") == _sanitized(f"{live}\nnext line")      # the line break stays
    # A verdict is outside the label: a recorded ✗ still differs from a live ✓.
    assert _sanitized(live.replace("✓ in range", "✗ below") + LABEL) != _sanitized(live)
    # Anything but the exact label at the very end of a line is compared as printed: (printed, the same without it).
    bare = LABEL.strip()
    near_misses = [
        (f"{live}{LABEL} and more", f"{live} and more"),                                 # not at the end of the line
        (live + LABEL.replace("the solution", "your code"), live),                        # other words
        (live + LABEL.replace("2026-12-03", "yesterday"), live),                          # not a date
        (live + LABEL.replace("NVIDIA H200", "NVIDIA H200, ✗ below"), live),              # more than a GPU's name
        (live + LABEL.replace("  [", " ["), live),                                         # one space, not two
        (f"{live}\n{bare}", f"{live}\n"),                                                # a line that is only a label
    ]
    for printed, without in near_misses:
        assert _sanitized(printed) != _sanitized(without), printed


@pytest.mark.parametrize("live", [True, False])
def test_lesson_30s_decision_table_labels_a_verdict_drawn_from_a_recording(live):
    from gluon_course.grading.translate import decision_table

    label = "" if live else LABEL
    figures = {key: notebook.Shown(key, value, "", "✓ in range", {}, label)
               for key, value in (("plain", 1.0), ("translated", 0.5), ("gluon", 0.98))}
    rows, headers = decision_table({"copy": {"plain": "plain", "translated": "translated", "gluon": "gluon"}},
                                   figures, dict.fromkeys(figures, 5), dict.fromkeys(figures, "LDG.E.128"))
    verdicts = [row[headers.index("verdict")] for row in rows]
    assert verdicts[0].startswith("plain Triton is enough") and verdicts[1:] == ["", ""]
    assert verdicts[0].endswith(LABEL) != live and "[recorded" not in "".join(verdicts[1:])
