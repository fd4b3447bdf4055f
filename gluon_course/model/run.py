"""Run a ``@gluon.jit`` kernel in the host model: its Python body, once per program, with Gluon's operations
replaced by the model's (``shims``). The kernel's own source is what runs: a learner's kernel, not a copy of it."""
from __future__ import annotations

import contextlib
import itertools
import linecache
import os
import types

import numpy as np

from . import amd, shims
from .runtime import ModelError, ModelUnsupported, Partition, Program, current, program, run_partitions


class _Namespace:
    """A stand-in for a Gluon module: the model's version of each operation it knows, the real classes (layouts,
    dtypes, constexpr) for everything else, and ModelUnsupported for an operation it does not know."""

    def __init__(self, real, label: str, ops: dict, submodules: dict | None = None):
        self._real, self._label, self._ops, self._sub = real, label, ops, submodules or {}

    def __getattr__(self, name):
        if name in self._ops:
            return self._ops[name]
        if name in self._sub:
            return self._sub[name]
        value = getattr(self._real, name)
        if getattr(value, "__triton_builtin__", False) or isinstance(value, types.ModuleType):
            return _unsupported(f"{self._label}.{name}")
        return value


def _unsupported(name: str):
    def stub(*args, **kwargs):
        raise ModelUnsupported(name)
    return stub


def _namespaces() -> dict:
    """id(real module or function) -> its stand-in."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia import ampere, hopper
    from triton.experimental.gluon.language.nvidia.ampere import async_copy, mbarrier as ampere_mbarrier
    from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

    barrier_ops = {"init": shims.mbarrier_init, "expect": shims.mbarrier_expect, "arrive": shims.mbarrier_arrive,
                   "wait": shims.mbarrier_wait, "invalidate": shims.mbarrier_invalidate,
                   "allocate_mbarrier": shims.allocate_mbarrier}
    mb = _Namespace(mbarrier, "mbarrier", barrier_ops)
    tma_ns = _Namespace(tma, "tma", {"async_load": shims.tma_async_load, "async_store": shims.tma_async_store,
                                     "store_wait": shims.tma_store_wait})
    cp = _Namespace(async_copy, "async_copy", {"async_load": shims.cp_async_load,
                                               "commit_group": shims.cp_commit_group,
                                               "wait_group": shims.cp_wait_group})
    wgmma = {"warpgroup_mma": shims.warpgroup_mma, "warpgroup_mma_wait": shims.warpgroup_mma_wait,
             "warpgroup_mma_init": shims.warpgroup_mma_init, "fence_async_shared": shims.fence_async_shared}
    hop = _Namespace(hopper, "hopper", wgmma, {"mbarrier": mb, "tma": tma_ns})
    amp_mb = _Namespace(ampere_mbarrier, "mbarrier", barrier_ops)
    amp = _Namespace(ampere, "ampere", {"mma_v2": shims._mma_v2}, {"async_copy": cp, "mbarrier": amp_mb})
    amd_table, amd_ns = amd.namespaces(_Namespace)           # AMD's operations (model/amd.py)
    gl_ns = _Namespace(gl, "gl", {**shims.GL, "warp_specialize": warp_specialize}, {"amd": amd_ns})
    table = {**amd_table, id(gl): gl_ns, id(mbarrier): mb, id(ampere_mbarrier): amp_mb, id(tma): tma_ns, id(async_copy): cp,
             id(hopper): hop, id(ampere): amp, id(ampere.mma_v2): shims._mma_v2}
    for name, fn in wgmma.items():
        table[id(getattr(hopper, name))] = fn
    # Grid dependency control, Triton's own functions (Gluon kernels call them as tl kernels do).
    from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
    table[id(gdc_wait)] = shims.grid_dependency_wait
    table[id(gdc_launch_dependents)] = shims.grid_dependency_launch_dependents
    return table


_TABLE: dict | None = None
_PATCHED: dict = {}


def _replacement(value):
    from triton.runtime.jit import JITFunction

    global _TABLE
    if _TABLE is None:
        _TABLE = _namespaces()
    if id(value) in _TABLE:
        return _TABLE[id(value)]
    if isinstance(value, JITFunction):
        return _jit_wrapper(value)
    if getattr(value, "__triton_builtin__", False):
        return _unsupported(getattr(value, "__name__", "a Gluon builtin"))
    if isinstance(value, types.ModuleType) and value.__name__.startswith("triton.experimental.gluon.language"):
        return _Namespace(value, value.__name__.rsplit(".", 1)[-1], {})
    return value


def _jit_wrapper(jit_fn):
    def call(*args, **kwargs):
        return patched(jit_fn)(*args, **kwargs)
    call.__name__ = getattr(jit_fn, "__name__", "jit function")
    return call


def patched(fn):
    """The Python function behind ``fn`` (a @gluon.jit function, or a plain function), with its globals pointing at
    the model's operations."""
    raw = getattr(fn, "fn", fn)
    if not isinstance(raw, types.FunctionType):
        return fn
    key = id(raw)
    if key not in _PATCHED or _PATCHED[key][0] is not raw:
        globals_ = {}
        fresh = types.FunctionType(raw.__code__, globals_, raw.__name__, raw.__defaults__, raw.__closure__)
        fresh.__kwdefaults__ = raw.__kwdefaults__
        # The cache keeps ``raw`` itself: a function made and dropped (a lambda) could otherwise leave its id to a
        # new one, which would then get the old function's body.
        _PATCHED[key] = (raw, fresh)
        globals_.update({name: _replacement(value) for name, value in raw.__globals__.items()})
        globals_.setdefault("__builtins__", raw.__globals__.get("__builtins__"))
        if raw is not fn:
            # Inside a @gluon.jit function Triton's code generator reads the names min and max as its own
            # builtin_min/builtin_max (language.core): the elementwise minimum or maximum of two or more values.
            globals_.setdefault("min", shims.builtin_min)
            globals_.setdefault("max", shims.builtin_max)
    return _PATCHED[key][1]


