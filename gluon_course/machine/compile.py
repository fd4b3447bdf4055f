"""Compile a Gluon kernel for a GPU that is not here, and read what came out.

Gluon has no CPU interpreter, but Triton compiles for any target on a plain CPU machine: we hand
``triton.compile`` a ``GluonASTSource`` and a ``GPUTarget``, and no driver is involved. What comes
back holds the PTX and the SASS (disassembled with the ``nvdisasm`` that ships inside the Triton
wheel) for NVIDIA, or the AMDGCN assembly for AMD. For the pinned Triton these are deterministic, so
lessons and tests can assert instruction counts exactly.

    >>> from gluon_course.machine import compile_kernel
    >>> k = compile_kernel(tile_copy_kernel, "sm_90",
    ...                    signature={"in_ptr": "*fp32", "out_ptr": "*fp32", "numel": "i32"},
    ...                    constexprs={"XBLOCK": 2048, "R": 4}, aligned=["in_ptr", "out_ptr", "numel"])
    >>> k.count("LDG.E.128"), k.registers, k.shared_bytes
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field

import triton
from triton.experimental.gluon import GluonASTSource

from .targets import AMD_TARGETS, NVIDIA_TARGETS, TARGETS, opcode_pattern, target_named, warp_size  # noqa: F401


def _remember_triton_key() -> None:
    """Triton keys every compile with a digest of its own files (``triton.runtime.cache.triton_key``), whose largest
    part is the sha256 of libtriton, about half a second of CPU once in every process that compiles. The processes of
    one ``make test`` (its workers, every notebook's kernel, the children that run a check) would each pay it; here
    the digest is kept in Triton's cache, under a name made of those files' paths, sizes and modification times, and
    read back by the next process. Triton's own compile pool hands its workers the key the same way (it replaces
    ``triton_key`` with a function that returns it). A changed file (a reinstall) gives another name, so another
    digest, computed afresh."""
    import hashlib

    from triton.runtime import cache as triton_cache

    if getattr(triton_cache.triton_key, "_gluon_course_remembered", False):
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(triton_cache.__file__)))
    stats = []
    for folder in ("compiler", "backends", "language", "_C"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames.sort()
            for filename in sorted(filenames):
                if filename.endswith(".py") or filename.startswith("libtriton"):
                    st = os.stat(os.path.join(dirpath, filename))
                    stats.append((os.path.relpath(os.path.join(dirpath, filename), root), st.st_size, st.st_mtime_ns))
    st = os.stat(triton_cache.__file__)
    stats.append(("runtime/cache.py", st.st_size, st.st_mtime_ns, root, triton.__version__))
    name = hashlib.sha256(repr(stats).encode()).hexdigest()
    computed = triton_cache.triton_key

    @functools.lru_cache(None)
    def remembered() -> str:
        store = triton_cache.get_cache_manager(name)
        path = store.get_file("triton_key.txt")
        if path is not None:
            with open(path, encoding="utf-8") as f:
                return f.read()
        key = computed()
        store.put(key, "triton_key.txt", binary=False)
        return key

    remembered._gluon_course_remembered = True
    remembered.computed = computed               # Triton's own, for the test that compares them
    triton_cache.triton_key = remembered


_remember_triton_key()

# What the compiler says when ``convert_layout(..., assert_trivial=True)`` would move data between threads.
ASSERT_TRIVIAL_REFUSED = "is not trivial"


class CompileFailed(RuntimeError):
    """The kernel did not compile; ``message`` is the compiler's own sentence, without the traceback, and
    ``location`` is ``file:line:column`` of the source line it points at, when the compiler named one."""

    def __init__(self, kernel_name: str, target: str, message: str, source_excerpt: str = "", location: str = ""):
        self.kernel_name, self.target, self.message, self.source_excerpt = kernel_name, target, message, source_excerpt
        self.location = location
        super().__init__(f"{kernel_name} did not compile for {target}: {message}")


class _Captured:
    text = ""


@contextlib.contextmanager
def _captured_stderr():
    """Collect what C++ code writes to the process's stderr (file descriptor 2) while compiling.

    With GLUON_COURSE_PASS_STDERR=1 nothing is collected: for a compile run in a child process on purpose, where
    LLVM may stop the whole process (``LLVM ERROR: ...``) and its last words must reach the parent."""
    captured = _Captured()
    if os.environ.get("GLUON_COURSE_PASS_STDERR") == "1":
        yield captured
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured.text = sink.read().decode(errors="replace")


def _frontend_location(error, source) -> str:
    """``file:line`` of a front-end (Python AST) compilation error: its line counts from the ``def`` of the function
    whose source it holds (the kernel's, or a ``@gluon.jit`` function it calls, found among the kernel's globals)."""
    line = getattr(getattr(error, "node", None), "lineno", None)
    fn = getattr(getattr(source, "fn", None), "fn", None)
    if fn is None or line is None:
        return ""
    src = getattr(error, "src", None)
    if src is not None and getattr(source.fn, "src", None) != src:
        callee = next((value for value in list(fn.__globals__.values())
                       if isinstance(getattr(value, "src", None), str) and value.src == src and hasattr(value, "fn")),
                      None)
        if callee is not None:
            fn = callee.fn
    try:
        import inspect

        lines, first = inspect.getsourcelines(fn)
        # Triton parses the function from its ``def`` line (its decorators cut off), so the error's line 1 is the
        # ``def``, not the ``@gluon.jit`` above it that getsourcelines starts from.
        at_def = next((i for i, text in enumerate(lines) if text.lstrip().startswith(("def ", "async def "))), 0)
        return f"{inspect.getsourcefile(fn)}:{first + at_def + line - 1}"
    except (TypeError, OSError):
        return ""


_SASS_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*(?:/\*.*\*/)?\s*$")
_PREDICATE = re.compile(r"^@!?U?P[T0-9]+\s+")
# sm_100 writes a uniform branch's predicate as an operand: "BRA.U !UP0, 0xfe0".
_BRANCH_TARGET = re.compile(r"\b(?:BRA|BRX)(?:\.[A-Z0-9]+)*\s+(?:!?U?P[T0-9]+,\s*)?(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))")


@dataclass
class Instruction:
    address: int        # byte offset (SASS) or position in the listing (AMDGCN)
    opcode: str         # "LDG.E.128", "global_load_dwordx4", ...
    text: str           # the whole instruction as printed


@dataclass
class Compiled:
    """One kernel compiled for one target: its assembly and what we can read off it."""

    kernel_name: str
    target: str
    asm: dict
    metadata: object
    _cache: dict = field(default_factory=dict, repr=False)

    # -- the texts ---------------------------------------------------------------------------
    @property
    def is_nvidia(self) -> bool:
        return self.target in NVIDIA_TARGETS

    @property
    def ptx(self) -> str:
        return self.asm.get("ptx", "")

    @property
    def amdgcn(self) -> str:
        return self.asm.get("amdgcn", "")

    @property
    def ttgir(self) -> str:
        """Triton's GPU dialect after its passes: the layouts the kernel really uses."""
        return self.asm.get("ttgir", "")

    @property
    def sass(self) -> str:
        """The machine code of an NVIDIA target, from the nvdisasm inside the Triton wheel: one line per instruction
        (``/*0730*/  @!P0 BRA 0x8a0 ;``), a branch's or call's target written as its address, as cuobjdump writes it
        (see ``_sass_listing``)."""
        if not self.is_nvidia:
            raise ValueError(f"{self.target} has no SASS; read .amdgcn instead")
        if "sass" not in self._cache:
            self._cache["sass"] = _sass_listing(self.asm["cubin"])
        return self._cache["sass"]

    @property
    def machine_code(self) -> str:
        return self.sass if self.is_nvidia else self.amdgcn

    # -- instructions ------------------------------------------------------------------------
    def instructions(self) -> list[Instruction]:
        if "instructions" not in self._cache:
            self._cache["instructions"] = (_parse_sass(self.sass) if self.is_nvidia
                                           else _parse_amdgcn(self.amdgcn))
        return self._cache["instructions"]

    def opcodes(self) -> Counter:
        """How many times each opcode appears in the machine code (static count, not executed)."""
        return Counter(i.opcode for i in self.instructions())

    def count(self, opcode: str) -> int:
        """Exact opcode count: ``count("LDG.E")`` does not count ``LDG.E.128``."""
        return self.opcodes()[opcode]

    def count_matching(self, pattern: str) -> int:
        """Opcodes matching a regular expression (anchored at the start of the opcode)."""
        rx = re.compile(pattern)
        return sum(n for op, n in self.opcodes().items() if rx.match(op))

    def family(self, *families: str) -> dict:
        """Opcodes of the named families (``machine.targets.OPCODES``) with their counts, sorted by name:
        ``family("global_load")`` → ``{"LDG.E.128": 4}`` on sm_90, ``{"global_load_dwordx4": 4}`` on gfx950."""
        rx = re.compile(opcode_pattern(self.target, *families))
        return {op: n for op, n in sorted(self.opcodes().items()) if rx.match(op)}

    def family_pattern(self, *families: str) -> str:
        """The regular expression of opcode families on this kernel's target (for ``count_in_loops``, ``show``)."""
        return opcode_pattern(self.target, *families)

    def global_loads(self) -> Counter:
        """Global-memory loads by width: ``{"LDG.E.128": 4}`` or ``{"global_load_dwordx4": 2}``."""
        return Counter(self.family("global_load"))

    def global_stores(self) -> Counter:
        return Counter(self.family("global_store"))

    def memory_ops(self) -> dict:
        """Every instruction that moves data: global loads and stores, shared memory / LDS, barriers and
        shuffles between lanes, ``{opcode: count}``."""
        return self.family("global_load", "global_store", "shared", "barrier", "shuffle")

    def loops(self) -> list[tuple[int, int]]:
        """Address ranges ``(first, last)`` closed by a backward branch: the bodies of loops."""
        spans = []
        if self.is_nvidia:
            for ins in self.instructions():
                m = _BRANCH_TARGET.search(ins.text)
                if m and m.group(1) is not None:
                    target = int(m.group(1), 16)
                    if target <= ins.address:
                        spans.append((target, ins.address))
        else:
            labels = {}
            for ins in self.instructions():
                if ins.opcode.endswith(":"):
                    labels[ins.opcode[:-1]] = ins.address
            for ins in self.instructions():
                if ins.opcode.startswith("s_cbranch") or ins.opcode == "s_branch":
                    label = ins.text.split()[-1]
                    if label in labels and labels[label] <= ins.address:
                        spans.append((labels[label], ins.address))
        return spans

    def loop_holding(self, prefix: str) -> tuple[int, int]:
        """``(first, last)`` of the smallest loop body that holds an instruction whose opcode starts with ``prefix``:
        the K loop of a GEMM, by its tensor-core instruction (``"HMMA"``, ``"HGMMA"``). ValueError when none does."""
        spans = [(a, b) for a, b in self.loops()
                 if any(a <= i.address <= b and i.opcode.startswith(prefix) for i in self.instructions())]
        if not spans:
            raise ValueError(f"no loop of {self.kernel_name} holds a {prefix} instruction")
        return min(spans, key=lambda span: span[1] - span[0])

    def opcodes_between(self, first: int, last: int) -> Counter:
        """Opcode counts of the instructions at addresses ``first`` to ``last`` (a loop body from ``loops()``)."""
        return Counter(i.opcode for i in self.instructions() if first <= i.address <= last)

    def count_in_loops(self, pattern: str) -> int:
        """Instructions whose opcode matches ``pattern`` and that sit inside some loop body."""
        rx = re.compile(pattern)
        spans = self.loops()
        return sum(1 for ins in self.instructions()
                   if rx.match(ins.opcode) and any(a <= ins.address <= b for a, b in spans))

    # -- what the kernel compares (TTGIR) --------------------------------------------------------
    def compared_arguments(self) -> set[str]:
        """The kernel arguments that reach a comparison or a min/max in the TTGIR: ``{"numel"}`` for a kernel
        that bounds its work with ``offsets < numel`` or ``gl.minimum(end, numel)``.

        An argument counts when its value, only broadcast or moved between layouts on the way (``tt.splat``,
        ``tt.broadcast``, ``ttg.convert_layout``, ``tt.expand_dims``), is an operand of ``arith.cmpi`` or of a
        min/max. This is how a CPU check sees that a mask or a bound is there at all; whether it is the right
        one is for the GPU checks. An argument the launch turned into a constant (an integer equal to 1) has
        no name left in the TTGIR and is never reported."""
        if "compared" not in self._cache:
            self._cache["compared"] = _compared_arguments(self.ttgir)
        return self._cache["compared"]

    def masks(self) -> list[dict]:
        """Every masked or unmasked global load and store of the TTGIR (``tt.load``, ``tt.store``, and cp.async's
        ``ttg.async_copy_global_to_local`` as a load), in program order:
        ``{"op": "load" | "store", "masked": bool, "bounds": {argument: {offset, ...}}}``.

        A bound is a comparison in the mask, normalized to ``index < argument + offset``: ``rows < M`` is ``{"M":
        {0}}``, ``cols < N + 1`` and ``cols <= N`` are ``{"N": {1}}`` (one column too many), ``cols < N - 1``
        ``{"N": {-1}}``. It counts when one side of an ``arith.cmpi`` is the argument plus a constant (through
        broadcasts, layout conversions and the captures of a warp-specialized partition) and the mask is made of such
        comparisons by ``&`` and ``|``; a comparison with any other expression of an argument (``K - k * BLOCK_K``) is
        not a bound here."""
        if "masks" not in self._cache:
            self._cache["masks"] = _masks(self.ttgir)
        return self._cache["masks"]

    # -- resources ---------------------------------------------------------------------------
    @property
    def resources(self) -> dict:
        """Registers, spills and memory as the assembler reports them.

        NVIDIA: ``registers``, ``stack_bytes`` (the per-thread stack frame), ``static_shared_bytes`` and
        ``local_bytes`` from cuobjdump's resource line; ``spill_bytes`` and ``spill_load_bytes``, the bytes of spill
        stores and loads ptxas reports (see ``spills``); ``local_stores`` and ``local_loads``, the STL and LDL
        instructions of the listing (any access to local memory, spilled or not)."""
        if "resources" not in self._cache:
            self._cache["resources"] = (_nvidia_resources(self) if self.is_nvidia else _amd_resources(self.amdgcn))
        return self._cache["resources"]

    @property
    def registers(self) -> int:
        """Registers per thread: REG on NVIDIA, VGPRs (arch + accumulation) on AMD."""
        return self.resources["registers"]

    @property
    def spills(self) -> int:
        """Bytes of spilled registers per thread; 0 means no spills.

        NVIDIA: the bytes of *spill stores* ptxas reports ("640 bytes stack frame, 1700 bytes spill stores, 1188
        bytes spill loads"): the registers it could not keep, written to the thread's stack frame (cuobjdump's
        STACK, not LOCAL, which counts local arrays outside the frame and stays 0 when a kernel spills). A stack
        frame alone is not a spill (a call frame, a local array). AMD: the scratch bytes per lane."""
        return self.resources["spill_bytes"]

    @property
    def ptxas_log(self) -> str:
        """What ptxas -v says about this kernel (NVIDIA): the stack frame, the bytes of spill stores and loads, the
        registers, and notes such as "(C7507) ... 'setmaxnreg' ignored" or "(C7511) ... wgmma.mma_async
        instructions are serialized".

        Triton runs ptxas -v on every compile and deletes what it printed. Here the kernel's PTX is assembled again
        by the backend's own ``make_cubin`` (the same ptxas, the same command line) with Triton's switch for
        printing that log; the cubin it returns must be the compile's, byte for byte, or nothing is read."""
        if not self.is_nvidia:
            raise ValueError(f"{self.target} is not assembled by ptxas; read .amdgcn instead")
        if "ptxas_log" not in self._cache:
            self._cache["ptxas_log"] = _ptxas_log(self)
        return self._cache["ptxas_log"]

    def ptxas_notes(self) -> list[str]:
        """ptxas's warnings and performance notes for this kernel, one sentence each without its "ptxas info :"
        prefix: ``["(C7507) Potential Performance Loss: 'setmaxnreg' ignored to maintain minimum register
        requirements."]``; the lines every compile prints (gmem, properties, registers, compile time) are left out."""
        notes = []
        for line in self.ptxas_log.splitlines():
            m = re.match(r"^ptxas\S*\s+(info|warning)\s*:\s*(.*)$", line.strip())
            if m and not re.match(r"(\d+ bytes gmem|Compiling entry|Function properties|Used \d+ registers|"
                                  r"Compile time)", m.group(2)):
                notes.append(m.group(2))
        return notes

    @property
    def shared_bytes(self) -> int:
        """Shared memory (NVIDIA) or LDS (AMD) bytes per block, as Triton allocated them."""
        return int(self.metadata.shared)

    def resource_mismatch(self, registers: int, shared_bytes: int, why: str = "") -> str | None:
        """None when the kernel takes exactly ``registers`` registers per thread, spills nothing and allocates exactly
        ``shared_bytes`` of shared memory (LDS on AMD); otherwise a sentence with both, ``why`` (what the expected
        bytes hold) at its end."""
        if (self.registers, self.spills, self.shared_bytes) == (registers, 0, shared_bytes):
            return None
        shared = f"{shared_bytes} shared bytes" if shared_bytes else "no shared memory"
        return (f"{self.registers} registers, {self.spills} spill bytes, {self.shared_bytes} shared bytes; expected "
                f"{registers} registers, no spills, {shared}" + (f" ({why})" if why else ""))

    def summary(self) -> str:
        loads = ", ".join(f"{n}× {op}" for op, n in sorted(self.global_loads().items())) or "none"
        stores = ", ".join(f"{n}× {op}" for op, n in sorted(self.global_stores().items())) or "none"
        return (f"{self.kernel_name} @ {self.target}: {self.registers} registers, {self.spills} spill bytes, "
                f"{self.shared_bytes} shared bytes; loads: {loads}; stores: {stores}")

    def show(self, pattern: str | None = None, limit: int = 40) -> None:
        """Print the instructions whose opcode matches ``pattern`` (all of them if None)."""
        rx = re.compile(pattern) if pattern else None
        shown = 0
        for ins in self.instructions():
            if ins.opcode.endswith(":"):
                continue
            if rx is None or rx.match(ins.opcode):
                print(f"  {ins.address:#06x}  {ins.text}" if self.is_nvidia else f"  {ins.text}")
                shown += 1
                if shown >= limit:
                    print("  ...")
                    break


