"""What the TMA GEMM lessons (14 on) check alike: the GPU checks (odd shapes that TMA can describe, every launch in a
child process under a time limit, the three sanitizers on a small launch, the launcher's refusals) and the reading
of their machine code (the TMA and mbarrier instructions, the wgmma waits). Each lesson's checks call these with
its own numbers."""
from __future__ import annotations

import json
import os
import re

from ..course import load_module_file
from .checks import Passed, Reference
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

    from .runner import sentence_in_child

    mod = load_module_file(module_file)
    return sentence_in_child(module_file, lambda: check_gemm(lambda a, b, c: mod.matmul(a, b, c),
                                                             shapes=[tuple(s) for s in json.loads(shapes)]))


def correct(mod, shapes=TMA_SHAPES) -> str | None:
    """``check_gemm`` on ``shapes`` (bf16 and fp16; poisoned, guarded C), all in one child process under a limit."""
    from ..measure.isolated import check_in_child

    return check_in_child(f"{__file__}:correct_here", [mod.__file__, json.dumps([list(s) for s in shapes])],
                          timeout=CHILD_LIMIT_S)


# A persistent kernel's sanitizer launch: 2 × 3 tiles of 128 × 256 (K: 4 steps of 64, some zero-filled) on 2
# programs, so that each program does 3 tiles and the ring's slots and phases carry from one tile to the next.
PERSISTENT_SMALL = (129, 520, 200, 2)


def sanitizer_clean(mod, shape=SMALL, warp_specialized: bool = False, dispatch_pcs=None):
    """compute-sanitizer memcheck, racecheck and synccheck on one small launch (each in its own child process);
    ``shape`` is (M, N, K) or (M, N, K, programs) for a persistent launcher.

    ``warp_specialized``: Triton 3.9.0's warp specialization keeps a word of shared memory that the default partition
    writes before named barrier 1 (``BAR.SYNC 0x1``) and the workers read after it, at the fork and at the exit (the
    code sits at the kernel's ``def`` line: it is the compiler's, not the lesson's; gluon_course.nvidia.ws_dispatch
    finds it). The barrier orders the pair, yet racecheck reports it as a RAW hazard now and then: on an H200
    (2026-12-02, tools/probes/race-repro.sh) 177 times in one run of 10 launches of a minimal persistent TMA ring whose
    word sits right after its mbarriers, in one of two runs of lesson 18, not in the minimal kernels (two runs each)
    whose word sits 24 bytes past their mbarriers or that have none. Such a report, with every access at the kernel's
    ``def`` line, passes with a note saying so; any hazard elsewhere fails.

    ``dispatch_pcs`` (``kernel+0xOFFSET`` each, ``gluon_course.nvidia.ws_dispatch.pcs`` of the kernel compiled as this
    launch compiles it): the same rule by instruction instead of by line, which the line numbers cannot give where
    the compiler hands one of the dispatch's stores the line of a neighbouring statement (lesson 33's cluster kernel:
    its store at +0x2640 carries the line of its cluster barrier)."""
    from ..measure.isolated import sanitizer_check

    if not warp_specialized:
        return sanitizer_check(f"{__file__}:small_launch", [mod.__file__, *shape], tools=SANITIZER_TOOLS)
    import inspect

    def def_line(fn) -> str:
        lines, first = inspect.getsourcelines(fn.fn)
        return f"{file}:{first + next(i for i, line in enumerate(lines) if line.lstrip().startswith('def '))}"

    # What racecheck reported this time and the rule set aside goes to the record (Passed.facts), not into the
    # note: the note's words stay the same from run to run, for nbval.
    facts: dict = {}
    if dispatch_pcs is not None:
        problem = sanitizer_check(f"{__file__}:small_launch", [mod.__file__, *shape], tools=SANITIZER_TOOLS,
                                  ignore_race_pcs=dispatch_pcs, set_aside=facts)
        if problem:
            return problem
        return Passed("racecheck: no hazard in the kernel's own code (hazards between the compiler's accesses of its "
                      "warp-specialization state word, which named barrier 1 orders, are not counted: "
                      + ", ".join(sorted(dispatch_pcs, key=lambda pc: int(pc.partition("+")[2], 16))) + ")", facts)
    file = os.path.basename(mod.__file__)
    at = def_line(mod.matmul_kernel)
    places = {at}
    problem = sanitizer_check(f"{__file__}:small_launch", [mod.__file__, *shape], tools=SANITIZER_TOOLS,
                              ignore_race_at=places, set_aside=facts)
    if problem:
        return problem
    # The same words whether or not racecheck reported the compiler's pair this time (it does so now and then).
    return Passed(f"racecheck: no hazard in the kernel's own code (hazards between two accesses at "
                  f"{' or '.join(sorted(places))}, the "
                  "compiler's warp-specialization state word, which named barrier 1 orders, are not counted)", facts)





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


