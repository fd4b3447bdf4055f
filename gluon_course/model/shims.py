"""What Gluon's operations do in the host model: numpy values for tensors, and the protocol of shared memory,
mbarriers, TMA, cp.async and wgmma checked as each operation runs (see ``runtime``).

Layouts are accepted and ignored (they change where an element lives, never its value); tensors are numpy arrays;
a pointer is a buffer and an array of element offsets. Any Gluon operation not modelled here raises
``ModelUnsupported`` with its name, so the model never guesses.
"""
from __future__ import annotations

import inspect
import linecache
import re

import numpy as np

from . import cluster as _cluster
from .runtime import (Buffer, ModelError, ModelOutOfBounds, ModelRace, ModelUnsupported, SharedRoot, block_until,
                      atomic_order, current, program, Partition, yield_turn)


# -- values ----------------------------------------------------------------------------------------

def _torch_dtype(dtype):
    import torch
    from triton.experimental.gluon import language as gl

    return {gl.bfloat16: torch.bfloat16, gl.float16: torch.float16, gl.float32: torch.float32}.get(dtype)


def round_to(values, dtype) -> np.ndarray:
    """``values`` rounded to ``dtype`` (bf16, fp16: to nearest even, as the GPU converts), kept as float32."""
    import torch
    from triton.experimental.gluon import language as gl

    values = np.asarray(values)
    if dtype in (gl.int32, gl.int64, gl.int16, gl.int8, gl.int1):
        return values.astype(np.int64)
    t = _torch_dtype(dtype)
    if t is None:
        raise ModelUnsupported(f"conversion to {dtype}")
    return torch.from_numpy(np.array(values, dtype=np.float32)).to(t).to(torch.float32).numpy()


class Tensor(np.ndarray):
    """A Gluon tensor in the model: a numpy array that also has ``.to(dtype)``."""

    def to(self, dtype, bitcast=False, fp_downcast_rounding=None):
        return as_tensor(round_to(self, dtype))

    def permute(self, *order):
        return _permute(self, *order)


def as_tensor(x) -> Tensor:
    return np.asarray(x).view(Tensor)


class AsyncAcc:
    """What ``warpgroup_mma(..., is_async=True)`` returns: the product, usable only once its group is retired."""

    def __init__(self, value, partition, group):
        self.value, self.partition, self.group = value, partition, group

    def outstanding(self) -> bool:
        return any(g == self.group for g, _ in self.partition.wgmma_groups)

    def resolved(self, what: str):
        if self.outstanding():
            raise ModelRace(f"{what} the accumulator while the wgmma group that computes it may still be running: "
                            "warpgroup_mma_wait(0, deps=(acc,)) first")
        return as_tensor(self.value)

    def to(self, dtype, **_):
        return self.resolved("converts").to(dtype)

    @property
    def shape(self):
        return self.value.shape


def value_of(x, what: str = "uses"):
    if isinstance(x, AsyncAcc):
        return x.resolved(what)
    return x


class PointerType:
    def __init__(self, element_ty):
        self.element_ty = element_ty


class Pointer:
    """``ptr + offsets``: a buffer and the element offsets of a pointer tensor (a plain pointer has offset 0)."""

    __array_ufunc__ = None          # numpy hands ``array + pointer`` to Pointer.__radd__

    def __init__(self, buffer: Buffer, offsets=0):
        self.buffer = buffer
        self.offsets = np.asarray(offsets, dtype=np.int64)

    @property
    def dtype(self):
        return PointerType(self.buffer.dtype)

    @property
    def shape(self):
        return self.offsets.shape

    def __add__(self, other):
        if isinstance(other, Pointer):
            raise ModelError("a pointer plus a pointer has no meaning: add offsets to one pointer")
        other = np.asarray(value_of(other))
        if other.dtype.kind == "f":
            raise ModelError(f"a pointer into {self.buffer.name} plus floating-point offsets (Triton's compiler refuses "
                             "them too): compute offsets with integers (// for a division, not /)")
        try:
            offsets = np.broadcast_shapes(self.offsets.shape, other.shape)
        except ValueError:
            raise ModelError(f"a pointer into {self.buffer.name} of shape {list(self.offsets.shape)} plus offsets of "
                             f"shape {list(other.shape)}, which do not broadcast to one shape (Triton's compiler "
                             "refuses them too): is one of them built along the wrong axis ([:, None] against "
                             "[None, :])?") from None
        return Pointer(self.buffer, self.offsets + other.astype(np.int64))

    __radd__ = __add__

    def __sub__(self, other):
        return Pointer(self.buffer, self.offsets - np.asarray(other, dtype=np.int64))

    def __getitem__(self, index):
        return Pointer(self.buffer, self.offsets[index])


# -- global memory: load and store ----------------------------------------------------------------

def broadcast_failure(error: BaseException) -> list[str] | None:
    """The shapes named in numpy's error when it could not broadcast arrays to one shape (["[64, 16]", "[16, 64]"]),
    else None."""
    text = str(error)
    if not isinstance(error, ValueError) or not ("broadcast" in text or "non-broadcastable" in text):
        return None
    shapes = re.findall(r"\(([\d, ]*)\)", text)
    return [f"[{', '.join(x.strip() for x in s.split(',') if x.strip())}]" for s in shapes] or ["of different sizes"]


def _broadcast(*arrays, what: str = "gl.load", names=("pointers", "mask", "other")):
    shaped = [np.asarray(a) for a in arrays if a is not None]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in shaped))
    except ValueError:
        given = ", ".join(f"{name} {list(np.shape(a))}" for name, a in zip(names, arrays)
                          if a is not None and np.ndim(a) > 0)
        raise ModelError(f"{what}'s {given} do not broadcast to one shape (Triton's compiler refuses them too): is "
                         "one of them transposed, or built along the wrong axis ([:, None] against [None, :])?") from None
    return [None if a is None else np.broadcast_to(np.asarray(a), shape) for a in arrays]


def load(pointer, mask=None, other=None, *args, **kwargs):
    if not isinstance(pointer, Pointer):
        raise ModelUnsupported("gl.load of something other than a pointer (a block pointer or descriptor)")
    mask = True if mask is None else value_of(mask)
    offsets, mask_b, other_b = _broadcast(pointer.offsets, np.asarray(mask, dtype=bool),
                                          None if other is None else np.asarray(value_of(other), dtype=np.float32))
    values = pointer.buffer.read(offsets, mask_b)
    if other_b is not None:
        values = np.where(mask_b, values, other_b)
    if _float_or_int(pointer.buffer.dtype) is np.int64 and not np.isnan(values).any():
        # An integer tensor (a length, an index) loads as integers, so that what the kernel computes from it (a loop's
        # bound, an offset) is an integer as on the GPU. A masked lane without ``other`` stays NaN: no value.
        values = values.astype(np.int64)
    # Logged with its buffer: a check may ask when a buffer was first read (lesson 35: nothing the previous kernel
    # writes is read before griddepcontrol.wait).
    program().log(current(), "global load", buffer=pointer.buffer.name)
    return as_tensor(values)


