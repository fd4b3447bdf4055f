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
    Plant("cd_regclass=\"a\" left off the bottom-right quadrant's MFMA only (the other three keep it): correct, but "
          "that quadrant's MFMAs accumulate in ordinary VGPRs",
          '            acc_br = cdna3.mfma(ab, br, acc_br, cd_regclass="a")\n',
          '            acc_br = cdna3.mfma(ab, br, acc_br)\n', rejected_by="agpr_accumulators"),
    Plant("the bottom-right quadrant multiplies the top half of A",
          '            acc_br = cdna3.mfma(ab, br, acc_br, cd_regclass="a")\n',
          '            acc_br = cdna3.mfma(at, br, acc_br, cd_regclass="a")\n',
          rejected_by="exact_odd_shapes", gpu=True),
]
