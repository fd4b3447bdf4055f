"""Writes lessons/18-gemm-v8-warp-specialized/lesson.ipynb (its cells; outputs come from executing it)."""
import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
cells = [
md("""# 18 · GEMM v8: warp specialization

**What you build:** lesson 17's persistent kernel split into two *partitions* that run at the same time: one warp
that only copies (the producer) and two warpgroups that only multiply (the consumers), talking through a pair of
mbarriers per ring slot. **What you learn:** `gl.warp_specialize`, the ready/empty barrier protocol and its phase
parities, register reallocation between partitions (`setmaxnreg`), how to read each partition in the machine
code, and what the partitions become on Blackwell (the last section). **Time:** about 60 minutes.

In lesson 17 the same eight warps did everything in turn. Every K step they waited for a tile, started the
products, waited for the previous step's products, and only then issued the next copies: the copies could never
run further ahead than the ring allowed *after* that wait. At the end of each tile they stored C, and only then
started filling the ring for the next tile, so the tensor cores waited at the start of every tile. A warp that
does nothing but copy removes both: it runs ahead as far as the ring has free slots, into the next tile too,
while the consumers finish and store this one."""),
code("""import matplotlib.pyplot as plt           # the notebook's figures (and the toolkit's pictures) show inline

from gluon_course import load_checks, load_solution, load_starter
from gluon_course.display import show_diff, show_source, table
from gluon_course.grading.notebook import Lab
from gluon_course.grading.runner import check

checks = load_checks("18")          # solutions/18-*/checks.py: the lesson's checks and its compile helper
checks17 = load_checks("17")
solution = load_solution("18")
previous = load_solution("17")      # lesson 17: one partition does everything
starter = load_starter("18")
lab = Lab("18")"""),
md("""## 1. One kernel, two partitions

`gl.warp_specialize([(f, args), (g, args), ...], worker_num_warps, worker_num_regs)` runs `f` on the kernel's own
warps (the *default* partition) and each further function on warps of its own (*workers*): here `mma_partition` on
the 8 warps the launch asks for, and `load_partition` on one more warp. Everything both need is allocated before
the fork: the ring, and now two barriers per slot. The kernel itself is short:"""),
code("""show_source(starter.matmul_kernel)"""),
md("""The producer walks the same tiles and K steps as the consumers, in the same order, and keeps the same `step`
count, so slot `step % STAGES` and trip `step // STAGES` mean the same thing on both sides:

* **ready[s]** (as in lessons 14–17): the producer's `expect()` is its one arrival, and the phase completes when the
  copies' bytes have landed. The consumers wait on it with parity `trip & 1`.
* **empty[s]** (new): one arrival from the consumers when they no longer read slot s. The producer waits on it
  before it copies into the slot again: trip `r` needs the release of trip `r − 1`, phase `r − 1`, so the parity is
  `(r − 1) & 1 = (r & 1) ^ 1`. On the first trip that names the phase "before phase 0", which a fresh barrier counts
  as complete: the producer's first pass round the ring does not wait."""),
code("""show_source(starter.load_partition)
show_source(starter.mma_partition)"""),
md("""## 2. The protocol, step by step

Here is the order in which the host model (below) runs lesson 18's solution on one small problem: four slots, both
partitions taking turns at their waits. Each bar is one K step's tiles in a slot: the copy in flight, landed, then
read by the products until the wait that retires them. The producer is three slots ahead of the consumers from the
start, and a slot's next copy starts only after the consumers released it:"""),
code("""from gluon_course.pictures import barrier_figure, barrier_history, ring_picture, ring_trace, show

show(ring_picture("18"))"""),
md("""And one `empty` barrier across two trips round the ring: the consumers' release completes a phase, and the producer's
wait names the phase before the one it needs next:"""),
code("""rows = barrier_history(ring_trace("18"), "empty[0]")
show(barrier_figure(rows, "lesson 18: empty[0], the consumers' releases of slot 0"))"""),
md("""## 3. Your turn

Three gaps: the producer's K step (wait for the release, announce the bytes, start both copies), the consumers'
release of the slot the *previous* step read, and the fork itself. Predict first: what would happen if the
consumers released this step's slot instead of the previous one? (The host model's answer is in the hints.)"""),
code("""passed = check("18")"""),
md("""```{admonition} Hint 1: the producer
:class: dropdown
Lesson 17's `load_tiles` body, with one line before it: `mbarrier.wait(empty.index(slot), ((step // STAGES) & 1) ^ 1)`.
```

```{admonition} Hint 2: the release
:class: dropdown
After `warpgroup_mma_wait(1, ...)` only the current step's group may still run, so the previous step's slot,
`(step + STAGES - 1) % STAGES`, is free; on the first K step of a tile there is nothing to release (`pred=k > 0`).
Releasing `slot` itself lets the producer overwrite tiles the running products still read: the host model says
"a TMA copy overwrites a_ring[…] while a wgmma group that may still be reading it".
```

```{admonition} Hint 3: the fork
:class: dropdown
`gl.warp_specialize([(mma_partition, (...)), (load_partition, (...))], [1], [LOAD_REGS])`: the consumers first (the
default partition), then one worker of 1 warp with `LOAD_REGS` registers.
```

```{admonition} Answer
:class: dropdown
The next cell prints the solution's three functions.
```"""),
code("""show_source(solution.load_partition)
show_source(solution.mma_partition)
show_source(solution.matmul_kernel)""", metadata={"tags": ["hide-output"]}),
md("""## 4. The machine code

**Registers move between partitions.** The launch asks for 12 warps: the 8 consumers and the producer's warpgroup
(`setmaxnreg`, SASS `USETMAXREG`, works on whole warpgroups, so the one producer warp comes with three idle ones).
Each partition then resizes its register file:"""),
code("""k = checks.compiled(solution)
print(f"{k.metadata.num_warps} warps launched, {k.registers} registers each at launch")
for ins in k.instructions():
    if ins.opcode.startswith("USETMAXREG"):
        print(f"  {ins.address:#06x}  {ins.text}")
consumers, producer_group = 240 * 8 * 32, 24 * 3 * 32 + 40 * 32
print(f"consumers 8 warps × 240 = {consumers}, producer's warpgroup 3 × 24 + 1 × 40 (× 32 lanes) = {producer_group}, "
      f"together {consumers + producer_group} of the SM's 65536")"""),
md("""`TRY_ALLOC 0xf0` is the consumers' 240; `DEALLOC 0x18` takes the producer's warpgroup down to 24 and `TRY_ALLOC 0x28`
gives its working warp 40, the `LOAD_REGS` of CONFIG. A 128 × 256 accumulator over two warpgroups is 128 fp32
registers per thread before anything else; 240 leaves room for the rest without spilling.

**The consumers' loop holds the products and two barrier operations, and no copy.** Side by side with lesson 17's
K loop:"""),
code("""rows = []
for name, module, chk in (("v7: one partition", previous, checks17), ("v8: the consumers", solution, checks)):
    kk = chk.compiled(module)
    loop = kk.opcodes_between(*kk.loop_holding("HGMMA"))
    pick = lambda *p: sum(n for op, n in loop.items() if op.startswith(p))
    rows.append([name, sum(loop.values()), pick("HGMMA"), pick("UTMALDG"), pick("SYNCS.ARRIVE.TRANS64") - pick("SYNCS.ARRIVE.TRANS64.A1T0"),
                 pick("SYNCS.PHASECHK"), pick("SYNCS.ARRIVE.TRANS64.A1T0")])
table(rows, ["K loop", "instructions", "HGMMA", "TMA copies", "expect", "barrier waits", "releases"])"""),
md("""The release is one `SYNCS.ARRIVE.TRANS64.A1T0` issued by one elected thread after a barrier among the 256 consumer
threads (`BAR.SYNC 0x0, 0x100`): the compiler makes sure both warpgroups are past their wait before the slot is
handed back, so `mbarrier.init(empty, count=1)` is right for a partition of 8 warps.

**The producer's copies.** Per K step the producer issues 5 TMA box copies: A's 128 × 64 tile in one box, and B's
64 × 256 tile in four of 64 columns (a box with 128-byte swizzling is at most 128 bytes, 64 bf16, wide). In lessons
16 and 17 four of the eight warps issued one B box each; here the one producer warp issues all five:"""),
code("""for ins in k.instructions():
    if ins.opcode.startswith(("UTMALDG", "SYNCS.ARRIVE.TRANS64 ")) or ins.text.startswith(("@!P0 SYNCS.ARRIVE.TRANS64 ",)):
        print(f"  {ins.address:#06x}  {ins.text}")"""),
md("""## 5. What the host model checks

The `host_model` check runs your kernel's own Python code on the CPU with numpy, both partitions taking turns at
their waits (the model lets a partition run the moment another's arrive unblocks it, the most hostile order for a
release that comes too early), and checks C exactly, every read after the wait that covers its copy, no slot
overwritten while an asynchronous read may still use it, and that every wait can be satisfied (both partitions
waiting for each other is reported as the hang it would be). It is not a GPU: copies land as soon as their phase
can complete, and layouts are ignored; it proves protocol mistakes and wrong numbers, not speed. A mistake it
rejects, the consumers releasing the slot they are still reading:"""),
code("""from gluon_course.course import load_module_file, load_plants
import pathlib, tempfile

plant = next(p for p in load_plants("18") if p.mistake.startswith("the release names this step"))
planted = pathlib.Path(tempfile.mkdtemp()) / "planted.py"
planted.write_text(solution.__loader__.get_source(solution.__name__).replace(plant.old, plant.new))
print(plant.mistake)
print("→", checks.model(load_module_file(planted)))"""),
md("""## 6. Correct first, then fast

The correctness checks are lesson 17's (odd shapes, shapes with more tiles than programs, every launch in a child
process with a time limit: a producer and consumers waiting for each other hang, and the child is killed), and
the three sanitizers on a launch with 2 programs of 3 tiles each. To run a sanitizer by hand, from the repository's
root:"""),
code("""from gluon_course.grading.tma_gemm import PERSISTENT_SMALL, sanitizer_command

passed = lab.correctness()
print(sanitizer_command("lessons/18-gemm-v8-warp-specialized/starter.py", shape=PERSISTENT_SMALL))"""),
md("""Then the speed. Each figure is the median of 3 interleaved (kernel, cuBLAS) pairs timed in this process; lesson 17's
kernel is timed at the same tile, and the sweep is the course's seven shapes, against cuBLAS and against the
course's plain-Triton kernel:"""),
code("""shown = lab.figures()"""),
code("""lab.versions_chart()"""),
md("""## 7. What is left

The consumers still store C from their registers with plain stores (`STG`), 64 of them per thread per tile, and the
next tile's products wait until every store has left. Lesson 19 writes C's tile to shared memory and hands it to
TMA, which stores it while the consumers go on with the next tile.

## Summary

* `gl.warp_specialize` forks a kernel into partitions on different warps: here 8 consumer warps (the default
  partition) and 1 producer warp, padded to a warpgroup.
* Two barriers per ring slot: `ready` (the producer's expect and bytes) and `empty` (the consumers' release). Both
  sides count the same steps; the producer waits on `empty` with parity `(trip & 1) ^ 1`, so its first trip passes.
* A slot is released only after the wait that retires the products reading it: the previous step's slot, after
  `warpgroup_mma_wait(1)`; the tile's last slot after the final wait.
* `worker_num_regs` gives the producer few registers (`USETMAXREG`), so the consumers may take 240.
* In the machine code: the consumers' K loop has no TMA copy, no expect and much less arithmetic than lesson 17's."""),
md("""## What changes on Blackwell

On Blackwell (sm_100) a product is not the business of whole warpgroups any more (lesson 15's last section):
`tcgen05_mma` is issued by one thread, returns at once, and accumulates in tensor memory (TMEM). So this lesson's
consumers split into two partitions with different jobs:

* an **MMA partition** of one warp that only issues `tcgen05_mma`. It never waits for its products: each call names
  `empty[slot]` in `mbarriers=`, so the tensor cores themselves release the slot to the producer once the products
  that read it are done. After a tile's last K step, `tcgen05_commit(acc_ready)` arrives on `acc_ready` once every
  product issued so far is done.
* the **epilogue**, the default partition on the kernel's 8 warps: it waits on `acc_ready`, reads the tile out of
  tensor memory into registers (`acc_tmem.load`, in the layout `acc_tmem.get_reg_layout()` gives), hands tensor
  memory back on `acc_empty`, and stores C.

The producer is this lesson's `load_partition`, unchanged (Blackwell's `mbarrier` and `tma` are Hopper's): the one you
write in gap 1, which is why `check("18")` reports the sm_100 checks with that gap. `solution.py` ends with the
kernel, `blackwell_matmul_kernel`. **Not measured: there is no Blackwell GPU here.** The kernel has been
compiled for sm_100 and its machine code read, never run; it has no launcher, and nothing below claims a speed."""),
code("""show_source(solution.blackwell_mma_partition)
show_source(solution.blackwell_epilogue_partition)
show_source(solution.blackwell_matmul_kernel)"""),
md("""Four kinds of barrier now, each with one arrival per phase; trip or tile `r` of a partition waits with the parity shown:

| barrier | who arrives | who waits | parity |
|---|---|---|---|
| `ready[s]` | the producer (`expect`, then TMA's bytes) | the MMA warp | `r & 1` |
| `empty[s]` | the tensor cores, when the products that read slot s are done (`mbarriers=`) | the producer | `(r & 1) ^ 1` |
| `acc_ready` | the tensor cores, when a tile's products are all done (`tcgen05_commit`) | the epilogue | `r & 1` |
| `acc_empty` | the epilogue, once the tile is in its registers | the MMA warp | `(r & 1) ^ 1` |

There is one accumulator: the MMA warp starts a tile only once the epilogue has read the last one out of tensor
memory, but it does not wait for the stores (section 7: on Hopper the consumers start a tile only after storing the
last). Tensor memory has room for two 128 × 256 fp32 accumulators (it is 128 lanes × 512 columns of 32 bits, and
Triton's launcher allows a program 512 columns), which would let the MMA warp start a tile while the epilogue still
reads the last one; this kernel, the smallest version, does not.

The machine code on sm_100 (bf16), the MMA warp's K loop and the epilogue's loop:"""),
code("""from gluon_course import blackwell

kb = checks.blackwell_compiled(solution)
print(f"{kb.metadata.num_warps} warps launched, {kb.registers} registers each, "
      f"{kb.count_matching('USETMAXREG')} USETMAXREG, {blackwell.tmem_columns(kb)} TMEM columns allocated")
first, last = blackwell.mma_loop(kb)
print("the MMA warp's K loop:")
blackwell.show(kb, (first, last), prefixes=("SYNCS", "UTC"))
loop = kb.opcodes_between(first, last)
print(f"  ({sum(loop.values())} instructions, {sum(n for op, n in loop.items() if op.startswith('U'))} of them "
      "uniform: U…, done once for the warp)")
print("the epilogue's loop, without its 16 stores:")
blackwell.show(kb, kb.loop_holding("LDTM"), prefixes=("SYNCS", "LDTM", "BAR"))"""),
md("""* The MMA warp's loop is the wait for the slot (`SYNCS.PHASECHK`), four `UTCHMMA` (tcgen05.mma: all 128 rows and 256
  columns of the tile, 16 of K each) and one `UTCBAR`: the `tcgen05.commit` that `mbarriers=[empty.index(slot)]`
  adds, an arrival on `empty[slot]` once the products are done. That is the release: no wait for the products, no
  barrier among threads, no arrive by a thread (on Hopper: `WARPGROUP.DEPBAR.LE`, then `BAR.SYNC` among the 256
  consumer threads, then `SYNCS.ARRIVE.TRANS64.A1T0`). The first `UTCHMMA` takes a predicate as its accumulate flag
  (`use_acc=k > 0`), the other three `UPT`, always true. A second `UTCBAR` after the loop is
  `tcgen05_commit(acc_ready)`.
* The products name no register: `tmem[UR…]` is the accumulator's address in tensor memory. What the MMA warp
  computes is addresses and counters, most of it in uniform (U…) instructions.
* The epilogue waits on `acc_ready`, reads its 128 × 256 tile with one `LDTM.x128` (tcgen05.ld: 128 registers per
  thread, 8 warps × 32 threads × 128 = 32768 values), and only then arrives on `acc_empty` (after a `BAR.SYNC` among
  its 256 threads, as the consumers' release on Hopper).
* No `USETMAXREG`: no partition holds the accumulator while the products run, so no registers are moved between
  partitions (`worker_num_regs` is not given). Every warp has the 149 registers the compiler gave; on Hopper the
  consumers raised theirs to 240.

Side by side with this lesson's consumers (sm_90):"""),
code("""kh = checks.compiled(solution)
table(blackwell.compare(kh, kh.loop_holding("HGMMA"), kb, (first, last)),
      ["", "sm_90: the consumers' K loop", "sm_100: the MMA warp's K loop"])"""),
md("""What changes from the Hopper step, in short:

* **No `warpgroup_mma_wait`:** completion comes by mbarrier. The tensor cores arrive on `empty[s]` and `acc_ready`
  themselves (`mbarriers=`, `tcgen05_commit`); nobody waits for a product to release a slot.
* **The accumulator lives in tensor memory, not in registers:** 256 of its 512 columns, allocated before the fork
  and read back by the epilogue only.
* **The register budget is freed:** no `setmaxnreg`, and no partition needs 240 registers; the 128 per thread that
  hold C exist only in the epilogue, after `acc_ready`.
* **One thread issues the products:** one warp does all the multiplying, and the default partition's 8 warps only
  store.

The checks `tcgen05_partitions_sm_100`, `tcgen05_mma_loop_sm_100`, `tcgen05_epilogue_sm_100` and
`tcgen05_resources_sm_100` hold this machine code to the counts above, and four planted mistakes (no `mbarriers=`, no
`tcgen05_commit`, `use_acc` left at True, the epilogue arriving before it reads) are each rejected by one of them.
Whether it is correct and how fast it is on a B200 is **not known here: it has never run**."""),
]

if __name__ == "__main__":
    nb = nbf.v4.new_notebook(cells=cells, metadata={"kernelspec": {"display_name": "Python 3", "language": "python",
                                                                   "name": "python3"},
                                                    "language_info": {"name": "python"}})
    nbf.write(nb, "lessons/18-gemm-v8-warp-specialized/lesson.ipynb")
