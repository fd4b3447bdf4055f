"""The course website: it builds with no warning, loads nothing from other hosts, every internal link resolves, every
lesson page has its download button (and its Colab and Binder buttons when the build is given the repository, from
the one setting GLUON_COURSE_REPOSITORY: the config is built both ways), the repository's button, footer link and
clone command appear exactly when the build is given the repository (a small build of the setup page, both ways), and
every page renders in a real (headless) browser with networking cut off: no console error, no request to another
host, every image loaded, every formula typeset, every table within the page at 1280 px; at 1280 and at 390 px (a
phone) no output or code box hides what does not fit in it (printed output wraps, code and tables scroll inside their
box) and no figure's text is shrunk below a readable size unless a click opens the figure at full size; each lesson
page shows its title, plots and results; and the site's search finds a GEMM lesson's term.

The browser part needs Chromium and its driver (Debian: `apt-get install chromium chromium-driver`;
`.ci/run` installs them). Without them these tests are skipped with a one-line notice, unless
GLUON_COURSE_REQUIRE_BROWSER=1 is set (CI sets it), which turns the skip into a failure. GLUON_COURSE_CHROMIUM / GLUON_COURSE_CHROMEDRIVER point at other
binaries. A screenshot of every lesson page, and whole-page screenshots of the home, results and support pages at
1280 px, land in _build/screenshots/; GLUON_COURSE_SCREENSHOTS=<folder> puts them there instead, with whole-page
screenshots of lessons 01, 19 and 32 and of all six pages at 390 px (a phone) besides.
"""
from __future__ import annotations

