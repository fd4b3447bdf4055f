"""Lesson 30's translations and the toolkit that makes and reads them (gluon_course.grading.translate): the committed files are
what Triton's translator writes now, the lesson's plain-Triton GEMM is the course's, one_step.py is the translation
plus one change, and the counting and the decision table do what they say."""
import ast
import difflib
import inspect
import math
import textwrap
from types import SimpleNamespace

from gluon_course.course import lesson, load_solution, repo_root
from gluon_course.measure import plain_triton
from gluon_course.grading.translate import (HEADER, as_if_on, code_lines, decision_table, stale_translations,
                                    translation_path, verdict)


def test_the_committed_translations_are_what_the_translator_writes_now():
    stale = stale_translations("30")
    assert not stale, (f"{stale} differ from what Triton's translator writes for the solution's kernels now: run "
                       "`python -m gluon_course translate 30` and look at the difference before committing it")


def test_the_translations_name_nothing_of_this_machine():
    for target in ("sm_90", "gfx950"):
        text = translation_path("30", "tl_matmul_kernel", target).read_text()
        assert str(repo_root()) not in text and "gluon_course_solution" not in text


def _body(fn) -> str:
    tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(fn, "fn", fn))))
    node = tree.body[0]
    return ast.dump(ast.Module(body=node.body, type_ignores=[])) + ast.dump(node.args)


def test_the_lessons_gemm_is_the_course_plain_triton_kernel_without_autotune():
    mine = load_solution("30").tl_matmul_kernel
    assert _body(mine) == _body(plain_triton.tl_matmul_kernel.fn), (
        "solutions/30-*/solution.py's tl_matmul_kernel must have the body of measure.plain_triton.tl_matmul_kernel")


def test_one_step_is_the_translation_plus_one_change():
    translated = translation_path("30", "tl_matmul_kernel", "sm_90")
    one_step = lesson("30").author_dir / "one_step.py"
    header_lines = HEADER.count("\n")
    before = translated.read_text().splitlines()[header_lines:]
    after = [line for line in one_step.read_text().splitlines() if not line.lstrip().startswith("#")]
    removed = [line[1:].strip() for line in difflib.ndiff(before, after) if line.startswith("- ")]
    added = [line[1:].strip() for line in difflib.ndiff(before, after) if line.startswith("+ ")]
    assert removed == ["acc = zeros([BLOCK_M, BLOCK_N], dtype=gl.float32)"], removed
    assert added == ["acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], "
                     "warps_per_cta=[gl.num_warps(), 1], instr_shape=[16, BLOCK_N, 16])",
                     "acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)",
                     "acc = helpers.reset_to_default_layout(acc)"], added


def _sample(x):
    """A docstring is not code."""
    # nor is a comment
    y = x + 1

    return (y,
            x)


def test_code_lines_count_code_only():
    assert code_lines(_sample) == 4          # def, y = ..., and the two lines of the return


def test_as_if_on_makes_the_driver_report_the_target_and_restores_it():
    from triton.language.target_info import current_target
    from triton.runtime import driver

    saved = driver._active
    with as_if_on("gfx950"):
        assert (current_target().backend, current_target().arch, current_target().warp_size) == ("hip", "gfx950", 64)
    assert driver._active is saved


def test_the_decision_table_follows_the_figures():
    nan = math.nan
    assert verdict(nan, 1.0, 0.1) == "not recorded yet"
    assert verdict(0.80, 1.00, 0.05).startswith("Gluon pays: 1.25×")
    assert verdict(0.95, 0.96, 0.9).startswith("plain Triton is enough")
    assert verdict(0.95, 0.80, 0.9).startswith("plain Triton is enough")     # 0.84×: inside the band
    assert verdict(0.95, 0.75, 0.9).startswith("plain Triton wins")
    # A gain timed in pairs decides over the quotient of the two figures, and only if every pair clears the line.
    assert verdict(0.95, 1.06, 0.07).startswith("plain Triton is enough: Gluon 1.12×")
    assert verdict(0.80, 1.00, 0.07).startswith("Gluon pays: 1.25×")
    assert verdict(0.95, 1.06, 0.07, 1.22, [1.19, 1.22, 1.30]).startswith(
        "plain Triton is enough: Gluon 1.22× in pairs (1.19–1.30×)")
    assert verdict(0.95, 1.06, 0.07, 1.25, [1.21, 1.25, 1.30]).startswith("Gluon pays: 1.25× plain Triton in pairs")
    assert verdict(0.95, 0.80, 0.9, 0.80, [0.78, 0.80, 0.83]).startswith("plain Triton wins")
    assert verdict(0.95, 0.80, 0.9, 0.80, [0.78, 0.80, 0.84]).startswith("plain Triton is enough")
    assert verdict(0.95, 1.06, 0.07, nan, []) == "not recorded yet"
    figures = {k: SimpleNamespace(value=v) for k, v in (("p", 0.8), ("t", nan), ("g", 1.0))}
    rows, headers = decision_table({"GEMM": {"plain": "p", "translated": "t", "gluon": "g"}}, figures,
                                   {"p": 30, "t": 31, "g": 120}, {"p": "a", "t": "b", "g": "c"})
    assert len(headers) == len(rows[0]) and [r[2] for r in rows] == ["0.80×", "not recorded yet", "1.00×"]
    assert rows[0][-1] == "not recorded yet"
    figures.update(t=SimpleNamespace(value=0.07), gain=SimpleNamespace(value=1.25, details={"ratios": [1.2, 1.25, 1.3]}))
    rows, _ = decision_table({"GEMM": {"plain": "p", "translated": "t", "gluon": "g", "gain": "gain"}}, figures,
                             {"p": 30, "t": 31, "g": 120}, {"p": "a", "t": "b", "g": "c"})
    assert rows[0][-1].startswith("Gluon pays: 1.25× plain Triton in pairs (1.20–1.30×)") and rows[1][-1] == ""


def test_the_model_tables_verdict_is_the_majority_of_the_shapes_verdicts_each_by_every_pair():
    from gluon_course.grading.translate import PAYS, shapes_verdict

    pays, enough, wins = [1.3, 1.25, 1.4], [1.3, 1.1, 1.4], [0.7, 0.8, 0.75]
    said, counts = shapes_verdict({"a": {"over_plain_triton_pairs": pays}, "b": {"over_plain_triton_pairs": pays},
                                   "c": {"over_plain_triton_pairs": enough}})
    assert said.startswith("Gluon pays over the 3 model shapes: Gluon pays on 2") and counts["Gluon pays"] == ["a", "b"]
    said, _ = shapes_verdict({"a": {"over_plain_triton_pairs": pays}, "b": {"over_plain_triton_pairs": wins}})
    assert said.startswith("plain Triton is enough over the 2 model shapes")          # no majority: the simpler code
    said, counts = shapes_verdict({"a": {"over_plain_triton_pairs": [PAYS, PAYS]}, "b": {"over_plain_triton_pairs": wins},
                                   "c": {"over_plain_triton_pairs": wins}})
    assert said.startswith("plain Triton wins") and counts["Gluon pays"] == ["a"]   # the line itself counts as clearing
    said, _ = shapes_verdict({"a": {"over_plain_triton": 3.0}})
    assert said.startswith("not recorded yet")
