"""Lesson 32's decode figures, one GPU call of under a minute: what the GEMM adds to a read of W at 32 MiB. Ours at
1 and 16 × 4096 × 4096 takes about 3 µs more than nvidia.read_ceiling's read of the same W (recording at
b5cf6de229). Timed alike (cold_kernel_ms: L2 emptied by a read, graph replay, the flush subtracted), in ROUNDS
interleaved rounds: the read with as many programs as the GEMM runs (64: one per 64-row tile; 128: two per tile)
and with the ceiling's 264; lesson 32's swap-AB configuration with SPLIT_K 1 (64 programs, no hand-over) and 2 (128
programs, the partial sums handed over through L2), 4 and 8 slots; the table's own entry.

    python tools/probes/probe_decode_gap.py OUT.json
"""
import json
import statistics
import sys

ROUNDS = 3


def main(path):
    import torch

    from gluon_course import load_solution
    from gluon_course.measure.linear import linear_inputs
    from gluon_course.measure.timing import cold_kernel_ms
    from gluon_course.nvidia.read_ceiling import reader

    linear = load_solution("32").linear
    base = {"BLOCK_M": 64, "BLOCK_N": 16, "BLOCK_K": 128, "num_warps": 4, "SWAP_AB": True, "W_FIRST": 0}
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rounds": ROUNDS, "shapes": {}}
    for M in (1, 16):
        a, w, c = linear_inputs(M, 4096, 4096, seed=M)
        b = w.t()
        calls = {f"read p{p} s{s}": reader(w, programs=p, stages=s) for p, s in ((64, 4), (64, 8), (128, 4),
                                                                                  (128, 8), (264, 4))}
        calls["ours (table)"] = lambda: linear(a, b, c)
        for split in (1, 2):
            for stages in (4, 8):
                cfg = {**base, "SPLIT_K": split, "STAGES": stages}
                calls[f"ours split {split} s{stages}"] = lambda cfg=cfg: linear(a, b, c, **cfg)
        ref = a.float() @ w.float().t()
        for name, fn in calls.items():
            fn()
            torch.cuda.synchronize()
            if name.startswith("ours"):
                err = float((c.float() - ref).abs().max() / ref.abs().max())
                if not err < 1e-2:
                    raise AssertionError(f"{name} at {M}x4096x4096: largest error {err:.2e} of the largest |C|")
        times = {name: [] for name in calls}
        for _ in range(ROUNDS):
            for name, fn in calls.items():
                times[name].append(1e3 * cold_kernel_ms(fn))
        out["shapes"][f"{M}x4096x4096"] = {name: {"us": statistics.median(t), "each_us": t} for name, t in
                                           times.items()}
        json.dump(out, open(path, "w"), indent=1)
        del a, w, b, c, ref
    for shape, rows in out["shapes"].items():
        print(shape)
        for name, row in rows.items():
            print(f"  {name:24} {row['us']:7.2f} us  ({', '.join(f'{x:.2f}' for x in row['each_us'])})")


if __name__ == "__main__":
    main(sys.argv[1])
