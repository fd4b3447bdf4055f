"""Every recorded figure in prose comes from results/: none typed by hand.

A number in the README, a book page or a lesson notebook's markdown that equals a figure of the course's recording
(``results/nvidia-h200.json``: a figure's value, a number its text states, a detail that measures something) at the
precision it is written with, and carries a figure's unit (×, µs, ms, TFLOPS, TB/s, GB/s, %), is a recorded figure
typed by hand: it goes stale at the next recording. It belongs between the two comments of a marker
(``<!-- fig 31/host_cost {v:.1f} µs -->9.8 µs<!-- /fig -->``), which ``python -m gluon_course tables`` rewrites
(``gluon_course.website.figures``; ``tests/test_toolkit.py::test_generated_tables_are_up_to_date`` fails on a stale
one). A number counts only where the prose is about its lesson (its own notebook, or a paragraph naming the lesson):
read against every figure, almost any two-digit ratio would equal one of a hundred by chance.

The numbers allowed to stand as written are listed once, below, each with why.
"""
from __future__ import annotations

import collections
import json
import re
from dataclasses import dataclass

import pytest

from gluon_course.course import repo_root
from gluon_course.website import figures

ROOT = repo_root()


@dataclass(frozen=True)
class Allowed:
    why: str
    paragraph: str = ""       # a pattern the number's paragraph holds
    sentence: str = ""        # a pattern the number's sentence (table row, list item) holds
    before: str = ""          # a pattern the words just before the number end with
    file: str = ""            # a pattern the file's path holds

    def allows(self, hit: figures.Written) -> bool:
        at = hit.sentence.find(hit.text)
        before = hit.sentence[:at] if at >= 0 else ""
        return all([re.search(self.file, hit.file), re.search(self.paragraph, hit.paragraph, re.S),
                    re.search(self.sentence, hit.sentence, re.S),
                    not self.before or re.search(self.before + r"\s*$", before)])


# The numbers that may equal a recorded figure and stay as written. Keep it short: a figure of the recording goes in
# a marker; only what is not the recording's figure is allowed here.
ALLOWED = [
    # History told with its source: a trial under results/trials/ keeps the numbers of a run that is not the
    # recording (an earlier tile, a probe); the paragraph that tells it names the file.
    Allowed("trial history names its trial file", paragraph=r"results/trials/"),
    # The course's design run (2026-11-29 and 2026-11-30), before the lessons were written and recorded: its figures
    # are references in the lessons' checks, labelled as the design run wherever a lesson cites them.
    Allowed("the design run, labelled as such", sentence=r"design run"),
    # The lab notes are the history of the recordings, each dated: earlier recordings' figures, by definition not
    # the current one's. A lesson's history may have a page of its own (book/lab-notes/34.md).
    Allowed("the lab notes: earlier recordings, dated", file=r"^book/lab-notes(?:\.md$|/)"),
    # Constants of the hardware as its vendor publishes them, not measured by the course.
    Allowed("a datasheet constant", sentence=r"datasheet"),
    # Vendor figures, labelled as the vendor's (AMD's MI355X figures from its blog and tutorial).
    Allowed("a vendor's figure, labelled", sentence=r"\bAMD's\b|\bMI3[05]5X?\b"),
    # Arithmetic on counts read off the listings, not a measurement (lesson 19's table of copies and reads per product).
    Allowed("a ratio of counts from a listing", sentence=r"costs 1\.33× the copies\s+into\s+shared\s+memory"),
    # A line the course draws, not a measurement: the decision rule's 1.20× in lesson 30, a course target.
    Allowed("a decision line or a course target", before=r"(?:\bat least|\btargets?(?: of)?|\bline(?: at)?|rule's|"
                                                        r"every pair reaches|median above|is not|no shape below|≥)"),
    # The factors a lesson's checks set its ranges with, around a recorded figure (lesson 30: 0.6× to 1.5× of what its
    # first recording measured).
    Allowed("a range's factors", sentence=r"\brange\b.*×\s+(?:of\s+)?what\b"),
]

# Lessons whose notebooks other work is rewriting: their hand-typed figures are that work's to mark (or move to the
# lab notes). The count is a ceiling: it may only go down, and the rewrite takes the lesson out of this table.
TO_BE_FIXED_BY_THE_REWRITE_OF_31_TO_34 = {}
# None left: lesson 04's sweep range (cell 52) is a marker now.
LEFT_FOR_AFTER_RE_EXECUTION = {}
HELD_ELSEWHERE = {**TO_BE_FIXED_BY_THE_REWRITE_OF_31_TO_34, **LEFT_FOR_AFTER_RE_EXECUTION}


