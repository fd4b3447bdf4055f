"""The host model's AMD operations (gluon_course/model/amd.py), one behaviour at a time, on small kernels written
here: buffer loads and stores with the hardware's range check, direct-to-LDS copies with commit_group and
wait_group, mfma, gl.amd.slice; and the AMD GEMM lessons' kernels run through it (lessons 20-29)."""
from __future__ import annotations

import numpy as np
import pytest
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.amd import cdna3, cdna4
from triton.experimental.gluon.language.amd.cdna4 import async_copy

from gluon_course import load_solution
from gluon_course import amd
from gluon_course.model import Buffer, ModelError, ModelOutOfBounds, ModelRace, Pointer, run

SHARED = gl.SwizzledSharedLayout(1, 1, 1, order=[0])
LAYOUT = gl.BlockedLayout([1], [64], [4], [0])


@gluon.jit
def copy_kernel(src, dst, n, shift, XBLOCK: gl.constexpr, layout: gl.constexpr):
    offsets = gl.arange(0, XBLOCK, layout=layout) + shift
    x = cdna3.buffer_load(src, offsets, mask=offsets < n, other=-1.0)
    cdna3.buffer_store(x, dst, offsets, mask=offsets < n)


@gluon.jit
def unmasked_copy_kernel(src, dst, shift, XBLOCK: gl.constexpr, layout: gl.constexpr):
    offsets = gl.arange(0, XBLOCK, layout=layout) + shift
    cdna3.buffer_store(cdna3.buffer_load(src, offsets), dst, offsets)


@gluon.jit
def lds_kernel(src, dst, WAIT: gl.constexpr, COMMIT: gl.constexpr, XBLOCK: gl.constexpr, layout: gl.constexpr,
               shared: gl.constexpr):
    smem = gl.allocate_shared_memory(gl.float16, [2, XBLOCK], shared)
    offsets = gl.arange(0, XBLOCK, layout=layout)
    async_copy.buffer_load_to_shared(smem.index(0), src, offsets)
    if COMMIT:
        async_copy.commit_group()
    async_copy.buffer_load_to_shared(smem.index(1), src, offsets + XBLOCK)
    async_copy.commit_group()
    async_copy.wait_group(WAIT)
    cdna3.buffer_store(smem.index(0).load(layout), dst, offsets)
    async_copy.wait_group(0)


def _buffers(n=256):
    src = Buffer("src", np.arange(n, dtype=np.float32) % 7, gl.float16)
    dst = Buffer("dst", np.zeros(n, np.float32), gl.float16, poison=True)
    return src, dst


def test_masked_buffer_loads_read_other_and_masked_stores_are_dropped():
    src, dst = _buffers()
    run(copy_kernel, 1, Pointer(src), Pointer(dst), 200, 0, XBLOCK=256, layout=LAYOUT)
    out = dst.values()
    assert (out[:200] == src.values()[:200]).all()
    assert np.isnan(out[200:]).all() and (dst.writes[200:] == 0).all()


def test_the_range_check_reads_zero_and_drops_writes_outside_the_buffer_range():
    """An offset past 2^31 - 2 bytes (or negative: a huge unsigned offset) is outside the buffer descriptor's
    range: the load reads 0, the store writes nothing. Inside the range but outside the tensor is a real access to
    memory that is not the tensor's, and the model stops."""
    src, dst = _buffers()
    run(unmasked_copy_kernel, 1, Pointer(src), Pointer(dst), -256, XBLOCK=256, layout=LAYOUT)
    assert np.isnan(dst.values()).all() and (dst.writes == 0).all()
    far = 2 ** 30                                 # 2 GiB in fp16 elements: past the range
    run(unmasked_copy_kernel, 1, Pointer(src), Pointer(dst), far, XBLOCK=256, layout=LAYOUT)
    assert (dst.writes == 0).all()
    with pytest.raises(ModelOutOfBounds, match="outside its 256 elements"):
        run(unmasked_copy_kernel, 1, Pointer(src), Pointer(dst), 128, XBLOCK=256, layout=LAYOUT)


def test_a_read_that_overtakes_its_copy_is_a_race_naming_the_group():
    src, dst = _buffers(512)
    run(lds_kernel, 1, Pointer(src), Pointer(dst), WAIT=1, COMMIT=True, XBLOCK=256, layout=LAYOUT, shared=SHARED)
    assert (dst.values()[:256] == src.values()[:256]).all()
    with pytest.raises(ModelRace, match=r"reads smem\[0\] while the direct-to-LDS copy into it may still be in "
                                        r"flight.*group 1 of the 2"):
        run(lds_kernel, 1, Pointer(src), Pointer(dst), WAIT=2, COMMIT=True, XBLOCK=256, layout=LAYOUT,
            shared=SHARED)


