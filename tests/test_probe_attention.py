"""tools/probes/probe_attention.py without a GPU (issue 42's groundwork for lesson 36): attention v0 and v2 in the host
model against fp64 on odd shapes, causal and not, and with scores past fp32's exp2 range; sm_90 compiles whose key
loops hold the facts a lesson would assert (P from registers into wgmma, one exp2 per score and per row, no
shared-memory round trip, no mask in the unmasked loop); and the plants each check must reject."""
import importlib.util
import math

import numpy as np
import pytest
import torch

from gluon_course.course import repo_root

# A probe's checks, not the course's: `make test-probes` runs them (CI does, after `make test`).
pytestmark = pytest.mark.probe

PROBE = repo_root() / "tools" / "probes" / "probe_attention.py"


def _load(path=PROBE, name="probe_attention"):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def probe():
    return _load()


def test_the_reference_is_torchs_sdpa_with_top_left_causal(probe):
    """reference() in fp64 against torch's SDPA (its math, in fp64) with Sq < Sk and Sq > Sk, causal and not."""
    for Sq, Sk in ((3, 7), (7, 3)):
        q, k, v = probe.inputs(1, 2, Sq, Sk, 16)
        for causal in (False, True):
            want = torch.nn.functional.scaled_dot_product_attention(
                *(torch.from_numpy(x).double() for x in (q, k, v)), is_causal=causal).numpy()
            got, _ = probe.reference(q, k, v, causal, 1 / math.sqrt(16))
            assert np.allclose(got, want, rtol=1e-12, atol=1e-12), (Sq, Sk, causal)


def test_key_blocks_skip_what_lies_above_the_diagonal(probe):
    """(n_full, n_all) on the host: causal, a tile of 128 queries at row 256 over 1000 keys in blocks of 64 visits
    blocks 0..5, of which 0..3 unmasked; past the keys' end the tail block is masked; without causal every block."""
    key_blocks = probe.patched_key_blocks()
    assert key_blocks(256, 1000, 128, 64, True) == (4, 6)
    assert key_blocks(896, 1000, 128, 64, True) == (14, 16)         # the last block (keys 960..1023) is partial
    assert key_blocks(0, 1, 128, 64, True) == (0, 1)
    assert key_blocks(256, 1000, 128, 64, False) == (15, 16)


def test_host_model_both_kernels_on_odd_shapes(probe):
    assert probe.host_check() is None


def test_sm90_key_loops_hold_the_lessons_facts(probe):
    """v0 and v2 as the GPU step runs them (BLOCK_N 128), head dim 128, causal: fit, two key loops, S's HGMMAs from
    shared memory, O's with P from registers, EX2 once per score and row, no STS/LDS, FSEL only where masked."""
    assert probe.compile_check(cases=[("v0", 128, True), ("v2", 128, True)]) is None
    f = probe.kernel_facts("v2", 128, True)
    unmasked, masked = f["loops"]
    assert unmasked["hgmma"] == {"HGMMA.64x128x16.F32.BF16 A:smem": 8, "HGMMA.64x128x16.F32.BF16 A:regs": 8}
    assert (unmasked["ex2"], unmasked["fsel"], masked["fsel"]) == (66, 0, 128)
    assert unmasked["shared_stores"] + unmasked["shared_loads"] == 0


PLANTS = _load().PLANTS


@pytest.mark.parametrize("plant", PLANTS, ids=[p[0] for p in PLANTS])
def test_each_plant_is_rejected_by_its_check(probe, tmp_path, plant):
    mistake, old, new, by = plant
    said = probe.plant_verdict(plant, tmp_path)
    assert said, mistake
    if by == "compile":
        # A performance mistake: the numbers stay right, so only the compile facts can see it.
        assert "FSEL" in said
        assert probe.load_planted(old, new, tmp_path).host_check(names=("v2",)) is None


def test_the_launcher_refuses_what_the_kernels_cannot_take(probe):
    def refusal(q_shape, k_shape, dtype=torch.bfloat16):
        q, k = torch.zeros(q_shape, dtype=dtype), torch.zeros(k_shape, dtype=dtype)
        with pytest.raises(ValueError) as e:
            probe.require_attention_args(q, k, k, probe.CONFIGS["v2"])
        return str(e.value)
    assert "bfloat16" in refusal((1, 1, 8, 64), (1, 1, 8, 64), torch.float16)
    assert "head dim 96" in refusal((1, 1, 8, 96), (1, 1, 8, 96))
    assert "at least one query and one key" in refusal((1, 1, 8, 64), (1, 1, 0, 64))
    assert "no grouped-query heads" in refusal((1, 4, 8, 64), (1, 2, 8, 64))