def _lesson(hit: figures.Written) -> str | None:
    m = re.match(r"lessons/(\d{2})-", hit.file)
    return m[1] if m else None


@pytest.fixture(scope="module")
def typed_by_hand() -> list[figures.Written]:
    """Every number of the prose that equals a recorded figure and is not allowed to stand as written."""
    return [hit for hit in figures.hand_typed(ROOT) if not any(rule.allows(hit) for rule in ALLOWED)]


def test_no_recorded_figure_is_typed_by_hand(typed_by_hand):
    held = collections.Counter(_lesson(h) for h in typed_by_hand if _lesson(h) in HELD_ELSEWHERE)
    over = {n: f"{held[n]} (allowed {HELD_ELSEWHERE[n]})" for n in held if held[n] > HELD_ELSEWHERE[n]}
    free = [h for h in typed_by_hand if _lesson(h) not in HELD_ELSEWHERE]
    assert not free and not over, (
        "recorded figures typed by hand (put each in a marker, <!-- fig NN/key {v:.2f}× -->…<!-- /fig -->, and run "
        "`python -m gluon_course tables`; or, if it is not the recording's figure, say whose it is):\n"
        + "\n".join(h.where() for h in free) + (f"\nmore than allowed in {over}" if over else ""))


def test_the_allowances_are_still_needed(typed_by_hand):
    """An allowance for a lesson held elsewhere goes down with its hits: a ceiling above what is left hides new ones."""
    held = collections.Counter(_lesson(h) for h in typed_by_hand if _lesson(h) in HELD_ELSEWHERE)
    loose = {n: f"{held[n]} left, allowed {allowed}" for n, allowed in HELD_ELSEWHERE.items() if held[n] < allowed}
    assert not loose, f"lower these allowances to what is left (or remove the lesson): {loose}"


def _scan(text: str, lesson: str | None = None) -> list[str]:
    return [h.number for h in figures.scan_text(text, figures.recorded_numbers(), "probe.md", None, lesson)
            if not any(rule.allows(h) for rule in ALLOWED)]


def test_the_scan_catches_a_recorded_figure_typed_by_hand():
    """The README's and book/measuring.md's stale sentences, written with today's recorded figures: each is caught."""
    host, cublas = figures.render("31/host_cost {v:.1f}"), figures.render("31/host_cost:cublas_us {v:.1f}")
    geomean, worst = figures.render("32/model_table {v:.3f}"), figures.render("32/model_table:worst {v:.2f}")
    readme = (f"Lesson 31 rewrites lesson 19's launcher. On the H200's host that takes {host} µs per call, against "
              f"cuBLAS's 13. Lesson 32 adds split-K: it is recorded at {geomean}× `F.linear` (geomean; worst "
              f"{worst}×).")
    assert _scan(readme) == [host, geomean, worst]
    measuring = (f"Lesson 31 measures the host's time per call directly, and its launcher takes {host} µs per call on "
                 f"the H200's host, against {cublas} µs for cuBLAS.")
    assert _scan(measuring) == [host, cublas]
    # In the lesson's own notebook, no lesson needs naming; a shape's figure deep in the details counts too.
    v9 = figures.render("19/bf16_8192:tflops,19/bf16_8192:library_tflops {0:.0f} against {1:.0f}")
    assert _scan(f"v9 runs bf16 8192³ at {v9} TFLOPS.", lesson="19") == v9.split(" against ")


