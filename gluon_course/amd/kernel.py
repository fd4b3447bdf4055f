"""An AMD GEMM version as its checks see it (lessons 20 on): the compile of the headline launch (the course's tile,
fixed, so that a learner's own CONFIG cannot move the counts), and the facts read off that compile that the checks
and the notebooks compare: the K loop's algorithmic instructions, the loads' masks (from the TTGIR), the waits on the
copies before the first LDS read, the prologue's copies, the longest burst of copies without an MFMA."""
from __future__ import annotations

import re

from ..machine.compile import compile_cached
from . import amdgcn
from .layouts import MFMA


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


def compiled(mod, target: str = "gfx950", dtype: str = "fp16", layouts: dict | None = None, aligned: bool = True,
             **options):
    """``mod.matmul_kernel`` compiled for ``target`` as the headline launch sees it: the course's tile (fixed here,
    so a learner's own CONFIG cannot move the counts) and ``mod.kernel_layouts(target)``, or ``layouts``. ``options``
    go to the backend (``llvm_fn_attrs="amdgpu-sched-strategy=max-ilp"``: lesson 28's scheduled variant)."""
    constexprs = {**TILE, **(layouts if layouts is not None else mod.kernel_layouts(target))}
    sig = signature(dtype)
    return compile_cached(mod.matmul_kernel, target, signature=sig, constexprs=constexprs,
                          aligned=tuple(sig) if aligned else ("a_ptr", "b_ptr", "c_ptr"), num_warps=NUM_WARPS,
                          **options)


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
        out[MFMA[target].opcode(dtype) if name == "mfma" else name] = n
    return dict(sorted(out.items()))


def mfma_outside_loop(k) -> int:
    """MFMA instructions outside the K loop (0 when every product is in the loop)."""
    loop = len([i for i in amdgcn.main_loop(k).instructions if i.opcode.startswith("v_mfma")])
    return k.count_matching(r"v_mfma") - loop


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


def compile_error(mod, target: str, dtype: str = "fp16") -> str | None:
    """None when the version compiles for ``target``, else the compiler's sentence."""
    from ..machine.compile import CompileFailed

    try:
        compiled(mod, target, dtype)
    except CompileFailed as e:
        return e.message
    return None


def prologue_facts(k) -> tuple[int, int | None]:
    """(copies into LDS before the K loop, the vmcnt the prologue waits for before its first LDS read)."""
    instructions = amdgcn.before_loop(k)
    copies = sum(1 for i in instructions if amdgcn.category(i) == "buffer load → LDS")
    reads = [n for n, i in enumerate(instructions) if i.opcode.startswith("ds_read")]
    end = reads[0] if reads else len(instructions)
    counts = [amdgcn.wait_counts(i)["vmcnt"] for i in instructions[:end]
              if i.opcode == "s_waitcnt" and amdgcn.wait_counts(i).get("vmcnt", 63) < 63]
    return copies, (min(counts) if counts else None)


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
