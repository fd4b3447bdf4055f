"""One launch in a fresh process, under a time limit and optionally under compute-sanitizer.

A pipelined kernel with a barrier bug does not fail: it waits forever. Run in the notebook's or the grader's own
process, it would hang the learner's session (and CI). ``run_isolated`` runs a function of a lesson file
(``path/to/file.py:function``, called with string arguments) in a child process, kills it after ``timeout``
seconds and says so in a sentence. With ``tool`` set it runs under NVIDIA's compute-sanitizer
(memcheck: out-of-bounds and misaligned accesses; racecheck: shared-memory races; synccheck: barrier misuse).

    >>> sanitizer_check("solutions/12-gemm-v2-shared-memory/checks.py:small_launch", [solution_file],
    ...                 tools=("memcheck", "racecheck", "synccheck"))      # None: clean

Run as a module, this file is the child process: ``python -m gluon_course.measure.isolated file.py:function args``.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
# One small launch, the child's imports and compile included, takes ~10 s on an H200; six times that is a hang.
LAUNCH_LIMIT_S = 60


class SanitizerUnavailable(RuntimeError):
    """compute-sanitizer is not installed here (it ships with the CUDA toolkit)."""


@dataclass
class IsolatedRun:
    returncode: int | None      # None: killed at the time limit
    output: str                 # stdout and stderr together
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def _die_with_parent() -> None:
    """Linux: ask the kernel to SIGKILL this process when its parent dies. A child left behind by a killed grader
    would otherwise keep a hung kernel spinning, and the GPU time-slices every later kernel with it."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except OSError:
            pass


def find_sanitizer() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for folder in filter(None, [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]):
        candidate = Path(folder) / "bin" / "compute-sanitizer"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


# What compute-sanitizer is given besides the tool (see run_isolated for why each).
SANITIZER_FLAGS = ("--error-exitcode", "86", "--target-processes", "all", "--report-api-errors", "no")


def hand_command(target: str, args=(), tool: str = "racecheck") -> str:
    """The command a learner types, from the repository's root, to run one of the checks' sanitizer launches by
    hand: the same child process and the same flags as ``sanitizer_check``."""
    flags = " ".join(SANITIZER_FLAGS[2:])        # the exit code only matters to the checks
    rest = " ".join(map(str, args))
    return (f"compute-sanitizer --tool {tool} {flags} \\\n    python -m gluon_course.measure.isolated {target}"
            + (f" {rest}" if rest else ""))


def run_isolated(target: str, args=(), *, timeout: float, tool: str | None = None) -> IsolatedRun:
    """Run ``target`` (``file.py:function``) with ``args`` in a child process; kill it after ``timeout`` s."""
    import time

    from ..course import repo_root

    command = [sys.executable, "-m", "gluon_course.measure.isolated", target, *map(str, args)]
    if tool is not None:
        if tool not in TOOLS:
            raise ValueError(f"unknown compute-sanitizer tool {tool!r}; one of {', '.join(TOOLS)}")
        sanitizer = find_sanitizer()
        if sanitizer is None:
            raise SanitizerUnavailable("compute-sanitizer is not on PATH (nor in $CUDA_HOME/bin): it ships with the "
                                       "CUDA toolkit; install that or add its bin folder to PATH")
        # --report-api-errors no: Triton's loader first asks for CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE on every kernel
        # with more than 48 KiB of shared memory, gets CUDA_ERROR_INVALID_VALUE and falls back to the legacy call
        # (triton/backends/nvidia/driver.c, loadBinary): a refused host call, not an error of the kernel.
        command = [sanitizer, "--tool", tool, *SANITIZER_FLAGS, *command]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo_root()), os.environ.get("PYTHONPATH")]))}
    started = time.monotonic()
    # A new session, so that a kill reaches the whole process group (the sanitizer and Python under it).
    child = subprocess.Popen(command, cwd=repo_root(), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, start_new_session=True, preexec_fn=_die_with_parent)
    try:
        output, _ = child.communicate(timeout=timeout)
        return IsolatedRun(child.returncode, output, time.monotonic() - started)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        output, _ = child.communicate()
        return IsolatedRun(None, output or "", time.monotonic() - started)


