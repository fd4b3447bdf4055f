"""A time model of the K loop that runs on a CPU: one trip of the loop, instruction by instruction, as one wave of a
workgroup of four (one wave per SIMD) would issue it, against the units the four waves share.

What it reads is the compiled listing (``amdgcn.main_loop``): every instruction of the loop in issue order. What it
puts in their way is a handful of rates and depths, each with its source (``Constant.source``; ``GFX950`` and
``GFX942`` hold them):

* the **issue slot**: the CU's scheduler looks at one SIMD per clock, round robin, and issues at most one instruction
  per wave there, so a wave alone on its SIMD issues at most one instruction every 4 clocks;
* the **MFMA pipe**: an MFMA holds it for its passes, 4 clocks each (``MFMA_PASSES``, LLVM's scheduling model: 4
  passes, 16 clocks, for ``v_mfma_f32_16x16x32_f16`` on gfx950 and ``16x16x16`` on gfx942); the wave may issue other
  instructions in its shadow, the next MFMA waits for the pipe;
* the **LDS**: a ``ds_read_b128`` of each of the four waves takes 16 clocks of the LDS's 256 bytes per clock (times
  the worst bank conflict, from ``memory.lds``); a queue of 8 requests per SIMD pair (4 per wave) before issue
  stalls; an idle read returns after 60 clocks;
* the **vector memory path** (the TCP, the CU's L1): a ``buffer_load_dwordx4`` of each wave takes 16 clocks of it, so
  64 for the four; a queue of about 12 requests per CU (3 per wave) before issue stalls; at most 32 KiB in flight per
  CU (8 KiB, eight 1 KiB copies, per wave); a request is in flight for one memory round trip, 1000 clocks;
* ``s_waitcnt vmcnt(n)`` / ``lgkmcnt(n)`` wait until at most n of the wave's requests of that kind are outstanding
  (they retire in order); ``s_nop n`` is n + 1 issue slots; a barrier is a wave's issue slot (the four waves are
  identical and in step, so none waits for another).

The loop is run for several trips; the last one is the steady state: its cycles per K step, and the MFMA pipe's busy
share of them (``Prediction.mfma_busy``), which is the share of the MFMA peak the loop reaches at whatever clock the
GPU runs. That is the quantity AMD's chart calls MFMA efficiency (their ``docs/mfma_efficiency.md``: MFMA cycles of
the main loop over its cycles, per SIMD, from thread traces), so the two are compared directly.

What the model leaves out (``LEAVES_OUT``): register dependencies other than the waits (an MFMA that reads another's
result, a VALU that reads a load's; the compiler's ``s_nop`` wait states are counted), the copies' writes into LDS
competing with the reads, the MFMA's dependency on its own accumulator, L2 hits (every request takes one
round-trip latency; lesson 29's order changes nothing here), clock frequency, the prologue and epilogue, branch
penalties, instruction-cache misses, and waves that drift apart (a barrier costs nothing). It is a model of the
order the listing imposes, not a simulator of the GPU.

What its agreement with AMD's figures rests on (``sensitivity``): each constant varied alone over a grid of its
value, the versions that stay within the course target at each value, and ``agreement_words`` saying which constants
the agreement does not test and which it turns on. ``RECORD`` keeps the sweep; the results page and lesson 20 show it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace

from . import amdgcn


@dataclass(frozen=True)
class Constant:
    """One number of the model, with where it comes from."""
    name: str
    value: float
    unit: str
    source: str

    def __str__(self) -> str:
        return f"{self.name} = {self.value:g} {self.unit} ({self.source})"


TUTORIALS = "ROCm/gfx950-gluon-tutorials"
LDS_DOC = f"{TUTORIALS} docs/lds_throughput.md at 06434769"
V8_README = f"{TUTORIALS} kernels/gemm/intra_wave/a16w16/v8_sliceMN/README.md at 22c5f0d9"
HIDING_MODEL = f"{TUTORIALS} kernels/gemm/a16w16/latency_hiding_model.html at 04ae7a16"
BANDWIDTH_DOC = f"{TUTORIALS} docs/memory_bandwidth_model.md at ae94fe23"
EFFICIENCY_DOC = f"{TUTORIALS} docs/mfma_efficiency.md at 2dfccb97"
SCHEDULER_DOC = ("ROCm/rocprofiler-compute docs/conceptual/pipeline-descriptions.rst at 6db105cf, 'Scheduler': each "
                 "clock the scheduler considers one SIMD, round robin, and issues up to one instruction per wave")
SISCHEDULE = ("LLVM's scheduling model, llvm/lib/Target/AMDGPU/SISchedule.td in ROCm/llvm-project at 37d9a345 "
              "(SIDPGFX950FullSpeedModel and SIDPGFX942FullSpeedModel: V_MFMA_.32_16X16X16 and 16X16X32 are "
              "Write4PassMAI, 32X32X8 and 32X32X16 Write8PassMAI; the same four lines in llvm/llvm-project's "
              "SIDPGFX940FullSpeedModel at 03a5b92d)")
LLVM_MCA = ("llvm-mca's tests llvm/test/tools/llvm-mca/AMDGPU/gfx950.s at 071dcd49 (16x16x32_f16 4.00, 32x32x16_f16 "
            "and _bf16 8.00) and gfx942-mfma.s at bf4aafd4 (16x16x16_f16 and _bf16 4.00, 32x32x8 8.00)")

# The passes of each fp16/bf16 MFMA (fp32 accumulator) by its M × N × K, per target, as SISCHEDULE and LLVM_MCA give
# them. Passes do not follow from the FMAs: gfx950's 16x16x32 (8192 FMAs) takes the 4 passes of 16x16x16 (4096),
# which gfx950 keeps at 4 too, and its 32x32x16 the 8 of 32x32x8. So an MFMA's clocks are its passes times the clocks
# of a pass: FMAs over gfx950's peak rate would give 16x16x16 8 clocks where LLVM gives it 16.
MFMA_PASSES = {
    "gfx950": {(16, 16, 32): 4, (32, 32, 16): 8, (16, 16, 16): 4, (32, 32, 8): 8},
    "gfx942": {(16, 16, 16): 4, (32, 32, 8): 8},
}


@dataclass(frozen=True)
class Machine:
    """The rates and depths of one target (per wave, with four waves of a workgroup sharing a CU)."""
    target: str
    issue: Constant               # clocks between two instructions of one wave
    mfma_pass: Constant           # clocks of one MFMA pass: an MFMA's clocks are its passes (MFMA_PASSES) times this
    lds_bytes_per_clock: Constant # the CU's LDS: banks × bytes per bank, per clock
    lds_queue: Constant           # LDS requests one wave may have queued before its issue stalls
    lds_latency: Constant         # clocks from issue to data for a read of an idle LDS
    tcp_clocks: Constant          # clocks of the TCP per dwordx4 request of one wave (the four waves sharing it)
    tcp_clocks_dword: Constant    # the same for a 4-byte request (buffer_load_dword, gfx942's direct copies)
    vmem_queue: Constant          # vector-memory requests one wave may have queued before its issue stalls
    tcp_bytes: Constant           # bytes of requests one wave may have in flight (the CU's TCP over four waves)
    memory_latency: Constant      # clocks a request is in flight: one round trip to memory
    waves: int = 4                # waves of the workgroup sharing the CU (one per SIMD)

    def constants(self) -> list[Constant]:
        return [self.issue, self.mfma_pass, self.lds_bytes_per_clock, self.lds_queue, self.lds_latency,
                self.tcp_clocks, self.tcp_clocks_dword, self.vmem_queue, self.tcp_bytes, self.memory_latency]

    def mfma_passes(self, opcode: str) -> int:
        """An fp16/bf16 MFMA's passes on this target (``MFMA_PASSES``)."""
        m = re.fullmatch(r"v_mfma_f32_(\d+)x(\d+)x(\d+)_b?f16", opcode)
        passes = MFMA_PASSES[self.target].get(tuple(int(g) for g in m.groups())) if m else None
        if passes is None:
            known = ", ".join(f"{a}x{b}x{c}" for a, b, c in MFMA_PASSES[self.target])
            raise ValueError(f"{opcode}: the time model knows the passes of the fp16 and bf16 MFMAs {known} on "
                             f"{self.target} (LLVM's scheduling model), not this instruction's")
        return passes

    def mfma_clocks(self, opcode: str) -> float:
        """An MFMA's clocks in the pipe: its passes times the clocks of a pass."""
        return self.mfma_passes(opcode) * self.mfma_pass.value