import functools
import json
import os
import re
import threading
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = Path(os.environ.get("GLUON_COURSE_SCREENSHOTS") or ROOT / "_build" / "screenshots")
CHROMIUM = os.environ.get("GLUON_COURSE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("GLUON_COURSE_CHROMEDRIVER", "/usr/bin/chromedriver")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _toc_pages() -> list[str]:
    """Every page of the site, as a path without suffix ("book/intro", "lessons/01-scalar-memcpy/lesson")."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                pages.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return pages


PAGES = _toc_pages()
LESSON_PAGES = [p for p in PAGES if p.startswith("lessons/")]


def _notebook(page: str) -> dict:
    return json.loads((ROOT / f"{page}.ipynb").read_text(encoding="utf-8"))


def _first_heading(notebook: dict) -> str:
    for cell in notebook["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for line in source.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    return ""


def _png_outputs(notebook: dict) -> int:
    return sum("image/png" in out.get("data", {}) for cell in notebook["cells"] for out in cell.get("outputs", []))


def _words(text: str) -> str:
    """Compare headings by their words only: markdown punctuation and the theme's anchors don't count."""
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


# ---- (a) the build ------------------------------------------------------------------------------------
def test_book_builds_without_warnings(book_build):
    status, seconds, output = book_build
    output = ANSI.sub("", output)
    if status != 0:
        problems = [line for line in output.splitlines() if re.search(r"WARNING|ERROR|Error|error:", line)]
        shown = "\n".join(problems[:40]) or "\n".join(output.splitlines()[-40:])
        pytest.fail(f"`jupyter-book build . -W -n --keep-going --all` failed (exit status {status}); "
                    f"warnings count as errors:\n{shown}", pytrace=False)
    assert "build succeeded" in output, output[-2000:]
    print(f"book built in {seconds:.1f} s")


def test_every_page_of_the_toc_is_built(book_html):
    assert (book_html / "index.html").exists(), "index.html (the redirect to the first page) is missing"
    missing = [page for page in PAGES if not (book_html / f"{page}.html").exists()]
    assert not missing, f"pages in _toc.yml with no HTML: {missing}"


_FETCHED = re.compile(r"<(script|link|img|iframe|source|embed|audio|video)\b[^>]*?\s(?:src|href|srcset)\s*=\s*"
                      r"[\"']((?:https?:)?//[^\"']+)[\"']", re.IGNORECASE)


def test_no_page_loads_anything_from_another_host(book_html):
    """Scripts, stylesheets, fonts, images: all from the site itself (links to other sites are fine)."""
    remote = []
    for page in sorted(book_html.rglob("*.html")):
        for tag, url in _FETCHED.findall(page.read_text(encoding="utf-8", errors="replace")):
            host = url.split("//", 1)[1].split("/", 1)[0].split(":", 1)[0]
            if host not in ("localhost", "127.0.0.1"):
                remote.append(f"{page.relative_to(book_html)}: <{tag}> {url}")
    assert not remote, "pages load assets from remote hosts:\n" + "\n".join(remote[:30])


def test_mathjax_is_part_of_the_site(book_html):
    mathjax = book_html / "_static" / "mathjax" / "tex-chtml.js"
    assert mathjax.exists(), ("MathJax is not in _static/mathjax: is the sphinx-mathjax-offline extension "
                              "installed (requirements.txt) and listed in _config.yml?")
    fonts = list((book_html / "_static" / "mathjax" / "output" / "chtml" / "fonts").rglob("*.woff"))
    assert fonts, "MathJax's fonts are missing from _static/mathjax"
    page = (book_html / "book" / "measuring.html").read_text(encoding="utf-8")
    assert 'class="math' in page, "book/measuring.md should hold a displayed formula (the browser test renders it)"
    assert re.search(r'<script[^>]*src="\.\./_static/mathjax/tex-chtml\.js[?"]', page), \
        "measuring.html does not load MathJax from _static/mathjax"


# ---- (a') links and launch buttons, read from the built HTML ------------------------------------------------------
class _Anchors(HTMLParser):
    """The hrefs of a page's links and the ids its elements carry."""

    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        if tag == "a" and attrs.get("href"):
            self.hrefs.append(attrs["href"])


@functools.lru_cache(maxsize=None)
def _anchors(path: Path) -> _Anchors:
    parser = _Anchors()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser


def test_every_internal_link_resolves(book_html):
    """Every link from one page of the site to another (or to a place on a page) reaches a file of the site, and the
    heading or element its #fragment names."""
    from urllib.parse import unquote, urlsplit

    broken = []
    for page in sorted(book_html.rglob("*.html")):
        if page.relative_to(book_html).parts[0] in ("_static", "_sources"):
            continue
        for href in _anchors(page).hrefs:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            where = f"{page.relative_to(book_html)} → {href}"
            if not target.exists():
                broken.append(f"{where}: no such file")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _anchors(target).ids:
                broken.append(f"{where}: {target.relative_to(book_html)} has no id {parts.fragment!r}")
    assert not broken, f"{len(broken)} internal links lead nowhere:\n" + "\n".join(broken[:40])


def _launch_buttons():
    """book/_ext/launch_buttons.py, the extension that gives the lesson pages their launch buttons."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("launch_buttons", ROOT / "book" / "_ext" / "launch_buttons.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sphinx_theme_options(repository: str | None, monkeypatch) -> dict:
    """The ``html_theme_options`` a build of the site runs with: Jupyter Book's Sphinx configuration made from
    _config.yml, then the launch-button extension's step, with ``GLUON_COURSE_REPOSITORY`` set or not."""
    import types

    from jupyter_book.config import get_final_config

    sphinx_config, _ = get_final_config(user_yaml=ROOT / "_config.yml", cli_config={"latex_individualpages": False},
                                        sourcedir=ROOT, use_external_toc=False)
    assert "launch_buttons" in sphinx_config["extensions"], "_config.yml does not load book/_ext/launch_buttons.py"
    ext = _launch_buttons()
    for name in (ext.REPOSITORY, ext.BRANCH):
        monkeypatch.delenv(name, raising=False)
    if repository is not None:
        monkeypatch.setenv(ext.REPOSITORY, repository)
    config = types.SimpleNamespace(html_theme_options=sphinx_config["html_theme_options"])
    ext._config_inited(None, config)
    return config.html_theme_options


def test_without_the_repository_setting_the_config_has_no_launch_button(monkeypatch):
    options = _sphinx_theme_options(None, monkeypatch)
    launch = options.get("launch_buttons") or {}
    providers = {key: launch.get(key) for key in ("colab_url", "binderhub_url", "jupyterhub_url", "thebe",
                                                  "deepnote_url", "jupyterlite_url") if launch.get(key)}
    assert not providers, f"_config.yml gives launch buttons without a repository: {providers}"
    assert not options.get("repository_url"), f"_config.yml names a repository: {options.get('repository_url')}"


@pytest.mark.parametrize("setting", ["my-org/gluon-course", "https://github.com/my-org/gluon-course.git"])
def test_the_repository_setting_gives_colab_and_binder_buttons(monkeypatch, setting):
    options = _sphinx_theme_options(setting, monkeypatch)
    assert options["repository_url"] == "https://github.com/my-org/gluon-course"
    assert options["repository_branch"] == "main" and options["path_to_docs"] == ""
    launch = options["launch_buttons"]
    assert launch["colab_url"] == "https://colab.research.google.com" and launch["binderhub_url"] == "https://mybinder.org"
    assert launch["notebook_interface"] == "jupyterlab" and not launch.get("thebe")
    monkeypatch.setenv("GLUON_COURSE_BRANCH", "published")
    config = type("Config", (), {"html_theme_options": {}})()
    _launch_buttons()._config_inited(None, config)
    assert config.html_theme_options["repository_branch"] == "published"


def test_a_repository_setting_not_of_the_form_owner_name_is_refused(monkeypatch):
    from sphinx.errors import ConfigError

    with pytest.raises(ConfigError, match="owner/name"):
        _sphinx_theme_options("gluon-course", monkeypatch)


def _lesson_tree(root: Path, cells: dict[str, str | None]) -> None:
    """``root/lessons/NN-x/lesson.ipynb`` for each NN, lesson 01's notebook with its set-up cell naming the repository
    given (``None``: without the cell)."""
    from gluon_course.first_cell import first_code_cell, with_first_cell

    notebook = json.loads((ROOT / "lessons" / "01-scalar-memcpy" / "lesson.ipynb").read_text(encoding="utf-8"))
    for number, repository in cells.items():
        if repository is None:
            index = first_code_cell(notebook)
            written = {**notebook, "cells": notebook["cells"][:index] + notebook["cells"][index + 1:]}
        else:
            written, _ = with_first_cell(notebook, repository, "main")
        path = root / "lessons" / f"{number}-x" / "lesson.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(written, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def test_the_launch_buttons_extension_names_each_notebook_that_would_not_install_the_repository(tmp_path):
    """With the repository, the build warns (an error under -W) for each lesson notebook whose set-up cell is missing
    or names another repository: its Colab button would open a notebook that cannot install this course."""
    ext = _launch_buttons()
    _lesson_tree(tmp_path, {"01": "my-org/gluon-course", "02": "", "03": "other/fork", "04": None})
    assert ext.notebooks_not_installing(tmp_path, "my-org/gluon-course") == [
        "lessons/02-x/lesson.ipynb's set-up cell installs from no repository, not "
        "https://github.com/my-org/gluon-course.git",
        "lessons/03-x/lesson.ipynb's set-up cell installs from https://github.com/other/fork.git, not "
        "https://github.com/my-org/gluon-course.git",
        "lessons/04-x/lesson.ipynb has no set-up cell"]


def test_the_launch_buttons_extension_writes_the_commit_into_the_notebooks_offered_for_download(tmp_path):
    """The site's download copies (``_sources/``) name the repository and the commit the site was built from."""
    from gluon_course.first_cell import first_code_cell, setting_of

    ext = _launch_buttons()
    _lesson_tree(tmp_path / "_sources", {"01": "", "02": None})
    commit = ext.built_from(ROOT)
    assert commit and len(commit) == 40
    written = ext.publish_downloads(tmp_path, "my-org/gluon-course", commit)
    assert written == [tmp_path / "_sources" / "lessons" / "01-x" / "lesson.ipynb"]
    notebook = json.loads(written[0].read_text(encoding="utf-8"))
    cell = notebook["cells"][first_code_cell(notebook)]
    assert setting_of("".join(cell["source"])) == ("https://github.com/my-org/gluon-course.git", commit)
    assert ext.publish_downloads(tmp_path, "my-org/gluon-course", commit) == []


@pytest.mark.parametrize("page", LESSON_PAGES, ids=[p.split("/")[1] for p in LESSON_PAGES])
def test_lesson_page_has_its_download_button_and_launch_buttons_only_with_a_repository(book_html, page):
    """The site built by the tests has a Colab and a Binder button on every lesson page exactly when the build was
    given the repository (GLUON_COURSE_REPOSITORY; by default it is not), and a download button always."""
    ext = _launch_buttons()
    owner_name = ext.repository(os.environ.get(ext.REPOSITORY))
    hrefs = _anchors(book_html / f"{page}.html").hrefs
    launch = [h for h in hrefs if h.startswith((ext.COLAB_URL, ext.BINDERHUB_URL))]
    if owner_name is None:
        assert not launch, f"{page}: launch buttons without a repository: {launch}"
    else:
        branch = os.environ.get(ext.BRANCH, "").strip() or "main"
        assert f"{ext.COLAB_URL}/github/{owner_name}/blob/{branch}/{page}.ipynb" in hrefs, f"{page}: no Colab button"
        assert f"{ext.BINDERHUB_URL}/v2/gh/{owner_name}/{branch}?urlpath=lab/tree/{page}.ipynb" in hrefs, \
            f"{page}: no Binder button"
    downloads = [h for h in hrefs if h.endswith(".ipynb") and "_sources" in h]
    assert downloads, f"{page}: no download button for the notebook"
    assert all(((book_html / page).parent / h).resolve().exists() for h in downloads), f"{page}: {downloads} missing"


# ---- (a'') the repository on every page, when the build is given it ---------------------------------------------
def _repository_on(html: str, owner_name: str) -> dict:
    """Where a page names the repository ``owner_name``: the theme's button at the top, the footer's link."""
    url = f"https://github.com/{owner_name}"
    return {"button": re.search(rf'<a href="{re.escape(url)}"[^>]*\n?\s*class="[^"]*btn-source-repository-button',
                                html) is not None,
            "footer": f'<p class="course-repository">The course\'s repository: <a href="{url}">' in html}


_CLONE = re.compile(r"git clone (.+?) gluon-course")


def _clone_command(setup_html: str) -> str:
    import html as entities

    found = _CLONE.search(entities.unescape(re.sub(r"<[^>]+>", "", setup_html)))
    assert found, "book/setup has no `git clone … gluon-course` command"
    return found.group(1)


def test_the_site_names_the_repository_exactly_when_the_build_is_given_it(book_html):
    """The site the tests built: without GLUON_COURSE_REPOSITORY (the default) no page has a repository button or
    footer link and the clone command keeps its placeholder; with it, every page has both and the command its
    address."""
    ext = _launch_buttons()
    owner_name = ext.repository(os.environ.get(ext.REPOSITORY))
    wrong = []
    for page in PAGES:
        html = (book_html / f"{page}.html").read_text(encoding="utf-8")
        if owner_name is None:
            if "btn-source-repository-button" in html or "course-repository" in html:
                wrong.append(f"{page}: names a repository though the build was given none")
        elif _repository_on(html, owner_name) != {"button": True, "footer": True}:
            wrong.append(f"{page}: {_repository_on(html, owner_name)}")
    assert not wrong, "\n".join(wrong)
    clone = _clone_command((book_html / "book" / "setup.html").read_text(encoding="utf-8"))
    if owner_name is None:
        assert clone == ext.CLONE_PLACEHOLDER
    else:
        assert clone == f"https://github.com/{owner_name}.git"


def _small_site(tmp_path: Path, monkeypatch, repository: str | None) -> Path:
    """book/setup.md and a home page, built by Sphinx with the site's theme, theme options and repository extension
    (book/_ext/launch_buttons.py), GLUON_COURSE_REPOSITORY set to ``repository`` or unset; returns the HTML folder.
    A few seconds, where a second build of the whole site would take minutes."""
    import io
    import shutil

    from jupyter_book.config import get_final_config
    from sphinx.application import Sphinx

    site_config, _ = get_final_config(user_yaml=ROOT / "_config.yml", cli_config={"latex_individualpages": False},
                                      sourcedir=ROOT, use_external_toc=False)
    source = tmp_path / "source"
    (source / "book").mkdir(parents=True)
    shutil.copy(ROOT / "book" / "setup.md", source / "book" / "setup.md")
    (source / "index.md").write_text("# Home\n\n```{toctree}\nbook/setup\n```\n")
    ext = _launch_buttons()
    for name in (ext.REPOSITORY, ext.BRANCH):
        monkeypatch.delenv(name, raising=False)
    if repository is not None:
        monkeypatch.setenv(ext.REPOSITORY, repository)
    monkeypatch.syspath_prepend(str(ROOT / "book" / "_ext"))
    app = Sphinx(str(source), None, str(tmp_path / "html"), str(tmp_path / "doctrees"), "html",
                 confoverrides={"extensions": ["myst_parser", "launch_buttons"], "html_theme": "sphinx_book_theme",
                                "html_theme_options": site_config["html_theme_options"],
                                "myst_enable_extensions": ["colon_fence"], "html_title": "test"},
                 status=None, warning=io.StringIO(), freshenv=True)
    app.build()
    return tmp_path / "html"


@pytest.mark.parametrize("repository", [None, "my-org/gluon-course"])
def test_the_repository_setting_puts_the_repository_on_every_page(tmp_path, monkeypatch, repository):
    """Built both ways: with the setting, each page has the repository's button and footer link and book/setup's
    clone command names it; without it, none of them, and the command keeps its placeholder (no link to follow)."""
    html = _small_site(tmp_path, monkeypatch, repository)
    for page in ("index.html", "book/setup.html"):
        text = (html / page).read_text(encoding="utf-8")
        found = _repository_on(text, repository or "my-org/gluon-course")
        assert found == ({"button": True, "footer": True} if repository else {"button": False, "footer": False}), \
            (page, found)
        assert ("github.com/my-org" in text) == bool(repository), page
        assert ("btn-source-repository-button" in text) == bool(repository), page
    clone = _clone_command((html / "book" / "setup.html").read_text(encoding="utf-8"))
    assert clone == (f"https://github.com/{repository}.git" if repository else _launch_buttons().CLONE_PLACEHOLDER)


def test_the_setup_page_keeps_the_placeholders_the_extension_fills_in():
    """book/setup.md's clone command is what launch_buttons.py replaces: a page that lost it would say nothing of the
    repository (the build warns too)."""
    ext = _launch_buttons()
    text = (ROOT / "book" / "setup.md").read_text(encoding="utf-8")
    assert f"git clone {ext.CLONE_PLACEHOLDER} gluon-course" in text
    filled = ext.fill_in(text, "my-org/gluon-course")
    assert "git clone https://github.com/my-org/gluon-course.git gluon-course" in filled
    assert not any(placeholder in filled for placeholder in ext.PLACEHOLDERS)
    assert ext.fill_in(text, None) == text


# ---- (b) the browser ----------------------------------------------------------------------------------
class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="session")
def site_url(book_html):
    """_build/html served on localhost for the session."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(book_html)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _browser_missing() -> str | None:
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package (pip install -r requirements.txt)")
    return ", ".join(missing) if missing else None


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """Headless Chromium that can reach 127.0.0.1 and nothing else."""
    missing = _browser_missing()
    if missing:
        message = (f"browser tests skipped: no {missing}; to run them: apt-get install chromium chromium-driver "
                   "(or set GLUON_COURSE_CHROMIUM / GLUON_COURSE_CHROMEDRIVER)")
        if os.environ.get("GLUON_COURSE_REQUIRE_BROWSER") == "1":
            pytest.fail(message.replace("browser tests skipped", "browser tests required (GLUON_COURSE_REQUIRE_BROWSER=1)"),
                        pytrace=False)
        pytest.skip(message)

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ.setdefault("SE_AVOID_STATS", "true")  # selenium: no usage statistics
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--disable-extensions", "--window-size=1280,1600",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
                 # Networking off: host names resolve to nothing, and every request that is not to the
                 # loopback address goes to a proxy that does not exist. Only the local server answers.
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                 "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=127.0.0.1"):
        options.add_argument(flag)
    # Every request a page makes is logged, so a test can prove none went to another host.
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    yield driver
    driver.quit()


def _open(browser, url: str) -> list[str]:
    """Load a page, wait until it is complete, and return every URL it requested."""
    browser.get_log("performance")  # drop what earlier pages logged
    browser.get(url)
    browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const check = () => document.readyState === "complete" ? done() : setTimeout(check, 50);
        check();""")
    return _requested(browser)


