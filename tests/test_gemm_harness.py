"""The GEMM harness (gluon_course.measure.gemm): its tolerance and arithmetic on the CPU, its checks on a GPU."""
import math

import pytest
import torch

from gluon_course.measure import gemm
from gluon_course.measure.gemm import (GEMM_ODD_SHAPES, check_gemm, compare_gemm, fp32_reductions, gemm_figure,
                                       gemm_inputs, library_name, reference, summarise, tolerance)

DTYPES = [torch.bfloat16, torch.float16]
TILE_K = 64


def _cpu_inputs(M, N, K, dtype, seed=0):
    return gemm_inputs(M, N, K, dtype, seed=seed, device="cpu")


# -- tolerance -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_tolerance_grows_with_k_and_says_why(dtype):
    tols = [tolerance(K, dtype) for K in (1, 64, 1000, 4097, 8192, 16384)]
    assert all(t1.atol < t2.atol for t1, t2 in zip(tols, tols[1:]))
    assert all(t.rtol == (2.0**-8 if dtype == torch.bfloat16 else 2.0**-11) for t in tols)
    assert tols[-1].atol == pytest.approx(4 * 16384**1.5 * 2.0**-24)
    assert "4·K·√K·2^-24" in tols[0].why and "half an ulp" in tols[0].why


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(64, 64, 1000), (4097, 129, 1000), (256, 512, 4097)])
def test_dropping_the_k_tail_fails(shape, dtype):
    """A kernel that skips the last partial 64-wide K tile (40 products at K=1000, one at K=4097) is caught."""
    M, N, K = shape
    a, b = _cpu_inputs(M, N, K, dtype)
    kept = K - K % TILE_K
    dropped = reference(a[:, :kept], b[:kept]).to(dtype)
    problem = compare_gemm(dropped, reference(a, b), tolerance(K, dtype))
    assert problem is not None and "out of tolerance" in problem


def _sequential_fp32(a, b, truncate=False):
    """The naive kernel's order: one fp32 addition per product, rounded to nearest or truncated (towards zero)."""
    a64, b64, acc = a.double(), b.double(), torch.zeros(a.shape[0], b.shape[1])
    for k in range(a.shape[1]):
        exact = acc.double() + a64[:, k, None] * b64[k]
        acc = exact.float()
        if truncate:
            acc = torch.where(acc.double().abs() > exact.abs(), torch.nextafter(acc, torch.zeros_like(acc)), acc)
    return acc


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("K", [1, 64, 1000, 4097, 8192])
def test_correct_fp32_accumulated_products_pass(K, dtype):
    a, b = _cpu_inputs(64, 64, K, dtype, seed=K)
    ref, tol = reference(a, b), tolerance(K, dtype)
    blocked = (a.float() @ b.float()).to(dtype)  # the CPU library's fp32 GEMM, then rounded
    assert compare_gemm(blocked, ref, tol) is None
    assert compare_gemm(_sequential_fp32(a, b).to(dtype), ref, tol) is None
    assert compare_gemm(_sequential_fp32(a, b, truncate=True).to(dtype), ref, tol) is None


def test_compare_names_the_first_bad_element():
    a, b = _cpu_inputs(5, 7, 33, torch.bfloat16)
    ref = reference(a, b)
    c = ref.to(torch.bfloat16)
    c[3, 4] += 100
    c[4, 0] += 100
    problem = compare_gemm(c, ref, tolerance(33, torch.bfloat16))
    assert problem.startswith("2 element(s) out of tolerance, first at [3, 4]: got ")
    assert "expected" in problem and "±" in problem
    c[2, 6] = float("nan")
    problem = compare_gemm(c, ref, tolerance(33, torch.bfloat16))
    assert problem == "1 element(s) still NaN, never written (first at [2, 6])"


# -- inputs and reference ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_inputs_are_random_unit_variance_and_fenced_by_nan(dtype):
    a, b = _cpu_inputs(300, 200, 100, dtype)
    assert a.shape == (300, 100) and b.shape == (100, 200) and a.dtype == b.dtype == dtype
    assert torch.isfinite(a).all() and (a != 0).float().mean() > 0.99
    assert 0.9 < a.float().std() < 1.1 and abs(a.float().mean()) < 0.05
    margin_after = torch.as_strided(a, (1,), (1,), a.storage_offset() + a.numel())
    assert torch.isnan(margin_after).all()
    again, _ = _cpu_inputs(300, 200, 100, dtype)
    assert torch.equal(a, again) and not torch.equal(a, _cpu_inputs(300, 200, 100, dtype, seed=1)[0])


def test_column_major_b():
    a, b = gemm_inputs(8, 16, 32, torch.float16, seed=3, b_layout="col", device="cpu")
    assert b.shape == (32, 16) and b.stride() == (1, 32)
    assert reference(a, b).shape == (8, 16)


