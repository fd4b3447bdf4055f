"""The host model of a cluster (gluon_course.model.cluster): a kernel launched in clusters of CTAs runs as the CTAs it
has, each with its own shared memory and mbarriers; a multicast lands in every CTA of its mask; a barrier the CTAs
share lives in the first of them. These tests write a small cluster kernel of their own and show that the model
computes what it computes in every schedule, and reports, where it happens, a multicast into a slot another CTA still
reads and a barrier retired while another CTA uses it. Also: the event-log rule of ping-pong's handover, the
comparison of a tile order with a printed one, and the toolkit's rule of how a cluster's GEMM tile is split."""
import numpy as np
import pytest
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma)

from gluon_course.model import Buffer, HostTensorDescriptor, ModelRace
from gluon_course.model import cluster as model_cluster
from gluon_course.model.cluster_launch import run_cluster
from gluon_course.model.events import turn_passed_while_products_run
from gluon_course.model.orders import first_difference
from gluon_course.nvidia.hopper import cluster_split_problem

ROWS, BN, BK, STAGES = 128, 64, 32, 2          # the cluster's tile: 128 rows, 64 a CTA


@gluon.jit
def cluster_tile_kernel(a_desc, b_desc, c_desc, K, acc_layout: gl.constexpr, STAGES: gl.constexpr,
                        WAIT_CLUSTER: gl.constexpr, CLUSTER_BARRIER: gl.constexpr):
    """One tile of C per cluster of 2 CTAs stacked along M: each CTA copies its rows of A, the first multicasts B's
    tile into both (after waiting on b_empty, the cluster's release barrier, when WAIT_CLUSTER), each multiplies its
    rows and stores them."""
    BM: gl.constexpr = a_desc.block_shape[0]
    BKc: gl.constexpr = a_desc.block_shape[1]
    BNc: gl.constexpr = b_desc.block_shape[1]
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BM, BKc], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BKc, BNc], b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BNc], c_desc.layout)
    ready = mbarrier.allocate_mbarrier(batch=STAGES)
    b_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout(cga_layout=[[0]]))
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(b_empty.index(s), count=1)
    acc = gl.zeros([BM, BNc], gl.float32, layout=acc_layout)
    for k in range(gl.cdiv(K, BKc)):
        slot = k % STAGES
        phase = (k // STAGES) & 1
        if WAIT_CLUSTER:
            mbarrier.wait(b_empty.index(slot), phase ^ 1)
        mbarrier.expect(ready.index(slot), a_desc.nbytes_per_cta + b_desc.nbytes_per_cta)
        tma.async_load(a_desc, [0, k * BKc], ready.index(slot), a_ring.index(slot))
        tma.async_load(b_desc, [k * BKc, 0], ready.index(slot), b_ring.index(slot), multicast=True)
        mbarrier.wait(ready.index(slot), phase)
        acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc)
        mbarrier.arrive(b_empty.index(slot))
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [0, 0], c_smem)
    tma.store_wait(0)
    if CLUSTER_BARRIER:
        gl.barrier(cluster=True)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(b_empty.index(s))


def _layout(block, bases):
    return gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16, cga_layout=bases)


def _run(schedule="round robin", K=4 * BK, **flags):
    rng = np.random.default_rng(0)
    a = rng.integers(-2, 3, size=(ROWS, K)).astype(np.float32)
    b = rng.integers(-2, 3, size=(K, BN)).astype(np.float32)
    c = Buffer("C", np.zeros((ROWS, BN), np.float32), gl.bfloat16, poison=True)
    descs = (HostTensorDescriptor(Buffer("A", a, gl.bfloat16), [ROWS, BK], _layout([ROWS, BK], [[1, 0]])),
             HostTensorDescriptor(Buffer("B", b, gl.bfloat16), [BK, BN], _layout([BK, BN], [[0, 0]])),
             HostTensorDescriptor(c, [ROWS, BN], _layout([ROWS, BN], [[1, 0]])))
    acc_layout = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BN, 16],
                                           cga_layout=[[1, 0]])
    programs = run_cluster(cluster_tile_kernel, 1, *descs, K, num_ctas=2, schedule=schedule, acc_layout=acc_layout,
                           STAGES=STAGES, **{"WAIT_CLUSTER": True, "CLUSTER_BARRIER": True, **flags})
    return programs, c, a @ b


@pytest.mark.parametrize("schedule", model_cluster.SCHEDULES)
def test_a_cluster_computes_its_tile_with_each_cta_storing_its_rows(schedule):
    programs, c, want = _run(schedule)
    assert (c.values() == want).all() and (c.writes == 1).all()
    assert [p.cta for p in programs] == [0, 1]
    first, second = ([e["what"] for e in p.trace] for p in programs)
    # The first CTA issues B's copies for both (each lands in both CTAs), the second skips them and its b_empty waits.
    assert first.count("tma load") == 4 + 2 * 4 and "tma load skipped" not in first
    assert second.count("tma load skipped") == 4 and second.count("wait skipped") == 4
    # Both CTAs release B's slots on the first CTA's barrier, initialised there with the count of both.
    releases = [e for p in programs for e in p.trace if e["what"] == "arrive"]
    assert {e["barrier"] for e in releases} == {"b_empty[0] of CTA 0", "b_empty[1] of CTA 0"} and len(releases) == 8


def test_a_multicast_that_does_not_wait_for_the_other_cta_is_reported_where_it_happens():
    with pytest.raises(ModelRace, match=r"CTA 0's program multicasts the tile of step 2 into b_ring\[0\] of CTA 1 "
                                        r"while CTA 1's consumers have not yet read the tile of step 0 there"):
        _run("CTA 0 first", WAIT_CLUSTER=False)


