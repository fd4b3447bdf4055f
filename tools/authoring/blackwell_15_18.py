"""One-off edits of notebooks 15 and 18 (issue 13): each ends with "What changes on Blackwell".

The committed notebooks carry the outputs of a live H200 recording, so they are not re-executed: the new cells are
appended (18's come from tools/authoring/notebook18.py, which holds all of that notebook's cells), a copy is executed
here, and only these outputs are copied back: the new cells', and those of the cells that run the machine-code checks
(`check("NN")` on the starter, `lab.machine_code()`), which now list the sm_100 checks too. Those print the same
everywhere (compiled on the CPU; the starter's GPU part is skipped on any machine), so the copies are what a GPU run
prints. Run from the repository's root: python tools/authoring/blackwell_15_18.py
"""
import copy
import os
import runpy

import nbformat as nbf
from nbclient import NotebookClient

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
SECTION = "## What changes on Blackwell"

EDITS_15 = [
    ("and why the instruction exists on Hopper only. **Time:**",
     "why the instruction exists on Hopper only, and what the same step is on Blackwell (the last\nsection). **Time:**"),
    ("So the lesson declares sm_90 only (compiled as `sm_90a`), the launcher",
     "So the lesson holds its wgmma kernel to sm_90 only (compiled as `sm_90a`), the launcher"),
    ("(`LLVM ERROR: Failed to infer result type(s)`) instead of raising an error.",
     "(`LLVM ERROR: Failed to infer result type(s)`) instead of raising an error. The lesson declares sm_100 too, for\n"
     "the tcgen05 kernel of its last section."),
]
EDITS_18 = [
    ("parities, register reallocation between partitions (`setmaxnreg`), and how to read each partition in the machine\n"
     "code. **Time:**",
     "parities, register reallocation between partitions (`setmaxnreg`), how to read each partition in the machine\n"
     "code, and what the partitions become on Blackwell (the last section). **Time:**"),
]

