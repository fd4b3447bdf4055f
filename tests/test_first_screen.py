"""A learner's first screen: the README and the site's home page open with the learner's loop (set up once, grade
lesson 01, open it, fill its gaps, grade again), before anything for the course's authors. "First screen": the text
before the page's third heading, about what a 1280 × 900 window shows of the rendered page."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOOP = ("make venv", "make check-01", "lessons/01-scalar-memcpy", "gap")
FOR_AUTHORS = ("make test", "make book", "make record")


def first_screen(text: str) -> str:
    headings = [m.start() for m in re.finditer(r"^#{1,3} ", text, re.M)]
    return text[:headings[2]] if len(headings) > 2 else text


@pytest.mark.parametrize("page", ["README.md", "book/intro.md"])
def test_the_first_screen_gives_the_learners_loop(page):
    screen = first_screen((ROOT / page).read_text(encoding="utf-8"))
    missing = [step for step in LOOP if step not in screen]
    assert not missing, f"{page}: its first screen does not give the learner's loop: {missing} missing"
    loop_at = screen.index("make check-01")
    early = [c for c in FOR_AUTHORS if c in screen and screen.index(c) < loop_at]
    assert not early, f"{page}: the authors' commands {early} come before the learner's loop"


def test_the_scan_sees_a_page_whose_loop_is_at_the_end():
    page = "# T\n\nintro\n\n## Who\n\ntext\n\n## Lessons\n\nmany\n\n## Start\n\nmake venv\nmake check-01\n"
    assert "make check-01" not in first_screen(page)
