"""The glossary (book/glossary.md) against the course's terms (gluon_course/website/glossary.py) and the lessons.

"A lesson uses a term" is decided two ways, both in gluon_course.website.glossary: the term's pattern matches the prose of the
lesson's notebook, or the lesson's solution calls a Gluon name the term stands for. Every hardware-specific Gluon name
a solution calls must belong to a term, so a new instruction, layout or copy in a lesson fails here until the glossary
has its entry. No GPU, no book build: this runs in a second.
"""
from __future__ import annotations

import re

import pytest

from gluon_course import lessons
from gluon_course.website import glossary
from gluon_course.course import repo_root

ROOT = repo_root()
TERMS = glossary.TERMS
ENTRIES = glossary.entries()
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _toc_pages() -> set[str]:
    return set(re.findall(r"^\s*-?\s*(?:file|root):\s*(\S+)\s*$", (ROOT / "_toc.yml").read_text(), re.MULTILINE))


def _target(term: glossary.Term) -> str | None:
    """The link an entry must hold: the lesson's notebook, or the book page (None: the lesson is not written yet)."""
    if term.where.startswith("book/"):
        return term.where.removeprefix("book/") + ".md"
    found = lessons().get(term.where)
    return None if found is None else f"../lessons/{found.folder}/lesson.ipynb"


def test_the_glossary_parses():
    assert len(ENTRIES) >= 50, f"book/glossary.md: only {len(ENTRIES)} entries found; is it still a definition list?"
    doubled = sorted({t.entry for t in TERMS if [u.entry for u in TERMS].count(t.entry) > 1})
    assert not doubled, f"terms listed twice in gluon_course/website/glossary.py: {doubled}"


def test_every_course_term_has_an_entry():
    missing = [t.entry for t in TERMS if t.entry not in ENTRIES]
    assert not missing, ("gluon_course/website/glossary.py lists terms with no entry in book/glossary.md (an entry's first "
                         f"line must be the term exactly): {missing}")


def test_every_entry_is_a_course_term():
    known = {t.entry for t in TERMS}
    extra = [entry for entry in ENTRIES if entry not in known]
    assert not extra, ("book/glossary.md has entries gluon_course/website/glossary.py does not list (add a Term: where it is "
                       f"taught, how a lesson says it): {extra}")


@pytest.mark.parametrize("term", TERMS, ids=[t.entry for t in TERMS])
def test_each_entry_links_to_the_page_that_teaches_it(term):
    body = ENTRIES.get(term.entry)
    if body is None:
        pytest.skip("no entry (test_every_course_term_has_an_entry fails)")
    links = LINK.findall(body)
    target = _target(term)
    if target is None:
        # The lesson is not in this checkout yet: the entry names it in words and links to nothing that isn't there.
        assert f"lesson {int(term.where)}" in body, (f"{term.entry!r} is taught in lesson {term.where}, not written "
                                                     "yet: its entry must say so in words")
        assert not any("lessons/" in link for link in links), f"{term.entry!r} links to a lesson page: {links}"
        return
    assert target in links, f"{term.entry!r}: its entry must link to {target} (where it is taught); it links to {links}"
    for link in links:
        if link.startswith(("http://", "https://", "#")):
            continue
        path = (ROOT / "book" / link.split("#")[0]).resolve()
        assert path.exists(), f"{term.entry!r} links to {link}, which does not exist"
        page = str(path.relative_to(ROOT).with_suffix(""))
        assert page in _toc_pages(), f"{term.entry!r} links to {link}, which is not a page of the website (_toc.yml)"


@pytest.mark.parametrize("term", [t for t in TERMS if not t.where.startswith("book/") and t.where in lessons()],
                         ids=lambda t: t.entry)
def test_the_teaching_lesson_uses_the_term(term):
    prose = glossary.lesson_prose(term.where)
    assert re.search(term.says, prose), (f"{term.entry!r} is said to be taught in lesson {term.where}, but its notebook's "
                                         f"prose never matches {term.says!r}")


def test_a_term_a_lesson_uses_has_an_entry():
    """Every course term a notebook's prose uses: an entry, and one that says where the term is taught."""
    problems = []
    for number in lessons():
        prose = glossary.lesson_prose(number)
        for term in TERMS:
            if re.search(term.says, prose) and term.entry not in ENTRIES:
                problems.append(f"lesson {number} uses {term.entry!r}, which has no glossary entry")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("number", list(lessons()))
def test_every_gluon_name_a_lesson_calls_is_a_glossary_term(number):
    names = glossary.lesson_gluon_names(number)
    uncovered = sorted(name for name in names if glossary.covering(name) is None)
    assert not uncovered, (f"lesson {number} calls Gluon names no glossary term covers: {uncovered}. Add a Term to "
                           "gluon_course/website/glossary.py (its api lists them) and its entry to book/glossary.md, with a "
                           "link to the lesson that teaches it")
    for name in names:
        term = glossary.covering(name)
        assert term.entry in ENTRIES, f"lesson {number} calls {name}: term {term.entry!r} has no entry"


def test_what_the_gluon_names_scan_finds():
    """The scan sees through imports, aliases and gl.nvidia/gl.amd paths, and ignores plain gl calls."""
    source = (
        "from triton.experimental.gluon import language as gl\n"
        "from triton.experimental.gluon.language.nvidia.hopper import mbarrier, warpgroup_mma\n"
        "from triton.experimental.gluon.language.amd import cdna3\n"
        "def k(x):\n"
        "    mbarrier.wait(x, 0)\n"
        "    warpgroup_mma(x, x, x)\n"
        "    cdna3.buffer_load(x, x)\n"
        "    gl.nvidia.hopper.tma.async_load(x)\n"
        "    gl.amd.AMDMFMALayout(version=4)\n"
        "    gl.NVMMASharedLayout.get_default_for([64, 64], gl.bfloat16)\n"
        "    gl.arange(0, 4)\n")
    assert glossary.gluon_names(source) == {"mbarrier.wait", "warpgroup_mma", "cdna3.buffer_load", "tma.async_load",
                                            "AMDMFMALayout", "NVMMASharedLayout.get_default_for"}
    assert glossary.covering("tma.async_load").entry == "TMA"
    assert glossary.covering("mbarrier.expect").entry == "Expect, transaction bytes (mbarrier)"
    assert glossary.covering("tcgen05_alloc") is None
