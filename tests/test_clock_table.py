"""Lesson 33's table of its clocks figure (gluon_course.nvidia.clocks.clock_table): each version over v9 and over
cuBLAS from the one run that timed them all, the line that says a recorded figure is recorded, and the sentence where
nothing is recorded. On the CPU, from a figure built here and from the recording."""
import re

import pytest

from gluon_course.grading.notebook import Shown
from gluon_course.nvidia.clocks import clock_table

LABEL = "  [recorded: NVIDIA H200, 2026-12-03, the solution]"


def _shown(versions, recorded=LABEL):
    return Shown("clocks_8192", 1.0, "", "✓ in range", {"rounds": 3, "versions": versions}, recorded)


def _version(tflops, mhz):
    return {"ms": 1.0, "tflops": tflops, "sm_mhz": mhz, "watts": 660.0, "samples": 12}


def test_each_version_over_v9_and_over_the_library_from_the_same_run(capsys):
    versions = {"v9": _version(700.0, 1500.0), "step": _version(630.0, 1800.0), "cuBLAS": _version(720.0, 1440.0)}
    quotients = clock_table(_shown(versions))
    assert quotients["step"] == pytest.approx((0.9, 0.875))
    assert quotients["v9"] == pytest.approx((1.0, 700 / 720))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(LABEL) and "3 interleaved rounds" in lines[0]
    step = next(line for line in lines if line.startswith("step"))
    assert "630 TFLOPS = 0.900× v9, 0.875× cuBLAS" in step and "1800 MHz, 350 TFLOPS per GHz" in step


def test_a_live_figure_has_no_label_and_nothing_recorded_is_said(capsys):
    clock_table(_shown({"v9": _version(700.0, 1500.0), "cuBLAS": _version(700.0, 1500.0)}, recorded=""))
    assert "[recorded" not in capsys.readouterr().out
    assert clock_table(Shown("clocks_8192", float("nan"), "not recorded yet", "not recorded", {})) is None
    assert "not recorded yet" in capsys.readouterr().out


def test_a_figure_without_its_references_is_refused():
    with pytest.raises(ValueError, match="no v9"):
        clock_table(_shown({"step": _version(630.0, 1800.0), "cuBLAS": _version(720.0, 1440.0)}))


def test_the_recorded_table_of_lesson_33(capsys):
    """The recording's own figure: every version it timed, each line's numbers in the units nbval masks."""
    from gluon_course.grading.notebook import Lab

    shown = Lab("33", show_header=False).figure("clocks_8192", quiet=True)
    if shown.value != shown.value:
        pytest.skip("lesson 33's clocks figure is not recorded here")
    quotients = clock_table(shown)
    assert quotients["v9"][0] == pytest.approx(1.0) and quotients["cuBLAS"][1] == pytest.approx(1.0)
    rows = capsys.readouterr().out.splitlines()[1:]
    assert len(rows) == len(shown.details["versions"])
    for row in rows:
        assert re.search(r" \d+ TFLOPS = \d\.\d{3}× v9, \d\.\d{3}× cuBLAS; at \d+ MHz, \d+ TFLOPS per GHz$", row), row
