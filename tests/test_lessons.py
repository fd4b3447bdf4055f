"""Every lesson, discovered from its folder: starter in sync with its solution, the solution passes its checks
(machine code here; correctness on a GPU), the starter fails them clearly, every declared target is checked,
and every planted mistake is rejected by the check it names."""
import subprocess
import sys

import pytest

from gluon_course import lesson, lessons, load_checks, load_solution
from gluon_course.course import load_module_file, load_plants, repo_root
from gluon_course.grading.runner import run_check
from gluon_course.grading.starters import expected_starter
from gluon_course.measure import has_gpu
from gluon_course.measure.device import runs_lessons_for

LESSONS = lessons()
NUMBERS = list(LESSONS)
READY = [n for n, t in LESSONS.items() if not t.planned]
PLANTS = [(n, p) for n in NUMBERS for p in load_plants(n)]
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
def test_author_folder_is_complete(number):
    the = LESSONS[number]
    for path in (the.solution_path, the.checks_path, the.plants_path, the.notebook_path):
        assert path.exists(), f"lesson {number} lacks {path.relative_to(repo_root())}"
    assert the.title, "the title comes from the solution's docstring"


@pytest.mark.parametrize("number", NUMBERS)
def test_solution_passes_machine_code_checks(number):
    module = load_solution(number)
    for check in load_checks(number).CHECKS.machine_code:
        outcome = run_check(check, module, number)
        assert outcome.ok, f"lesson {number} solution fails '{check.key}': {outcome.detail}"


@pytest.mark.parametrize("number", NUMBERS)
def test_every_declared_target_has_a_machine_code_check(number):
    checks = load_checks(number).CHECKS
    read = {c.target for c in checks.machine_code}
    missing = set(checks.targets) - read
    assert not missing, f"lesson {number} declares {sorted(missing)} but no machine-code check reads them"


@pytest.mark.parametrize("number", READY)
def test_starter_reports_open_gaps_without_a_traceback(number):
    run = subprocess.run([sys.executable, "-m", "gluon_course", "check", number], cwd=repo_root(),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "not yet implemented" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr
    assert "leaked" not in run.stdout + run.stderr
    assert "on a GPU: skipped until the machine-code checks pass" in run.stdout


@pytest.mark.parametrize("number", READY)
def test_every_lesson_has_plants_caught_with_and_without_a_gpu(number):
    plants = load_plants(number)
    assert any(not p.gpu for p in plants), f"lesson {number} has no plant caught on the CPU"
    assert any(p.gpu for p in plants), f"lesson {number} has no plant caught on a GPU"


def _planted_module(number, plant, tmp_path):
    text = lesson(number).solution_path.read_text()
    assert text.count(plant.old) == 1, f"plant {plant.mistake!r}: its text must occur once in the solution"
    path = tmp_path / f"planted_{number}.py"
    path.write_text(text.replace(plant.old, plant.new))
    return load_module_file(path, f"planted_{number}_{abs(hash(plant.mistake))}")


@pytest.mark.parametrize("number, plant", PLANTS, ids=[f"{n}-{p.rejected_by}-{p.mistake[:30]}" for n, p in PLANTS])
def test_plant_is_rejected(number, plant, tmp_path):
    if plant.gpu and not runs_lessons_for(load_checks(number).CHECKS.targets):
        pytest.skip("this plant is caught by a GPU correctness check; no GPU here that runs this lesson")
    module = _planted_module(number, plant, tmp_path)
    check = load_checks(number).CHECKS.check(plant.rejected_by)
    outcome = run_check(check, module, number)
    assert not outcome.ok, f"{check.key} accepted the planted mistake: {plant.mistake}"
    assert outcome.detail, "a rejection must say what is wrong"


@gpu
@pytest.mark.timeout(900)
@pytest.mark.parametrize("number", READY)
def test_solution_is_correct_on_the_gpu(number):
    if not runs_lessons_for(load_checks(number).CHECKS.targets):
        pytest.skip(f"lesson {number} runs on {', '.join(load_checks(number).CHECKS.targets)}; the GPU here does not")
    module = load_solution(number)
    for check in load_checks(number).CHECKS.correctness:
        outcome = run_check(check, module, number)
        assert outcome.ok, f"lesson {number} solution fails '{check.key}': {outcome.detail}"
