"""What the AMD GEMM lessons' checks share (lessons 20 on): the compile of a version as the headline launch sees it,
check builders that compare the K loop with a table of expected facts, the GPU checks of the live path, the vendor's
figures as labelled references, the MFMA peak, provisional ranges, and a notebook helper that says in words when no
AMD GPU was available.

A lesson's ``checks.py`` reads as a table: which MFMA, how many, which memory instructions in the K loop, the budget;
everything that counts, compiles or compares lives here and in ``machine.amdgcn``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from .. import amd
from ..machine import amdgcn
from ..machine.compile import compile_cached
from .checks import Check, Expectation, Figure, NotChecked, Passed, Reference

# The headline problem (the vendor's): fp16 4096×4096×8192, one 256×256×64 tile per program, 4 waves.
TILE = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64}
NUM_WARPS = 4
HEADLINE = (4096, 4096, 8192)
DTYPES = ("fp16", "bf16")
# Every integer argument of the headline launch is a multiple of 16 and every pointer 16-byte aligned, which a real
# launch tells the compiler by itself (Triton specializes such arguments); a compile on the CPU must say so.
INTEGERS = ("M", "N", "K", "stride_am", "stride_bn", "stride_cm")


def signature(dtype: str) -> dict:
    return {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{dtype}", **{n: "i32" for n in INTEGERS}}


def compiled(mod, target: str = "gfx950", dtype: str = "fp16", layouts: dict | None = None, aligned: bool = True):
    """``mod.matmul_kernel`` compiled for ``target`` as the headline launch sees it: the course's tile (fixed here,
    so a learner's own CONFIG cannot move the counts) and ``mod.kernel_layouts(target)``, or ``layouts``."""
    constexprs = {**TILE, **(layouts if layouts is not None else mod.kernel_layouts(target))}
    sig = signature(dtype)
    return compile_cached(mod.matmul_kernel, target, signature=sig, constexprs=constexprs,
                          aligned=tuple(sig) if aligned else ("a_ptr", "b_ptr", "c_ptr"), num_warps=NUM_WARPS)


# -- the K loop as a table -----------------------------------------------------------------------------------------

# The instructions a version's algorithm decides (not the scheduler): matrix work, memory, barriers, branches. The
# lesson checks compare these exactly; the whole mix (VALU, SALU, AGPR moves, waits) is shown and pinned by tests.
_ALGORITHMIC = re.compile(r"v_mfma|ds_(read|write)|buffer_(load|store)|global_(load|store)|s_barrier$")


def loop_memory(k) -> dict:
    """The K loop's algorithmic instructions by opcode, ``buffer_load_dwordx4 … lds`` kept apart from loads into
    registers, and its branches: ``{"v_mfma_f32_16x16x32_f16": 128, "ds_read_b128": 32, ..., "branches": 1}``."""
    loop = amdgcn.main_loop(k)
    found: dict[str, int] = {}
    for ins in loop.instructions:
        if not _ALGORITHMIC.match(ins.opcode):
            continue
        name = ins.opcode + (" … lds" if amdgcn.category(ins) == "buffer load → LDS" else "")
        found[name] = found.get(name, 0) + 1
    found["branches"] = sum(1 for i in loop.instructions if amdgcn.category(i) == "branch")
    return dict(sorted(found.items()))


def expected_loop(table: dict, target: str, dtype: str) -> dict:
    """A lesson's loop table with ``"mfma"`` replaced by the target's MFMA opcode for ``dtype``."""
    out = {}
    for name, n in table.items():
        out[amd.MFMA[target].opcode(dtype) if name == "mfma" else name] = n
    return dict(sorted(out.items()))


def loop_check(key: str, title: str, target: str, table: dict, why: str, compile_=None) -> Check:
    """The K loop holds exactly ``table`` (``{"mfma": 128, "global_load_dwordx4": 16, ..., "branches": 17}``), for
    fp16 and bf16."""
    compile_ = compile_ or compiled

    def run(mod):
        for dtype in DTYPES:
            found, want = loop_memory(compile_(mod, target, dtype)), expected_loop(table, target, dtype)
            if found != want:
                return f"{dtype}: the K loop holds {found}; expected {want} ({why})"
        return None
    return Check(key, title, run, target=target)


def mfma_outside_loop(k) -> int:
    """MFMA instructions outside the K loop (0 when every product is in the loop)."""
    loop = len([i for i in amdgcn.main_loop(k).instructions if i.opcode.startswith("v_mfma")])
    return k.count_matching(r"v_mfma") - loop


@dataclass(frozen=True)
class BudgetFacts:
    """The budget a version must keep: LDS bytes exactly, no scratch, VGPRs (arch + AGPR) at most ``vgprs_max``."""
    lds_bytes: int
    vgprs_max: int = 512
    why: str = ""


def budget_check(key: str, target: str, facts: BudgetFacts, compile_=None) -> Check:
    compile_ = compile_ or compiled
    title = (f"{target}: {facts.lds_bytes} bytes of LDS, at most {facts.vgprs_max} VGPRs (arch + AGPR), no scratch "
             "(fp16 and bf16)")

    def run(mod):
        notes = []
        for dtype in DTYPES:
            b = amdgcn.budget(compile_(mod, target, dtype), NUM_WARPS)
            if b.scratch_bytes:
                return (f"{dtype}: {b.scratch_bytes} bytes of scratch per lane: registers spill to memory; the kernel "
                        f"must fit in the 512 VGPRs of a lane ({b.vgprs} used)")
            if b.lds_bytes != facts.lds_bytes:
                return f"{dtype}: {b.lds_bytes} bytes of LDS; expected {facts.lds_bytes} ({facts.why})"
            if b.vgprs > facts.vgprs_max:
                return f"{dtype}: {b.vgprs} VGPRs; expected at most {facts.vgprs_max} ({facts.why})"
            notes.append(f"{dtype} {b.vgprs} VGPRs ({b.arch_vgprs} arch + {b.agprs} AGPR)")
        return Passed(", ".join(notes) + f"; {b.occupancy}")
    return Check(key, title, run, target=target)


_DEF = re.compile(r"^\s*%([\w.#]+)(?::\d+)?\s*=\s*([a-z_]+\.[a-z_]+)\s*(.*)$")
_ARG = re.compile(r"%([A-Za-z_][\w.]*)\s*:\s*(i\d+|!tt\.ptr)")
_PASS = {"tt.splat", "tt.broadcast", "ttg.convert_layout", "tt.expand_dims"}
_COMPARE = {"arith.cmpi", "arith.minsi", "arith.minui", "arith.maxsi", "arith.maxui"}


