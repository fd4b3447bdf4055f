"""A learner's mistake is one or two lines naming the lesson, the gap, the target and the compiler's first error,
with a hint where the cause is known: never a traceback (and never nanobind's leak report)."""
import re
import subprocess
import sys

import pytest

from gluon_course import lesson
from gluon_course.course import repo_root
from gluon_course.grading.starters import BEGIN, END


def _learner_copy(number: str) -> str:
    """The solution as a learner who filled every gap would have it: TODO comments kept, markers gone."""
    lines, gap = [], 0
    for line in lesson(number).solution_path.read_text().splitlines():
        m = BEGIN.match(line)
        if m:
            gap += 1
            lines.append(f"{m.group('indent')}# TODO gap {gap}: {m.group('what')}")
        elif not END.match(line):
            lines.append(line)
    return "\n".join(lines) + "\n"


def _check(tmp_path, number, old, new):
    text = _learner_copy(number)
    assert text.count(old) == 1, old
    path = tmp_path / "starter.py"
    path.write_text(text.replace(old, new))
    run = subprocess.run([sys.executable, "-m", "gluon_course", "check", number, "--file", str(path)],
                         cwd=repo_root(), capture_output=True, text=True, timeout=600)
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    for noise in ("Traceback", "leaked", "PassManager", "mlir_reproducer", "module attributes"):
        assert noise not in output, f"{noise!r} in the output:\n{output}"
    return run.stdout


MISTAKES = [
    # (what a learner writes, old text, new text, words the message must hold)
    ("gl.arange without layout=", "gl.arange(0, XBLOCK, layout=layout)", "gl.arange(0, XBLOCK)",
     ["lesson 02", "gap 2 (tile_copy_kernel)", "sm_90", "Failed to infer return type",
      "hint: Gluon needs an explicit layout"]),
    ("threads_per_warp hard-coded to 32, compiled for gfx950", "threads_per_warp=[warp_size]",
     "threads_per_warp=[32]",
     ["lesson 02", "gap 2 (tile_copy_kernel)", "gfx950", "64 threads per warp", "hint: the layout hard-codes a warp size"]),
    ("order=[1] in a 1D layout", "order=[0])\n    ### END", "order=[1])\n    ### END",
     ["lesson 02", "order must be a permutation", "hint: order lists every axis once"]),
]


@pytest.mark.parametrize("what, old, new, words", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_compile_mistakes_give_a_short_message(tmp_path, what, old, new, words):
    if "END" in old:        # the marker is not in the learner's copy: match the line before it instead
        old, new = old.split("\n")[0], new.split("\n")[0]
    out = _check(tmp_path, "02", old, new)
    failing = [line for line in out.splitlines() if line.lstrip().startswith("✗")]
    assert failing, out
    block = "\n".join(out.splitlines())
    for word in words:
        assert word in block, f"{what}: {word!r} missing from:\n{out}"
    first_failure = out[out.index(failing[0]):].split("\n  ✓")[0].split("\n  ✗")[0]
    assert len(first_failure.splitlines()) <= 2, f"{what}: the message is longer than two lines:\n{first_failure}"


def test_a_syntax_error_in_the_starter_is_one_line(tmp_path):
    out = _check(tmp_path, "02", "mask = offsets < numel", "mask = offsets < numel)")
    assert re.search(r"starter\.py line \d+: unmatched '\)'", out), out
    assert "0 passed, 1 failed" in out