CELLS_15 = [
    md("""## What changes on Blackwell

Blackwell (sm_100: B200, GB200) has no wgmma (section 5). Its tensor cores are driven by **tcgen05**, and the step this
lesson wrote changes in three places:

* The accumulator lives in **tensor memory** (TMEM), not in registers. TMEM is 128 lanes × 512 columns of 32-bit
  cells (Triton's launcher allows a program those 512 columns); `allocate_tensor_memory(gl.float32, [128, 128],
  TensorMemoryLayout(block=(128, 128), col_stride=1))` takes 128 columns, one lane per row of the tile, one fp32 per
  column.
* `tcgen05_mma(a_slot, b_slot, acc_tmem, use_acc=..., mbarriers=[bar])` is issued by one thread and returns at once;
  when the products are done, the tensor cores arrive on `bar`. There is no `warpgroup_mma_wait`: the kernel waits
  on an mbarrier, as it waits for TMA.
* The result comes back into registers with `acc_tmem.load(layout)`, in the layout the descriptor gives,
  `acc_tmem.get_reg_layout()`.

`solution.py` ends with the same step written that way, `blackwell_matmul_kernel`: this lesson's ring, barriers and
`load_tiles` unchanged (Blackwell's `mbarrier` and `tma` are Hopper's), the consumer new. **Not measured: there is no
Blackwell GPU here.** The kernel has been compiled for sm_100 and its machine code read, never run; it has no
launcher, and nothing below claims a speed."""),
    code("""show_source(solution.blackwell_matmul_kernel)"""),
    md("""Against `matmul_kernel`: one more barrier, `mma_done`; tensor memory instead of `gl.zeros` for the accumulator;
`tcgen05_mma` and a wait on `mma_done` instead of `warpgroup_mma`; a load out of tensor memory before the store.
Tensor memory is allocated without a value (nothing is written into it), so step 0 must not add to what it holds:
`use_acc=i > 0` is false there only. The slot refilled at step i is still the one step i − 1 read, free because the
kernel waited for step i − 1's arrival on `mma_done`: this is the lesson's synchronous step, with the wait moved from
`wgmma.wait_group` to an mbarrier.

The register layout of the load, the same `get_reg_layout` asked on the host:"""),
    code("""from gluon_course import blackwell

tmem_layout = blackwell.reg_layout([128, 128], 4)       # what acc_tmem.get_reg_layout() gives the kernel's 4 warps
print(tmem_layout)
rows_of = {}
for (row, col), copies in layouts.owners(tmem_layout, [128, 128]).items():
    for warp, lane, register in copies:
        rows_of.setdefault(warp, set()).add(row)
table([[w, runs(rows)] for w, rows in sorted(rows_of.items())], ["warp", "rows of C it reads from tensor memory"])
print(layouts.register_budget(tmem_layout, [128, 128]))"""),
    md("""Lane t of warp w gets row 32 w + t, all 128 columns of it in its registers: each warp of the warpgroup reads its
own 32 of tensor memory's 128 lanes. That is as many registers per thread as wgmma's accumulator (section 2); what
changes is when they are needed: only after the loop.

The machine code on sm_100 (bf16): the K loop, then the tensor-memory instructions of the rest of the kernel:"""),
    code("""kb = checks.blackwell_compiled(solution)
span = blackwell.mma_loop(kb)
print("the K loop:")
blackwell.show(kb, span, prefixes=("SYNCS", "UTMALDG", "UISETP", "UTC"))
print("the rest of the kernel:")
blackwell.show(kb, prefixes=("UTCATOMSWS", "NANOSLEEP", "FENCE", "LDTM"))
print(f"tcgen05.alloc of {blackwell.tmem_columns(kb)} columns; the program's total (metadata.tmem_size): "
      f"{kb.metadata.tmem_size}")"""),
    md("""And the PTX of the same compile, every tcgen05 instruction (the load's 128 registers abbreviated):"""),
    code("""import re

for line in kb.ptx.splitlines():
    if "tcgen05." in line:
        print(re.sub(r"\\{[^}]*\\}", lambda m: f"{{{m.group(0).count(',') + 1} registers}}", line.strip()))
elect = re.search(r"@(%p\\d+) tcgen05\\.mma", kb.ptx).group(1)
print(next(line.strip() for line in kb.ptx.splitlines() if "elect.sync" in line and f"|{elect}," in line))"""),
    md("""Read together (which SASS instruction stands for which PTX one, from where each sits):

* `UTCHMMA` is `tcgen05.mma.cta_group::1.kind::f16`, two per K step of 32: 128 rows × 128 columns × 16 of K each.
  `gdesc[UR…]` are A's and B's shared-memory matrix descriptors; `tmem[UR…]` is the accumulator's
  address in tensor memory, and `idesc` the instruction's descriptor. No register holds the accumulator: `HGMMA`
  named its accumulator registers (`R88…`, `R24…`, 64 each, section 4).
* Its last operand is the accumulate flag (PTX's last operand, `enable-input-d`; Gluon's `use_acc`): `UP1` on the
  first, set by `UISETP.NE.U32.AND UP1, …, UR4, URZ` (i ≠ 0), `UPT` (always true) on the second.
* `UTCBAR` is the `tcgen05.commit … mbarrier::arrive::one` that `mbarriers=[mma_done]` adds: one arrival on
  `mma_done` once the products are done. The loop's second `SYNCS.PHASECHK` waits for it, at `0xc020`: past the
  ring, after the three `ready` barriers from `0xc000`. No `WARPGROUP.ARRIVE`, no `WARPGROUP.DEPBAR`.
* One thread issues them: in the PTX the products and the commit are predicated on an `elect.sync`, which picks one
  thread of the warp, and only warp 0 reaches them (the other warps branch around).
* Tensor memory is allocated at the kernel's start by warp 0 (`tcgen05.alloc`, 128 columns: in SASS the
  `UTCATOMSWS.FIND_AND_SET.ALIGN` that one elected thread repeats, after a `NANOSLEEP`, until it succeeds), read
  once after the loop (`tcgen05.ld.32x32b.x128`: `LDTM.x128`, 128 registers per thread from `R4` on), and released
  by warp 0 at the end (`tcgen05.dealloc`: `UTCATOMSWS.AND`). The allocation writes its TMEM address into shared
  memory with an ordinary store at offset 0, where TMA later fills the ring's first slot; the kernel's one
  `FENCE.VIEW.ASYNC.S` (the wgmma kernel has none) comes after it, before the barriers are initialised.

Leave `mbarriers=` out and the docstring of `tcgen05_mma` says the call is synchronous. What Triton 3.9.0 compiles
for this kernel then has no commit at all: nothing arrives on any barrier when the products are done. One of the
planted mistakes does exactly that (keeping the wait on `mma_done`, which would never return):"""),
    code("""from gluon_course.course import load_module_file, load_plants
import pathlib, tempfile

plant = next(p for p in load_plants("15") if p.mistake.startswith("Blackwell: mbarriers=[mma_done] left out"))
planted = pathlib.Path(tempfile.mkdtemp()) / "planted.py"
planted.write_text(solution.__loader__.get_source(solution.__name__).replace(plant.old, plant.new))
kp = checks.blackwell_compiled(load_module_file(planted))
print("tcgen05 instructions:", blackwell.tcgen05_ops(kp))
print("tcgen05.commit in the PTX:", kp.ptx.count("tcgen05.commit"))"""),
    md("""So every `tcgen05_mma` of the course names its barrier. Side by side with this lesson's kernel (sm_90):"""),
    code("""kh = checks.compiled(solution)
table(blackwell.compare(kh, checks.main_loop(kh), kb, span),
      ["", "sm_90: matmul_kernel", "sm_100: blackwell_matmul_kernel"])"""),
    md("""What changes from the Hopper step, in short:

* **No `warpgroup_mma_wait`:** completion comes by mbarrier (`mbarriers=` on the call, a `UTCBAR` in the machine
  code), and the kernel waits on it with the same `SYNCS.PHASECHK` as for TMA: two mbarrier waits per K step.
* **The accumulator lives in tensor memory, not in registers:** 128 of its 512 columns.
* **The register budget is freed during the loop:** no register holds the accumulator while the products run. The
  kernel still takes 138 registers (the wgmma kernel: 154) because its epilogue reads the whole tile at once, 128 per
  thread from `R4` on.
* **One thread issues the products:** the tensor cores take the whole 128-row tile from one thread's instruction,
  2 per K step where the warpgroup issued 4 `HGMMA`.

The checks `tcgen05_sm_100` and `tmem_resources_sm_100` hold this machine code to the counts above, and four planted
mistakes (`use_acc` left at True, no wait on `mma_done`, no `mbarriers=`, a TMEM block of 64 rows) are each rejected
by `tcgen05_sm_100`. Whether the kernel is correct and how fast it is on a B200 is **not known here: it has never
run**."""),
]