def load_masks(ttgir: str) -> list[tuple[str, frozenset]]:
    """For every load of the kernel (``tt.load``, ``amdg.buffer_load``, ``amdg.buffer_load_to_local``), in order:
    the pointer argument it reads (``"a_ptr"``) and the integer arguments its mask compares (``{"M", "K"}``), read
    off the TTGIR: the mask's backward slice, and every comparison in it whose operand is an argument (only
    broadcast or moved between layouts on the way). Loop-carried values count as their initial values."""
    signature = next((line for line in ttgir.splitlines() if "tt.func" in line), "")
    args = dict(_ARG.findall(signature))
    defs: dict[str, list[str]] = {}
    ops: dict[str, str] = {}
    loads = []
    for line in ttgir.splitlines():
        for inner, outer in re.findall(r"%([\w.#]+) = %([\w.#]+)", line.split("iter_args(", 1)[1]) \
                if "iter_args(" in line else []:
            defs.setdefault(inner, []).append(outer)
        m = _DEF.match(line)
        if not m:
            continue
        name, op, rest = m.groups()
        body = rest.split(" loc(")[0]
        operands = re.findall(r"%([\w.#]+)", body.split(" : ")[0])
        defs[name], ops[name] = operands, op
        if op == "tt.load":
            loads.append((operands[:1], operands[1] if len(operands) > 1 else None))
        elif op == "amdg.buffer_load":
            loads.append((operands[:1], operands[2] if len(operands) > 2 else None))
        elif op == "amdg.buffer_load_to_local":
            mask = re.search(r"mask = %([\w.#]+)", body)
            loads.append((operands[:1], mask.group(1) if mask else None))

    def slice_of(value):
        seen, todo = set(), [value]
        while todo:
            v = todo.pop()
            if v in seen:
                continue
            seen.add(v)
            todo.extend(defs.get(v, ()))
        return seen

    def argument(v):
        while v not in args and ops.get(v) in _PASS:
            v = defs[v][0]
        return v if v in args else None

    out = []
    for pointer, mask in loads:
        bases = [v for v in slice_of(pointer[0]) if args.get(v) == "!tt.ptr"] if pointer else []
        compared = set()
        for v in slice_of(mask) if mask else ():
            if ops.get(v) in _COMPARE:
                compared |= {a for a in map(argument, defs[v]) if a and args.get(a, "").startswith("i")}
        out.append((bases[0] if len(bases) == 1 else "?", frozenset(compared)))
    return out


def masked_check(key: str, target: str = "gfx950", compile_=None) -> Check:
    """Every load of A is masked by M and K, every load of B by K and N, and C's store by M and N (TTGIR)."""
    compile_ = compile_ or compiled
    want = {"a_ptr": {"M", "K"}, "b_ptr": {"K", "N"}}

    def run(mod):
        k = compile_(mod, target, "fp16")
        for base, compared in load_masks(k.ttgir):
            if base in want and compared != want[base]:
                operand, edge = ("A", "rows past M") if base == "a_ptr" else ("B", "columns past N")
                found = " and ".join(sorted(compared)) or "nothing"
                return (f"a load of {operand} is masked by {found} only: its mask must cover {operand}'s {edge} and "
                        "the K tail (masked-off elements read as 0)")
        missing = {"M", "N"} - k.compared_arguments()
        if missing:
            return f"{' and '.join(sorted(missing))} never compared: C's store needs its mask (rows < M, columns < N)"
        return None
    return Check(key, f"{target}: A's loads masked by M and K, B's by K and N, C's store by M and N", run,
                 target=target)


def vmcnt_before_lds_read(k) -> int | None:
    """The memory count the K loop waits for (``s_waitcnt vmcnt(n)``, the smallest n) after its last copy into LDS
    and before the first ``ds_read`` that follows: 0 when it waits for every copy, n when n copies may still be in
    flight; None when no wait on the copies sits there (63, the counter's maximum, waits for nothing)."""
    instructions = amdgcn.main_loop(k).instructions
    copies = [i for i, ins in enumerate(instructions) if amdgcn.category(ins) == "buffer load → LDS"]
    if not copies:
        return None
    reads = [i for i, ins in enumerate(instructions) if ins.opcode.startswith("ds_read") and i > copies[-1]]
    end = reads[0] if reads else len(instructions)
    counts = [int(m.group(1)) for ins in instructions[copies[-1]:end] if ins.opcode == "s_waitcnt"
              for m in [re.search(r"vmcnt\((\d+)\)", ins.text)] if m]
    counts = [n for n in counts if n < 63]
    return min(counts) if counts else None


def copy_wait_check(key: str, target: str, vmcnt: int, why: str, compile_=None) -> Check:
    """Between the copies and the first LDS read of the K loop, the loop waits until at most ``vmcnt`` memory
    operations are outstanding."""
    compile_ = compile_ or compiled

    def run(mod):
        for dtype in DTYPES:
            found = vmcnt_before_lds_read(compile_(mod, target, dtype))
            if found != vmcnt:
                said = "no wait on the copies" if found is None else f"s_waitcnt vmcnt({found})"
                return (f"{dtype}: between the copies and the first ds_read the loop has {said}; expected "
                        f"vmcnt({vmcnt}) ({why})")
        return None
    return Check(key, f"{target}: the loop waits with s_waitcnt vmcnt({vmcnt}) before it reads LDS (fp16 and bf16)",
                 run, target=target)


def order_check(key: str, target: str, order: list[str], why: str, compile_=None) -> Check:
    """The first instruction of each of ``order`` (MIX categories, or ``"vmcnt(n)"``: a wait that lets n memory
    operations stay in flight) comes in the K loop in this order (``amdgcn.first_order``), for fp16 and bf16."""
    compile_ = compile_ or compiled
    title = f"{target}: the K loop's first " + " → first ".join(order) + " (fp16 and bf16)"

    def run(mod):
        for dtype in DTYPES:
            found = amdgcn.first_order(compile_(mod, target, dtype), order)
            if found != list(order):
                missing = [n for n in order if n not in found]
                said = (f"has no {' and no '.join(missing)}" if missing else "issues them in the order " +
                        " → ".join(found))
                return f"{dtype}: the K loop {said}; expected " + " → ".join(order) + f" ({why})"
        return None
    return Check(key, title, run, target=target)


