"""tools/probes/probe_fused_block.py without a GPU: its CPU steps (lesson 35's host-model and compile checks on the
solution) and the launch side of PDL through the course's kept launch (the flag reaching driver.c's launch)."""
import importlib.util

import pytest

from gluon_course.course import repo_root

# A probe's checks, not the course's: `make test-probes` runs them (outside `make test` and CI).
pytestmark = pytest.mark.probe

PROBE = repo_root() / "tools" / "probes" / "probe_fused_block.py"


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("probe_fused_block", PROBE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cpu_steps_pass_on_the_lesson(probe):
    assert probe.cpu_checks(("plain_model", "pdl_sm_90")) is None


def test_cpu_steps_name_an_unknown_check(probe):
    with pytest.raises(KeyError):
        probe.cpu_checks(("no_such_check",))


def test_pdl_reaches_the_launch(probe):
    """The launch side of PDL: the lesson's launcher compiles with ``launch_pdl`` (a CUDAOptions field, carried in the
    compiled kernel's metadata, which Triton's CudaLauncher copies into its ``launch_pdl``), and the kept launch's raw
    path hands that flag to driver.c's launch (stood in for by StubDriver) in its place after the cooperative flag."""
    from gluon_course.nvidia import fused
    from gluon_course.nvidia.launch import RawLaunch, StubDriver, stub_compiled

    lesson = probe.LESSON
    cfg = lesson.config_for(1, "plain", 6144, 4096)
    compiled = fused.compiled(lesson, "plain", cfg, True)
    assert compiled.metadata.launch_pdl is True
    assert fused.compiled(lesson, "plain", cfg, False).metadata.launch_pdl is False
    with StubDriver() as driver:
        k = stub_compiled(lesson.fused_kernel, compiled, num_warps=cfg["num_warps"])
        k.run.launch_pdl = compiled.metadata.launch_pdl          # what CudaLauncher.__init__ does with the metadata
        raw = RawLaunch.of(k)
        raw(3, 0, tuple(range(3 * 3)) + (0,) * 9)          # the maps, then R, scratch, counters and 6 integers
    grid_x, _, _, stream, function, cooperative, pdl = driver.launches[-1][:7]
    assert (grid_x, cooperative, pdl) == (3, False, True)