def store(pointer, value, mask=None, *args, **kwargs):
    if not isinstance(pointer, Pointer):
        raise ModelUnsupported("gl.store to something other than a pointer")
    value = value_of(value, "stores")
    mask = True if mask is None else value_of(mask)
    offsets, values, mask_b = _broadcast(pointer.offsets, np.asarray(value, dtype=np.float32),
                                         np.asarray(mask, dtype=bool), what="gl.store",
                                         names=("pointers", "values", "mask"))
    pointer.buffer.write(offsets, round_to(values, pointer.buffer.dtype), mask_b)
    current().unbarriered_stores = True


def _cta_barrier(*args, cluster=False, **kwargs):
    """gl.barrier(): every thread of the partition has made its stores before any thread goes on. With
    ``cluster=True`` in a cluster: every CTA of the cluster arrives before any goes on (``model.cluster``)."""
    current().unbarriered_stores = False
    if cluster and program().cluster is not None:
        _cluster.after_inits()
        _cluster.cluster_barrier("gl.barrier(cluster=True)")


def _atomic(pointer, update, what: str, sem=None):
    """An atomic read-modify-write of global memory: every element of ``pointer`` read, replaced by
    ``update(old)``, and the old values returned. The model runs one program at a time, so each atomic sees every
    write made before it; the order it gives other programs' loads (sem=) is tracked by ``runtime.atomic_order``, and
    the barrier a scalar release needs before it by ``_require_announced``."""
    if not isinstance(pointer, Pointer):
        raise ModelUnsupported(f"gl.{what} on something other than a pointer")
    offsets = np.asarray(pointer.offsets)
    everywhere = np.ones(offsets.shape, dtype=bool)
    old = pointer.buffer.read(offsets, everywhere, atomic=True)
    pointer.buffer.write(offsets, round_to(np.asarray(update(old), dtype=np.float32), pointer.buffer.dtype),
                         everywhere, atomic=True)
    atomic_order(pointer.buffer, offsets, sem)
    program().log(current(), what, buffer=pointer.buffer.name)
    return as_tensor(old)


def atomic_add(pointer, val, mask=None, sem=None, scope=None):
    if mask is not None:
        raise ModelUnsupported("a masked gl.atomic_add")
    _require_announced(pointer, sem)
    return _atomic(pointer, lambda old: old + np.asarray(value_of(val), dtype=np.float32), "atomic_add", sem)


def _require_announced(pointer, sem) -> None:
    """A scalar atomic is made by one thread: with release semantics it orders that thread's own earlier stores,
    not the other threads'. Those are ordered before it only by a barrier among the partition's threads first."""
    if np.ndim(pointer.offsets) == 0 and sem in (None, "release", "acq_rel") and current().unbarriered_stores:
        raise ModelRace(f"a release atomic on {pointer.buffer.name} by one thread follows global stores that the "
                        "partition's other threads may not have made yet: put gl.barrier() between the stores and "
                        "the atomic, so that what it announces is all there")


def atomic_xchg(pointer, val, mask=None, sem=None, scope=None):
    if mask is not None:
        raise ModelUnsupported("a masked gl.atomic_xchg")
    return _atomic(pointer, lambda old: np.broadcast_to(np.asarray(value_of(val), dtype=np.float32), old.shape),
                   "atomic_xchg", sem)


# -- shared memory ---------------------------------------------------------------------------------

class Shared:
    """A view of a shared-memory allocation: the root, the slot (first index) it lies in, and the numpy view."""

    def __init__(self, root: SharedRoot, slot=None, steps=()):
        self.root, self.slot, self.steps = root, slot, tuple(steps)

    # what the kernel reads off a descriptor
    @property
    def dtype(self):
        return self.root.dtype

    @property
    def layout(self):
        return self.root.layout

    @property
    def shape(self):
        return list(self.view().shape)

    def view(self) -> np.ndarray:
        return self._apply(self.root.data)

    def _apply(self, whole: np.ndarray) -> np.ndarray:
        """This view of ``whole``, an array of the allocation's shape (its contents, or which elements a CTA holds)."""
        v = whole if self.slot is None else whole[self.slot]
        for kind, arg in self.steps:
            if kind == "index":
                v = v[arg]
            elif kind == "permute":
                v = v.transpose(arg)
            elif kind == "slice":
                start, length, dim = arg
                index = [slice(None)] * v.ndim
                index[dim] = slice(start, start + length)
                v = v[tuple(index)]
            elif kind == "reshape":
                v = v.reshape(arg)
        return v

    def name(self) -> str:
        return self.root.slot_name(self.slot)

    def write(self, values) -> None:
        """Write ``values`` through the view; in a cluster, only into the part of the tile this CTA holds."""
        v = self.view()
        if self.root.mine is None:
            v[...] = values
        else:
            v[...] = np.where(self._apply(self.root.mine), values, v)

    def states(self):
        return self.root.slots if self.slot is None else [self.root.slots[self.slot]]

    # views
    def index(self, i):
        i = int(value_of(i))
        if self.root.is_barrier:
            if self.slot is not None or self.steps:
                raise ModelUnsupported("indexing a barrier twice")
            return BarrierRef(self.root, i)
        if self.slot is None and not self.steps and len(self.root.shape) > 1:
            if not 0 <= i < self.root.shape[0]:
                raise ModelOutOfBounds(f"{self.root.name}.index({i}) outside its {self.root.shape[0]} slots")
            return Shared(self.root, i)
        shape = self.view().shape
        if not shape or not 0 <= i < shape[0]:
            raise ModelOutOfBounds(f"{self.name()}.index({i}) of a view of shape {list(shape)}: outside its first "
                                   "dimension")
        return Shared(self.root, self.slot, self.steps + (("index", i),))

    def permute(self, order):
        order, shape = tuple(int(o) for o in order), self.view().shape
        if sorted(order) != list(range(len(shape))):
            raise ModelError(f"{self.name()}.permute({list(order)}) of a view of shape {list(shape)}: the order names "
                             f"each of its dimensions 0 to {len(shape) - 1} once")
        return Shared(self.root, self.slot, self.steps + (("permute", order),))

    def slice(self, start, length, dim=0):
        start, length, dim, shape = int(start), int(length), int(dim), self.view().shape
        if not (0 <= dim < len(shape) and 0 <= start and start + length <= shape[dim]):
            raise ModelOutOfBounds(f"{self.name()}.slice({start}, {length}, dim={dim}) of a view of shape "
                                   f"{list(shape)}: outside it")
        return Shared(self.root, self.slot, self.steps + (("slice", (start, length, dim)),))

    def reshape(self, shape):
        shape, size = tuple(int(s) for s in shape), self.view().size
        if int(np.prod(shape)) != size:
            raise ModelError(f"{self.name()}.reshape({list(shape)}) of a view of {size} elements: a reshape keeps the "
                             "number of elements")
        return Shared(self.root, self.slot, self.steps + (("reshape", shape),))

    # accesses by the threads themselves
    def load(self, layout=None):
        check_read(self, "the threads' own load (smem.load)")
        program().log(current(), "smem.load", slot=self.name())
        return as_tensor(self.view().copy())

    def store(self, value):
        value = value_of(value, "stores")
        check_write(self, "the threads' own store (smem.store)")
        target, got = tuple(self.view().shape), tuple(np.shape(value))
        try:
            values = np.broadcast_to(np.asarray(value), target)
        except ValueError:
            raise ModelError(_store_shape_sentence(self.name(), got, target)) from None
        self.write(round_to(values, self.root.dtype))
        for st in self.states():
            st.written_by_threads = st.ever_written = True
        program().log(current(), "smem.store", slot=self.name())


