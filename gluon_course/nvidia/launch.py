"""The host side of a TMA GEMM launcher as a library would ship it (lessons 31 and 32): what a plan is kept by, the
stand-in a kept descriptor holds instead of its tensor, and the launch that hands the driver CUtensorMaps encoded once.

What Triton 3.9.0 does on every launch of a compiled kernel (``CompiledKernel.run`` is a ``CudaLauncher``,
triton/backends/nvidia/driver.py): ``CudaLauncher.__call__`` sizes the global and profile scratch, then calls its
``launch``, which ``wrap_handle_tensordesc`` built around driver.c's ``launch``: it walks the arguments
(``make_tensordesc_args``, in libtriton) and, for each host ``TensorDescriptor``, calls ``make_tensordesc_arg``, which
reads the descriptor's shape and strides and calls ``fill_tma_descriptor_tiled`` (driver.c; the driver's
``cuTensorMapEncodeTiled``) for a new CUtensorMap, with the box and swizzle the compiler chose (the kernel's
``tensordesc_meta``). So a kept host descriptor still costs an encoding per launch.

driver.c's ``launch`` takes a ``PyCUtensorMap`` for each ``nvTmaDesc`` parameter and copies its 128 bytes into the
kernel's parameters (``extractTmaDesc``); nothing in it asks for a fresh one. ``RawLaunch`` therefore encodes each kept
descriptor set once, with Triton's own ``make_tensordesc_arg`` and the kernel's own metadata, and hands the result to
driver.c's ``launch`` on every later call, with the ``arg_annotations`` and ``kernel_signature`` the ``CudaLauncher``
built. It does so only where the ``CudaLauncher`` would add nothing else: no global or profile scratch, no GSan.
An encoding is kept with the descriptors it encodes, which are kept by the tensors' addresses inside a plan that holds
for one signature (shapes, strides, dtype, device, alignment): a change of any of them reaches a new encoding.
"""
from __future__ import annotations

from collections import OrderedDict

# How many plans (signatures) and descriptor sets (address triples per plan) are kept; the oldest goes first.
PLANS_KEPT = 256
DESCRIPTORS_KEPT = 64


def signature(*tensors) -> tuple:
    """What a plan depends on, per tensor: shape, strides, dtype, device, and whether its address is 16-byte aligned
    (TMA's rule). Lesson 31 writes this as its exercise; lesson 32 reads it from here."""
    return tuple((t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16 == 0) for t in tensors)


class Address:
    """What a TMA descriptor keeps of its tensor: the address and the element type, and no reference to the tensor,
    so a kept descriptor never keeps a freed tensor's memory alive. The launch reads ``data_ptr()``; the descriptor's
    own checks read ``dtype``."""
    __slots__ = ("_address", "dtype")

    def __init__(self, t):
        self._address, self.dtype = t.data_ptr(), t.dtype

    def data_ptr(self) -> int:
        return self._address


def keep(cache: OrderedDict, key, value, most: int):
    """Store ``value`` under ``key`` in a cache of at most ``most`` entries (the least recently used goes first; a
    hit calls ``cache.move_to_end(key)``); returns ``value``."""
    cache[key] = value
    if len(cache) > most:
        cache.popitem(last=False)
    return value


def kept_descriptors(cache: OrderedDict, key: tuple, make):
    """The descriptor set kept in ``cache`` under ``key`` (the operands' addresses), or the one ``make()`` builds,
    kept: at most DESCRIPTORS_KEPT sets, the least recently used going first (lessons 32, 33, 34's plans)."""
    found = cache.get(key)
    if found is not None:
        cache.move_to_end(key)
        return found
    return keep(cache, key, make(), DESCRIPTORS_KEPT)


