"""Every picture of the website opens at its full size when clicked.

A figure wider than the column of text (a layout drawn cell by cell, a chart of ten versions) is shrunk to the
column's width, and on a phone to a third of its size or less: its labels become too small to read. Sphinx links a
picture to its own file only when the page scales it by hand (``:width:``, ``:scale:``); the notebooks' figures and
the pages' ``![…](…)`` pictures are never scaled that way, so none was linked. This extension puts a link to the
picture's own file (``_images/…``, where Sphinx copies it) around every picture that is not already a link, on every
page: a click opens the figure alone, at its drawn size, where the browser can zoom it. book/_static/course.css gives
such a picture the zoom-in pointer. Loaded by ``_config.yml`` (``sphinx.local_extensions``).
"""
from __future__ import annotations

import posixpath

from docutils import nodes
from sphinx.util.osutil import relative_uri

TITLE = "Open the figure at its full size"


def _file_of(node: nodes.image, builder) -> str | None:
    """The name under ``_images/`` that Sphinx gives the picture's file, or None (a remote or missing picture)."""
    candidates = node.get("candidates") or {}
    if "?" in candidates:            # a picture from another host: never on this site (book/_ext/offline_site.py)
        return None
    uri = candidates.get("*")
    if uri is None:
        uri = next((candidates[kind] for kind in builder.supported_image_types if kind in candidates), None)
    if uri is None or uri not in builder.env.images:
        return None
    return builder.env.images[uri][1]


def _link_pictures(app, doctree, docname) -> None:
    builder = app.builder
    if builder.format != "html":
        return
    to_images = relative_uri(builder.get_target_uri(docname), builder.imagedir)
    for node in list(doctree.findall(nodes.image)):
        if isinstance(node.parent, nodes.reference):
            continue
        name = _file_of(node, builder)
        if name is None:
            continue
        link = nodes.reference("", "", internal=True, refuri=posixpath.join(to_images, name), reftitle=TITLE)
        node.replace_self(link)
        link.append(node)


def setup(app):
    app.connect("doctree-resolved", _link_pictures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
