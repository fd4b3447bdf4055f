"""Every lesson notebook's first code cell, the set-up: what lets a notebook opened outside the course's repository
(Colab, a copy downloaded from the website) install the course and run.

In a copy of the repository (a clone, Binder) the cell does nothing and prints nothing: the repository's files are
next to the notebook (a ``gluon_course`` folder in the notebook's folder or above it), and ``make venv`` installed
the toolkit. Anywhere else it asks pip to check the repository out at one commit (or branch) into
``./gluon-course`` and install it there as an editable package (``pip install -e git+...``): the toolkit with its
dependencies from ``pyproject.toml`` (Triton 3.9.0, torch, matplotlib, numpy: what the lessons import) and, in the
same folder, every lesson's solution, checks, starter and recorded figures, which the toolkit reads from there. It
then says what it installed, from where, and which GPU it found (``grading.installed.report``). A second run finds
``./gluon-course`` and installs nothing.

The cell is the same in every lesson; only its first assignment changes from one publication to another: the
repository's git address and the version to install. The committed notebooks carry what ``python -m gluon_course
first-cell`` wrote (the repository of ``GLUON_COURSE_REPOSITORY``, none by default, and the branch); a website built
with a repository writes that repository and the commit it was built from into the notebooks it offers for download
(``book/_ext/launch_buttons.py``). Standard library only: the command that writes the cell runs without torch.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from .course import lesson

# The line that names the repository and the version: the one line a publication changes.
SETTING = "COURSE_REPOSITORY, COURSE_VERSION = {repository}, {version}  # a git address, a commit or branch"
SETTING_LINE = re.compile(r'^COURSE_REPOSITORY, COURSE_VERSION = (?P<repository>"[^"\n]*"), (?P<version>"[^"\n]*")  # ',
                          re.M)
# The website hides the cell (its pages show what a run printed, and in the repository it prints nothing); Colab and
# Jupyter show it.
TAGS = ["remove-cell"]

BODY = '''\
# Set-up, the same first cell in every lesson. In a copy of the course's repository (a clone, Binder) it does
# nothing. Anywhere else (Colab, a notebook downloaded from the website) it installs the course into ./gluon-course,
# once: its toolkit and lessons from the repository below at the version below, with Triton 3.9.0.
{setting}
import pathlib, subprocess, sys
if any((folder / "gluon_course").is_dir() for folder in (pathlib.Path.cwd(), *pathlib.Path.cwd().parents)):
    pass  # in the course's repository: `make venv` installed the toolkit
elif not (COURSE_REPOSITORY or pathlib.Path("gluon-course").is_dir()):
    print("This copy of the notebook names no repository to install the course from: open it in a clone of the "
          "course's repository (the website's Setup page says how).")
else:
    if not pathlib.Path("gluon-course").is_dir():
        print(f"Installing the course from {{COURSE_REPOSITORY}} at {{COURSE_VERSION}} (a few minutes) ...", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--src", ".", "-e",
                        f"git+{{COURSE_REPOSITORY}}@{{COURSE_VERSION}}#egg=gluon-course"], check=True)
    sys.path.insert(0, str(pathlib.Path("gluon-course").resolve()))  # this process started before the install
    from gluon_course.grading.installed import report
    report(COURSE_REPOSITORY, COURSE_VERSION)'''


def git_url(repository: str | None) -> str:
    """The git address of ``repository``: ``owner/name`` (GitHub) becomes ``https://github.com/owner/name.git``; a
    full address (``https://...``, ``file://...``) stays as it is; empty or None stays empty."""
    repository = (repository or "").strip()
    if not repository or "://" in repository or repository.startswith("git@"):
        return repository
    return f"https://github.com/{repository.removeprefix('github.com/').strip('/').removesuffix('.git')}.git"


def default_setting() -> tuple[str, str]:
    """The repository and version ``first-cell`` writes when told none: the website's own settings
    (``GLUON_COURSE_REPOSITORY``, ``GLUON_COURSE_BRANCH``), no repository and ``main`` without them."""
    return (git_url(os.environ.get("GLUON_COURSE_REPOSITORY")),
            (os.environ.get("GLUON_COURSE_BRANCH") or "").strip() or "main")


def cell_source(repository: str = "", version: str = "main") -> str:
    """The set-up cell's source, naming ``repository`` (a git address; ``owner/name`` is GitHub's) and ``version``."""
    return BODY.format(setting=SETTING.format(repository=json.dumps(git_url(repository)), version=json.dumps(version)))


def setting_of(source: str) -> tuple[str, str] | None:
    """The (repository, version) a set-up cell's source names; None when ``source`` is no set-up cell."""
    found = SETTING_LINE.search(source)
    if not found:
        return None
    return json.loads(found["repository"]), json.loads(found["version"])


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def first_code_cell(notebook: dict) -> int | None:
    """The index of the notebook's first code cell (None when it has none)."""
    return next((i for i, cell in enumerate(notebook["cells"]) if cell["cell_type"] == "code"), None)


def is_current(notebook: dict) -> bool:
    """Whether the notebook's first code cell is the set-up cell exactly as ``cell_source`` writes it (for whatever
    repository and version it names), tagged for the website and without outputs."""
    index = first_code_cell(notebook)
    if index is None:
        return False
    cell = notebook["cells"][index]
    setting = setting_of(_source(cell))
    return (setting is not None and _source(cell) == cell_source(*setting)
            and cell.get("metadata", {}).get("tags") == TAGS and not cell.get("outputs"))


def _new_cell(source: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {"tags": list(TAGS)}, "outputs": [],
            "source": source.splitlines(keepends=True)}


def with_first_cell(notebook: dict, repository: str, version: str) -> tuple[dict, str]:
    """``notebook`` with its set-up cell naming ``repository`` at ``version``: the first code cell replaced when it is
    a set-up cell already, a new one put before it otherwise (after the lesson's opening text). Returns the notebook
    and what was done ("inserted", "updated" or "up to date")."""
    cell = _new_cell(cell_source(repository, version))
    index = first_code_cell(notebook)
    cells = list(notebook["cells"])
    if index is not None and setting_of(_source(cells[index])) is not None:
        if cells[index]["source"] == cell["source"] and cells[index].get("metadata", {}).get("tags") == TAGS \
                and not cells[index].get("outputs"):
            return notebook, "up to date"
        cells[index] = dict(sorted({**cell, "id": cells[index]["id"]}.items())) if "id" in cells[index] else cell
        done = "updated"
    else:
        at = index if index is not None else len(cells)
        if notebook.get("nbformat", 4) >= 4 and notebook.get("nbformat_minor", 0) >= 5:
            cell = dict(sorted({**cell, "id": "course-set-up"}.items()))   # nbformat's order of keys
        cells.insert(at, cell)
        done = "inserted"
    return {**notebook, "cells": cells}, done


def write_first_cell(path: str | Path, repository: str, version: str) -> str:
    """Put the set-up cell into the notebook at ``path`` (its JSON written back as Jupyter writes it); returns what
    was done."""
    path = Path(path)
    notebook, done = with_first_cell(json.loads(path.read_text(encoding="utf-8")), repository, version)
    if done != "up to date":
        path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return done


def set_first_cell(number: str, repository: str | None = None, version: str | None = None) -> str:
    """``python -m gluon_course first-cell NN``: lesson NN's notebook with the set-up cell; None for the repository
    or version: ``default_setting()``'s."""
    default_repository, default_version = default_setting()
    repository = default_repository if repository is None else git_url(repository)
    return write_first_cell(lesson(number).notebook_path, repository, version or default_version)
