"""Planted mistakes of lesson 15: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    # ---- caught without a GPU ----
    Plant("lesson 14's accumulator layout kept (mma.sync's version 2): Triton 3.9.0 would stop the whole process on "
          "it, so the check refuses it first",
          "return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_N, 16])",
          "return gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[2, num_warps // 2], instr_shape=[16, 8])",
          rejected_by="wgmma_sm_90", gpu=False),
    Plant("the instruction half as wide as the tile (n = 64): twice the wgmma instructions, each with half the work",
          "instr_shape=[16, BLOCK_N, 16])", "instr_shape=[16, BLOCK_N // 2, 16])",
          rejected_by="wgmma_sm_90", gpu=False),
    Plant("the store's mask is dropped, as if TMA's zero fill also guarded the store",
          "gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)",
          "gl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty))",
          rejected_by="store_masked", gpu=False),
    # ---- caught on a GPU ----
    Plant("use_acc=False read as 'no separate accumulator': every K step overwrites acc, so C holds the last tile's "
          "product only",
          "acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc)",
          "acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc, use_acc=False)",
          rejected_by="correct_tma_shapes", gpu=True),
    Plant("acc_layout not declared gl.constexpr: the launcher passes a layout, which a real launch cannot pass as a "
          "run-time argument",
          "acc_layout: gl.constexpr, STAGES: gl.constexpr):", "acc_layout, STAGES: gl.constexpr):",
          rejected_by="wgmma_sm_90", gpu=False),
    Plant("BLOCK_K 256 in CONFIG: 3 slots of (128 × 256 + 256 × 128) × 2 bytes are 384 KiB, which no SM has (a GPU "
          "refuses the launch)",
          '"BLOCK_K": 32, "num_warps": 4, "STAGES": 3}', '"BLOCK_K": 256, "num_warps": 4, "STAGES": 3}',
          rejected_by="config_fits", gpu=False),
    Plant("use_acc=False, caught by the host model: every K step overwrites acc",
          "acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc)",
          "acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc, use_acc=False)",
          rejected_by="host_model", gpu=False),
    # ---- the Blackwell kernel (sm_100, compiled only) ----
    Plant("Blackwell: use_acc left at its default (True) on the first K step: the products add to whatever tensor "
          "memory held, since it is allocated without a value",
          "use_acc=i > 0, mbarriers=[mma_done])", "mbarriers=[mma_done])",
          rejected_by="tcgen05_sm_100", gpu=False),
    Plant("Blackwell: no wait on mma_done, as if tcgen05_mma returned with its products done: the next step's refill "
          "may overwrite a slot they still read",
          "        mbarrier.wait(mma_done, i & 1)\n", "",
          rejected_by="tcgen05_sm_100", gpu=False),
    Plant("Blackwell: mbarriers=[mma_done] left out: nothing arrives on mma_done, so its first wait never returns (on "
          "a GPU, a hang; Triton 3.9.0 emits no commit at all for this call)",
          "use_acc=i > 0, mbarriers=[mma_done])", "use_acc=i > 0)",
          rejected_by="tcgen05_sm_100", gpu=False),
    Plant("Blackwell: the TMEM layout's block kept at wgmma's 64 rows: the compiler issues twice the products per K step",
          "TensorMemoryLayout(block=(BLOCK_M, BLOCK_N), col_stride=1)", "TensorMemoryLayout(block=(64, BLOCK_N), "
          "col_stride=1)", rejected_by="tcgen05_sm_100", gpu=False),
]
