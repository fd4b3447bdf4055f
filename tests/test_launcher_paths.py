"""A launcher's own path in the host model (gluon_course.model.launcher), the program orders split-K is run in
(model.gemm.PROGRAM_ORDERS; tools/probes/probe_streamk.py runs stream-K in them too), and the host model's sentences
for shapes that do not fit: what lesson 32's checks launcher_paths, plan_refusals and split_order stand on."""
import ast

import numpy as np
import pytest
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from gluon_course import lesson, load_solution
from gluon_course.course import load_checks
from gluon_course.model import Buffer, HostTensorDescriptor, ModelError, Pointer, run
from gluon_course.model.gemm import PROGRAM_ORDERS
from gluon_course.model.launcher import ModelGPU
from gluon_course.nvidia.launch import Address

BOX = [16, 16]
LAYOUT = gl.BlockedLayout([1, 1], [4, 8], [4, 1], [1, 0])


@gluon.jit
def tma_copy_kernel(x_desc, y_desc, TRANSPOSE: gl.constexpr, layout: gl.constexpr):
    """Each program copies one box of rows of X into Y through shared memory, by TMA both ways."""
    BM: gl.constexpr = x_desc.block_shape[0]
    smem = gl.allocate_shared_memory(x_desc.dtype, x_desc.block_type.shape, x_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, x_desc.block_type.nbytes)
    tma.async_load(x_desc, [gl.program_id(0) * BM, 0], bar, smem)
    mbarrier.wait(bar, 0)
    if TRANSPOSE:
        tile = smem.load(layout)
        out = gl.allocate_shared_memory(y_desc.dtype, y_desc.block_type.shape, y_desc.layout)
        out.store(gl.permute(tile, (1, 0)) if TRANSPOSE == 2 else tile)
        fence_async_shared()
        tma.async_store(y_desc, [gl.program_id(0) * BM, 0], out)
    else:
        tma.async_store(y_desc, [gl.program_id(0) * BM, 0], smem)
    tma.store_wait(0)
    mbarrier.invalidate(bar)


def _descriptor(t, box=BOX):
    return TensorDescriptor(Address(t), list(t.shape), list(t.stride()), box,
                            gl.NVMMASharedLayout.get_default_for(box, gl.bfloat16))


def copy_launcher(x, y, transpose=0, y_box=BOX):
    """What a course launcher does: descriptors on Address stand-ins, the grid from the rows, the JIT's launch."""
    grid = (triton.cdiv(x.shape[0], BOX[0]),)
    tma_copy_kernel[grid](_descriptor(x), _descriptor(y, y_box), transpose, LAYOUT, num_warps=4)


def _values(*shape):
    return torch.arange(int(np.prod(shape)), dtype=torch.float32).reshape(shape).to(torch.bfloat16)


def test_a_launch_reads_and_writes_the_views_the_launcher_described():
    """X a column slice of a wider tensor (an offset and a row stride of its own), Y another: the copy lands in Y's
    view exactly, each element once, and the columns around it are left alone."""
    big_x, big_y = _values(40, 48), torch.full((40, 48), float("nan"), dtype=torch.bfloat16)
    x, y = big_x[:, 8:24], big_y[:, 16:32]
    with ModelGPU(sms=4) as gpu:
        gpu.add(big_x, "X")
        gpu.add(big_y, "Y")
        copy_launcher(x, y)
        assert (gpu.writes(y) == 1).all() and gpu.writes(big_y)[:, :16].sum() == 0
    assert torch.equal(y, x)
    assert torch.isnan(big_y[:, :16].float()).all() and torch.isnan(big_y[:, 32:].float()).all()
    assert len(gpu.launches) == 1 and len(gpu.launches[0]) == 3


def test_the_gpu_is_stood_in_for_only_inside_the_block():
    from triton.runtime.jit import KernelInterface

    before = (KernelInterface.__dict__["__getitem__"], torch.cuda.get_device_capability,
              torch.cuda.get_device_properties, triton.runtime.driver._active)
    with pytest.raises(RuntimeError, match="inside"):
        with ModelGPU(sms=132):
            assert torch.cuda.get_device_properties(None).multi_processor_count == 132
            assert torch.cuda.get_device_capability(None) == (9, 0)
            assert triton.runtime.driver.active.get_current_stream(None) == 0
            raise RuntimeError("inside")
    assert (KernelInterface.__dict__["__getitem__"], torch.cuda.get_device_capability,
            torch.cuda.get_device_properties, triton.runtime.driver._active) == before


