"""Checks of a launcher that keeps plans and TMA descriptors: lesson 31's ``Matmul`` and ``Plan``, and the plans that
lessons 32, 33 and 34 keep through ``nvidia.launch``. They run on CPU tensors: a plan is built, and a descriptor set
kept, before anything is launched, so every question here is answered without a GPU.

Each check creates the situation it names, because the easy versions of these tests pass wrong caches:

- alignment: a view of each operand TMA reads or writes at every offset TMA refuses (1 to 15 bytes past a 16-byte
  boundary, in whole elements: 2, 4, … 14 bytes for bf16), each after a plan for its aligned twin (the same shape and
  strides) is kept, and a row stride 8 bytes off a multiple of 16. A signature that tests alignment at 8 bytes reuses
  the aligned plan for the view 8 bytes past, and only that offset shows it;
- identity: the same memory through a new view object must find its kept descriptors, and a view object freed while
  its memory lives on, followed by a view of other memory to which Python gives the freed object's ``id``, must not
  get the freed view's descriptors (a cache keyed by ``id(t)`` hands them over);
- the bounds: as many distinct signatures, and as many distinct *live* addresses (tensors held at once, so that no
  address is freed and handed out again), as the bound and 8 more. The newest ``bound`` entries must then all be
  found again and the first must be gone: the oldest (or least recently used) goes first. A cache that never evicts
  keeps more; one that drops the newest entry rebuilds every entry past the bound on every call.

A lesson describes its launcher with ``KeptLauncher`` and takes its checks from ``plans_check`` and
``descriptors_check``; tests/test_kept_plans.py runs the same checks on the toolkit's own keeping code
(``nvidia.launch``: ``signature``, ``keep``, ``kept_descriptors``, ``host_descriptors``) and on broken copies of it.
"""
from __future__ import annotations

import gc
import itertools
import weakref
from dataclasses import dataclass, field
from typing import Callable

EXTRA = 8                    # how many entries past a bound the bound checks add
# Each run of the plans check fills the bound with signatures no earlier run used (its N grows by 8 a run): a cache
# that outlives one check (a module's own, lessons 33 and 34) must not already hold them.
_RUNS = itertools.count()


@dataclass
class KeptLauncher:
    """How the checks drive one lesson's launcher on the CPU. ``new(mod)`` (given to ``plans_check`` and
    ``descriptors_check``) builds one per check, so a launcher's own caches start empty where they are its own."""
    operands: Callable            # operands(M, N, K, dtype=None) -> one call's arguments, in fresh CPU memory
    tma: dict                     # {name: position in the arguments} of each operand TMA reads or writes
    plan: Callable                # plan(args) -> the kept plan for these arguments (found or built)
    plans: Callable               # plans() -> the mapping of kept plans
    plans_kept: int               # its bound
    descriptors_kept: int         # the bound of a plan's descriptor sets
    descriptors: Callable | None = None    # descriptors(plan, args) -> the kept set; default plan.descriptors_for
    kept_sets: Callable | None = None      # kept_sets(plan) -> the plan's mapping of sets; default plan.descriptors
    described: Callable | None = None      # described(plan, args) -> the views the set describes, in its order;
    #                                        default each TMA operand's row-major view (w.t() read as W), in tma order
    signature: Callable | None = None      # the learner's signature(*args) (lesson 31): it must make a key
    other_dtype: object = None             # a second dtype the launcher takes (fp16): another signature
    written: str = "C"                     # the operand the kernel writes
    shape: tuple = field(default=(256, 512, 384))          # M, N, K of the operands the checks start from

    def descriptor_set(self, plan, args):
        if self.descriptors is not None:
            return self.descriptors(plan, args)
        return plan.descriptors_for(*(args[i] for i in self.tma.values()))

    def sets_of(self, plan):
        return self.kept_sets(plan) if self.kept_sets is not None else plan.descriptors

    def views(self, plan, args) -> tuple:
        if self.described is not None:
            return tuple(self.described(plan, args))
        return tuple(row_major(args[i]) for i in self.tma.values())