def test_a_number_equals_a_figure_at_the_precision_it_is_written_with(tmp_path, monkeypatch):
    """On a recording made for the test: 9.8027 µs is "9.8 µs" and "9.80 µs", not "9.81 µs"; 0.9662 is "0.97×" and
    "96.6%", not "0.96×"; a number of lesson 31 counts in a paragraph about lesson 31 only."""
    stamp = {"gpu": "NVIDIA H200", "triton": "3.9.0", "torch": "2.11.0", "date": "2026-12-03", "commit": "0"}
    host = {"kind": "figure", "value": 9.8027, "text": "9.8 µs per call (cuBLAS 11.4)",
            "expected": "expected ≤ 60 µs", "details": {"cublas_us": 11.43, "pairs": [0.9662, 1.2]}, **stamp}
    share = {"kind": "figure", "value": 0.9662, "text": "", "expected": "expected ≥ 80.0% of cuBLAS", "details": {},
             **stamp}
    (tmp_path / "nvidia-h200.json").write_text(json.dumps({"gpu": "NVIDIA H200", "figures": {
        "31/host_cost": host, "31/share": share}}))
    monkeypatch.setenv("GLUON_COURSE_RESULTS_DIR", str(tmp_path))
    written = "Lesson 31: 9.8 µs, 9.80 µs, 9.81 µs, 11.4 µs, 11.43 µs, 11.44 µs; 0.97×, 0.96×, 96.6%, 97%, 96%."
    assert _scan(written) == ["9.8", "9.80", "11.4", "11.43", "0.97", "96.6", "97"]
    assert _scan("Lesson 30: 9.8 µs.") == [] and _scan("9.8 µs.", lesson="31") == ["9.8"]
    # The same number, allowed where it is not the recording's: history that names its trial file, the design run, a
    # vendor's figure, a decision line.
    assert _scan("Lesson 31: a trial timed 9.8 µs (results/trials/nvidia-h200-x.json).") == []
    assert _scan("Lesson 31's design run took 9.8 µs.") == []
    assert _scan("Lesson 31: AMD's MI355X takes 9.8 µs.") == []
    assert _scan("Lesson 31's rule asks at least 0.97× cuBLAS.") == []
    assert figures.render("31/host_cost:pairs {min:.2f}–{max:.2f}×") == "0.97–1.20×"


def test_the_scan_leaves_what_is_not_a_recorded_figure():
    # A marked figure, a figure of a lesson the paragraph is not about, a shape, a number without a unit.
    marked = "Lesson 31's launcher takes <!-- fig 31/host_cost {v:.1f} µs -->" + figures.render(
        "31/host_cost {v:.1f} µs") + "<!-- /fig --> per call."
    assert _scan(marked) == []
    host = figures.render("31/host_cost {v:.1f}")
    assert _scan(f"A call takes {host} µs.") == []
    assert _scan("Lesson 32 times 2048 × 4096 × 14336 and 16 rows.") == []
    # The constants and vendor figures the course states beside its own, as the pages write them today.
    glossary = (ROOT / "book" / "glossary.md").read_text().splitlines()
    datasheet = [line for line in glossary if "datasheet 4.8 TB/s" in line]
    assert datasheet and _scan("Lesson 01's copy. " + datasheet[0]) == []
    assert _scan("Lesson 11: the H200's datasheet peak for dense bf16, about 990 TFLOPS, is a `wgmma` figure.") == []
    # A generated block is the tables command's.
    generated = "<!-- BEGIN GENERATED X -->\nLesson 31: " + host + " µs\n<!-- END GENERATED X -->\n"
    assert _scan(generated) == []


def test_markers_say_where_a_figure_comes_from():
    assert figures.render("31/host_cost {v:.1f} µs") == f"{figures.numbers_at('31/host_cost')[0]:.1f} µs"
    low, high = figures.render("19/sweep_bf16:ratios {min:.2f}"), figures.render("19/sweep_bf16:ratios {max:.2f}")
    assert figures.render("19/sweep_bf16:ratios {min:.2f}–{max:.2f}×") == f"{low}–{high}×"
    assert figures.render("19/over_triton_sweep:ratios>1 {n}") != figures.render("19/over_triton_sweep:ratios {n}")
    for wrong, says in [("31/nope {v}", "has not been recorded"), ("31/host_cost:nope {v}", "no 'nope' there"),
                        ("19/sweep_bf16:ratios {v:.2f}", "not a field here"),
                        ("31/host_cost", "needs a place and a format")]:
        try:
            figures.render(wrong)
        except figures.FigureSpecError as e:
            assert says in str(e), (wrong, str(e))
        else:
            raise AssertionError(f"{wrong} rendered")


def test_a_notebook_is_rewritten_in_its_marked_lines_only():
    """Only the marked line of a markdown cell changes: the same marker in a code cell's source is code, left alone."""
    marked = "<!-- fig 31/host_cost {v:.1f} µs -->16–18 µs<!-- /fig -->"
    cells = [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# Title\n", f"Costs {marked}.\n", "end"]},
             {"cell_type": "code", "execution_count": None, "id": "b", "metadata": {}, "outputs": [],
              "source": [f"x = '{marked}'"]}]
    text = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1,
                      ensure_ascii=False) + "\n"
    new = figures._rewrite_notebook(text)
    changed = [(a, b) for a, b in zip(text.splitlines(), new.splitlines()) if a != b]
    assert len(changed) == 1 and len(text.splitlines()) == len(new.splitlines())
    assert figures.render("31/host_cost {v:.1f} µs") in changed[0][1]
    assert json.loads(new)["cells"][1]["source"] == [f"x = '{marked}'"]