def _summary(run: IsolatedRun, what: str, timeout: float) -> str | None:
    if run.timed_out:
        return (f"{what} did not finish within {timeout:.0f} s: the kernel may be waiting for a barrier or a copy "
                "that never completes (a phase that never flips, a missing commit or wait); it was killed")
    if run.returncode == 0:
        return None
    reports = race_reports(run.output)
    if reports:
        # Every access of each race (racecheck prints the first on the "Race reported" line, the others on the lines
        # after it): which accesses they are is the question.
        shown = "; ".join(" and ".join(f"{kind} at {at} ({place})" for kind, at, place in accesses)
                          for accesses in reports[:3])
        return f"{what} failed: {len(reports)} race report(s), between {shown}"
    lines = [line.strip() for line in run.output.splitlines() if line.strip()]
    errors = [line for line in lines if "ERROR SUMMARY" in line or line.startswith("========= Invalid")
              or "Race reported" in line or "Barrier error" in line or "Error:" in line]
    detail = "; ".join(dict.fromkeys(errors[:3])) or (lines[-1] if lines else f"exit status {run.returncode}")
    return f"{what} failed: {detail}"


_FIRST_ACCESS = re.compile(r"Race reported between (\w+) access at (\S+) in (\S+)")
_MORE_ACCESS = re.compile(r"^=+\s+and (\w+) access at (\S+) in (\S+)")


def race_reports(output: str) -> list[list[tuple[str, str, str]]]:
    """Each race racecheck reported, as every access it names: (kind, where, source line), e.g.
    ``("Read", "cluster_kernel+0x2a40", "solution.py:293")``. A report names its first access on its "Race reported
    between" line and one or more others on the lines after it ("and Write access at ... [18 hazards]")."""
    reports = []
    for line in output.splitlines():
        first = _FIRST_ACCESS.search(line)
        if first:
            reports.append([first.groups()])
            continue
        more = _MORE_ACCESS.search(line)
        if more and reports:
            reports[-1].append(more.groups())
    return [[(kind, at, place.strip()) for kind, at, place in accesses] for accesses in reports]


_HAZARDS = re.compile(r"\[(\d+) hazards?\]")


def hazard_count(output: str) -> int:
    """The hazards racecheck's reports add up to (the ``[N hazards]`` after each access it names)."""
    return sum(int(n) for n in _HAZARDS.findall(output))


def check_isolated(target: str, args=(), timeout: float = LAUNCH_LIMIT_S) -> str | None:
    """None when one launch in a child process finishes in time and cleanly; else one sentence."""
    return _summary(run_isolated(target, args, timeout=timeout), "the launch", timeout)


# A child's function may return a sentence (a check's verdict): the child prints it after this mark, exits with 3.
PROBLEM_MARK = "gluon_course problem: "


def check_in_child(target: str, args=(), timeout: float = LAUNCH_LIMIT_S) -> str | None:
    """Run a whole check (``file.py:function`` returning None or a sentence) in a child process under a time limit:
    its sentence, a sentence about a hang or a crash, or None. For kernels that can wait forever (mbarriers)."""
    run = run_isolated(target, args, timeout=timeout)
    for line in run.output.splitlines():
        if line.startswith(PROBLEM_MARK):
            return line[len(PROBLEM_MARK):]
    return _summary(run, "the check's child process", timeout)


def races_only_at(output: str, places) -> bool:
    """True when racecheck's ``output`` reports races and every access of every one sits at one of ``places``
    (``file.py:LINE`` each)."""
    reports = race_reports(output)
    return bool(reports) and all(place in places for accesses in reports for _, _, place in accesses)