def gemm_operands(M: int, N: int, K: int, dtype=None, b_kn: bool = False) -> tuple:
    """A (M × K), B (K × N, or by default w.t() of an N × K W, as nn.Linear keeps it) and an empty C, on the CPU, in
    bf16 (or ``dtype``): a call's arguments for lessons 31, 32 and 33's launchers."""
    import torch

    dtype = dtype or torch.bfloat16
    a = torch.randn(M, K).to(dtype)
    b = torch.randn(K, N).to(dtype) if b_kn else torch.randn(N, K).to(dtype).t()
    return a, b, torch.empty(M, N, dtype=dtype)


def row_major(t):
    """The view of ``t`` a TMA descriptor describes: ``t`` itself, or its transpose where ``t`` is the transpose of a
    row-major matrix (``w.t()``)."""
    return t.t() if t.dim() == 2 and t.shape[1] > 1 and t.stride(1) != 1 and t.stride(0) == 1 else t


def twin(t, offset_bytes: int = 0, row_stride=None):
    """A tensor of ``t``'s shape, dtype and strides (or another row stride) in fresh memory, starting ``offset_bytes``
    past a 16-byte boundary: a new address for the same signature, or a view TMA refuses."""
    import torch

    size = t.element_size()
    strides = list(t.stride())
    if row_stride is not None:
        strides[0 if strides[0] != 1 or t.shape[1] <= 1 else 1] = row_stride
    span = 1 + sum((n - 1) * s for n, s in zip(t.shape, strides))
    storage = torch.empty((span * size + offset_bytes + 64,), dtype=torch.uint8)
    start = (-storage.data_ptr()) % 64 + offset_bytes              # a 64-byte boundary, then the offset
    return storage[start:start + span * size].view(t.dtype).as_strided(tuple(t.shape), tuple(strides))


def _row_stride_off(t) -> int:
    """A row stride for ``t``'s row-major view 8 bytes longer than its own: 8 bytes off a multiple of 16 bytes."""
    return row_major(t).stride(0) + 8 // t.element_size()


def _replaced(args, position: int, tensor) -> tuple:
    out = list(args)
    out[position] = tensor
    return tuple(out)


def _first_unhashable(value, path=()):
    """(path, part) of the first part of ``value`` that cannot be a dictionary key, or None."""
    try:
        hash(value)
        return None
    except TypeError:
        pass
    if isinstance(value, tuple):
        for i, part in enumerate(value):
            found = _first_unhashable(part, path + (i,))
            if found is not None:
                return found
    return path, value


def key_problem(signature: Callable, args, call: str = "signature(a, b, c)") -> str | None:
    """A sentence when ``signature(*args)`` cannot be a dictionary key (a list, or a tuple holding one), else None."""
    found = _first_unhashable(signature(*args))
    if found is None:
        return None
    path, part = found
    kind = type(part).__name__
    if not path:
        return (f"{call} returned a {kind}: a plan is kept in a dictionary under its signature, and a {kind} cannot "
                f"be a dictionary key (it could change after it was stored). Return a tuple, e.g. tuple(... for t in "
                "(a, b, c)), whose parts are hashable too: a shape (torch.Size), strides (t.stride() is a tuple), a "
                "dtype, a device and a bool are; a list is not")
    where = "".join(f"[{i}]" for i in path)
    return (f"{call}{where} is a {kind} ({part!r:.60}): a plan is kept in a dictionary under its signature, so the "
            f"signature must be a tuple of hashable parts only; make this part a tuple (tuple(...)) or another "
            "hashable value")


