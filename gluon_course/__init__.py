"""The Gluon course toolkit.

One package shared by the lessons, their notebooks, the tests and the command line, in layers (book/authoring.md
draws them; tests/test_imports.py holds every import to them):

- ``course``, ``validate``, ``display``, ``first_cell``  the base: lessons discovered from ``solutions/NN-slug/``,
               what launchers check about their arguments, source, tables and charts in notebooks, every notebook's
               set-up cell (which installs the course when a notebook is opened outside the repository)
- ``machine``  compile a Gluon kernel for sm_90 / sm_100 / gfx950 / gfx942 on any machine (no GPU needed) and
               read its machine code: opcode families per target, registers, spills, shared / LDS bytes,
               occupancy
- ``memory``   layouts and memory access on the host: linear layouts and pictures, strides, the coalescing
               (sector) model, the bank-conflict models (shared memory, LDS)
- ``measure``  on a GPU: fresh inputs, poisoned and guarded outputs, timing, ceilings (device copy, library
               matmul), the copy and GEMM harnesses, one launch in a child process, Nsight Compute
- ``model``    the host model: a kernel's own Python body run on the CPU with numpy
- ``grading``  checks and figures with stable keys, the runner shared by ``check``, the notebooks and the
               tests, records, starters, the lesson scaffold, what the GEMM lessons' checks share
- ``nvidia``, ``amd``  each vendor's home: its launchers' rules, layouts, listing readers, its lessons' checks,
               figures and pictures
- ``website``  the generated pages (README table, results, comparison, support matrix, instructors' facts), the
               glossary's terms
"""
import os as _os

# Triton 3.9 warns once per process that its default for floating-point fusion will change in 3.10.
# The course keeps 3.9's behaviour explicitly (fusion on), which also keeps notebook output free of the warning.
_os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")

from .course import Lesson, lesson, lessons, load_checks, load_solution, load_starter, repo_root  # noqa: E402

__all__ = ["Lesson", "lesson", "lessons", "load_checks", "load_solution", "load_starter", "repo_root"]
