"""Issue 42: lesson 38's GQA prefill is lesson 36's v2 with grouped heads, and its first recording (H100, 2026-12-05)
read it at 0.65–0.68× cuDNN, where lesson 37's v4 (the FA3 schedule) reads 0.98–1.07× from 4k tokens without groups.
Grouped heads change one thing in a kernel: which KV head the producer copies K and V from (lesson 38's
``kv_head_of``). This probe makes that change in lesson 37's v4 and nowhere else, to be timed before it goes into
lesson 38:

- the variant module is lesson 37's solution with ``attention_v4_kernel`` given two constexprs, HQ and GROUP, and its
  producer given query head b·HQ + h's KV head, b·(HQ / GROUP) + h // GROUP, in place of the program's own head;
- its launcher (``gqa_attention``, ``gqa_prepared``) takes Q (B, Hq, Sq, D) and K, V (B, Hkv, Sk, D) with lesson 38's
  refusals, at lesson 37's v4 tile.

    python tools/probes/probe_gqa_v4.py --model     CPU: the variant in the host model (lesson 38's prefill shapes,
                                                    GQA ratios 1 to 4, causal and not, at lesson 37's model tile)
                                                    and its sm_90 compile (registers, spills, lesson 37's v4 facts)
    python tools/probes/probe_gqa_v4.py OUT.json    GPU: correctness on lesson 38's odd prefill shapes, then the
                                                    variant, lesson 38's prefill and SDPA's backends interleaved at
                                                    lesson 38's timed shapes (S = 4k, 16k, causal) and without the
                                                    mask; a JSON and a table
Its run on an H100 (2026-12-05, results/trials/nvidia-h100-2026-12-05-gqa-v4.json: correct on the odd shapes; the
variant at 503 / 589 / 629 / 668 TFLOPS at S = 4k causal / not, 16k causal / not, against lesson 38's v2 at 383 / 432 /
427 / 457 and cuDNN at 567 / 647 / 632 / 644) moved lesson 38's prefill onto v4: since then the column "lesson 38" is
the same kernel as the variant, written in the lesson.
"""
from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from pathlib import Path

import torch

from gluon_course import load_solution
from gluon_course.course import lesson, load_module_file
from gluon_course.nvidia import attention, decode

LESSON38 = load_solution("38")
WATCHDOG_S = 300

SIGNATURE = "                        LOAD_REGS: gl.constexpr, MMA_REGS: gl.constexpr):\n"
PRODUCER = ("        (load_partition, (q_desc, k_desc, v_desc, q_smem, k_ring, v_ring, q_bar, k_ready, k_empty, v_ready,\n"
            "                          v_empty, gl.program_id(1), Sq, Sk, CAUSAL, STAGES)),\n"
            "    ], [4, 1], [MMA_REGS, LOAD_REGS])")
LAUNCHER = '''

# -- probe_gqa_v4: the launcher of the grouped-heads variant ----------------------------------------------------------

def gqa_prepared(q, k, v, causal: bool = True, out=None, sm_scale: float | None = None, config: dict | None = None):
    """v4 with grouped heads on Q (B, Hq, Sq, D) and K, V (B, Hkv, Sk, D), lesson 38's refusals: (launch, out)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    lesson38 = load_solution("38")
    cfg = config or CONFIGS["v4"]
    lesson38.require_bf16_4d(q=q, k=k, v=v)
    group = lesson38.require_gqa_heads(q, k, v)
    B, Hq, Sq, D = q.shape
    Sk = k.shape[2]
    if Sq < 1 or Sk < 1:
        raise ValueError(f"Sq = {Sq}, Sk = {Sk}: attention needs at least one query and one key")
    out = torch.empty_like(q) if out is None else out
    require_separate_output(out, "out", q=q, k=k, v=v)
    require_hopper(q)
    sm_scale = 1 / math.sqrt(D) if sm_scale is None else sm_scale

    def desc(t, rows):
        return TensorDescriptor.from_tensor(t.view(-1, D), [rows, D],
                                            gl.NVMMASharedLayout.get_default_for([rows, D], gl.bfloat16))
    grid = (triton.cdiv(Sq, cfg["BLOCK_M"]), B * Hq)
    args = (desc(q, cfg["BLOCK_M"]), desc(k, cfg["BLOCK_N"]), desc(v, cfg["BLOCK_N"]), out, Sq, Sk,
            sm_scale * LOG2E)
    kwargs = {**constexprs("v4", cfg, D, causal), "HQ": Hq, "GROUP": group, "num_warps": cfg["num_warps"]}

    def launch():
        attention_v4_kernel[grid](*args, **kwargs)
    return launch, out


def gqa_attention(q, k, v, causal: bool = True, out=None, sm_scale: float | None = None, config: dict | None = None):
    launch, out = gqa_prepared(q, k, v, causal, out, sm_scale, config)
    launch()
    return out
'''


def variant_module(directory=None):
    """Lesson 37's solution with v4 taking grouped heads (see the module's docstring), imported as a module."""
    whole = lesson("37").solution_path.read_text()
    start = whole.index("def attention_v4_kernel(")           # v4's kernel only (v5's has the same signature line)
    end = whole.index("@gluon.jit", start) if "@gluon.jit" in whole[start:] else len(whole)
    text = whole[start:end]
    if text.count(SIGNATURE) != 1 or text.count(PRODUCER) != 1:
        raise RuntimeError("lesson 37's attention_v4_kernel changed: update SIGNATURE and PRODUCER in this probe")
    text = text.replace(SIGNATURE, SIGNATURE.replace("):", ", HQ: gl.constexpr = 1,\n"
                                                           "                        GROUP: gl.constexpr = 1):"))
    text = text.replace(PRODUCER, PRODUCER.replace(
        "v_empty, gl.program_id(1), Sq, Sk,",
        "v_empty, (gl.program_id(1) // HQ) * (HQ // GROUP) + (gl.program_id(1) % HQ) // GROUP, Sq, Sk,"))
    text = whole[:start] + text + whole[end:]
    folder = Path(directory or tempfile.mkdtemp(prefix="gqa-v4-"))
    path = folder / "gqa_v4.py"
    path.write_text(text + LAUNCHER)
    return load_module_file(path, "gqa_v4")


