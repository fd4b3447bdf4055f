"""Lesson 10's checks: machine code per target, correctness on a GPU, figures with their ranges."""
from triton.experimental.gluon import language as gl

from gluon_course.grading import Check, LessonChecks
from gluon_course.machine import compile_cached

SIGNATURE = {"in_ptr": "*fp32", "out_ptr": "*fp32", "numel": "i32"}


def compiled(mod, target):
    layout = gl.BlockedLayout([4], [32], [4], [0])
    return compile_cached(mod.gemm_v0_cuda_cores_kernel, target, signature=SIGNATURE,
                          constexprs={"XBLOCK": 512, "layout": layout}, aligned=tuple(SIGNATURE))


def signature_sm_90(mod):
    """Replace with the lesson's machine-code signature (exact counts for the pinned Triton)."""
    k = compiled(mod, "sm_90")
    loads = dict(k.global_loads())
    if loads != {"LDG.E.128": 1}:
        return f"expected one LDG.E.128, found {loads}"
    if "numel" not in k.compared_arguments():
        return "numel is never compared: the kernel has no mask at the end of the tensor"
    return None


CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="(one line for the README: what the lesson teaches)",
    planned=True,          # remove when the lesson is written: until then it is listed as planned
    machine_code=[
        Check("signature_sm_90", "sm_90: the lesson's machine-code signature", signature_sm_90, target="sm_90"),
    ],
    correctness=[],
    figures=[],
)
