"""Triton 3.9.0's warp-specialize dispatch in the sm_90 listing, and minimal kernels that have it without a lesson's code.

``gl.warp_specialize`` is lowered (ConvertWarpSpecializeToLLVM) to a loop for the worker warps: each waits at the
CTA-wide named barrier 1 (``barrier.sync 1``, ``BAR.SYNC.DEFER_BLOCKING 0x1``), reads one byte, its state, from a word
of shared memory that the default warps wrote before that barrier (``LDS.U8``), and jumps to its partition, to an idle
block, or to the exit. The default warps write the word twice: the partitions' states before the fork, and "exit" at
the kernel's return, then pass barrier 1 and leave (``STS`` / ``BAR.SYNC 0x1`` / ``EXIT``). All of it carries the
kernel's ``def`` line, which is where racecheck places the hazard it reports on lessons 18 and 19.

- ``dispatch(k)`` finds those instructions in a compiled kernel: the state word's offset, the mbarriers' offsets, the
  two stores, the workers' byte load, and the barriers around them; ``excerpt(k)`` prints them.
- ``KERNELS``: minimal warp-specialized kernels, each adding one thing the lesson kernels have: ``plain`` (4 warps
  and a 1-warp worker), ``regs`` (lesson 18's warps: 8 + 1 with ``worker_num_regs``, so setmaxnreg and two padding
  partitions), ``mbarriers`` (and 8 mbarriers allocated, used and retired around the fork, so the word sits just past
  them), ``ring`` (and lesson 18's persistent TMA ring with ready/empty barriers, read by the default partition
  without wgmma), ``two_workers`` (``mbarriers`` with a second worker partition).
- ``launch(name, launches)``: the child process of ``tools/probes/race-repro.sh`` (compute-sanitizer racecheck).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

STAGES = gl.constexpr(4)
TILE = gl.constexpr(64)         # the ring variant's tiles: 64 × 64 bf16 (8 KiB a slot)


# -- the minimal kernels ----------------------------------------------------------------------------------------------

@gluon.jit
def _mark(out_ptr, slot, WARPS: gl.constexpr):
    """Each thread of the calling partition writes 1 to its own word of row ``slot`` of ``out`` (global memory)."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [WARPS], [0])
    offs = gl.arange(0, 32 * WARPS, layout=layout)
    gl.store(out_ptr + (gl.program_id(0) * 4 + slot) * 512 + offs, gl.full([32 * WARPS], 1, gl.int32, layout))


@gluon.jit
def _default_mark(out_ptr, WARPS: gl.constexpr):
    _mark(out_ptr, 0, WARPS)


@gluon.jit
def _worker_mark(out_ptr):
    _mark(out_ptr, 1, 1)


@gluon.jit
def plain_kernel(out_ptr):
    gl.warp_specialize([(_default_mark, (out_ptr, 4)), (_worker_mark, (out_ptr,))], [1])


@gluon.jit
def regs_kernel(out_ptr):
    gl.warp_specialize([(_default_mark, (out_ptr, 8)), (_worker_mark, (out_ptr,))], [1], [40])


@gluon.jit
def _default_wait(out_ptr, bars):
    """The default partition waits for the worker's arrival on bars[0], then marks its row."""
    mbarrier.wait(bars.index(0), 0)
    _mark(out_ptr, 0, 8)


@gluon.jit
def _worker_arrive(out_ptr, bars, slot: gl.constexpr):
    _mark(out_ptr, slot, 1)
    mbarrier.arrive(bars.index(slot - 1))


