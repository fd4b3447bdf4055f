"""The course's terms: every word of ``book/glossary.md``, the lesson (or page) that teaches it, how a lesson says it,
and the Gluon names that stand for it.

``tests/test_glossary.py`` holds the glossary to this list, in both directions:

- every term here has an entry in ``book/glossary.md`` (its first line is ``Term.entry`` exactly), and every entry
  there is a term here;
- each entry links to the page that teaches the term (``Term.where``: a lesson number, or a page of ``book/``), that
  page is part of the website, and a lesson that teaches a term uses it (``Term.says`` matches the prose of its
  notebook);
- a lesson *uses* a term when ``Term.says`` matches the prose (the markdown cells) of its notebook, or when its
  solution calls a Gluon name listed in ``Term.api``; every hardware-specific Gluon name a solution calls (imported
  from ``triton.experimental.gluon``'s ``nvidia`` or ``amd`` modules, a layout class, ``warp_specialize``) must be
  covered by some term's ``api``, so a lesson that brings in a new instruction or layout fails until its term has
  an entry.

A term whose lesson is not written yet (``where`` names a lesson that has no folder in this checkout) has an entry
that names the lesson in words; the test asks for the link once the lesson exists.
"""
from __future__ import annotations

import ast
import importlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..course import lessons, repo_root


@dataclass(frozen=True)
class Term:
    entry: str                  # the entry's first line in book/glossary.md, exactly
    where: str                  # the lesson that teaches it ("14"), or a page of the book ("book/measuring")
    says: str                   # a regular expression: how a lesson's prose says it (case-sensitive; (?i) if not)
    api: tuple[str, ...] = ()   # Gluon names that are this term, as dotted prefixes ("mbarrier" covers mbarrier.wait)