def test_a_commit_closes_every_copy_since_the_last_one():
    """Without the first commit the two copies form one group: wait_group(1) retires nothing and the read races;
    wait_group(0) retires the group, both copies with it."""
    src, dst = _buffers(512)
    with pytest.raises(ModelRace):
        run(lds_kernel, 1, Pointer(src), Pointer(dst), WAIT=1, COMMIT=False, XBLOCK=256, layout=LAYOUT,
            shared=SHARED)
    run(lds_kernel, 1, Pointer(src), Pointer(dst), WAIT=0, COMMIT=False, XBLOCK=256, layout=LAYOUT, shared=SHARED)


@gluon.jit
def never_committed_kernel(src, dst, XBLOCK: gl.constexpr, layout: gl.constexpr, shared: gl.constexpr):
    smem = gl.allocate_shared_memory(gl.float16, [XBLOCK], shared)
    offsets = gl.arange(0, XBLOCK, layout=layout)
    async_copy.buffer_load_to_shared(smem, src, offsets)
    async_copy.wait_group(0)
    cdna3.buffer_store(smem.load(layout), dst, offsets)


def test_a_copy_never_committed_is_outstanding_even_after_wait_group_zero():
    """wait_group counts committed groups: a copy no commit_group closed is waited for by none, and Triton 3.9.0
    emits no s_waitcnt for such a wait (test_amd_lessons pins that on lesson 22). The read after it is the race."""
    src, dst = _buffers()
    with pytest.raises(ModelRace, match=r"reads smem while the direct-to-LDS copy into it was never committed"):
        run(never_committed_kernel, 1, Pointer(src), Pointer(dst), XBLOCK=256, layout=LAYOUT, shared=SHARED)


@gluon.jit
def unfinished_kernel(src, XBLOCK: gl.constexpr, layout: gl.constexpr, shared: gl.constexpr):
    smem = gl.allocate_shared_memory(gl.float16, [XBLOCK], shared)
    async_copy.buffer_load_to_shared(smem, src, gl.arange(0, XBLOCK, layout=layout))
    async_copy.commit_group()


def test_a_program_that_ends_with_copies_in_flight_is_named():
    src, _ = _buffers()
    with pytest.raises(ModelRace, match="direct-to-LDS copies still in flight"):
        run(unfinished_kernel, 1, Pointer(src), XBLOCK=256, layout=LAYOUT, shared=SHARED)


@gluon.jit
def mfma_kernel(a_ptr, b_ptr, c_ptr, USE_SLICE: gl.constexpr, layout: gl.constexpr):
    rows = gl.arange(0, 32, layout=gl.SliceLayout(1, layout))[:, None]
    cols = gl.arange(0, 32, layout=gl.SliceLayout(0, layout))[None, :]
    a = cdna3.buffer_load(a_ptr, rows * 32 + cols)
    b = cdna3.buffer_load(b_ptr, rows * 32 + cols)
    acc = cdna4.mfma(a, b, gl.zeros([32, 32], gl.float32, layout=layout), cd_regclass="a")
    if USE_SLICE:
        top = gl.amd.slice(acc, [16, 32], [0, 0])
        cdna3.buffer_store(top.to(gl.float16), c_ptr, gl.amd.slice(rows * 32 + cols, [16, 32], [0, 0]))
    else:
        cdna3.buffer_store(acc.to(gl.float16), c_ptr, rows * 32 + cols)


def test_mfma_multiplies_and_slice_takes_a_piece():
    rng = np.random.default_rng(1)
    a, b = rng.integers(-2, 3, (32, 32)).astype(np.float32), rng.integers(-2, 3, (32, 32)).astype(np.float32)
    layout = gl.BlockedLayout([1, 4], [16, 4], [4, 1], [1, 0])
    for use_slice in (False, True):
        bufs = [Buffer(n, v, gl.float16) for n, v in (("A", a), ("B", b))]
        c = Buffer("C", np.zeros((32, 32), np.float32), gl.float16, poison=True)
        run(mfma_kernel, 1, Pointer(bufs[0]), Pointer(bufs[1]), Pointer(c), USE_SLICE=use_slice, layout=layout)
        rows = 16 if use_slice else 32
        assert (c.values()[:rows] == (a @ b)[:rows]).all()
        assert np.isnan(c.values()[rows:]).all()


@gluon.jit
def shared_operand_kernel(a_ptr, layout: gl.constexpr, shared: gl.constexpr):
    smem = gl.allocate_shared_memory(gl.float16, [32, 32], shared)
    cdna3.mfma(smem, smem, gl.zeros([32, 32], gl.float32, layout=layout))


