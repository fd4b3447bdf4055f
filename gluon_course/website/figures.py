"""Recorded figures inside prose, written from ``results/`` and never typed by hand.

A sentence of the README, of a book page or of a lesson notebook's markdown that states a recorded figure holds it
between two HTML comments, which GitHub, Jupyter and the website all hide::

    Lesson 31's launcher costs <!-- fig 31/host_cost {v:.1f} µs -->9.8 µs<!-- /fig --> per call.

The opening comment names where the number comes from and how it is written; ``python -m gluon_course tables``
rewrites the text between the two comments from ``results/<gpu>.json`` (``update``), and a test fails when a
committed page is stale. The language is small:

- **where**: ``NN/key`` is a figure's ``value``; ``NN/key:detail`` one of its ``details``; ``:`` goes deeper and
  ``*`` takes every member of a dict or a list (``32/model_table:shapes:*:ratio``). A place that ends at a dict or a
  list gives all its numbers, one that ends at a text the numbers it writes ("382 TFLOPS vs cuBLAS 765 TFLOPS");
  ``>1``, ``<=0.9`` after a place keeps only those above or below the bound. Several places joined by ``,`` (no
  spaces) give their numbers in order. The NVIDIA recording by default; ``amd-mi355x@NN/key`` names another.
- **how**: the rest of the comment, a Python format string with the fields ``v`` (the one number; an error where
  there are several), ``{0}``, ``{1}``... (the numbers in order), ``min``, ``max``, ``n`` (how many), ``geomean``,
  ``quotient`` (of two numbers, the first over the second) and the first place's ``gpu``, ``date``, ``triton`` and
  ``torch``: ``{v:.2f}×``, ``{v:.1%}``, ``{v:.0f} TFLOPS``, ``{min:.2f}–{max:.2f}×``, ``{0:.0f} against {1:.0f}``.

``hand_typed`` is the other half: it finds numbers in the same prose that equal a recorded figure at the precision
they are written with, so that a test can fail on a figure typed by hand (``tests/test_prose_figures.py``).
"""
from __future__ import annotations

import bisect
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from ..course import lessons
from ..grading import records

# The marker: the spec in the opening comment, the rendered text (one line, never another comment) up to the closing.
MARKER = re.compile(r"<!-- fig (?P<spec>[^\n]*?) -->(?P<text>[^<\n]*)<!-- /fig -->")


class FigureSpecError(ValueError):
    """A marker names a place that is not recorded, or a format that does not fit it."""


def _dig(node, path: list[str], spec: str) -> list:
    if not path:
        return [node]
    head, rest = path[0], path[1:]
    if head == "*":
        members = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if members is None:
            raise FigureSpecError(f"{spec}: '*' needs a dict or a list, found {type(node).__name__}")
        return [found for member in members for found in _dig(member, rest, spec)]
    if isinstance(node, dict) and head in node:
        return _dig(node[head], rest, spec)
    if isinstance(node, list) and head.lstrip("-").isdigit() and -len(node) <= int(head) < len(node):
        return _dig(node[int(head)], rest, spec)
    raise FigureSpecError(f"{spec}: no '{head}' there")


def _entry(place: str) -> tuple[dict, list[str]]:
    gpu, _, where = place.rpartition("@")
    key, *path = where.split(":")
    try:
        return records.recorded(key, gpu or records.DEFAULT_RECORDING), path
    except KeyError as e:
        raise FigureSpecError(f"{place}: {e.args[0]}") from None


