"""A learner's mistake becomes one or two lines, never a traceback.

Whatever the compiler, the launch or the import of a starter throws, ``explain`` turns it into

    lesson 02, gap 2 (tile_copy_kernel), sm_90: 'tt.make_range' op Failed to infer return type (starter.py:27)
      hint: Gluon needs an explicit layout: gl.arange(0, XBLOCK, layout=layout) ...

naming the lesson, the gap, the target and the compiler's first ``error:`` line, with a hint where the cause
is known. The gap is found from the source line the compiler points at: the nearest ``TODO gap N`` comment
above it in the same function (starters keep those comments), else the function's name.

An exception that Python, numpy, torch or Triton raised in passing (a list used as a dictionary key, a misspelt
name, two shapes that do not meet) is said the same way, in the course's words: the place is the innermost line of
the learner's own file in the traceback, and the cause comes from ``CAUSES``, a table of common mistakes, with the
facts the exception holds (a name, two shapes) and never its class or its own text:

    lesson 31, gap 1 (signature): a list where a tuple is needed: a dictionary key (or a set member) must be
    hashable, and a list is not (starter.py:38)

A sentence the course wrote itself (a launcher's refusal from ``gluon_course.validate``, ``nvidia.hopper``, a
lesson's own ``raise ValueError(...)``) is kept as it is: ``raised_by_course`` tells it apart by where it was raised,
a ``raise`` statement of that exception in a file of the course or of the learner, never by its words.
"""
from __future__ import annotations

import ast
import linecache
import re
from pathlib import Path

from ..machine.compile import BackendMissing, CompileFailed
from .causes import (KINDS, describe, learner_frame, library_sentence, raised_by_course,
                     visible_names)

# (pattern in the compiler's message, hint). The first match wins.
HINTS = [
    (r"make_range' op Failed to infer return type|auto_encoding|AutoLayout",
     "Gluon needs an explicit layout: write gl.arange(0, XBLOCK, layout=...) (and a layout for every tensor "
     "you create); without layout= the tensor gets AutoLayout, which nothing in this kernel resolves"),
    (r"threads per warp, but the module specifies (\d+)",
     "the layout hard-codes a warp size; NVIDIA warps have 32 lanes and AMD wavefronts 64: build the layout "
     "from the warp_size the launcher passes (threads_per_warp=[warp_size])"),
    (r"order must be a permutation",
     "order lists every axis once, fastest first: a 1D layout has order=[0], a 2D one [1, 0] or [0, 1]"),
    (r"warps per CTA|warpsPerCTA|number of warps",
     "the product of warps_per_cta must equal num_warps (the launch's warps per program)"),
    (r"is not trivial",
     "assert_trivial=True refuses a conversion that moves data between threads: the two layouts differ"),
    (r"not yet implemented", ""),
]


