"""The AMD lessons' GPU checks (the live path, on an AMD GPU of the lesson's targets): C exact on odd shapes, each run
in a child process under a time limit (``correctness_check``), and the launcher's refusals (``refusal_check``)."""
from __future__ import annotations

from ..grading.checks import Check
from .launch import require_amd_gpu


# Odd shapes for the kernels that take any K (plain and buffer loads): one element, M, N and K tails past every tile
# edge, a K tail of one element. For the direct-to-LDS kernels K and the row strides are multiples of 16 (the
# launcher refuses others, naming the rule), so their shapes keep M and N odd and K a multiple of 16, not of 64.
ANY_K_SHAPES = ((1, 1, 1), (17, 33, 65), (256, 256, 64), (1000, 1000, 1000), (4097, 129, 1000), (300, 520, 4097),
                (127, 255, 64))


ALIGNED_K_SHAPES = ((1, 1, 16), (17, 33, 80), (256, 256, 64), (1000, 1000, 1008), (4097, 129, 1024), (300, 520, 4112),
                    (127, 255, 48))


CHILD_LIMIT_S = 180


def correct_here(module_file: str, shapes: str = "any") -> str | None:
    """The correctness check itself, for a child process: fp16 and bf16, poisoned and guarded C, B K-contiguous."""
    from ..course import load_module_file
    from ..measure.gemm import check_gemm

    from ..grading.runner import sentence_in_child

    mod = load_module_file(module_file)
    require_amd_gpu(mod.TARGETS)
    chosen = ANY_K_SHAPES if shapes == "any" else ALIGNED_K_SHAPES
    return sentence_in_child(module_file,
                             lambda: check_gemm(lambda a, b, c: mod.matmul(a, b, c), shapes=chosen, b_layout="col"))


def correctness_check(key: str = "exact_odd_shapes", shapes: str = "any") -> Check:
    """C exact on odd shapes (fp16 and bf16, poisoned and guarded), every launch in a child process with a limit."""
    listed = ANY_K_SHAPES if shapes == "any" else ALIGNED_K_SHAPES
    title = (f"C exact on {len(listed)} odd shapes (" + ", ".join("×".join(map(str, s)) for s in listed[:3]) +
             ", …; fp16 and bf16, poisoned and guarded C), in a child process with a time limit")

    def run(mod):
        from ..measure.isolated import check_in_child

        require_amd_gpu(mod.TARGETS)
        # The child imports this file as part of the package (measure.isolated does so for the toolkit's files).
        return check_in_child(f"{__file__}:correct_here", [mod.__file__, shapes], timeout=CHILD_LIMIT_S)
    return Check(key, title, run, gpu=True)


def refusal_check(key: str = "launcher_errors", k_multiple: int = 1) -> Check:
    """The launcher refuses fp32, mismatched K, a B that is not K-contiguous (and K not a multiple of ``k_multiple``)
    with a sentence that says what to do."""
    extra = f", K = 1000 (not a multiple of {k_multiple})" if k_multiple > 1 else ""

    def run(mod):
        import torch

        from ..measure.gemm import gemm_inputs
        from ..grading.gemm import refuses

        require_amd_gpu(mod.TARGETS)
        problem = empty_operands(mod)
        if problem:
            return problem
        a, b = gemm_inputs(128, 128, 128, torch.float16, b_layout="col")
        cases = {
            "fp32 inputs": (lambda: mod.matmul(a.float(), b.float()), TypeError, ["float16"]),
            "B with 64 rows for A's 128 columns": (lambda: mod.matmul(a, b[:64]), ValueError, ["K"]),
            "B row-major (N contiguous)": (lambda: mod.matmul(a, b.contiguous()), ValueError, ["K-contiguous"]),
        }
        if k_multiple > 1:
            a_odd, b_odd = gemm_inputs(128, 128, 1000, torch.float16, b_layout="col")
            cases["K = 1000"] = (lambda: mod.matmul(a_odd, b_odd), ValueError, [str(k_multiple), "pad"])
        return refuses(cases)
    return Check(key, f"matmul returns what torch.matmul does for M, N or K = 0, and refuses fp32, a K mismatch, a "
                      f"row-major B{extra} with a sentence", run, gpu=True)


def empty_operands(mod) -> str | None:
    """M, N or K = 0 (B K-contiguous): the launcher returns what torch.matmul returns, an empty C or zeros."""
    from ..grading.gemm import empty_operands as empty

    return empty(mod, "fp16", b_layout="col")
