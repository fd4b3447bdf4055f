"""The GPUs learners have: which lessons a GPU of each class runs (measure.device.runs_lessons_for), the sentence a
launcher that needs Hopper refuses another GPU with (nvidia.hopper.require_hopper), a figure's range on a class of its
own (grading.checks.Expectation.classes), the per-class machine-code facts (grading.facts) and the SM limits of the
classes before Hopper (machine.occupancy). The GPU is a stub: torch.cuda's answers are replaced, no GPU is needed."""
from __future__ import annotations

import types

import pytest
import torch

from gluon_course import lessons
from gluon_course.grading.checks import ClassRange, Expectation
from gluon_course.grading.classes import AMPERE_ADA_RTX50, DATASHEETS, class_ranges, lessons_on
from gluon_course.grading.facts import Facts, differences
from gluon_course.machine.occupancy import SM80, SM86, SM89, SM120, occupancy
from gluon_course.measure import device
from gluon_course.nvidia.hopper import require_hopper

NAMES = {(7, 5): "Tesla T4", (8, 0): "NVIDIA A100-SXM4-80GB", (8, 6): "NVIDIA GeForce RTX 3090",
         (8, 9): "NVIDIA L4", (9, 0): "NVIDIA H200", (10, 0): "NVIDIA B200", (12, 0): "NVIDIA GeForce RTX 5090"}


@pytest.fixture
def gpu(monkeypatch):
    """``gpu((8, 6))``: torch sees one NVIDIA GPU of that compute capability; ``gpu("gfx942")`` an AMD one."""
    def stub(kind):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
        if isinstance(kind, str):
            monkeypatch.setattr(torch.version, "hip", "6.2")
            monkeypatch.setattr(torch.cuda, "get_device_properties",
                                lambda device=None: types.SimpleNamespace(gcnArchName=f"{kind}:sramecc+:xnack-"))
            monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "AMD Instinct MI300X")
        else:
            monkeypatch.setattr(torch.version, "hip", None)
            monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: kind)
            monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: NAMES[kind])
    return stub


def _refusal() -> str:
    with pytest.raises(RuntimeError) as raised:
        require_hopper(torch.empty(1))
    return str(raised.value)


# ---- which lessons run where --------------------------------------------------------------------------------

@pytest.mark.parametrize("capability, cls", [((8, 0), "sm_80"), ((8, 6), "sm_86"), ((8, 9), "sm_89"),
                                             ((9, 0), "sm_90"), ((12, 0), "sm_120"), ((7, 5), "sm_75")])
def test_the_class_of_an_nvidia_gpu_is_its_compute_capability(gpu, capability, cls):
    gpu(capability)
    assert device.gpu_class() == cls


def test_an_ampere_gpu_runs_the_lessons_that_declare_its_class_and_no_other(gpu):
    gpu((8, 6))
    runs = {n for n, the in lessons().items() if not the.planned and device.runs_lessons_for(the.checks.targets)}
    assert runs == {"01", "02", "03", "04", "05", "10", "11", "12", "13"}
    assert runs == set(lessons_on("sm_86"))


def test_a_t4_runs_no_lesson_on_its_gpu_and_a_hopper_all_nvidia_ones(gpu):
    gpu((7, 5))
    assert not any(device.runs_lessons_for(the.checks.targets) for the in lessons().values())
    gpu((9, 0))
    nvidia = [n for n, the in lessons().items() if any(t.startswith("sm_") for t in the.checks.targets)]
    assert all(device.runs_lessons_for(lessons()[n].checks.targets) for n in nvidia)


def test_an_amd_gpu_runs_the_lessons_that_declare_its_architecture(gpu):
    gpu("gfx942")
    assert device.gpu_class() == "gfx942"
    assert device.runs_lessons_for(("gfx950", "gfx942")) and not device.runs_lessons_for(("gfx950",))


