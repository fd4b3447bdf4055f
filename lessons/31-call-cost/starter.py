# Lesson 31 starter, generated from solutions/31-call-cost/solution.py. Fill in each "TODO gap" below, here
# in this file, then run:  python -m gluon_course check 31   (`make starters` rewrites it: keep a copy)
"""Lesson 31 · What a call costs.

Lesson 19's kernel runs large GEMMs at cuBLAS's speed, but each call of its Python launcher checks every argument,
builds three TMA descriptors and their shared-memory layouts, and goes through Triton's argument binding before the
GPU sees anything: more host time per call than a small GEMM takes on the GPU. This lesson keeps the kernel and
rewrites the launcher as a library would ship it. What depends only on the arguments' *signature* (shapes, strides,
dtype, device, alignment) is worked out once per signature and kept in a ``Plan``: the argument checks, the
configuration, the layouts, the grid and the compiled kernel. TMA descriptors are kept too, by address: a descriptor
encodes the address, the sizes, the strides, the element type and the box, and nothing else of the tensor. Triton's
launcher would still encode every host descriptor into a CUtensorMap on each launch; the plan encodes each kept set
once and hands the encoded maps to Triton's C launch itself (``gluon_course.nvidia.launch`` says where in Triton 3.9.0).
Each call then costs two dictionary lookups, one more for the encoded maps, and the driver's launch.
"""
from collections import OrderedDict

import torch
import triton
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from gluon_course.course import load_solution
from gluon_course.nvidia.hopper import require_hopper, require_wgmma_tile, tma_descriptor
from gluon_course.nvidia.launch import DESCRIPTORS_KEPT, PLANS_KEPT, Address, RawLaunch
from gluon_course.validate import require_matmul_args, require_separate_output

# The kernel is lesson 19's, unchanged, and so is its tile: this lesson changes only what runs on the host.
v9 = load_solution("19")
CONFIG = dict(v9.CONFIG)
GL_DTYPES = {torch.bfloat16: gl.bfloat16, torch.float16: gl.float16}
# How many plans (signatures) and descriptor sets (addresses per plan) are kept, the oldest going first, and the
# stand-in a kept descriptor holds instead of its tensor (Address: the address and dtype, no reference), are the
# toolkit's (gluon_course.nvidia.launch), shared with lesson 32.


def signature(a, b, c) -> tuple:
    """Everything a plan depends on, read off the three tensors: for each, its shape, strides, dtype and device,
    and whether its address is 16-byte aligned (TMA's rule). Two calls with one signature need the same checks,
    configuration, layouts, grid and compiled kernel; a call whose signature is new gets all of them afresh."""
    # TODO gap 1: one tuple with each tensor's shape, strides, dtype, device and 16-byte alignment
    raise NotImplementedError("lesson 31, gap 1 not yet implemented: one tuple with each tensor's shape, strides, dtype, device and 16-byte alignment")


