"""The course's compile targets, and the one table of opcode families per target.

A lesson asks "how many 16-byte global loads?" or "which instructions move data between threads?" once,
by family name; this table says what that family is called in each target's machine code (SASS on
NVIDIA, AMDGCN on AMD). Every pattern is a regular expression matched at the start of an opcode.
"""
from __future__ import annotations

from triton.backends.compiler import GPUTarget

# The course's targets, by the names people use for them.
TARGETS: dict[str, GPUTarget] = {
    "sm_90": GPUTarget("cuda", 90, 32),        # Hopper: H100, H200
    "sm_100": GPUTarget("cuda", 100, 32),      # Blackwell: B200, GB200
    "gfx950": GPUTarget("hip", "gfx950", 64),  # CDNA4: MI350, MI355
    "gfx942": GPUTarget("hip", "gfx942", 64),  # CDNA3: MI300
}
NVIDIA_TARGETS = ("sm_90", "sm_100")
AMD_TARGETS = ("gfx950", "gfx942")

_NV = {
    "global_load": r"LDG\b",
    "global_store": r"STG\b",
    "shared_load": r"(LDS|LDSM)\b",
    "shared_store": r"(STS|STSM)\b",
    "shared": r"(STS|LDS|STSM|LDSM)\b",
    "barrier": r"BAR\b",
    "shuffle": r"SHFL\b",
    "async_copy": r"LDGSTS\b",
    "tma": r"UTMA",
    "mma": r"HMMA\b",
    "wgmma": r"HGMMA\b",
    "fma": r"FFMA2?\b",       # sm_100 pairs FMAs into FFMA2
}
_AMD = {
    "global_load": r"(global|buffer)_load",
    "global_store": r"(global|buffer)_store",
    "shared_load": r"ds_read",
    "shared_store": r"ds_write",
    "shared": r"ds_(read|write)",
    "barrier": r"s_barrier$",
    "shuffle": r"(ds_bpermute|ds_permute|v_permlane|v_mov_b32_dpp)",
    "mma": r"v_mfma",
    "fma": r"v_(fma|fmac)_f32",
}
# family -> target -> pattern; a family a target lacks (wgmma on AMD) is simply absent for it.
OPCODES: dict[str, dict[str, str]] = {}
for _family in sorted(set(_NV) | set(_AMD)):
    OPCODES[_family] = {}
    for _t in NVIDIA_TARGETS:
        if _family in _NV:
            OPCODES[_family][_t] = _NV[_family]
    for _t in AMD_TARGETS:
        if _family in _AMD:
            OPCODES[_family][_t] = _AMD[_family]


def target_named(name: str) -> GPUTarget:
    if name not in TARGETS:
        raise ValueError(f"unknown target {name!r}; the course compiles for {', '.join(TARGETS)}")
    return TARGETS[name]


def warp_size(target: str) -> int:
    """32 threads per warp on NVIDIA, 64 per wavefront on AMD's CDNA GPUs."""
    return target_named(target).warp_size


def opcode_pattern(target: str, *families: str) -> str:
    """One regular expression for several families on ``target``: ``opcode_pattern("sm_90", "shared", "barrier")``."""
    target_named(target)
    missing = [f for f in families if f not in OPCODES]
    if missing:
        raise KeyError(f"unknown opcode famil{'y' if len(missing) == 1 else 'ies'} {missing}; known: {sorted(OPCODES)}")
    parts = [OPCODES[f][target] for f in families if target in OPCODES[f]]
    return "|".join(f"(?:{p})" for p in parts) if parts else r"(?!)"
