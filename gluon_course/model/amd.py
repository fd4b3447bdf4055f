"""AMD's operations in the host model (lessons 20 on): MFMA, buffer loads and stores with the hardware's range check,
direct-to-LDS copies grouped by ``commit_group`` and retired by ``wait_group``, and ``gl.amd.slice``.

What the hardware does, as the model does it:

* **buffer loads and stores** address memory as a scalar base (``ptr``) plus a 32-bit offset per element. The
  buffer descriptor Triton builds covers 2^31 - 2 bytes from the base; a lane whose byte offset falls outside that
  range (a negative offset is a huge unsigned one) reads 0 and writes nothing. Triton gives masked-off lanes such an
  offset, so a masked-off load reads 0 (then ``other``, when given) and a masked-off store is dropped. An offset
  inside the range but outside the tensor reads or writes memory that is not the tensor's: the model stops there
  (``ModelOutOfBounds``), as it does for an unmasked ``gl.load``.
* **direct-to-LDS copies** (``async_copy.buffer_load_to_shared``) land in LDS asynchronously. ``commit_group`` closes
  a group of them; ``wait_group(n)`` returns once at most ``n`` groups are still in flight. Copies no
  ``commit_group`` has closed are in no group and stay in flight: Triton's docstring says ``wait_group(0)`` waits for
  them too, but Triton 3.9.0 emits no ``s_waitcnt vmcnt`` for a wait that no committed group reaches (lesson 22's
  loop without its ``commit_group`` reads LDS straight after its copies), so the model counts only committed groups.
  A read of LDS (``.load``, ``load_shared_relaxed``) that a copy into the same buffer may still be writing is a race:
  the model names it, at the read after the wait that fails to cover it. A program that ends with copies in flight
  is one too.
* **MFMA** (``cdna3.mfma``, also reached as ``cdna4.mfma``) multiplies register operands and adds the accumulator;
  ``cd_regclass`` (which register file holds the accumulator) changes no value and is accepted.

Layouts (MFMA, padded and swizzled LDS, linear) are accepted and ignored, like every layout in the model. The
barriers between waves (``gl.barrier``) are not modelled: the model runs a program as one, and Triton's own pass
inserts the barriers a direct-to-LDS kernel needs between waves (lesson 25 shows it).
"""
from __future__ import annotations

import numpy as np

from . import shims
from .runtime import ModelError, current, program
from .shims import Pointer, Shared, as_tensor, check_write, round_to, value_of

# The range Triton's buffer descriptors cover from their base: 2^31 - 2 bytes (gluon_course.amd.launch.BUFFER_BYTES).
BUFFER_BYTES = 2 ** 31 - 2
KIND = "direct-to-LDS"


