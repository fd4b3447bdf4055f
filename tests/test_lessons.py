"""Every lesson, discovered from its folder: starter in sync with its solution, the solution passes its checks
(machine code here; correctness on a GPU), the starter fails them clearly, every declared target is checked,
and every planted mistake is rejected by the check it names."""
import ast
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


def machine_code_cell_output(number: str) -> str | None:
    """The committed output of the lesson notebook's ``lab.machine_code()`` cell, or None where it has none. That cell
    runs every machine-code check on the solution, and nbval (part of ``make test``) runs it again and compares each
    verdict line with this output (tests/nbval_sanitize.cfg leaves the ✓ and ✗ lines as they are)."""
    import json

    path = lesson(number).notebook_path
    if not path.exists():
        return None
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "code" and "lab.machine_code()" in "".join(cell["source"]):
            return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
    return None


@pytest.mark.parametrize("number", NUMBERS)
def test_solution_passes_machine_code_checks(number):
    """Every machine-code check passes on the solution. Where the lesson's notebook runs them all (its
    ``lab.machine_code()`` cell), its committed output must show each check passed, and nbval runs that cell live in
    the same ``make test`` and fails on any other verdict: running them here too would only compile and model every
    kernel twice. Elsewhere they run here."""
    checks = load_checks(number).CHECKS.machine_code
    shown = machine_code_cell_output(number)
    if shown is not None:
        missing = [c.key for c in checks if f"✓ {c.title}" not in shown]
        assert not missing and "✗" not in shown, (
            f"lesson {number}: the notebook's machine-code cell does not show every check passed (missing "
            f"{missing}): re-execute it")
        return
    module = load_solution(number)
    for check in checks:
        outcome = run_check(check, module, number)
        assert outcome.ok, f"lesson {number} solution fails '{check.key}': {outcome.detail}"


@pytest.mark.parametrize("number", NUMBERS)
def test_every_declared_target_has_a_machine_code_check(number):
    checks = load_checks(number).CHECKS
    read = {c.target for c in checks.machine_code}
    missing = set(checks.targets) - read
    assert not missing, f"lesson {number} declares {sorted(missing)} but no machine-code check reads them"


def _starter_said(out: str, err: str, code: int) -> None:
    assert code == 1, out + err
    assert "not yet implemented" in out
    assert "Traceback" not in out + err
    assert "on a GPU: skipped until the machine-code checks pass" in out


@pytest.mark.parametrize("number", READY)
def test_starter_reports_open_gaps_without_a_traceback(number, capfd):
    """`python -m gluon_course check NN` on the starter, run in this process (``main`` is what the command runs; the
    process's own exit is the next test's): exit status 1, the gap named, no traceback on stdout or stderr (the
    compiler's C++ output included: capfd reads the file descriptors)."""
    from gluon_course.__main__ import main

    code = main(["check", number])
    out, err = capfd.readouterr()
    _starter_said(out, err, code)


def test_the_check_command_exits_with_its_status_and_no_leak_report():
    """The command itself, in its own process: the same words and status, and no report of nanobind's "leaked"
    objects, which Triton's bindings print when an interpreter shuts down normally (the command leaves without that
    shutdown)."""
    number = READY[0]
    run = subprocess.run([sys.executable, "-m", "gluon_course", "check", number], cwd=repo_root(),
                         capture_output=True, text=True, timeout=600)
    _starter_said(run.stdout, run.stderr, run.returncode)
    assert "leaked" not in run.stdout + run.stderr


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
    assert outcome.failed, (f"{check.key} accepted the planted mistake: {plant.mistake}" if outcome.ok else
                            f"{check.key} could not decide on the planted mistake ({outcome.detail}): {plant.mistake}")
    assert outcome.detail, "a rejection must say what is wrong"
    # What the learner reads is the course's sentence, never an exception's class name or its own text (this run is
    # the one place every plant of every lesson passes through: the check costs nothing more).
    raw = raw_exception_text(outcome.detail)
    assert not raw, f"{check.key} shows the learner an exception's own text ({raw}): {outcome.detail}"
    if plant.in_passing:
        # The plant is there to show the sentence for an exception raised in passing: it must raise one.
        assert outcome.raised, f"{check.key} rejected the plant without an exception: mark it in_passing=False"
    else:
        # The rejection is the check's own sentence (or a compiler message the course translates), not an
        # exception Python raised on the way: that the learner reads a sentence for it does not make the check work.
        assert outcome.raised not in INCIDENTAL, (f"{check.key} rejected the plant by an incidental {outcome.raised} "
                                                  f"({outcome.detail}), not by its own sentence: {plant.mistake}")