def test_a_descriptor_on_a_copy_the_launcher_let_go_is_named():
    x, y = _values(32, 16), torch.empty(32, 16, dtype=torch.bfloat16)

    def launcher(x, y):
        copy_launcher(x.clone(), y)           # the clone is freed when its descriptor is all that is left of it

    with ModelGPU(sms=2) as gpu, pytest.raises(ModelError, match="none of the launch's tensors .* let go"):
        gpu.add(x, "X")
        gpu.add(y, "Y")
        launcher(x, y)


def test_arguments_that_do_not_fit_the_parameters_are_named():
    x, y = _values(32, 16), torch.empty(32, 16, dtype=torch.bfloat16)
    with ModelGPU(sms=2) as gpu, pytest.raises(ModelError, match="nothing for layout"):
        gpu.add(x, "X")
        gpu.add(y, "Y")
        tma_copy_kernel[(2,)](_descriptor(x), _descriptor(y), 0, num_warps=4)


def test_a_transposed_tile_stored_into_shared_memory_is_named_as_such():
    """The class of swap-AB's epilogue without its permute: a 16 × 32 tile into a 32 × 16 buffer."""
    x, y = _values(16, 32), torch.empty(32, 16, dtype=torch.bfloat16)
    with ModelGPU(sms=1) as gpu:
        gpu.add(x, "X")
        gpu.add(y, "Y")
        with pytest.raises(ModelError, match=r"\[16, 32\] where the buffer is \[32, 16\].*transposed.*gl.permute"):
            tma_copy_kernel[(1,)](_descriptor(x, [16, 32]), _descriptor(y, [32, 16]), 1, LAYOUT, num_warps=4)
        tma_copy_kernel[(1,)](_descriptor(x, [16, 32]), _descriptor(y, [32, 16]), 2, LAYOUT, num_warps=4)
    assert torch.equal(y, x.t())


@gluon.jit
def mixed_shapes_kernel(x_ptr, layout: gl.constexpr):
    rows = gl.arange(0, 16, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, 32, layout=gl.SliceLayout(0, layout))
    tile = gl.load(x_ptr + rows[:, None] * 32 + cols[None, :])
    gl.store(x_ptr + rows[:, None] * 32 + cols[None, :], tile + tile.permute(1, 0))


def test_a_kernel_line_whose_shapes_do_not_broadcast_is_a_mistake_not_an_unmodelled_line():
    x = Buffer("x", np.zeros(512, np.float32), gl.float32)
    with pytest.raises(ModelError, match=r"line \d+ of test_launcher_paths.py .* shapes \[16, 32\] and \[32, 16\]"):
        run(mixed_shapes_kernel, 1, Pointer(x), layout=LAYOUT)


def test_a_tma_copy_with_three_coordinates_is_named():
    from gluon_course.model.shims import ModelError as ShimsModelError

    desc = HostTensorDescriptor(Buffer("X", np.zeros((32, 16), np.float32), gl.bfloat16), BOX,
                                gl.NVMMASharedLayout.get_default_for(BOX, gl.bfloat16))
    with pytest.raises(ShimsModelError, match="3 coordinate"):
        desc.box([0, 0, 0])


@pytest.mark.parametrize("n", range(1, 10))
def test_every_program_order_runs_each_program_once(n):
    for name, order in PROGRAM_ORDERS.items():
        numbers = list(range(n)) if order is None else order(n)
        assert sorted(numbers) == list(range(n)), name


def _host_raises(path) -> set[int]:
    """The lines of every raise statement in a solution's host code (the functions and classes not compiled by
    @gluon.jit)."""
    tree = ast.parse(path.read_text())
    lines = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            continue
        lines |= {n.lineno for n in ast.walk(node) if isinstance(n, ast.Raise)}
    return lines


@pytest.mark.parametrize("number", ["31", "32", "33"])
def test_every_refusal_of_a_launcher_is_reached_by_plan_refusals(number):
    """Each raise in the lesson's launcher code (its plans, their helpers) is the one some case of its plan_refusals
    check meets: no refusal goes unchecked, and none is checked only on a GPU."""
    import traceback

    mod = load_solution(number)
    path = lesson(number).solution_path
    reached = set()
    for what, (call, error, words) in load_checks(number).plan_refusal_cases(mod).items():
        with pytest.raises(error) as caught:
            call()
        frames = [f for f in traceback.extract_tb(caught.value.__traceback__) if f.filename == str(path)]
        reached.add(frames[-1].lineno)
    missing = _host_raises(path) - reached
    assert not missing, f"no case of plan_refusals reaches the raise at solution.py line(s) {sorted(missing)}"
