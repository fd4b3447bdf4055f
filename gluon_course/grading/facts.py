"""A lesson's kernel on another NVIDIA class, as a table of facts: what Triton 3.9.0 emits for each target, checked
exactly, and said against sm_90's.

The lessons before TMA (01–05, 10–13) compile for the GPUs learners have at home or on a cloud notebook: Ampere
(sm_80 A100, sm_86 RTX 30 / A10), Ada (sm_89 RTX 40 / L4) and Blackwell's RTX 50 (sm_120). Their machine code is
mostly the same instructions as Hopper's (the same ``LDG.E.128``, ``LDGSTS`` for cp.async, ``HMMA.16816`` for
mma.sync m16n8k16); what differs is the register count ptxas settles on and how many blocks an SM holds, since
shared memory per SM and threads per SM differ (``machine.occupancy``). A lesson declares each target with one check
per target, made here from a table:

    COPY = {"sm_90": Facts({"LDG.E.128": 4, "STG.E.128": 4}, registers=26),
            "sm_86": Facts({"LDG.E.128": 4, "STG.E.128": 4}, registers=26), ...}
    facts_check("r4_sm_86", "sm_86", lambda mod, target: compiled(mod, target, R=4), COPY)

The check compiles the kernel for its target and for sm_90 (the comparison is only as good as both rows), compares
every data-moving and arithmetic opcode (``FAMILIES``), the registers, the spills and the shared memory with the
table, and its title says what differs from sm_90, blocks per SM included (computed from the table, no compile).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..machine.compile import CompileFailed
from ..machine.occupancy import LIMITS, occupancy
from ..machine.targets import GPU_NAMES
from .checks import Check
from .classes import AMPERE_ADA_RTX50  # noqa: F401 - the classes the lessons declare with it
from .counts import mismatch

# The opcode families a table lists in full (machine.targets.OPCODES): every instruction that moves data or does the
# kernel's arithmetic, so that a kernel that loads, stores, synchronises or multiplies differently is seen.
FAMILIES = ("global_load", "global_store", "shared", "barrier", "shuffle", "async_copy", "tma", "mma", "wgmma", "fma")
REFERENCE = "sm_90"


@dataclass(frozen=True)
class Facts:
    """What one kernel compiles to for one target: its opcodes of ``FAMILIES`` with their counts (the whole kernel),
    the registers per thread, the shared bytes per block, and the families that must sit inside a loop (the scalar
    loop of lesson 01)."""
    opcodes: dict
    registers: int
    shared: int = 0
    in_loops: tuple = field(default=())

    def blocks(self, target: str, num_warps: int):
        """The occupancy these registers and shared bytes give on ``target`` (``machine.occupancy``)."""
        return occupancy(self.shared, self.registers, num_warps * 32, LIMITS[target])


def _opcodes_text(opcodes: dict) -> str:
    return ", ".join(f"{n} × {op}" for op, n in opcodes.items()) or "no memory or arithmetic instruction"


def differences(target: str, table: dict, num_warps: int) -> str:
    """What ``table[target]`` says against ``table["sm_90"]``, in words: the instructions (the same, or which), the
    registers, the shared bytes, and blocks per SM with what limits them."""
    mine, ref = table[target], table[REFERENCE]
    same = {op: n for op, n in mine.opcodes.items() if ref.opcodes.get(op) == n}
    differ = [op for op in {**mine.opcodes, **ref.opcodes} if mine.opcodes.get(op, 0) != ref.opcodes.get(op, 0)]
    code = f"the same {_opcodes_text(same)} as {REFERENCE}" if same else f"nothing in common with {REFERENCE}"
    if differ:
        code += ", but " + ", ".join(f"{mine.opcodes.get(op, 0)} × {op} where {REFERENCE} has "
                                     f"{ref.opcodes.get(op, 0)}" for op in differ)
    registers = f"{mine.registers} registers" + ("" if mine.registers == ref.registers else
                                                 f" ({REFERENCE}: {ref.registers})")
    shared = f"{mine.shared} shared bytes" if mine.shared else "no shared memory"
    here, there = mine.blocks(target, num_warps), ref.blocks(REFERENCE, num_warps)
    blocks = (f"{here.blocks} block{'' if here.blocks == 1 else 's'} of {num_warps} warps per SM, limited by "
              f"{here.limited_by}")
    if here.limited_by != there.limited_by:
        blocks += f" ({REFERENCE}: {there.blocks}, limited by {there.limited_by})"
    elif here.blocks != there.blocks:
        blocks += f" ({REFERENCE}: {there.blocks})"
    return f"{code}; {registers}, {shared}; {blocks}"


def compare(k, want: Facts, target: str) -> str | None:
    """None when the compiled kernel ``k`` holds exactly ``want``; else one sentence (the counts first)."""
    got = k.family(*FAMILIES)
    problem = mismatch(got, dict(want.opcodes), f"on {target}, in the whole kernel")
    if problem:
        return problem
    for family in want.in_loops:
        if k.count_in_loops(k.family_pattern(family)) == 0:
            return f"on {target} no {family.replace('_', ' ')} instruction sits inside a loop"
    if (k.registers, k.spills, k.shared_bytes) != (want.registers, 0, want.shared):
        return (f"on {target}: {k.registers} registers, {k.spills} spill bytes, {k.shared_bytes} shared bytes; "
                f"expected {want.registers} registers, no spills, {want.shared} shared bytes")
    return None


class FactsRun:
    """A check's ``run`` made by ``facts_check``: it keeps what it compiles, so that the support page can compile the
    same kernel for a target no lesson declares (``try_target``)."""

    def __init__(self, target: str, compile: Callable, table: dict):
        self.target, self.compile, self.table = target, compile, table

    def __call__(self, mod):
        for target in (self.target, REFERENCE):
            problem = compare(self.compile(mod, target), self.table[target], target)
            if problem:
                return problem
        return None


def facts_check(key: str, target: str, compile: Callable, table: dict, num_warps: int, what: str = "") -> Check:
    """The machine-code check of ``target`` for a kernel ``compile(mod, target)`` compiles: exactly ``table[target]``
    there, and ``table["sm_90"]`` on sm_90, with a title that says what differs (``what`` names the kernel)."""
    for t in (target, REFERENCE):
        if t not in table:
            raise ValueError(f"facts_check({key!r}): the table has no row for {t}")
    named = f"{target} ({GPU_NAMES[target]})" if target in GPU_NAMES else target
    title = f"{named}{', ' + what if what else ''}: {differences(target, table, num_warps)}"
    return Check(key, title, FactsRun(target, compile, table), target=target)


def try_target(check: Check, mod, target: str):
    """Compile the kernel of a ``facts_check`` for ``target`` (one the lesson need not declare): the ``Compiled``, or
    the compiler's own sentence when Triton 3.9.0 refuses it there."""
    try:
        return check.run.compile(mod, target)
    except CompileFailed as e:
        return e.message