def numbers_at(place: str) -> list[float]:
    """The recorded numbers a place names: ``31/host_cost``, ``31/host_cost:cublas_us``, ``gpu@NN/key:a:*:b``,
    ``19/over_triton_sweep:ratios>1`` (only those above 1)."""
    bound = re.fullmatch(r"(.*?)([<>]=?)(\d+(?:\.\d+)?)", place)
    if bound:
        place = bound[1]
    entry, path = _entry(place)
    found = _dig(entry["details"], path, place) if path else [entry["value"]]
    members = [member for value in found for member in
               (value.values() if isinstance(value, dict) else value if isinstance(value, list) else [value])]
    numbers = []
    for value in members:
        if isinstance(value, str):      # a figure's text: "382 TFLOPS vs cuBLAS 765 TFLOPS" gives 382 and 765
            numbers += [float(n) for n in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.×])", value)]
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FigureSpecError(f"{place}: not a number ({value!r})")
        else:
            numbers.append(float(value))
    if bound:
        limit = float(bound[3])
        keep = {">": limit.__lt__, ">=": limit.__le__, "<": limit.__gt__, "<=": limit.__ge__}[bound[2]]
        numbers = [n for n in numbers if keep(n)]
        if not numbers:
            raise FigureSpecError(f"{place}{bound[2]}{bound[3]}: no number there now")
    return numbers


def render(spec: str) -> str:
    """The text a marker's spec stands for, from the recording as it is now."""
    places, _, form = spec.strip().partition(" ")
    if not form:
        raise FigureSpecError(f"'{spec}': a marker needs a place and a format ('31/host_cost {{v:.1f}} µs')")
    numbers = [n for place in places.split(",") for n in numbers_at(place)]
    if not numbers:
        raise FigureSpecError(f"'{spec}': no number there")
    first, _ = _entry(re.sub(r"[<>]=?[\d.]+$", "", places.split(",")[0]))
    fields = {"min": min(numbers), "max": max(numbers), "n": len(numbers),
              "geomean": math.exp(sum(math.log(n) for n in numbers) / len(numbers)) if min(numbers) > 0 else None,
              **{name: first[name] for name in ("gpu", "date", "triton", "torch")}}
    if len(numbers) == 1:
        fields["v"] = numbers[0]
    if len(numbers) == 2 and numbers[1]:
        fields["quotient"] = numbers[0] / numbers[1]
    try:
        return form.format(*numbers, **fields)
    except KeyError as e:
        raise FigureSpecError(f"'{spec}': {{{e.args[0]}}} is not a field here (v for one number; min, max, n, "
                              f"geomean, quotient; {{0}}, {{1}}... each number in order; gpu, date)") from None
    except (ValueError, IndexError, TypeError) as e:
        raise FigureSpecError(f"'{spec}': {e}") from None


def rewrite(text: str) -> str:
    """``text`` with every marker's rendered part written from the recording."""
    return MARKER.sub(lambda m: f"<!-- fig {m['spec']} -->{render(m['spec'])}<!-- /fig -->", text)


# -- the pages that may hold markers --------------------------------------------------------------------------

def prose_pages(root: Path) -> list[Path]:
    """The README, the book's pages (the lab notes' pages of single lessons, ``book/lab-notes/NN.md``, among them)
    and the lessons' notebooks."""
    return [root / "README.md", *sorted((root / "book").glob("*.md")), *sorted((root / "book").glob("lab-notes/*.md")),
            *sorted((root / "lessons").glob("*/lesson.ipynb"))]


def markdown_cells(notebook_text: str) -> list[tuple[int, str]]:
    """(cell index, source) of each markdown cell of a notebook's JSON text."""
    cells = json.loads(notebook_text)["cells"]
    return [(i, c["source"] if isinstance(c["source"], str) else "".join(c["source"]))
            for i, c in enumerate(cells) if c["cell_type"] == "markdown"]


def _rewrite_notebook(text: str) -> str:
    """The notebook's JSON text with its markdown cells' markers rewritten, edited as text: each source line that
    holds a marker is replaced where it stands (as JSON writes it, after its cell's id), so nothing else moves."""
    cells = json.loads(text)["cells"]
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        start = text.find(f'"id": {json.dumps(cell["id"])}') if "id" in cell else 0
        for line in source.splitlines(keepends=True):
            new = rewrite(line)
            if new == line:
                continue
            old_json, new_json = (json.dumps(s, ensure_ascii=False) for s in (line, new))
            at = text.find(old_json, max(start, 0))
            if at < 0:
                raise FigureSpecError(f"a marked line is not written as JSON writes it: {line.strip()[:80]}")
            text = text[:at] + new_json + text[at + len(old_json):]
    return text