def _requested(browser) -> list[str]:
    """The URLs requested since the performance log was last read."""
    requested = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            requested.append(message["params"]["request"]["url"])
    return requested


def _not_local(urls: list[str]) -> list[str]:
    """The network requests among ``urls`` that are not for the local server (the browser's own chrome://,
    data: and blob: URLs never touch the network)."""
    return [u for u in urls if re.match(r"^(https?|wss?|ftp)://", u)
            and not re.match(r"^[a-z]+://(127\.0\.0\.1|localhost)[:/]", u)]


_WAIT_FOR_MATHJAX = """
const done = arguments[arguments.length - 1];
const started = Date.now();
(function wait() {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(() => done("ok"), (e) => done("MathJax failed: " + e));
  } else if (Date.now() - started > 30000) {
    done("MathJax did not start within 30 s (was its script loaded?)");
  } else { setTimeout(wait, 50); }
})();"""

_MATH_STATE = """
return Array.from(document.querySelectorAll(".math")).map((el) => {
  const out = el.querySelector("mjx-container");
  const box = out ? out.getBoundingClientRect() : null;
  return {source: el.textContent.slice(0, 80), rendered: !!out, width: box ? box.width : 0,
          error: !!el.querySelector("mjx-merror")};
});"""


def _check_math(browser, page: str) -> int:
    """Every formula on the page was typeset by MathJax. Returns how many formulas the page has."""
    formulas = browser.execute_script("return document.querySelectorAll('.math').length")
    if not formulas:
        return 0
    outcome = browser.execute_async_script(_WAIT_FOR_MATHJAX)
    assert outcome == "ok", f"{page}: {outcome}"
    state = browser.execute_script(_MATH_STATE)
    bad = [f for f in state if not f["rendered"] or f["width"] <= 0 or f["error"]]
    assert not bad, f"{page}: formulas MathJax did not render: {bad[:5]}"
    return len(state)


