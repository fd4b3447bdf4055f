"""Where do_bench's figure for lesson 32's launcher exceeds its kernel's own time, on the mid-M shapes (one GPU call,
about a minute; the question the 2026-12-02 recording left: at 512 × 6144 × 4096 Nsight Compute timed the kernel
alone at 0.975× cuBLAS's, the CUDA-graph replay read 0.969×, do_bench 0.905×).

For ours and F.linear on each shape, in one process, warm, on an idle GPU:
  bench        do_bench's median (L2 overwritten before each call, an event pair around the call)
  cold_write   the call after the same overwrite, replayed from a CUDA graph (no host, no event pair)
  cold_read    the call after L2 is emptied by a read (L2 left clean), from a CUDA graph
  graph        the call replayed with L2 kept
bench − cold_write is what do_bench's own loop adds (launch latency, the event pair); cold_write − cold_read is the
write-back of the dirty lines the overwrite leaves. Writes OUT (JSON) and prints a table.

    python tools/probes/probe_bench_gap.py OUT.json [MxNxK ...]
"""
import json
import sys

import torch
import torch.nn.functional as F

from gluon_course import load_solution
from gluon_course.measure.linear import linear_inputs
from gluon_course.measure.timing import bench_ms, cold_kernel_ms, graph_ms

SHAPES = ("512x6144x4096", "128x6144x4096", "64x6144x4096", "512x14336x4096", "64x4096x4096", "2048x4096x4096")


def main(out: str, shapes) -> None:
    linear = load_solution("32").linear
    rows = {}
    for i, shape in enumerate(shapes):
        M, N, K = map(int, shape.split("x"))
        a, w, c = linear_inputs(M, N, K, seed=i)
        b = w.t()
        calls = {"ours": lambda: linear(a, b, c), "F.linear": lambda: F.linear(a, w)}
        for fn in calls.values():
            fn()
        torch.cuda.synchronize()
        row = {}
        for who, fn in calls.items():
            row[who] = {"bench_us": 1e3 * bench_ms(fn), "cold_write_us": 1e3 * cold_kernel_ms(fn, flush="write"),
                        "cold_read_us": 1e3 * cold_kernel_ms(fn, flush="read"), "graph_us": 1e3 * graph_ms(fn)}
        rows[shape] = row
        del a, w, b, c
    json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "shapes": rows}, open(out, "w"),
              indent=1)
    print(f"{'shape':16} {'who':9} {'bench':>8} {'cold_w':>8} {'cold_r':>8} {'graph':>8} {'bench-cold_w':>13}")
    for shape, row in rows.items():
        for who, r in row.items():
            print(f"{shape:16} {who:9} {r['bench_us']:8.2f} {r['cold_write_us']:8.2f} {r['cold_read_us']:8.2f} "
                  f"{r['graph_us']:8.2f} {r['bench_us'] - r['cold_write_us']:13.2f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2:] or SHAPES)