def update(root: Path, write: bool) -> list[str]:
    """Rewrite every marker of the README, the book's pages and the lessons' notebooks from ``results/``; return the
    files that changed (or, with ``write=False``, that are stale)."""
    changed = []
    for path in prose_pages(root):
        text = path.read_text(encoding="utf-8")
        if "<!-- fig " not in text:
            continue
        try:
            new = _rewrite_notebook(text) if path.suffix == ".ipynb" else rewrite(text)
        except FigureSpecError as e:
            raise FigureSpecError(f"{path.relative_to(root)}: {e}") from None
        if new != text:
            changed.append(str(path.relative_to(root)))
            if write:
                path.write_text(new, encoding="utf-8")
    return changed


# -- numbers typed by hand -------------------------------------------------------------------------------------

# A number that states a measured figure carries one of these: a ratio's ×, a time, a rate, a share. "8192 × 4096" is
# a shape, not a ratio. Numbers joined by a dash, a slash, a comma, "to", "against", "and" or "or" share the unit
# that ends them ("657 against 686 TFLOPS", "16–18 µs").
UNITS = r"×(?!\s*\d)|µs|ms\b|TFLOPS|TB/s|GB/s|%"
WRITTEN_UNITS = {"×": "x", "%": "%", "µs": "us", "ms": "ms", "TFLOPS": "tflops", "TB/s": "tbs", "GB/s": "tbs"}
NUMBER = r"\d+(?:\.\d+)?"
JOIN = r"\s*(?:[–/,-]|\bto\b|\bagainst\b|\band\b|\bor\b)\s*"
WRITTEN = re.compile(rf"(?<![\w.,/×^−-])(?P<numbers>{NUMBER}(?:{JOIN}{NUMBER})*)(?P<space>\s*)(?P<unit>{UNITS})")
GENERATED = re.compile(r"<!-- BEGIN GENERATED .*?<!-- END GENERATED [^>]*-->", re.S)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
PARAGRAPH = re.compile(r"(?:[^\n]*\S[^\n]*\n?)+")
# Where a sentence ends: after . ! ? before a capital, a mark or a bracket; and before a table row or a list item.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z*`(\[|])|\n(?=\s*(?:[|*-]|\d+\.)\s)")

# What a recorded number measures, from the name of the detail that holds it (lists and dicts below it inherit it):
# a rate, a time, a share of a ceiling (written with %, or as a ratio), a ratio. Other details (watts, clocks,
# counters, errors, spreads, shapes and settings) are no figure a sentence would state with these units.
DETAIL_UNITS = [(re.compile(r"tflops"), ("tflops",)), (re.compile(r"tbs"), ("tbs",)),
                (re.compile(r"(^|_)us$"), ("us",)), (re.compile(r"(^|_)ms(_|$)"), ("ms",)),
                (re.compile(r"fraction|share|of_read|^configs$|^lowest"), ("%", "x")),
                (re.compile(r"ratio|geomean|worst|over|^pairs$|of_bound"), ("x",)),
                (re.compile(r"spread"), ())]


@dataclass(frozen=True)
class Written:
    """A number in prose that equals a recorded one at the precision it is written with."""
    file: str
    cell: int | None      # the notebook cell's index, None for a markdown page
    line: int             # the line in the page, or in the cell's source, from 1
    text: str             # as written: the number, or numbers, with their unit
    number: str           # the one number of them that equals a recorded one
    keys: tuple           # the recorded figures it equals
    sentence: str         # the sentence (or table row, or list item) it stands in
    paragraph: str        # and its paragraph

    def where(self) -> str:
        cell = f" cell {self.cell}" if self.cell is not None else ""
        keys = ", ".join(self.keys[:3]) + (f" (+{len(self.keys) - 3})" if len(self.keys) > 3 else "")
        around = " ".join(self.sentence.split())
        return f"{self.file}{cell} line {self.line}: {self.number} in {self.text!r} = {keys}: “{around[:160]}”"