def _severe_console_messages(browser) -> list[str]:
    return [e["message"] for e in browser.get_log("browser")
            if e["level"] == "SEVERE" and "favicon.ico" not in e["message"]]


@pytest.mark.browser
def test_math_renders_offline(browser, site_url):
    """The displayed formula in book/measuring renders from the site's own MathJax, networking cut off."""
    requested = _open(browser, f"{site_url}/book/measuring.html")
    assert not _not_local(requested), f"requests to other hosts: {_not_local(requested)}"
    assert any("/_static/mathjax/" in u for u in requested), "MathJax was not loaded from the site"
    assert _check_math(browser, "book/measuring") >= 1, "book/measuring has no formula to render"
    containers = browser.execute_script("return document.querySelectorAll('mjx-container').length")
    assert containers >= 1


_IMAGES = """
const imgs = Array.from(document.images);
imgs.forEach((img) => { img.loading = "eager"; });
return imgs.map((img) => ({src: img.currentSrc || img.src, complete: img.complete, width: img.naturalWidth,
                           output: !!img.closest(".cell_output")}));"""

_WAIT_FOR_IMAGES = """
const done = arguments[arguments.length - 1];
Promise.all(Array.from(document.images).filter((i) => !i.complete).map((i) => new Promise((ok) => {
  i.addEventListener("load", ok); i.addEventListener("error", ok); }))).then(() => done());"""


