"""Which TMA copies of a compiled kernel carry an L2 eviction hint, read from its PTX (lesson 32).

A Gluon ``tma.async_load`` or ``tma.async_store`` with ``cache_policy=CachePolicy(l2=FractionalEvictionPolicy(...))``
compiles (Triton 3.9.0) to a ``createpolicy.fractional.L2::<priority>.b64 %rdP, <fraction>;`` and a
``cp.async.bulk.tensor....L2::cache_hint`` copy whose last operand is ``%rdP``; a copy without one has neither. Each
copy names its descriptor by a register that holds the address of one of the kernel's 128-byte parameters (a
CUtensorMap), through ``mov.b32 %r, <kernel>_param_<i>; cvt.u64.u32 %rd, %r; cvta.param.u64 %rdD, %rd;``. So every
copy can be traced to the descriptor it reads or writes: the n-th 128-byte parameter is the kernel's n-th
descriptor argument.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_MAP_PARAM = re.compile(r"\.param \.align \d+ \.b8 (\w+_param_(\d+))\[128\]")
_MOV_PARAM = re.compile(r"mov\.b(?:32|64)\s+(%r\w*\d+), (\w+_param_\d+);")
_CVT = re.compile(r"cvt\.u64\.u32\s+(%rd\d+), (%r\d+);")
_CVTA = re.compile(r"cvta\.param\.u64\s+(%rd\d+), (%r\w*\d+);")
_POLICY = re.compile(r"createpolicy\.fractional\.L2::(\w+)(?:\.L2::(\w+))?\.b64\s+(%rd\d+), ([0-9.eE+-]+);")
_COPY = re.compile(r"cp\.async\.bulk\.tensor\.\dd\.([\w:.]+?)\s+\[([^\]]+)\], \[([^\]]+)\](?:, \[([^\]]+)\])?"
                   r"(?:, (%rd\d+))?;")


@dataclass(frozen=True)
class TmaCopy:
    """One TMA copy in the PTX: ``load`` (global to shared) or ``store``; ``descriptor``: the index of its
    descriptor among the kernel's descriptor arguments (None where the trace fails); ``hint``: the L2 priority
    (``"evict_first"``, ...) or None."""
    load: bool
    descriptor: int | None
    hint: str | None


def tma_copies(ptx: str) -> list[TmaCopy]:
    """Every TMA copy of ``ptx`` in program order, with its descriptor and its L2 hint."""
    maps = [name for name, _ in sorted(_MAP_PARAM.findall(ptx), key=lambda m: int(m[1]))]
    index = {name: i for i, name in enumerate(maps)}
    holds = {}                                   # register -> the descriptor parameter whose address it holds
    for reg, name in _MOV_PARAM.findall(ptx):
        if name in index:
            holds[reg] = index[name]
    for wide, narrow in _CVT.findall(ptx):
        if narrow in holds:
            holds[wide] = holds[narrow]
    for generic, wide in _CVTA.findall(ptx):
        if wide in holds:
            holds[generic] = holds[wide]
    policies = {reg: primary for primary, _, reg, _ in _POLICY.findall(ptx)}
    copies = []
    for kind, first, second, _, policy in _COPY.findall(ptx):
        load = kind.startswith("shared::cta.global") or kind.startswith("shared::cluster.global")
        desc = (second if load else first).split(",")[0].strip()
        copies.append(TmaCopy(load, holds.get(desc), policies.get(policy) if policy else None))
    return copies
