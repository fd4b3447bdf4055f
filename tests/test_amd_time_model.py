"""The AMD time model (gluon_course.amd.time_model): its outputs for every compiled solution of lessons 20-29 (Triton
3.9.0, gfx950, fp16) pinned, its rules on listings written by hand, its constants' sources, the check built on it, the
record and the results page drawn from it, and the budget box and lanes the notebooks print."""
from __future__ import annotations

import types

import pytest
import triton

from gluon_course import amd, load_checks, load_solution
from gluon_course.amd import amdgcn, time_model as tm

# (clocks per trip, K steps per trip, the MFMA pipe's busy share, the MFMA's idle clocks by cause) of each solution.
PINNED = {
    "20": (6936, 1, 0.2953, {"lgkmcnt": 1916, "vmcnt": 1176, "issue": 1076, "VMEM queue": 720}),
    "21": (7412, 1, 0.2763, {"lgkmcnt": 1860, "issue": 1756, "VMEM queue": 1156, "vmcnt": 592}),
    "22": (6344, 1, 0.3228, {"vmcnt": 1188, "lgkmcnt": 1168, "VMEM queue": 948, "issue": 520, "LDS queue": 472}),
    "23": (5516, 1, 0.3713, {"vmcnt": 1188, "VMEM queue": 992, "lgkmcnt": 808, "issue": 480}),
    "24": (3956, 1, 0.5177, {"VMEM queue": 932, "issue": 684, "LDS queue": 292}),
    "25": (3568, 1, 0.5740, {"VMEM queue": 832, "issue": 372, "LDS queue": 316}),
    "26": (7096, 2, 0.5772, {"VMEM queue": 1436, "issue": 872, "LDS queue": 588, "lgkmcnt": 104}),
    "27": (6716, 2, 0.6099, {"VMEM queue": 1508, "issue": 648, "LDS queue": 464}),
    "28": (5560, 2, 0.7367, {"issue": 500, "VMEM queue": 492, "LDS queue": 288, "lgkmcnt": 184}),
    "29": (5560, 2, 0.7367, {"issue": 500, "VMEM queue": 492, "LDS queue": 288, "lgkmcnt": 184}),
}

@pytest.mark.parametrize("number", sorted(PINNED))
def test_the_model_of_each_solutions_k_step_for_the_pinned_triton(number):
    assert triton.__version__ == "3.9.0", "these clocks come from Triton 3.9.0's listings; re-derive them for another"
    clocks, steps, busy, idle = PINNED[number]
    p, _ = amd.lesson_prediction(number)
    assert (round(p.trip_clocks), p.steps, round(p.mfma_busy, 4), p.idle_by_reason()) == (clocks, steps, busy, idle)
    # Every clock of the trip is the MFMA pipe's or an idle clock with its cause.
    assert sum(idle.values()) + p.mfma_clocks == pytest.approx(p.trip_clocks, abs=2)
    # The steady state is reached: one more trip takes as long as the last.
    k = load_checks(number).compiled(load_solution(number), "gfx950", "fp16")
    longer = tm.run(amdgcn.main_loop(k).instructions, lds_ways=p.lds_ways, steps=p.steps, trips=8)
    assert round(longer.trip_clocks) == clocks


def test_the_model_lands_within_the_course_target_of_every_vendor_figure_it_is_compared_with():
    """Informs only (a course target never gates a learner); pinned here so that a change to the model that moves a
    version outside ±20% of AMD's figure is seen, and the results page says it."""
    for number, (_, _, busy, _) in PINNED.items():
        c = tm.compare(int(number) - 20, amd.lesson_prediction(number)[0])
        assert c.predicted == pytest.approx(busy, abs=5e-5) and c.within, (number, c.ratio)


def test_every_constant_names_where_it_comes_from():
    for machine in tm.MACHINES.values():
        for k in machine.constants():
            assert k.source and k.unit and k.value > 0, k
            assert any(word in k.source for word in ("at ", "gluon_course")), f"{k.name}: no revision or course fact"
        assert machine.mfma_clocks(amd.MFMA[machine.target].opcode("fp16")) == 16
    assert len(tm.LEAVES_OUT) >= 5


