"""The host model (gluon_course.model): a kernel's own Python body run on the CPU with numpy. These tests write small
kernels of their own and show that the model computes what they compute, and rejects each protocol mistake the GEMM
lessons can make: a read before its wait, a refill while a read runs, a wait that can never complete, an expect()
that counts wrong, a missing fence, an access outside a tensor; with warp specialization, a release before the
wait that retires the reads."""
import numpy as np
import pytest
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from gluon_course.model import (Buffer, HostTensorDescriptor, ModelError, ModelHang, ModelOutOfBounds, ModelRace,
                                ModelUnsupported, Pointer, run)
from gluon_course.model.orders import visits_each_once

LAYOUT = gl.BlockedLayout([1], [32], [4], [0])


@gluon.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: gl.constexpr, layout: gl.constexpr):
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    gl.store(y_ptr + offs, gl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@gluon.jit
def unmasked_copy_kernel(x_ptr, y_ptr, n, BLOCK: gl.constexpr, layout: gl.constexpr):
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    gl.store(y_ptr + offs, gl.load(x_ptr + offs), mask=offs < n)


def test_a_masked_copy_runs_exactly_and_an_unmasked_read_is_out_of_bounds():
    x = Buffer("x", np.arange(300, dtype=np.float32), gl.float32)
    y = Buffer("y", np.zeros(300, np.float32), gl.float32, poison=True)
    run(copy_kernel, 3, Pointer(x), Pointer(y), 300, BLOCK=128, layout=LAYOUT)
    assert (y.values() == 2 * np.arange(300)).all() and (y.writes == 1).all()
    with pytest.raises(ModelOutOfBounds, match=r"reads x outside its 300 elements .* 84 element"):
        run(unmasked_copy_kernel, 3, Pointer(x), Pointer(y), 300, BLOCK=128, layout=LAYOUT)


@gluon.jit
def histogram_kernel(x_ptr, BLOCK: gl.constexpr, layout: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=layout)
    gl.histogram(gl.load(x_ptr + offs), 4, layout=layout)


def test_an_operation_the_model_does_not_know_concludes_nothing():
    x = Buffer("x", np.zeros(128, np.float32), gl.int32)
    with pytest.raises(ModelUnsupported, match="histogram"):
        run(histogram_kernel, 1, Pointer(x), BLOCK=128, layout=LAYOUT)


# -- TMA, mbarriers, wgmma: a one-tile-at-a-time pipeline, with its mistakes as parameters ------------------------

@gluon.jit
def tma_tile_kernel(a_desc, b_desc, c_ptr, K, acc_layout: gl.constexpr, STAGES: gl.constexpr,
                    PHASE0: gl.constexpr, EXTRA_BYTES: gl.constexpr, ASYNC: gl.constexpr, EARLY: gl.constexpr):
    BM: gl.constexpr = a_desc.block_shape[0]
    BK: gl.constexpr = a_desc.block_shape[1]
    BN: gl.constexpr = b_desc.block_shape[1]
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BM, BK], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BK, BN], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
    k_tiles = gl.cdiv(K, BK)
    for s in gl.static_range(STAGES - 1):
        mbarrier.expect(ready.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes + EXTRA_BYTES,
                        pred=s < k_tiles)
        tma.async_load(a_desc, [0, s * BK], ready.index(s), a_ring.index(s), pred=s < k_tiles)
        tma.async_load(b_desc, [s * BK, 0], ready.index(s), b_ring.index(s), pred=s < k_tiles)
    acc = gl.zeros([BM, BN], gl.float32, layout=acc_layout)
    for i in range(k_tiles):
        slot = i % STAGES
        mbarrier.wait(ready.index(slot), (i // STAGES + PHASE0) & 1)
        nxt = i + STAGES - 1
        if EARLY:      # refill before the products that read the slot are retired
            mbarrier.expect(ready.index(nxt % STAGES), a_desc.block_type.nbytes + b_desc.block_type.nbytes,
                            pred=nxt < k_tiles)
            tma.async_load(a_desc, [0, nxt * BK], ready.index(nxt % STAGES), a_ring.index(nxt % STAGES),
                           pred=nxt < k_tiles)
            tma.async_load(b_desc, [nxt * BK, 0], ready.index(nxt % STAGES), b_ring.index(nxt % STAGES),
                           pred=nxt < k_tiles)
        acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc, is_async=ASYNC)
        if ASYNC:
            acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b_ring.index(slot)))
        if not EARLY:
            mbarrier.expect(ready.index(nxt % STAGES), a_desc.block_type.nbytes + b_desc.block_type.nbytes,
                            pred=nxt < k_tiles)
            tma.async_load(a_desc, [0, nxt * BK], ready.index(nxt % STAGES), a_ring.index(nxt % STAGES),
                           pred=nxt < k_tiles)
            tma.async_load(b_desc, [nxt * BK, 0], ready.index(nxt % STAGES), b_ring.index(nxt % STAGES),
                           pred=nxt < k_tiles)
    if ASYNC:
        acc = warpgroup_mma_wait(0, deps=(acc,))
    offs_m = gl.arange(0, BM, layout=gl.SliceLayout(1, acc_layout))
    offs_n = gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
    gl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc.to(c_ptr.dtype.element_ty))