# ---- a target no lesson declares: what compiling each lesson's kernel for it gives -----------------------------

PORT_MARK = "gluon_course port: "


def first_facts_check(spec) -> Check | None:
    """The first ``facts_check`` of a lesson's ``LessonChecks``: the kernel the lesson compares across classes."""
    return next((c for c in spec.machine_code if isinstance(c.run, FactsRun)), None)


def port_in_child(numbers: str, target: str) -> None:
    """The child process of ``port``: each lesson's kernel (its first facts check's) compiled for ``target``, one
    line each, printed before and after, so that the parent knows which compile stopped the process."""
    import json

    from ..course import load_checks, load_solution

    for number in numbers.split(","):
        print(PORT_MARK + json.dumps({"number": number}), flush=True)
        result = try_target(first_facts_check(load_checks(number).CHECKS), load_solution(number), target)
        compiled = not isinstance(result, str)
        said = _opcodes_text(result.family(*FAMILIES)) if compiled else result
        print(PORT_MARK + json.dumps({"number": number, "compiled": compiled, "said": said}), flush=True)


def port(numbers, target: str, timeout: float = 600) -> dict:
    """``{number: (compiled, what)}``: each lesson's kernel compiled for ``target``, with its data-moving and
    arithmetic opcodes, or what stopped it (the compiler's sentence, or LLVM's last words when it stopped the whole
    process: Triton 3.9.0 does that for cp.async on sm_75). Run in child processes, one after another, each taking
    the lessons the last one did not reach. The children pass the compiler's stderr through (LLVM's last words are
    printed there before it aborts), so a compile that fails in an MLIR pass names the pass's failure, not its first
    "error:" line.

    Two processes that share Triton's cache and ask for the same target at once (the support page's test and the
    generated tables' in one `make test`) take turns: the second waits for the first's children, then reads their
    answers from the cache instead of compiling every lesson again."""
    from ..machine.compile import _one_compile_at_a_time

    with _one_compile_at_a_time(f"gluon_course-port-{target}"):
        return _port(numbers, target, timeout)


