"""gluon_course.nvidia.read_ceiling, the read of W that lesson 32's decode figures are set beside: compiled for
sm_90 on the CPU (its loop holds the TMA copy and the barrier wait, and nothing else reads memory there; the PDL
variant waits on the grid dependency), its refusals, and on a GPU the sums it reads back."""
import pytest
import torch
from triton.experimental.gluon import language as gl

from gluon_course.machine import compile_cached, tensor_descriptor_type
from gluon_course.nvidia import read_ceiling


def _compiled(stages=4, pdl=False):
    layout = gl.NVMMASharedLayout.get_default_for(list(read_ceiling.BOX), gl.bfloat16)
    options = {"launch_pdl": True} if pdl else {}
    return compile_cached(read_ceiling.tma_read_kernel, "sm_90",
                          signature={"w_desc": tensor_descriptor_type("bf16", read_ceiling.BOX, layout),
                                     "out_ptr": "*fp32", "boxes": "i32", "boxes_per_row": "i32"},
                          constexprs={"STAGES": stages, "PDL": pdl}, num_warps=4, **options)


def test_the_loop_copies_with_tma_and_waits_and_reads_nothing_else():
    k = _compiled()
    first, last = k.loop_holding("UTMALDG")           # the loop that refills a slot with a TMA copy
    body = [i.opcode for i in k.instructions() if first <= i.address <= last]
    assert any(op.startswith("SYNCS.PHASECHK") for op in body), "each slot's copy is waited for inside the loop"
    assert not [op for op in body if op.startswith(("LDG", "LDS", "LD."))], \
        "the loop reads nothing itself: the TMA unit does the reading"
    assert "griddepcontrol" not in k.asm["ptx"]
    assert k.metadata.shared >= 4 * 64 * 128 * 2, "four 16 KiB slots"


def test_pdl_variant_waits_on_the_grid_dependency():
    k = _compiled(pdl=True)
    assert "griddepcontrol.wait" in k.asm["ptx"] and k.metadata.launch_pdl


@pytest.mark.parametrize("w, says", [
    (torch.zeros(128, 256, dtype=torch.float16), "bf16"),
    (torch.zeros(256, 128, dtype=torch.bfloat16).t(), "contiguous"),
    (torch.zeros(100, 256, dtype=torch.bfloat16), "64 × 128 boxes"),
])
def test_refusals_say_what_to_pass(w, says):
    with pytest.raises(ValueError, match=says):
        read_ceiling._require_readable(w)


def test_last_box_sums_follow_the_programs_runs():
    w = torch.arange(256 * 256, dtype=torch.float32).reshape(256, 256).to(torch.bfloat16)
    sums = read_ceiling.last_box_sums(w, programs=3)    # 8 boxes: runs [0, 2), [2, 5), [5, 8)
    expect = [w[0:64, 128:256], w[128:192, 0:128], w[192:256, 128:256]]   # boxes 1, 4, 7
    assert sums.tolist() == [b.double().sum().item() for b in expect]


@pytest.mark.gpu
@pytest.mark.parametrize("programs, stages", [(7, 4), (264, 4), (132, 12)])
def test_read_brings_each_programs_last_box(programs, stages):
    g = torch.Generator(device="cuda").manual_seed(programs)
    w = torch.randn(4096, 1024, device="cuda", dtype=torch.bfloat16, generator=g)
    read = read_ceiling.reader(w, programs=programs, stages=stages)
    read.out.fill_(float("nan"))
    got = read().double().cpu()
    want = read_ceiling.last_box_sums(w.cpu(), programs)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-2), (got - want).abs().max()