def _tma_run(K=160, **mistakes):
    rng = np.random.default_rng(1)
    a, b = rng.integers(-2, 3, (64, K)).astype(np.float32), rng.integers(-2, 3, (K, 32)).astype(np.float32)
    c = Buffer("C", np.zeros((64, 32), np.float32), gl.float32, poison=True)
    layout = gl.NVMMASharedLayout.get_default_for([64, 32], gl.bfloat16)
    a_desc = HostTensorDescriptor(Buffer("A", a, gl.bfloat16), [64, 32], layout)
    b_desc = HostTensorDescriptor(Buffer("B", b, gl.bfloat16), [32, 32], layout)
    acc_layout = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 32, 16])
    options = {"PHASE0": 0, "EXTRA_BYTES": 0, "ASYNC": False, "EARLY": False, **mistakes}
    run(tma_tile_kernel, 1, a_desc, b_desc, Pointer(c), K, acc_layout=acc_layout, STAGES=3, **options)
    return c.values(), a @ b


@pytest.mark.parametrize("is_async", [False, True])
def test_a_correct_tma_ring_gives_the_exact_product(is_async):
    got, want = _tma_run(ASYNC=is_async)
    assert (got == want).all()


def test_a_wait_a_trip_ahead_would_hang_and_says_why():
    with pytest.raises(ModelHang, match=r"waits on ready\[0\] with parity 1: nothing has arrived .* parity a trip ahead"):
        _tma_run(PHASE0=1)


def test_an_expect_that_counts_too_much_would_hang():
    with pytest.raises(ModelHang, match=r"expect\(\) announced 6146 bytes .* bring only 6144"):
        _tma_run(EXTRA_BYTES=2)


def test_an_expect_that_counts_too_little_is_caught_at_the_copy():
    with pytest.raises(ModelError, match=r"has no expect\(\) yet"):
        _tma_run(EXTRA_BYTES=-2048)


def test_a_refill_before_the_async_products_are_retired_is_a_race():
    with pytest.raises(ModelRace, match=r"overwrites a_ring\[\d\] while a wgmma group"):
        _tma_run(ASYNC=True, EARLY=True)


def test_a_synchronous_product_lets_the_refill_come_first():
    got, want = _tma_run(ASYNC=False, EARLY=True)
    assert (got == want).all()


# -- the epilogue through shared memory and a TMA store --------------------------------------------------------

@gluon.jit
def store_kernel(x_ptr, c_desc, FENCE: gl.constexpr, WAIT: gl.constexpr, layout: gl.constexpr):
    BM: gl.constexpr = c_desc.block_shape[0]
    BN: gl.constexpr = c_desc.block_shape[1]
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    offs_m = gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
    offs_n = gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    for t in range(2):
        if WAIT:
            tma.store_wait(0)
        c_smem.store(gl.load(x_ptr + offs_m[:, None] * BN + offs_n[None, :]))
        if FENCE:
            fence_async_shared()
        tma.async_store(c_desc, [t * BM, 0], c_smem)
    tma.store_wait(0)


@pytest.mark.parametrize("fence, wait, words", [(True, True, None),
                                                (False, True, "without fence_async_shared"),
                                                (True, False, "while a TMA store that may still be reading it")])
def test_a_tma_store_needs_its_fence_and_its_wait(fence, wait, words):
    x = Buffer("x", np.arange(32 * 16, dtype=np.float32).reshape(32, 16), gl.float32)
    c = Buffer("C", np.zeros((64, 16), np.float32), gl.float32, poison=True)
    desc = HostTensorDescriptor(c, [32, 16], gl.NVMMASharedLayout.get_default_for([32, 16], gl.float32), 4)
    layout = gl.BlockedLayout([1, 1], [4, 8], [4, 1], [1, 0])
    if words is None:
        run(store_kernel, 1, Pointer(x), desc, FENCE=fence, WAIT=wait, layout=layout)
        assert (c.values() == np.vstack([x.values(), x.values()])).all()
    else:
        with pytest.raises(ModelRace, match=words):
            run(store_kernel, 1, Pointer(x), desc, FENCE=fence, WAIT=wait, layout=layout)


# -- warp specialization: a producer and a consumer, talking through ready and empty barriers ----------------------

