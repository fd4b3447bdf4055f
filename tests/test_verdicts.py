"""A check has three verdicts: passed, failed, and not checked here (it could not decide on this machine). The third
is never a pass: the runner prints it as "not checked here: <why>", counts it apart, and a planted mistake that only
reaches it is not rejected. The host model's fallback (an operation it does not model) is that third verdict, on both
vendors."""
import pytest

from gluon_course import load_solution
from gluon_course.grading import Check, NotChecked, Passed
from gluon_course.grading.runner import run_check, shown_once


def test_the_three_verdicts_read_apart():
    passed = run_check(Check("a", "the first fact", lambda mod: None), None)
    noted = run_check(Check("b", "the second fact", lambda mod: Passed("with a note")), None)
    failed = run_check(Check("c", "the third fact", lambda mod: "it is wrong"), None)
    unchecked = run_check(Check("d", "the fourth fact", lambda mod: NotChecked("the model lacks X")), None)
    assert (passed.ok, passed.failed, passed.unchecked) == (True, False, False)
    assert (noted.ok, noted.failed) == (True, False) and noted.line() == "✓ the second fact: with a note"
    assert (failed.ok, failed.failed) == (False, True) and failed.line() == "✗ the third fact: it is wrong"
    assert (unchecked.ok, unchecked.failed, unchecked.unchecked) == (False, False, True)
    assert unchecked.line() == "· the fourth fact: not checked here: the model lacks X"
    assert shown_once(unchecked, []) == unchecked.line()


def test_a_passing_checks_facts_are_kept_and_not_printed():
    """Passed.facts (what a run saw, e.g. racecheck's set-aside hazards) travels with the outcome to the record; the
    printed line is the note alone, the same from run to run."""
    noted = run_check(Check("f", "a fact", lambda mod: Passed("with a note", {"hazards_set_aside": 21})), None)
    assert noted.ok and noted.facts == {"hazards_set_aside": 21}
    assert noted.line() == "✓ a fact: with a note"
    assert run_check(Check("g", "a fact", lambda mod: Passed("with a note")), None).facts is None


def test_a_check_that_returns_something_else_is_a_course_bug():
    with pytest.raises(TypeError, match="returns None, Passed, NotChecked or a sentence"):
        run_check(Check("e", "a fact", lambda mod: True), None)


def test_an_exception_is_recorded_as_raised():
    def broken(mod):
        raise ValueError("the learner's launcher refused")

    outcome = run_check(Check("f", "a fact", broken), None)
    assert outcome.failed and outcome.raised == "ValueError"
    assert run_check(Check("g", "a fact", lambda mod: "a sentence"), None).raised == ""


@pytest.mark.parametrize("number, module_path", [("17", "gluon_course.grading.gemm_kernel"),
                                                 ("21", "gluon_course.amd.checks")])
def test_the_host_models_fallback_is_not_checked_never_a_pass(number, module_path, monkeypatch):
    """When the model meets an operation it does not know, the check says so and passes nothing (NVIDIA and AMD)."""
    from gluon_course import load_checks
    from gluon_course.model import ModelUnsupported
    from gluon_course.model import gemm as model_gemm

    def unknown(*args, **kwargs):
        raise ModelUnsupported("gl.histogram")

    monkeypatch.setattr(model_gemm, "check", unknown)
    check = load_checks(number).CHECKS.check("host_model")
    outcome = run_check(check, load_solution(number), number)
    assert outcome.unchecked and not outcome.ok and not outcome.failed, outcome
    assert "does not model gl.histogram" in outcome.detail
    assert outcome.line().startswith("· ") and "not checked here" in outcome.line()


def test_a_hint_table_that_is_not_a_table_is_a_course_bug_with_its_traceback():
    """mismatch() refuses a hint table that is not a dict with CourseBug, which the runner does not turn into a
    learner's sentence: the course's own mistake fails the course's tests instead of reaching a learner as a hint."""
    from gluon_course.grading.counts import CourseBug, mismatch

    with pytest.raises(CourseBug, match="takes a dict"):
        mismatch({"A": 1}, {"A": 2}, why="a figure's sentence")
    with pytest.raises(CourseBug):
        run_check(Check("h", "a fact", lambda mod: mismatch({"A": 1}, {"A": 2}, names="oops")), None)
    assert mismatch({"A": 1}, {"A": 2}, why={"A": ("too few", "too many")}).startswith("1 × A where 2 were expected: "
                                                                                      "too few")