def _issue() -> Constant:
    return Constant("issue slot", 4, "clocks per instruction of one wave",
                    f"{SCHEDULER_DOC}; {LDS_DOC} §1.1: a wave of 64 lanes on a 16-wide SIMD takes 4 cycles to issue")


GFX950 = Machine(
    "gfx950",
    _issue(),
    Constant("MFMA pass", 4, "clocks",
             f"{SISCHEDULE}: 4 passes for v_mfma_f32_16x16x32_f16, and {EFFICIENCY_DOC}: 16 cycles for it (the "
             "loop's 128 MFMAs are 2048 cycles), 4 a pass; the MI355X peak agrees (gluon_course.amd.PEAKS: 512 FMAs "
             f"per matrix core per clock, 8192 FMAs in 16 clocks); {LLVM_MCA}"),
    Constant("LDS bandwidth", 256, "bytes per clock per CU",
             f"{LDS_DOC} §1.3: 64 banks of 4 bytes; one ds_read_b128 of each of the four SIMDs (4 KiB) every 16 "
             "clocks (§1.5), times the worst bank conflict (§5)"),
    Constant("LDS queue", 4, "requests per wave",
             f"{LDS_DOC} §1.6: an 8-entry FIFO per SIMD pair, shared by the pair's two waves"),
    Constant("LDS latency", 60, "clocks",
             f"{LDS_DOC} §1.6: the first completion ~50-70 cycles after the first issue (the middle taken)"),
    Constant("TCP time (dwordx4)", 64, "clocks per request of one wave",
             f"{V8_README} §4.3-4.4: 16 cycles per buffer_load(_to_lds)_dwordx4 in the TCP, × 4 waves sharing it; the "
             f"t = 64 of {HIDING_MODEL}"),
    Constant("TCP time (dword)", 16, "clocks per request of one wave",
             f"{V8_README} §4.3: 4 cycles per buffer_load(_to_lds)_dword, × 4 waves"),
    Constant("VMEM queue", 3, "requests per wave",
             f"{V8_README} §4.2: a per-CU FIFO of about 12 entries, 3-4 requests per wave without delay"),
    Constant("TCP in flight", 8192, "bytes per wave",
             f"{V8_README} §4.1 (the TCP, 32 KB, 'on MI300/MI350') and {BANDWIDTH_DOC} §2.4: at most 32 KB of "
             "requests in flight per CU, over four waves"),
    Constant("memory latency", 1000, "clocks",
             f"{HIDING_MODEL}: the HBM round trip L, '~1000 idle' (it grows with K and contention); {V8_README} "
             "§4.5: ~1000 cycles is the budget before a full TCP stalls, not a measured latency"),
)


# gfx942's own figures where a cited document gives them; the rest are gfx950's, carried over and marked assumed: the
# tutorials measured an MI355X only, and the course found no gfx942 figure for them. V8_README §4.1 puts both GPUs'
# buffer loads (to LDS or not) through the same TCP path, which is why gfx950's TCP figures are the ones carried.
_CARRIED = "no gfx942 figure found in the cited documents (the tutorials measured an MI355X); assumed"

