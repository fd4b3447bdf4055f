"""The notebook of an AMD lesson: ``AmdLab`` (the CPU checks here and now; correctness and figures on an AMD GPU, or a
line each that says they were not measured), and changed copies of a solution for a notebook to compile beside it
(``solution_variant``, ``planted``)."""
from __future__ import annotations

from .launch import gpu_arch


NOT_MEASURED = "not measured: no AMD GPU was available"


def amd_gpu_here(targets) -> bool:
    """True on a ROCm machine whose GPU is one of ``targets``."""
    import torch

    return bool(torch.cuda.is_available() and torch.version.hip is not None and gpu_arch() in targets)


class AmdLab:
    """The notebook side of an AMD lesson: the CPU checks here and now; correctness and figures live on an AMD GPU
    of the lesson's targets (through the course's ``Lab``, which records them), and otherwise one line each that
    says they were not measured, with the range a live run is held to and the vendor's figures beside it."""

    def __init__(self, number: str):
        from ..course import lesson, load_checks
        from ..grading.notebook import Lab

        self.lesson = lesson(number)
        self.checks = load_checks(self.lesson.number).CHECKS
        self.live = amd_gpu_here(self.checks.targets)
        self._lab = Lab(self.lesson.number, show_header=self.live)
        if not self.live:
            print(f"Figures: {NOT_MEASURED} (lesson {self.lesson.number} runs on "
                  f"{' or '.join(self.checks.targets)}); the vendor's figures are shown as references, labelled")

    @property
    def module(self):
        return self._lab.module

    def machine_code(self) -> bool:
        return self._lab.machine_code()

    def correctness(self) -> bool:
        if self.live:
            return self._lab.correctness()
        for check in self.checks.correctness:
            print(f"· {check.title}: {NOT_MEASURED}")
        return True

    def time_model(self, previous: str | None = None) -> None:
        """The time model on this lesson's solution, as its check ``time_model`` prints it (the prediction, the
        lesson before's and AMD's figure): a CPU figure, shown with or without a GPU."""
        from ..grading.runner import run_check

        outcome = run_check(self.checks.check("time_model"), self.module, self.lesson.number)
        print(outcome.line())

    def figures(self) -> None:
        for fig in self.checks.figures:
            if self.live:
                self._lab.figure(fig.key)
                continue
            print(f"{fig.title}: {NOT_MEASURED}; a live run is held to {fig.expect.describe()} (provisional)")
            for ref in fig.expect.references:
                print(f"  reference: {ref}")


def solution_variant(number: str, old: str, new: str, tag: str = "variant"):
    """Lesson ``number``'s solution with ``old`` (which must occur) replaced by ``new`` everywhere, loaded as a module
    from a temporary file: what a notebook compiles to show what one change does."""
    import hashlib
    import tempfile
    from pathlib import Path

    from ..course import lesson, load_module_file

    text = lesson(number).solution_path.read_text()
    if old not in text:
        raise ValueError(f"lesson {number}'s solution has no {old[:60]!r}")
    digest = hashlib.sha1((old + "\0" + new).encode()).hexdigest()[:10]
    path = Path(tempfile.gettempdir()) / f"gluon_course_{number}_{tag}_{digest}.py"
    path.write_text(text.replace(old, new))
    return load_module_file(path, f"gluon_course_{number}_{tag}_{digest}")


def planted(number: str, rejected_by: str, index: int = 0):
    """The module of lesson ``number``'s plant (the ``index``-th of those) rejected by check ``rejected_by``."""
    from ..course import lesson, load_module_file, load_plants
    import hashlib
    import tempfile
    from pathlib import Path

    plants = [p for p in load_plants(number) if p.rejected_by == rejected_by]
    if not plants:
        raise KeyError(f"lesson {number} has no plant rejected by {rejected_by!r}")
    plant = plants[index]
    text = lesson(number).solution_path.read_text()
    digest = hashlib.sha1(plant.mistake.encode()).hexdigest()[:10]
    path = Path(tempfile.gettempdir()) / f"gluon_course_{number}_plant_{digest}.py"
    path.write_text(text.replace(plant.old, plant.new))
    return load_module_file(path, f"gluon_course_{number}_plant_{digest}")


def plants_using(number: str, text: str):
    """Lesson ``number``'s plants whose changed text holds ``text`` (``"sched_barrier"``, ``"warp_pipeline_stage"``),
    each as ``(plant, module)``: what a notebook compiles to show what a scheduling hint does to the loop."""
    from ..course import load_plants

    plants = load_plants(number)
    out = []
    for plant in plants:
        if text in plant.new:
            same = [p for p in plants if p.rejected_by == plant.rejected_by]
            out.append((plant, planted(number, plant.rejected_by, same.index(plant))))
    return out