def longest_burst(gaps: list[int]) -> int:
    """The most copies issued one after the other with no MFMA between them, from ``amdgcn.mfmas_between``'s gaps
    (a cycle: the last gap runs round to the first copy of the next trip)."""
    if not gaps:
        return 0
    if not any(gaps):
        return len(gaps)
    start = gaps.index(next(g for g in gaps if g))
    rolled = gaps[start + 1:] + gaps[:start + 1]
    best = run = 0
    for g in rolled:
        run = run + 1 if g == 0 else 0
        best = max(best, run)
    return best + 1


def region_check(key: str, target: str, copies: list[int], burst: int, why: str, compile_=None) -> Check:
    """Cut at its barriers, the K loop's regions issue ``copies`` direct-to-LDS copies each (in loop order, up to
    where the cycle starts), and no more than ``burst`` copies ever come one after the other without an MFMA."""
    compile_ = compile_ or compiled
    title = (f"{target}: the K loop's {len(copies)} regions (between barriers) issue {'/'.join(map(str, copies))} "
             f"copies into LDS, at most {burst} in a row without an MFMA (fp16 and bf16)")

    def run(mod):
        for dtype in DTYPES:
            k = compile_(mod, target, dtype)
            found = [r["buffer load → LDS"] for r in amdgcn.regions(k)]
            rotations = [found[i:] + found[:i] for i in range(len(found))] or [found]
            if list(copies) not in rotations:
                return f"{dtype}: the loop's regions copy {found}; expected {list(copies)} ({why})"
            longest = longest_burst(amdgcn.mfmas_between(k))
            if longest > burst:
                return (f"{dtype}: {longest} copies come one after the other without an MFMA between them; expected "
                        f"at most {burst} ({why})")
        return None
    return Check(key, title, run, target=target)


FILES = {"a": "AGPRs", "v": "VGPRs"}


def accumulator_check(key: str, target: str, agprs: int, moves_in_loop: int, why: str, compile_=None,
                      cd: str = "a") -> Check:
    """Every MFMA of the K loop reads its accumulator (C) and writes its result (D) in the register file ``cd``
    (``"a"``, the AGPRs, for ``cd_regclass="a"``), the kernel holds ``agprs`` AGPRs, and the K loop moves
    ``moves_in_loop`` values between the register files (v_accvgpr_*), fp16 and bf16. The files are read off each
    MFMA's operands (``amdgcn.mfma_operand_files``): a count of moves or AGPRs alone can hide one MFMA of two left in
    the other file."""
    compile_ = compile_ or compiled
    title = (f"{target}: every MFMA of the K loop reads C and writes D in {FILES[cd]}; {agprs} AGPRs, {moves_in_loop} "
             "v_accvgpr_* moves in the K loop (fp16 and bf16)")

    def run(mod):
        for dtype in DTYPES:
            k = compile_(mod, target, dtype)
            mfmas = amdgcn.mfma_operand_files(k)
            writes = [ins for (d, _, _, _), ins in mfmas if d != cd]
            reads = [ins for (_, _, _, c), ins in mfmas if c != cd]
            if writes or reads:
                first = (writes or reads)[0].text
                other = FILES["v" if cd == "a" else "a"]
                return (f"{dtype}: of the K loop's {len(mfmas)} MFMAs, {len(writes)} write their result (D) and "
                        f"{len(reads)} read their accumulator (C) in {other}, the first `{first}`; expected every "
                        f"MFMA's C and D in {FILES[cd]} ({why})")
            moves = amdgcn.instruction_mix(k)["AGPR move"]
            b = amdgcn.budget(k, NUM_WARPS)
            if moves != moves_in_loop:
                return (f"{dtype}: the K loop moves registers between the files {moves} times (v_accvgpr_read/write/"
                        f"mov); expected {moves_in_loop} ({why})")
            if b.agprs != agprs:
                return f"{dtype}: {b.agprs} AGPRs; expected {agprs} ({why})"
        return None
    return Check(key, title, run, target=target)


def config_check(key: str = "config_fits", target: str = "gfx950") -> Check:
    """The module's own CONFIG (what its launcher runs), compiled for ``target``, launches there: LDS within what a
    workgroup may allocate (160 KiB on gfx950), registers within the 512 of a lane, nothing spilled
    (``grading.gemm_kernel.fits``)."""
    from .gemm_kernel import fits

    def run(mod):
        cfg = dict(mod.CONFIG)
        tile = {name: cfg[name] for name in TILE}
        layouts = mod.kernel_layouts(target, **tile, num_warps=cfg.get("num_warps", NUM_WARPS))
        # The CONFIG's other keys (GROUP_M, NUM_XCDS) are constexprs of the kernel, as the launcher passes them.
        extra = {name: v for name, v in cfg.items() if name not in TILE and name != "num_warps"}
        sig = signature("bf16")
        k = compile_cached(mod.matmul_kernel, target, signature=sig, constexprs={**tile, **layouts, **extra},
                           aligned=tuple(sig), num_warps=cfg.get("num_warps", NUM_WARPS))
        problem = fits(k, cfg.get("num_warps", NUM_WARPS), cfg)
        if problem:
            return f"CONFIG ({', '.join(f'{n}={v}' for n, v in cfg.items())}) on {target}: {problem}"
        return None
    return Check(key, f"{target}: the launcher's CONFIG fits a CU (LDS, 512 VGPRs, no scratch)", run, target=target)


def compile_error(mod, target: str, dtype: str = "fp16") -> str | None:
    """None when the version compiles for ``target``, else the compiler's sentence."""
    from ..machine.compile import CompileFailed

    try:
        compiled(mod, target, dtype)
    except CompileFailed as e:
        return e.message
    return None


# -- on an AMD GPU (the live path) -------------------------------------------------------------------------------

# Odd shapes for the kernels that take any K (plain and buffer loads): one element, M, N and K tails past every tile
# edge, a K tail of one element. For the direct-to-LDS kernels K and the row strides are multiples of 16 (the
# launcher refuses others, naming the rule), so their shapes keep M and N odd and K a multiple of 16, not of 64.
ANY_K_SHAPES = ((1, 1, 1), (17, 33, 65), (256, 256, 64), (1000, 1000, 1000), (4097, 129, 1000), (300, 520, 4097),
                (127, 255, 64))
