"""The Gluon course toolkit.

One package shared by the lessons, their notebooks, the tests and the command line:

- ``compile``   compile a Gluon kernel for sm_90 / sm_100 / gfx950 / gfx942 on any machine (no GPU needed)
                and read its machine code (instruction counts, registers, spills, shared memory / LDS)
- ``layouts``   host-side views of a layout: linear-layout bases, register budget, broadcast, pictures
- ``measure``   GPU-side measurement: poisoned outputs, guarded buffers, references, ceilings, bandwidth
- ``expect``    expected ranges with provenance and the one-line verdict
- ``records``   recorded figures in ``results/<gpu>.json``
- ``lab``       what a notebook calls: live figures on a GPU, recorded figures elsewhere
- ``starters``  generate ``lessons/NN-slug/starter.py`` from ``solutions/NN-slug/solution.py``
- ``grading``   ``check NN``: grade a learner's starter (and the command line in ``__main__``)
"""
import os as _os

# Triton 3.9 warns once per process that its default for floating-point fusion will change in 3.10.
# The course keeps 3.9's behaviour explicitly (fusion on), which also keeps notebook output free of the warning.
_os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

from .course import LESSONS, Lesson, lesson, load_solution, load_starter, repo_root  # noqa: E402

__all__ = ["LESSONS", "Lesson", "lesson", "load_solution", "load_starter", "repo_root"]