# The passes LLVM's scheduling model gives each fp16/bf16 MFMA of the course's two targets, copied here from the files
# the model cites (SISchedule.td's SIDPGFX950FullSpeedModel and SIDPGFX942FullSpeedModel in ROCm/llvm-project at
# 37d9a345: 16X16X16 and 16X16X32 Write4PassMAI, 32X32X8 and 32X32X16 Write8PassMAI; llvm-mca's gfx950.s at 071dcd49
# and gfx942-mfma.s at bf4aafd4 print the same 4.00 and 8.00), not from the model.
LLVM_PASSES = {
    "gfx950": {"v_mfma_f32_16x16x32_f16": 4, "v_mfma_f32_16x16x32_bf16": 4, "v_mfma_f32_16x16x16_f16": 4,
               "v_mfma_f32_16x16x16_bf16": 4, "v_mfma_f32_32x32x16_f16": 8, "v_mfma_f32_32x32x16_bf16": 8,
               "v_mfma_f32_32x32x8_f16": 8, "v_mfma_f32_32x32x8_bf16": 8},
    "gfx942": {"v_mfma_f32_16x16x16_f16": 4, "v_mfma_f32_16x16x16_bf16": 4, "v_mfma_f32_32x32x8_f16": 8,
               "v_mfma_f32_32x32x8_bf16": 8},
}


def test_an_mfma_holds_the_pipe_for_llvms_passes_four_clocks_each():
    for target, table in LLVM_PASSES.items():
        for opcode, passes in table.items():
            assert tm.MACHINES[target].mfma_clocks(opcode) == 4 * passes, (target, opcode)
    # gfx950's 16x16x16 has half the FMAs of its 16x16x32 and the same 16 clocks (FMAs over the peak rate: 8).
    assert tm.GFX950.mfma_clocks("v_mfma_f32_16x16x16_f16") == 16
    # The course's own MFMA on each target, at those clocks, retires the target's peak FMAs per clock.
    for target, machine in tm.MACHINES.items():
        m, n, k = amd.MFMA[target].instr_shape
        assert m * n * k / machine.mfma_clocks(amd.MFMA[target].opcode("bf16")) == amd.PEAKS[target].fma_per_clock
    # An MFMA the table does not hold is refused with a sentence, never given a guessed number of clocks.
    for machine, opcode in ((tm.GFX942, "v_mfma_f32_16x16x32_f16"), (tm.GFX950, "v_mfma_f32_16x16x4_f32"),
                            (tm.GFX950, "v_mfma_f32_16x16x128_f8f6f4")):
        with pytest.raises(ValueError, match="the time model knows the passes"):
            machine.mfma_clocks(opcode)


# -- what the agreement rests on -------------------------------------------------------------------------------

def _row(name, value, counts, unit="clocks", busy=None):
    """A swept constant written by hand: ``counts`` maps each value swept to the versions within (of 3)."""
    return {"name": name, "value": value, "unit": unit,
            "values": [{"value": v, "within": list(range(n)), "busy": busy or {"0": v}} for v, n in counts.items()]}


def test_the_words_say_which_constants_the_agreement_does_not_test_and_which_it_rests_on():
    steady = _row("issue slot", 4, {1: 2, 2: 3, 4: 3, 8: 3})
    idle = _row("TCP time (dword)", 16, {8: 3, 16: 3, 32: 3}, busy={"0": 0.5})
    knob = _row("memory latency", 1000, {500: 2, 900: 3, 1000: 3, 1300: 3, 2000: 1})
    fixed = _row("MFMA pass", 4, {2: 0, 4: 3, 8: 1})
    assert tm.held_range(knob, 3) == (900, 1300) and tm.held_range(fixed, 3) == (4, 4)
    assert tm.robust(steady, 3) and not tm.robust(knob, 3) and tm.changes_nothing(idle)
    words = tm.agreement_words([steady, fixed, idle, knob], 3)
    assert "One constant keeps all 3 within from ×0.5 to ×2, so the agreement does not test it: issue slot; the TCP " \
        "time (dword) changes no prediction." in words
    assert "Two constants move it: the MFMA pass (all 3 only at 4 clocks)" in words and "the memory latency (900 to 1300 " \
        "clocks), a budget AMD's README names" in words
    assert words.endswith("The agreement rests on the memory latency: no measurement fixes its value.")
    # A constant the agreement moves with must say what its value stands on.
    with pytest.raises(ValueError, match="say in STANDING"):
        tm.agreement_words([_row("LDS queue", 4, {1: 0, 4: 3, 8: 3}, unit="requests per wave")], 3)


