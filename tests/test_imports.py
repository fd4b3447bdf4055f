"""The toolkit's imports: no module of gluon_course/ reaches itself through its imports (no circle, however deep,
lazy imports inside functions included), and every import between its parts follows the layers that
book/authoring.md draws ("Where things go"). Read from the source with ``ast``; nothing is imported."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gluon_course"

# The parts of the toolkit, bottom to top, and what each may import (besides itself). book/authoring.md draws the
# same picture: change both together.
BASE = {"course", "validate", "display", "first_cell"}
CONCERNS = {"machine", "memory", "measure", "model"}
VENDORS = {"nvidia", "amd"}
MAY_IMPORT: dict[str, set[str]] = {
    "course": set(),
    "validate": set(),
    "display": {"course"},
    "first_cell": {"course"},
    # the four concerns stand side by side: none imports another
    **{concern: {"course", "validate"} for concern in CONCERNS},
    "grading": BASE | CONCERNS,
    # a vendor's home builds on grading (its lessons' checks are Checks), never on the other vendor's
    "nvidia": BASE | CONCERNS | {"grading"},
    "amd": BASE | CONCERNS | {"grading"},
    "website": BASE | CONCERNS | {"grading"} | VENDORS,
    "__init__": {"course"},
    "__main__": BASE | CONCERNS | {"grading"} | VENDORS | {"website", "__init__"},
}


def _modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package (a package is its __init__.py)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph(root: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """module -> {module of the package it imports: the line of the first such import}. ``from pkg import name``
    imports the submodule ``pkg.name`` when there is one, else ``pkg`` itself; relative imports are resolved."""
    modules = _modules(root)
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            for target in targets:
                while target and target not in modules:       # `import gluon_course.machine.compile` and the like
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


def circles(graph: dict[str, dict[str, int] | set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def part(module: str) -> str:
    """The part of the toolkit a module belongs to: ``gluon_course.amd.checks`` -> ``amd``."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


GRAPH = import_graph()


def test_the_walk_sees_the_whole_toolkit():
    parts = {part(m) for m in GRAPH}
    assert parts == set(MAY_IMPORT), (f"parts of gluon_course/ {sorted(parts - set(MAY_IMPORT))} have no layer in "
                                      f"MAY_IMPORT (and book/authoring.md's picture), or "
                                      f"{sorted(set(MAY_IMPORT) - parts)} are gone")
    assert len(GRAPH) > 60 and sum(map(len, GRAPH.values())) > 150, "the walk found too few modules or imports"


def test_no_module_imports_itself_round_a_circle():
    found = circles(GRAPH)
    assert not found, "import circles in gluon_course/ (each line: modules that reach one another):\n" + "\n".join(
        " ↔ ".join(c) for c in found)


def test_no_circle_between_the_parts():
    between: dict[str, set[str]] = defaultdict(set)
    for module, edges in GRAPH.items():
        between[part(module)] |= {part(t) for t in edges if part(t) != part(module)}
    found = circles({p: between.get(p, set()) for p in MAY_IMPORT})
    assert not found, f"parts of the toolkit that import one another: {found}"


def test_every_import_follows_the_layers():
    files, wrong = _modules(), []
    for module, edges in GRAPH.items():
        for target, line in edges.items():
            if part(target) != part(module) and part(target) not in MAY_IMPORT[part(module)]:
                wrong.append(f"{files[module].relative_to(PACKAGE.parent)}:{line}: {module} imports "
                             f"{target} ({part(module)} may import {sorted(MAY_IMPORT[part(module)]) or 'nothing'})")
    assert not wrong, "imports against the layers of book/authoring.md:\n" + "\n".join(wrong)


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set(), "c": {"b"}}, []),
    ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c", "a"}}, [["a", "b"], ["c", "d"]]),
])
def test_the_circle_finder_finds_circles(graph, expected):
    assert sorted(circles(graph)) == expected


def test_the_walk_resolves_relative_and_lazy_imports(tmp_path):
    """A circle made by a lazy import inside a function, through ``from . import`` and ``from ..x import``, is found."""
    pkg = tmp_path / "gluon_course"
    (pkg / "grading").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "grading" / "__init__.py").write_text("from . import report\n")
    (pkg / "grading" / "report.py").write_text("from .support import toc\n")
    (pkg / "grading" / "support.py").write_text("def update():\n    from ..grading.report import x\n")
    graph = import_graph(pkg)
    assert graph["gluon_course.grading"] == {"gluon_course.grading.report": 1}
    assert circles(graph) == [["gluon_course.grading.report", "gluon_course.grading.support"]]