ALIGNED_K_SHAPES = ((1, 1, 16), (17, 33, 80), (256, 256, 64), (1000, 1000, 1008), (4097, 129, 1024), (300, 520, 4112),
                    (127, 255, 48))
CHILD_LIMIT_S = 180


def correct_here(module_file: str, shapes: str = "any") -> str | None:
    """The correctness check itself, for a child process: fp16 and bf16, poisoned and guarded C, B K-contiguous."""
    from ..course import load_module_file
    from ..measure.gemm import check_gemm

    mod = load_module_file(module_file)
    amd.require_amd_gpu(mod.TARGETS)
    chosen = ANY_K_SHAPES if shapes == "any" else ALIGNED_K_SHAPES
    return check_gemm(lambda a, b, c: mod.matmul(a, b, c), shapes=chosen, b_layout="col")


def correctness_check(key: str = "exact_odd_shapes", shapes: str = "any") -> Check:
    """C exact on odd shapes (fp16 and bf16, poisoned and guarded), every launch in a child process with a limit."""
    listed = ANY_K_SHAPES if shapes == "any" else ALIGNED_K_SHAPES
    title = (f"C exact on {len(listed)} odd shapes (" + ", ".join("×".join(map(str, s)) for s in listed[:3]) +
             ", …; fp16 and bf16, poisoned and guarded C), in a child process with a time limit")

    def run(mod):
        from ..measure.isolated import check_in_child

        amd.require_amd_gpu(mod.TARGETS)
        # The child imports this file as part of the package (measure.isolated does so for the toolkit's files).
        return check_in_child(f"{__file__}:correct_here", [mod.__file__, shapes], timeout=CHILD_LIMIT_S)
    return Check(key, title, run, gpu=True)


def refusal_check(key: str = "launcher_errors", k_multiple: int = 1) -> Check:
    """The launcher refuses fp32, mismatched K, a B that is not K-contiguous (and K not a multiple of ``k_multiple``)
    with a sentence that says what to do."""
    extra = f", K = 1000 (not a multiple of {k_multiple})" if k_multiple > 1 else ""

    def run(mod):
        import torch

        from ..measure.gemm import gemm_inputs
        from .gemm import refuses

        amd.require_amd_gpu(mod.TARGETS)
        problem = empty_operands(mod)
        if problem:
            return problem
        a, b = gemm_inputs(128, 128, 128, torch.float16, b_layout="col")
        cases = {
            "fp32 inputs": (lambda: mod.matmul(a.float(), b.float()), TypeError, ["float16"]),
            "B with 64 rows for A's 128 columns": (lambda: mod.matmul(a, b[:64]), ValueError, ["K"]),
            "B row-major (N contiguous)": (lambda: mod.matmul(a, b.contiguous()), ValueError, ["K-contiguous"]),
        }
        if k_multiple > 1:
            a_odd, b_odd = gemm_inputs(128, 128, 1000, torch.float16, b_layout="col")
            cases["K = 1000"] = (lambda: mod.matmul(a_odd, b_odd), ValueError, [str(k_multiple), "pad"])
        return refuses(cases)
    return Check(key, f"matmul returns what torch.matmul does for M, N or K = 0, and refuses fp32, a K mismatch, a "
                      f"row-major B{extra} with a sentence", run, gpu=True)


def empty_operands(mod) -> str | None:
    """M, N or K = 0 (B K-contiguous): the launcher returns what torch.matmul returns, an empty C or zeros."""
    from .gemm import empty_operands as empty

    return empty(mod, "fp16", b_layout="col")


# -- figures: the vendor's as references, ours provisional ---------------------------------------------------------

# Every vendor figure is pinned to the one revision it is read from: AMD's pages change their figures between
# revisions (VENDOR_REVISIONS says by how much).
VENDOR_SOURCE = ("the vendor's measurement, not ours: AMD's gfx950 Gluon tutorials (ROCm/gfx950-gluon-tutorials, "
                 "kernels/gemm/a16w16/images/gen_performance_chart.py at commit 04322ed8: MI355, fp16 "
                 "4096×4096×8192, rocprofv3, base configuration); the tutorial runs its own ROCm Triton tag, not "
                 "Triton 3.9.0")
# (TFLOPS, MFMA efficiency from the vendor's thread traces) per version, base configuration.
VENDOR = {0: (541, 0.2547), 1: (546, 0.2642), 2: (672, 0.3281), 3: (770, 0.4135), 4: (1123, 0.5771),
          5: (1128, 0.5835), 6: (1055, 0.5640), 7: (1233, 0.6499), 8: (1257, 0.6903), 9: (1290, 0.6919)}
# The vendor's configurations beyond the base kernel (same chart), each needing tools of theirs that Triton 3.9.0
# does not ship: (configuration, TFLOPS, MFMA efficiency).
VENDOR_VARIANTS = {
    5: (("llir", 1228, 0.7991),),
    6: (("llir", 1167, 0.8658),),
    7: (("llir", 1329, 0.8491), ("llir+force-agpr", 1395, 0.9729), ("llir+force-agpr+amdgcnas", 1384, 0.9828)),
    8: (("llir", 1360, 0.8865), ("llir+force-agpr", 1408, 0.9779), ("llir+force-agpr+amdgcnas", 1391, 0.9852)),
    9: (("llir", 1380, 0.8844), ("llir+force-agpr", 1423, 0.9753), ("llir+force-agpr+amdgcnas", 1421, 0.9866)),
}
VENDOR_TOOLS = {
    "llir": ("their LLVM IR scheduler, an out-of-tree LLVM pass plugin built from their repository and loaded "
             "through LLVM_PASS_PLUGIN_PATH: Triton 3.9.0 can load a pass plugin, but ships none and builds none"),
    "force-agpr": ("their Triton's TRITON_FORCE_MFMA_AGPR switch (LLVM told to keep every MFMA accumulator in "
                   "AGPRs: amdgpu-agpr-alloc=256 with amdgpu-mfma-vgpr-form=0); Triton 3.9.0 has no such switch, "
                   "its own way is cd_regclass='a' on each mfma (lessons 27-29 use it)"),
    "amdgcnas": ("their assembly post-processor (TRITON_ENABLE_AMDGCN_AS, on their gfx950-tutorial branch of "
                 "Triton), which Triton 3.9.0 does not have"),
}


