"""Scheduling in Triton 3.9.0 (gl.amd.hint.sched_barrier, gl.amd.warp_pipeline_stage): what each changes in the K loop
of lessons 25 and 28 (amd.schedule_facts, fp16, gfx950), pinned, and the rules warp_pipeline_stage enforces."""
from __future__ import annotations

import pytest
import triton

from gluon_course import amd, load_solution
from gluon_course.amd import lab
from gluon_course.machine.compile import CompileFailed

PINNED = {
    ("28", None): {"barriers": 8, "s_setprio": 0, "region copies": [4] * 8, "longest copy run": 2,
                   "register-file moves": 0, "model": 0.7367, "clocks per K step": 2780},
    # sched_barrier after the first quadrant's MFMA: the copies in a run of 6, and the accumulators moved.
    ("28", 1): {"barriers": 8, "s_setprio": 0, "region copies": [4] * 8, "longest copy run": 6,
                "register-file moves": 576, "model": 0.6372, "clocks per K step": 3214},
    # the regions as warp-pipeline stages: a barrier at every stage border, s_setprio at each, the copies after them.
    ("28", 2): {"barriers": 24, "s_setprio": 24, "region copies": [0, 4, 0] * 8, "longest copy run": 4,
                "register-file moves": 460, "model": 0.5838, "clocks per K step": 3508},
}


@pytest.mark.parametrize("number, plant", sorted(PINNED, key=str))
def test_what_a_schedule_hint_changes_in_the_loop(number, plant):
    assert triton.__version__ == "3.9.0"
    mod = load_solution(number) if plant is None else amd.planted(number, "region_copies", plant)
    facts = amd.schedule_facts(mod, number)
    want = PINNED[number, plant]
    rotations = [want["region copies"][i:] + want["region copies"][:i] for i in range(len(want["region copies"]))]
    assert facts["region copies"] in rotations
    assert {k: v for k, v in facts.items() if k != "region copies"} == \
        {k: v for k, v in want.items() if k != "region copies"}


def test_warp_pipeline_stage_holds_no_wait_or_barrier():
    """Triton 3.9.0's warp pipeline pass: a stage may hold no barrier and no wait (the message is the compiler's)."""
    text = "            acc_tl = cdna3.mfma(at, bl, acc_tl, cd_regclass=\"a\")\n            async_copy.wait_group(5)\n"
    staged = ("            with gl.amd.warp_pipeline_stage(\"mfma\"):\n"
              "                acc_tl = cdna3.mfma(at, bl, acc_tl, cd_regclass=\"a\")\n"
              "                async_copy.wait_group(5)\n")
    mod = lab.solution_variant("28", text, staged, tag="stage_with_wait")
    with pytest.raises(CompileFailed, match="barrier or wait op cannot appear inside a warp_pipeline_stage region"):
        amd.compiled(mod, "gfx950", "fp16")
