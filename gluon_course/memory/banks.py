"""Shared-memory bank conflicts, predicted on a CPU from two linear layouts, and counted on a GPU by ncu.

Shared memory on NVIDIA GPUs is 32 banks of 4 bytes: the 4-byte word at byte address ``a`` lives in bank
``(a // 4) % 32``. Each cycle shared memory serves one *wavefront*: at most one word per bank (lanes that read
the same word share it). A warp-wide access of 4 bytes per lane is one wavefront when the 32 lanes hit 32
different banks, and up to 32 when they all hit different words of one bank. Wider accesses are served a
group of lanes at a time, 128 bytes per wavefront: 16 lanes for 8-byte accesses, 8 lanes for 16-byte ones.

Two linear layouts decide everything: the *distributed* layout says which lane holds which element, the
*shared* layout says at which offset each element is stored. This module

* asks Triton for its own prediction, ``gl.bank_conflicts``, from the host (``triton_bank_conflicts``);
* simulates the wavefronts itself from the two layouts (``shared_access``), which also gives the numbers
  that Nsight Compute reports (wavefronts per instruction) and explains *which* lanes collide;
* reads the addresses of every ``st.shared`` / ``ld.shared`` off a compiled kernel's PTX (``bank_report``):
  Triton picks the shared layout of a ``convert_layout`` while lowering to LLVM, so it shows in the PTX only;
* does the same for ``ldmatrix``, the read that feeds ``mma_v2``: from a shared layout alone
  (``ldmatrix_wavefronts``, 8 row addresses of 16 bytes per 8 × 8 matrix) and from the compiled PTX
  (``ldmatrix_report``).

All three count wavefronts with the same rule, ``wavefronts`` below.

    >>> row = gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0])
    >>> column = gl.BlockedLayout([1, 1], [32, 1], [1, 4], [0, 1])
    >>> plain = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    >>> shared_access(column, plain, [64, 64]).wavefronts_per_instruction
    32.0
    >>> triton_bank_conflicts(column, plain, [64, 64])
    31
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from triton.experimental.gluon.language._layouts import DistributedLayout, SharedLayout

from .coalescing import vector_bits
from .layouts import coordinate, to_linear, xor_table

BANKS = 32
BANK_BYTES = 4
WAVEFRONT_BYTES = BANKS * BANK_BYTES     # 128 bytes served per cycle
MAX_VECTOR_BYTES = 16                    # the widest ld.shared / st.shared
WARP = 32


def wavefronts(addresses: list[int], access_bytes: int = 4) -> int:
    """Wavefronts one warp-wide access needs: ``addresses`` are the byte addresses of its lanes, each moving
    ``access_bytes`` (4, 8 or 16). Lanes are served in groups that move 128 bytes (all 32 lanes for 4-byte
    accesses, 16 for 8-byte, 8 for 16-byte); a group needs as many wavefronts as the largest number of
    *different* 4-byte words it asks of any one bank (lanes reading the same word share it)."""
    group = max(1, min(WARP, WAVEFRONT_BYTES // max(access_bytes, BANK_BYTES)))
    total = 0
    for start in range(0, len(addresses), group):
        words_in_bank: dict[int, set[int]] = {}
        for a in addresses[start:start + group]:
            for word in range(a // BANK_BYTES, (a + access_bytes + BANK_BYTES - 1) // BANK_BYTES):
                words_in_bank.setdefault(word % BANKS, set()).add(word)
        total += max(len(words) for words in words_in_bank.values())
    return total


def extra_wavefronts(addresses: list[int], access_bytes: int = 4) -> int:
    """Wavefronts beyond the minimum (one per lane group): 0 means conflict-free."""
    group = max(1, min(WARP, WAVEFRONT_BYTES // max(access_bytes, BANK_BYTES)))
    return wavefronts(addresses, access_bytes) - -(-len(addresses) // group)


# -- Triton's own prediction ------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _builder():
    """A Gluon IR builder positioned inside an empty function: ``get_shared_bank_conflicts`` looks for the
    enclosing module, so a bare builder would crash the interpreter."""
    from triton._C.libtriton import gluon_ir, ir

    context = ir.context()
    ir.load_dialects(context)
    builder = gluon_ir.GluonOpBuilder(context)
    module = builder.create_module()
    probe = builder.get_or_insert_function(module, "bank_conflict_probe", builder.get_function_ty([], []),
                                           "private", False)
    module.push_back(probe)
    builder.set_insertion_point_to_start(probe.add_entry_block())
    return context, module, builder


def triton_bank_conflicts(distributed, shared, shape, element_bits: int = 32) -> int:
    """``gl.bank_conflicts`` from the host: the excess wavefronts per wavefront of each ld.shared / st.shared
    Triton would emit to move a tensor of ``shape`` in ``distributed`` to or from ``shared`` (0 = none).

    Inside a kernel the same number is ``gl.bank_conflicts(x.type, smem.type)`` (a compile-time constant)."""
    if not isinstance(distributed, DistributedLayout):
        raise TypeError(f"distributed must be a distributed layout (BlockedLayout, ...), got {type(distributed).__name__}")
    if not isinstance(shared, SharedLayout):
        raise TypeError(f"shared must be a shared-memory layout (SwizzledSharedLayout, ...), got {type(shared).__name__}")
    _, _, builder = _builder()
    return int(builder.get_shared_bank_conflicts(distributed._to_ir(builder), shared._to_ir(builder),
                                                 [int(s) for s in shape], int(element_bits)))


# -- our own simulation ----------------------------------------------------------------------------

def shared_offsets(shared, shape) -> dict[tuple[int, ...], int]:
    """Element → offset (in elements) of ``shared`` on a tensor of ``shape``: the inverse of its linear layout,
    whose bases map each bit of the offset to an element."""
    linear = to_linear(shared, shape)
    bases = linear.offset_bases
    rank = len(shape)
    table = {}
    for offset, element in enumerate(xor_table(bases, rank)):
        table.setdefault(element, offset)
    return table


@dataclass(frozen=True)
class SharedAccess:
    """One side of a shared-memory round trip: every warp-wide ld.shared (or st.shared) that moves a tensor."""
    vector_elements: int    # elements per lane per instruction (4 float32 = one 16-byte access)
    element_bytes: int
    instructions: int       # warp-wide instructions, all warps together
    wavefronts: int         # wavefronts they need, all together
    worst: tuple            # (instruction, wavefronts) of the worst instruction of warp 0

    @property
    def vector_bytes(self) -> int:
        return self.vector_elements * self.element_bytes

    @property
    def ideal_per_instruction(self) -> float:
        """Wavefronts with no conflict: one per 128 bytes a warp moves (1 for 4-byte, 4 for 16-byte accesses)."""
        return max(1.0, 32 * self.vector_bytes / WAVEFRONT_BYTES)

    @property
    def wavefronts_per_instruction(self) -> float:
        """What Nsight Compute reports as shared wavefronts ÷ shared instructions."""
        return self.wavefronts / self.instructions

    @property
    def conflicts(self) -> float:
        """Excess wavefronts per ideal wavefront: the quantity ``gl.bank_conflicts`` returns (31 = 32-way)."""
        return self.wavefronts_per_instruction / self.ideal_per_instruction - 1

    def __str__(self) -> str:
        return (f"{self.instructions} instructions of {self.vector_bytes} bytes per lane, "
                f"{self.wavefronts_per_instruction:g} wavefronts each (ideal {self.ideal_per_instruction:g}): "
                f"{self.conflicts:g} conflicts")


def shared_access(distributed, shared, shape, element_bytes: int = 4, warp_size: int = 32) -> SharedAccess:
    """Simulate the wavefronts of moving a tensor of ``shape`` held in ``distributed`` to/from ``shared``.

    Model (NVIDIA): each warp-wide instruction moves ``vector`` consecutive elements per lane; its lanes are
    served in groups that move 128 bytes (all 32 lanes for 4-byte accesses, 8 lanes for 16-byte ones); a group
    needs as many wavefronts as the largest number of *different* 4-byte words it touches in any one bank.
    Registers that hold the same element twice (broadcast) are read or written once."""
    linear = to_linear(distributed, shape)
    offsets = shared_offsets(shared, shape)
    bits = vector_bits(linear, lambda basis: offsets[basis], element_bytes, MAX_VECTOR_BYTES, any_register_order=True)
    # Registers that hold a copy of another register's element (zero bases) need no instruction of their own.
    instruction_bits = [k for k, b in enumerate(linear.reg_bases) if k not in bits and any(b)]
    vector = 1 << len(bits)
    total_instructions = total_wavefronts = 0
    worst = (0, 0)
    for warp in range(1 << len(linear.warp_bases)):
        for n in range(1 << len(instruction_bits)):
            register = sum(1 << bit for i, bit in enumerate(instruction_bits) if n >> i & 1)
            addresses = [offsets[coordinate(linear, register, lane, warp)] * element_bytes
                         for lane in range(1 << len(linear.lane_bases))]
            needed = wavefronts(addresses, vector * element_bytes)
            total_instructions += 1
            total_wavefronts += needed
            if warp == 0 and needed > worst[1]:
                worst = (n, needed)
    return SharedAccess(vector, element_bytes, total_instructions, total_wavefronts, worst)


def bank_table(distributed, shared, shape, register: int = 0, warp: int = 0, element_bytes: int = 4) -> list[tuple]:
    """For one instruction (``register`` of every lane of ``warp``): (lane, element, offset, bank) per lane —
    the table to read a conflict off by eye."""
    linear = to_linear(distributed, shape)
    offsets = shared_offsets(shared, shape)
    rows = []
    for lane in range(1 << len(linear.lane_bases)):
        element = coordinate(linear, register, lane, warp)
        offset = offsets[element]
        rows.append((lane, element, offset, (offset * element_bytes // BANK_BYTES) % BANKS))
    return rows


def bank_grid(shared, shape, rows: int = 8, cols: int = 32) -> str:
    """The bank of each element of the top-left ``rows`` × ``cols`` corner of a 2D tile, as text."""
    offsets = shared_offsets(shared, shape)
    lines = []
    for i in range(min(rows, shape[0])):
        lines.append(" ".join(f"{(offsets[(i, j)] % BANKS):2d}" for j in range(min(cols, shape[1]))))
    return "\n".join(lines)


# -- ldmatrix: the read that feeds mma_v2 ------------------------------------------------------------

LDMATRIX_ROW_BYTES = 16                  # one row of an 8 × 8 matrix of 16-bit elements
LDMATRIX_ROWS = 8


@dataclass(frozen=True)
class LdmatrixAccess:
    """Every 8 × 8 matrix ``ldmatrix`` reads from a shared tile, and the wavefronts it costs."""
    matrices: int               # 8 × 8 matrices in the tile
    wavefronts: int             # their wavefronts, all together
    per_matrix: dict            # wavefronts → how many matrices need that many
    worst: tuple                # (first row, first column) of the first matrix with the most wavefronts
    matrices_per_instruction: int = 4     # ldmatrix .x4: the form Triton emits for mma_v2 operands

    @property
    def wavefronts_per_instruction(self) -> float:
        """What Nsight Compute reports as ldmatrix wavefronts ÷ ldmatrix instructions (every matrix read equally
        often, as mma_v2's operands are); 4 for .x4 without conflicts."""
        return self.matrices_per_instruction * self.wavefronts / self.matrices

    @property
    def ideal_per_instruction(self) -> int:
        return self.matrices_per_instruction

    @property
    def conflicts(self) -> float:
        """Excess wavefronts per ideal wavefront (0: every matrix in one wavefront; 7: 8-way)."""
        return self.wavefronts_per_instruction / self.ideal_per_instruction - 1

    def __str__(self) -> str:
        spread = ", ".join(f"{n} matrices × {w}" for w, n in sorted(self.per_matrix.items()))
        return (f"{self.matrices} matrices of 8 × 8 ({spread} wavefronts): {self.wavefronts_per_instruction:g} "
                f"wavefronts per ldmatrix.x4 (ideal {self.ideal_per_instruction})")


def ldmatrix_rows(shared, shape, element_bytes: int = 2) -> dict[tuple[int, int], list[int]]:
    """(first row, first column) of every 8 × 8 matrix of a 2D tile → the byte addresses of its 8 rows.

    An mma_v2 operand is read as matrices of 8 consecutive rows (along the strided axis) × one aligned 16-byte
    piece of a row (along the contiguous axis, ``order[0]``): ``ldmatrix`` takes one address per row, given by
    8 lanes, and each row must be 16 contiguous bytes in shared memory. ``.trans`` (B, whose rows run along N)
    reads the same 8 rows and transposes in registers, so the addresses, and the banks, are the same."""
    if len(shape) != 2:
        raise ValueError(f"ldmatrix reads 2D tiles, got shape {shape}")
    if element_bytes * LDMATRIX_ROWS != LDMATRIX_ROW_BYTES:
        raise ValueError(f"ldmatrix moves 16-bit elements (8 per 16-byte row), not {element_bytes}-byte ones")
    offsets = shared_offsets(shared, shape)
    inverse = {offset: element for element, offset in offsets.items()}
    contiguous = next(axis for axis in range(2) if inverse[1][axis] == 1)   # the axis offset 1 steps along
    strided = 1 - contiguous
    if shape[strided] % LDMATRIX_ROWS or shape[contiguous] % LDMATRIX_ROWS:
        raise ValueError(f"shape {shape} is not made of 8 × 8 matrices")
    rows = {}
    for r0 in range(0, shape[strided], LDMATRIX_ROWS):
        for c0 in range(0, shape[contiguous], LDMATRIX_ROWS):
            addresses = []
            for r in range(r0, r0 + LDMATRIX_ROWS):
                row = [offsets[(r, c) if strided == 0 else (c, r)] for c in range(c0, c0 + LDMATRIX_ROWS)]
                if row != list(range(row[0], row[0] + LDMATRIX_ROWS)) or row[0] % LDMATRIX_ROWS:
                    raise ValueError(f"{shared} splits the 16-byte rows of an 8 × 8 matrix (row {r}, columns "
                                     f"{c0}…{c0 + 7} sit at offsets {row}): ldmatrix cannot read it")
                addresses.append(row[0] * element_bytes)
            rows[(r0, c0) if strided == 0 else (c0, r0)] = addresses
    return rows


def ldmatrix_wavefronts(shared, shape, element_bytes: int = 2) -> LdmatrixAccess:
    """Wavefronts of reading a tile of ``shape`` stored in ``shared`` with ``ldmatrix``, predicted on the CPU.

    Shared memory serves the 8 row addresses of one matrix together (8 rows × 16 bytes = 128 bytes, one
    wavefront if they reach 32 different banks): the same rule as a 16-byte ld.shared, which serves 8 lanes at a
    time (``wavefronts(addresses, 16)``). A matrix whose 8 rows start in the same bank takes 8 wavefronts."""
    per_matrix, worst, total = {}, (None, 0), 0
    rows = ldmatrix_rows(shared, shape, element_bytes)
    for corner, addresses in rows.items():
        needed = wavefronts(addresses, LDMATRIX_ROW_BYTES)
        per_matrix[needed] = per_matrix.get(needed, 0) + 1
        total += needed
        if needed > worst[1]:
            worst = (corner, needed)
    return LdmatrixAccess(len(rows), total, per_matrix, worst[0])


# -- read off a compiled kernel (PTX) -------------------------------------------------------------
# A tiny interpreter for the integer instructions Triton emits in front of st.shared / ld.shared (mov, add,
# shl, and, or, xor, bfe, ...), evaluated for every thread of the block. An address it cannot evaluate (it
# depends on a kernel argument or on an instruction it does not know) is reported as not analysed, never guessed.

MASK = 0xFFFFFFFF


def _signed(v: int) -> int:
    v &= MASK
    return v - (1 << 32) if v & 0x80000000 else v


def _bfe_s(a, p, n):
    v = (a >> p) & ((1 << n) - 1)
    return v - (1 << n) if n and (v >> (n - 1)) & 1 else v


_BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "shl": lambda a, b: a << b,
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
}
_SPECIAL = {
    "mul.lo": lambda a, b: a * b,
    "mad.lo": lambda a, b, c: a * b + c,
    "shr.u32": lambda a, b: a >> b,
    "shr.s32": lambda a, b: _signed(a) >> b,
    "shr.b32": lambda a, b: a >> b,
    "bfe.u32": lambda a, p, n: (a >> p) & ((1 << n) - 1),
    "bfe.s32": _bfe_s,
    "div.s32": lambda a, b: int(_signed(a) / _signed(b)) if _signed(b) else 0,
    "div.u32": lambda a, b: a // b if b else 0,
    "rem.s32": lambda a, b: _signed(a) - int(_signed(a) / _signed(b)) * _signed(b) if _signed(b) else 0,
    "rem.u32": lambda a, b: a % b if b else 0,
    "not.b32": lambda a: ~a,
}
_SHARED = re.compile(r"(st|ld)\.shared((?:\.v\d)?)\.[bsuf](\d+)$")
_ADDRESS = re.compile(r"\[(%r\d+|global_smem)(?:\+(-?\d+))?\]")
_LDMATRIX_X4 = re.compile(r"ldmatrix\.sync\.aligned\.m8n8\.x4(\.trans)?\.shared(::cta)?\.b16$")


