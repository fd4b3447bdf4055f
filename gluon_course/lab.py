"""What a lesson notebook calls: live figures on a GPU, recorded figures everywhere else.

    lab = Lab("02")                 # prints where the figures come from
    lab.correctness()               # GPU: runs the checks; no GPU: prints the recorded outcome
    lab.figure("tile_copy_R4")      # one figure, judged against its expected range
    lab.figures(["tile_copy_R1", ...])

Every line a Lab prints has the same words live and recorded; only the numbers and the provenance line
differ, which is what the notebook tests (nbval) are told to ignore. A figure outside its range prints
``✗ below`` / ``✗ above`` and the notebook test fails on it.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import records
from .course import lesson, load_solution
from .measure import free_cache, has_gpu
from .spec import run_check, spec_for


@dataclass
class Shown:
    """A figure as the notebook received it (live or recorded)."""
    key: str
    value: float
    text: str
    verdict: str
    details: dict


class Lab:
    def __init__(self, number: str | int, module=None, show_header: bool = True):
        self.lesson = lesson(number)
        self.spec = spec_for(number)
        self.live = has_gpu()
        self._module = module
        if show_header:
            print(self.header())

    @property
    def module(self):
        if self._module is None:
            self._module = load_solution(self.lesson.number)
        return self._module

    # -- where the figures come from ----------------------------------------------------------
    def header(self) -> str:
        if self.live:
            p = records.provenance()
            return f"Figures: live on {p['gpu']} · Triton {p['triton']} · torch {p['torch']} · {p['date']}"
        stamps = sorted({self._stamp(e) for k, e in records.load()["figures"].items()
                         if k.startswith(self.lesson.number + "/")})
        if not stamps:
            return f"Figures: none recorded yet for lesson {self.lesson.number} (no GPU here)"
        return "Figures: recorded on " + "; ".join(stamps) + " (no GPU here, so not live)"

    @staticmethod
    def _stamp(entry: dict) -> str:
        return (f"{entry['gpu']} · Triton {entry['triton']} · torch {entry['torch']} · {entry['date']} · "
                f"commit {entry['commit']}")

    # -- checks ---------------------------------------------------------------------------------
    def machine_code(self) -> bool:
        """The CPU checks, compiled here and now (no GPU needed, same output everywhere)."""
        ok_all = True
        for check in self.spec.cpu_checks:
            ok, detail = run_check(check, self.module)
            ok_all &= ok
            print(f"{'✓' if ok else '✗'} {check.name}" + (f": {detail}" if detail else ""))
        return ok_all

    def correctness(self) -> bool:
        """GPU correctness checks: run live, or the recorded outcome of the last live run."""
        ok_all = True
        for check in self.spec.gpu_checks:
            key = f"{self.lesson.number}/check/{_slug(check.name)}"
            if self.live:
                ok, detail = run_check(check, self.module)
                free_cache()
                if records.recording_enabled():
                    records.save(key, {"kind": "check", "name": check.name, "passed": ok, "detail": detail})
            else:
                entry = records.recorded(key)
                ok, detail = entry["passed"], entry["detail"]
            ok_all &= ok
            print(f"{'✓' if ok else '✗'} {check.name}" + (f": {detail}" if detail else ""))
        return ok_all

    # -- figures --------------------------------------------------------------------------------
    def figure(self, key: str, quiet: bool = False) -> Shown:
        fig = self.spec.figure(key)
        record_key = f"{self.lesson.number}/{key}"
        if self.live:
            m = fig.measure(self.module)
            free_cache()
            shown = Shown(key, m.value, m.text, fig.expect.verdict(m.value), m.details)
            if records.recording_enabled():
                records.save(record_key, {"kind": "figure", "title": fig.title, "value": m.value, "text": m.text,
                                          "ceiling": fig.expect.ceiling, "details": m.details,
                                          "expected": fig.expect.describe(), "verdict": shown.verdict})
        else:
            entry = records.recorded(record_key)
            shown = Shown(key, entry["value"], entry["text"], fig.expect.verdict(entry["value"]), entry["details"])
        if not quiet:
            print(f"{fig.title:<34} {shown.text:<34} = {fig.expect.format(shown.value)}; "
                  f"{fig.expect.describe()}  {shown.verdict}")
        return shown

    def figures(self, keys: list[str] | None = None) -> dict[str, Shown]:
        keys = keys or [f.key for f in self.spec.figures]
        return {k: self.figure(k) for k in keys}

    def references(self, key: str) -> None:
        """The absolute figures the range was drawn from, with provenance."""
        fig = self.spec.figure(key)
        print(f"{fig.title}: {fig.expect.describe()} — {fig.expect.why}")
        for ref in fig.expect.references:
            print(f"  reference: {ref}")


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
