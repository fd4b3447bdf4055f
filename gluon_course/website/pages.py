"""What every generated page shares: the markers a generated section sits between, the data a chart keeps in its PNG,
and the parts of the website's table of contents."""
from __future__ import annotations

import re
from pathlib import Path

from ..course import lessons, repo_root


def replace_between(path: Path, begin: str, end: str, body: str, write: bool) -> bool:
    """Put ``body`` between the lines ``begin`` and ``end`` of ``path`` (written only when ``write``); return whether
    the file changed (or, with ``write=False``, is stale). A file without both markers is an error."""
    text = path.read_text()
    if begin not in text or end not in text:
        raise ValueError(f"{path} has no generated-table markers ({begin} … {end})")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    new = f"{head}{begin}\n{body}\n{end}{tail}"
    if write and new != text:
        path.write_text(new)
    return new != text


def png_description(path: Path) -> str | None:
    """The PNG's ``Description`` text chunk (where a chart keeps the data it was drawn from), or None."""
    import struct
    import zlib

    if not path.exists():
        return None
    data = path.read_bytes()
    at = 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8: at + 8 + length]
        if kind == b"tEXt" and body.startswith(b"Description\0"):
            return body.split(b"\0", 1)[1].decode("latin-1")
        if kind == b"zTXt" and body.startswith(b"Description\0"):
            return zlib.decompress(body.split(b"\0", 1)[1][1:]).decode("latin-1")
        at += 12 + length
    return None


def toc_parts(root: Path | None = None) -> list[tuple[str, list[str]]]:
    """(caption, pages) of every part of ``_toc.yml``, in order. Read with two patterns, not a YAML parser: the
    toolkit does not depend on one, and the file keeps to ``- caption:`` and ``- file:`` lines."""
    root = root or repo_root()
    parts: list[tuple[str, list[str]]] = []
    for line in (root / "_toc.yml").read_text().splitlines():
        caption = re.match(r"\s*-\s*caption:\s*(.+?)\s*$", line)
        page = re.match(r"\s*-\s*file:\s*(\S+)\s*$", line)
        if caption:
            parts.append((caption.group(1).strip("\"'"), []))
        elif page and parts:
            parts[-1][1].append(page.group(1))
    return parts


def lesson_parts(numbers) -> list[tuple[str, list[str]]]:
    """The lessons ``numbers`` grouped by the part of ``_toc.yml`` their page is in, in the site's order; a lesson whose
    page is not in the table of contents yet comes last, under a caption that says so."""
    found = lessons()
    parts = toc_parts()
    where = {page: caption for caption, pages in parts for page in pages}
    groups: dict[str, list[str]] = {caption: [] for caption, _ in parts}
    for number in numbers:
        caption = where.get(f"lessons/{found[number].folder}/lesson", "Not yet in the website's table of contents")
        groups.setdefault(caption, []).append(number)
    return [(caption, sorted(members)) for caption, members in groups.items() if members]