@gluon.jit
def produce(x_ptr, ring, ready, empty, n_steps, STAGES: gl.constexpr, layout: gl.constexpr):
    offs = gl.arange(0, 32, layout=layout)
    for i in range(n_steps):
        slot = i % STAGES
        mbarrier.wait(empty.index(slot), ((i // STAGES) & 1) ^ 1)
        ring.index(slot).store(gl.load(x_ptr + i * 32 + offs))
        mbarrier.arrive(ready.index(slot))


@gluon.jit
def consume(y_ptr, ring, ready, empty, n_steps, STAGES: gl.constexpr, RELEASE: gl.constexpr, layout: gl.constexpr):
    offs = gl.arange(0, 32, layout=layout)
    for i in range(n_steps):
        slot = i % STAGES
        mbarrier.wait(ready.index(slot), (i // STAGES) & 1)
        gl.store(y_ptr + i * 32 + offs, ring.index(slot).load(layout) + 1)
        if RELEASE:
            mbarrier.arrive(empty.index(slot))


@gluon.jit
def specialized_kernel(x_ptr, y_ptr, n_steps, STAGES: gl.constexpr, RELEASE: gl.constexpr, layout: gl.constexpr):
    ring = gl.allocate_shared_memory(gl.float32, [STAGES, 32], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([(consume, (y_ptr, ring, ready, empty, n_steps, STAGES, RELEASE, layout)),
                        (produce, (x_ptr, ring, ready, empty, n_steps, STAGES, layout))], [1], [24])


def test_a_producer_and_a_consumer_take_turns_through_their_barriers():
    x = Buffer("x", np.arange(32 * 10, dtype=np.float32), gl.float32)
    y = Buffer("y", np.zeros(32 * 10, np.float32), gl.float32, poison=True)
    run(specialized_kernel, 1, Pointer(x), Pointer(y), 10, STAGES=3, RELEASE=True, layout=LAYOUT)
    assert (y.values() == np.arange(320) + 1).all()


def test_a_consumer_that_never_releases_its_slots_hangs_both_partitions():
    x = Buffer("x", np.arange(32 * 10, dtype=np.float32), gl.float32)
    y = Buffer("y", np.zeros(32 * 10, np.float32), gl.float32, poison=True)
    with pytest.raises(ModelHang, match=r"default partition waits on ready\[0\].*worker partition 0 waits on empty\[0\]"):
        run(specialized_kernel, 1, Pointer(x), Pointer(y), 10, STAGES=3, RELEASE=False, layout=LAYOUT)


# -- tile orders on the host --------------------------------------------------------------------------------

@gluon.jit
def row_major(tile, num_pid_m, num_pid_n):
    return tile // num_pid_n, tile % num_pid_n


@gluon.jit
def wrong_order(tile, num_pid_m, num_pid_n):
    return tile // num_pid_n, gl.minimum(tile % num_pid_n, num_pid_n - 2)


def test_tile_orders_are_evaluated_over_the_whole_grid():
    assert visits_each_once(row_major, 7, 5) is None
    problem = visits_each_once(wrong_order, 7, 5)
    assert "7 visited more than once" in problem and "7 never visited" in problem


# -- what attention needs: a row maximum, and wgmma with A in registers ------------------------------------------

@gluon.jit
def row_max_kernel(x_ptr, y_ptr, ROWS: gl.constexpr, COLS: gl.constexpr, layout: gl.constexpr):
    rows = gl.arange(0, ROWS, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, COLS, layout=gl.SliceLayout(0, layout))
    x = gl.load(x_ptr + rows[:, None] * COLS + cols[None, :])
    gl.store(y_ptr + rows, gl.max(x, axis=1))


def test_gl_max_takes_each_rows_largest_and_lets_a_number_beat_nan():
    """gl.max reduces with Triton's maximum (maxnumf): −inf is an ordinary value, a NaN loses to any number."""
    inf, nan = float("inf"), float("nan")
    x = np.array([[1, 5, -2, 3], [-inf, -inf, 2, -inf], [-inf] * 4, [nan, 7, nan, -1]], dtype=np.float32)
    xb = Buffer("x", x.reshape(-1), gl.float32)
    y = Buffer("y", np.zeros(4, np.float32), gl.float32, poison=True)
    layout = gl.BlockedLayout([1, 1], [4, 8], [4, 1], [1, 0])
    run(row_max_kernel, 1, Pointer(xb), Pointer(y), ROWS=4, COLS=4, layout=layout)
    assert y.values().tolist() == [5, 2, -inf, 7]


@gluon.jit
def register_a_kernel(p_ptr, b_desc, c_ptr, acc_layout: gl.constexpr):
    """C = P·B with P loaded into registers and handed to wgmma as its A operand (a DotOperandLayout of the
    accumulator's layout, as attention's P·V), B copied by TMA into shared memory."""
    BK: gl.constexpr = b_desc.block_shape[0]
    BN: gl.constexpr = b_desc.block_shape[1]
    b_smem = gl.allocate_shared_memory(b_desc.dtype, [BK, BN], b_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, b_desc.block_type.nbytes)
    tma.async_load(b_desc, [0, 0], bar, b_smem)
    rows = gl.arange(0, 64, layout=gl.SliceLayout(1, acc_layout))
    ks = gl.arange(0, BK, layout=gl.SliceLayout(0, acc_layout))
    p = gl.load(p_ptr + rows[:, None] * BK + ks[None, :]).to(gl.bfloat16)
    p = gl.convert_layout(p, gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2))
    mbarrier.wait(bar, 0)
    acc = warpgroup_mma(p, b_smem, gl.zeros([64, BN], gl.float32, acc_layout))
    mbarrier.invalidate(bar)
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
    gl.store(c_ptr + rows[:, None] * BN + cols[None, :], acc)


def test_wgmma_takes_a_from_registers():
    rng = np.random.default_rng(0)
    p = rng.integers(-3, 4, size=(64, 32)).astype(np.float32)
    b = rng.integers(-3, 4, size=(32, 16)).astype(np.float32)
    b_buf = Buffer("B", b, gl.bfloat16)
    c = Buffer("C", np.zeros((64, 16), np.float32), gl.float32, poison=True)
    desc = HostTensorDescriptor(b_buf, [32, 16], gl.NVMMASharedLayout.get_default_for([32, 16], gl.bfloat16))
    layout = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 16, 16])
    run(register_a_kernel, 1, Pointer(Buffer("P", p.reshape(-1), gl.float32)), desc, Pointer(c), acc_layout=layout)
    assert (c.values().reshape(64, 16) == p @ b).all() and (c.writes == 1).all()


@gluon.jit
def _elementwise_math_kernel(x_ptr, y_ptr, N: gl.constexpr):
    offs = gl.arange(0, N, layout=gl.BlockedLayout([1], [32], [1], [0]))
    x = gl.load(x_ptr + offs)
    a = gl.abs(x)
    gl.store(y_ptr + offs, gl.fma(a, gl.sqrt(a), gl.log2(a + 1.0)) + gl.rsqrt(a + 1.0) + gl.log(a + 1.0)
             + gl.exp(-a) + gl.exp2(-a))


def test_elementwise_math_as_numpy_in_fp32():
    """gl.abs, sqrt, rsqrt, log, log2, exp, exp2 and fma in the model: numpy's, in fp32 (a learner's epilogue may
    use any of them: lesson 35's SiLU, lesson 36's softmax)."""
    x = np.linspace(-3, 3, 32).astype(np.float32)
    xb, yb = Buffer("X", x, gl.float32), Buffer("Y", np.zeros(32, np.float32), gl.float32)
    run(_elementwise_math_kernel, 1, Pointer(xb), Pointer(yb), N=32, num_warps=1)
    a = np.abs(x).astype(np.float64)
    want = a * np.sqrt(a) + np.log2(a + 1) + 1 / np.sqrt(a + 1) + np.log(a + 1) + np.exp(-a) + np.exp2(-a)
    assert np.allclose(yb.values(), want, rtol=1e-6, atol=1e-6)


@gluon.jit
def _lengths_kernel(len_ptr, y_ptr, BLOCK: gl.constexpr):
    """A loop whose bound is loaded from an int32 tensor (a sequence's length, lesson 38's decode)."""
    n = gl.load(len_ptr + gl.program_id(0))
    offs = gl.arange(0, BLOCK, layout=gl.BlockedLayout([1], [32], [1], [0]))
    total = gl.zeros([BLOCK], gl.float32, layout=gl.BlockedLayout([1], [32], [1], [0]))
    for i in range(gl.cdiv(n, 2)):
        total += 1.0
    gl.store(y_ptr + gl.program_id(0) * BLOCK + offs, total)


def test_an_int32_tensor_loads_as_integers():
    """What a kernel loads from an integer tensor is an integer, so a loop bound or an offset computed from it is one
    (it was a float, which Python's range refuses)."""
    lengths = Buffer("lengths", np.array([5, 0, 8], np.float32), gl.int32)
    y = Buffer("Y", np.zeros(3 * 32, np.float32), gl.float32, poison=True)
    run(_lengths_kernel, 3, Pointer(lengths), Pointer(y), BLOCK=32, num_warps=1)
    assert (y.values().reshape(3, 32)[:, 0] == [3, 0, 4]).all() and (y.writes == 1).all()
