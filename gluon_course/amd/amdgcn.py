"""Read an AMDGCN listing the way a kernel engineer does: by basic block, by loop, and by what each instruction
keeps busy.

LLVM's AMDGPU backend writes every basic block with a marker (``.LBB0_3:`` or ``; %bb.4:``) and, for the blocks of a
loop, a comment naming the loop: ``; =>This Inner Loop Header: Depth=1`` on the header and
``;   in Loop: Header=BB0_3 Depth=1`` on the others. This module reads those comments (the same listing the compile
returns, ``Compiled.amdgcn``), so the K loop of a GEMM is found from the compiler's own loop analysis rather than
from guessing at backward branches: LLVM places cold blocks after the function's end and branches back from them,
which looks like a loop but is not one.

One function counts an **instruction mix**: each instruction goes to exactly one category of ``MIX`` (MFMA, LDS
reads and writes, buffer and global loads, copies from memory straight into LDS, stores, waits, barriers, branches,
moves to and from the accumulation registers, other vector and scalar ALU work), so the categories add up to the
instructions of the loop. Counts are static (instructions in the listing, not executed ones), and exact for the
pinned Triton.

    >>> k = compile_cached(matmul_kernel, "gfx950", ...)
    >>> instruction_mix(k)                     # the K loop
    {'MFMA': 128, 'LDS read': 32, 'LDS write': 16, ...}
    >>> budget(k, num_warps=4).vgprs, budget(k, 4).agprs
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

# Each instruction belongs to the first category whose test it passes (order matters: "buffer load → LDS" before
# "buffer load", "AGPR move" before "VALU"). ``AMD_MIX`` names what each one means, for tables and plots.
MIX: tuple[tuple[str, str], ...] = (
    ("MFMA", r"v_mfma"),
    ("LDS read", r"ds_(read|load)"),
    ("LDS write", r"ds_(write|store)"),
    ("buffer load → LDS", r"buffer_load\S*\s.*\blds$"),
    ("buffer load", r"buffer_load"),
    ("global load", r"global_load"),
    ("store", r"(buffer|global)_store"),
    ("wait", r"s_waitcnt"),
    ("barrier", r"s_barrier\b"),
    ("branch", r"s_(cbranch_\w+|branch)\b"),
    ("AGPR move", r"v_accvgpr_"),
    ("VALU", r"v_"),
    ("SALU", r"s_(?!nop\b)"),
    ("scratch", r"scratch_"),
    ("other", r""),
)
MIX_MEANING = {
    "MFMA": "matrix instructions (v_mfma_*): the work itself",
    "LDS read": "ds_read_*: LDS → registers (the MFMA operands)",
    "LDS write": "ds_write_*: registers → LDS",
    "buffer load → LDS": "buffer_load_* … lds: global memory straight into LDS, no registers",
    "buffer load": "buffer_load_*: global memory → registers through a buffer descriptor (hardware range check)",
    "global load": "global_load_*: global memory → registers through a 64-bit address per lane",
    "store": "buffer_store_* / global_store_*",
    "wait": "s_waitcnt: wait until at most n memory operations of a kind are outstanding",
    "barrier": "s_barrier: every wave of the workgroup meets here",
    "branch": "s_branch, s_cbranch_*: jumps (masks that are not uniform become branches around the work)",
    "AGPR move": "v_accvgpr_read/write/mov: copies between the ordinary VGPRs and the accumulation registers",
    "VALU": "other vector ALU instructions (addresses, masks, conversions)",
    "SALU": "other scalar instructions (loop counters, exec masks, descriptors)",
    "scratch": "scratch_load_* / scratch_store_*: registers spilled to memory and read back",
    "other": "s_nop and anything not listed",
}
_MIX_RX = tuple((name, re.compile(pattern)) for name, pattern in MIX)

_BLOCK_MARK = re.compile(r"^(?:(?P<label>\.?LBB\d+_\d+):|; (?P<bb>%bb\.\d+):)")
_IN_LOOP = re.compile(r"in Loop: Header=(?P<header>\S+) Depth=(?P<depth>\d+)")
_HEADER = re.compile(r"=>This (?:Inner )?Loop Header: Depth=(?P<depth>\d+)")
_MNEMONIC = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Instruction:
    opcode: str          # "v_mfma_f32_16x16x32_f16"
    text: str            # the whole instruction as printed, without comments


@dataclass(frozen=True)
class Block:
    """One basic block: its marker (``.LBB0_3`` or ``%bb.4``), the loop it belongs to (LLVM's header name,
    ``BB0_3``; None outside loops) and its loop depth."""
    name: str
    loop: str | None
    depth: int
    instructions: tuple[Instruction, ...]


@dataclass(frozen=True)
class Loop:
    """The blocks of one loop (nested loops included), in listing order."""
    header: str
    depth: int
    blocks: tuple[Block, ...]

    @property
    def instructions(self) -> list[Instruction]:
        return [i for b in self.blocks for i in b.instructions]

    def opcodes(self) -> Counter:
        return Counter(i.opcode for i in self.instructions)


def _instruction(raw: str) -> Instruction | None:
    line = raw.split(";")[0].split("//")[0].rstrip()
    if not line.startswith("\t") and not line.startswith("  "):
        return None
    stripped = line.strip()
    if not stripped or stripped.startswith("."):
        return None
    opcode = stripped.split()[0]
    if not _MNEMONIC.match(opcode) or opcode.endswith(":"):
        return None
    return Instruction(opcode, stripped)


def _code(text: str) -> list[str]:
    """The lines of the kernel's code: from its first block to the end of the function (``.Lfunc_end``), so the
    metadata that follows (YAML, kernel descriptor) is never read as instructions."""
    lines = text.splitlines()
    end = next((i for i, line in enumerate(lines) if line.startswith(".Lfunc_end")), len(lines))
    return lines[:end]


def blocks(text: str) -> list[Block]:
    """The basic blocks of an AMDGCN listing, each with its loop from LLVM's comments."""
    out: list[Block] = []
    name, loop, depth, body, seen_code = "entry", None, 0, [], False

    def close():
        if body or name != "entry":
            out.append(Block(name, loop, depth, tuple(body)))

    for raw in _code(text):
        mark = _BLOCK_MARK.match(raw)
        if mark:
            close()
            # LLVM names a labelled block ".LBB0_3" in the code and "BB0_3" in its loop comments.
            label = mark.group("label")
            name = label[2:] if label else mark.group("bb")
            loop, depth, body, seen_code = None, 0, [], False
        comment = raw.split(";", 1)[1] if ";" in raw else ""
        if not seen_code:            # the loop comment sits on the marker line or on the comment lines after it
            m = _IN_LOOP.search(comment)
            if m:
                loop, depth = m.group("header"), int(m.group("depth"))
            m = _HEADER.search(comment)
            if m:
                loop, depth = name, int(m.group("depth"))
        ins = _instruction(raw)
        if ins is not None:
            body.append(ins)
            seen_code = True
    close()
    return out