GFX942 = Machine(
    "gfx942",
    _issue(),
    Constant("MFMA pass", 4, "clocks",
             f"{SISCHEDULE}: 4 passes for v_mfma_f32_16x16x16_f16; 4 clocks a pass as on gfx950, which the MI300X "
             "peak agrees with (gluon_course.amd.PEAKS: 256 FMAs per matrix core per clock, 4096 FMAs in 16 "
             f"clocks); {LLVM_MCA}"),
    Constant("LDS bandwidth", 128, "bytes per clock per CU",
             "ROCm/rocprofiler-compute docs/conceptual/pipeline-descriptions.rst at 6db105cf, 'Local data share': on "
             "CDNA accelerators 32 banks of 4 bytes, each read or written every cycle, 128 bytes per clock; the same "
             "32 banks in gluon_course.memory.lds.GFX942 (the ROCm blog 'Avoiding LDS Bank Conflicts on AMD GPUs Using "
             "CK-Tile', 2025-07-25)"),
    Constant("LDS queue", 4, "requests per wave", f"gfx950's ({LDS_DOC} §1.6): {_CARRIED}"),
    Constant("LDS latency", 60, "clocks", f"gfx950's ({LDS_DOC} §1.6): {_CARRIED}"),
    Constant("TCP time (dwordx4)", 64, "clocks per request of one wave",
             f"gfx950's ({V8_README} §4.3-4.4): {_CARRIED}"),
    Constant("TCP time (dword)", 16, "clocks per request of one wave", f"gfx950's ({V8_README} §4.3): {_CARRIED}"),
    Constant("VMEM queue", 3, "requests per wave", f"gfx950's ({V8_README} §4.2): {_CARRIED}"),
    Constant("TCP in flight", 8192, "bytes per wave",
             f"{V8_README} §4.1: the TCP is 32 KB 'on MI300/MI350', and {BANDWIDTH_DOC} §2.4: 32 KB per CU 'on GFX9'; "
             "over four waves"),
    Constant("memory latency", 1000, "clocks", f"gfx950's ({HIDING_MODEL}: ~1000 idle): {_CARRIED}"),
)


MACHINES = {"gfx950": GFX950, "gfx942": GFX942}


LEAVES_OUT = (
    "register dependencies other than the waits: an MFMA that reads another's result, a VALU that reads a load's (the "
    "compiler's s_nop wait states are counted, as issue slots)",
    "the copies' writes into LDS (64 KiB per K step at the course's tile) competing with the reads for the banks",
    "L2 hits: every request is in flight one round trip (1000 clocks); so lesson 29's order changes nothing here",
    "the clock: the model counts clocks, so its share of the MFMA peak is at whatever clock the GPU runs (AMD's "
    "TFLOPS over the 2400 MHz peak come out lower: their GPU ran slower than its peak clock)",
    "the prologue, the epilogue and the store of C (the loop's steady state only, as AMD's efficiency is)",
    "branch penalties, instruction-cache misses, 64-bit VALU instructions taking two slots",
    "waves that drift apart: the four waves are identical and in step, so a barrier costs only its issue slot",
)


# -- one instruction's demands ----------------------------------------------------------------------------------

_LDS_BYTES = (("b128", 16), ("b96", 12), ("b64", 8), ("b32", 4), ("u16", 2), ("b16", 2), ("u8", 1), ("b8", 1))
_VMEM_BYTES = (("dwordx4", 16), ("dwordx3", 12), ("dwordx2", 8), ("dword", 4), ("short", 2), ("ushort", 2),
               ("ubyte", 1), ("sbyte", 1), ("byte", 1))


def _bytes(opcode: str, table) -> int:
    """Bytes per lane of a memory instruction, from its name (``ds_read2_b64``: two 8-byte reads, 16)."""
    pair = 2 if re.match(r"ds_(read|write|load|store)2", opcode) else 1
    for tag, n in table:
        if tag in opcode:
            return n * pair
    return 4 * pair


def kind(ins: amdgcn.Instruction) -> str:
    """What the model does with an instruction: ``mfma``, ``lds`` (a ds_* request), ``vmem`` (a buffer or global
    load or store), ``wait``, ``nop`` or ``issue`` (anything else: one issue slot)."""
    op = ins.opcode
    if op.startswith("v_mfma"):
        return "mfma"
    if op.startswith("ds_"):
        return "lds"
    if op.startswith(("buffer_", "global_")):
        return "vmem"
    if op == "s_waitcnt":
        return "wait"
    if op == "s_nop":
        return "nop"
    return "issue"


# -- the run ---------------------------------------------------------------------------------------------------

@dataclass
class Event:
    """One instruction of one trip: when it issued, and for the units it holds, for how long."""
    index: int
    trip: int
    kind: str
    opcode: str
    issue: float
    start: float = 0.0     # MFMA: in the pipe; lds/vmem: service (LDS) or TCP time
    end: float = 0.0
    ready: float = 0.0     # lds/vmem: data there (the request retires)
    what: str = ""         # the opcode, "… lds" added for a copy straight into LDS


@dataclass
class Stall:
    """The wave waiting before an instruction: ``reason`` is ``vmcnt``, ``lgkmcnt``, ``MFMA pipe``, ``LDS queue``
    or ``VMEM queue``."""
    trip: int
    reason: str
    start: float
    end: float


