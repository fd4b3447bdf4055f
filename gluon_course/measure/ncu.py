"""Nsight Compute on one launch: what the memory system really did, to check the toolkit's predictions.

``profile_launch`` runs ``ncu`` on a fresh Python process that performs ONE launch of a lesson's kernel (a
function ``module:function`` or ``path/to/file.py:function`` called with string arguments), collects a few hardware counters for that
launch only, and returns their values. The counters the course uses by default are the L1's view of global
loads: how many requests (one per warp-wide load instruction) and how many 32-byte sectors they touched;
their ratio is the "sectors per request" that ``layouts.sectors_per_request`` predicts from a layout.

    >>> values = profile_launch("solutions/03-transposition/checks.py:ncu_launch", ["solution.py", "row"],
    ...                         kernel="copy_2d_kernel")
    >>> values[SECTORS] / values[REQUESTS]
    32.0

It needs a machine with an NVIDIA GPU, ``ncu`` on PATH (or in ``$CUDA_HOME/bin``), and access to the GPU's
performance counters; each of those missing gets its own error, saying what to do.

Run as a module, this file is the profiled process:  ``python -m gluon_course.measure.ncu module:function [args...]``.
``python -m gluon_course.measure.ncu --table FOLDER`` prints the launches of a probe's ncu runs (``launches_table``).
"""
from __future__ import annotations

import csv
import importlib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
METRICS = (SECTORS, REQUESTS)


class NcuUnavailable(RuntimeError):
    """Nsight Compute's command-line profiler is not installed here (or not found)."""


class NcuRefused(RuntimeError):
    """ncu ran, but the driver refused access to the GPU's performance counters."""


class NcuFailed(RuntimeError):
    """ncu ran but gave no value for the asked metrics (no matching launch, an error in the target, ...)."""


def find_ncu() -> str | None:
    """The ``ncu`` executable: on PATH, else in ``$CUDA_HOME/bin`` / ``$CUDA_PATH/bin`` or the default CUDA folder."""
    found = shutil.which("ncu")
    if found:
        return found
    folders = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for folder in filter(None, folders):
        candidate = Path(folder) / "bin" / "ncu"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def ncu_command(ncu: str, kernel: str, target: str, args=(), metrics=METRICS) -> list[str]:
    """The command line: one launch of a kernel whose name matches ``kernel`` (a regular expression)."""
    return [ncu, "--clock-control", "none", "--target-processes", "all", "--kernel-name", f"regex:{kernel}",
            "--launch-count", "1", "--metrics", ",".join(metrics), "--csv", "--print-units", "base",
            sys.executable, "-m", "gluon_course.measure.ncu", target, *map(str, args)]