def _store_shape_sentence(name: str, got: tuple, target: tuple) -> str:
    said = f"the tile stored into {name} (smem.store) has shape {list(got)} where the buffer is {list(target)}"
    if len(got) == 2 and got[::-1] == target:
        return (said + ": it is the buffer's shape transposed. A tile computed transposed (swap-AB computes Cᵀ, its "
                "rows along C's N) must be permuted, gl.permute(tile, (1, 0)), before it is stored into a buffer of "
                "C's box")
    return said + ": a tile goes into a buffer of its own shape (for a TMA store, the descriptor's box)"


class BarrierRef:
    """``bars.index(i)`` of an allocation of mbarriers."""

    def __init__(self, root: SharedRoot, i: int):
        if not 0 <= i < len(root.barriers):
            raise ModelOutOfBounds(f"{root.name}.index({i}) outside its {len(root.barriers)} barriers")
        self.root, self.i = root, i
        self.barrier = root.barriers[i]


def _barrier(x):
    if isinstance(x, BarrierRef):
        return x.barrier
    if isinstance(x, Shared) and x.root.is_barrier and len(x.root.barriers) == 1:
        return x.root.barriers[0]
    raise ModelError("an mbarrier operation on something that is not one mbarrier: index the allocation "
                     "(bars.index(i)) first")


class _Target:
    """What an mbarrier operation on ``x`` reaches from CTA ``cta`` (the current one by default). Without a cluster:
    the barrier itself. In a cluster (``model.cluster``): the barrier of the lowest CTA among those that share it
    (``leader``), whether this CTA is that one (init, wait and invalidate run there only), and how many CTAs share it
    (init's count is multiplied by that)."""

    def __init__(self, x, cta=None):
        prog = program()
        self.cluster = prog.cluster
        if self.cluster is None:
            self._barrier, self.leader, self.here, self.sharing = _barrier(x), None, True, 1
            return
        if isinstance(x, BarrierRef):
            root, index = x.root, (x.i,)
        elif isinstance(x, Shared) and x.root.is_barrier and x.slot is None and not x.steps:
            root, index = x.root, ()
        else:
            _barrier(x)                              # its sentence
            raise ModelError("an mbarrier operation on a view of barriers the model does not know")
        cta = prog.cta if cta is None else cta
        rest = root.shape[len(index):]
        bases = _cluster.cga_bases(root.layout, self.cluster.size)
        part = _cluster.part_slices(rest, bases, cta)
        starts = [sl.indices(n)[0] for sl, n in zip(part, rest)]
        if int(np.prod([len(range(*sl.indices(n))) for sl, n in zip(part, rest)])) != 1:
            raise ModelError(f"an mbarrier operation on {root.name}{list(index) or ''}, of which each CTA holds more "
                             "than one mbarrier: index the allocation (bars.index(i)) first")
        self.root, self.element = root, tuple(index) + tuple(starts)
        self.leader = _cluster.leader(cta, _cluster.broadcast_mask(bases))
        self.here = self.leader == cta
        self.sharing = self.cluster.size // int(np.prod(rest))
        self._barrier = None

    def barrier(self):
        """The mbarrier itself (in the leader's shared memory)."""
        if self._barrier is None:
            self._barrier = self.cluster.ctas[self.leader].roots[self.root.index].grid[self.element]
        return self._barrier


def _outstanding(owner_ident: int, kind: str, group, owner=None) -> bool:
    for p in (owner or program()).partitions:
        if p.ident == owner_ident:
            groups = {"wgmma": p.wgmma_groups, "tma_store": p.store_groups}[kind]
            return any(g == group for g, _ in groups)
    return False


def check_read(view: Shared, reader: str, async_proxy: bool = False) -> None:
    me = current()
    for st in view.states():
        pw = st.pending_write
        if pw is not None:
            kind = pw[0]
            if kind == "tma":
                bar, phase = pw[1], pw[2]
                seen = me.observed.get(id(bar), 0)
                if seen <= phase:
                    raise ModelRace(
                        f"{reader} reads {view.name()} before waiting for the TMA copy into it: the copy completes "
                        f"phase {phase} of {bar.name}, but this {me.name}'s waits on that barrier have seen only "
                        f"{seen} phase(s) complete (is the phase parity of the wait right?)")
            elif kind in ("cp.async", "direct-to-LDS"):
                owner, group = pw[1], pw[2]
                if group is None:
                    raise ModelRace(
                        f"{reader} reads {view.name()} while the {kind} copy into it was never committed: no "
                        "commit_group() closed its group, and wait_group waits only for committed groups, so no wait "
                        "orders this read after the copy: call commit_group() after the copies, then wait_group")
                if any(g == group for g, _ in owner.cp_groups):
                    raise ModelRace(
                        f"{reader} reads {view.name()} while the {kind} copy into it may still be in flight: "
                        "commit its group, then async_copy.wait_group until that group is done" +
                        ("" if group is None else f" (it is group {_group_age(owner, group)} of the "
                         f"{len(owner.cp_groups)} still in flight, oldest first)"))
            st.pending_write = None
        if async_proxy and st.written_by_threads:
            raise ModelRace(f"{reader} reads {view.name()}, written by the threads' own stores, without "
                            "fence_async_shared() in between: the asynchronous proxy may not see those writes")


def _group_age(owner, group) -> int:
    """1 for the oldest group still in flight, 2 for the next, ..."""
    return 1 + [g for g, _ in owner.cp_groups].index(group)


def check_write(view: Shared, writer: str) -> None:
    for st in view.states():
        for (kind, ident, group) in list(st.async_reads):
            if _outstanding(ident, kind, group, view.root.owner):
                reader = ("a wgmma group that may still be reading it: retire that group with warpgroup_mma_wait "
                          "first (with warp specialization: release the slot only after that wait)"
                          if kind == "wgmma" else
                          "a TMA store that may still be reading it: tma.store_wait first")
                raise ModelRace(f"{writer} overwrites {view.name()} while {reader}")
            del st.async_reads[(kind, ident, group)]
        if st.pending_write is not None:
            what = st.pending_write[0]
            raise ModelRace(f"{writer} writes {view.name()} while the {what} copy into it has not been waited for")


# -- allocation, and the gl namespace --------------------------------------------------------------

