"""Answers stay folded until the learner asks for them, on the website and in Jupyter alike. A lesson notebook's answer
cells (``gluon_course.grading.answers``: a cell that prints the whole source of a solution function holding a gap, or
whose committed output prints a gap's line the starter does not have) carry the website's tag ``hide-output`` and
Jupyter's own folding (``"jupyter": {"outputs_hidden": true}`` for JupyterLab and Notebook 7, ``"collapsed": true``
for the classic Notebook). ``python -m gluon_course fold NN`` folds them.

Every lesson notebook is held to it, 01 to 34, except those listed in ``BEING_REWRITTEN`` below.
"""
from __future__ import annotations

import copy
import json

import nbformat
import pytest

from gluon_course import lessons
from gluon_course.course import lesson
from gluon_course.grading import answers

# Every lesson's notebook keeps its answers folded. A lesson whose notebook is being rewritten may be listed here
# while its answers are still unfolded; a lesson listed here whose notebook is already folded fails below, so the set
# only shrinks.
BEING_REWRITTEN = set()


def _notebook(number: str) -> dict:
    path = lessons()[number].notebook_path
    if not path.exists():
        pytest.skip(f"lesson {number} has no notebook")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("number", list(lessons()))
def test_every_answer_cell_is_folded_on_the_website_and_in_jupyter(number):
    _notebook(number)
    unfolded = answers.unfolded_answer_cells(number)
    if number in BEING_REWRITTEN:
        assert unfolded, (f"lesson {number}'s answer cells are all folded now: remove it from BEING_REWRITTEN in "
                          "tests/test_answer_cells.py")
        pytest.xfail(f"lesson {number} is being rewritten; its answer cells {sorted(unfolded)} are not folded yet")
    assert not unfolded, (
        f"lesson {number}'s notebook shows an answer unfolded (cell: why it is an answer). Run `python -m gluon_course "
        f"fold {number}` (it adds the tag hide-output, \"collapsed\": true and \"jupyter\": {{\"outputs_hidden\": "
        "true}) or change what the cell shows:\n" + "\n".join(f"  cell {i}: {why}" for i, why in unfolded.items()))


@pytest.mark.parametrize("number", list(lessons()))
def test_a_folded_answer_shows_no_answer_line_on_its_bar(number):
    """JupyterLab and Notebook 7 print a folded output's first non-empty line on the bar that unfolds it."""
    notebook = _notebook(number)
    the = lesson(number)
    lines = answers.answer_lines(the.solution_path.read_text(), the.starter_path.read_text())
    for index in answers.answer_cells(number, notebook):
        bar = answers.placeholder_line(notebook["cells"][index])
        assert (bar or "").strip() not in lines, f"lesson {number}, cell {index}: the folded bar reads {bar!r}"


def test_every_lesson_01_to_30_has_its_answers_found():
    """A detection that found nothing would pass the folding test above for nothing: every lesson 01-29 shows its
    solution after the exercise and has at least one answer cell. Lesson 30's notebook never prints its gap's kernel."""
    found = {number: answers.answer_cells(number) for number in lessons() if number <= "30"}
    assert [number for number, cells in found.items() if not cells] == ["30"]


# -- the detection, on situations built for it (lesson 01's solution: gaps in scalar_copy_kernel and copy_grid) ------
def _cell(source: str, printed: str = "") -> dict:
    outputs = [{"name": "stdout", "output_type": "stream", "text": printed}] if printed else []
    return {"cell_type": "code", "execution_count": None, "id": "x", "metadata": {}, "outputs": outputs,
            "source": source}


def _found(*cells, number: str = "01") -> dict:
    setup = _cell(f'from gluon_course import load_solution\nanswer_module = load_solution("{number}")')
    return answers.answer_cells(number, {"cells": [setup, *cells]})


def test_a_cell_that_prints_a_gap_functions_source_is_an_answer_cell():
    assert set(_found(_cell("show_source(answer_module.scalar_copy_kernel)"))) == {1}      # bound under any name
    assert set(_found(_cell('show_source(load_solution("01").copy_grid)'))) == {1}
    assert not _found(_cell("show_source(starter.scalar_copy_kernel)"))                    # the starter: no answer
    assert not _found(_cell('show_source(load_solution("02").tile_copy_kernel)'))          # another lesson's


def test_a_cell_whose_output_prints_a_gap_line_is_an_answer_cell():
    solution = lesson("01").solution_path.read_text()
    starter = lesson("01").starter_path.read_text()
    line = max(answers.answer_lines(solution, starter), key=len)       # a line of a gap, in no line of the starter
    assert set(_found(_cell("print(something)", f"@gluon.jit\n    {line}\n"))) == {1}
    diff = f"--- a\n+++ b\n@@ -1,2 +1,2 @@\n def f():\n+    {line}\n"
    assert set(_found(_cell("show_diff(previous.f, this.f)", diff))) == {1}                # a line the diff adds
    removed = f"--- a\n+++ b\n@@ -1,2 +1,2 @@\n def f():\n-    {line}\n"
    assert not _found(_cell("show_diff(this.f, previous.f)", removed))                     # a removed line: the other's
    assert not _found(_cell("print(x)", "pid = gl.program_id(0)\n"))                        # the starter has it too


def test_fold_sets_what_the_website_and_both_jupyters_read_and_keeps_the_rest():
    cell = _cell("show_source(solution.copy_grid)", "def copy_grid(numel, XBLOCK):\n")
    cell["metadata"] = {"execution": {"iopub.status.busy": "t"}, "tags": ["nbval-ignore-output"]}
    assert not answers.folded(cell)
    before = copy.deepcopy(cell)
    answers.fold(cell)
    assert answers.folded(cell)
    assert cell["metadata"] == {"collapsed": True, "execution": {"iopub.status.busy": "t"},
                                "jupyter": {"outputs_hidden": True}, "tags": ["nbval-ignore-output", "hide-output"]}
    assert {k: v for k, v in cell.items() if k != "metadata"} == {k: v for k, v in before.items() if k != "metadata"}
    for key in ("collapsed", "jupyter", "tags"):        # each of the three is needed: one reader each
        partial = copy.deepcopy(cell)
        del partial["metadata"][key]
        assert not answers.folded(partial), key


def test_a_folded_notebook_is_valid_nbformat():
    """nbformat 4.5's schema names both keys of a code cell's metadata (``collapsed``, a boolean; ``jupyter``, an
    object describing ``outputs_hidden``): a folded notebook validates, and a wrongly typed key does not."""
    notebook = nbformat.read(lesson("01").notebook_path, as_version=4)
    nbformat.validate(notebook)
    index = next(iter(answers.answer_cells("01")))
    notebook.cells[index].metadata.collapsed = "true"
    with pytest.raises(nbformat.ValidationError):
        nbformat.validate(notebook)


def test_a_recording_keeps_the_folding():
    """`python -m gluon_course record` reads a notebook with nbformat, executes it with nbclient and writes it back
    with nbformat. nbclient sets outputs and execution times only; nbformat's read and write (checked here) keep the
    three keys of every answer cell."""
    written = nbformat.writes(nbformat.read(lesson("01").notebook_path, as_version=4))
    again = json.loads(written)
    indices = answers.answer_cells("01", again)
    assert indices and all(answers.folded(again["cells"][i]) for i in indices)