def vendor_variant_source(config: str) -> str:
    """What a vendor configuration needs, in words: ``"llir+force-agpr"`` names both tools."""
    return "; ".join(f"{tool}: {VENDOR_TOOLS[tool]}" for tool in config.split("+"))
# The vendor's best fp16 kernel at this shape, as their published blog post gives it.
VENDOR_BEST = 1489
VENDOR_BEST_SOURCE = ("the vendor's best fp16 kernel at 4096×4096×8192, 1489 TFLOPS and 98.75% MFMA efficiency on an "
                      "MI355 (their v9 with their scheduler plugin and assembly pass), in their blog 'From Naive to "
                      "Near-Peak: Building High-Performance GEMM Kernels with Gluon' as published (ROCm/rocm-blogs, "
                      "blogs/software-tools-optimization/gluon-gemm-tutorial/README.md at commit 39dbe25a, front "
                      "matter dated 28 Apr 2026; an earlier revision of it, 745a2984, said 1619 TFLOPS and 98%)")
# How much AMD's own figures moved between the revisions the course read: the provisional ranges stand on them.
VENDOR_REVISIONS = ("AMD's figures move between revisions of their pages: the blog's best fp16 kernel was 1619 TFLOPS "
                    "in one revision (ROCm/rocm-blogs 745a2984) and is 1489 in the published one (39dbe25a), 8% "
                    "less; the published blog's v0 is 520 TFLOPS where their chart at 04322ed8 has 541, 4% more; and their v6 "
                    "README gives v6 with their scheduler plugin as 1260 TFLOPS (88% MFMA busy, commit 26a1b82d, "
                    "which says the numbers come from an earlier Triton snapshot), as 1177 (87.7%, in two other "
                    "stored revisions) and as 346 (19%, 99 VGPRs spilled, commit 0bdb3398), where the chart has 1167. "
                    "A provisional range is the chart's base figure for the version over the blog's best, from half "
                    "to one and a half times that ratio: a move like the blog's 8% shifts it by 8%, well inside it")


@dataclass(frozen=True)
class Peak:
    """The dense fp16/bf16 MFMA peak of a GPU: clock × matrix cores × FMAs per core per clock × 2."""
    gpu: str
    clock_mhz: int
    matrix_cores: int
    fma_per_clock: int
    source: str

    @property
    def tflops(self) -> float:
        return self.clock_mhz * 1e6 * self.matrix_cores * self.fma_per_clock * 2 / 1e12


PEAKS = {
    "gfx950": Peak("MI355X", 2400, 1024, 512,
                   "AMD Instinct MI355X specifications (peak engine clock 2400 MHz, 256 CUs × 4 matrix cores; AMD "
                   "publishes 2.5 PFLOPS dense fp16/bf16), the arithmetic as in S. Bekman's Machine Learning "
                   "Engineering book, chapter 'Accelerators' (512 FMA per matrix core per clock on CDNA4)"),
    "gfx942": Peak("MI300X", 2100, 1216, 256,
                   "AMD Instinct MI300X specifications (2100 MHz, 304 CUs × 4 matrix cores; 1307.4 TFLOPS dense "
                   "fp16/bf16), the same arithmetic (256 FMA per matrix core per clock on CDNA3)"),
}


def vendor_references(version: int) -> tuple[Reference, ...]:
    tflops, efficiency = VENDOR[version]
    peak = PEAKS["gfx950"]
    return (Reference(tflops, "TFLOPS", f"v{version}, {VENDOR_SOURCE}"),
            Reference(round(tflops / peak.tflops, 4), f"of the MI355X MFMA peak ({peak.tflops:.1f} TFLOPS)",
                      f"the vendor's v{version} TFLOPS over clock × matrix cores × FMAs ({peak.source})"),
            Reference(efficiency, "MFMA efficiency", f"v{version}: busy share of the MFMA pipe in the vendor's "
                      "thread traces (their trace tool, as their chart at commit 04322ed8 gives it; not a share of "
                      "the peak)"),
            *(Reference(tf, "TFLOPS", f"v{version} with their configuration '{config}', "
                        f"{VENDOR_SOURCE.replace(', base configuration', '')}; it needs "
                        f"{vendor_variant_source(config)}")
              for config, tf, _ in VENDOR_VARIANTS.get(version, ())),
            Reference(VENDOR_BEST, "TFLOPS", VENDOR_BEST_SOURCE))


def provisional_range(version: int, below: float = 0.5, above: float = 1.5) -> Expectation:
    """A range for a live run, as a ratio to hipBLASLt (torch.matmul on ROCm) timed in the same run: provisional,
    drawn from the vendor's TFLOPS for this version over the vendor's best kernel, a stand-in for hipBLASLt at this
    shape until a run on an MI350/MI355 records the real ratio."""
    tflops, _ = VENDOR[version]
    centre = tflops / VENDOR_BEST
    why = (f"PROVISIONAL, no AMD GPU has run this lesson: the vendor's v{version} ({tflops} TFLOPS, their chart at "
           f"04322ed8) over their best kernel ({VENDOR_BEST}, their published blog at 39dbe25a), {centre:.2f}, "
           f"standing in for the ratio to hipBLASLt; the range runs from {below:g}× to {above:g}× that. "
           f"{VENDOR_REVISIONS}. Replace it with one drawn from the first recording on an MI350/MI355")
    return Expectation(round(centre * below, 4), round(centre * above, 4), "hipBLASLt", why,
                       vendor_references(version))


def amd_gemm_measure(M: int, N: int, K: int, dtype: str, label: str) -> Callable:
    """A Figure's measure: the lesson's matmul over torch.matmul (hipBLASLt on ROCm) on the same tensors (A
    row-major, B K-contiguous), both timed in this process, C checked first."""
    def measure(mod):
        import torch

        from ..measure import Measurement
        from ..measure.device import free_cache
        from ..measure.gemm import compare_gemm, fp32_reductions, gemm_inputs, reference, tolerance
        from ..measure.tensors import poison
        from ..measure.timing import bench_ms, tflops

        amd.require_amd_gpu(mod.TARGETS)
        torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
        a, b = gemm_inputs(M, N, K, torch_dtype, b_layout="col")
        c = poison(torch.empty(M, N, dtype=torch_dtype, device=a.device))
        mod.matmul(a, b, c)
        torch.cuda.synchronize()
        problem = compare_gemm(c, reference(a, b), tolerance(K, torch_dtype))
        if problem:
            raise AssertionError(f"{label} is wrong on the {M}×{N}×{K} {dtype} benchmark input: {problem}.")
        ours = bench_ms(lambda: mod.matmul(a, b, c))
        with fp32_reductions():
            library = bench_ms(lambda: torch.matmul(a, b, out=c))
        del a, b, c
        free_cache()
        rate, lib = tflops(M, N, K, ours), tflops(M, N, K, library)
        return Measurement(rate / lib, f"{rate:.0f} TFLOPS vs hipBLASLt {lib:.0f} TFLOPS",
                           {"tflops": rate, "library_tflops": lib, "ms": ours, "library_ms": library,
                            "M": M, "N": N, "K": K, "dtype": dtype})
    return measure


