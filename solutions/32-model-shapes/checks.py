"""Lesson 32's checks: the host model running linear_kernel on each path (a tile, a tile with K split, swap-AB,
swap-AB with K split, a wide tile unsplit and split; B either way), the split-K protocol and swap-AB's epilogue in
the sm_90 machine code, the dispatch table and its rule, the persistent grid the dispatcher's cost model counts
rounds with; on a GPU, every path correct on odd shapes, split-K
deterministic, the refusals, the sanitizer; and the figures: the 31 model shapes against F.linear and plain Triton,
the decode shapes against the memory roofline, and a transformer block with its linear layers swapped."""
import functools

from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks, Reference
from gluon_course.grading import tma_gemm
from gluon_course.grading.counts import mismatch
from gluon_course.grading.gemm_kernel import fits
from gluon_course.machine import compile_cached, tensor_descriptor_type
from gluon_course.measure.gemm import MODEL_SHAPES
from gluon_course.nvidia.kept_plans import KeptLauncher, gemm_operands, kept_plans_check
from gluon_course.nvidia.l2_hints import tma_copies
from gluon_course.nvidia.launch import DESCRIPTORS_KEPT, PLANS_KEPT

# The four paths, at tiles small enough for the host model's problems (the model runs every program's code).
PATHS = {"a tile": {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "STAGES": 3},
         "a tile, K split 3 ways": {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "STAGES": 3, "SPLIT_K": 3},
         "swap-AB": {"BLOCK_M": 64, "BLOCK_N": 16, "num_warps": 4, "STAGES": 3, "SWAP_AB": True},
         "swap-AB, K split 2 ways": {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "STAGES": 3, "SPLIT_K": 2,
                                     "SWAP_AB": True},
         "a wide tile (64 + 32 columns)": {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_N2": 32, "num_warps": 4,
                                           "STAGES": 3},
         "a wide tile, K split 3 ways": {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_N2": 32, "num_warps": 4, "STAGES": 3,
                                         "SPLIT_K": 3}}
MODEL_PROBLEMS = ((300, 264, 520), (129, 136, 200), (17, 40, 392))
# What the split path's epilogue must hold in the sm_90 listing (the swap-AB split configuration of the decode
# shapes, 128 × 16, 4 ways): the slice stored by the threads, the consumers' barrier, the release fence and the
# atomic, the other slices read from L2 (.cg: LDG ... STRONG.GPU), the counter reset, and C by one TMA store.
SPLIT_CONFIG = {"BLOCK_M": 128, "BLOCK_N": 16, "num_warps": 4, "STAGES": 6, "SPLIT_K": 4, "SWAP_AB": True}
SPLIT_OPS = {"ATOMG.E.ADD.STRONG.GPU": 1, "ATOMG.E.EXCH.STRONG.GPU": 1, "MEMBAR.ALL.GPU": 1, "UTMASTG.2D": 1}
SPLIT_HINTS = {"MEMBAR.ALL.GPU": ("the atomic that announces a slice has no release (sem='acq_rel'): another SM could "
                                  "see the count before the slice", ""),
               "ATOMG.E.ADD.STRONG.GPU": ("no atomic add on the tile's counter: who is last cannot be known", ""),
               "ATOMG.E.EXCH.STRONG.GPU": ("the counter is never reset: the next call counts from SPLIT_K", "")}


def _config(overrides):
    from gluon_course import load_solution

    return {**load_solution("32").CONFIG, **overrides}


