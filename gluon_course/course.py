"""Where the lessons live, and how to import a lesson's solution or starter by its number."""
from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path


def repo_root() -> Path:
    """The course repository's root (the folder that holds ``lessons/`` and ``solutions/``)."""
    return Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Lesson:
    number: str          # "01"
    slug: str            # "scalar-memcpy"
    title: str
    teaches: str
    gpus: str            # what it needs to run live

    @property
    def folder(self) -> str:
        return f"{self.number}-{self.slug}"

    @property
    def solution_path(self) -> Path:
        return repo_root() / "solutions" / self.folder / "solution.py"

    @property
    def starter_path(self) -> Path:
        return repo_root() / "lessons" / self.folder / "starter.py"

    @property
    def notebook_path(self) -> Path:
        return repo_root() / "lessons" / self.folder / "lesson.ipynb"


LESSONS: dict[str, Lesson] = {
    lesson.number: lesson
    for lesson in [
        Lesson("01", "scalar-memcpy", "A scalar memcpy",
               "the first Gluon kernel, the grid, a scalar copy loop, autotuning XBLOCK",
               "any CUDA GPU (measured on H200); compiles anywhere"),
        Lesson("02", "layouts", "Layouts",
               "BlockedLayout's four parameters, register budget, the broadcast trap, vector width R",
               "any CUDA GPU (measured on H200); compiles anywhere"),
        Lesson("03", "transposition", "Transposition and strides",
               "2D copies, SliceLayout offsets, coalescing from strides, the grid-axis limit",
               "any CUDA GPU (measured on H200); compiles anywhere"),
        Lesson("04", "inout-conversion", "In/out layout conversion",
               "convert_layout through shared memory, its price, tile size and occupancy",
               "any CUDA GPU (measured on H200); compiles anywhere"),
        Lesson("05", "linear-layouts", "Linear layouts",
               "layouts as F2 bases, free reshapes and permutes, swizzled shared memory",
               "any CUDA GPU (measured on H200); compiles anywhere"),
    ]
}


def lesson(number: str | int) -> Lesson:
    """Look a lesson up by its number: ``lesson(2)``, ``lesson("02")``."""
    key = f"{int(number):02d}"
    if key not in LESSONS:
        known = ", ".join(LESSONS)
        raise KeyError(f"no lesson {number!r} in this course (lessons: {known})")
    return LESSONS[key]


def _load_module(path: Path, name: str):
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module          # gluon.jit reads a kernel's source through its module
    spec.loader.exec_module(module)
    return module


def load_solution(number: str | int):
    """Import ``solutions/NN-slug/solution.py`` as a module."""
    the = lesson(number)
    return _load_module(the.solution_path, f"gluon_course_solution_{the.number}")


def load_starter(number: str | int, path: str | Path | None = None):
    """Import a lesson's starter (``lessons/NN-slug/starter.py``), or any file written to the same plan."""
    the = lesson(number)
    file = Path(path) if path is not None else the.starter_path
    return _load_module(file, f"gluon_course_starter_{the.number}_{abs(hash(str(file.resolve())))}")