@gluon.jit
def mbarriers_kernel(out_ptr):
    bars = gl.allocate_shared_memory(gl.int64, [2 * STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(2 * STAGES):
        mbarrier.init(bars.index(s), count=1)
    gl.warp_specialize([(_default_wait, (out_ptr, bars)), (_worker_arrive, (out_ptr, bars, 1))], [1], [40])
    for s in gl.static_range(2 * STAGES):
        mbarrier.invalidate(bars.index(s))


@gluon.jit
def _default_wait_two(out_ptr, bars):
    mbarrier.wait(bars.index(0), 0)
    mbarrier.wait(bars.index(1), 0)
    _mark(out_ptr, 0, 8)


@gluon.jit
def two_workers_kernel(out_ptr):
    bars = gl.allocate_shared_memory(gl.int64, [2 * STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(2 * STAGES):
        mbarrier.init(bars.index(s), count=1)
    gl.warp_specialize([(_default_wait_two, (out_ptr, bars)), (_worker_arrive, (out_ptr, bars, 1)),
                        (_worker_arrive, (out_ptr, bars, 2))], [1, 1], [40, 40])
    for s in gl.static_range(2 * STAGES):
        mbarrier.invalidate(bars.index(s))


@gluon.jit
def _ring_producer(x_desc, ring, ready, empty, tiles):
    """Lesson 18's producer without B: every tile of this program into the ring, one TMA box a slot."""
    step = 0
    for tile in range(gl.program_id(0), tiles, gl.num_programs(0)):
        slot = step % STAGES
        mbarrier.wait(empty.index(slot), ((step // STAGES) & 1) ^ 1)
        mbarrier.expect(ready.index(slot), x_desc.block_type.nbytes)
        tma.async_load(x_desc, [tile * TILE, 0], ready.index(slot), ring.index(slot))
        step += 1


@gluon.jit
def _ring_consumer(out_ptr, ring, ready, empty, tiles):
    """The default partition: each tile's first row out of its slot (plain shared-memory loads), then the release."""
    layout: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [8, 1], [1, 0])
    step = 0
    for tile in range(gl.program_id(0), tiles, gl.num_programs(0)):
        slot = step % STAGES
        mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
        x = ring.index(slot).load(layout)
        mbarrier.arrive(empty.index(slot))
        rows = gl.arange(0, TILE, layout=gl.SliceLayout(1, layout))
        cols = gl.arange(0, TILE, layout=gl.SliceLayout(0, layout))
        gl.store(out_ptr + (tile * TILE + rows[:, None]) * TILE + cols[None, :], x)
        step += 1


@gluon.jit
def ring_kernel(x_desc, out_ptr, tiles):
    ring = gl.allocate_shared_memory(x_desc.dtype, [STAGES, TILE, TILE], x_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([(_ring_consumer, (out_ptr, ring, ready, empty, tiles)),
                        (_ring_producer, (x_desc, ring, ready, empty, tiles))], [1], [40])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


# name: (kernel, num_warps, what it adds to the one before)
KERNELS = {
    "plain": (plain_kernel, 4, "4 default warps, a 1-warp worker, no worker_num_regs, no shared memory of its own"),
    "regs": (regs_kernel, 8, "lesson 18's warps: 8 default, a 1-warp worker with worker_num_regs=[40]"),
    "mbarriers": (mbarriers_kernel, 8, "and 8 mbarriers initialised, used and invalidated around the fork"),
    "ring": (ring_kernel, 8, "and lesson 18's persistent TMA ring (4 slots, ready/empty), read without wgmma"),
    "two_workers": (two_workers_kernel, 8, "the mbarriers kernel with a second 1-warp worker partition"),
}


def _ring_layout():
    return gl.NVMMASharedLayout.get_default_for([TILE, TILE], gl.bfloat16)


def compiled(name: str, target: str = "sm_90"):
    """The sm_90 compile of one minimal kernel, as ``launch`` runs it."""
    from ..machine import compile_cached, tensor_descriptor_type

    kernel, num_warps, _ = KERNELS[name]
    if name == "ring":
        signature = {"x_desc": tensor_descriptor_type("bf16", [TILE, TILE], _ring_layout()), "out_ptr": "*bf16",
                     "tiles": "i32"}
        return compile_cached(kernel, target, signature=signature, aligned=("out_ptr",), num_warps=num_warps)
    return compile_cached(kernel, target, signature={"out_ptr": "*i32"}, aligned=("out_ptr",), num_warps=num_warps)


def launch(name: str, launches: str = "20", programs: str = "8") -> None:
    """``launches`` launches of kernel ``name`` on ``programs`` programs (for compute-sanitizer: a child process)."""
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    kernel, num_warps, _ = KERNELS[name]
    grid = (int(programs),)
    for _ in range(int(launches)):
        if name == "ring":
            tiles = 3 * int(programs)                      # 3 tiles a program: the ring's phases carry across tiles
            x = torch.randn(tiles * TILE.value, TILE.value, device="cuda", dtype=torch.bfloat16)
            out = torch.empty_like(x)
            desc = TensorDescriptor.from_tensor(x, [TILE.value, TILE.value], _ring_layout())   # plain ints on the host
            kernel[grid](desc, out, tiles, num_warps=num_warps)
        else:
            out = torch.zeros(int(programs) * 4 * 512, device="cuda", dtype=torch.int32)
            kernel[grid](out, num_warps=num_warps)
    torch.cuda.synchronize()
    if name == "ring" and not torch.equal(out, x):
        raise SystemExit(f"{name}: the copied tiles differ from the input")


# -- reading the dispatch off the listing ----------------------------------------------------------------------------

BAR1 = "BAR.SYNC.DEFER_BLOCKING 0x1"
_IMM = re.compile(r"\+(0x[0-9a-f]+)\]")


@dataclass
class Dispatch:
    state_offset: int           # the state word's byte offset in shared memory
    barrier_offsets: list       # the mbarriers' offsets (SYNCS.EXCH.64: mbarrier.init), in order of address
    stores: list                # the STS of the state word: [(address, text)], the fork's first, the exit's last
    load: tuple                 # the workers' LDS.U8 of their state byte: (address, text)
    load_base: int              # its immediate: the state word's offset less the default partition's warps
    default_warps: int

    @property
    def past_barriers(self) -> int | None:
        """Bytes between the end of the last mbarrier and the state word (0: right after it); None: no mbarrier."""
        return self.state_offset - (max(self.barrier_offsets) + 8) if self.barrier_offsets else None


def _imm(text: str) -> int:
    m = _IMM.search(text)
    return int(m.group(1), 16) if m else 0


def dispatch(k, default_warps: int) -> Dispatch:
    """The warp-specialize dispatch's shared-memory accesses in ``k``'s SASS (see the module's docstring)."""
    ins = k.instructions()
    state_load = next(i for n, i in enumerate(ins) if i.opcode == "LDS.U8"
                      and any(BAR1 in j.text for j in ins[max(0, n - 4):n]))
    base = _imm(state_load.text)
    state = base + default_warps
    # STS or STS.64 (a kernel whose default partition writes the whole word of states at once, as lesson 33's does)
    stores = [(i.address, i.text) for i in ins if i.opcode.split(".")[0] == "STS" and _imm(i.text) == state]
    exch = sorted({_imm(i.text) for i in ins if i.opcode.startswith("SYNCS.EXCH")})
    return Dispatch(state, exch, stores, (state_load.address, state_load.text), base, default_warps)


def pcs(k, default_warps: int, name: str) -> set:
    """The dispatch's accesses of its state word in ``k`` (every store and the workers' load) as racecheck names an
    instruction: ``name+0xOFFSET``."""
    d = dispatch(k, default_warps)
    return {f"{name}+0x{address:x}" for address, _ in d.stores} | {f"{name}+0x{d.load[0]:x}"}


def excerpt(k, default_warps: int, before: int = 1, after: int = 1) -> str:
    """The listing lines of the dispatch: each STS of the state word with the barrier after it and the instruction
    after that (the exit's is EXIT), and the workers' barrier-1 wait with the LDS.U8 after it."""
    ins = k.instructions()
    d = dispatch(k, default_warps)
    at = {i.address: n for n, i in enumerate(ins)}
    keep = []
    for address, _ in d.stores:
        n = at[address]
        bar = next(j for j in range(n, len(ins)) if BAR1 in ins[j].text)
        keep.append(range(n - before, bar + 1 + after))
    n = at[d.load[0]]
    bar = max(j for j in range(n - 4, n) if BAR1 in ins[j].text)
    keep.append(range(bar, n + after))
    lines = []
    for block in keep:
        lines.append("        ...")
        lines += [f"        /*{ins[j].address:04x}*/  {ins[j].text}" for j in block]
    return "\n".join(lines)


def lesson_kernel(number: int):
    """Lesson 18's or 19's kernel as its checks compile it (sm_90, bf16), and its default partition's warps (8)."""
    from ..course import load_module_file, repo_root

    folder = next((repo_root() / "solutions").glob(f"{number}-*"))
    checks = load_module_file(str(folder / "checks.py"))
    return checks.compiled(load_module_file(str(folder / "solution.py"))), 8


def main() -> None:
    """Each kernel's dispatch: the state word, where it sits, the PCs of its stores and of the workers' load."""
    rows = [(name, compiled(name), warps) for name, (_, warps, _) in KERNELS.items()]
    rows += [(f"lesson{n}", *lesson_kernel(n)) for n in (18, 19)]
    for name, k, warps in rows:
        d = dispatch(k, warps)
        past = "no mbarrier" if d.past_barriers is None else f"{d.past_barriers} bytes past the last mbarrier"
        stores = ", ".join(f"0x{a:04x}" for a, _ in d.stores)
        print(f"{name:12s} state word at 0x{d.state_offset:x} ({past}); STS at {stores}; LDS.U8 at 0x{d.load[0]:04x}")



def show(number: int) -> None:
    """For a lesson's notebook: where the dispatch's state word sits in lesson ``number``'s kernel, and the listing
    lines of the two accesses racecheck names with the barriers around them."""
    k, warps = lesson_kernel(number)
    d = dispatch(k, warps)
    print(f"lesson {number}, sm_90: {len(d.barrier_offsets)} mbarriers (8 bytes each) at "
          + ", ".join(f"0x{a:x}" for a in d.barrier_offsets)
          + f"; the dispatch's state word at 0x{d.state_offset:x}, {d.past_barriers} bytes past the last (a byte per "
          f"worker warp), stored at 0x{d.stores[0][0]:04x} (the fork) and 0x{d.stores[-1][0]:04x} (the exit); the "
          f"workers' LDS.U8 of it at 0x{d.load[0]:04x}")
    print(excerpt(k, warps))


if __name__ == "__main__":
    main()