def host_model(mod):
    """Each path, with B K × N and as w.t(), run in the host model: C exact, each element written once, every
    counter back at 0."""
    from gluon_course.model import ModelUnsupported
    from gluon_course.model import gemm as model_gemm
    from gluon_course.grading import NotChecked

    for what, overrides in PATHS.items():
        cfg = {**mod.CONFIG, **overrides}
        for b_layout in ("col", "row"):
            constexprs = mod.kernel_args(cfg, cfg["SWAP_AB"], b_layout == "row")
            launch = model_gemm.linear_launch(mod.linear_kernel, constexprs, cfg["SPLIT_K"], cfg["SWAP_AB"],
                                              programs=3, num_warps=cfg["num_warps"])
            shapes = [s for s in MODEL_PROBLEMS if -(-s[2] // cfg["BLOCK_K"]) >= cfg["SPLIT_K"]]
            try:
                problem = model_gemm.check(launch, shapes, b_layout=b_layout)
            except ModelUnsupported as e:
                return NotChecked(f"the host model does not model {e}")
            if problem:
                return f"{what}, B {'K × N' if b_layout == 'row' else 'as w.t()'}: {problem}"
    return None


# The launcher's paths on two problems whose M and N are far apart (so that M and N exchanged, or the wrong one of
# them counted, leaves tiles of C out), with tiles cut by every edge: 129 rows and 40 columns, K in 4 steps (3 ways
# split: slices of 1, 1 and 2); 17 decode rows and 136 columns, K in 7 steps.
LAUNCHER_PROBLEMS = ((129, 40, 200), (17, 136, 392))


def launcher_paths(mod):
    """Each path as the launcher takes it: Linear's plan (configuration, checks, the kernel's operand views and M, N,
    K), its grid, descriptors, split-K scratch and arguments, and Plan.launch, with the GPU stood in for by the host
    model (model.launcher: 3 SMs); W as w.t() on both problems, B K × N on the second; then the dispatch table's own
    configurations for the same problems. A path that splits K (and the table's) is called twice with W as w.t(): the
    second call through the kept plan, descriptors and split-K scratch, whose counters the first call must have left
    at 0."""
    from gluon_course.grading import NotChecked
    from gluon_course.model import ModelUnsupported
    from gluon_course.model import gemm as model_gemm

    runs = [(what, mod.Linear(config=overrides), overrides.get("SPLIT_K", 1) > 1, ("col", "row"))
            for what, overrides in PATHS.items()]
    runs.append(("the dispatch table's configuration", mod.Linear(table=mod._this_gpus_table()), True, ("col",)))
    for what, linear, again, layouts in runs:
        for b_layout in layouts:
            try:
                problem = model_gemm.check_launcher(lambda a, b, c: linear.plan(a, b, c).launch(a, b, c),
                                                    LAUNCHER_PROBLEMS if b_layout == "col" else LAUNCHER_PROBLEMS[1:],
                                                    b_layout=b_layout, calls=2 if again and b_layout == "col" else 1)
            except ModelUnsupported as e:
                return NotChecked(f"the host model does not model {e}")
            if problem:
                return (f"through the launcher (plan, views, grid, arguments), {what}, B "
                        f"{'K × N' if b_layout == 'row' else 'as w.t()'}: {problem}")
    return None


def plan_refusal_cases(mod) -> dict:
    """What the launcher must refuse before anything reaches a GPU, with CPU tensors: one case for each of the
    plan's own refusals (tests/test_launcher_paths.py holds the cases to every raise of the launcher's code), and
    the toolkit's checks it calls (the operands, TMA's 16-byte rule, the wgmma tile). {what: (call, error, words)}."""
    from gluon_course.grading.gemm import cpu_operands as operands

    def plan(config, M=17, N=136, K=392, sms=None):
        return lambda: mod.Linear(config=config).plan(*operands(M, N, K), sms=sms)

    return {
        "SPLIT_K=8 with K = 392 (7 steps of 64)": (plan({"SPLIT_K": 8}), ValueError, ("SPLIT_K=8", "7", "empty")),
        "SPLIT_K=0": (plan({"SPLIT_K": 0}), ValueError, ("SPLIT_K=0",)),
        "BLOCK_N2=48": (plan({"BLOCK_N": 64, "BLOCK_N2": 48}), ValueError, ("BLOCK_N2=48", "power of two")),
        "BLOCK_N2=32 with swap-AB": (plan({"BLOCK_N": 64, "BLOCK_N2": 32, "SWAP_AB": True}), ValueError,
                                     ("BLOCK_N2=32", "swap-AB")),
        "W_FIRST=2": (plan({"W_FIRST": 2}), ValueError, ("W_FIRST=2",)),
        "an unknown config key": (lambda: mod.Linear(config={"BLOCK_SIZE": 64}), TypeError, ("BLOCK_SIZE",)),
        "B with 390 rows for A's 392 columns": (lambda: mod.Linear().plan(*(lambda a, b, c: (a, b[:390], c))(
            *operands(17, 136, 392))), ValueError, ("390",)),
        "K = 391 bf16 (782-byte rows of A)": (plan({}, K=391), ValueError, ("16", "lesson 13")),
        "num_warps=2 (half a warpgroup)": (plan({"num_warps": 2}), ValueError, ("warpgroup",)),
    }


def plan_refusals(mod):
    """Every refusal of the launcher reached, on the CPU, with its sentence (plan_refusal_cases)."""
    from gluon_course.grading.gemm import refuses

    return refuses(plan_refusal_cases(mod))


# Split-K's slices, added by the unit that arrives last at the tile's counter, must give the same bits whichever unit
# that is. Each path that adds slices, K in 3 of them (two give the same bits in either order: a + b = b + a in fp32,
# but (a + b) + c need not equal a + (b + c)), one program a unit, C in fp32: 392 = 7 K steps of 64, slices of 2, 2
# and 3 steps; one tile of C (the wide tile's second strip holds columns 64 to 95 of the 96).
SPLIT_ORDER = {"a tile, K split 3 ways": ({"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "STAGES": 3, "SPLIT_K": 3},
                                          (17, 40, 392)),
               "swap-AB, K split 3 ways": ({"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "STAGES": 3, "SPLIT_K": 3,
                                            "SWAP_AB": True}, (17, 40, 392)),
               "a wide tile (64 + 32 columns), K split 3 ways": ({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_N2": 32,
                                                                  "num_warps": 4, "STAGES": 3, "SPLIT_K": 3},
                                                                 (17, 96, 392))}


def split_order(mod):
    """Each split path in the host model, its units run in the toolkit's program orders (model.gemm.PROGRAM_ORDERS:
    the last to arrive at the tile is its last slice's unit, then its first): C's fp32 bits the same in every order."""
    from gluon_course.grading import NotChecked
    from gluon_course.model import ModelUnsupported
    from gluon_course.model import gemm as model_gemm

    for what, (overrides, shape) in SPLIT_ORDER.items():
        cfg = {**mod.CONFIG, **overrides}
        constexprs = mod.kernel_args(cfg, cfg["SWAP_AB"], False)

        def launch(order, cfg=cfg, constexprs=constexprs):
            return model_gemm.linear_launch(mod.linear_kernel, constexprs, cfg["SPLIT_K"], cfg["SWAP_AB"],
                                            programs=None, num_warps=cfg["num_warps"], order=order, c_dtype="fp32")
        try:
            problem = model_gemm.same_bits_in_any_order(launch, [shape], b_layout="col")
        except ModelUnsupported as e:
            return NotChecked(f"the host model does not model {e}")
        if problem:
            return f"{what}, B as w.t(): {problem}"
    return None


def _compiled(mod, overrides, b_kn=False, dtype="bf16"):
    from triton.experimental.gluon import language as gl

    cfg = {**mod.CONFIG, **overrides}
    ce = mod.kernel_args(cfg, cfg["SWAP_AB"], b_kn)
    BM, BN, BK = ce["BLOCK_M"], ce["BLOCK_N"], ce["BLOCK_K"]
    gdt = {"bf16": gl.bfloat16, "fp16": gl.float16}[dtype]

    def desc(block):
        return tensor_descriptor_type(dtype, block, gl.NVMMASharedLayout.get_default_for(block, gdt))

    strip = ce["BLOCK_N2"] or BN
    blocks = ([BM, BK] if ce["A_KM"] else [BK, BM], [BK, BN] if ce["B_KN"] else [BN, BK],
              [BN, BM] if cfg["SWAP_AB"] else [BM, BN], [BK, strip] if ce["B_KN"] else [strip, BK],
              [strip, BM] if cfg["SWAP_AB"] else [BM, strip])
    signature = {"a_desc": desc(blocks[0]), "b_desc": desc(blocks[1]), "c_desc": desc(blocks[2]),
                 "b2_desc": desc(blocks[3]), "c2_desc": desc(blocks[4]),
                 "partial_ptr": "*fp32", "arrivals_ptr": "*i32", "M": "i32", "N": "i32", "K": "i32",
                 "SPLIT_K": "i32"}
    return compile_cached(mod.linear_kernel, "sm_90", signature=signature, constexprs=ce,
                          aligned=("partial_ptr", "arrivals_ptr"), num_warps=cfg["num_warps"])


def split_protocol(mod):
    """sm_90, the split path: the slice stored, the consumers' barrier, the release and the atomic add in that order,
    the slices read back from L2, the counter reset, C by TMA."""
    k = _compiled(mod, SPLIT_CONFIG)
    ops = {op: k.count(op) for op in SPLIT_OPS}
    problem = mismatch(ops, SPLIT_OPS, "in the whole kernel", "bf16", why=SPLIT_HINTS)
    if problem:
        return problem
    at = [(i.address, i.opcode, i.text) for i in k.instructions()]
    atomic = next(a for a, op, _ in at if op == "ATOMG.E.ADD.STRONG.GPU")
    stores = [a for a, op, _ in at if op.startswith("STG.E") and a < atomic]
    if not stores:
        return "no slice is stored before the atomic add: the last unit would read slices no one wrote"
    barriers = [a for a, op, text in at if op.startswith("BAR.SYNC") and "0x0," in text and stores[-1] < a < atomic]
    if not barriers:
        return ("no barrier among the consumers between the slice's stores and the atomic add: one thread announces "
                "the slice before the other threads have stored their part of it (gl.barrier())")
    reads = [text for a, op, text in at if op.startswith("LDG") and a > atomic]
    if not reads or any("STRONG.GPU" not in t for t in reads):
        return ("the last unit reads the slices without cache_modifier='.cg' (LDG without STRONG.GPU): this SM's L1 "
                "may serve a stale line instead of the other SMs' slices in L2")
    return None


def table_configs(mod):
    """Every configuration the committed table (and, for the shapes it lacks, the rule) gives the model shapes
    compiles for sm_90 and fits one SM with no spills."""
    table = mod._this_gpus_table()
    seen = set()
    for M, N, K in MODEL_SHAPES:
        cfg = {**mod.CONFIG, **table.config(M, N, K, False)}
        key = tuple(sorted(cfg.items()))
        if key in seen:
            continue
        seen.add(key)
        problem = fits(_compiled(mod, cfg), cfg["num_warps"], cfg)
        if problem:
            return f"{M}×{N}×{K}'s configuration {cfg}: {problem}"
    return None


# linear_kernel's descriptor arguments in order; W is the kernel's A under swap-AB, its B (and B's second strip)
# otherwise. Three model shapes at the table's configurations: swap-AB (M = 16), the wide tile (M = 512), and M = 2048.
DESCRIPTORS = ("a_desc", "b_desc", "c_desc", "b2_desc", "c2_desc")
HINT_SHAPES = ((16, 4096, 4096), (512, 6144, 4096), (2048, 4096, 4096))


def w_hint(mod):
    """sm_90, at the table's configurations of HINT_SHAPES: W's TMA copies carry L2's evict_first hint exactly where
    the configuration says W_FIRST, and no copy of the activations or of C carries one."""
    table = mod._this_gpus_table()
    for M, N, K in HINT_SHAPES:
        cfg = {**mod.CONFIG, **table.config(M, N, K, False)}
        w_descs = {0} if cfg["SWAP_AB"] else {1, 3}
        copies = tma_copies(_compiled(mod, cfg).ptx)
        if not copies or any(c.descriptor is None for c in copies):
            return f"{M}×{N}×{K}: the PTX's TMA copies could not all be traced to a descriptor ({copies})"
        for c in copies:
            want = "evict_first" if (c.load and c.descriptor in w_descs and cfg["W_FIRST"]) else None
            if c.hint != want:
                what = "W's" if c.descriptor in w_descs else ("C's" if not c.load else "the activations'")
                return (f"{M}×{N}×{K} (W_FIRST={cfg['W_FIRST']}, SWAP_AB={cfg['SWAP_AB']}): a TMA "
                        f"{'load' if c.load else 'store'} of {DESCRIPTORS[c.descriptor]} ({what}) carries L2 hint "
                        f"{c.hint!r}, expected {want!r}: only W is streamed once, so only W's copies are hinted "
                        "evict_first (kernel_args' A_POLICY and B_POLICY: W is A under swap-AB)")
    return None


def dispatch(mod):
    """The table covers the 31 model shapes (or says it is missing); every shape, listed or not (odd M from 1 to 8193
    against the model's (N, K), and a (N, K) the table lacks) gets a configuration whose K split leaves no slice
    empty, and a plan builds for it (CPU tensors: the checks, the tile, the layouts)."""
    import torch

    from gluon_course.grading import Passed

    table = mod._this_gpus_table()
    missing = [s for s in MODEL_SHAPES if (s[0], s[1], s[2], "nk") not in table.entries]
    linear = mod.Linear(table=table)
    for M in (1, 3, 16, 17, 100, 1000, 8193):
        for N, K in ((4096, 4096), (14336, 4096), (4096, 14336), (1032, 520)):
            cfg = table.config(M, N, K, False)
            if cfg["SPLIT_K"] > -(-K // cfg["BLOCK_K"]):
                return f"{M}×{N}×{K} gets SPLIT_K={cfg['SPLIT_K']}, more than K's {-(-K // cfg['BLOCK_K'])} steps"
            a = torch.empty(M, K, dtype=torch.bfloat16)
            w = torch.empty(N, K, dtype=torch.bfloat16)
            c = torch.empty(M, N, dtype=torch.bfloat16)
            linear.plan(a, w.t(), c)
    if missing:
        return Passed(f"no tuned table here: {len(missing)} of the {len(MODEL_SHAPES)} model shapes take the rule "
                      "(tools/gpu/tune_linear.py writes the table on a GPU)")
    return Passed(f"the table ({table.provenance.get('gpu')}, {table.provenance.get('date')}) lists all "
                  f"{len(MODEL_SHAPES)} model shapes")


# -- the persistent grid (exercise 2) -------------------------------------------------------------------------------

# (units, SMs) -> (programs, rounds): program p runs units p, p + programs, p + 2·programs, ...
GRID_FACTS = {(16, 132): (16, 1),          # 16 tiles of W's rows at a decode shape: 116 SMs idle
              (96, 132): (96, 1),          # 512 × 6144 in 128 × 256 tiles: one round, 36 SMs idle
              (132, 132): (132, 1),
              (192, 132): (132, 2),        # 512 × 6144 in 128 × 128 tiles: a second round of 60 units
              (384, 132): (132, 3),        # the same split 2 ways: 384 units, the third round 120 of 132
              (1, 132): (1, 1), (7, 3): (3, 3)}
# Shapes the table does not list (layers of the survey's other families, M from 16 to 4096), where the cost model,
# fitted on the survey, must pick with the lesson's grid what it picks with the toolkit's own.
PICK_SHAPES = ((16, 512, 3584), (128, 512, 3584), (16, 18944, 3584), (128, 1024, 8192), (1024, 4096, 4096),
               (4096, 3584, 3584))


def persistent_grid(mod):
    """persistent_grid on GRID_FACTS, then the dispatcher's picks with it on PICK_SHAPES: the cost model fitted on the
    survey ranks the survey's space with the lesson's count of rounds (its ``grid`` parameter), against the same model
    with the toolkit's count (cost_model.persistent_grid)."""
    from gluon_course.grading import NotChecked
    from gluon_course.nvidia import cost_model
    from gluon_course.nvidia.dispatch import survey_candidates

    for (units, sms), want in GRID_FACTS.items():
        got = mod.persistent_grid(units, sms)
        if tuple(got) != want:
            why = ("there is one program an SM at most, and never more programs than units (a program with no unit "
                   "only costs a launch)" if got[0] != want[0] else
                   "the busiest program runs ⌈units / programs⌉ units: a last round that is only partly full still "
                   "takes one unit's time, so round up")
            return f"persistent_grid({units} units, {sms} SMs) gives {tuple(got)}, expected {want} (programs, rounds): {why}"
    model = cost_model.fitted()
    if model is None:
        return NotChecked("no survey of this GPU (results/tuning/<gpu>-survey.json): the dispatcher's picks are not "
                          "compared")
    for M, N, K in PICK_SHAPES:
        space = survey_candidates(M, N, K)
        theirs = cost_model.pick(model, M, N, K, space, grid=mod.persistent_grid)
        ours = cost_model.pick(model, M, N, K, space)
        if theirs != ours:
            return (f"{M}×{N}×{K}: with your persistent_grid the dispatcher picks {cost_model.tile_of(theirs)} split "
                    f"{theirs['SPLIT_K']}, where the cost model's own count of rounds picks "
                    f"{cost_model.tile_of(ours)} split {ours['SPLIT_K']}")
    return None


def _kept(mod):
    """Linear's plans and descriptors, kept by the toolkit's code (gluon_course.nvidia.launch), as the toolkit's checks
    drive them: a fresh Linear at CONFIG. The descriptors describe the kernel's A and B (exchanged under swap-AB; B's
    N × K view where B is w.t()), C, then the second strip's B and C."""
    import torch

    linear = mod.Linear()

    def described(p, args):
        a, b, c = args
        b_view = b if p.b_kn else b.t()
        ka, kb = (b_view, a) if p.swap_ab else (a, b_view)
        return (ka, kb, c, kb, c)
    return KeptLauncher(operands=gemm_operands, tma={"A": 0, "B": 1, "C": 2}, plan=lambda args: linear.plan(*args),
                        plans=lambda: linear.plans, plans_kept=PLANS_KEPT, descriptors_kept=DESCRIPTORS_KEPT,
                        described=described, other_dtype=torch.float16)


kept_plans = kept_plans_check(_kept)        # lesson 31's checks of plans and descriptors (nvidia.kept_plans)


# -- on a GPU ------------------------------------------------------------------------------------

# Odd M from 1 to 8193, K and N multiples of 8; K long enough for every split the paths take.
GPU_SHAPES = ((1, 8, 520), (7, 264, 520), (17, 136, 4104), (129, 1032, 1000), (1000, 520, 520), (8193, 136, 520))
GPU_PATHS = {"a tile": {"BLOCK_N": 128, "num_warps": 4, "STAGES": 4},
             "a tile, K split 2 ways": {"BLOCK_N": 128, "num_warps": 4, "STAGES": 4, "SPLIT_K": 2},
             "swap-AB": {"BLOCK_N": 16, "num_warps": 4, "STAGES": 6, "SWAP_AB": True},
             "swap-AB, K split 4 ways": {"BLOCK_N": 32, "num_warps": 4, "STAGES": 6, "SPLIT_K": 4, "SWAP_AB": True},
             "swap-AB, 64 rows, K split 8 ways": {"BLOCK_M": 64, "BLOCK_N": 16, "num_warps": 4, "STAGES": 8,
                                                  "SPLIT_K": 8, "SWAP_AB": True},
             "a wide tile (128 + 64 columns)": {"BLOCK_N": 128, "BLOCK_N2": 64, "num_warps": 8, "STAGES": 4},
             "a wide tile, K split 3 ways": {"BLOCK_N": 128, "BLOCK_N2": 64, "num_warps": 8, "STAGES": 4,
                                             "SPLIT_K": 3}}


def correct_here(module_file: str) -> str | None:
    from gluon_course.course import load_module_file
    from gluon_course.measure.gemm import check_gemm

    mod = load_module_file(module_file)
    for what, cfg in [*GPU_PATHS.items(), ("the dispatch table", {})]:
        for layout in ("col", "row"):
            problem = check_gemm(lambda a, b, c: mod.linear(a, b, c, **cfg), shapes=GPU_SHAPES, b_layout=layout)
            if problem:
                return f"{what}, B {'K × N' if layout == 'row' else 'as w.t()'}: {problem}"
    return None


def correct(mod):
    from gluon_course.measure.isolated import check_in_child

    return check_in_child(f"{__file__}:correct_here", [mod.__file__], timeout=4 * tma_gemm.CHILD_LIMIT_S)


def deterministic(mod):
    """Split-K gives the same bits on every run: five calls on the same inputs, compared with torch.equal."""
    import torch

    for what, (M, N, K), cfg in (("decode, swap-AB split 4", (16, 4096, 4096), GPU_PATHS["swap-AB, K split 4 ways"]),
                                 ("a tile split 2", (512, 4096, 4096), GPU_PATHS["a tile, K split 2 ways"])):
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        first = mod.linear(a, w.t(), **cfg).clone()
        for _ in range(4):
            if not torch.equal(mod.linear(a, w.t(), **cfg), first):
                return f"{what}, {M}×{N}×{K}: two runs on the same inputs differ: the slices are not added in order"
    return None


def launcher_refuses(mod):
    return tma_gemm.launcher_refuses(mod)


def split_launch(module_file: str) -> None:
    """One small launch of each split path (for compute-sanitizer, in a child process)."""
    import torch

    from gluon_course.course import load_module_file

    mod = load_module_file(module_file)
    a = torch.randn(40, 1000, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(264, 1000, device="cuda", dtype=torch.bfloat16)
    for cfg in (GPU_PATHS["a tile, K split 2 ways"], GPU_PATHS["swap-AB, K split 4 ways"]):
        mod.linear(a, w.t(), **cfg)
    torch.cuda.synchronize()


def sanitizer_clean(mod):
    from gluon_course.measure.isolated import sanitizer_check

    return sanitizer_check(f"{__file__}:split_launch", [mod.__file__], tools=("memcheck", "synccheck"))


# -- figures -------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4)
def _table_run(module_file: str) -> dict:
    from gluon_course.course import load_module_file
    from gluon_course.measure import plain_triton
    from gluon_course.measure.linear import model_table

    mod = load_module_file(module_file)
    return model_table(lambda a, b, c: mod.linear(a, b, c), against_triton=plain_triton.linear,
                       triton_config=plain_triton.chosen_linear_config)


def _details(run: dict, keys) -> dict:
    return {"shapes": run["shapes"], **{k: run[k] for k in keys if k in run}}


def table_measure(mod):
    from gluon_course.measure.timing import Measurement

    run = _table_run(mod.__file__)
    return Measurement(run["geomean"], f"geomean {run['geomean']:.2f}× F.linear over {len(run['shapes'])} shapes, "
                                       f"worst {run['worst']:.2f}× ({run['worst_shape']})",
                       _details(run, ("geomean", "worst", "worst_shape", "worst_over_plain_triton",
                                      "worst_over_plain_triton_shape", "geomean_over_plain_triton")))


def over_triton_measure(mod):
    from gluon_course.measure.timing import Measurement

    run = _table_run(mod.__file__)
    return Measurement(run["worst_over_plain_triton"], f"worst {run['worst_over_plain_triton']:.2f}× plain Triton "
                                                       f"({run['worst_over_plain_triton_shape']}), geomean "
                                                       f"{run['geomean_over_plain_triton']:.2f}×",
                       _details(run, ("worst_over_plain_triton", "geomean_over_plain_triton")))


@functools.lru_cache(maxsize=4)
def _roofline_run(module_file: str) -> dict:
    from gluon_course.course import load_module_file
    from gluon_course.measure.linear import decode_roofline
    from gluon_course.nvidia.read_ceiling import reader

    mod = load_module_file(module_file)
    return decode_roofline(lambda a, b, c: mod.linear(a, b, c), read=reader)


def roofline_measure(mod):
    from gluon_course.measure.timing import Measurement

    run = _roofline_run(mod.__file__)
    worst = run["shapes"][run["lowest_shape"]]
    return Measurement(run["lowest"], f"lowest {100 * run['lowest']:.0f}% of the copy's {run['copy_tbs']:.2f} TB/s "
                                      f"({run['lowest_shape']}: {worst['us']:.1f} µs; F.linear "
                                      f"{100 * worst['f_linear_fraction']:.0f}%, a TMA read of W alone "
                                      f"{100 * worst['read_fraction']:.0f}%); after do_bench's overwrite, "
                                      f"lowest {100 * run['lowest_write_flush']:.0f}%", run)


def of_read_measure(mod):
    from gluon_course.measure.timing import Measurement

    run = _roofline_run(mod.__file__)
    shape = min(run["shapes"], key=lambda s: run["shapes"][s]["of_read"])
    row = run["shapes"][shape]
    return Measurement(run["lowest_of_read"], f"lowest {100 * run['lowest_of_read']:.0f}% of a TMA read of W alone "
                                              f"({shape}: {row['us']:.1f} µs against the read's {row['read_us']:.1f})",
                       {"shapes": {s: {k: r[k] for k in ("us", "read_us", "of_read", "read_fraction")}
                                   for s, r in run["shapes"].items()}})


@functools.lru_cache(maxsize=4)
def _block_run(module_file: str) -> dict:
    from gluon_course.course import load_module_file
    from gluon_course.measure.linear import block_figures

    mod = load_module_file(module_file)
    return block_figures(lambda a, b: mod.linear(a, b))


def _block_row(mod, tokens: int) -> dict:
    row = _block_run(mod.__file__)[tokens]
    if row["error_swapped"] > 2 * row["error_torch"] + 1e-3:
        raise AssertionError(f"the swapped block's output is off by {row['error_swapped']:.2e} (relative) where "
                             f"torch's own is off by {row['error_torch']:.2e}: not the same computation")
    return row


def block_measure(tokens: int):
    def measure(mod):
        from gluon_course.measure.timing import Measurement

        row = _block_row(mod, tokens)
        keys = ("ratio", "spread", "swapped_us", "torch_us", "error_swapped", "error_torch")
        return Measurement(row["ratio"], f"{row['swapped_us']:.0f} µs vs torch's {row['torch_us']:.0f} µs per block "
                                         f"(error {row['error_swapped']:.1e}, torch {row['error_torch']:.1e})",
                           {**{k: row[k] for k in keys}, "tokens": tokens})
    return measure


def block_graph_measure(tokens: int):
    """The block captured in a CUDA graph and replayed, both ways (the kernels without the host between them), with
    each do_bench time over its graph time (well above 1: the block waits on the host) and every layer alone."""
    def measure(mod):
        from gluon_course.measure.timing import Measurement

        row = _block_row(mod, tokens)
        slowest = max(row["layers"].items(), key=lambda kv: kv[1]["swapped_graph_us"] / kv[1]["torch_graph_us"])
        return Measurement(row["graph_ratio"],
                           f"graph {row['swapped_graph_us']:.0f} µs vs torch's {row['torch_graph_us']:.0f} µs per "
                           f"block; do_bench over graph {row['swapped_bench_over_graph']:.2f} (torch "
                           f"{row['torch_bench_over_graph']:.2f}); slowest layer against torch's: {slowest[0]}",
                           {**row, "tokens": tokens})
    return measure


PROBE = ("NVIDIA H200, Triton 3.9.0, torch 2.11.0+cu130, 2026-12-01 (results/trials/nvidia-h200-2026-12-01-call-cost-"
         "and-model-shapes.json): lesson 19's kernel through lesson 31's launcher, its one tile on every shape")
TABLE_WHY = ("F.linear's time over the dispatched kernel's on the 31 model shapes (A·Wᵀ, bf16, W N × K), each the "
             "median of 3 interleaved do_bench pairs, as a user calls both; the geomean over the shapes")

BLOCK_GRAPH_WHY = ("torch's block over the swapped block, each captured once in a CUDA graph and replayed (graph_ms: "
                   "no host between the kernels; L2 kept between replays); details: each do_bench time over its graph "
                   "time, and each of the seven linear layers alone, do_bench and graph, both ways")

def unseen_measure(mod):
    """The dispatcher on the survey's families other than the table's, each judged with the cost model fitted
    without it (nvidia.dispatch.unseen_families_table)."""
    from gluon_course.measure.timing import Measurement
    from gluon_course.nvidia.dispatch import unseen_families_table

    t = unseen_families_table(mod)
    worst_family = min(t["families"], key=lambda f: t["families"][f]["geomean"])
    return Measurement(t["geomean"], f"geomean {t['geomean']:.3f}× F.linear over {len(t['shapes'])} shapes of "
                                     f"{len(t['families'])} families, worst {t['worst']:.2f}× ({t['worst_shape']}), "
                                     f"lowest family {worst_family} {t['families'][worst_family]['geomean']:.3f}×",
                       {k: v for k, v in t.items()})


UNSEEN_WHY = ("the dispatcher (no table entry: the cost model ranks the survey's space) on every layer of each model "
              "family of results/tuning/<gpu>-survey.json.gz but the table's own, at M = 1, 16, 128, 1024 and 4096, "
              "the model fitted on the other families' timings only; against F.linear in 3 interleaved do_bench "
              "pairs a shape (rep 20 ms), the geometric mean over all those shapes. The range is wide: another "
              "Hopper GPU reads the H200's survey")


CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="the shapes a model runs: split-K (the slices added in a fixed order by the last unit to arrive: "
            "deterministic) and swap-AB (Cᵀ = W·Aᵀ for few rows) beside lesson 19's tiles, a wide tile in two strips, "
            "W's copies hinted evict_first in L2; a dispatch table tuned on the GPU, and a cost model fitted on the "
            "GPU's timings that ranks the ways for the shapes the table lacks",
    machine_code=[
        Check("host_model", "the host model runs linear_kernel's own code on each path (a tile, K split, swap-AB, "
              "both, a wide tile unsplit and split; B either way): C exact, each element written once, every "
              "split-K counter back at 0",
              host_model),
        Check("launcher_paths", "the host model runs each path as the launcher takes it (Linear's plan, the kernel's "
              "views of A and B, its M and N, the grid, the descriptors, split-K's scratch and the arguments, as "
              "Plan.launch hands them over), and the dispatch table's configurations: C exact, each element written "
              "once, a second call through the kept plan and split-K's scratch too", launcher_paths),
        Check("plan_refusals", "on CPU tensors, the launcher refuses each configuration and problem it cannot run "
              "(a K split into more slices than K steps, a wide tile's width or pairing, W_FIRST, unknown keys, a "
              "mismatched K, rows TMA cannot read, half a warpgroup), each with its sentence", plan_refusals),
        Check("split_order", "the host model runs each split path (a tile, swap-AB, a wide tile; K split 3 ways) "
              "with its units arriving in three orders: C's fp32 bits the same whichever unit adds the slices",
              split_order),
        Check("split_protocol_sm_90", "sm_90, split-K: the slice stored, a barrier among the consumers, the release "
              "fence and the atomic add, the slices read from L2 (.cg), the counter reset, C by one TMA store",
              split_protocol, target="sm_90"),
        Check("table_configs_sm_90", "sm_90: every configuration the dispatch table gives the 31 model shapes fits "
              "one SM with no spills", table_configs, target="sm_90"),
        Check("w_hint_sm_90", "sm_90, the table's configurations at 16×4096×4096 (swap-AB), 512×6144×4096 (a wide "
              "tile) and 2048×4096×4096: W's TMA copies carry L2's evict_first hint where the configuration says "
              "W_FIRST (M ≤ 512), the activations' and C's none", w_hint, target="sm_90"),
        Check("dispatch", "the table lists the model shapes; any shape (odd M, other N and K) gets a configuration "
              "with no empty slice of K, and its plan builds (CPU tensors)", dispatch),
        Check("persistent_grid", "persistent_grid gives each launch's programs and rounds of work units, and with "
              "it the cost model picks the course's configurations on shapes the table lacks", persistent_grid),
        Check("kept_plans", "Linear keeps its plans as lesson 31 does: a plan per signature, found again at any "
              "address, built afresh for another shape, row stride or dtype and for a view of A, B or C at every "
              "offset TMA refuses (each refused with TMA's rule); descriptors kept by address, not by Python object, "
              "holding no tensor; at most PLANS_KEPT plans and DESCRIPTORS_KEPT sets a plan, the oldest going first "
              "(host code, CPU tensors)", kept_plans),
    ],
    correctness=[
        Check("correct_paths", "every path (a tile; K split; swap-AB; swap-AB with K split 4 and 8 ways; a wide "
              "tile, unsplit and split 3 ways) and the dispatch table correct on odd M from 1 to 8193, B K × N and as "
              "w.t() (bf16 and fp16; poisoned, guarded C), in a child process", correct, gpu=True),
        Check("deterministic", "split-K gives the same bits on five runs of the same inputs (decode and 512 rows)",
              deterministic, gpu=True),
        Check("launcher_refuses", tma_gemm.REFUSALS, launcher_refuses, gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck and synccheck report nothing on the two split paths",
              sanitizer_clean, gpu=True),
    ],
    figures=[
        Figure("model_table", "31 model shapes, geomean", table_measure,
               Expectation(0.6, 1.5, "F.linear", TABLE_WHY, (Reference(0.628, "× F.linear", PROBE),),
                           unit="× F.linear (geomean)",
                           target=CourseTarget(1.0, None, "geomean ≥ 1.00× F.linear, no shape below 0.80×")),
               headline=True),
        Figure("over_plain_triton", "over plain Triton, worst shape", over_triton_measure,
               Expectation(0.6, None, "plain Triton", "the dispatched kernel over plain Triton's split-K kernel "
                           "autotuned over measure.plain_triton.LINEAR_CONFIGS, 3 interleaved pairs per shape; the "
                           "lowest of the 31 shapes' ratios", unit="× plain Triton (worst shape)",
                           target=CourseTarget(1.0, None, "faster than plain Triton on every shape"))),
        Figure("unseen_families", "6 families the table lacks, geomean", unseen_measure,
               Expectation(0.8, 1.5, "F.linear", UNSEEN_WHY, unit="× F.linear (geomean)",
                           target=CourseTarget(1.0, None, "geomean ≥ 1.00× F.linear on the families left out, no "
                                               "shape below 0.85×"))),
        Figure("decode_roofline", "decode (M ≤ 16), lowest share of roofline", roofline_measure,
               Expectation(0.4, 1.1, "copy", "W's bytes over the kernel's time with L2 emptied before each call "
                           "by reading another buffer (measure.timing.cold_kernel_ms; do_bench's overwrite would "
                           "leave L2's lines dirty, for the kernel to write back), as a fraction of the device "
                           "copy's bandwidth (read and write) measured in the same run; the lowest over the ten "
                           "shapes with M ≤ 16",
                           unit="of the copy's bandwidth (lowest)",
                           target=CourseTarget(0.85, None, "at least 85% of the memory roofline"))),
        Figure("decode_of_read", "decode (M ≤ 16), lowest share of a read of W", of_read_measure,
               Expectation(0.5, 1.2, "a read of W", "the kernel's time against a kernel that only reads W's "
                           "bytes, timed the same way (nvidia.read_ceiling: W in [64, 128] boxes through a ring of "
                           "four TMA slots, two programs an SM): the ceiling at W's own size, its launch and first "
                           "copies' latency included; the read's time over the kernel's, the lowest over the ten "
                           "shapes with M ≤ 16", unit="of a read of W (lowest)")),
        Figure("block_prefill", "block, 2048 tokens", block_measure(2048),
               Expectation(0.7, 1.5, "torch", "an 8B-class block (its attention projections and gated MLP), "
                           "torch's time over the time with its 7 linear layers swapped for linear(); interleaved "
                           "do_bench pairs", unit="× torch's block")),
        Figure("block_decode", "block, 16 tokens", block_measure(16),
               Expectation(0.7, 1.5, "torch", "the same block for one decode step of 16 tokens",
                           unit="× torch's block")),
        Figure("block_prefill_graph", "block, 2048 tokens, CUDA graph", block_graph_measure(2048),
               Expectation(0.7, 1.5, "torch", BLOCK_GRAPH_WHY, unit="× torch's block (graph)")),
        Figure("block_decode_graph", "block, 16 tokens, CUDA graph", block_graph_measure(16),
               Expectation(0.7, 1.5, "torch", BLOCK_GRAPH_WHY, unit="× torch's block (graph)")),
    ],
)
