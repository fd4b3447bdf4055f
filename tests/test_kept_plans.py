"""The toolkit's keeping code (gluon_course.nvidia.launch: signature, keep, kept_descriptors, host_descriptors, Address),
checked once here by the checks lessons 31 to 34 share (gluon_course.nvidia.kept_plans), on the CPU: a plan built as
lessons 32, 33 and 34 build theirs passes them, and each piece of the toolkit broken in one plausible way is rejected
with its sentence. Also the situations those checks claim to create (views at every offset TMA refuses, distinct live
addresses), and the sentences a kept plan's descriptors and the course's TMA check give instead of Triton's assertion."""
from __future__ import annotations

from collections import OrderedDict

import pytest
import torch

from gluon_course.nvidia import kept_plans, launch
from gluon_course.nvidia.hopper import tma_descriptor
from gluon_course.validate import require_matmul_args

BLOCKS_KN = ([128, 64], [64, 128], [128, 128])
BLOCKS_NK = ([128, 64], [128, 64], [128, 128])


class _Plan:
    """One signature's plan, kept as lessons 32, 33 and 34 keep theirs: TMA's checks once, descriptors by address."""

    def __init__(self, a, b, c, key_of):
        from triton.experimental.gluon import language as gl

        require_matmul_args(a, b, c, b_either_way=True, on_gpu=False)
        self.b_kn = b.stride(1) == 1
        self.blocks = BLOCKS_KN if self.b_kn else BLOCKS_NK
        self.layouts = tuple(gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16 if a.dtype == torch.bfloat16
                                                                  else gl.float16) for block in self.blocks)
        for name, t, block in zip(("a", "b" if self.b_kn else "b (as N × K)", "c"), self.views(a, b, c), self.blocks):
            tma_descriptor(name, t, block)
        self.key_of, self.descriptors = key_of, OrderedDict()

    def views(self, a, b, c):
        return a, (b if self.b_kn else b.t()), c

    def descriptors_for(self, a, b, c):
        return launch.kept_descriptors(self.descriptors, tuple(self.key_of(t) for t in (a, b, c)),
                                       lambda: launch.host_descriptors(self.views(a, b, c), self.blocks, self.layouts))


def _launcher(key_of=lambda t: t.data_ptr()):
    plans = OrderedDict()

    def plan(args):
        key = launch.signature(*args)
        found = plans.get(key)
        if found is not None:
            plans.move_to_end(key)
            return found
        return launch.keep(plans, key, _Plan(*args, key_of), launch.PLANS_KEPT)

    return kept_plans.KeptLauncher(operands=kept_plans.gemm_operands, tma={"A": 0, "B": 1, "C": 2}, plan=plan,
                                   plans=lambda: plans, plans_kept=launch.PLANS_KEPT,
                                   descriptors_kept=launch.DESCRIPTORS_KEPT, other_dtype=torch.float16)


def test_the_toolkits_keeping_passes():
    assert kept_plans.plans_problem(_launcher()) is None
    assert kept_plans.descriptors_problem(_launcher()) is None


def _keep_never_evicting(cache, key, value, most):
    cache[key] = value
    return value


def _keep_dropping_newest(cache, key, value, most):
    cache[key] = value
    if len(cache) > most:
        cache.popitem(last=True)
    return value


BROKEN = {
    # what is broken: (the toolkit's name, its stand-in, which check, words its sentence must hold)
    "signature tests 8-byte alignment": (
        "signature", lambda *ts: tuple((t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 8 == 0) for t in ts),
        "plans", ["8 bytes past a 16-byte boundary", "a test at 8 bytes passes this view"]),
    "signature without strides": (
        "signature", lambda *ts: tuple((t.shape, t.dtype, t.device, t.data_ptr() % 16 == 0) for t in ts),
        "plans", ["strides"]),
    "signature a list": (
        "signature", lambda *ts: [(t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16 == 0) for t in ts],
        "plans", ["must be a tuple of hashable parts"]),
    "plans never evicted": ("keep", _keep_never_evicting, "plans", ["never evicted", "PLANS_KEPT (256)"]),
    "the newest plan evicted": ("keep", _keep_dropping_newest, "plans", ["drops the newest entry", "slow path"]),
    "descriptor sets never evicted": ("keep", _keep_never_evicting, "descriptors", ["never evicted",
                                                                                     "DESCRIPTORS_KEPT (64)"]),
    "the newest descriptor set evicted": ("keep", _keep_dropping_newest, "descriptors", ["drops the newest entry",
                                                                                          "slow path"]),
    "descriptors never kept": ("kept_descriptors", lambda cache, key, make: make(), "descriptors",
                               ["built their descriptors twice"]),
    "descriptors hold the tensor": ("Address", lambda t: t, "descriptors", ["still alive", "Address(t)"]),
}