def warp_specialize(functions_and_args, worker_num_warps, worker_num_regs=None):
    """``gl.warp_specialize`` in the model: each partition's function runs (``patched``) as a partition of the program,
    taking turns at its waits; every partition must end with nothing in flight."""
    pairs = list(functions_and_args)
    if len(worker_num_warps) != len(pairs) - 1:
        raise ModelError(f"warp_specialize got {len(pairs)} partitions but {len(worker_num_warps)} worker warp "
                         "counts: one per worker (every partition but the first)")
    prog, parent = program(), current()
    parts = []
    for i, (fn, args) in enumerate(pairs):
        name = "default partition" if i == 0 else f"worker partition {i - 1}"
        warps = parent.num_warps if i == 0 else int(worker_num_warps[i - 1])
        parts.append(Partition(name, parent.pid, parent.grid, warps, ident=parent.ident * 16 + i + 1))
    saved = prog.partitions
    prog.partitions = parts
    try:
        bodies = [(part, (lambda fn=fn, args=args: patched(fn)(*tuple(args)))) for part, (fn, args) in zip(parts, pairs)]
        results = run_partitions(prog, bodies)
    finally:
        prog.partitions = saved
    for part in parts:
        shims.require_drained(part)
    return results[0]



_MODEL_DIR = os.path.dirname(os.path.abspath(__file__))
# Where the libraries live (the standard library; numpy and the other installed packages): their frames are skipped.
_LIBRARIES = (os.path.dirname(os.path.abspath(os.__file__)), os.path.dirname(os.path.dirname(os.path.abspath(np.__file__))))


@contextlib.contextmanager
def kernel_code_running():
    """Around a run of a kernel's own code: the model's errors pass as they are, and an exception a line of the kernel
    raised as Python becomes what ``unmodelled`` concludes (re-raised as it is where that is None)."""
    try:
        yield
    except (ModelError, ModelUnsupported):
        raise
    except Exception as e:  # noqa: BLE001 - a line of the kernel that Python cannot run as the GPU does
        unsupported = unmodelled(e)
        if unsupported is None:
            raise
        raise unsupported from e