def loops(compiled_or_text) -> list[Loop]:
    """Every loop of the kernel (by header), in listing order."""
    text = getattr(compiled_or_text, "amdgcn", compiled_or_text)
    found: dict[str, list[Block]] = {}
    depth: dict[str, int] = {}
    for b in blocks(text):
        if b.loop is not None:
            found.setdefault(b.loop, []).append(b)
            depth[b.loop] = b.depth
    return [Loop(header, depth[header], tuple(bs)) for header, bs in found.items()]


def main_loop(compiled, holding: str = "v_mfma") -> Loop:
    """The innermost loop that holds an instruction starting with ``holding``: a GEMM's K loop, by its MFMA."""
    candidates = [lp for lp in loops(compiled) if any(i.opcode.startswith(holding) for i in lp.instructions)]
    if not candidates:
        name = getattr(compiled, "kernel_name", "the kernel")
        raise ValueError(f"no loop of {name} holds a {holding} instruction: the K loop is missing, or the compiler "
                         "unrolled it away (is K a compile-time constant?)")
    return max(candidates, key=lambda lp: lp.depth)


def category(ins: Instruction) -> str:
    """The one ``MIX`` category of an instruction."""
    for name, rx in _MIX_RX:
        if rx.match(ins.text if name == "buffer load → LDS" else ins.opcode):
            return name
    return "other"


def instruction_mix(compiled, scope: str = "loop") -> dict[str, int]:
    """Instructions per ``MIX`` category, in ``MIX`` order, zeros included: ``scope="loop"`` counts the K loop
    (``main_loop``), ``scope="kernel"`` the whole kernel. The categories add up to the instructions counted."""
    if scope == "loop":
        instructions = main_loop(compiled).instructions
    elif scope == "kernel":
        instructions = [i for b in blocks(compiled.amdgcn) for i in b.instructions]
    else:
        raise ValueError(f"scope is 'loop' (the K loop) or 'kernel' (everything), not {scope!r}")
    counts = Counter(category(i) for i in instructions)
    return {name: counts.get(name, 0) for name, _ in MIX}


def waits(instructions) -> list[str]:
    """The operands of every ``s_waitcnt`` in order, e.g. ``["vmcnt(16)", "lgkmcnt(0)"]``."""
    return [i.text.split(None, 1)[1] if " " in i.text else "" for i in instructions if i.opcode == "s_waitcnt"]


