"""The AMD GEMM correctness check as a child process runs it: ``python -m gluon_course.measure.isolated
<this file>:correct_here <lesson module file> <any|aligned>``. The child loads this file by its path, so it imports
the package absolutely (``grading/amd_gemm.py`` itself uses relative imports and cannot be loaded that way)."""
from gluon_course.grading.amd_gemm import correct_here  # noqa: F401
