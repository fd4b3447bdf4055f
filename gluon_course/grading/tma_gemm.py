"""What the TMA GEMM lessons (14 on) check alike: the GPU checks (odd shapes that TMA can describe, every launch in a
child process under a time limit, the three sanitizers on a small launch, the launcher's refusals) and the reading
of their machine code (the TMA and mbarrier instructions, the wgmma waits). Each lesson's checks call these with
its own numbers."""
from __future__ import annotations

import json
import os

from ..course import load_module_file
from .checks import Reference
from .gemm import empty_operands, refuses

SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")
# TMA needs K and N to be multiples of 8 (16-byte rows of bf16/fp16): the odd shapes keep odd M, tails of M, N and K
# past every tile edge (N = 136, K = 1000: 40 past 960, K = 4104: 8 past 4096), and a single row.
TMA_SHAPES = ((1, 8, 8), (17, 40, 72), (128, 128, 128), (1000, 1000, 1000), (4097, 136, 1000), (256, 512, 4104),
              (127, 264, 64))
# Shapes with more tiles of C than an H200 holds programs (396 at 3 per SM): persistent programs do several tiles.
MANY_TILES = ((4097, 2056, 200), (2000, 4104, 72))
SMALL = (129, 136, 200)
# The child compiles two kernels (bf16, fp16) and runs the small GEMMs: ~20 s on an H200; a hang is killed at this.
# (GLUON_COURSE_CHILD_LIMIT_S shortens it for a session that runs the planted hangs, which spend the whole limit.)
CHILD_LIMIT_S = float(os.environ.get("GLUON_COURSE_CHILD_LIMIT_S", "90"))


def small_launch(module_file: str, m: str = str(SMALL[0]), n: str = str(SMALL[1]), k: str = str(SMALL[2]),
                 programs: str = "") -> None:
    """One launch of the module's matmul on a small odd shape (for a child process: a hang is killed there); with
    ``programs``, a persistent launcher gets that many programs, so that each does several tiles."""
    import torch

    from ..measure.gemm import gemm_inputs

    mod = load_module_file(module_file)
    a, b = gemm_inputs(int(m), int(n), int(k), torch.bfloat16)
    mod.matmul(a, b, **({"programs": int(programs)} if programs else {}))
    torch.cuda.synchronize()


def correct_here(module_file: str, shapes: str) -> str | None:
    """The correctness check itself (for a child process: a barrier that never completes hangs there)."""
    from ..measure.gemm import check_gemm

    mod = load_module_file(module_file)
    return check_gemm(lambda a, b, c: mod.matmul(a, b, c), shapes=[tuple(s) for s in json.loads(shapes)])


def correct(mod, shapes=TMA_SHAPES) -> str | None:
    """``check_gemm`` on ``shapes`` (bf16 and fp16; poisoned, guarded C), all in one child process under a limit."""
    from ..measure.isolated import check_in_child

    return check_in_child(f"{__file__}:correct_here", [mod.__file__, json.dumps([list(s) for s in shapes])],
                          timeout=CHILD_LIMIT_S)


# A persistent kernel's sanitizer launch: 2 × 3 tiles of 128 × 256 (K: 4 steps of 64, some zero-filled) on 2
# programs, so that each program does 3 tiles and the ring's slots and phases carry from one tile to the next.
PERSISTENT_SMALL = (129, 520, 200, 2)


def sanitizer_clean(mod, shape=SMALL) -> str | None:
    """compute-sanitizer memcheck, racecheck and synccheck on one small launch (each in its own child process);
    ``shape`` is (M, N, K) or (M, N, K, programs) for a persistent launcher."""
    from ..measure.isolated import sanitizer_check

    return sanitizer_check(f"{__file__}:small_launch", [mod.__file__, *shape], tools=SANITIZER_TOOLS)


def sanitizer_command(lesson_file: str, tool: str = "racecheck", shape=SMALL) -> str:
    """The command a learner types to run a sanitizer on the same small launch, with the checks' flags."""
    from ..measure.isolated import hand_command

    return hand_command("gluon_course/grading/tma_gemm.py:small_launch", [lesson_file, *shape], tool)


