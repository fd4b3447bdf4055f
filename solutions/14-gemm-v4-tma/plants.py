"""Planted mistakes of lesson 14: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("B's tile is never asked for: only A's TMA load is issued (3 UTMALDG instead of 6; on a GPU the barrier "
          "would wait for B's bytes forever)",
          "    tma.async_load(b_desc, [tile * BLOCK_K, off_n], ready.index(slot), b_ring.index(slot), pred=pred)\n",
          "",
          rejected_by="tma_sm_90", gpu=False),
    Plant("the store's mask is dropped, as if TMA's zero fill also guarded the store",
          "gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)",
          "gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty))",
          rejected_by="store_masked", gpu=False),
    Plant("expect() is left out: TMA delivers the bytes, but the barrier never gets its one arrival, so its phase "
          "never completes and the first wait spins forever",
          "    mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)\n",
          "",
          rejected_by="correct_tma_shapes", gpu=True),
    Plant("expect() counts 4 bytes per element (the accumulator's fp32) instead of the inputs' 2: the barrier waits "
          "for twice the bytes that will ever arrive, and the kernel hangs",
          "a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)",
          "2 * (a_desc.block_type.nbytes + b_desc.block_type.nbytes), pred=pred)",
          rejected_by="correct_tma_shapes", gpu=True),
    Plant("the wait's phase starts at 1: the first trip's waits name the phase before phase 0, which counts as "
          "complete, so ldmatrix reads slots before their tiles land and refills start on barriers whose phase is "
          "still open (wrong values, or a hang)",
          "mbarrier.wait(ready.index(slot), (i // STAGES) & 1)",
          "mbarrier.wait(ready.index(slot), (i // STAGES + 1) & 1)",
          rejected_by="correct_tma_shapes", gpu=True),
    Plant("the wait's phase starts at 1, caught by the host model: the first trip's waits name a phase no copy will "
          "complete",
          "mbarrier.wait(ready.index(slot), (i // STAGES) & 1)",
          "mbarrier.wait(ready.index(slot), (i // STAGES + 1) & 1)",
          rejected_by="host_model", gpu=False),
    Plant("expect() counts A's tile only, caught by the host model: the phase completes before B's tile has landed",
          "a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)", "a_desc.block_type.nbytes, pred=pred)",
          rejected_by="host_model", gpu=False),
    Plant("B's coordinates swapped ([off_n, k] for a K × N matrix), caught by the host model: the products use the "
          "wrong tiles of B",
          "tma.async_load(b_desc, [tile * BLOCK_K, off_n]", "tma.async_load(b_desc, [off_n, tile * BLOCK_K]",
          rejected_by="host_model", gpu=False),
    Plant("B's tile is never copied, seen in RTX 50's (sm_120) machine code: 3 TMA copies where 6 were expected",
          "    tma.async_load(b_desc, [tile * BLOCK_K, off_n], ready.index(slot), b_ring.index(slot), pred=pred)\n",
          "",
          rejected_by="rtx50_sm_120", gpu=False),
]