def test_mfma_refuses_operands_in_lds_with_a_sentence():
    a, _ = _buffers()
    with pytest.raises(ModelError, match="registers: read them from LDS first"):
        run(shared_operand_kernel, 1, Pointer(a), layout=gl.BlockedLayout([1, 4], [16, 4], [4, 1], [1, 0]),
            shared=gl.SwizzledSharedLayout(1, 1, 1, order=[1, 0]))


@pytest.mark.parametrize("number", [str(n) for n in range(20, 30)])
def test_every_amd_solution_is_exact_in_the_host_model(number):
    from gluon_course import load_checks

    checks = load_checks(number).CHECKS
    check = checks.check("host_model")
    assert check.run(load_solution(number)) is None


# -- correct code in the vendor's own style: Python control flow on scalars, builtin min and max ------------------

# AMD's v9 computes its tile with Python if/else and a ternary on run-time scalars (get_pids in their v9 README);
# Triton compiles those, and max/min, which its code generator reads as builtin_max/builtin_min.
_FIRST = "    first = xcd * per_xcd - gl.maximum(xcd - tall, 0)\n"
_ROWS = "    group_rows = gl.minimum(num_pid_m - first_pid_m, GROUP_M)\n"
PYTHON_STYLE = {
    "builtin max": ("29", _FIRST, _FIRST.replace("gl.maximum", "max")),
    "ternary": ("29", _FIRST, "    first = xcd * per_xcd if xcd < tall else tall * per_xcd + (xcd - tall) * (per_xcd - 1)\n"),
    "if/else": ("29", _FIRST, "    if xcd < tall:\n        first = xcd * per_xcd\n    else:\n"
                              "        first = tall * per_xcd + (xcd - tall) * (per_xcd - 1)\n"),
    "builtin min": ("29", _ROWS, _ROWS.replace("gl.minimum", "min")),
    "lesson 17, builtin min and an if": ("17", "    group_rows = gl.minimum(num_pid_m - first_pid_m, GROUP_M)\n",
                                         "    group_rows = min(num_pid_m - first_pid_m, GROUP_M)\n"
                                         "    if group_rows < 1:\n        group_rows = 1\n"),
}


@pytest.mark.parametrize("name", sorted(PYTHON_STYLE))
def test_correct_code_in_the_vendors_style_compiles_and_passes_the_host_checks(name):
    from gluon_course import load_checks
    from gluon_course.grading.runner import run_check

    number, old, new = PYTHON_STYLE[name]
    variant = amd.solution_variant(number, old, new, "pystyle" + "".join(c for c in name if c.isalnum()))
    checks = load_checks(number)
    # The machine-code check compiles it: code that Triton compiles is what the host must run.
    keys = ("loop_gfx950", "xcd_order", "host_model") if number == "29" else ("pipeline_sm_90", "grouped_order",
                                                                               "host_model")
    for key in keys:
        outcome = run_check(checks.CHECKS.check(key), variant, number)
        assert outcome.ok, f"{name}: {key} says {outcome.detail}"


def test_builtin_min_and_max_are_triton_s_elementwise_ones():
    from gluon_course.model import shims

    assert shims.builtin_max(3, 7, 5) == 7 and shims.builtin_min(3, 7, 5) == 3
    assert list(shims.builtin_max(np.arange(4), 2)) == [2, 2, 2, 3]
    assert list(shims.builtin_min(np.arange(4), np.array([3, 0, 3, 0]))) == [0, 0, 2, 0]
    assert shims.builtin_max([4, 9]) == 9          # one iterable: Python's own


def test_a_line_python_cannot_run_as_the_gpu_does_is_not_modelled_by_name():
    """The model concludes nothing from a line it cannot run: ModelUnsupported naming the line, which a check turns
    into 'not checked here'. An error of the model's own stays what it is."""
    from gluon_course.model import ModelError, ModelUnsupported
    from gluon_course.model.orders import tile_order

    def vector_condition(tile, m, n):
        lanes = np.arange(2) + tile
        return (0 if lanes else 1), 0          # a condition on two values: no scalar to branch on

    with pytest.raises(ModelUnsupported, match=r"line \d+ of test_amd_model.py does \(`return \(0 if lanes"):
        tile_order(vector_condition, 4, 2, 2)

    def model_fault(tile, m, n):
        from gluon_course.model.shims import Pointer
        Pointer(None).dtype                    # a pointer into no buffer: the caller's fault, raised inside the model
        return 0, 0

    with pytest.raises(AttributeError):
        tile_order(model_fault, 1, 1, 1)

    def pointer_plus_pointer(tile, m, n):
        from gluon_course.model.shims import Pointer
        Pointer(None) + Pointer(None)          # a kernel's mistake: the model's sentence for it
        return 0, 0

    with pytest.raises(ModelError, match="a pointer plus a pointer"):
        tile_order(pointer_plus_pointer, 1, 1, 1)
