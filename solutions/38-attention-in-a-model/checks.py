"""Lesson 38's checks: the GQA prefill and the split-KV decode through their launchers in the host model (odd lengths,
GQA ratios, a single key, one to many splits, two calls on one plan, the combine's bits in two program orders, NaN-
poisoned outputs) against fp64; the split rule and the launchers' refusals; the block's decode step on a small block;
the sm_90 machine code of the decode (mma.sync, TMA, the combine from L2) and of the prefill (lesson 37's facts of v4); on a
GPU, correctness on odd shapes, compute-sanitizer, and the figures against PyTorch's SDPA backends."""
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks
from gluon_course.nvidia import decode

PROVISIONAL = ("provisional and wide: set from the probe's one trial on an H200 (2026-12-05, the split-KV decode at "
               "1.00–1.33× the best SDPA backend, host launches included), to be redrawn around the lesson's first "
               "recording (grading.gemm.around_first_run)")
DECODE_TIMING = ("decode, one query a sequence, 32 query heads on 8 KV heads of 128, bf16, at batch × cache length 1 × "
                 "4k, 1 × 32k, 16 × 4k, 16 × 32k and 64 × 8k; each call captured 10 times in a CUDA graph, the graphs "
                 "replayed in turn, 15 rounds, medians (the kernels' own time, no host launch between them); the best "
                 "SDPA backend's time over the lesson's at each shape (cuDNN, FlashAttention-2, memory-efficient, "
                 "enable_gqa; a backend that refuses GQA is left out), the geomean of the five; the details hold, per "
                 "shape, each candidate's bytes of cache over its time as a fraction of the device copy's bandwidth, "
                 "measured in the same run")

CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="attention as a model calls it: grouped-query heads (a KV head shared by its group of query heads) on "
            "lesson 37's kernel, and decode over a KV cache split along the keys across programs, the partial "
            "softmaxes combined in a fixed order by the last program to arrive",
    machine_code=[
        Check("prefill_model", "the GQA prefill through its launcher in the host model (no GPU): 32 query heads on 8 "
              "scaled down, ratios 1, 2 and 4, one query and one key, tails past every block, Sq ≠ Sk both ways, causal "
              "and not; O within the bound of softmax(Q·Kᵀ)·V in fp64 with each KV head repeated, every element of "
              "a NaN-poisoned O written once", decode.prefill_model_check()),
        Check("decode_model", "the decode through its launcher in the host model, its ring as deep as the "
              "launcher's: GQA ratios 1, 3, 4 and 8, a single key, lengths that are not multiples of the key block, "
              "one split used to all of them, stale rows past each length, scores past fp32's exp2 range, two calls "
              "on one plan (each KV head's counter at 0 before and after), scratch from torch.empty poisoned; O "
              "within the fp64 bound, every element of a NaN-poisoned O written once", decode.decode_model_check()),
        Check("combine_order", "the combine in the host model with the programs run in launch order and in reverse "
              "(another program arrives last and combines): O, kept in fp32, the same to the bit",
              decode.order_check),
        Check("split_rule", "the split rule at the issue's decode shapes and odd lengths: chunks of whole key blocks "
              "covering the cache once, one program an SM (132) at most and on at least half of them while a chunk "
              "can still be cut", decode.split_rule_problem),
        Check("refusals", "the launchers refuse, with sentences and before any GPU is touched: fp16, a transposed "
              "cache, head dim 96, 8 query heads on 3 KV heads, a sequence of 0 keys or past the cache, int64 "
              "lengths, two queries a sequence, an output sharing memory with an input", decode.refusals_problem),
        Check("block_model", "DecodingBlock on a small block of lesson 32's shape in the host model: its prefill "
              "fills the cache and gives the block's output with causal SDPA; each decode step writes its K and V at "
              "each sequence's length, counts it, and gives the block's output with SDPA over the same cache",
              decode.block_model_problem),
        Check("decode_sm_90", "sm_90, the decode at head dim 128 and 64 as DecodePlan launches it (its layouts on its "
              "warps): two programs an SM with no spills; one key loop whose K and V come as two TMA copies a block; "
              "S and P·V on mma.sync (HMMA) only; one MUFU.EX2 a score a thread holds and one a row; every load of "
              "the combine from L2",
              decode.decode_facts_check(), target="sm_90"),
        Check("prefill_sm_90", "sm_90, the GQA prefill (causal, head dim 128): lesson 37's facts of v4 hold — no "
              "spill, two key loops a consumer with lesson 36's facts in each, one take and one pass of the tensor "
              "cores' turn a loop, the producer's registers given to the consumers", decode.prefill_facts_check,
              target="sm_90"),
    ],
    correctness=[
        Check("correct_attention", "the GQA prefill and the decode are correct at head dim 64 and 128 on odd shapes "
              "(one query and one key, tails past every block, Sq ≠ Sk; sequences of 1 key to 20 000, stale rows "
              "past each length, two decodes on one plan) within the bound of gluon_course.nvidia.attention "
              "(poisoned, guarded O; a child process with a time limit)", decode.correct, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck and synccheck report nothing on the prefill and on two "
              "decodes on one plan", decode.sanitizer_clean, gpu=True),
    ],
    figures=[
        Figure("decode", "decode over the best SDPA backend", decode.decode_measure(),
               Expectation(0.7, 2.0, "the best SDPA backend", f"{DECODE_TIMING}; {PROVISIONAL}",
                           unit="× best SDPA", target=CourseTarget(
                               1.0, why="issue 42's target: at least the best SDPA backend on every shape, and 0.85 "
                                        "of the copy's bandwidth from 100 MB of cache")), headline=True),
        Figure("gqa_prefill", "GQA prefill over the best SDPA backend", decode.prefill_measure(),
               Expectation(0.4, 1.2, "the best SDPA backend", "causal prefill, 16 384 tokens × 32 query heads on 8 KV "
                           "heads of 128 at S = 4k and 16k, TFLOPS at 2·B·H·S²·D; launches interleaved, 9 rounds, "
                           "medians, the geomean of the two ratios; lesson 37's v4 read 0.98–1.07× cuDNN from 4k "
                           f"tokens without grouped heads on an H100; {PROVISIONAL}", unit="× best SDPA")),
        Figure("block_decode", "block decode step over the block with SDPA", decode.block_decode_measure(),
               Expectation(0.8, 1.5, "the block with SDPA", "lesson 32's block (hidden 4096, 32 query heads on 8 KV "
                           "heads, MLP 14 336) stepping one token at batch 16 over 4 097 cached keys, its attention by "
                           "the lesson's decode against SDPA's over the same cache; each step in CUDA graphs replayed "
                           f"in turn, 15 rounds, medians; {PROVISIONAL}", unit="× the block with SDPA")),
    ],
)
