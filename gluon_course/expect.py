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
    """A range for a figure, in a named unit: a fraction of a ceiling measured in the same run.

    ``low``/``high`` are fractions (0.95 = 95%); either may be None for an open side. ``why`` says where the
    range comes from; ``references`` carry absolute figures with their provenance, for comparison.
    """
    low: float | None
    high: float | None
    ceiling: str                       # "copy" (device-to-device copy), "cuBLAS", ...
    why: str
    references: tuple[Reference, ...] = field(default_factory=tuple)

    def verdict(self, value: float) -> str:
        if self.low is not None and value < self.low:
            return "✗ below"
        if self.high is not None and value > self.high:
            return "✗ above"
        return "✓ in range"

    def ok(self, value: float) -> bool:
        return self.verdict(value).startswith("✓")

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            return f"expected {100 * self.low:.1f}–{100 * self.high:.1f}% of {self.ceiling}"
        if self.low is not None:
            return f"expected ≥ {100 * self.low:.1f}% of {self.ceiling}"
        return f"expected ≤ {100 * self.high:.1f}% of {self.ceiling}"
