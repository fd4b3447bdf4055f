"""gluon_course.nvidia.fp8 on the CPU: the launcher's refusals (device left out), the tolerance against torch's own
fp8 GEMM and against a product that lost a K step, the quantizer check against plausible wrong quantizers."""
import pytest
import torch

from gluon_course import load_solution
from gluon_course.nvidia import fp8


def _args(M=129, N=136, K=1024):
    a, w, sa, sw = fp8.fp8_inputs(M, N, K, per_row=True, device="cpu")
    return a, w, sa, sw


@pytest.mark.parametrize("what, change, error, words", [
    ("bf16 operands", lambda a, w, sa, sw: (a.to(torch.bfloat16), w, sa, sw), TypeError, ("quantize",)),
    ("e5m2", lambda a, w, sa, sw: (a.to(torch.float8_e5m2), w, sa, sw), TypeError, ("e4m3",)),
    ("no scale", lambda a, w, sa, sw: (a, w, sa, None), TypeError, ("missing",)),
    ("scale of M + 1", lambda a, w, sa, sw: (a, w, torch.ones(130), sw), ValueError, ("129",)),
    ("fp16 scale", lambda a, w, sa, sw: (a, w, sa.half(), sw), TypeError, ("fp32",)),
    ("N-major W", lambda a, w, sa, sw: (a, w.t().contiguous().t(), sa, sw), ValueError, ("K-major",)),
    ("W of another K", lambda a, w, sa, sw: (a, w[:, :512], sa, sw), ValueError, ("N × K",)),
])
def test_refusals(what, change, error, words):
    with pytest.raises(error) as e:
        fp8.require_fp8_linear_args(*change(*_args()), on_gpu=False)
    assert all(word in str(e.value) for word in words), str(e.value)


def test_tma_rows():
    a, w, sa, sw = _args(K=1000)
    with pytest.raises(ValueError, match="multiple of 16"):
        fp8.require_fp8_linear_args(a, w, sa[:1], sw[:1], on_gpu=False)
    a, w, sa, sw = _args(N=132)
    with pytest.raises(ValueError, match="multiple of 8"):
        fp8.require_fp8_linear_args(a, w, sa, sw, on_gpu=False)
    assert fp8.require_fp8_linear_args(*_args(), on_gpu=False) == (129, 136, 1024, True, True)


def test_tolerance_holds_torch_and_rejects_a_lost_k_step():
    a, w, sa, sw = fp8.fp8_inputs(300, 264, 1008, per_row=True, device="cpu")
    ref = fp8.reference(a, w, sa, sw)
    allowed = fp8.allowed_error(ref, a, w, sa, sw)
    c = fp8.scaled_mm(a, w, sa, sw, torch.empty(300, 264, dtype=torch.bfloat16))
    assert fp8.compare(c, ref, allowed) is None
    a[:, :128] = 0
    lost = fp8.scaled_mm(a, w, sa, sw, torch.empty(300, 264, dtype=torch.bfloat16))
    assert "out of tolerance" in fp8.compare(lost, ref, allowed)


def test_quantizer_check():
    assert fp8.quantizer_problem(load_solution("34").quantize) is None

    def no_abs(x, per_row=False, scale=None):
        amax = x.amax(dim=1) if per_row else x.amax().reshape(1)
        scale = torch.where(amax > 0, amax / 448, torch.ones_like(amax))
        return (x / (scale[:, None] if per_row else scale)).clamp(-448, 448).to(fp8.FP8), scale
    assert fp8.quantizer_problem(no_abs)


# -- the kept launch (lesson 31's machinery), on the CPU: plans built from CPU tensors, Triton's driver stood in for --

def _plain(args):
    """A launch's kernel arguments, comparable: tensors (the scales) by identity, everything else by value."""
    return [("tensor", id(x)) if isinstance(x, torch.Tensor) else x for x in args]


