"""Recorded figures: ``results/<gpu>.json``, one file per GPU model.

Each figure carries the GPU, the Triton and PyTorch versions, the date and the commit of the code that
produced it. A notebook on a machine with a GPU measures live (and, under ``record``, writes here); on a
machine without one it prints what is recorded here, labelled as such.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
from pathlib import Path

from ..course import repo_root

# What a machine without a GPU shows: the recording made on this GPU.
DEFAULT_RECORDING = "nvidia-h200"

# Where the course's recording has no entry for a figure or check, the same key recorded on another GPU of the same
# class (the same compile target, the same lesson code) stands in: a lesson recorded only on an H100 shows that
# recording, and every line printed from it names that GPU (``recorded_label``), as the website's tables do.
STAND_INS: dict[str, tuple[str, ...]] = {"nvidia-h200": ("nvidia-h100-80gb-hbm3",)}


def vendor_targets(gpu_slug: str) -> tuple[str, ...]:
    """The compile targets whose lessons a recording on this GPU can hold: AMD's for an ``amd-...`` file, NVIDIA's
    otherwise (a results table lists only the lessons its GPU can run)."""
    return ("gfx950", "gfx942") if gpu_slug.startswith("amd") else ("sm_90", "sm_100")


def results_dir() -> Path:
    """``results/`` of the repository; GLUON_COURSE_RESULTS_DIR names another folder (a test that replays a notebook
    with other recorded figures)."""
    return Path(os.environ.get("GLUON_COURSE_RESULTS_DIR") or repo_root() / "results")


def slug(gpu_name: str) -> str:
    """"NVIDIA H200" -> "nvidia-h200"."""
    return re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")


def path_for(gpu_slug: str) -> Path:
    return results_dir() / f"{gpu_slug}.json"


def load_file(gpu_slug: str) -> dict:
    """``results/<gpu_slug>.json`` as it is: that GPU's entries only."""
    path = path_for(gpu_slug)
    if not path.exists():
        return {"gpu": None, "figures": {}}
    return json.loads(path.read_text())


def load(gpu_slug: str = DEFAULT_RECORDING) -> dict:
    """The recording shown for ``gpu_slug``: its own file, and for a key it lacks, the entry of its first STAND_INS
    recording that has one (each entry keeps its own ``gpu``). ``gpu`` is the file's own GPU."""
    data = load_file(gpu_slug)
    for other in STAND_INS.get(gpu_slug, ()):
        for key, entry in load_file(other)["figures"].items():
            data["figures"].setdefault(key, entry)
    data["figures"] = dict(sorted(data["figures"].items()))
    return data


def stood_in(entry: dict, data: dict) -> bool:
    """True where ``entry`` of the recording ``data`` (as ``load`` gives it) was measured on another GPU."""
    return bool(data.get("gpu")) and entry.get("gpu") != data["gpu"]


def figure_key(number: str, key: str) -> str:
    """``02/tile_copy_R4``: a figure's record key is its lesson and its stable key."""
    return f"{number}/{key}"


def check_key(number: str, key: str) -> str:
    """``03/check/exact_on_odd_shapes``: a GPU check's outcome, recorded under its stable key."""
    return f"{number}/check/{key}"


def stamp(entry: dict) -> str:
    return (f"{entry['gpu']} · Triton {entry['triton']} · torch {entry['torch']} · {entry['date']} · "
            f"commit {entry['commit']}")


def recorded_label(entry: dict) -> str:
    """What a line printed from this recording ends with, where a machine cannot run the check (no GPU, or one of a
    class the lesson is not written for): ``  [recorded: NVIDIA H200, 2026-12-03, the solution]``. The verdict
    beside it was the solution's, measured on that GPU that day, not the learner's code here; a live line has no
    label. (tests/nbval_sanitize.cfg removes exactly this label, at the end of a line, before comparing a CPU run
    with the committed outputs of a live one.)"""
    return f"  [recorded: {entry['gpu']}, {entry['date']}, the solution]"


def recorded(key: str, gpu_slug: str = DEFAULT_RECORDING) -> dict:
    """One recorded figure, e.g. ``recorded("02/tile_copy_R4")``; a clear error if it was never recorded."""
    figures = load(gpu_slug)["figures"]
    if key not in figures:
        raise KeyError(f"{key} has not been recorded on {gpu_slug} yet: run `python -m gluon_course record` "
                       f"on that GPU (results/{gpu_slug}.json)")
    return figures[key]


def recording_enabled(number: str | None = None) -> bool:
    """True while ``python -m gluon_course record`` re-executes the notebooks; with ``number``, only while it
    re-executes that lesson's own notebook. A notebook that also shows an earlier lesson's figure (a bar of
    earlier versions) measures it live but leaves that lesson's recording alone."""
    if os.environ.get("GLUON_COURSE_RECORD") != "1":
        return False
    recording = os.environ.get("GLUON_COURSE_RECORD_LESSON")
    return number is None or recording is None or recording == str(number)


def commit() -> str:
    if os.environ.get("GLUON_COURSE_COMMIT"):
        return os.environ["GLUON_COURSE_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=repo_root(), capture_output=True,
                             text=True, check=True).stdout.strip()
        return out or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def provenance() -> dict:
    """GPU, versions, date, commit: stamped on every figure written."""
    import torch
    import triton

    return {"gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU",
            "triton": triton.__version__, "torch": torch.__version__,
            "date": datetime.date.today().isoformat(), "commit": commit()}


def save(key: str, entry: dict) -> None:
    """Write one figure (with provenance) into ``results/<gpu>.json``, keeping the others."""
    stamp = provenance()
    gpu_slug = slug(stamp["gpu"])
    data = load_file(gpu_slug)
    data["gpu"] = stamp["gpu"]
    data["figures"][key] = {**entry, **stamp}
    data["figures"] = dict(sorted(data["figures"].items()))
    path = path_for(gpu_slug)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