def headline_figure(version: int, headline: bool = True) -> Figure:
    M, N, K = HEADLINE
    return Figure("fp16_4096x4096x8192", f"v{version} fp16 {M}×{N}×{K}",
                  amd_gemm_measure(M, N, K, "fp16", f"v{version} fp16"), provisional_range(version),
                  headline=headline)


# -- notebooks -------------------------------------------------------------------------------------------------

NOT_MEASURED = "not measured: no AMD GPU was available"


def amd_gpu_here(targets) -> bool:
    """True on a ROCm machine whose GPU is one of ``targets``."""
    import torch

    return bool(torch.cuda.is_available() and torch.version.hip is not None and amd.gpu_arch() in targets)


class AmdLab:
    """The notebook side of an AMD lesson: the CPU checks here and now; correctness and figures live on an AMD GPU
    of the lesson's targets (through the course's ``Lab``, which records them), and otherwise one line each that
    says they were not measured, with the range a live run is held to and the vendor's figures beside it."""

    def __init__(self, number: str):
        from ..course import lesson, load_checks
        from .notebook import Lab

        self.lesson = lesson(number)
        self.checks = load_checks(self.lesson.number).CHECKS
        self.live = amd_gpu_here(self.checks.targets)
        self._lab = Lab(self.lesson.number, show_header=self.live)
        if not self.live:
            print(f"Figures: {NOT_MEASURED} (lesson {self.lesson.number} runs on "
                  f"{' or '.join(self.checks.targets)}); the vendor's figures are shown as references, labelled")

    @property
    def module(self):
        return self._lab.module

    def machine_code(self) -> bool:
        return self._lab.machine_code()

    def correctness(self) -> bool:
        if self.live:
            return self._lab.correctness()
        for check in self.checks.correctness:
            print(f"· {check.title}: {NOT_MEASURED}")
        return True

    def figures(self) -> None:
        for fig in self.checks.figures:
            if self.live:
                self._lab.figure(fig.key)
                continue
            print(f"{fig.title}: {NOT_MEASURED}; a live run is held to {fig.expect.describe()} (provisional)")
            for ref in fig.expect.references:
                print(f"  reference: {ref}")


# -- the instruction mix, version by version ----------------------------------------------------------------------

AMD_LESSONS = tuple(f"{n}" for n in range(20, 30))
MFMA_PER_STEP = 128          # v_mfma_f32_16x16x32 per K step of 64 per wave at the lessons' 256 × 256 tile
MIX_COLOURS = {"MFMA": "#4C78A8", "LDS read": "#72B7B2", "LDS write": "#54A24B", "buffer load → LDS": "#EECA3B",
               "buffer load": "#F58518", "global load": "#E45756", "store": "#B279A2", "wait": "#FF9DA6",
               "barrier": "#9D755D", "branch": "#000000", "AGPR move": "#BAB0AC", "VALU": "#D8B5A5", "SALU": "#79706E", "scratch": "#D62728",
               "other": "#DDDDDD"}


def version_label(number: str) -> str:
    """``"v0 MFMA from registers"`` from lesson 20's title ``AMD GEMM v0: MFMA from registers``."""
    from ..course import lesson

    return lesson(number).title.split("GEMM ", 1)[-1].replace(":", "")


def mixes(numbers=None, target: str = "gfx950", dtype: str = "fp16") -> dict[str, dict]:
    """The K loop's instruction mix of each AMD lesson's solution (20 on; those that exist and are not planned),
    compiled for ``target``: ``{"v0 MFMA from registers": {"MFMA": 128, ...}, ...}``. Lessons 25-29 join by existing."""
    from ..course import lessons, load_checks, load_solution

    out = {}
    for number, the in lessons().items():
        if number not in (numbers or AMD_LESSONS) or the.planned or target not in the.checks.targets:
            continue
        checks = load_checks(number)
        compile_ = getattr(checks, "compiled", compiled)
        out[version_label(number)] = amdgcn.instruction_mix(compile_(load_solution(number), target, dtype))
    return out


def mix_chart(rows: dict[str, dict], title: str, ax=None, highlight: str | None = None):
    """Stacked horizontal bars: one per version (first at the top), one colour per ``amdgcn.MIX`` category, the
    total at the end of each bar. Returns the figure (or None when drawn into ``ax``)."""
    import matplotlib.pyplot as plt

    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(9, 0.55 * len(rows) + 1.6))
    labels = list(rows)[::-1]
    left = [0] * len(labels)
    for name, _ in amdgcn.MIX:
        widths = [rows[label][name] for label in labels]
        if not any(widths):
            continue
        ax.barh(labels, widths, left=left, color=MIX_COLOURS[name], label=name, edgecolor="white", linewidth=0.4)
        left = [a + b for a, b in zip(left, widths)]
    for y, total in enumerate(left):
        steps = rows[labels[y]]["MFMA"] // MFMA_PER_STEP
        ax.text(total + 4, y, str(total) + (f" ({steps} K steps)" if steps > 1 else ""), va="center", fontsize=8)
    for tick in ax.get_yticklabels():
        tick.set_fontweight("bold" if highlight and tick.get_text() == highlight else "normal")
    ax.set_xlabel("instructions in the K loop (static count, one wave, one trip: one K step of 64 unless marked)",
                  fontsize=9)
    ax.set_xlim(0, max(left) * 1.22)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=5, fontsize=8, frameon=False)
    if fig is not None:
        fig.tight_layout()
    return fig


