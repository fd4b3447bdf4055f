"""Command line:  python -m gluon_course {info, check NN, progress, record, starters, tables, new-lesson, first-cell,
translate NN}"""
from __future__ import annotations

import argparse
import os
import sys


def _info() -> int:
    import torch
    import triton

    from . import lessons
    from .grading import records
    from .machine import TARGETS, CompileFailed, compile_kernel
    from .measure import gpu_name, has_gpu

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
        except (CompileFailed, RuntimeError) as e:
            print(f"compile for {name}: FAILED ({e})")
    figures = records.load()["figures"]
    print(f"recorded figures ({records.DEFAULT_RECORDING}): {len(figures)}")
    print("the lessons, and whether the course's GPU run recorded them (your own progress: make progress):")
    for number, the in lessons().items():
        recorded = any(key.startswith(f"{number}/") for key in figures)
        status = "planned" if the.planned else ("recorded" if recorded else "written; not recorded on a GPU yet")
        print(f"  {number} {the.title} ({status}; targets {', '.join(the.checks.targets)}): {the.checks.teaches}")
    return 0


def _record(numbers: list[str]) -> int:
    from . import lesson, lessons
    from .measure import has_gpu

    if not has_gpu():
        print("record needs a GPU: it measures every lesson live and re-executes the notebooks in place.")
        return 2
    import nbformat
    from nbclient import NotebookClient

    os.environ["GLUON_COURSE_RECORD"] = "1"
    failures = 0
    for number in numbers or [n for n, t in lessons().items() if t.notebook_path.exists() and not t.planned]:
        the = lesson(number)
        os.environ["GLUON_COURSE_RECORD_LESSON"] = the.number    # the notebook's kernel inherits it
        nb = nbformat.read(the.notebook_path, as_version=4)
        print(f"executing {the.folder}/lesson.ipynb ...", flush=True)
        client = NotebookClient(nb, timeout=900, kernel_name="python3",
                                resources={"metadata": {"path": str(the.notebook_path.parent)}})
        try:
            client.execute()
        except Exception as e:  # noqa: BLE001 - keep going, report at the end
            failures += 1
            last = [line for line in str(e).splitlines() if line.strip()]
            print(f"  FAILED: {last[-1] if last else type(e).__name__}")
        nbformat.write(nb, the.notebook_path)
    return 1 if failures else 0


# The commands that run without torch and triton (they read and write the course's files only).
NO_TORCH_NEEDED = {"first-cell"}


