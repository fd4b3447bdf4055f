"""A launcher's own path on the CPU: its plan, operand views, grid and kernel arguments, as it builds them from CPU
torch tensors, with the GPU stood in for by the host model.

The course's launchers (lessons 31 to 33) work out a launch on the host: which configuration, which view of each
operand (swap-AB hands the kernel W and the activations, M and N exchanged), how many programs, and the kernel's
arguments in their order. The host model's other checks call the kernel directly with arguments of their own, so
none of that is checked by them. ``ModelGPU`` runs the launcher as it is and stands in for the GPU only where the
launcher reaches it: the compute capability and SM count it reads from torch, the stream it reads from Triton's
driver, and the launch itself (``kernel[grid](...)``), which runs the kernel in the host model on the memory of the
launch's CPU tensors. Every descriptor the launcher built is read as TMA reads it (its address, sizes, strides and
box); a tensor argument (split-K's scratch) is a pointer to its memory. After each launch the memory is written back
into the torch tensors, so that a plan's kept scratch carries to its next launch as it does on a GPU.

    >>> with ModelGPU(sms=3) as gpu:
    ...     gpu.add(a, "A"); gpu.add(b, "B"); gpu.add(c, "C")
    ...     plan = linear.plan(a, b, c); plan.launch(a, b, c)
    ...     gpu.writes(c)                 # how often the last launch wrote each element of C
"""
from __future__ import annotations

import types

import numpy as np

from .run import run as run_kernel
from .runtime import Buffer, ModelError, ModelOutOfBounds, ModelUnsupported
from .shims import HostTensorDescriptor, Pointer, round_to


def _gl_dtype(torch_dtype):
    import torch
    from triton.experimental.gluon import language as gl

    found = {torch.bfloat16: gl.bfloat16, torch.float16: gl.float16, torch.float32: gl.float32,
             torch.int32: gl.int32}.get(torch_dtype)
    if found is None:
        raise ModelUnsupported(f"a launch with a {torch_dtype} tensor")
    return found