def vendor_chart(ax, labels: list[str]):
    """Beside ``mix_chart``'s bars (same rows, ``labels`` top first, each ``"vN ..."``): the vendor's MFMA efficiency
    per version, their base kernel (filled) and their best configuration (hollow, which needs their tools), labelled
    as theirs with the commit of their chart."""
    rows = labels[::-1]
    for y, label in enumerate(rows):
        version = int(label.split()[0][1:])
        if version not in VENDOR:
            continue
        base = VENDOR[version][1]
        ax.plot([base * 100], [y], "o", color="#D62728")
        ax.text(base * 100 - 2, y + 0.28, f"{base:.0%}", fontsize=7, color="#D62728", ha="right")
        variants = VENDOR_VARIANTS.get(version, ())
        if variants:
            config, _, best = max(variants, key=lambda v: v[2])
            ax.plot([best * 100], [y], "o", markerfacecolor="white", markeredgecolor="#D62728")
            ax.plot([base * 100, best * 100], [y, y], color="#D62728", linewidth=0.6, linestyle=":")
            ax.text(best * 100 + 2, y + 0.28, f"{best:.0%} +{config}", fontsize=6, color="#D62728")
    ax.set_yticks(range(len(rows)), [""] * len(rows))
    ax.set_ylim(-0.5, len(rows) - 0.5)
    ax.set_xlim(0, 175)
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.set_xlabel("MFMA busy, % (AMD's traces)", fontsize=8)
    ax.set_title("AMD's figures, not ours: MI355, their Triton\n(gfx950-gluon-tutorials chart @04322ed8)\n"
                 "filled: base; hollow: best, needs their tools", fontsize=7)


def mix_table(rows: dict[str, dict]) -> list[list]:
    """The mixes as table rows (category, then one count per version), categories every version lacks left out."""
    names = [name for name, _ in amdgcn.MIX if any(r[name] for r in rows.values())]
    return [[name] + [r[name] for r in rows.values()] for name in names] + \
        [["total"] + [sum(r.values()) for r in rows.values()]]


# -- the host model (no GPU) ------------------------------------------------------------------------------------

# Problems for the host model: M and N past every tile edge, several tiles of C, and K from one tile to many (with
# a tail, so that copies past K are masked off). K is a multiple of 16 for the direct-to-LDS kernels (their
# launchers refuse others); the kernels that take any K (20, 21) also get K that is not.
MODEL_SHAPES = ((300, 264, 208), (17, 33, 16), (257, 129, 144), (64, 64, 1040))
ANY_K_MODEL_SHAPES = MODEL_SHAPES + ((65, 33, 37), (1, 1, 1))
HOST_MODEL_TITLE = ("in the host model (no GPU): C exact on odd shapes, each element written once, no LDS read before "
                    "the wait that covers its copy, no copy left in flight, every access inside A, B and C")


def model_launch(mod, constexprs: dict, num_warps: int = NUM_WARPS, grid=None):
    """The launch of an AMD lesson's kernel in the host model: ``matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, K, K, N,
    **constexprs)`` over one program per tile of C (``grid(M, N)`` otherwise), A row-major, B K-contiguous (N×K in
    memory, stride_bn = K), C row-major."""
    from ..model.run import run as run_kernel
    from ..model.shims import Pointer

    def launch(a_buf, b_buf, c_buf, M, N, K):
        programs = grid(M, N) if grid else -(-M // constexprs["BLOCK_M"]) * -(-N // constexprs["BLOCK_N"])
        run_kernel(mod.matmul_kernel, programs, Pointer(a_buf), Pointer(b_buf), Pointer(c_buf), M, N, K, K, K, N,
                   num_warps=num_warps, **constexprs)
    return launch


def model_check(mod, shapes=None, dtype: str = "bf16", target: str = "gfx950", extra=None,
                compile_=None, any_k: bool = False):
    """Run the module's kernel in the host model at the course's tile: None when C is exact and the protocol holds, a
    sentence otherwise, NotChecked(why) when the model does not know an operation the kernel uses or cannot run one
    of its lines as the compiled kernel does. ``extra``: more constexprs, a dict or a function of the module."""
    from ..machine.compile import CompileFailed
    from ..model import ModelUnsupported
    from ..model import gemm as model_gemm

    try:
        (compile_ or compiled)(mod, target, dtype)
    except CompileFailed:
        return f"not run: the kernel does not compile for {target} (see above); the model runs compiling kernels"
    constexprs = {**TILE, **mod.kernel_layouts(target), **((extra(mod) if callable(extra) else extra) or {})}
    chosen = shapes or (ANY_K_MODEL_SHAPES if any_k else MODEL_SHAPES)
    try:
        return model_gemm.check(model_launch(mod, constexprs), chosen, dtype, b_layout="col",
                                tile=(TILE["BLOCK_M"], TILE["BLOCK_N"]))
    except ModelUnsupported as e:
        return NotChecked(f"the host model does not model {e}, so it could not run this kernel; the GPU correctness "
                          "checks still judge it on an AMD GPU")


def host_model_check(key: str = "host_model", target: str = "gfx950", shapes=None, extra=None,
                     compile_=None, any_k: bool = False) -> Check:
    """The host model as a check (lessons 20 on): the kernel's own Python body run with numpy on small problems
    (``any_k``: K need not be a multiple of 16, for the kernels that take any K). ``extra`` holds constexprs beyond
    the tile and the layouts: a dict, or a function of the module (its launcher's CONFIG, say)."""
    return Check(key, HOST_MODEL_TITLE, lambda mod: model_check(mod, shapes, target=target, extra=extra,
                                                                 compile_=compile_, any_k=any_k), target=target)


def prologue_facts(k) -> tuple[int, int | None]:
    """(copies into LDS before the K loop, the vmcnt the prologue waits for before its first LDS read)."""
    instructions = amdgcn.before_loop(k)
    copies = sum(1 for i in instructions if amdgcn.category(i) == "buffer load → LDS")
    reads = [n for n, i in enumerate(instructions) if i.opcode.startswith("ds_read")]
    end = reads[0] if reads else len(instructions)
    counts = [amdgcn.wait_counts(i)["vmcnt"] for i in instructions[:end]
              if i.opcode == "s_waitcnt" and amdgcn.wait_counts(i).get("vmcnt", 63) < 63]
    return copies, (min(counts) if counts else None)


def prologue_check(key: str, target: str, copies: int, vmcnt: int, why: str, compile_=None) -> Check:
    """Before the K loop the kernel starts ``copies`` copies into LDS and, before its first LDS read, waits until at
    most ``vmcnt`` of them are in flight (the first tile's pieces have landed, the rest stay in flight)."""
    compile_ = compile_ or compiled
    title = f"{target}: the prologue starts {copies} copies into LDS and reads LDS after vmcnt({vmcnt}) (fp16 and bf16)"

    def run(mod):
        for dtype in DTYPES:
            found = prologue_facts(compile_(mod, target, dtype))
            if found != (copies, vmcnt):
                said = "no wait" if found[1] is None else f"vmcnt({found[1]})"
                return (f"{dtype}: the prologue starts {found[0]} copies into LDS and reads LDS after {said}; expected "
                        f"{copies} copies and vmcnt({vmcnt}) ({why})")
        return None
    return Check(key, title, run, target=target)


def loop_waits_check(key: str, target: str, vmcnts: list[int], why: str, compile_=None) -> Check:
    """The K loop's waits on memory, in order, are exactly ``s_waitcnt vmcnt(n)`` for n in ``vmcnts``."""
    compile_ = compile_ or compiled
    shown = ", ".join(f"vmcnt({n})" for n in vmcnts)
    title = f"{target}: the K loop waits on its copies with {shown} (fp16 and bf16)"

    def run(mod):
        for dtype in DTYPES:
            found = amdgcn.loop_vmcnts(compile_(mod, target, dtype))
            if found != list(vmcnts):
                said = ", ".join(f"vmcnt({n})" for n in found) or "no wait on memory"
                return f"{dtype}: the K loop waits with {said}; expected {shown} ({why})"
        return None
    return Check(key, title, run, target=target)


def config_constexprs(mod, names) -> dict:
    """The constexprs ``names`` as the module's launcher passes them, from its CONFIG (a sentence when one is
    missing or not a positive whole number: the launcher refuses those too)."""
    cfg = getattr(mod, "CONFIG", {})
    out = {}
    for name in names:
        value = cfg.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"CONFIG[{name!r}] is {value!r}: the launcher passes CONFIG's {name} to the kernel, and "
                             "it must be a positive whole number")
        out[name] = value
    return out


