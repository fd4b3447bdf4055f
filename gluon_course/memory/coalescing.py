"""How one warp-wide instruction meets memory: which registers form one vector access, which addresses the
lanes ask for, and how many 32-byte sectors that touches. The one coalescing model of the course.

A layout (as a linear layout: bases for the register, lane and warp bits) says which element each register
of each lane holds; an *offset function* says where an element sits: ``strides`` for a tensor in global
memory, a shared-memory layout's offsets for a tile in shared memory (``banks`` uses the same vector rule).

- ``vector_bits``: the register bits one instruction moves together (consecutive offsets, aligned);
- ``lane_addresses`` / ``sectors_touched``: what one instruction asks of memory, lane by lane;
- ``sectors_per_request``: the average over every instruction of a warp (what Nsight Compute calls
  sectors per request, ``l1tex__t_sectors / l1tex__t_requests``);
- ``warp_access``: bytes per lane, sectors, and the share of fetched bytes that the instruction uses.
"""
from __future__ import annotations

from dataclasses import dataclass

from .layouts import coordinate, to_linear

SECTOR_BYTES = 32
MAX_VECTOR_BYTES = 16     # the widest load/store Triton emits on sm_90 and CDNA (see lesson 02)


def vector_bits(linear, offset_of, element_bytes: int, max_vector_bytes: int = MAX_VECTOR_BYTES,
                any_register_order: bool = False) -> list[int]:
    """The register bits that one instruction moves together: registers whose elements sit at offsets 1, 2,
    4, ... (in elements) from register 0's, up to ``max_vector_bytes``.

    ``offset_of(basis)`` gives the offset of a basis vector's element. For global memory the register bits
    must come in order (register bit k at offset 2**k): that is what Triton's lowering vectorises. For
    shared memory Triton may pick the register bits in any order (``any_register_order=True``). Every other
    basis (lanes, warps, the remaining registers) must start a vector on a multiple of its width, or a
    swizzle/stride would scatter the vector's elements."""
    by_offset: dict[int, int] = {}
    for k, basis in enumerate(linear.reg_bases):
        off = offset_of(tuple(basis))
        if off and off & (off - 1) == 0:
            by_offset.setdefault(off, k)
    bits, width = [], 1
    while width in by_offset and 2 * width * element_bytes <= max_vector_bytes:
        bit = by_offset[width]
        if not any_register_order and bit != len(bits):
            break
        chosen = set(bits) | {bit}
        others = [b for k, b in enumerate(linear.reg_bases) if k not in chosen]
        others += list(linear.lane_bases) + list(linear.warp_bases)
        if any(offset_of(tuple(b)) & (2 * width - 1) for b in others if any(b)):
            break
        bits.append(bit)
        width *= 2
    return bits


def _strided(strides):
    return lambda basis: sum(b * s for b, s in zip(basis, strides))


def global_vector_width(layout, shape, strides, element_bytes: int = 4,
                        max_vector_bytes: int = MAX_VECTOR_BYTES) -> int:
    """Elements one lane moves per global load/store instruction (``max_vector_bytes=4`` models a kernel
    whose sizes the compiler cannot prove aligned: scalar accesses)."""
    linear = to_linear(layout, shape)
    return 1 << len(vector_bits(linear, _strided(strides), element_bytes, max_vector_bytes))


def lane_addresses(layout, shape, strides, element_bytes: int = 4, register: int = 0, warp: int = 0,
                   lanes: int | None = None) -> list[tuple[int, tuple[int, ...], int]]:
    """What one instruction asks for: ``(lane, element, byte offset)`` for every lane of ``warp`` and its
    ``register``, for a tensor with ``strides`` (in elements) whose first element sits at byte 0."""
    linear = to_linear(layout, shape)
    count = 1 << len(linear.lane_bases) if lanes is None else lanes
    rows = []
    for lane in range(count):
        element = coordinate(linear, register, lane, warp)
        rows.append((lane, element, sum(c * s for c, s in zip(element, strides)) * element_bytes))
    return rows


def sectors_touched(addresses, element_bytes: int = 4, sector_bytes: int = SECTOR_BYTES) -> int:
    """How many distinct 32-byte sectors a list of byte offsets (each ``element_bytes`` long) falls into."""
    return len({a // sector_bytes for a in addresses} | {(a + element_bytes - 1) // sector_bytes for a in addresses})


def sectors_per_request(layout, shape, strides, element_bytes: int = 4, sector_bytes: int = SECTOR_BYTES,
                        max_vector_bytes: int = MAX_VECTOR_BYTES) -> float:
    """How many 32-byte sectors one warp-wide load touches, on average, for a tensor with ``strides``.

    With ``sector_bytes=128`` the same count is in 128-byte cache lines. A coalesced load of 4-byte
    elements touches 4 sectors per 32 lanes (128 contiguous bytes); a lane-per-row pattern on a transposed
    tensor touches 32. Registers that only repeat elements another instruction already loaded (a layout
    wider than the tensor) are not counted twice."""
    linear = to_linear(layout, shape)
    vector = 1 << len(vector_bits(linear, _strided(strides), element_bytes, max_vector_bytes))
    requests = sectors = 0
    seen = set()
    for w in range(1 << len(linear.warp_bases)):
        for first in range(0, 1 << len(linear.reg_bases), vector):
            touched, fresh = set(), False
            for t in range(1 << len(linear.lane_bases)):
                for r in range(first, first + vector):
                    c = coordinate(linear, r, t, w)
                    touched.add(sum(ci * si for ci, si in zip(c, strides)) * element_bytes // sector_bytes)
                    if (c, w) not in seen:
                        fresh = True
                        seen.add((c, w))
            if fresh:
                requests += 1
                sectors += len(touched)
    return sectors / requests


@dataclass(frozen=True)
class WarpAccess:
    bytes_per_lane: int     # one vector: 4, 8 or 16 bytes
    sectors: int            # 32-byte sectors one instruction of warp 0 touches
    efficiency: float       # bytes the instruction uses / bytes in the sectors it fetches

    def __str__(self) -> str:
        return (f"{self.bytes_per_lane} bytes per lane, {self.sectors} sectors, "
                f"{100 * self.efficiency:.0f}% of the fetched bytes used")


def warp_access(layout, shape, strides, element_bytes: int = 4) -> WarpAccess:
    """The first instruction of warp 0 for ``layout`` on a tensor with ``strides``."""
    linear = to_linear(layout, shape)
    vector = 1 << len(vector_bits(linear, _strided(strides), element_bytes))
    addresses = [a for r in range(vector)
                 for _, _, a in lane_addresses(layout, shape, strides, element_bytes, register=r)]
    sectors = len({a // SECTOR_BYTES for a in addresses})
    used = (1 << len(linear.lane_bases)) * vector * element_bytes
    return WarpAccess(vector * element_bytes, sectors, used / (SECTOR_BYTES * sectors))
