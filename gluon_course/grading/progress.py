"""``python -m gluon_course progress`` (``make progress``): the learner's progress, one line per lesson.

For each lesson it says whether ``lessons/NN-slug/starter.py`` passes the lesson's machine-code checks, the ones
that run on any machine: the same checks as ``check NN``, through the same runner, without the GPU part. A starter
still as generated (every gap open) is reported as such without compiling anything; an edited one is compiled for
the lesson's targets, from Triton's compile cache when it was compiled before (``check NN`` fills that cache), so a
second run is quick and a first one may take a minute or two.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..course import lessons, load_checks, load_starter
from .runner import LEARNER_ERRORS, run_check
from .starters import expected_starter

UNTOUCHED = "not started"
PASSES = "✓ passes"


@dataclass(frozen=True)
class Progress:
    number: str
    title: str
    status: str          # UNTOUCHED, PASSES, or what is left ("3 of 9 fail", "does not load")
    passed: int = 0
    total: int = 0


def lesson_progress(number: str, path=None) -> Progress:
    """Where lesson ``number``'s starter (or the file ``path``) stands against its machine-code checks."""
    from pathlib import Path

    the = lessons()[number]
    starter = Path(path) if path else the.starter_path
    if not starter.exists():
        return Progress(number, the.title, f"no {starter.name} (python -m gluon_course starters writes it)")
    if starter.read_text(encoding="utf-8") == expected_starter(number):
        return Progress(number, the.title, UNTOUCHED)
    checks = load_checks(number).CHECKS.machine_code
    try:
        module = load_starter(number, starter)
    except LEARNER_ERRORS:
        return Progress(number, the.title, f"the starter does not load (python -m gluon_course check {number} "
                                           "says why)", 0, len(checks))
    outcomes = [run_check(c, module, number) for c in checks]
    passed = sum(o.ok for o in outcomes)
    failed = sum(o.failed for o in outcomes)
    if failed == 0:
        return Progress(number, the.title, PASSES, passed, len(checks))
    return Progress(number, the.title, f"{failed} of {len(checks)} fail", passed, len(checks))


def progress(out=print) -> list[Progress]:
    """Print the table (one line per lesson as it is checked) and return its rows."""
    out("Your starters (lessons/NN-slug/starter.py) against each lesson's machine-code checks, which need no GPU.")
    out("An edited starter is compiled for its lesson's targets: the first run may take a minute or two, a repeat "
        "comes from the compile cache.")
    rows = []
    taught = {number: the for number, the in lessons().items() if not the.planned}
    width = max(len(the.title) for the in taught.values())
    for number, the in taught.items():
        row = lesson_progress(number)
        rows.append(row)
        counted = f"{row.passed}/{row.total}" if row.total else ""
        out(f"  {number}  {the.title:<{width}}  {counted:>5}  {row.status}")
    done = sum(row.status == PASSES for row in rows)
    started = sum(row.status != UNTOUCHED for row in rows)
    out(f"{done} of {len(rows)} lessons pass their machine-code checks; {started} started. "
        "make check-NN grades one lesson in full (on a GPU: correctness and figures too).")
    return rows