@dataclass
class Prediction:
    """The steady state of the K loop: one trip's clocks, per K step, and what the MFMA pipe did in them."""
    target: str
    steps: int                     # K steps per trip (2 when the loop is unrolled twice)
    trip_clocks: float
    mfma_clocks: float             # MFMA pipe busy per trip
    events: list[Event] = field(repr=False)
    stalls: list[Stall] = field(repr=False)
    start: float = 0.0             # when the steady trip began
    budget: dict = field(default_factory=dict)
    lds_ways: float = 1.0          # the reads' worst bank conflict the run was given
    latency: float = 0.0           # the memory round trip the run took
    busy: list = field(default_factory=list, repr=False)     # the MFMA pipe's busy spans over the trip's clocks
    carried: list = field(default_factory=list, repr=False)  # events of earlier trips whose units reach into this one

    @property
    def step_clocks(self) -> float:
        return self.trip_clocks / self.steps

    @property
    def mfma_busy(self) -> float:
        """The MFMA pipe's share of the trip: the share of the MFMA peak the loop reaches, at any clock."""
        return self.mfma_clocks / self.trip_clocks

    def idle_by_reason(self) -> dict:
        """The clocks of the steady trip the MFMA pipe stood idle, by what the wave was doing: waiting (``vmcnt``,
        ``lgkmcnt``, ``VMEM queue``, ``LDS queue``) or issuing other instructions (``issue``)."""
        busy = sorted(self.busy) or sorted((e.start, e.end) for e in self.events if e.kind == "mfma")
        end = self.start + self.trip_clocks
        idle, cursor = [], self.start
        for a, b in busy:
            if a > cursor:
                idle.append((cursor, min(a, end)))
            cursor = max(cursor, b)
        if cursor < end:
            idle.append((cursor, end))
        out: dict = {}
        for a, b in idle:
            covered = 0.0
            for s in self.stalls:
                if s.reason == "MFMA pipe":
                    continue
                lo, hi = max(a, s.start), min(b, s.end)
                if hi > lo:
                    out[s.reason] = out.get(s.reason, 0.0) + hi - lo
                    covered += hi - lo
            if b - a - covered > 0:
                out["issue"] = out.get("issue", 0.0) + b - a - covered
        return {k: round(v) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}

    def limited_by(self) -> str:
        """What the MFMA pipe waited for most in the steady trip, in words."""
        idle = self.idle_by_reason()
        if not idle or sum(idle.values()) < 0.02 * self.trip_clocks:
            return "the MFMA pipe (the loop is MFMA-bound)"
        reason = next(iter(idle))
        return REASONS[reason]

    def line(self) -> str:
        idle = self.idle_by_reason()
        said = ", ".join(f"{v} {k}" for k, v in idle.items()) or "none"
        per_step = f" ({self.step_clocks:.0f} per K step)" if self.steps > 1 else ""
        return (f"{self.trip_clocks:.0f} clocks per trip{per_step}, the MFMA pipe busy {self.mfma_clocks:.0f} of them: "
                f"{self.mfma_busy:.1%} of the MFMA peak; idle clocks by cause: {said}")


REASONS = {
    "vmcnt": "waits for copies from memory (s_waitcnt vmcnt)",
    "lgkmcnt": "waits for LDS reads (s_waitcnt lgkmcnt)",
    "VMEM queue": "copies the memory path cannot take yet (its queue and the TCP's 32 KiB are full)",
    "LDS queue": "LDS reads the LDS cannot take yet (its queue is full)",
    "issue": "the other instructions of the loop, one issue slot each",
}


LANES = 64    # lanes of a wave (CDNA: wave64), so a request moves 64 × its bytes per lane


@dataclass(frozen=True)
class _Decoded:
    """What the model needs of one instruction, read once per run: its ``kind``, its name as the lanes show it, and
    its demand (MFMA: clocks in the pipe; lds: clocks of LDS service, conflicts included; vmem: clocks of TCP and
    bytes; wait: the counts waited for; nop and the rest: issue slots)."""
    kind: str
    opcode: str
    what: str
    clocks: float = 0.0
    nbytes: int = 0
    vmcnt: int = 0
    lgkmcnt: int = 0
    slots: int = 1


def _decode(ins: amdgcn.Instruction, m: Machine, lds_ways: float) -> _Decoded:
    k, op = kind(ins), ins.opcode
    what = op + (" … lds" if amdgcn.category(ins) == "buffer load → LDS" else "")
    if k == "mfma":
        return _Decoded(k, op, what, clocks=m.mfma_clocks(op))
    if k == "lds":
        service = _bytes(op, _LDS_BYTES) * LANES * m.waves / m.lds_bytes_per_clock.value
        return _Decoded(k, op, what, clocks=service * (lds_ways if op.startswith(("ds_read", "ds_load")) else 1))
    if k == "vmem":
        size = _bytes(op, _VMEM_BYTES)
        return _Decoded(k, op, what, clocks=m.tcp_clocks.value if size > 4 else m.tcp_clocks_dword.value,
                        nbytes=size * LANES)
    if k == "wait":
        counts = amdgcn.wait_counts(ins)
        return _Decoded(k, op, what, vmcnt=counts.get("vmcnt", amdgcn.WAIT_MAX["vmcnt"]),
                        lgkmcnt=counts.get("lgkmcnt", amdgcn.WAIT_MAX["lgkmcnt"]))
    if k == "nop":
        n = re.search(r"s_nop\s+(\d+)", ins.text)
        return _Decoded(k, op, what, slots=int(n.group(1)) + 1 if n else 1)
    return _Decoded(k, op, what)


