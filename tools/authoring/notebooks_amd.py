"""Writes the notebooks of lessons 25-29 (AMD GEMM v5-v9): their cells; outputs come from executing them.

    python tools/authoring/notebooks_amd.py 25 26      # rewrite those (all five without arguments)
"""
import sys
from pathlib import Path

import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
ROOT = Path(__file__).resolve().parents[2]


def answer(source: str):
    """A cell that shows the solution: its output folded on the website."""
    return nbf.v4.new_code_cell(source, metadata={"tags": ["hide-output"]})


SETUP = """import matplotlib.pyplot as plt           # the notebook's figures show inline

from gluon_course import load_checks, load_solution, load_starter
from gluon_course.display import show_diff, show_source, table
from gluon_course.grading import amd_charts, amd_gemm
from gluon_course.grading.amd_gemm import AmdLab
from gluon_course.grading.runner import check
from gluon_course.machine import amdgcn
"""

NOTEBOOKS = {}

# -- 25 ----------------------------------------------------------------------------------------------------------
NOTEBOOKS["25"] = [
md("""# 25 · AMD GEMM v5: local prefetch

**What you build:** version 5 of the AMD GEMM, which reads the next tile from LDS into registers while it multiplies
this one. **What you learn:** a three-stage pipeline (global memory → LDS → registers → MFMA), where the one wait of
the step goes, and how to read the *order* of a K loop in the listing. **Time:** about 45 minutes.

In version 4 each step waits for tile i's copies, reads tile i from LDS (32 `ds_read_b128` per wave) and only then
multiplies it: every MFMA of the step waits for the read that brings its operands. The copies of the next tile were
moved a step ahead in lesson 24; this lesson does the same for the reads."""),
code(SETUP + """
checks = load_checks("25")
solution = load_solution("25")
v4 = load_solution("24")
compiled = checks.compiled
lab = AmdLab("25")"""),
md("""## 1. Three tiles in flight

The operands of tile i are already in registers when step i begins, read at the end of step i − 1. So the step:

1. multiplies tile i from registers (`acc = cdna3.mfma(a, b, acc)`): no wait, the MFMAs can start at once;
2. waits for tile i + 1's copies (`wait_group(0)`: theirs is the only group in flight), then a barrier: every wave's
   copies have landed, and every wave is done reading buffer `i % 2`, which held tile i;
3. starts copying tile i + 2 into buffer `i % 2`. Tile i is still being multiplied, but from registers: its buffer is
   free;
4. reads tile i + 1 from buffer `(i + 1) % 2` into `a, b`, for the next step.

The prologue starts tiles 0 and 1 and reads tile 0 (after `wait_group(1)`: tile 1's group stays in flight); after
the loop the last tile, already in registers, is multiplied. For a K of 4 tiles:"""),
code("""rows = [["prologue", "-", "0 → buffer 0, 1 → buffer 1", "0 (after wait_group(1))"]]
for i in range(3):
    note = " (past K: zeros)" if i + 2 >= 4 else ""
    rows.append([f"i = {i}", f"tile {i}", f"{i + 2} → buffer {i % 2}{note}", f"{i + 1} (buffer {(i + 1) % 2})"])
rows.append(["after the loop", "tile 3", "-", "-"])
table(rows, ["step", "MFMAs multiply", "copies start (tile → buffer)", "read into registers (tile)"])"""),
md("""At every step one tile is in the MFMAs, one is on its way from LDS to registers, one from global memory to LDS.
The price is a second set of operand registers: the reads of tile i + 1 land while tile i's operands are still in
use.

## 2. Exercise: the prologue's wait and the step

Two gaps: the end of the prologue (wait for tile 0 only, read it into `a, b`) and the body of the loop (the four
things above, in that order). The masks of tile i + 2 are given:"""),
code("""starter = load_starter("25")
show_source(starter.matmul_kernel)"""),
code("""passed = check("25")"""),
md("""```{admonition} Hint 1: the prologue
:class: dropdown
`async_copy.wait_group(1)`, `gl.barrier()`, then `a = a_smem.index(0).load(a_layout)` and the same for `b`.
```

```{admonition} Hint 2: the step
:class: dropdown
`acc = cdna3.mfma(a, b, acc)`; `async_copy.wait_group(0)`; `gl.barrier()`; the two copies into `a_smem.index(i % 2)`
and `b_smem.index(i % 2)` with `a_mask` and `b_mask`; `async_copy.commit_group()`; then
`a = a_smem.index((i + 1) % 2).load(a_layout)` and the same for `b`.
```

```{admonition} Hint 3: a prefetch that waits for the wrong group
:class: dropdown
With only tile i + 1's group in flight, `wait_group(1)` waits for nothing: the step would read tile i + 1 while its
copies may still be on their way. The host model (the check `host_model`) says so in one sentence, and the machine
code shows it too: the loop's wait becomes `s_waitcnt vmcnt(16)` instead of `vmcnt(0)`.
```

### Solution"""),
answer("""show_source(solution.matmul_kernel)"""),
md("""## 3. What changed from version 4"""),
code("""show_diff(v4.matmul_kernel, solution.matmul_kernel)"""),
md("""## 4. The order of the loop

`amdgcn.issue_string` writes the K loop as runs of what each instruction does: `M` an MFMA, `R` an LDS read, `C` a
copy into LDS, `|` a barrier, `a` a move between the register files, `w vmcnt(n)` a wait on memory, `B` a branch
(everything else left out). Version 4, then version 5:"""),
code("""k4, k5 = compiled(v4, "gfx950", "fp16"), compiled(solution, "gfx950", "fp16")
for name, k in (("v4", k4), ("v5", k5)):
    print(f"{name}: {amdgcn.issue_string(amdgcn.main_loop(k).instructions)}\\n")"""),
md("""Version 4 copies, waits (`vmcnt(16)`: the next tile's copies stay in flight), reads the whole tile, and then
multiplies it, each MFMA behind a wait for its own reads (`s_waitcnt lgkmcnt(n)`, not shown in the string). Version 5 starts with MFMAs, waits for the copies (`vmcnt(0)`) after
a few of them, issues the copies of tile i + 2 between MFMAs, and reads tile i + 1 last: the 32 reads land straight
in the registers the next step's MFMAs read. The same, as strips (one bar per instruction):"""),
code("""fig = amd_charts.issue_chart({"v4 (lesson 24)": k4, "v5": k5}, "The K loop in issue order, gfx950 fp16 (Triton 3.9.0)")"""),
md("""The checks read these facts off the listing: the first of each kind of work, in order; the loop's waits; the
prologue's copies and its wait:"""),
code("""kinds = ["MFMA", "LDS read", "buffer load → LDS", "barrier", "vmcnt(0)", "vmcnt(16)"]
for name, k in (("v4", k4), ("v5", k5)):
    print(f"{name}: first {' → '.join(amdgcn.first_order(k, kinds))}; the loop waits with "
          + ", ".join(f"vmcnt({n})" for n in amdgcn.loop_vmcnts(k)))
copies, vmcnt = amd_gemm.prologue_facts(k5)
print(f"v5's prologue: {copies} copies into LDS, the first LDS read after vmcnt({vmcnt})")"""),
md("""A detail worth knowing: the `gl.barrier()` calls are what Triton would insert by itself. Its pass that orders
accesses to shared memory places an `s_barrier` wherever a wave's LDS access could race with another wave's; the
course's tests compile this solution with its barriers removed and find the same K loop, instruction for
instruction. The course writes them anyway, so that the kernel says what it relies on.

## 5. Registers and LDS"""),
code("""rows = {"v4 (lesson 24)": amdgcn.instruction_mix(k4), "v5": amdgcn.instruction_mix(k5)}
table(amd_gemm.mix_table(rows), ["category"] + list(rows))
for name, k in (("v4", k4), ("v5", k5)):
    b = amdgcn.budget(k, 4)
    print(f"{name}: {b.vgprs} VGPRs ({b.arch_vgprs} arch + {b.agprs} AGPR), {b.lds_bytes} bytes of LDS, "
          f"{b.scratch_bytes} bytes of scratch; {b.occupancy}")"""),
md("""The LDS is version 4's (two stages). The registers went *down*, 470 → 446: the second set of operands costs
nothing here, because the reads are issued after the last MFMA of the step and land in the very registers those
MFMAs read. The loop lost 6 of its waits and 39 of its moves between the register files.

The K loop from version 0 on:"""),
code("""history = amd_gemm.mixes(["20", "21", "22", "23", "24", "25"])
fig = amd_gemm.mix_chart(history, "The K loop of versions 0-5, gfx950 fp16 (Triton 3.9.0)", highlight="v5 local prefetch")"""),
md("""## 6. On an MI355X

AMD's version 5 reached 1128 TFLOPS, hardly more than version 4's 1123, with the MFMA pipe busy 58.4% of the time
in their traces. Their reading: the reads and the copies still come in clusters, and while a cluster issues no
MFMA runs. With their LLVM IR scheduler, an LLVM pass plugin of theirs that interleaves the reads and copies with
the MFMAs, version 5 reached 1228 TFLOPS and 79.9%. Triton 3.9.0 ships no such plugin: the strip above is what it
produces, copies already spread among the MFMAs, the 32 reads together at the end. On a ROCm machine with an MI350
or MI355:"""),
code("""correct = lab.correctness()"""),
code("""lab.figures()"""),
md("""## Summary

* Local prefetch: tile i + 1 is read from LDS into registers during step i; the step's MFMAs start on registers
  read the step before. Three tiles in flight: MFMA, LDS → registers, global memory → LDS.
* One wait per step, `wait_group(0)` → `s_waitcnt vmcnt(0)`, after the first MFMAs and before the copies of tile
  i + 2; the prologue waits with `vmcnt(16)` (tile 1 in flight).
* 446 VGPRs (version 4: 470), 135 104 bytes of LDS, nothing spilled: in Triton 3.9.0 the reads land where the next
  MFMAs read.
* The vendor's version 5: 1128 TFLOPS base, 1228 with their scheduler plugin (not in Triton 3.9.0)."""),
]