_TTGIR_ARG = re.compile(r"%([A-Za-z_][\w.]*)\s*:\s*(?:i\d+|!tt\.ptr)")
_TTGIR_OP = re.compile(r"^\s*%([\w.#]+)\s*=\s*([a-z_]+\.[a-z_]+)\s*(.*)$")
_PASS_THROUGH = {"tt.splat", "tt.broadcast", "ttg.convert_layout", "tt.expand_dims"}
_COMPARES = {"arith.cmpi", "arith.minsi", "arith.minui", "arith.maxsi", "arith.maxui"}


def _compared_arguments(ttgir: str) -> set[str]:
    signature = next((line for line in ttgir.splitlines() if "tt.func" in line), "")
    args = {name: {name} for name in _TTGIR_ARG.findall(signature)}
    origin = {name: name for name in args}          # SSA value -> the argument it carries
    found: set[str] = set()
    for line in ttgir.splitlines():
        m = _TTGIR_OP.match(line)
        if not m:
            continue
        result, op, rest = m.groups()
        operands = re.findall(r"%([\w.#]+)", rest.split(" loc(")[0].split(" : ")[0])
        if op in _PASS_THROUGH and operands and operands[0] in origin:
            origin[result] = origin[operands[0]]
        elif op in _COMPARES:
            found |= {origin[o] for o in operands if o in origin}
    return found


