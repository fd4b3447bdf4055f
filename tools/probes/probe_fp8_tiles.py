"""Issue 23's fp8 sweep (lesson 34: 0.981x torch._scaled_mm, worst 0.961x at 8192x14336x4096 in the recording at
8b255a468e), one GPU call of about two minutes: does another tile or tile order of the same kernel win at the sweep's
shapes? Every candidate is lesson 34's matmul with a configuration forced, checked against the reference first (the
bound of gluon_course.nvidia.fp8), then timed in ROUNDS interleaved rounds of (torch._scaled_mm, candidate) do_bench
pairs, per-tensor scales, use_fast_accum=True as the lesson's figures; the ratio is the library's time over the
candidate's, median over the rounds.

    python tools/probes/probe_fp8_tiles.py OUT.json
"""
import json
import sys

CANDIDATES = {
    "128x256x128 s3 G8 (CONFIG)": {},
    "G16": {"GROUP_M": 16},
    "G4": {"GROUP_M": 4},
    "128x128x128 s5 w8": {"BLOCK_N": 128, "STAGES": 5},
    "128x128x128 s6 w4": {"BLOCK_N": 128, "STAGES": 6, "num_warps": 4},
    "256x128x128 s3": {"BLOCK_M": 256, "BLOCK_N": 128},
}
SHAPES = ((8192, 8192, 8192), (2048, 4096, 4096), (8192, 14336, 4096), (8192, 4096, 14336), (8192, 6144, 4096))
ROUNDS = 3


def main(path):
    import torch

    from gluon_course import load_solution
    from gluon_course.measure.device import free_cache
    from gluon_course.measure.timing import paired_rounds, paired_row
    from gluon_course.nvidia import fp8

    mod = load_solution("34")
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rounds": ROUNDS, "shapes": {}}
    for M, N, K in SHAPES:
        a, w, sa, sw = fp8.fp8_inputs(M, N, K, False)
        ref = fp8.reference(a, w, sa, sw)
        allowed = fp8.allowed_error(ref, a, w, sa, sw)
        lib_c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        library = lambda: fp8.scaled_mm(a, w, sa, sw, lib_c, True)  # noqa: E731
        row, calls = {}, {}
        for name, cfg in CANDIDATES.items():
            c = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
            try:
                mod.matmul(a, w, sa, sw, c, **cfg)
                torch.cuda.synchronize()
                problem = fp8.compare(c, ref, allowed)
            except Exception as e:  # noqa: BLE001 - a candidate that fails is its row
                problem = f"{type(e).__name__}: {str(e)[:200]}"
            if problem:
                row[name] = {"error": problem}
                continue
            calls[name] = (lambda cfg=cfg, c=c: mod.matmul(a, w, sa, sw, c, **cfg))
            row[name] = {}
        del ref, allowed
        for name, paired in paired_rounds(calls, library, ROUNDS).items():
            row[name].update(paired_row(paired, 2 * M * N * K))
        out["shapes"][f"{M}x{N}x{K}"] = row
        json.dump(out, open(path, "w"), indent=1)
        del a, w, sa, sw, lib_c, calls
        free_cache()
    names = list(CANDIDATES)
    print(f"{'shape':18}" + "".join(f"{n[:18]:>20}" for n in names))
    for shape, row in out["shapes"].items():
        print(f"{shape:18}" + "".join(f"{row[n]['ratio']:>14.3f} {row[n]['tflops']:5.0f}" if "ratio" in row[n]
                                      else f"{'error':>20}" for n in names))


if __name__ == "__main__":
    main(sys.argv[1])
