"""Answer cells: the notebook cells that show a gap's solution, folded until the learner asks to see them.

A lesson's notebook shows the solution's source after the exercise (``show_source(solution.kernel)``, a diff from
the previous version to the solution). Such a cell is an *answer cell* when what it shows holds a gap's lines,
found two ways, so that neither a cell's code nor its committed output can slip by:

- its code prints the whole source of one of the solution's functions that hold a gap (``### BEGIN SOLUTION``):
  ``show_source(solution.f)``, the solution being any name the notebook binds to ``load_solution("NN")``;
- its output prints a line of a gap that the starter does not have: a diff (``show_diff``) from an earlier version
  to the solution is an answer cell when the lines it adds or keeps hold one (a line it removes belongs to the
  other version; a diff whose changes all lie outside the gaps shows no answer).

An answer cell is folded on the website and in Jupyter alike:

- the cell tag ``hide-output``: the website (MyST-NB) draws the output behind a "click to show" button;
- ``"jupyter": {"outputs_hidden": true}``: JupyterLab 4 and Notebook 7 open the cell with its output collapsed;
- ``"collapsed": true``: the same for the classic Notebook (and nbclassic), which reads only this key.
  JupyterLab keeps the two in step when it saves, so a notebook saved there keeps both.

The learner unfolds it with a click (the website's button, Jupyter's collapsed-output bar); its code, which only
names the solution's functions, stays in sight.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

from ..course import SOLUTION_BEGIN, SOLUTION_END, lesson

SITE_TAG = "hide-output"
WHOLE_SOURCE_HELPERS = frozenset({"show_source"})   # print a function's whole source


def folded(cell: dict) -> bool:
    """Is this cell's output folded on the website and in both Jupyters?"""
    meta = cell.get("metadata", {})
    return (SITE_TAG in meta.get("tags", []) and meta.get("collapsed") is True
            and meta.get("jupyter", {}).get("outputs_hidden") is True)


def fold(cell: dict) -> None:
    """Fold a cell's output on the website and in both Jupyters (keeps its other metadata; keys in nbformat's
    sorted order, as a recording writes them)."""
    meta = dict(cell.get("metadata", {}))
    tags = list(meta.get("tags", []))
    if SITE_TAG not in tags:
        tags.append(SITE_TAG)
    meta.update(collapsed=True, jupyter={**meta.get("jupyter", {}), "outputs_hidden": True}, tags=tags)
    cell["metadata"] = dict(sorted(meta.items()))


# -- what a gap's answer is -------------------------------------------------------------------------------------
def answer_lines(solution_text: str, starter_text: str) -> set[str]:
    """The gaps' lines (stripped) that the starter does not have anywhere: seeing one shows part of an answer."""
    inside, lines = False, set()
    for line in solution_text.splitlines():
        if SOLUTION_BEGIN.match(line):
            inside = True
        elif SOLUTION_END.match(line):
            inside = False
        elif inside and line.strip():
            lines.add(line.strip())
    return lines - {line.strip() for line in starter_text.splitlines()}


def functions_with_gaps(solution_text: str) -> set[str]:
    """Dotted names (``matmul_kernel``, ``Plan._descriptors_for``) of the solution's functions and classes whose
    source holds a gap."""
    marker_lines = [i + 1 for i, line in enumerate(solution_text.splitlines()) if SOLUTION_BEGIN.match(line)]
    found: set[str] = set()

    def visit(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + node.name
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if any(start <= n <= node.end_lineno for n in marker_lines):
                    found.add(name)
                visit(node.body, name + ".")

    visit(ast.parse(solution_text).body, "")
    return found


# -- what a cell shows ----------------------------------------------------------------------------------------
def _parse(cell: dict) -> ast.Module | None:
    source = "".join(cell.get("source", ""))
    # IPython's own syntax (%magic, !shell) is not Python: those lines are left out of what is parsed.
    source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _loads_solution(node: ast.AST, number: str) -> bool:
    """``load_solution("NN")`` (or ``load_solution(NN)``) of this lesson."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    try:
        return name == "load_solution" and int(node.args[0].value) == int(number)
    except (TypeError, ValueError):
        return False


def solution_names(notebook: dict, number: str) -> set[str]:
    """The names a notebook binds to this lesson's solution module (``solution = load_solution("01")``)."""
    names = set()
    for cell in notebook["cells"]:
        tree = _parse(cell) if cell["cell_type"] == "code" else None
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.Assign) and _loads_solution(node.value, number):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _dotted(node: ast.AST, names: set[str], number: str) -> str | None:
    """``solution.Plan.launch`` -> ``Plan.launch`` when the chain starts at the solution module; else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if parts and ((isinstance(node, ast.Name) and node.id in names) or _loads_solution(node, number)):
        return ".".join(reversed(parts))
    return None


def shown_functions(cell: dict, names: set[str], number: str) -> set[str]:
    """The solution's functions whose whole source a code cell prints."""
    tree = _parse(cell)
    shown = set()
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Call):
            func = node.func
            helper = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if helper in WHOLE_SOURCE_HELPERS:
                shown |= {d for d in (_dotted(arg, names, number) for arg in node.args) if d}
    return shown


