"""The course website's generated pages, written from the lessons and from ``results/``, never typed by hand; grading
never imports this package.

- ``pages``        what every generated page shares: the markers of a generated section (``replace_between``), the
                   data a chart keeps in its PNG (``png_description``), the parts of ``_toc.yml`` (``toc_parts``)
- ``results``      the results page, the README's lesson table, the home page's lessons, the NVIDIA progression chart
- ``amd_results``  the AMD section of the results page: every AMD version's K-loop mix, drawn once
- ``comparison``   the two GEMM tracks side by side (book/comparison.md)
- ``support``      the GPU support matrix (book/support.md) and the instructors' lesson facts
- ``glossary``     the glossary's terms (book/glossary.md is checked against them)
- ``figures``      recorded figures inside prose (the README, the book's pages, the notebooks' markdown), each between
                   two comments that say where it comes from; and the scan for figures typed by hand

``python -m gluon_course tables`` runs ``update_tables``; a test fails when a committed page is stale.
"""
from __future__ import annotations

from pathlib import Path


def update_tables(root: Path, write: bool = True) -> list[str]:
    """Rewrite every generated part of the website and the README (``book/results.md`` and its charts,
    ``README.md``, ``book/intro.md``, ``book/support.md``, ``book/instructors.md``, ``book/comparison.md``) and every
    recorded figure marked in prose (the README, the book's pages, the lessons' markdown cells: ``figures``); return
    the files that changed (or, with ``write=False``, that are stale)."""
    from . import amd_results, comparison, figures, results, support

    return (results.update(root, write) + support.update(root, write) + amd_results.update(root, write)
            + comparison.update(root, write) + figures.update(root, write))