# -- 26 ----------------------------------------------------------------------------------------------------------
NOTEBOOKS["26"] = [
md("""# 26 · AMD GEMM v6: unroll ×2

**What you build:** version 6 of the AMD GEMM, whose K loop does two steps per trip with two sets of operand
registers used in turn. **What you learn:** why a prefetch into the registers in use can force copies, how an unroll
removes them by construction, what a lane's 512 registers hold, and how to read an allocation that has run out of
room. **Time:** about 40 minutes.

In AMD's version 5, compiled with their own instruction scheduler (an LLVM pass plugin of theirs), the reads of
tile i + 1 are spread among tile i's MFMAs. They then cannot land in the registers those MFMAs are reading, and
every step ends with a block of copies (`v_accvgpr_mov`) into the registers the next step reads. Unrolling the loop
by two removes the copies: the two steps of a trip read into two different sets of registers, and each step
multiplies the set the other filled."""),
code(SETUP + """from gluon_course.memory.layouts import register_budget

checks = load_checks("26")
solution = load_solution("26")
v5 = load_solution("25")
compiled = checks.compiled
lab = AmdLab("26")"""),
md("""## 1. Two sets of registers

One trip of the loop is two steps; tile t still lives in LDS buffer `t % 2`, so each step's buffers are constants:

| step | MFMAs multiply | reads into | copies start |
|---|---|---|---|
| i (even) | `a, b` (tile i) | `a_odd, b_odd` ← tile i + 1 (buffer 1) | tile i + 2 → buffer 0 |
| i + 1 | `a_odd, b_odd` (tile i + 1) | `a, b` ← tile i + 2 (buffer 0) | tile i + 3 → buffer 1 |

The tiles come in pairs: when K has an odd number of tiles, the count is rounded up with one tile past the end of
K, whose copies are masked off, so one step multiplies zeros. The last pair is multiplied after the loop.

What must fit in a lane at once, from the layouts themselves (registers per lane):"""),
code("""acc_layout, a_layout, b_layout = (solution.kernel_layouts()[n] for n in ("acc_layout", "a_layout", "b_layout"))
acc = register_budget(acc_layout, [256, 256], 32).registers_per_thread
a = register_budget(a_layout, [256, 64], 16).registers_per_thread
b = register_budget(b_layout, [64, 256], 16).registers_per_thread
table([["accumulator, 256 × 256 fp32", acc], ["A's tile, 256 × 64 fp16 (one set)", a], ["B's tile, 64 × 256 fp16 (one set)", b],
       ["two sets of operands and the accumulator", 2 * (a + b) + acc]], ["what", "registers per lane"])"""),
md("""Exactly the 512 registers a lane has on gfx950 when one wave runs per SIMD (256 ordinary VGPRs and 256 AGPRs),
before a single address, mask or loop counter. Version 5 had the same two sets on paper; in Triton 3.9.0 its reads
come after the step's last MFMA, so they land in the very registers those MFMAs read (lesson 25), and one set was
enough.

## 2. Exercise: the unrolled trip

One gap: the two steps of a trip. Everything around it (the prologue of lesson 25, the pair count, the last pair
after the loop) is given:"""),
code("""starter = load_starter("26")
show_source(starter.matmul_kernel)"""),
code("""passed = check("26")"""),
md("""```{admonition} Hint 1: the first step
:class: dropdown
`acc = cdna3.mfma(a, b, acc)`; `async_copy.wait_group(0)`; `gl.barrier()`; copy tile i + 2 (at `k_next = (i + 2) *
BLOCK_K`) into `a_smem.index(0)` and `b_smem.index(0)`; `async_copy.commit_group()`; `a_odd =
a_smem.index(1).load(a_layout)`, the same for `b_odd`; advance the offsets by `BLOCK_K`.
```

```{admonition} Hint 2: the second step
:class: dropdown
The same with the roles swapped: multiply `a_odd, b_odd`; copy tile i + 3 into buffer 1; read buffer 0 into `a, b`.
```

### Solution"""),
answer("""show_source(solution.matmul_kernel)"""),
md("""## 3. What changed from version 5"""),
code("""show_diff(v5.matmul_kernel, solution.matmul_kernel)"""),
md("""## 4. The wall

The budgets of versions 5 and 6, and of one of this lesson's planted mistakes, an unroll whose odd steps
accumulate into an accumulator of their own (two 256 × 256 accumulators live at once):"""),
code("""k5, k6 = compiled(v5, "gfx950", "fp16"), compiled(solution, "gfx950", "fp16")
two_accumulators = compiled(amd_gemm.planted("26", "budget_gfx950"), "gfx950", "fp16")
budgets = {"v5 (lesson 25)": amdgcn.budget(k5, 4), "v6": amdgcn.budget(k6, 4),
           "v6, two accumulators (a plant)": amdgcn.budget(two_accumulators, 4)}
for name, b in budgets.items():
    print(f"{name}: {b.vgprs} VGPRs ({b.arch_vgprs} arch + {b.agprs} AGPR), {b.scratch_bytes} bytes of scratch per "
          f"lane, {b.vgpr_spills} VGPRs spilled")
fig = amd_charts.register_chart(budgets, "Registers per lane, gfx950 fp16 (Triton 3.9.0)")"""),
md("""Version 6 takes all 512 and spills nothing; the plant spills (`scratch_store` / `scratch_load` in the loop, the
check `budget_gfx950` rejects it). Where did version 6 find room? The loop moves values between the two register
files where version 5 hardly did:"""),
code("""rows = {"v5": amdgcn.instruction_mix(k5), "v6 (two K steps)": amdgcn.instruction_mix(k6),
        "v6, two accumulators": amdgcn.instruction_mix(two_accumulators)}
table(amd_gemm.mix_table(rows), ["category"] + list(rows))
loop = amdgcn.main_loop(k6).instructions
first = next(i for i, ins in enumerate(loop) if ins.opcode.startswith("v_accvgpr"))
print("\\n".join(ins.text for ins in loop[first:first + 9]))"""),
md("""The allocator has parked values the loop updates in AGPRs: each update reads one into an ordinary register
(`v_accvgpr_read_b32`), adds 128 to it (`0x80`: 128 bytes, one K step of 64 fp16 elements, the step of the copies'
byte offsets), and writes it back. Which file holds what, for the loop's MFMAs (D = A·B + C; `v` an ordinary VGPR,
`a` an AGPR):"""),
code("""for name, k in (("v5", k5), ("v6", k6)):
    print(name, dict(amdgcn.mfma_register_files(k)))"""),
md("""In version 6 every A operand and nearly every B operand sits in AGPRs, and the accumulators are split between
the files (172 of the 256 MFMAs accumulate in ordinary VGPRs): Triton 3.9.0 leaves the choice to LLVM unless it is
told otherwise, which lesson 27 does.

The strips of both loops, per K step:"""),
code("""fig = amd_charts.issue_chart({"v5 (lesson 25)": k5, "v6": (k6, 2)}, "The K loop in issue order, gfx950 fp16 (Triton 3.9.0)")"""),
md("""## 5. On an MI355X

AMD's version 6 is slower than their version 5 in the base configuration: 1055 TFLOPS and 56.4% MFMA efficiency
(version 5: 1128); their chart shows 1167 TFLOPS with their scheduler plugin. Their write-up of this version blames
the registers: on an earlier build of their Triton, with the scheduler, the unrolled kernel took all 512 VGPRs and
spilled 99 of them into scratch, some inside the loop (346 TFLOPS then). Triton 3.9.0, without that plugin, spills
nothing here (the budget above): it fits the kernel into exactly 512 by parking values in the AGPRs, and the loop
pays in moves instead. Either way the design leaves no room, and the next version makes room by design. On a ROCm
machine with an MI350 or MI355:"""),
code("""correct = lab.correctness()"""),
code("""lab.figures()"""),
md("""## Summary

* Unrolling by two alternates two sets of operand registers: no copy between steps, by construction; constant LDS
  buffer indices in each step.
* Two sets of A and B (2 × 128) plus the 256-register accumulator: 512, the whole register file of a lane.
* Triton 3.9.0: 512 VGPRs (256 arch + 256 AGPR), no scratch, 97 moves between the register files in the loop
  (version 5: 3); an odd step accumulating into a second accumulator spills.
* The vendor's version 6: 1055 TFLOPS base (below version 5), 1167 with their scheduler plugin."""),
]

