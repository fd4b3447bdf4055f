"""What a lesson's set-up cell says after it installed the course outside the repository (``gluon_course.first_cell``
writes the cell): where the course now is, which versions run it, and which GPU this runtime has."""
from __future__ import annotations

import subprocess
from pathlib import Path

from ..course import repo_root
from ..machine.targets import GPU_NAMES
from ..measure.device import gpu_class, gpu_name, has_gpu
from .classes import what_runs_on

PINNED_TRITON = "3.9.0"


def _commit(folder: Path) -> str:
    out = subprocess.run(["git", "-C", str(folder), "rev-parse", "--short=10", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else "an unknown commit"


def report(repository: str, version: str, out=print) -> bool:
    """Print what the set-up cell did; False (with what to do) when this process runs another Triton than the pinned
    one (a runtime that imported its own Triton before the cell replaced it)."""
    import torch
    import triton

    root = repo_root()
    out(f"The course is in {root}: toolkit, lessons (your starter for lesson NN: "
        f"{root.name}/lessons/NN-slug/starter.py), solutions and recorded figures, installed from {repository} at "
        f"{version} (commit {_commit(root)}).")
    out(f"Triton {triton.__version__} · torch {torch.__version__}")
    if triton.__version__ != PINNED_TRITON:
        out(f"This process still runs Triton {triton.__version__}, imported before the set-up installed "
            f"{PINNED_TRITON}: restart the session (Colab: Runtime → Restart session) and run this cell again.")
        return False
    found = gpu_class()
    if not has_gpu():
        out(f"GPU: none: {what_runs_on(None)}, and the notebooks show the figures recorded on the course's GPU.")
    else:
        named = f" ({GPU_NAMES[found]})" if found in GPU_NAMES else ""
        out(f"GPU: {gpu_name()}, class {found}{named}: {what_runs_on(found)}.")
    return True
