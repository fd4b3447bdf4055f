"""AMD's LDS (local data share, the shared memory of a CU): bank conflicts of ``ds_read``, predicted on a CPU.

The course's bank model (``memory.banks``) is NVIDIA's: 32 banks of 4 bytes, a warp served 128 bytes at a time.
AMD's LDS has its own geometry, per target:

* **gfx950** (CDNA4: MI350X, MI355X): 64 banks of 4 bytes, 256 bytes per clock; the byte at address ``a`` lives in
  bank ``(a // 4) % 64``. A ``ds_read_b128`` (16 bytes per lane) is served in 4 *phases* of 16 lanes:
  lanes 0-3, 12-15, 20-23, 24-27; then 32-35, 44-47, 52-55, 56-59; then 4-7, 8-11, 16-19, 28-31; then 36-39,
  40-43, 48-51, 60-63. ``ds_read_b64`` in 2 phases of 32 lanes, ``ds_read_b32`` in one.
* **gfx942** (CDNA3: MI300X): 32 banks of 4 bytes, bank ``(a // 4) % 32``; a ``ds_read_b128`` is served in 8
  phases of 8 lanes (0-3 with 20-23, 4-7 with 16-19, 8-11 with 28-31, 12-15 with 24-27, and the same pattern
  for lanes 32-63), ``ds_read_b64`` in 4 phases of 16 lanes, ``ds_read_b32`` in 2 of 32.

Within a phase, lanes that ask one bank for *different* 4-byte words are served one after the other (lanes asking
for the same word share it). A phase therefore takes as many LDS cycles as the most different words any one bank
is asked for: 1 without conflicts, 4 for a "4-way" conflict. That is the whole model (``ds_read``).

Sources (each geometry says where it comes from, ``LdsBanks.source``): AMD's gfx950 Gluon tutorials
(ROCm/gfx950-gluon-tutorials, ``docs/lds_throughput.md``: 64 banks of 4 bytes, 256 B per clock, a conflict-free
``ds_read_b128`` every 16 cycles with all four SIMDs issuing); the AMDGPU kernel optimization guide of AMD's
SHARK/IREE compiler team (nod-ai/amd-shark-ai, ``docs/amdgpu_kernel_optimization_guide.md``, sections *MI355X* and
*Avoiding LDS Bank Conflicts*: bank formulas and the phase groups above; it calls itself "not an official AMDGPU
architecture guide", and says its gfx950 phases were found empirically); the ROCm blog "Avoiding LDS Bank Conflicts
on AMD GPUs Using CK-Tile" (2025-07-25: 32 banks and the ``ds_read_b128`` / ``ds_write_b128`` lane groups of the
MI300 series, the same groups as the guide's).

A *padded* layout (``PaddedSharedLayout``) has no linear layout of its own (Triton's ``to_linear_layout`` stops the
process on one), so its offsets are computed here from its ``offset_bases`` and its interval/padding pairs.
"""
from __future__ import annotations

from dataclasses import dataclass

from triton.experimental.gluon import language as gl

from .layouts import coordinate, to_linear, xor_table

TUTORIALS = ("AMD's gfx950 Gluon tutorials (ROCm/gfx950-gluon-tutorials, docs/lds_throughput.md: 64 banks of "
             "4 bytes, 256 bytes per clock)")
SHARK_GUIDE = ("the AMDGPU kernel optimization guide of AMD's SHARK/IREE team (nod-ai/amd-shark-ai, "
               "docs/amdgpu_kernel_optimization_guide.md, 'Avoiding LDS Bank Conflicts'; by its own words not an "
               "official architecture guide, its gfx950 phases found empirically)")
ROCM_BLOG = ("ROCm blog 'Avoiding LDS Bank Conflicts on AMD GPUs Using CK-Tile' (2025-07-25): 32 banks of 4 bytes "
             "and the ds_read_b128 lane groups of the MI300 series")


def _groups(*runs: tuple[int, int]) -> tuple[int, ...]:
    return tuple(lane for start, stop in runs for lane in range(start, stop + 1))


