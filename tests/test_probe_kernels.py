"""The tools/probes probes' own kernels that the course's host model can run (one CTA: no cluster), exact there on
both layouts of B before any GPU time is spent on them. The model is what found the race in probe_wide_tile's first
two-buffer epilogue (five subtiles a tile through buffers picked by the subtile's place in its tile); the plant below
is that epilogue, and the model must still reject it. probe_fp8_small_m (issue 44: lesson 34's fp8 with swap-AB and
split-K, whose kernel is now lesson 34's) is checked on a reduced set of its host-model and sm_90 checks."""
import importlib.util
from pathlib import Path

import pytest
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, tma

# A probe's checks, not the course's: `make test-probes` runs them (outside `make test` and CI).
pytestmark = pytest.mark.probe

PROBES = Path(__file__).resolve().parent.parent / "tools" / "probes"


def _probe(name):
    spec = importlib.util.spec_from_file_location(name, PROBES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_wide_tile_kernels_exact_in_the_model():
    wide = _probe("probe_wide_tile")
    assert wide.host_check()


def test_pingpong_strips_exact_and_taking_turns_in_the_model():
    from gluon_course.model import gemm as model_gemm

    strips = _probe("probe_pingpong_strips")
    assert strips.wide.host_check(strips.VARIANTS, strips.Launch, strips.BASE,
                                  rule=lambda programs: model_gemm.consumers_take_turns(programs, stores_per_tile=3))


@gluon.jit
def store_by_place(c_desc, c_smem, part, row, col, n, C_BUFFERS: gl.constexpr):
    """The plant: the first version's buffer, from the subtile's place in its tile (n mod 5), not the running count."""
    buffer = c_smem.index((n % 5) % C_BUFFERS)
    tma.store_wait(C_BUFFERS - 1)
    buffer.store(part.to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [row, col], buffer)


def test_model_rejects_the_racy_two_buffer_epilogue(monkeypatch, capsys):
    wide = _probe("probe_wide_tile")
    monkeypatch.setattr(wide, "store_sub", store_by_place)
    assert not wide.host_check({"two buffers": {"C_BUFFERS": 2}})
    out = capsys.readouterr().out
    assert "overwrites c_smem[0] while a TMA store" in out and "not modelled" not in out



# -- probe_fp8_small_m: lesson 34's fp8 with swap-AB and split-K (issue 44) -------------------------------------------
# The kernel and its launcher are lesson 34's (section 6), the CPU checks gluon_course.nvidia.fp8_small_m's; the
# plants those checks reject are lesson 34's (tests/test_lessons.py runs them). Here, the probe's own entry points on a
# reduced set: each path at one odd shape (K of 6 steps, so that the split paths' slices are as long as their ring) in
# the two mixed scale modes, split-K's bits in every program order, and the compile check on two configurations (a
# swap-AB split one, whose listing holds the protocol, and an unsplit one of the other orientation), each with
# per-tensor and per-row scales.
SMALL_M_SHAPE = (17, 200, 656)
MIXED = ("A per row, W per tensor", "A per tensor, W per row")


@pytest.fixture(scope="module")
def small_m():
    return _probe("probe_fp8_small_m")


def test_fp8_small_m_paths_exact_in_the_model(small_m):
    shown = []
    assert small_m.host_check(shapes=[SMALL_M_SHAPE], modes=MIXED, show=shown.append) is None
    # every path ran at the shape (none left out by its split), and both split paths' bits in every order
    assert len(shown) == len(small_m.MODEL_PATHS) + len(small_m.ORDER_PATHS), shown
    assert all("17×200×656" in line for line in shown[:len(small_m.MODEL_PATHS)]), shown


def test_fp8_small_m_probe_runs_lesson_34s_kernel(small_m):
    """No copies: the probe's kernel, plan and launcher are lesson 34's solution's objects, and the probe defines no
    kernel of its own."""
    from gluon_course.course import lesson

    lesson34 = small_m.LESSON34
    assert Path(lesson34.__file__).resolve() == lesson("34").solution_path.resolve()
    assert small_m.small_m_kernel is lesson34.small_m_kernel and small_m.SmallMPlan is lesson34.SmallMPlan
    assert small_m.matmul is lesson34.small_m_matmul
    assert "@gluon.jit" not in (PROBES / "probe_fp8_small_m.py").read_text(encoding="utf-8")


def test_fp8_small_m_candidates_compile_for_sm_90(small_m):
    configs = {"swap-AB, split": {"BLOCK_M": 64, "BLOCK_N": 16, "num_warps": 4, "STAGES": 8, "SWAP_AB": True,
                                  "SPLIT_K": 4},
               "unsplit": {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 4, "STAGES": 8}}
    shown = []
    assert small_m.compile_check(configs, show=shown.append) is None
    assert len(shown) == 4                                  # both configurations, both kinds of scales
    # the timed candidates come from the rule's families; the rule's picks are among them
    for shape in small_m.TIMED_SHAPES:
        found = small_m.candidates(*shape)
        assert found["rule"] == small_m.rule(*shape) and len(found) >= 4, shape


def test_fp8_small_m_rule_keeps_its_stated_limits(small_m):
    """The rule is gluon_course.nvidia.fp8_small_m's (tests/test_fp8_small_m.py): swap-AB below M = 128 with the batch
    padded to a power of two ≥ 16; no slice of K shorter than the ring; the ring within one SM's shared memory; above
    M = 512 lesson 34's CONFIG; the first trial's fill rule still timed beside it where it picks otherwise."""
    for M, N, K in small_m.RULE_SHAPES:
        cfg = {**small_m.CONFIG, **small_m.rule(M, N, K)}
        width = max(16, 1 << (M - 1).bit_length())
        assert cfg["SWAP_AB"] == (M < 128) or M == 128, (M, N, K, cfg)
        assert not cfg["SWAP_AB"] or cfg["BLOCK_N"] == width, (M, N, K, cfg)
        assert cfg["SPLIT_K"] == 1 or -(-K // 128) // cfg["SPLIT_K"] >= cfg["STAGES"], (M, N, K, cfg)
        assert small_m.ring_fits(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["STAGES"]), (M, N, K, cfg)
    assert small_m.rule(1024, 8192, 8192) == small_m.CONFIG
    found = small_m.candidates(128, 14336, 4096)
    assert found["the first trial's rule"]["SPLIT_K"] == 4 and found["rule"]["SPLIT_K"] == 1


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