def _images(browser) -> list[dict]:
    """Every image of the page, once each has loaded or failed (lazy images are asked for at once)."""
    images = browser.execute_script(_IMAGES)
    if any(not img["complete"] for img in images):
        browser.execute_async_script(_WAIT_FOR_IMAGES)
        images = browser.execute_script(_IMAGES)
    return images


# A table wider than the column of text it sits in: the theme scrolls it sideways, and its last columns are cut off
# at the page's edge.
_OVERFLOWING_TABLES = """
return Array.from(document.querySelectorAll("main table")).map((table) => {
  const box = table.closest(".pst-scrollable-table-container") || table.parentElement;
  const head = table.querySelector("tr");
  return {width: table.scrollWidth, room: box.clientWidth, head: head ? head.textContent.trim().slice(0, 60) : ""};
}).filter((t) => t.width > t.room + 1);"""


# What a reader cannot see. Every hint and folded output is opened first (a closed one shows nothing to measure).
# * A notebook's printed output wraps: no line of it is wider than its box (a verdict, a notice, a diff's line end).
# * Any box of text (output, code, table, formula) whose content is wider than the box: the first box around it that
#   does not let its content spill over must scroll it (overflow auto or scroll) and be one of those boxes; a box that
#   hides what does not fit (overflow hidden or clip) cuts it off; content that spills over may not pass the right
#   edge of the page's column of text (where the theme's containers, or the screen, end).
_CUT_OFF = """
document.querySelectorAll("details").forEach((d) => { d.open = true; });
document.querySelectorAll(".toggle-hidden").forEach((e) => e.classList.remove("toggle-hidden"));
const BOXES = "pre, div.highlight, .cell_input, .cell_output, div.output, table, .pst-scrollable-table-container, " +
              ".math, mjx-container";
const name = (el) => el.tagName.toLowerCase() + (typeof el.className === "string" && el.className.trim() ?
                     "." + el.className.trim().split(/\\s+/).join(".") : "");
const text = (el) => el.textContent.trim().replace(/\\s+/g, " ").slice(0, 70);
const shown = (el) => el.getClientRects().length > 0;
const main = document.querySelector("main") || document.body;
const column = (document.querySelector("article.bd-article") || main).getBoundingClientRect();
const problems = [];
for (const pre of main.querySelectorAll(".cell_output pre, div.output pre")) {
  if (shown(pre) && pre.scrollWidth > pre.clientWidth + 1)
    problems.push(`printed output does not wrap: a line is ${pre.scrollWidth} px wide in a ${pre.clientWidth} px box ` +
                  `(${name(pre)}: "${text(pre)}")`);
}
for (const box of main.querySelectorAll(BOXES)) {
  if (!shown(box) || box.scrollWidth <= box.clientWidth + 1) continue;
  let holder = box;
  while (holder && holder !== document.documentElement && getComputedStyle(holder).overflowX === "visible")
    holder = holder.parentElement;
  const how = holder && holder !== document.documentElement ? getComputedStyle(holder).overflowX : "the page";
  if ((how === "auto" || how === "scroll") && holder.matches(BOXES)) continue;
  let what = `cut off by ${name(holder)} (overflow ${how})`;
  if (how !== "hidden" && how !== "clip") {
    const right = box.getBoundingClientRect().left + box.scrollWidth;
    if (right <= Math.min(column.right, document.documentElement.clientWidth) + 1) continue;
    what = `running ${Math.round(right - column.right)} px past the column of text`;
  }
  problems.push(`${box.scrollWidth} px of content in a ${box.clientWidth} px ${name(box)}, ${what}: "${text(box)}"`);
}
// The page itself must not scroll sideways (a long path in inline code, a wide picture): name what widens it, the
// innermost element past the window's edge that no box scrolling or clipping sideways holds.
const page = document.documentElement;
if (page.scrollWidth > page.clientWidth + 1) {
  // (the text's column only: the sidebars are drawers on a phone, parked past the edge where they widen nothing)
  const article = document.querySelector("article.bd-article") || main;
  const held = (el) => { for (let a = el.parentElement; a && a !== article; a = a.parentElement)
                           if (getComputedStyle(a).overflowX !== "visible") return true;
                         return false; };
  const past = Array.from(article.querySelectorAll("*")).filter((el) => shown(el) && !held(el) &&
                 el.getBoundingClientRect().right > page.clientWidth + 1);
  // or, where no element runs past the edge, the innermost one whose own text does (a word too long for its line)
  const spilling = Array.from(article.querySelectorAll("*")).filter((el) => shown(el) && !held(el) &&
                     el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1 &&
                     getComputedStyle(el).overflowX === "visible" && !el.querySelector(BOXES));
  const culprit = past.length ? past[past.length - 1] : spilling.length ? spilling[spilling.length - 1] : null;
  problems.push(`the page scrolls sideways: ${page.scrollWidth} px of page in a ${page.clientWidth} px window` +
                (culprit ? `, widened by ${name(culprit)}: "${text(culprit)}"` : ""));
}
return problems;"""

