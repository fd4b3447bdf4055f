"""Planted mistakes of lesson 17: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    # ---- caught without a GPU ----
    Plant("the tile loop steps by 1: every program walks from its first tile to the last, so most tiles are computed "
          "by many programs (right answer, many times the work)",
          "for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):",
          "for tile in range(gl.program_id(0), num_pid_m * num_pid_n, 1):",
          rejected_by="persistent_loop", gpu=False),
    Plant("the barriers are set up again for every tile (lesson 16's habit): re-initialising a barrier while copies "
          "may be in flight for it is undefined",
          "        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)\n",
          "        for s in gl.static_range(STAGES):\n"
          "            mbarrier.init(ready.index(s), count=1)\n"
          "        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)\n",
          rejected_by="ring_set_up_once", gpu=False),
    Plant("the K loop waits for every group (warpgroup_mma_wait(0)), and the tile's last wait keeps depth 0: the "
          "kernel still has one wait of each place, but the loop's is lesson 15's synchronous one",
          "acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b_ring.index(slot)))",
          "acc, _, _ = warpgroup_mma_wait(0, deps=(acc, a_ring.index(slot), b_ring.index(slot)))",
          rejected_by="pipeline_sm_90", gpu=False),
    # ---- caught on a GPU ----
    Plant("the phase counts the tile's own K steps, not the program's: from the second tile on, a wait names a phase "
          "its barrier has already completed (or not yet begun)",
          "mbarrier.wait(ready.index(slot), ((step + i) // STAGES) & 1)",
          "mbarrier.wait(ready.index(slot), (i // STAGES) & 1)",
          rejected_by="correct_tma_shapes", gpu=True),
    Plant("the step count is never advanced: every tile restarts at slot 0 and phase 0 of barriers that have moved on",
          "        step += k_tiles\n", "",
          rejected_by="correct_tma_shapes", gpu=True),
    Plant("grouped order with the rows and columns of a group swapped: some tiles of C are never visited",
          "    pid_m = first_pid_m + (tile % tiles_per_group) % group_rows\n"
          "    pid_n = (tile % tiles_per_group) // group_rows\n",
          "    pid_m = first_pid_m + (tile % tiles_per_group) // num_pid_n\n"
          "    pid_n = (tile % tiles_per_group) // group_rows\n",
          rejected_by="correct_tma_shapes", gpu=True),
    Plant("GROUP_M not declared gl.constexpr in the kernel: the launcher passes a Python int that a real launch would "
          "turn into a run-time value, which grouped_tile's constexpr parameter cannot take",
          "acc_layout: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr):",
          "acc_layout: gl.constexpr, STAGES: gl.constexpr, GROUP_M):",
          rejected_by="pipeline_sm_90", gpu=False),
    Plant("a grouped order that visits some tiles twice and others never (columns counted in pairs), caught on the host",
          "    pid_n = (tile % tiles_per_group) // group_rows\n",
          "    pid_n = (tile % tiles_per_group) // (2 * group_rows)\n",
          rejected_by="grouped_order", gpu=False),
    Plant("the phase counts the tile's own K steps, caught by the host model: from the second tile on a wait names a "
          "phase its barrier has already passed",
          "mbarrier.wait(ready.index(slot), ((step + i) // STAGES) & 1)",
          "mbarrier.wait(ready.index(slot), (i // STAGES) & 1)",
          rejected_by="host_model", gpu=False),
]