def test_plans_kept_per_signature_and_checked_once():
    mod = load_solution("34")
    a, w, sa, sw = fp8.fp8_inputs(256, 512, 384, per_row=True, device="cpu")
    c = torch.empty(256, 512, dtype=torch.bfloat16)
    p = mod.plan(a, w, sa, sw, c)
    assert mod.plan(a, w, sa, sw, c) is p
    assert mod.plan(a.clone(), w, sa.clone(), sw, torch.empty_like(c)) is p, "the signature holds no address"
    a2, w2, sa2, sw2 = fp8.fp8_inputs(256, 512, 384, per_row=False, device="cpu")
    assert mod.plan(a2, w2, sa2, sw2, c) is not p, "per-tensor scales (another scale shape) need their own plan"
    assert mod.plan(a, w, sa, sw, c, BLOCK_K=64, STAGES=6) is not p
    wide = torch.empty(128, 768, dtype=torch.uint8).view(fp8.FP8)        # another shape, strides
    assert mod.plan(wide, fp8.fp8_inputs(8, 512, 768, False, device="cpu")[1], sa2, sw2,
                    torch.empty(128, 512, dtype=torch.bfloat16)) is not p
    storage = torch.empty(256 * 384 + 64, dtype=torch.uint8).view(fp8.FP8)
    with pytest.raises(ValueError, match="16-byte"):                     # a new alignment: a new plan, TMA's checks
        mod.plan(storage[1:1 + 256 * 384].view(256, 384), w, sa, sw, c)
    with pytest.raises(TypeError, match="unknown config keys"):
        mod.plan(a, w, sa, sw, c, BLOCK_Q=1)
    with pytest.raises(ValueError, match="must be a multiple of 16|not a multiple of 16"):
        mod.plan(a[:, :376], w[:, :376], sa, sw, c)
    with pytest.raises(ValueError, match=r"\.cuda\(\)"):                 # matmul itself asks for the GPU first
        mod.matmul(a, w, sa, sw, c)


def test_descriptors_kept_by_address_and_holding_no_tensor():
    import gc
    import weakref

    mod = load_solution("34")
    a, w, sa, sw = fp8.fp8_inputs(256, 512, 384, per_row=True, device="cpu")
    c = torch.empty(256, 512, dtype=torch.bfloat16)
    p = mod.plan(a, w, sa, sw, c)
    d = p.descriptors_for(a, w, c)
    assert p.descriptors_for(a, w, c) is d
    for which in range(3):
        moved = [a, w, c]
        moved[which] = moved[which].clone()
        d2 = p.descriptors_for(*moved)
        assert d2 is not d and [x.base.data_ptr() for x in d2] == [t.data_ptr() for t in moved]
    for desc, t in zip(d, (a, w, c)):
        assert list(desc.shape) == list(t.shape) and list(desc.strides) == list(t.stride())
    a3 = a.clone()
    watched = weakref.ref(a3)
    p.descriptors_for(a3, w, c)
    del a3
    gc.collect()
    assert watched() is None, "a kept descriptor holds the tensor, not its address"


def test_kept_launch_encodes_once_and_follows_addresses():
    """Triton's own launcher (CudaLauncher around driver.c's launch) with the driver's two calls stood in for: the
    plan's launch hands driver.c what CompiledKernel.run would, encodes A's, W's and C's CUtensorMaps once, encodes C's
    anew when C moves, and passes the scales as pointers, with no encoding, wherever they are."""
    from gluon_course.nvidia.launch import RawLaunch, StubDriver, stub_compiled

    mod = load_solution("34")
    a, w, sa, sw = fp8.fp8_inputs(256, 512, 384, per_row=True, device="cpu")
    c = torch.empty(256, 512, dtype=torch.bfloat16)
    p = mod.plan(a, w, sa, sw, c, programs=3)
    compiled = fp8.compile_fp8(mod, mod.CONFIG, "sm_90", True, True)
    with StubDriver() as driver:
        k = stub_compiled(mod.matmul_kernel, compiled, descriptors=("a_desc", "w_desc", "c_desc"),
                          num_warps=p.num_warps)
        p.launcher.compiled, p.launcher.raw = k, RawLaunch.of(k)
        p.grid, p.stream = (3, 1, 1), driver.get_current_stream
        assert p.launcher.raw is not None
        p.launch(a, w, sa, sw, c)
        p.launch(a, w, sa, sw, c)
        assert driver.encodings == 3, "a kept descriptor set is encoded on its first launch only"
        k.run(3, 1, 1, 0, k.function, k.packed_metadata, None, None, None, *p.descriptors_for(a, w, c), sa, sw, *p.rest)
        ours, triton_s = driver.launches[1][-1], driver.launches[2][-1]
        assert _plain(ours) == _plain(triton_s)
        assert driver.launches[1][0] == 3
        assert driver.encodings == 6              # Triton's own run encodes the set again: what the plan saves
        moved = c.clone()
        p.launch(a, w, sa, sw, moved)
        maps = [x for x in driver.launches[-1][-1] if isinstance(x, tuple) and len(x) == 8]
        assert driver.encodings == 9 and len(maps) == 3 and maps[2][0] == moved.data_ptr()
        sa2, sw2 = sa.clone(), sw.clone()
        p.launch(a, w, sa2, sw2, c)
        assert driver.encodings == 9, "scales at new addresses need no new encoding"
        args = driver.launches[-1][-1]
        assert any(x is sa2 for x in args) and any(x is sw2 for x in args) and not any(x is sa for x in args)


