"""Grading: what a lesson is checked against and everything that runs those checks.

- ``checks``     ``LessonChecks``, ``Check``, ``Figure``, ``Expectation`` (range + course target), ``Plant``
- ``runner``     the one runner (``run_check``, ``measure_figure``, ``check``): a learner's mistake is a sentence
- ``errors``     how a compiler or launch error becomes that sentence, with a hint
- ``notebook``   ``Lab``: live figures on a GPU, recorded ones elsewhere
- ``records``    ``results/<gpu>.json``, keyed by lesson and stable key
- ``starters``   ``starter.py`` generated from ``solution.py``
- ``scaffold``   a new lesson's author folder, ready to fill
- ``counts``     a compile's counts against a lesson's table, as one sentence
- ``facts``      a lesson's kernel on another NVIDIA class: one check per class from a table of facts, and what
                 a target no lesson declares makes of it (``port``)
- ``classes``    which lessons run on a GPU class, the datasheets a class's ranges are worked out from
- ``gemm``, ``gemm_kernel``, ``tma_gemm``  what the GEMM lessons' checks share (``tma_gemm``: the TMA lessons, 14 on)
- ``progress``   ``progress``: which lessons' starters pass their machine-code checks
- ``installed``  what a notebook's set-up cell says after installing the course outside the repository
- ``translate``  lesson 30's tools: Triton's translator, plain Triton compiled, the decision table

Grading imports the base and the four concerns (machine, memory, measure, model), never a vendor's home or the
website: those build on it.
"""
from .checks import (Check, ClassRange, CourseTarget, Expectation, Figure, LessonChecks, NotChecked, Passed, Plant,
                     Reference)
from . import records
from .runner import check, measure_figure, run_check

__all__ = ["Check", "ClassRange", "CourseTarget", "Expectation", "Figure", "LessonChecks", "NotChecked", "Passed",
           "Plant", "Reference", "check", "measure_figure", "run_check"]
