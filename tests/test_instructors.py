"""The workshop plans of book/instructors.md add up: in every plan's table each block starts where the previous one
ended, every track of a plan lasts what the plan's heading says, and no lesson gets more minutes than its own notebook
says it takes (the "Time: about N minutes" of its first cell): a block is the notebook minus what the plan leaves
out, never more."""
from __future__ import annotations

import re

import pytest

from gluon_course import lessons
from gluon_course.course import repo_root
from gluon_course.website.support import notebook_minutes

PAGE = repo_root() / "book" / "instructors.md"
ROW = re.compile(r"^\|\s*(\d+):(\d\d)\s*\|\s*(\d+)\s*\|\s*([^|]*)\|")
LESSON = re.compile(r"\*\*(\d\d) ·")
LENGTH = {"A 2-hour workshop": 120, "A 4-hour workshop": 240, "A 1-day workshop": 480}


def _plans() -> dict[str, dict[str, list[tuple[int, int, str]]]]:
    """plan heading -> track heading -> [(start minute, minutes, block)]."""
    plans: dict[str, dict[str, list]] = {}
    plan = track = None
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            plan, track = line[3:].strip(), None
        elif line.startswith("### ") and plan in LENGTH:
            track = line[4:].strip()
            plans.setdefault(plan, {})[track] = []
        elif track and (m := ROW.match(line)):
            plans[plan][track].append((int(m.group(1)) * 60 + int(m.group(2)), int(m.group(3)), m.group(4).strip()))
    return plans


PLANS = _plans()


def test_the_page_has_the_three_plans():
    assert set(PLANS) == set(LENGTH), f"plans found: {sorted(PLANS)}; expected {sorted(LENGTH)}"
    for plan, tracks in PLANS.items():
        assert tracks and all(rows for rows in tracks.values()), f"{plan}: a track without a timed table"


@pytest.mark.parametrize("plan", sorted(LENGTH))
def test_each_track_adds_up(plan):
    tracks = PLANS[plan]
    for track, rows in tracks.items():
        for (start, minutes, block), (following, _, after) in zip(rows, rows[1:]):
            assert start + minutes == following, (f"{plan} / {track}: {block!r} starts at {start} and lasts {minutes} "
                                                  f"minutes, but {after!r} starts at {following}")
    if plan == "A 1-day workshop":
        morning = [rows for track, rows in tracks.items() if track.startswith("Morning")]
        afternoons = [rows for track, rows in tracks.items() if track.startswith("Afternoon")]
        assert len(morning) == 1 and afternoons, f"{plan}: one morning and at least one afternoon, got {list(tracks)}"
        end_of_morning = morning[0][-1][0] + morning[0][-1][1]
        assert morning[0][0][0] == 0
        for rows in afternoons:
            assert rows[0][0] == end_of_morning, f"{plan}: an afternoon starts at {rows[0][0]}, not {end_of_morning}"
            assert rows[-1][0] + rows[-1][1] == LENGTH[plan], f"{plan}: an afternoon ends at {rows[-1][0] + rows[-1][1]}"
        return
    for track, rows in tracks.items():
        assert rows[0][0] == 0, f"{plan} / {track} does not start at 0:00"
        end = rows[-1][0] + rows[-1][1]
        assert end == LENGTH[plan], f"{plan} / {track} lasts {end} minutes, not {LENGTH[plan]}"


def test_no_lesson_gets_more_time_than_its_notebook_says():
    found = lessons()
    problems, seen = [], set()
    for plan, tracks in PLANS.items():
        for track, rows in tracks.items():
            for _, minutes, block in rows:
                m = LESSON.search(block)
                if not m:
                    continue
                number = m.group(1)
                assert number in found, f"{plan} / {track}: {block!r} names lesson {number}, which does not exist"
                seen.add(number)
                budget = notebook_minutes(found[number])
                assert budget, f"lesson {number}'s notebook has no 'Time: about N minutes' line"
                if minutes > budget:
                    problems.append(f"{plan} / {track}: lesson {number} gets {minutes} minutes, its notebook says {budget}")
    assert not problems, "\n".join(problems)
    assert {"01", "02", "10", "14", "15", "18", "20", "24"} <= seen, f"the plans teach only lessons {sorted(seen)}"
