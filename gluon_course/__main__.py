"""Command line:  python -m gluon_course {info, check NN, record, starters, results-page}"""
from __future__ import annotations

import argparse
import os
import sys


def _info() -> int:
    import torch
    import triton

    from .compile import TARGETS, compile_kernel
    from .course import LESSONS
    from .measure import gpu_name, has_gpu
    from . import records

    print(f"Triton {triton.__version__} · torch {torch.__version__} · Python {sys.version.split()[0]}")
    print(f"GPU: {gpu_name() if has_gpu() else 'none (notebooks show recorded figures)'}")
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl

    @gluon.jit
    def probe(ptr):
        gl.store(ptr, gl.load(ptr))

    for name in TARGETS:
        try:
            compile_kernel(probe, name, signature={"ptr": "*fp32"})
            print(f"compile for {name}: ok")
        except Exception as e:  # noqa: BLE001 - report, don't crash
            print(f"compile for {name}: FAILED ({e})")
    figures = records.load()["figures"]
    print(f"recorded figures ({records.DEFAULT_RECORDING}): {len(figures)}")
    for number, the in LESSONS.items():
        have = "✓" if the.solution_path.exists() else "·"
        print(f"  {have} {number} {the.title}: {the.teaches}")
    return 0


def _record(numbers: list[str], notebooks: bool) -> int:
    from .course import LESSONS, lesson
    from .measure import has_gpu

    if not has_gpu():
        print("record needs a GPU: it measures every lesson live and re-executes the notebooks in place.")
        return 2
    import nbformat
    from nbclient import NotebookClient

    os.environ["GLUON_COURSE_RECORD"] = "1"
    failures = 0
    for number in numbers or [n for n, t in LESSONS.items() if t.notebook_path.exists()]:
        the = lesson(number)
        if not notebooks:
            continue
        nb = nbformat.read(the.notebook_path, as_version=4)
        print(f"executing {the.folder}/lesson.ipynb ...", flush=True)
        client = NotebookClient(nb, timeout=900, kernel_name="python3",
                                resources={"metadata": {"path": str(the.notebook_path.parent)}})
        try:
            client.execute()
        except Exception as e:  # noqa: BLE001 - keep going, report at the end
            failures += 1
            print(f"  FAILED: {str(e).splitlines()[-1] if str(e) else type(e).__name__}")
        nbformat.write(nb, the.notebook_path)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gluon_course", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="what runs here: device, versions, targets that compile")
    c = sub.add_parser("check", help="grade a lesson's starter (or --solution)")
    c.add_argument("lesson")
    c.add_argument("--file", help="the file to check (default: lessons/NN-slug/starter.py)")
    c.add_argument("--solution", action="store_true", help="check the solution instead")
    c.add_argument("--no-figures", action="store_true", help="GPU: correctness only, no timing")
    r = sub.add_parser("record", help="GPU: measure every lesson and re-execute the notebooks in place")
    r.add_argument("lessons", nargs="*")
    sub.add_parser("starters", help="regenerate every lessons/NN-slug/starter.py from its solution")
    sub.add_parser("results-page", help="regenerate the table in book/results.md from results/")
    args = parser.parse_args(argv)

    if args.command == "info":
        return _info()
    if args.command == "check":
        from .grading import check

        return 0 if check(args.lesson, path=args.file, solution=args.solution, figures=not args.no_figures) else 1
    if args.command == "record":
        return _record(args.lessons, notebooks=True)
    if args.command == "starters":
        from .starters import write_starters

        for path in write_starters():
            print(f"wrote {path}")
        return 0
    if args.command == "results-page":
        from .course import repo_root
        from .report import update_results_page

        changed = update_results_page(repo_root() / "book" / "results.md")
        print("book/results.md " + ("updated" if changed else "already up to date"))
        return 0
    return 2


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Triton's layout bindings report harmless "leaked" objects at interpreter exit; leave without that noise.
    os._exit(code)
