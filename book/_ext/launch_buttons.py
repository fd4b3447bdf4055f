"""The lesson pages' launch buttons, from one setting: the course's public repository on GitHub.

The course does not know where it will be published, so ``_config.yml`` names no repository and the site builds
with no launch buttons (and no warning). Given the repository, as ``owner/name``,

    make book REPOSITORY=owner/name                       # or:
    GLUON_COURSE_REPOSITORY=owner/name jupyter-book build . -W -n --keep-going --all

every lesson page gets a **Colab** button (``colab.research.google.com/github/owner/name/blob/BRANCH/<page>.ipynb``)
and a **Binder** button (``mybinder.org/v2/gh/owner/name/BRANCH``), both opening the page's notebook from the
repository; ``GLUON_COURSE_BRANCH`` names the branch (default ``main``). Every page also gets the theme's repository
button (the GitHub mark at the top of the page) and a link to the repository in its footer, and book/setup.md's
commands name it: ``git clone <the course's repository>`` becomes ``git clone https://github.com/owner/name.git``.
Without the setting none of these appears, and the commands keep their placeholders. Loaded by ``_config.yml``
(``sphinx.local_extensions``); book/setup.md and the README say how to publish with the buttons.

A launch button opens the repository's own ``lesson.ipynb``, so what the notebook installs outside the repository
is what its first code cell, the set-up cell (``gluon_course.first_cell``), names. With the setting, the build
(1) warns (an error under ``-W``) for each lesson notebook whose set-up cell is missing or names another repository
(or none): its Colab button would open a notebook that cannot install this course; ``python -m gluon_course
first-cell --all --repository owner/name``, committed, fixes that; and (2) writes the repository and the commit it
was built from into the set-up cells of the notebooks the site offers for download (``_sources/``), so that a
downloaded lesson installs exactly the course the page shows.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPOSITORY = "GLUON_COURSE_REPOSITORY"
BRANCH = "GLUON_COURSE_BRANCH"
COLAB_URL = "https://colab.research.google.com"
BINDERHUB_URL = "https://mybinder.org"
_OWNER_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


def repository(value: str | None) -> str | None:
    """``owner/name`` from the setting (``owner/name``, or ``https://github.com/owner/name`` with or without ``.git``);
    None when it is empty or unset; a ValueError that says the form when it is neither."""
    value = (value or "").strip()
    if not value:
        return None
    for prefix in ("https://github.com/", "http://github.com/", "github.com/"):
        value = value.removeprefix(prefix)
    value = value.removesuffix(".git").strip("/")
    if not _OWNER_NAME.fullmatch(value):
        raise ValueError(f"{REPOSITORY}={value!r}: name the course's GitHub repository as owner/name "
                         "(for example: make book REPOSITORY=my-org/gluon-course)")
    return value


def url(owner_name: str) -> str:
    return f"https://github.com/{owner_name}"


def footer_link(owner_name: str) -> str:
    """The footer's line that links the repository (HTML: the theme writes ``extra_footer`` as it is)."""
    return (f'<p class="course-repository">The course\'s repository: '
            f'<a href="{url(owner_name)}">github.com/{owner_name}</a></p>')


def theme_options(options: dict, owner_name: str | None, branch: str | None = None) -> dict:
    """``options`` (the ``html_theme_options`` Jupyter Book made from ``_config.yml``) with the repository, its
    button and footer link, and the Colab and Binder buttons of ``owner_name`` (on ``branch``, default main);
    ``options`` unchanged without one."""
    if owner_name is None:
        return options
    launch = {**(options.get("launch_buttons") or {}), "colab_url": COLAB_URL, "binderhub_url": BINDERHUB_URL}
    footer = str(options.get("extra_footer") or "").strip()
    return {**options, "launch_buttons": launch, "repository_url": url(owner_name),
            "repository_branch": (branch or "").strip() or "main", "path_to_docs": "",
            "use_repository_button": True,
            "extra_footer": (f"<p>{footer}</p>" if footer else "") + footer_link(owner_name)}


# The placeholders of book/setup.md that the repository's address replaces (the page reads as it is without one).
SETUP_PAGE = "book/setup"
CLONE_PLACEHOLDER = "<the course's repository>"
PLACEHOLDERS = {CLONE_PLACEHOLDER: "{url}.git", "https://github.com/<owner>/<repository>": "{url}"}


def fill_in(text: str, owner_name: str | None) -> str:
    """``text`` (book/setup.md) with the repository's address in place of each placeholder; unchanged without one."""
    if owner_name is None:
        return text
    for placeholder, value in PLACEHOLDERS.items():
        text = text.replace(placeholder, value.format(url=url(owner_name)))
    return text


def _config_inited(app, config) -> None:
    from sphinx.errors import ConfigError

    try:
        owner_name = repository(os.environ.get(REPOSITORY))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    config.html_theme_options = theme_options(dict(config.html_theme_options or {}), owner_name,
                                              os.environ.get(BRANCH))


def _source_read(app, docname: str, source: list[str]) -> None:
    """book/setup.md's commands with the repository's address (when the build has one)."""
    if docname != SETUP_PAGE:
        return
    owner_name = repository(os.environ.get(REPOSITORY))
    if owner_name is None:
        return
    if CLONE_PLACEHOLDER not in source[0]:
        from sphinx.util import logging

        logging.getLogger(__name__).warning(
            "%s.md has no %r to fill in with the repository's address (book/_ext/launch_buttons.py looks for it)",
            SETUP_PAGE, CLONE_PLACEHOLDER)
    source[0] = fill_in(source[0], owner_name)


def _first_cell():
    """The toolkit's ``gluon_course.first_cell`` (standard library only), from this repository's copy."""
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:
        sys.path.insert(0, root)
    from gluon_course import first_cell

    return first_cell


def notebooks_not_installing(srcdir, owner_name: str) -> list[str]:
    """For each lesson notebook under ``srcdir`` whose set-up cell would not install ``owner_name``'s course (none,
    or one that names another repository), a sentence saying so."""
    first_cell = _first_cell()
    wanted = first_cell.git_url(owner_name)
    wrong = []
    for path in sorted(Path(srcdir).glob("lessons/*/lesson.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        index = first_cell.first_code_cell(notebook)
        cell = notebook["cells"][index] if index is not None else None
        named = first_cell.setting_of("".join(cell["source"])) if cell else None
        where = path.relative_to(srcdir)
        if named is None:
            wrong.append(f"{where} has no set-up cell")
        elif named[0] != wanted:
            wrong.append(f"{where}'s set-up cell installs from {named[0] or 'no repository'}, not {wanted}")
    return wrong


def _check_notebooks(app) -> None:
    owner_name = repository(os.environ.get(REPOSITORY))
    if owner_name is None:
        return
    wrong = notebooks_not_installing(app.srcdir, owner_name)
    if wrong:
        from sphinx.util import logging

        logging.getLogger(__name__).warning(
            "the Colab button of %d lesson page(s) would open a notebook that cannot install this course (%s): run "
            "`python -m gluon_course first-cell --all --repository %s`, commit, and build again",
            len(wrong), "; ".join(wrong[:3]) + ("; ..." if len(wrong) > 3 else ""), owner_name)


def built_from(srcdir) -> str | None:
    """The commit checked out in ``srcdir`` (None where git cannot say)."""
    out = subprocess.run(["git", "-C", str(srcdir), "rev-parse", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def publish_downloads(outdir, owner_name: str, version: str) -> list[Path]:
    """The site's downloadable lesson notebooks (``outdir/_sources/lessons/*/lesson.ipynb``) with their set-up cell
    naming ``owner_name``'s repository at ``version``; returns the notebooks rewritten."""
    first_cell = _first_cell()
    written = []
    for path in sorted(Path(outdir).glob("_sources/lessons/*/lesson.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        index = first_cell.first_code_cell(notebook)
        if index is None or first_cell.setting_of("".join(notebook["cells"][index]["source"])) is None:
            continue
        if first_cell.write_first_cell(path, first_cell.git_url(owner_name), version) != "up to date":
            written.append(path)
    return written


def _build_finished(app, exception) -> None:
    owner_name = repository(os.environ.get(REPOSITORY))
    if exception is not None or owner_name is None:
        return
    branch = (os.environ.get(BRANCH) or "").strip() or "main"
    publish_downloads(app.outdir, owner_name, built_from(app.srcdir) or branch)


def setup(app):
    app.connect("config-inited", _config_inited)
    app.connect("source-read", _source_read)
    app.connect("builder-inited", _check_notebooks)
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