def test_the_sensitivity_table_is_the_model_run_again():
    """The sweep the results page and lesson 20 show is the model's: the record's digest is that of the loops, the
    constants and the model's code as they are, and part of it run again here gives the same figures (every constant
    at ×0.5 and ×2, the ends of the spans of the two constants the agreement rests on, and one step past each)."""
    import contextlib
    import io
    import json

    from gluon_course.course import lesson, repo_root
    from gluon_course.website import amd_results

    sweep = tm.recorded_sensitivity()
    loops = amd_results.sensitivity_loops()
    assert sweep["inputs"] == tm.sensitivity_inputs(loops), "run `python -m gluon_course tables`"
    constants = tm.GFX950.constants()
    assert [r["name"] for r in sweep["rows"]] == [k.name for k in constants] and sweep["versions"] == sorted(loops)
    runs = {}
    for k, row in zip(constants, sweep["rows"]):
        assert [v["value"] for v in row["values"]] == tm.sweep_values(k) and row["value"] == k.value
        again = {0.5 * k.value, 2 * k.value}
        if row["name"] in ("memory latency", "TCP in flight"):
            values = [v["value"] for v in row["values"]]
            lo, hi = (values.index(x) for x in tm.held_range(row, len(loops)))
            again |= {values[lo - 1], values[lo], values[hi], values[hi + 1]}
        for v in row["values"]:
            if v["value"] not in again:
                continue
            machine = tm.varied(tm.GFX950, k.name, v["value"])
            for version, (instructions, ways, steps) in loops.items():
                key = (tuple(i.text for i in instructions), k.name, v["value"])
                if key not in runs:
                    runs[key] = round(tm.run(instructions, machine, lds_ways=ways, steps=steps).mfma_busy, 4)
                assert v["busy"][str(version)] == runs[key], (k.name, v["value"], version)
                assert (version in v["within"]) == (abs(runs[key] / amd.VENDOR[version][1] - 1) <= tm.TARGET)
    # The results page shows it, and lesson 20 prints it as the record has it.
    assert amd_results.sensitivity_markdown(sweep) in (repo_root() / "book" / "results.md").read_text()
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        tm.show_sensitivity()
    cells = json.loads(lesson("20").notebook_path.read_text())["cells"]
    printed = next(c for c in cells if c.get("id") == "rests-20-code")["outputs"][0]["text"]
    assert "".join(printed) == said.getvalue()


def _listing(*lines: str):
    """A K loop written by hand: the lines, then the loop's branch back."""
    body = "\n".join(f"\t{line}" for line in lines)
    text = f".LBB0_1:                                ; =>This Inner Loop Header: Depth=1\n{body}\n" \
           "\ts_cbranch_scc1 .LBB0_1\n.Lfunc_end0:\n"
    return amdgcn.main_loop(types.SimpleNamespace(amdgcn=text, kernel_name="hand"))


MFMA = "v_mfma_f32_16x16x32_f16 a[0:3], v[0:3], v[4:7], a[0:3]"
COPY = "buffer_load_dwordx4 v2, s[8:11], 0 offen lds"
READ = "ds_read_b128 v[0:3], v9"


def test_back_to_back_mfmas_keep_the_pipe_busy():
    loop = _listing(*[MFMA] * 8)
    p = tm.run(loop.instructions)
    # 8 MFMAs of 16 clocks; the branch issues in the last one's shadow.
    assert (p.trip_clocks, p.mfma_clocks, p.mfma_busy) == (128, 128, 1.0)
    assert p.limited_by().startswith("the MFMA pipe")


