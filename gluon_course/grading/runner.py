"""The one runner: every check and figure of a lesson runs through here, for ``check NN``, the notebooks
(``grading.notebook.Lab``) and the tests.

On any machine the kernels must compile and show the lesson's machine-code signature. On a GPU they must also
be correct (fresh random data, poisoned and guarded outputs, odd sizes), and every figure is measured and judged
against its **range** (which gates) and, where it has one, the **course target** (which only informs). Without a
GPU the verdict says so in words: correctness is not checked on this machine.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..course import lesson, load_checks, load_solution, load_starter
from ..machine.compile import BackendMissing, CompileFailed
from ..measure.device import free_cache, gpu_name, has_gpu, runs_lessons_for
from .checks import Check, Figure, NotChecked, Passed
from .errors import explain

# What a lesson module (a learner's starter, a planted mistake) can throw: the course turns these into a
# sentence. Anything else is a bug in the course itself and keeps its traceback.
def _out_of_resources():
    from triton.runtime.errors import OutOfResources

    return OutOfResources


LEARNER_ERRORS = (CompileFailed, NotImplementedError, BackendMissing, AssertionError, ValueError, TypeError,
                  RuntimeError, AttributeError, NameError, IndexError, KeyError, ZeroDivisionError, SyntaxError,
                  _out_of_resources())


@dataclass
class Outcome:
    key: str
    title: str
    ok: bool                   # passed
    detail: str = ""
    unchecked: bool = False    # neither passed nor failed: the check could not decide here (detail says why)
    raised: str = ""           # the exception's class when the check ended in one (a compile error, a launch error)
    facts: dict | None = None  # what a passing check saw beyond its note (Passed.facts), recorded, not printed

    @property
    def failed(self) -> bool:
        return not self.ok and not self.unchecked

    def line(self) -> str:
        if self.unchecked:
            return f"· {self.title}: not checked here: {self.detail}"
        return f"{'✓' if self.ok else '✗'} {self.title}" + (f": {self.detail}" if self.detail else "")


@dataclass
class FigureOutcome:
    key: str
    title: str
    value: float
    text: str
    verdict: str
    target_line: str | None
    details: dict = field(default_factory=dict)
    ok: bool = True

    def line(self, figure: Figure) -> str:
        e = figure.expect
        return (f"{figure.title:<34} {self.text:<34} = {e.format(self.value)}; {e.describe()}  {self.verdict}"
                + (f"\n{'':<36}{self.target_line}" if self.target_line else ""))


def run_check(check: Check, module, number: str | None = None) -> Outcome:
    """Run one check; whatever a learner's module throws becomes a short sentence, never a traceback."""
    try:
        problem = check.run(module)
    except LEARNER_ERRORS as e:  # noqa: PERF203 - one check at a time
        return Outcome(check.key, check.title, False, explain(e, number, _file_of(module)), raised=type(e).__name__)
    if check.gpu:
        free_cache()
    if isinstance(problem, Passed):
        return Outcome(check.key, check.title, True, problem.note, facts=problem.facts)
    if isinstance(problem, NotChecked):
        return Outcome(check.key, check.title, False, problem.why, unchecked=True)
    if problem is not None and not isinstance(problem, str):
        raise TypeError(f"check {check.key!r} returned {problem!r}: a check returns None, Passed, NotChecked or a "
                        "sentence")
    return Outcome(check.key, check.title, problem is None, problem or "")


def sentence_in_child(module_file: str, check, number: str | None = None) -> str | None:
    """``check()`` (None or a sentence) for a check that runs in a child process (``measure.isolated``): what the
    learner's module raises there becomes the course's sentence, as ``run_check`` makes it in-process, instead of the
    child's last traceback line reaching the learner as the check's verdict."""
    try:
        return check()
    except LEARNER_ERRORS as e:
        return explain(e, number, module_file)


def _file_of(module):
    """The file of a lesson module (a learner's starter, a planted mistake, the solution): where ``explain`` looks for
    the learner's line in a traceback."""
    return getattr(module, "__file__", None)