@dataclass(frozen=True)
class SharedInstruction:
    kind: str                         # "st" or "ld"
    width: int                        # bytes per thread: 4, 8 or 16
    addresses: list[int] | None       # one byte address per thread of the block (None: not analysed)
    text: str                         # the PTX instruction

    def extra_wavefronts(self) -> int | None:
        """The worst warp's wavefronts beyond the minimum (0: conflict-free)."""
        if self.addresses is None:
            return None
        return max(extra_wavefronts(self.addresses[w:w + WARP], self.width)
                   for w in range(0, len(self.addresses), WARP))


def shared_accesses(ptx: str, threads: int, ldmatrix: bool = False) -> list[SharedInstruction]:
    """Every ``st.shared`` / ``ld.shared`` of a one-dimensional block of ``threads`` threads, with the address
    each thread uses (program 0; the shared buffer starts at 0). Branches are not followed: the code is read
    straight through, which is what Triton emits for a layout conversion.

    With ``ldmatrix=True``, ``ldmatrix ... .x4`` instructions are evaluated too (kind ``"ldmatrix"``, width 16:
    each lane gives the address of one 16-byte row); otherwise they are recorded, not analysed."""
    regs: dict[str, list[int] | None] = {}

    def value(token: str):
        token = token.strip()
        if token == "%tid.x":
            return list(range(threads))
        if token in ("%ctaid.x", "%ctaid.y", "%ctaid.z", "%tid.y", "%tid.z", "global_smem"):
            return [0] * threads
        if token.startswith("%"):
            return regs.get(token)
        try:
            return [int(token, 0) & MASK] * threads
        except ValueError:
            return None

    found = []
    for raw in ptx.splitlines():
        line = raw.strip().rstrip(";").strip()
        if not line or line.startswith(("//", ".", "{", "}", "$")):
            continue
        line = re.sub(r"^@!?%p\d+\s+", "", line)
        op, _, rest = line.partition(" ")
        args = [a.strip() for a in rest.split(",")] if rest.strip() else []
        shared = _SHARED.match(op)
        if shared:
            kind, vector, bits = shared.group(1), shared.group(2), int(shared.group(3))
            width = (int(vector[2:]) if vector else 1) * bits // 8
            address = _ADDRESS.search(args[0] if kind == "st" else args[-1]) if args else None
            base = value(address.group(1)) if address else None
            offset = int(address.group(2) or 0) if address else 0
            found.append(SharedInstruction(kind, width, None if base is None else [(b + offset) & MASK for b in base],
                                      line))
            if kind == "ld":
                for r in re.findall(r"%r\d+", " ".join(args[:-1])):
                    regs[r] = None
            continue
        if ldmatrix and _LDMATRIX_X4.match(op) and args:
            address = _ADDRESS.search(args[-1])
            base = value(address.group(1)) if address else None
            offset = int(address.group(2) or 0) if address else 0
            found.append(SharedInstruction("ldmatrix", LDMATRIX_ROW_BYTES,
                                           None if base is None else [(b + offset) & MASK for b in base], line))
            for r in re.findall(r"%r\d+", " ".join(args[:-1])):
                regs[r] = None
            continue
        if ".shared" in op:   # ldmatrix, stmatrix, atomics...: recorded, not analysed
            found.append(SharedInstruction(op.split(".")[0], 0, None, line))
            continue
        if not args or not re.match(r"%r\d+$", args[0]):
            continue
        destination, sources = args[0], [value(a) for a in args[1:]]
        family = op.split(".")[0]
        fn = next((f for prefix, f in _SPECIAL.items() if op.startswith(prefix)), None)
        if fn is None and family in _BINARY and re.search(r"\.[bsu]32$", op):
            fn = _BINARY[family]
        if fn is None and family == "mov" and re.search(r"\.[bsu]32$", op):
            fn = lambda a: a   # noqa: E731
        if fn is None or any(s is None for s in sources) or len(sources) != fn.__code__.co_argcount:
            regs[destination] = None
            continue
        regs[destination] = [fn(*xs) & MASK for xs in zip(*sources)]
    return found


