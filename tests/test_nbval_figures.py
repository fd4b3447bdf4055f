"""The README's test command must pass on a GPU machine: nbval compares a notebook re-executed live with the outputs of
the recording, so every measured number has to be masked (tests/nbval_sanitize.cfg) while every verdict and every
deterministic count still compares exactly. Shown here on the CPU by replaying a GEMM notebook's figure cells
against recorded figures that are 20% higher or lower (nbval must pass, as for a live run on another day) and
against one figure outside its range (nbval must fail: a verdict changed). The three replays run in one nbval run,
each notebook pointing the toolkit at its own results/ from a first cell."""
import json
import os
import re
import shutil
import subprocess
import sys

import nbformat
import pytest

from gluon_course.course import lesson, repo_root
from gluon_course.first_cell import setting_of
from gluon_course.grading import records

LESSON = "14"                    # a recorded GEMM notebook
FIGURE_CELLS = ("lab.figures()", "lab.versions_chart(", "Lab(\"")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _figure_notebook(path, results) -> None:
    """The lesson's notebook, cut to its set-up cell and the cells that show figures (with their committed outputs),
    after a first cell (with no output) that points the toolkit at ``results`` (GLUON_COURSE_RESULTS_DIR)."""
    nb = nbformat.read(lesson(LESSON).notebook_path, as_version=4)
    # the lesson's code cells, without the first-cell installer (gluon_course.first_cell: nothing to do in the repository)
    code = [c for c in nb.cells if c.cell_type == "code" and setting_of(c.source) is None]
    keep = [code[0]] + [c for c in code[1:] if any(m in c.source for m in FIGURE_CELLS[:2])]
    assert len(keep) >= 2, "the notebook has no figure cells to replay"
    first = nbformat.v4.new_code_cell(f"import os\nos.environ['GLUON_COURSE_RESULTS_DIR'] = {str(results)!r}")
    nb.cells = [first] + keep
    nbformat.write(nb, path)


def _scaled_text(text: str, factor: float) -> str:
    """Every number in a figure's text scaled, as a live run on another day would print other numbers."""
    def scale(m):
        value = float(m.group(0)) * factor
        return f"{value:.{len(m.group(0).split('.')[1])}f}" if "." in m.group(0) else f"{value:.0f}"
    return re.sub(r"(?<![\w.])\d+(?:\.\d+)?", scale, text)


def _results(tmp_path, factor: float, flip: str | None = None):
    """A copy of results/ whose figures of lessons 10-14 are ``factor`` times the recorded ones; ``flip``: one figure
    put far below its range."""
    folder = tmp_path / "results"
    shutil.copytree(records.results_dir(), folder)
    path = folder / f"{records.DEFAULT_RECORDING}.json"
    data = json.loads(path.read_text())
    for key, entry in data["figures"].items():
        if entry.get("kind") != "figure" or not "10" <= key.split("/")[0] <= LESSON:
            continue
        entry["value"] *= 0.1 if key == flip else factor
        entry["text"] = _scaled_text(entry["text"], factor)
        scale = 0.1 if key == flip else factor
        details = entry.get("details", {})
        entry["details"] = {k: (v * factor if isinstance(v, float) and "tflops" in k else
                                [r * scale for r in v] if k == "ratios" else v)
                            for k, v in details.items()}
    path.write_text(json.dumps(data))
    return folder


CASES = {"figures_0.8": (0.8, None), "figures_1.2": (1.2, None), "flipped": (1.0, f"{LESSON}/bf16_8192")}


@pytest.fixture(scope="module")
def replays(tmp_path_factory):
    """Each case's copy of the figure notebook, its first cell pointing the toolkit at its own results/ (scaled, or
    with a flipped verdict), all replayed by one nbval run: {case: (passed, what nbval said about it)}."""
    if not records.load()["figures"].get(f"{LESSON}/bf16_8192"):
        pytest.skip(f"lesson {LESSON} is not recorded")
    folder = tmp_path_factory.mktemp("replay")
    for case, (factor, flip) in CASES.items():
        results = _results(tmp_path_factory.mktemp(case), factor, flip)
        _figure_notebook(folder / f"{case}.ipynb", results)
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "--nbval-sanitize-with",
                          str(repo_root() / "tests" / "nbval_sanitize.cfg"), *(f"{case}.ipynb" for case in CASES),
                          "-q", "-rA", "-p", "no:cacheprovider", "--rootdir", str(folder)], cwd=folder,
                         capture_output=True, text=True, timeout=600, env={**os.environ, "PATH": "/usr/bin:/bin"})
    out = ANSI.sub("", run.stdout)
    said = {}
    for case in CASES:
        verdicts = re.findall(rf"^(PASSED|FAILED|ERROR) {re.escape(case)}\.ipynb::", out, re.M)
        assert verdicts, f"nbval reported nothing on {case}.ipynb:\n{out[-3000:]}{run.stderr[-2000:]}"
        details = "".join(re.findall(rf"^_+ {re.escape(case)}\.ipynb::Cell \d+ _+\n(.*?)(?=^_{{3,}} |^={{3,}})", out,
                                     re.M | re.S))
        said[case] = (set(verdicts) == {"PASSED"}, details or out[-3000:])
    return said


@pytest.mark.parametrize("factor", [0.8, 1.2])
def test_figures_20_percent_off_still_pass_nbval(replays, factor):
    passed, said = replays[f"figures_{factor}"]
    assert passed, said[-3000:]


def test_a_flipped_verdict_fails_nbval(replays):
    passed, said = replays["flipped"]
    assert not passed, "nbval passed although a figure's verdict changed from ✓ in range to ✗ below"
    assert "✗_below" in said or "✗ below" in said, said[-3000:]


def _sanitized(text: str) -> str:
    """``text`` after tests/nbval_sanitize.cfg's substitutions, in the file's order (as nbval applies them)."""
    import configparser

    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(repo_root() / "tests" / "nbval_sanitize.cfg", encoding="utf-8")
    for section in cfg.sections():
        text = re.sub(cfg[section]["regex"], cfg[section]["replace"], text)
    return text


def test_measured_outcomes_are_masked_and_verdicts_are_not():
    # Two live runs of lesson 32 named different decode shapes as the lowest (1 and 16 rows of 4096 × 4096 stream
    # the same W): the same words after sanitizing; a changed verdict still differs.
    run1 = ("decode (M ≤ 16), lowest share of roofline lowest 56% of the copy's 4.24 TB/s (16x4096x4096: 14.2 µs; "
            "F.linear 56%) = 0.56 of the copy's bandwidth (lowest); expected 0.40–1.10 ✓ in range")
    run2 = run1.replace("56% of", "58% of").replace("16x4096x4096: 14.2", "1x4096x4096: 13.7")
    assert _sanitized(run1) == _sanitized(run2)
    assert _sanitized(run1) != _sanitized(run1.replace("✓ in range", "✗ below range"))
    worst1 = "geomean 0.98× F.linear over 31 shapes, worst 0.85× (512x6144x4096)"
    assert _sanitized(worst1) == _sanitized(worst1.replace("0.85× (512x6144x4096)", "0.86× (128x4096x4096)"))