_CONSTANT = re.compile(r"^\s*%([\w.#]+)\s*=\s*arith\.constant\s+(?:dense<)?(-?\d+)>?\s*:\s*(?:i\d+|tensor<[^>]*xi\d+)")
_PARTITION = re.compile(r"^\s*partition\d+\((.*)\)\s*num_warps\(\d+\)\s*\{\s*$")
_FLIP = {"sgt": "slt", "sge": "sle", "ugt": "ult", "uge": "ule", "slt": "sgt", "sle": "sge", "ult": "ugt", "ule": "uge",
         "eq": "eq", "ne": "ne"}


def _masks(ttgir: str) -> list[dict]:
    lines = ttgir.splitlines()
    signature = next((line for line in lines if "tt.func" in line), "")
    affine = {name: (name, 0) for name in _TTGIR_ARG.findall(signature)}    # SSA -> (argument, constant added)
    constants: dict[str, int] = {}
    bounds: dict[str, dict] = {}                                           # SSA (i1) -> {argument: {offsets}}
    captured: list[str] = []
    out = []

    def merge(*names):
        merged: dict = {}
        for n in names:
            for arg, offs in bounds.get(n, {}).items():
                merged.setdefault(arg, set()).update(offs)
        return merged

    for line in lines:
        m = _CONSTANT.match(line)
        if m:
            constants[m.group(1)] = int(m.group(2))
            continue
        if "ttg.warp_specialize(" in line:
            captured = re.findall(r"%([\w.#]+)", line.split("ttg.warp_specialize(", 1)[1].split(")", 1)[0])
            continue
        m = _PARTITION.match(line)
        if m:
            for inner, outer in zip(re.findall(r"%([\w.#]+)\s*:", m.group(1)), captured):
                if outer in affine:
                    affine[inner] = affine[outer]
                if outer in constants:
                    constants[inner] = constants[outer]
            continue
        stripped = line.strip()
        copy = re.match(r"^%[\w.#]+\s*=\s*ttg\.async_copy_global_to_local\s+(.*)$", stripped)
        if copy:
            body = copy.group(1).split(" loc(")[0].split(" : ")[0]
            mask = re.search(r"\bmask\s+%([\w.#]+)", body)
            out.append({"op": "load", "masked": mask is not None, "bounds": merge(mask.group(1)) if mask else {}})
            continue
        if stripped.startswith(("tt.store ", "tt.load ")) or re.match(r"^%[\w.#]+\s*=\s*tt\.load ", stripped):
            op = "store" if stripped.startswith("tt.store") else "load"
            operands = re.findall(r"%([\w.#]+)", stripped.split(" loc(")[0].split(" : ")[0].split("=", 1)[-1]
                                  if op == "load" else stripped.split(" loc(")[0].split(" : ")[0])
            mask = operands[2] if op == "store" and len(operands) > 2 else (
                operands[1] if op == "load" and len(operands) > 1 else None)
            out.append({"op": op, "masked": mask is not None, "bounds": merge(mask) if mask else {}})
            continue
        m = _TTGIR_OP.match(line)
        if not m:
            continue
        result, op, rest = m.groups()
        body = rest.split(" loc(")[0].split(" : ")[0]
        if op == "arith.cmpi":
            pred, _, body = body.partition(",")
            pred = pred.strip()
        operands = re.findall(r"%([\w.#]+)", body)
        if op in _PASS_THROUGH and operands:
            src = operands[0]
            if src in affine:
                affine[result] = affine[src]
            if src in constants:
                constants[result] = constants[src]
            if src in bounds:
                bounds[result] = bounds[src]
        elif op in ("arith.addi", "arith.subi") and len(operands) == 2:
            a, b = operands
            sign = 1 if op == "arith.addi" else -1
            if a in affine and b in constants:
                affine[result] = (affine[a][0], affine[a][1] + sign * constants[b])
            elif op == "arith.addi" and b in affine and a in constants:
                affine[result] = (affine[b][0], affine[b][1] + constants[a])
        elif op in ("arith.andi", "arith.ori") and len(operands) == 2:
            if operands[0] in bounds or operands[1] in bounds:
                bounds[result] = merge(*operands)
        elif op == "arith.cmpi" and len(operands) == 2:
            lhs, rhs = operands
            if rhs in affine and lhs not in affine:
                arg, c = affine[rhs]
            elif lhs in affine and rhs not in affine:
                arg, c = affine[lhs]
                pred = _FLIP.get(pred, pred)
            else:
                continue
            # index < arg + c, or index <= arg + c (that is, < arg + c + 1)
            if pred in ("slt", "ult"):
                bounds[result] = {arg: {c}}
            elif pred in ("sle", "ule"):
                bounds[result] = {arg: {c + 1}}
    return out


