"""A cluster of CTAs in the host model (Hopper's thread-block clusters, lesson 33): the CTAs it has, each with its own
shared memory and its own mbarriers, their partitions taking turns together.

Gluon writes a cluster's kernel once, for the whole cluster: each CTA runs the same code, and a tensor's layout
says which CTA holds which part of it (``cga_layout``: one basis per bit of the CTA's rank, the offset, in parts of
the tensor, of the part that bit selects; a basis of zeros means the CTAs that differ in that bit hold the same
part). The model keeps, in every CTA, each allocation at the shape the kernel names (the cluster's tile), of which the
CTA holds its part and sees NaN elsewhere, so that a CTA that reads rows it does not hold gets NaN in C.

What Triton 3.9.0 compiles, and the model does (read in the PTX of lesson 33's cluster kernel, and in Triton's
lowering of the mbarrier operations):

- an mbarrier whose layout has a basis of zeros is *one* barrier for the CTAs that share it, the one in the lowest
  of them (the leader): ``init`` runs there only, with its count multiplied by the CTAs that share it (``mbarrier.init
  ... 2`` for two); ``arrive`` and ``expect`` of every CTA go to it (``mbarrier.arrive.shared::cluster``); ``wait``
  and ``invalidate`` run in the leader only (the others skip them);
- ``tma.async_load(..., multicast=True)`` into a tile that several CTAs hold is issued by the leader of those CTAs
  alone, with the mask of all of them: the copy lands in the same slot of each, and each receives its bytes on its
  own barrier at the same place (the issuer's ``ready[slot]`` is every destination's ``ready[slot]``); a copy
  without multicast brings each CTA its own part;
- a TMA store is each CTA's own part of the tile; of a part several CTAs hold, the leader's alone (as Triton's
  concurrency sanitizer models the store's issuer: lesson 33 stores no such tile);
- ``gl.barrier(cluster=True)`` waits for every CTA of the cluster; the listing also has a cluster barrier right
  after the kernel's mbarrier inits (before any CTA may use another's barriers) and one at its end (so that a CTA's
  shared memory outlives the other CTAs' last arrivals on it).

The model runs a cluster's CTAs together, one partition at a time, in a ``schedule``: ``"round robin"`` (the
partitions in turn, as for one CTA), ``"CTA 0 first"`` or ``"last CTA first"`` (a CTA runs only when every
partition of the CTAs before it waits): each is an order a GPU may produce, and ``"CTA 0 first"`` lets the leader
run as far ahead of the others as its waits allow, which is where a multicast that does not wait for the other CTAs
overwrites a slot they still read.
"""
from __future__ import annotations

import threading

import numpy as np

from .runtime import (ModelError, ModelHang, ModelRace, Partition, Program, _Stop, block_until,
                      current, enter, program)

SCHEDULES = ("round robin", "CTA 0 first", "last CTA first")


# -- which CTA holds which part of a tile --------------------------------------------------------------------------

def cga_bases(layout, num_ctas: int) -> list[list[int]]:
    """The ``cga_layout`` bases of ``layout`` (none for a layout without them), checked against the cluster's size."""
    bases = [[int(x) for x in basis] for basis in (getattr(layout, "cga_layout", None) or [])]
    if bases and len(bases) != num_ctas.bit_length() - 1:
        raise ModelError(f"a layout's cga_layout has {len(bases)} bases ({bases}), one per bit of a CTA's rank in a "
                         f"cluster of {1 << len(bases)} CTAs, but the kernel runs in clusters of {num_ctas} "
                         f"(num_ctas={num_ctas}): give every cluster layout {num_ctas.bit_length() - 1} bases")
    return bases


def broadcast_mask(bases) -> int:
    """The bits of a CTA's rank that do not change which part it holds (their bases are all zeros)."""
    return sum(1 << i for i, basis in enumerate(bases) if not any(basis))


def leader(cta: int, mask: int) -> int:
    """The lowest CTA of those that share ``cta``'s part (they differ from it in ``mask``'s bits only)."""
    return cta & ~mask


def sharers(cta: int, mask: int, num_ctas: int) -> list[int]:
    """The CTAs that hold the same part as ``cta`` (itself included), lowest first."""
    return [c for c in range(num_ctas) if c & ~mask == cta & ~mask]


