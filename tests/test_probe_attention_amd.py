"""tools/probes/probe_attention_amd.py without a GPU (issue 42's AMD question): lesson 36's v0 written in AMD Gluon,
compiled for gfx950 (and gfx942) with its machine-code facts on a reduced set, the facts the probe's README row
states, the host model on lesson 36's odd shapes, and the one-mistake variants the model must reject."""
import importlib.util

import pytest

from gluon_course.course import repo_root
from gluon_course.machine.compile import amd_backend_available

# A probe's checks, not the course's: `make test-probes` runs them (outside `make test` and CI).
pytestmark = pytest.mark.probe

PROBE = repo_root() / "tools" / "probes" / "probe_attention_amd.py"
needs_amd = pytest.mark.skipif(not amd_backend_available(), reason="this Triton has no AMD code generator")


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("probe_attention_amd", PROBE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_kernel_calls_lesson_36s_device_functions(probe):
    """The strongest form of reuse: the AMD kernel's helpers are lesson 36's own objects, not copies."""
    for name in ("key_blocks", "mask_scores", "online_softmax", "store_output"):
        assert getattr(probe, name) is getattr(probe.LESSON, name), name
    assert probe.constexprs("gfx950", 128, False, 2)["LESSON_SOFTMAX"]
    assert not probe.constexprs("gfx950", 128, False, 4)["LESSON_SOFTMAX"]


@needs_amd
def test_compiles_with_its_facts_on_a_reduced_set(probe):
    shown = []
    assert probe.compile_check(("gfx950",), (64, 128), (2, 4), show=shown.append) is None
    assert probe.compile_check(("gfx942",), (128,), (4,), show=shown.append) is None
    lines = [line for text in shown for line in text.splitlines() if line.startswith("| gfx")]
    loops = [line for line in lines if "| unmasked |" in line or "| masked |" in line]
    assert len(loops) == 2 * (2 * 2 * 2) + 2 * 2          # a row per key loop (unmasked, masked) of each compile
    assert len(lines) - len(loops) == 2 * 2 * 2 + 2       # and one per compile for what lies outside the loops


@needs_amd
def test_the_facts_the_readme_states(probe):
    """gfx950, head dim 128: P's conversion to the P·V MFMA's operand costs 16 lane swaps a key block at k_width 2
    (lesson 36's) and 8, none at 4; V is read with the transposing LDS read, Kᵀ with 16-byte reads; nothing is
    written to LDS in the loops; no scratch. gfx942 has neither the transposing read nor the lane swaps."""
    beyond = {}
    for p in (2, 4, 8):
        f = probe.kernel_facts("gfx950", 128, False, p)
        assert probe.facts_problem(f) is None
        unmasked = f["loops"][0]
        beyond[p] = unmasked["cross_lane"] - unmasked["reduction_cross_lane"]
        assert unmasked["lds_reads"] == {"ds_read_b128": 16, "ds_read_b64_tr_b16": 32}
        assert unmasked["copies"] == {"buffer_load_dwordx4": 8} and not unmasked["loads"]
        assert unmasked["to_bf16"] == 16 and f["budget"].scratch_bytes == 0
    assert beyond == {2: 16, 4: 0, 8: 16}
    # Q's tile through LDS once, before the loops (its convert_layout); O stored 4 bf16 (8 bytes) a lane at a time.
    assert f["before_loops"] == {"buffer_load_dwordx4": 8, "ds_write_b128": 8, "ds_read_b128": 8}
    assert f["kernel_lds_writes"] == 8 and f["stores"] == {"global_store_dwordx2": 16}
    f = probe.kernel_facts("gfx942", 128, False, 4)
    assert f["loops"][0]["lds_reads"] == {"ds_read2_b64": 16, "ds_read_u16": 128}
    assert f["loops"][0]["copies"] == {"buffer_load_dword": 32} and f["loops"][0]["to_bf16"] == 0


def test_within_lesson_36s_bound_in_the_host_model(probe):
    said = []
    assert probe.model_check(show=said.append) is None
    assert said and "within lesson 36's bound" in said[0]


def test_the_model_rejects_each_planted_mistake(probe, capsys):
    assert probe.plant_verdicts(show=print) is None
    assert capsys.readouterr().out.count("rejected:") == len(probe.PLANTS)
