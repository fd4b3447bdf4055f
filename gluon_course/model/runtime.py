"""The state the host model keeps while it runs a kernel: buffers in global memory, shared memory with the
asynchronous accesses still in flight on each slot, mbarriers with their phases, and the partitions (threads of
a warp-specialized kernel) taking turns.

Nothing here is a GPU. The model runs a kernel's Python body once per program, one partition at a time, and lets
every asynchronous copy land *as soon as* its barrier's phase can complete. What it checks is the protocol: that
every read of a slot comes after a wait that covers the copy into it, that no copy overwrites a slot an
asynchronous reader may still be using, that every wait can be satisfied, that every element read and written is
inside its tensor. Those are the mistakes a CPU compile cannot see and a GPU shows only as a hang, a race or a
wrong number.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np


# -- what the model can conclude --------------------------------------------------------------------

class ModelError(Exception):
    """The kernel did something the model can prove wrong. ``str(error)`` is one sentence for a learner."""


class ModelHang(ModelError):
    """A wait that can never be satisfied: on a GPU the kernel would hang."""


class ModelRace(ModelError):
    """Two accesses to one slot of shared memory without the wait or fence that orders them."""


class ModelOutOfBounds(ModelError):
    """An access outside the tensor it belongs to."""


class ModelUnsupported(Exception):
    """The kernel uses an operation the model does not know: the model concludes nothing about it."""


# -- global memory ---------------------------------------------------------------------------------

class Buffer:
    """One tensor in global memory: its elements (float32 values that are exact in the tensor's dtype), inside a
    margin of NaN on each side, so that a read just past an end gives NaN instead of a lucky number."""

    MARGIN = 4096

    def __init__(self, name: str, values: np.ndarray, dtype, poison: bool = False):
        values = np.asarray(values, dtype=np.float32)
        self.name, self.dtype, self.shape = name, dtype, values.shape
        self.size = values.size
        self.data = np.full(self.size + 2 * self.MARGIN, np.nan, dtype=np.float32)
        if not poison:
            self.data[self.MARGIN:self.MARGIN + self.size] = values.reshape(-1)
        self.writes = np.zeros(self.size, dtype=np.int32)

    def values(self) -> np.ndarray:
        return self.data[self.MARGIN:self.MARGIN + self.size].reshape(self.shape)

    def view2d(self) -> np.ndarray:
        """The tensor as a 2D array (a view: TMA stores write through it)."""
        return self.data[self.MARGIN:self.MARGIN + self.size].reshape(self.shape)

    def _check(self, offsets: np.ndarray, what: str) -> None:
        bad = (offsets < 0) | (offsets >= self.size)
        if bad.any():
            first = int(offsets[bad].flat[0])
            raise ModelOutOfBounds(
                f"{what} {self.name} outside its {self.size} elements (element offset {first} from its start, "
                f"{int(bad.sum())} element(s) in all): a mask is missing or bounds the wrong axis")

    def read(self, offsets: np.ndarray, mask: np.ndarray, atomic: bool = False) -> np.ndarray:
        self._check(offsets[mask], "reads")
        if not atomic:
            _require_visible(self, offsets[mask])
        out = np.full(offsets.shape, np.nan, dtype=np.float32)
        out[mask] = self.data[offsets[mask] + self.MARGIN]
        return out

    def write(self, offsets: np.ndarray, values: np.ndarray, mask: np.ndarray, atomic: bool = False) -> None:
        self._check(offsets[mask], "writes")
        self.data[offsets[mask] + self.MARGIN] = values[mask]
        np.add.at(self.writes, offsets[mask], 1)
        prog = getattr(_LOCAL, "program", None)
        if prog is not None and not atomic:
            _record_store(self, prog, offsets[mask])


# -- one program's stores as another program sees them ----------------------------------------------
# The model runs a launch's programs one after another, so a program always finds every earlier program's stores in
# memory; on a GPU it may read another SM's store only after acquiring a release that follows it. The model tracks
# that order: each program numbers its stores; a release atomic (sem "release" or "acq_rel", Triton's default)
# leaves at its address what the releasing program has stored and seen so far; an acquire there adds it to what the
# acquiring program has seen; a plain load of an element another program of the same launch stored must be covered.
# Atomics themselves are exempt (their read-modify-write is ordered by the address). Program-level: the barrier
# among a partition's threads before a release is the separate rule of ``shims._require_announced``.

def _record_store(buffer: "Buffer", prog, offsets: np.ndarray) -> None:
    if buffer.__dict__.get("_writer") is None:
        buffer._writer = np.full(buffer.size, -1, dtype=np.int64)
        buffer._store_no = np.zeros(buffer.size, dtype=np.int64)
        buffer._launch = np.full(buffer.size, -1, dtype=np.int64)
    prog.stores += 1
    buffer._writer[offsets] = prog.index
    buffer._store_no[offsets] = prog.stores
    buffer._launch[offsets] = prog.launch


def _require_visible(buffer: "Buffer", offsets: np.ndarray) -> None:
    prog = getattr(_LOCAL, "program", None)
    writer = buffer.__dict__.get("_writer")
    if prog is None or writer is None or offsets.size == 0:
        return
    others = (buffer._launch[offsets] == prog.launch) & (writer[offsets] != prog.index) & (writer[offsets] >= 0)
    if not others.any():
        return
    who, numbers = writer[offsets][others], buffer._store_no[offsets][others]
    seen = np.array([prog.seen.get(int(w), 0) for w in who])
    unseen = numbers > seen
    if unseen.any():
        first = int(np.flatnonzero(unseen)[0])
        raise ModelRace(
            f"program {prog.index} reads {buffer.name} (element {int(offsets[others][first])}), which program "
            f"{int(who[first])} stored after every release of its that program {prog.index} has acquired: on a GPU "
            "it may read what was there before; read another program's data only after an acquire (an atomic with "
            "sem='acquire' or 'acq_rel') of a release that the writer made after storing it")


def atomic_order(buffer: "Buffer", offsets: np.ndarray, sem) -> None:
    """The memory order of an atomic on ``buffer`` at ``offsets`` (see above): acquire, then release."""
    prog = getattr(_LOCAL, "program", None)
    if prog is None:
        return
    released = buffer.__dict__.setdefault("_released", {})
    for off in np.asarray(offsets).reshape(-1).tolist():
        key = (prog.launch, int(off))
        if sem in (None, "acquire", "acq_rel"):
            for w, n in released.get(key, {}).items():
                prog.seen[w] = max(prog.seen.get(w, 0), n)
        if sem in (None, "release", "acq_rel"):
            merged = dict(released.get(key, {}))
            for w, n in list(prog.seen.items()) + [(prog.index, prog.stores)]:
                merged[w] = max(merged.get(w, 0), n)
            released[key] = merged


# -- shared memory ---------------------------------------------------------------------------------

@dataclass
class SlotState:
    """The accesses in flight on one slot (the first index of an allocation: a ring slot)."""
    pending_write: tuple | None = None          # ("tma", barrier, phase) or ("cp.async", partition, group)
    async_reads: dict = field(default_factory=dict)   # (kind, partition id, group) -> what reads it
    written_by_threads: bool = False            # a generic-proxy write (smem.store) not yet fenced
    ever_written: bool = False                  # a copy or a store has ever written the slot (else it holds NaN)
    fills: int = 0                              # the TMA copies that have written the slot so far


class SharedRoot:
    """One ``gl.allocate_shared_memory``: its contents, and the state of each slot.

    In a cluster (``model.cluster``) each CTA has its own copy of every allocation, the ``index``-th of its
    ``owner`` (a Program): the whole tile's shape, of which the CTA holds the part ``mine`` marks (NaN elsewhere)."""

    def __init__(self, name: str, dtype, shape, layout, is_barrier: bool, index: int = 0, owner=None, mine=None):
        self.name, self.dtype, self.layout, self.is_barrier = name, dtype, layout, is_barrier
        self.shape = tuple(int(s) for s in shape)
        self.index, self.owner, self.mine = index, owner, mine
        self.data = None if is_barrier else np.full(self.shape, np.nan, dtype=np.float32)
        slots = self.shape[0] if len(self.shape) > 1 else 1
        self.slots = [SlotState() for _ in range(slots)]
        self.barriers = [Barrier(f"{name}[{i}]", owner) for i in range(self.shape[0])] if is_barrier else []
        # Every mbarrier of the allocation, by its full index (a cluster's allocations hold one per CTA and slot).
        self.grid = None
        if is_barrier:
            self.grid = np.empty(self.shape, dtype=object)
            for at in np.ndindex(*self.shape):
                # In a cluster the last index is the CTA's (each holds its own element): name the slot only.
                label = f"{name}[{at[0]}]" if owner is not None and owner.cluster is not None and len(at) > 1 \
                    else name if owner is not None and owner.cluster is not None \
                    else f"{name}[{', '.join(map(str, at))}]"
                self.grid[at] = (self.barriers[at[0]] if all(i == 0 for i in at[1:]) else Barrier(label, owner))

    def slot_name(self, slot) -> str:
        return self.name if slot is None or len(self.shape) < 2 else f"{self.name}[{slot}]"


class Barrier:
    """An mbarrier: an arrival count and a transaction (byte) count per phase; ``completed`` phases so far."""

    def __init__(self, name: str, owner=None):
        self.name = name
        self.owner = owner                # the Program (CTA) whose shared memory holds it
        if owner is not None and owner.cluster is not None:
            self.name = f"{name} of CTA {owner.cta}"
        self.initialised = False
        self.count = 0
        self.pending = 0
        self.expected_bytes = 0
        self.issued_bytes = 0
        self.completed = 0
        self.waited = 0                   # phases some wait of the program has seen complete
        self.copies: list = []            # the slots written by this phase's copies
        self.expects = 0

    def describe(self) -> str:
        """Why phase ``completed`` of this barrier has not completed, in words."""
        if self.pending == self.count and not self.expected_bytes and not self.issued_bytes:
            return (f"nothing has arrived on {self.name} for its phase {self.completed}, and nothing will: is the "
                    "wait's phase parity a trip ahead, or an expect()/arrive() missing?")
        if self.pending:
            return (f"phase {self.completed} of {self.name} still waits for {self.pending} of its {self.count} "
                    f"arrival(s)" + (f"; {self.issued_bytes} of {self.expected_bytes} announced bytes have been "
                                    "copied" if self.expected_bytes else ""))
        return (f"expect() announced {self.expected_bytes} bytes for phase {self.completed} of {self.name}, but the "
                f"copies bring only {self.issued_bytes}: a copy is missing, or expect() counts too much")


# -- partitions ------------------------------------------------------------------------------------

@dataclass
class Partition:
    """One partition of a program (the whole program when there is no warp specialization)."""
    name: str
    pid: tuple
    grid: tuple
    num_warps: int
    ident: int = 0
    observed: dict = field(default_factory=dict)       # id(barrier) -> phases this partition has seen complete
    wgmma_groups: list = field(default_factory=list)   # outstanding async wgmma groups, oldest first: [(id, slots)]
    cp_uncommitted: list = field(default_factory=list)
    cp_groups: list = field(default_factory=list)      # committed, not yet waited: [(id, slots)]
    store_groups: list = field(default_factory=list)   # TMA stores not yet waited: [(id, slot)]
    unbarriered_stores: bool = False                   # global stores by the threads since the partition's barrier
    next_group: int = 0
    last_wait: dict | None = None                      # this partition's last mbarrier wait: barrier, parity, ...
    blocked_on: str = ""
    ready: object = None
    done: bool = False
    event: threading.Event = field(default_factory=threading.Event)
    cta: int | None = None                             # its CTA's rank in a cluster (None: no cluster)
    shared_wait: str | None = None                     # a cluster's barrier it waited on since its last multicast

    @property
    def label(self) -> str:
        """Its name, with its CTA's in a cluster: "CTA 1's worker partition 0"."""
        return self.name if self.cta is None else f"CTA {self.cta}'s {self.name}"

    def group_id(self) -> int:
        self.next_group += 1
        return self.next_group


class Program:
    """The shared state of one program (a CTA): what its partitions share, and whose turn it is."""

    def __init__(self, pid: tuple, grid: tuple, num_warps: int):
        self.pid, self.grid, self.num_warps = pid, grid, num_warps
        self.roots: list[SharedRoot] = []
        self.partitions: list[Partition] = []
        self._error: BaseException | None = None
        self.trace: list = []
        self.step = 0
        # Where the program stands among its launch's (runtime's atomic_order): its number in the grid, the launch,
        # how many global stores it has made, and how far it has seen each other program's stores.
        self.index, self.launch, self.stores, self.seen = 0, 0, 0, {}
        # A CTA of a cluster (``model.cluster``): its rank, and the cluster, whose CTAs' partitions take turns
        # together. None: the program is one CTA. ``together``: the programs of a grid run side by side
        # (``model.cluster_launch.run_together``), taking turns as a cluster's CTAs do, each still a CTA of its own.
        self.cta, self.cluster, self.together = 0, None, None

    @property
    def group(self):
        """Whose turns this program's partitions share: its cluster's, the grid's run side by side, or None."""
        return self.cluster if self.cluster is not None else self.together

    @property
    def error(self) -> BaseException | None:
        return self._error if self.group is None else self.group.error

    @error.setter
    def error(self, value) -> None:
        if self.group is None:
            self._error = value
        else:
            self.group.error = value

    def pool(self) -> list:
        """The partitions that take turns with this program's: its own, or every CTA's of its cluster (every
        program's, run side by side)."""
        return self.partitions if self.group is None else self.group.partitions()

    def log(self, partition: Partition, what: str, **details) -> None:
        if self.group is not None:
            self.group.step += 1
            self.step = self.group.step
        else:
            self.step += 1
        self.trace.append({"t": self.step, "partition": partition.name, "what": what, **details})


_LOCAL = threading.local()


def current() -> Partition:
    p = getattr(_LOCAL, "partition", None)
    if p is None:
        raise ModelUnsupported("no kernel is running in the host model")
    return p


def program() -> Program:
    return _LOCAL.program


def enter(prog: Program, partition: Partition) -> None:
    _LOCAL.program, _LOCAL.partition = prog, partition


class _Stop(BaseException):
    """Ends a partition's thread after another partition found an error (not an error itself)."""


def block_until(ready, what: str) -> None:
    """Wait, in the current partition, until ``ready()`` holds: hand the turn to another partition that can go
    on, and raise ModelHang when none can (on a GPU: every warp waits for another forever)."""
    prog, me = program(), current()
    if ready() and ready is not _always:
        return
    me.blocked_on, me.ready = what, ready
    while True:
        pool = prog.pool()
        runnable = [p for p in pool if not p.done and p is not me and (p.ready is None or p.ready())]
        if not runnable:
            waiting = [f"{p.label} {p.blocked_on}" for p in pool if not p.done and p.ready is not None]
            raise ModelHang("the kernel would hang: " + "; ".join(waiting))
        if prog.group is not None:
            nxt = prog.group.pick(me, runnable)
        else:
            # Round-robin from the partition after this one, so every partition gets its turn.
            order = pool[pool.index(me) + 1:] + pool[:pool.index(me)]
            nxt = next(p for p in order if p in runnable)
        me.event.clear()
        nxt.event.set()
        if not me.event.wait(timeout=120):
            raise ModelHang("the host model stopped making progress (no partition ran for 120 s)")
        if prog.error is not None:
            raise _Stop()
        if ready():
            me.blocked_on, me.ready = "", None
            return


def yield_turn() -> None:
    """Let a partition that the last operation unblocked run now, before this one goes on: the most hostile order
    for a release that comes too early (a slot freed while an asynchronous read of it is still running). Called
    after an arrive; a copy's completion does not yield, so a producer runs as far ahead as its waits allow, as a
    producer warp does on a GPU."""
    prog, me = program(), current()
    pool = prog.pool()
    if len(pool) < 2:
        return
    woken = [p for p in pool if p is not me and not p.done and p.ready is not None and p.ready()]
    if prog.group is not None:
        woken = prog.group.may_yield_to(me, woken)
    if woken:
        block_until(_always, "yields its turn")


def _always() -> bool:
    return True


def run_partitions(prog: Program, bodies: list) -> list:
    """Run ``bodies`` [(partition, callable)] of one program, taking turns at blocking waits; the first body runs in
    the calling thread. Returns each body's result; re-raises the first error any of them raised."""
    if prog.group is not None:
        return prog.group.run_partitions(prog, bodies)
    results = [None] * len(bodies)
    parent = getattr(_LOCAL, "partition", None)

    def finish(me: Partition) -> None:
        me.done, me.ready = True, None
        others = [p for p in prog.partitions if not p.done]
        runnable = [p for p in others if p.ready is None or p.ready()]
        if runnable:
            runnable[0].event.set()
        elif others:
            waiting = [f"{p.name} {p.blocked_on}" for p in others]
            prog.error = prog.error or ModelHang("the kernel would hang: " + "; ".join(waiting))
            for p in others:
                p.event.set()

    def worker(index: int, part: Partition, body) -> None:
        enter(prog, part)
        part.event.wait()
        if prog.error is not None:
            part.done = True
            return
        try:
            results[index] = body()
        except _Stop:
            pass
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            prog.error = prog.error or e
            for p in prog.partitions:
                p.event.set()
        finish(part)

    threads = []
    for index, (part, body) in enumerate(bodies[1:], start=1):
        t = threading.Thread(target=worker, args=(index, part, body), daemon=True)
        threads.append(t)
        t.start()
    main_part, main_body = bodies[0]
    enter(prog, main_part)
    try:
        results[0] = main_body()
    except _Stop:
        pass
    except BaseException as e:  # noqa: BLE001
        prog.error = prog.error or e
        for p in prog.partitions:
            p.event.set()
    finish(main_part)
    # The default partition is done: let the others finish (or fail), then take the turn back.
    while not all(p.done for p in prog.partitions):
        if prog.error is not None:
            for p in prog.partitions:
                p.event.set()
        for t in threads:
            t.join(timeout=0.05)
        if all(not t.is_alive() for t in threads):
            break
    for t in threads:
        t.join(timeout=5)
    if parent is not None:
        enter(prog, parent)
    if prog.error is not None:
        raise prog.error
    return results
