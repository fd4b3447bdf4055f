"""Generate each lesson's ``starter.py`` from its ``solution.py``.

In a solution, every part the learner writes sits between two marker lines:

    ### BEGIN SOLUTION: what this gap asks for, in one sentence
    ...the solution's lines...
    ### END SOLUTION

The starter is the solution with each such block replaced by a TODO comment and a line that stops with
a clear message: ``gl.static_assert(False, ...)`` inside a ``@gluon.jit`` kernel (the compiler prints it),
``raise NotImplementedError(...)`` in host code. Everything else is copied unchanged, so a starter can
only differ from its solution inside the gaps. Starters are never edited by hand; a test regenerates
them and compares.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..course import SOLUTION_BEGIN as BEGIN, SOLUTION_END as END, lesson, lessons

HEADER = ('# Lesson {number} starter, generated from solutions/{folder}/solution.py. Fill in each "TODO gap" below, here\n'
          '# in this file, then run:  python -m gluon_course check {number}   (`make starters` rewrites it: keep a copy)\n')


class MarkerError(ValueError):
    pass


def _inside_gluon_kernel(lines: list[str], index: int, indent: int) -> bool:
    """Is line ``index`` inside a function decorated with ``@gluon.jit`` (or ``@gluon.jit(...)``)?"""
    for j in range(index - 1, -1, -1):
        line = lines[j]
        stripped = line.lstrip()
        here = len(line) - len(stripped)
        if stripped.startswith("def ") and here < indent:
            k = j - 1
            while k >= 0 and lines[k].lstrip().startswith("@"):
                if re.match(r"@\w*\.?jit\b", lines[k].lstrip()):
                    return True
                k -= 1
            return False
    return False


def make_starter(solution_text: str, number: str) -> str:
    the = lesson(number)
    lines = solution_text.splitlines()
    out: list[str] = []
    gap = 0
    i = 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if END.match(lines[i]):
            raise MarkerError(f"line {i + 1}: END SOLUTION without a BEGIN")
        if not m:
            out.append(lines[i])
            i += 1
            continue
        gap += 1
        indent = m.group("indent")
        what = (m.group("what") or "fill in this part").strip()
        j = i + 1
        while j < len(lines) and not END.match(lines[j]):
            if BEGIN.match(lines[j]):
                raise MarkerError(f"line {j + 1}: BEGIN SOLUTION inside another gap (opened at line {i + 1})")
            j += 1
        if j == len(lines):
            raise MarkerError(f"line {i + 1}: BEGIN SOLUTION is never closed")
        message = f"lesson {the.number}, gap {gap} not yet implemented: {what}"
        out.append(f"{indent}# TODO gap {gap}: {what}")
        if _inside_gluon_kernel(lines, i, len(indent)):
            out.append(f"{indent}gl.static_assert(False, {message!r})")
        else:
            out.append(f"{indent}raise NotImplementedError({message!r})")
        i = j + 1
    if gap == 0:
        raise MarkerError("no ### BEGIN SOLUTION block: a lesson needs at least one gap")
    header = HEADER.format(number=the.number, folder=the.folder)
    return header + "\n".join(out) + "\n"


def solution_only(solution_text: str) -> str:
    """The solution without its marker lines (what the website shows as the answer)."""
    return "\n".join(line for line in solution_text.splitlines()
                     if not (BEGIN.match(line) or END.match(line))) + "\n"


def expected_starter(number: str) -> str:
    the = lesson(number)
    return make_starter(the.solution_path.read_text(), the.number)


def write_starters(numbers: list[str] | None = None) -> list[Path]:
    written = []
    for number in numbers or list(lessons()):
        the = lesson(number)
        if not the.solution_path.exists():
            continue
        the.starter_path.parent.mkdir(parents=True, exist_ok=True)
        the.starter_path.write_text(expected_starter(number))
        written.append(the.starter_path)
    return written
