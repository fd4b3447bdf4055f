"""Planted mistakes of lesson 13: each must be rejected by the check whose key it names."""
from gluon_course.grading import Plant

PLANTS = [
    Plant("the prologue starts only STAGES-2 tiles: the prefetch distance is one short, and tile STAGES-2 is never "
          "copied",
          "for s in gl.static_range(STAGES - 1):", "for s in gl.static_range(STAGES - 2):",
          rejected_by="pipeline_sm_90"),
    Plant("the loop waits for every group (wait_group(0)): correct, but each tile's copies are waited for before "
          "any work, as in lesson 12",
          "async_copy.wait_group(STAGES - 2)", "async_copy.wait_group(0)",
          rejected_by="wait_depth_sm_90"),
    # Whether the early read returns wrong numbers depends on timing (small shapes often get away with it);
    # racecheck sees the ldmatrix read racing the cp.async write every time.
    Plant("the loop waits one group too few (wait_group(STAGES - 1)): tile i is read before its copies land",
          "async_copy.wait_group(STAGES - 2)", "async_copy.wait_group(STAGES - 1)",
          rejected_by="sanitizer_clean", gpu=True),
    Plant("the ring index is off by one: the tensor cores read slot (i + 1) % STAGES, a tile still in flight",
          "slot = i % STAGES", "slot = (i + 1) % STAGES",
          rejected_by="exact_odd_shapes", gpu=True),
    Plant("the prefetch overwrites the slot being read: tile i + STAGES - 1 is copied into slot i % STAGES",
          "slot_next = (i + STAGES - 1) % STAGES", "slot_next = i % STAGES",
          rejected_by="exact_odd_shapes", gpu=True),
    Plant("STAGES not declared gl.constexpr: a real launch would pass it as a run-time value, and the ring's shape "
          "[STAGES, ...] would not be a constant",
          "STAGES: gl.constexpr, ASYNC_COPY: gl.constexpr):", "STAGES, ASYNC_COPY: gl.constexpr):",
          rejected_by="pipeline_sm_90", gpu=False),
    Plant("a ring of 8 slots in CONFIG: 8 × 16 KiB of tiles is 128 KiB, fine, but with BLOCK_K 128 it is 512 KiB, "
          "more than an SM has",
          '"BLOCK_K": 32, "num_warps": 4, "warps_m": 2, "STAGES": 3}', '"BLOCK_K": 128, "num_warps": 4, "warps_m": 2, "STAGES": 8}',
          rejected_by="config_fits", gpu=False),
    Plant("the loop waits one group too few (wait_group(STAGES - 1)), caught by the host model: ldmatrix reads a slot "
          "whose copy may still be in flight",
          "async_copy.wait_group(STAGES - 2)", "async_copy.wait_group(STAGES - 1)",
          rejected_by="host_model", gpu=False),
    Plant("the prologue starts only STAGES-2 tiles, seen in an RTX 30 / A10's (sm_86) machine code: copies missing",
          "for s in gl.static_range(STAGES - 1):", "for s in gl.static_range(STAGES - 2):",
          rejected_by="ring_sm_86", gpu=False),
]
