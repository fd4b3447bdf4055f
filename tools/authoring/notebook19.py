"""Writes lessons/19-gemm-v9-epilogue/lesson.ipynb (its cells; outputs come from executing it)."""
import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
md("""# 19 · GEMM v9: the epilogue overlapped, and the last 5%

**What you build:** lesson 18's kernel with C's tile stored by TMA from shared memory while the consumers start the
next tile, B taken either as a K × N matrix or as the transpose of an N × K one (how `nn.Linear` keeps its weights),
and a configuration chosen on the course's sweep of shapes. **What you learn:** `tma.async_store`, `tma.store_wait`
and `fence_async_shared` (when the threads' writes must become visible to TMA), reading an operand of wgmma through
a transposed view of shared memory, why the two consumer warpgroups here work on one tile together (cooperative)
rather than on two tiles in turn (ping-pong), and how the course's final kernel compares with cuBLAS and plain Triton
over the sweep. **Time:** about 60 minutes.

In lesson 18 the consumers stored each tile of C with 64 plain stores per thread, and their next tile's products
waited until every store had left the SM. The stores themselves are not the cost so much as the time the tensor
cores spend idle meanwhile. TMA can store a tile from shared memory on its own: the consumers write the tile once
into a shared buffer, start the store, and go on."""),
code("""import matplotlib.pyplot as plt           # the notebook's figures show inline

from gluon_course import load_checks, load_solution, load_starter
from gluon_course.display import show_diff, show_source, table
from gluon_course.grading.notebook import Lab
from gluon_course.grading.runner import check

checks = load_checks("19")          # solutions/19-*/checks.py: the lesson's checks and its compile helper
checks18 = load_checks("18")
solution = load_solution("19")
previous = load_solution("18")      # lesson 18: stores from registers
starter = load_starter("19")
lab = Lab("19")"""),
md("""## 1. What changes from lesson 18

The consumers' partition, from lesson 18's solution to your starter (the producer changes in one place, B's
coordinates, shown in section 3):"""),
code("""show_diff(previous.mma_partition, starter.mma_partition)"""),
md("""Read the end of the tile loop: `tma.store_wait(0)` waits for the *previous* tile's store (started one whole K loop
ago, so it is normally long done), the tile goes into `c_smem`, a fence, then `tma.async_store`, and the loop moves
on. One more `store_wait(0)` after the loop: the program's shared memory must outlive the last store.

The fence is there because two different paths write and read `c_smem`: the threads' own stores (the generic
proxy) and TMA (the asynchronous proxy). PTX orders them only through `fence.proxy.async`, which
`fence_async_shared()` emits. Triton 3.9.0 also runs a pass that inserts such fences where it sees the pattern
(compiled without the call, this kernel's machine code is the same); the kernel says what it needs anyway, and the
host model holds it to that.

## 2. The shared-memory budget

C's tile is 128 × 256 × 2 bytes = 64 KiB, beside the ring. Lesson 18's 4 slots of 48 KiB no longer fit in the
227 KiB a program may use; 3 do:"""),
code("""from gluon_course.machine.occupancy import SM90

slot = (128 * 64 + 64 * 256) * 2
for stages in (3, 4):
    total = stages * slot + 128 * 256 * 2
    print(f"{stages} slots: {stages} × {slot // 1024} KiB + 64 KiB = {total // 1024} KiB "
          f"{'≤' if total <= SM90.shared_per_block_max else '>'} {SM90.shared_per_block_max // 1024} KiB")"""),
