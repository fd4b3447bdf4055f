"""tools/probes/probe_attention_decode.py without a GPU (issue 42, lesson 38's groundwork): the GQA prefill and the
split-KV decode in the host model on a reduced set of its shapes, the combine's bits in two program orders, the sm_90
facts of the decode variants at head dim 128, the split rule, the launcher's refusals, and the one-mistake variants
the model must reject."""
import importlib.util

import pytest
import torch

from gluon_course.course import repo_root

# A probe's checks, not the course's: `make test-probes` runs them (outside `make test` and CI).
pytestmark = pytest.mark.probe

PROBE = repo_root() / "tools" / "probes" / "probe_attention_decode.py"


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("probe_attention_decode", PROBE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_both_kernels_within_the_bound_in_the_model(probe):
    said = []
    assert probe.host_check(gqa_shapes=probe.MODEL_GQA_SHAPES[:3], show=said.append) is None
    assert len(said) == 2 + 2 * len(probe.COMPUTES)          # each prefill version; each decode bound and bits


def test_the_model_shapes_split_the_keys_and_end_in_partial_blocks(probe):
    """The decode shapes are what their comment says: several splits, a last block cut by the sequence's length."""
    for shape in probe.MODEL_DECODE_SHAPES:
        got, writes, want, bound, plan = probe.decode_in_model("wgmma", shape)
        assert plan.splits >= 2 and (writes == 1).all(), shape
        assert any(n % probe.MODEL_DECODE_CFG["BLOCK_N"] for n in shape[4]), shape


def test_decode_variants_compile_for_sm_90_with_their_facts(probe):
    shown = []
    assert probe.compile_check(head_dims=(128,), show=shown.append) is None
    assert len(shown) == len(probe.COMPUTES) + 2


def test_split_rule_fills_the_slots_once(probe):
    for batch, L in probe.TIMED:
        splits, chunk = probe.split_rule(batch, probe.HKV, L, 64)
        programs = splits * batch * probe.HKV
        assert chunk % 64 == 0 and (splits - 1) * chunk < L <= splits * chunk
        assert programs <= probe.SMS * probe.PROGRAMS_PER_SM or splits == 1
        assert programs > probe.SMS * probe.PROGRAMS_PER_SM // 2 or chunk <= 2 * 64


def test_launchers_refuse_with_sentences(probe):
    q = torch.zeros(1, 6, 1, 64, dtype=torch.bfloat16)
    k = torch.zeros(1, 4, 16, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="multiple of"):
        probe.require_gqa_heads(q, k, k)
    k = torch.zeros(1, 3, 16, 64, dtype=torch.bfloat16)
    for lens, words in (([0], "at least one key"), ([17], "at most the cache's 16")):
        with pytest.raises(ValueError, match=words):
            probe.DecodePlan(q, k, k, torch.tensor(lens, dtype=torch.int32))
    with pytest.raises(ValueError, match="int32"):
        probe.DecodePlan(q, k, k, torch.tensor([3]))


@pytest.mark.parametrize("index", range(3))          # the probe's own three; lesson 38 has the rest
def test_the_model_rejects_each_planted_mistake(probe, index, capsys):
    plant = probe.PLANTS[index]
    assert probe.plant_verdicts([plant], computes=("wgmma",), show=print) is None, plant[0]
    assert "rejected" in capsys.readouterr().out


# -- tools/probes/probe_decode_splits.py: the combine one split a trip (the lesson's first version) ------------

SPLITS_PROBE = repo_root() / "tools" / "probes" / "probe_decode_splits.py"


@pytest.fixture(scope="module")
def splits_probe():
    spec = importlib.util.spec_from_file_location("probe_decode_splits", SPLITS_PROBE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_one_at_a_time_combine_passes_lesson_38s_checks(splits_probe, tmp_path):
    """The variant is lesson 38's module with combine_splits' loops replaced, and it passes the lesson's host-model,
    program-order and sm_90 checks."""
    mod = splits_probe.one_at_a_time_module(tmp_path)
    text = (tmp_path / "decode_one_at_a_time.py").read_text()
    assert "for t in range(used):" in text and "for t0 in range(0, used, UNROLL)" not in text
    assert splits_probe.model_check(mod) is None


def test_the_lessons_checks_reject_the_variant_without_its_weights(splits_probe, tmp_path, monkeypatch):
    """The same checks fail when the variant adds the splits' sums without bringing them to the common maximum: the
    test above is not passing for want of running the variant."""
    broken = splits_probe.ONE_AT_A_TIME_LOOPS.replace("acc = acc + w[:, None] * o_t", "acc = acc + o_t")
    monkeypatch.setattr(splits_probe, "ONE_AT_A_TIME_LOOPS", broken)
    said = splits_probe.model_check(splits_probe.one_at_a_time_module(tmp_path))
    assert said and "outside the bound" in said, said
