"""What a lesson is checked against, declared next to its solution (``solutions/NN-slug/checks.py``).

A lesson's checks module defines ``CHECKS = LessonChecks(...)``:

- ``targets``: the compile targets the lesson is held to (a wgmma lesson: ``("sm_90",)``; a gfx950 lesson:
  ``("gfx950", "gfx942")``). Tests require at least one machine-code check per declared target.
- ``machine_code``: checks that run anywhere (the kernel is compiled here for a target, no GPU needed);
- ``correctness``: checks that need a GPU (fresh random data, poisoned and guarded outputs, odd sizes);
- ``figures``: measurements on a GPU, each judged by an ``Expectation``.

Every check and figure has a **key**: a short identifier that never changes when its sentence is reworded.
Records (``results/<gpu>.json``), planted mistakes and the README use keys, never sentences.

Each check's ``run`` takes the lesson *module* (the solution, or a learner's starter) and returns ``None``
when it passes, ``Passed(note)`` when it passes with something worth showing, ``NotChecked(why)`` when it could
not decide on this machine (the host model met an operation it does not model: counted as neither a pass nor a
failure, printed as "not checked here: why"), or one sentence saying what is wrong; so the same checks grade both.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable

from ..measure.timing import Measurement

KEY = re.compile(r"^[a-z0-9][a-z0-9_]*$")


@dataclass(frozen=True)
class Reference:
    """A figure someone measured, with where it comes from (GPU, who, which file or post)."""
    value: float
    unit: str
    source: str

    def __str__(self) -> str:
        return f"{self.value:g} {self.unit} ({self.source})"


def _bounds_text(low, high, as_percent: bool, unit: str | None, ceiling: str) -> str:
    f = (lambda v: f"{100 * v:.1f}%") if as_percent else (lambda v: f"{v:.2f}")
    tail = f" of {ceiling}" if as_percent else f" {unit}"
    if low is not None and high is not None:
        return f"{f(low)}–{f(high)}{tail}"
    if low is not None:
        return f"≥ {f(low)}{tail}"
    return f"≤ {f(high)}{tail}"


@dataclass(frozen=True)
class CourseTarget:
    """What the best kernel of the course reached or aims for: shown with its verdict, never failing a learner."""
    low: float | None
    high: float | None = None
    why: str = ""


@dataclass(frozen=True)
class ClassRange:
    """A figure's range on one GPU class where the ratio its range was drawn from does not carry over (a scalar loop
    is bound by issue and latency, the copy by DRAM bandwidth, and their balance differs from class to class). Written
    from the class's datasheets, not measured on it: ``why`` gives the arithmetic."""
    low: float | None
    high: float | None
    why: str


def on_classes(classes, low: float | None, high: float | None, why: str) -> dict:
    """``{class: ClassRange(low, high, why)}`` for each of ``classes``: several classes that share one range."""
    return {c: ClassRange(low, high, why) for c in classes}


@dataclass(frozen=True)
class Expectation:
    """The **range** a correct solution reaches on any supported GPU of its class (it gates ``check``), in a
    named unit, and optionally the **course target** (informs only).

    By default the figure is a fraction of a ceiling measured in the same run (``low``/``high`` are fractions,
    0.95 = 95%, either may be None for an open side). With ``unit`` set, the figure is an absolute quantity in
    that unit instead (e.g. ``"sectors/request"`` or ``"× torch"``). ``why`` says where the range comes from;
    ``references`` carry absolute figures with their provenance, for comparison.

    ``low``/``high`` are the range of the class the figure was measured on (the recordings' GPU). ``classes`` gives
    another class its own range where that ratio does not carry over (``{"sm_86": ClassRange(...)}``): on a GPU of
    that class, ``verdict``, ``describe`` and ``target_line`` judge by it (``here()``), and ``describe`` says that it
    was written for the class and not run on one.
    """
    low: float | None
    high: float | None
    ceiling: str                       # "copy" (device-to-device copy), "cuBLAS", ... (or what the unit compares)
    why: str
    references: tuple[Reference, ...] = field(default_factory=tuple)
    unit: str | None = None            # None: a fraction of the ceiling, shown in percent
    target: CourseTarget | None = None
    classes: tuple = ()                # ((class, ClassRange), ...); a dict is accepted and kept as its items
    written_for: str | None = None     # set on the expectation ``on(cls)`` returns: the class whose range this is

    def __post_init__(self):
        if isinstance(self.classes, dict):
            object.__setattr__(self, "classes", tuple(sorted(self.classes.items())))
        for cls, r in self.classes:
            if not isinstance(r, ClassRange):
                raise TypeError(f"classes[{cls!r}] must be a ClassRange, not {type(r).__name__}")

    def on(self, gpu_class: str | None) -> "Expectation":
        """This expectation as a GPU of ``gpu_class`` is judged: that class's range where ``classes`` has one, else
        this one unchanged."""
        found = dict(self.classes).get(gpu_class)
        if found is None:
            return self
        return replace(self, low=found.low, high=found.high, why=found.why, classes=(), written_for=gpu_class)

    def here(self) -> "Expectation":
        """``on`` the class of the GPU here (``measure.device.gpu_class``); without a GPU, this one unchanged (the
        recorded figures were measured on its class)."""
        if not self.classes:
            return self
        from ..measure.device import gpu_class

        return self.on(gpu_class())

    def verdict(self, value: float) -> str:
        e = self.here()
        if value != value:  # NaN
            return "✗ not measured"
        if e.low is not None and value < e.low:
            return "✗ below"
        if e.high is not None and value > e.high:
            return "✗ above"
        return "✓ in range"

    def ok(self, value: float) -> bool:
        return self.verdict(value).startswith("✓")

    def format(self, value: float) -> str:
        if self.unit is None:
            return f"{100 * value:.1f}% of {self.ceiling}"
        return f"{value:.2f} {self.unit}"

    def describe(self) -> str:
        e = self.here()
        text = "expected " + _bounds_text(e.low, e.high, e.unit is None, e.unit, e.ceiling)
        return text + (f" ({e.written_for}'s range: written, not run on this class)" if e.written_for else "")

    def target_line(self, value: float) -> str | None:
        """``course target ≥ 95.0% of copy: ✗ not reached`` (None when the figure has no course target)."""
        t = self.target
        if t is None:
            return None
        reached = value == value and (t.low is None or value >= t.low) and (t.high is None or value <= t.high)
        text = _bounds_text(t.low, t.high, self.unit is None, self.unit, self.ceiling)
        return f"course target {text}: {'✓ reached' if reached else '· not reached (informs only)'}"