@dataclass(frozen=True)
class BankReport:
    stores: int                  # st.shared instructions
    loads: int                   # ld.shared instructions
    extra_store_wavefronts: int  # summed over the instructions (each: its worst warp)
    extra_load_wavefronts: int
    not_analysed: int            # shared-memory instructions whose addresses could not be evaluated

    def __str__(self) -> str:
        text = (f"{self.stores} st.shared with {self.extra_store_wavefronts} extra wavefronts, "
                f"{self.loads} ld.shared with {self.extra_load_wavefronts} extra wavefronts")
        return text + (f" ({self.not_analysed} shared-memory instructions not analysed)" if self.not_analysed else "")


def bank_report(compiled, num_warps: int) -> BankReport:
    """Bank conflicts of every plain shared-memory access of an NVIDIA kernel (from its PTX)."""
    if not compiled.is_nvidia:
        raise ValueError(f"{compiled.target}: bank_report reads PTX, which only NVIDIA targets have")
    accesses = shared_accesses(compiled.ptx, num_warps * WARP)
    analysed = [a for a in accesses if a.addresses is not None]
    return BankReport(stores=sum(a.kind == "st" for a in accesses), loads=sum(a.kind == "ld" for a in accesses),
                      extra_store_wavefronts=sum(a.extra_wavefronts() for a in analysed if a.kind == "st"),
                      extra_load_wavefronts=sum(a.extra_wavefronts() for a in analysed if a.kind == "ld"),
                      not_analysed=len(accesses) - len(analysed))


