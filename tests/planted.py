"""Planted wrong kernels: each is its lesson's solution with one plausible mistake, and names the check
that must reject it. The plants are made from the solution text at test time, so they never drift; a plant
whose `old` text no longer occurs in the solution fails loudly instead of silently testing nothing."""
import importlib.util
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Plant:
    lesson: str
    mistake: str
    old: str          # text that occurs exactly once in the solution
    new: str          # what the mistaken version says instead
    rejected_by: str  # the start of the name of the check that must fail
    gpu: bool         # the rejecting check needs a GPU


def _collect() -> list:
    """Every tests/plants/*.py defines PLANTS; together they are the course's planted mistakes."""
    found = []
    for path in sorted((Path(__file__).parent / "plants").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"plants_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found.extend(module.PLANTS)
    return found


PLANTS = _collect()
