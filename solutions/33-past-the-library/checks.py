"""Lesson 33's checks: in the sm_90 machine code, the ping-pong kernel's two consumer K loops and its order barriers,
the cluster kernel's multicast (its CTA mask), its cluster dimension and the cluster barrier's count; both
configurations fitting an SM; cluster_layouts against what each CTA's part of C needs (before the compiler, which fails
on a wrong split without a message of its own); the host model running the three kernels' protocols (the cluster
kernel as the two CTAs it has: each CTA's own shared memory and barriers, B's multicast into both, the cluster's
release barrier in the first), the consumers' turns and the moment each hands its turn over, read from the model's
event log; ordered_tile's orders against the ones the notebook prints; on a GPU, correctness on odd shapes and on
clusters that do not divide the tiles, the sanitizers, and the figures against cuBLAS and lesson 19."""
import re

from gluon_course.grading import Check, CourseTarget, Figure, LessonChecks, NotChecked
from gluon_course.grading import tma_gemm
from gluon_course.grading.gemm import from_trial, gemm_measure, speedup_over, sweep_measure
from gluon_course.grading.gemm_kernel import fits
from gluon_course.machine import CompileFailed, compile_cached, tensor_descriptor_type
from gluon_course.nvidia import ws_dispatch
from gluon_course.nvidia.kept_plans import KeptLauncher, gemm_operands, kept_plans_check
from gluon_course.nvidia.launch import DESCRIPTORS_KEPT, PLANS_KEPT

# The course's configuration: the exact counts below hold at it (bf16, B K × N unless said).
TILE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "STAGES": 4, "GROUP_M": 8, "LOAD_REGS": 40, "MMA_REGS": 232}
CLUSTER_TILE = {**TILE, "CLUSTER_M": 2}
SUBTILE_TILE = {**TILE, "STAGES": 5, "SNAKE": 1, "C_BUFFERS": 1}
KERNEL_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "GROUP_M", "LOAD_REGS", "MMA_REGS")
# Per K step a consumer's 128 × 128 tile takes 2 (rows of 64) × 4 (16 of K each) HGMMA.64x128x16.
HGMMA = "HGMMA.64x128x16.F32.BF16"
HGMMA_PER_LOOP = 8
WARPS = 12                     # consumer 0 (4), consumer 1 (4), the producer's warp padded to a warpgroup (4)


def _desc(block, dtype="bf16", cga=None):
    from triton.experimental.gluon import language as gl

    gl_dtype = {"bf16": gl.bfloat16, "fp16": gl.float16}[dtype]
    return tensor_descriptor_type(dtype, block, gl.NVMMASharedLayout.get_default_for(block, gl_dtype, cga_layout=cga))


