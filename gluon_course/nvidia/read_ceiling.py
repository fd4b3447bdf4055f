"""The fastest read of a weight matrix's bytes the course has measured on Hopper: the ceiling a decode GEMM (lesson 32,
M ≤ 16, a stream of W) is set beside at its own size, next to the device copy's bandwidth.

A copy of hundreds of MiB shows what HBM gives a long stream; a decode GEMM reads 32–112 MiB once per call, and some
of its time does not grow with W (the launch, the first copies' latency, the last program's tail). ``reader(w)``
reads W and nothing else, as the decode path copies it: [64, 128] boxes through a ring of shared-memory slots filled
by TMA, two programs an SM, each a contiguous run of boxes. Only its last slot is read back from shared memory (one
fp32 sum a program, so the copies have a consumer and the result can be checked). A GEMM brings the same bytes in
the same way and has its own work besides, so this read is what its copies could reach at that size with nothing
else to do. On the H200 (tools/probes/probe_stream.py, results/trials/nvidia-h200-2026-12-03-read-ceiling.json) such
rings read W's 32 MiB in 10.3–11.2 µs after an L2 emptied by a read, at best 77% of the copy's 4.22 TB/s, whether
with 128, 132 or 264 programs, 4, 8 or 12 slots, or programmatic dependent launch (launch_pdl with a
griddepcontrol.wait after the first copies); plain 16-byte loads did worse (65% at best). At 48 MiB the rings read
82–88%, at 112 MiB 95–99%.
"""
from __future__ import annotations

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
from triton.language.extra.cuda import gdc_wait

BOX = (64, 128)              # lesson 32's decode tile of W (swap-AB's BLOCK_M 64 rows × BLOCK_K 128): 16 KiB of bf16
SLOTS = 4
PROGRAMS_PER_SM = 2          # 2 × 4 slots × 16 KiB = 128 KiB of an SM's shared memory in flight


@gluon.jit
def tma_read_kernel(w_desc, out_ptr, boxes, boxes_per_row, STAGES: gl.constexpr, PDL: gl.constexpr = False):
    """Program p reads boxes [p·boxes // P, (p+1)·boxes // P) of W (row-major box order, P programs), STAGES copies
    in flight: each slot's copy is waited for and the slot refilled with the copy STAGES boxes on. out[p]: the sum
    of the last box it read. ``PDL`` (the probe's question, compiled with launch_pdl=True): the first STAGES copies
    go before a griddepcontrol.wait, as a kernel launched early might copy W, which nothing before it writes."""
    BR: gl.constexpr = w_desc.block_shape[0]
    BC: gl.constexpr = w_desc.block_shape[1]
    pid = gl.program_id(0)
    first = pid * boxes // gl.num_programs(0)
    count = (pid + 1) * boxes // gl.num_programs(0) - first
    ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BR, BC], w_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
    for s in gl.static_range(STAGES):           # fill the ring
        if s < count:
            box = first + s
            mbarrier.expect(ready.index(s), w_desc.block_type.nbytes)
            tma.async_load(w_desc, [(box // boxes_per_row) * BR, (box % boxes_per_row) * BC], ready.index(s),
                           ring.index(s))
    if PDL:
        gdc_wait()
    for i in range(count):                       # wait for each copy, refill its slot
        slot = i % STAGES
        mbarrier.wait(ready.index(slot), (i // STAGES) & 1)
        if i + STAGES < count:
            box = first + i + STAGES
            mbarrier.expect(ready.index(slot), w_desc.block_type.nbytes)
            tma.async_load(w_desc, [(box // boxes_per_row) * BR, (box % boxes_per_row) * BC], ready.index(slot),
                           ring.index(slot))
    last = ring.index((count + STAGES - 1) % STAGES).load(
        gl.BlockedLayout([1, 8], [4, 8], [gl.num_warps(), 1], [1, 0]))
    gl.store(out_ptr + pid, gl.sum(gl.sum(last.to(gl.float32), axis=1), axis=0))
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))


def _require_readable(w: torch.Tensor) -> None:
    if w.dim() != 2 or w.dtype != torch.bfloat16 or not w.is_contiguous():
        raise ValueError(f"the read ceiling reads a contiguous 2-D bf16 W (got {w.dtype}, shape {tuple(w.shape)}, "
                         f"strides {w.stride()}): pass the weight matrix itself, or .contiguous() of it")
    if w.shape[0] % BOX[0] or w.shape[1] % BOX[1]:
        raise ValueError(f"the read ceiling reads W in whole {BOX[0]} × {BOX[1]} boxes; {tuple(w.shape)} is not a "
                         f"multiple of them (every weight matrix of lesson 32's table is)")


def reader(w: torch.Tensor, programs: int | None = None, stages: int = SLOTS):
    """A callable that reads every byte of W once (see the module's docstring); its result is in ``.out``."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from .hopper import require_hopper

    require_hopper(w)
    _require_readable(w)
    if programs is None:
        programs = PROGRAMS_PER_SM * torch.cuda.get_device_properties(w.device).multi_processor_count
    layout = gl.NVMMASharedLayout.get_default_for(list(BOX), gl.bfloat16)
    desc = TensorDescriptor.from_tensor(w, list(BOX), layout)
    boxes_per_row = w.shape[1] // BOX[1]
    boxes = (w.shape[0] // BOX[0]) * boxes_per_row
    out = torch.zeros(programs, dtype=torch.float32, device=w.device)

    def read():
        tma_read_kernel[(programs,)](desc, out, boxes, boxes_per_row, STAGES=stages, num_warps=4)
        return out

    read.out, read.boxes, read.programs = out, boxes, programs
    return read


def last_box_sums(w: torch.Tensor, programs: int) -> torch.Tensor:
    """What ``reader(w, programs)``'s ``out`` must hold: each program's last box summed in fp32 (float64 here)."""
    rows, cols = w.shape[0] // BOX[0], w.shape[1] // BOX[1]
    boxes = rows * cols
    sums = []
    for p in range(programs):
        last = (p + 1) * boxes // programs - 1
        if last < p * boxes // programs:     # a program with no box sums its (untouched) slot: not compared
            sums.append(float("nan"))
            continue
        r, c = divmod(last, cols)
        sums.append(w[r * BOX[0]:(r + 1) * BOX[0], c * BOX[1]:(c + 1) * BOX[1]].double().sum().item())
    return torch.tensor(sums, dtype=torch.float64)