@pytest.mark.parametrize("what", BROKEN)
def test_a_broken_piece_of_the_toolkit_is_rejected_with_its_sentence(what, monkeypatch):
    name, stand_in, check, words = BROKEN[what]
    monkeypatch.setattr(launch, name, stand_in)
    problem = {"plans": kept_plans.plans_problem, "descriptors": kept_plans.descriptors_problem}[check](_launcher())
    assert problem, f"{what}: accepted"
    for word in words:
        assert word in problem, f"{what}: {word!r} not in {problem!r}"
    assert "Error" not in problem and "unhashable type" not in problem


def test_descriptors_kept_by_python_id_hand_stale_descriptors_over():
    problem = kept_plans.descriptors_problem(_launcher(key_of=id))
    assert problem and "id of a freed view" in problem and "data_ptr()" in problem, problem


def test_views_at_every_offset_tma_refuses_and_distinct_live_addresses():
    """The situations the checks claim to create: a twin has its tensor's shape, strides and dtype, starts exactly
    the given bytes past a 16-byte boundary (or has rows 8 bytes off a multiple of 16), in memory of its own."""
    for t in kept_plans.gemm_operands(64, 48, 32) + (torch.empty(64, 32, dtype=torch.uint8).view(torch.float8_e4m3fn),):
        size = t.element_size()
        for off in range(0, 16, size):
            view = kept_plans.twin(t, offset_bytes=off)
            assert view.data_ptr() % 16 == off and view.shape == t.shape and view.stride() == t.stride()
            assert view.dtype == t.dtype and view.data_ptr() != t.data_ptr()
        rows = kept_plans.twin(t, row_stride=kept_plans._row_stride_off(t))
        assert (kept_plans.row_major(rows).stride(0) * size) % 16 == 8
    live = [kept_plans.twin(t) for _ in range(launch.DESCRIPTORS_KEPT + kept_plans.EXTRA)]
    assert len({x.data_ptr() for x in live}) == len(live)


def test_a_signature_that_is_not_a_key_gets_a_sentence():
    args = kept_plans.gemm_operands(16, 16, 16)
    assert kept_plans.key_problem(launch.signature, args) is None
    listed = kept_plans.key_problem(lambda *ts: [t.shape for t in ts], args)
    assert "returned a list" in listed and "tuple" in listed
    inner = kept_plans.key_problem(lambda *ts: tuple((t.shape, list(t.stride())) for t in ts), args)
    assert inner.startswith("signature(a, b, c)[0][1] is a list")


def test_a_kept_plans_descriptor_for_an_unchecked_view_is_a_sentence():
    """host_descriptors, given a view its plan's checks never saw, says why TMA cannot take it (never Triton's
    assertion)."""
    from triton.experimental.gluon import language as gl

    layout = gl.NVMMASharedLayout.get_default_for([64, 64], gl.bfloat16)
    storage = torch.empty(128 * 128 + 8, dtype=torch.bfloat16)
    views = {"starts 2 bytes past a 16-byte boundary": storage[1:1 + 64 * 64].view(64, 64),
             "is not row-major": storage[:64 * 64].view(64, 64).t(),
             "has rows 132 bytes apart": storage.as_strided((64, 64), (66, 1))}
    for words, view in views.items():
        with pytest.raises(ValueError, match=words) as e:
            launch.host_descriptors((view,), ([64, 64],), (layout,))
        assert "signature" in str(e.value) and "must be 16-byte aligned" not in str(e.value)


def test_tma_descriptor_names_the_view_it_checked_and_the_one_to_check():
    """b as w.t() checked as it is: the sentence names it as a transpose and says to check b.t(), not to pad K and N."""
    w = torch.empty(512, 384, dtype=torch.bfloat16)
    with pytest.raises(ValueError) as e:
        tma_descriptor("b (as N × K)", w.t(), [128, 64])
    text = str(e.value)
    assert "384×512" in text and "not row-major" in text and "b.t() (512×384" in text and "Pad" not in text
    with pytest.raises(ValueError, match="consecutive elements of a row are 2 apart"):
        tma_descriptor("a", torch.empty(64, 256, dtype=torch.bfloat16)[:, ::2], [64, 64])