def plain_tile_conflicts(layout, shape, width: int = 4) -> int:
    """Worst extra wavefronts of one warp-wide 4-byte access when a tile held in ``layout`` is written to (or
    read from) shared memory as a plain row-major array, without any swizzle: word = row * columns + column."""
    linear = to_linear(layout, shape)
    columns = int(shape[-1])
    worst = 0
    for warp in range(1 << len(linear.warp_bases)):
        for register in range(1 << len(linear.reg_bases)):
            addresses = []
            for lane in range(1 << len(linear.lane_bases)):
                row, column = coordinate(linear, register, lane, warp)
                addresses.append((row * columns + column) * 4)
            worst = max(worst, extra_wavefronts(addresses, width))
    return worst


@dataclass(frozen=True)
class LdmatrixReport:
    """The ``ldmatrix .x4`` instructions of a compiled kernel, read off its PTX: wavefronts per instruction as
    Nsight Compute counts them (every warp of the block, one pass through the code)."""
    instructions: int                 # warp-wide ldmatrix instructions, all warps of the block
    wavefronts: int
    by_form: dict                     # "ldmatrix" / "ldmatrix.trans" → (instructions, wavefronts)
    not_analysed: int                 # ldmatrix whose addresses could not be evaluated

    @property
    def wavefronts_per_instruction(self) -> float:
        return self.wavefronts / self.instructions if self.instructions else float("nan")

    def per_instruction(self, form: str) -> float:
        n, w = self.by_form.get(form, (0, 0))
        return w / n if n else float("nan")

    def __str__(self) -> str:
        parts = ", ".join(f"{n} × {form} at {w / n:g} wavefronts" for form, (n, w) in sorted(self.by_form.items()))
        return (f"{parts}: {self.wavefronts_per_instruction:g} wavefronts per ldmatrix"
                + (f" ({self.not_analysed} not analysed)" if self.not_analysed else ""))