def part_slices(shape, bases, cta: int) -> tuple:
    """The index of ``cta``'s part of a tensor of ``shape``: the bases act on its last ``len(basis)`` dimensions (the
    leading ones, a ring's slots, are every CTA's)."""
    if not bases:
        return tuple(slice(None) for _ in shape)
    rank = len(bases[0])
    lead = len(shape) - rank
    if lead < 0:
        raise ModelError(f"a cga_layout of rank {rank} on a tensor of shape {list(shape)}")
    index = [slice(None)] * len(shape)
    for d in range(rank):
        parts = 2 * max(basis[d] for basis in bases) or 1
        size = shape[lead + d]
        if size % parts:
            raise ModelError(f"a tensor of shape {list(shape)} does not divide into the {parts} parts along its "
                             f"dimension {lead + d} that its cga_layout {bases} gives")
        block = 0
        for bit, basis in enumerate(bases):
            if cta >> bit & 1:
                block ^= basis[d]
        index[lead + d] = slice(block * (size // parts), (block + 1) * (size // parts))
    return tuple(index)


def holds(shape, bases, cta: int) -> np.ndarray | None:
    """True where ``cta`` holds an element of a tensor of ``shape`` (None: it holds all of it)."""
    if not bases:
        return None
    mine = np.zeros(shape, dtype=bool)
    mine[part_slices(shape, bases, cta)] = True
    return None if mine.all() else mine


# -- the cluster: its CTAs, taking turns ----------------------------------------------------------------------------

class Cluster:
    """The CTAs of one program of a cluster launch (``run_cluster``): ``size`` Programs, whose partitions take turns
    together in ``schedule``."""

    def __init__(self, size: int, schedule: str = "round robin"):
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule={schedule!r}: one of {SCHEDULES}")
        self.size, self.schedule = size, schedule
        self.ctas: list[Program] = []
        self.error: BaseException | None = None
        self.step = 0

    def partitions(self) -> list[Partition]:
        return [p for prog in self.ctas for p in prog.partitions]

    def rank(self, p: Partition) -> int:
        """The schedule's priority of ``p``'s CTA (lower first; all equal in round robin)."""
        if self.schedule == "round robin":
            return 0
        return p.cta if self.schedule == "CTA 0 first" else -p.cta

    def pick(self, me: Partition, runnable: list[Partition]) -> Partition:
        """Whom ``me`` hands the turn to: the next in turn after it, or (a CTA-first schedule) the first CTA's."""
        pool = self.partitions()
        at = pool.index(me) + 1 if me in pool else 0
        order = [p for p in pool[at:] + pool[:at] if p in runnable]
        order.sort(key=self.rank)
        return order[0]

    def may_yield_to(self, me: Partition, woken: list[Partition]) -> list[Partition]:
        """Of the partitions ``me``'s last operation unblocked, those it hands the turn to at once (``runtime.
        yield_turn``): in a CTA-first schedule only its own CTA's and those of CTAs before it, so that a CTA runs
        only while every CTA before it waits."""
        return [p for p in woken if self.rank(p) <= self.rank(me)]

    # failures and hand-overs
    def _wake_all(self) -> None:
        for p in self.partitions():
            p.event.set()

    def _fail(self, error: BaseException, prog: Program, part: Partition) -> None:
        if isinstance(error, ModelError) and not isinstance(error, ModelHang) and not getattr(error, "located", 0):
            error.args = (f"{part.label}: {error.args[0] if error.args else error}",)
            error.located = True
        self.error = self.error or error
        self._wake_all()

    def _finish(self, part: Partition) -> None:
        part.done, part.ready = True, None
        others = [p for p in self.partitions() if not p.done]
        runnable = [p for p in others if p.ready is None or p.ready()]
        if runnable:
            self.pick(part, runnable).event.set()
        elif others and self.error is None:
            waiting = [f"{p.label} {p.blocked_on}" for p in others]
            self.error = ModelHang("the kernel would hang: " + "; ".join(waiting))
            self._wake_all()

    def _await_turn(self, part: Partition) -> bool:
        """Wait, in a new thread, for ``part``'s first turn; False when the cluster failed meanwhile."""
        while not part.event.wait(timeout=5):
            if self.error is not None:
                break
        return self.error is None

    def run(self, body) -> None:
        """Run ``body`` (the kernel) in every CTA, each from its own thread, CTA 0 first; re-raise the first error."""
        def cta_main(prog: Program, part: Partition) -> None:
            enter(prog, part)
            if self._await_turn(part):
                try:
                    body()
                    if prog.cluster is not None:        # programs run side by side have no cluster barrier
                        kernel_end()
                except _Stop:
                    pass
                except BaseException as e:  # noqa: BLE001 - handed to the calling thread
                    self._fail(e, prog, part)
            self._finish(part)

        threads = [threading.Thread(target=cta_main, args=(prog, prog.partitions[0]), daemon=True)
                   for prog in self.ctas]
        for t in threads:
            t.start()
        self.ctas[0].partitions[0].event.set()
        for t in threads:
            t.join(timeout=600)
        if any(t.is_alive() for t in threads):
            self.error = self.error or ModelHang("the host model stopped making progress (a CTA ran for 600 s)")
            self._wake_all()
        if self.error is not None:
            raise self.error

    def run_partitions(self, prog: Program, bodies: list) -> list:
        """``runtime.run_partitions`` in a cluster: ``prog``'s partitions (``gl.warp_specialize``) join the cluster's
        turns; the default partition runs in the calling thread and, once its body ends, waits (taking no turn) for
        the workers, as its warps do at the end of the fork."""
        results = [None] * len(bodies)
        parent = current()
        # The cluster barrier after the mbarrier inits comes before the fork, in the parent's turn (warp_specialize
        # has already put the partitions in its place).
        forked, prog.partitions = prog.partitions, [parent]
        after_inits()
        prog.partitions = forked
        for part, _ in bodies:
            if prog.cluster is not None:
                part.cta = prog.cta
        workers = bodies[1:]

        def worker(index: int, part: Partition, body) -> None:
            enter(prog, part)
            if self._await_turn(part):
                try:
                    results[index] = body()
                except _Stop:
                    pass
                except BaseException as e:  # noqa: BLE001
                    self._fail(e, prog, part)
            self._finish(part)

        threads = [threading.Thread(target=worker, args=(i, part, body), daemon=True)
                   for i, (part, body) in enumerate(workers, start=1)]
        for t in threads:
            t.start()
        main_part, main_body = bodies[0]
        enter(prog, main_part)
        try:
            results[0] = main_body()
            block_until(lambda: all(p.done for p, _ in workers), "waits at the end of gl.warp_specialize for its "
                        "worker partitions to end")
        except _Stop:
            pass
        except BaseException as e:  # noqa: BLE001
            self._fail(e, prog, main_part)
        main_part.done = True
        enter(prog, parent)
        if self.error is not None:
            for t in threads:
                t.join(timeout=5)
            raise _Stop()
        return results


# -- the cluster's barriers -----------------------------------------------------------------------------------------

def cluster_barrier(what: str) -> None:
    """Every CTA of the cluster arrives here before any goes on (barrier.cluster.arrive + wait)."""
    prog, me = program(), current()
    cl = prog.cluster
    prog.cluster_arrivals += 1
    n = prog.cluster_arrivals
    prog.log(me, "cluster barrier", at=what)
    late = lambda: [c.cta for c in cl.ctas if c.cluster_arrivals < n]   # noqa: E731
    block_until(lambda: not late(), f"waits at {what} for the other CTAs of its cluster")


def after_inits() -> None:
    """The cluster barrier that Triton 3.9.0 places after a cluster kernel's mbarrier inits (fence.mbarrier_init,
    then barrier.cluster.arrive and wait): passed once, before the CTA's first other mbarrier or TMA operation."""
    prog = program()
    if prog.cluster is not None and not prog.past_inits:
        prog.past_inits = True
        cluster_barrier("the cluster barrier after the mbarrier inits")


def kernel_end() -> None:
    """The cluster barrier at the end of a cluster kernel (Triton 3.9.0's listing has one before ``ret``)."""
    after_inits()
    cluster_barrier("the cluster barrier at the kernel's end")


# -- what a multicast may not overwrite -----------------------------------------------------------------------------

def require_free_for_multicast(dest, issuer: Partition) -> None:
    """A multicast by ``issuer`` writes ``dest``, the same slot in another CTA: raise a sentence naming the slot, that
    CTA and the step when that CTA may still need what the slot holds (a copy into it that its consumers have not yet
    read, or a wgmma group of its that may still be reading it). Steps count the copies into the allocation's slots
    in turn, as a producer's ``step`` does: a slot's n-th copy (from 0) is step n × slots + slot."""
    owner = dest.root.owner
    slots = dest.root.shape[0] if len(dest.root.shape) > 1 else 1
    slot = dest.slot if dest.slot is not None else 0
    fills = min(st.fills for st in dest.states())
    new, old = fills * slots + slot, (fills - 1) * slots + slot
    where = f"{issuer.label} multicasts the tile of step {new} into {dest.name()} of CTA {owner.cta}"
    if issuer.shared_wait is not None:
        why = (f". Its wait on {issuer.shared_wait}, the cluster's barrier, returned before CTA {owner.cta} was done "
               "with the slot: a release arrived on it early. Each CTA's consumers may release a slot once a trip, "
               "after the wgmma that read it has retired: is a release unconditional where it should be predicated "
               "(the K loop's first step, which has no previous slot to release)?")
    else:
        why = (". A multicast writes every CTA of its mask: before issuing it, the issuing CTA must know that each of "
               "them has released the slot, by waiting on a barrier that every CTA's consumers arrive on (one barrier "
               "for the cluster: an mbarrier whose cga_layout bases are zeros, counted for every CTA) with the parity "
               "of the slot's trip; its own CTA's release is not enough")
    for st in dest.states():
        if st.pending_write is not None:
            raise _located(ModelRace(f"{where} while CTA {owner.cta}'s consumers have not yet read the tile of step "
                                     f"{old} there: the multicast overwrites a tile that CTA still needs" + why))
        for (kind, ident, group) in list(st.async_reads):
            reader = next((p for p in owner.partitions if p.ident == ident), None)
            if kind == "wgmma" and reader is not None and any(g == group for g, _ in reader.wgmma_groups):
                raise _located(ModelRace(f"{where} while a wgmma group of {reader.label} may still be reading the "
                                         f"tile of step {old} there: the multicast overwrites it as it is read" + why))


def _located(error: ModelError) -> ModelError:
    error.located = True
    return error