def _element_bytes(dtype) -> int:
    return max(1, int(getattr(dtype, "primitive_bitwidth", 16)) // 8)


def _base(ptr, what: str) -> Pointer:
    if not isinstance(ptr, Pointer) or ptr.offsets.ndim != 0:
        raise ModelError(f"{what} takes a scalar base pointer (the tensor's pointer argument) and a tensor of offsets; "
                         "add the offsets to the offsets tensor, not to the pointer")
    return ptr


def _addresses(ptr: Pointer, offsets, mask, what: str):
    """(element offsets from the buffer's start, lanes that access memory) of a buffer operation."""
    offsets = np.asarray(value_of(offsets))
    if not np.issubdtype(offsets.dtype, np.integer):
        raise ModelError(f"{what} takes integer offsets (elements from the base), got {offsets.dtype}")
    mask = True if mask is None else value_of(mask)
    offsets, mask = shims._broadcast(offsets.astype(np.int64), np.asarray(mask, dtype=bool))
    byte_offsets = offsets * _element_bytes(ptr.buffer.dtype)
    in_range = (byte_offsets >= 0) & (byte_offsets < BUFFER_BYTES)
    return int(ptr.offsets) + offsets, mask & in_range


def buffer_load(ptr, offsets, mask=None, other=None, cache=None):
    ptr = _base(ptr, "buffer_load")
    where, active = _addresses(ptr, offsets, mask, "buffer_load")
    values = np.where(active, ptr.buffer.read(where, active), 0.0).astype(np.float32)
    if other is not None and mask is not None:
        values = np.where(np.broadcast_to(np.asarray(value_of(mask), dtype=bool), values.shape), values,
                          np.asarray(value_of(other), dtype=np.float32))
    return as_tensor(values)


def buffer_store(stored_value, ptr, offsets, mask=None, cache=None):
    ptr = _base(ptr, "buffer_store")
    where, active = _addresses(ptr, offsets, mask, "buffer_store")
    values = np.broadcast_to(np.asarray(value_of(stored_value, "stores"), dtype=np.float32), where.shape)
    ptr.buffer.write(where, round_to(values, ptr.buffer.dtype), active)


def buffer_load_to_shared(dest, ptr, offsets, mask=None, other=None, cache_modifier=""):
    me = current()
    if not isinstance(dest, Shared):
        raise ModelError("buffer_load_to_shared copies into shared memory: its first argument is an LDS buffer "
                         "(gl.allocate_shared_memory, or .index(i) of one)")
    ptr = _base(ptr, "buffer_load_to_shared")
    where, active = _addresses(ptr, offsets, mask, "buffer_load_to_shared")
    if list(where.shape) != dest.shape:
        raise ModelError(f"buffer_load_to_shared of {list(where.shape)} offsets into {dest.name()} ({dest.shape}): "
                         "the shapes must match")
    check_write(dest, "a direct-to-LDS copy")
    values = np.where(active, ptr.buffer.read(where, active), 0.0)
    if other is not None and mask is not None:
        values = np.where(np.broadcast_to(np.asarray(value_of(mask), dtype=bool), values.shape), values,
                          np.asarray(value_of(other), dtype=np.float32))
    dest.view()[...] = values
    for st in dest.states():
        st.pending_write = (KIND, me, None)
        me.cp_uncommitted.append(st)
    program().log(me, "lds copy", slot=dest.name())


def commit_group():
    shims.cp_commit_group(KIND)


def wait_group(num_outstanding=0):
    # Committed groups only (the module's docstring says why uncommitted copies stay in flight).
    shims.cp_wait_group(num_outstanding, KIND)


def load_shared_relaxed(smem, layout=None):
    if not isinstance(smem, Shared):
        raise ModelError("load_shared_relaxed reads an LDS buffer")
    return smem.load(layout)


def mfma(a, b, acc, cd_regclass=None):
    if isinstance(a, Shared) or isinstance(b, Shared):
        raise ModelError("mfma takes its operands in registers: read them from LDS first (.load(a_layout))")
    if cd_regclass not in (None, "a", "v"):
        raise ModelError(f"cd_regclass must be None, 'a' or 'v', got {cd_regclass!r}")
    return shims._matmul(a, b, value_of(acc))


def amd_slice(source, shape, offsets):
    source = np.asarray(value_of(source))
    shape, offsets = [int(s) for s in shape], [int(o) for o in offsets]
    if len(shape) != source.ndim or len(offsets) != source.ndim:
        raise ModelError(f"slice: shape {shape} and offsets {offsets} must have the source's rank {source.ndim}")
    if any(o < 0 or o + s > n for o, s, n in zip(offsets, shape, source.shape)):
        raise ModelError(f"slice: offsets {offsets} + shape {shape} exceed the source's shape {list(source.shape)}")
    return as_tensor(source[tuple(slice(o, o + s) for o, s in zip(offsets, shape))].copy())


CDNA3 = {"mfma": mfma, "buffer_load": buffer_load, "buffer_store": buffer_store}
ASYNC_COPY = {"buffer_load_to_shared": buffer_load_to_shared, "commit_group": commit_group, "wait_group": wait_group,
              "load_shared_relaxed": load_shared_relaxed}


def namespaces(make) -> tuple[dict, object]:
    """The stand-ins of AMD's Gluon modules, made with run.py's ``make(real, label, ops, submodules)``: a table
    id(real module or function) -> stand-in, and the stand-in of ``gl.amd`` (for ``gl.amd.cdna3.mfma`` and the like)."""
    from triton.experimental.gluon.language import amd
    from triton.experimental.gluon.language.amd import cdna3, cdna4
    from triton.experimental.gluon.language.amd.cdna4 import async_copy

    copy_ns = make(async_copy, "async_copy", ASYNC_COPY)
    cdna3_ns = make(cdna3, "cdna3", CDNA3)
    cdna4_ns = make(cdna4, "cdna4", CDNA3, {"async_copy": copy_ns})
    amd_ns = make(amd, "amd", {"slice": amd_slice}, {"cdna3": cdna3_ns, "cdna4": cdna4_ns})
    table = {id(amd): amd_ns, id(cdna3): cdna3_ns, id(cdna4): cdna4_ns, id(async_copy): copy_ns}
    for module, ops in ((cdna3, CDNA3), (async_copy, ASYNC_COPY)):
        for name, fn in ops.items():
            table[id(getattr(module, name))] = fn
    table[id(amd.slice)] = amd_slice
    return table, amd_ns
