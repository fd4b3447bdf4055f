"""Planted mistakes of lesson 28: each must be rejected by the check whose key it names."""
from gluon_course.grading import Plant

_BL_REGION = '''            acc_bl = cdna3.mfma(ab, bl, acc_bl, cd_regclass="a")
            async_copy.wait_group(5)
            gl.barrier()
            br = br_smem.index(s).load(b_layout)
            copy_piece(at_smem.index(s), a_ptr, at_offsets, at_rows & a_in)

            acc_tr = cdna3.mfma(at, br, acc_tr, cd_regclass="a")
            async_copy.wait_group(5)
            gl.barrier()
            bl = bl_smem.index(1 - s).load(b_layout)
            copy_piece(ab_smem.index(s), a_ptr, ab_offsets, ab_rows & a_in)
'''
_A_TOGETHER = '''            acc_bl = cdna3.mfma(ab, bl, acc_bl, cd_regclass="a")
            async_copy.wait_group(5)
            gl.barrier()
            br = br_smem.index(s).load(b_layout)
            copy_piece(at_smem.index(s), a_ptr, at_offsets, at_rows & a_in)
            copy_piece(ab_smem.index(s), a_ptr, ab_offsets, ab_rows & a_in)

            acc_tr = cdna3.mfma(at, br, acc_tr, cd_regclass="a")
            async_copy.wait_group(6)
            gl.barrier()
            bl = bl_smem.index(1 - s).load(b_layout)
'''

# Triton 3.9.0's gl.amd.warp_pipeline_stage, the step's four regions as stages: each region's MFMA one stage
# (priority 1: s_setprio 1), its wait and barrier between stages (a stage may hold neither: "barrier or wait op cannot
# appear inside a warp_pipeline_stage region"; two in a row need an empty stage between them: "multiple pre-existing
# barriers between pipeline stages; insert a dummy stage instead"), its read and copy the next (priority 0). Every
# op of the loop's body must sit in a stage, the offsets' increments too.
_REGIONS = '''            # Step i + s: tile i + s lives in buffer s (its first pieces in registers); tile i + s + 2 refills it.
            k0 = (i + s + 2) * BLOCK_K
            a_in = k0 + a_k < K
            b_in = k0 + b_k < K
            ### BEGIN SOLUTION: four regions: multiply a quadrant; wait (five groups may stay in flight) and read the piece the next region needs; copy one piece of tile i + s + 2
            # Every piece is read one region before its first use, and its buffer refilled after its last read.
            acc_tl = cdna3.mfma(at, bl, acc_tl, cd_regclass="a")
            async_copy.wait_group(5)
            gl.barrier()
            ab = ab_smem.index(s).load(a_layout)
            copy_piece(bl_smem.index(s), b_ptr, bl_offsets, b_in & bl_cols)

            acc_bl = cdna3.mfma(ab, bl, acc_bl, cd_regclass="a")
            async_copy.wait_group(5)
            gl.barrier()
            br = br_smem.index(s).load(b_layout)
            copy_piece(at_smem.index(s), a_ptr, at_offsets, at_rows & a_in)

            acc_tr = cdna3.mfma(at, br, acc_tr, cd_regclass="a")
            async_copy.wait_group(5)
            gl.barrier()
            bl = bl_smem.index(1 - s).load(b_layout)
            copy_piece(ab_smem.index(s), a_ptr, ab_offsets, ab_rows & a_in)

            acc_br = cdna3.mfma(ab, br, acc_br, cd_regclass="a")
            async_copy.wait_group(5)
            gl.barrier()
            at = at_smem.index(1 - s).load(a_layout)
            copy_piece(br_smem.index(s), b_ptr, br_offsets, b_in & br_cols)
            ### END SOLUTION
            at_offsets += BLOCK_K
            ab_offsets += BLOCK_K
            bl_offsets += BLOCK_K
            br_offsets += BLOCK_K
'''
_STAGED_REGIONS = '''            with gl.amd.warp_pipeline_stage("mfma_tl", priority=1):
                k0 = (i + s + 2) * BLOCK_K
                a_in = k0 + a_k < K
                b_in = k0 + b_k < K
                acc_tl = cdna3.mfma(at, bl, acc_tl, cd_regclass="a")
            async_copy.wait_group(5)
            with gl.amd.warp_pipeline_stage("wait_tl"):
                pass
            gl.barrier()
            with gl.amd.warp_pipeline_stage("mem_tl", priority=0):
                ab = ab_smem.index(s).load(a_layout)
                copy_piece(bl_smem.index(s), b_ptr, bl_offsets, b_in & bl_cols)
            with gl.amd.warp_pipeline_stage("mfma_bl", priority=1):
                acc_bl = cdna3.mfma(ab, bl, acc_bl, cd_regclass="a")
            async_copy.wait_group(5)
            with gl.amd.warp_pipeline_stage("wait_bl"):
                pass
            gl.barrier()
            with gl.amd.warp_pipeline_stage("mem_bl", priority=0):
                br = br_smem.index(s).load(b_layout)
                copy_piece(at_smem.index(s), a_ptr, at_offsets, at_rows & a_in)
            with gl.amd.warp_pipeline_stage("mfma_tr", priority=1):
                acc_tr = cdna3.mfma(at, br, acc_tr, cd_regclass="a")
            async_copy.wait_group(5)
            with gl.amd.warp_pipeline_stage("wait_tr"):
                pass
            gl.barrier()
            with gl.amd.warp_pipeline_stage("mem_tr", priority=0):
                bl = bl_smem.index(1 - s).load(b_layout)
                copy_piece(ab_smem.index(s), a_ptr, ab_offsets, ab_rows & a_in)
            with gl.amd.warp_pipeline_stage("mfma_br", priority=1):
                acc_br = cdna3.mfma(ab, br, acc_br, cd_regclass="a")
            async_copy.wait_group(5)
            with gl.amd.warp_pipeline_stage("wait_br"):
                pass
            gl.barrier()
            with gl.amd.warp_pipeline_stage("mem_br", priority=0):
                at = at_smem.index(1 - s).load(a_layout)
                copy_piece(br_smem.index(s), b_ptr, br_offsets, b_in & br_cols)
                at_offsets += BLOCK_K
                ab_offsets += BLOCK_K
                bl_offsets += BLOCK_K
                br_offsets += BLOCK_K
'''


