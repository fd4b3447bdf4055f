"""``check NN``: grade a lesson module (a learner's starter, or the solution) against the lesson's spec.

On any machine: the kernels must compile and show the lesson's machine-code signature.
On a GPU: they must also be correct (fresh random data, poisoned and guarded outputs, odd sizes) and every
figure must land in its expected range.
"""
from __future__ import annotations

from pathlib import Path

from .course import lesson, load_solution, load_starter
from .measure import free_cache, gpu_name, has_gpu
from .spec import run_check, spec_for


def check(number: str | int, path: str | Path | None = None, solution: bool = False, figures: bool = True) -> bool:
    the = lesson(number)
    spec = spec_for(the.number)
    if solution:
        module, shown = load_solution(the.number), the.solution_path
    else:
        module, shown = load_starter(the.number, path), Path(path) if path else the.starter_path
    print(f"Lesson {the.number} · {the.title} · checking {_relative(shown)}")
    passed = failed = 0

    print("machine code (compiled here, no GPU needed):")
    for c in spec.cpu_checks:
        ok, detail = run_check(c, module)
        passed, failed = passed + ok, failed + (not ok)
        print(f"  {'✓' if ok else '✗'} {c.name}" + (f": {detail}" if detail else ""))

    if failed:
        print("on a GPU: skipped until the machine-code checks pass")
    elif not has_gpu():
        print(f"on a GPU: skipped, no GPU here (correctness checks: {len(spec.gpu_checks)}, "
              f"figures: {len(spec.figures)})")
    else:
        print(f"on the GPU ({gpu_name()}):")
        for c in spec.gpu_checks:
            ok, detail = run_check(c, module)
            free_cache()
            passed, failed = passed + ok, failed + (not ok)
            print(f"  {'✓' if ok else '✗'} {c.name}" + (f": {detail}" if detail else ""))
        if figures and not failed:
            for f in spec.figures:
                m = f.measure(module)
                free_cache()
                verdict = f.expect.verdict(m.value)
                ok = verdict.startswith("✓")
                passed, failed = passed + ok, failed + (not ok)
                print(f"  {'✓' if ok else '✗'} {f.title}: {m.text} = {f.expect.format(m.value)}; "
                      f"{f.expect.describe()} {verdict}")
    print(f"{passed} passed, {failed} failed")
    return failed == 0


def _relative(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
