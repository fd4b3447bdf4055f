"""tools/probes/probe_attention_fa3.py without a GPU: its kernels (lesson 37's steps on lesson 36's v2) in the host model
on a reduced set of shapes, their sm_90 facts, and the plants each step must reject (and the early-looking releases
it must accept)."""
import importlib.util
import sys

import pytest

from gluon_course.course import repo_root

# A probe's checks, not the course's: `make test-probes` runs them (outside `make test` and CI).
pytestmark = pytest.mark.probe

PROBE = repo_root() / "tools" / "probes" / "probe_attention_fa3.py"


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("probe_attention_fa3", PROBE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_every_step_passes_the_host_model(probe):
    """A tail block, Sq ≠ Sk both ways, causal and not, and scores past exp2's range: O within the fp64 reference's
    bound, each element written once, no race on a slot, no hang."""
    shapes = ((1, 1, 200, 230), (1, 2, 100, 17), (1, 2, 1, 1))
    assert probe.model_step(probe, probe.FA3_VERSIONS, shapes) is None


def test_the_steps_compile_with_their_facts(probe):
    """At head dim 128, causal: no spill, wgmma not serialized, lesson 36's per-loop facts, and what each step is
    for where the compile keeps it (v3 and v4: every EX2 of a key loop issued while the next block's S is in
    flight; v4 and v4_pv: one take and one pass of the turn per loop)."""
    for version in probe.FA3_VERSIONS:
        f = probe.facts(version, 128, True, mod=probe)
        assert probe.facts_problem(f, probe.CONFIGS[version]) is None, version


def test_what_the_compile_does_to_each_order(probe):
    """The docstring's findings, read off the listings: in v3's order ptxas hoists the softmax's exponentials into
    the shadow of the next S, and in v4 the turn's handover sinks below them; in FA3's order the handover stays right
    after the products, and the exponentials sink below the wait that retires P·V."""
    v4 = probe.facts("v4", 128, True, mod=probe)
    v4_pv = probe.facts("v4_pv", 128, True, mod=probe)
    for loop in v4["loops"]:
        assert loop["ex2_under_s"] == loop["ex2"] and loop["turn_passed_before_ex2"] is False
    for loop in v4_pv["loops"]:
        assert loop["ex2_under_pv"] == 0 and loop["turn_passed_before_ex2"] is True


@pytest.mark.parametrize("index", range(5))
def test_each_plant_is_rejected(probe, index):
    """Each plant, on the first version it is meant for, by the step meant to reject it."""
    mistake, old, new, versions, by = probe.PLANTS[index]
    (outcome,) = probe.plant_outcomes([(mistake, old, new, versions[:1], by)])
    assert outcome["said"], mistake


def test_releases_that_are_not_mistakes_here_are_accepted(probe):
    """A K slot released before the wait that retires S_{j+1}: v2's producer refills it only after the V slot that
    the same wait frees, so the model must not call it a race."""
    for mistake, old, new, versions, by in probe.HARMLESS:
        (outcome,) = probe.plant_outcomes([(mistake, old, new, versions[-1:], by)])
        assert outcome["said"] is None, (mistake, outcome["said"])


def test_the_parametrized_plants_are_all_of_them(probe):
    """test_each_plant_is_rejected runs range(5): every plant of the list."""
    assert len(probe.PLANTS) == 5


# -- tools/probes/probe_gqa_v4.py: lesson 37's v4 with grouped heads ----------------------------------------------------

GQA_PROBE = repo_root() / "tools" / "probes" / "probe_gqa_v4.py"


@pytest.fixture(scope="module")
def gqa_probe():
    spec = importlib.util.spec_from_file_location("probe_gqa_v4", GQA_PROBE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_v4_with_grouped_heads_passes_lesson_38s_prefill_check(gqa_probe, tmp_path):
    """The variant (lesson 37's v4, its producer reading query head h's KV head) passes lesson 38's prefill check in
    the host model and lesson 37's v4 compile checks with 32 query heads on 8 KV heads."""
    assert gqa_probe.model_check(gqa_probe.variant_module(tmp_path)) is None


def test_the_prefill_check_rejects_a_kv_head_that_ignores_the_batch(gqa_probe, tmp_path):
    """The same check fails when the KV head is h // GROUP of the first sequence whatever the program's batch."""
    text = gqa_probe.lesson("37").solution_path.read_text()
    wrong = text.replace(gqa_probe.SIGNATURE, gqa_probe.SIGNATURE.replace(
        "):", ", HQ: gl.constexpr = 1,\n                        GROUP: gl.constexpr = 1):")).replace(
        gqa_probe.PRODUCER, gqa_probe.PRODUCER.replace("v_empty, gl.program_id(1), Sq, Sk,",
                                                       "v_empty, (gl.program_id(1) % HQ) // GROUP, Sq, Sk,"))
    path = tmp_path / "gqa_v4_wrong.py"
    path.write_text(wrong + gqa_probe.LAUNCHER)
    said = gqa_probe.model_check(gqa_probe.load_module_file(path, "gqa_v4_wrong"))
    assert said and "outside the bound" in said, said


# -- tools/probes/probe_fa3_persistent.py: v4 over many tiles a program -------------------------------------------------

PERSISTENT_PROBE = repo_root() / "tools" / "probes" / "probe_fa3_persistent.py"


@pytest.fixture(scope="module")
def persistent_probe():
    spec = importlib.util.spec_from_file_location("probe_fa3_persistent", PERSISTENT_PROBE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("dynamic", (False, True))
def test_both_persistent_kernels_pass_the_host_model_on_several_tiles_a_program(persistent_probe, dynamic):
    """lesson 37's model shapes on 1 to 3 programs, causal and not, and a 3-slot ring: O within the bound, each
    element written once, no unread copy, (static) the turns alternating across a program's tiles."""
    assert persistent_probe.model_check(dynamic) is None


@pytest.mark.parametrize("broken", ("c0 += n_all\n", "turn0 += n_all + 1\n"))
def test_the_model_check_rejects_counters_that_do_not_carry_over(persistent_probe, broken, tmp_path):
    """In the static kernel, the ring's counter one short at the next tile (a copy never waited for), the turn counter
    one short (the consumers' products interleave): the check above is not passing for want of looking."""
    text = PERSISTENT_PROBE.read_text()
    assert text.count(broken) == 2                       # the static kernel's consumers first, then the dynamic's
    path = tmp_path / "broken_persistent.py"
    path.write_text(text.replace(broken, broken.replace("\n", " - 1\n"), 1))
    spec = importlib.util.spec_from_file_location("broken_persistent", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        said = module.model_check()
    except Exception as e:                 # the model's race and hang reports are exceptions
        said = f"{type(e).__name__}: {e}"
    assert said, broken


def test_the_tiles_that_fit_compile_with_lesson_37s_facts():
    spec = importlib.util.spec_from_file_location("probe_fa3_configs",
                                                  repo_root() / "tools" / "probes" / "probe_fa3_configs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = module.compile_report()
    assert report.count("| hold |") == 2 * len(module.CANDIDATES), report