def shown_once(outcome: Outcome, said: list) -> str:
    """The outcome's line, or, when a failure repeats a failure already printed (one compile error behind several
    checks), the check's title and a pointer to it: a learner reads each error once."""
    if not outcome.failed or not outcome.detail:
        return outcome.line()
    if outcome.detail in said:
        return f"✗ {outcome.title}: the same error as above"
    said.append(outcome.detail)
    return outcome.line()


def measure_figure(figure: Figure, module, number: str | None = None) -> FigureOutcome:
    """Measure one figure (the measure checks correctness first); a failure becomes a ✗ with its sentence."""
    try:
        m = figure.measure(module)
    except LEARNER_ERRORS as e:
        free_cache()
        return FigureOutcome(figure.key, figure.title, float("nan"), explain(e, number, _file_of(module)),
                             "✗ not measured", None,
                             ok=False)
    free_cache()
    verdict = figure.expect.verdict(m.value)
    return FigureOutcome(figure.key, figure.title, m.value, m.text, verdict, figure.expect.target_line(m.value),
                         m.details, verdict.startswith("✓"))


def _load(number: str, path, solution: bool):
    the = lesson(number)
    if solution:
        return load_solution(the.number), the.solution_path
    file = Path(path) if path else the.starter_path
    return load_starter(the.number, file), file


def check(number: str | int, path: str | Path | None = None, solution: bool = False, figures: bool = True,
          out=print) -> bool:
    """``python -m gluon_course check NN``: grade a learner's starter (or the solution); True when it passes."""
    the = lesson(number)
    checks = load_checks(the.number).CHECKS
    try:
        module, shown = _load(the.number, path, solution)
    except LEARNER_ERRORS as e:
        out(f"Lesson {the.number} · {the.title}")
        file = the.solution_path if solution else Path(path) if path else the.starter_path
        out(f"✗ {explain(e, the.number, file)}")
        out("0 passed, 1 failed")
        return False
    out(f"Lesson {the.number} · {the.title} · checking {_relative(shown)}")
    passed = failed = unchecked = 0

    out(f"machine code (compiled here for {', '.join(checks.targets)}; no GPU needed):")
    said: list[str] = []
    for c in checks.machine_code:
        o = run_check(c, module, the.number)
        passed, failed, unchecked = passed + o.ok, failed + o.failed, unchecked + o.unchecked
        out("  " + shown_once(o, said).replace("\n", "\n  "))

    gpu_parts = f"{len(checks.correctness)} correctness checks, {len(checks.figures)} figures"
    if failed:
        out(f"on a GPU: skipped until the machine-code checks pass ({gpu_parts})")
    elif not has_gpu():
        modelled = any(c.key == "host_model" for c in checks.machine_code)
        out(f"correctness not checked on this machine: no GPU here ({gpu_parts} run on a GPU)"
            + ("; the host model above ran the kernel's own code on the CPU: its numbers and its synchronisation, "
               "not the speed, the real memory system, or races the model's order does not produce" if modelled else ""))
    elif not runs_lessons_for(checks.targets):
        out(f"correctness not checked on this machine: its {gpu_name()} does not run lessons for "
            f"{', '.join(checks.targets)} ({gpu_parts} run there)")
    else:
        out(f"on the GPU ({gpu_name()}):")
        for c in checks.correctness:
            o = run_check(c, module, the.number)
            passed, failed, unchecked = passed + o.ok, failed + o.failed, unchecked + o.unchecked
            out("  " + o.line().replace("\n", "\n  "))
        if figures and not failed:
            for f in checks.figures:
                o = measure_figure(f, module, the.number)
                passed, failed = passed + o.ok, failed + (not o.ok)
                out(f"  {'✓' if o.ok else '✗'} {f.title}: {o.text} = {f.expect.format(o.value)}; "
                    f"{f.expect.describe()} {o.verdict}" + (f"; {o.target_line}" if o.target_line else ""))
    checked_here = runs_lessons_for(checks.targets)
    tail = "" if checked_here or failed else " (machine code only: correctness not checked on this machine)"
    not_checked = f", {unchecked} not checked here" if unchecked else ""
    out(f"{passed} passed, {failed} failed{not_checked}{tail}")
    return failed == 0


def _relative(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