class _Wave:
    """The state of one wave and of its share of the CU's units while it issues the loop."""

    def __init__(self, machine: Machine, memory_latency: float):
        self.m, self.latency = machine, memory_latency
        self.t = 0.0                      # when the wave can issue its next instruction
        self.mfma_free = 0.0              # when the MFMA pipe is free
        self.lds_free = 0.0               # when the LDS has served the wave's requests so far
        self.lds_last = 0.0               # when the last LDS request's data came back
        self.lds: list[tuple[float, float]] = []   # outstanding LDS requests: (served, data back), in order
        self.vmem: list[float] = []                # outstanding vector-memory requests: data back, in order
        self.tcp_last = float("-inf")     # when the TCP took the wave's last request
        self.held: list[tuple[float, float, int]] = []   # requests the TCP took or will take: (taken, back, bytes)
        self.events: list[Event] = []
        self.stalls: list[Stall] = []

    def wait(self, trip: int, reason: str, until: float) -> None:
        if until > self.t:
            self.stalls.append(Stall(trip, reason, self.t, until))
            self.t = until

    def mfma(self, trip, index, d: _Decoded):
        self.wait(trip, "MFMA pipe", self.mfma_free)
        self.events.append(Event(index, trip, "mfma", d.opcode, self.t, self.t, self.t + d.clocks))
        self.mfma_free = self.t + d.clocks

    def lds_request(self, trip, index, d: _Decoded):
        m, service = self.m, d.clocks
        queued = sorted(s for s, _ in self.lds if s > self.t)
        depth = int(m.lds_queue.value)
        if len(queued) >= depth:
            self.wait(trip, "LDS queue", queued[len(queued) - depth])
        start = max(self.t, self.lds_free)
        self.lds_free = start + service
        # An idle LDS returns the data lds_latency after issue; a busy one, one service time after the last request.
        back = max(self.t + m.lds_latency.value, self.lds_free + m.lds_latency.value - service, self.lds_last + service)
        self.lds_last = back
        self.lds.append((self.lds_free, back))
        self.events.append(Event(index, trip, "lds", d.opcode, self.t, start, self.lds_free, back))

    def vmem_request(self, trip, index, d: _Decoded):
        m, tcp, nbytes = self.m, d.clocks, d.nbytes
        waiting = sorted(a for a, _, _ in self.held if a > self.t)
        depth = int(m.vmem_queue.value)
        if len(waiting) >= depth:
            self.wait(trip, "VMEM queue", waiting[len(waiting) - depth])
        taken = max(self.t, self.tcp_last + tcp)
        # The TCP holds a request's bytes until its data is back: it takes this one when the wave's bytes leave room.
        inflight = sorted((back, b) for a, back, b in self.held if back > taken)
        room = m.tcp_bytes.value - sum(b for _, b in inflight)
        for back, b in inflight:
            if room >= nbytes:
                break
            taken, room = max(taken, back), room + b
        self.tcp_last = taken
        back = taken + self.latency
        self.held = [h for h in self.held if h[1] > self.t] + [(taken, back, nbytes)]
        self.vmem.append(back)
        self.events.append(Event(index, trip, "vmem", d.opcode, self.t, taken, taken + tcp, back))

    def waitcnt(self, trip, index, d: _Decoded):
        n = d.vmcnt
        if n < amdgcn.WAIT_MAX["vmcnt"] and len(self.vmem) > n:
            self.wait(trip, "vmcnt", max(self.vmem[:len(self.vmem) - n]))
            self.vmem = self.vmem[len(self.vmem) - n:]
        n = d.lgkmcnt
        if n < amdgcn.WAIT_MAX["lgkmcnt"] and len(self.lds) > n:
            self.wait(trip, "lgkmcnt", max(back for _, back in self.lds[:len(self.lds) - n]))
            self.lds = self.lds[len(self.lds) - n:]
        self.events.append(Event(index, trip, "wait", d.opcode, self.t))

    def step(self, trip: int, index: int, d: _Decoded) -> None:
        k = d.kind
        if k == "mfma":
            self.mfma(trip, index, d)
        elif k == "lds":
            self.lds_request(trip, index, d)
        elif k == "vmem":
            self.vmem_request(trip, index, d)
        elif k == "wait":
            self.waitcnt(trip, index, d)
        else:
            self.events.append(Event(index, trip, k, d.opcode, self.t))
        self.events[-1].what = d.what
        self.t += self.m.issue.value * d.slots
        # Requests whose data is back retire from the counters. They retire in order (their times only grow), so
        # when the oldest is still out, all are.
        if self.vmem and self.vmem[0] <= self.t:
            self.vmem = [b for b in self.vmem if b > self.t]
        if self.lds and self.lds[0][1] <= self.t:
            self.lds = [x for x in self.lds if x[1] > self.t]


def run(instructions, machine: Machine = GFX950, trips: int = 6, lds_ways: float = 1.0, steps: int = 1,
        memory_latency: float | None = None) -> Prediction:
    """Issue ``instructions`` (one trip of the loop, in order) ``trips`` times as one wave, and return the last trip,
    the steady state. ``lds_ways``: the worst bank conflict of the loop's LDS reads (``memory.lds``); ``steps``: K
    steps per trip; ``memory_latency``: another round trip than the machine's (a what-if)."""
    latency = machine.memory_latency.value if memory_latency is None else memory_latency
    wave = _Wave(machine, latency)
    decoded = [_decode(ins, machine, lds_ways) for ins in instructions]
    starts = []
    for trip in range(trips):
        starts.append(wave.t)
        for index, d in enumerate(decoded):
            wave.step(trip, index, d)
    starts.append(wave.t)
    last = trips - 1
    mine = [e for e in wave.events if e.trip == last]
    mfma = sum(e.end - e.start for e in mine if e.kind == "mfma")
    # The trip's window starts where the wave begins issuing it; an MFMA of the trip before may still be in the pipe,
    # one of this trip may run past its end: the window's own busy spans, every trip's MFMAs clipped to it.
    lo, hi = starts[last], starts[last + 1]
    busy = [(max(e.start, lo), min(e.end, hi)) for e in wave.events if e.kind == "mfma" and e.end > lo and e.start < hi]
    stalls = [Stall(last, s.reason, max(s.start, lo), min(s.end, hi)) for s in wave.stalls if s.end > lo and s.start < hi]
    carried = [e for e in wave.events if e.trip < last and e.kind in ("mfma", "lds", "vmem") and e.end > lo]
    return Prediction(machine.target, steps, hi - lo, mfma, mine, stalls, lo,
                      budget(instructions, machine, lds_ways, steps, latency), lds_ways, latency, busy, carried)