def test_a_wait_for_a_copy_just_issued_costs_a_round_trip():
    loop = _listing(COPY, "s_waitcnt vmcnt(0)", *[MFMA] * 4)
    p = tm.run(loop.instructions)
    # The copy is taken after the last trip's (64 clocks of TCP) and is back 1000 clocks later.
    assert p.trip_clocks == pytest.approx(1000 + 64 + 0, abs=8)
    assert p.idle_by_reason()["vmcnt"] > 900
    # Waited for a trip later (vmcnt(1)), behind 64 MFMAs (1024 clocks, more than the round trip), it costs nothing.
    hidden = tm.run(_listing(COPY, "s_waitcnt vmcnt(1)", *[MFMA] * 64).instructions)
    assert hidden.mfma_busy == 1.0


def test_the_tcp_holds_eight_kib_of_one_waves_copies():
    p = tm.run(_listing(*[COPY] * 16, *[MFMA] * 4).instructions, trips=1)
    taken = [e.start for e in p.events if e.kind == "vmem"]
    back = [e.ready for e in p.events if e.kind == "vmem"]
    # Eight 1 KiB copies fill the wave's 8 KiB: the ninth is taken when the first is back, not 64 clocks later.
    assert taken[:8] == [64 * i for i in range(8)]
    assert taken[8] == back[0]
    # Issue stalls once three copies wait for the TCP.
    assert p.idle_by_reason().get("VMEM queue", 0) > 0 or any(s.reason == "VMEM queue" for s in p.stalls)


def test_lds_reads_queue_four_deep_and_conflicts_multiply_their_service():
    reads = _listing(*[READ] * 8, "s_waitcnt lgkmcnt(0)", *[MFMA] * 2).instructions
    free, conflicted = tm.run(reads), tm.run(reads, lds_ways=4)
    assert free.budget["LDS"] == 8 * 16 and conflicted.budget["LDS"] == 8 * 64
    assert conflicted.trip_clocks > free.trip_clocks + 8 * 48 - 64
    first = [e for e in free.events if e.kind == "lds"]
    assert first[0].ready - first[0].issue == tm.GFX950.lds_latency.value
    assert any(s.reason == "LDS queue" for s in free.stalls)


def test_s_nop_takes_its_wait_states_and_a_barrier_one_slot():
    p = tm.run(_listing(MFMA, "s_nop 3", "s_barrier", "v_add_u32_e32 v1, v2, v3").instructions)
    assert p.budget["issue"] == 4 * (1 + 4 + 1 + 1 + 1)
    assert p.trip_clocks == 32      # eight slots: the MFMA, four wait states, the barrier, the add, the branch


def test_the_check_says_what_a_slower_schedule_waits_for():
    """Lesson 25 with a scheduling wall after the MFMAs: the copies, no longer spread among them, burst after the step's
    last MFMA; the order checks still pass (the first of each kind keeps its place), the time model does not."""
    variant = amd.solution_variant("25", "        acc = cdna3.mfma(a, b, acc)\n        # Tile i + 1's group",
                                   "        acc = cdna3.mfma(a, b, acc)\n        gl.amd.hint.sched_barrier()\n"
                                   "        # Tile i + 1's group", "wall_after_mfma")
    checks = load_checks("25").CHECKS
    assert checks.check("mfma_first").run(variant) is None
    said = checks.check("time_model").run(variant)
    assert isinstance(said, str) and "copies the memory path cannot take yet" in said and "52.4%" in said
    passed = checks.check("time_model").run(load_solution("25"))
    assert "57.4%" in passed.note and "lesson 24's solution: 51.8%" in passed.note and "AMD's v5: 58.4%" in passed.note


def test_the_record_and_the_results_page_are_the_model_itself():
    from gluon_course.website import amd_results

    rows = amd_results.time_rows(["24", "25"])
    record = amd_results.record(rows)
    entry = record["figures"]["24/time_model"]
    assert entry["value"] == PINNED["24"][2] and entry["details"]["vendor_mfma_efficiency"] == amd.VENDOR[4][1]
    assert entry["details"]["ratio"] == round(PINNED["24"][2] / amd.VENDOR[4][1], 3)
    assert [c["name"] for c in record["constants"]] == [k.name for k in tm.GFX950.constants()]
    page = amd_results.time_markdown(rows)
    assert "| v4 global prefetch (lesson 24) | **51.8%** | 3956 |" in page and "0.90 ✓" in page
    assert amd_results.order_line(rows) == "The model orders every neighbouring pair as AMD's figures do."