def compiled(mod, kernel="pingpong", cfg=None, b_kn=True, dtype="bf16", aligned=("M", "N", "K")):
    """The ping-pong or the cluster kernel compiled for sm_90 as its launcher calls it, at ``cfg`` (the course's
    configuration by default) and with the lesson's own layouts (``mod.cluster_layouts``); ``aligned``: the sizes
    Triton sees as multiples of 16 (all three for the course's shapes, none for the sanitizer's 129 × 520 × 200)."""
    cluster, subtile = kernel == "cluster", kernel == "subtile"
    cfg = dict(cfg or (CLUSTER_TILE if cluster else SUBTILE_TILE if subtile else TILE))
    n = cfg.get("CLUSTER_M", 1) if cluster else 1
    layouts = mod.cluster_layouts(n) if cluster else {"ac_cga": [], "b_cga": []}
    ac, bc = layouts["ac_cga"] or None, layouts["b_cga"] or None
    BM, BN, BK = n * cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    signature = {"a_desc": _desc([BM, BK], dtype, ac), "b_desc": _desc([BK, BN] if b_kn else [BN, BK], dtype, bc),
                 "c_desc": _desc([BM, BN // 2 if subtile else BN], dtype, ac), "M": "i32", "N": "i32", "K": "i32"}
    constexprs = {k: cfg[k] for k in KERNEL_KEYS}
    constexprs.update(acc_layout=mod.wgmma_layout(BN, layouts["ac_cga"]), B_KN=b_kn)
    if cluster:
        constexprs["CLUSTER_M"] = n
    if subtile:
        constexprs.update(SNAKE=cfg["SNAKE"], C_BUFFERS=cfg["C_BUFFERS"])
    fn = mod.cluster_kernel if cluster else mod.subtile_kernel if subtile else mod.pingpong_kernel
    options = {"num_ctas": n} if cluster else {}
    return compile_cached(fn, "sm_90", signature=signature, constexprs=constexprs, aligned=aligned,
                          num_warps=int(mod.CONSUMER_WARPS), **options)


def _hgmma_loops(k):
    """The HGMMA count of each innermost loop that holds any (the K loops; the tile loops around them hold more)."""
    loops = k.loops()
    inner = [(f, l) for f, l in loops if not any((f, l) != (g, m) and f <= g and m <= l for g, m in loops)]
    return [n for n in (k.opcodes_between(f, l).get(HGMMA, 0) for f, l in inner) if n]


def pingpong(mod):
    """Two consumer K loops of 8 HGMMA each (one per consumer), 12 warps, 2·STAGES + 2 barriers (the ring's and the
    two order barriers), one TMA store per consumer."""
    for b_kn in (True, False):
        k = compiled(mod, b_kn=b_kn)
        what = "B K × N" if b_kn else "B as N × K"
        warps = int(getattr(k.metadata, "num_warps", 0))
        if warps != WARPS:
            return (f"{what}: {warps} warps launched; expected {WARPS}: two consumer warpgroups (the default partition "
                    "and a 4-warp worker) and the producer's warp")
        loops = _hgmma_loops(k)
        if loops != [HGMMA_PER_LOOP, HGMMA_PER_LOOP]:
            return (f"{what}: the K loops holding {HGMMA} hold {loops or 'none'}; expected two loops of "
                    f"{HGMMA_PER_LOOP}, one per consumer warpgroup, each multiplying its own 128 × 128 tile")
        inits = k.ptx.count("mbarrier.init.shared::cta.b64")
        if inits != 2 * TILE["STAGES"] + 2:
            return (f"{what}: {inits} mbarriers initialised; expected {2 * TILE['STAGES'] + 2}: ready and empty per "
                    "slot and the two consumers' order barriers")
        if k.count("UTMASTG.2D") != 2:
            return f"{what}: {k.count('UTMASTG.2D')} TMA stores of C; expected 2, one per consumer"
        problem = _worker_registers_problem(k)
        if problem:
            return f"{what}: {problem}"
    return None


def _worker_registers(k) -> list[tuple[int, bool]]:
    """Each worker partition of the TTGIR's ``ttg.warp_specialize``, in order, as (the registers it requests from
    setmaxnreg, whether its region holds a wgmma)."""
    m = re.search(r"requestedRegisters = array<i32: ([\d, ]+)>", k.ttgir)
    if not m:
        return []
    asked = [int(n) for n in m.group(1).split(",")]
    regions = re.split(r"\n\s*partition\d+\(", k.ttgir[m.end():])[1:]
    return [(n, "warp_group_dot" in region) for n, region in zip(asked, regions)]


def _worker_registers_problem(k) -> str | None:
    """The worker that multiplies (consumer 1) keeps at least the registers ptxas compiled the kernel for, and the
    worker that only copies asks for fewer: setmaxnreg.dec below what a warpgroup's code uses takes registers it still
    holds, which ptxas does not report and the CPU cannot run."""
    workers = _worker_registers(k)
    if len(workers) != 2:
        return None                 # the warp count above already said what the fork lacks
    for n, multiplies in workers:
        if multiplies and n < k.registers:
            return (f"the worker that multiplies (consumer 1) asks setmaxnreg for {n} registers a thread, fewer than "
                    f"the {k.registers} ptxas compiled the kernel for (its 128 × 128 accumulator alone is 128): "
                    "gl.warp_specialize's last list gives each worker's registers in the order of the workers, "
                    "[MMA_REGS, LOAD_REGS] for [consumer 1, the producer]")
        if not multiplies and n >= k.registers:
            return (f"the producer asks setmaxnreg for {n} registers a thread, as many as a consumer: a warp that only "
                    "copies needs few (LOAD_REGS), and the registers it keeps are taken from the consumers")
    return None


def _multicast_masks(ptx: str) -> list[int]:
    """The CTA mask of every multicast TMA copy in the PTX (its last operand, a register set by a mov)."""
    masks = []
    for reg in re.findall(r"multicast::cluster \[[^\]]*\], \[[^\]]*\], \[[^\]]*\], (%rs\d+);", ptx):
        value = re.findall(rf"mov\.b16\s+{re.escape(reg)}, (\d+);", ptx)
        masks.append(int(value[-1]) if value else -1)
    return masks


def cluster(mod):
    """The cluster kernel: launched as clusters of CLUSTER_M (``.reqnctapercluster``), A's box per CTA, B's boxes by
    multicast (2 boxes of 64 columns K × N, 1 box N × K) to a mask naming every CTA of the cluster."""
    n = CLUSTER_TILE["CLUSTER_M"]
    problem = _split_problem(mod, n)      # before the compiler, which fails on a wrong split without saying why
    if problem:
        return problem
    for b_kn, boxes in ((True, 2), (False, 1)):
        what = "B K × N" if b_kn else "B as N × K"
        try:
            k = compiled(mod, "cluster", b_kn=b_kn)
        except CompileFailed as e:
            return (f"{what}: cluster_kernel does not compile for sm_90 with cluster_layouts' tiles "
                    f"({mod.cluster_layouts(n)}): {e.message.splitlines()[0][:200]}")
        got = re.findall(r"\.reqnctapercluster (\d+)", k.ptx)
        if got != [str(n)]:
            return f"{what}: the kernel asks for clusters of {got or 'one'} CTA(s); expected {n} (launch num_ctas={n})"
        multicast = k.count("UTMALDG.2D.MULTICAST")
        if multicast != boxes or k.count("UTMALDG.2D") != 1:
            return (f"{what}: {multicast} multicast TMA copies and {k.count('UTMALDG.2D')} plain ones per K step; "
                    f"expected {boxes} multicast (B's tile, once for the cluster) and 1 plain (this CTA's rows of A): "
                    "B's destination must be held by every CTA (cga_layout [[0, 0]]) and loaded with multicast=True")
        every = (1 << n) - 1
        masks = _multicast_masks(k.ptx)
        if any(m != every for m in masks):
            return (f"{what}: the multicast's CTA mask is {', '.join(bin(m) for m in masks)}; expected {bin(every)}, "
                    f"every CTA of the cluster of {n}: a CTA left out never receives B's tile")
    return None


def cluster_barriers(mod):
    """B's release barrier is the cluster's: initialised on the first CTA with the cluster's count (STAGES inits of
    count CLUSTER_M), released from both CTAs (mbarrier.arrive.shared::cluster: the loop's and the tile's last), and
    retired only after a cluster-wide barrier."""
    n, stages = CLUSTER_TILE["CLUSTER_M"], CLUSTER_TILE["STAGES"]
    problem = _split_problem(mod, n)      # the compiler's failure on a wrong split says nothing of its own
    if problem:
        return problem
    k = compiled(mod, "cluster")
    counts = [int(c) for c in re.findall(r"mbarrier\.init\.shared::cta\.b64 \[[^\]]*\], (\d+);", k.ptx)]
    shared = counts.count(n)
    if shared != stages:
        return (f"{shared} mbarriers initialised with count {n} (inits: {counts}); expected {stages}, one per slot: B's "
                f"release barrier must count both CTAs' consumers (cga_layout [[0]] makes Gluon multiply init's count "
                f"by the {n} CTAs that share it): a barrier counted for one CTA lets the multicast overwrite B's slot "
                "in a CTA whose consumers still read it")
    remote = k.ptx.count("mbarrier.arrive.shared::cluster")
    if remote != 4:
        return (f"{remote} releases sent across the cluster (mbarrier.arrive.shared::cluster); expected 4, two per "
                "consumer (in the K loop and after it): each consumer must release B's slot on the cluster's barrier")
    if k.ptx.count("barrier.cluster.arrive.aligned") < 2:
        return ("no cluster-wide barrier after the partitions: a CTA may retire its barriers while the other CTA's "
                "last releases are still arriving on them (gl.barrier(cluster=True) before the invalidates)")
    return None


def subtile(mod):
    """Step 3: step 1's two K loops of 8 HGMMA and 12 warps, C leaving in two subtiles per consumer (4 TMA stores),
    and less shared memory than step 1 at the same STAGES (its C buffers are a subtile each), both layouts of B."""
    step1 = compiled(mod).shared_bytes
    for b_kn in (True, False):
        what = "B K × N" if b_kn else "B as N × K"
        try:
            k = compiled(mod, "subtile", b_kn=b_kn)
        except CompileFailed as e:
            return f"{what}: subtile_kernel does not compile for sm_90: {e.message.splitlines()[0][:200]}"
        loops = _hgmma_loops(k)
        if int(getattr(k.metadata, "num_warps", 0)) != WARPS or loops != [HGMMA_PER_LOOP, HGMMA_PER_LOOP]:
            return (f"{what}: {k.metadata.num_warps} warps and K loops of {loops or 'no'} {HGMMA}; expected step 1's "
                    f"{WARPS} warps and two loops of {HGMMA_PER_LOOP}")
        if k.count("UTMASTG.2D") != 4:
            return (f"{what}: {k.count('UTMASTG.2D')} TMA stores of C; expected 4, two subtiles of 128 × 64 per "
                    "consumer (c_desc's block is a subtile)")
        same_stages = compiled(mod, "subtile", {**SUBTILE_TILE, "STAGES": TILE["STAGES"]}, b_kn=b_kn).shared_bytes
        if same_stages >= step1:
            return (f"{what}: at STAGES {TILE['STAGES']} the kernel takes {same_stages} bytes of shared memory, step 1 "
                    f"{step1}: its C buffers should be subtiles, smaller than step 1's whole tiles")
    return None


# Grids of tiles (rows, columns), GROUP_M: partial last groups, a single row or column, more rows than a group.
ORDER_GRIDS = ((1, 1), (1, 7), (7, 1), (8, 8), (9, 5), (13, 7), (17, 3), (64, 64), (33, 65))
# The orders exercise 3 asks for, as the notebook prints them: the number of the tile that goes to each (row, column).
# (GROUP_M, SNAKE) -> grid. The snake: odd columns of a group bottom-up, odd groups right to left.
ORDERS = {
    (2, 1): ((0, 3, 4, 7),
             (1, 2, 5, 6),
             (15, 12, 11, 8),
             (14, 13, 10, 9),
             (16, 17, 18, 19)),
    (4, 1): ((0, 7, 8, 15, 16),
             (1, 6, 9, 14, 17),
             (2, 5, 10, 13, 18),
             (3, 4, 11, 12, 19),
             (36, 35, 28, 27, 20),
             (37, 34, 29, 26, 21),
             (38, 33, 30, 25, 22),
             (39, 32, 31, 24, 23),
             (40, 41, 42, 43, 44)),
    (2, 0): ((0, 2, 4, 6),
             (1, 3, 5, 7),
             (8, 10, 12, 14),
             (9, 11, 13, 15),
             (16, 17, 18, 19)),
}


def tile_order(mod):
    """On the host, over grids of tiles with and without a partial last group: ordered_tile, grouped and snake, sends
    the tile numbers to every tile of the grid exactly once, and in the order ORDERS gives (the kernel's own function,
    evaluated by the model)."""
    from gluon_course.model import ModelUnsupported
    from gluon_course.model.orders import first_difference, visits_each_once

    try:
        for snake in (0, 1):
            for group_m in (1, 4, 8):
                for num_pid_m, num_pid_n in ORDER_GRIDS:
                    problem = visits_each_once(mod.ordered_tile, num_pid_m, num_pid_n, group_m, snake)
                    if problem:
                        return f"ordered_tile with SNAKE={snake}, GROUP_M={group_m}: {problem}"
        for (group_m, snake), grid in ORDERS.items():
            problem = first_difference(mod.ordered_tile, grid, group_m, snake)
            if problem:
                name = "the snake" if snake else "lesson 17's grouped order"
                return (f"ordered_tile with SNAKE={snake}, GROUP_M={group_m} visits every tile once but not in "
                        f"{name}: {problem}")
    except ModelUnsupported as e:
        return NotChecked(f"the host model does not model {e}")
    return None


def config_fits(mod):
    for name, kernel in (("CONFIG", "pingpong"), ("CLUSTER_CONFIG", "cluster"), ("SUBTILE_CONFIG", "subtile")):
        cfg = dict(getattr(mod, name))
        problem = _split_problem(mod, cfg["CLUSTER_M"]) if kernel == "cluster" else None
        if problem:
            return problem
        k = compiled(mod, kernel, cfg)
        problem = fits(k, WARPS, cfg)
        if problem:
            shown = ", ".join(f"{key}={value}" for key, value in cfg.items())
            return f"{name} ({shown}) on sm_90: {problem}"
    return None


MODEL_SHAPES = ((300, 264, 520), (129, 136, 72), (1, 8, 8))
# The cluster's: tiles of 256 rows past M (300) and 128 columns past N (136), 6 K steps a tile (past the ring's 4),
# 2 tiles on the first program; the first shape kept smaller than MODEL_SHAPES' as it runs in three schedules.
CLUSTER_MODEL_SHAPES = ((300, 136, 328), (129, 136, 72), (1, 8, 8))
# The cluster kernel's CTAs in three orders a GPU may run them in: the first CTA as far ahead as its waits allow (where
# a multicast that does not wait for the other CTA overwrites a slot it still reads), in turn, the last CTA first.
CLUSTER_SCHEDULES = ("CTA 0 first", "round robin", "last CTA first")


def _rules(stores_per_tile=1):
    """What the host model's event log must show of every step's consumers: they take turns, one run of products per
    tile, and each hands the turn over while its last product still runs."""
    from gluon_course.model import gemm as model_gemm
    from gluon_course.model.events import turn_passed_while_products_run

    return lambda programs: (model_gemm.consumers_take_turns(programs, stores_per_tile)
                             or turn_passed_while_products_run(programs))


def _model(mod, kernel, cfg, extra=None, c_block=None, stores_per_tile=1):
    from gluon_course.model import ModelUnsupported
    from gluon_course.model import gemm as model_gemm

    tile = {k: cfg[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    constexprs = {k: cfg[k] for k in KERNEL_KEYS if k not in tile}
    constexprs["acc_layout"] = mod.wgmma_layout(cfg["BLOCK_N"])
    constexprs.update(extra or {})
    grid = (lambda M, N: min(3, -(-M // cfg["BLOCK_M"]) * -(-N // cfg["BLOCK_N"])))
    for b_layout in ("row", "col"):
        launch = model_gemm.tma_launch(kernel, tile, grid, {**constexprs, "B_KN": b_layout == "row"},
                                       b_layout=b_layout, c_descriptor=True, num_warps=int(mod.CONSUMER_WARPS),
                                       c_block=c_block)
        try:
            problem = model_gemm.check(launch, MODEL_SHAPES, b_layout=b_layout, tile=(cfg["BLOCK_M"], cfg["BLOCK_N"]),
                                       rule=_rules(stores_per_tile))
        except ModelUnsupported as e:
            return NotChecked(f"the host model does not model {e}")
        if problem:
            return f"B {'K × N' if b_layout == 'row' else 'as N × K'}: {problem}"
    return None


def host_model(mod):
    return _model(mod, mod.pingpong_kernel, TILE)


def _split_problem(mod, n):
    """cluster_layouts(n) against what each CTA's part of C needs (the toolkit's rule), for both layouts of B."""
    from gluon_course.nvidia.hopper import cluster_split_problem

    layouts = mod.cluster_layouts(n)
    for b_kn in (True, False):
        problem = cluster_split_problem(layouts["ac_cga"], layouts["ac_cga"], layouts["b_cga"], b_kn=b_kn,
                                        stacked_along="M")
        if problem:
            return f"cluster_layouts({n}) returns {layouts}: {problem}"
    return None


def host_model_cluster(mod):
    """cluster_kernel run as the cluster of CLUSTER_M CTAs it is: each CTA with its own shared memory and barriers, B
    multicast into both, the cluster's release barrier in the first CTA, in each of CLUSTER_SCHEDULES."""
    from gluon_course.model import ModelUnsupported
    from gluon_course.model import cluster_launch
    from gluon_course.model import gemm as model_gemm

    n = CLUSTER_TILE["CLUSTER_M"]
    problem = _split_problem(mod, n)
    if problem:
        return problem
    layouts = mod.cluster_layouts(n)
    cga = {"a": layouts["ac_cga"], "b": layouts["b_cga"], "c": layouts["ac_cga"]}
    rows, BN, BK = n * CLUSTER_TILE["BLOCK_M"], CLUSTER_TILE["BLOCK_N"], CLUSTER_TILE["BLOCK_K"]
    constexprs = {k: CLUSTER_TILE[k] for k in KERNEL_KEYS}
    constexprs.update(CLUSTER_M=n, acc_layout=mod.wgmma_layout(BN, layouts["ac_cga"]))
    grid = (lambda M, N: min(3, -(-M // rows) * -(-N // BN)))
    for schedule in CLUSTER_SCHEDULES:
        for b_layout in ("row", "col"):
            launch = cluster_launch.gemm_launch(mod.cluster_kernel, {"BLOCK_M": rows, "BLOCK_N": BN, "BLOCK_K": BK},
                                                grid, {**constexprs, "B_KN": b_layout == "row"}, cga, n,
                                                b_layout=b_layout, num_warps=int(mod.CONSUMER_WARPS),
                                                schedule=schedule)
            try:
                problem = model_gemm.check(launch, CLUSTER_MODEL_SHAPES, b_layout=b_layout, tile=(rows, BN),
                                           rule=_rules())
            except ModelUnsupported as e:
                return NotChecked(f"the host model does not model {e}")
            if problem:
                return f"B {'K × N' if b_layout == 'row' else 'as N × K'}, the CTAs run {schedule}: {problem}"
    return None


def host_model_subtile(mod):
    """subtile_kernel in the model, grouped and snake, with one and two subtile buffers per consumer."""
    for snake in (0, 1):
        for buffers in (1, 2):
            problem = _model(mod, mod.subtile_kernel, SUBTILE_TILE, {"SNAKE": snake, "C_BUFFERS": buffers},
                             c_block=[SUBTILE_TILE["BLOCK_M"], SUBTILE_TILE["BLOCK_N"] // 2], stores_per_tile=2)
            if problem:
                return f"SNAKE={snake}, C_BUFFERS={buffers}: {problem}" if isinstance(problem, str) else problem
    return None


def _kept(mod):
    """The launchers' plans (one cache for the three steps, kept by the toolkit's code, gluon_course.nvidia.launch) as
    the toolkit's checks drive them, through step 1's."""
    import torch

    return KeptLauncher(operands=gemm_operands, tma={"A": 0, "B": 1, "C": 2},
                        plan=lambda args: mod.plan("pingpong", *args), plans=lambda: mod._PLANS, plans_kept=PLANS_KEPT,
                        descriptors_kept=DESCRIPTORS_KEPT, other_dtype=torch.float16)


kept_plans = kept_plans_check(_kept)        # lesson 31's checks of plans and descriptors (nvidia.kept_plans)


# The launchers' paths on one problem whose M and N are far apart (M and N exchanged on the way leaves tiles of C out),
# 128 × 128 tiles cut by every edge, K in 4 steps; each step at its launcher's own configuration (step 2 as a cluster
# of one CTA: the model runs one CTA at a time).
LAUNCHER_PROBLEMS = ((17, 264, 200),)
LAUNCHER_STEPS = {"pingpong_matmul": ("pingpong", {}), "matmul with CLUSTER_M=1": ("cluster", {"CLUSTER_M": 1}),
                  "subtile_matmul": ("subtile", {})}


def launcher_paths(mod):
    """Each step as its launcher takes it (plan: checks, blocks, descriptors kept by address, grid, the kernel's
    arguments; Plan.launch), with the GPU stood in for by the host model (model.launcher, 3 SMs): C exact, each
    element written once, B K × N and as w.t() (called twice: the second through the kept plan)."""
    from gluon_course.model import ModelUnsupported
    from gluon_course.model import gemm as model_gemm

    for what, (step, config) in LAUNCHER_STEPS.items():
        for b_layout in ("col", "row"):
            try:
                problem = model_gemm.check_launcher(
                    lambda a, b, c: mod.plan(step, a, b, c, **config).launch(a, b, c), LAUNCHER_PROBLEMS,
                    b_layout=b_layout, calls=2 if b_layout == "col" else 1)
            except ModelUnsupported as e:
                return NotChecked(f"the host model does not model {e}")
            if problem:
                return (f"through the launcher (plan, descriptors, grid, arguments), {what}, B "
                        f"{'K × N' if b_layout == 'row' else 'as w.t()'}: {problem}")
    return None


def plan_refusal_cases(mod) -> dict:
    """What the launchers must refuse before anything reaches a GPU, with CPU tensors: one case for each of their own
    refusals (tests/test_launcher_paths.py holds the cases to every raise of the launchers' code), and the toolkit's
    checks they call (the operands, TMA's 16-byte rule, the wgmma tile). {what: (call, error, words)}."""
    from gluon_course.grading.gemm import cpu_operands as operands

    def plan(step, M=17, N=264, K=200, programs=None, **config):
        return lambda: mod.plan(step, *operands(M, N, K), programs, **config)

    return {
        "an unknown config key": (plan("pingpong", BLOCK_SIZE=64), TypeError, ("BLOCK_SIZE",)),
        "programs=0": (plan("pingpong", programs=0), ValueError, ("programs=0",)),
        "LOAD_REGS=20": (plan("pingpong", LOAD_REGS=20), ValueError, ("LOAD_REGS=20", "setmaxnreg")),
        "CLUSTER_M=3": (plan("cluster", CLUSTER_M=3), ValueError, ("CLUSTER_M=3",)),
        "SNAKE=2 in step 3": (plan("subtile", SNAKE=2), ValueError, ("SNAKE=2",)),
        "B with 190 rows for A's 200 columns": (lambda: mod.plan("pingpong", *(lambda a, b, c: (a, b[:190], c))(
            *operands(17, 264, 200))), ValueError, ("190",)),
        "K = 199 bf16 (398-byte rows of A)": (plan("pingpong", K=199), ValueError, ("16", "lesson 13")),
        "BLOCK_N=300": (plan("pingpong", BLOCK_N=300), ValueError, ("BLOCK_N=300",)),
    }


def plan_refusals(mod):
    """Every refusal of the launchers reached, on the CPU, with its sentence (plan_refusal_cases)."""
    from gluon_course.grading.gemm import refuses

    return refuses(plan_refusal_cases(mod))


# -- on a GPU ------------------------------------------------------------------------------------
# Shapes whose tiles of 256 rows (a cluster's) leave the second CTA's rows past M (300, 4097, 1000, 129) or wholly
# outside it (127 × 264: one tile row of 128 in a cluster tile of 256), and programs that do not divide the tiles.
CLUSTER_SHAPES = ((300, 264, 520), (129, 136, 200), (4097, 2056, 200))


def correct_here(module_file: str, shapes: str) -> str | None:
    """The three launchers (step 3 in both orders), both layouts of B (for a child process), and the cluster kernel on
    3 clusters."""
    import json

    from gluon_course.course import load_module_file
    from gluon_course.measure.gemm import check_gemm

    mod = load_module_file(module_file)
    shapes = [tuple(s) for s in json.loads(shapes)]
    for name, launch in (("pingpong_matmul", lambda a, b, c: mod.pingpong_matmul(a, b, c)),
                         ("matmul", lambda a, b, c: mod.matmul(a, b, c)),
                         ("matmul on 3 clusters", lambda a, b, c: mod.matmul(a, b, c, programs=3)),
                         ("subtile_matmul (snake)", lambda a, b, c: mod.subtile_matmul(a, b, c)),
                         ("subtile_matmul (grouped)", lambda a, b, c: mod.subtile_matmul(a, b, c, SNAKE=0))):
        for b_layout in ("row", "col"):
            problem = check_gemm(launch, shapes=shapes if "3" not in name else CLUSTER_SHAPES, b_layout=b_layout)
            if problem:
                return f"{name}, B {'K × N' if b_layout == 'row' else 'as N × K'}: {problem}"
    return None


def correct(mod):
    import json

    from gluon_course.measure.isolated import check_in_child

    shapes = tma_gemm.TMA_SHAPES + tma_gemm.MANY_TILES
    return check_in_child(f"{__file__}:correct_here", [mod.__file__, json.dumps([list(s) for s in shapes])],
                          timeout=5 * tma_gemm.CHILD_LIMIT_S)


def launcher_refuses(mod):
    return tma_gemm.launcher_refuses(mod, warpgroups=False)


def sanitizer_clean(mod):
    # One launch of matmul, 129 × 520 × 200 on 2 clusters. Set aside: the compiler's warp-specialization state word,
    # its stores and the workers' load, found in cluster_kernel's listing as this launch compiles it (B K × N, no size
    # a multiple of 16). On the H200 (2026-12-02) racecheck named four of them, a Read at +0x2a40 and Writes at
    # +0x2640, +0x28f0 and +0x29a0; it gave the store at +0x2640 the cluster barrier's line, so a rule by line fails.
    try:
        pcs = ws_dispatch.pcs(compiled(mod, "cluster", aligned=()), int(mod.CONSUMER_WARPS), "cluster_kernel")
    except (CompileFailed, StopIteration):    # no listing, or no dispatch found in it: nothing is set aside
        pcs = set()
    return tma_gemm.sanitizer_clean(mod, tma_gemm.PERSISTENT_SMALL, warp_specialized=True, dispatch_pcs=pcs)


# -- figures -------------------------------------------------------------------------------------
# No GPU has run v10 yet: every range below is drawn around lesson 19's v9 trial (0.5× to 1.5× of it, as from_trial
# says) until the first recording; the course targets are issue 23's.
TRIAL = {"v9_bf16_8192": (1.037, "lesson 19's v9 at 8192³, 696 TFLOPS vs cuBLAS 672"),
         "v9_sweep": (0.925, "lesson 19's v9 sweep in its first trial: geomean 0.925"),
         "v9_itself": (1.0, "v9 against itself"),
         "bf16_8192": ("v9_bf16_8192",), "pingpong_bf16_8192": ("v9_bf16_8192",), "sweep_bf16": ("v9_sweep",),
         "vs_v9_bf16_8192": ("v9_itself",), "clocks_8192": ("v9_bf16_8192",)}
WHY = "two ping-pong consumers on 128 × 128 tiles in clusters of 2 CTAs along M, B's tile multicast"


def _pingpong_figure(mod):
    import torch

    from gluon_course.measure.gemm import gemm_figure

    return gemm_figure(lambda a, b, c: mod.pingpong_matmul(a, b, c), 8192, 8192, 8192, torch.bfloat16,
                       label="v10 step 1 (ping-pong) bf16")


CLOCK_VERSIONS = ("v9", "v10.1 ping-pong", "v10.2 cluster", "v10.3 subtiles, grouped", "v10.3 subtiles, snake",
                  "cuBLAS")


def _clocks_figure(mod):
    """Issue 23's item 4: every version at 8192³ in 3 interleaved rounds, the SM clock and power sampled meanwhile."""
    import torch

    from gluon_course import load_solution
    from gluon_course.measure.clocks import clocks_figure

    v9 = load_solution("19")
    launches = (lambda a, b, c: v9.matmul(a, b, c), lambda a, b, c: mod.pingpong_matmul(a, b, c),
                lambda a, b, c: mod.matmul(a, b, c), lambda a, b, c: mod.subtile_matmul(a, b, c, SNAKE=0),
                lambda a, b, c: mod.subtile_matmul(a, b, c, SNAKE=1), lambda a, b, c: torch.matmul(a, b, out=c))
    return clocks_figure(dict(zip(CLOCK_VERSIONS, launches)), 8192, 8192, 8192, headline="v10.3 subtiles, snake")


CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="ping-pong consumers (two warpgroups on alternate tiles, handing the tensor cores over by order "
            "mbarriers); a 2-CTA cluster (`num_ctas`, `cga_layout`) sharing B's tile by `tma.async_load(..., "
            "multicast=True)`, its release barrier counted for the cluster; C stored in subtiles paced by "
            "`tma.store_wait`; why none of them beats v9 on an H200 at its power limit",
    machine_code=[
        Check("pingpong_sm_90", f"sm_90, pingpong_kernel at the course's tile (two consumers of 128×128×64, STAGES 4): "
              f"{WARPS} warps, two K loops of {HGMMA_PER_LOOP} HGMMA.64x128x16 (one per consumer), the ring's and the "
              "two order barriers, one TMA store per consumer, consumer 1 asking setmaxnreg for at least the registers "
              "it was compiled for and the producer for fewer (both layouts of B)", pingpong, target="sm_90"),
        Check("cluster_sm_90", "sm_90, cluster_kernel at the course's tile: cluster_layouts splits A's and C's rows and "
              "gives every CTA all of B's tile (checked before compiling), clusters of 2 CTAs, one plain TMA copy (A) "
              "and B by multicast (UTMALDG.2D.MULTICAST) to the mask of both CTAs (both layouts of B)", cluster,
              target="sm_90"),
        Check("cluster_barriers_sm_90", "sm_90, cluster_kernel: B's release barrier initialised with count 2 per "
              "slot, released across the cluster by both consumers, retired after a cluster barrier",
              cluster_barriers, target="sm_90"),
        Check("config_fits", "your CONFIG, CLUSTER_CONFIG and SUBTILE_CONFIG, compiled for sm_90, fit one SM with no spills",
              config_fits, target="sm_90"),
        Check("host_model", tma_gemm.HOST_MODEL + "; pingpong_kernel: the consumers' K loops in turns, one run of "
              "products per tile, consumer 0 first, each handing the turn over before the wait that retires its last "
              "product; both layouts of B", host_model),
        Check("subtile_sm_90", f"sm_90, subtile_kernel at its tile (STAGES 5, one 128×64 buffer per consumer): step "
              f"1's {WARPS} warps and K loops, 4 TMA stores of 128×64 subtiles, less shared memory than step 1 at the "
              "same STAGES (both layouts of B)", subtile, target="sm_90"),
        Check("tile_order", "on the host: ordered_tile, grouped and snake, visits every tile of grids with and "
              "without a partial last group exactly once (GROUP_M 1, 4 and 8), in the orders the notebook prints",
              tile_order),
        Check("host_model_subtile", "the host model runs subtile_kernel, grouped and snake, with one and two subtile "
              "buffers: C exact, each subtile's buffer written only after the store that last read it is waited for "
              "and fenced before TMA reads it, the turns hold (both layouts of B)", host_model_subtile),
        Check("host_model_cluster", "the host model runs cluster_kernel as the cluster of 2 CTAs it is (each with its own "
              "shared memory and barriers, B multicast into both, b_empty in the first), the CTAs in three orders: C "
              "exact, no slot of either CTA refilled while that CTA still reads it, the turns hold (both layouts of "
              "B)", host_model_cluster),
        Check("kept_plans", "the launchers keep their plans as lesson 31 does: a plan per signature, found again at "
              "any address, built afresh for another shape, row stride or dtype and for a view of A, B or C at every "
              "offset TMA refuses (each refused with TMA's rule); descriptors kept by address, not by Python object, "
              "holding no tensor; at most PLANS_KEPT plans and DESCRIPTORS_KEPT sets a plan, the oldest going first "
              "(host code, CPU tensors)", kept_plans),
        Check("launcher_paths", "the host model runs each step as its launcher takes it (pingpong_matmul, matmul "
              "as a cluster of one CTA, subtile_matmul: the plan's descriptors, grid and arguments "
              "in the kernel's order): C exact, each element written once, a second call through the kept plan too, "
              "B either way (CPU tensors)", launcher_paths),
        Check("plan_refusals", "on CPU tensors, the launchers refuse each configuration and problem they cannot run "
              "(an unknown key, a non-positive grid, setmaxnreg's counts, a cluster size, step 3's settings, a "
              "mismatched K, rows TMA cannot read, a tile wgmma cannot take), each with its sentence", plan_refusals),
    ],
    correctness=[
        Check("correct_tma_shapes", "pingpong_matmul, matmul and subtile_matmul (snake and grouped) are correct on odd shapes with K, N multiples of 8 and "
              "on two with several tiles per program, with B K × N and as N × K, and matmul on 3 clusters over shapes "
              "whose cluster tiles overhang M (bf16 and fp16; poisoned, guarded C), in a child process that must "
              "finish within 450 s", correct, gpu=True),
        Check("launcher_refuses", "the launchers refuse rows that are not 16-byte multiples (naming TMA's rule and lesson "
              "13), fp32, a mismatched K and a non-contiguous A, with sentences; M, N or K = 0 gives what torch.matmul "
              "gives", launcher_refuses, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck, racecheck and synccheck report nothing on a "
              "129×520×200 launch of matmul on 2 clusters", sanitizer_clean, gpu=True),
    ],
    figures=[
        Figure("bf16_8192", "bf16 8192³", gemm_measure(8192, 8192, 8192, "bf16", "v10 bf16"),
               from_trial(TRIAL, "bf16_8192", WHY, tma_gemm.DESIGN_RUN,
                          target=CourseTarget(1.08, why="issue 23's target for v10: ≥ 1.08× cuBLAS at bf16 8192³")),
               headline=True),
        Figure("pingpong_bf16_8192", "step 1 (ping-pong), bf16 8192³", _pingpong_figure,
               from_trial(TRIAL, "pingpong_bf16_8192", "step 1 alone: two ping-pong consumers, no cluster")),
        Figure("vs_v9_bf16_8192", "v10 over v9, bf16 8192³", speedup_over("19", "v9", "v10"),
               from_trial(TRIAL, "vs_v9_bf16_8192", "lesson 19's kernel timed in the same process at its own CONFIG",
                          ceiling="v9", unit="× v9", target=CourseTarget(1.03, why="issue 23: ≥ 1.03× v9"))),
        Figure("sweep_bf16", "bf16 sweep, geomean", sweep_measure("v10"),
               from_trial(TRIAL, "sweep_bf16", WHY + "; the geomean of the 7 sweep shapes", tma_gemm.DESIGN_RUN,
                          target=CourseTarget(1.05, why="issue 23: the sweep's geomean ≥ 1.05× cuBLAS, no shape "
                                                        "below 1.00×"))),
        Figure("clocks_8192", "step 3 (snake) and the SM clock, 8192³", _clocks_figure,
               from_trial(TRIAL, "clocks_8192", "step 3 in snake order, timed beside v9, steps 1 and 2, step 3 grouped "
                          "and cuBLAS, the SM clock and board power sampled during each timing")),
    ],
)