def _value_units(entry: dict) -> tuple[str, ...]:
    """What a figure's own value measures, from its expected range ("≥ 85.0% of copy", "0.70–1.50 × torch's block",
    "≤ 60.00 µs per call")."""
    expected = entry.get("expected", "")
    if "% of" in expected:
        return ("%", "x")
    if "µs" in expected:
        return ("us",)
    if "×" in expected or "graph time" in expected or "of the bound" in expected:
        return ("x",)
    return ()


def _typed(node, units: tuple[str, ...], found: list) -> None:
    """(number, unit) for every float under ``node``, typed by the nearest detail name that says what it measures."""
    if isinstance(node, dict):
        for name, value in node.items():
            named = next((u for pattern, u in DETAIL_UNITS if pattern.search(name)), units)
            _typed(value, named, found)
    elif isinstance(node, list):
        for value in node:
            _typed(value, units, found)
    elif isinstance(node, float) and not math.isnan(node):
        found += [(node, unit) for unit in units]


def _strings(node, found: list[str]) -> None:
    if isinstance(node, str):
        found.append(node)
    elif isinstance(node, dict):
        for name, value in node.items():
            if name not in ("expected", "verdict", "gpu", "triton", "torch", "date", "commit"):
                _strings(value, found)
    elif isinstance(node, list):
        for value in node:
            _strings(value, found)


def written_numbers(match: re.Match) -> list[str]:
    return re.findall(NUMBER, match["numbers"])


def recorded_numbers(gpu_slug: str = records.DEFAULT_RECORDING) -> list[tuple[str, float, str]]:
    """(unit, number, figure key), sorted, for every number a recording holds that a sentence could state with a
    unit: each figure's value, every number its texts write with a unit, and the floats of its details whose names say
    what they measure (``tflops``, ``*_us``, ``ratios``, ``fraction``: ``DETAIL_UNITS``). A share counts as a ratio
    (0.97) and as a percentage (97); a time in ms also counts in µs, one in µs also in ms."""
    found = []
    for key, entry in records.load(gpu_slug)["figures"].items():
        if entry.get("kind") != "figure":
            continue
        typed = [(float(entry["value"]), unit) for unit in _value_units(entry)]
        _typed(entry.get("details", {}), (), typed)
        texts: list[str] = []
        _strings(entry, texts)
        for text in texts:
            for m in WRITTEN.finditer(text):
                scale = 1000 if m["unit"] == "GB/s" else 1
                typed += [(float(n) / scale, WRITTEN_UNITS[m["unit"]]) for n in written_numbers(m)]
        for number, unit in typed:
            found.append((unit, number * 100 if unit == "%" else number, key))
            if unit == "ms":
                found.append(("us", number * 1000, key))
            if unit == "us":
                found.append(("ms", number / 1000, key))
    return sorted(found)


def _significant_digits(written: str) -> int:
    return len(written.replace(".", "").lstrip("0"))


def _blank(text: str, pattern: re.Pattern) -> str:
    """``text`` with every match of ``pattern`` replaced by as many spaces (newlines kept), so places stay put."""
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def _equal(numbers: list, unit: str, written: str, scale: float, lessons_about: set[str]) -> tuple[str, ...]:
    """The keys of the recorded numbers of ``unit`` and of the lessons ``lessons_about`` that round to ``written`` at
    its precision."""
    decimals = len(written.split(".")[1]) if "." in written else 0
    value, half = float(written) / scale, 0.5 * 10 ** -decimals / scale + 1e-9
    at = bisect.bisect_left(numbers, (unit, value - half))
    keys = []
    while at < len(numbers) and numbers[at][0] == unit and numbers[at][1] <= value + half:
        key = numbers[at][2]
        if key not in keys and key.split("/")[0] in lessons_about:
            keys.append(key)
        at += 1
    return tuple(keys)