def _outside_the_environment() -> str | None:
    """A sentence saying how to run the toolkit, when this Python lacks torch or triton (the course's environment,
    .venv, has both); None when both are importable."""
    import importlib.util

    missing = [name for name in ("torch", "triton") if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    import shlex

    words = sys.argv[1:] or ["info"]
    target = (f"make check-{words[1]}" if words[0] == "check" and len(words) == 2
              else f"make {words[0]}" if words[0] in ("progress", "info", "starters", "record") else "make check-01")
    return (f"This Python ({sys.executable}) has no {' and no '.join(missing)}: the course runs in its own "
            f"environment, so run `make venv` once in the course's folder, then `.venv/bin/python -m gluon_course "
            f"{shlex.join(words)}` (or a make target such as `{target}`).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gluon_course", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="what runs here: device, versions, targets that compile, the lessons")
    sub.add_parser("progress", help="which lessons' starters pass their machine-code checks (no GPU needed)")
    c = sub.add_parser("check", help="grade a lesson's starter (or --solution)")
    c.add_argument("lesson")
    c.add_argument("--file", help="the file to check (default: lessons/NN-slug/starter.py)")
    c.add_argument("--solution", action="store_true", help="check the solution instead")
    c.add_argument("--no-figures", action="store_true", help="GPU: correctness only, no timing")
    r = sub.add_parser("record", help="GPU: measure every lesson and re-execute the notebooks in place")
    r.add_argument("lessons", nargs="*")
    sub.add_parser("starters", help="regenerate every lessons/NN-slug/starter.py from its solution")
    f = sub.add_parser("fold", help="fold the answer cells of lessons' notebooks (the cells that show a gap's "
                                    "solution), on the website and in Jupyter: cell metadata only")
    f.add_argument("lessons", nargs="+")
    sub.add_parser("tables", help="regenerate the README's lesson table, the generated pages and every recorded figure "
                                  "marked in prose from results/")
    n = sub.add_parser("new-lesson", help="scaffold solutions/NN-slug/ and lessons/NN-slug/ for a new lesson")
    n.add_argument("number")
    n.add_argument("slug")
    n.add_argument("title")
    fc = sub.add_parser("first-cell", help="put the set-up cell (installs the course outside its repository: Colab) "
                                           "first among the code cells of lessons' notebooks, or bring it up to date")
    fc.add_argument("lessons", nargs="*", help="lesson numbers (or --all)")
    fc.add_argument("--all", action="store_true", help="every lesson that has a notebook")
    fc.add_argument("--repository", help="the course's published repository: owner/name on GitHub or a git address "
                                         "(default: GLUON_COURSE_REPOSITORY, else none)")
    fc.add_argument("--version", help="the commit or branch to install (default: GLUON_COURSE_BRANCH, else main)")
    sub.add_parser("translate", help="rewrite lesson NN's translated/ files with Triton's translator").add_argument("lesson")
    args = parser.parse_args(argv)

    if args.command not in NO_TORCH_NEEDED and (how := _outside_the_environment()):
        print(how)
        return 2
    if args.command == "info":
        return _info()
    if args.command == "progress":
        from .grading.progress import progress

        progress()
        return 0
    if args.command == "check":
        from .grading.runner import check

        try:
            ok = check(args.lesson, path=args.file, solution=args.solution, figures=not args.no_figures)
        except (KeyError, FileNotFoundError) as e:
            print(f"check: {e.args[0] if e.args else e}")
            return 2
        return 0 if ok else 1
    if args.command == "record":
        return _record(args.lessons)
    if args.command == "starters":
        from .grading.starters import write_starters

        for path in write_starters():
            print(f"wrote {path}")
        return 0
    if args.command == "fold":
        from .grading.answers import answer_cells, fold_answers

        for number in args.lessons:
            changed = fold_answers(number)
            print(f"lesson {number}: answer cells {sorted(answer_cells(number))}; "
                  + (f"folded {changed}" if changed else "every one already folded"))
        return 0
    if args.command == "tables":
        from .course import repo_root
        from .website import update_tables

        changed = update_tables(repo_root())
        print("updated: " + ", ".join(changed) if changed else "every generated page and marked figure is up to date")
        return 0
    if args.command == "first-cell":
        from .course import lessons
        from .first_cell import set_first_cell

        numbers = [n for n, the in lessons().items() if the.notebook_path.exists()] if args.all else args.lessons
        if not numbers:
            print("first-cell: name the lessons (first-cell 01 02) or give --all")
            return 2
        for number in numbers:
            print(f"lesson {number}: set-up cell {set_first_cell(number, args.repository, args.version)}")
        return 0
    if args.command == "translate":
        from .grading.translate import main as translate

        return translate(args.lesson)
    if args.command == "new-lesson":
        from .course import repo_root
        from .grading.scaffold import scaffold

        for path in scaffold(args.number, args.slug, args.title):
            print(f"wrote {path.relative_to(repo_root())}")
        print(f"now add `- file: lessons/{args.number}-{args.slug}/lesson` to _toc.yml, under its part")
        return 0
    return 2


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Triton's layout bindings (nanobind) report "leaked" objects at interpreter exit: harmless, and not the
    # learner's business. Leave without running the interpreter's shutdown, so that report never prints.
    os._exit(code)
