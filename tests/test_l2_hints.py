"""gluon_course.nvidia.l2_hints reads each TMA copy's descriptor and L2 hint from a PTX listing (lesson 32's w_hint
check): on a hand-written listing in the form Triton 3.9.0 emits, and on lesson 32's kernel compiled with and without
W_FIRST."""
from gluon_course.nvidia.l2_hints import TmaCopy, tma_copies

LISTING = """
.entry k(
	.param .align 64 .b8 k_param_0[128],
	.param .u32 k_param_1,
	.param .align 64 .b8 k_param_2[128],
	.param .align 64 .b8 k_param_3[128]
)
	mov.b32 	%r39, k_param_0;
	mov.b32 	%r41, k_param_2;
	mov.b32 	%r43, k_param_3;
	cvt.u64.u32 	%rd11, %r41;
	cvta.param.u64 	%rd1, %rd11;
	cvt.u64.u32 	%rd12, %r39;
	cvta.param.u64 	%rd2, %rd12;
	cvt.u64.u32 	%rd13, %r43;
	cvta.param.u64 	%rd3, %rd13;
	createpolicy.fractional.L2::evict_first.b64 %rd20, 1.0;
	@%p8 cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes.L2::cache_hint [%r75], [%rd2, {%r1, %r2}], [%r74], %rd20;
	@%p9 cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%r79], [%rd1, {%r1, %r3}], [%r74];
	cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd3, {%r5, %r6}], [%r7];
"""


def test_each_copy_traced_to_its_descriptor_with_its_hint():
    assert tma_copies(LISTING) == [TmaCopy(True, 0, "evict_first"), TmaCopy(True, 1, None), TmaCopy(False, 2, None)]


def test_lesson_32_hints_w_only_when_asked():
    from gluon_course import load_checks, load_solution

    mod, checks = load_solution("32"), load_checks("32")
    wide = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_N2": 64, "STAGES": 4, "num_warps": 8}
    hinted = tma_copies(checks._compiled(mod, {**wide, "W_FIRST": 1}).ptx)
    plain = tma_copies(checks._compiled(mod, {**wide, "W_FIRST": 0}).ptx)
    assert {(c.load, c.descriptor, c.hint) for c in hinted} == {(False, 2, None), (False, 4, None), (True, 0, None),
                                                                (True, 1, "evict_first"), (True, 3, "evict_first")}
    assert all(c.hint is None for c in plain) and len(plain) == len(hinted)
