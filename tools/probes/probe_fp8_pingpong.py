"""Issue 23's fp8 sweep: do lesson 33's ping-pong consumers pay for fp8, where they did not for bf16?

Lesson 34's kernel is lesson 19's: both consumer warpgroups on one 128 × 256 tile, so while C's tile leaves through
shared memory the tensor cores wait. On fp8 a tile's K loop takes half the time it takes on bf16 (twice the products
a clock, the same bytes a step), so that wait is twice the share of a tile's time. Lesson 33's ping-pong consumers
each own a tile and store it while the other one's products run; on bf16 they lost to v9 (lesson 33's recording).
This asks whether they win on fp8: lesson 33's kernels as they are (step 1, and step 3's subtiled epilogue with a
fifth slot), given e4m3 descriptors, BLOCK_K = 128 and fp8's wgmma layout (32 of K an instruction), on two tiles a
consumer: 128 × 128 (lesson 33's) and 64 × 256 (one wgmma row, W's 256 columns as lesson 34 has them). A 128 × 192
tile cannot be described: a TMA block's sides must be powers of two in Triton 3.9.0.

They apply no scales: they are timed beside lesson 34's kernel and ``torch._scaled_mm`` given scales of 1, as
probe_fp8_cluster.py times its variants (the scales cost one multiply an element, once per tile). Not a lesson: if a
variant wins by more than a run's spread, it goes into lesson 34 with its scales, checks and plants.

Its run (H200, 2026-12-03, commit 1e5ca08946; results/trials/nvidia-h200-2026-12-03-pingpong-fp8-wide-bf16-library-
kernels.json): every variant correct; sweep geomeans 0.927-0.980x torch._scaled_mm against lesson 34's 0.987x in the
same run, the 64 × 256 tiles the lowest; at 8192³ the 128 × 128 ones 0.997-1.019x against lesson 34's 1.016x.

    python tools/probes/probe_fp8_pingpong.py --compile     CPU: every variant compiled for sm_90
    python tools/probes/probe_fp8_pingpong.py OUT.json      GPU: correctness on odd shapes, then interleaved timings
    python tools/probes/probe_fp8_pingpong.py library OUT.json   GPU: the kernels cuBLASLt launches at these shapes
    OUT=$OUT bash tools/probes/probe_fp8_pingpong.sh        GPU: that, in one call
"""
import importlib.util
import pathlib
import sys

from triton.experimental.gluon import language as gl

from gluon_course import load_solution

_spec = importlib.util.spec_from_file_location("probe_fp8_cluster",
                                               pathlib.Path(__file__).with_name("probe_fp8_cluster.py"))
cluster = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cluster)
_V10 = load_solution("33")

# Lesson 33's CONFIG with fp8's BLOCK_K: 4 slots of 32 KiB and two C buffers of 32 KiB (192 KiB).
BASE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "STAGES": 4, "GROUP_M": 8, "LOAD_REGS": 40, "MMA_REGS": 232,
        "STEP": "pingpong", "SNAKE": 0, "C_BUFFERS": 1}
VARIANTS = {
    "pingpong 128x128, 4 slots": {},
    "subtile 128x128, 5 slots": {"STEP": "subtile", "STAGES": 5},
    "subtile 128x128, 5 slots, snake": {"STEP": "subtile", "STAGES": 5, "SNAKE": 1},
    # 4 slots of 40 KiB and two 64 × 256 C buffers of 32 KiB: 224 KiB.
    "pingpong 64x256, 4 slots": {"BLOCK_M": 64, "BLOCK_N": 256},
    # The same with C in two 64 × 128 halves: 192 KiB (a fifth slot would need 232 KiB, past the 227 KiB a CTA may use).
    "subtile 64x256, 4 slots": {"STEP": "subtile", "BLOCK_M": 64, "BLOCK_N": 256},
}


class Launch(cluster.Launch):
    """A lesson 33 kernel (step 1 or step 3) on e4m3 operands: one warpgroup a consumer, so 4 warps a launch."""
    num_warps = 4

    def __init__(self, cfg: dict):
        super().__init__(cfg)
        self.kernel = _V10.pingpong_kernel if cfg["STEP"] == "pingpong" else _V10.subtile_kernel

    def layouts(self) -> dict:
        acc = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[self.num_warps, 1],
                                        instr_shape=[16, self.cfg["BLOCK_N"], 32])
        return {"ac_cga": [], "w_cga": [], "acc_layout": acc}

    def constexprs(self) -> dict:
        keys = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "GROUP_M", "LOAD_REGS", "MMA_REGS"]
        if self.cfg["STEP"] == "subtile":
            keys += ["SNAKE", "C_BUFFERS"]
        return {**{k: self.cfg[k] for k in keys}, "acc_layout": self.layouts()["acc_layout"], "B_KN": False}

    def blocks(self):
        cfg = self.cfg
        split = 2 if cfg["STEP"] == "subtile" else 1
        return ([cfg["BLOCK_M"], cfg["BLOCK_K"]], [cfg["BLOCK_N"], cfg["BLOCK_K"]],
                [cfg["BLOCK_M"], cfg["BLOCK_N"] // split])


def library(path: str) -> None:
    """The kernels torch._scaled_mm (per-tensor scales, fast accumulation) and bf16 torch.matmul launch at the
    probe's shapes and the bf16 sweep's: which tile, cluster and schedule cuBLASLt picked (their names say)."""
    import json

    import torch

    from gluon_course.measure.device import kernels_launched
    from gluon_course.measure.gemm import GEMM_SWEEP_SHAPES, gemm_inputs
    from gluon_course.nvidia import fp8

    one = torch.ones(1, dtype=torch.float32, device="cuda")
    found = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "fp8": {}, "bf16": {}}
    for M, N, K in cluster.SHAPES:
        a, w, _, _ = fp8.fp8_inputs(M, N, K, False)
        c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        found["fp8"][f"{M}x{N}x{K}"] = kernels_launched(lambda: fp8.scaled_mm(a, w, one, one, c, True))
    for M, N, K in GEMM_SWEEP_SHAPES:
        a, b = gemm_inputs(M, N, K, torch.bfloat16)
        c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
        found["bf16"][f"{M}x{N}x{K}"] = kernels_launched(lambda: torch.matmul(a, b, out=c))
    json.dump(found, open(path, "w"), indent=1)
    for kind in ("fp8", "bf16"):
        for shape, kernels in found[kind].items():
            print(kind, shape, " + ".join(f"{k['name'][:80]} grid {k['grid']} block {k['block']}" for k in kernels))


if __name__ == "__main__":
    if sys.argv[1:] == ["--compile"]:
        cluster.compile_all(VARIANTS, Launch, BASE)
    elif sys.argv[1] == "library":
        library(sys.argv[2])
    else:
        cluster.main(sys.argv[1], VARIANTS, make=Launch, base=BASE)
