"""No test machinery in what a learner reads. A lesson notebook's markdown, the source of its code cells (Jupyter and
the website show it) and the text its cells print must not name the course's test tools: nbval, its NBVAL_ comment
markers, pytest. A notebook cell whose output may change from run to run (which configuration an autotuner picked)
tells nbval so with the cell tag ``nbval-ignore-output`` in its metadata, which nbval honours like the comment, instead
of a ``# NBVAL_IGNORE_OUTPUT`` line the learner would read.

Every lesson is held to this, 01 to 34. Lessons 31-34 are being rewritten by other work; none of them holds such a word
now, so none is exempted (an exemption would have to be listed here, by lesson, with the words it still holds).
The tool's name belongs in the glossary, for authors (book/glossary.md, entry "nbval").
"""
from __future__ import annotations

import json
import re

import pytest
from nbval.plugin import metadata_tags

from gluon_course import lessons

TEST_TOOL_WORDS = re.compile(r"(?i)\bnbval|NBVAL_|\bpytest\b")


def learner_text(notebook: dict) -> list[tuple[int, str, str]]:
    """What a learner reads in ``notebook`` (parsed JSON): (cell index, where, text) for each markdown cell, each code
    cell's source, and each text a code cell printed (streams, plain-text results, errors)."""
    found = []
    for index, cell in enumerate(notebook["cells"]):
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        found.append((index, cell["cell_type"], source))
        for output in cell.get("outputs", []):
            parts = [output.get("text", ""), output.get("data", {}).get("text/plain", ""),
                     output.get("evalue", ""), output.get("traceback", [])]
            text = "".join("".join(p) if isinstance(p, list) else p for p in parts)
            if text:
                found.append((index, "output", text))
    return found


def tool_words_in(notebook: dict) -> list[str]:
    """Each place in ``notebook`` where a learner would read a test tool's word: 'cell N (where): "…word…"'."""
    problems = []
    for index, where, text in learner_text(notebook):
        for match in TEST_TOOL_WORDS.finditer(text):
            around = text[max(0, match.start() - 40):match.end() + 40].replace("\n", " ")
            problems.append(f'cell {index} ({where}): "…{around}…"')
    return problems


def _notebook(number: str) -> dict:
    path = lessons()[number].notebook_path
    if not path.exists():
        pytest.skip(f"lesson {number} has no notebook")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("number", list(lessons()))
def test_no_test_tool_word_in_what_a_learner_reads(number):
    problems = tool_words_in(_notebook(number))
    assert not problems, (f"lesson {number}'s notebook names a test tool where a learner reads it (markdown, code "
                          "shown, or printed text). Say what the reader needs without it; to keep nbval from comparing "
                          "a cell's output, give the cell the tag nbval-ignore-output instead of a comment:\n"
                          + "\n".join(problems))


@pytest.mark.parametrize("number", list(lessons()))
def test_every_nbval_tag_is_one_nbval_honours(number):
    """A misspelt tag (``nbval-ignore-outputs``) would be ignored silently and the cell compared after all."""
    unknown = [(index, tag) for index, cell in enumerate(_notebook(number)["cells"])
               for tag in cell.get("metadata", {}).get("tags", [])
               if tag.startswith(("nbval", "raises-exception")) and tag not in metadata_tags]
    assert not unknown, (f"lesson {number}: cell tags nbval does not know: {unknown}; it knows {sorted(metadata_tags)}")


def test_nbval_reads_the_tag_the_lessons_use():
    """The installed nbval takes ``nbval-ignore-output`` from a cell's metadata as it takes the comment."""
    from nbval.plugin import find_comment_markers, find_metadata_tags

    assert dict(find_metadata_tags({"tags": ["nbval-ignore-output"]})) == {"check": False}
    assert dict(find_comment_markers("# NBVAL_IGNORE_OUTPUT\nprint(1)")) == {"check": False}


def test_the_scan_finds_each_word_and_nothing_else():
    """Built notebooks: every kind of place a word can hide is found; the same text without it is clean."""
    def cell(kind, source, outputs=()):
        return {"cell_type": kind, "metadata": {}, "source": source, **({"outputs": list(outputs)} if kind == "code"
                                                                       else {})}
    dirty = {"cells": [
        cell("markdown", ["The winner changes (nbval is told not to compare the next cell's output)."]),
        cell("code", "# NBVAL_IGNORE_OUTPUT\nprint(best)"),
        cell("code", "print(best)", [{"output_type": "stream", "name": "stdout", "text": ["run pytest again\n"]}]),
        cell("code", "x", [{"output_type": "execute_result", "data": {"text/plain": "'NBVAL_SKIP'"}}]),
    ]}
    found = tool_words_in(dirty)
    assert [f.split(" ", 2)[:2] for f in found] == [["cell", "0"], ["cell", "1"], ["cell", "2"], ["cell", "3"]], found
    assert "(output)" in found[2] and "(code)" in found[1]
    clean = {"cells": [
        cell("markdown", ["The winner changes from one run to the next."]),
        cell("code", "print(best)", [{"output_type": "stream", "name": "stdout", "text": ["best: R=2\n"]}]),
    ]}
    assert tool_words_in(clean) == []