def host_descriptors(tensors, blocks, layouts, output: int = 2, inputs: tuple = (0, 1)) -> tuple:
    """One Gluon host TensorDescriptor per tensor, on an Address stand-in (the tensor's checks already ran, when its
    plan was built). A tensor those checks never saw (a plan kept under a signature that does not tell it from the one
    they ran on) is refused with a sentence, not with the assertion Triton's TensorDescriptor checks with. A new set
    of addresses is where a kept plan meets new tensors, so the output (``tensors[output]``, C) is checked here to
    share no memory with the inputs (``tensors[i]`` for i in ``inputs``: A and B, or W; see
    ``validate.require_separate_output``), once per set, not once per call."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from ..validate import require_separate_output

    if len(tensors) > output:
        require_separate_output(tensors[output], **{f"the kernel's operand {i}": tensors[i] for i in inputs})
    found = []
    for i, (t, block, layout) in enumerate(zip(tensors, blocks, layouts)):
        try:
            found.append(TensorDescriptor(Address(t), list(t.shape), list(t.stride()), block, layout))
        except AssertionError:
            raise ValueError(unchecked_view(f"operand {i} of the kernel", t)) from None
    return tuple(found)


def unchecked_view(name: str, t) -> str:
    """Why TMA cannot take ``t``, which reached a descriptor without the plan's checks: the sentence for a kept plan
    given a view its signature should have told apart."""
    from .hopper import TMA_RULE

    rows, cols = t.shape
    if t.data_ptr() % 16:
        found = f"starts {t.data_ptr() % 16} bytes past a 16-byte boundary"
    elif cols > 1 and t.stride(1) != 1:
        found = f"is not row-major (strides {tuple(t.stride())}): describe its row-major view, its .t()"
    else:
        found = f"has rows {t.stride(0) * t.element_size()} bytes apart"
    return (f"{name} ({rows}×{cols}) {found}, yet it was given a plan whose checks ran on another view: a plan is "
            f"kept per signature, and the signature must tell this view from that one (whether each address is 16-byte "
            f"aligned, each tensor's strides; launch.signature does). {TMA_RULE}")


class RawLaunch:
    """driver.c's ``launch`` for one compiled kernel, with its descriptors' CUtensorMaps passed in already encoded.

    ``RawLaunch.of(compiled)`` is None where the kernel's ``CudaLauncher`` does more than this class (scratch memory,
    GSan, descriptors without metadata): the caller keeps ``compiled.run`` there."""

    def __init__(self, compiled, launcher):
        import triton

        self.function, self.packed_metadata = compiled.function, compiled.packed_metadata
        self.meta = list(compiled.metadata.tensordesc_meta)
        self.cooperative, self.pdl = launcher.launch_cooperative_grid, launcher.launch_pdl
        self.annotations, self.kernel_signature = launcher.arg_annotations, launcher.kernel_signature
        self._launch = triton.runtime.driver.active.utils.launch

    @classmethod
    def of(cls, compiled):
        launcher = compiled.run
        usable = (getattr(compiled.metadata, "tensordesc_meta", None)
                  and getattr(launcher, "global_scratch_size", 1) == 0
                  and getattr(launcher, "profile_scratch_size", 1) == 0
                  and not getattr(launcher, "gsan_enabled", True)
                  and hasattr(launcher, "arg_annotations") and hasattr(launcher, "kernel_signature"))
        return cls(compiled, launcher) if usable else None

    def encode(self, descriptors) -> tuple:
        """The arguments Triton's launcher would hand driver.c for these descriptors, in their order: each one's
        CUtensorMap, its sizes and its strides (``make_tensordesc_arg``, with the compiled kernel's metadata)."""
        from triton.backends.nvidia.driver import make_tensordesc_arg

        if len(descriptors) != len(self.meta):
            raise ValueError(f"{len(descriptors)} descriptors for a kernel that takes {len(self.meta)}")
        args = []
        for desc, meta in zip(descriptors, self.meta):
            args.extend(make_tensordesc_arg(desc, meta, None))
        return tuple(args)

    def __call__(self, grid_x: int, stream: int, args: tuple) -> None:
        """One launch of ``grid_x`` programs on ``stream``; ``args``: every kernel argument, the descriptors as
        ``encode`` gives them, constexprs in their places (driver.c skips them, as for ``CompiledKernel.run``)."""
        self._launch(grid_x, 1, 1, stream, self.function, self.cooperative, self.pdl, self.packed_metadata, None, None,
                     None, None, None, self.annotations, self.kernel_signature, args)


class KeptLaunch:
    """A plan's launches of one kernel: the first (and any a launch hook watches) through the JIT, which binds the
    arguments and compiles or finds the kernel; every later one through ``RawLaunch`` with the descriptor set's
    CUtensorMaps encoded once and kept beside it (or through ``CompiledKernel.run`` where RawLaunch cannot be used)."""

    def __init__(self, kernel, num_warps: int, **options):
        # ``options``: the JIT's other launch options, e.g. ``num_ctas`` (lesson 33's clusters). RawLaunch needs none of
        # them again: the compiled kernel's packed metadata carries num_warps, num_ctas and its shared memory.
        self.kernel, self.num_warps, self.options = kernel, num_warps, options
        self.compiled = self.raw = None
        self.encoded = OrderedDict()          # id(descriptor set) -> (the set, its encoded arguments)

    def encoded_for(self, descriptors) -> tuple:
        """The encoded arguments of one kept descriptor set, encoded on its first launch. The set itself is held
        beside them, so its id cannot name another set while the entry lives."""
        found = self.encoded.get(id(descriptors))
        if found is None or found[0] is not descriptors:
            found = self.encoded[id(descriptors)] = (descriptors, self.raw.encode(descriptors))
            if len(self.encoded) > DESCRIPTORS_KEPT:
                self.encoded.popitem(last=False)
        return found[1]

    def __call__(self, grid_x: int, stream: int, descriptors: tuple, rest: tuple) -> None:
        import triton

        k = self.compiled
        if k is None or triton.knobs.runtime.launch_enter_hook.calls:
            self.compiled = self.kernel[(grid_x, 1, 1)](*descriptors, *rest, num_warps=self.num_warps, **self.options)
            if self.compiled is not k:
                self.raw, self.encoded = RawLaunch.of(self.compiled), OrderedDict()
            return
        if self.raw is None:
            k.run(grid_x, 1, 1, stream, k.function, k.packed_metadata, None, None, None, *descriptors, *rest)
            return
        self.raw(grid_x, stream, self.encoded_for(descriptors) + rest)


# -- Without a GPU: Triton's launcher with the driver's two calls stood in for -------------------------------------

class StubMap(tuple):
    """What ``fill_tma_descriptor_tiled`` was asked to encode (address, swizzle, element size, type, box, sizes,
    strides, padding), standing in for the CUtensorMap it would return; equal when asked for the same."""


class StubDriver:
    """Triton's active driver on a machine without one, as far as a launch reaches it: ``utils.fill_tma_descriptor
    _tiled`` returns a StubMap, ``utils.launch`` records its arguments (or, ``record=False``, does nothing, for timing
    the Python around it). Everything else of a launch is Triton's own code. Use it as a context manager."""

    def __init__(self, record: bool = True):
        self.encodings, self.launches, self.record = 0, [], record
        self.utils = self

    def fill_tma_descriptor_tiled(self, address, swizzle, elem_size, elem_type, block, shape, strides, padding):
        self.encodings += 1
        return StubMap((address, swizzle, elem_size, elem_type, tuple(block), tuple(shape), tuple(strides), padding))

    def launch(self, *args):
        if self.record:
            self.launches.append(args)

    def get_current_stream(self, device=None) -> int:
        return 0

    def __enter__(self):
        from triton.runtime import driver

        self._before = driver._active
        driver.set_active(self)
        return self

    def __exit__(self, *exc):
        from triton.runtime import driver

        driver._active = self._before


def stub_compiled(kernel, compiled, descriptors=("a_desc", "b_desc", "c_desc"), num_warps: int = 4,
                  num_ctas: int = 1):
    """A stand-in for the CompiledKernel that ``kernel[grid](...)`` returns on a GPU, built from a CPU compile of it
    (``gluon_course.machine.compile_cached``: its metadata, with the descriptors' boxes the compiler chose): its
    ``run`` is Triton's own ``CudaLauncher`` call, with its wrapping of driver.c's launch around the active driver's
    (a StubDriver's). Call it inside the StubDriver."""
    import types

    import triton
    from triton.backends.nvidia.driver import CudaLauncher, wrap_handle_tensordesc

    meta = compiled.metadata
    names = kernel.arg_names
    params = {p.name: p for p in kernel.params}
    signature = {}
    boxes = iter(meta.tensordesc_meta)
    for name in names:
        if params[name].is_constexpr:
            signature[name] = "constexpr"
        elif name in descriptors:
            box = next(boxes)["block_size"]
            signature[name] = f"tensordesc<bf16[{', '.join(map(str, box))}]>"
        else:
            signature[name] = "i32"
    launcher = CudaLauncher.__new__(CudaLauncher)
    launcher.gsan_enabled = False
    launcher.arg_annotations, launcher.kernel_signature = "stub annotations", b"stub signature"
    launcher.num_ctas = num_ctas
    launcher.launch = wrap_handle_tensordesc(triton.runtime.driver.active.utils.launch, signature,
                                             meta.tensordesc_meta)
    launcher.global_scratch_size = launcher.profile_scratch_size = 0
    launcher.global_scratch_align = launcher.profile_scratch_align = 1
    launcher.launch_cooperative_grid, launcher.launch_pdl = False, False
    return types.SimpleNamespace(run=launcher, function=0, packed_metadata=(num_warps, num_ctas, int(meta.shared)),
                                 metadata=meta)
