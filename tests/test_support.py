"""The GPU support matrix (book/support.md), the instructors' lesson facts and the home page's lesson tables: generated
from the lessons (gluon_course/website/support.py, results.py), never stale, and saying what the lessons declare."""
from __future__ import annotations

from gluon_course import lessons
from gluon_course.course import repo_root
from gluon_course.website import support

ROOT = repo_root()


# The generated pages (support matrix, home and results pages) are held up to date by tests/test_toolkit.py's
# test_generated_tables_are_up_to_date, which regenerates every one of them (update_tables).


def test_every_written_lesson_has_a_row():
    rows = {r.number for r in support.lesson_support()}
    written = {n for n, the in lessons().items() if not the.planned}
    assert rows == written, f"the matrix has rows {sorted(rows)}, the written lessons are {sorted(written)}"


def test_gpu_classes_follow_the_declared_targets_and_the_launcher():
    for row in support.lesson_support():
        assert set(row.gpu_classes) <= set(row.targets), f"lesson {row.number}: GPU checks for an undeclared target"
        the = lessons()[row.number]
        if support._calls(the.solution_path, "require_hopper"):
            assert row.gpu_classes in ((), ("sm_90",)), f"lesson {row.number} refuses all but Hopper: {row.gpu_classes}"
        cells = {cls: support._gpu_cell(row, cls) for cls in support.GPU_CLASSES}
        for cls, cell in cells.items():
            assert (cell == "—") == (cls not in row.gpu_classes), f"lesson {row.number}, {cls}: {cell!r}"
            assert cell.startswith("✓") == (cls in row.recorded), f"lesson {row.number}, {cls}: {cell!r}"


def test_the_classes_before_hopper_are_the_lessons_before_tma():
    """sm_80, sm_86, sm_89 and sm_120 columns say "yes" for exactly the lessons whose kernels Triton 3.9.0 compiles for
    them and whose GPU checks are written there (01–05, 10–13; 14 too on sm_120), and the launchers' refusals name the
    same lessons."""
    from gluon_course.grading.classes import AMPERE_ADA_RTX50, lessons_on

    rows = support.lesson_support()
    for cls in AMPERE_ADA_RTX50:
        yes = [r.number for r in rows if support._gpu_cell(r, cls) == "yes"]
        # RTX 50 has TMA (no wgmma): lesson 14's TMA + mma.sync kernel compiles and runs there too.
        assert yes == ["01", "02", "03", "04", "05", "10", "11", "12", "13"] + (["14"] if cls == "sm_120" else []), \
            (cls, yes)
        assert yes == lessons_on(cls)


def test_the_t4_paragraph_says_what_compiles_for_sm_75():
    text = support.matrix_markdown()
    assert "## On a T4 (sm_75" in text
    assert "| 01 | compiles: 8 × LDG.E.SYS, 8 × STG.E.SYS |" in text
    assert "| 13 | does not compile: LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.cp.async.commit.group |" in text


def test_a_recording_is_claimed_only_for_its_gpu_class():
    for row in support.lesson_support():
        for cls, gpu in row.recorded.items():
            assert cls in support.RECORDING_CLASS.values() and gpu, (row.number, cls, gpu)


def test_the_notebook_times_are_read():
    for number, the in lessons().items():
        if the.notebook_path.exists() and not the.planned:
            minutes = support.notebook_minutes(the)
            assert minutes and 10 <= minutes <= 180, f"lesson {number}: notebook time {minutes!r}"


def test_spans():
    assert support._spans(["01", "02", "03", "10", "12", "13"]) == "01–03, 10, 12–13"
    assert support._spans([]) == ""