def _cuobjdump(cubin: bytes, *flags: str) -> str:
    """What the cuobjdump inside the Triton wheel prints for ``cubin`` with ``flags`` (the resource line:
    ``--dump-resource-usage``), kept in Triton's cache like every tool's output here (``_tool_output``)."""
    return _tool_output(triton.knobs.nvidia.cuobjdump.path, "cuobjdump", cubin, *flags)


def _tool_output(tool: str, name: str, cubin: bytes, *flags: str) -> str:
    """What ``tool`` (cuobjdump or nvdisasm) prints on stdout for ``cubin`` with ``flags``, kept in Triton's own cache
    (next to the compiles, under the same TRITON_CACHE_DIR): one run per binary for every process that shares the
    cache, the tests and the notebooks of one `make test` among them. Both tools are deterministic, so the key is the
    tool's name, the binary, the flags and the tool itself; what the tool says on stderr (nvdisasm's warnings) is left
    out."""
    import hashlib

    from triton.runtime.cache import get_cache_manager

    stat = os.stat(tool)
    # Triton's cache keys are hexadecimal digests; this one cannot meet a compile's (their inputs differ).
    key = hashlib.sha256(f"gluon_course {name}\0".encode() + cubin
                         + repr((flags, tool, stat.st_size, stat.st_mtime_ns)).encode()).hexdigest()
    cache = get_cache_manager(key)
    stored = cache.get_file(f"{name}.txt")
    if stored is not None:
        with open(stored, encoding="utf-8") as f:
            return f.read()
    fd, path = tempfile.mkstemp(suffix=".cubin")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        text = subprocess.run([tool, *flags, path], check=True, capture_output=True, text=True).stdout
    finally:
        os.remove(path)
    cache.put(text, f"{name}.txt", binary=False)
    return text


# nvdisasm: -c prints the code sections only; -ndf skips the dataflow analysis, whose only trace in these listings is
# the targets it infers for an indirect branch, written after it (BRX R2 -0x23e0 (*"BRANCH_TARGETS .L_x_25,..."*))
# where cuobjdump writes none. The two tools print the same instructions (tools/gpu/compare_disassemblers.py: all 360
# cubins a test run leaves), nvdisasm with labels where cuobjdump writes addresses, and for a quarter less CPU:
# 111-130 s of user time for those 360 against cuobjdump's 145-177 in two runs (cuobjdump -sass runs an nvdisasm
# itself).
NVDISASM_FLAGS = ("-ndf", "-c")
# A line that names a place in the code: a label (".L_x_3:"), a function's symbol ("$__internal_0_...:"), a section.
_NVDISASM_LABEL = re.compile(r"^([^\s/][^\s]*):\s*$")
# A branch or call to a label or a symbol: "BRA `(.L_x_3)", "CALL.REL.NOINC `($__internal_0_...)", "RET.REL.NODEC R2
# `(kernel)" (a return's operand, which cuobjdump writes as the function's address, 0x0).
_NVDISASM_REFERENCE = re.compile(r"`\(([^()\s]+)\)")
_NVDISASM_CODE_SECTION = re.compile(r"^\s*\.section\s+\.text\.")
_SASS_ADDRESS = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/")