def test_fp32_reductions_restores_the_flags():
    flags = torch.backends.cuda.matmul
    before = flags.allow_bf16_reduced_precision_reduction, flags.allow_fp16_reduced_precision_reduction
    with fp32_reductions():
        assert not flags.allow_bf16_reduced_precision_reduction and not flags.allow_fp16_reduced_precision_reduction
        assert not flags.allow_fp16_accumulation
    assert (flags.allow_bf16_reduced_precision_reduction, flags.allow_fp16_reduced_precision_reduction) == before


def test_reference_is_exact_and_leaves_tf32_alone():
    precision = torch.backends.cuda.matmul.fp32_precision
    a = torch.tensor([[1.0, 2.0**-9, -1.0]], dtype=torch.bfloat16)
    b = torch.tensor([[1.0], [1.0], [1.0]], dtype=torch.bfloat16)
    assert reference(a, b).item() == 2.0**-9 and reference(a, b).dtype == torch.float32
    assert torch.backends.cuda.matmul.fp32_precision == precision


# -- errors a learner can read -------------------------------------------------------------------

def test_errors_say_what_to_do():
    a, b = _cpu_inputs(4, 5, 6, torch.bfloat16)
    with pytest.raises(TypeError, match=r"torch.bfloat16 or torch.float16, not torch.float32: convert"):
        reference(a.float(), b.float())
    with pytest.raises(TypeError, match="same dtype"):
        reference(a, b.half())
    with pytest.raises(ValueError, match=r"A is 4×6 but B is 5×5: B needs K = 6 rows"):
        reference(a, b[:5, :])
    with pytest.raises(TypeError, match="torch.bfloat16 or torch.float16"):
        tolerance(64, torch.float32)
    with pytest.raises(TypeError, match="torch.bfloat16 or torch.float16"):
        gemm_inputs(4, 4, 4, torch.int8, device="cpu")
    with pytest.raises(ValueError, match=r"\(M, N, K\), three positive integers"):
        gemm_inputs(4, 0, 4, device="cpu")
    with pytest.raises(ValueError, match="b_layout"):
        gemm_inputs(4, 4, 4, b_layout="transposed", device="cpu")
    # The harness refuses bad arguments before it looks for a GPU.
    with pytest.raises(TypeError, match="torch.bfloat16 or torch.float16"):
        check_gemm(lambda a, b, c: None, dtypes=(torch.float32,))
    with pytest.raises(ValueError, match="three positive integers"):
        check_gemm(lambda a, b, c: None, shapes=[(128, 128)])


# -- the sweep's arithmetic ----------------------------------------------------------------------

def test_summarise_by_hand():
    result = summarise({(1, 1, 1): 0.5, (2, 2, 2): 2.0, (3, 3, 3): 1.0})
    assert result.geomean == pytest.approx(1.0)  # (0.5 · 2 · 1)^(1/3)
    assert result.worst == ((1, 1, 1), 0.5)
    result = summarise({(8192, 8192, 8192): 0.8, (2048, 2048, 8192): 0.2}, {(8192, 8192, 8192): "560 TFLOPS"})
    assert result.geomean == pytest.approx(0.4)  # √(0.8 · 0.2)
    assert result.worst == ((2048, 2048, 8192), 0.2)
    table = result.table().splitlines()
    assert table[1].split() == ["8192×8192×8192", "0.80×", "560", "TFLOPS"]
    assert table[-1] == "geomean 0.40×, worst 0.20× at 2048×2048×8192"


@pytest.mark.parametrize("ratios", [{}, {(1, 1, 1): 0.0}, {(1, 1, 1): math.nan}, {(1, 1, 1): -1.0}])
def test_summarise_refuses_meaningless_ratios(ratios):
    with pytest.raises(ValueError):
        summarise(ratios)


def test_sweep_shapes_are_the_designed_ones():
    assert gemm.GEMM_SWEEP_SHAPES[0] == (8192, 8192, 8192) and len(gemm.GEMM_SWEEP_SHAPES) == 7
    assert {K % TILE_K for _, _, K in GEMM_ODD_SHAPES} >= {0, 1, 40}  # no K tail, a tail of one, a tail of 40


# -- on a GPU --------------------------------------------------------------------------------------

def _torch_matmul(a, b, c):
    torch.matmul(a, b, out=c)


@pytest.mark.gpu
@pytest.mark.timeout(300)
def test_torch_matmul_passes_check_gemm():
    # Under fp32_reductions: by default torch lets cuBLAS add split-K partial sums in bf16 (256×512×4097 fails).
    with fp32_reductions():
        assert check_gemm(_torch_matmul) is None
        assert check_gemm(_torch_matmul, shapes=[(17, 33, 65), (256, 512, 4097)], b_layout="col") is None


