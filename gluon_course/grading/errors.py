"""A learner's mistake becomes one or two lines, never a traceback.

Whatever the compiler, the launch or the import of a starter throws, ``explain`` turns it into

    lesson 02, gap 2 (tile_copy_kernel), sm_90: 'tt.make_range' op Failed to infer return type (starter.py:27)
      hint: Gluon needs an explicit layout: gl.arange(0, XBLOCK, layout=layout) ...

naming the lesson, the gap, the target and the compiler's first ``error:`` line, with a hint where the cause
is known. The gap is found from the source line the compiler points at: the nearest ``TODO gap N`` comment
above it in the same function (starters keep those comments), else the function's name.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from ..machine.compile import BackendMissing, CompileFailed

# (pattern in the compiler's message, hint). The first match wins.
HINTS = [
    (r"make_range' op Failed to infer return type|auto_encoding|AutoLayout",
     "Gluon needs an explicit layout: write gl.arange(0, XBLOCK, layout=...) (and a layout for every tensor "
     "you create); without layout= the tensor gets AutoLayout, which nothing in this kernel resolves"),
    (r"threads per warp, but the module specifies (\d+)",
     "the layout hard-codes a warp size; NVIDIA warps have 32 lanes and AMD wavefronts 64: build the layout "
     "from the warp_size the launcher passes (threads_per_warp=[warp_size])"),
    (r"order must be a permutation",
     "order lists every axis once, fastest first: a 1D layout has order=[0], a 2D one [1, 0] or [0, 1]"),
    (r"warps per CTA|warpsPerCTA|number of warps",
     "the product of warps_per_cta must equal num_warps (the launch's warps per program)"),
    (r"is not trivial",
     "assert_trivial=True refuses a conversion that moves data between threads: the two layouts differ"),
    (r"not yet implemented", ""),
]


def hint_for(message: str) -> str:
    for pattern, hint in HINTS:
        if re.search(pattern, message):
            return hint
    return ""


def _function_and_gap(path: Path, line: int) -> tuple[str, int | None]:
    """The function that holds ``line`` in ``path``, and the gap number of the nearest ``TODO gap N`` comment
    above the line inside that function (None if there is none)."""
    try:
        text = path.read_text()
        tree = ast.parse(text)
    except (OSError, SyntaxError):
        return "", None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno > best.lineno:
                best = node
    if best is None:
        return "", None
    lines = text.splitlines()
    for number in range(line, best.lineno - 1, -1):
        m = re.search(r"TODO gap (\d+)", lines[number - 1]) if number - 1 < len(lines) else None
        if m:
            return best.name, int(m.group(1))
    return best.name, None


def where(location: str) -> tuple[str, str]:
    """(``gap 2 (tile_copy_kernel)``, ``starter.py:27``) from a ``file:line[:column]`` location."""
    m = re.match(r"^(?P<file>.+?):(?P<line>\d+)(?::\d+)?$", location or "")
    if not m:
        return "", ""
    path = Path(m.group("file"))
    function, gap = _function_and_gap(path, int(m.group("line")))
    label = (f"gap {gap} ({function})" if gap else function)
    return label, f"{path.name}:{m.group('line')}"


def explain(error: BaseException, lesson: str | None = None) -> str:
    """One or two lines for a learner. Errors that are the course's own (a bug, not a mistake) are not
    passed here; callers catch only what a lesson module can cause."""
    head = f"lesson {lesson}" if lesson else ""
    if isinstance(error, CompileFailed):
        if "not yet implemented" in error.message:
            return error.message
        gap, at = where(error.location)
        parts = [p for p in (head, gap, error.target) if p]
        text = f"{', '.join(parts)}: {error.message}" + (f" ({at})" if at else "")
        hint = hint_for(error.message)
        return text + (f"\n  hint: {hint}" if hint else "")
    if isinstance(error, NotImplementedError):
        return str(error) or f"{head}: not yet implemented"
    if isinstance(error, SyntaxError):
        file = Path(error.filename or "").name or "the file"
        return (f"{head + ': ' if head else ''}{file} line {error.lineno}: {error.msg} — Python cannot read the "
                "file, so nothing in it was checked")
    if isinstance(error, BackendMissing):
        return str(error)
    text = str(error).strip().splitlines()
    message = text[-1] if text else type(error).__name__
    hint = hint_for(str(error))
    return (f"{head + ': ' if head else ''}{type(error).__name__}: {message}" + (f"\n  hint: {hint}" if hint else ""))