def branches(compiled) -> int:
    """Branch instructions (``s_branch``, ``s_cbranch_*``) in the whole kernel."""
    return instruction_mix(compiled, "kernel")["branch"]


# -- registers, memory, occupancy ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Budget:
    """What one wave (one lane, for registers) of the kernel takes, as the assembler reports it."""
    arch_vgprs: int         # ordinary vector registers per lane (; NumVgprs)
    agprs: int              # accumulation registers per lane (; NumAgprs)
    vgprs: int              # the unified file they take together (.vgpr_count: arch rounded to 4, plus AGPRs)
    sgprs: int              # scalar registers per wave
    lds_bytes: int          # LDS per workgroup, as Triton allocated it
    scratch_bytes: int      # scratch (spill) memory per lane; 0 means no spills
    occupancy: object = field(compare=False, default=None)   # machine.occupancy.Occupancy on this target
    vgpr_spills: int = 0    # VGPRs the allocator spilled (.vgpr_spill_count)
    sgpr_spills: int = 0    # SGPRs spilled (.sgpr_spill_count)

    def row(self) -> dict:
        return {"VGPR": self.vgprs, "arch VGPR": self.arch_vgprs, "AGPR": self.agprs, "SGPR": self.sgprs,
                "LDS bytes": self.lds_bytes, "scratch": self.scratch_bytes}


def _listing_number(text: str, name: str) -> int | None:
    m = re.search(rf"^\s*; {name}: (\d+)", text, re.M)
    return int(m.group(1)) if m else None


def listed_occupancy(compiled) -> int | None:
    """The waves per SIMD the compiler prints (``; Occupancy:``): what the registers alone allow."""
    return _listing_number(compiled.amdgcn, "Occupancy")


def budget(compiled, num_warps: int) -> Budget:
    """Registers, LDS and scratch of an AMD compile, and its occupancy from ``machine.occupancy``."""
    from ..machine.occupancy import occupancy_of

    if compiled.is_nvidia:
        raise ValueError(f"{compiled.kernel_name} was compiled for {compiled.target}; budget() reads AMDGCN")
    text, res = compiled.amdgcn, compiled.resources
    arch = _listing_number(text, "NumVgprs")
    acc = _listing_number(text, "NumAgprs")
    return Budget(arch_vgprs=arch if arch is not None else res["registers"] - res.get("agprs", 0),
                  agprs=acc if acc is not None else res.get("agprs", 0), vgprs=res["registers"], sgprs=res["sgprs"],
                  lds_bytes=compiled.shared_bytes, scratch_bytes=compiled.spills,
                  occupancy=occupancy_of(compiled, num_warps), vgpr_spills=res.get("vgpr_spills", 0),
                  sgpr_spills=res.get("sgpr_spills", 0))


# -- the order of the K loop (lessons 25 on) ----------------------------------------------------------------------

ISSUE_MARKS = {"MFMA": "M", "LDS read": "R", "buffer load → LDS": "C", "buffer load": "L", "global load": "G",
               "barrier": "|", "AGPR move": "a", "scratch": "S", "branch": "B"}


def wait_counts(ins: Instruction) -> dict:
    """The counters an ``s_waitcnt`` waits on: ``{"vmcnt": 16, "lgkmcnt": 0}`` (a counter it leaves alone is absent)."""
    return {name: int(n) for name, n in re.findall(r"(vmcnt|lgkmcnt|expcnt)\((\d+)\)", ins.text)}


# The largest count each counter takes on gfx9 (CDNA): a wait for it waits for nothing.
WAIT_MAX = {"vmcnt": 63, "lgkmcnt": 15}


def wait_mark(ins: Instruction) -> str | None:
    """An ``s_waitcnt`` as a mark of the issue string: ``"w vmcnt(0)"`` (memory: loads, copies into LDS),
    ``"w lgkmcnt(11)"`` (LDS, and scalar memory), ``"w vmcnt(4) lgkmcnt(0)"`` for both; None for a wait on neither."""
    counts = wait_counts(ins)
    shown = [f"{name}({counts[name]})" for name in ("vmcnt", "lgkmcnt") if counts.get(name, WAIT_MAX[name]) <
             WAIT_MAX[name]]
    return "w " + " ".join(shown) if shown else None


def issue_runs(instructions, marks: dict | None = None) -> list[tuple[str, int]]:
    """The loop as runs of one mark each, in issue order: ``[("M", 6), ("w vmcnt(0)", 1), ("|", 1), ("C", 1), ...]``.
    ``marks`` maps MIX categories to a letter (default ``ISSUE_MARKS``); every wait is kept with its counts
    (``wait_mark``: ``"w vmcnt(n)"`` on memory, ``"w lgkmcnt(n)"`` on LDS reads), everything else is left out."""
    marks = ISSUE_MARKS if marks is None else marks
    runs: list[tuple[str, int]] = []
    for ins in instructions:
        cat = category(ins)
        mark = wait_mark(ins) if cat == "wait" else marks.get(cat)
        if mark is None:
            continue
        if runs and runs[-1][0] == mark and not mark.startswith("w "):
            runs[-1] = (mark, runs[-1][1] + 1)
        else:
            runs.append((mark, 1))
    return runs


