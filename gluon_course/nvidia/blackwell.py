"""Blackwell (sm_100) at the end of the Hopper GEMM lessons: what a tcgen05 kernel compiles to, read on the CPU.

Lessons 15 and 18 end with their step written for Blackwell's tensor cores: ``tcgen05_mma`` multiplies tiles in
shared memory into an accumulator in *tensor memory* (TMEM), reports completion through an mbarrier, and the
accumulator comes back into registers in the layout its descriptor gives (``get_reg_layout``). The course has no
Blackwell GPU: these kernels are compiled for sm_100 and their machine code is read, never run, and no figure is
claimed for them.

The SASS names are what the nvdisasm inside Triton 3.9.0's wheel prints (its cuobjdump -sass prints the same).
Which SASS instruction stands for which PTX one is read from where each sits in the two listings of the same compile
(``SASS_FOR``).
"""
from __future__ import annotations

import re

# PTX instruction of the lessons' kernels → the SASS instruction in its place (Triton 3.9.0, bf16 operands):
# - tcgen05.alloc is the kernel's first act, by warp 0; in SASS one elected thread retries its allocation
#   (UTCATOMSWS.FIND_AND_SET.ALIGN, again after a NANOSLEEP while it fails), so the opcode appears twice;
# - tcgen05.mma and tcgen05.commit sit where the K loop issues its products; tcgen05.ld after the loop;
# - tcgen05.dealloc is warp 0's last act before it exits.
SASS_FOR = {
    "tcgen05.alloc": "UTCATOMSWS.FIND_AND_SET.ALIGN",
    "tcgen05.mma (kind::f16)": "UTCHMMA",
    "tcgen05.commit (arrive on an mbarrier)": "UTCBAR",
    "tcgen05.ld (32x32b, 128 registers)": "LDTM.x128",
    "tcgen05.dealloc": "UTCATOMSWS.AND",
}
NAMES = {"UTCHMMA": "a tcgen05.mma", "UTCBAR": "a tcgen05.commit: an arrival once the products are done",
         "UTCATOMSWS.FIND_AND_SET.ALIGN": "the TMEM allocation (tcgen05.alloc)",
         "UTCATOMSWS.AND": "the TMEM release (tcgen05.dealloc)", "LDTM.x128": "a tcgen05.ld of 128 columns",
         "SYNCS.PHASECHK.TRANS64.TRYWAIT": "an mbarrier wait", "UTMALDG.2D": "a TMA box copy",
         "SYNCS.ARRIVE.TRANS64": "expect()", "SYNCS.ARRIVE.TRANS64.A1T0": "an arrive() by the threads"}
# Hopper's tensor-core instruction and its fence and wait: the checks allow none of them in an sm_100 kernel.
WGMMA_OPS = ("HGMMA", "WARPGROUP.")
# The accumulate flag is UTCHMMA's last operand (PTX's enable-input-d, Gluon's use_acc): UPT, the predicate that is
# always true, adds to the accumulator; a predicate register computed from ``use_acc=k > 0`` is false on a tile's
# first K step, where the product overwrites whatever tensor memory held.
ALWAYS = "UPT"
_ALLOC = re.compile(r"tcgen05\.alloc\.\S+\s+\[[^\]]+\],\s*(\d+);")


def tcgen05_ops(k) -> dict:
    """The tcgen05 instructions of a compiled kernel (UTC*, LDTM*), by opcode."""
    return {op: n for op, n in sorted(k.opcodes().items()) if op.startswith(("UTC", "LDTM"))}


def mma_loop(k) -> tuple[int, int]:
    """(first, last) address of the smallest loop that holds the tcgen05 products: the K loop."""
    return k.loop_holding("UTCHMMA")


def accumulate_flags(k, span=None) -> list[str]:
    """The accumulate flag (last operand) of every UTCHMMA in ``span`` (default: the K loop), in address order."""
    first, last = span or mma_loop(k)
    return [i.text.rsplit(",", 1)[1].strip() for i in k.instructions()
            if i.opcode == "UTCHMMA" and first <= i.address <= last]


def tmem_columns(k) -> list[int]:
    """The 32-bit TMEM columns of each tcgen05.alloc in the PTX (128 lanes each): ``[128]`` for a 128 × 128 fp32
    accumulator. ``k.metadata.tmem_size`` is the program's total, which Triton's launcher holds to 512 columns."""
    return [int(n) for n in _ALLOC.findall(k.ptx)]