def _assertion_sentence(launcher: KeptLauncher, args, what: str) -> str:
    """What an AssertionError raised while a plan or descriptor set was built means: Triton's TensorDescriptor checks
    with assert, so a view that reaches it unchecked (or the wrong view) fails there instead of in the course's
    tma_descriptor, which says what to do. ``what``: the operands, as the sentence names them."""
    for name, position in launcher.tma.items():
        t = args[position]
        if t.data_ptr() % 16:
            return (f"{what} reached Triton's own descriptor check ({name} starts {t.data_ptr() % 16} bytes past a "
                    "16-byte boundary): the plan's TMA checks (tma_descriptor, a sentence for each of TMA's rules) did "
                    f"not run on this {name} before its descriptor was built (a new alignment must be a new signature, "
                    "and a new signature's plan runs every check)")
    for name, position in launcher.tma.items():
        t = args[position]
        if t.dim() == 2 and t.shape[1] > 1 and t.stride(1) != 1:
            rows, cols = t.shape
            return (f"{what}: {name}'s descriptor was built on {name} as it is ({rows}×{cols}, strides "
                    f"{tuple(t.stride())}), which is the transpose of a row-major {cols}×{rows} matrix: Triton's own "
                    f"descriptor check refused it. Build (and check) the descriptor on the row-major view, "
                    f"{name.lower()}.t() ({cols}×{rows}), the view the kernel reads as N × K")
        if (row_major(t).stride(0) * t.element_size()) % 16:
            return (f"{what} reached Triton's own descriptor check ({name}'s rows are "
                    f"{row_major(t).stride(0) * t.element_size()} bytes apart): the plan's TMA checks (tma_descriptor) "
                    f"did not run on this {name} before its descriptor was built")
    return (f"{what}: an assertion failed while the plan or its descriptors were built, with every operand aligned "
            "and row-major: the descriptors must be built on the views the plan's TMA checks (tma_descriptor) ran on, "
            "with the boxes and layouts the plan worked out for them")


def _attempt(launcher: KeptLauncher, args):
    """("plan", plan) or ("refused", ValueError) or ("asserted", AssertionError) or ("unhashable", TypeError)."""
    try:
        return "plan", launcher.plan(args)
    except ValueError as e:
        return "refused", e
    except AssertionError as e:
        return "asserted", e
    except TypeError as e:
        if "unhashable" not in str(e):
            raise
        return "unhashable", e


UNHASHABLE = ("the plans' dictionary cannot take the key made for these operands: a plan is kept under its signature, "
              "so the signature (and the key around it) must be a tuple of hashable parts: a list is not, "
              "tuple(...) around it is")


def _describe(args, launcher: KeptLauncher) -> str:
    return ", ".join(f"{name} {'×'.join(map(str, args[i].shape))}" for name, i in launcher.tma.items())


def valid_plan(launcher: KeptLauncher, args, what: str = "the first operands"):
    """(plan, None) for arguments every check accepts, or (None, the sentence that says why there is none: the
    signature is not a key, Triton's assertion refused a view, or a check refused valid operands). A lesson's other
    checks that need a plan get it here, so that they say the same."""
    if launcher.signature is not None:
        problem = key_problem(launcher.signature, args)
        if problem:
            return None, problem
    return _valid_plan(launcher, args, what)


def _valid_plan(launcher: KeptLauncher, args, what: str):
    how, got = _attempt(launcher, args)
    if how == "plan":
        return got, None
    if how == "asserted":
        return None, _assertion_sentence(launcher, args, what)
    if how == "unhashable":
        return None, UNHASHABLE
    return None, f"{what} ({_describe(args, launcher)}, all valid) were refused: {got}"


def _set(launcher: KeptLauncher, plan, args, what: str):
    """(the descriptor set, None) or (None, a sentence where Triton's own assertion refused a view)."""
    try:
        return launcher.descriptor_set(plan, args), None
    except AssertionError:
        return None, _assertion_sentence(launcher, args, what)