def _nvdisasm_path() -> str | None:
    """The nvdisasm that sits beside Triton's cuobjdump (one build of one CUDA release: the pair the equivalence was
    shown for), or None where there is none (a GPU machine's lean copy of the wheel leaves nvdisasm out, and
    TRITON_NVDISASM_PATH may point at another release's)."""
    try:
        nvdisasm = triton.knobs.nvidia.nvdisasm.path
    except RuntimeError:                          # knobs found no nvdisasm at all
        return None
    beside = os.path.dirname(os.path.abspath(triton.knobs.nvidia.cuobjdump.path))
    return nvdisasm if os.path.dirname(os.path.abspath(nvdisasm)) == beside else None


def _sass_listing(cubin: bytes) -> str:
    """The SASS of ``cubin``: nvdisasm's listing with every label reference replaced by the address it names
    (``_resolve_labels``), so that its instructions read exactly as in cuobjdump -sass. cuobjdump -sass itself where
    there is no nvdisasm beside it, where nvdisasm fails, or where the listing is one this replacement was not shown on:
    more than one code section (addresses count from 0 in each, and cuobjdump may order them otherwise), a reference to
    a label that no instruction follows, an instruction line the parser would skip."""
    nvdisasm = _nvdisasm_path()
    if nvdisasm is not None:
        try:
            resolved = _resolve_labels(_tool_output(nvdisasm, "nvdisasm", cubin, *NVDISASM_FLAGS))
        except subprocess.CalledProcessError:     # a binary nvdisasm refuses: cuobjdump says what is wrong, if anything
            resolved = None
        if resolved is not None:
            return resolved
    return _cuobjdump(cubin, "-sass")


def _resolve_labels(listing: str) -> str | None:
    """nvdisasm's ``listing`` with each label reference (`` `(.L_x_3)``) replaced by the address of the first
    instruction after that label's line, in hexadecimal as cuobjdump writes a target (``0x8a0``, ``0x0``); None when
    the listing has more than one code section, a reference that does not resolve, or an instruction line that
    ``_parse_sass`` would skip."""
    lines = listing.splitlines(keepends=True)
    if sum(1 for line in lines if _NVDISASM_CODE_SECTION.match(line)) > 1:
        return None
    addresses: dict[str, int] = {}
    waiting: list[str] = []                       # labels whose instruction is still to come
    for line in lines:
        m = _SASS_LINE.match(line)
        if m:
            addresses.update(dict.fromkeys(waiting, int(m.group(1), 16)))
            waiting = []
        elif label := _NVDISASM_LABEL.match(line):
            waiting.append(label.group(1))
    out = []
    for line in lines:
        if _SASS_ADDRESS.match(line) and not _SASS_LINE.match(line):
            return None                           # an instruction the parser would not read (none so far)
        if _SASS_LINE.match(line):
            names = _NVDISASM_REFERENCE.findall(line)
            if any(name not in addresses for name in names):
                return None
            line = _NVDISASM_REFERENCE.sub(lambda ref: f"{addresses[ref.group(1)]:#x}", line)
        out.append(line)
    return "".join(out)


def _parse_sass(text: str) -> list[Instruction]:
    out = []
    for line in text.splitlines():
        m = _SASS_LINE.match(line)
        if not m:
            continue
        text = m.group(2).strip()
        body = _PREDICATE.sub("", text)
        if not body:
            continue
        out.append(Instruction(int(m.group(1), 16), body.split()[0], text))
    return out


def _parse_amdgcn(text: str) -> list[Instruction]:
    """Instructions are tab-indented lower-case mnemonics; labels sit in column 0; the YAML metadata
    at the end is space-indented, so it never matches."""
    out, position = [], 0
    for raw in text.splitlines():
        line = raw.split(";")[0].split("//")[0].rstrip()
        if re.match(r"^[A-Za-z_.$][\w.$]*:$", line):               # a label, e.g. ".LBB0_2:"
            out.append(Instruction(position, line, line))
            position += 1
        elif line.startswith("\t") and re.match(r"^[a-z][a-z0-9_]*(\s|$)", line.strip()):
            stripped = line.strip()
            out.append(Instruction(position, stripped.split()[0], stripped))
            position += 1
    return out


class CourseToolError(Exception):
    """The toolkit could not read what it must read (a tool's output changed): the course's bug, never a learner's
    mistake, so it is not one of the errors the runner turns into a sentence."""


def _ptxas_log_store(k: Compiled):
    """Where ``k``'s ptxas log is kept in Triton's cache (a cache manager), with the options ``make_cubin`` reads and
    the backend that runs it. The key is the binary, its PTX, those options and the ptxas make_cubin runs for this
    arch (ptxas-blackwell from sm_90 on, in Triton 3.9.0), never knobs.nvidia.ptxas: an install stripped for Hopper and
    newer ships no pre-Hopper ptxas, and asking for it raises."""
    import hashlib
    import types

    from triton.backends.nvidia.compiler import CUDABackend, get_ptxas
    from triton.runtime.cache import get_cache_manager

    md = k.metadata
    options = types.SimpleNamespace(enable_fp_fusion=md.enable_fp_fusion, ptx_options=md.ptx_options,
                                    instrumentation_mode=getattr(md, "instrumentation_mode", ""))
    backend = CUDABackend(target_named(k.target))
    key = hashlib.sha256(b"gluon_course ptxas log\0" + k.asm["cubin"] + k.ptx.encode()
                         + repr((vars(options), backend.target.arch, triton.__version__,
                                 get_ptxas(backend.target.arch).path)).encode()).hexdigest()
    return get_cache_manager(key), options, backend


def _ptxas_log(k: Compiled) -> str:
    """What ptxas -v says about the kernel, once per binary for every process that shares Triton's cache (the log is
    kept there, like the disassembly): the log the compile itself printed (``_compile`` keeps it), or, for a binary
    compiled before, ptxas run again on its PTX with the compile's options."""
    import contextlib
    import io

    cache, options, backend = _ptxas_log_store(k)
    stored = cache.get_file("ptxas.log")
    if stored is not None:
        with open(stored, encoding="utf-8") as f:
            return f.read()
    printed = io.StringIO()
    with triton.knobs.nvidia.scope(), _captured_stderr():
        triton.knobs.nvidia.dump_ptxas_log = True
        with contextlib.redirect_stdout(printed):
            cubin = backend.make_cubin(k.ptx, {}, options, backend.target.arch)
    if cubin != k.asm["cubin"] and _code_sections(cubin) != _code_sections(k.asm["cubin"]):
        # Only the machine code must agree: the debug sections name the Python file the PTX's line info points at, and
        # Triton's cache key does not (two processes that compile one kernel from two copies of a file, as parallel
        # tests do, may leave one's PTX beside the other's cubin).
        raise CourseToolError(f"ptxas, run again on {k.kernel_name}'s PTX, gave another cubin than the compile did: "
                              "its log would describe another binary")
    cache.put(printed.getvalue(), "ptxas.log", binary=False)
    return printed.getvalue()


