"""``python -m gluon_course new-lesson NN slug "Title"``: the two folders of a new lesson, ready to fill.

It writes ``solutions/NN-slug/{solution.py, checks.py, plants.py}`` and ``lessons/NN-slug/{starter.py,
lesson.ipynb}``. The new lesson's checks say ``planned=True``: the README lists it as planned until its author
writes real checks and removes that line. The only other file to touch is ``_toc.yml`` (the command says where).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..course import repo_root

SOLUTION = '''"""Lesson {number} · {title}.

What this lesson teaches, in two or three sentences: the one new idea, and what it changes in the machine
code and in the measured figure.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def {name}_kernel(in_ptr, out_ptr, numel, XBLOCK: gl.constexpr, layout: gl.constexpr):
    pid = gl.program_id(0)
    ### BEGIN SOLUTION: the one idea of this lesson, in one sentence (the starter shows this line as its gap)
    offsets = pid * XBLOCK + gl.arange(0, XBLOCK, layout=layout)
    mask = offsets < numel
    gl.store(out_ptr + offsets, gl.load(in_ptr + offsets, mask=mask), mask=mask)
    ### END SOLUTION
'''

CHECKS = '''"""Lesson {number}'s checks: machine code per target, correctness on a GPU, figures with their ranges."""
from triton.experimental.gluon import language as gl

from gluon_course.grading import Check, LessonChecks
from gluon_course.machine import compile_cached

SIGNATURE = {{"in_ptr": "*fp32", "out_ptr": "*fp32", "numel": "i32"}}


def compiled(mod, target):
    layout = gl.BlockedLayout([4], [32], [4], [0])
    return compile_cached(mod.{name}_kernel, target, signature=SIGNATURE,
                          constexprs={{"XBLOCK": 512, "layout": layout}}, aligned=tuple(SIGNATURE))


def signature_sm_90(mod):
    """Replace with the lesson's machine-code signature (exact counts for the pinned Triton)."""
    k = compiled(mod, "sm_90")
    loads = dict(k.global_loads())
    if loads != {{"LDG.E.128": 1}}:
        return f"expected one LDG.E.128, found {{loads}}"
    if "numel" not in k.compared_arguments():
        return "numel is never compared: the kernel has no mask at the end of the tensor"
    return None


CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="(one line for the README: what the lesson teaches)",
    planned=True,          # remove when the lesson is written: until then it is listed as planned
    machine_code=[
        Check("signature_sm_90", "sm_90: the lesson's machine-code signature", signature_sm_90, target="sm_90"),
    ],
    correctness=[],
    figures=[],
)
'''

PLANTS = '''"""Planted mistakes of lesson {number}: each must be rejected by the check whose key it names."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("the mask is dropped: nothing stops the last program at the end of the tensor",
          "mask = offsets < numel", "mask = offsets >= 0",
          rejected_by="signature_sm_90"),
]
'''


def _notebook(number: str, title: str, folder: str) -> dict:
    def md(text):
        return {"cell_type": "markdown", "id": "cell-00", "metadata": {}, "source": text}

    def code(text):
        return {"cell_type": "code", "id": "cell-01", "metadata": {}, "execution_count": None, "outputs": [],
                "source": text}

    cells = [md(f"# {number} · {title}\n\nPlanned: this lesson is not written yet."),
             code(f'from gluon_course.grading.runner import check\n\npassed = check("{number}")')]
    return {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                        "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}


def scaffold(number: str, slug: str, title: str, root: Path | None = None) -> list[Path]:
    root = root or repo_root()
    if not re.fullmatch(r"\d{2}", number):
        raise ValueError(f"lesson number {number!r}: two digits, e.g. 10")
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", slug):
        raise ValueError(f"slug {slug!r}: lower-case words joined by '-', e.g. gemm-v0-cuda-cores")
    existing = [p.name for p in (root / "solutions").glob(f"{number}-*")]
    if existing:
        raise FileExistsError(f"lesson {number} already exists: solutions/{existing[0]}")
    folder = f"{number}-{slug}"
    name = re.sub(r"[^a-z0-9]+", "_", slug).strip("_")
    author, learner = root / "solutions" / folder, root / "lessons" / folder
    author.mkdir(parents=True)
    learner.mkdir(parents=True)
    files = {author / "solution.py": SOLUTION.format(number=number, title=title.rstrip("."), name=name),
             author / "checks.py": CHECKS.format(number=number, name=name),
             author / "plants.py": PLANTS.format(number=number),
             learner / "lesson.ipynb": json.dumps(_notebook(number, title, folder), indent=1) + "\n"}
    for path, text in files.items():
        path.write_text(text)
    from .starters import expected_starter

    (learner / "starter.py").write_text(expected_starter(number))
    return [*files, learner / "starter.py"]