# How prose names a lesson: "lesson 19", "lessons 17–19", "lessons 31 and 32", "Lesson 04's", a table row's "**15 ·",
# and the NVIDIA GEMM's versions "v0" to "v9" (lessons 10–19; the AMD versions are lessons without a recording here).
LESSONS_NAMED = re.compile(r"\b[Ll]essons? (\d{2})(?:(?:–|-| to )(\d{2}))?((?:(?:, | and | or )\d{2}\b)*)")
ROW_NAMED = re.compile(r"\*\*(\d{2}) ·")
VERSION_NAMED = re.compile(r"\bv(\d)\b")


def lessons_named(text: str) -> set[str]:
    """The lessons ``text`` names."""
    named = {m[1] for m in ROW_NAMED.finditer(text)} | {f"1{m[1]}" for m in VERSION_NAMED.finditer(text)}
    for m in LESSONS_NAMED.finditer(text):
        first, last = int(m[1]), int(m[2] or m[1])
        named |= {f"{n:02d}" for n in range(first, last + 1)} | set(re.findall(r"\d{2}", m[3]))
    return named


def scan_text(text: str, numbers: list, file: str, cell: int | None = None, lesson: str | None = None) -> list[Written]:
    """The numbers of ``text`` that equal a recorded one (``recorded_numbers``) at their written precision, with at
    least two significant digits ("5%" or "2×" says too little to be a figure), outside generated blocks, markers and
    fenced code. A recorded number counts only where the prose is about its lesson: in that lesson's own notebook
    (``lesson``), or in a paragraph that names it. Two-digit ratios and whole percentages of a hundred GEMM figures
    lie close together; read against every figure, almost any "0.95×" would equal one of them by chance."""
    hidden = _blank(_blank(_blank(text, GENERATED), MARKER), FENCE)
    found = []
    for paragraph in PARAGRAPH.finditer(hidden):
        body = paragraph.group()
        about = lessons_named(body) | ({lesson} if lesson else set())
        ends = [0] + [m.end() for m in SENTENCE_END.finditer(body)] + [len(body)]
        for m in WRITTEN.finditer(body):
            unit = WRITTEN_UNITS[m["unit"]]
            if unit == "%" and m["space"]:     # "i % 2" in code is not a share
                continue
            sentence = next(body[a:b] for a, b in zip(ends, ends[1:]) if a <= m.start() < b)
            for number in written_numbers(m):
                if _significant_digits(number) < 2:
                    continue
                keys = _equal(numbers, unit, number, 1000 if m["unit"] == "GB/s" else 1, about)
                if keys:
                    line = text.count("\n", 0, paragraph.start() + m.start()) + 1
                    found.append(Written(file, cell, line, m.group(), number, keys, sentence.strip(), body))
    return found


def _lesson_of(path: Path):
    """The lesson whose notebook ``path`` is."""
    return next((the for the in lessons().values() if the.folder == path.parent.name), None)


def hand_typed(root: Path, gpu_slug: str = records.DEFAULT_RECORDING) -> list[Written]:
    """Every number of the README, the book's pages and the lessons' markdown cells that equals a figure of the
    recording at the precision it is written with. A lesson none of whose targets the recording's GPU runs (an AMD
    lesson, against the H200's recording) is not read against it: no figure of that GPU is one of its own."""
    numbers = recorded_numbers(gpu_slug)
    found = []
    for path in prose_pages(root):
        name = str(path.relative_to(root))
        text = path.read_text(encoding="utf-8")
        if path.suffix != ".ipynb":
            found += scan_text(text, numbers, name)
            continue
        the = _lesson_of(path)
        if the is not None and not set(the.checks.targets) & set(records.vendor_targets(gpu_slug)):
            continue
        for index, source in markdown_cells(text):
            found += scan_text(source, numbers, name, index, the.number if the else None)
    return found
