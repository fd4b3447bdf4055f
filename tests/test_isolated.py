"""gluon_course.measure.isolated: one launch in a child process, with a time limit (no GPU needed to test it)."""
import os

import pytest

from gluon_course.measure import isolated


def _file(tmp_path):
    path = tmp_path / "work.py"
    path.write_text("import time, sys\n"
                    "def fine(n):\n    print('ran', n)\n"
                    "def hang():\n    time.sleep(60)\n"
                    "def crash():\n    raise RuntimeError('device-side assert triggered')\n"
                    "def verdict(word):\n    return None if word == 'good' else f'C is wrong:\\n{word}'\n")
    return path


def test_a_clean_run_returns_none(tmp_path):
    assert isolated.check_isolated(f"{_file(tmp_path)}:fine", ["3"], timeout=60) is None
    run = isolated.run_isolated(f"{_file(tmp_path)}:fine", ["3"], timeout=60)
    assert run.returncode == 0 and "ran 3" in run.output


def test_a_hang_is_killed_and_explained(tmp_path):
    problem = isolated.check_isolated(f"{_file(tmp_path)}:hang", timeout=3)
    assert "did not finish within 3 s" in problem and "barrier" in problem


def test_a_crash_is_one_sentence(tmp_path):
    problem = isolated.check_isolated(f"{_file(tmp_path)}:crash", timeout=60)
    assert problem.startswith("the launch failed") and "\n" not in problem


def test_unknown_tool_and_missing_sanitizer(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="unknown compute-sanitizer tool"):
        isolated.run_isolated(f"{_file(tmp_path)}:fine", timeout=5, tool="nope")
    monkeypatch.setattr(isolated, "find_sanitizer", lambda: None)
    with pytest.raises(isolated.SanitizerUnavailable, match="CUDA toolkit"):
        isolated.run_isolated(f"{_file(tmp_path)}:fine", timeout=5, tool="memcheck")


def test_a_whole_check_in_a_child_returns_its_sentence(tmp_path):
    target = f"{_file(tmp_path)}:verdict"
    assert isolated.check_in_child(target, ["good"], timeout=60) is None
    assert isolated.check_in_child(target, ["poisoned"], timeout=60) == "C is wrong: poisoned"
    assert "did not finish within 3 s" in isolated.check_in_child(f"{_file(tmp_path)}:hang", timeout=3)
    assert isolated.check_in_child(f"{_file(tmp_path)}:crash", timeout=60).startswith("the check's child process failed")


def test_a_child_dies_with_its_parent(tmp_path):
    """A grader killed mid-check must not leave its child (and a hung kernel) behind."""
    import subprocess
    import sys
    import time

    marker = tmp_path / "child.pid"
    script = tmp_path / "parent.py"
    script.write_text("import sys\nfrom gluon_course.measure import isolated\n"
                      f"isolated.run_isolated({str(_file(tmp_path)) + ':hang'!r}, timeout=60)\n")
    (tmp_path / "work.py").write_text((tmp_path / "work.py").read_text().replace(
        "def hang():\n", f"def hang():\n    import os; open({str(marker)!r}, 'w').write(str(os.getpid()))\n"))
    parent = subprocess.Popen([sys.executable, str(script)])
    for _ in range(300):
        if marker.exists() and marker.read_text():
            break
        time.sleep(0.1)
    child = int(marker.read_text())
    parent.kill()
    parent.wait()
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(child, 9)
    raise AssertionError("the child outlived its killed parent")


def test_races_only_at_reads_both_accesses_of_every_race():
    from gluon_course.measure.isolated import races_only_at

    def race(a, b):
        return (f"========= Race reported between Write access at 0x49a0 in {a}\n"
                f"=========     and Read access at 0x4a50 in {b} [4 hazards]\n")

    assert races_only_at(race("solution.py:293", "solution.py:293"), {"solution.py:293"})
    assert races_only_at(race("solution.py:158", "solution.py:293"), {"solution.py:293", "solution.py:158"})
    assert not races_only_at(race("solution.py:158", "solution.py:293"), {"solution.py:293"})
    assert not races_only_at(race("solution.py:293", "solution.py:293") + race("solution.py:201", "solution.py:293"),
                             {"solution.py:293"})
    assert not races_only_at("========= RACECHECK SUMMARY: 0 hazards displayed", {"solution.py:293"})


def test_a_failed_racecheck_names_both_accesses_of_each_race():
    from gluon_course.measure.isolated import IsolatedRun, _summary

    output = ("========= Error: Race reported between Read access at cluster_kernel+0x2a40 in solution.py:293\n"
              "=========     and Write access at cluster_kernel+0x850 in solution.py:158 [2 hazards]\n"
              "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n")
    sentence = _summary(IsolatedRun(returncode=1, output=output, seconds=1.0), "racecheck", 300)
    assert "Read at cluster_kernel+0x2a40 (solution.py:293)" in sentence
    assert "Write at cluster_kernel+0x850 (solution.py:158)" in sentence