class Plan:
    """One signature's launch, worked out once: the checks (by building it), the tile, the layouts, the grid, and
    after the first launch the compiled kernel. ``descriptors`` keeps TMA descriptors by the tensors' addresses;
    ``encoded`` keeps each kept set's CUtensorMaps, encoded on its first launch."""

    def __init__(self, a, b, c, config: dict):
        M, N, K = require_matmul_args(a, b, c, b_either_way=True, on_gpu=False)
        self.M, self.N, self.K = M, N, K
        self.empty = M == 0 or N == 0 or K == 0
        self.zero_c = K == 0 and M > 0 and N > 0         # a sum of no products: C is zeros (torch.matmul's answer)
        self.b_kn = v9.b_is_k_by_n(b)
        cfg = dict(config)
        self.num_warps = cfg.pop("num_warps")
        self.config = cfg
        self.compiled = self.raw = None
        self.descriptors = OrderedDict()
        self.encoded = OrderedDict()
        if self.empty:
            return
        require_wgmma_tile(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], self.num_warps, cfg["STAGES"])
        BM, BN, BK = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
        self.blocks = ([BM, BK], [BK, BN] if self.b_kn else [BN, BK], [BM, BN])
        dtype = GL_DTYPES[a.dtype]
        self.layouts = tuple(gl.NVMMASharedLayout.get_default_for(block, dtype) for block in self.blocks)
        # The first build goes through the course's own descriptor, whose checks say what to do when TMA cannot
        # take a tensor (alignment, strides); the descriptors kept later skip only work these checks have done.
        self._descriptors_for(a, b, c, checked=True)
        self.constexprs = {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK,
                           **v9.kernel_layouts(self.num_warps, BN), "STAGES": cfg["STAGES"],
                           "GROUP_M": cfg["GROUP_M"], "LOAD_REGS": cfg["LOAD_REGS"], "B_KN": self.b_kn}
        tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
        self.tiles = tiles
        self.grid = None                                  # one program per SM, at most one per tile: at launch
        # The kernel's arguments after the descriptors, in its parameters' order (constexprs included: the compiled
        # kernel's launcher skips them itself).
        self.rest = (M, N, K, *(self.constexprs[name] for name in
                                ("BLOCK_M", "BLOCK_N", "BLOCK_K", "acc_layout", "STAGES", "GROUP_M", "LOAD_REGS",
                                 "B_KN")))

    def _descriptors_for(self, a, b, c, checked: bool = False):
        """The three descriptors for these tensors' addresses, built once per address triple and kept."""
        # TODO gap 2: look the addresses up; on a miss, build three descriptors on Address stand-ins and keep them
        raise NotImplementedError('lesson 31, gap 2 not yet implemented: look the addresses up; on a miss, build three descriptors on Address stand-ins and keep them')

    def _encoded_for(self, descs) -> tuple:
        """Every argument of the driver's launch for this descriptor set: its three CUtensorMaps (with sizes and
        strides) encoded once by Triton's own encoding, then the rest. The set is held beside them, so its id cannot
        name another set while the entry lives."""
        found = self.encoded.get(id(descs))
        if found is None or found[0] is not descs:
            found = self.encoded[id(descs)] = (descs, self.raw.encode(descs) + self.rest)
            if len(self.encoded) > DESCRIPTORS_KEPT:
                self.encoded.popitem(last=False)
        return found[1]

    def launch(self, a, b, c) -> None:
        if (a.data_ptr(), b.data_ptr(), c.data_ptr()) not in self.descriptors:
            require_separate_output(c, a=a, b=b)          # new tensors under a kept plan: C must not be an input
        descs = self._descriptors_for(a, b, c)
        k = self.compiled
        if k is None or triton.knobs.runtime.launch_enter_hook.calls:
            # The first launch (or one a profiler watches) goes through the JIT: it binds the arguments, compiles or
            # finds the kernel in Triton's cache, and returns the compiled kernel, kept for every later call.
            require_hopper(a)
            if self.grid is None:
                sms = torch.cuda.get_device_properties(a.device).multi_processor_count
                self.grid = (min(self.tiles, sms), 1, 1)
                self.stream = triton.runtime.driver.active.get_current_stream
            self.compiled = v9.matmul_kernel[self.grid](*descs, *self.rest, num_warps=self.num_warps)
            if self.compiled is not k:
                self.raw, self.encoded = RawLaunch.of(self.compiled), OrderedDict()
            return
        stream = self.stream(a.device.index)
        if self.raw is None:
            # Where RawLaunch cannot stand in for Triton's launcher (scratch memory, GSan): its CompiledKernel.run,
            # which encodes the three descriptors again on every call.
            k.run(self.grid[0], 1, 1, stream, k.function, k.packed_metadata, None, None, None, *descs, *self.rest)
            return
        # Every later call: the driver's launch with the maps encoded once. No binding, no specialisation, no cache
        # key, no encoding.
        self.raw(self.grid[0], stream, self._encoded_for(descs))


class Matmul:
    """C = A·B by lesson 19's kernel, as a library would call it: ``matmul = Matmul(); matmul(a, b)``. B is K × N
    row-major or the transpose of an N × K row-major matrix (``w.t()``, how ``nn.Linear`` keeps its weights)."""

    def __init__(self, config: dict | None = None):
        unknown = set(config or {}) - set(CONFIG)
        if unknown:
            raise TypeError(f"unknown config keys {sorted(unknown)}; Matmul takes {sorted(CONFIG)}")
        self.config = {**CONFIG, **(config or {})}
        self.plans = OrderedDict()

    def plan(self, a, b, c) -> Plan:
        """The plan for these tensors' signature: found, or built (every check runs) and kept."""
        key = signature(a, b, c)
        found = self.plans.get(key)
        if found is None:
            found = self.plans[key] = Plan(a, b, c, self.config)
            if len(self.plans) > PLANS_KEPT:
                self.plans.popitem(last=False)
        return found

    def __call__(self, a, b, c=None):
        if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
            c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and isinstance(c, torch.Tensor)
                and a.is_cuda and b.is_cuda and c.is_cuda):
            require_matmul_args(a, b, c, b_either_way=True)          # says which argument is wrong, and why
        p = self.plan(a, b, c)
        if p.empty:
            if p.zero_c:
                c.zero_()
            return c
        p.launch(a, b, c)
        return c


_KEPT = {}


def matmul(a, b, c=None, **config):
    """``Matmul()(a, b, c)``, with one Matmul kept per configuration (none given: lesson 19's CONFIG)."""
    if not config:
        return _DEFAULT(a, b, c)
    key = tuple(sorted(config.items()))
    found = _KEPT.get(key)
    if found is None:
        found = _KEPT[key] = Matmul(config)
    return found(a, b, c)


_DEFAULT = Matmul()