def unmodelled(error: BaseException) -> ModelError | ModelUnsupported | None:
    """When ``error`` was raised by a line of the kernel's own code run as Python, what the model concludes (None for a
    NameError: a name the line never defined, which the compiler refuses too, re-raised as it is): a
    ModelError when the line combines tensors whose shapes do not broadcast to one shape (numpy refuses it where
    Triton's compiler refuses it too: a mistake of the kernel, said as one), else the ModelUnsupported that names the
    line (numpy refusing what the compiled kernel does); None when it comes from the model itself (one of its own
    errors, or a fault of the model, which must not be hidden as "not modelled")."""
    if isinstance(error, NameError):
        # A name the kernel's own line uses and never defines (UnboundLocalError too): the compiler refuses the same
        # kernel ("... is not defined"), so it is the kernel's mistake, said as one by the runner, not "not modelled".
        return None
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno))
        tb = tb.tb_next
    for filename, lineno in reversed(frames):          # innermost first
        path = os.path.abspath(filename)
        if path.startswith(_MODEL_DIR):
            return None
        if path.startswith(_LIBRARIES):
            continue
        code = linecache.getline(filename, lineno).strip()
        line = f"line {lineno} of {os.path.basename(filename)}"
        shapes = shims.broadcast_failure(error)
        if shapes is not None:
            return ModelError(f"{line} (`{code}`) combines tensors of shapes {' and '.join(shapes)}, which do not "
                              "broadcast to one shape (Triton's compiler refuses it too): is one of them transposed, "
                              "or built along the wrong axis ([:, None] against [None, :])?")
        return ModelUnsupported(f"what {line} does (`{code}`): Python cannot run it as the compiled kernel runs it")
    return None


_LAUNCHES = itertools.count(1)


def run(kernel, grid, *args, num_warps: int = 4, order=None, **kwargs) -> list[Program]:
    """Run ``kernel`` over ``grid`` (an int or a tuple of up to 3) with ``args`` (model buffers' pointers,
    descriptors, ints) and ``kwargs`` (the constexprs, by name). Returns each program's state (its trace).

    Raises ModelHang, ModelRace, ModelOutOfBounds or ModelError with a sentence when the kernel's protocol is wrong,
    and ModelUnsupported when the kernel uses an operation the model does not know, or has a line that Python cannot
    run as the compiled kernel does (``unmodelled``): the model then concludes nothing.

    Each program runs with scalars where the GPU has scalars (its program id, the integer arguments and what is
    computed from them are Python ints or one-element arrays), so Python control flow on them (``if``, a ternary,
    ``and``/``or``) and builtin ``min``/``max`` run as Triton compiles them.

    ``order``: the programs' numbers (x fastest) in the order the model runs them, one after another; by default
    0, 1, 2, …. Any order is a schedule a GPU can produce for a kernel whose programs never wait on one another."""
    body = patched(kernel)
    grid = (grid,) if isinstance(grid, int) else tuple(int(g) for g in grid)
    grid = grid + (1,) * (3 - len(grid))
    programs = []
    launch = next(_LAUNCHES)
    pids = [(x, y, z) for z, y, x in itertools.product(*(range(g) for g in reversed(grid)))]
    numbers = range(len(pids)) if order is None else [int(i) for i in order]
    if sorted(numbers) != list(range(len(pids))):
        raise ValueError(f"order must list each of the {len(pids)} programs once")
    for number in numbers:
        pid = pids[number]
        prog = Program(pid, grid, num_warps)
        prog.index, prog.launch = number, launch
        part = Partition("program", pid, grid, num_warps)
        prog.partitions = [part]
        # fp32 arithmetic as the GPU's: an overflow is inf and 0/0 or inf − inf is NaN, silently.
        with kernel_code_running(), np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            run_partitions(prog, [(part, lambda: body(*args, **kwargs))])
        shims.require_drained(part)
        shims.require_copies_waited(prog)
        programs.append(prog)
    return programs
