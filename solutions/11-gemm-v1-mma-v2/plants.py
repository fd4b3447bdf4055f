"""Planted mistakes of lesson 11: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("k_width counted in bytes, not elements: 8 consecutive K per thread, and with BLOCK_K = 32 some registers "
          "hold copies",
          "k_width = K_BYTES_PER_THREAD // element_bytes", "k_width = K_BYTES_PER_THREAD",
          rejected_by="operand_layouts", gpu=False),
    Plant("k_width counted in 32-bit registers (2): still correct, but A's loads shrink to 4 bytes (32 × LDG.E)",
          "k_width = K_BYTES_PER_THREAD // element_bytes", "k_width = K_BYTES_PER_THREAD // 4",
          rejected_by="loads_sm_90", gpu=False),
    Plant("lesson 10's upcast kept: fp32 operands make mma_v2 a TF32 product (64 × HMMA.1688.F32.TF32), not bf16",
          "acc = mma_v2(a, b, acc)", "acc = mma_v2(a.to(gl.float32), b.to(gl.float32), acc)",
          rejected_by="mma_sm_90", gpu=False),
    Plant("the K tail is not masked: the last K-step reads past the end of A's rows and of B",
          "        a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)\n"
          "        b_mask = ((k + offs_bk)[:, None] < K) & (offs_bn[None, :] < N)\n",
          "        a_mask = (offs_am[:, None] < M) & (offs_ak[None, :] >= 0)\n"
          "        b_mask = (offs_bk[:, None] >= 0) & (offs_bn[None, :] < N)\n",
          rejected_by="exact_odd_shapes", gpu=True),
    Plant("A's K mask forgets the K step's offset (it masks the first tile's columns at every step), caught by the "
          "host model: the last K step reads past the end of A's rows",
          "a_mask = (offs_am[:, None] < M) & ((k + offs_ak)[None, :] < K)",
          "a_mask = (offs_am[:, None] < M) & (offs_ak[None, :] < K)",
          rejected_by="host_model", gpu=False),
    Plant("k_width counted in 32-bit registers (2), seen in Ada's (sm_89) machine code: 4-byte loads of A",
          "k_width = K_BYTES_PER_THREAD // element_bytes", "k_width = K_BYTES_PER_THREAD // 4",
          rejected_by="mma_sm_89", gpu=False),
]