def _last_row_unwritten(a, b, c):
    c[:-1].copy_(a[:-1] @ b)


def _k_minus_one(a, b, c):
    c.copy_(a[:, :-1] @ b[:-1])


def _tail_dropped(a, b, c):
    kept = a.shape[1] - a.shape[1] % TILE_K
    c.copy_((a[:, :kept].float() @ b[:kept].float()).to(c.dtype))


def _one_past_the_end(a, b, c):
    torch.matmul(a, b, out=c)
    torch.as_strided(c, (1,), (1,), c.storage_offset() + c.numel()).fill_(0)


@pytest.mark.gpu
@pytest.mark.timeout(300)
@pytest.mark.parametrize("kernel, words", [(_last_row_unwritten, "never written"),
                                           (_k_minus_one, "out of tolerance"), (_tail_dropped, "out of tolerance"),
                                           (_one_past_the_end, "wrote outside C")])
def test_planted_wrong_kernels_fail(kernel, words):
    with fp32_reductions():
        problem = check_gemm(kernel)
    assert problem is not None and words in problem, problem
    assert problem.startswith("shape ") and ("bf16" in problem or "fp16" in problem)


@pytest.mark.gpu
@pytest.mark.timeout(300)
def test_gemm_figure_of_the_library_itself_reads_one():
    with fp32_reductions():  # the same contract as the library's own timing
        figure = gemm_figure(_torch_matmul, 4096, 4096, 4096, torch.bfloat16, label="torch.matmul")
    assert 0.9 < figure.value < 1.1, figure.text
    assert f"TFLOPS vs {library_name()}" in figure.text
    assert {"tflops", "library_tflops", "ms", "library_ms", "M", "N", "K", "dtype", "pairs", "ratios",
            "spread"} <= set(figure.details)
    assert figure.details["pairs"] == 3 and len(figure.details["ratios"]) == 3


@pytest.mark.gpu
@pytest.mark.timeout(300)
def test_gemm_figure_refuses_a_wrong_kernel_before_timing():
    with pytest.raises(AssertionError, match=r"k-1 is wrong on the 1024×1024×1000 fp16 benchmark input"):
        gemm_figure(_k_minus_one, 1024, 1024, 1000, torch.float16, label="k-1")


# -- what the GEMM lessons' checks share (grading/gemm.py) ---------------------------------------------

def test_ranges_drawn_around_the_first_run_name_it():
    from gluon_course.grading.gemm import FIRST_RUN, around_first_run

    e = around_first_run(0.5, "361 TFLOPS vs cuBLAS 722", "why")
    assert (e.low, e.high) == (0.3, 0.75) and e.ceiling == "cuBLAS"
    assert FIRST_RUN in e.why and "361 TFLOPS" in e.why and e.references[0].value == 0.5
    assert e.ok(0.5) and not e.ok(0.29) and not e.ok(0.76)
    with pytest.raises(ValueError, match="positive"):
        around_first_run(float("nan"), "", "why")


def test_refuses_names_the_case_that_got_through():
    from gluon_course.grading.gemm import refuses

    def raise_(error):
        def call():
            raise error
        return call

    assert refuses({"fp32": (raise_(TypeError("use bf16")), TypeError, ("bf16",))}) is None
    said = [refuses({"fp32": (lambda: None, TypeError, ())}),
            refuses({"fp32": (raise_(TypeError()), TypeError, ())}),
            refuses({"K": (raise_(ValueError("bad K")), ValueError, ("16",))}),
            refuses({"K": (raise_(KeyError("k")), (TypeError, ValueError), ())})]
    assert "accepted" in said[0] and "without a sentence" in said[1] and "without ['16']" in said[2]
    assert "fails inside the launcher" in said[3] and "instead of being refused" in said[3]
    # The course's words: no exception's type name in what the learner reads.
    assert not any(name in text for text in said for name in ("TypeError", "ValueError", "KeyError"))
    # A launcher that fails on its way (a dictionary lookup) reads as the course's sentence for it, not KeyError.
    looked_up = refuses({"K": (lambda: {}["k"], (TypeError, ValueError), ())})
    assert "the key 'k' is not in the dictionary" in looked_up and "KeyError" not in looked_up, looked_up


# -- the Hopper lessons' host side (gluon_course/hopper.py), on the CPU ---------------------------------

def test_tma_descriptor_names_the_16_byte_rule_and_the_way_out():
    from gluon_course.nvidia.hopper import tma_descriptor

    desc = tma_descriptor("a", torch.zeros(1000, 1000, dtype=torch.bfloat16), [128, 32])
    assert list(desc.block_shape) == [128, 32]
    with pytest.raises(ValueError, match="2002 bytes apart.*multiples of 8.*lesson 13"):
        tma_descriptor("a", torch.zeros(129, 1001, dtype=torch.bfloat16), [128, 32])