# racecheck's report on lesson 33's sanitizer launch (H200, 2026-12-02, tools/probes/race33.sh, second run): one race,
# one read and three writes.
LESSON33_RACE = """========= COMPUTE-SANITIZER
========= Error: Race reported between Read access at cluster_kernel+0x2a40 in solution.py:293
=========     and Write access at cluster_kernel+0x2640 in solution.py:323 [14 hazards]
=========     and Write access at cluster_kernel+0x28f0 in solution.py:293 [2 hazards]
=========     and Write access at cluster_kernel+0x29a0 in solution.py:293 [5 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


def test_a_race_report_names_every_access():
    from gluon_course.measure.isolated import race_reports, races_only_at, races_only_at_pcs

    (accesses,) = race_reports(LESSON33_RACE)
    assert [at for _, at, _ in accesses] == ["cluster_kernel+0x2a40", "cluster_kernel+0x2640", "cluster_kernel+0x28f0",
                                             "cluster_kernel+0x29a0"]
    # By line, the write the compiler placed at the cluster barrier's line (323) is not the def line's.
    assert not races_only_at(LESSON33_RACE, {"solution.py:293"})
    dispatch = {"cluster_kernel+0x2a40", "cluster_kernel+0x2640", "cluster_kernel+0x28f0", "cluster_kernel+0x29a0"}
    assert races_only_at_pcs(LESSON33_RACE, dispatch)
    assert not races_only_at_pcs(LESSON33_RACE, dispatch - {"cluster_kernel+0x28f0"})     # one access outside: fails
    assert not races_only_at_pcs(LESSON33_RACE.replace("cluster_kernel+0x29a0", "other_kernel+0x29a0"), dispatch)
    assert not races_only_at_pcs("========= RACECHECK SUMMARY: 0 hazards displayed", dispatch)


def test_what_the_rule_set_aside_is_counted_for_the_record(monkeypatch):
    """sanitizer_check fills ``set_aside`` with what racecheck reported this time and the rule did not count (the
    recording keeps it; the check's note does not change): one race, 21 hazards in LESSON33_RACE; 0 and 0 for a clean
    racecheck. A race outside the rule still fails."""
    from gluon_course.measure import isolated

    dispatch = {"cluster_kernel+0x2a40", "cluster_kernel+0x2640", "cluster_kernel+0x28f0", "cluster_kernel+0x29a0"}
    clean = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"

    def runs(racecheck_output, code):
        def run(target, args=(), *, timeout, tool=None):
            if tool == "racecheck":
                return isolated.IsolatedRun(code, racecheck_output, 1.0)
            return isolated.IsolatedRun(0, "========= ERROR SUMMARY: 0 errors\n", 1.0)
        return run

    for output, code, expected in ((LESSON33_RACE, 1, {"races_set_aside": 1, "hazards_set_aside": 21}),
                                   (clean, 0, {"races_set_aside": 0, "hazards_set_aside": 0})):
        monkeypatch.setattr(isolated, "run_isolated", runs(output, code))
        facts = {}
        assert isolated.sanitizer_check("x.py:f", tools=("memcheck", "racecheck"), ignore_race_pcs=dispatch,
                                        set_aside=facts) is None
        assert facts == expected
    monkeypatch.setattr(isolated, "run_isolated", runs(LESSON33_RACE.replace("+0x29a0", "+0x1000"), 1))
    facts = {}
    assert "race" in isolated.sanitizer_check("x.py:f", tools=("memcheck", "racecheck"), ignore_race_pcs=dispatch,
                                              set_aside=facts).lower()
    assert facts == {"races_set_aside": 0, "hazards_set_aside": 0}


def test_what_the_learners_module_raises_in_a_child_reads_as_the_courses_sentence(tmp_path):
    """A check run in a child process (a kernel that may hang) used to pass the child's last traceback line to the
    learner; grading.runner.sentence_in_child makes it the sentence run_check gives in-process."""
    learner = tmp_path / "starter.py"
    learner.write_text("def matmul(a, b, c):\n    plans = {}\n    plans[[a, b]] = c    # a list as a key\n")
    child = tmp_path / "child.py"
    child.write_text("from gluon_course.course import load_module_file\n"
                     "from gluon_course.grading.runner import sentence_in_child\n"
                     "def correct_here(module_file):\n"
                     "    mod = load_module_file(module_file)\n"
                     "    return sentence_in_child(module_file, lambda: mod.matmul(1, 2, 3))\n")
    said = isolated.check_in_child(f"{child}:correct_here", [str(learner)], timeout=120)
    assert said and "hashable" in said and "starter.py:3" in said, said
    assert "TypeError" not in said and "unhashable type" not in said and "Traceback" not in said, said


def test_every_check_run_in_a_child_says_its_failures_in_sentences():
    """Each function of the toolkit that check_in_child runs (``file.py:function``) wraps the learner's code in
    sentence_in_child."""
    import ast
    import re
    from pathlib import Path

    package = Path(isolated.__file__).resolve().parent.parent
    targets = []
    for path in package.rglob("*.py"):
        text = path.read_text()
        for name in re.findall(r'check_in_child\(f"\{__file__\}:(\w+)"', text):
            function = next(node for node in ast.walk(ast.parse(text))
                            if isinstance(node, ast.FunctionDef) and node.name == name)
            targets.append((path.name, name))
            assert "sentence_in_child" in ast.get_source_segment(text, function), f"{path.name}:{name}"
    assert len(targets) >= 2, targets