# What the compiler says in its own terms, said in the course's: (pattern, sentence with \\1-style groups, hint). The
# first match wins; the sentence replaces the compiler's (raw MLIR names and Python class paths never reach a learner).
TRANSLATIONS = [
    (r"Loop carried variable (\w+) changed type, was <class '[\w.]*warpgroup_mma_accumulator'> but is now "
     r"<class '[\w.]*tensor'>",
     r"\1 enters the loop as a tensor but leaves an iteration as a running wgmma (an asynchronous result)",
     "after warpgroup_mma(..., is_async=True), call warpgroup_mma_wait(n, deps=(\\1, ...)) in the same iteration "
     "and use what it returns"),
    (r"Loop carried variable (\w+) changed type, was <class '[\w.]*tuple'> but is now <class '[\w.]*tensor'>",
     r"\1 enters the loop as a tensor but leaves an iteration as a tuple",
     "warpgroup_mma_wait returns one value per entry of deps: unpack it, e.g. "
     "acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_slot, b_slot))"),
    (r"Loop carried variable (\w+) changed type, was <class '[\w.]*?(\w+)'> but is now <class '[\w.]*?(\w+)'>",
     r"\1 enters the loop as a \3 but leaves an iteration as a \2",
     "a variable carried by a loop must keep its type (and layout) from one iteration to the next"),
    (r"'ttng\.warp_group_dot' op expected the last dimension of the first operand to be equal to the "
     r"second-to-last dimension of the second operand",
     "wgmma's operands do not chain: A must be M × K and B K × N (A's last dimension equal to B's first)",
     "are A and B swapped? warpgroup_mma(a_slot, b_slot, acc): A's tile first"),
    (r"'ttng\.warp_group_dot' op expected the output shape",
     "wgmma's accumulator does not have the product's shape (M × N for an M × K A and a K × N B)",
     "are A and B swapped, or the accumulator built for another tile?"),
    (r"instruction shape \[(\d+), (\d+)\] is too large for the layout with block size \[(\d+), (\d+)\]",
     r"the layout's instruction ([\1, \2]) is larger than the tile it must cover per warp ([\3, \4])",
     "a version-3 (wgmma) layout takes instr_shape=[16, N, 16]: 16 rows per warp, N columns per instruction "
     "(at most BLOCK_N and 256), 16 of K for bf16/fp16"),
    (r"Result has an invalid layout: .*Layout has (\d+) warps per CTA, but the context requires (\d+) warps per CTA",
     r"a layout built for \1 warps is used in code that runs on \2",
     "a layout's warps_per_cta must multiply to the warps that run it. In gl.warp_specialize the first partition (the "
     "default one) runs on the kernel's num_warps warps and each worker on its worker_num_warps, so a layout built for "
     "num_warps (the accumulator's) belongs to the first partition: the consumers first, then the one-warp producer, "
     "gl.warp_specialize([(mma_partition, (...)), (load_partition, (...))], [1], [LOAD_REGS])"),
    (r"Layout mismatch in broadcast",
     "two tensors of different layouts meet in one expression (a row vector of one accumulator's layout against a "
     "tile of another's, for instance)",
     "convert one to the other's layout first: a row vector meets an acc_layout tile once it is "
     "gl.convert_layout(x, gl.SliceLayout(1, acc_layout)), then x[:, None]"),
    (r"expected expand_dims input layout to be sliced in axis (\d+) but got (\d+)",
     r"a vector sliced along axis \2 is expanded along axis \1",
     "a 2-D tile's rows are gl.SliceLayout(1, layout) and expand with [:, None]; its columns are "
     "gl.SliceLayout(0, layout) and expand with [None, :]"),
    (r"Cannot make_shape_compatible: incompatible dimensions at index (\d+): (\d+) and (\d+)",
     r"two tensors whose shapes do not broadcast meet in one expression: dimension \1 is \2 in one and \3 in the "
     r"other",
     "a 1-D vector needs [:, None] (a column: one value a row) or [None, :] (a row: one value a column) to meet a "
     "2-D tile"),
    # ptxas (compile.py makes a PTXASError "ptxas: <its first error>", "(in a warp-specialized kernel)" where it is one).
    (r"ptxas: \(C7602\) Insufficient registers \((\d+)\) to compile instruction\. Try to compile with register "
     r"target of (\d+) or higher\. \(in a warp-specialized kernel\)",
     r"ptxas cannot compile this line with the \1 registers a thread its partition has: it needs \2 or more",
     "gl.warp_specialize's first partition is the default one: it runs on the kernel's num_warps warps and keeps the "
     "registers the workers leave it, while each worker after it gets its worker_num_warps and worker_num_regs. The "
     "partition that holds the accumulator (the consumers) comes first, the producer second, on one warp with few "
     "registers: gl.warp_specialize([(mma_partition, (...)), (load_partition, (...))], [1], [LOAD_REGS])"),
    (r"ptxas: \(C7602\) Insufficient registers \((\d+)\) to compile instruction\. Try to compile with register "
     r"target of (\d+) or higher\.",
     r"ptxas cannot compile this line within \1 registers a thread: it needs \2 or more",
     "a program of W warps has at most 65536 / (32 × W) registers a thread (and never more than 255): fewer warps per "
     "program, or a smaller tile per thread"),
    (r"^ptxas: (.*)$", r"ptxas, NVIDIA's assembler, refused the PTX Triton wrote for this kernel: \1",
     "the sentence is ptxas's own; the line named is the source line of the PTX instruction it refused"),
    # A C++ assertion in a lowering pass (explain reads it from the compiler's full report).
    (r"^WGMMA type or shape is not supported",
     "the compiler cannot lower a wgmma: its operands' types (or its shape) are a combination the instruction does "
     "not have",
     "A and B of a 16-bit wgmma must be of one type: bf16 with bf16, or fp16 with fp16. Is an operand converted to "
     "another type than its partner's (P.to(gl.float16) against bf16 V, say)?"),
    (r"Pipeline failed while executing \[`ConvertTritonGPUToLLVM`",
     "the compiler failed while lowering the kernel to LLVM, without a message of its own",
     "Triton 3.9.0 reports some layout mistakes only this way: check that every layout (its version, instr_shape, "
     "warps_per_cta) is one the instruction it feeds can take, as the lesson's notebook builds them"),
]
# MLIR operations that may still appear in a message: their Gluon names.
OPERATIONS = {"tt.make_range": "gl.arange", "ttng.warp_group_dot": "warpgroup_mma", "ttg.convert_layout":
              "gl.convert_layout", "tt.dot": "a dot", "ttg.local_load": "a shared-memory load",
              "ttg.local_store": "a shared-memory store", "ttng.async_tma_copy_global_to_local": "tma.async_load",
              "tt.load": "gl.load", "tt.store": "gl.store", "tt.splat": "a broadcast", "tt.broadcast": "a broadcast"}