def races_only_at_pcs(output: str, pcs) -> bool:
    """True when racecheck's ``output`` reports races and every access of every one is at one of ``pcs``
    (``kernel+0x2a40`` each: the kernel's name and the instruction's offset in its listing, as racecheck names them)."""
    reports = race_reports(output)
    wanted = {_pc(p) for p in pcs}
    return bool(reports) and all(_pc(at) in wanted for accesses in reports for _, at, _ in accesses)


def _pc(at: str) -> tuple[str, int]:
    name, _, offset = at.partition("+")
    return name, int(offset, 16) if offset else -1


def sanitizer_check(target: str, args=(), tools=("memcheck",), timeout: float = 300,
                    ignore_race_at=None, ignore_race_pcs=None, set_aside: dict | None = None):
    """Run ``target`` under each compute-sanitizer tool, the tools side by side (each its own child process: small
    launches, so they share the GPU at no cost to what they check): None when all are clean, else one sentence.
    ``ignore_race_at`` (``file.py:LINE``, or several): a racecheck report whose every hazard is between two accesses
    at those lines counts as clean (the caller says why in its own words: ``grading.tma_gemm.sanitizer_clean``);
    ``ignore_race_pcs`` (``kernel+0xOFFSET`` each): the same by the instructions themselves. ``set_aside`` (a dict,
    filled when racecheck ran): ``races_set_aside`` and ``hazards_set_aside``, what racecheck reported this time that
    those rules did not count (0 and 0 when it reported nothing), so that a recording says whether it did."""
    places = {ignore_race_at} if isinstance(ignore_race_at, str) else set(ignore_race_at or ())
    pcs = set(ignore_race_pcs or ())
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(tools)) as pool:
        runs = list(pool.map(lambda tool: run_isolated(target, args, timeout=timeout, tool=tool), tools))
    for tool, run in zip(tools, runs):
        if tool == "racecheck" and set_aside is not None:
            set_aside.update(races_set_aside=0, hazards_set_aside=0)
        if tool == "racecheck" and run.returncode not in (0, None) and (
                (places and races_only_at(run.output, places)) or (pcs and races_only_at_pcs(run.output, pcs))):
            if set_aside is not None:
                set_aside.update(races_set_aside=len(race_reports(run.output)), hazards_set_aside=hazard_count(run.output))
            continue
        problem = _summary(run, f"compute-sanitizer --tool {tool}", timeout)
        if problem:
            return problem
        if "ERROR SUMMARY: 0 errors" not in run.output and "RACECHECK SUMMARY: 0 hazards" not in run.output:
            return f"compute-sanitizer --tool {tool} printed no summary; its output ended: {run.output[-300:]}"
    return None


def _module_at(path: str):
    """The module in ``path``: a file of the toolkit itself is imported as part of its package (its relative imports
    need that), any other file (a lesson's checks, a learner's starter) from its path."""
    import importlib

    from ..course import load_module_file, repo_root

    file = Path(path) if Path(path).is_absolute() else repo_root() / path
    package = repo_root() / "gluon_course"
    if file.resolve().is_relative_to(package.resolve()):
        relative = file.resolve().relative_to(repo_root().resolve()).with_suffix("")
        return importlib.import_module(".".join(relative.parts))
    return load_module_file(path)


def main(argv: list[str]) -> int:
    if not argv or ":" not in argv[0]:
        print("usage: python -m gluon_course.measure.isolated path/to/file.py:function [args...]", file=sys.stderr)
        return 2
    _die_with_parent()    # under compute-sanitizer our parent is the sanitizer: go when it goes
    path, function = argv[0].rsplit(":", 1)
    problem = getattr(_module_at(path), function)(*argv[1:])
    if isinstance(problem, str):
        print(PROBLEM_MARK + " ".join(problem.splitlines()), flush=True)
        return 3
    return 0


if __name__ == "__main__":
    # A normal exit: compute-sanitizer finishes its checks when the CUDA context is torn down at exit.
    sys.exit(main(sys.argv[1:]))
