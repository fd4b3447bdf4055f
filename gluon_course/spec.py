"""What each lesson is checked against: one place, used by the notebooks, ``check NN``, ``record`` and the tests.

A lesson's spec (``gluon_course/specs/lessonNN.py``) lists

- ``cpu_checks``: machine-code checks that run anywhere (the kernel is compiled for sm_90 / gfx950 here);
- ``gpu_checks``: correctness on a GPU (fresh random data, poisoned and guarded outputs, odd sizes);
- ``figures``: measurements on a GPU, each judged by an ``Expectation`` (a fraction of a ceiling measured in
  the same run).

Each check or figure takes the lesson *module* (the solution, or a learner's starter) as its argument, so the
same spec grades both.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

from .compile import BackendMissing, CompileFailed
from .expect import Expectation


class NotImplementedYet(Exception):
    """A starter gap that is still open."""


@dataclass
class Check:
    name: str
    run: Callable[[object], str | Passed | None]   # None or Passed(note) when it passes, else what is wrong
    needs_gpu: bool = False


@dataclass
class Passed:
    """What a check returns when it passes *and* has something worth showing (e.g. the error CUDA gave)."""
    note: str


@dataclass
class Measurement:
    value: float          # in the expectation's unit: a fraction of the ceiling
    text: str             # "4.14 TB/s of a 4.27 TB/s copy"
    details: dict = field(default_factory=dict)


@dataclass
class Figure:
    key: str                                   # "tile_copy_R4"
    title: str                                 # "tile copy, R=4"
    measure: Callable[[object], Measurement]   # checks correctness first, then times
    expect: Expectation


@dataclass
class LessonSpec:
    number: str
    cpu_checks: list[Check]
    gpu_checks: list[Check]
    figures: list[Figure]

    def figure(self, key: str) -> Figure:
        for f in self.figures:
            if f.key == key:
                return f
        raise KeyError(f"lesson {self.number} has no figure {key!r}; it has {[f.key for f in self.figures]}")


def spec_for(number: str | int) -> LessonSpec:
    key = f"{int(number):02d}"
    return importlib.import_module(f"gluon_course.specs.lesson{key}").SPEC


def run_check(check: Check, module) -> tuple[bool, str]:
    """Run one check; a compile error or an open gap becomes a one-line failure, not a traceback."""
    try:
        problem = check.run(module)
    except CompileFailed as e:
        if "not yet implemented" in e.message:
            return False, e.message
        return False, f"does not compile for {e.target}: {e.message}"
    except NotImplementedError as e:
        return False, str(e) or "not yet implemented"
    except BackendMissing as e:
        return False, str(e)
    except AssertionError as e:
        return False, str(e)
    if isinstance(problem, Passed):
        return True, problem.note
    return (problem is None), (problem or "")