def test_no_gpu_runs_nothing(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device.gpu_class() is None and not device.runs_lessons_for(("sm_90",))


# ---- the refusal of a launcher that needs Hopper --------------------------------------------------------------

def test_an_rtx_3090_is_refused_with_the_lessons_that_run_on_it(gpu):
    gpu((8, 6))
    assert _refusal() == ("wgmma and TMA need Hopper (compute capability 9.x, e.g. H100, H200): GPUs before it have "
                          "neither. This GPU (NVIDIA GeForce RTX 3090) is an sm_86 (Ampere: RTX 30, A10, A40): "
                          "lessons 01–05 and 10–13 run on it")


def test_a_blackwell_gpu_is_told_that_wgmma_is_hoppers_and_where_it_runs(gpu):
    gpu((10, 0))
    said = _refusal()
    assert said.startswith("wgmma is Hopper's instruction (compute capability 9.x, e.g. H100, H200); Blackwell's "
                           "tensor cores take tcgen05 or mma.sync instead.")
    assert said.endswith("This GPU (NVIDIA B200) is an sm_100 (Blackwell: B200, GB200): lessons 01–05 and 10–14 "
                         "run on it")


def test_an_rtx_5090_is_told_it_runs_lesson_14_too(gpu):
    gpu((12, 0))
    assert _refusal().endswith("This GPU (NVIDIA GeForce RTX 5090) is an sm_120 (Blackwell: RTX 50): lessons 01–05 "
                               "and 10–14 run on it")


def test_a_t4_and_an_amd_gpu_are_refused_with_what_runs_there(gpu):
    gpu((7, 5))
    assert _refusal().endswith("This GPU (Tesla T4) is an sm_75 (Turing: T4, RTX 20): no lesson's GPU checks are "
                               "written for it; every lesson's machine-code checks run there, as on any machine")
    gpu("gfx942")
    assert _refusal().endswith("This GPU (AMD Instinct MI300X) is a gfx942 (CDNA3: MI300X): lessons 20–22 run on it")


def test_a_hopper_gpu_is_not_refused(gpu):
    gpu((9, 0))
    require_hopper(torch.empty(1))


# ---- a figure's range on another class ----------------------------------------------------------------------

def test_a_range_of_its_own_judges_a_gpu_of_that_class_and_says_it_is_not_run_there(gpu):
    e = Expectation(0.02, 0.12, "copy", "the H200's range", classes={"sm_86": ClassRange(0.06, 0.40, "datasheets")})
    gpu((8, 6))
    assert e.verdict(0.3) == "✓ in range" and e.verdict(0.03) == "✗ below"
    assert e.describe() == "expected 6.0%–40.0% of copy (sm_86's range: written, not run on this class)"
    assert e.here().why == "datasheets"
    gpu((9, 0))
    assert e.verdict(0.3) == "✗ above" and e.describe() == "expected 2.0%–12.0% of copy"


def test_without_a_gpu_the_recorded_class_range_applies(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    e = Expectation(0.02, 0.12, "copy", "why", classes={"sm_86": ClassRange(0.06, 0.40, "datasheets")})
    assert e.here() is e and e.verdict(0.3) == "✗ above"


def test_class_ranges_span_each_class_from_its_datasheets():
    ranges = class_ranges(lambda gpu: gpu.sms, "SMs", below=0.5, above=2.0, shown="{:.0f}")
    assert set(ranges) == set(AMPERE_ADA_RTX50)
    sm86 = [d.sms for d in DATASHEETS if d.gpu_class == "sm_86"]
    assert (ranges["sm_86"].low, ranges["sm_86"].high) == (0.5 * min(sm86), 2.0 * max(sm86))
    assert "RTX 3090 82" in ranges["sm_86"].why and "not measured" in ranges["sm_86"].why


def test_a_declared_class_without_a_range_of_its_own_keeps_the_recorded_one(gpu):
    e = Expectation(0.85, None, "copy", "streams on any GPU")
    gpu((8, 9))
    assert e.here() is e and e.describe() == "expected ≥ 85.0% of copy"


# ---- the machine-code facts of a class ----------------------------------------------------------------------

def test_differences_say_what_differs_from_sm_90():
    table = {"sm_90": Facts({"LDGSTS.E.BYPASS.128": 24, "LDS": 6}, registers=225, shared=49152),
             "sm_86": Facts({"LDGSTS.E.BYPASS.128": 24, "LDS": 3}, registers=221, shared=49152)}
    assert differences("sm_86", table, num_warps=4) == (
        "the same 24 × LDGSTS.E.BYPASS.128 as sm_90, but 3 × LDS where sm_90 has 6; 221 registers (sm_90: 225), "
        "49152 shared bytes; 2 blocks of 4 warps per SM, limited by shared memory and registers (sm_90: 2, limited "
        "by registers)")


# ---- the SMs before Hopper ----------------------------------------------------------------------------------

def test_a_16_kib_tile_fits_9_blocks_on_an_a100_and_5_where_shared_memory_is_100_kib():
    # 16 KiB + 1 KiB reserved = 17408 bytes: 167936 // 17408 = 9 on sm_80; 102400 // 17408 = 5 on sm_86/89/120.
    assert occupancy(16_384, registers=32, threads=128, limits=SM80).blocks == 9
    for limits in (SM86, SM89, SM120):
        occ = occupancy(16_384, registers=32, threads=128, limits=limits)
        assert (occ.blocks, occ.limited_by) == (5, "shared memory")


def test_1536_threads_and_the_block_limits_of_the_smaller_sms():
    # 128-thread blocks with few registers: 1536 / 128 = 12 on sm_86, sm_89, sm_120; 2048 / 128 = 16 on sm_80.
    assert occupancy(0, registers=16, threads=128, limits=SM86).blocks == 12
    assert occupancy(0, registers=16, threads=128, limits=SM80).blocks == 16
    # 32-thread blocks: the block limit bites first, 16 on sm_86, 24 on sm_89 and sm_120, 32 on sm_80.
    assert [occupancy(0, registers=16, threads=32, limits=lim).blocks for lim in (SM80, SM86, SM89, SM120)] == \
        [32, 16, 24, 24]
    # 99 KiB per block at most: one byte more cannot launch on sm_86; 163 KiB on sm_80.
    assert occupancy(99 * 1024 + 1, registers=32, threads=128, limits=SM86).blocks == 0
    assert occupancy(163 * 1024, registers=32, threads=128, limits=SM80).blocks == 1