@dataclass(frozen=True)
class LdsBanks:
    """The LDS geometry of one target: banks, bank width, and the lanes served together (per phase) for each
    ``ds_read`` width (bytes per lane)."""
    target: str
    banks: int
    bank_bytes: int
    read_phases: dict           # bytes per lane → tuple of lane groups, one group per phase
    source: str

    def bank(self, address: int) -> int:
        return (address // self.bank_bytes) % self.banks


GFX950 = LdsBanks(
    "gfx950", 64, 4,
    {16: (_groups((0, 3), (12, 15), (20, 23), (24, 27)), _groups((32, 35), (44, 47), (52, 55), (56, 59)),
          _groups((4, 7), (8, 11), (16, 19), (28, 31)), _groups((36, 39), (40, 43), (48, 51), (60, 63))),
     8: (_groups((0, 31)), _groups((32, 63))),
     4: (_groups((0, 63)),)},
    f"{TUTORIALS}; phases from {SHARK_GUIDE}")
GFX942 = LdsBanks(
    "gfx942", 32, 4,
    {16: (_groups((0, 3), (20, 23)), _groups((4, 7), (16, 19)), _groups((8, 11), (28, 31)),
          _groups((12, 15), (24, 27)), _groups((32, 35), (52, 55)), _groups((36, 39), (48, 51)),
          _groups((40, 43), (60, 63)), _groups((44, 47), (56, 59))),
     8: (_groups((0, 15)), _groups((16, 31)), _groups((32, 47)), _groups((48, 63))),
     4: (_groups((0, 31)), _groups((32, 63)))},
    f"{ROCM_BLOG}; ds_read_b64 and ds_read_b32 phases from {SHARK_GUIDE}")
LDS = {"gfx950": GFX950, "gfx942": GFX942}


def lds_banks(target: str) -> LdsBanks:
    if target not in LDS:
        raise ValueError(f"no LDS bank model for {target!r}; the course models {', '.join(LDS)}")
    return LDS[target]


# -- where each element lives ------------------------------------------------------------------------------------

def padded_offset(layout: gl.PaddedSharedLayout, offset: int) -> int:
    """The element offset of linear offset ``offset`` once the padding is inserted: after every ``interval``
    elements, ``padding`` more (summed over the pairs)."""
    return offset + sum((offset // interval) * padding for interval, padding in layout.interval_padding_pairs)


def element_offsets(shared, shape) -> dict[tuple[int, ...], int]:
    """Element → offset in elements (padding included) of a shared layout on a tile of ``shape``."""
    import numpy as np

    padded = isinstance(shared, gl.PaddedSharedLayout)
    bases = shared.offset_bases if padded else to_linear(shared, shape).offset_bases
    elements = xor_table(bases, len(shape))
    offsets = np.arange(len(elements), dtype=np.int64)
    if padded:                          # padded_offset, for every offset at once
        offsets = offsets + sum((offsets // interval) * padding for interval, padding in shared.interval_padding_pairs)
    table: dict[tuple[int, ...], int] = {}
    for element, offset in zip(elements, offsets.tolist()):
        table.setdefault(element, offset)
    return table


def allocated_elements(shared, shape) -> int:
    """Elements one tile takes in LDS: its last offset + 1 (padding after the last interval is not allocated)."""
    return max(element_offsets(shared, shape).values()) + 1


# -- ds_read -------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LdsRead:
    """Every ``ds_read`` that moves a tile from LDS into a distributed layout, and the LDS cycles they cost."""
    target: str
    vector_bytes: int           # bytes per lane per instruction (16: ds_read_b128)
    instructions: int           # per wave
    phases: int                 # phases per instruction (the ideal cycles)
    cycles: int                 # LDS cycles of all instructions of one wave
    worst_ways: int             # the most different words one bank is asked for in one phase (1: no conflict)
    worst: tuple                # (instruction, phase, bank) of the first worst case

    @property
    def instruction_name(self) -> str:
        return f"ds_read_b{8 * self.vector_bytes}"

    @property
    def cycles_per_instruction(self) -> float:
        return self.cycles / self.instructions

    @property
    def ways(self) -> float:
        """LDS cycles over the conflict-free cycles: 1.0 without conflicts, 4.0 when every phase is 4-way."""
        return self.cycles / (self.instructions * self.phases)

    @property
    def conflict_free(self) -> bool:
        return self.worst_ways == 1

    def __str__(self) -> str:
        return (f"{self.instructions} × {self.instruction_name} per wave, {self.cycles_per_instruction:g} LDS cycles "
                f"each (conflict-free: {self.phases}): {self.ways:g}-way")


def _vector_registers(linear, offsets, element_bytes: int, widest: int = 16) -> int:
    """How many leading registers of a lane hold elements at consecutive offsets (one vector read)."""
    n = 0
    while (1 << n) * element_bytes < widest and n < len(linear.reg_bases):
        if offsets[tuple(linear.reg_bases[n])] != (1 << n):
            break
        n += 1
    return n


def ds_reads(distributed, shared, shape, element_bytes: int = 2, target: str = "gfx950", warp: int = 0) -> LdsRead:
    """The ``ds_read`` instructions of one wave (``warp``) that load a tile of ``shape`` stored in ``shared`` into
    ``distributed`` (an MFMA operand's ``DotOperandLayout``), and their LDS cycles on ``target``.

    Each lane reads its consecutive elements in vectors of up to 16 bytes (``ds_read_b128``); each instruction's
    lanes are served phase by phase (``LdsBanks.read_phases``), and a phase costs as many cycles as the most
    different 4-byte words any bank is asked for."""
    geometry = lds_banks(target)
    linear = to_linear(distributed, shape)
    offsets = element_offsets(shared, shape)
    vector = _vector_registers(linear, offsets, element_bytes)
    vector_bytes = (1 << vector) * element_bytes
    if vector_bytes not in geometry.read_phases:
        raise ValueError(f"{vector_bytes}-byte reads per lane: the model knows ds_read of "
                         f"{sorted(geometry.read_phases)} bytes on {target}")
    phases = geometry.read_phases[vector_bytes]
    # Registers that repeat another register's element (zero bases) are not read again.
    others = [k for k in range(vector, len(linear.reg_bases)) if any(linear.reg_bases[k])]
    lanes = 1 << len(linear.lane_bases)
    cycles, worst = 0, (0, 0, 0, 0)
    for n in range(1 << len(others)):
        register = sum(1 << bit for i, bit in enumerate(others) if n >> i & 1)
        addresses = [offsets[coordinate(linear, register, lane, warp)] * element_bytes for lane in range(lanes)]
        for p, group in enumerate(phases):
            words_in_bank: dict[int, set[int]] = {}
            for lane in group:
                first = addresses[lane] // geometry.bank_bytes
                for word in range(first, first + max(1, vector_bytes // geometry.bank_bytes)):
                    words_in_bank.setdefault(word % geometry.banks, set()).add(word)
            bank, words = max(words_in_bank.items(), key=lambda item: (len(item[1]), -item[0]))
            cycles += len(words)
            if len(words) > worst[0]:
                worst = (len(words), n, p, bank)
    return LdsRead(target, vector_bytes, 1 << len(others), len(phases), cycles, worst[0], worst[1:])


def bank_rows(distributed, shared, shape, element_bytes: int = 2, target: str = "gfx950", instruction: int = 0,
              phase: int = 0) -> list[tuple]:
    """One phase of one ds_read, lane by lane: (lane, element, byte address, first bank) — to read a conflict."""
    geometry = lds_banks(target)
    linear = to_linear(distributed, shape)
    offsets = element_offsets(shared, shape)
    vector = _vector_registers(linear, offsets, element_bytes)
    others = [k for k in range(vector, len(linear.reg_bases)) if any(linear.reg_bases[k])]
    register = sum(1 << bit for i, bit in enumerate(others) if instruction >> i & 1)
    vector_bytes = (1 << vector) * element_bytes
    rows = []
    for lane in geometry.read_phases[vector_bytes][phase]:
        element = coordinate(linear, register, lane, 0)
        address = offsets[element] * element_bytes
        rows.append((lane, element, address, geometry.bank(address)))
    return rows


# -- the copy layout a layout implies ------------------------------------------------------------------------------

def direct_copy_layout(shared, shape, vector: int, warp_size: int = 64, num_warps: int = 4) -> gl.DistributedLinearLayout:
    """The distributed layout in which a direct-to-LDS copy (``buffer_load_to_shared``) writes ``shared`` one whole
    run at a time: each lane's ``vector`` elements are the next offsets, a wave's lanes the run after them, the
    waves after that, and the registers beyond the first vector last. Every wave's instruction then writes
    ``warp_size × vector`` consecutive elements of the layout, as the hardware's one LDS address per wave requires.

    Works for any shared layout whose offsets are linear (``PaddedSharedLayout``, and unswizzled layouts), read from
    their offset bases: lesson 23's exercise, kept here for the lessons after it."""
    if isinstance(shared, gl.PaddedSharedLayout):
        bases = [list(b) for b in shared.offset_bases]
    else:
        bases = [list(b) for b in to_linear(shared, shape).offset_bases]
    bits = {name: value.bit_length() - 1 for name, value in
            (("vector", vector), ("lanes", warp_size), ("warps", num_warps))}
    for name, value in (("vector", vector), ("warp_size", warp_size), ("num_warps", num_warps)):
        if value < 1 or value & (value - 1):
            raise ValueError(f"{name}={value} must be a power of two")
    v, lanes, warps = bits["vector"], bits["lanes"], bits["warps"]
    if v + lanes + warps > len(bases):
        raise ValueError(f"a {shape} tile has {1 << len(bases)} elements, fewer than one pass of {num_warps} waves × "
                         f"{warp_size} lanes × {vector}")
    return gl.DistributedLinearLayout(reg_bases=bases[:v] + bases[v + lanes + warps:], lane_bases=bases[v:v + lanes],
                                      warp_bases=bases[v + lanes:v + lanes + warps], block_bases=[], shape=list(shape))