# -- 27 ----------------------------------------------------------------------------------------------------------
NOTEBOOKS["27"] = [
md("""# 27 · AMD GEMM v7: slice N, accumulators in AGPRs

**What you build:** version 7 of the AMD GEMM, which cuts the tile of C into a left and a right half and keeps both
accumulators in the accumulation registers. **What you learn:** slicing a tile so that less must be live at once;
the two register files of a CDNA lane and `cd_regclass`; one commit group per piece, and the wait counts that
follow from their order. **Time:** about 60 minutes.

Version 6 needs, on paper, all 512 registers of a lane before any address or counter, and Triton 3.9.0 makes it fit
by parking values in the AGPRs and moving them back and forth in the loop. Version 7 makes room by design."""),
code(SETUP + """from gluon_course.memory.layouts import register_budget

checks = load_checks("27")
solution = load_solution("27")
v6 = load_solution("26")
compiled = checks.compiled
lab = AmdLab("27")"""),
md("""## 1. Two halves of B, two regions per step

The 256 × 256 tile of C becomes two 256 × 128 halves, `acc_left` and `acc_right`, and B's 64 × 256 tile two
64 × 128 halves, each with its own LDS buffers and its own commit group. A step is two *regions*:

| region | MFMAs | then waits for | reads from LDS | copies start (one group) |
|---|---|---|---|---|
| left | `acc_left += A · B_left` | this tile's right half | B_right | A and B_left of the tile two steps ahead |
| right | `acc_right += A · B_right` | the next tile's A and left half | A, B_left (next tile) | B_right of the tile two steps ahead |

Only one half of B is in registers at a time: the right half is read while the left half is multiplied, and the
next left half while the right half is. From the layouts (registers per lane):"""),
code("""lay = solution.kernel_layouts()
acc = register_budget(lay["acc_layout"], [256, 128], 32).registers_per_thread
a = register_budget(lay["a_layout"], [256, 64], 16).registers_per_thread
half_b = register_budget(lay["b_layout"], [64, 128], 16).registers_per_thread
table([["two accumulators, 256 × 128 fp32 each", 2 * acc], ["A's tile, this one and the next", 2 * a],
       ["a half of B, this one and the next", 2 * half_b], ["total", 2 * acc + 2 * a + 2 * half_b]],
      ["what", "registers per lane"])"""),
md("""448 instead of 512: 64 registers of room.

**The wait counts.** Each step issues two groups: X (A and the left half) in the left region, Y (the right half) in
the right region, for the tile two steps ahead. When the left region of step t waits for Y(t), the groups issued
after it are X(t + 1) and Y(t + 1): two may stay in flight, `wait_group(2)`. When the right region waits for
X(t + 1), the groups after it are Y(t + 1) and the X(t + 2) the left region just issued: two again. The prologue
issues four groups and waits for the first: `wait_group(3)`.

## 2. Two register files

A lane of a CDNA3 or CDNA4 SIMD running one wave has 512 registers in two files of 256: the ordinary VGPRs
(`v0`…`v255`), which every vector instruction reads and writes, and the accumulation registers (`a0`…`a255`), which
MFMAs can read and write but the ordinary arithmetic cannot. A value in an AGPR that an address computation or a
conversion needs must first be copied out (`v_accvgpr_read`), and back (`v_accvgpr_write`): lesson 26's loop did
that 97 times. `cdna3.mfma(a, b, acc, cd_regclass="a")` tells Triton to keep the MFMA's accumulator input (C) and
result (D) in AGPRs (Triton 3.9.0's docstring calls it experimental); the operands then live in the ordinary VGPRs.

## 3. Exercise: the two regions

One gap: the left and the right region of a step, `cd_regclass="a"` on both MFMAs. `copy_a_and_left` and
`copy_right` (one commit group each) and the epilogue (the last two tiles, waits counting down to 0) are given:"""),
code("""starter = load_starter("27")
show_source(starter.copy_a_and_left)
show_source(starter.copy_right)
show_source(starter.matmul_kernel)"""),
code("""passed = check("27")"""),
md("""```{admonition} Hint 1: the left region
:class: dropdown
`acc_left = cdna3.mfma(a, bl, acc_left, cd_regclass="a")`; `async_copy.wait_group(2)`; `gl.barrier()`;
`br = br_smem.index(s).load(b_layout)`; then `copy_a_and_left(a_smem.index(s), bl_smem.index(s), a_ptr, b_ptr,
a_offsets, bl_offsets, a_rows, bl_cols, a_k, b_k, k0, K)`.
```

```{admonition} Hint 2: the right region
:class: dropdown
`acc_right = cdna3.mfma(a, br, acc_right, cd_regclass="a")`; `async_copy.wait_group(2)`; `gl.barrier()`; read the
next tile's `a` and `bl` from buffer `1 - s`; `copy_right(br_smem.index(s), b_ptr, br_offsets, br_cols, b_k, k0, K)`.
```

### Solution"""),
answer("""show_source(solution.matmul_kernel)"""),
md("""## 4. What changed from version 6"""),
code("""show_diff(v6.matmul_kernel, solution.matmul_kernel)"""),
md("""## 5. The registers

Version 6, version 7 without `cd_regclass` (every `, cd_regclass="a"` removed) and version 7: where the MFMAs keep
their accumulators and operands (D = A·B + C; `v` an ordinary VGPR, `a` an AGPR), the loop's moves between the
files, and the budget:"""),
code("""k6, k7 = compiled(v6, "gfx950", "fp16"), compiled(solution, "gfx950", "fp16")
no_regclass = amd_gemm.solution_variant("27", ', cd_regclass="a")', ")", "no_regclass")
k7v = compiled(no_regclass, "gfx950", "fp16")
budgets = {}
for name, k in (("v6 (lesson 26)", k6), ("v7 without cd_regclass", k7v), ("v7", k7)):
    b = budgets[name] = amdgcn.budget(k, 4)
    print(f"{name}: MFMAs by (D, A, B, C) file {dict(amdgcn.mfma_register_files(k))}; "
          f"{amdgcn.instruction_mix(k)['AGPR move']} moves in the loop; {b.vgprs} VGPRs ({b.arch_vgprs} arch + "
          f"{b.agprs} AGPR), {b.scratch_bytes} bytes of scratch")
fig = amd_charts.register_chart(budgets, "Registers per lane, gfx950 fp16 (Triton 3.9.0)")"""),
md("""Slicing alone leaves the allocator its habit (operands in AGPRs, accumulators wherever they fit) and the loop
still moves values between the files; with `cd_regclass="a"` every accumulator is in an AGPR, every operand in a
VGPR, and the loop moves nothing. The 256 AGPRs hold exactly the two accumulators.

The vendor's way to the same end was a switch of their own: with `TRITON_FORCE_MFMA_AGPR` set, their launcher
passes LLVM's function attribute `amdgpu-agpr-alloc=256`, and their Triton adds the LLVM option
`amdgpu-mfma-vgpr-form=0`. Triton 3.9.0 has no such switch, but it does accept LLVM function attributes
(`llvm_fn_attrs`, marked experimental). Given that attribute alone, the version without `cd_regclass` compiles to
the same registers and moves:"""),
code("""from gluon_course.machine import compile_cached

sig = amd_gemm.signature("fp16")
k_attr = compile_cached(no_regclass.matmul_kernel, "gfx950", signature=sig, aligned=tuple(sig), num_warps=4,
                        constexprs={**amd_gemm.TILE, **no_regclass.kernel_layouts("gfx950")},
                        llvm_fn_attrs="amdgpu-agpr-alloc=256")
b = amdgcn.budget(k_attr, 4)
print(f"without cd_regclass, llvm_fn_attrs='amdgpu-agpr-alloc=256': {amdgcn.instruction_mix(k_attr)['AGPR move']} "
      f"moves in the loop; {b.vgprs} VGPRs ({b.arch_vgprs} arch + {b.agprs} AGPR)")"""),
md("""## 6. The regions in the listing

The loop now has a barrier per region, and its waits are those of section 1: the two groups left in flight are
always one of 12 copies per wave (A and a left half) and one of 4 (a right half), 16 in all:"""),
code("""print("copies into LDS per region:", [r["buffer load → LDS"] for r in amdgcn.regions(k7)])
print("the loop's waits:", ", ".join(f"vmcnt({n})" for n in amdgcn.loop_vmcnts(k7)))
print("prologue:", "{} copies, first read after vmcnt({})".format(*amd_gemm.prologue_facts(k7)))
fig = amd_charts.issue_chart({"v6 (lesson 26)": (k6, 2), "v7": (k7, 2)}, "The K loop in issue order, per K step, gfx950 fp16 (Triton 3.9.0)")"""),
md("""The left region copies 12 vectors per wave (8 for A's tile, 4 for the left half), the right region 4: lesson 28
evens that out.

## 7. On an MI355X

AMD's version 7 is their first big step after version 4: 1233 TFLOPS and 65.0% MFMA efficiency in the base
configuration (version 6: 1055). With their scheduler plugin 1329 (84.9%); with the plugin and their switch that
forces every accumulator into AGPRs 1395 (97.3%); with their assembly post-processor as well 1384 (98.3%). Triton
3.9.0 has neither the plugin, the switch nor the post-processor; what it has, `cd_regclass="a"`, gives the loop
above, without a move between the files. On a ROCm machine with an MI350 or MI355:"""),
code("""correct = lab.correctness()"""),
code("""lab.figures()"""),
md("""## Summary

* Slicing N: two halves of B and two accumulators, two regions per step; only one half of B in registers at a time:
  448 registers on paper instead of 512.
* One commit group per piece and the waits that follow from their order: `wait_group(2)` in both regions
  (`vmcnt(16)`), `wait_group(3)` in the prologue (`vmcnt(20)`).
* `cd_regclass="a"`: the accumulators in the 256 AGPRs, the operands in VGPRs, no `v_accvgpr_*` in the loop (107
  without it); 452 VGPRs (194 arch + 256 AGPR), no scratch.
* The vendor's version 7: 1233 TFLOPS base; 1384-1395 with tools Triton 3.9.0 does not have."""),
]


def write(number: str) -> Path:
    folder = next((ROOT / "lessons").glob(f"{number}-*"))
    nb = nbf.v4.new_notebook()
    nb.cells = NOTEBOOKS[number]
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    path = folder / "lesson.ipynb"
    nbf.write(nb, path)
    return path


if __name__ == "__main__":
    for number in sys.argv[1:] or sorted(NOTEBOOKS):
        print("wrote", write(number))