class _Storage:
    """One torch storage of the launch: its address range, its elements as a flat tensor, and (during a launch) the
    model Buffer that holds them."""

    def __init__(self, tensor, name: str):
        import torch

        storage = tensor.untyped_storage()
        self.name, self.dtype = name, tensor.dtype
        self.start, self.nbytes = storage.data_ptr(), storage.nbytes()
        self.element = tensor.element_size()
        self.flat = torch.empty(0, dtype=tensor.dtype).set_(storage, 0, (self.nbytes // self.element,), (1,))
        self.buffer = None

    def holds(self, address: int) -> bool:
        return self.start <= address < self.start + max(self.nbytes, 1)

    def offset_of(self, address: int, what: str) -> int:
        """The element offset of ``address`` from the storage's start."""
        if (address - self.start) % self.element:
            raise ModelError(f"{what} starts {address - self.start} bytes into {self.name}'s memory, not on one of "
                             f"its {self.element}-byte elements")
        return (address - self.start) // self.element

    def load(self) -> None:
        import torch

        self.buffer = Buffer(self.name, self.flat.to(torch.float32).numpy(), _gl_dtype(self.dtype))

    def store_back(self) -> None:
        import torch

        self.flat.copy_(torch.from_numpy(self.buffer.values().astype(np.float32)).to(self.dtype))


class StridedDescriptor(HostTensorDescriptor):
    """A host TMA descriptor as the launcher built it (address, sizes, strides, box), over the model buffer of the
    storage it points into: a box is read and written element by element at ``offset + row·strides[0] +
    column·strides[1]``, clipped to the descriptor's sizes as TMA clips it (zero-filled on a load, dropped on a
    store)."""

    def __init__(self, buffer: Buffer, offset: int, shape, strides, block_shape, layout, element_bytes: int):
        super().__init__(buffer, block_shape, layout, element_bytes)
        self.offset, self.sizes, self.strides = int(offset), [int(s) for s in shape], [int(s) for s in strides]

    @property
    def shape(self):
        return list(self.sizes)

    def _where(self, coord):
        """The box's window inside the descriptor's sizes and the element offsets of its elements there."""
        coord = [int(np.asarray(x)) for x in coord]
        if len(coord) != len(self.sizes):
            raise ModelError(f"a TMA copy at {len(coord)} coordinate(s) {coord} through a {len(self.sizes)}-D "
                             f"descriptor of {self.buffer.name}: give one coordinate per dimension")
        (r, c), (h, w), (rows, cols) = coord, self.block_shape, self.sizes
        r0, r1, c0, c1 = max(r, 0), min(r + h, rows), max(c, 0), min(c + w, cols)
        if r0 >= r1 or c0 >= c1:
            return r, c, r0, r1, c0, c1, None
        i = np.arange(r0, r1)[:, None]
        j = np.arange(c0, c1)[None, :]
        offsets = self.offset + i * self.strides[0] + j * self.strides[1]
        if (offsets < 0).any() or (offsets >= self.buffer.size).any():
            raise ModelOutOfBounds(
                f"the descriptor of {self.buffer.name} ({self.sizes} with strides {self.strides}, "
                f"{self.offset} elements from the start of its memory) reaches past the {self.buffer.size} elements "
                "of the tensor it points into: its sizes or strides are not the tensor's")
        return r, c, r0, r1, c0, c1, offsets

    def box(self, coord) -> np.ndarray:
        r, c, r0, r1, c0, c1, offsets = self._where(coord)
        out = np.zeros(self.block_shape, dtype=np.float32)
        if offsets is not None:
            out[r0 - r:r1 - r, c0 - c:c1 - c] = self.buffer.data[offsets + Buffer.MARGIN]
        return out

    def write_box(self, coord, values: np.ndarray, mine=None) -> None:
        """A TMA store through the descriptor's own address and strides; ``mine`` (a cluster's CTA, as the model's
        HostTensorDescriptor.write_box takes it): only the elements of the tile it marks."""
        r, c, r0, r1, c0, c1, offsets = self._where(coord)
        if offsets is not None:
            inside = (slice(r0 - r, r1 - r), slice(c0 - c, c1 - c))
            keep = np.ones(offsets.shape, dtype=bool) if mine is None else np.asarray(mine)[inside]
            self.buffer.data[offsets[keep] + Buffer.MARGIN] = round_to(values[inside], self.buffer.dtype)[keep]
            np.add.at(self.buffer.writes, offsets[keep].reshape(-1), 1)


def _is_host_descriptor(x) -> bool:
    return all(hasattr(x, name) for name in ("base", "shape", "strides", "block_shape", "layout"))


def _arguments_problem(kernel, names: list, given: int, by_name: dict) -> str | None:
    """A sentence when the launch's arguments do not fit the kernel's parameters (too many, some missing, a name
    it does not have), else None."""
    import inspect

    if not names:
        return None
    name = getattr(kernel, "__name__", "the kernel")
    signature = inspect.signature(getattr(kernel, "fn", kernel))
    needed = [n for n in names[given:] if n not in by_name
              and signature.parameters[n].default is inspect.Parameter.empty]
    unknown = [n for n in by_name if n not in names]
    if given > len(names):
        return (f"the launcher hands {name} {given} arguments by position, but it has {len(names)} parameters: the "
                "arguments after the descriptors do not follow its parameters' order")
    if needed or unknown:
        parts = ([f"nothing for {', '.join(needed)}"] if needed else []) + \
                ([f"{', '.join(unknown)}, which {name} has no parameter for"] if unknown else [])
        return (f"the launcher hands {name} {given} arguments by position and {len(by_name)} by name: "
                f"{' and '.join(parts)}; the arguments must follow its parameters ({', '.join(names)})")
    return None


class ModelGPU:
    """The GPU, stood in for by the host model inside a ``with`` block (see the module's docstring): compute
    capability 9.0, ``sms`` SMs, stream 0, and every ``kernel[grid](...)`` run in the host model (its programs in
    ``order``, ``run``'s). ``add(tensor, name)`` names the memory of the launch's operands; a tensor handed to the
    kernel is added by its parameter's name. ``launches``: each launch's programs; ``options``: each launch's options
    the model does not use (``launch_pdl``, ``num_stages``, …); ``writes(t)``: how often the last launch wrote each
    element of ``t``. With ``poison_empty``, what ``torch.empty`` and ``torch.empty_like`` return inside the block
    holds what a GPU's fresh memory may hold, never what the code hopes for: NaN (floating point) or EMPTY_INT
    (integers), so that a launcher that reads scratch it never wrote, or counts from a counter it never zeroed, shows
    it at every run."""

    def __init__(self, sms: int, order=None, poison_empty: bool = False):
        self.sms, self.order, self.poison_empty = int(sms), order, poison_empty
        self.storages: list[_Storage] = []
        self.launches: list = []
        self.options: list = []            # each launch's options the model does not use (launch_pdl, num_stages, …)
        self._saved: list = []

    # -- memory -----------------------------------------------------------------------------------------------------

    def add(self, tensor, name: str) -> None:
        if tensor.device.type != "cpu":
            raise ModelUnsupported(f"a launch with {name} on {tensor.device} (the host model runs on CPU tensors)")
        storage = _Storage(tensor, name)
        same = [s for s in self.storages if s.start == storage.start]
        if same and (same[0].nbytes, same[0].dtype) == (storage.nbytes, storage.dtype):
            return
        # A storage freed and another allocated at its address: the new one replaces it.
        self.storages = [s for s in self.storages if s.start != storage.start] + [storage]

    def _storage_at(self, address: int, what: str) -> _Storage:
        for storage in self.storages:
            if storage.holds(address):
                return storage
        names = ", ".join(s.name for s in self.storages)
        raise ModelError(f"{what} points at memory that none of the launch's tensors ({names}) holds: it was built "
                         "on a tensor the launcher made and let go (a copy, such as .contiguous() or .t().contiguous(),"
                         " freed before the kernel runs); build it on the operand itself, or keep the copy alive")

    def writes(self, t) -> np.ndarray:
        """How often the last launch wrote each element of ``t`` (its shape)."""
        storage = self._storage_at(t.data_ptr(), "the tensor asked about")
        first = storage.offset_of(t.data_ptr(), "the tensor asked about")
        index = np.full(tuple(t.shape), first, dtype=np.int64)
        for axis, (size, stride) in enumerate(zip(t.shape, t.stride())):
            shape = [1] * t.dim()
            shape[axis] = size
            index = index + (np.arange(size) * stride).reshape(shape)
        return storage.buffer.writes[index]

    # -- the launch -------------------------------------------------------------------------------------------------

    def _argument(self, value, name: str):
        import torch

        if isinstance(value, torch.Tensor):
            self.add(value, name)
            storage = self._storage_at(value.data_ptr(), name)
            if storage.buffer is None:
                storage.load()
            return Pointer(storage.buffer, storage.offset_of(value.data_ptr(), name))
        if _is_host_descriptor(value):
            what = f"the descriptor {name}"
            address = value.base.data_ptr()
            if isinstance(value.base, torch.Tensor):
                self.add(value.base, name)
            storage = self._storage_at(address, what)
            if storage.buffer is None:
                storage.load()
            strides = [int(s) for s in value.strides]
            if len(value.shape) != 2:
                raise ModelUnsupported(f"a {len(value.shape)}-D TMA descriptor ({name})")
            if strides[-1] != 1:
                raise ModelError(f"{what} has strides {strides}: TMA reads rows of contiguous elements (the last "
                                 "stride must be 1); describe the operand's contiguous view (an N × K W as W, not as "
                                 "its transpose)")
            return StridedDescriptor(storage.buffer, storage.offset_of(address, what), value.shape, strides,
                                     value.block_shape, value.layout, storage.element)
        return value

    def _launch(self, kernel, grid, args, kwargs):
        options = dict(kwargs)
        num_warps = int(options.pop("num_warps", 4))
        ctas = int(options.pop("num_ctas", 1))
        if ctas != 1:
            raise ModelUnsupported(f"a launch in clusters of {ctas} CTAs through the launcher")
        # The launch options the model has no use for, kept per launch for the checks that ask (lesson 35: was the
        # kernel launched with programmatic dependent launch?).
        self.options.append({option: options.pop(option) for option in
                             ("num_stages", "maxnreg", "launch_cooperative_grid", "launch_pdl") if option in options})
        if callable(grid):
            grid = grid(options)
        grid = (grid,) if isinstance(grid, int) else tuple(int(g) for g in grid)
        names = list(getattr(kernel, "arg_names", []))
        problem = _arguments_problem(kernel, names, len(args), options)
        if problem:
            raise ModelError(problem)
        for storage in self.storages:                      # the tensors' contents as they are now
            storage.load()
        converted = [self._argument(value, names[i] if i < len(names) else f"argument {i}")
                     for i, value in enumerate(args)]
        order = self.order(int(np.prod(grid))) if callable(self.order) else self.order
        programs = run_kernel(kernel, grid, *converted, num_warps=num_warps, order=order, **options)
        for storage in self.storages:
            storage.store_back()
        self.launches.append(programs)
        return None

    def __enter__(self):
        import torch
        import triton
        from triton.runtime.jit import KernelInterface

        gpu = self

        def getitem(kernel, grid):
            return lambda *args, **kwargs: gpu._launch(kernel, grid, args, kwargs)

        properties = types.SimpleNamespace(multi_processor_count=self.sms, major=9, minor=0,
                                           name="the host model (sm_90)")
        stand_ins = [(KernelInterface, "__getitem__", getitem),
                     (torch.cuda, "get_device_capability", lambda device=None: (9, 0)),
                     (torch.cuda, "get_device_properties", lambda device=None: properties),
                     (torch.cuda, "get_device_name", lambda device=None: properties.name)]
        if self.poison_empty:
            stand_ins += [(torch, "empty", _poisoned(torch.empty)), (torch, "empty_like", _poisoned(torch.empty_like))]
        self._saved = [(owner, name, owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name))
                       for owner, name, _ in stand_ins]
        for owner, name, value in stand_ins:
            setattr(owner, name, value)
        self._driver = triton.runtime.driver._active
        triton.runtime.driver.set_active(_Driver())
        return self

    def __exit__(self, *exc):
        import triton

        for owner, name, value in self._saved:
            setattr(owner, name, value)
        triton.runtime.driver._active = self._driver
        return False


EMPTY_INT = -0x5A5A5A5B         # what an integer tensor from torch.empty holds under ModelGPU(poison_empty=True)


def _poisoned(allocate):
    """``allocate`` (torch.empty or torch.empty_like) returning its tensor filled with NaN, or EMPTY_INT (within the
    integer type's range)."""
    import torch

    def poisoned(*args, **kwargs):
        t = allocate(*args, **kwargs)
        if t.is_floating_point():
            t.fill_(float("nan"))
        elif t.dtype != torch.bool and not t.is_complex():
            info = torch.iinfo(t.dtype)
            t.fill_(min(max(EMPTY_INT, info.min), info.max))
        return t
    return poisoned


class _Driver:
    """Triton's active driver as far as a launcher reads it on the host model: the current stream (0)."""

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_current_device(self) -> int:
        return 0