def printed_lines(cell: dict) -> set[str]:
    """The lines a cell's committed output prints, stripped; for a diff's lines, the text after the ``+`` or
    space that marks an added or kept line (a removed ``-`` line belongs to the other version and is left out)."""
    text = ""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            text += "".join(output.get("text", ""))
        elif "text/plain" in output.get("data", {}):
            text += "".join(output["data"]["text/plain"]) + "\n"
    lines = set()
    for line in text.splitlines():
        if line.startswith("-"):
            continue
        lines.add(line.strip())
        if line.startswith("+") and not line.startswith("+++"):
            lines.add(line[1:].strip())
    return lines


def placeholder_line(cell: dict) -> str | None:
    """The line JupyterLab 4 and Notebook 7 print on a folded output's bar: the first non-empty line of its first
    output (``@gluon.jit``, a diff's ``--- file`` line)."""
    outputs = cell.get("outputs", [])
    if not outputs:
        return None
    first = outputs[0]
    text = first.get("text") if first.get("output_type") == "stream" else first.get("data", {}).get("text/plain")
    text = "".join(text) if isinstance(text, list) else (text or "")
    return next((line for line in text.split("\n") if line), None)


def answer_cells(number: str, notebook: dict | None = None) -> dict[int, str]:
    """{cell index: why it is an answer cell} for a lesson's notebook (the committed one unless given)."""
    the = lesson(number)
    notebook = notebook if notebook is not None else json.loads(the.notebook_path.read_text(encoding="utf-8"))
    solution = the.solution_path.read_text(encoding="utf-8")
    starter = the.starter_path.read_text(encoding="utf-8") if the.starter_path.exists() else ""
    with_gaps, answers = functions_with_gaps(solution), answer_lines(solution, starter)
    names = solution_names(notebook, the.number)
    found = {}
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        shown = sorted(shown_functions(cell, names, the.number) & with_gaps)
        printed = sorted(printed_lines(cell) & answers)
        if shown:
            found[index] = "shows " + ", ".join(f"solution.{name}" for name in shown) + " (it holds a gap)"
        elif printed:
            example = min(printed, key=lambda line: (line.startswith("#"), printed.index(line)))
            found[index] = f"prints {len(printed)} line(s) of a gap's answer, e.g. {example!r}"
    return found


def unfolded_answer_cells(number: str) -> dict[int, str]:
    """The answer cells of a lesson's committed notebook that are not folded everywhere."""
    the = lesson(number)
    notebook = json.loads(the.notebook_path.read_text(encoding="utf-8"))
    return {i: why for i, why in answer_cells(number, notebook).items() if not folded(notebook["cells"][i])}


def fold_answers(number: str) -> list[int]:
    """Fold every answer cell of a lesson's notebook in place (``python -m gluon_course fold NN``); returns the
    cells it changed. Only cell metadata changes: sources and outputs are written back as they were."""
    path: Path = lesson(number).notebook_path
    raw = path.read_text(encoding="utf-8")
    notebook = json.loads(raw)
    changed = [i for i in answer_cells(number, notebook) if not folded(notebook["cells"][i])]
    for i in changed:
        fold(notebook["cells"][i])
    if changed:
        # Written as nbformat writes it (one space of indent, characters as they are), so the diff is the metadata.
        path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


__all__ = ["answer_cells", "answer_lines", "fold", "fold_answers", "folded", "functions_with_gaps",
           "placeholder_line", "printed_lines", "shown_functions", "solution_names", "unfolded_answer_cells", "SITE_TAG"]
