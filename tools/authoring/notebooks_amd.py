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
On paper the price is a second set of operand registers, as the reads of tile i + 1 may land while tile i's
operands are still in use; section 5 shows what Triton 3.9.0 makes of it.

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
MFMAs, loads and stores can use (lesson 25's `ds_read_b128`s write straight into them) but the ordinary vector
arithmetic cannot. A value in an AGPR that an address computation or a
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

# -- 28 ----------------------------------------------------------------------------------------------------------
NOTEBOOKS["28"] = [
md("""# 28 · AMD GEMM v8: slice M and N

**What you build:** version 8 of the AMD GEMM, whose tile of C is four quadrants, each multiplied in a region of its
own. **What you learn:** an order of reads and copies in which every piece is read one region before its first use
and refilled only after its last; the wait count that order implies; how to read a loop's *issue pattern* (copies
per region, the longest run of copies, the MFMAs between them). **Time:** about 50 minutes.

Version 7 copies 12 vectors per wave in one region and 4 in the next. Version 8 cuts A in two as well, so a step
copies four pieces of equal size, one per region."""),
code(SETUP + """from gluon_course.memory.layouts import register_budget

checks = load_checks("28")
solution = load_solution("28")
v7 = load_solution("27")
compiled = checks.compiled
lab = AmdLab("28")"""),
md("""## 1. Four quadrants, four regions

A's tile becomes a top and a bottom half (128 rows each), B's a left and a right half; C's tile four 128 × 128
quadrants with an accumulator each. Every region multiplies one quadrant, reads the piece the *next* region needs,
and starts the copy of one piece of the tile two steps ahead:

| region | MFMAs | reads from LDS | copies start (one group) |
|---|---|---|---|
| 0 | top-left += A_top · B_left | A_bottom | B_left |
| 1 | bottom-left += A_bottom · B_left | B_right | A_top |
| 2 | top-right += A_top · B_right | B_left of the next tile | A_bottom |
| 3 | bottom-right += A_bottom · B_right | A_top of the next tile | B_right |

Follow one piece: A_top is read in region 3 and used in regions 0 and 2 of the next step; its buffer is refilled in
region 1, after the read that emptied it. B_left is read in region 2, used in regions 0 and 1, its buffer refilled
in region 0, when its values are already in registers. Every piece is read one region before its first use, so
a region's read never writes a register its own MFMAs are still reading.

**The wait count.** The copies go in the order B_left, A_top, A_bottom, B_right, one group each, two steps ahead.
When region 0 of step t waits for A_bottom of tile t, the groups issued after it are B_right of tile t and the four
of tile t + 1: five may stay in flight, `wait_group(5)`. The same count holds in every region (the copy the
previous region issued takes the place of the group that landed). The prologue issues eight groups and waits for
the first two: `wait_group(6)`.

Registers per lane, from the layouts:"""),
code("""lay = solution.kernel_layouts()
acc = register_budget(lay["acc_layout"], [128, 128], 32).registers_per_thread
half_a = register_budget(lay["a_layout"], [128, 64], 16).registers_per_thread
half_b = register_budget(lay["b_layout"], [64, 128], 16).registers_per_thread
table([["four accumulators, 128 × 128 fp32 each", 4 * acc], ["a half of A, this one and the next", 2 * half_a],
       ["a half of B, this one and the next", 2 * half_b], ["total", 4 * acc + 2 * half_a + 2 * half_b]],
      ["what", "registers per lane"])"""),
md("""## 2. Exercise: the four regions

One gap: the four regions of a step, `cd_regclass="a"` on each MFMA. `copy_piece` (one commit group), the prologue
and the last two tiles are given:"""),
code("""starter = load_starter("28")
show_source(starter.copy_piece)
show_source(starter.matmul_kernel)"""),
code("""passed = check("28")"""),
md("""```{admonition} Hint 1: one region
:class: dropdown
Region 0: `acc_tl = cdna3.mfma(at, bl, acc_tl, cd_regclass="a")`; `async_copy.wait_group(5)`; `gl.barrier()`;
`ab = ab_smem.index(s).load(a_layout)`; `copy_piece(bl_smem.index(s), b_ptr, bl_offsets, b_in & bl_cols)`.
```

```{admonition} Hint 2: the other three
:class: dropdown
Region 1 multiplies `ab, bl` into `acc_bl`, reads `br` from buffer `s`, copies A_top (`at_rows & a_in`). Region 2
multiplies `at, br` into `acc_tr`, reads the next `bl` from buffer `1 - s`, copies A_bottom. Region 3 multiplies
`ab, br` into `acc_br`, reads the next `at` from buffer `1 - s`, copies B_right. Every wait is `wait_group(5)`.
```

### Solution"""),
answer("""show_source(solution.matmul_kernel)"""),
md("""## 3. What changed from version 7"""),
code("""show_diff(v7.matmul_kernel, solution.matmul_kernel)"""),
md("""## 4. The issue pattern

Cut at its barriers, version 7's loop has four regions and version 8's eight (two steps per trip). How many copies
each region issues, the longest run of copies with no MFMA between them, and the MFMAs between one copy and the
next, in loop order:"""),
code("""k7, k8 = compiled(v7, "gfx950", "fp16"), compiled(solution, "gfx950", "fp16")
for name, k in (("v7", k7), ("v8", k8)):
    gaps = amdgcn.mfmas_between(k)
    print(f"{name}: copies per region {[r['buffer load → LDS'] for r in amdgcn.regions(k)]}; longest run of copies "
          f"{amd_gemm.longest_burst(gaps)}; MFMAs between copies {gaps}")
fig = amd_charts.issue_chart({"v7 (lesson 27)": (k7, 2), "v8": (k8, 2)}, "The K loop in issue order, per K step, gfx950 fp16 (Triton 3.9.0)")"""),
md("""In version 7, A's 8 copies go out back to back; in version 8 no more than two copies ever follow each other
without an MFMA, and each region's four copies sit among its MFMAs. The waits and the budget:"""),
code("""print("v8's waits:", ", ".join(f"vmcnt({n})" for n in amdgcn.loop_vmcnts(k8)))
print("v8's prologue: {} copies, first read after vmcnt({})".format(*amd_gemm.prologue_facts(k8)))
for name, k in (("v7", k7), ("v8", k8)):
    b = amdgcn.budget(k, 4)
    print(f"{name}: {b.vgprs} VGPRs ({b.arch_vgprs} arch + {b.agprs} AGPR), {b.lds_bytes} bytes of LDS, "
          f"{b.scratch_bytes} bytes of scratch, {amdgcn.instruction_mix(k)['AGPR move']} moves in the loop")"""),
md("""Five groups of 4 copies stay in flight at every wait (`vmcnt(20)`). The registers fall from 452 to 428 (172 arch +
256 AGPR): less than the 64 of the tables, which count every piece with its successor on paper (an upper bound;
the allocator reuses a register as soon as its value is dead), where the listing says what was allocated.

## 5. On an MI355X

AMD's version 8: 1257 TFLOPS and 69.0% MFMA efficiency in the base configuration, 1360 (88.7%) with their
scheduler plugin, 1408 (97.8%) with the plugin and their AGPR switch, 1391 (98.5%) with their assembly
post-processor as well. Their analysis of why spreading the copies matters: every copy passes through the CU's
32 KB vector L1 (the TCP) and a queue of about a dozen requests in front of it; version 7's 16 copies per wave in
two neighbouring regions fill both at large K, and the copies stall; version 8's four per region leave the memory
time to answer. The model is theirs and their traces show it; Triton 3.9.0's loop above keeps the same spread.
On a ROCm machine with an MI350 or MI355:"""),
code("""correct = lab.correctness()"""),
code("""lab.figures()"""),
md("""## Summary

* Slicing M and N: four quadrants, four regions per step, each multiplying one quadrant, reading the next region's
  piece and copying one piece two steps ahead; 384 registers on paper.
* The order B_left, A_top, A_bottom, B_right makes every piece's read come one region before its use:
  `wait_group(5)` everywhere (`vmcnt(20)`), `wait_group(6)` in the prologue (`vmcnt(24)`).
* 4 copies per region, never more than 2 in a row without an MFMA (version 7: 12 and 4, runs of 8); 428 VGPRs,
  no scratch, no moves between the register files.
* The vendor's version 8: 1257 TFLOPS base; 1391-1408 with tools Triton 3.9.0 does not have."""),
]

# -- 29 ----------------------------------------------------------------------------------------------------------
NOTEBOOKS["29"] = [
md("""# 29 · AMD GEMM v9: XCD-aware order

**What you build:** version 9 of the AMD GEMM: version 8's kernel with one change outside the loop, the tile each
workgroup computes. **What you learn:** how an MI300/MI350 hands workgroups to its eight dies (XCDs), why
neighbouring tiles should land on one die, the arithmetic that remaps workgroup ids to do so, and an estimate of
what it saves in the dies' L2 caches. **Time:** about 45 minutes.

An MI355X is eight XCDs of 32 CUs, each XCD with its own 4 MB L2 cache. The hardware hands out workgroups round
robin in the order of their ids: workgroup 0 to XCD 0, 1 to XCD 1, …, 8 to XCD 0 again. Tiles of C in the same row
read the same rows of A; tiles in the same column the same columns of B. In row-major order neighbouring tiles get
consecutive ids, so they land on eight different XCDs, and each XCD's L2 fetches its own copy of what they
share."""),
code(SETUP + """from gluon_course.model import xcd
from gluon_course.model.run import patched

checks = load_checks("29")
solution = load_solution("29")
v8 = load_solution("28")
compiled = checks.compiled
lab = AmdLab("29")"""),
md("""## 1. Who computes which tile

Four orders on the 16 × 16 tiles of a 4096 × 4096 C (256 tiles: one wave of 256 workgroups, one per CU), each tile
coloured by the XCD that computes it. Above each: the rows of A and columns of B that XCD 0 reads. *Grouped* is
lesson 17's order (GROUP_M = 4 rows of tiles at a time, column by column); *XCD remap* gives each XCD a contiguous run
of tile numbers; version 9 does both:"""),
code("""grouped, xcd_tile, tile_of = patched(solution.grouped_tile), patched(solution.xcd_tile), patched(solution.tile_of)
ORDERS = {
    "row-major (v8)": lambda pid, m, n: (pid // n, pid % n),
    "grouped only": lambda pid, m, n: grouped(pid, m, n, 4),
    "XCD remap, row-major": lambda pid, m, n: tile_of(pid, m, n, 1, 8),
    "XCD remap + grouped (v9)": lambda pid, m, n: tile_of(pid, m, n, 4, 8),
}
fig = amd_charts.xcd_map(ORDERS, 16, 16, "16 × 16 tiles of C, coloured by XCD (round-robin dispatch of workgroup ids)")"""),
md("""In row-major order XCD 0 gets one tile in eight: every row of tiles, two columns, 16 + 2 = 18 strips of A and B.
Remapping alone gives it two whole rows, 2 + 16 = 18 again. Remapped and grouped, its 32 tiles are a 4 × 8 block:
4 + 8 = 12. (Grouped order alone also reaches 12 on this grid: within a group of 4 rows, every eighth tile falls in
the same row and in 8 of the 16 columns.)

## 2. The remap arithmetic

XCD `x` runs workgroups `x, x + 8, x + 16, …`; its j-th workgroup (`j = pid // 8`) should get tile number
`first(x) + j`, so that the XCD's tiles are one contiguous run. With T tiles, `per = ⌈T / 8⌉`; when 8 does not
divide T, the first `tall = T − (per − 1) · 8` XCDs get `per` tiles and the others `per − 1`, so every XCD after the
tall ones starts one tile earlier than `x · per` for each short XCD before it:
`first(x) = x · per − max(x − tall, 0)`. For 25 tiles (5 × 5):"""),
code("""T = 25
rows, cols = xcd.workgroup_tiles(lambda pid, m, n: (xcd_tile(pid, m * n, 8), 0 * pid), 5, 5)
tiles_of = {x: [int(t) for w, t in enumerate(rows) if w % 8 == x] for x in range(8)}
table([[x, len(t), t[0], t] for x, t in tiles_of.items()], ["XCD", "tiles", "first", "tile numbers"])"""),
md("""## 3. Exercise: the remap

One gap: `xcd_tile`, workgroup id → tile number. `grouped_tile` (lesson 17's) and `tile_of`, which chains them, are
given. The check runs your function on the host for nine grids of tiles, against the round-robin dispatch: every tile
exactly once, and on 16 × 16 and 32 × 32 tiles at most 12 strips of A and B per XCD."""),
code("""starter = load_starter("29")
show_source(starter.xcd_tile)
show_source(starter.tile_of)"""),
code("""passed = check("29")"""),
md("""```{admonition} Hint 1: the pieces
:class: dropdown
`xcd = pid % NUM_XCDS`, `local = pid // NUM_XCDS`, `per_xcd = gl.cdiv(num_tiles, NUM_XCDS)`; the function returns
`first + local`.
```

```{admonition} Hint 2: the uneven split
:class: dropdown
`tall = num_tiles - (per_xcd - 1) * NUM_XCDS` (8 when the tiles divide evenly), then
`first = xcd * per_xcd - gl.maximum(xcd - tall, 0)`. Computing `tall` as `num_tiles % NUM_XCDS` gives 0 when they
divide evenly: the check finds two workgroups on one tile.
```

### Solution"""),
answer("""show_source(solution.xcd_tile)"""),
md("""## 4. What changed from version 8

Only the first lines of the kernel, and its two new constexprs:"""),
code("""show_diff(v8.matmul_kernel, solution.matmul_kernel)
k8, k9 = amd_gemm.compiled(v8, "gfx950", "fp16"), compiled(solution, "gfx950", "fp16")
print("the K loop, v8 and v9:", "the same" if amd_gemm.loop_memory(k8) == amd_gemm.loop_memory(k9) else "different",
      amd_gemm.loop_memory(k9))"""),
md("""## 5. What the L2 caches fetch: an estimate

`model.xcd.l2_fill_bytes` adds up, for each wave of 256 resident workgroups and each XCD, the strips of A (256 rows
× K) and B (K × 256 columns) its tiles read, as if each XCD's L2 fetched each strip once per wave and nothing
survived from one wave to the next (its docstring says why that is a fair first guess). fp16, K = 8192:"""),
code("""rows_ = []
for m, n in ((16, 16), (32, 32)):
    for name, fn in ORDERS.items():
        r, c = xcd.workgroup_tiles(fn, m, n)
        rows_.append([f"{m * 256}² ({m}×{n} tiles)", name, xcd.most_strips(r, c),
                      f"{xcd.l2_fill_bytes(r, c, 8192, 256, 256) / 2**20:.0f} MiB"])
table(rows_, ["C", "order", "strips per XCD and wave (most)", "L2 fill, A and B (model)"])"""),
md("""At 4096² the model has version 9's order fetch two thirds of what row-major order fetches (384 MiB against 576).
AMD measured the L2's requests to memory (their counter `TCC_EA0_RDREQ_DRAM_sum`, MI355, 4096 × 4096 × 8192 fp16):
5 282 502 for version 8 in row-major order, 6 070 335 for the remap without grouping, 4 100 918 for version 9 with
GROUP_M = 4, a 22% cut. The model gets the direction of version 9 right and its size roughly; it says the remap
without grouping costs the same as row-major, where AMD's counter found it worse: the model knows nothing of
timing, MALL or the order in which a wave's workgroups really start. At 8192² it finds row-major order as good as
version 9 (a wave of 256 workgroups is then 8 rows × 32 columns of tiles, and round robin hands each XCD 8 rows × 4
columns): the remap's gain depends on the shape.

## 6. The padded LDS layouts, from Triton

Version 9's LDS layouts are lesson 23's padding, computed by `cdna4.compute_efficient_padded_shared_layout` for the
operand layout that reads them, for a half of A and a half of B:"""),
code("""lay = solution.kernel_layouts()
for name in ("a_shared", "b_shared"):
    print(name, "intervals and paddings:", lay[name].interval_padding_pairs, "shape:", lay[name].shape)
print("LDS per workgroup:", amdgcn.budget(k9, 4).lds_bytes, "bytes")"""),
md("""## 7. On an MI355X

AMD's version 9: 1290 TFLOPS and 69.2% MFMA efficiency in the base configuration (version 8: 1257); 1380 (88.4%)
with their scheduler plugin, 1423 (97.5%) with their AGPR switch as well, 1421 (98.7%) with their assembly
post-processor too. Their write-up puts the gain on power: fewer L2 misses, less traffic off the die, a higher
sustained clock. On a ROCm machine with an MI350 or MI355:"""),
code("""correct = lab.correctness()"""),
code("""lab.figures()"""),
md("""## 8. The two roads

The course's NVIDIA GEMM (lessons 10-19, on an H200) and this AMD GEMM (lessons 20-29, on gfx950) took ten steps
each. [Two vendors, side by side](../../book/comparison.md) puts them next to each other, step by step: which ideas
are the same under two names, and which are one vendor's alone.

## Summary

* The hardware hands workgroup w to XCD w % 8; a kernel chooses which tile each id computes.
* `xcd_tile`: XCD x's j-th workgroup gets tile `x · per − max(x − tall, 0) + j`; then lesson 17's grouped order.
  Checked on the host against the dispatch: every tile once on nine grids, 12 strips per XCD on 16 × 16 and 32 × 32
  tiles.
* The model's L2 estimate at 4096² × 8192: 576 MiB row-major, 384 MiB version 9; AMD's counters: −22% misses.
* Version 8's loop unchanged; the vendor's version 9: 1290 TFLOPS base, 1421-1423 with tools Triton 3.9.0 lacks."""),
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
