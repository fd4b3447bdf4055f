"""Machine code without a GPU: compile a Gluon kernel for any target and read what came out.

- ``targets``    the course's targets (sm_80, sm_86, sm_89, sm_90, sm_100, sm_120, gfx950, gfx942; sm_75 for the
                 support page) and the opcode families per target
- ``compile``    ``compile_kernel`` → ``Compiled``: SASS / AMDGCN, opcode counts, loops, registers, spills,
                 shared / LDS bytes, and the TTGIR (``Compiled.ttgir``) with what it compares
- ``occupancy``  blocks per SM (NVIDIA) or workgroups per CU (AMD) from what a compile reports
"""
from .compile import (ASSERT_TRIVIAL_REFUSED, BackendMissing, CompileFailed, Compiled, compile_cached, compile_kernel,
                      tensor_descriptor_type)
from .targets import AMD_TARGETS, NVIDIA_TARGETS, OPCODES, TARGETS, opcode_pattern, target_named, warp_size

__all__ = ["ASSERT_TRIVIAL_REFUSED", "BackendMissing", "CompileFailed", "Compiled", "compile_cached", "compile_kernel",
           "tensor_descriptor_type", "AMD_TARGETS",
           "NVIDIA_TARGETS", "OPCODES", "TARGETS", "opcode_pattern", "target_named", "warp_size"]
