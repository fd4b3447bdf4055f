"""Shared-memory bank conflicts, read off a compiled kernel without a GPU.

Shared memory is split into 32 banks of 4-byte words; a warp's access is served in one pass (a *wavefront*)
when no two of its lanes touch different words of the same bank. Lanes that touch the *same* word share it
(a broadcast). Wider accesses are served in phases: 8-byte accesses by half-warps, 16-byte ones by
quarter-warps, each phase conflict-free on its own if no bank is asked for two different words.

Triton picks the shared-memory layout of a ``convert_layout`` while lowering to LLVM, so it never shows in the
``.ttgir``; it shows in the PTX, as the address arithmetic in front of every ``st.shared`` / ``ld.shared``. This
module evaluates that arithmetic for every thread of the block (a tiny interpreter for the integer
instructions Triton emits: ``mov``, ``add``, ``shl``, ``and``, ``or``, ``xor``, ``bfe``, ...), then counts the
extra wavefronts of each access. An address it cannot evaluate (it depends on a kernel argument or on an
instruction it does not know) is reported as not analysed, never guessed.

It also answers the question the compiler answered for us: what would a plain, unswizzled tile cost?
``plain_tile_conflicts(layout, shape)`` counts the conflicts of reading or writing a row-major tile in shared
memory with a given register layout.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MASK = 0xFFFFFFFF
BANKS = 32
WARP = 32


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


@dataclass(frozen=True)
class SharedAccess:
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


def extra_wavefronts(addresses: list[int], width: int = 4) -> int:
    """Wavefronts beyond the minimum for one warp's access of ``width`` bytes per lane at these byte addresses."""
    lanes_per_phase = WARP if width <= 4 else max(1, 128 // width)
    extra = 0
    for start in range(0, len(addresses), lanes_per_phase):
        words_by_bank: dict[int, set[int]] = {}
        for a in addresses[start:start + lanes_per_phase]:
            for word in range(a // 4, (a + width + 3) // 4):
                words_by_bank.setdefault(word % BANKS, set()).add(word)
        extra += max(len(words) for words in words_by_bank.values()) - 1
    return extra


def shared_accesses(ptx: str, threads: int) -> list[SharedAccess]:
    """Every ``st.shared`` / ``ld.shared`` of a one-dimensional block of ``threads`` threads, with the address
    each thread uses (program 0; the shared buffer starts at 0). Branches are not followed: the code is read
    straight through, which is what Triton emits for a layout conversion."""
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
            found.append(SharedAccess(kind, width, None if base is None else [(b + offset) & MASK for b in base],
                                      line))
            if kind == "ld":
                for r in re.findall(r"%r\d+", " ".join(args[:-1])):
                    regs[r] = None
            continue
        if ".shared" in op:   # ldmatrix, stmatrix, atomics...: recorded, not analysed
            found.append(SharedAccess(op.split(".")[0], 0, None, line))
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
    from .layouts import coordinate, to_linear

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