TERMS: tuple[Term, ...] = (
    # -- execution
    Term("Program, CTA, thread block, workgroup", "01", r"\bprograms?\b"),
    Term("Grid", "01", r"\bgrid\b"),
    Term("SM, multiprocessor", "04", r"\bSMs?\b|multiprocessor"),
    Term("Warp", "02", r"\bwarps?\b"),
    Term("Wavefront, wave (AMD)", "20", r"\bwave(front)?s?\b"),
    Term("Lane", "02", r"\blanes?\b"),
    Term("Warp shuffle", "04", r"(?i)\bshuffles?\b"),
    Term("Warpgroup", "15", r"\bwarpgroups?\b"),
    Term("SIMD, CU (AMD)", "20", r"\bSIMDs?\b"),
    Term("XCD (AMD)", "29", r"\bXCDs?\b"),
    Term("Register", "02", r"\bregisters?\b"),
    Term("VGPR, AGPR, SGPR", "20", r"\b[VA]GPRs?\b"),
    Term("Occupancy", "04", r"(?i)\boccupancy\b"),
    Term("Spill, scratch", "10", r"(?i)\bspill"),
    # -- compiling and timing
    Term("constexpr", "01", r"\bconstexprs?\b"),
    Term("Autotuning, triton.autotune", "01", r"(?i)\bautotun"),
    Term("nvdisasm, cuobjdump", "01", r"nvdisasm|cuobjdump"),
    Term("do_bench", "book/measuring", r"do_bench"),
    # -- layouts
    Term("Layout", "02", r"\blayouts?\b"),
    Term("BlockedLayout", "02", r"BlockedLayout", ("BlockedLayout",)),
    Term("Broadcast", "02", r"(?i)\bbroadcast"),
    Term("SliceLayout", "03", r"SliceLayout", ("SliceLayout",)),
    Term("Linear layout", "05", r"(?i)\blinear layouts?\b", ("DistributedLinearLayout",)),
    Term("Shared layout", "05", r"(?i)\bshared(-memory)? layouts?\b", ("SwizzledSharedLayout", "SharedLinearLayout")),
    Term("Swizzling", "05", r"(?i)\bswizzl"),
    Term("NVMMADistributedLayout", "11", r"NVMMADistributedLayout", ("NVMMADistributedLayout",)),
    Term("DotOperandLayout, k_width", "11", r"DotOperandLayout", ("DotOperandLayout",)),
    Term("NVMMASharedLayout", "12", r"NVMMASharedLayout", ("NVMMASharedLayout",)),
    Term("AMDMFMALayout", "20", r"AMDMFMALayout", ("amd.AMDMFMALayout", "AMDMFMALayout")),
    Term("PaddedSharedLayout", "23", r"PaddedSharedLayout",
         ("PaddedSharedLayout", "cdna4.compute_efficient_padded_shared_layout")),
    # -- memory
    Term("Global memory, HBM", "01", r"(?i)\bglobal memory\b|\bHBM\b"),
    Term("Little's law", "13", r"Little's law"),
    Term("L2 cache", "17", r"\bL2\b"),
    Term("L2 eviction hint, cache policy", "32", r"evict_first|eviction (hint|priority)",
         ("CachePolicy", "FractionalEvictionPolicy")),
    Term("Coalescing", "03", r"(?i)\bcoalesc"),
    Term("Sector", "03", r"(?i)\bsectors?\b"),
    Term("Vector width", "02", r"(?i)\bvector"),
    Term("Shared memory", "04", r"(?i)\bshared memory\b"),
    Term("LDS (AMD)", "20", r"\bLDS\b"),
    Term("Shared memory bank, bank conflict", "05", r"(?i)\bbank conflicts?\b"),
    Term("Shared-memory wavefront (Nsight Compute)", "12", r"\bwavefronts?\b"),
    Term("LDS bank, LDS phase (AMD)", "23", r"\bbanks?\b"),
    Term("Buffer load, buffer store (AMD)", "21", r"(?i)\bbuffer (load|instruction)", ("cdna3.buffer_load",
                                                                                         "cdna3.buffer_store")),
    Term("Direct-to-LDS copy (AMD)", "22", r"(?i)direct-to-LDS|buffer_load_to_shared",
         ("async_copy.buffer_load_to_shared",)),
    # -- the units that compute
    Term("CUDA core, FMA", "10", r"CUDA cores?"),
    Term("Tensor core, matrix core", "11", r"(?i)\btensor cores?\b"),
    Term("mma.sync, mma_v2, HMMA", "11", r"mma\.sync|mma_v2", ("mma_v2",)),
    Term("ldmatrix", "12", r"ldmatrix"),
    Term("stmatrix", "19", r"stmatrix|STSM"),
    Term("wgmma", "15", r"\bwgmma\b", ("warpgroup_mma",)),
    Term("Shared-memory matrix descriptor (wgmma)", "15", r"matrix descriptor"),
    Term("wgmma group, asynchronous wgmma", "16", r"\bgroups?\b", ("warpgroup_mma_wait",)),
    Term("tcgen05, tensor memory", "15", r"tcgen05",
         ("tcgen05_mma", "tcgen05_commit", "TensorMemoryLayout", "allocate_tensor_memory")),
    Term("MFMA", "20", r"\bMFMAs?\b", ("cdna3.mfma", "cdna4.mfma")),
    # -- copies and their synchronisation
    Term("cp.async", "13", r"cp\.async", ("async_copy.async_load", "async_copy.async_copy_global_to_shared")),
    Term("Commit group, wait group", "13", r"commit_group|wait_group",
         ("async_copy.commit_group", "async_copy.wait_group")),
    Term("s_waitcnt, vmcnt (AMD)", "24", r"vmcnt"),
    Term("Ring, stage", "13", r"\bring\b|\bstages?\b"),
    Term("Prefetch", "24", r"(?i)\bprefetch"),
    Term("TMA", "14", r"\bTMA\b", ("tma.async_load", "tma.async_copy_global_to_shared")),
    Term("Tensor descriptor, box (TMA)", "14", r"tensor descriptors?", ("TensorDescriptor",)),
    Term("TMA store", "19", r"tma\.async_store", ("tma.async_store", "tma.store_wait", "tma.async_copy_shared_to_global")),
    Term("mbarrier", "14", r"mbarriers?", ("mbarrier",)),
    Term("Phase, parity (mbarrier)", "14", r"\bparity\b"),
    Term("Expect, transaction bytes (mbarrier)", "14", r"transaction count|mbarrier\.expect", ("mbarrier.expect",)),
    Term("CTA barrier", "04", r"\bbarriers?\b", ("barrier",)),
    Term("Proxy fence, async proxy", "14", r"(?i)\bproxy\b", ("fence_async_shared",)),
    # -- the shape of a GEMM kernel
    Term("GEMM, tile of C", "10", r"tile of C|\bGEMM\b"),
    Term("K loop, K step", "10", r"\bK loop\b|\bK steps?\b"),
    Term("Accumulator", "10", r"(?i)\baccumulators?\b"),
    Term("Producer, consumer", "18", r"(?i)\bproducers?\b|\bconsumers?\b"),
    Term("Warp specialization, partition", "18", r"(?i)warp speciali[sz]|\bpartitions?\b", ("warp_specialize",)),
    Term("Ready and empty barriers", "18", r"ready/empty"),
    Term("Register reallocation, setmaxnreg", "18", r"setmaxnreg|USETMAXREG"),
    Term("Persistent kernel", "17", r"(?i)\bpersistent\b"),
    Term("Grouped order", "17", r"(?i)\bgrouped order\b"),
    Term("Epilogue", "19", r"(?i)\bepilogue\b"),
    Term("Cooperative, ping-pong", "19", r"ping-pong"),
    Term("Epilogue fusion", "35", r"(?i)\bfusion\b|\bfused GEMMs?\b"),
    Term("Programmatic dependent launch (PDL)", "35", r"\bPDL\b|(?i:programmatic dependent launch)"),
    Term("Grouped-query attention (GQA)", "38", r"\bGQA\b|(?i:grouped-query)"),
    Term("KV cache", "38", r"\bKV cache\b"),
    Term("Split-KV decode", "38", r"(?i)\bsplits?\b.*\bkeys\b|\bsplit-KV\b"),
    Term("Roofline", "32", r"(?i)\broofline\b"),
    # -- the course's own words
    Term("Host model", "18", r"host model"),
    Term("compute-sanitizer", "12", r"compute-sanitizer|racecheck"),
    Term("Nsight Compute", "03", r"Nsight Compute"),
    Term("Vendor library: cuBLAS, hipBLASLt", "10", r"cuBLAS|hipBLASLt"),
    Term("Ceiling", "book/measuring", r"(?i)\bceiling\b"),
    Term("Expected range, course target", "book/measuring", r"(?i)\bexpected range\b|\bcourse target\b"),
    Term("Provenance", "book/results", r"(?i)\bprovenance\b"),
    Term("Poisoned and guarded output", "book/measuring", r"(?i)\bpoison"),
    # A word for authors and instructors, never a lesson's (tests/test_no_test_tool_words.py keeps it out of them).
    Term("nbval", "book/setup", r"(?i)\bnbval\b"),
    Term("Starter, solution", "01", r"\bstarter\b"),
)