def wait_depth_problem(k, in_loop: int = 1, after: int | None = 0, who: str = "the K loop",
                       mma: str = "HGMMA") -> str | None:
    """The operands of the wgmma waits, read off the listing (``WARPGROUP.DEPBAR.LE gsb0, 0x1`` is
    warpgroup_mma_wait(1)): exactly one wait in the K loop (the loop holding the HGMMA), of depth ``in_loop``, and,
    unless ``after`` is None, the first wait after the loop of depth ``after`` (the last products done before C is
    stored). ``mma`` names the products' opcode (QGMMA for fp8, lesson 34). None, or a sentence naming the depth."""
    first, last = k.loop_holding(mma)
    inside = [d for a, d in wgmma_waits(k) if first <= a <= last]
    following = [d for a, d in wgmma_waits(k) if a > last]
    if len(inside) != 1:
        return (f"{who} holds {len(inside)} wgmma waits (WARPGROUP.DEPBAR.LE); expected one, "
                f"warpgroup_mma_wait({in_loop}), once per K step")
    depth = inside[0]
    if depth < in_loop:
        return (f"{who} waits with WARPGROUP.DEPBAR.LE gsb0, {depth:#x}: warpgroup_mma_wait({depth}), which waits for "
                f"this step's products before the loop goes on; expected depth {in_loop}: warpgroup_mma_wait("
                f"{in_loop}) lets this step's products run while the next tile is waited for, and retires the "
                "previous step's (depth 0 is lesson 15's synchronous step)")
    if depth > in_loop:
        return (f"{who} waits with WARPGROUP.DEPBAR.LE gsb0, {depth:#x}: warpgroup_mma_wait({depth}) leaves {depth} "
                f"groups running, so the slot that the release or refill after it hands back may still be read by "
                f"wgmma; expected depth {in_loop}")
    if after is not None and following[:1] != [after]:
        found = f"depth {following[0]}" if following else "none"
        return (f"after the K loop the first wgmma wait has {found}; expected depth {after} "
                f"(warpgroup_mma_wait({after})): the last products must be done before C is stored")
    return None


def setmaxnreg(k) -> list[tuple[str, int]]:
    """Every USETMAXREG of the listing in address order, as (``"TRY_ALLOC"`` or ``"DEALLOC"``, registers): the
    machine code of setmaxnreg.inc (``USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0x28``, retried until the registers are
    free) and setmaxnreg.dec (``USETMAXREG.DEALLOC.CTAPOOL 0x18``)."""
    out = []
    for i in k.instructions():
        if i.opcode.startswith("USETMAXREG"):
            kind = "TRY_ALLOC" if "TRY_ALLOC" in i.opcode else "DEALLOC"
            out.append((kind, int(i.text.rsplit(" ", 1)[1].rstrip(";"), 0)))
    return out


