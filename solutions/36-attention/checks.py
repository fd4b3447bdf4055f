"""Lesson 36's checks: both kernels in the host model on odd shapes, causal and not, and with scores past fp32's
exp2 range, against softmax(Q·Kᵀ)·V in fp64 (directly, then through the launcher); in the sm_90 machine code of
both kernels at both head dims, causal and not, loop by loop: the two products on the tensor cores with P read from
registers, one exponential a score and one a row, no layout conversion through shared memory, the mask only where
it is needed; on a GPU, correctness on odd shapes, the refusals, the sanitizers, and the figures against PyTorch's
SDPA backends, plain Triton and v0."""
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks
from gluon_course.nvidia import attention

PROVISIONAL = ("no run of these kernels on a GPU yet: the range is provisional, set from what the kernels' schedule "
               "allows, to be redrawn around the first clean run (grading.gemm.around_first_run)")
TIMING = ("TFLOPS at 4·B·H·S²·D FLOPs (half of it causal), 16 384 tokens × 32 heads at S = 1k, 4k and 16k, head dim "
          "128, causal and not (6 shapes); each call interleaved with the others, about 20 ms of calls per sample, 9 "
          "rounds, medians; the geomean of the 6 ratios")
SDPA = ("torch.nn.functional.scaled_dot_product_attention with each of its backends (cuDNN, FlashAttention-2, "
        "memory-efficient) in the same run, the best of them at each shape. Issue 42's anchors on an H200 (bf16, head "
        "dim 128): cuDNN 460–633 TFLOPS, FlashAttention-2 260–356, at S from 1k to 16k")

CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="attention as two wgmma products with the online softmax between them (running max and sum, the "
            "rescale, exp2 with log2 e folded into the scale), P kept in registers as wgmma's A operand, masks on "
            "the diagonal blocks only; then K and V through a TMA ring fed by a producer warp",
    machine_code=[
        Check("v0_model", "v0 in the host model (no GPU): key_blocks against what the masks need; O within the bound "
              "of softmax(Q·Kᵀ)·V in fp64 at one query and one key, 17, 100, Sq ≠ Sk both ways, causal and not, with "
              "scores past fp32's exp2 range and with every score near −16 384; each element of O written once; then "
              "through the launcher, at a second tile and sm_scale", attention.host_model_check(("v0",))),
        Check("v2_model", "v2 in the host model, the same way, with 2 and 3 slots: the ring's barriers, slots and "
              "phases included, and no block copied that the consumers never read",
              attention.host_model_check(("v2",))),
        Check("tensor_cores_sm_90", "sm_90, both kernels, head dim 64 and 128, causal and not: in each key loop S = "
              "Q·Kᵀ as HEAD_DIM/16 wgmma reading Q from shared memory, O += P·V as BLOCK_N/16 wgmma reading P from "
              "registers", attention.facts_check(("mma",)), target="sm_90"),
        Check("exp2_sm_90", "sm_90: one MUFU.EX2 a score and one a row (the rescale) in each key loop",
              attention.facts_check(("ex2",)), target="sm_90"),
        Check("registers_sm_90", "sm_90: no shared-memory store or load in the key loops (P and the rescale change "
              "layout in registers), lane shuffles only for the row max and the row sum",
              attention.facts_check(("registers",)), target="sm_90"),
        Check("masks_sm_90", "sm_90: no mask's select (FSEL) in the unmasked key loop, some in the masked one",
              attention.facts_check(("masks",)), target="sm_90"),
        Check("resources_sm_90", "sm_90, both kernels, both head dims, causal and not: fit one SM with no spills, two "
              "key loops each", attention.facts_check(()), target="sm_90"),
    ],
    correctness=[
        Check("correct_attention", "v0 and v2 are correct at head dim 64 and 128, causal and not, on odd shapes "
              "(one query and one key, tails past every block, Sq ≠ Sk both ways) within the bound of "
              "gluon_course.nvidia.attention (poisoned, guarded O; a child process with a time limit)",
              attention.correct, gpu=True),
        Check("launcher_refuses", "the launcher refuses fp16, a 3-D tensor, a transposed K, V shorter than K, head "
              "dim 96, no key and an output written over Q, with sentences", attention.launcher_refuses, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck and synccheck report nothing on both kernels on a small "
              "odd causal problem", attention.sanitizer_clean, gpu=True),
    ],
    figures=[
        Figure("v2_over_sdpa", "v2 over the best SDPA backend", attention.sdpa_measure("v2", "best"),
               Expectation(0.2, 1.2, "the best SDPA backend", f"{TIMING}; against {SDPA}; {PROVISIONAL}",
                           unit="× best SDPA"), headline=True),
        Figure("v2_over_triton", "v2 over plain Triton", attention.sdpa_measure("v2", "triton"),
               Expectation(0.5, 3.0, "plain Triton", f"{TIMING}; against the same attention in plain Triton "
                           f"(gluon_course.measure.plain_triton.attention, autotuned over 4 configurations); "
                           f"{PROVISIONAL}", unit="× plain Triton",
                           target=CourseTarget(1.0, why="the course's bar for Gluon: at least plain Triton"))),
        Figure("v2_over_v0", "v2 over v0", attention.sdpa_measure("v2", "v0"),
               Expectation(0.9, 3.0, "v0", f"{TIMING}; the ring and the producer warp against one buffer each for K "
                           f"and V, every copy waited for; {PROVISIONAL}", unit="× v0")),
    ],
)
