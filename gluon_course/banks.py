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
  that Nsight Compute reports (wavefronts per instruction) and explains *which* lanes collide.

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
from dataclasses import dataclass

from triton.experimental.gluon.language._layouts import DistributedLayout, SharedLayout

from .layouts import _xor, coordinate, to_linear

BANKS = 32
BANK_BYTES = 4
WAVEFRONT_BYTES = BANKS * BANK_BYTES     # 128 bytes served per cycle
MAX_VECTOR_BYTES = 16                    # the widest ld.shared / st.shared


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
    for offset in range(1 << len(bases)):
        element = _xor([b for k, b in enumerate(bases) if offset >> k & 1], rank)
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


def _vector(linear, offsets, element_bytes: int) -> list[int]:
    """Register bits that form one vector access: registers whose elements sit at offsets 1, 2, 4, ... from
    register 0's in shared memory (in any order of register bits, as the compiler is free to pick), up to 16
    bytes."""
    by_offset = {}
    for k, basis in enumerate(linear.reg_bases):
        off = offsets.get(tuple(basis))
        if off is not None and off & (off - 1) == 0 and off:
            by_offset.setdefault(off, k)
    bits, width = [], 1
    while width in by_offset and 2 * width * element_bytes <= MAX_VECTOR_BYTES:
        # Every other basis (lanes, warps, the remaining registers) must start a vector on a multiple of its
        # width: a swizzle that XORs a lane's row into the low offset bits scatters the vector's elements.
        chosen = set(bits) | {by_offset[width]}
        others = [b for k, b in enumerate(linear.reg_bases) if k not in chosen]
        others += list(linear.lane_bases) + list(linear.warp_bases)
        if any(offsets[tuple(b)] & (2 * width - 1) for b in others if any(b)):
            break
        bits.append(by_offset[width])
        width *= 2
    return bits


def shared_access(distributed, shared, shape, element_bytes: int = 4, warp_size: int = 32) -> SharedAccess:
    """Simulate the wavefronts of moving a tensor of ``shape`` held in ``distributed`` to/from ``shared``.

    Model (NVIDIA): each warp-wide instruction moves ``vector`` consecutive elements per lane; its lanes are
    served in groups that move 128 bytes (all 32 lanes for 4-byte accesses, 8 lanes for 16-byte ones); a group
    needs as many wavefronts as the largest number of *different* 4-byte words it touches in any one bank.
    Registers that hold the same element twice (broadcast) are read or written once."""
    linear = to_linear(distributed, shape)
    offsets = shared_offsets(shared, shape)
    vector_bits = _vector(linear, offsets, element_bytes)
    # Registers that hold a copy of another register's element (zero bases) need no instruction of their own.
    instruction_bits = [k for k, b in enumerate(linear.reg_bases) if k not in vector_bits and any(b)]
    vector = 1 << len(vector_bits)
    lanes_per_group = max(1, min(warp_size, WAVEFRONT_BYTES // (vector * element_bytes)))
    total_instructions = total_wavefronts = 0
    worst = (0, 0)
    for warp in range(1 << len(linear.warp_bases)):
        for n in range(1 << len(instruction_bits)):
            register = sum(1 << bit for i, bit in enumerate(instruction_bits) if n >> i & 1)
            wavefronts = 0
            for first in range(0, 1 << len(linear.lane_bases), lanes_per_group):
                words_in_bank: dict[int, set] = {}
                for lane in range(first, first + lanes_per_group):
                    for v in range(vector):
                        held = register | sum(1 << bit for i, bit in enumerate(vector_bits) if v >> i & 1)
                        byte = offsets[coordinate(linear, held, lane, warp)] * element_bytes
                        for word in range(byte // BANK_BYTES, (byte + element_bytes - 1) // BANK_BYTES + 1):
                            words_in_bank.setdefault(word % BANKS, set()).add(word)
                wavefronts += max(len(w) for w in words_in_bank.values())
            total_instructions += 1
            total_wavefronts += wavefronts
            if warp == 0 and wavefronts > worst[1]:
                worst = (n, wavefronts)
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