def _assigned_name(default: str) -> str:
    """The variable the caller assigns the allocation to (``a_ring = gl.allocate_shared_memory(...)``)."""
    frame = inspect.currentframe()
    try:
        caller = frame.f_back.f_back
        line = linecache.getline(caller.f_code.co_filename, caller.f_lineno)
        m = re.match(r"^\s*(\w+)\s*(?::[^=]+)?=\s*", line)
        return m.group(1) if m else default
    finally:
        del frame


def allocate_shared_memory(element_ty, shape, layout, value=None, _name=None):
    from triton.experimental.gluon.language.nvidia.ampere.mbarrier import MBarrierLayout
    from triton.experimental.gluon import language as gl

    is_barrier = isinstance(layout, MBarrierLayout)
    if is_barrier and element_ty != gl.int64:
        raise ModelError("mbarriers are 64-bit words: allocate them as gl.int64")
    prog = program()
    shape = [int(s) for s in shape]
    mine = None
    if prog.cluster is not None and not is_barrier:      # the part of the tile this CTA holds
        mine = _cluster.holds(shape, _cluster.cga_bases(layout, prog.cluster.size), prog.cta)
    root = SharedRoot(_name or _assigned_name(f"smem{len(prog.roots)}"), element_ty, shape, layout, is_barrier,
                      index=len(prog.roots), owner=prog, mine=mine)
    prog.roots.append(root)
    view = Shared(root)
    if value is not None:
        view.store(value)
    return view


def allocate_mbarrier(batch=None, two_ctas=False):
    """Triton 3.9.0's ``mbarrier.allocate_mbarrier``: one mbarrier per CTA (per slot of ``batch``), each CTA's its
    own (``MBarrierLayout.multicta``); with ``two_ctas``, one per pair of CTAs."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.ampere.mbarrier import MBarrierLayout

    prog = program()
    num_ctas = 1 if prog.cluster is None else prog.cluster.size
    per_cta = num_ctas // 2 if two_ctas and num_ctas > 1 else num_ctas
    bases = ([[0]] if two_ctas and num_ctas > 1 else []) + [[1 << i] for i in range(per_cta.bit_length() - 1)]
    shape = [per_cta] if batch is None else [int(batch), per_cta]
    return allocate_shared_memory(gl.int64, shape, MBarrierLayout(bases if num_ctas > 1 else None),
                                  _name=_assigned_name("mbarriers"))


def require_drained(part: Partition) -> None:
    """Raise ModelRace when ``part`` ends with asynchronous work still in flight (wgmma groups, TMA stores, copies)."""
    if part.wgmma_groups:
        raise ModelRace(f"the {part.name} ends with {len(part.wgmma_groups)} wgmma group(s) still running: "
                        "warpgroup_mma_wait(0, ...) before the end")
    if part.store_groups:
        raise ModelRace(f"the {part.name} ends with {len(part.store_groups)} TMA store(s) still reading shared "
                        "memory: tma.store_wait(0) before the end")
    if part.cp_uncommitted:
        kind = part.cp_uncommitted[0].pending_write[0] if part.cp_uncommitted[0].pending_write else "cp.async"
        raise ModelRace(f"the {part.name} ends with {kind} copies never committed (no commit_group() after them): no "
                        "wait can cover them; commit their group, then async_copy.wait_group(0) before the end")
    if part.cp_groups:
        states = [st for _, sts in part.cp_groups for st in sts]
        kind = "direct-to-LDS" if any(st.pending_write and st.pending_write[0] == "direct-to-LDS" for st in states) \
            else "cp.async"
        raise ModelRace(f"the {part.name} ends with {kind} copies still in flight: async_copy.wait_group(0) "
                        "before the end")


def require_copies_waited(prog) -> None:
    """Raise ModelRace when ``prog`` ends with a TMA copy into its shared memory that no wait of the program covered:
    on a GPU the copy may still be writing when the CTA exits (and its shared memory goes to the next CTA)."""
    for root in prog.roots:
        for i, st in enumerate(root.slots):
            pw = st.pending_write
            if pw is not None and pw[0] == "tma" and pw[1].waited <= pw[2]:
                raise ModelRace(f"the program ends with the TMA copy into {root.slot_name(i)} never waited for (it "
                                f"completes phase {pw[2]} of {pw[1].name}, which no wait saw): on a GPU the CTA may "
                                "exit while the copy still writes its shared memory. Is a copy issued for a block the "
                                "program never reads (a prefetch or a refill bounded one block too far)?")


def _int(x):
    x = value_of(x)
    return x.item() if isinstance(x, np.ndarray) and x.ndim == 0 else x


def _cdiv(a, b):
    return -(-_int(a) // _int(b))


def _minimum(a, b, propagate_nan=None):
    a, b = _int(a), _int(b)
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return min(a, b)
    return as_tensor(np.minimum(a, b))


def _maximum(a, b, propagate_nan=None):
    a, b = _int(a), _int(b)
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return max(a, b)
    return as_tensor(np.maximum(a, b))


def builtin_min(*args, **kwargs):
    """``min(a, b, ...)`` in a kernel. Triton's code generator reads the name as ``language.core.builtin_min``: the
    Python minimum when every argument is a constant, else the elementwise ``minimum`` of two or more values (a
    tensor included, which Triton 3.9.0 accepts with a deprecation warning). Anything else is Python's own min."""
    if len(args) < 2 or kwargs:
        return min(*args, **kwargs)
    out = args[0]
    for x in args[1:]:
        out = _minimum(out, x)
    return out


def builtin_max(*args, **kwargs):
    """``max(a, b, ...)`` in a kernel: ``language.core.builtin_max``, as ``builtin_min``."""
    if len(args) < 2 or kwargs:
        return max(*args, **kwargs)
    out = args[0]
    for x in args[1:]:
        out = _maximum(out, x)
    return out


def _float_or_int(dtype):
    from triton.experimental.gluon import language as gl

    return np.int64 if dtype in (gl.int1, gl.int8, gl.int16, gl.int32, gl.int64) else np.float32