# A line of ptxas -v's log: "ptxas-blackwell info    : Used 168 registers", "ptxas warning : ...", or the indented
# "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" under "Function properties".
_PTXAS_LOG_LINE = re.compile(r"^(?:ptxas|\s+\d+ bytes stack frame)")


def _keep_ptxas_log(printed: str, k: Compiled) -> str:
    """What a fresh compile printed with Triton's ``dump_ptxas_log`` on: ptxas -v's log of this very binary (Triton
    writes it on every compile, then deletes it), and nothing else as a rule. The log is kept where ``_ptxas_log``
    looks for it, so reading it needs no second ptxas run; what is not the log is returned, to be shown as before.
    Printed text with other lines in it keeps nothing (those lines are returned, the log's lines left out)."""
    lines = printed.splitlines()
    log_lines = [line for line in lines if _PTXAS_LOG_LINE.match(line)]
    if not log_lines:
        return printed
    if len(log_lines) == len([line for line in lines if line.strip()]):
        cache, _, _ = _ptxas_log_store(k)
        cache.put(printed, "ptxas.log", binary=False)
        return ""
    return "".join(line + "\n" for line in lines if line.strip() and not _PTXAS_LOG_LINE.match(line))


def _code_sections(cubin: bytes) -> dict:
    """The ELF's executable sections (.text.<function>) and their bytes: what a second ptxas run must reproduce."""
    import struct

    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise CourseToolError("a cubin that is not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]

    def name(h):
        start = names_at + h[0]
        return cubin[start:cubin.index(b"\0", start)].decode()
    # sh_info of a code section carries the register count in its top byte: compare the headers' info too.
    return {name(h): (h[7], cubin[h[4]:h[4] + h[5]]) for h in headers if name(h).startswith(".text.")}


# ptxas -v: "    640 bytes stack frame, 1700 bytes spill stores, 1188 bytes spill loads"
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def _nvidia_resources(k: Compiled) -> dict:
    text = _cuobjdump(k.asm["cubin"], "--dump-resource-usage")
    m = re.search(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)", text)
    if not m:
        raise CourseToolError(f"cuobjdump printed no resource usage for {k.kernel_name}:\n{text}")
    reg, stack, shared, local = map(int, m.groups())
    spill_stores = spill_loads = 0
    if stack:
        # ptxas spills into the stack frame: a kernel whose frame is 0 bytes has spilled nothing, and only one with a
        # frame needs ptxas's own count (a frame may also hold a call's saved registers or a local array).
        # The entry function's own properties (a callee, where there is one, has its own block in the log).
        name = re.escape(str(getattr(k.metadata, "name", k.kernel_name)))
        frame = re.search(rf"Function properties for {name}\s*\n\s*" + _PTXAS_FRAME.pattern, k.ptxas_log)
        if not frame or int(frame.group(1)) != stack:
            raise CourseToolError(f"ptxas's log for {k.kernel_name} names no stack frame of {stack} bytes (cuobjdump's "
                                  f"STACK):\n{k.ptxas_log}")
        spill_stores, spill_loads = int(frame.group(2)), int(frame.group(3))
    return _NvidiaResources(k, {"registers": reg, "stack_bytes": stack, "static_shared_bytes": shared,
                                "local_bytes": local, "spill_bytes": spill_stores, "spill_load_bytes": spill_loads})


class _NvidiaResources(dict):
    """``Compiled.resources`` on NVIDIA: the counts of STL and LDL are read from the listing only when one is asked
    for. Disassembling a kernel costs about half a second, and a check of whether a configuration fits one SM (the
    resource line and ptxas's log) needs no listing; ``r["local_stores"]`` disassembles as before."""

    _LISTED = {"local_stores": r"STL\b", "local_loads": r"LDL\b"}

    def __init__(self, k, values):
        super().__init__(values)
        self._kernel = k

    def __missing__(self, key):
        if key not in self._LISTED:
            raise KeyError(key)
        self[key] = self._kernel.count_matching(self._LISTED[key])
        return self[key]


def _amd_resources(text: str) -> dict:
    def field_(name: str) -> int:
        m = re.search(rf"^\s*(?:-\s*)?\.{name}:\s+(\d+)", text, re.M)
        return int(m.group(1)) if m else 0

    scratch = re.search(r"; ScratchSize: (\d+)", text)
    return {"registers": field_("vgpr_count"), "agprs": field_("agpr_count"), "sgprs": field_("sgpr_count"),
            "vgpr_spills": field_("vgpr_spill_count"), "sgpr_spills": field_("sgpr_spill_count"),
            "lds_bytes": field_("group_segment_fixed_size"),
            "spill_bytes": int(scratch.group(1)) if scratch else field_("private_segment_fixed_size")}


def tensor_descriptor_type(dtype: str, block_shape, layout) -> str:
    """The signature type of a TMA tensor-descriptor argument, spelled as a launch spells it
    (``TensorDescriptor.__mangle__`` in triton/experimental/gluon/nvidia/hopper.py) and as
    ``triton.language.str_to_ty`` reads it back, the shared layout included:
    ``tensor_descriptor_type("bf16", [128, 64], layout)`` → ``"tensordesc<bf16[128,64],NVMMASharedLayout(...)>"``."""
    return f"tensordesc<{dtype}[{','.join(str(int(s)) for s in block_shape)}],{layout!r}>"


def _specialized_by_launch(value) -> bool:
    """A launch turns an integer argument equal to 1 into a constant by itself (Triton's specialization), so a
    check may compile a unit stride as a constexpr even where the kernel does not declare it one. Nothing else
    becomes a constant unless the kernel says ``gl.constexpr``."""
    return isinstance(value, int) and not isinstance(value, bool) and value == 1


class NotConstexpr(CompileFailed):
    """A value the launcher passes as a compile-time constant (a tile size, a layout) reaches a parameter the
    kernel does not declare ``gl.constexpr``: a real launch would pass it as a run-time value and fail."""

    def __init__(self, kernel, name: str, value, target: str):
        import inspect

        self.parameter = name
        kind = "a layout" if "Layout" in type(value).__name__ else f"{value!r}"
        message = (f"parameter {name!r} of {kernel.__name__} is not declared gl.constexpr, but the launcher passes "
                   f"it {kind}, a compile-time value: write `{name}: gl.constexpr` in the kernel's parameters. "
                   "Without it a real launch passes it as a run-time value, and the kernel fails to compile there "
                   "(a shape, a layout or a static_range needs a constant)")
        location = ""
        fn = getattr(kernel, "fn", None)
        try:
            # The line of the parameter in the kernel's signature (a gap inside the function names it).
            lines, first = inspect.getsourcelines(fn)
            at = next((i for i, line in enumerate(lines) if line.lstrip().startswith("def ")), 0)
            at = next((i for i in range(at, len(lines)) if re.search(rf"\b{re.escape(name)}\b", lines[i])), at)
            location = f"{inspect.getsourcefile(fn)}:{first + at}"
        except (TypeError, OSError):
            pass
        super().__init__(kernel.__name__, target, message, location=location)


def compile_kernel(kernel, target: str = "sm_90", *, signature: dict, constexprs: dict | None = None,
                   aligned: list[str] | tuple[str, ...] = (), num_warps: int = 4, **options) -> Compiled:
    """Compile ``kernel`` (a ``@gluon.jit`` function) for ``target`` without a GPU.

    signature:  the run-time arguments and their Triton types, e.g. ``{"in_ptr": "*fp32", "numel": "i32"}``;
                a TMA descriptor argument's type comes from ``tensor_descriptor_type``.
    constexprs: values for the ``gl.constexpr`` parameters (layouts included). A parameter the kernel does not
                declare ``gl.constexpr`` raises ``NotConstexpr`` (a sentence for the learner), except an
                integer equal to 1, which a real launch specializes by itself.
    aligned:    arguments that the launcher promises are multiples of 16 (pointers: 16-byte aligned).
                A real launch finds this out by itself from the tensors it gets; here we must say it.
    """
    constexprs = dict(constexprs or {})
    names = kernel.arg_names
    unknown = set(signature) | set(constexprs)
    unknown -= set(names)
    if unknown:
        raise TypeError(f"{kernel.__name__} has no parameter(s) {sorted(unknown)}; it takes {names}")
    declared = {p.name for p in getattr(kernel, "params", []) if p.is_constexpr}
    for name, value in constexprs.items():
        if name not in declared and not _specialized_by_launch(value):
            raise NotConstexpr(kernel, name, value, target)
    source = GluonASTSource(kernel, *source_signature(kernel, signature, constexprs, aligned))
    return _compile(source, target, num_warps, tuple(sorted(options.items())), kernel.__name__)


def source_signature(kernel, signature: dict, constexprs: dict, aligned) -> tuple[dict, dict, dict]:
    """(signature, constexprs, attrs) as Triton's ``ASTSource`` and ``GluonASTSource`` take them: every parameter of
    ``kernel`` typed or marked ``"constexpr"``, and the ``aligned`` ones promised divisible by 16."""
    names = kernel.arg_names
    full_signature = {}
    for name in names:
        if name in constexprs:
            full_signature[name] = "constexpr"
        elif name in signature:
            full_signature[name] = signature[name]
        else:
            # Said for a learner too: a configuration (CONFIG) without one of the kernel's compile-time values ends here.
            raise TypeError(f"nothing gives {kernel.__name__}'s parameter {name!r} a value: the configuration the "
                            f"kernel is compiled with (CONFIG, or the launcher's constexprs) lacks {name!r} (a "
                            "misspelt or missing key?), or, for a run-time argument, signature= lacks its type")
    attrs = {(names.index(name),): [["tt.divisibility", 16]] for name in aligned}
    return full_signature, dict(constexprs), attrs


def amd_backend_available() -> bool:
    """Trimmed Triton installs for NVIDIA machines (like the course's GPU runner) leave AMD's code generator out."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("triton.backends.amd")
    if spec is None or not spec.submodule_search_locations:
        return False
    return (Path(list(spec.submodule_search_locations)[0]) / "lib" / "libtriton_amd_codegen.so").exists()


class BackendMissing(RuntimeError):
    """This Triton cannot compile for the asked target (and no stored compile of this exact kernel exists)."""


def _cache_key(source, target, opts) -> str:
    import hashlib

    constants = sorted((str(k), repr(v)) for k, v in source.constants.items())
    text = repr((source.fn.cache_key, target, sorted(source.signature.items()), constants,
                 sorted((str(k), repr(v)) for k, v in source.attrs.items()), sorted(opts.items()), triton.__version__))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _store(directory: str, key: str, compiled) -> None:
    import base64
    import json
    from pathlib import Path

    # Only what the course reads off an AMD compile: the assembly and the GPU dialect (keeps the store small).
    kept = {k: v for k, v in compiled.asm.items() if k in ("amdgcn", "ttgir")}
    asm = {k: (base64.b64encode(v).decode() if isinstance(v, bytes) else v) for k, v in kept.items()}
    binary = [k for k, v in kept.items() if isinstance(v, bytes)]
    entry = {"asm": asm, "binary": binary, "shared": int(compiled.metadata.shared)}
    Path(directory).mkdir(parents=True, exist_ok=True)
    (Path(directory) / f"{key}.json").write_text(json.dumps(entry))


def _store_failure(directory: str, key: str, message: str, detail: str) -> None:
    import json
    from pathlib import Path

    Path(directory).mkdir(parents=True, exist_ok=True)
    (Path(directory) / f"{key}.json").write_text(json.dumps({"error": message, "detail": detail}))


def _load(directory: str | None, key: str):
    import base64
    import json
    import types
    from pathlib import Path

    path = Path(directory or "") / f"{key}.json"
    if not directory or not path.exists():
        return None
    entry = json.loads(path.read_text())
    if "error" in entry:
        return entry
    asm = {k: (base64.b64decode(v) if k in entry["binary"] else v) for k, v in entry["asm"].items()}
    return asm, types.SimpleNamespace(shared=entry["shared"])


@contextlib.contextmanager
def _one_compile_at_a_time(key: str):
    """Processes that share Triton's cache (the test workers, the notebooks' kernels) often compile the same kernel
    at the same moment: the second waits here for the first and then finds the compile in the cache, instead of
    compiling it again. A lock file per compile in the cache's folder; the system releases it if its holder dies."""
    try:
        import fcntl
    except ImportError:                 # not on a POSIX system: compile side by side
        yield
        return
    folder = os.path.join(triton.knobs.cache.dir, "gluon_course_locks")
    try:
        os.makedirs(folder, exist_ok=True)
        lock = open(os.path.join(folder, f"{key}.lock"), "a")
    except OSError:                     # a read-only cache: nothing to share
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _compile(source, target, num_warps, options, name) -> Compiled:
    """Compile, or, where this Triton lacks the target's backend, read the same compile stored earlier.

    The course's GPU runner carries a Triton without AMD's code generator; notebooks executed there read
    the gfx950 / gfx942 machine code that the full Triton produced for the very same kernel and options
    (``GLUON_COURSE_COMPILE_CACHE`` names the folder; any compile made with it set is stored there)."""
    import io

    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import PTXASError

    opts = {"num_warps": num_warps, **dict(options)}
    directory = os.environ.get("GLUON_COURSE_COMPILE_CACHE")
    key = _cache_key(source, target, opts)
    if target in AMD_TARGETS and not amd_backend_available():
        stored = _load(directory, key)
        if isinstance(stored, dict):          # the full Triton refused this kernel: same message here
            raise CompileFailed(name, target, stored["error"], stored["detail"])
        if stored is None:
            raise BackendMissing(f"this Triton install has no AMD backend, so {name} cannot be compiled for "
                                 f"{target} here; install the full triton==3.9.0 wheel to compile for AMD")
        return Compiled(name, target, *stored)
    printed = io.StringIO()
    try:
        # Triton's make_cubin prints the whole PTX to stdout when ptxas fails: kept here, for PTXASError below.
        with _one_compile_at_a_time(key), _captured_stderr() as diagnostics, contextlib.redirect_stdout(printed), \
                triton.knobs.nvidia.scope():
            # ptxas -v's log of a fresh NVIDIA compile printed (into ``printed``) instead of deleted: kept below for
            # Compiled.ptxas_log, which would otherwise run ptxas again for it.
            triton.knobs.nvidia.dump_ptxas_log = target in NVIDIA_TARGETS
            compiled = triton.compile(source, target=target_named(target), options=opts)
    except PTXASError as e:
        raise _ptxas_failed(e, printed.getvalue(), source, name, target) from None
    except CompilationError as e:
        # A call into another @gluon.jit function wraps the callee's error in one with no message of its own (and a
        # warp-specialized partition wraps it twice, the outer one's message a source excerpt): the innermost error
        # that has a message of its own is the one that says what is wrong.
        inner, walk = e, e
        while isinstance(walk.__cause__, CompilationError):
            walk = walk.__cause__
            if getattr(walk, "error_message", None):
                inner = walk
        message = getattr(inner, "error_message", None) or str(e).strip().splitlines()[-1]
        # The front end reports a Python error met in the kernel's code by its repr, NameError('x is not defined'):
        # the sentence is what is inside.
        unwrapped = re.match(r'^\w+(?:Error|Exception)\((["\'])(.*)\1\)$', message.strip(), re.S)
        message = unwrapped.group(2) if unwrapped else message
        if directory and target in AMD_TARGETS:
            _store_failure(directory, key, message, str(e))
        raise CompileFailed(name, target, message, str(e), location=_frontend_location(inner, source)) from None
    except RuntimeError as e:
        # MLIR reports a failed pass on the process's stderr (C++), then raises "PassManager::run failed":
        # the sentence worth showing is the first "error:" line of that report.
        text = diagnostics.text
        lines = text.splitlines()
        at = next((i for i, line in enumerate(lines) if " error: " in line or line.startswith("error:")), None)
        first = lines[at] if at is not None else ""
        location, _, message = first.rpartition(" error: ") if " error: " in first else ("", "", first)
        # MLIR may continue the sentence on the next line (before the indented source excerpt).
        if at is not None and at + 1 < len(lines) and lines[at + 1] and not lines[at + 1][0].isspace() \
                and not re.match(r"^\S+:\d+:\d+: ", lines[at + 1]):
            message = f"{message.strip()} {lines[at + 1].strip()}"
        message = message.strip() or str(e).strip().splitlines()[-1]
        if directory and target in AMD_TARGETS:
            _store_failure(directory, key, message, text + str(e))
        raise CompileFailed(name, target, message, text + str(e), location=location.rstrip(":")) from None
    result = Compiled(name, target, compiled.asm, compiled.metadata)
    shown = printed.getvalue()
    if shown and target in NVIDIA_TARGETS:
        shown = _keep_ptxas_log(shown, result)
    if diagnostics.text.strip():
        sys.stderr.write(diagnostics.text)
    if shown:
        sys.stdout.write(shown)
    if directory and target in AMD_TARGETS:
        _store(directory, key, compiled)
    return result


