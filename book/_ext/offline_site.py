"""Keep the course website self-contained: nothing on a page may come from another host.

Loaded by ``_config.yml`` (``sphinx.local_extensions``). It does two things:

1. Jupyter Book always loads sphinx-thebe, which puts a CDN address for thebe's JavaScript and a Binder
   configuration on every page. The course has no live-code button, so those pieces are dropped.
2. When the build has finished, every HTML page (and every stylesheet under ``_static``) is scanned for
   scripts, stylesheets, fonts, images or frames that would be fetched from a remote host. Each one found
   is reported as a Sphinx warning, so ``jupyter-book build -W`` fails on it. Ordinary links (``<a href>``)
   are allowed: following one is the reader's choice, not something the page loads by itself.
"""
from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

# Attributes a browser fetches without being asked: <script src>, <link href> (stylesheets, fonts, icons,
# preloads), <img src>/<source srcset>, <iframe src>, and url(...) / @import inside CSS.
_FETCHED_HTML = re.compile(
    r"<(?P<tag>script|link|img|iframe|source|embed|audio|video)\b[^>]*?\s(?:src|href|srcset)\s*=\s*"
    r"[\"'](?P<url>(?:https?:)?//[^\"']+)[\"']",
    re.IGNORECASE,
)
_FETCHED_CSS = re.compile(r"(?:url\(\s*[\"']?|@import\s+[\"'])(?P<url>(?:https?:)?//[^\"')\s]+)", re.IGNORECASE)
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def _is_remote(url: str) -> bool:
    host = url.split("//", 1)[1].split("/", 1)[0].split(":", 1)[0].lower()
    return host not in _LOCAL_HOSTS


def _drop_thebe_assets(app, pagename, templatename, context, doctree):
    """Remove sphinx-thebe's script, its inline CDN address and its stylesheet from the page."""
    def keep(asset) -> bool:
        name = str(getattr(asset, "filename", asset) or "")
        body = str(getattr(asset, "attributes", {}).get("body", "") or "")
        return "thebe" not in name and "THEBE_JS_URL" not in body

    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if keep(asset)]


def _drop_thebe_config(app, doctree, docname):
    """Remove the Binder/thebe configuration block sphinx-thebe appends to every page."""
    for node in list(doctree.findall(nodes.raw)):
        text = node.astext()
        if "text/x-thebe-config" in text or text.strip().startswith("<script>kernelName ="):
            node.parent.remove(node)


def _check_no_remote_assets(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    found = 0
    for page in sorted(outdir.rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        for m in _FETCHED_HTML.finditer(text):
            if _is_remote(m.group("url")):
                found += 1
                logger.warning("%s loads <%s> from a remote host: %s (the site must work offline)",
                               page.relative_to(outdir), m.group("tag"), m.group("url"))
    for sheet in sorted((outdir / "_static").rglob("*.css")):
        text = _CSS_COMMENT.sub("", sheet.read_text(encoding="utf-8", errors="replace"))
        for m in _FETCHED_CSS.finditer(text):
            if _is_remote(m.group("url")):
                found += 1
                logger.warning("%s fetches %s from a remote host (the site must work offline)",
                               sheet.relative_to(outdir), m.group("url"))
    if not found:
        logger.info("offline check: no page loads anything from a remote host")


def setup(app):
    app.connect("html-page-context", _drop_thebe_assets, priority=900)
    # sphinx-thebe adds its block at doctree-resolved with the default priority (500); run after it.
    app.connect("doctree-resolved", _drop_thebe_config, priority=900)
    app.connect("build-finished", _check_no_remote_assets, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
