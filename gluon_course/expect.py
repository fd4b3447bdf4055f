"""Expected ranges, where they come from, and the one verdict line a notebook prints."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Reference:
    """A figure someone measured, with where it comes from (GPU, who, which file or post)."""
    value: float
    unit: str
    source: str

    def __str__(self) -> str:
        return f"{self.value:g} {self.unit} ({self.source})"


@dataclass(frozen=True)
class Expectation:
    """A range for a figure, in a named unit.

    By default the figure is a fraction of a ceiling measured in the same run (``low``/``high`` are fractions,
    0.95 = 95%, either may be None for an open side). With ``unit`` set, the figure is an absolute quantity in
    that unit instead (e.g. ``"sectors/request"`` or ``"× torch"``). ``why`` says where the range comes from;
    ``references`` carry absolute figures with their provenance, for comparison.
    """
    low: float | None
    high: float | None
    ceiling: str                       # "copy" (device-to-device copy), "cuBLAS", ... (or what the unit compares)
    why: str
    references: tuple[Reference, ...] = field(default_factory=tuple)
    unit: str | None = None            # None: a fraction of the ceiling, shown in percent

    def verdict(self, value: float) -> str:
        if value != value:  # NaN
            return "✗ not measured"
        if self.low is not None and value < self.low:
            return "✗ below"
        if self.high is not None and value > self.high:
            return "✗ above"
        return "✓ in range"

    def ok(self, value: float) -> bool:
        return self.verdict(value).startswith("✓")

    def format(self, value: float) -> str:
        if self.unit is None:
            return f"{100 * value:.1f}% of {self.ceiling}"
        return f"{value:.2f} {self.unit}"

    def describe(self) -> str:
        f = (lambda v: f"{100 * v:.1f}%") if self.unit is None else (lambda v: f"{v:.2f}")
        tail = f" of {self.ceiling}" if self.unit is None else f" {self.unit}"
        if self.low is not None and self.high is not None:
            return f"expected {f(self.low)}–{f(self.high)}{tail}"
        if self.low is not None:
            return f"expected ≥ {f(self.low)}{tail}"
        return f"expected ≤ {f(self.high)}{tail}"