# Every picture in the page's text: its file, its drawn and shown widths, and the link around it.
_PICTURES = """
return Array.from((document.querySelector("main") || document.body).querySelectorAll("img"))
  .filter((img) => img.getClientRects().length > 0 && img.naturalWidth > 0)
  .map((img) => { const a = img.closest("a[href]");
                  return {src: img.currentSrc || img.src, natural: img.naturalWidth,
                          shown: img.getBoundingClientRect().width, link: a ? a.href : null}; });"""

READABLE_PX = 7.0       # text less than 7 CSS pixels high is not read, only guessed at
SMALLEST_TEXT_PT = 7.0  # the smallest text a chart of the course is assumed to draw (matplotlib points, 1/72 inch)
# The pictures drawn for the website's pages (book/images, by `python -m gluon_course tables`): drawn for the column of
# text at 1280 px, they must be readable there without a click.
DRAWN_FOR_THE_SITE = {path.name for path in (ROOT / "book" / "images").glob("*.png")}


@functools.lru_cache(maxsize=None)
def _dpi(path: Path) -> float:
    """The pixels per inch a PNG says it was drawn at (matplotlib writes it; 100, matplotlib's default, if absent)."""
    from PIL import Image

    with Image.open(path) as image:
        return float((image.info.get("dpi") or (100.0, 100.0))[0])