def test_wgmma_tiles_outside_the_instruction_are_refused():
    from gluon_course.nvidia.hopper import require_wgmma_tile

    require_wgmma_tile(128, 128, 32, 4, 3)
    require_wgmma_tile(128, 256, 64, 8, 3)
    for bad, words in (((128, 128, 32, 2, 3), "warpgroup"), ((64, 128, 32, 8, 3), "BLOCK_M ≥"),
                       ((128, 512, 32, 4, 3), "BLOCK_N"), ((128, 128, 8, 4, 3), "BLOCK_K ≥ 16"),
                       ((128, 128, 32, 4, 1), "at least 2"), ((128, 96, 32, 4, 3), "power of two")):
        with pytest.raises(ValueError, match=words):
            require_wgmma_tile(*bad)


def test_the_k_loop_is_found_by_its_tensor_core_instruction():
    from gluon_course import load_checks, load_solution

    k = load_checks("14").compiled(load_solution("14"), "sm_90")
    first, last = k.loop_holding("HMMA")
    assert k.opcodes_between(first, last)["HMMA.16816.F32.BF16"] == 64
    with pytest.raises(ValueError, match="no loop .* holds a HGMMA"):
        k.loop_holding("HGMMA")


# -- interleaved pairs (measure/timing.py), on the CPU: the arithmetic of a figure and its spread ------------

def test_paired_figure_is_the_median_pair_ratio_and_says_its_spread():
    from gluon_course.measure.timing import Paired

    timed = Paired(kernel_ms=[2.0, 2.2, 1.0], ceiling_ms=[1.0, 1.0, 0.6])
    assert timed.ratios == [0.5, 1.0 / 2.2, 0.6]
    assert timed.ratio == 0.5                     # the median ratio, not the ratio of medians (1.0 / 2.0 = 0.5 too)
    assert abs(timed.spread - (0.6 - 1.0 / 2.2) / 0.5) < 1e-12
    assert timed.kernel == 2.0 and timed.ceiling == 1.0
    assert timed.details()["pairs"] == 3


def test_the_median_pair_divides_to_the_figure_where_the_sides_medians_need_not():
    from gluon_course.measure.timing import Paired

    # Five pairs shaped like lesson 30's v9 over plain Triton: each side's median divides to 1.10, the figure is 1.07.
    timed = Paired(kernel_ms=[1.40, 1.50, 1.45, 1.60, 1.55], ceiling_ms=[1.70, 1.60, 1.50, 1.75, 1.65])
    kernel, ceiling = timed.median_pair
    assert ceiling / kernel == timed.ratio and abs(timed.ceiling / timed.kernel - timed.ratio) > 0.02
    assert Paired([1.0, 2.0], [1.0, 3.0]).median_pair == (1.5, 2.0)      # even: no single median pair


def test_a_clock_change_during_a_measurement_moves_both_sides_of_a_pair():
    from gluon_course.measure.timing import Paired

    # The GPU slows by 20% for the last pair: the kernel's times move, the ratio does not.
    timed = Paired(kernel_ms=[2.0, 2.0, 2.4], ceiling_ms=[1.4, 1.4, 1.68])
    assert max(timed.ratios) - min(timed.ratios) < 1e-12
    assert timed.spread < 1e-12


def test_paired_rounds_interleaves_every_candidate_with_the_ceiling():
    """The probes' ranking (timing.paired_rounds): each round times the ceiling then each candidate, in turn; every
    candidate gets one pair per round, and paired_row reports the pairs, their median ratio and the rate."""
    from gluon_course.measure.timing import paired_rounds, paired_row

    order, clock = [], iter([1.0, 2.0, 1.0, 0.5, 1.2, 2.0, 1.2, 0.6, 0.9, 2.0, 0.9, 0.4])

    def bench(fn):
        order.append(fn())
        return next(clock)

    got = paired_rounds({"slow": lambda: "slow", "fast": lambda: "fast"}, lambda: "library", rounds=3, bench=bench)
    assert order == ["library", "slow", "library", "fast"] * 3
    assert got["slow"].kernel_ms == [2.0, 2.0, 2.0] and got["slow"].ceiling_ms == [1.0, 1.2, 0.9]
    assert got["fast"].ratios == [2.0, 2.0, 2.25]
    row = paired_row(got["fast"], flop=2e12)
    assert row["ratio"] == 2.0 and row["library_ms"] == [1.0, 1.2, 0.9]
    assert row["tflops"] == pytest.approx(2e12 / 0.5e-3 / 1e12)
    with pytest.raises(ValueError, match="at least 1"):
        paired_rounds({}, lambda: None, rounds=0)