def issue_string(instructions, marks: dict | None = None) -> str:
    """``issue_runs`` as one line: ``"M6 w vmcnt(0) | M C M C … R32 B"``."""
    return " ".join(f"{m}{n if n > 1 else ''}" for m, n in issue_runs(instructions, marks))


def first_order(compiled, names) -> list[str]:
    """``names`` (MIX categories, or ``"vmcnt(n)"`` for a wait on n outstanding memory operations) sorted by where
    each first occurs in the K loop; a name that never occurs is left out."""
    instructions = main_loop(compiled).instructions
    first = {}
    for i, ins in enumerate(instructions):
        keys = [category(ins)]
        if ins.opcode == "s_waitcnt" and "vmcnt" in wait_counts(ins):
            keys.append(f"vmcnt({wait_counts(ins)['vmcnt']})")
        for key in keys:
            first.setdefault(key, i)
    return sorted((n for n in names if n in first), key=first.get)


def regions(compiled) -> list[dict]:
    """The K loop cut at its barriers (``s_barrier``), each region as its MIX counts. The loop is a cycle, so the
    instructions after the last barrier belong to the region that starts there and ends at the first barrier of the
    next trip: there are as many regions as barriers (one region when the loop has none)."""
    instructions = main_loop(compiled).instructions
    cuts = [i for i, ins in enumerate(instructions) if ins.opcode == "s_barrier"]
    if not cuts:
        spans = [instructions]
    else:
        spans = [instructions[a:b] for a, b in zip(cuts, cuts[1:])]
        spans.append(instructions[cuts[-1]:] + instructions[:cuts[0]])
    return [{name: sum(1 for ins in span if category(ins) == name) for name, _ in MIX} for span in spans]


def mfmas_between(compiled, kind: str = "buffer load → LDS") -> list[int]:
    """How many MFMAs the K loop issues between one instruction of ``kind`` and the next, in loop order, the last
    gap running round to the first one of the next trip: ``[1, 1, 1, 2, ...]`` (0: two in a row)."""
    instructions = main_loop(compiled).instructions
    at = [i for i, ins in enumerate(instructions) if category(ins) == kind]
    if not at:
        return []
    mfma = [category(ins) == "MFMA" for ins in instructions]
    gaps = [sum(mfma[a + 1:b]) for a, b in zip(at, at[1:])]
    gaps.append(sum(mfma[at[-1] + 1:]) + sum(mfma[:at[0]]))
    return gaps


def before_loop(compiled, holding: str = "v_mfma") -> list[Instruction]:
    """The instructions of the blocks before the K loop's first block (the prologue, in listing order)."""
    loop = main_loop(compiled, holding)
    first = loop.blocks[0].name
    out: list[Instruction] = []
    for b in blocks(compiled.amdgcn):
        if b.name == first:
            break
        out.extend(b.instructions)
    return out


def loop_vmcnts(compiled) -> list[int]:
    """The memory counts the K loop waits for, in loop order (``s_waitcnt vmcnt(n)``; 63, the counter's maximum,
    which waits for nothing, left out)."""
    return [wait_counts(i)["vmcnt"] for i in main_loop(compiled).instructions
            if i.opcode == "s_waitcnt" and wait_counts(i).get("vmcnt", 63) < 63]


def mfma_operand_files(compiled) -> list[tuple[tuple[str, ...], Instruction]]:
    """Each MFMA of the K loop, in loop order, with the register file of its operands: ``(("a", "v", "v", "a"),
    instruction)`` for D (the result), A, B and C (the accumulator read), ``"v"`` an ordinary VGPR, ``"a"`` an AGPR."""
    out = []
    for ins in main_loop(compiled).instructions:
        if ins.opcode.startswith("v_mfma"):
            operands = [op.strip() for op in ins.text.split(None, 1)[1].split(",")][:4]
            out.append((tuple(op[0] for op in operands), ins))
    return out


def mfma_register_files(compiled) -> Counter:
    """Which register file each operand of the K loop's MFMAs lives in: a Counter of (D, A, B, C) tuples of ``"v"``
    (ordinary VGPRs) and ``"a"`` (AGPRs), e.g. ``{("v", "a", "a", "v"): 128}``: accumulators in VGPRs, operands in
    AGPRs."""
    return Counter(files for files, _ in mfma_operand_files(compiled))