PLANTS = [
    Plant("both halves of A copied in one region (as version 7 copies its A), the next wait deepened to match: "
          "correct, but 8 copies in one region and none in the next",
          _BL_REGION, _A_TOGETHER, rejected_by="region_copies"),
    Plant("the third region waits with wait_group(6): the next tile's B left half may still be in flight when it is "
          "read",
          '            acc_tr = cdna3.mfma(at, br, acc_tr, cd_regclass="a")\n            async_copy.wait_group(5)\n',
          '            acc_tr = cdna3.mfma(at, br, acc_tr, cd_regclass="a")\n            async_copy.wait_group(6)\n',
          rejected_by="host_model"),
    Plant("the same wait in the machine code: one of the loop's waits lets 24 copies stay in flight",
          '            acc_tr = cdna3.mfma(at, br, acc_tr, cd_regclass="a")\n            async_copy.wait_group(5)\n',
          '            acc_tr = cdna3.mfma(at, br, acc_tr, cd_regclass="a")\n            async_copy.wait_group(6)\n',
          rejected_by="copy_waits"),
    Plant("a scheduling wall (gl.amd.hint.sched_barrier()) after the first quadrant's MFMAs: LLVM may no longer "
          "spread the region's copies among them, and they come in a run after the MFMAs",
          '            acc_tl = cdna3.mfma(at, bl, acc_tl, cd_regclass="a")\n            async_copy.wait_group(5)\n',
          '            acc_tl = cdna3.mfma(at, bl, acc_tl, cd_regclass="a")\n            gl.amd.hint.sched_barrier()\n'
          '            async_copy.wait_group(5)\n', rejected_by="region_copies"),
    Plant("the regions as warp-pipeline stages (gl.amd.warp_pipeline_stage, MFMAs at priority 1): each stage border "
          "is a barrier of its own (24 per trip, not 8), and LLVM keeps every stage's instructions together, so a "
          "region's read and copies come in a run after its barriers, no longer among the MFMAs",
          _REGIONS, _STAGED_REGIONS, rejected_by="region_copies"),
    Plant("cd_regclass=\"a\" left off the bottom-right quadrant's MFMA only (the other three keep it): correct, but "
          "that quadrant's MFMAs accumulate in ordinary VGPRs",
          '            acc_br = cdna3.mfma(ab, br, acc_br, cd_regclass="a")\n',
          '            acc_br = cdna3.mfma(ab, br, acc_br)\n', rejected_by="agpr_accumulators"),
    Plant("the bottom-right quadrant multiplies the top half of A",
          '            acc_br = cdna3.mfma(ab, br, acc_br, cd_regclass="a")\n',
          '            acc_br = cdna3.mfma(at, br, acc_br, cd_regclass="a")\n',
          rejected_by="exact_odd_shapes", gpu=True),
]