def xcd_order_check(key: str, order, shapes, strips: dict, why: str, settings=None) -> Check:
    """On the host (``model.xcd``): ``order(mod)`` (a function of workgroup id, num_pid_m, num_pid_n giving a tile's
    row and column) sends the workgroups of every grid in ``shapes`` to each tile exactly once, and on each grid of
    ``strips`` no XCD reads more than the given number of strips of A and B in a wave. ``settings(mod)`` gives the
    order's constexprs as the module's launcher passes them ({"GROUP_M": 4, "NUM_XCDS": 8}): a failure names them,
    and a NUM_XCDS other than the hardware's count is named as the cause it is. The model of the hardware itself
    (``xcd.XCDS`` dies, round robin) is fixed: it is the GPU, not a choice of the kernel."""
    from ..model import ModelUnsupported, xcd
    from ..model.orders import visits_each_once

    listed = ", ".join(f"{m}×{n}" for m, n in shapes)
    title = (f"on the host, workgroups dispatched round robin to {xcd.XCDS} XCDs: every tile of C computed exactly once "
             f"({listed} tiles), and on " + ", ".join(f"{m}×{n} tiles at most {s}" for (m, n), s in strips.items()) +
             " strips of A and B per XCD")

    def run(mod):
        chosen = settings(mod) if settings else {}
        said = (f"with CONFIG's {', '.join(f'{n}={v}' for n, v in chosen.items())}: " if chosen else "")
        xcds = chosen.get("NUM_XCDS", xcd.XCDS)
        cause = ("" if xcds == xcd.XCDS else
                 f"; the GPU deals workgroups to its {xcd.XCDS} XCDs round robin (workgroup w to XCD w % {xcd.XCDS}), "
                 f"so a remap for NUM_XCDS={xcds} does not give each XCD one contiguous run of tiles")
        try:
            fn = order(mod)
            for m, n in shapes:
                problem = visits_each_once(fn, m, n)
                if problem:
                    return f"{said}{problem}: each workgroup id must get its own tile{cause}"
            notes = []
            for (m, n), want in strips.items():
                rows, cols = xcd.workgroup_tiles(fn, m, n)
                got = xcd.most_strips(rows, cols)
                if got > want:
                    return (f"{said}on a {m} × {n} grid of tiles one XCD reads {got} strips of A and B in one wave; "
                            f"expected at most {want} ({why}){cause}")
                notes.append(f"{m}×{n}: {got} strips per XCD")
        except ModelUnsupported as e:
            return NotChecked(f"the host model does not model {e}, so it could not evaluate the order; on an AMD GPU "
                              "the correctness checks still judge every tile")
        return Passed((said.rstrip(": ") + "; " if said else "") + "; ".join(notes))
    return Check(key, title, run)


# -- variants of a solution, for notebooks and tests -----------------------------------------------------------

def solution_variant(number: str, old: str, new: str, tag: str = "variant"):
    """Lesson ``number``'s solution with ``old`` (which must occur) replaced by ``new`` everywhere, loaded as a module
    from a temporary file: what a notebook compiles to show what one change does."""
    import hashlib
    import tempfile
    from pathlib import Path

    from ..course import lesson, load_module_file

    text = lesson(number).solution_path.read_text()
    if old not in text:
        raise ValueError(f"lesson {number}'s solution has no {old[:60]!r}")
    digest = hashlib.sha1((old + "\0" + new).encode()).hexdigest()[:10]
    path = Path(tempfile.gettempdir()) / f"gluon_course_{number}_{tag}_{digest}.py"
    path.write_text(text.replace(old, new))
    return load_module_file(path, f"gluon_course_{number}_{tag}_{digest}")


def planted(number: str, rejected_by: str, index: int = 0):
    """The module of lesson ``number``'s plant (the ``index``-th of those) rejected by check ``rejected_by``."""
    from ..course import lesson, load_module_file, load_plants
    import hashlib
    import tempfile
    from pathlib import Path

    plants = [p for p in load_plants(number) if p.rejected_by == rejected_by]
    if not plants:
        raise KeyError(f"lesson {number} has no plant rejected by {rejected_by!r}")
    plant = plants[index]
    text = lesson(number).solution_path.read_text()
    digest = hashlib.sha1(plant.mistake.encode()).hexdigest()[:10]
    path = Path(tempfile.gettempdir()) / f"gluon_course_{number}_plant_{digest}.py"
    path.write_text(text.replace(plant.old, plant.new))
    return load_module_file(path, f"gluon_course_{number}_plant_{digest}")
