"""gluon_course.nvidia.pictures: the ring of a pipelined GEMM drawn from the kernel's own run in the host model. These tests
read the traces of the lessons' solutions (one small problem each, on the CPU) and check what the pictures claim:
every K step is copied before it is read and read before its slot is refilled; each slot's barrier goes through
its phases with alternating parities; the figures have one labelled row per slot."""
import io

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from gluon_course import load_checks  # noqa: E402
from gluon_course.nvidia.pictures import (barrier_figure, barrier_history, ring_picture, ring_timeline,  # noqa: E402
                                   ring_trace, slot_fills)


def _fixed(number: str) -> dict:
    return load_checks(number).KERNEL.fixed


def _problem(number: str) -> dict:
    """One tile of C, except lesson 17 (persistent): two tiles for its one program, so that the ring goes on across
    a tile's end."""
    return {"M": 2 * _fixed("17")["BLOCK_M"], "programs": 1} if number == "17" else {}


@pytest.fixture(scope="module")
def traces():
    cache = {}

    def trace(number: str):
        if number not in cache:
            cache[number] = ring_trace(number, **_problem(number))
        return cache[number]
    return trace


def test_lesson_16_copies_each_k_step_before_reading_it_and_reads_it_before_the_refill(traces):
    cfg = _fixed("16")
    trace = traces("16")
    fills = slot_fills(trace)
    k_steps = -(-(2 * cfg["STAGES"] * cfg["BLOCK_K"] + cfg["BLOCK_K"]) // cfg["BLOCK_K"])
    assert [f.step for f in fills] == list(range(k_steps))
    assert [f.slot for f in fills] == [k % cfg["STAGES"] for k in range(k_steps)]
    # Two TMA copies (A's tile and B's) per K step, each one an event of the trace.
    assert sum(e["what"] == "tma load" for e in trace) == 2 * k_steps
    for f in fills:
        assert f.issued < f.landed <= f.observed < f.read_start < f.read_end, f
        assert f.read_async and f.parity == (f.step // cfg["STAGES"]) & 1
    for before, after in zip(fills, fills[cfg["STAGES"]:]):
        assert before.slot == after.slot
        assert before.read_end < after.issued, f"slot {before.slot} refilled before its read was retired"


def test_the_raw_trace_of_lesson_16_orders_copy_wait_read_retire_refill(traces):
    """The same order read from the events themselves, without slot_fills: a wgmma reads a slot only after a copy
    into it and a wait on that copy's barrier; the next copy into the slot comes only after warpgroup_mma_waits
    that leave every group that read it retired."""
    def ring_slot(name):                 # "a_ring[2]" -> "[2]": A's and B's tiles of one K step share a slot
        return name[name.index("["):]

    barrier_of, waited = {}, set()
    readers = {}                         # slot -> the async wgmma groups (numbered from 0) that read it
    issued = retired = 0                 # async wgmma groups issued, and retired (the oldest first)
    for e in traces("16"):
        if e["what"] == "tma load":
            slot = ring_slot(e["slot"])
            assert all(group < retired for group in readers.get(slot, [])), \
                f"step {e['t']} refills {e['slot']} while a wgmma group that reads it may still run"
            readers[slot] = []
            barrier_of[slot] = e["barrier"]
            waited.discard(e["barrier"])
        elif e["what"] == "wait":
            waited.add(e["barrier"])
        elif e["what"] == "wgmma":
            for slot in {ring_slot(name) for name in e["slots"]}:
                assert barrier_of.get(slot) in waited, f"step {e['t']} reads {slot} before a wait on its copy"
                readers[slot].append(issued)
            issued += 1
        elif e["what"] == "wgmma wait":
            retired = max(retired, issued - e["depth"])
    assert issued and retired == issued


def test_ring_timeline_has_one_labelled_row_per_slot(traces):
    stages = _fixed("16")["STAGES"]
    fig = ring_timeline(traces("16"), stages, title="Lesson 16")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"slot {s}" for s in range(stages)]
    heading = fig._suptitle.get_text()
    assert "Lesson 16" in heading and f"STAGES = {stages}" in heading
    assert "host model" in ax.get_title() and "not GPU timing" in ax.get_title()
    assert fig.legends, "the figure has a legend"
    width, height = fig.get_size_inches()
    assert width == 7 and 2 <= height <= 3.2


def test_ring_timeline_refuses_a_trace_with_more_slots_than_stages(traces):
    with pytest.raises(ValueError, match="outside a ring of 2"):
        ring_timeline(traces("16"), 2)


def test_lesson_14s_first_barrier_goes_through_phases_0_and_1_with_alternating_parities(traces):
    rows = barrier_history(traces("14"), "ready[0]", trips=2)
    completed = [r["completed"] for r in rows if r["event"] == "phase complete"]
    assert completed == [0, 1]
    assert [r["waited_parity"] for r in rows if r["event"] == "wait"] == [0, 1]
    # Before each phase completes a wait must name its parity; after, the next phase's.
    assert [r["parity"] for r in rows if r["event"] == "expect"] == [0, 1]
    assert [r["parity"] for r in rows if r["event"] == "phase complete"] == [1, 0]
    # expect() is the phase's one arrival and announces both tiles' bytes; the two copies bring them.
    full = [r for r in rows if r["event"] == "tma load"][1::2]
    assert all(r["copied"] == r["expected"] > 0 and r["pending"] == 0 for r in full)
    assert rows[0]["event"] == "start" and rows[0]["pending"] == 1


def test_barrier_figure_draws_one_column_per_event(traces):
    rows = barrier_history(traces("14"), "ready[0]")
    fig = barrier_figure(rows, title="Lesson 14: ready[0]")
    assert isinstance(fig, Figure)
    assert len(fig.axes[0].get_xticklabels()) == len(rows)
    fig.savefig(io.BytesIO(), format="png")


@pytest.mark.parametrize("number", ["13", "14", "16", "17"])
def test_the_ring_of_each_pipelined_lesson_draws(number, traces):
    cfg = _fixed(number)
    fills = slot_fills(traces(number))
    assert {f.slot for f in fills} == set(range(cfg["STAGES"]))
    assert all(f.read_start is None or f.issued < f.read_start for f in fills)
    if number == "17":                   # two tiles, one program: every K step of both goes through the ring
        k_steps = -(-(2 * cfg["STAGES"] * cfg["BLOCK_K"] + cfg["BLOCK_K"]) // cfg["BLOCK_K"])
        assert sum(f.read_start is not None for f in fills) == 2 * k_steps
    fig = ring_timeline(traces(number), cfg["STAGES"], title=f"Lesson {number}")
    assert len(fig.axes[0].get_yticklabels()) == cfg["STAGES"]
    png = io.BytesIO()
    fig.savefig(png, format="png")
    assert png.getvalue().startswith(b"\x89PNG")


def test_a_planted_race_is_drawn_up_to_where_the_model_stops(tmp_path):
    """Lesson 16's host-model plant (the refill one tile too far ahead): ring_trace raises the model's error, and with
    keep_partial returns the trace up to it, which the picture ends with the model's sentence."""
    from gluon_course import lesson
    from gluon_course.course import load_module_file, load_plants
    from gluon_course.model import ModelRace

    plant = next(p for p in load_plants("16") if p.rejected_by == "host_model")
    path = tmp_path / "planted_16.py"
    path.write_text(lesson("16").solution_path.read_text().replace(plant.old, plant.new))
    planted = load_module_file(path, "pictures_planted_16")
    with pytest.raises(ModelRace):
        ring_trace("16", module=planted)
    trace = ring_trace("16", module=planted, keep_partial=True)
    assert trace[-1]["what"] == "model error" and trace[-1]["error"] == "ModelRace"
    fig = ring_picture("16", module=planted, keep_partial=True)
    assert "The model stopped the kernel: " + trace[-1]["message"][:40] in fig.axes[0].get_title().replace("\n", " ")
