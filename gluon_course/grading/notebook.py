"""What a lesson notebook calls: live figures on a GPU, recorded figures everywhere else.

    lab = Lab("02")                 # prints where the figures come from
    lab.machine_code()              # the CPU checks, compiled here and now
    lab.correctness()               # GPU: runs the checks; no GPU: prints the recorded outcome
    lab.figure("tile_copy_R4")      # one figure, judged against its range (and its course target, if any)
    lab.figures(["tile_copy_R1", ...])

Every line a Lab prints has the same words live and recorded; only the numbers, the provenance line and the
label that ends every line printed from a recording differ (``  [recorded: NVIDIA H200, 2026-12-03, the
solution]``: whose verdict it is, measured where and when), which is what the notebook tests (nbval) are told to
ignore. A figure outside its range prints ``✗ below`` / ``✗ above`` and the notebook test fails on it; a course
target not reached only says so.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import records
from ..course import lesson, load_checks, load_solution
from ..measure.device import gpu_class, gpu_name, has_gpu, runs_lessons_for
from .runner import measure_figure, run_check, shown_once


@dataclass
class Shown:
    """A figure as the notebook received it (live or recorded)."""
    key: str
    value: float
    text: str
    verdict: str
    details: dict
    recorded: str = ""      # live: ""; from a recording: the label its printed lines end with (records.recorded_label)


# Figures measured live in this process, by (record key, module file) (see Lab.figure).
_MEASURED: dict[tuple, Shown] = {}


class Lab:
    def __init__(self, number: str | int, module=None, show_header: bool = True):
        self.lesson = lesson(number)
        self.checks = load_checks(self.lesson.number).CHECKS
        # Live where ``check`` runs the GPU checks too: on a GPU of a class the lesson declares.
        self.live = runs_lessons_for(self.checks.targets)
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
        stamps = sorted({records.stamp(e) for k, e in records.load()["figures"].items()
                         if k.startswith(self.lesson.number + "/")})
        why = ("no GPU here" if not has_gpu() else
               f"the {gpu_name()} here is {gpu_class()}, a class this lesson's GPU checks are not written for")
        if not stamps:
            return f"Figures: none recorded yet for lesson {self.lesson.number} ({why})"
        return "Figures: recorded on " + "; ".join(stamps) + f" ({why}, so not live)"

    # -- checks ---------------------------------------------------------------------------------
    def machine_code(self) -> bool:
        """The CPU checks, compiled here and now (no GPU needed, same output everywhere)."""
        ok_all, said = True, []
        for check in self.checks.machine_code:
            outcome = run_check(check, self.module, self.lesson.number)
            ok_all &= not outcome.failed
            print(shown_once(outcome, said))
        return ok_all

    def correctness(self, keys: list[str] | None = None) -> bool:
        """GPU correctness checks (those of ``keys``, or all): run live, or the recorded outcome of the last live run."""
        ok_all = True
        for check in self.checks.correctness:
            if keys is not None and check.key not in keys:
                continue
            key = records.check_key(self.lesson.number, check.key)
            if self.live:
                outcome = run_check(check, self.module, self.lesson.number)
                ok, detail, label = outcome.ok, outcome.detail, ""
                if records.recording_enabled(self.lesson.number):
                    records.save(key, {"kind": "check", "name": check.title, "passed": ok, "detail": detail,
                                       **({"facts": outcome.facts} if outcome.facts else {})})
            else:
                entry = records.load()["figures"].get(key)
                if entry is None:
                    print(f"· {check.title}: not checked yet (it runs on a GPU; nothing is recorded for it)")
                    continue
                ok, detail, label = entry["passed"], entry["detail"], records.recorded_label(entry)
            ok_all &= ok
            print(f"{'✓' if ok else '✗'} {check.title}" + (f": {detail}" if detail else "") + label)
        return ok_all

    # -- figures --------------------------------------------------------------------------------
    def figure(self, key: str, quiet: bool = False) -> Shown:
        fig = self.checks.figure(key)
        record_key = records.figure_key(self.lesson.number, key)
        measured = (record_key, getattr(self.module, "__file__", None)) if self.live else None
        if measured in _MEASURED:
            # Measured once per process and module: a chart further down the notebook shows the figure printed
            # above it (and a recording keeps that one), not a second timing.
            shown = _MEASURED[measured]
        elif self.live:
            o = measure_figure(fig, self.module, self.lesson.number)
            shown = _MEASURED[measured] = Shown(key, o.value, o.text, o.verdict, o.details)
            if records.recording_enabled(self.lesson.number):
                records.save(record_key, {"kind": "figure", "title": fig.title, "value": o.value, "text": o.text,
                                          "ceiling": fig.expect.ceiling, "details": o.details,
                                          "expected": fig.expect.describe(), "verdict": o.verdict})
        else:
            entry = records.load()["figures"].get(record_key)
            if entry is None:        # a lesson written but not yet recorded on a GPU: say so, never invent
                if not quiet:
                    print(f"{fig.title:<34} not recorded yet: run this notebook on a GPU "
                          f"(python -m gluon_course record {self.lesson.number}); {fig.expect.describe()}")
                return Shown(key, float("nan"), "not recorded yet", "not recorded", {})
            shown = Shown(key, entry["value"], entry["text"], fig.expect.verdict(entry["value"]), entry["details"],
                          records.recorded_label(entry))
        if not quiet:
            print(f"{fig.title:<34} {shown.text:<34} = {fig.expect.format(shown.value)}; "
                  f"{fig.expect.describe()}  {shown.verdict}{shown.recorded}")
            target = fig.expect.target_line(shown.value)
            if target:
                print(f"{'':<35}{target}{shown.recorded}")
        return shown

    def figures(self, keys: list[str] | None = None) -> dict[str, Shown]:
        keys = keys or [f.key for f in self.checks.figures]
        return {k: self.figure(k) for k in keys}

    def versions_chart(self, key: str = "bf16_8192", first: str = "10", triton: tuple | None = ("17", "triton_bf16_8192"),
                       title: str = "bf16 8192³: each GEMM version so far", extra: dict | None = None) -> None:
        """Every GEMM version from lesson ``first`` to this one, each bar the version's figure ``key`` as a fraction
        of cuBLAS timed in the same run as it (this lesson's live on a GPU, the others' as recorded), its pairs'
        range as a whisker; plain Triton's recorded ratio as a line once lesson 17 has measured it. The subtitle says
        which runs the bars come from. ``extra``: {label: (lesson, figure key)} more bars after a version's own (a
        variant, a ceiling), each also a fraction of cuBLAS from its own run."""
        import contextlib
        import io

        from ..course import lessons
        from ..display import ratio_chart

        bars, missing, stamps = {}, [], set()
        for number, the in lessons().items():
            if not (first <= number <= self.lesson.number) or the.planned or number >= "20":
                continue
            label = the.title.split(": ")[0].replace("GEMM ", "")
            with contextlib.redirect_stdout(io.StringIO()):
                shown = (self if number == self.lesson.number else Lab(number, show_header=False)).figure(key, quiet=True)
            if shown.value != shown.value:
                missing.append(label)
                continue
            bars[label] = shown
            stamps.add("this run" if self.live and number == self.lesson.number else self._stamp(number, key))
            for extra_label, (extra_number, extra_key) in (extra or {}).items():
                if extra_number == number:
                    with contextlib.redirect_stdout(io.StringIO()):
                        other = (self if number == self.lesson.number else Lab(number, show_header=False)).figure(
                            extra_key, quiet=True)
                    if other.value == other.value:
                        d = other.details
                        if self.checks_of(number).figure(extra_key).expect.unit is not None and d.get("library_tflops"):
                            # A figure in TFLOPS: its share of the library timed in the same process.
                            other = Shown(other.key, d["tflops"] / d["library_tflops"], other.text, other.verdict, {},
                                          other.recorded)
                        bars[extra_label] = other
        line = {}
        if triton is not None and triton[0] <= self.lesson.number:
            with contextlib.redirect_stdout(io.StringIO()):
                t = (self if triton[0] == self.lesson.number else Lab(triton[0], show_header=False)).figure(
                    triton[1], quiet=True)
            if t.value == t.value:
                line["plain Triton (lesson 17)"] = t
        if missing:
            print("not recorded yet (no bar):", ", ".join(missing))
        if bars:
            this = next((label for label, f in bars.items() if f is not None and
                         self.lesson.title.split(": ")[0].replace("GEMM ", "") == label), None)
            ratio_chart(bars, title, "each bar a ratio to cuBLAS timed in its own run: " + "; ".join(sorted(stamps)),
                        bar=line, highlight=this)

    @staticmethod
    def checks_of(number: str):
        return load_checks(number).CHECKS

    @staticmethod
    def _stamp(number: str, key: str) -> str:
        entry = records.load()["figures"].get(records.figure_key(number, key))
        return f"{entry['gpu']}, {entry['date']}" if entry else "not recorded"

    def references(self, key: str) -> None:
        """The absolute figures the range was drawn from, with provenance."""
        fig = self.checks.figure(key)
        print(f"{fig.title}: {fig.expect.describe()} — {fig.expect.here().why}")
        if fig.expect.target is not None and fig.expect.target.why:
            print(f"  course target: {fig.expect.target.why}")
        for ref in fig.expect.references:
            print(f"  reference: {ref}")