def _port(numbers, target: str, timeout: float) -> dict:
    import json
    import os

    from ..measure.isolated import run_isolated

    found: dict = {n: _port_cached(n, target) for n in numbers}
    found = {n: v for n, v in found.items() if v is not None}
    remaining = [n for n in numbers if n not in found]
    fresh = list(remaining)
    saved = os.environ.get("GLUON_COURSE_PASS_STDERR")
    os.environ["GLUON_COURSE_PASS_STDERR"] = "1"      # LLVM's last words must reach us
    try:
        while remaining:
            run = run_isolated(f"{__file__}:port_in_child", [",".join(remaining), target], timeout=timeout)
            started = None
            for line in run.output.splitlines():
                if not line.startswith(PORT_MARK):
                    continue
                entry = json.loads(line[len(PORT_MARK):])
                if "compiled" in entry:
                    found[entry["number"]] = (entry["compiled"], entry["said"])
                    started = None
                else:
                    started = entry["number"]
            if started is not None:
                last = [line for line in run.output.splitlines() if line.startswith("LLVM ERROR")]
                found[started] = (False, last[-1] if last else
                                  f"the compiler stopped the process (exit status {run.returncode})")
            left = [n for n in remaining if n not in found]
            if left == remaining:      # nothing done: a failure before the first lesson; say so for all
                for n in left:
                    found[n] = (False, f"the compile could not start (exit status {run.returncode})")
                break
            remaining = left
    finally:
        if saved is None:
            del os.environ["GLUON_COURSE_PASS_STDERR"]
        else:
            os.environ["GLUON_COURSE_PASS_STDERR"] = saved
    for n in fresh:
        _port_cached(n, target, found[n])
    return {n: found[n] for n in numbers}


def _port_cached(number: str, target: str, answer: tuple | None = None):
    """``port``'s answer for one lesson, kept in Triton's cache (next to its compiles) under the lesson's solution and
    checks, the target and the toolkit's compile code: read it (``answer`` None; None when absent) or keep it."""
    import hashlib
    import json
    from pathlib import Path

    import triton
    from triton.runtime.cache import get_cache_manager

    from ..course import lesson
    from ..machine import compile as compile_module

    the = lesson(number)
    texts = [the.solution_path.read_bytes(), the.checks_path.read_bytes(), Path(__file__).read_bytes(),
             Path(compile_module.__file__).read_bytes()]
    key = hashlib.sha256(b"gluon_course port\0" + b"\0".join(texts)
                         + repr((target, triton.__version__)).encode()).hexdigest()
    cache = get_cache_manager(key)
    if answer is None:
        stored = cache.get_file("port.json")
        if stored is None:
            return None
        with open(stored, encoding="utf-8") as f:
            return tuple(json.load(f))
    cache.put(json.dumps(list(answer)), "port.json", binary=False)
    return answer