# Lesson 38's prefill shapes in the host model (batch, Hq, Hkv, Sq, Sk), at lesson 37's model tile for v4.
MODEL_SHAPES = decode.PREFILL_MODEL_SHAPES


# Lesson 37's compile checks of v4, run on the variant compiled with grouped heads (32 query heads on 8 KV heads).
V4_COMPILE_CHECKS = ("lesson36_facts_sm_90", "turn_sm_90", "resources_sm_90")


def model_check(mod=None) -> str | None:
    """CPU: lesson 38's prefill check (decode.prefill_model_problem, causal and not) on the variant at lesson 37's
    v4 model tile; then lesson 37's compile checks of v4 (V4_COMPILE_CHECKS) on the variant compiled with HQ 32 and
    GROUP 4."""
    from gluon_course import load_checks
    from gluon_course.grading.runner import run_check

    mod = mod or variant_module()
    saved = decode.PREFILL_MODEL_CFG
    decode.PREFILL_MODEL_CFG = attention.FA3_MODEL_CFGS["v4"]
    try:
        for shape in MODEL_SHAPES:
            for causal in (False, True):
                problem = decode.prefill_model_problem(mod, shape, causal)
                if problem:
                    return problem
    finally:
        decode.PREFILL_MODEL_CFG = saved
    ungrouped = mod.constexprs
    mod.constexprs = lambda version, cfg, head_dim, causal: {**ungrouped(version, cfg, head_dim, causal),
                                                             **({"HQ": 32, "GROUP": 4} if version == "v4" else {})}
    try:
        checks = load_checks("37").CHECKS
        for key in V4_COMPILE_CHECKS:
            outcome = run_check(checks.check(key), mod, "37")
            if outcome.failed:
                return f"{key}: {outcome.detail}"
    finally:
        mod.constexprs = ungrouped
    return None


def gpu_main(path: str) -> None:
    import faulthandler
    from datetime import datetime, timezone

    import triton

    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    t0 = time.time()
    mod = variant_module()
    found = {"what": "issue 42: lesson 37's v4 with grouped heads against lesson 38's GQA prefill (v2) and SDPA",
             "produced_by": {"probe": "tools/probes/probe_gqa_v4.py",
                             "command": "python tools/probes/probe_gqa_v4.py OUT.json",
                             "established_from": "the run's own output (the probe writes this field)"},
             "gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
             "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "rows": []}
    problems = {}
    for shape in decode.GPU_PREFILL_ODD:
        for causal in (False, True):
            wrapped = type("Variant", (), {"gqa_attention": staticmethod(mod.gqa_attention),
                                           "prefill_prepared": staticmethod(mod.gqa_prepared)})
            problem = decode.gpu_prefill_problem(wrapped, shape, causal)
            if problem:
                problems[f"{shape} causal={causal}"] = problem
    found["correct"] = problems or "passed"
    with open(path, "w") as fh:
        json.dump(found, fh, indent=1)
    if problems:
        print("incorrect, no timing:", problems)
        return
    for S in decode.PREFILL_TIMED:
        for causal in (True, False):
            B = max(1, attention.TOKENS // S)
            g = torch.Generator(device="cuda").manual_seed(1)
            q = torch.randn(B, decode.HQ, S, decode.HEAD_DIM, device="cuda", generator=g).to(torch.bfloat16)
            k, v = (torch.randn(B, decode.HKV, S, decode.HEAD_DIM, device="cuda", generator=g).to(torch.bfloat16)
                    for _ in "kv")
            calls, refused = decode.sdpa_backends(q, k, v, causal)
            calls = {"v4 gqa": mod.gqa_prepared(q, k, v, causal)[0],
                     "lesson 38": LESSON38.prefill_prepared(q, k, v, causal)[0], **calls}
            ms = attention.interleaved_ms(calls)
            flops = 4 * B * decode.HQ * S * S * decode.HEAD_DIM * (0.5 if causal else 1)
            found["rows"].append({"S": S, "batch": B, "causal": causal, "refused": refused,
                                  "tflops": {n: round(flops / t / 1e9, 1) for n, t in ms.items()}})
            with open(path, "w") as fh:
                json.dump(found, fh, indent=1)
            del q, k, v
    found["seconds"] = round(time.time() - t0, 1)
    with open(path, "w") as fh:
        json.dump(found, fh, indent=1)
    names = list(found["rows"][0]["tflops"])
    print("| S | causal | " + " | ".join(names) + " |\n|---|---|" + "---|" * len(names))
    for row in found["rows"]:
        print(f"| {row['S']} | {row['causal']} | " + " | ".join(f"{row['tflops'].get(n, 0):.0f}" for n in names)
              + " |")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--model"]:
        t0 = time.time()
        print(f"v4 with grouped heads: {model_check() or 'passes lesson 38’s prefill check in the host model'} "
              f"({time.time() - t0:.0f} s)")
    elif args and not args[0].startswith("-"):
        gpu_main(args[0])
    else:
        print(__doc__)
