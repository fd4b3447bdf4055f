"""The lesson pages' launch buttons, from one setting: the course's public repository on GitHub.

The course does not know where it will be published, so ``_config.yml`` names no repository and the site builds
with no launch buttons (and no warning). Given the repository, as ``owner/name``,

    make book REPOSITORY=owner/name                       # or:
    GLUON_COURSE_REPOSITORY=owner/name jupyter-book build . -W -n --keep-going --all

every lesson page gets a **Colab** button (``colab.research.google.com/github/owner/name/blob/BRANCH/<page>.ipynb``)
and a **Binder** button (``mybinder.org/v2/gh/owner/name/BRANCH``), both opening the page's notebook from the
repository; ``GLUON_COURSE_BRANCH`` names the branch (default ``main``). Loaded by ``_config.yml``
(``sphinx.local_extensions``); book/setup.md and the README say how to publish with the buttons.
"""
from __future__ import annotations

import os
import re

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


def theme_options(options: dict, owner_name: str | None, branch: str | None = None) -> dict:
    """``options`` (the ``html_theme_options`` Jupyter Book made from ``_config.yml``) with the repository and the
    Colab and Binder buttons of ``owner_name`` (on ``branch``, default main); ``options`` unchanged without one."""
    if owner_name is None:
        return options
    launch = {**(options.get("launch_buttons") or {}), "colab_url": COLAB_URL, "binderhub_url": BINDERHUB_URL}
    return {**options, "launch_buttons": launch, "repository_url": f"https://github.com/{owner_name}",
            "repository_branch": (branch or "").strip() or "main", "path_to_docs": ""}


def _config_inited(app, config) -> None:
    from sphinx.errors import ConfigError

    try:
        owner_name = repository(os.environ.get(REPOSITORY))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    config.html_theme_options = theme_options(dict(config.html_theme_options or {}), owner_name,
                                              os.environ.get(BRANCH))


def setup(app):
    app.connect("config-inited", _config_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