def budget(instructions, machine: Machine = GFX950, lds_ways: float = 1.0, steps: int = 1,
           memory_latency: float | None = None) -> dict:
    """What one trip asks of each unit alone, in clocks: the MFMA pipe, the wave's issue slots, the LDS, the TCP, and
    the clocks the copies need if the TCP's bytes in flight were the only limit (each in flight one round trip)."""
    latency = machine.memory_latency.value if memory_latency is None else memory_latency
    out = {"MFMA": 0.0, "issue": 0.0, "LDS": 0.0, "TCP": 0.0, "in flight": 0.0, "mfmas": 0, "lds requests": 0,
           "vmem requests": 0, "steps": steps}
    for ins in instructions:
        k = kind(ins)
        if k == "mfma":
            out["MFMA"] += machine.mfma_clocks(ins.opcode)
            out["mfmas"] += 1
        elif k == "lds":
            service = _bytes(ins.opcode, _LDS_BYTES) * LANES * machine.waves / machine.lds_bytes_per_clock.value
            out["LDS"] += service * (lds_ways if ins.opcode.startswith(("ds_read", "ds_load")) else 1)
            out["lds requests"] += 1
        elif k == "vmem":
            size = _bytes(ins.opcode, _VMEM_BYTES)
            out["TCP"] += machine.tcp_clocks.value if size > 4 else machine.tcp_clocks_dword.value
            out["in flight"] += size * LANES * latency / machine.tcp_bytes.value
            out["vmem requests"] += 1
        m = re.search(r"s_nop\s+(\d+)", ins.text) if k == "nop" else None
        out["issue"] += machine.issue.value * (int(m.group(1)) + 1 if m else 1)
    return out


# -- a compiled kernel, and AMD's figure beside it ---------------------------------------------------------------

def k_steps(instructions, tile: dict, num_warps: int) -> int:
    """K steps one trip of the loop covers: the FMAs of its MFMAs over one wave's share of a step's FMAs."""
    per_step = tile["BLOCK_M"] * tile["BLOCK_N"] * tile["BLOCK_K"] / num_warps
    fmas = 0
    for ins in instructions:
        m = re.search(r"v_mfma_\w+?_(\d+)x(\d+)x(\d+)", ins.opcode)
        if m:
            fmas += int(m.group(1)) * int(m.group(2)) * int(m.group(3))
    return max(1, round(fmas / per_step))


def predict(k, lds_ways: float = 1.0, memory_latency: float | None = None, tile: dict | None = None,
            num_warps: int | None = None) -> Prediction:
    """The steady state of a compiled AMD kernel's K loop (``amdgcn.main_loop``) on its target's machine."""
    from .kernel import NUM_WARPS, TILE

    if k.target not in MACHINES:
        raise ValueError(f"the time model knows {', '.join(MACHINES)}, not {k.target}")
    instructions = amdgcn.main_loop(k).instructions
    steps = k_steps(instructions, tile or TILE, num_warps or NUM_WARPS)
    return run(instructions, MACHINES[k.target], lds_ways=lds_ways, steps=steps, memory_latency=memory_latency)


# The course target for the model (it informs, never gates): within ±20% of AMD's figure for the version.
TARGET = 0.20


@dataclass(frozen=True)
class Comparison:
    """The model's share of the MFMA peak for a version beside AMD's figure (their MFMA efficiency)."""
    version: int
    predicted: float
    vendor: float
    vendor_tflops_share: float

    @property
    def ratio(self) -> float:
        return self.predicted / self.vendor

    @property
    def within(self) -> bool:
        return abs(self.ratio - 1) <= TARGET

    def line(self) -> str:
        verdict = "within" if self.within else "outside"
        return (f"AMD's v{self.version}: {self.vendor:.1%} MFMA busy in their thread traces (their chart at commit "
                f"04322ed8); the model / AMD = {self.ratio:.2f}, {verdict} the course target of ±{TARGET:.0%} "
                "(informs only)")


def compare(version: int, prediction: Prediction) -> Comparison:
    from .figure import PEAKS, VENDOR

    tflops, efficiency = VENDOR[version]
    return Comparison(version, prediction.mfma_busy, efficiency, tflops / PEAKS["gfx950"].tflops)


# -- what the agreement rests on: each constant varied alone ------------------------------------------------------

# The multiples of a constant's value the sweep tries; a finer grid for the two constants the agreement turns on, and
# every whole depth from 1 to twice the model's for the two queues (a queue holds whole requests).
SWEEP = (0.25, 0.5, 0.75, 1, 1.5, 2)
FINE_SWEEP = {"memory latency": (0.25, 0.5, 0.7, 0.8, 0.9, 1, 1.1, 1.2, 1.3, 1.4, 1.5, 2),
              "TCP in flight": (0.25, 0.5, 0.625, 0.75, 0.875, 1, 1.125, 1.25, 1.5, 2)}
QUEUES = ("LDS queue", "VMEM queue")
ROBUST = (0.5, 2)     # a constant is robust when every value it is swept to between these multiples keeps all versions


def sweep_values(k: Constant) -> list[float]:
    """The values the sensitivity sweep gives constant ``k``, its own among them."""
    if k.name in QUEUES:
        return list(range(1, 2 * int(k.value) + 1))
    return [round(k.value * f, 6) for f in FINE_SWEEP.get(k.name, SWEEP)]


def varied(machine: Machine, name: str, value: float) -> Machine:
    """``machine`` with the constant called ``name`` set to ``value``, every other as it is."""
    for f in fields(machine):
        k = getattr(machine, f.name)
        if isinstance(k, Constant) and k.name == name:
            return replace(machine, **{f.name: replace(k, value=value)})
    raise ValueError(f"{machine.target} has no constant called {name!r}: {', '.join(k.name for k in machine.constants())}")