def launcher_refuses(mod, warpgroups: bool = True) -> str | None:
    """The TMA launchers' refusals: TMA's 16-byte rule naming lesson 13 as the way out, fp32, a mismatched K, a
    non-contiguous A; with ``warpgroups``, half a warpgroup."""
    import torch

    from ..measure.gemm import gemm_inputs

    a, b = gemm_inputs(129, 136, 1001, torch.bfloat16)
    a_ok, b_odd = gemm_inputs(129, 129, 1000, torch.bfloat16)
    cases = {
        "K = 1001 bf16 (2002-byte rows of A)": (lambda: mod.matmul(a, b), ValueError, ("16", "lesson 13", "multiple")),
        "fp32 inputs": (lambda: mod.matmul(a.float(), b.float()), TypeError, ()),
        "B with 1000 rows for A's 1001 columns": (lambda: mod.matmul(a, b[:1000]), ValueError, ()),
        "a transposed view (non-contiguous)": (lambda: mod.matmul(a.t().contiguous().t(), b), ValueError, ()),
        "N = 129 bf16 (258-byte rows of B)": (lambda: mod.matmul(a_ok, b_odd), ValueError, ("16", "lesson 13")),
    }
    if warpgroups:
        cases["num_warps=2 (half a warpgroup)"] = (lambda: mod.matmul(a[:, :1000], b[:1000], num_warps=2), ValueError,
                                                   ("warpgroup",))
    return refuses(cases) or empty_operands(mod)


# -- machine code -------------------------------------------------------------------------------------

def tma_ops(k) -> dict:
    """The TMA and mbarrier instructions of a compiled kernel (UTMA*, SYNCS*), by opcode."""
    return {op: n for op, n in sorted(k.opcodes().items()) if op.startswith(("UTMA", "SYNCS"))}


def wgmma_waits(k) -> list[tuple[int, int]]:
    """(address, depth) of every WARPGROUP.DEPBAR.LE: the depth is how many wgmma groups may still be running."""
    return [(i.address, int(i.text.rsplit(",", 1)[1].strip().rstrip(";"), 0)) for i in k.instructions()
            if i.opcode == "WARPGROUP.DEPBAR.LE"]


HGMMA_OPCODE = {"bf16": "HGMMA.64x{n}x16.F32.BF16", "fp16": "HGMMA.64x{n}x16.F32"}
NOT_IN_WGMMA_KERNELS = ("LDSM", "HMMA", "FENCE.VIEW.ASYNC")


def wgmma_signature(k, dtype: str, in_loop: dict, mma_per_step: int, instr_n: int, tma: dict,
                    absent=NOT_IN_WGMMA_KERNELS) -> str | None:
    """The K loop of a wgmma kernel: ``in_loop`` plus ``mma_per_step`` HGMMA.64x``instr_n``x16, every HGMMA in that
    loop, none of ``absent``, and exactly the ``tma`` TMA/mbarrier instructions. None, or a sentence."""
    from .counts import mismatch

    hgmma = HGMMA_OPCODE[dtype].format(n=instr_n)
    if not any(op.startswith("HGMMA") for op in k.opcodes()):
        return f"{dtype}: no HGMMA (wgmma) at all; the product must come from warpgroup_mma"
    loop = k.opcodes_between(*k.loop_holding("HGMMA"))
    want = {**in_loop, hgmma: mma_per_step}
    problem = mismatch({op: loop.get(op, 0) for op in want}, want, where="in the K loop", dtype=dtype)
    if problem:
        return problem
    every = {op: n for op, n in k.opcodes().items() if op.startswith("HGMMA")}
    if every != {hgmma: mma_per_step}:
        return f"{dtype}: {every}; expected {mma_per_step} × {hgmma}, all in the K loop"
    left = {op: n for op, n in k.opcodes().items() if op.startswith(tuple(absent))}
    if left:
        return f"{dtype}: {left} left in the kernel: wgmma reads A and B from shared memory itself"
    return mismatch(tma_ops(k), tma, where="in the whole kernel (TMA and mbarrier instructions)", dtype=dtype)


REFUSALS = ("the launcher refuses rows that are not 16-byte multiples (naming TMA's rule and lesson 13), fp32, a "
            "mismatched K, a non-contiguous A and half a warpgroup, with sentences; M, N or K = 0 gives what "
            "torch.matmul gives")
HOST_MODEL = ("in the host model (no GPU): C exact on odd shapes, each element written once; every slot read after "
              "the wait that covers its copy, none refilled while read, every wait satisfiable")


# -- figures --------------------------------------------------------------------------------------

DESIGN_RUN = (
    Reference(0.97, "of cuBLAS", "a plain Gluon TMA + wgmma kernel, 3 stages, 128 × 256 × 64, 8 warps, on the H200, "
              "bf16 8192³: 678 TFLOPS; this course's design run (2026-11-29), a trial, not a recording"),
    Reference(0.86, "of cuBLAS", "plain Triton tl.dot on the H200, bf16 8192³, default (wgmma): 0.78–0.94× cuBLAS; "
              "this course's design run"),
)