md("""The `config_fits` check compiles your CONFIG and says the same on the CPU. Fewer slots cost little here: the
producer is a warp of its own and refills a slot the moment it is released, so three slots keep the tensor cores as
busy as four did (the trials in section 7 measure it).

## 3. B as N × K: the weights layout

`nn.Linear(K, N)` stores its weight as N × K, and its forward pass multiplies by the transpose: C = A·Wᵀ. A caller
hands this kernel `w.t()`, a K × N view whose rows are *not* contiguous (strides (1, K)). TMA copies tiles of `w`
itself, N × K, into slots of BLOCK_N × BLOCK_K, and the consumers view each slot transposed with
`.permute((1, 0))`: no data moves, wgmma's matrix descriptor simply says the tile is K-major. The producer's one
change:"""),
code("""show_source(solution.load_partition)"""),
md("""The machine code differs only in the producer's copies: a 256 × 64 tile of `w` is one box (64 bf16 = 128 bytes
wide already), where a 64 × 256 tile of a K × N B needed four:"""),
code("""rows = []
for b_kn, name in ((True, "B K × N"), (False, "B = w.t(), w N × K")):
    kk = checks.compiled(solution, b_kn=b_kn)
    loop = kk.opcodes_between(*kk.loop_holding("HGMMA"))
    hgmma = [i.text for i in kk.instructions() if i.opcode.startswith("HGMMA")][0]
    rows.append([name, kk.count("UTMALDG.2D"), sum(loop.values()), hgmma.split(",")[1].strip()])
table(rows, ["B", "TMA box copies per K step", "consumers' K loop", "B's operand in HGMMA"])"""),
md("""## 4. Two warpgroups: cooperative, not ping-pong

Since lesson 16 the kernel's two warpgroups split each 128 × 256 tile by rows (64 each), one accumulator of 128
registers per thread: *cooperative*. The other arrangement, *ping-pong*, gives each warpgroup tiles of its own and
lets one store its tile while the other computes. With a 128 × 256 tile per warpgroup that is a 256-register
accumulator per thread, more than a thread may have (255); halving the tile to 128 × 128 per warpgroup halves each
wgmma's width and doubles the copies per product. Here the TMA store already takes the epilogue off the consumers'
path, which is what ping-pong is for; the trial in section 7 has the 128 × 128 tile behind 128 × 256 on every shape
it was timed on.

## 5. Your turn

Two gaps: B's coordinates in the producer (both layouts), and the epilogue (wait, write, fence, store)."""),
code("""passed = check("19")"""),
md("""```{admonition} Hint 1: B's coordinates
:class: dropdown
A K × N B: `[k * BLOCK_K, pid_n * BLOCK_N]`; an N × K one: rows are N, columns K, so `[pid_n * BLOCK_N, k * BLOCK_K]`.
```

```{admonition} Hint 2: the epilogue
:class: dropdown
`tma.store_wait(0)`, `c_smem.store(acc.to(c_desc.dtype))`, `fence_async_shared()`,
`tma.async_store(c_desc, [pid_m * BLOCK_M, pid_n * BLOCK_N], c_smem)`. No mask: TMA clips the tile at C's edges.
```

```{admonition} Answer
:class: dropdown
The next cell prints the difference between lesson 18's consumers and the solution's.
```"""),
code("""show_diff(previous.mma_partition, solution.mma_partition)""", metadata={"tags": ["hide-output"]}),
md("""## 6. The machine code

C now leaves by 16 `STSM` (stmatrix: each instruction writes four 8 × 8 blocks of the accumulator to shared
memory), a proxy fence, one `UTMASTG.2D` and the bulk-group waits of `store_wait`; no `STG` at all. The kernel's
budget:"""),
code("""k = checks.compiled(solution)
epilogue = {op: n for op, n in sorted(k.opcodes().items())
            if op.startswith(("STSM", "STG", "UTMASTG", "UTMACMD", "FENCE", "DEPBAR"))}
print("epilogue instructions:", epilogue)
print(f"{k.metadata.num_warps} warps, {k.registers} registers at launch (240 for the consumers after setmaxnreg), "
      f"{k.spills} spill bytes, {k.shared_bytes} bytes of shared memory")
for ins in k.instructions():
    if ins.opcode.startswith(("UTMASTG", "FENCE.VIEW", "DEPBAR")):
        print(f"  {ins.address:#06x}  {ins.text}")"""),