def _edit(nb, edits):
    for old, new in edits:
        if any(new in c.source for c in nb.cells if c.cell_type == "markdown"):
            continue                           # made by an earlier run
        hits = [c for c in nb.cells if c.cell_type == "markdown" and old in c.source]
        if len(hits) != 1:
            raise SystemExit(f"edit {old[:50]!r}: found in {len(hits)} cells, expected 1")
        hits[0].source = hits[0].source.replace(old, new)


def _refreshed(cell) -> bool:
    return cell.cell_type == "code" and ("passed = check(" in cell.source or "lab.machine_code()" in cell.source)


def update(path, edits, cells, source_cells=None):
    nb = nbf.read(path, as_version=4)
    at = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith(SECTION)), None)
    if at is not None:
        del nb.cells[at:]                      # run again: the section is rewritten, nothing else
    _edit(nb, edits)
    if source_cells is not None:               # the script's cells must be the notebook's, then the new ones
        head = [c.source for c in source_cells[:len(nb.cells)]]
        if head != [c.source for c in nb.cells]:
            raise SystemExit(f"{path}: its cells differ from the authoring script's; fix one of them first")
        cells = source_cells[len(nb.cells):]
    first_new = len(nb.cells)
    nb.cells.extend(copy.deepcopy(cells))
    executed = copy.deepcopy(nb)             # run in the notebook's folder, as nbval runs it
    folder = os.path.dirname(os.path.abspath(path))
    NotebookClient(executed, timeout=900, kernel_name="python3", resources={"metadata": {"path": folder}}).execute()
    for i, (cell, ran) in enumerate(zip(nb.cells, executed.cells)):
        if cell.cell_type == "code" and (i >= first_new or _refreshed(cell)):
            cell.outputs, cell.execution_count = ran.outputs, ran.execution_count
            cell.metadata["execution"] = ran.metadata.get("execution", {})
    nbf.write(nb, path)
    print(f"{path}: {len(cells)} cells appended; outputs refreshed: "
          f"{[i for i, c in enumerate(nb.cells[:first_new]) if _refreshed(c)]}")


if __name__ == "__main__":
    update("lessons/15-gemm-v5-wgmma/lesson.ipynb", EDITS_15, CELLS_15)
    script = runpy.run_path("tools/authoring/notebook18.py")["cells"]
    update("lessons/18-gemm-v8-warp-specialized/lesson.ipynb", EDITS_18, [], source_cells=script)
