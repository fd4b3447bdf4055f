"""The AMD lessons' checks that need no GPU, each built from a lesson's table of expected facts: what the K loop holds
(``loop_check``), the register and LDS budget (``budget_check``), the masks (``masked_check``), the waits
(``copy_wait_check``, ``loop_waits_check``, ``prologue_check``), the order of the loop's work (``order_check``,
``region_check``), the accumulators' register file (``accumulator_check``), the launcher's CONFIG (``config_check``),
the XCD-aware order (``xcd_order_check``) and the kernel run in the host model (``host_model_check``).

A lesson's ``checks.py`` reads as a table: which MFMA, how many, which memory instructions in the K loop, the budget;
everything that counts, compiles or compares lives here, in ``kernel`` and in ``amdgcn``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..grading.checks import Check, NotChecked, Passed
from ..machine.compile import compile_cached
from . import amdgcn
from .kernel import (DTYPES, NUM_WARPS, TILE, compiled, expected_loop, load_masks, longest_burst, loop_memory,
                     prologue_facts, signature, vmcnt_before_lds_read)


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


@dataclass(frozen=True)
class BudgetFacts:
    """The budget a version must keep: LDS bytes exactly, VGPRs (arch + AGPR) at most ``vgprs_max``, and no scratch, or
    at most ``scratch_max`` bytes per lane where a port is known to spill (lesson 22 on gfx942: ``why`` says why)."""
    lds_bytes: int
    vgprs_max: int = 512
    why: str = ""
    scratch_max: int = 0


def budget_check(key: str, target: str, facts: BudgetFacts, compile_=None) -> Check:
    compile_ = compile_ or compiled
    scratch = (f"at most {facts.scratch_max} bytes of scratch per lane" if facts.scratch_max else "no scratch")
    title = (f"{target}: {facts.lds_bytes} bytes of LDS, at most {facts.vgprs_max} VGPRs (arch + AGPR), {scratch} "
             "(fp16 and bf16)")

    def run(mod):
        notes = []
        for dtype in DTYPES:
            b = amdgcn.budget(compile_(mod, target, dtype), NUM_WARPS)
            if b.scratch_bytes > facts.scratch_max:
                if facts.scratch_max:
                    return (f"{dtype}: {b.scratch_bytes} bytes of scratch per lane, more than the {facts.scratch_max} "
                            f"this port is known to spill ({facts.why})")
                return (f"{dtype}: {b.scratch_bytes} bytes of scratch per lane: registers spill to memory; the kernel "
                        f"must fit in the 512 VGPRs of a lane ({b.vgprs} used)")
            if b.lds_bytes != facts.lds_bytes:
                return f"{dtype}: {b.lds_bytes} bytes of LDS; expected {facts.lds_bytes} ({facts.why})"
            if b.vgprs > facts.vgprs_max:
                return f"{dtype}: {b.vgprs} VGPRs; expected at most {facts.vgprs_max} ({facts.why})"
            notes.append(f"{dtype} {b.vgprs} VGPRs ({b.arch_vgprs} arch + {b.agprs} AGPR)"
                         + (f", {b.scratch_bytes} bytes of scratch" if b.scratch_bytes else ""))
        return Passed(", ".join(notes) + f"; {b.occupancy}")
    return Check(key, title, run, target=target)


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
    from ..grading.gemm_kernel import fits

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


def read_conflict(mod, target: str = "gfx950", pieces=None) -> tuple[float, str]:
    """The worst bank conflict of the K loop's operand reads, from the module's own LDS layouts (``memory.lds``), with
    a phrase saying where it comes from. ``pieces``: the (rows, BLOCK_K) and (BLOCK_K, columns) shapes of the pieces
    the kernel reads (the tiles, or their halves); None for a kernel without LDS layouts of its own (convert_layout's
    scratch, lessons 20-21), whose reads the model takes as conflict-free."""
    if pieces is None:
        return 1.0, "taken as conflict-free: convert_layout's scratch"
    from ..memory import lds

    layouts = mod.kernel_layouts(target)
    ways = max(lds.ds_reads(layouts[f"{op}_layout"], layouts[f"{op}_shared"], list(shape), target=target).worst_ways
               for op, shape in zip("ab", pieces))
    return float(ways), ("conflict-free" if ways == 1 else f"{ways}-way conflicted") + " in memory.lds"


def lesson_loop(number: str, target: str = "gfx950", mod=None, **options):
    """Lesson ``number``'s K loop (its solution, or ``mod``) as its checks compile it, fp16, with what the time model
    needs beside it: ``(instructions, the reads' worst conflict, K steps per trip, the conflicts in words)``."""
    from . import time_model
    from ..course import load_checks, load_solution

    checks = load_checks(number)
    mod = mod if mod is not None else load_solution(number)
    ways, said = read_conflict(mod, target, getattr(checks, "PIECES", None))
    instructions = amdgcn.main_loop(getattr(checks, "compiled", compiled)(mod, target, "fp16", **options)).instructions
    return instructions, ways, time_model.k_steps(instructions, TILE, NUM_WARPS), said


def lesson_prediction(number: str, target: str = "gfx950", memory_latency: float | None = None, mod=None, **options):
    """The time model on lesson ``number``'s kernel (its solution, or ``mod``) as its checks compile it, fp16, with
    the reads' conflicts from its own layouts: ``(time_model.Prediction, the conflicts in words)``. ``options`` go to
    the backend (``llvm_fn_attrs=...``)."""
    from . import time_model
    from ..course import load_checks, load_solution

    checks = load_checks(number)
    mod = mod if mod is not None else load_solution(number)
    ways, said = read_conflict(mod, target, getattr(checks, "PIECES", None))
    k = getattr(checks, "compiled", compiled)(mod, target, "fp16", **options)
    return time_model.predict(k, lds_ways=ways, memory_latency=memory_latency), said


def time_model_check(key: str, version: int, at_least: float, why: str, previous: str | None = None, pieces=None,
                     target: str = "gfx950", compile_=None) -> Check:
    """The time model (``amd.time_model``) on the K loop of the module's kernel, fp16: it passes when the MFMA pipe is
    busy at least ``at_least`` of the steady K step, with the prediction, the previous lesson's (``previous``) and AMD's
    figure for the version in its note; a sentence says what the loop waits for when it is not."""
    from . import time_model

    compile_ = compile_ or compiled
    title = f"{target}, the time model (no GPU): the MFMA pipe busy at least {at_least:.0%} of each K step, fp16"

    def run(mod):
        ways, said = read_conflict(mod, target, pieces)
        p = time_model.predict(compile_(mod, target, "fp16"), lds_ways=ways)
        mfma = p.budget["MFMA"] / p.steps
        if p.mfma_busy < at_least:
            return (f"the model predicts {p.mfma_busy:.1%} of the MFMA peak, {p.step_clocks:.0f} clocks per K step "
                    f"for {mfma:.0f} of MFMA; the pipe waits most for {p.limited_by()}; expected at least "
                    f"{at_least:.0%} ({why})")
        notes = [f"{p.mfma_busy:.1%} of the MFMA peak: {p.step_clocks:.0f} clocks per K step for {mfma:.0f} of MFMA "
                 f"(the LDS reads {said}), the pipe waiting most for {p.limited_by()}"]
        if previous:
            q, _ = lesson_prediction(previous, target)
            notes.append(f"lesson {previous}'s solution: {q.mfma_busy:.1%} ({q.step_clocks:.0f} clocks per K step)")
        notes.append(time_model.compare(version, p).line())
        return Passed("; ".join(notes))
    return Check(key, title, run, target=target)


def schedule_variant_check(key: str, options: dict, table: dict, burst: int, at_least: float, why: str,
                           pieces=None, target: str = "gfx950") -> Check:
    """The module's kernel compiled with backend ``options`` (an LLVM scheduling strategy, ``llvm_fn_attrs``): the
    same K loop in the families that matter (``table``, as ``loop_check``), no more than ``burst`` copies in a row,
    nothing spilled, and the time model's MFMA share at least ``at_least``, for fp16 and bf16; the note weighs it
    against the plain compile."""
    from . import time_model

    said = ", ".join(f"{k}={v!r}" for k, v in options.items())
    title = (f"{target}, compiled with {said}: the same K loop, at most {burst} copies in a row, no scratch, and the "
             f"time model's MFMA pipe busy at least {at_least:.0%} (fp16 and bf16)")

    def run(mod):
        for dtype in DTYPES:
            k = compiled(mod, target, dtype, **options)
            found, want = loop_memory(k), expected_loop(table, target, dtype)
            if found != want:
                return f"{dtype}, {said}: the K loop holds {found}; expected {want} ({why})"
            longest = longest_burst(amdgcn.mfmas_between(k))
            if longest > burst:
                return f"{dtype}, {said}: {longest} copies one after the other; expected at most {burst} ({why})"
            b = amdgcn.budget(k, NUM_WARPS)
            if b.scratch_bytes:
                return f"{dtype}, {said}: {b.scratch_bytes} bytes of scratch per lane: the schedule spills ({why})"
        ways, _ = read_conflict(mod, target, pieces)
        p = time_model.predict(compiled(mod, target, "fp16", **options), lds_ways=ways)
        plain = time_model.predict(compiled(mod, target, "fp16"), lds_ways=ways)
        if p.mfma_busy < at_least:
            return (f"{said}: the model predicts {p.mfma_busy:.1%} of the MFMA peak ({p.step_clocks:.0f} clocks per K "
                    f"step), waiting most for {p.limited_by()}; expected at least {at_least:.0%} ({why})")
        return Passed(f"the model: {p.mfma_busy:.1%} of the MFMA peak ({p.step_clocks:.0f} clocks per K step) against "
                      f"{plain.mfma_busy:.1%} ({plain.step_clocks:.0f}) without it; {b.vgprs} VGPRs")
    return Check(key, title, run, target=target)


def group_size_check(key: str, order, settings, grids, target: str = "gfx950") -> Check:
    """On the host (``model.xcd``): a wave of P workgroups per XCD (one per CU) in grouped order touches at least
    GROUP_M + ⌈P/GROUP_M⌉ strips of A and B (``xcd.grouped_strips``); the module's CONFIG GROUP_M must be one that
    makes that least (``xcd.best_group_sizes``), and the L2 model (the kernel's own order, ``order(mod)``) must reach
    the bound with it on every grid of ``grids``: a run of P tiles that straddles two groups touches more."""
    from ..model import xcd

    programs = xcd.CUS_PER_XCD[target]
    best = xcd.best_group_sizes(programs)
    bound = xcd.grouped_strips(programs, best[0])
    listed = ", ".join(f"{m} × {n}" for m, n in grids)
    title = (f"on the host: {programs} workgroups of a wave per XCD ({target}) in grouped order touch at least GROUP_M "
             f"+ ⌈{programs}/GROUP_M⌉ strips of A and B, fewest ({bound}) for GROUP_M = {best[0]}…{best[-1]}; CONFIG's "
             f"GROUP_M is one of those and the L2 model meets the bound with it on {listed} tiles")

    def run(mod):
        gm = settings(mod)["GROUP_M"]
        n = xcd.grouped_strips(programs, gm)
        if gm not in best:
            return (f"GROUP_M = {gm}: a wave's {programs} tiles on one XCD touch at least {gm} + ⌈{programs}/{gm}⌉ = {n} "
                    f"strips of A and B; GROUP_M = {best[0]}…{best[-1]} gives {bound}")
        fn = order(mod)
        for m, nn in grids:
            rows, cols = xcd.workgroup_tiles(fn, m, nn)
            got = xcd.most_strips(rows, cols)
            if got > bound:
                return (f"GROUP_M = {gm}: on {m} × {nn} tiles the L2 model finds {got} strips on one XCD in a wave, "
                        f"more than the {bound} of GROUP_M + ⌈{programs}/GROUP_M⌉: a group is {gm} × {nn} = {gm * nn} "
                        f"tiles, and an XCD's run of {programs} straddles two of them")
        table = ", ".join(f"{g}: {xcd.grouped_strips(programs, g)}" for g in (1, 2, 4, 8, 16))
        return Passed(f"GROUP_M = {gm}: {bound} strips per XCD and wave, the least GROUP_M + ⌈{programs}/GROUP_M⌉ "
                      f"takes ({table}, …), met by the L2 model on {listed} tiles")
    return Check(key, title, run)


def schedule_facts(mod, number: str, target: str = "gfx950") -> dict:
    """What a schedule left in the K loop of ``mod`` (lesson ``number``'s solution, a variant or a plant), fp16: its
    barriers, ``s_setprio``, and the facts the order checks read (copies per region, the longest run
    of copies without an MFMA, moves between the register files), and the time model's share of the MFMA peak. What a
    notebook prints beside the solution's to show what a scheduling hint changed."""
    from . import time_model
    from ..course import load_checks

    checks = load_checks(number)
    k = getattr(checks, "compiled", compiled)(mod, target, "fp16")
    loop = amdgcn.main_loop(k).instructions
    ways, _ = read_conflict(mod, target, getattr(checks, "PIECES", None))
    p = time_model.predict(k, lds_ways=ways)
    return {"barriers": sum(i.opcode == "s_barrier" for i in loop),
            "s_setprio": sum(i.opcode == "s_setprio" for i in loop),
            "region copies": [r["buffer load → LDS"] for r in amdgcn.regions(k)],
            "longest copy run": longest_burst(amdgcn.mfmas_between(k)),
            "register-file moves": sum(amdgcn.category(i) == "AGPR move" for i in loop),
            "model": round(p.mfma_busy, 4), "clocks per K step": round(p.step_clocks)}