md("""The host model runs the kernel with both layouts of B and checks, beside what it checked in lesson 18, that
`c_smem` is written only after the store that read it has been waited for, and fenced before TMA reads it:"""),
code("""ok = lab.machine_code()"""),
md("""## 7. Correct first, then fast

The correctness check runs both layouts of B on the odd shapes and the many-tile shapes, in a child process with a
time limit; the sanitizers as in lesson 18:"""),
code("""from gluon_course.grading.tma_gemm import PERSISTENT_SMALL, sanitizer_command

passed = lab.correctness()
print(sanitizer_command("lessons/19-gemm-v9-epilogue/starter.py", shape=PERSISTENT_SMALL))"""),
md("""Each figure is the median of 3 interleaved (kernel, cuBLAS) pairs; the sweep figures time each of the course's
seven shapes that way, against cuBLAS and against the course's plain-Triton kernel (autotuned over six
configurations), and report the geometric mean; the course's targets for v9 are a geomean of at least 1.00× cuBLAS
with no shape below 0.95×, and faster than plain Triton on every shape:"""),
code("""shown = lab.figures()"""),
code("""import math

rows = []
against_library, against_triton = shown["sweep_bf16"].details, shown["over_triton_sweep"].details
for shape, ratio in (against_library.get("ratios") or {}).items():
    rows.append([shape, f"{ratio:.2f}×", f"{against_triton.get('ratios', {}).get(shape, math.nan):.2f}×"])
if rows:
    table(rows, ["M×N×K", "v9 / cuBLAS", "v9 / plain Triton"])
else:
    print("the sweep is not recorded yet")"""),
code("""lab.versions_chart()"""),
md("""**What was tried.** The configuration was chosen on the sweep from two trials on the H200 (each figure the median
of 3 pairs; trials, not recordings):"""),
code("""import json
from pathlib import Path

from gluon_course.course import repo_root

rows = []
for name in ("nvidia-h200-2026-12-01-wgmma-tiles-and-prototypes.json", "nvidia-h200-2026-12-01-v9-tiles.json"):
    trial = json.loads((repo_root() / "results" / "trials" / name).read_text())
    for label, entry in trial["figures"].items():
        if label.startswith("v9") and "value" in entry:
            spread = entry["details"].get("spread", float("nan"))
            rows.append([label, f"{entry['value']:.3f}", f"{spread:.2f}", trial["date"]])
table(rows, ["v9 variant", "× cuBLAS (median pair)", "spread", "date"])
print("GPU:", trial["gpu"], "· Triton", trial["triton"], "· torch", trial["torch"])"""),
md("""Two things in that table are worth a second look. At 2048 × 2048 × 8192 the grid has only 128 tiles of 128 × 256
for 132 SMs, and one of the three pairs ran at half the speed of the other two (the spread column): a small
problem (0.1 ms) is the one where a pair's timing moves most, and the median of three pairs is what keeps one slow
pair out of the figure. And the narrower 128 × 128 tile, which gives that shape twice as many programs, lost to
128 × 256 there and everywhere else it was timed, so v9 keeps one configuration.

## 8. What is left

The course's Hopper GEMM stops here. What the fastest Hopper GEMMs add beyond it: thread-block clusters with TMA
multicast (two SMs share one copy of a tile of A or B), an order of tiles that follows a space-filling curve, and
for shapes with fewer tiles than SMs, splitting K across programs (split-K, stream-K). Lesson 30 asks when all of
this is worth writing by hand.

## Summary

* The epilogue through shared memory: `store_wait(0)` (the last store is done with the buffer), `c_smem.store`,
  `fence_async_shared()` (the threads' writes become visible to TMA), `tma.async_store`; one final `store_wait(0)`.
  TMA clips at C's edges: no mask.
* The store overlaps the next tile's K loop; it is waited for one tile later, when the buffer is needed again.
* C's 64 KiB tile and a 3-slot ring fit in 227 KiB; 4 slots do not.
* B as N × K (`w.t()`): TMA copies tiles of `w`, the consumers view each slot `.permute((1, 0))`; one box per tile
  instead of four.
* Cooperative warpgroups (one tile, split by rows) keep the accumulator at 128 registers per thread."""),
]
nb = nbf.v4.new_notebook(cells=cells, metadata={"kernelspec": {"display_name": "Python 3", "language": "python",
                                                               "name": "python3"},
                                                "language_info": {"name": "python"}})
nbf.write(nb, "lessons/19-gemm-v9-epilogue/lesson.ipynb")