# ptxas's own sentence in a failed assembly: "ptxas-blackwell fatal   : (C7602) Insufficient registers (128) to ..."
# or "ptxas kernel.ptx, line 5; error   : ...".
_PTXAS_ERROR = re.compile(r"^ptxas[^:]*?(?:,\s*line\s+(\d+);)?\s*(?:fatal|error)\s*:\s*(.*)$")


def _ptxas_failed(error, printed: str, source, name: str, target: str) -> CompileFailed:
    """A PTXASError (ptxas refused the PTX Triton wrote) as a CompileFailed: ptxas's own first error, "ptxas: ..."
    (never the PTX, the repro command or the temporary file), ending "(in a warp-specialized kernel)" where the kernel
    calls gl.warp_specialize, located at the source line of the PTX instruction ptxas names (its .loc)."""
    log = getattr(error, "error_message", "") or str(error)
    sentence, ptx_line = "", None
    for line in log.splitlines():
        m = _PTXAS_ERROR.match(line.strip())
        if m and "assembly aborted" not in m.group(2):
            sentence, ptx_line = m.group(2).strip(), m.group(1)
            break
    sentence = sentence or "ptxas refused the PTX without saying why"
    at = re.search(r"at line (\d+)", sentence)
    ptx_line = int(ptx_line or (at.group(1) if at else 0))
    # The PTX instruction's line means nothing to a learner: the source line it came from does.
    sentence = re.sub(r" at line \d+ in function \w+", "", sentence)
    start = printed.find(log)
    ptx = printed[start + len(log):].split("\n" + "=" * 64)[0].lstrip("\n") if start >= 0 else ""
    location = _ptx_source_line(ptx, ptx_line, source) if ptx and ptx_line else ""
    fn = getattr(source, "fn", None)
    if "warp_specialize" in (getattr(fn, "src", "") or ""):
        sentence += " (in a warp-specialized kernel)"
    return CompileFailed(name, target, f"ptxas: {sentence}", log, location=location)