def ldmatrix_report(compiled, num_warps: int) -> LdmatrixReport:
    """What the compiled kernel's ``ldmatrix`` instructions cost: each warp's 32 row addresses, served 8 at a time
    (``wavefronts(addresses, 16)``). Exact where ``ldmatrix_wavefronts`` is a model: Triton may group a tile's
    rows into matrices in another order than 8 consecutive rows (for ``.trans``) when that costs fewer
    wavefronts, and repack the registers with PRMT afterwards."""
    if not compiled.is_nvidia:
        raise ValueError(f"{compiled.target}: ldmatrix is an NVIDIA instruction")
    by_form, missing = {}, 0
    for access in shared_accesses(compiled.ptx, num_warps * WARP, ldmatrix=True):
        if access.kind != "ldmatrix":
            continue
        if access.addresses is None:
            missing += 1
            continue
        form = "ldmatrix.trans" if ".trans" in access.text else "ldmatrix"
        n, w = by_form.get(form, (0, 0))
        for warp in range(num_warps):
            w += wavefronts(access.addresses[warp * WARP:(warp + 1) * WARP], LDMATRIX_ROW_BYTES)
        by_form[form] = (n + num_warps, w)
    return LdmatrixReport(sum(n for n, _ in by_form.values()), sum(w for _, w in by_form.values()), by_form, missing)