def _matmul(a, b, acc, use_acc=True) -> Tensor:
    a, b = np.asarray(value_of(a, "multiplies"), dtype=np.float64), np.asarray(value_of(b, "multiplies"),
                                                                               dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ModelError(f"the product's operands are {list(a.shape)} and {list(b.shape)}: A must be M×K and B "
                         "K×N (is an operand transposed or swapped?)")
    product = a @ b
    acc = np.asarray(acc, dtype=np.float64)
    if acc.shape != product.shape:
        raise ModelError(f"the accumulator is {list(acc.shape)} but A·B is {list(product.shape)}: a product adds into "
                         "an accumulator of A's rows by B's columns (is the tile's size read off another box than "
                         "A's and B's?)")
    if use_acc is not True:
        use_acc = bool(np.asarray(value_of(use_acc)))
    return as_tensor((product + (acc if use_acc else 0)).astype(np.float32))


def _dot_fma(a, b, acc):
    return _matmul(a, b, value_of(acc))


def _mma_v2(a, b, acc, input_precision=None):
    if isinstance(a, Shared) or isinstance(b, Shared):
        raise ModelError("mma_v2 takes its operands in registers: load them from shared memory first")
    return _matmul(a, b, value_of(acc))


def _arange(start, end, layout=None):
    start, end = int(start), int(end)
    if end > start and (end - start) & (end - start - 1):
        # Triton's compiler refuses it ("arange's range must be a power of 2", language/semantic.py).
        raise ModelError(f"gl.arange({start}, {end}) has {end - start} elements: Triton's compiler takes a power of 2 "
                         "only; round the length up to one (a constexpr such as 1 << (n - 1).bit_length()) and mask "
                         "the elements past n")
    return as_tensor(np.arange(start, end, dtype=np.int64))


def _zeros(shape, dtype, layout=None):
    return as_tensor(np.zeros([int(s) for s in shape], dtype=_float_or_int(dtype)))


def _full(shape, value, dtype, layout=None):
    return as_tensor(np.full([int(s) for s in shape], value, dtype=_float_or_int(dtype)))


def _identity(x, *args, **kwargs):
    return x


def _nothing(*args, **kwargs):
    return None


def _static_assert(condition, message="", *args, **kwargs):
    """A compile-time assertion: the compiler stops on it, and so does the model (an open gap of a starter)."""
    if not bool(value_of(condition)):
        raise NotImplementedError(str(message) or "a gl.static_assert failed")


def _static_range(*args):
    return range(*(int(a) for a in args))


def _sum(x, axis=None, keep_dims=False, **kwargs):
    return as_tensor(np.sum(np.asarray(value_of(x), dtype=np.float64), axis=axis, keepdims=keep_dims)
                     .astype(np.float32))


def _max(x, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """gl.max (triton.language.standard.max): the largest element along ``axis``. For floats Triton combines with
    ``maximum`` (arith.maxnumf): a NaN loses to any number, so NaN comes out only where every element is NaN, as
    numpy's fmax gives; −inf is an ordinary value (the maximum of a row all −inf is −inf). Integers as they are."""
    if return_indices:
        raise ModelUnsupported("gl.max(..., return_indices=True)")
    v = np.asarray(value_of(x))
    if v.dtype.kind == "f":
        v = v.astype(np.float32)
        out = np.fmax.reduce(v, axis=axis, keepdims=keep_dims) if axis is not None else np.fmax.reduce(v.ravel())
    else:
        out = np.max(v, axis=axis, keepdims=keep_dims)
    if axis is None and keep_dims:
        out = np.reshape(out, [1] * v.ndim)
    return as_tensor(out)


def _exp(x):
    """gl.exp in fp32 (the GPU's ex2.approx of x·log2(e) is within 2 ulp of it)."""
    with np.errstate(over="ignore"):            # e^x past fp32's range is inf, on the GPU as here
        return as_tensor(np.exp(np.asarray(value_of(x), dtype=np.float32)))


def _exp2(x):
    with np.errstate(over="ignore"):
        return as_tensor(np.exp2(np.asarray(value_of(x), dtype=np.float32)))


def _elementwise(fn):
    """An elementwise fp32 operation of gl (gl.abs, gl.log, gl.sqrt, …) as numpy's, on the value's fp32 array; an
    integer stays an integer where numpy keeps it one (abs)."""
    def op(x, *args, **kwargs):
        value = np.asarray(value_of(x))
        return as_tensor(fn(value if value.dtype.kind in "iu" and fn is np.abs else value.astype(np.float32)))
    return op


def _rsqrt(x):
    return as_tensor(np.float32(1) / np.sqrt(np.asarray(value_of(x), dtype=np.float32)))


def _fdiv(x, y, *args, **kwargs):
    """gl.fdiv (and gl.div_rn): x / y in fp32 (the GPU's approximate division is within 2 ulp of it)."""
    return as_tensor(np.asarray(value_of(x), np.float32) / np.asarray(value_of(y), np.float32))


def _fma(a, b, c):
    return as_tensor(np.asarray(value_of(a), np.float32) * np.asarray(value_of(b), np.float32)
                     + np.asarray(value_of(c), np.float32))


def grid_dependency_wait(*args, **kwargs):
    """triton.language.extra.cuda.gdc_wait (PTX griddepcontrol.wait). The model runs one kernel at a time, so there
    is nothing to wait for; the program's trace records where it stood, for the checks that ask what was read or
    written before it."""
    program().log(current(), "griddepcontrol.wait")


def grid_dependency_launch_dependents(*args, **kwargs):
    """gdc_launch_dependents (PTX griddepcontrol.launch_dependents): a hint to schedule the next grid; logged."""
    program().log(current(), "griddepcontrol.launch_dependents")


def _where(condition, x, y):
    return as_tensor(np.where(np.asarray(value_of(condition), dtype=bool), value_of(x), value_of(y)))


def _program_id(axis):
    return current().pid[int(axis)]


def _num_programs(axis):
    return current().grid[int(axis)]


def _num_ctas():
    """The CTAs of a cluster (``model.cluster``; 1 without one)."""
    prog = program()
    return 1 if prog.cluster is None else prog.cluster.size


def _num_warps():
    return current().num_warps


def _cast(x, dtype, **kwargs):
    return as_tensor(round_to(value_of(x), dtype))


def _expand_dims(x, axis):
    return as_tensor(np.expand_dims(value_of(x), int(axis)))


def _dims(dims) -> list[int]:
    """Triton's dims or shape, given as one tuple or as separate values (``permute(x, 1, 0)``, ``permute(x, (1, 0))``)."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    return [int(_int(d)) for d in dims]


def _reshape(x, *shape, **kwargs):
    v, shape = np.asarray(value_of(x)), _dims(shape)
    if int(np.prod(shape)) != v.size:
        raise ModelError(f"gl.reshape of a {list(v.shape)} tensor ({v.size} elements) to {shape} "
                         f"({int(np.prod(shape))} elements): a reshape keeps the number of elements")
    return as_tensor(np.reshape(v, shape))


def _split(x):
    """gl.split: a tensor whose last dimension is 2 into its two halves along it."""
    v = np.asarray(value_of(x))
    if v.shape[-1] != 2:
        raise ModelError(f"gl.split of a tensor of shape {list(v.shape)}: its last dimension must be 2")
    return as_tensor(v[..., 0]), as_tensor(v[..., 1])


def _permute(x, *order):
    v, order = np.asarray(value_of(x)), _dims(order)
    if sorted(order) != list(range(v.ndim)):
        raise ModelError(f"gl.permute of a {v.ndim}-D tensor {list(v.shape)} by {order}: the order names each of its "
                         f"dimensions 0 to {v.ndim - 1} once")
    return as_tensor(np.transpose(v, order))


GL = {
    "program_id": _program_id, "num_programs": _num_programs, "num_warps": _num_warps, "num_ctas": _num_ctas,
    "arange": _arange, "zeros": _zeros, "full": _full, "load": load, "store": store,
    "convert_layout": _identity, "set_auto_layout": _identity, "cdiv": _cdiv, "minimum": _minimum,
    "maximum": _maximum, "where": _where, "static_range": _static_range, "expand_dims": _expand_dims,
    "sum": _sum, "dot_fma": _dot_fma, "allocate_shared_memory": allocate_shared_memory, "barrier": _cta_barrier,
    "multiple_of": _identity, "max_contiguous": _identity,
    "max_constancy": _identity, "assume": _nothing, "static_assert": _static_assert, "cast": _cast, "reshape": _reshape,
    "permute": _permute, "split": _split, "atomic_add": atomic_add, "atomic_xchg": atomic_xchg,
    "exp": _exp, "exp2": _exp2, "abs": _elementwise(np.abs), "log": _elementwise(np.log),
    "log2": _elementwise(np.log2), "sqrt": _elementwise(np.sqrt), "rsqrt": _rsqrt, "fma": _fma,
    "fdiv": _fdiv, "div_rn": _fdiv, "max": _max,
}


# -- mbarriers -------------------------------------------------------------------------------------

def _try_complete(bar) -> None:
    if bar.initialised and bar.pending == 0 and bar.issued_bytes == bar.expected_bytes:
        owner = bar.owner or program()
        owner.log(current(), "phase complete", barrier=bar.name, phase=bar.completed,
                  **({} if owner is program() else {"by": current().label}))
        bar.completed += 1
        bar.pending, bar.expected_bytes, bar.issued_bytes, bar.expects, bar.copies = bar.count, 0, 0, 0, []


def _pred(pred) -> bool:
    return bool(np.asarray(value_of(pred)))


def mbarrier_init(mbarrier, count):
    target = _Target(mbarrier)
    if not target.here:             # a barrier the CTAs share is initialised by its leader, for all of them
        return
    bar, count = target.barrier(), int(count) * target.sharing
    bar.initialised, bar.count, bar.pending = True, int(count), int(count)
    bar.completed, bar.expected_bytes, bar.issued_bytes, bar.expects = 0, 0, 0, 0
    program().log(current(), "init", barrier=bar.name, count=int(count))


def _require_initialised(bar) -> None:
    if not bar.initialised:
        prog = program()
        if getattr(bar, "invalidated", False) and bar.owner is not None and bar.owner is not prog:
            error = ModelRace(f"{current().label} uses {bar.name} after CTA {bar.owner.cta} invalidated it: a CTA "
                              "retired the mbarriers of its shared memory while another CTA of the cluster still used "
                              "them; gl.barrier(cluster=True) before the invalidates keeps them until every CTA is done")
            error.located = True
            raise error
        raise ModelError(f"{bar.name} is used before mbarrier.init (or after mbarrier.invalidate)")


def _arrive(bar, count: int, what: str) -> None:
    _require_initialised(bar)
    bar.pending -= count
    if bar.pending < 0:
        raise ModelError(f"{what} on {bar.name} arrives more often in one phase than mbarrier.init's count "
                         f"({bar.count}) allows")


def _require_own_routing(what: str, from_cta) -> None:
    """``from_cta`` (Triton 3.9.0's arrive and expect): which CTA-rank bits an arrival keeps on its way; the default
    (every bit: each CTA to its own barrier, or to its leader's) is what the model routes."""
    num_ctas = _num_ctas()
    if from_cta is not None and int(from_cta) != num_ctas - 1:
        raise ModelUnsupported(f"{what}(from_cta={from_cta}) (arrivals routed to another CTA's barrier)")


def mbarrier_expect(mbarrier, bytes_per_cta=None, pred=True, *, from_cta=None, **kwargs):
    _require_own_routing("mbarrier.expect", from_cta)
    _cluster.after_inits()
    if not _pred(pred):
        return
    bar = _Target(mbarrier).barrier()
    _arrive(bar, 1, "expect()")
    bar.expected_bytes += int(bytes_per_cta)
    bar.expects += 1
    program().log(current(), "expect", barrier=bar.name, phase=bar.completed, bytes=int(bytes_per_cta))
    if bar.issued_bytes > bar.expected_bytes and bar.pending == 0:
        raise ModelError(f"the copies into {bar.name} bring {bar.issued_bytes} bytes but expect() announced "
                         f"{bar.expected_bytes}")
    _try_complete(bar)


def mbarrier_arrive(mbarrier, *, count=1, pred=True, from_cta=None, **kwargs):
    _require_own_routing("mbarrier.arrive", from_cta)
    _cluster.after_inits()
    if not _pred(pred):
        return
    bar = _Target(mbarrier).barrier()
    _arrive(bar, int(count), "arrive()")
    program().log(current(), "arrive", barrier=bar.name, phase=bar.completed)
    _try_complete(bar)
    yield_turn()


def mbarrier_wait(mbarrier, phase, pred=True, deps=()):
    _cluster.after_inits()
    target = _Target(mbarrier)
    if not _pred(pred):
        return
    if not target.here:                         # only the leader waits on a barrier the CTAs share
        program().log(current(), "wait skipped", barrier=target.barrier().name, leader=target.leader)
        return
    bar, me = target.barrier(), current()
    _require_initialised(bar)
    parity = int(np.asarray(value_of(phase))) & 1
    me.last_wait = {"barrier": bar.name, "parity": parity, "completed": bar.completed,
                    "blocked": (bar.completed & 1) == parity}
    if (bar.completed & 1) == parity:
        program().log(me, "wait blocks", barrier=bar.name, parity=parity, seen=bar.completed)
        block_until(lambda: (bar.completed & 1) != parity,
                    f"waits on {bar.name} with parity {parity}: {bar.describe()}")
    me.observed[id(bar)] = max(me.observed.get(id(bar), 0), bar.completed)
    bar.waited = max(bar.waited, bar.completed)
    if target.sharing > 1:
        me.shared_wait = bar.name
    program().log(me, "wait", barrier=bar.name, parity=parity, seen=bar.completed)


def mbarrier_invalidate(mbarrier):
    _cluster.after_inits()
    target = _Target(mbarrier)
    if not target.here:
        return
    bar = target.barrier()
    if bar.issued_bytes or bar.expected_bytes:
        raise ModelRace(f"{bar.name} is invalidated while copies announced to it are still in flight "
                        f"({bar.describe()})")
    bar.initialised, bar.invalidated = False, True
    program().log(current(), "invalidate", barrier=bar.name)


# -- TMA -------------------------------------------------------------------------------------------

class BlockType:
    def __init__(self, shape, dtype, element_bytes):
        self.shape, self.dtype = list(shape), dtype
        self.nbytes = int(np.prod(shape)) * element_bytes


class HostTensorDescriptor:
    """A TMA tensor descriptor in the model: a 2D buffer, a block shape and the shared layout the tiles land in."""

    def __init__(self, buffer: Buffer, block_shape, layout, element_bytes: int = 2):
        self.buffer, self.block_shape, self.layout = buffer, [int(s) for s in block_shape], layout
        self.element_bytes = element_bytes
        self.block_type = BlockType(self.block_shape, buffer.dtype, element_bytes)

    @property
    def dtype(self):
        return self.buffer.dtype

    @property
    def nbytes_per_cta(self) -> int:
        """The bytes of one CTA's part of a tile, as Triton 3.9.0 computes them from the layout's ``cga_layout``: the
        block's bytes over the parts its non-zero bases split it into (all of them without a cluster)."""
        bases = getattr(self.layout, "cga_layout", None) or []
        return self.block_type.nbytes // 2 ** sum(1 for basis in bases if any(basis))

    @property
    def shape(self):
        return list(self.buffer.shape)

    def _window(self, coord):
        rows, cols = self.buffer.shape
        if len(coord) != 2:
            raise ModelError(f"a TMA copy at {len(coord)} coordinate(s) through a 2-D descriptor of "
                             f"{self.buffer.name}: give one coordinate per dimension, [row, column]")
        (r, c), (h, w) = [int(_int(x)) for x in coord], self.block_shape
        r0, r1, c0, c1 = max(r, 0), min(r + h, rows), max(c, 0), min(c + w, cols)
        return r, c, r0, r1, c0, c1

    def box(self, coord) -> np.ndarray:
        """The tile at ``coord``, zero-filled where it hangs over an edge (as TMA fills it)."""
        r, c, r0, r1, c0, c1 = self._window(coord)
        out = np.zeros(self.block_shape, dtype=np.float32)
        if r0 < r1 and c0 < c1:
            out[r0 - r:r1 - r, c0 - c:c1 - c] = self.buffer.view2d()[r0:r1, c0:c1]
        return out

    def write_box(self, coord, values: np.ndarray, mine=None) -> None:
        """A TMA store: the tile written where it lies inside the tensor, the rest dropped; ``mine`` (a cluster's
        CTA): only the elements of the tile it marks, the CTA's part."""
        r, c, r0, r1, c0, c1 = self._window(coord)
        if r0 < r1 and c0 < c1:
            inside = (slice(r0 - r, r1 - r), slice(c0 - c, c1 - c))
            keep = np.ones((r1 - r0, c1 - c0), dtype=bool) if mine is None else np.asarray(mine)[inside]
            target = self.buffer.view2d()[r0:r1, c0:c1]
            target[keep] = round_to(values[inside], self.buffer.dtype)[keep]
            rows_cols = np.arange(self.buffer.size).reshape(self.buffer.shape)[r0:r1, c0:c1]
            np.add.at(self.buffer.writes, rows_cols[keep].reshape(-1), 1)


def _require_descriptor(desc, what: str) -> None:
    if not isinstance(desc, HostTensorDescriptor):
        raise ModelError(f"{what} needs a tensor descriptor as its first argument, got {type(desc).__name__}")


def tma_async_load(tensor_desc, coord, barrier, result, pred=True, multicast=False, cache_policy=None):
    _cluster.after_inits()
    if not _pred(pred):
        return
    _require_descriptor(tensor_desc, "tma.async_load")
    _require_shared(result, "tma.async_load")
    me = current()
    if list(result.shape) != tensor_desc.block_shape:
        raise ModelError(f"tma.async_load of a {tensor_desc.block_shape} block into {result.name()}, which is "
                         f"{result.shape}: the slot must have the descriptor's block shape")
    prog = program()
    if prog.cluster is None:
        bar = _barrier(barrier)
        _require_initialised(bar)
        _tma_land(tensor_desc, coord, bar, result, tensor_desc.block_type.nbytes, local=True)
        return
    # A cluster: which CTAs the copy lands in, each in its part of the tile, each reported on its own barrier.
    cl = prog.cluster
    bases = _cluster.cga_bases(result.root.layout, cl.size)
    if bases != _cluster.cga_bases(tensor_desc.layout, cl.size):
        raise ModelError(f"tma.async_load through a descriptor whose cga_layout is "
                         f"{_cluster.cga_bases(tensor_desc.layout, cl.size)} into {result.name()}, whose layout's is "
                         f"{bases}: the descriptor's layout says which part of the box each CTA copies, the slot's "
                         "which part it holds; allocate the slot with the descriptor's layout")
    shared = _cluster.broadcast_mask(bases)
    if multicast and not shared:
        raise ModelError(f"tma.async_load(..., multicast=True) into {result.name()}, of which every CTA holds a "
                         f"different part (its cga_layout {bases} has no basis of zeros): a multicast writes the same "
                         "part into several CTAs; a tile that several CTAs read whole needs bases of zeros")
    if multicast and _cluster.leader(prog.cta, shared) != prog.cta:
        prog.log(me, "tma load skipped", slot=result.name(),
                 why=f"CTA {_cluster.leader(prog.cta, shared)} multicasts it")
        return
    recipients = _cluster.sharers(prog.cta, shared, cl.size) if multicast else [prog.cta]
    for cta in recipients:
        dest = result if cta == prog.cta else Shared(cl.ctas[cta].roots[result.root.index], result.slot,
                                                     result.steps)
        if cta != prog.cta:
            _cluster.require_free_for_multicast(dest, me)
        _tma_land(tensor_desc, coord, _Target(barrier, cta).barrier(), dest, tensor_desc.nbytes_per_cta,
                  local=cta == prog.cta)
    if multicast:
        me.shared_wait = None


def _tma_land(tensor_desc, coord, bar, result, nbytes: int, local: bool) -> None:
    """One TMA copy landing in ``result`` (a CTA's slot) and bringing ``nbytes`` to ``bar``. ``local``: the issuing
    CTA's own barrier, for which expect() must come first; a multicast's bytes may reach another CTA's barrier
    before that CTA's expect() (the barrier's count of bytes may go below zero within a phase)."""
    me = current()
    _require_initialised(bar)
    check_write(result, "a TMA copy")
    result.write(tensor_desc.box(coord))
    for st in result.states():
        st.pending_write, st.ever_written = ("tma", bar, bar.completed), True
        st.fills += 1
    if local and bar.expects == 0:
        raise ModelError(
            f"a TMA copy of {nbytes} bytes into {result.name()} reports to {bar.name}, whose phase {bar.completed} "
            "has no expect() yet: expect() must announce the bytes of every copy that reports to the barrier "
            "(A's tile and B's), before the copies start. If an expect() came just before, it counted too few bytes "
            "and the phase completed without this copy")
    bar.issued_bytes += nbytes
    program().log(me, "tma load", barrier=bar.name, phase=bar.completed, slot=result.name(),
                  coord=[int(_int(x)) for x in coord], bytes=nbytes,
                  **({} if result.root.owner is None or result.root.owner is program()
                     else {"into_cta": result.root.owner.cta}))
    if bar.issued_bytes > bar.expected_bytes and bar.pending == 0:
        raise ModelError(f"the copies into {bar.name} bring {bar.issued_bytes} bytes in phase {bar.completed}, "
                         f"but expect() announced {bar.expected_bytes}: count both tiles' bytes, once")
    _try_complete(bar)


def _require_shared(view, what: str) -> None:
    if not isinstance(view, Shared):
        raise ModelError(f"{what} takes a buffer in shared memory, not a tensor in registers: a TMA copy moves data "
                         "between global and shared memory only (store the tile into a shared buffer first, fence, "
                         "then hand that buffer to the copy)")


def tma_async_store(tensor_desc, coord, src, cache_policy=None):
    _require_descriptor(tensor_desc, "tma.async_store")
    _require_shared(src, "tma.async_store")
    me, prog = current(), program()
    mine = None
    if prog.cluster is not None:
        # Each CTA stores its part of the tile; a part several CTAs hold is stored by the lowest of them.
        shared = _cluster.broadcast_mask(_cluster.cga_bases(src.root.layout, prog.cluster.size))
        if _cluster.leader(prog.cta, shared) != prog.cta:
            prog.log(me, "tma store skipped", slot=src.name())
            return
        mine = None if src.root.mine is None else src._apply(src.root.mine)
    check_read(src, "a TMA store", async_proxy=True)
    if list(src.shape) != tensor_desc.block_shape:
        raise ModelError(f"tma.async_store of {src.name()} ({src.shape}) through a descriptor of blocks "
                         f"{tensor_desc.block_shape}")
    tensor_desc.write_box(coord, src.view(), mine)
    group = me.group_id()
    for st in src.states():
        st.async_reads[("tma_store", me.ident, group)] = src.name()
    me.store_groups.append((group, src.states()))
    program().log(me, "tma store", slot=src.name(), coord=[int(_int(x)) for x in coord])


def tma_store_wait(pendings, read_only=True):
    me = current()
    while len(me.store_groups) > int(pendings):
        me.store_groups.pop(0)
    program().log(me, "tma store wait", depth=int(pendings))


def fence_async_shared(cluster=False):
    program().log(current(), "fence")
    for root in program().roots:
        for st in root.slots:
            st.written_by_threads = False


# -- cp.async --------------------------------------------------------------------------------------

def cp_async_load(smem, pointer, mask=None, *args, **kwargs):
    me = current()
    if not isinstance(pointer, Pointer):
        raise ModelUnsupported("async_copy.async_load from something other than a pointer tensor")
    mask = True if mask is None else value_of(mask)
    offsets, mask_b = _broadcast(pointer.offsets, np.asarray(mask, dtype=bool), what="async_copy.async_load")
    if list(offsets.shape) != smem.shape:
        raise ModelError(f"async_copy.async_load of {list(offsets.shape)} pointers into {smem.name()} "
                         f"({smem.shape}): the shapes must match")
    check_write(smem, "a cp.async copy")
    values = np.where(mask_b, pointer.buffer.read(offsets, mask_b), 0.0)      # masked-off elements: zero-filled
    smem.write(values)
    for st in smem.states():
        st.pending_write, st.ever_written = ("cp.async", me, None), True
        me.cp_uncommitted.append(st)
    program().log(me, "cp.async", slot=smem.name())


def cp_commit_group(kind="cp.async"):
    """Close the group of the copies of ``kind`` (cp.async; AMD's direct-to-LDS copies) issued since the last one."""
    me = current()
    group = me.group_id()
    for st in me.cp_uncommitted:
        if st.pending_write == (kind, me, None):
            st.pending_write = (kind, me, group)
    me.cp_groups.append((group, me.cp_uncommitted))
    me.cp_uncommitted = []
    program().log(me, "commit_group", group=group)


def cp_wait_group(num_outstanding=0, kind="cp.async"):
    """Retire the oldest committed groups until at most ``num_outstanding`` are in flight. Copies no commit_group has
    closed belong to no group, and a wait counts groups: they stay in flight whatever the depth, and a read of their
    buffer is a race. (Triton 3.9.0's AMD docstring says uncommitted copies are waited upon by wait_group(0), but in
    its own listings a wait with no committed group before it emits no ``s_waitcnt vmcnt`` at all: lesson 22's loop
    without its commit_group reads LDS straight after the copies.)"""
    me = current()
    retired = []
    while len(me.cp_groups) > int(num_outstanding):
        group, states = me.cp_groups.pop(0)
        retired.append(group)
        for st in states:
            if st.pending_write == (kind, me, group):
                st.pending_write = None
    program().log(me, "wait_group", depth=int(num_outstanding), retired=retired,
                  uncommitted=len(me.cp_uncommitted))


# -- wgmma -----------------------------------------------------------------------------------------

def _never_written(view: Shared, reader: str) -> None:
    """A slot read by wgmma that no copy or store has ever written: say why, from the reader's last wait."""
    if all(st.ever_written for st in view.states()):
        return
    me = current()
    w = me.last_wait
    if w is not None and w["parity"] == 1 and not w["blocked"] and w["completed"] == 0:
        raise ModelRace(
            f"{reader} reads {view.name()} before any copy into it was issued: the {me.name}'s wait on {w['barrier']} "
            "with parity 1 returned at once (on a fresh barrier parity 1 names the phase before phase 0, which counts "
            "as complete). That parity is a trip behind: it waits for the slot's copy of the previous trip, so on a "
            "GPU every slot is read one trip early (the first trip's reads wait for nothing, each later one only for "
            "the copy STAGES steps before): wrong numbers, or a hang when a copy lands before its wait. The "
            "consumers' parity on trip r is r & 1, (step // STAGES) & 1; the ^ 1 belongs to the producer's wait on "
            "empty, whose first trip must not wait")
    raise ModelRace(f"{reader} reads {view.name()}, into which no copy was ever issued: is a wait missing before it, "
                    "or does the slot it reads run ahead of the copies?")


def _operand(x, reader: str):
    if isinstance(x, Shared):
        _never_written(x, reader)
        check_read(x, reader, async_proxy=True)
        return x.view()
    return np.asarray(value_of(x, "multiplies"))


def warpgroup_mma(a, b, acc, *, use_acc=True, precision=None, max_num_imprecise_acc=None, is_async=False):
    me = current()
    av, bv = _operand(a, "wgmma"), _operand(b, "wgmma")
    acc_value = acc.value if isinstance(acc, AsyncAcc) else value_of(acc)
    result = _matmul(av, bv, acc_value, use_acc)
    slots = [s for s in (a, b) if isinstance(s, Shared)]
    program().log(me, "wgmma", slots=[s.name() for s in slots], is_async=bool(is_async))
    if not is_async:
        return result
    group = me.group_id()
    program().trace[-1]["group"] = group
    states = []
    for s in slots:
        for st in s.states():
            st.async_reads[("wgmma", me.ident, group)] = s.name()
            states.append(st)
    me.wgmma_groups.append((group, states))
    return AsyncAcc(result, me, group)


def warpgroup_mma_wait(num_outstanding=0, deps=None):
    if deps is None:
        raise ValueError("warpgroup_mma_wait deps must be given")
    me = current()
    retired = []
    while len(me.wgmma_groups) > int(num_outstanding):
        retired.append(me.wgmma_groups.pop(0)[0])
    program().log(me, "wgmma wait", depth=int(num_outstanding), retired=retired)
    out = []
    for d in deps:
        if isinstance(d, AsyncAcc) and not d.outstanding():
            d = as_tensor(d.value)
        out.append(d)
    return out[0] if len(out) == 1 else tuple(out)


def warpgroup_mma_init(value):
    return value
