"""Does lesson 32's L2 hint on W's TMA copies (W_FIRST) pay on a shape? (One GPU call, a minute or two.)

Each shape runs the dispatch table's configuration twice, with W_FIRST = 0 and W_FIRST = 1 (everything else the
table's), each checked against an fp32 reference, then timed in 3 interleaved rounds beside F.linear: do_bench's
median, the call after a write flush and after a read flush (measure.timing.cold_kernel_ms). The difference between
the two flushes is the write-back of the dirty lines do_bench's overwrite leaves, which the hint is for.

The first run of this probe (2026-12-03, commit 49f6d7c3fd, results/trials/nvidia-h200-2026-12-03-cache-policy.json)
predates W_FIRST: that version wrote hints into the solution's source (W's, the activations', C's) and is in the
repository's history.

    python tools/probes/probe_cache_policy.py OUT.json [MxNxK ...]      (GPU)
    python tools/probes/probe_cache_policy.py --plan [MxNxK ...]         (CPU: the configurations each shape would run)
"""
import json
import sys

SHAPES = ("1x128256x4096", "16x128256x4096", "2048x4096x4096", "2048x14336x4096", "1024x4096x4096",
          "512x6144x4096")
ROUNDS = 3


class WithHint:
    """The dispatch table's configuration with W_FIRST set: what ``Linear(table=...)`` asks of a table."""

    def __init__(self, table, w_first: int):
        self.table, self.w_first = table, w_first

    def config(self, M, N, K, b_kn=False):
        return {**self.table.config(M, N, K, b_kn), "W_FIRST": self.w_first}


def linears():
    from gluon_course import load_solution

    mod = load_solution("32")
    table = mod._this_gpus_table()
    return mod, {f"W_FIRST={v}": mod.Linear(table=WithHint(table, v)) for v in (0, 1)}


def plan_only(shapes) -> None:
    import torch

    mod, variants = linears()
    for shape in shapes:
        M, N, K = map(int, shape.split("x"))
        a, w = torch.empty(M, K, dtype=torch.bfloat16), torch.empty(N, K, dtype=torch.bfloat16)
        c = torch.empty(M, N, dtype=torch.bfloat16)
        for name, linear in variants.items():
            p = linear.plan(a, w.t(), c, sms=132)
            print(f"{shape:16} {name}: A_POLICY={p.constexprs['A_POLICY'] is not None} "
                  f"B_POLICY={p.constexprs['B_POLICY'] is not None} {p.config}")


def main(out: str, shapes) -> None:
    import torch
    import torch.nn.functional as F

    from gluon_course.measure.linear import linear_inputs
    from gluon_course.measure.timing import bench_ms, cold_kernel_ms

    mod, variants = linears()
    rows = {}
    for i, shape in enumerate(shapes):
        M, N, K = map(int, shape.split("x"))
        a, w, c = linear_inputs(M, N, K, seed=i)
        b = w.t()
        reference = a.float() @ b.float()
        calls = {"F.linear": lambda: F.linear(a, w)}
        errors = {}
        for name, linear in variants.items():
            c.fill_(float("nan"))
            linear(a, b, c)
            torch.cuda.synchronize()
            errors[name] = float((c.float() - reference).abs().max() / reference.abs().max())
            calls[name] = (lambda linear=linear: linear(a, b, c))
        timings = {who: {"bench_us": [], "cold_write_us": [], "cold_read_us": []} for who in calls}
        for _ in range(ROUNDS):
            for who, fn in calls.items():
                timings[who]["bench_us"].append(1e3 * bench_ms(fn))
                timings[who]["cold_write_us"].append(1e3 * cold_kernel_ms(fn, flush="write"))
                timings[who]["cold_read_us"].append(1e3 * cold_kernel_ms(fn, flush="read"))
        config = variants["W_FIRST=0"].plan(a, b, c).config
        rows[shape] = {"config": config, "max_rel_error": errors, "timings": timings}
        del a, w, b, c, reference
    json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rounds": ROUNDS, "shapes": rows},
              open(out, "w"), indent=1)

    def med(xs):
        return sorted(xs)[len(xs) // 2]

    print(f"{'shape':16} {'who':10} {'bench':>8} {'cold_w':>8} {'cold_r':>8} {'w-r':>6} {'err':>8}")
    for shape, row in rows.items():
        for who, t in row["timings"].items():
            b_, w_, r_ = med(t["bench_us"]), med(t["cold_write_us"]), med(t["cold_read_us"])
            err = row["max_rel_error"].get(who)
            print(f"{shape:16} {who:10} {b_:8.2f} {w_:8.2f} {r_:8.2f} {w_ - r_:6.2f} "
                  f"{'' if err is None else f'{err:8.1e}'}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    if sys.argv[1] == "--plan":
        plan_only(sys.argv[2:] or SHAPES)
    else:
        main(sys.argv[1], sys.argv[2:] or SHAPES)
