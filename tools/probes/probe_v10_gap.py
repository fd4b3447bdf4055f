"""Lesson 33's open question, one GPU call of about two minutes: how much of the gap between a v10 step's do_bench
figure and its CUDA-graph twin at the sweep's smaller shapes (4096³: 0.899× against 1.043× cuBLAS in the recording at
8b255a468e) is the write-back of the dirty lines do_bench's L2 overwrite leaves, and how much is L2 not holding the
operands between calls.

For v9 (lesson 19's launcher), v9's kernel through a kept plan (tools/probes/probe_coop.py's "coop 3 slots"), v10 steps
1 to 3 and cuBLAS, on each shape, in one process, 2 interleaved rounds (medians), the four timings of
tools/probes/probe_bench_gap.py: bench (do_bench), cold_write (after the same overwrite, from a CUDA graph: no host, no
event pair), cold_read (after L2 is emptied by a read: nothing dirty), graph (L2 kept between calls).
cold_write − cold_read is the write-back; cold_read − graph is what a call loses when its operands start in HBM.

    python tools/probes/probe_v10_gap.py OUT.json [MxNxK ...]
"""
import json
import os
import statistics
import sys

SHAPES = ("4096x4096x4096", "2048x2048x8192", "8192x8192x8192")
ROUNDS = 2


def main(out: str, shapes) -> None:
    import torch

    from gluon_course import load_solution
    from gluon_course.measure.gemm import gemm_inputs
    from gluon_course.measure.timing import bench_ms, cold_kernel_ms, graph_ms

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import probe_coop

    v9, v10 = load_solution("19"), load_solution("33")
    kept_v9 = probe_coop.Launch({**probe_coop.BASE})
    versions = {"v9": v9.matmul, "v9 kept": kept_v9, "v10.1": v10.pingpong_matmul, "v10.2": v10.matmul,
                "v10.3": v10.subtile_matmul, "cuBLAS": lambda a, b, c: torch.matmul(a, b, out=c)}
    timings = {"bench": bench_ms, "cold_write": lambda fn: cold_kernel_ms(fn, flush="write"),
               "cold_read": lambda fn: cold_kernel_ms(fn, flush="read"), "graph": graph_ms}
    rows = {}
    for shape in shapes:
        M, N, K = map(int, shape.split("x"))
        a, b = gemm_inputs(M, N, K, torch.bfloat16)
        c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        calls = {who: (lambda fn=fn: fn(a, b, c)) for who, fn in versions.items()}
        for fn in calls.values():
            fn()
        torch.cuda.synchronize()
        seen = {who: {t: [] for t in timings} for who in calls}
        for _ in range(ROUNDS):
            for who, fn in calls.items():
                for t, time_it in timings.items():
                    seen[who][t].append(1e3 * time_it(fn))
        rows[shape] = {who: {f"{t}_us": statistics.median(v) for t, v in ts.items()} | {"each": ts}
                       for who, ts in seen.items()}
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rounds": ROUNDS, "shapes": rows},
                  open(out, "w"), indent=1)
        del a, b, c
    print(f"{'shape':16} {'who':8} {'bench':>9} {'cold_w':>9} {'cold_r':>9} {'graph':>9} {'w-back':>7} {'HBM':>7}"
          f"  ratio to cuBLAS: bench cold_r graph")
    for shape, row in rows.items():
        lib = row["cuBLAS"]
        for who, r in row.items():
            print(f"{shape:16} {who:8} {r['bench_us']:9.1f} {r['cold_write_us']:9.1f} {r['cold_read_us']:9.1f} "
                  f"{r['graph_us']:9.1f} {r['cold_write_us'] - r['cold_read_us']:7.1f} "
                  f"{r['cold_read_us'] - r['graph_us']:7.1f}  {lib['bench_us'] / r['bench_us']:.3f} "
                  f"{lib['cold_read_us'] / r['cold_read_us']:.3f} {lib['graph_us'] / r['graph_us']:.3f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2:] or SHAPES)