GLOSSARY = "book/glossary.md"


def term(entry: str) -> Term:
    for t in TERMS:
        if t.entry == entry:
            return t
    raise KeyError(f"no course term {entry!r} in gluon_course.website.glossary.TERMS")


def entries(path: Path | None = None) -> dict[str, str]:
    """The entries of ``book/glossary.md`` (a MyST definition list): term line -> its definition's text."""
    text = (path or repo_root() / GLOSSARY).read_text(encoding="utf-8")
    found: dict[str, str] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.strip() and not line.startswith((":", " ", "#", "<", "|", "`")) and lines[i + 1].startswith(": "):
            body = []
            for follow in lines[i + 1:]:
                if not follow.startswith((": ", "  ")):
                    break
                body.append(follow[2:])
            found[line.strip()] = "\n".join(body)
    return found


def lesson_prose(number: str) -> str:
    """The markdown cells of lesson ``number``'s notebook, as one text ('' when the lesson has no notebook)."""
    path = lessons()[number].notebook_path
    if not path.exists():
        return ""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                     for c in cells if c["cell_type"] == "markdown")


# -- the Gluon names a lesson calls -----------------------------------------------------------------------------------

_HARDWARE_MODULES = ("triton.experimental.gluon.language.nvidia", "triton.experimental.gluon.language.amd",
                     "triton.experimental.gluon.nvidia", "triton.experimental.gluon.amd")
_GL_NAMES = re.compile(r"^(amd|nvidia)$|^[A-Z]|^warp_specialize$|^barrier$")
# Leading parts of a dotted name that only say where it lives: gl.nvidia.hopper.mbarrier.wait is mbarrier.wait,
# gl.amd.cdna3.mfma is cdna3.mfma (the AMD generation stays: the terms name it).
_WHERE = ("amd", "nvidia", "hopper", "ampere", "blackwell")


def _short(parts: list[str]) -> str:
    while len(parts) > 1 and parts[0] in _WHERE:
        parts = parts[1:]
    return ".".join(parts)


def _chain(node) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def gluon_names(source: str) -> set[str]:
    """The hardware-specific Gluon names ``source`` uses: what it imports from Gluon's ``nvidia`` and ``amd`` modules
    and calls or reads through them (``mbarrier.expect``, ``cdna3.buffer_load``, ``warpgroup_mma``), and the layout
    classes, ``warp_specialize`` and ``barrier`` of ``gluon.language`` (``NVMMASharedLayout.get_default_for``)."""
    tree = ast.parse(source)
    imported: dict[str, bool] = {}        # local name -> is a module (its attributes are the names)
    gl: set[str] = set()                  # local names of triton.experimental.gluon.language
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                local = alias.asname or alias.name
                if node.module.startswith(_HARDWARE_MODULES) or f"{node.module}.{alias.name}".startswith(
                        _HARDWARE_MODULES):
                    value = getattr(importlib.import_module(node.module), alias.name, None)
                    imported[local] = isinstance(value, type(importlib))
                elif node.module == "triton.experimental.gluon" and alias.name == "language":
                    gl.add(local)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "triton.experimental.gluon.language" and alias.asname:
                    gl.add(alias.asname)
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(parents.get(node), ast.Attribute):
            chain = _chain(node)
            if not chain:
                continue
            if chain[0] in imported:
                found.add(_short(chain))
            elif chain[0] in gl and _GL_NAMES.match(chain[1]):
                found.add(_short(chain[1:]))
        elif isinstance(node, ast.Name) and imported.get(node.id) is False:
            found.add(node.id)
    return found


def covering(name: str) -> Term | None:
    """The term whose ``api`` covers the Gluon name ``name`` most closely (the longest dotted prefix of it), or None:
    ``mbarrier.expect`` is the expect term's, ``mbarrier.wait`` the mbarrier term's."""
    best, length = None, -1
    for t in TERMS:
        for api in t.api:
            if (name == api or name.startswith(api + ".")) and len(api) > length:
                best, length = t, len(api)
    return best


def lesson_gluon_names(number: str) -> set[str]:
    """The hardware-specific Gluon names lesson ``number``'s solution uses."""
    return gluon_names(lessons()[number].solution_path.read_text(encoding="utf-8"))