def translate(message: str) -> tuple[str, str]:
    """(the sentence to show, a hint or "") for a compiler message."""
    for pattern, sentence, hint in TRANSLATIONS:
        m = re.search(pattern, message)
        if m:
            return m.expand(sentence), m.expand(hint) if "\\" in hint else hint
    # A Python error met while the front end ran the kernel's code (a misspelt name, a keyword a Gluon function does
    # not take, None where a layout belongs): the same sentence as on the host (``describe``).
    said, hint = describe(None, text=message)
    if said:
        return said, hint
    return re.sub(r"'(\w+\.\w+)' op ", lambda m: f"{OPERATIONS.get(m.group(1), 'an operation')}: ", message), ""


def hint_for(message: str) -> str:
    for pattern, hint in HINTS:
        if re.search(pattern, message):
            return hint
    return ""


def _function_and_gap(path: Path, line: int) -> tuple[str, int | None]:
    """The function that holds ``line`` in ``path`` (``Plan.launch`` for a method), and the gap number of the nearest
    ``TODO gap N`` comment above the line inside that function (None if there is none)."""
    try:
        text = path.read_text()
        tree = ast.parse(text)
    except (OSError, SyntaxError):
        return "", None
    best, owner = None, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for child in node.body:
                owner[child] = node.name
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno > best.lineno:
                best = node
    if best is None:
        return "", None
    name = f"{owner[best]}.{best.name}" if best in owner else best.name
    lines = text.splitlines()
    for number in range(line, best.lineno - 1, -1):
        m = re.search(r"TODO gap (\d+)", lines[number - 1]) if number - 1 < len(lines) else None
        if m:
            return name, int(m.group(1))
    return name, None


def where(location: str) -> tuple[str, str]:
    """(``gap 2 (tile_copy_kernel)``, ``starter.py:27``) from a ``file:line[:column]`` location."""
    m = re.match(r"^(?P<file>.+?):(?P<line>\d+)(?::\d+)?$", location or "")
    if not m:
        return "", ""
    path = Path(m.group("file"))
    function, gap = _function_and_gap(path, int(m.group("line")))
    label = (f"gap {gap} ({function})" if gap else function)
    return label, f"{path.name}:{m.group('line')}"