# -- the GPU session's correctness step (a), what can be shown here -------------------------------------------------

def _session():
    import importlib.util

    from gluon_course.course import repo_root

    spec = importlib.util.spec_from_file_location("fp8_session", repo_root() / "tools/gpu/fp8_session.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_step_a_compares_the_library_only_on_shapes_it_takes():
    session = _session()
    assert all(fp8.scaled_mm_refuses(*shape) is None for shape in session.SCALED_MM_CASES)
    said = fp8.scaled_mm_refuses(1000, 1000, 1008)            # the trial's case: torch 2.11 refused its mat2
    assert said and "N = 1000" in said and "M = 1000" in said and "fp8.reference" in said
    for M, N, K in fp8.FP8_SHAPES:                              # the kernel's own: against the fp64 reference only
        assert K % fp8.K_MULTIPLE == 0 and N % fp8.N_MULTIPLE == 0
    assert any(fp8.scaled_mm_refuses(*shape) for shape in fp8.FP8_SHAPES)


def test_step_a_reports_a_failing_case_and_keeps_going(tmp_path):
    import json

    session = _session()
    out, path = {}, tmp_path / "a.json"
    assert session._case(out, path, "one", lambda: 1 / 0).startswith("raised ZeroDivisionError")
    assert session._case(out, path, "two", lambda: None) == "passed"
    saved = json.loads(path.read_text())
    assert saved["one"].startswith("raised") and saved["two"] == "passed" and set(saved["seconds"]) == {"one", "two"}


# -- lesson 34 on the CPU (issue 39): the quantizer's conversions and mistakes in words, the host model, mixed modes -

def _planted(tmp_path, old, new):
    from gluon_course.course import lesson, load_module_file

    text = lesson("34").solution_path.read_text()
    assert text.count(old) == 1, old
    path = tmp_path / "planted_34.py"
    path.write_text(text.replace(old, new))
    return load_module_file(path, f"planted_34_{abs(hash(new))}")


FLAGS = ('"A_PER_ROW": a_per_row, "W_PER_ROW": w_per_row}', '"A_PER_ROW": w_per_row, "W_PER_ROW": a_per_row}')
MIXED = ("A per row, W per tensor", "A per tensor, W per row")


def test_scale_modes_and_inputs_cover_the_mixed_modes():
    assert fp8.SCALE_MODES == {"per tensor": (False, False), "per row": (True, True), MIXED[0]: (True, False),
                               MIXED[1]: (False, True)}
    import inspect
    assert inspect.signature(fp8.check_fp8).parameters["modes"].default == tuple(fp8.SCALE_MODES), \
        "the GPU check runs every mode the launcher takes"
    for mode, (a_row, w_row) in fp8.SCALE_MODES.items():
        a, w, sa, sw = fp8.fp8_inputs(17, 40, 80, (a_row, w_row), device="cpu")
        assert sa.shape == ((17,) if a_row else (1,)) and sw.shape == ((40,) if w_row else (1,))
        assert float(sw.min()) >= 2 * float(sa.max()), "every W scale at least twice every A scale"
        assert fp8.require_fp8_linear_args(a, w, sa, sw, on_gpu=False)[3:] == (a_row, w_row)


def test_gpu_comparison_rejects_swapped_flags_in_the_mixed_modes(tmp_path):
    """The GPU check, as it runs there (check_fp8 on fp8_inputs, the same seeds and shapes), with the host model in the
    GPU's place and each scale followed by copies of itself: a read past a scale's end faults nothing, as on a GPU,
    and finds the best value it could. The swapped per-row flags still miss the bound in both mixed modes, and the
    solution passes them."""
    shapes = fp8.FP8_SHAPES[:3] + ((127, 264, 64),)
    mod = load_solution("34")
    assert fp8.check_fp8(fp8.model_launch(mod, pad_scales=True), shapes, MIXED, device="cpu") is None
    planted = _planted(tmp_path, *FLAGS)
    for mode in MIXED:
        said = fp8.check_fp8(fp8.model_launch(planted, pad_scales=True), shapes, (mode,), device="cpu")
        assert said and "out of tolerance" in said and mode in said, said
    # Where both scales are of one kind the swap changes nothing: per tensor everywhere, and per row wherever M > 1
    # (at M = 1 A's one scale is per tensor to the launcher, so "per row" at 1 × 8 × 16 is itself a mixed mode).
    assert fp8.check_fp8(fp8.model_launch(planted, pad_scales=True), shapes, ("per tensor",), device="cpu") is None
    assert fp8.check_fp8(fp8.model_launch(planted, pad_scales=True), shapes[1:], ("per row",), device="cpu") is None


def test_nonsaturating_casts_give_nan_past_the_range_whatever_this_torch_does():
    values = torch.tensor([100.0, 460.0, 464.0, 465.0, 900.0, -5000.0, float("inf"), float("-inf")])
    ours = [448.0, 448.0]                                  # torch < 2.12: 460 and 464 round to 448, past 464 is NaN
    before = values.to(fp8.FP8)                             # this torch's own cast (2.13 saturates: 448, -448)
    with fp8.NonSaturatingCasts() as watch:
        got = [values.to(fp8.FP8), values.to(dtype=fp8.FP8), values.type(fp8.FP8)]
        into = torch.empty(8, dtype=fp8.FP8)
        into.copy_(values)
        got.append(into.clone())
        into2 = torch.empty(8, dtype=fp8.FP8)
        into2[:] = values
        got.append(into2)
    for g in got:
        f = g.float()
        assert f[0] == 96.0 and f[1:3].tolist() == ours and torch.isnan(f[3:]).all(), f
        assert g.view(torch.uint8)[5].item() == 0xFF, "NaN keeps the source's sign"
    assert watch.conversions == 5 and watch.largest == float("inf")
    assert torch.equal(values.to(fp8.FP8).view(torch.uint8), before.view(torch.uint8)), "outside it, torch's own"


@pytest.mark.parametrize("old, new, words", [
    ("x_q = scaled.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)", "x_q = scaled.to(torch.float8_e4m3fn)",
     ("NaN", "±1792", "Clamp x / scale to ±448")),
    ("amax = x.abs().amax(dim=1) if per_row", "amax = x.abs().amax(dim=0) if per_row",
     ("(512, 1)", "one per column of x", "amax(dim=1)", "64 × 512")),
    ("scaled = x / (scale.reshape(-1, 1) if per_row else scale)", "scaled = x / scale",
     ("shape (64,)", "as a row", "shape (64, 1)", "scale.reshape(-1, 1)")),
])
def test_quantizer_mistakes_read_as_sentences(tmp_path, old, new, words):
    said = fp8.quantizer_problem(_planted(tmp_path, old, new).quantize)
    assert said and all(w in said for w in words), said
    for noise in ("Error", "must match the size", "non-singleton", "Traceback"):
        assert noise not in said, said