def sensitivity(loops: dict, machine: Machine = GFX950) -> dict:
    """Each constant of ``machine`` varied alone over ``sweep_values``, the others kept: for every value, each
    version's share of the MFMA peak and the versions within ``TARGET`` of AMD's figure. ``loops``: ``{version: (the
    K loop's instructions, the reads' worst conflict, K steps per trip)}``; versions whose loops are the same
    instructions run once. Returns ``{"inputs": sensitivity_inputs(...), "versions": [...], "rows": [one per
    constant: {"name", "value", "unit", "values": [{"value", "busy", "within"}, ...]}]}``."""
    runs: dict = {}
    out = []
    for k in machine.constants():
        values = []
        for value in sweep_values(k):
            m = varied(machine, k.name, value)
            busy, within = {}, []
            for version, (instructions, ways, steps) in loops.items():
                key = (tuple(i.text for i in instructions), ways, steps, k.name, value)
                if key not in runs:
                    runs[key] = run(instructions, m, lds_ways=ways, steps=steps).mfma_busy
                c = Comparison(version, runs[key], _vendor(version), 0.0)
                busy[str(version)] = round(c.predicted, 4)
                if c.within:
                    within.append(version)
            values.append({"value": value, "busy": busy, "within": within})
        out.append({"name": k.name, "value": k.value, "unit": k.unit, "values": values})
    return {"inputs": sensitivity_inputs(loops, machine), "versions": sorted(loops), "rows": out}


def _vendor(version: int) -> float:
    from .figure import VENDOR

    return VENDOR[version][1]


def held_range(row: dict, versions: int) -> tuple[float, float]:
    """The lowest and highest values of a swept constant's unbroken run around its own value over which every one of
    ``versions`` stays within the target."""
    values = row["values"]
    at = next(i for i, v in enumerate(values) if v["value"] == row["value"])
    lo = hi = at
    while lo > 0 and len(values[lo - 1]["within"]) == versions:
        lo -= 1
    while hi < len(values) - 1 and len(values[hi + 1]["within"]) == versions:
        hi += 1
    return values[lo]["value"], values[hi]["value"]


def changes_nothing(row: dict) -> bool:
    """Whether no value of the sweep moves any version's prediction (a constant no instruction of the loops uses)."""
    return len({tuple(sorted(v["busy"].items())) for v in row["values"]}) == 1


def robust(row: dict, versions: int) -> bool:
    """Every version within the target at every value swept from ``ROBUST[0]`` to ``ROBUST[1]`` times the model's."""
    lo, hi = held_range(row, versions)
    return lo <= ROBUST[0] * row["value"] and hi >= ROBUST[1] * row["value"]


# What the value of a constant the agreement is sensitive to stands on: (whether a measurement or AMD's own count
# fixes it, in words). agreement_words asks for an entry for every such constant.
STANDING = {
    "MFMA pass": (True, "fixed by AMD's own count of 16 clocks for a 4-pass MFMA, which the MI355X peak gives too"),
    "LDS latency": (True, "the middle of the 50-70 cycles AMD's LDS note gives"),
    "TCP in flight": (False, "AMD's 32 KiB per CU split evenly over the four waves, a split the model assumes"),
    "memory latency": (False, "a budget AMD's README names, not a measured latency"),
}


SHORT_UNITS = {"bytes per wave": "KiB", "bytes per clock per CU": "bytes a clock"}


def number(value: float, unit: str) -> str:
    """A constant's value as the sweep's table shows it: KiB for bytes in flight, else as it is."""
    return f"{value / 1024:g}" if unit == "bytes per wave" else f"{value:g}"


def amount(value: float, unit: str) -> str:
    """A constant's value with its unit, short: ``8 KiB``, ``1000 clocks``, ``3 requests``, ``256 bytes a clock``."""
    return f"{number(value, unit)} {SHORT_UNITS.get(unit, unit.split(' per ')[0])}"


_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _count(n: int) -> str:
    return _WORDS[n] if n < len(_WORDS) else str(n)


def agreement_words(rows: list[dict], versions: int) -> str:
    """What the agreement with AMD's figures rests on, in the course's words, from the sweep ``rows``
    (``sensitivity``): the constants it does not test, those it moves with, and what each of those stands on."""
    idle = [r for r in rows if changes_nothing(r)]
    steady = [r for r in rows if r not in idle and robust(r, versions)]
    moving = [r for r in rows if r not in idle and r not in steady]
    missing = [r["name"] for r in moving if r["name"] not in STANDING]
    if missing:
        raise ValueError(f"the agreement moves with {', '.join(missing)}: say in STANDING what its value stands on")
    said = [f"At the model's constants all {versions} versions land within ±{TARGET:.0%} of AMD's figures."]
    unused = "".join(f"; the {r['name']} changes no prediction" for r in idle)
    if steady:
        one = len(steady) == 1
        said.append(f"{_count(len(steady)).capitalize()} constant{'' if one else 's'} keep{'s' if one else ''} all "
                    f"{versions} within from ×{ROBUST[0]:g} to ×{ROBUST[1]:g}, so the agreement does not test "
                    f"{'it' if one else 'them'}: " + ", ".join(r["name"] for r in steady) + unused + ".")
    elif idle:
        said.append(unused[2].upper() + unused[3:] + ".")
    parts = []
    for r in moving:
        lo, hi = held_range(r, versions)
        held = (f"all {versions} only at {amount(lo, r['unit'])}" if lo == hi else
                f"{number(lo, r['unit'])} to {amount(hi, r['unit'])}")
        parts.append(f"the {r['name']} ({held}), {STANDING[r['name']][1]}")
    if parts:
        listed = parts[0] if len(parts) == 1 else "; ".join(parts[:-1]) + "; and " + parts[-1]
        one = len(parts) == 1
        said.append(f"{_count(len(parts)).capitalize()} constant{'' if one else 's'} move{'s' if one else ''} it: "
                    f"{listed}.")
    chosen = [r for r in moving if not STANDING[r["name"]][0]]
    if chosen:
        said.append("The agreement rests on " + " and ".join(f"the {r['name']}" for r in chosen)
                    + ": no measurement fixes " + ("its value." if len(chosen) == 1 else "their values."))
    return " ".join(said)


# The record the results page and the notebooks read: the model's figure of every AMD version, and the sweep.
RECORD = "results/model/amd-gfx950-time-model.json"


