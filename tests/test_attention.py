"""Lesson 36's toolkit (gluon_course.nvidia.attention) on its own: the reference is PyTorch's SDPA (top-left causal),
and the solution's key_blocks counts the blocks a query tile visits (run on the host, the model's stand-ins for
gl.minimum and gl.cdiv)."""
import math

import numpy as np
import torch

from gluon_course import load_solution
from gluon_course.model.run import patched
from gluon_course.nvidia import attention


def test_the_reference_is_torchs_sdpa_with_top_left_causal():
    """reference() in fp64 against torch's SDPA (its math, in fp64) with Sq < Sk and Sq > Sk, causal and not."""
    for Sq, Sk in ((3, 7), (7, 3)):
        q, k, v = attention.inputs(1, 2, Sq, Sk, 16)
        for causal in (False, True):
            want = torch.nn.functional.scaled_dot_product_attention(
                *(torch.from_numpy(x).double() for x in (q, k, v)), is_causal=causal).numpy()
            got, _ = attention.reference(q, k, v, causal, 1 / math.sqrt(16))
            assert np.allclose(got, want, rtol=1e-12, atol=1e-12), (Sq, Sk, causal)


def test_key_blocks_skip_what_lies_above_the_diagonal():
    """(n_full, n_all): causal, a tile of 128 queries at row 256 over 1000 keys in blocks of 64 visits blocks 0..5,
    of which 0..3 unmasked; past the keys' end the tail block is masked; without causal every block."""
    key_blocks = patched(load_solution("36").key_blocks)
    counts = lambda *args: tuple(int(np.asarray(x)) for x in key_blocks(*args))  # noqa: E731
    assert counts(256, 1000, 128, 64, True) == (4, 6)
    assert counts(896, 1000, 128, 64, True) == (14, 16)          # the last block (keys 960..1023) is partial
    assert counts(0, 1, 128, 64, True) == (0, 1)
    assert counts(256, 1000, 128, 64, False) == (15, 16)


def test_block_kinds_of_a_causal_head():
    """The picture's data: 8 tiles of 128 over 1000 keys, causal: the diagonal masked, below it unmasked."""
    kinds = attention.block_kinds(load_solution("36"), 1000, 1000, True)
    assert (np.diag(kinds) == 1).all() and (np.tril(kinds, -1)[np.tril_indices(8, -1)] == 2).all()
    assert (np.triu(kinds, 1) == 0).all()


def test_overlap_facts_read_what_a_loop_order_overlaps():
    """Lesson 37's reading of a key loop: exponentials between S's HGMMAs and the wait that retires S are under S
    (a wait of depth 1 retires S once P·V was issued after it); a handover before the first EX2 is seen as such."""
    next_s_first = [("wait:k_ready", 1), ("S", 2), ("EX2", 5), ("S", 6), ("EX2", 61), ("arrive:turn[1]", 1),
                    ("wait:turn[0]", 1), ("PV", 8), ("wait<0>", 1), ("arrive:k_empty", 1)]
    f = attention.overlap_facts(next_s_first)
    assert (f["ex2"], f["ex2_under_s"], f["ex2_under_pv"]) == (66, 66, 0)
    assert (f["turn_waits"], f["turn_passes"], f["turn_passed_before_ex2"]) == (1, 1, False)
    fa3_order = [("S", 8), ("PV", 8), ("arrive:turn[1]", 1), ("wait<1>", 1), ("EX2", 60), ("wait<0>", 1),
                 ("EX2", 6)]
    f = attention.overlap_facts(fa3_order)
    assert (f["ex2_under_s"], f["ex2_under_pv"], f["turn_passed_before_ex2"]) == (0, 60, True)
    assert attention.overlap_facts([("S", 4), ("wait<0>", 1), ("EX2", 66), ("PV", 8), ("wait<0>", 1)])[
        "ex2_under_s"] == 0


def test_loop_events_name_the_barriers_of_lesson_36s_v2():
    """v2 compiled for sm_90 (head dim 64, causal): each key loop waits on K's ready barrier, multiplies and retires
    S, releases K's slot, waits on V's, multiplies P·V and releases V's slot, with the 66 exponentials between; each
    barrier named from the order of the kernel's mbarrier.init calls (the masked loop addresses them from a register
    and a uniform register)."""
    lesson = load_solution("36")
    k = attention.compiled(lesson, "v2", 64, True)
    names = ["q_bar"] + ["k_ready", "k_empty", "v_ready", "v_empty"] * lesson.CONFIGS["v2"]["STAGES"]
    barriers = attention.barrier_offsets(k, names)
    for first, last in attention.key_loops(k):
        events = attention.loop_events(k, first, last, barriers)
        names = [name for name, _ in events]
        assert [n for n in names if n.startswith(("wait:", "arrive:"))] == [
            "wait:k_ready", "arrive:k_empty", "wait:v_ready", "arrive:v_empty"], events
        assert names.index("S") < names.index("wait<0>") < names.index("arrive:k_empty") < names.index("PV")
        assert sum(n for name, n in events if name == "EX2") == 66 and dict(events)["PV"] == 8
