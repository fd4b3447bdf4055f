"""Planted mistakes of lesson 22: each must be rejected by the check whose key it names."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("16-byte copies on every target, as on gfx950: gfx942's direct-to-LDS copies move at most 4 bytes per lane, "
          "and Triton 3.9.0 refuses to lower the copy for gfx942",
          "vector_bytes=DIRECT_COPY_BYTES[target])", "vector_bytes=16)", rejected_by="loop_gfx942"),
    Plant("A's LDS buffer allocated for two stages though the loop uses one: 96 KiB of LDS, which gfx950's 160 KiB "
          "holds but an MI300X workgroup (64 KiB) cannot have",
          "a_smem = gl.allocate_shared_memory(a_ptr.dtype.element_ty, [BLOCK_M, BLOCK_K], a_shared)",
          "a_smem = gl.allocate_shared_memory(a_ptr.dtype.element_ty, [2, BLOCK_M, BLOCK_K], a_shared).index(0)",
          rejected_by="budget_gfx942"),
    Plant("other=0.0 on A's copy, as in the vendor's tutorial: correct, but in Triton 3.9.0 it makes Triton write "
          "the zeros of the masked-off lanes with a ds_write behind a branch, 8 times per step",
          "async_copy.buffer_load_to_shared(a_smem, a_ptr, a_offsets, mask=a_mask)",
          "async_copy.buffer_load_to_shared(a_smem, a_ptr, a_offsets, mask=a_mask, other=0.0)",
          rejected_by="loop_gfx950"),
    Plant("the wait for the copies is left out: the barrier alone does not wait for memory, so the tiles are read "
          "while the copies may still be on their way",
          "        async_copy.wait_group(0)\n", "",
          rejected_by="copies_waited"),
    Plant("commit_group() left out: the copies belong to no group, so wait_group(0) covers none of them (Triton "
          "3.9.0 then emits no s_waitcnt vmcnt in the loop at all) and the tiles are read while the copies may still "
          "be on their way",
          "        async_copy.commit_group()\n", "", rejected_by="host_model"),
    Plant("B's offsets advance by BLOCK_K columns instead of BLOCK_K elements of K, as if B were row-major: every "
          "step after the first multiplies by the wrong columns of B",
          "        b_offsets += BLOCK_K\n", "        b_offsets += BLOCK_K * stride_bn\n",
          rejected_by="exact_odd_shapes", gpu=True),
    Plant("B's K mask is dropped: the K tail of B is copied from beyond its columns (the next column's elements, and "
          "past B's end the NaN margin) instead of zeros",
          "b_mask = ((k + offs_bk)[:, None] < K) & (offs_bn[None, :] < N)",
          "b_mask = offs_bn[None, :] < N",
          rejected_by="exact_odd_shapes", gpu=True),
    Plant("B's offsets advance by BLOCK_K columns instead of BLOCK_K elements of K (caught on the CPU by the host "
          "model: C comes out wrong)",
          "        b_offsets += BLOCK_K\n", "        b_offsets += BLOCK_K * stride_bn\n",
          rejected_by="host_model"),
]
