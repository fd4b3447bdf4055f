"""The lessons, discovered from the folders: ``solutions/NN-slug/`` is a lesson, nothing else needs listing.

An author's folder ``solutions/NN-slug/`` holds everything about lesson NN:

- ``solution.py``: the kernels and launchers; its docstring's first line is ``Lesson NN · Title.``;
- ``checks.py``:   ``CHECKS = LessonChecks(...)``: targets, machine-code checks, GPU checks, figures;
- ``plants.py``:   ``PLANTS = [Plant(...)]``: plausible wrong kernels the checks must reject.

The learner's folder ``lessons/NN-slug/`` holds ``lesson.ipynb`` and ``starter.py`` (generated).
"""
from __future__ import annotations

import ast
import importlib.util
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

FOLDER = re.compile(r"^(?P<number>\d{2})-(?P<slug>[a-z0-9-]+)$")
TITLE = re.compile(r"^Lesson (?P<number>\d{2}) · (?P<title>.+?)\.?$")
# A solution's gaps: each part the learner writes sits between these two lines (``grading.starters`` cuts them out of
# the starter; ``display`` leaves the marker lines out of the source it shows).
SOLUTION_BEGIN = re.compile(r"^(?P<indent>\s*)### BEGIN SOLUTION(?::\s*(?P<what>.*))?$")
SOLUTION_END = re.compile(r"^\s*### END SOLUTION\s*$")


def repo_root() -> Path:
    """The course repository's root (the folder that holds ``lessons/`` and ``solutions/``)."""
    return Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Lesson:
    number: str          # "01"
    slug: str            # "scalar-memcpy"

    @property
    def folder(self) -> str:
        return f"{self.number}-{self.slug}"

    @property
    def author_dir(self) -> Path:
        return repo_root() / "solutions" / self.folder

    @property
    def solution_path(self) -> Path:
        return self.author_dir / "solution.py"

    @property
    def checks_path(self) -> Path:
        return self.author_dir / "checks.py"

    @property
    def plants_path(self) -> Path:
        return self.author_dir / "plants.py"

    @property
    def starter_path(self) -> Path:
        return repo_root() / "lessons" / self.folder / "starter.py"

    @property
    def notebook_path(self) -> Path:
        return repo_root() / "lessons" / self.folder / "lesson.ipynb"

    @property
    def title(self) -> str:
        """From the solution's docstring: ``Lesson 01 · A scalar memcpy.`` → ``A scalar memcpy``."""
        return _title(self.solution_path)

    @property
    def checks(self):
        """The lesson's ``LessonChecks`` (from ``checks.py``)."""
        return load_checks(self.number).CHECKS

    @property
    def planned(self) -> bool:
        return self.checks.planned


@lru_cache(maxsize=None)
def _title(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    m = TITLE.match(doc.splitlines()[0] if doc else "")
    if not m:
        raise ValueError(f"{path}: the docstring must start with 'Lesson NN · Title.' (got {doc[:60]!r})")
    return m.group("title")


def discover() -> dict[str, Lesson]:
    """Every ``solutions/NN-slug/`` folder with a ``solution.py``, by number."""
    found: dict[str, Lesson] = {}
    for path in sorted((repo_root() / "solutions").glob("*/solution.py")):
        m = FOLDER.match(path.parent.name)
        if not m:
            continue
        if m.group("number") in found:
            raise ValueError(f"two folders for lesson {m.group('number')}: {found[m.group('number')].folder} and "
                             f"{path.parent.name}")
        found[m.group("number")] = Lesson(m.group("number"), m.group("slug"))
    return found


def lessons() -> dict[str, Lesson]:
    return discover()


def lesson(number: str | int) -> Lesson:
    """Look a lesson up by its number: ``lesson(2)``, ``lesson("02")``."""
    try:
        key = f"{int(number):02d}"
    except ValueError:
        raise KeyError(f"{number!r} is not a lesson number (try 01, 02, ...)") from None
    found = discover()
    if key not in found:
        raise KeyError(f"no lesson {number!r} in this course (lessons: {', '.join(found)})")
    return found[key]


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


def load_module_file(path: str | Path, name: str | None = None):
    """Import any lesson-shaped file (a planted mistake, a learner's copy) as a module."""
    file = Path(path)
    return _load_module(file, name or f"gluon_course_file_{abs(hash(str(file.resolve())))}")


@lru_cache(maxsize=None)
def load_checks(number: str | int):
    """Import ``solutions/NN-slug/checks.py`` (once per process)."""
    the = lesson(number)
    return _load_module(the.checks_path, f"gluon_course_checks_{the.number}")


def load_plants(number: str | int) -> list:
    the = lesson(number)
    if not the.plants_path.exists():
        return []
    return list(_load_module(the.plants_path, f"gluon_course_plants_{the.number}").PLANTS)
