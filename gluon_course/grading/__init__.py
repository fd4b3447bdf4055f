"""Grading: what a lesson is checked against and everything that runs those checks.

- ``checks``    ``LessonChecks``, ``Check``, ``Figure``, ``Expectation`` (range + course target), ``Plant``
- ``runner``    the one runner (``run_check``, ``measure_figure``, ``check``): a learner's mistake is a sentence
- ``errors``    how a compiler or launch error becomes that sentence, with a hint
- ``notebook``  ``Lab``: live figures on a GPU, recorded ones elsewhere
- ``records``   ``results/<gpu>.json``, keyed by lesson and stable key
- ``starters``  ``starter.py`` generated from ``solution.py``
- (the generated pages of the website and the README live in ``gluon_course.website``, which grading never imports)
- ``scaffold``  a new lesson's author folder, ready to fill
"""
from .checks import Check, CourseTarget, Expectation, Figure, LessonChecks, NotChecked, Passed, Plant, Reference
from . import records
from .runner import check, measure_figure, run_check

__all__ = ["Check", "CourseTarget", "Expectation", "Figure", "LessonChecks", "NotChecked", "Passed", "Plant", "Reference", "check",
           "measure_figure", "run_check"]
