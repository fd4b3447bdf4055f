"""The two GEMM tracks side by side (book/comparison.md): NVIDIA's lessons 10-19 and AMD's 20-29, step by step.

What a lesson is called and what it teaches come from the lessons themselves (their titles, their checks'
``teaches`` and ``targets``), so the page follows them when they change; which ideas correspond is written here,
once, as data: each correspondence names the lessons on both sides and the spelling each vendor gives the idea.
``python -m gluon_course tables`` rewrites the page's generated section (``update``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..course import lesson, lessons
from .pages import replace_between

BEGIN = "<!-- BEGIN GENERATED COMPARISON (python -m gluon_course tables) -->"
END = "<!-- END GENERATED COMPARISON -->"
NVIDIA = tuple(str(n) for n in range(10, 20))
AMD = tuple(str(n) for n in range(20, 30))


@dataclass(frozen=True)
class Same:
    """One idea both tracks teach, under each vendor's names."""
    idea: str
    nvidia: tuple[str, ...]        # lesson numbers
    nvidia_name: str
    amd: tuple[str, ...]
    amd_name: str


@dataclass(frozen=True)
class Alone:
    """An idea only one track has, and why the other does without."""
    vendor: str                    # "NVIDIA" or "AMD"
    lessons: tuple[str, ...]
    idea: str
    other_side: str


SAME = (
    Same("a matrix instruction fed from registers, with layouts that say which lane holds which element",
         ("11",), "`mma_v2` (mma.sync), `NVMMADistributedLayout`, `DotOperandLayout(k_width)`",
         ("20",), "`cdna3.mfma`, `AMDMFMALayout`, `DotOperandLayout(k_width)`"),
    Same("asynchronous copies from global into shared memory, grouped and waited for by count",
         ("13",), "cp.async: `async_copy.async_load`, `commit_group`, `wait_group` (`LDGSTS`)",
         ("22",), "direct-to-LDS copies: `async_copy.buffer_load_to_shared`, `commit_group`, `wait_group` "
                  "(`buffer_load … lds`, `s_waitcnt vmcnt`)"),
    Same("the hardware checks the bounds, so a tile's edge needs no branch",
         ("14",), "TMA: a tensor descriptor's box, zero-filled past the tensor's edge",
         ("21",), "buffer loads: a base, 32-bit offsets and the descriptor's range check (masked-off lanes read 0)"),
    Same("shared-memory layouts chosen against bank conflicts of the reads that feed the matrix instruction",
         ("12",), "swizzled vs plain shared layouts, `ldmatrix` conflicts",
         ("23",), "plain vs swizzled vs padded LDS layouts (`PaddedSharedLayout`, "
                  "`compute_efficient_padded_shared_layout`), `ds_read_b128` conflicts"),
    Same("operands read from shared memory in the matrix instruction's layout",
         ("12", "15"), "`ldmatrix` into mma_v2's layouts; then wgmma reads shared memory itself",
         ("22", "25"), "`ds_read_b128` into the MFMA's operand layouts (`.load(layout)`), read one step ahead"),
    Same("copies of the next tiles in flight while this one is multiplied: a ring of shared buffers",
         ("13", "14"), "a ring of STAGES slots, prefetch distance STAGES − 1 (mbarriers from lesson 14)",
         ("24",), "two LDS stages, `wait_group(1)`"),
    Same("tiles of C ordered so that neighbours share their rows of A and columns of B in one cache",
         ("17",), "grouped order over a persistent grid (an L2 all SMs share)",
         ("29",), "XCD remap + grouped order (one L2 per XCD, workgroups dealt round robin)"),
)

ALONE = (
    Alone("NVIDIA", ("14",), "mbarriers: a copy's completion counted in bytes on a barrier with a phase",
          "AMD waits on counters of outstanding memory operations (`s_waitcnt vmcnt`), per wave"),
    Alone("NVIDIA", ("15", "16"), "a matrix instruction that reads shared memory and runs asynchronously "
          "(`warpgroup_mma(..., is_async=True)`, `warpgroup_mma_wait`)",
          "an MFMA reads registers only; the AMD track overlaps the reads instead (local prefetch, lesson 25)"),
    Alone("NVIDIA", ("18",), "warp specialization: a producer warp and consumer warpgroups, registers moved "
          "between them (`setmaxnreg`)",
          "the AMD track runs one wave per SIMD, every wave copying, reading and multiplying in turn"),
    Alone("NVIDIA", ("19",), "the epilogue through shared memory and a TMA store, overlapped with the next tile",
          "the AMD kernels store C with `buffer_store` from the accumulators' own layout"),
    Alone("AMD", ("25", "26"), "a software pipeline into registers: the next tile read from LDS during this tile's "
          "MFMAs, the loop unrolled so two register sets alternate",
          "wgmma reads its operands from shared memory: there is nothing to prefetch into registers"),
    Alone("AMD", ("27",), "two register files, and the accumulators placed in the accumulation registers "
          "(`cd_regclass=\"a\"`)",
          "Hopper's wgmma accumulates in the ordinary registers of its warpgroup; lesson 18 moves registers between "
          "warps instead"),
    Alone("AMD", ("27", "28"), "slicing the tile of C into regions, so that less is live at once and the copies "
          "spread among the MFMAs",
          "the NVIDIA track splits the tile between two consumer warpgroups (lessons 16-18)"),
)


def _link(number: str) -> str:
    the = lesson(number)
    return f"[{number} · {the.title}](../lessons/{the.folder}/lesson.ipynb)"


def _links(numbers) -> str:
    return "; ".join(_link(n) for n in numbers)


def markdown() -> str:
    """The generated section: the ten steps side by side, the ideas both share, the ideas one has alone."""
    known = lessons()
    lines = ["## Step by step", "",
             "Each row: the version, then each track's lesson with what it teaches, in the lesson's own words "
             "(`teaches`, from its checks) and the targets it compiles for.", "",
             "| v | NVIDIA (H200) | AMD (gfx950) |", "|---|---|---|"]
    for step, (nv, amd) in enumerate(zip(NVIDIA, AMD)):
        cells = []
        for number in (nv, amd):
            if number not in known:
                cells.append("(not written yet)")
                continue
            checks = known[number].checks
            cells.append(f"{_link(number)}: {checks.teaches} ({', '.join(checks.targets)})")
        lines.append(f"| v{step} | {cells[0]} | {cells[1]} |")
    lines += ["", "## The same idea under two names", "",
              "| the idea | NVIDIA | AMD |", "|---|---|---|"]
    for same in SAME:
        lines.append(f"| {same.idea} | {same.nvidia_name} ({_links(same.nvidia)}) | {same.amd_name} "
                     f"({_links(same.amd)}) |")
    lines += ["", "## One vendor's alone", "",
              "| vendor | the idea | lessons | and on the other side |", "|---|---|---|---|"]
    for alone in ALONE:
        lines.append(f"| {alone.vendor} | {alone.idea} | {_links(alone.lessons)} | {alone.other_side} |")
    return "\n".join(lines) + "\n"


def update(root: Path, write: bool) -> list[str]:
    """Rewrite the generated section of book/comparison.md; return it if it changed (or, with ``write=False``, is
    stale)."""
    page = root / "book" / "comparison.md"
    if not page.exists():
        return []
    return ["book/comparison.md"] if replace_between(page, BEGIN, END, markdown(), write) else []
