"""Every lesson's checks reject at least one plausible wrong kernel (see planted.py)."""
import importlib.util
import sys

import pytest

from gluon_course import lesson
from gluon_course.measure import has_gpu
from gluon_course.spec import run_check, spec_for
from planted import PLANTS


def _planted_module(plant, tmp_path):
    text = lesson(plant.lesson).solution_path.read_text()
    assert text.count(plant.old) == 1, f"plant {plant.mistake!r}: its text must occur once in the solution"
    path = tmp_path / f"planted_{plant.lesson}.py"
    path.write_text(text.replace(plant.old, plant.new))
    name = f"planted_{plant.lesson}_{abs(hash(plant.mistake))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("plant", PLANTS, ids=[f"{p.lesson}-{p.mistake[:40]}" for p in PLANTS])
def test_plant_is_rejected(plant, tmp_path):
    if plant.gpu and not has_gpu():
        pytest.skip("this plant is caught by a GPU correctness check; no GPU here")
    module = _planted_module(plant, tmp_path)
    spec = spec_for(plant.lesson)
    checks = [c for c in spec.cpu_checks + spec.gpu_checks if c.name.startswith(plant.rejected_by)]
    assert checks, f"no check named {plant.rejected_by!r} in lesson {plant.lesson}"
    for check in checks:
        ok, detail = run_check(check, module)
        assert not ok, f"{check.name} accepted the planted mistake: {plant.mistake}"
        assert detail, "a rejection must say what is wrong"


def test_every_lesson_has_a_plant_caught_without_a_gpu():
    from gluon_course.course import LESSONS

    lessons = {n for n, t in LESSONS.items() if t.solution_path.exists()}
    cpu_caught = {p.lesson for p in PLANTS if not p.gpu}
    gpu_caught = {p.lesson for p in PLANTS if p.gpu}
    assert lessons <= cpu_caught, f"lessons without a CPU-caught plant: {sorted(lessons - cpu_caught)}"
    assert lessons <= gpu_caught, f"lessons without a GPU-caught plant: {sorted(lessons - gpu_caught)}"