def test_the_budget_box_and_the_lanes():
    import matplotlib

    matplotlib.use("Agg")
    p, said = amd.lesson_prediction("24")
    box = tm.budget_box(p, "v4")
    for line in ("128 × v_mfma_f32_16x16x32_f16 × 16 clocks", "32 × ds_read_b128 × 16 clocks (conflict-free in memory.lds)",
                 "16 × buffer_load_dwordx4 … lds × 64 clocks", "3956 clocks per trip: the MFMA pipe busy 51.8%"):
        assert line in box
    fig = amd.step_chart({"v4": p}, "v4")
    assert len(fig.axes) == 1 and [t.get_text() for t in fig.axes[0].get_yticklabels()] == \
        ["issue slot", "MFMA pipe 52%", "LDS 13%", "vector memory (TCP) 26%"]
    # The trip's end is marked, and the legend names every kind of wait.
    assert [line.get_xdata()[0] for line in fig.axes[0].lines] == [p.trip_clocks]
    assert {t.get_text() for t in fig.legends[0].get_texts()} >= {f"waiting: {r}" for r in amd.charts.STALL_COLOURS}


def test_the_lanes_of_a_steady_trip_cover_the_window_and_nothing_past_it():
    from gluon_course.amd import charts

    p, _ = amd.lesson_prediction("24")
    lanes = charts.step_lanes(p)
    # The MFMA lane is the pipe's busy spans over the window: its share is the model's share of the peak.
    assert lanes["busy"]["MFMA pipe"] == pytest.approx(p.mfma_busy, abs=1e-9)
    for lane in charts.STEP_LANES[1:]:
        assert all(0 <= a and a + w <= p.trip_clocks + 1e-9 for a, w in lanes[lane])
    # One issue tick per instruction of the trip; the waits' clocks are the stalls'.
    assert len(lanes["issue"]) == len(p.events)
    assert sum(w for _, w, _ in lanes["stalls"]) == pytest.approx(sum(s.end - s.start for s in p.stalls))
    # Lesson 24's sixteen copies are taken by the TCP in two runs of 8 (the 8 KiB a wave may have in flight).
    assert len(lanes["vector memory (TCP)"]) == 16


# -- lesson 29's group size from a count ----------------------------------------------------------------------

def test_the_strips_a_wave_of_grouped_tiles_touches_and_the_best_group_sizes():
    from gluon_course.model import xcd
    from gluon_course.model.run import patched

    assert [xcd.grouped_strips(32, gm) for gm in (1, 2, 3, 4, 5, 8, 16, 32)] == [33, 18, 14, 12, 12, 12, 18, 33]
    assert xcd.best_group_sizes(xcd.CUS_PER_XCD["gfx950"]) == (4, 5, 6, 7, 8)     # 32 CUs per XCD on an MI355X
    assert xcd.best_group_sizes(xcd.CUS_PER_XCD["gfx942"]) == (5, 6, 7, 8)        # 38 on an MI300X
    # The kernel's own order meets the count where a wave's run of 32 tiles lies inside one group, and only there.
    tile_of = patched(load_solution("29").tile_of)
    for gm, model in ((4, 12), (6, 18), (8, 12), (16, 18)):
        rows, cols = xcd.workgroup_tiles(lambda pid, m, n: tile_of(pid, m, n, gm, 8), 32, 32)
        assert xcd.most_strips(rows, cols) == model, gm
    with pytest.raises(ValueError):
        xcd.grouped_strips(0, 4)


def test_a_gfx942_constant_carried_over_from_gfx950_says_it_is_assumed():
    for k in tm.GFX942.constants():
        carried = k.source.startswith("gfx950's")
        assert carried == ("assumed" in k.source), k
        if carried:
            assert k.value == next(g.value for g in tm.GFX950.constants() if g.name == k.name), k