def _picture_problems(browser, book_html: Path, page: str, width: int) -> list[str]:
    """Figures whose smallest text would show below READABLE_PX: each must be a link to its own file (a click opens
    it at full size), and a picture drawn for the site must be readable at 1280 px without one."""
    from urllib.parse import unquote, urlsplit

    problems = []
    for picture in browser.execute_script(_PICTURES):
        path = book_html / unquote(urlsplit(picture["src"]).path).lstrip("/")
        if not path.is_file():
            continue                                  # a picture that did not load: reported by the page's own test
        smallest = SMALLEST_TEXT_PT / 72 * _dpi(path) * picture["shown"] / picture["natural"]
        if smallest >= READABLE_PX:
            continue
        where = (f"{page} at {width} px: {path.name} ({picture['natural']} px drawn, shown {picture['shown']:.0f} px: "
                 f"{SMALLEST_TEXT_PT:g} pt text at {smallest:.1f} px)")
        if picture["link"] != picture["src"]:
            problems.append(f"{where} is not a link to its own file, so it cannot be opened at full size "
                            f"(link: {picture['link']})")
        elif width == 1280 and path.name in DRAWN_FOR_THE_SITE:
            problems.append(f"{where}: drawn for the website (book/images), it must be readable without a click")
    return problems


def _layout_problems(browser, book_html: Path, page: str, width: int) -> list[str]:
    return ([f"{page} at {width} px: {p}" for p in browser.execute_script(_CUT_OFF)]
            + _picture_problems(browser, book_html, page, width))


PHONE = 390     # CSS pixels: the width of a phone held upright


@pytest.mark.browser
def test_every_page_loads_offline(browser, site_url, book_html):
    """Every page of the table of contents: loads from the site alone, with no console error, its images present, its
    formulas typeset and every table within the width of the text at 1280 px; and at 1280 px and at a phone's width,
    390 px, nothing cut off in its output, code and table boxes (printed output wraps, a wide table or line of code
    scrolls inside its box), and no figure too small to read that does not open at full size when clicked. A lesson's
    page, in the same visit: its notebook's heading, plots and committed results (``_lesson_page_problems``)."""
    problems = []
    assert browser.execute_script("return window.innerWidth") == 1280, "the browser window is not 1280 px wide"
    width = 1280
    try:
        for page in PAGES:
            requested = _open(browser, f"{site_url}/{page}.html")
            if _not_local(requested):
                problems.append(f"{page}: requests to other hosts {_not_local(requested)}")
            if not browser.execute_script("return document.querySelector('main h1, article h1') !== null"):
                problems.append(f"{page}: no heading (did the page load? title {browser.title!r})")
            images = _images(browser)
            problems += [f"{page}: image did not load: {img['src'][-80:]}" for img in images if img["width"] <= 0]
            source = ROOT / f"{page}.md"
            pictures = len(re.findall(r"!\[[^\]]*\]\(", source.read_text(encoding="utf-8"))) if source.exists() else 0
            if sum(img["width"] > 0 for img in images) < pictures:
                problems.append(f"{page}: its source has {pictures} pictures, the page shows "
                                f"{sum(img['width'] > 0 for img in images)}")
            problems += [f"{page}: console: {m}" for m in _severe_console_messages(browser)]
            _check_math(browser, page)
            if page in LESSON_PAGES:
                problems += _lesson_page_problems(browser, page)
            for shot in _screenshot_widths(page):
                _screenshot(browser, page, shot)
            # The page at the width it was loaded at, then narrowed or widened to the other one: a window that
            # changes width lays the page out again, as a phone's browser does (the next page loads at that width).
            for width in (width, PHONE if width == 1280 else 1280):
                _resize(browser, width)
                if width == 1280:
                    problems += [f"{page}: a table is {t['width']} px wide in {t['room']} px ({t['head']!r})"
                                 for t in browser.execute_script(_OVERFLOWING_TABLES)]
                problems += _layout_problems(browser, book_html, page, width)
    finally:
        _resize(browser, 1280)
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_a_figure_opens_at_full_size_when_clicked(browser, site_url):
    """The results page's first chart: a click on it shows the PNG alone, at the size it was drawn."""
    _open(browser, f"{site_url}/book/results.html")
    picture = browser.execute_script(_PICTURES)[0]
    browser.execute_script("document.querySelector('main img').closest('a').click();")
    browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const check = () => document.readyState === "complete" && document.contentType.startsWith("image/")
                            ? done() : setTimeout(check, 50);
        check();""")
    opened = browser.execute_script("return {url: location.href, type: document.contentType, "
                                    "width: document.images.length ? document.images[0].naturalWidth : 0};")
    assert opened == {"url": picture["src"], "type": "image/png", "width": picture["natural"]}, opened


# Whole-page screenshots of the pages worth looking at when the site changes, at 1280 px (every lesson page is also
# shot, its first screen at 1280 px, by its own test). A whole page is slow to shoot (a lesson is 16 000 px high):
# only when GLUON_COURSE_SCREENSHOTS names a folder for them are three lesson pages added, and every page shot at
# 390 px too.
SCREENSHOT_PAGES = ("book/intro", "book/results", "book/support")
ASKED_FOR_SCREENSHOTS = SCREENSHOT_PAGES + ("lessons/01-scalar-memcpy/lesson", "lessons/19-gemm-v9-epilogue/lesson",
                                            "lessons/32-model-shapes/lesson")


def _screenshot_widths(page: str) -> tuple[int, ...]:
    if os.environ.get("GLUON_COURSE_SCREENSHOTS"):
        return (1280, PHONE) if page in ASKED_FOR_SCREENSHOTS else ()
    return (1280,) if page in SCREENSHOT_PAGES else ()


_NO_TRANSITIONS = """
if (!document.getElementById("test-no-transitions")) {
  const style = document.createElement("style");
  style.id = "test-no-transitions";
  style.textContent = "*, *::before, *::after { transition: none !important; animation: none !important; }";
  document.head.appendChild(style);
}"""


def _resize(browser, width: int, height: int = 1600) -> None:
    """The window at ``width`` × ``height``, once the page inside has been laid out at that width. The theme animates
    its sidebars in and out when the width crosses its breakpoints: animations are switched off first, so that what is
    measured or shot is the page as it settles, not a frame of the slide."""
    browser.execute_script(_NO_TRANSITIONS)
    browser.set_window_size(width, height)
    browser.execute_async_script("""
        const [width, done] = [arguments[0], arguments[arguments.length - 1]];
        const started = Date.now();
        (function wait() {
          if (window.innerWidth === width || Date.now() - started > 10000) done();
          else setTimeout(wait, 20);
        })();""", width)
    assert browser.execute_script("return window.innerWidth") == width, f"the window did not become {width} px wide"


def _screenshot(browser, page: str, width: int) -> None:
    """The whole page (up to 16 000 px high) at ``width``, as <page>-<width>.png; the window back as it was."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    was = browser.execute_script("return window.innerWidth")
    _resize(browser, width)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    _resize(browser, width, min(height, 16000))
    try:
        browser.save_screenshot(str(SCREENSHOTS / f"{page.replace('/', '-')}-{width}.png"))
    finally:
        _resize(browser, was)