def _ptx_source_line(ptx: str, line: int, source) -> str:
    """``file:line`` of the last ``.loc`` at or before PTX line ``line``; the file is the kernel's own when the
    PTX names a file of the same name (a compile cached from another checkout names that checkout's path)."""
    import inspect

    lines = ptx.splitlines()
    files = {m.group(1): m.group(2) for m in re.finditer(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', ptx, re.M)}
    for text in reversed(lines[:line]):
        m = re.match(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)", text)
        if m and m.group(1) in files and int(m.group(2)) > 0:
            path = files[m.group(1)]
            try:
                own = inspect.getsourcefile(source.fn.fn)
            except (AttributeError, TypeError, OSError):
                own = None
            if own and os.path.basename(own) == os.path.basename(path):
                path = own
            return f"{path}:{m.group(2)}"
    return ""


@functools.lru_cache(maxsize=None)
def _cached_compile(kernel, target, signature_items, constexpr_items, aligned, num_warps, option_items):
    return compile_kernel(kernel, target, signature=dict(signature_items), constexprs=dict(constexpr_items),
                          aligned=aligned, num_warps=num_warps, **dict(option_items))


def compile_cached(kernel, target="sm_90", *, signature, constexprs=None, aligned=(), num_warps=4, **options):
    """``compile_kernel`` with a per-process cache (notebooks compile the same variant several times)."""
    return _cached_compile(kernel, target, tuple(signature.items()), tuple((constexprs or {}).items()),
                           tuple(aligned), num_warps, tuple(sorted(options.items())))
