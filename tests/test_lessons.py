"""Each lesson: starter in sync with its solution, solution passes its checks, starter fails them clearly."""
import subprocess
import sys

import pytest

from gluon_course import LESSONS, load_solution
from gluon_course.course import repo_root
from gluon_course.measure import has_gpu
from gluon_course.spec import run_check, spec_for
from gluon_course.starters import expected_starter

NUMBERS = [n for n, t in LESSONS.items() if t.solution_path.exists()]
gpu = pytest.mark.skipif(not has_gpu(), reason="needs a GPU (CPU machines check machine code only)")


@pytest.mark.parametrize("number", NUMBERS)
def test_starter_is_generated_from_solution(number):
    the = LESSONS[number]
    assert the.starter_path.exists(), f"{the.starter_path} is missing: run `make starters`"
    assert the.starter_path.read_text() == expected_starter(number), (
        f"lessons/{the.folder}/starter.py differs from what solutions/{the.folder}/solution.py generates. "
        "Course authors: edit the solution and run `make starters`. Learners filling the gaps: expected; "
        f"grade your work with `python -m gluon_course check {number}`.")


@pytest.mark.parametrize("number", NUMBERS)
def test_solution_passes_machine_code_checks(number):
    module = load_solution(number)
    for check in spec_for(number).cpu_checks:
        ok, detail = run_check(check, module)
        assert ok, f"lesson {number} solution fails '{check.name}': {detail}"


@pytest.mark.parametrize("number", NUMBERS)
def test_starter_reports_open_gaps_without_a_traceback(number):
    run = subprocess.run([sys.executable, "-m", "gluon_course", "check", number], cwd=repo_root(),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "not yet implemented" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr
    assert "on a GPU: skipped until the machine-code checks pass" in run.stdout


@pytest.mark.parametrize("number", NUMBERS)
def test_every_lesson_checks_sm90_sm100_and_gfx950(number):
    names = " ".join(c.name for c in spec_for(number).cpu_checks)
    for target in ("sm_90", "gfx950"):
        assert target in names, f"lesson {number} has no machine-code check for {target}"


@gpu
@pytest.mark.parametrize("number", NUMBERS)
def test_solution_is_correct_on_the_gpu(number):
    module = load_solution(number)
    for check in spec_for(number).gpu_checks:
        ok, detail = run_check(check, module)
        assert ok, f"lesson {number} solution fails '{check.name}': {detail}"
