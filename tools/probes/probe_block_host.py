"""Lesson 32's open question on the decode block, one GPU call of about a minute: where does the swapped block's host
time go? Its do_bench time is 3.3 times its CUDA-graph time where torch's is 2.5 (recording at b5cf6de229), and the
layers timed alone do not account for the difference.

With the GPU kept busy by a long sleep (gluon_course.measure.timing.host_us_per_call_each: no call waits for it),
the host's microseconds per call of
  - the whole block, torch's and the swapped one, at 16 and 1 tokens;
  - each of the seven linear layers alone, torch's nn.Linear and SwappedLinear;
  - for the q projection's shape, the steps between: F.linear(a, w); linear(a, w.t()) (C allocated per call);
    linear(a, wt, c) with W's transpose view and C made once; the plan lookup alone (Linear.plan); the kept launch
    alone (Plan.launch);
and a cProfile of 20 swapped decode blocks (GPU asleep), its functions by own time.

    python tools/probes/probe_block_host.py OUT.json
"""
import cProfile
import io
import json
import pstats
import sys

import torch
import torch.nn.functional as F


def relative_paths(text: str) -> str:
    """The profile's file names from the package or repository folder on (gluon_course/..., torch/..., triton/...):
    a machine's paths stay out of the trial."""
    import re

    return re.sub(r"(?<![\w.])/[^\s(]*/(?=(?:gluon_course|solutions|lessons|tools|torch|triton)/)", "", text)


def main(path):
    from gluon_course import load_solution
    from gluon_course.measure.linear import LAYERS, Block
    from gluon_course.measure.timing import host_us_per_call_each

    lesson = load_solution("32")
    linear = lesson.linear
    torch.manual_seed(0)
    block = Block().cuda().to(torch.bfloat16).eval()
    swapped = block.swapped(lambda a, b: linear(a, b))
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "blocks": {}, "layers": {}, "steps": {}}
    with torch.no_grad():
        for T in (16, 1):
            x = torch.randn(1, T, 4096, device="cuda", dtype=torch.bfloat16)
            for _ in range(3):
                block(x), swapped(x)
            torch.cuda.synchronize()
            out["blocks"][T] = host_us_per_call_each({"torch": lambda: block(x), "swapped": lambda: swapped(x)},
                                                     calls=20, repeats=7)
        T = 16
        for name in LAYERS:
            theirs, mine = getattr(block, name), swapped._modules[name]
            h = torch.randn(T, theirs.in_features, device="cuda", dtype=torch.bfloat16)
            theirs(h), mine(h)
            torch.cuda.synchronize()
            out["layers"][name] = host_us_per_call_each({"torch": lambda: theirs(h), "swapped": lambda: mine(h)},
                                                        calls=100, repeats=7)
        a = torch.randn(T, 4096, device="cuda", dtype=torch.bfloat16)
        w = block.q.weight
        wt = w.t()
        c = torch.empty(T, w.shape[0], device="cuda", dtype=torch.bfloat16)
        table = lesson._TABLED
        p = table.plan(a, wt, c)
        steps = {"F.linear(a, w)": lambda: F.linear(a, w),
                 "linear(a, w.t())": lambda: linear(a, w.t()),
                 "linear(a, wt, c)": lambda: linear(a, wt, c),
                 "Linear.plan(a, wt, c)": lambda: table.plan(a, wt, c),
                 "Plan.launch(a, wt, c)": lambda: p.launch(a, wt, c),
                 "torch.empty(C)": lambda: torch.empty(T, w.shape[0], device="cuda", dtype=torch.bfloat16),
                 "w.t()": lambda: w.t()}
        for fn in steps.values():
            fn()
        torch.cuda.synchronize()
        out["steps"] = host_us_per_call_each(steps, calls=100, repeats=7)
        x = torch.randn(1, 16, 4096, device="cuda", dtype=torch.bfloat16)
        torch.cuda.synchronize()
        torch.cuda._sleep(int(2e9 * 20e-3))
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(20):
            swapped(x)
        prof.disable()
        torch.cuda.synchronize()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(30)
        out["profile_tottime"] = relative_paths(text.getvalue())
    json.dump(out, open(path, "w"), indent=1)
    print("host µs per call (GPU asleep; least of 7 rounds)")
    for T, row in out["blocks"].items():
        print(f"  block, {T} tokens: torch {row['torch']:.1f}, swapped {row['swapped']:.1f}")
    for name, row in out["layers"].items():
        print(f"  layer {name:5}: torch {row['torch']:.1f}, swapped {row['swapped']:.1f}")
    for name, us in out["steps"].items():
        print(f"  {name:24} {us:.2f}")
    print("\n".join(out["profile_tottime"].splitlines()[:45]))


if __name__ == "__main__":
    main(sys.argv[1])