# The search page fills its list of results from the site's own index (searchindex.js), in the browser.
_SEARCH_RESULTS = """
const done = arguments[arguments.length - 1];
const started = Date.now();
(function wait() {
  const items = Array.from(document.querySelectorAll("#search-results li a"));
  const finished = document.querySelector("#search-results p.search-summary, #search-results .search-summary");
  if (items.length && finished) { done(items.map((a) => a.getAttribute("href"))); }
  else if (Date.now() - started > 30000) { done(items.map((a) => a.getAttribute("href"))); }
  else { setTimeout(wait, 100); }
})();"""


@pytest.mark.browser
@pytest.mark.parametrize("term, lesson", [("warpgroup", "lessons/15-gemm-v5-wgmma/lesson"),
                                          ("mbarrier", "lessons/14-gemm-v4-tma/lesson"),
                                          ("AGPR", "lessons/20-amd-gemm-v0-mfma/lesson")])
def test_search_finds_a_term_of_a_gemm_lesson(browser, site_url, term, lesson):
    requested = _open(browser, f"{site_url}/search.html?q={term}")
    hits = browser.execute_async_script(_SEARCH_RESULTS)
    requested += _requested(browser)
    assert any("searchindex.js" in u for u in requested), "the search page did not load the site's searchindex.js"
    assert not _not_local(requested), f"search: requests to other hosts: {_not_local(requested)}"
    assert any(h and h.split("?")[0].split("#")[0].endswith(f"{lesson}.html") for h in hits), (
        f"searching {term!r} does not list {lesson}: {hits[:10]}")
    console = _severe_console_messages(browser)
    assert not console, f"search page: errors in the browser console: {console}"


def _lesson_page_problems(browser, page: str) -> list[str]:
    """What is wrong with a lesson's page, loaded in ``browser``: the notebook's first heading as its <h1> and in its
    <title>, every PNG the notebook holds shown, at least one block of committed results, no console error; and a
    screenshot of it at the window's width in the screenshot folder."""
    notebook = _notebook(page)
    problems = []
    heading = browser.execute_script("""
        const h1 = document.querySelector("main h1, article h1");
        if (!h1) return null;
        const copy = h1.cloneNode(true);
        copy.querySelectorAll(".headerlink").forEach((a) => a.remove());
        return copy.textContent.trim();""")
    expected = _first_heading(notebook)
    if not expected:
        problems.append(f"{page}.ipynb has no '# ' heading in a markdown cell")
    elif not heading:
        problems.append(f"{page}: the page has no <h1> (title {browser.title!r})")
    else:
        if _words(heading) != _words(expected):
            problems.append(f"{page}: heading {heading!r}, notebook says {expected!r}")
        if _words(heading) not in _words(browser.title):
            problems.append(f"{page}: <title> {browser.title!r} lacks {heading!r}")

    # The plots are PNGs committed inside the notebook: at least one shown where it has any.
    if _png_outputs(notebook) and sum(img["output"] for img in _images(browser)) < 1:
        problems.append(f"{page}: the notebook has {_png_outputs(notebook)} PNG outputs but the page shows none")

    # At least one block of results (printed text or a table) from the committed outputs.
    results = browser.execute_script("""
        return Array.from(document.querySelectorAll(".cell_output pre, .cell_output table"))
                    .filter((el) => el.textContent.trim().length > 0).length;""")
    if results < 1:
        problems.append(f"{page}: no output block (pre or table) with results; were the notebook's outputs "
                        "committed? (`python -m gluon_course record` on a GPU writes them)")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / f"{page.split('/')[1]}.png"))
    return problems
