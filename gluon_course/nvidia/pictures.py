"""Pictures of a pipelined GEMM's ring of shared-memory slots, drawn from the kernel's own run in the host model
(``gluon_course.model``): which K step each slot holds, when its copy was issued and landed, which wait saw it
land (and the phase parity that wait named), and how long the MMA read it before the slot was refilled.

    >>> trace = ring_trace("16")                        # lesson 16's solution, one tile of C
    >>> ring_timeline(trace, stages=4, title="Lesson 16")
    >>> barrier_figure(barrier_history(ring_trace("14"), "ready[0]"))

Everything drawn is an event of the trace, in the order the model ran it. The model is not a GPU: a copy lands as
soon as its barrier's phase can complete, so the x axis is the order of events, never time on a GPU.

The figures are plain ``matplotlib.figure.Figure`` objects, made without pyplot: no backend is chosen or changed,
nothing opens a window, and nothing is kept open after the caller drops them. A notebook shows one returned as a
cell's value; ``fig.savefig("ring.png")`` writes a PNG.
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

# The course's chart colours (display.py, memory/layouts.py).
COPY_COLOUR = "#4C78A8"          # a copy in flight
READY_COLOUR = "#9DB7D5"         # landed, not yet read
READ_COLOUR = "#F58518"          # read by the MMA
UNREAD_COLOUR = "#BAB0AC"        # copied, never read
DRAIN_COLOUR = "#E45756"         # every MMA retired (warpgroup_mma_wait(0))
INK = "#303030"
PARITY_COLOURS = ("#D6E4F2", "#FCE0C4")   # cells of a phase with parity 0 / parity 1
FONT = 8                                  # points: the smallest text read at the website's width

HOST_MODEL_NOTE = ("In the host model's order, not GPU timing: a copy lands as soon as its barrier's phase can "
                   "complete, and steps are the order of events.")
CP_ASYNC_NOTE = ("In the host model's order, not GPU timing: a cp.async copy is known to have landed at the wait_group "
                 "that retires it, and steps are the order of events.")

_INDEXED = re.compile(r"^(.*)\[(\d+)\]$")


def _slot_index(name: str | None) -> int | None:
    """The ring slot of a shared-memory name like ``a_ring[2]`` (None for an allocation that is not indexed)."""
    m = _INDEXED.match(name or "")
    return int(m.group(2)) if m else None


# -- running a lesson's kernel -------------------------------------------------------------------------------

@contextlib.contextmanager
def _recorded_programs():
    """While inside, the host model's programs are collected in the list this yields (so that the trace of a program
    the model stopped is not lost with it), and every ``smem.load`` (a thread's own read of shared memory: ldmatrix
    before mma_v2) is logged to the trace as ``{"what": "smem.load", "slot": ...}``. The model checks those reads
    but does not log them, and without them lessons 13 and 14 would show copies that nobody reads. A load the model
    logged itself is not logged twice."""
    from ..model import runtime, shims

    programs: list = []
    original_load, original_init = shims.Shared.load, runtime.Program.__init__

    def load(self, layout=None):
        prog = shims.program()
        before = len(prog.trace)
        value = original_load(self, layout)
        if not any(e["what"] == "smem.load" for e in prog.trace[before:]):
            prog.log(shims.current(), "smem.load", slot=self.name())
        return value

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        programs.append(self)

    shims.Shared.load, runtime.Program.__init__ = load, init
    try:
        yield programs
    finally:
        shims.Shared.load, runtime.Program.__init__ = original_load, original_init


def ring_trace(number: str, M: int | None = None, N: int | None = None, K: int | None = None, programs: int = 1,
               module=None, config: dict | None = None, dtype: str = "bf16", keep_partial: bool = False) -> list[dict]:
    """The trace of the first program when lesson ``number``'s kernel runs in the host model on one small problem.

    ``module`` is the lesson's solution unless given (a learner's starter, a planted mistake); ``config`` is the
    configuration the lesson's checks run at (``KERNEL.fixed``) unless given. By default the problem is one tile of
    C and K long enough for two trips round the ring and one step more (2 × STAGES × BLOCK_K + BLOCK_K).
    ``programs`` is the SMs' worth of programs a persistent kernel (lesson 17) launches; M = 2 × BLOCK_M gives each
    of its programs two tiles. The numbers of C are not checked here (the lesson's model check does that).

    A protocol mistake (a hang, a race) raises the model's error, as in the lesson's check; with ``keep_partial``,
    the trace of the program it stopped comes back instead, up to that point, ending in one entry of its own,
    ``{"what": "model error", "error": "ModelHang", "message": the model's sentence}`` (what a learner's unfinished
    kernel did before it went wrong)."""
    import numpy as np

    from ..course import load_checks, load_solution
    from ..model import Buffer, HostTensorDescriptor, ModelError, Pointer, run
    from ..model import gemm as model_gemm

    mod = module if module is not None else load_solution(number)
    kernel = load_checks(number).KERNEL
    cfg = kernel.config(mod, config)
    block_m, block_n, block_k, stages = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], cfg["STAGES"]
    M = block_m if M is None else M
    N = block_n if N is None else N
    K = 2 * stages * block_k + block_k if K is None else K
    constexprs = kernel._all_constexprs(mod, cfg, dtype)
    gl_dtype = model_gemm._gl_dtype(dtype)

    a, b = model_gemm.operands(M, N, K)
    a_buf, b_buf = Buffer("A", a, gl_dtype), Buffer("B", b, gl_dtype)
    c_buf = Buffer("C", np.zeros((M, N), np.float32), gl_dtype, poison=True)
    grid = kernel.grid(M, N, cfg, programs)
    if kernel.kind == "tma":
        from triton.experimental.gluon import language as gl

        def descriptor(buf, block):
            return HostTensorDescriptor(buf, block, gl.NVMMASharedLayout.get_default_for(block, gl_dtype))

        args = (descriptor(a_buf, [block_m, block_k]), descriptor(b_buf, [block_k, block_n]), Pointer(c_buf),
                M, N, K, N, 1)
    elif kernel.kind == "pointer":
        args = (Pointer(a_buf), Pointer(b_buf), Pointer(c_buf), M, N, K, K, 1, N, 1, N, 1)
    else:
        raise ValueError(f"lesson {number}'s kernel is of kind {kernel.kind!r}: pictures know 'tma' and 'pointer'")
    with _recorded_programs() as programs_run:
        try:
            run(kernel.kernel(mod), grid, *args, num_warps=cfg["num_warps"], **constexprs)
        except ModelError as e:
            if not keep_partial or not programs_run:
                raise
            stopped = programs_run[-1]
            return stopped.trace + [{"t": stopped.step + 1, "partition": "", "what": "model error",
                                     "error": type(e).__name__, "message": str(e)}]
    return programs_run[0].trace


# -- what the trace says about each slot ------------------------------------------------------------------

@dataclass(eq=False)          # a fill is one event in the trace: equal only to itself (and hashable)
class SlotFill:
    """One trip of one ring slot: the copy of one K step into it, its landing, and the MMA's read of it. Every time
    is a step ``t`` of the trace; None where the trace has no such event (a copy never read)."""
    slot: int
    step: int                      # the program's K step: the order in which the copies were issued
    copy: str                      # "tma", "cp.async" or "store" (the threads' own smem.store)
    issued: int                    # the first copy into the slot
    partition: str
    barrier: str | None = None     # TMA: the barrier the copies report to, and its phase they complete
    phase: int | None = None
    group: int | None = None       # cp.async: the commit group
    landed: int | None = None      # TMA: the phase completing; cp.async: the wait_group that retired the group
    observed: int | None = None    # the wait that saw it land (TMA: mbarrier.wait; cp.async: that wait_group)
    parity: int | None = None      # the phase parity that mbarrier.wait named
    depth: int | None = None       # cp.async: the N of the wait_group(N) that retired its group
    read_start: int | None = None  # the first read (wgmma issued, or smem.load)
    read_end: int | None = None    # the wait that retired the wgmma group, or the last synchronous read
    read_async: bool = False       # read by an async wgmma (until a warpgroup_mma_wait retires it)
    reader: str | None = None      # "async wgmma", "wgmma" (synchronous) or "smem.load" (ldmatrix for mma_v2)


def slot_fills(trace: list[dict]) -> list[SlotFill]:
    """Every fill of every ring slot in ``trace``, in the order the copies were issued, with the events that landed
    it, saw it land and read it. Read straight from the trace's events: the wait_group and warpgroup_mma_wait events
    are replayed (oldest group retired first, down to the depth each names) to find which groups each retired."""
    fills: list[SlotFill] = []
    latest: dict[int, SlotFill] = {}                   # slot -> its newest fill
    by_phase: dict[tuple, SlotFill] = {}               # (barrier, phase) -> the TMA fill completing it
    uncommitted: dict[str, dict[int, SlotFill]] = {}   # partition -> slot -> cp.async fill not yet committed
    cp_groups: dict[str, list] = {}                    # partition -> committed groups, oldest first
    wgmma_groups: dict[str, list] = {}                 # partition -> outstanding async wgmma groups' fills

    def new_fill(slot: int, e: dict, copy: str, **known) -> SlotFill:
        fill = SlotFill(slot=slot, step=len(fills), copy=copy, issued=e["t"], partition=e["partition"], **known)
        fills.append(fill)
        latest[slot] = fill
        return fill

    def read(e: dict, slot: int | None, reader: str) -> SlotFill | None:
        fill = latest.get(slot)
        if fill is None:
            return None
        fill.read_start = e["t"] if fill.read_start is None else fill.read_start
        fill.read_end = max(fill.read_end or e["t"], e["t"])
        fill.read_async = fill.read_async or reader == "async wgmma"
        fill.reader = fill.reader or reader
        return fill

    for e in trace:
        what, part = e["what"], e["partition"]
        if what == "tma load":
            slot, key = _slot_index(e["slot"]), (e["barrier"], e["phase"])
            if slot is not None and key not in by_phase:
                by_phase[key] = new_fill(slot, e, "tma", barrier=e["barrier"], phase=e["phase"])
        elif what == "phase complete":
            fill = by_phase.get((e["barrier"], e["phase"]))
            if fill is not None:
                fill.landed = e["t"]
        elif what == "wait":
            # A wait returns once the phase of the parity it names has completed: it has seen phase seen - 1.
            fill = by_phase.get((e["barrier"], e["seen"] - 1))
            if fill is not None and fill.observed is None:
                fill.observed, fill.parity = e["t"], e["parity"]
        elif what == "cp.async":
            slot = _slot_index(e["slot"])
            pending = uncommitted.setdefault(part, {})
            if slot is not None and slot not in pending:
                pending[slot] = new_fill(slot, e, "cp.async")
        elif what == "commit_group":
            group = list(uncommitted.pop(part, {}).values())
            for fill in group:
                fill.group = e["group"]
            cp_groups.setdefault(part, []).append(group)
        elif what == "wait_group":
            queue = cp_groups.setdefault(part, [])
            while len(queue) > e["depth"]:
                for fill in queue.pop(0):
                    fill.landed = fill.observed = e["t"]
                    fill.depth = e["depth"]
        elif what == "smem.store":
            slot = _slot_index(e["slot"])
            if slot is not None:
                fill = new_fill(slot, e, "store")
                fill.landed = fill.observed = e["t"]
        elif what == "wgmma":
            reader = "async wgmma" if e["is_async"] else "wgmma"
            read_now = {read(e, _slot_index(name), reader) for name in e["slots"]} - {None}
            if e["is_async"]:
                wgmma_groups.setdefault(part, []).append(read_now)
        elif what == "wgmma wait":
            queue = wgmma_groups.setdefault(part, [])
            while len(queue) > e["depth"]:
                for fill in queue.pop(0):
                    fill.read_end = max(fill.read_end, e["t"])
        elif what == "smem.load":
            read(e, _slot_index(e["slot"]), "smem.load")
    return fills


# -- the ring, slot by slot ------------------------------------------------------------------------------

def _legend_labels(fills: list[SlotFill]) -> dict:
    """What each colour means, worded for the kinds of copy and read this trace has."""
    copies = {f.copy for f in fills}
    landed = []
    if "tma" in copies:
        landed.append("its barrier phase completes")
    if "cp.async" in copies:
        landed.append("the wait_group that retires it")
    readers = {f.reader for f in fills} - {None}
    words = {"async wgmma": "async wgmma (issued → the wait that retires it)", "wgmma": "wgmma (synchronous: short)",
             "smem.load": "ldmatrix for mma_v2 (synchronous: short)"}
    read = "read by " + " / ".join(words[r] for r in sorted(readers))
    return {"copy": "copy in flight (issued → " + " / ".join(landed or ["landed"]) + ")",
            "ready": "landed, not yet read", "read": read, "unread": "copied, never read"}


def _titles(fig, ax, heading: str, note: str = HOST_MODEL_NOTE, width: int = 105) -> None:
    """The figure's heading, and under it, smaller, what the host model's order is, wrapped at ``width``
    characters (the axes' width at 8 points: the note is centred over the axes, not the figure)."""
    import textwrap

    fig.suptitle(heading, fontsize=FONT + 2)
    ax.set_title(textwrap.fill(note, width), fontsize=FONT, color=INK)


def _label_place(f: SlotFill, end_of_copy: int, end_of_read: float) -> tuple[float, bool]:
    """Where a fill's K-step label goes: the middle of the longest stretch of its bar between two of its events (so
    that it covers no wait's tick), and whether that stretch is the dark copy colour (white text) or not."""
    events = {f.issued, end_of_copy, end_of_read, f.observed, f.read_start} - {None}
    marks = sorted(m for m in events if m <= end_of_read)        # a wait after an unread copy lies off its bar
    start, stop = max(zip(marks, marks[1:]), key=lambda pair: pair[1] - pair[0], default=(f.issued, end_of_copy))
    on_copy = stop <= end_of_copy and f.read_start is not None
    return (start + stop) / 2, on_copy


def ring_timeline(trace: list[dict], stages: int, title: str = ""):
    """A picture of the ring: one row per slot (0 … ``stages`` − 1), the trace's steps along x. Each K step (kN: the
    program's N-th set of copies issued) is one bar in its slot's row: the copy in flight from its issue to its
    landing (TMA: the barrier's phase completing; cp.async: the wait_group that retired its group), the time it sat
    landed, and the span the MMA read it (async wgmma: from its issue to the warpgroup_mma_wait that retired it; a
    synchronous read: a short bar). The gap before the slot's next bar is the slot free. A tick is the mbarrier.wait
    that saw the copy land, with the phase parity it named (pN), or for cp.async the wait_group(N) that retired it
    (wN); a red dashed line is a warpgroup_mma_wait(0), the accumulator complete (a tile's end). ``title`` names the
    kernel (e.g. "Lesson 16"). Returns the Figure (nothing is shown)."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fills = slot_fills(trace)
    outside = sorted({f.slot for f in fills if not 0 <= f.slot < stages})
    if outside:
        raise ValueError(f"the trace fills slot(s) {outside}, outside a ring of {stages}: is STAGES right?")
    last_t = max((e["t"] for e in trace), default=1)
    # Inches: a row per slot, the headings above, the legend and the axis label below (2.7 for 4 slots).
    row_inches = 0.32
    fig = Figure(figsize=(7, 1.5 + row_inches * stages), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    bar = 0.5                           # a bar's height, in rows: the gap above holds a tick's label
    short = 0.8                         # a synchronous read, in steps: visible, and shorter than any async one
    labels = _legend_labels(fills)
    used = set()

    def segment(start, stop, y, colour):
        ax.broken_barh([(start, stop - start)], (y - bar / 2, bar), facecolors=colour, edgecolor="white",
                       linewidth=0.5)

    for f in fills:
        y = f.slot
        end_of_copy = f.landed if f.landed is not None else last_t
        # A copy lands in the step after its issue at the earliest: give it at least a step's width.
        copy_start = min(f.issued, end_of_copy - 1)
        end_of_read = end_of_copy
        if f.read_start is None:
            used.add("unread")
            segment(copy_start, end_of_copy, y, UNREAD_COLOUR)
        else:
            used.update(("copy", "read"))
            segment(copy_start, end_of_copy, y, COPY_COLOUR)
            if f.read_start > end_of_copy:
                used.add("ready")
                segment(end_of_copy, f.read_start, y, READY_COLOUR)
            end_of_read = f.read_end if f.read_async else max(f.read_end, f.read_start + short)
            segment(f.read_start, end_of_read, y, READ_COLOUR)
        x, on_copy = _label_place(f, end_of_copy, end_of_read)
        ax.text(x, y, f"k{f.step}", ha="center", va="center", fontsize=FONT, clip_on=True,
                color="white" if on_copy else INK)
        tick = f"p{f.parity}" if f.parity is not None else f"w{f.depth}" if f.depth is not None else None
        if tick:
            used.add("wait" if f.parity is not None else "wait_group")
            ax.plot([f.observed, f.observed], [y - bar / 2 - 0.08, y + bar / 2 + 0.08], color=INK, linewidth=1.4)
            ax.text(f.observed, y - bar / 2 - 0.06, tick, ha="center", va="bottom", fontsize=FONT, color=INK)

    drains = [e["t"] for e in trace if e["what"] == "wgmma wait" and e["depth"] == 0]
    for t in drains:
        ax.axvline(t, color=DRAIN_COLOUR, linestyle="--", linewidth=1)
    stopped = next((e for e in trace if e["what"] == "model error"), None)      # ring_trace(keep_partial=True)
    if stopped:
        ax.axvline(stopped["t"], color=DRAIN_COLOUR, linewidth=2.5)

    ax.set_yticks(range(stages), [f"slot {s}" for s in range(stages)], fontsize=FONT)
    ax.set_ylim(stages - 0.5, -0.8)             # slot 0 on top; room above it for its ticks' labels
    ax.set_xlim(0, last_t + 1)
    ax.tick_params(axis="x", labelsize=FONT)
    ax.set_xlabel("step of the host model's trace (kN: the program's K step N, in the order its copies were issued)",
                  fontsize=FONT)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)

    handles = [Patch(color=COPY_COLOUR, label=labels["copy"])] if "copy" in used else []
    handles += [Patch(color=READY_COLOUR, label=labels["ready"])] if "ready" in used else []
    handles += [Patch(color=READ_COLOUR, label=labels["read"])] if "read" in used else []
    handles += [Patch(color=UNREAD_COLOUR, label=labels["unread"])] if "unread" in used else []
    if "wait" in used:
        handles.append(Line2D([], [], color=INK, linewidth=1.4, label="mbarrier.wait that saw it land: pN, its parity"))
    if "wait_group" in used:
        handles.append(Line2D([], [], color=INK, linewidth=1.4, label="wait_group(N) that retired it: wN"))
    if drains:
        handles.append(Line2D([], [], color=DRAIN_COLOUR, linestyle="--",
                              label="warpgroup_mma_wait(0): accumulator done"))
    if stopped:
        handles.append(Line2D([], [], color=DRAIN_COLOUR, linewidth=2.5, label=f"the model stops: {stopped['error']}"))
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=FONT, frameon=False,
               handlelength=1.4, columnspacing=1.2)
    heading = f"{title}: " if title else ""
    note = CP_ASYNC_NOTE if {f.copy for f in fills} == {"cp.async"} else HOST_MODEL_NOTE
    if stopped:
        note += f" The model stopped the kernel: {stopped['message']}"
    _titles(fig, ax, f"{heading}a ring of STAGES = {stages} slots, slot by slot", note)
    return fig


def ring_picture(number: str, module=None, **problem):
    """``ring_timeline`` of lesson ``number``'s kernel (its solution unless ``module`` is given) on ``ring_trace``'s
    problem (``problem``: M, N, K, programs, config, keep_partial), titled with the lesson."""
    from ..course import load_checks, load_solution

    mod = module if module is not None else load_solution(number)
    stages = load_checks(number).KERNEL.config(mod, problem.get("config"))["STAGES"]
    trace = ring_trace(number, module=mod, **problem)
    who = "solution" if module is None else "kernel"
    return ring_timeline(trace, stages, title=f"Lesson {number}'s {who}")


# -- one barrier, phase by phase ----------------------------------------------------------------------------

_BARRIER_EVENTS = ("expect", "tma load", "arrive", "phase complete", "wait")


def barrier_history(trace: list[dict], barrier: str, trips: int = 2,
                    arrivals_per_phase: int | None = None) -> list[dict]:
    """The state of mbarrier ``barrier`` (e.g. "ready[0]") after each event of ``trace`` that touches it, over its
    first ``trips`` phases (trips round the ring), the first row being its state before any of them. Each row:
    ``t`` (None for the start), ``event``, ``partition``, ``phase`` (the phase in progress, i.e. phases completed so
    far), ``parity`` (the parity a wait must name to wait for that phase: phase & 1), ``pending`` (arrivals still
    missing), ``expected`` and ``copied`` (bytes announced by expect() and brought by the copies, this phase), and
    for a wait ``waited_parity`` and ``saw`` (phases it saw complete). ``arrivals_per_phase`` is the count the
    barrier was initialised with (init is not in the trace); by default, the arrivals of its first complete phase."""
    events = [e for e in trace if e.get("barrier") == barrier and e["what"] in _BARRIER_EVENTS]
    if not events:
        raise ValueError(f"the trace has no event on {barrier}")
    if arrivals_per_phase is None:
        first_phase = [e for e in events if e.get("phase") == 0 and e["what"] in ("expect", "arrive")]
        arrivals_per_phase = max(1, len(first_phase))
    state = {"phase": 0, "pending": arrivals_per_phase, "expected": 0, "copied": 0}

    def row(e: dict | None, **extra) -> dict:
        return {"barrier": barrier, "t": e["t"] if e else None, "event": e["what"] if e else "start",
                "partition": e["partition"] if e else "", **state, "parity": state["phase"] & 1, **extra}

    rows = [row(None)]
    for e in events:
        what = e["what"]
        if what == "wait":
            if e["seen"] - 1 >= trips:
                break
            rows.append(row(e, waited_parity=e["parity"], saw=e["seen"]))
            continue
        if e["phase"] >= trips:
            break
        if what == "expect":
            state["pending"] -= 1
            state["expected"] += e["bytes"]
        elif what == "arrive":
            state["pending"] -= 1
        elif what == "tma load":
            state["copied"] += e["bytes"]
        elif what == "phase complete":
            state.update(phase=e["phase"] + 1, pending=arrivals_per_phase, expected=0, copied=0)
            rows.append(row(e, completed=e["phase"]))
            continue
        rows.append(row(e, slot=e.get("slot")))
    return rows


def _event_words(r: dict) -> str:
    """A row's event, in a few words."""
    what = r["event"]
    if what == "tma load":
        return f"TMA copy into {r['slot']}" if r.get("slot") else "TMA copy"
    if what == "phase complete":
        return f"phase {r['completed']} completes"
    if what == "wait":
        return f"wait names parity {r['waited_parity']}: returns"
    return {"start": "(init)", "expect": "expect(bytes)", "arrive": "arrive()"}.get(what, what)


def print_barrier_history(rows: list[dict]) -> None:
    """``barrier_history``'s rows as a plain-text table (what a notebook prints and nbval compares)."""
    from ..display import table

    shown = [[r["t"] if r["t"] is not None else "", _event_words(r), r["phase"], r["parity"], r["pending"],
              f"{r['copied']} / {r['expected']}"] for r in rows]
    table(shown, ["step", "event", "phase", "parity to wait for it", "arrivals pending", "bytes copied / expected"])


def _bytes(n: int) -> str:
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


def barrier_figure(rows: list[dict], title: str = ""):
    """A picture of one mbarrier's state, event by event (one column per row of ``barrier_history``): the phase in
    progress, the parity a wait must name to wait for that phase, the arrivals still pending, and the bytes
    expect() announced against the bytes the copies brought. Cells are coloured by the phase's parity, so the trips
    round the ring alternate; a black line is a phase completing; a wait's column names the parity it waited for.
    Returns the Figure (nothing is shown)."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    quantities = [("phase in progress", lambda r: str(r["phase"])),
                  ("parity a wait for it names", lambda r: str(r["parity"])),
                  ("arrivals pending", lambda r: str(r["pending"])),
                  ("bytes expected", lambda r: _bytes(r["expected"])),
                  ("bytes copied", lambda r: _bytes(r["copied"]))]
    columns = len(rows)
    fig = Figure(figsize=(7, 2.6), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    for j, r in enumerate(rows):
        for i, (_, value) in enumerate(quantities):
            ax.add_patch(Rectangle((j, i), 1, 1, facecolor=PARITY_COLOURS[r["parity"]], edgecolor="white",
                                   linewidth=1.5))
            ax.text(j + 0.5, i + 0.5, value(r), ha="center", va="center", fontsize=FONT, color=INK)
        if r["event"] == "phase complete":            # the phase turns over between this column and the last
            ax.plot([j, j], [0, len(quantities)], color=INK, linewidth=2)
    ax.set_xlim(0, columns)
    ax.set_ylim(len(quantities), 0)
    ax.set_yticks([i + 0.5 for i in range(len(quantities))], [q for q, _ in quantities], fontsize=FONT)
    # The events name the columns, along the top, where a reader starts.
    ax.xaxis.tick_top()
    ax.set_xticks([j + 0.5 for j in range(columns)], [_column_label(r) for r in rows], fontsize=FONT)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    handles = [Patch(color=c, label=f"a phase of parity {p}") for p, c in enumerate(PARITY_COLOURS)]
    handles.append(Line2D([], [], color=INK, linewidth=2, label="the phase completes"))
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=FONT, frameon=False)
    _titles(fig, ax, title or f"{rows[0]['barrier']}, event by event", width=85)
    return fig


def _column_label(r: dict) -> str:
    """A column's label: its event in two short lines (what happened, to what), then its step in the trace."""
    what = r["event"]
    if what == "start":
        return "init\n"
    if what == "tma load":
        ring = _INDEXED.match(r.get("slot") or "")
        word = f"copy\n{ring.group(1)}" if ring else "copy\n"
    else:
        word = {"expect": "expect\n", "arrive": "arrive\n", "phase complete": f"phase {r.get('completed')}\ndone",
                "wait": f"wait\np{r.get('waited_parity')}"}.get(what, what + "\n")
    return f"{word}\nt{r['t']}"


def show(fig, dpi: int = 100) -> None:
    """Show a figure made here in a notebook, as a PNG (these figures are made without pyplot, so they never change a
    notebook's backend; IPython shows them once given their bytes)."""
    import io

    from IPython.display import Image, display

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    display(Image(buffer.getvalue()))