def sensitivity_inputs(loops: dict, machine: Machine = GFX950) -> str:
    """A digest of everything the sweep reads (the loops, the constants, AMD's figures, the grid, and the model's and
    the listing reader's code), so that a stored sweep is known to be this model's on these loops without running it
    again; ``python -m gluon_course tables`` runs it when the digest changes."""
    import hashlib
    import json
    from pathlib import Path

    what = {"loops": [[v, [i.text for i in ins], ways, steps] for v, (ins, ways, steps) in sorted(loops.items())],
            "constants": [[k.name, k.value] for k in machine.constants()],
            "vendor": [[v, _vendor(v)] for v in sorted(loops)], "grid": [SWEEP, FINE_SWEEP, QUEUES, ROBUST, TARGET],
            "code": [Path(f).read_text(encoding="utf-8") for f in (amdgcn.__file__, __file__)]}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def recorded_sensitivity(root=None) -> dict:
    """The sweep as ``RECORD`` keeps it: ``{"inputs", "versions", "rows"}``."""
    import json

    from ..course import repo_root

    return json.loads(((root or repo_root()) / RECORD).read_text(encoding="utf-8"))["sensitivity"]


def sensitivity_table(sweep: dict) -> tuple[list[list[str]], list[str]]:
    """The sweep as rows of text (``display.table``): each constant, the model's value, the span over which every
    version stays within the target, and the versions within at each value swept."""
    n = len(sweep["versions"])
    rows = []
    for r in sweep["rows"]:
        lo, hi = held_range(r, n)
        held = "changes nothing" if changes_nothing(r) else (
            f"only {number(lo, r['unit'])}" if lo == hi else f"{number(lo, r['unit'])} to {number(hi, r['unit'])}")
        rows.append([r["name"], amount(r["value"], r["unit"]), held,
                     "  ".join(f"{number(v['value'], r['unit'])}:{len(v['within'])}" for v in r["values"])])
    return rows, ["constant", "the model's", f"all {n} within", f"versions within ±{TARGET:.0%} of AMD's, value:count"]


def show_sensitivity(root=None) -> None:
    """Print the recorded sweep and what the agreement rests on (the notebooks' cell; no model runs)."""
    import textwrap

    from ..display import table

    sweep = recorded_sensitivity(root)
    table(*sensitivity_table(sweep))
    print()
    print(textwrap.fill(agreement_words(sweep["rows"], len(sweep["versions"])), 116))


def budget_box(p: Prediction, label: str, conflict: str = "conflict-free in memory.lds") -> str:
    """The K step's budget as a box of text: what each unit must do in one trip (count × clocks each), the MFMAs it
    must hide behind, and what the model makes of it. ``conflict``: the reads' bank conflicts, in words."""
    import textwrap
    from collections import Counter

    machine = MACHINES[p.target]
    ops = Counter((e.kind, e.what) for e in p.events)
    b = p.budget
    rows = []
    for (k, op), n in sorted(ops.items()):
        if k == "mfma":
            rows.append(("MFMA", f"{n} × {op} × {machine.mfma_clocks(op):g} clocks", n * machine.mfma_clocks(op),
                         "the work"))
    for (k, op), n in sorted(ops.items()):
        if k == "lds":
            each = _bytes(op, _LDS_BYTES) * LANES * machine.waves / machine.lds_bytes_per_clock.value
            ways = p.lds_ways if op.startswith(("ds_read", "ds_load")) else 1
            note = f" ({conflict})" if op.startswith(("ds_read", "ds_load")) else ""
            rows.append(("LDS", f"{n} × {op} × {each * ways:g} clocks{note}", n * each * ways, "four waves share it"))
    for (k, op), n in sorted(ops.items()):
        if k == "vmem":
            tcp = machine.tcp_clocks.value if _bytes(op, _VMEM_BYTES) > 4 else machine.tcp_clocks_dword.value
            rows.append(("TCP", f"{n} × {op} × {tcp:g} clocks", n * tcp, "four waves share it"))
    if b["vmem requests"]:
        size = b["in flight"] * machine.tcp_bytes.value / b["vmem requests"] / machine.memory_latency.value / 1024
        rows.append(("in flight", f"{b['vmem requests']} × {size:g} KiB, {p.latency:g} clocks each, "
                     f"{machine.tcp_bytes.value / 1024:g} KiB at a time", b["in flight"], "the TCP's room"))
    rows.append(("issue", f"{len(p.events)} instructions × {machine.issue.value:g} clocks (s_nop n: n + 1)",
                 b["issue"], "one wave's slots"))
    what_w = max(len(r[1]) for r in rows) + 2
    per = f"per trip of {p.steps} K steps" if p.steps > 1 else "per K step"
    lines = [f"{label} · what one wave asks of each unit {per} ({p.target}; amd.time_model)"]
    for unit, what, clocks, note in rows:
        lines.append(f"  {unit:<10} {what:<{what_w}}{clocks:>6.0f} clocks   {note}")
    lines.append(f"  {'the model':<10} {p.trip_clocks:.0f} clocks per trip" +
                 (f", {p.step_clocks:.0f} per K step" if p.steps > 1 else "") +
                 f": the MFMA pipe busy {p.mfma_busy:.1%} of them")
    idle = p.idle_by_reason()
    if idle:
        said = f"MFMA idle {sum(idle.values())} clocks: " + ", ".join(f"{v} {IDLE_WORDS[k]}" for k, v in idle.items())
        lines += [" " * 13 + line for line in textwrap.wrap(said, max(60, len(lines[1]) - 13))]
    rule = "─" * max(len(line) for line in lines)
    return "\n".join([rule, *lines, rule])


IDLE_WORDS = {"vmcnt": "waiting for copies (vmcnt)", "lgkmcnt": "waiting for LDS reads (lgkmcnt)",
              "VMEM queue": "stuck issuing copies (queue and TCP full)", "LDS queue": "stuck issuing LDS reads "
              "(queue full)", "issue": "issuing other instructions"}
