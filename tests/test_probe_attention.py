"""tools/probes/probe_attention.py without a GPU: its CPU steps (lesson 36's host-model and compile checks on the
solution) and its table of SASS facts for every configuration it times, the narrower key blocks included."""
import importlib.util

import pytest

from gluon_course.course import repo_root

# A probe's checks, not the course's: `make test-probes` runs them (outside `make test` and CI).
pytestmark = pytest.mark.probe

PROBE = repo_root() / "tools" / "probes" / "probe_attention.py"


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("probe_attention", PROBE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cpu_steps_pass_on_the_lesson(probe):
    assert probe.cpu_checks(("v2_model", "masks_sm_90")) is None


def test_every_timed_configuration_compiles_with_the_lessons_facts(probe):
    """The narrower key blocks the probe times beside the lesson's: the same facts hold (two loops, P from registers,
    one EX2 a score and a row, no shared-memory round trip, no mask in the unmasked loop), and the table lists them."""
    from gluon_course.nvidia import attention

    for name, (version, cfg) in probe.CONFIGS.items():
        f = attention.kernel_facts(probe.LESSON, version, 128, True, cfg)
        assert attention.facts_problem(f, cfg) is None, name
    table = probe.facts_table()
    assert all(f"| {name} |" in table for name in probe.CONFIGS)