# Exceptions Python raises when code goes wrong on its own, as opposed to an error the course or Triton raises with
# a sentence of its own (CompileFailed, NotConstexpr, the launchers' ValueErrors).
INCIDENTAL = {"AttributeError", "NameError", "KeyError", "IndexError", "TypeError", "ZeroDivisionError",
              "UnboundLocalError", "RuntimeError"}

# What an exception's own words look like: a class name, a traceback, a module path of a library, and the phrases
# Python, numpy, torch and Triton use (gluon_course.grading.causes says each in the course's words instead).
RAW_EXCEPTION_TEXT = [
    r"\b[A-Z]\w*(?:Error|Exception)\b", r"Traceback", r"<class '", r"\b(?:triton|torch|numpy)\.[a-z_]+\.\w",
    r"site-packages", r'File "', r"unhashable type", r"object has no attribute", r"is not subscriptable",
    r"could not be broadcast", r"must match the size of tensor", r"at non-singleton dimension", r"index out of range",
    r"must be 16-byte aligned", r"positional argument", r"unexpected keyword argument", r"values to unpack",
    r"non-iterable", r"object is not (?:callable|iterable|a mapping)", r"incompatible function arguments",
    r"Invoked with types", r"has no len\(\)", r"unsupported operand type", r"cannot be interpreted as an integer",
    r"name '\w+' is not defined", r"\bc10::"]


def raw_exception_text(text: str) -> list[str]:
    """The patterns of RAW_EXCEPTION_TEXT that ``text`` matches (none: it reads as the course's sentence)."""
    import re

    return [pattern for pattern in RAW_EXCEPTION_TEXT if re.search(pattern, text)]


def test_raw_exception_text_is_recognised():
    """The plant test's filter catches what the issue saw, and lets the course's sentences through."""
    for raw in ("lesson 31: TypeError: unhashable type: 'list'", "AssertionError: strides must be 16-byte aligned",
                "operands could not be broadcast together with shapes (64,16) (16,64)",
                "The size of tensor a (64) must match the size of tensor b (512) at non-singleton dimension 0",
                "module 'triton.experimental.gluon.language' has no attribute 'arangee'"):
        assert raw_exception_text(raw), raw
    for sentence in ("lesson 31, gap 1 (signature): a list where a tuple is needed: a dictionary key (or a set member) "
                     "must be hashable, and a list is not (starter.py:38)",
                     "x_q must be a torch.float8_e4m3fn tensor of x's shape, got torch.float32"):
        assert not raw_exception_text(sentence), sentence


def _module_level_names(path):
    """Every name a module binds at its top level, with the lines that bind it (a subscript or attribute assignment
    binds nothing new)."""
    bound = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ([t] if isinstance(t, ast.Name) else
                                                     t.elts if isinstance(t, (ast.Tuple, ast.List)) else [])
                     if isinstance(n, ast.Name)]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [(a.asname or a.name).split(".")[0] for a in node.names]
        else:
            names = []
        for name in names:
            bound.setdefault(name, []).append(node.lineno)
    return bound


@pytest.mark.parametrize("number", NUMBERS)
def test_checks_and_plants_bind_each_name_once(number):
    """A checks module that binds a name twice (a hint table, then a figure's sentence) hands the later value to
    every function that reads the earlier: the hints then crash. One binding per name makes that impossible."""
    the = LESSONS[number]
    for path in (the.checks_path, the.plants_path):
        twice = {name: lines for name, lines in _module_level_names(path).items() if len(lines) > 1}
        assert not twice, f"{path.relative_to(repo_root())} binds {twice} more than once: give each its own name"


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
