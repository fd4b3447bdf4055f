"""AMD's side of the toolkit: everything only the AMD lessons (20 on) use, in one place.

- ``layouts``     the MFMA instruction of each target and its layouts, the tiles' copy layouts, the LDS layouts
                  (plain, swizzled, padded) and the direct-to-LDS copy layouts
- ``launch``      the launchers' rules: the arguments' contract, the refusal of a GPU the kernels are not written
                  for, the tiles the layouts cover, ``launch_gemm`` (the direct-to-LDS launcher in one call)
- ``amdgcn``      the AMDGCN listing read by basic block and by LLVM's loop comments: the K loop, its instruction mix,
                  waits, regions, the register and LDS budget
- ``time_model``  the K loop issued on a CPU as one wave would, against the rates and queues of the units it shares
                  (each constant with its source): clocks per K step and the MFMA pipe's busy share
- ``kernel``      a version compiled as the headline launch sees it, and the facts the checks read off it
- ``checks``      the checks that need no GPU, built from a lesson's table of expected facts (the host model's too)
- ``gpu_checks``  the checks of the live path: C exact on odd shapes in a child process, the launcher's refusals
- ``figure``      the headline figure: a provisional range from the vendor's figures, shown beside it as references
- ``lab``         ``AmdLab``, the notebook's side ("not measured: no AMD GPU was available" where there is none), and
                  changed copies of a solution for a notebook to compile
- ``charts``      the instruction mix version by version, issue strips, register bars, XCD maps, the time model's
                  lanes of a K step and its figures beside AMD's

The models of AMD's hardware stay with their concern: ``memory.lds`` (the LDS banks) and ``model.amd`` (AMD's
operations in the host model). The package exports the public names of its modules, so a lesson writes
``from gluon_course.amd import mfma_layouts, budget_check`` without knowing which module holds which.
"""
from . import amdgcn, time_model
from .charts import (AMD_LESSONS, MFMA_PER_STEP, MIX_COLOURS, issue_chart, lesson_step_chart, mix_chart, mix_table,
                     mixes, register_chart, step_chart, time_chart, vendor_chart, version_label, xcd_map)
from .checks import (ANY_K_MODEL_SHAPES, FILES, HOST_MODEL_TITLE, MODEL_SHAPES, BudgetFacts, accumulator_check,
                     budget_check, config_check, copy_wait_check, group_size_check, host_model_check, lesson_loop,
                     lesson_prediction, loop_check, loop_waits_check, masked_check, model_check, model_launch, order_check, prologue_check,
                     read_conflict, region_check, schedule_facts, schedule_variant_check, time_model_check,
                     xcd_order_check)
from .figure import (PEAKS, VENDOR, VENDOR_BEST, VENDOR_BEST_SOURCE, VENDOR_REVISIONS, VENDOR_SOURCE, VENDOR_TOOLS,
                     VENDOR_VARIANTS, Peak, amd_gemm_measure, headline_figure, provisional_range, vendor_references,
                     vendor_variant_source)
from .gpu_checks import (ALIGNED_K_SHAPES, ANY_K_SHAPES, CHILD_LIMIT_S, correct_here, correctness_check,
                         empty_operands, refusal_check)
from .kernel import (DTYPES, HEADLINE, INTEGERS, NUM_WARPS, TILE, compile_error, compiled, config_constexprs,
                     expected_loop, load_masks, longest_burst, loop_memory, mfma_outside_loop, prologue_facts,
                     signature, vmcnt_before_lds_read)
from .lab import NOT_MEASURED, AmdLab, amd_gpu_here, planted, plants_using, solution_variant
from .launch import (BUFFER_BYTES, K_MULTIPLE, gpu_arch, launch_gemm, require_amd_gemm_args, require_amd_gpu,
                     require_tile)
from .layouts import (DIRECT_COPY_BYTES, GL_DTYPES, MFMA, WARP_SIZE, Mfma, lds_layouts, mfma_layouts,
                      padded_gemm_layouts, tile_copy_layouts)

__all__ = [name for name in dir() if not name.startswith("_")]