def profile_launch(target: str, args=(), *, kernel: str, metrics=METRICS, timeout: float = 300) -> dict[str, float]:
    """Profile the first launch of ``kernel`` made by ``target`` (``"package.module:function"``, called with
    ``args`` as strings) in a subprocess under ncu; return ``{metric: value}`` for every metric asked."""
    ncu = find_ncu()
    if ncu is None:
        raise NcuUnavailable("Nsight Compute's `ncu` is not on PATH (nor in $CUDA_HOME/bin): install Nsight Compute "
                             "(it ships with the CUDA toolkit) or add its folder to PATH")
    from ..course import repo_root

    command = ncu_command(ncu, kernel, target, args, metrics)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo_root()), os.environ.get("PYTHONPATH")]))}
    try:
        run = subprocess.run(command, cwd=repo_root(), env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise NcuFailed(f"ncu did not finish within {timeout:.0f} s profiling {target} {' '.join(map(str, args))}") from None
    return parse_output(run.stdout, run.stderr, metrics, kernel, run.returncode)


def parse_output(stdout: str, stderr: str, metrics, kernel: str = "", returncode: int = 0) -> dict[str, float]:
    """Metric values from ncu's output, or the error that says why there are none."""
    everything = stdout + "\n" + stderr
    if "ERR_NVGPUCTRPERM" in everything or "permission to access NVIDIA GPU Performance Counters" in everything:
        raise NcuRefused("ncu is installed but the driver refused access to the GPU's performance counters "
                         "(ERR_NVGPUCTRPERM): run as an administrator, or load the driver with "
                         "NVreg_RestrictProfilingToAdminUsers=0")
    values = parse_csv(stdout, metrics)
    missing = [m for m in metrics if m not in values]
    if not missing:
        return values
    if "No kernels were profiled" in everything:
        raise NcuFailed(f"ncu profiled no launch: no kernel whose name matches {kernel!r} ran in the target process"
                        + _tail(everything))
    raise NcuFailed(f"ncu gave no value for {', '.join(missing)} (exit status {returncode})" + _tail(everything))


def parse_csv(text: str, metrics) -> dict[str, float]:
    """Read ``{metric: value}`` from ncu's ``--csv`` output, whatever else is printed around it.

    Handles both shapes ncu writes: one row per metric (columns "Metric Name", "Metric Unit", "Metric Value";
    the default page) and one column per metric (``--page raw``, where the second row may hold the units).
    Thousands separators are removed; a unit with a prefix (Ksector, Mrequest, ...) is scaled back.
    """
    rows = list(csv.reader(io.StringIO("\n".join(line for line in text.splitlines() if line.startswith('"')))))
    values: dict[str, float] = {}
    for i, row in enumerate(rows):
        if "Metric Name" in row and "Metric Value" in row:
            name_at, value_at = row.index("Metric Name"), row.index("Metric Value")
            unit_at = row.index("Metric Unit") if "Metric Unit" in row else None
            for data in rows[i + 1:]:
                if len(data) <= max(name_at, value_at) or data[name_at] == "Metric Name":
                    continue
                if data[name_at] in metrics and data[name_at] not in values:
                    value = _number(data[value_at], data[unit_at] if unit_at is not None else "")
                    if value is not None:
                        values[data[name_at]] = value
            return values
        if any(m in row for m in metrics):                          # --page raw: metrics are columns
            columns = {m: row.index(m) for m in metrics if m in row}
            units = rows[i + 1] if i + 1 < len(rows) and not _numeric_row(rows[i + 1], columns) else None
            for data in rows[i + 1 + (units is not None):]:
                for m, at in columns.items():
                    if m not in values and at < len(data):
                        value = _number(data[at], units[at] if units and at < len(units) else "")
                        if value is not None:
                            values[m] = value
            return values
    return values


_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def launch_in_range(fn, warmups: int = 3, name: str = "probe") -> None:
    """Call ``fn`` ``warmups`` times (compile, plan, warm), then once inside the NVTX range ``name``: the one launch
    that ``ncu --nvtx --nvtx-include name/`` profiles (the tools/probes probes' ``one`` commands)."""
    import torch

    for _ in range(warmups):
        fn()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(name)
    fn()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def launch_metrics(text: str) -> dict[tuple[str, str], dict[str, float]]:
    """Every launch of ncu's ``--csv`` output (one row per metric, the default page): {(ID, kernel name): {metric:
    value}}, values scaled as ``parse_csv`` scales them; a value that is not a number is left out."""
    rows = list(csv.reader(io.StringIO("\n".join(line for line in text.splitlines() if line.startswith('"')))))
    found: dict[tuple[str, str], dict[str, float]] = {}
    head = None
    for row in rows:
        if "Metric Name" in row and "Metric Value" in row:
            head = row
            continue
        if head is None or len(row) != len(head):
            continue
        d = dict(zip(head, row))
        value = _number(d["Metric Value"], d.get("Metric Unit", ""))
        if value is not None:
            found.setdefault((d.get("ID", ""), d.get("Kernel Name", "")), {})[d["Metric Name"]] = value
    return found


def launches_table(folder) -> list[str]:
    """The tools/probes probes' ncu runs as one table: a column per launch of every ``ncu-TAG.csv`` in ``folder``, a row
    per metric. A launch is named by the line ``ncu TAG (NAME) rc=...`` of the folder's ``steps.txt``, else by TAG."""
    folder = Path(folder)
    names = {}
    steps = folder / "steps.txt"
    if steps.exists():
        for line in steps.read_text().splitlines():
            m = re.match(r"ncu (\S+) \((.*)\) rc=", line)
            if m:
                names[m.group(1)] = m.group(2)
    columns: dict[str, dict[str, float]] = {}
    for path in sorted(folder.glob("ncu-*.csv")):
        tag = path.stem[4:]
        launches = launch_metrics(path.read_text())
        for (_, kernel), values in launches.items():
            # one launch profiled by several runs (metric sets): its runs share a name, so their metrics join
            columns.setdefault(f"{names.get(tag, tag)} [{kernel[:24]}]", {}).update(values)
        if not launches:
            columns.setdefault(f"{names.get(tag, tag)} [no launch profiled]", {})
    metrics = sorted({m for values in columns.values() for m in values})
    lines = [f"{i + 1}: {name}" for i, name in enumerate(columns)]
    lines.append(f"{'metric':52}" + "".join(f"{i + 1:>14}" for i in range(len(columns))))
    for m in metrics:
        lines.append(f"{m[:52]:52}" + "".join(f"{v.get(m, float('nan')):>14.5g}" for v in columns.values()))
    return lines


def _number(text: str, unit: str = "") -> float | None:
    cleaned = text.strip().replace(",", "").replace(" ", "")
    try:
        value = float(cleaned)
    except ValueError:
        return None
    m = re.fullmatch(r"([KMGT]?)(sector|request)s?", unit.strip())
    return value * _PREFIX[m.group(1)] if m else value


def _numeric_row(row, columns) -> bool:
    return all(_number(row[at]) is not None for at in columns.values() if at < len(row))


def _tail(text: str, lines: int = 12) -> str:
    kept = [line for line in text.strip().splitlines() if line.strip()][-lines:]
    return (":\n" + "\n".join(kept)) if kept else ""


def main(argv: list[str]) -> int:
    """The profiled process: import ``module:function`` and call it once with the remaining arguments (or, with
    ``--table FOLDER``, print ``launches_table(FOLDER)``)."""
    if len(argv) == 2 and argv[0] == "--table":
        print("\n".join(launches_table(argv[1])))
        return 0
    if not argv or ":" not in argv[0]:
        print("usage: python -m gluon_course.measure.ncu {package.module | path/to/file.py}:function [args...]",
              file=sys.stderr)
        return 2
    module_name, function_name = argv[0].rsplit(":", 1)
    if module_name.endswith(".py"):
        from ..course import load_module_file

        module = load_module_file(module_name)
    else:
        module = importlib.import_module(module_name)
    function = getattr(module, function_name)
    function(*argv[1:])
    return 0


if __name__ == "__main__":
    # A normal exit (not os._exit): the profiler's injected library finishes its report at process exit.
    sys.exit(main(sys.argv[1:]))
