"""Count mismatches as sentences: "1 × LDGDEPBAR (a commit group) where 3 were expected: a commit is missing in
the prologue", then the counts themselves, so a learner reads what is wrong before the numbers."""
from __future__ import annotations


class CourseBug(Exception):
    """An error in the course's own checks: the runner lets it through with its traceback (it is not a learner's)."""


def _plural(n: int) -> str:
    return "was" if n == 1 else "were"


def mismatch(got: dict, want: dict, where: str = "", dtype: str | None = None, names: dict | None = None,
             why: dict | None = None) -> str | None:
    """None when ``got == want``; else one sentence per differing opcode, then ``where`` and both dicts.

    names: opcode → what it is in words ("a commit group").
    why:   opcode → a hint, or (hint when there are too few, hint when there are too many)."""
    for label, table in (("names", names), ("why", why)):
        if table is not None and not isinstance(table, dict):
            # A course bug, not a learner's mistake (a checks module rebound its hint table's name): never a sentence.
            raise CourseBug(f"mismatch({label}=...) takes a dict of opcode → words, not {type(table).__name__}")
    if got == want:
        return None
    names, why = names or {}, why or {}
    parts = []
    for op in list(want) + [op for op in got if op not in want]:
        g, w = got.get(op, 0), want.get(op, 0)
        if g == w:
            continue
        label = f"{op} ({names[op]})" if op in names else op
        sentence = f"{g} × {label} where {w} {_plural(w)} expected"
        hint = why.get(op)
        if isinstance(hint, tuple):
            hint = hint[0] if g < w else hint[1]
        if hint:
            sentence += f": {hint}"
        parts.append(sentence)
    head = f"{dtype}: " if dtype else ""
    place = f" {where}" if where else ""
    return f"{head}{'; '.join(parts)} ({'counted' + place}: {got}; expected {want})"
