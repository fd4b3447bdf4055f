"""Shared pytest configuration. Keep this file small: each section says who owns it."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


# ==== One compute thread per process in a parallel run (`make test`) ===============================
# make test runs a worker per core and one more (Makefile, TEST_JOBS), and each worker starts notebook kernels and
# child processes of its own: on 2 cores, four to six processes compute at once. Left alone, numpy's OpenBLAS and
# torch's OpenMP each start a thread per core in every one of them, and those threads spin while they wait for each
# other on cores the other processes hold: a process spent about half as much CPU time again for the same work
# (lesson 32's notebook beside a busy process, 2 cores: 12 s of CPU with one thread each, 18 to 22 s without). So in
# a run on several workers every process computes on one thread: the variables are set here, in the process that
# starts the workers, before it starts them, and the workers, their notebook kernels and their children inherit them
# (a variable already set is left as it is). A run in one process (-n 0, as on a GPU machine) keeps the defaults.
def pytest_configure(config):
    if getattr(config.option, "numprocesses", None) and not os.environ.get("PYTEST_XDIST_WORKER"):
        for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(variable, "1")


# ==== Parallel runs: `make test` (pytest-xdist, -n 2 --dist loadscope) ================================
# Tests go to whichever worker is free, one at a time, except what must stay together on one worker, in order: a
# notebook's cells (they share one kernel), and the modules whose fixtures are built once per module or session
# (test_book's website build writes _build/html, which two workers must not build at once).
TOGETHER = ("test_book.py", "test_nbval_figures.py", "test_pictures.py", "test_strides_coalescing.py")


@pytest.hookimpl(optionalhook=True)      # a hook of pytest-xdist: without it installed, pytest never calls this
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class OneByOneButNotebooks(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path.endswith(".ipynb") or path.rsplit("/", 1)[-1] in TOGETHER else nodeid

    return OneByOneButNotebooks(config, log)


# ==== The `unrecorded` marker =========================================================================
# An NVIDIA lesson with no figure in the course's recording (results/nvidia-h200.json) has not run on the course's GPU
# yet: its notebook holds outputs of another GPU's run (results/nvidia-h100-80gb-hbm3.json stands in for it,
# records.STAND_INS) or of a CPU. Its notebook's cells and its plants are marked `unrecorded` and run by
# `make test-unrecorded`, not by `make test`, whose time (and CI's) they would push further past its limit (lessons
# 35, 37 and 38 together add about 85 s within a full run on the 2-core reference machine, 2026-12-05). The lesson's
# other tests (its solution's checks, its starter, its text) stay in `make test`; the marker leaves a lesson by itself
# once its H200 recording lands.
def _unrecorded_lessons() -> set[str]:
    import json

    recorded = {key.split("/")[0] for key in
                json.loads((ROOT / "results" / "nvidia-h200.json").read_text(encoding="utf-8"))["figures"]}
    # The AMD lessons (20-29) have no GPU to record on here: their notebooks show the vendor's figures and stay in make
    # test.
    return {path.parent.name[:2] for path in (ROOT / "lessons").glob("*/lesson.ipynb")
            if "-amd-" not in path.parent.name} - recorded


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    unrecorded = _unrecorded_lessons()
    for item in items:
        node = item.nodeid
        notebook = node.startswith("lessons/") and node[len("lessons/"):len("lessons/") + 2] in unrecorded
        planted = "test_plant_is_rejected[" in node
        plant = planted and node.split("[", 1)[1][:2] in unrecorded
        if notebook or plant:
            item.add_marker(pytest.mark.unrecorded)
        if planted:
            item.add_marker(pytest.mark.plant)
    _skip_gpu_tests(items)


# ==== The `gpu` marker ==============================================================================
# A test marked @pytest.mark.gpu is skipped on a machine where torch sees no GPU (torch is imported only
# when such a test was collected).
def _skip_gpu_tests(items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a GPU; torch sees none here")
    for item in gpu_items:
        item.add_marker(skip)


# ==== Book fixtures (the website: tests/test_book.py) ================================================
BOOK_HTML = ROOT / "_build" / "html"


def _jupyter_book() -> list[str]:
    """The jupyter-book command of the Python running the tests (the course's .venv under `make test`)."""
    script = Path(sys.executable).parent / "jupyter-book"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())"]


@pytest.fixture(scope="session")
def book_build():
    """Build the website once per test session, exactly as `make book` does: every page re-read, warnings
    are errors. Returns (exit status, seconds, combined output); the site is in _build/html."""
    command = [*_jupyter_book(), "build", ".", "-W", "-n", "--keep-going", "--all"]
    started = time.monotonic()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    return run.returncode, time.monotonic() - started, run.stdout + run.stderr


@pytest.fixture(scope="session")
def book_html(book_build) -> Path:
    """_build/html of a successful build (a failed build fails every test that needs the site)."""
    status, _, output = book_build
    if status != 0:
        pytest.fail("the website did not build (see test_book_builds_without_warnings)", pytrace=False)
    return BOOK_HTML
