"""Lesson 18's checks: the two partitions in the machine code of sm_90 (register reallocation for each, a consumer loop
that holds the products and its two barriers and nothing else, the producer's copies), the host model running both
partitions, correctness and hang protection on a GPU, and the figures against cuBLAS, lesson 17 and plain Triton; and the
Blackwell kernel's three partitions in the machine code of sm_100 (compiled only: no Blackwell GPU here)."""
from gluon_course.nvidia import blackwell
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks
from gluon_course.grading import tma_gemm
from gluon_course.grading.counts import mismatch
from gluon_course.grading.gemm import from_trial, gemm_measure, speedup_over, store_mask_missing, sweep_measure
from gluon_course.grading.gemm_kernel import GemmKernel

# The lesson's CONFIG, compiled as a launch of an 8192³ problem sees it.
TILE = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "STAGES": 4, "GROUP_M": 8, "num_warps": 8, "LOAD_REGS": 40}


def _programs(M, N, cfg, sms):
    """One program per SM, never more than there are tiles: the launcher's rule."""
    return min(-(-M // cfg["BLOCK_M"]) * -(-N // cfg["BLOCK_N"]), sms)


KERNEL = GemmKernel("tma", fixed=TILE, extra_tile_keys=("STAGES", "GROUP_M", "LOAD_REGS"), grid=_programs,
                    constexprs=lambda mod, cfg, dtype: mod.kernel_layouts(cfg["num_warps"], cfg["BLOCK_N"]))

# What the pinned Triton 3.9.0 emits on sm_90 for this tile, bf16 and fp16 alike.
# - setmaxnreg (USETMAXREG), read off the listing in address order. The kernel launches 12 warps at 168 registers a
#   thread (65536 / 384 threads, rounded down to 8; 168 × 384 = 64 512): warps 0-7 run the default partition (the
#   consumers), warps 8-11 are the producer's warpgroup (worker_num_warps=[1] padded to a whole warpgroup: setmaxnreg
#   acts on warpgroups; warp 8 copies, warps 9-11 wait). In order:
#   * at the kernel's start the producer's warpgroup gives registers back, down to 24 (DEALLOC 0x18), and the consumers
#     take 240 (TRY_ALLOC 0xf0, retried until the registers are free) for the set-up before the fork:
#     240 × 256 + 24 × 128 = 64 512;
#   * at the fork the consumers give 8 back, down to 232 (DEALLOC 0xe8), and all four warps of the producer's warpgroup
#     take 40, LOAD_REGS (TRY_ALLOC 0x28: once on the path of the warp that copies, once on the idle warps' path):
#     232 × 256 + 40 × 128 = 64 512. The consumers' K loop runs at 232, between the DEALLOC 0xe8 and the TRY_ALLOC
#     0xf0 below (232 is Triton's sum: 168 × 256 + (168 − 40) × 128 over the consumers' 256 threads);
#   * when the partitions end the producer's warpgroup drops back to 24 (DEALLOC 0x18, on each of its two paths) and the
#     consumers take 240 again (TRY_ALLOC 0xf0) to retire the barriers.
#   With LOAD_REGS = 24 the producer's warpgroup stays at 24 throughout (TRY_ALLOC 0x18 four times, one DEALLOC 0x18)
#   and the consumers keep 240 in the partitions too (TRY_ALLOC 0xf0 three times, no DEALLOC 0xe8): 240 × 256 + 24 ×
#   128 = 64 512, still 168 registers at launch and no spills: the producer's code fits in 24. With LOAD_REGS = 232 the
#   consumers would be left 136: ptxas drops every setmaxnreg ("(C7507) ... 'setmaxnreg' ignored to maintain minimum
#   register requirements") and all 12 warps run at 154; the check reallocation_of_config says so for a learner's
#   CONFIG.
SETMAXNREG = {"USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xf0": 2, "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0x28": 2,
              "USETMAXREG.DEALLOC.CTAPOOL 0xe8": 1, "USETMAXREG.DEALLOC.CTAPOOL 0x18": 3}
SETMAXNREG_NAMES = {"USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xf0": "the consumers up to 240, outside the partitions",
                    "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0x28": "the producer's warpgroup up to 40 while it copies",
                    "USETMAXREG.DEALLOC.CTAPOOL 0xe8": "the consumers down to 232 at the fork",
                    "USETMAXREG.DEALLOC.CTAPOOL 0x18": "the producer's warpgroup down to 24"}
LAUNCHED_WARPS = 12
# - the consumers' K loop: the 4 products of a K step, the wait for its tile (ready), a wait of depth 1 and the
#   release of the previous slot (empty: a barrier among the 256 consumer threads, then one elected thread arrives,
#   SYNCS.ARRIVE.TRANS64.A1T0). No copy, no expect.
CONSUMER_LOOP = {"WARPGROUP.ARRIVE": 1, "WARPGROUP.DEPBAR.LE": 1, "SYNCS.PHASECHK.TRANS64.TRYWAIT": 1,
                 "BAR.SYNC.DEFER_BLOCKING": 1, "SYNCS.ARRIVE.TRANS64.A1T0": 1, "UTMALDG.2D": 0,
                 "SYNCS.ARRIVE.TRANS64": 0}
CONSUMER_LOOP_INSTRUCTIONS = 56          # lesson 17's loop: 93, with the refill's copies and its address arithmetic
MMA_PER_STEP, INSTR_N = 4, 256
# - the whole kernel's TMA and mbarrier instructions: the producer's one expect and 5 copies per K step (A's 128 × 64
#   tile in one box, B's 64 × 256 tile in four: a box with 128-byte swizzling is at most 128 bytes, 64 bf16, wide;
#   in lessons 16 and 17 four of the eight warps issued one B box each); 2 × 4 barriers initialised and retired;
#   the consumers' two releases (in the loop, after a tile).
TMA_OPS = {"UTMALDG.2D": 5, "SYNCS.ARRIVE.TRANS64": 1, "SYNCS.ARRIVE.TRANS64.A1T0": 2, "SYNCS.EXCH.64": 8,
           "SYNCS.CCTL.IV": 8, "SYNCS.PHASECHK.TRANS64.TRYWAIT": 4}
REGISTERS = 168                          # what the 384 threads start with; setmaxnreg moves them from there
SHARED_BYTES = 196788                    # the 4-slot ring (196608) and 8 barriers, and what warp_specialize keeps
NAMES = {"UTMALDG.2D": "a TMA box copy", "SYNCS.ARRIVE.TRANS64": "expect()",
         "SYNCS.ARRIVE.TRANS64.A1T0": "a release of a slot (arrive on empty)", "SYNCS.PHASECHK.TRANS64.TRYWAIT":
         "an mbarrier wait", "SYNCS.EXCH.64": "mbarrier.init", "SYNCS.CCTL.IV": "mbarrier.invalidate"}
HINTS = {"SYNCS.ARRIVE.TRANS64.A1T0": ("a release is missing: the producer would wait for that slot forever", ""),
       "UTMALDG.2D": ("", "the consumers copy: every copy belongs to the producer partition"),
       "SYNCS.ARRIVE.TRANS64": ("", "the consumers expect(): the producer announces its own copies")}


def compiled(mod, target="sm_90", dtype="bf16"):
    return KERNEL.compile(mod, target, dtype)


def _setmaxnreg_hints(got: dict) -> dict:
    """Hints for a USETMAXREG count that is off, from what the listing holds instead (mismatch()'s ``why``)."""
    asks, back = "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0x28", "USETMAXREG.DEALLOC.CTAPOOL 0x18"
    other = sorted({t.rsplit(" ", 1)[1] for t in got if "TRY_ALLOC" in t and not t.endswith(("0xf0", "0x28"))})
    if got.get(asks, 0) == 1 and got.get(back, 0) == 2:
        few = ("the producer does ask for its 40 registers, but on one path only: its warpgroup has no idle warp, so "
               "the producer runs on all four of its warps (worker_num_warps=[4]?); the course's producer is one warp "
               "(worker_num_warps=[1]) and the three idle warps of its warpgroup take 40 on a path of their own")
    elif got.get(asks, 0) == 0 and other:
        few = (f"the producer's warpgroup asks for {', '.join(other)} registers, not 40: worker_num_regs=[LOAD_REGS] "
               "with the LOAD_REGS the kernel is given")
    elif got.get(asks, 0) == 0:
        few = "the producer never asks for 40 registers: worker_num_regs=[LOAD_REGS]"
    else:
        few = ""
    return {asks: (few, ""),
            "USETMAXREG.DEALLOC.CTAPOOL 0xe8": ("the consumers never give registers back at the fork: does the "
                                                "producer ask for more than the 24 its warpgroup starts with?", "")}


def partitions(mod):
    """Register reallocation for each partition at the course's tile, and 12 warps launched."""
    for dtype in ("bf16", "fp16"):
        k = compiled(mod, "sm_90", dtype)
        got = {}
        for i in k.instructions():
            if i.opcode.startswith("USETMAXREG"):
                got[i.text] = got.get(i.text, 0) + 1
        if not got:
            if int(k.metadata.num_warps) == TILE["num_warps"]:
                return (f"{dtype}: no USETMAXREG and {TILE['num_warps']} warps launched: the kernel is not "
                        "warp-specialized (gl.warp_specialize with a one-warp producer and its register count)")
            problem = tma_gemm.register_split_problem(k, TILE["num_warps"], TILE["LOAD_REGS"])
            return f"{dtype}: {problem}"
        problem = mismatch(got, SETMAXNREG, "(setmaxnreg)", dtype, SETMAXNREG_NAMES, _setmaxnreg_hints(got))
        if problem:
            return problem
        if int(k.metadata.num_warps) != LAUNCHED_WARPS:
            return (f"{dtype}: {k.metadata.num_warps} warps launched; expected {LAUNCHED_WARPS}: 8 consumers and one "
                    "producer warp (worker_num_warps=[1]), padded to a warpgroup")
    return None


def reallocation_of_config(mod):
    """The learner's CONFIG: setmaxnreg kept (ptxas drops it when the consumers would be left too few), the producer's
    warpgroup at LOAD_REGS, the consumers at what that leaves them of the launch's registers."""
    cfg = dict(mod.CONFIG)
    for dtype in ("bf16", "fp16"):
        k = KERNEL.compile(mod, "sm_90", dtype, cfg)
        problem = tma_gemm.register_split_problem(k, cfg["num_warps"], cfg["LOAD_REGS"])
        if problem:
            shown = ", ".join(f"{key}={value}" for key, value in cfg.items())
            return f"CONFIG ({shown}), {dtype}: {problem}"
    return None


def consumer_loop(mod):
    """The consumers' K loop: products, the ready wait, the depth-1 wait and the release; nothing else of note."""
    for dtype in ("bf16", "fp16"):
        k = compiled(mod, "sm_90", dtype)
        loop = k.opcodes_between(*k.loop_holding("HGMMA"))
        want = {**CONSUMER_LOOP, tma_gemm.HGMMA_OPCODE[dtype].format(n=INSTR_N): MMA_PER_STEP}
        problem = mismatch({op: loop.get(op, 0) for op in want}, want, "in the consumers' K loop", dtype, NAMES, HINTS)
        if problem:
            return problem
        problem = tma_gemm.wait_depth_problem(k, in_loop=1, after=0, who="the consumers' K loop")
        if problem:
            return f"{dtype}: {problem}"
        if sum(loop.values()) != CONSUMER_LOOP_INSTRUCTIONS:
            return (f"{dtype}: the consumers' K loop has {sum(loop.values())} instructions; expected "
                    f"{CONSUMER_LOOP_INSTRUCTIONS}: address arithmetic or copies that belong to the producer?")
    return None


def producer(mod):
    for dtype in ("bf16", "fp16"):
        problem = mismatch(tma_gemm.tma_ops(compiled(mod, "sm_90", dtype)), TMA_OPS, "in the whole kernel", dtype,
                           NAMES, HINTS)
        if problem:
            return problem
    return None


def resources(mod):
    return compiled(mod).resource_mismatch(REGISTERS, SHARED_BYTES)


def store_masked(mod):
    return store_mask_missing(compiled(mod))


def model(mod):
    # 3 programs on the host model's problems: several tiles each, the producer running ahead across them.
    return KERNEL.model_check(mod, sms=3)


# -- What changes on Blackwell (sm_100): blackwell_matmul_kernel, compiled here, never run --------------------------

BW_TILE = {k: TILE[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "GROUP_M", "num_warps")}
BLACKWELL = GemmKernel("tma", fixed=BW_TILE, extra_tile_keys=("STAGES", "GROUP_M"), constexprs=lambda *a: {},
                       name="blackwell_matmul_kernel")
# What the pinned Triton 3.9.0 emits on sm_100 for the same tile (bf16).
# - 12 warps launched, as on sm_90: the epilogue's 8, the two one-warp workers and two that run no partition (12 is
#   3 whole warpgroups); no USETMAXREG.
BW_LAUNCHED_WARPS = 12
# - the MMA warp's K loop: the ready wait, 4 UTCHMMA (tcgen05.mma, 128 × 256 × 16 each) and one UTCBAR (the commit that
#   mbarriers=[empty[slot]] asks for: the release); no copy, no arrive by threads, no CTA barrier. 52 instructions.
BW_MMA_LOOP = {"SYNCS.PHASECHK.TRANS64.TRYWAIT": 1, "UTCBAR": 1, "UTMALDG.2D": 0, "SYNCS.ARRIVE.TRANS64": 0,
               "SYNCS.ARRIVE.TRANS64.A1T0": 0, "BAR.SYNC.DEFER_BLOCKING": 0, "LDTM.x128": 0}
BW_MMA_PER_STEP = 4
BW_MMA_LOOP_INSTRUCTIONS = 52            # the sm_90 consumers' loop: 56
# - the whole kernel's tcgen05 instructions: the products, their two commits (each K step's release, each tile's
#   acc_ready), one tcgen05.ld of 128 columns per thread (8 warps × 128 = the 128 × 256 tile), tensor memory allocated
#   (the attempt and its retry) and released (on each of the two exit paths the compiler writes).
BW_TCGEN05 = {"LDTM.x128": 1, "UTCATOMSWS.AND": 2, "UTCATOMSWS.FIND_AND_SET.ALIGN": 2, "UTCBAR": 2, "UTCHMMA": 4}
# - TMA and mbarrier instructions: the producer's 5 copies and one expect per K step (load_partition's, unchanged),
#   10 barriers initialised and retired, one arrive by threads (the epilogue's on acc_empty), 4 waits (each with its
#   retry loop: 8).
BW_TMA_OPS = {"UTMALDG.2D": 5, "SYNCS.ARRIVE.TRANS64": 1, "SYNCS.ARRIVE.TRANS64.A1T0": 1, "SYNCS.EXCH.64": 10,
              "SYNCS.CCTL.IV": 10, "SYNCS.PHASECHK.TRANS64.TRYWAIT": 8}
# - the epilogue's loop: the wait on acc_ready, the tcgen05.ld, the arrive on acc_empty, then 16 stores per thread.
BW_EPILOGUE = {"SYNCS.PHASECHK.TRANS64.TRYWAIT": 1, "LDTM.x128": 1, "SYNCS.ARRIVE.TRANS64.A1T0": 1, "STG.E.128": 16}
BW_TMEM_COLUMNS = 256                    # 128 lanes × 256 columns of 32 bits: the fp32 128 × 256 accumulator
BW_REGISTERS = 149                       # for every warp; on sm_90, 168 at launch, 232 for the consumers' K loop
BW_SHARED_BYTES = 196844                 # the 4-slot ring (196608), 10 barriers, and what warp_specialize keeps
BW_WHY = {"UTCBAR": ("a commit is missing: without mbarriers=[empty.index(slot)] no release reaches the producer, "
                     "without tcgen05_commit(acc_ready) the epilogue waits forever", ""),
          "SYNCS.ARRIVE.TRANS64.A1T0": ("", "threads arrive in the MMA warp's loop: its release is the products' "
                                        "commit (mbarriers=)")}


def blackwell_compiled(mod, dtype="bf16"):
    return BLACKWELL.compile(mod, "sm_100", dtype)


def blackwell_partitions(mod):
    k = blackwell_compiled(mod)
    if int(k.metadata.num_warps) != BW_LAUNCHED_WARPS:
        return (f"{k.metadata.num_warps} warps launched; expected {BW_LAUNCHED_WARPS}: the epilogue's 8, the one-warp "
                "producer and the one-warp MMA partition (worker_num_warps=[1, 1]), in whole warpgroups")
    setmaxnreg = k.count_matching(r"USETMAXREG")
    if setmaxnreg:
        return f"{setmaxnreg} × USETMAXREG: no partition holds the accumulator in registers, none asks for more"
    return mismatch(tma_gemm.tma_ops(k), BW_TMA_OPS, "in the whole kernel", "bf16", {**NAMES, **blackwell.NAMES})


def blackwell_mma_loop(mod):
    k = blackwell_compiled(mod)
    problem = blackwell.signature(k, BW_MMA_LOOP, BW_MMA_PER_STEP, BW_TCGEN05, BW_WHY)
    if problem:
        return problem
    n = sum(k.opcodes_between(*blackwell.mma_loop(k)).values())
    if n != BW_MMA_LOOP_INSTRUCTIONS:
        return f"the MMA warp's K loop has {n} instructions; expected {BW_MMA_LOOP_INSTRUCTIONS}"
    return None


def blackwell_epilogue(mod):
    """The epilogue's loop: the tile out of tensor memory (LDTM) before the arrive that lets the MMA warp overwrite it."""
    k = blackwell_compiled(mod)
    first, last = k.loop_holding("LDTM")
    loop = k.opcodes_between(first, last)
    problem = mismatch({op: loop.get(op, 0) for op in BW_EPILOGUE}, BW_EPILOGUE, "in the epilogue's loop", "bf16",
                       blackwell.NAMES)
    if problem:
        return problem
    at = {i.opcode: i.address for i in k.instructions() if first <= i.address <= last}
    if at["SYNCS.ARRIVE.TRANS64.A1T0"] < at["LDTM.x128"]:
        return ("the arrive on acc_empty comes before the tcgen05.ld of the tile: the MMA warp may overwrite tensor "
                "memory while the epilogue still reads it; arrive after acc_tmem.load")
    return None


def blackwell_resources(mod):
    return blackwell.resource_mismatch(blackwell_compiled(mod), BW_REGISTERS, BW_SHARED_BYTES, BW_TMEM_COLUMNS)


# -- on a GPU ------------------------------------------------------------------------------------

def correct(mod):
    return tma_gemm.correct(mod, tma_gemm.TMA_SHAPES + tma_gemm.MANY_TILES)


def launcher_refuses(mod):
    return tma_gemm.launcher_refuses(mod)


def sanitizer_clean(mod):
    return tma_gemm.sanitizer_clean(mod, tma_gemm.PERSISTENT_SMALL, warp_specialized=True)


# -- figures -------------------------------------------------------------------------------------

WHY = "lesson 17's kernel split into a one-warp TMA producer and two consumer warpgroups"
WHY_V7 = ("lesson 17's kernel at the same tile, ring and order, timed in the same process: warp specialization is the "
          "only difference")
TARGET = CourseTarget(0.95, why="v8 at 95% of cuBLAS or more at 8192³ (the course's target for warp specialization)")
TARGET_V7 = CourseTarget(1.0, why="v8 at least as fast as v7")
# The H200 trial of this kernel's prototype (the same partitions at this CONFIG; grading.gemm.TRIAL_RUN).
TRIAL = {"bf16_8192": (0.967, "v8 at CONFIG, 649 TFLOPS vs cuBLAS 679"),
         "fp16_8192": (0.943, "v8 fp16, 631 TFLOPS vs cuBLAS 666"),
         "bf16_4096": (0.913, "v8 in the sweep at 4096³, 642 TFLOPS vs cuBLAS 709"),
         "vs_v7_bf16_8192": (1.005, "v8 0.967 over v7 0.962, both of cuBLAS in the trial"),
         "sweep_bf16": (0.869, "v8's sweep: geomean 0.869, worst 0.585 at 2048 × 2048 × 8192"),
         "over_triton_sweep": (0.928, "v8's sweep geomean 0.869 over plain Triton's 0.936")}


def _figure(key, title, M, N, K, dtype_name, headline=False, target=None):
    return Figure(key, title, gemm_measure(M, N, K, dtype_name, f"v8 warp-specialized {dtype_name}"),
                  from_trial(TRIAL, key, WHY, tma_gemm.DESIGN_RUN, target=target), headline=headline)


CHECKS = LessonChecks(
    targets=("sm_90", "sm_100"),
    teaches="`gl.warp_specialize`: a one-warp TMA producer and two consumer warpgroups talking through ready/empty "
            "mbarrier pairs; register reallocation (setmaxnreg); no copy or address of A and B in the consumers. On "
            "Blackwell: a one-warp tcgen05 MMA partition and an epilogue partition (compiled, not run)",
    machine_code=[
        Check("partitions_sm_90", "sm_90, at the course's tile 128×256×64 (8 consumer warps, LOAD_REGS 40): "
              "USETMAXREG for each partition, as the listing orders them: the producer's warpgroup down to 24 and the "
              "consumers up to 240 at the start, the consumers down to 232 at the fork and all four warps of the "
              "producer's warpgroup up to 40, then back (24 and 240) at the end; 12 warps launched", partitions,
              target="sm_90"),
        Check("reallocation_of_config", "your CONFIG, compiled for sm_90: register reallocation kept (USETMAXREG with "
              "the consumers' count and the producer's), the producer's warpgroup at LOAD_REGS, the consumers at what "
              "the launch's registers leave them", reallocation_of_config, target="sm_90"),
        Check("consumer_loop_sm_90", "sm_90, at the course's tile: the consumers' K loop holds 4 HGMMA.64x256x16, the "
              "ready wait, a wait of depth 1 and the release of a slot, no copy and no expect; "
              f"{CONSUMER_LOOP_INSTRUCTIONS} instructions (lesson 17: 93)", consumer_loop, target="sm_90"),
        Check("producer_sm_90", "sm_90, at the course's tile: the producer's 5 TMA box copies and one expect per K "
              "step; 8 barriers initialised and retired; 2 releases", producer, target="sm_90"),
        Check("resources_sm_90", f"sm_90, at the course's tile: {REGISTERS} registers at launch, no spills, "
              f"{SHARED_BYTES} shared bytes",
              resources, target="sm_90"),
        Check("store_masked", "sm_90, at the course's tile: the store of C is masked by rows < M and columns < "
              "N", store_masked, target="sm_90"),
        Check("config_fits", "your CONFIG, compiled for sm_90, fits one SM with no spills",
              KERNEL.config_fits(("sm_90",)), target="sm_90"),
        Check("host_model", tma_gemm.HOST_MODEL + "; the two partitions take turns at their waits (3 programs, "
              "several tiles each); no release before the wait that retires the slot's readers", model),
        Check("tcgen05_partitions_sm_100", "sm_100, blackwell_matmul_kernel at the course's tile 128×256×64 (8 "
              "epilogue warps, STAGES 4): 12 warps launched, no USETMAXREG; load_partition's 5 TMA box copies and one "
              "expect per K step; 10 barriers initialised and retired; one arrive by threads (the "
              "epilogue's)", blackwell_partitions, target="sm_100"),
        Check("tcgen05_mma_loop_sm_100", "sm_100, at the course's tile: the MMA warp's K loop holds the ready wait, 4 "
              "× UTCHMMA (the first accumulating from the second step on) and one UTCBAR, the release; "
              f"{BW_MMA_LOOP_INSTRUCTIONS} instructions; a second UTCBAR per tile (acc_ready); tensor memory allocated "
              "and released; no HGMMA",
              blackwell_mma_loop, target="sm_100"),
        Check("tcgen05_epilogue_sm_100", "sm_100, at the course's tile: the epilogue waits on acc_ready, reads the "
              "tile (LDTM.x128), then arrives on acc_empty, then stores it (16 × "
              "STG.E.128)", blackwell_epilogue, target="sm_100"),
        Check("tcgen05_resources_sm_100", f"sm_100, at the course's tile: {BW_TMEM_COLUMNS} TMEM columns, "
              f"{BW_REGISTERS} registers for every warp, no spills, {BW_SHARED_BYTES} shared "
              "bytes", blackwell_resources, target="sm_100"),
    ],
    correctness=[
        Check("correct_tma_shapes", "matmul is correct on odd shapes with K, N multiples of 8, and on two with "
              "several tiles per program (bf16 and fp16; poisoned, guarded C), all in a child process that must "
              "finish within 90 s", correct, gpu=True),
        Check("launcher_refuses", tma_gemm.REFUSALS, launcher_refuses, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck, racecheck and synccheck report nothing on a "
              "129×520×200 launch on 2 programs (3 tiles each)", sanitizer_clean, gpu=True),
    ],
    figures=[
        _figure("bf16_8192", "bf16 8192³", 8192, 8192, 8192, "bf16", headline=True, target=TARGET),
        _figure("fp16_8192", "fp16 8192³", 8192, 8192, 8192, "fp16"),
        _figure("bf16_4096", "bf16 4096³", 4096, 4096, 4096, "bf16"),
        Figure("vs_v7_bf16_8192", "v8 over v7, bf16 8192³", speedup_over("17", "v7", "v8"),
               from_trial(TRIAL, "vs_v7_bf16_8192", WHY_V7, ceiling="v7", unit="× v7", below=0.75, target=TARGET_V7)),
        Figure("sweep_bf16", "bf16 sweep, geomean", sweep_measure("v8"),
               from_trial(TRIAL, "sweep_bf16", WHY + "; the geomean of the 7 sweep shapes", tma_gemm.DESIGN_RUN)),
        Figure("over_triton_sweep", "over plain Triton, sweep geomean", sweep_measure("v8", against="triton"),
               from_trial(TRIAL, "over_triton_sweep", "the course's plain-Triton kernel timed in the same process, per "
                          "shape; the geomean of the 7 shapes' ratios", ceiling="plain Triton", unit="× plain Triton",
                          below=0.75, target=CourseTarget(1.0, why="faster than plain Triton"))),
    ],
)