def _unwrap(message: str) -> str:
    """``AssertionError("…")`` (how the front end reports a failed assert) → ``…``."""
    m = re.match(r'^\w+Error\((["\'])(.*)\1\)$', message.strip(), re.S)
    return m.group(2) if m else message


# A C++ assertion that stopped an MLIR pass: Assertion `supported && "WGMMA type or shape is not supported"' failed.
_ASSERTION = re.compile(r"Assertion `[^`]*?\"([^\"]+)\"[^`]*' failed")


def _failed_assertion(error: CompileFailed) -> str:
    """The words of the C++ assertion that stopped a pass, where the compiler's message is only that the pass failed
    (MLIR's "Pipeline failed while executing") and TRANSLATIONS has a sentence for them; else ""."""
    if "Pipeline failed while executing" not in error.message:
        return ""
    m = _ASSERTION.search(getattr(error, "source_excerpt", "") or "")
    known = m and any(re.search(pattern, m.group(1)) for pattern, _, _ in TRANSLATIONS)
    return m.group(1) if known else ""


def _is_out_of_resources(error: BaseException) -> bool:
    try:
        from triton.runtime.errors import OutOfResources
    except ImportError:
        return False
    return isinstance(error, OutOfResources)


def explain(error: BaseException, lesson: str | None = None, learner_file=None) -> str:
    """One or two lines for a learner. Errors that are the course's own (a bug, not a mistake) are not
    passed here; callers catch only what a lesson module can cause. ``learner_file``: the learner's module's file,
    whose innermost line in the traceback names the place (the gap, the function, the line)."""
    head = f"lesson {lesson}" if lesson else ""
    if isinstance(error, CompileFailed):
        if "not yet implemented" in error.message:
            return error.message
        gap, at = where(error.location)
        parts = [p for p in (head, gap, error.target) if p]
        message, hint = translate(_failed_assertion(error) or _unwrap(error.message))
        text = f"{', '.join(parts)}: {message}" + (f" ({at})" if at and not at.startswith("<unknown>") else "")
        hint = hint or hint_for(error.message)
        return text + (f"\n  hint: {hint}" if hint else "")
    if _is_out_of_resources(error):
        return (f"{head + ': ' if head else ''}the kernel asks for {error.required} bytes of {error.name} per "
                f"program, and this GPU has {error.limit}: shrink STAGES, BLOCK_K or BLOCK_N (the check "
                "config_fits says this on the CPU)")
    if isinstance(error, NotImplementedError) and not describe(None, text=str(error))[0]:
        return str(error) or f"{head}: not yet implemented"     # a starter's open gap
    if isinstance(error, SyntaxError):
        file = Path(error.filename or "").name or "the file"
        return (f"{head + ': ' if head else ''}{file} line {error.lineno}: {error.msg} — Python cannot read the "
                "file, so nothing in it was checked")
    if isinstance(error, BackendMissing):
        return str(error)
    place = learner_frame(error, learner_file)
    label, at = ("", "")
    if place is not None:
        function, gap = _function_and_gap(Path(place[0]), place[1])
        label = f"gap {gap} ({function})" if gap else (function or "")
        at = f"{Path(place[0]).name}:{place[1]}"
    parts = ", ".join(p for p in (head, label) if p)
    hint = ""
    if raised_by_course(error, learner_file):
        # The course's (or the learner's) own sentence: as written, all of it.
        said = error.args[0] if isinstance(error, KeyError) and error.args else error   # str(KeyError) is a repr
        message = " ".join(_unwrap(str(said)).split())
        hint = hint_for(str(error))
    else:
        message, hint = describe(error, names=visible_names(error))
        if isinstance(error, AssertionError) and message == dict(KINDS)[AssertionError]:
            message = library_sentence(error) or message
        if message in dict(KINDS).values() and place is not None:
            code = linecache.getline(place[0], place[1]).strip()
            if code:
                message = f"{message}, in `{code[:100]}`"
    text = (f"{parts}: " if parts else "") + message + (f" ({at})" if at else "")
    return text + (f"\n  hint: {hint}" if hint else "")
