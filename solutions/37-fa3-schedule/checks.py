"""Lesson 37's checks: v3, v4 and v5 in the host model on lesson 36's odd shapes and a long causal head, causal and not,
with scores past exp2's range and every score near −16 384, three ring slots, then through the launcher, against
softmax(Q·Kᵀ)·V in fp64 (the ring's barriers, slots and phases run as written: a race on a slot or a barrier that
never completes is named); in the sm_90 machine code, loop by loop, at both head dims, causal and not: lesson 36's
facts, the exponentials under the next block's S (v3), the turn handed over right after the products and the
register split (v4 and v5); on a GPU, correctness, the refusals, the sanitizers, and the figures against PyTorch's SDPA
backends and lesson 36's v2."""
from gluon_course.grading import Check, Expectation, Figure, LessonChecks
from gluon_course.nvidia import attention

PROVISIONAL = ("provisional and wide: drawn from the probe's trial on an H200 (results/trials/"
               "nvidia-h200-2026-12-05-attention-fa3.json, 6 of these shapes), to be redrawn around the first "
               "recording")
TIMING = ("TFLOPS at 4·B·H·S²·D FLOPs (half of it causal), 16 384 tokens × 32 heads at S = 1k, 4k, 8k and 16k, head "
          "dim 128, causal and not (8 shapes); each call interleaved with the others, about 20 ms of calls per "
          "sample, 9 rounds, medians; the geomean of the ratios")
SDPA = ("torch.nn.functional.scaled_dot_product_attention with each of its backends (cuDNN, FlashAttention-2, "
        "memory-efficient) in the same run, the best of them at each shape. Issue 42's anchors on an H200 (bf16, head "
        "dim 128): cuDNN 460–633 TFLOPS")

CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="FlashAttention-3's schedule in Gluon on Hopper: the next block's S = Q·Kᵀ issued before this block's "
            "softmax, two consumer warpgroups taking turns at the tensor cores through order barriers (one's softmax "
            "under the other's products), a K/V ring both consumers release, register reallocation between a "
            "producer warp and the consumers; then one program an SM over the tiles, taken at run time",
    machine_code=[
        Check("v3_model", "v3 in the host model (no GPU): O within the bound of softmax(Q·Kᵀ)·V in fp64 at one query "
              "and one key, 17, 100, Sq ≠ Sk both ways and a causal head of 200 queries over 230 keys, causal and "
              "not (key blocks every key of which is masked for some rows included), with scores past exp2's range, "
              "every score near −16 384 and three ring slots; each element of a NaN-poisoned O written once, no race "
              "on a ring slot, no barrier that never completes; then through the launcher, at a second sm_scale",
              attention.fa3_model_check("v3")),
        Check("v4_model", "v4 in the host model, the same way: two consumer warpgroups on one ring, its empty "
              "barriers counting both, their turns at the tensor cores", attention.fa3_model_check("v4", pingpong=True)),
        Check("v5_model", "v5 in the host model, the same way, on 3 SMs whose programs run side by side and share "
              "the tiles from the counter: the ring's block count and the turns carried from tile to tile, Q "
              "released after each tile's last S, each tile's number read from the word, the consumers stopped past "
              "the last tile; through the launcher twice from one prepared call, the tile counter back at 0 after "
              "each",
              attention.fa3_model_check("v5", pingpong=True)),
        Check("lesson36_facts_sm_90", "sm_90, v3, v4 and v5, head dim 64 and 128, causal and not: lesson 36's facts in "
              "each key loop of each consumer (S from shared memory, P·V with P from registers, one MUFU.EX2 a score "
              "and a row, no round trip through shared memory, masks only in the masked loop)",
              lambda mod: (attention.fa3_facts_check(("lesson36",), "v3", False)(mod)
                           or attention.fa3_facts_check(("lesson36",), "v4", True)(mod)
                           or attention.fa3_facts_check(("lesson36",), "v5", True)(mod)), target="sm_90"),
        Check("overlap_sm_90", "sm_90, v3: at least half of each key loop's MUFU.EX2 issued between the next block's "
              "S wgmma and the wait that retires it, none after that wait (the softmax under S's products)",
              attention.fa3_facts_check(("overlap",), "v3", False), target="sm_90"),
        Check("turn_sm_90", "sm_90, v4 and v5: in each key loop of each consumer one wait for the tensor cores' turn before "
              "the products and one handover right after them, before the first wgmma wait (depth 1: S_{j+1} alone) "
              "and the softmax's first MUFU.EX2",
              lambda mod: (attention.fa3_facts_check(("turn",), "v4", True)(mod)
                           or attention.fa3_facts_check(("turn",), "v5", True)(mod)), target="sm_90"),
        Check("resources_sm_90", "sm_90, v3, v4 and v5, both head dims, causal and not: no spill at 128 queries a "
              "program, the wgmma not serialized by ptxas, two key loops a consumer (v5: inside its loop over "
              "tiles); v4's and v5's USETMAXREG give the "
              "producer's warpgroup LOAD_REGS and each consumer MMA_REGS, within what the launch holds",
              lambda mod: (attention.fa3_facts_check(("fit",), "v3", False)(mod)
                           or attention.fa3_facts_check(("fit", "split"), "v4", True)(mod)
                           or attention.fa3_facts_check(("fit", "split"), "v5", True)(mod)), target="sm_90"),
    ],
    correctness=[
        Check("correct_attention", "v2, v3, v4 and v5 are correct at head dim 64 and 128, causal and not, on odd shapes "
              "(one query and one key, tails past every block, Sq ≠ Sk both ways) within the bound of "
              "gluon_course.nvidia.attention (poisoned, guarded O; a child process with a time limit)",
              attention.correct, gpu=True),
        Check("launcher_refuses", "the launcher refuses fp16, a 3-D tensor, a transposed K, V shorter than K, head "
              "dim 96, no key and an output written over Q, with sentences", attention.launcher_refuses, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck and synccheck report nothing on v2, v3, v4 and v5 on a "
              "small odd causal problem", attention.sanitizer_clean, gpu=True),
    ],
    figures=[
        Figure("fa_bf16", "v5 over the best SDPA backend, head dim 128", attention.fa3_measure("v5", "best"),
               Expectation(0.6, 1.3, "the best SDPA backend", f"{TIMING}; against {SDPA}; {PROVISIONAL} "
                           "(0.74–1.09× cuDNN there for v4; v5 0.81–1.07× in the persistent probe's run on an H100, "
                           "results/trials/nvidia-h100-2026-12-05-fa3-persistent-2.json)", unit="× best SDPA"),
               headline=True),
        Figure("fa_hd64", "v5 over the best SDPA backend, head dim 64",
               attention.fa3_measure("v5", "best", head_dim=64),
               Expectation(0.4, 1.4, "the best SDPA backend", "TFLOPS as above at S = 4k, head dim 64, causal and "
                           f"not (2 shapes); against {SDPA}; provisional and wider still: the trial did not time "
                           "head dim 64", unit="× best SDPA")),
        Figure("v3_over_v2", "v3 over lesson 36's v2", attention.fa3_measure("v3", "v2"),
               Expectation(0.9, 1.4, "v2", f"{TIMING}; the next S issued before the softmax against one product at a "
                           f"time; {PROVISIONAL} (1.06–1.13× there)", unit="× v2")),
        Figure("v4_over_v3", "v4 over v3", attention.fa3_measure("v4", "v3"),
               Expectation(0.9, 1.6, "v3", f"{TIMING}; two consumer warpgroups taking turns in FA3's order against "
                           f"v3; {PROVISIONAL} (1.16–1.27× there)", unit="× v3")),
        Figure("v4_over_v2", "v4 over lesson 36's v2", attention.fa3_measure("v4", "v2"),
               Expectation(1.0, 1.8, "v2", f"{TIMING}; the FA3 schedule against lesson 36's one product at a time; "
                           f"{PROVISIONAL} (1.25–1.43× there)", unit="× v2")),
        Figure("v5_over_v4", "v5 over v4", attention.fa3_measure("v5", "v4"),
               Expectation(0.95, 1.4, "v4", f"{TIMING}; one program an SM over the tiles, taken at run time, against "
                           "one program a tile; provisional: the persistent probe's run on an H100 read 1.05–1.15×",
                           unit="× v4")),
    ],
)
