"""The course's compile targets, and the one table of opcode families per target.

A lesson asks "how many 16-byte global loads?" or "which instructions move data between threads?" once,
by family name; this table says what that family is called in each target's machine code (SASS on
NVIDIA, AMDGCN on AMD). Every pattern is a regular expression matched at the start of an opcode.
"""
from __future__ import annotations

from triton.backends.compiler import GPUTarget

# The course's targets, by the names people use for them. A target is also a *GPU class*: the GPUs whose code
# Triton compiles for it (compute capability 8.6 for sm_86, the gfx942 architecture), which a lesson's GPU checks and
# ranges are written for when the lesson declares it.
TARGETS: dict[str, GPUTarget] = {
    "sm_75": GPUTarget("cuda", 75, 32),        # Turing: T4, RTX 20 (no lesson declares it: the support page says why)
    "sm_80": GPUTarget("cuda", 80, 32),        # Ampere: A100
    "sm_86": GPUTarget("cuda", 86, 32),        # Ampere: RTX 30, A10, A40
    "sm_89": GPUTarget("cuda", 89, 32),        # Ada: RTX 40, L4, L40
    "sm_90": GPUTarget("cuda", 90, 32),        # Hopper: H100, H200
    "sm_100": GPUTarget("cuda", 100, 32),      # Blackwell: B200, GB200
    "sm_120": GPUTarget("cuda", 120, 32),      # Blackwell: RTX 50
    "gfx950": GPUTarget("hip", "gfx950", 64),  # CDNA4: MI350, MI355
    "gfx942": GPUTarget("hip", "gfx942", 64),  # CDNA3: MI300
}
NVIDIA_TARGETS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
AMD_TARGETS = ("gfx950", "gfx942")
# Each class with the GPUs people know it by, as the support matrix and the launchers' refusals name it.
GPU_NAMES: dict[str, str] = {
    "sm_75": "Turing: T4, RTX 20",
    "sm_80": "Ampere: A100",
    "sm_86": "Ampere: RTX 30, A10, A40",
    "sm_89": "Ada: RTX 40, L4, L40",
    "sm_90": "Hopper: H100, H200",
    "sm_100": "Blackwell: B200, GB200",
    "sm_120": "Blackwell: RTX 50",
    "gfx942": "CDNA3: MI300X",
    "gfx950": "CDNA4: MI350X, MI355X",
}

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