def reg_layout(shape, num_warps: int):
    """The register layout ``get_reg_layout`` gives a ``shape`` fp32 accumulator in TMEM (block = shape, col_stride
    1) read by ``num_warps`` warps: the same call a kernel makes on its descriptor, made here on its type."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, tensor_memory_descriptor_type

    shape = [int(s) for s in shape]
    ty = tensor_memory_descriptor_type(gl.float32, shape, TensorMemoryLayout(tuple(shape), col_stride=1), shape)
    return ty.get_reg_layout(num_warps=num_warps)


def signature(k, in_loop: dict, mma_per_step: int, whole: dict, why: dict | None = None) -> str | None:
    """The K loop of a tcgen05 kernel: ``in_loop`` plus ``mma_per_step`` UTCHMMA, all of them in that loop, the first
    of each step with an accumulate predicate and the others UPT, no Hopper instruction, and exactly the ``whole``
    kernel's tcgen05 instructions. None, or a sentence."""
    from ..grading.counts import mismatch

    ops = k.opcodes()
    if not ops.get("UTCHMMA"):
        return "no UTCHMMA (tcgen05.mma) at all: the products must come from tcgen05_mma"
    hopper = {op: n for op, n in ops.items() if op.startswith(WGMMA_OPS)}
    if hopper:
        return f"{hopper} in an sm_100 kernel: wgmma is Hopper's instruction; Blackwell's is tcgen05_mma"
    span = mma_loop(k)
    loop = k.opcodes_between(*span)
    want = {**in_loop, "UTCHMMA": mma_per_step}
    problem = mismatch({op: loop.get(op, 0) for op in want}, want, "in the K loop", names=NAMES, why=why)
    if problem:
        return problem
    if ops["UTCHMMA"] != mma_per_step:
        return f"{ops['UTCHMMA']} × UTCHMMA in the kernel; expected {mma_per_step}, all in the K loop"
    flags = accumulate_flags(k, span)
    if flags[0] == ALWAYS or any(f != ALWAYS for f in flags[1:]):
        return (f"the products' accumulate flags are {flags}; expected a predicate on the first of the step and "
                f"{ALWAYS} on the others: tensor memory is allocated without a value, so the first product of a "
                "tile must overwrite it (use_acc=False on the first K step) and every later one add to it")
    return mismatch(tcgen05_ops(k), whole, "in the whole kernel (tcgen05 instructions)", names=NAMES, why=why)


def resource_mismatch(k, registers: int, shared_bytes: int, tmem_cols: int) -> str | None:
    """``Compiled.resource_mismatch`` plus tensor memory: one tcgen05.alloc of ``tmem_cols`` columns, and a program
    total (``k.metadata.tmem_size``) of the same. None, or a sentence."""
    problem = k.resource_mismatch(registers, shared_bytes)
    got = (tmem_columns(k), k.metadata.tmem_size)
    if problem or got != ([tmem_cols], tmem_cols):
        return (f"{k.registers} registers, {k.spills} spill bytes, {k.shared_bytes} shared bytes, tcgen05.alloc of "
                f"{got[0]} columns ({got[1]} in all); expected {registers} registers, no spills, {shared_bytes} shared "
                f"bytes, one allocation of {tmem_cols} columns")
    return None


def show(k, span=None, prefixes=("UTC", "LDTM", "SYNCS", "UTMALDG", "ELECT", "FENCE", "NANOSLEEP")) -> None:
    """Print the instructions of ``span`` (default: the whole kernel) whose opcode starts with one of ``prefixes``."""
    first, last = span or (0, float("inf"))
    for i in k.instructions():
        if first <= i.address <= last and i.opcode.startswith(prefixes):
            print(f"  {i.address:#06x}  {i.text}")


def compare(hopper, hopper_span, bw, bw_span) -> list[list]:
    """Rows ``[what, sm_90, sm_100]`` for one step compiled for both targets: ``hopper`` and ``bw`` are the compiles,
    each ``span`` the K loop that holds its products (``loop_holding("HGMMA")``, ``mma_loop``)."""
    hl, bl = hopper.opcodes_between(*hopper_span), bw.opcodes_between(*bw_span)

    def counted(loop, *prefixes):
        return ", ".join(f"{n} × {op}" for op, n in sorted(loop.items()) if op.startswith(prefixes)) or "none"

    return [
        ["products in the K loop", counted(hl, "HGMMA"), counted(bl, "UTCHMMA")],
        ["completion: wgmma wait, tcgen05 commit", counted(hl, "WARPGROUP.DEPBAR"), counted(bl, "UTCBAR")],
        ["mbarrier waits in the K loop", counted(hl, "SYNCS.PHASECHK"), counted(bl, "SYNCS.PHASECHK")],
        ["instructions in the K loop", sum(hl.values()), sum(bl.values())],
        ["TMEM columns", "none", " + ".join(str(c) for c in tmem_columns(bw))],
        ["registers per thread at launch", hopper.registers, bw.registers],
        ["USETMAXREG (register reallocation)", hopper.count_matching("USETMAXREG"), bw.count_matching("USETMAXREG")],
        ["warps launched", hopper.metadata.num_warps, bw.metadata.num_warps],
        ["shared bytes", hopper.shared_bytes, bw.shared_bytes],
    ]