def test_a_barrier_retired_while_the_other_cta_still_arrives_is_reported():
    with pytest.raises(ModelRace, match=r"CTA 1's program uses b_empty\[\d\] of CTA 0 after CTA 0 invalidated it"):
        _run("CTA 0 first", CLUSTER_BARRIER=False)


def test_which_cta_holds_which_part():
    assert model_cluster.part_slices((4, 256, 64), [[1, 0]], 1) == (slice(None), slice(128, 256), slice(0, 64))
    assert model_cluster.part_slices((64, 128), [[0, 0]], 1) == (slice(0, 64), slice(0, 128))
    assert model_cluster.part_slices((512, 8), [[1, 0], [2, 0]], 3) == (slice(384, 512), slice(0, 8))
    assert model_cluster.broadcast_mask([[0, 0], [2, 0]]) == 1
    assert model_cluster.leader(3, 1) == 2 and model_cluster.sharers(3, 1, 4) == [2, 3]


def test_bytes_per_cta_are_tritons():
    """What a kernel's expect() reads off a descriptor (``nbytes_per_cta``): the model's equals Triton's own."""
    from triton.experimental.gluon.language.nvidia.hopper.tma import tensor_descriptor_type

    for block, bases in (([256, 64], [[1, 0]]), ([64, 128], [[0, 0]]), ([512, 64], [[1, 0], [2, 0]]),
                         ([128, 64], None)):
        layout = _layout(block, bases)
        ours = HostTensorDescriptor(Buffer("x", np.zeros((1024, 1024), np.float32), gl.bfloat16), block, layout)
        tritons = tensor_descriptor_type(gl.block_type(gl.bfloat16, block), None, None, layout)
        assert ours.nbytes_per_cta == tritons.nbytes_per_cta
    assert ours.nbytes_per_cta == 128 * 64 * 2


class _Program:
    def __init__(self, events):
        self.pid, self.cluster = (0, 0, 0), None
        self.trace = [{"partition": who, "what": what, **details} for who, what, details in events]


def _pingpong(handover_after_wait: bool, store_first: bool = False):
    """Two consumers' events for one tile each: consumer 0 issues two products and hands over on turn[1]."""
    events = [("c0", "wait", {"barrier": "turn[0]"}), ("c0", "wgmma", {"group": 1}),
              ("c0", "wgmma wait", {"retired": []}), ("c0", "wgmma", {"group": 2}),
              ("c0", "wgmma wait", {"retired": [1]})]
    handover = [("c0", "arrive", {"barrier": "turn[1]"})]
    tail = [("c0", "wgmma wait", {"retired": [2]})] + ([("c0", "tma store", {})] if store_first else [])
    events += (tail + handover) if handover_after_wait else (handover + tail)
    events += [("c1", "wait", {"barrier": "turn[1]"}), ("c1", "wgmma", {"group": 1}),
               ("c1", "wgmma wait", {"retired": []}), ("c1", "arrive", {"barrier": "turn[0]"}),
               ("c1", "wgmma wait", {"retired": [1]})]
    return [_Program(events)]


def test_the_turn_must_pass_while_the_last_product_runs():
    assert turn_passed_while_products_run(_pingpong(False)) is None
    problem = turn_passed_while_products_run(_pingpong(True))
    assert "c0 (a consumer) hands the turn over (its arrive on turn[1]) only after warpgroup_mma_wait" in problem
    assert "drain" in problem
    assert "cannot overlap this one's epilogue" in turn_passed_while_products_run(_pingpong(True, store_first=True))


def _column_major(tile, num_pid_m, num_pid_n):
    return tile % num_pid_m, tile // num_pid_m


def test_an_order_is_compared_with_the_printed_one_at_its_first_difference():
    assert first_difference(_column_major, ((0, 2), (1, 3))) is None
    problem = first_difference(_column_major, ((0, 3), (1, 2)))
    assert problem == ("on a 2 × 2 grid of tiles, tile 2 goes to (0, 1), where the order asked for puts it at (1, 1): "
                       "tiles 0 to 2 go to (0, 0) (1, 0) (0, 1) instead of (0, 0) (1, 0) (1, 1)")


@pytest.mark.parametrize("c, a, b, b_kn, words", [
    ([[1, 0]], [[1, 0]], [[1, 0]], True, "B's tile (K × N) is split between the CTAs along K"),
    ([[1, 0]], [[1, 0]], [[0, 1]], False, "B's tile (N × K) is split between the CTAs along K"),
    ([[1, 0]], [[1, 0]], [[1, 0]], False, "B's tile (N × K) is split between the CTAs along N"),
    ([[0, 1]], [[0, 1]], [[0, 0]], True, "C's tile is split between the CTAs along its columns"),
    ([[1, 0]], [[0, 1]], [[0, 0]], True, "A's tile is split between the CTAs along K"),
    ([[0, 0]], [[0, 0]], [[0, 0]], True, "would compute the same part of C twice"),
])
def test_a_cluster_tile_split_on_the_wrong_axis_is_named(c, a, b, b_kn, words):
    assert cluster_split_problem([[1, 0]], [[1, 0]], [[0, 0]], b_kn=b_kn, stacked_along="M") is None
    assert cluster_split_problem([[1, 0], [2, 0]], [[1, 0], [2, 0]], [[0, 0], [0, 0]], stacked_along="M") is None
    assert words in cluster_split_problem(c, a, b, b_kn=b_kn, stacked_along="M")