def plans_problem(launcher: KeptLauncher) -> str | None:
    """A plan is found again for one signature (at any address) and built afresh when a shape, a row stride or the
    dtype changes; a view at every offset TMA refuses, and rows 8 bytes off, are refused with TMA's rule after a plan
    for their aligned twin is kept; a wrong K is refused; at most ``plans_kept`` plans are kept, the newest never
    dropped."""
    M, N, K = launcher.shape
    args = launcher.operands(M, N, K)
    first, problem = valid_plan(launcher, args)
    if problem:
        return problem
    again, problem = _valid_plan(launcher, args, "the same operands again")
    if problem:
        return problem
    if again is not first:
        return ("the same tensors twice got two plans: the plan is not kept per signature, so every call builds it "
                "again (every check, layout and descriptor: the slow path this launcher exists to avoid)")
    moved = tuple(twin(t) if i in launcher.tma.values() else t for i, t in enumerate(args))
    if launcher.plan(moved) is not first:
        names = list(launcher.tma)
        return (f"{', '.join(names[:-1])} and {names[-1]} at other addresses, with the same shapes, strides and "
                "dtypes, got a new plan: the signature holds an address itself; of the address, only whether it is "
                "16-byte aligned belongs in it (descriptors are what is kept by address)")

    # -- a change of shape, row stride or dtype is a new signature ---------------------------------------------------
    a_name, a_at = next(iter(launcher.tma.items()))
    a = args[a_at]
    shorter = _replaced(launcher.operands(M // 2, N, K), a_at, a[:M // 2])            # the same address, fewer rows
    if launcher.plan(shorter) is first:
        return (f"{a_name} with {M // 2} rows instead of {M}, at the same address, kept the old plan: the signature "
                "must hold each tensor's shape")
    wide = twin(a, row_stride=a.stride(0) + 16 // a.element_size())                   # rows 16 bytes further apart
    same = wide.as_strided(tuple(a.shape), tuple(a.stride()))                          # the same address, a's strides
    if launcher.plan(_replaced(args, a_at, wide)) is launcher.plan(_replaced(args, a_at, same)):
        return (f"{a_name} with rows {wide.stride(0) * a.element_size()} bytes apart and {a_name} with rows "
                f"{a.stride(0) * a.element_size()} bytes apart, at one address, got one plan: the signature must hold "
                "each tensor's strides (the descriptors and the kernel's addressing depend on them)")
    if launcher.other_dtype is not None:
        other = launcher.operands(M, N, K, dtype=launcher.other_dtype)
        if launcher.plan(other) is first:
            return (f"the operands as {str(launcher.other_dtype).replace('torch.', '')} kept the plan built for "
                    f"{str(a.dtype).replace('torch.', '')}: the signature must hold each tensor's dtype")

    # -- TMA's rule, at every offset it refuses and for every operand it reads or writes -----------------------------
    for name, at in launcher.tma.items():
        t = args[at]
        size, stride = t.element_size(), _row_stride_off(t)
        # (what, the view, what the signature must hold so that the view gets a plan of its own)
        cases = [(f"{name} {off} bytes past a 16-byte boundary", twin(t, offset_bytes=off),
                  f"{name}'s alignment, as it holds every tensor's that TMA reads or writes (whether t.data_ptr() % 16 "
                  "== 0, TMA's rule" + ("; a test at 8 bytes passes this view" if off == 8 else "") + ")")
                 for off in range(size, 16, size)]
        cases.append((f"{name} with rows {stride * size} bytes apart", twin(t, row_stride=stride),
                      f"{name}'s strides, as it holds every tensor's that TMA reads or writes"))
        for what, view, held in cases:
            launcher.plan(args)                                    # the aligned twin's plan is kept (it is `first`)
            how, got = _attempt(launcher, _replaced(args, at, view))
            if how == "plan" and got is first:
                return (f"{what} got the plan kept for an aligned {name} of the same shape: the signature must hold "
                        f"{held}, so that this view gets a plan of its own, whose checks refuse it with TMA's rule (a "
                        "kept plan's descriptors are built without those checks)")
            if how == "plan":
                return (f"{what} was accepted: a plan was built for it, but TMA refuses it; the plan's checks "
                        "(tma_descriptor) must refuse it with TMA's rule")
            if how == "asserted":
                return _assertion_sentence(launcher, _replaced(args, at, view), what)
            if "16-byte" not in str(got):
                return f"{what} was refused without TMA's 16-byte rule: {got}"

    thin = _replaced(args, a_at, a[:, :K - 64])
    how, got = _attempt(launcher, thin)
    if how == "plan":
        return (f"{a_name} with {K - 64} columns, against K = {K} for the others, was accepted: a new signature's plan "
                "must run every check")

    # -- the bound: PLANS_KEPT + 8 distinct signatures ------------------------------------------------------------
    bound = launcher.plans_kept
    n = 64 + 8 * next(_RUNS)
    calls = [launcher.operands(m, n, 64) for m in range(1, bound + EXTRA + 1)]        # distinct M: distinct signatures
    built = []
    for call in calls:
        p, problem = _valid_plan(launcher, call, f"operands of {call[a_at].shape[0]} rows")
        if problem:
            return problem
        built.append(p)
    if len({id(p) for p in built}) != len(built):
        return (f"{bound + EXTRA} signatures that differ in M got {len({id(p) for p in built})} plans: the signature "
                "must hold each tensor's shape")
    kept = len(launcher.plans())
    if kept > bound:
        return (f"{kept} plans kept after {bound + EXTRA} more signatures: the plans are never evicted; keep at most "
                f"PLANS_KEPT ({bound}), the oldest (or least recently used) going first, so that a program that sees "
                "many shapes does not keep a plan for each forever")
    for i in range(len(calls) - 1, len(calls) - 1 - bound, -1):                      # the newest first
        if launcher.plan(calls[i]) is not built[i]:
            newest = i == len(calls) - 1
            return (f"{'the newest plan' if newest else f'a plan among the newest {bound}'} was rebuilt after "
                    f"{bound + EXTRA} signatures: the eviction drops the {'newest' if newest else 'wrong'} entry, so "
                    "every signature past the bound rebuilds its plan on every call (a slow path, every check and "
                    "layout again); drop the oldest, or the least recently used (popitem(last=False))")
    if launcher.plan(calls[0]) is built[0]:
        return (f"the first of {bound + EXTRA} signatures is still kept while {bound} newer ones are: the eviction "
                "must drop the oldest (or least recently used) entry")
    return None


def descriptors_problem(launcher: KeptLauncher) -> str | None:
    """Descriptors are kept by the addresses they describe: found again for the same memory (through a new view object
    too), built anew for another address (a view of other memory that took a freed view's ``id`` included), each
    describing its tensor's address, sizes and strides, holding no tensor; at most ``descriptors_kept`` sets per plan,
    the newest never dropped."""
    M, N, K = launcher.shape
    args = launcher.operands(M, N, K)
    p, problem = valid_plan(launcher, args)
    if problem:
        return problem
    d1, problem = _set(launcher, p, args, "the first operands")
    if problem:
        return problem
    if launcher.descriptor_set(p, args) is not d1:
        return ("the same tensors twice built their descriptors twice: they are not kept, so every call builds "
                "(and encodes) them again")
    views = launcher.views(p, args)
    if len(d1) != len(views):
        return f"{len(d1)} descriptors for {len(views)} views the kernel reads or writes"
    for desc, t in zip(d1, views):
        if desc.base.data_ptr() != t.data_ptr() or list(desc.shape) != list(t.shape) or \
                list(desc.strides) != list(t.stride()):
            return (f"a descriptor describes {list(desc.shape)} with strides {list(desc.strides)} at "
                    f"{desc.base.data_ptr():#x}; its tensor is {list(t.shape)}, {list(t.stride())} at "
                    f"{t.data_ptr():#x}")

    for name, at in launcher.tma.items():
        moved = _replaced(args, at, twin(args[at]))
        d2, problem = _set(launcher, p, moved, f"{name} at another address")
        if problem:
            return problem
        if d2 is d1 or [d.base.data_ptr() for d in d2] != [t.data_ptr() for t in launcher.views(p, moved)]:
            return (f"{name} at another address reused the old descriptors: they would "
                    f"{'write the old ' + name if name == launcher.written else 'read the old ' + name}; keep them "
                    "by every operand's address")

    # -- identity: the address, not the Python object ------------------------------------------------------------
    a_name, a_at = next(iter(launcher.tma.items()))
    a = args[a_at]
    old = twin(a)                                     # holds the old view's memory after the view is freed
    view = old.as_strided(tuple(a.shape), tuple(a.stride()))
    call = _replaced(args, a_at, view)
    _, problem = _set(launcher, p, call, f"{a_name} at another address")
    if problem:
        return problem
    old_address, freed_id = view.data_ptr(), id(view)
    other = twin(a)                                   # other memory, allocated before the view is freed
    del call, view
    held = []                                         # new views that did not get the freed id, kept so none repeats
    for _ in range(1000):
        candidate = other.as_strided(tuple(a.shape), tuple(a.stride()))
        if id(candidate) == freed_id:
            break
        held.append(candidate)
    else:
        candidate = None                              # Python did not reuse the id here; the next test still holds
    if candidate is not None:
        d3, problem = _set(launcher, p, _replaced(args, a_at, candidate), f"{a_name} at another address")
        if problem:
            return problem
        bases = [d.base.data_ptr() for d in d3]
        if bases != [t.data_ptr() for t in launcher.views(p, _replaced(args, a_at, candidate))]:
            return (f"a view of other memory, given by Python the id of a freed view of {a_name} whose memory still "
                    f"lives, got the freed view's descriptors (address {old_address:#x}, not "
                    f"{candidate.data_ptr():#x}): descriptors kept by id(t) hand stale descriptors to new tensors; "
                    "keep them by the addresses they describe (data_ptr())")
    del old, held
    again = a.as_strided(tuple(a.shape), tuple(a.stride()), a.storage_offset())      # a new object, the same memory
    if launcher.descriptor_set(p, _replaced(args, a_at, again)) is not d1:
        return (f"{a_name}'s memory through a new view object built its descriptors again: they are kept by the Python "
                "object (id()), not by the address they describe (data_ptr()). A new object for the same memory is "
                "every call's case (w.t() makes one each time), and a freed object's id is given to the next one")

    # -- no tensor held -------------------------------------------------------------------------------------------
    fresh = twin(a)
    watched = weakref.ref(fresh)
    _, problem = _set(launcher, launcher.plan(_replaced(args, a_at, fresh)), _replaced(args, a_at, fresh),
                      f"{a_name} at another address")
    if problem:
        return problem
    del fresh
    gc.collect()
    if watched() is not None:
        return (f"a freed {a_name} is still alive: the kept descriptors (or the plan) hold the tensor, not its "
                "address, so every tensor ever passed stays in memory; build descriptors on Address(t), which keeps "
                "the address and dtype only")

    # -- the bound: DESCRIPTORS_KEPT + 8 distinct live addresses -------------------------------------------------
    bound = launcher.descriptors_kept
    live = [twin(a) for _ in range(bound + EXTRA)]                 # all alive at once: no address is reused
    assert len({t.data_ptr() for t in live}) == len(live)
    sets = []
    for t in live:
        d, problem = _set(launcher, p, _replaced(args, a_at, t), f"{a_name} at another address")
        if problem:
            return problem
        sets.append(d)
    kept = len(launcher.sets_of(p))
    if kept > bound:
        return (f"{kept} descriptor sets kept for one plan after {bound + EXTRA} more distinct live addresses of "
                f"{a_name}: they are never evicted; keep at most DESCRIPTORS_KEPT ({bound}) per plan, the oldest (or "
                "least recently used) going first")
    for i in range(len(live) - 1, len(live) - 1 - bound, -1):                        # the newest first
        if launcher.descriptor_set(p, _replaced(args, a_at, live[i])) is not sets[i]:
            newest = i == len(live) - 1
            return (f"{'the newest descriptor set' if newest else f'a set among the newest {bound}'} was built again "
                    f"after {bound + EXTRA} addresses: the eviction drops the {'newest' if newest else 'wrong'} entry, "
                    "so every address past the bound builds (and encodes) its descriptors on every call, a slow path; "
                    "drop the oldest, or the least recently used (popitem(last=False))")
    if launcher.descriptor_set(p, _replaced(args, a_at, live[0])) is sets[0]:
        return (f"the first of {bound + EXTRA} addresses still has its descriptor set while {bound} newer ones do: the "
                "eviction must drop the oldest (or least recently used) entry")
    return None


def plans_check(new: Callable) -> Callable:
    """A lesson's check ``run(mod)``: ``plans_problem`` on ``new(mod)``."""
    def plans(mod):
        return plans_problem(new(mod))
    plans.__doc__ = plans_problem.__doc__
    return plans


def descriptors_check(new: Callable) -> Callable:
    """A lesson's check ``run(mod)``: ``descriptors_problem`` on ``new(mod)``."""
    def descriptors(mod):
        return descriptors_problem(new(mod))
    descriptors.__doc__ = descriptors_problem.__doc__
    return descriptors


def kept_plans_check(new: Callable) -> Callable:
    """One check for both, for lessons whose keeping code is the toolkit's (32, 33, 34)."""
    def kept_plans(mod):
        return plans_problem(new(mod)) or descriptors_problem(new(mod))
    kept_plans.__doc__ = "Both: " + (plans_problem.__doc__ or "") + " " + (descriptors_problem.__doc__ or "")
    return kept_plans