def register_split(k, consumer_warps: int, load_regs: int) -> dict:
    """What Triton asks of register reallocation for a kernel forked by ``gl.warp_specialize`` into the default
    partition on ``consumer_warps`` warps and workers that ask for ``load_regs`` registers: the launch's registers a
    thread (``maxnreg``: the PTX's .maxnreg, 65536 over the launched threads, rounded down to 8), the producer's
    warpgroup's count (``load_regs`` rounded up to 8), and what that leaves the consumers while the partitions run
    (``consumers``: the launch's registers less the workers', over the consumers' threads, rounded down to 8; None where
    Triton asks for no reallocation: nothing left, or fewer than 24). The sum is the pass TritonGPUAllocateWarpGroups
    (C++, not in the wheel: read in upstream's lib/Conversion/TritonGPUToLLVM/AllocateWarpGroups.cpp) and agrees with
    3.9.0's PTX and listings for lesson 18's kernel at LOAD_REGS 24, 32, 40, 56, 152 and 232, and at num_warps 4."""
    launched = int(k.metadata.num_warps)
    m = re.search(r"\.maxnreg (\d+)", k.ptx)
    maxnreg = int(m.group(1)) if m else (65536 // (launched * 32)) // 8 * 8
    producer = -(-int(load_regs) // 8) * 8
    worker_threads = (launched - consumer_warps) * 32
    budget = maxnreg * consumer_warps * 32 + (maxnreg - producer) * worker_threads
    consumers = budget // (consumer_warps * 32) // 8 * 8 if budget > 0 else 0
    # setmaxnreg takes 24 to 256 registers (PTX ISA); the listing of one consumer warpgroup at a 256-register launch
    # shows TRY_ALLOC 0x100 where the sum gives more.
    consumers = min(consumers, 256)
    return {"launched_warps": launched, "maxnreg": maxnreg, "producer": producer,
            "consumers": consumers if consumers >= 24 else None, "worker_threads": worker_threads}


def register_split_problem(k, consumer_warps: int, load_regs: int) -> str | None:
    """For any configuration of a warp-specialized kernel whose producer asks for ``load_regs`` registers: the listing
    keeps register reallocation (ptxas may drop it, and says so in a note), the producer's warpgroup takes
    ``load_regs`` (rounded up to 8) and the consumers what that leaves them of the launch's registers. None, or a
    sentence."""
    split = register_split(k, consumer_warps, load_regs)
    got = setmaxnreg(k)
    counts = sorted({n for _, n in got})
    p, c, w = split["producer"], split["consumers"], split["worker_threads"]
    if not got:
        dropped = [note for note in k.ptxas_notes() if "setmaxnreg" in note]
        if dropped:
            asked = sorted({int(n) for n in re.findall(r"setmaxnreg\.(?:inc|dec)\.sync\.aligned\.u32\s+(\d+)", k.ptx)})
            head = (f"no USETMAXREG: ptxas dropped register reallocation (its note: “{dropped[0]}”), so every warp "
                    f"runs at the launch's {k.registers} registers")
            if p not in asked:
                return (f"{head}. The PTX asks setmaxnreg for {', '.join(map(str, asked))} registers, not for "
                        f"LOAD_REGS={load_regs}: pass worker_num_regs=[LOAD_REGS], and keep it small (the course's 40)")
            left = (f" and leave the consumers {c}, fewer than the {k.registers} ptxas compiled them for"
                    if c in asked and c < k.registers else "")
            return (f"{head}. LOAD_REGS={load_regs} would give the producer's warpgroup {p} registers a thread{left}; "
                    "a producer that only copies needs few (the course's 40)")
        if "setmaxnreg" not in k.ptx:
            return ("no USETMAXREG, and no setmaxnreg in the PTX: Triton asked for no register reallocation. Give "
                    "gl.warp_specialize the producer's registers (worker_num_regs=[LOAD_REGS]), few enough that the "
                    f"consumers keep at least 24 of the launch's {split['maxnreg']}")
        return "the PTX asks for register reallocation (setmaxnreg) but the listing has no USETMAXREG"
    if p not in counts:
        return (f"USETMAXREG with {', '.join(map(str, counts))} registers, none with {p}: the producer's warpgroup "
                f"does not take LOAD_REGS={load_regs}; pass worker_num_regs=[LOAD_REGS] to gl.warp_specialize")
    if c is None or c not in counts:
        return (f"USETMAXREG with {', '.join(map(str, counts))} registers; expected the consumers at {c} while the "
                f"partitions run: the launch's {split['maxnreg']} a thread, less the producer's warpgroup's {p}")
    total = split["maxnreg"] * split["launched_warps"] * 32
    if c * consumer_warps * 32 + p * w > total:
        return (f"the consumers' {c} and the producer's {p} registers need more than the launch's {total}: "
                "setmaxnreg would wait for registers no warp gives back")
    return None


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
HOST_MODEL = ("in the host model (no GPU, at the course's tile): C exact on odd shapes, each element written once; every "
              "slot read after the wait that covers its copy, none refilled while read, every wait satisfiable")


# -- figures --------------------------------------------------------------------------------------

DESIGN_RUN = (
    Reference(0.97, "of cuBLAS", "a plain Gluon TMA + wgmma kernel, 3 stages, 128 × 256 × 64, 8 warps, on the H200, "
              "bf16 8192³: 678 TFLOPS; this course's design run (2026-11-29), a trial, not a recording"),
    Reference(0.86, "of cuBLAS", "plain Triton tl.dot on the H200, bf16 8192³, default (wgmma): 0.78–0.94× cuBLAS; "
              "this course's design run"),
)