@dataclass(frozen=True)
class Passed:
    """What a check returns when it passes *and* has something worth showing (e.g. the error CUDA gave). ``facts``:
    what the run saw that the note does not print (its words stay the same from run to run, for nbval), kept with the
    check's outcome in ``results/`` when it is recorded."""
    note: str
    facts: dict | None = None


@dataclass(frozen=True)
class NotChecked:
    """What a check returns when it cannot decide here, and says why (the host model does not know an operation the
    kernel uses, say). It is not a pass: the runner prints "not checked here: <why>" and counts it apart."""
    why: str


@dataclass(frozen=True)
class Check:
    key: str                                            # stable: records and plants name it
    title: str                                          # the sentence a learner reads
    run: Callable[[object], "str | Passed | NotChecked | None"]
    target: str | None = None                           # the compile target it reads; None: host code / GPU run
    gpu: bool = False                                   # needs a GPU (a correctness check)

    def __post_init__(self):
        if not KEY.match(self.key):
            raise ValueError(f"check key {self.key!r}: use lower-case letters, digits and _")


@dataclass(frozen=True)
class Figure:
    key: str                                            # "tile_copy_R4" (stable: records name it)
    title: str                                          # "tile copy, R=4"
    measure: Callable[[object], Measurement]            # checks correctness first, then times
    expect: Expectation
    headline: bool = False                              # shown in the README's lesson table


@dataclass
class LessonChecks:
    targets: tuple[str, ...]
    teaches: str                                        # one line: what the lesson teaches (README table)
    machine_code: list[Check] = field(default_factory=list)
    correctness: list[Check] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    planned: bool = False                               # a scaffolded lesson not written yet: listed as planned

    def __post_init__(self):
        from ..machine.targets import TARGETS

        unknown = [t for t in self.targets if t not in TARGETS]
        if unknown:
            raise ValueError(f"unknown targets {unknown}; the course compiles for {', '.join(TARGETS)}")
        keys = [c.key for c in self.machine_code + self.correctness] + [f.key for f in self.figures]
        doubled = sorted({k for k in keys if keys.count(k) > 1})
        if doubled:
            raise ValueError(f"keys used twice: {doubled}")
        for c in self.correctness:
            if not c.gpu:
                raise ValueError(f"correctness check {c.key!r} must be marked gpu=True")
        for c in self.machine_code:
            if c.gpu:
                raise ValueError(f"machine-code check {c.key!r} runs without a GPU: gpu=False")
            if c.target is not None and c.target not in self.targets:
                raise ValueError(f"check {c.key!r} reads {c.target}, which the lesson does not declare")

    def check(self, key: str) -> Check:
        for c in self.machine_code + self.correctness:
            if c.key == key:
                return c
        raise KeyError(f"no check {key!r}; checks: {[c.key for c in self.machine_code + self.correctness]}")

    def figure(self, key: str) -> Figure:
        for f in self.figures:
            if f.key == key:
                return f
        raise KeyError(f"no figure {key!r}; figures: {[f.key for f in self.figures]}")


@dataclass(frozen=True)
class Plant:
    """A planted mistake: the lesson's solution with ``old`` (which occurs exactly once) replaced by ``new``,
    and the key of the check that must reject it. Plants are made from the solution text at test time, so
    they never drift; one whose ``old`` text no longer occurs fails loudly.

    ``in_passing``: the mistake makes Python (numpy, torch, Triton) raise an exception on its way, a list used as a
    dictionary key, a misspelt name: the plant shows that the learner reads the course's sentence for it (the place
    and the likely cause), not that the check itself catches the mistake. Every other plant must be rejected by the
    check's own sentence (or a compiler message the course translates)."""
    mistake: str
    old: str
    new: str
    rejected_by: str
    gpu: bool = False
    in_passing: bool = False
