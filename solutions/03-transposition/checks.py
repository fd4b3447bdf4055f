"""Lesson 03's checks: the layout follows the strides, in machine code, in sectors, in TB/s."""
from __future__ import annotations

import dataclasses

from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks, Passed, Reference
from gluon_course.grading.gemm import access_masks_problem
from gluon_course.grading.checks import on_classes
from gluon_course.grading.classes import AMPERE_ADA_RTX50, datasheet_figures
from gluon_course.grading.facts import Facts, facts_check
from gluon_course.machine import compile_cached, warp_size
from gluon_course.measure import Measurement, random_tensor
from gluon_course.measure.copies import check_copy, copy_figure, empty_like_strides
from gluon_course.memory.coalescing import sectors_per_request
from gluon_course.memory.strides import layout_along

# The machine-code checks compile for a 4096 × 4096 float32 tensor: every size and stride is a multiple of 16,
# as it is for the measured tensors, so the compiler may use 16-byte accesses wherever the layout allows.
SIDE = 4096
ROW_MAJOR = (SIDE, 1)          # a contiguous tensor
TRANSPOSED = (1, SIDE)         # x.T of a contiguous tensor: the same memory, axes swapped
EVERY_OTHER_ROW = (2 * SIDE, 1)  # x[::2] of a contiguous (2 * SIDE, SIDE) tensor

# "The same kernel as before": lesson 02's winner put in 2D, one element per thread (R=1), the lanes along
# axis 1 whatever the strides, tiles handed out down axis 0 first (as a 2D grid with rows on axis 0 does).
PLAIN = dict(R=1, fast_axis=1, tiles_first=0)
DESIGN = "NVIDIA H200, this course's design run 2026-11-29"
UPSTREAM = "GB200, upstream python/tutorials/gluon/02-layouts.py comment"


def plan(mod, target, strides, shape=(SIDE, SIDE), **kwargs):
    return mod.plan_copy(shape, strides, warp_size=warp_size(target), **kwargs)


def compiled(mod, target, strides, fast_axis, R=4, shape=(SIDE, SIDE), out_strides=None, num_warps=4):
    """Compile copy_2d_kernel with the layout along ``fast_axis`` (16 elements per thread), as a launch on tensors
    of these strides would: Triton turns an integer argument equal to 1 into a constant and notes which ones are
    multiples of 16; we say the same here. The layout is built here, so the kernel is checked on its own."""
    ws = warp_size(target)
    layout = layout_along(fast_axis, 2, R, num_warps, ws)
    along = 16 * ws * num_warps
    block = (1, along) if fast_axis == 1 else (along, 1)
    out_strides = strides if out_strides is None else out_strides
    signature = {"in_ptr": "*fp32", "out_ptr": "*fp32"}
    constexprs = {"BLOCK_M": block[0], "BLOCK_N": block[1], "layout": layout, "AXIS0_TILES_FIRST": fast_axis == 0}
    aligned = ["in_ptr", "out_ptr"]
    ints = {"M": shape[0], "N": shape[1], "in_stride_m": strides[0], "in_stride_n": strides[1],
            "out_stride_m": out_strides[0], "out_stride_n": out_strides[1]}
    for name, value in ints.items():
        if value == 1:
            constexprs[name] = 1
        else:
            signature[name] = "i32"
            if value % 16 == 0:
                aligned.append(name)
    return compile_cached(mod.copy_2d_kernel, target, signature=signature, constexprs=constexprs,
                          aligned=tuple(aligned), num_warps=num_warps)


def predicted_sectors(mod, strides, target="sm_90", shape=(SIDE, SIDE), **kwargs) -> float:
    """The toolkit's sectors per request for the plan's layout on one tile of a tensor with ``strides``."""
    p = plan(mod, target, strides, shape, **kwargs)
    return sectors_per_request(p.layout, list(p.block), strides, element_bytes=4)


# -- CPU checks ------------------------------------------------------------------------------------------------

def chooses_from_strides(mod):
    """Row-major, transposed and every-other-row inputs: lanes on the unit-stride axis, tiles along it first."""
    for label, strides, fast in (("row-major", ROW_MAJOR, 1), ("transposed", TRANSPOSED, 0),
                                 ("every other row", EVERY_OTHER_ROW, 1)):
        for R, want in ((1, 4.0), (4, 16.0)):
            got = predicted_sectors(mod, strides, R=R)
            if got != want:
                return (f"{label} input (strides {strides}), R={R}: the chosen layout touches {got:.1f} sectors per "
                        f"request, expected {want:.1f}: the lanes must walk the axis whose stride is 1")
        p = plan(mod, "sm_90", strides, R=4)
        if p.fast_axis != fast or p.axis0_tiles_first != (fast == 0):
            return (f"{label} input (strides {strides}): fast axis {p.fast_axis}, tiles along axis 0 first "
                    f"{p.axis0_tiles_first}; expected fast axis {fast} and neighbouring programs along it")
        along = p.block[fast]
        if along != 2048 or p.block[1 - fast] != 1:
            return f"{label} input: tile {p.block}, expected 2048 elements along axis {fast} and 1 along the other"
    tall = plan(mod, "sm_90", (5, 1), shape=(70_000, 5), R=1)
    if tall.grid != (70_000,):
        return f"a 70000 × 5 tensor with 1-row tiles got grid {tall.grid}; expected one flat axis of 70000 programs"
    return None


def refuses_no_unit_stride(mod):
    try:
        mod.plan_copy((4, 6), (12, 2))
    except ValueError as e:
        return None if "stride" in str(e) else f"the error does not mention the strides: {e}"
    return "plan_copy accepted a tensor with strides (12, 2), which has no contiguous axis"


def refuses_oversized_grids(mod):
    for grid in ((1, 65_536), (1, 1, 65_536), (2**31,)):
        try:
            mod.require_grid_fits(grid)
        except ValueError as e:
            if "65535" not in str(e) and "2**31" not in str(e):
                return f"grid {grid} refused without saying the limit: {e}"
            continue
        return f"require_grid_fits accepted grid {grid}, which CUDA cannot launch"
    mod.require_grid_fits((2**31 - 1, 65_535, 65_535))
    return None


def predicts_ncu(mod):
    for which, want in NCU_PREDICTED.items():
        got = predicted_sectors(mod, TRANSPOSED, **NCU_LAUNCH[which])
        if got != want:
            return f"{which}: the toolkit predicts {got:.2f} sectors/request, the ncu figure's range assumes {want:.2f}"
    return None


# Exact counts from the pinned Triton 3.9.0, 16 float32 per thread (NVIDIA: 1 × 2048 tile, AMD: 1 × 4096).
EXPECTED = {
    "sm_90": {"row-major, row layout": ({"LDG.E.128": 4}, {"STG.E.128": 4}),
              "x.T, row layout": ({"LDG.E": 16}, {"STG.E": 16}),
              "x.T, column layout": ({"LDG.E.128": 4}, {"STG.E.128": 4})},
    "gfx950": {"row-major, row layout": ({"global_load_dwordx4": 4}, {"global_store_dwordx4": 4}),
               "x.T, row layout": ({"global_load_dword": 16}, {"global_store_dword": 16}),
               "x.T, column layout": ({"global_load_dwordx4": 4}, {"global_store_dwordx4": 4})},
}
CASES = {"row-major, row layout": (ROW_MAJOR, 1), "x.T, row layout": (TRANSPOSED, 1),
         "x.T, column layout": (TRANSPOSED, 0)}


def _widths(target):
    def run(mod):
        for case, (loads, stores) in EXPECTED[target].items():
            strides, axis = CASES[case]
            k = compiled(mod, target, strides, axis, R=4)
            got = (dict(k.global_loads()), dict(k.global_stores()))
            if got != (loads, stores):
                return f"{case}: loads {got[0]}, stores {got[1]}; expected loads {loads}, stores {stores}"
        return None
    return run


def blackwell(mod):
    k = compiled(mod, "sm_100", TRANSPOSED, 0, R=4)
    got = dict(k.global_loads())
    return None if got == {"LDG.E.128": 4} else f"sm_100, x.T with the column layout: loads {got}"


# x.T with the column layout on the GPUs before Hopper and on RTX 50, against sm_90 (Triton 3.9.0, R=4, 4 warps): the
# same four 16-byte loads and stores; two registers more on sm_86, sm_89 and sm_120.
COLUMN_LAYOUT = {
    "sm_90": Facts({"LDG.E.128": 4, "STG.E.128": 4}, registers=32),
    "sm_80": Facts({"LDG.E.128": 4, "STG.E.128": 4}, registers=32),
    "sm_86": Facts({"LDG.E.128": 4, "STG.E.128": 4}, registers=34),
    "sm_89": Facts({"LDG.E.128": 4, "STG.E.128": 4}, registers=34),
    "sm_120": Facts({"LDG.E.128": 4, "STG.E.128": 4}, registers=34),
}


def column_layout_on_transposed(mod, target):
    return compiled(mod, target, TRANSPOSED, 0, R=4)


def masked_on_both_axes(mod):
    """Both bounds are visible in the compiled code: M and N must each reach a comparison."""
    k = compiled(mod, "sm_90", ROW_MAJOR, 1)
    missing = {"M", "N"} - k.compared_arguments()
    if missing:
        return (f"{' and '.join(sorted(missing))} never compared with the indices: the mask must cover both axes, "
                "or the last tiles of a row or a column read and write outside the tensor")
    # Each access's own mask, exactly rows < M and columns < N: a masked load does not mask the store.
    return (access_masks_problem(k, "load", ("M", "N"), "the load")
            or access_masks_problem(k, "store", ("M", "N"), "the store"))


# -- GPU checks ------------------------------------------------------------------------------------------------

# Not the toolkit's ODD_SHAPES_2D: a one-column slice of a wider tensor has no axis of stride 1, which this copy
# refuses by design (plan_copy says so); every shape here keeps both axes longer than one where it matters.
ODD_SHAPES = ((5, 33), (1, 1), (33, 2049), (2047, 3), (48, 4112), (1000, 1003))


def _inputs():
    def column_slice(shape):      # a view of a wider tensor: reads past column N would still be mapped memory
        M, N = shape
        return random_tensor((M, N + 4096))[:, :N]

    def transposed(shape):
        return random_tensor(shape[::-1]).T

    def every_other_row(shape):
        return random_tensor((2 * shape[0], shape[1]))[::2]

    def misaligned(shape):        # starts 4 bytes into its buffer: no 16-byte accesses allowed
        M, N = shape
        return random_tensor((M * N + 1,))[1:].view(M, N)

    def contiguous(shape):
        return random_tensor(shape)

    row_major = lambda shape: (shape[1], 1)
    column_major = lambda shape: (1, shape[0])
    # (what, make_input, out_strides): the column slice comes first (see tests/plants/lesson03.py).
    return [("a column slice of a wider tensor", column_slice, row_major),
            ("a contiguous tensor", contiguous, row_major),
            ("x.T into a column-major output", transposed, column_major),
            ("x.T into a row-major output", transposed, row_major),
            ("every other row", every_other_row, row_major),
            ("a misaligned view", misaligned, row_major)]


def exact_on_odd_shapes(mod):
    for what, make_input, out_strides in _inputs():
        problem = check_copy(lambda x, out: mod.copy_2d(x, out), shapes=ODD_SHAPES, make_input=make_input,
                             out_strides=out_strides)
        if problem:
            return f"{what}, {problem}"
    for config in SWEEP + [PLAIN]:
        for what, make_input, out_strides in _inputs()[1:3]:
            problem = check_copy(lambda x, out: mod.copy_2d(x, out, **config), shapes=((33, 2049), (1000, 1003)),
                                 make_input=make_input, out_strides=out_strides)
            if problem:
                return f"{config}, {what}, {problem}"
    return None


def grid_axis_1_limit(mod):
    import torch

    x = random_tensor((4, 64))
    out = torch.empty_like(x)
    p = mod.plan_copy(tuple(x.shape), tuple(x.stride()))
    try:
        mod.launch_plan(dataclasses.replace(p, grid=(1, 65_536)), x, out)
        return "launch_plan launched grid (1, 65536) without a word"
    except ValueError:
        pass
    except RuntimeError as e:
        return f"launch_plan left grid (1, 65536) to CUDA, which only said: {str(e).strip().splitlines()[-1]}"
    try:
        mod.copy_2d_kernel[(1, 65_536)](x, out, 4, 64, 64, 1, 64, 1, BLOCK_M=p.block[0], BLOCK_N=p.block[1],
                                        layout=p.layout, AXIS0_TILES_FIRST=p.axis0_tiles_first, num_warps=p.num_warps)
        torch.cuda.synchronize()
        return "a raw launch with 65536 programs on grid axis 1 ran: this GPU has a larger limit than CUDA documents"
    except RuntimeError as e:
        message = str(e).strip().splitlines()[-1]
        if "invalid argument" not in message.lower():
            return f"the raw launch failed, but not with 'invalid argument': {message}"
    problem = check_copy(lambda x, out: mod.copy_2d(x, out, R=1), shapes=((65_537, 3),))
    if problem:
        return f"the flat grid on a 65537-row tensor: {problem}"
    return Passed(f"CUDA said: {message}")


# -- figures ---------------------------------------------------------------------------------------------------

BIG = 16_384                   # 16384 × 16384 float32 = 1 GiB: every figure streams from HBM
# (R, block_fast, rows, num_warps): what might still cost bandwidth once the tiles are handed out along the
# contiguous axis: the access width (R), the work per program (rows, block_fast), the warps per program.
SWEEP = [dict(R=1, block_fast=2048, rows=1, num_warps=4), dict(R=2, block_fast=2048, rows=1, num_warps=4),
         dict(R=4, block_fast=2048, rows=1, num_warps=4), dict(R=2, block_fast=2048, rows=2, num_warps=4),
         dict(R=4, block_fast=2048, rows=4, num_warps=4), dict(R=4, block_fast=4096, rows=1, num_warps=8)]
_BEST: dict[int, tuple] = {}   # id(module) -> (module, best config, its measurement, every result)


def _contiguous(shape=(BIG, BIG)):
    return lambda: random_tensor(shape)


def _transposed():
    return lambda: random_tensor((BIG, BIG)).T


def _figure(mod, config, make_input, label, make_output=empty_like_strides):
    """Bandwidth of copy_2d with ``config`` (checked exact first); the output has the input's strides unless
    ``make_output`` says otherwise."""
    return copy_figure(lambda x, out: mod.copy_2d(x, out, **config), make_input=make_input,
                       make_output=make_output, label=label)


def plain_figure(mod):
    return _figure(mod, PLAIN, _contiguous(), "plain 2D copy")


def config_name(c: dict) -> str:
    return f"R={c['R']}, tile {c['rows']}×{c['block_fast']}, {c['num_warps']} warps"


def best_config(mod) -> tuple[dict, Measurement, list]:
    """The sweep, measured once per process and lesson module: (best config, its measurement, every result)."""
    if id(mod) not in _BEST:
        results = [(config, _figure(mod, config, _contiguous(), "2D copy " + config_name(config))) for config in SWEEP]
        config, best = max(results, key=lambda r: r[1].value)
        _BEST[id(mod)] = (mod, config, best, results)   # the module is kept, so its id is never reused
    return _BEST[id(mod)][1:]


def best_figure(mod):
    config, best, results = best_config(mod)
    sweep = [{"config": config_name(c), "fraction": m.value, "tbs": m.details["tbs"]} for c, m in results]
    # The winning config can change from run to run (they are close): details, not text.
    return Measurement(best.value, best.text,
                       {**best.details, "config": config_name(config), "sweep": sweep})


def transposed_same(mod):
    return _figure(mod, PLAIN, _transposed(), "x.T with the plain kernel")


def transposed_chosen(mod):
    config, _, _ = best_config(mod)
    m = _figure(mod, config, _transposed(), "x.T with the layout chosen from its strides")
    return Measurement(m.value, m.text + " (the best config, mirrored)", {**m.details, "config": config_name(config)})


def strided_vs_torch(mod):
    import torch

    from gluon_course.measure import bench_ms, tbs

    config, _, _ = best_config(mod)
    base = random_tensor((2 * BIG, BIG))
    x = base[::2]
    m = _figure(mod, config, lambda: x, "x[::2] into a contiguous tensor",
                make_output=lambda x: torch.empty(x.shape, dtype=x.dtype, device=x.device))
    torch_ms = bench_ms(lambda: x.contiguous())
    torch_tbs = tbs(2 * x.numel() * x.element_size(), torch_ms)
    gluon_tbs = m.details["tbs"]
    return Measurement(gluon_tbs / torch_tbs, f"Gluon {gluon_tbs:.2f} TB/s, torch {torch_tbs:.2f} TB/s",
                       {**m.details, "torch_tbs": torch_tbs, "config": config_name(config)})


# -- Nsight Compute ---------------------------------------------------------------------------------------------

NCU_SIDE = 4096                # 64 MiB: ncu replays the launch in seconds
NCU_LAUNCH = {"row": PLAIN, "chosen": dict(R=1)}
NCU_PREDICTED = {"row": 32.0, "chosen": 4.0}   # checked on the CPU by predicts_ncu


def ncu_launch(module_file: str, which: str) -> None:
    """The profiled process (see gluon_course.measure.ncu): ONE launch of the lesson module's copy on x.T."""
    import torch

    from gluon_course.course import load_module_file

    mod = load_module_file(module_file)
    x = random_tensor((NCU_SIDE, NCU_SIDE)).T
    out = empty_like_strides(x)
    mod.copy_2d(x, out, **NCU_LAUNCH[which])
    torch.cuda.synchronize()


def ncu_figure(which: str):
    def measure(mod):
        from gluon_course.measure import require_gpu
        from gluon_course.measure.ncu import REQUESTS, SECTORS, profile_launch

        require_gpu("an Nsight Compute profile")
        values = profile_launch(f"{__file__}:ncu_launch", [mod.__file__, which],
                                kernel="copy_2d_kernel")
        sectors, requests = values[SECTORS], values[REQUESTS]
        return Measurement(sectors / requests,
                           f"{sectors / 1e6:.3f} M sectors / {requests / 1e6:.4f} M requests",
                           {"sectors": sectors, "requests": requests, "predicted": NCU_PREDICTED[which]})
    return measure


def _ncu_range(which: str, why: str) -> Expectation:
    want = NCU_PREDICTED[which]
    return Expectation(round(0.9 * want, 2), round(1.1 * want, 2), "toolkit prediction",
                       f"{why}; the range is the toolkit's prediction ({want:.1f}) ± 10%, set before the first "
                       "recorded run",
                       (Reference(want, "sectors/request", "gluon_course.memory.coalescing.sectors_per_request, computed on "
                                  "the CPU from the layout and the strides"),), unit="sectors/request")


WHY_PLAIN = ("the design run's 2D copy with lesson 02's layout (R=1, lanes along axis 1, a flattened grid walking "
             "down the rows first) reached 85% of the copy; this is that kernel. The range is wide: how much the "
             "program order costs depends on the GPU's memory system")
WHY_BEST = ("once the tiles are handed out along the contiguous axis and the tile is tuned, a 2D copy streams like the "
            "1D tile copy of lesson 02 (96–98% on the H200); the range leaves room for other GPUs of the class")
# Where the H200's ratios do not carry over: GPUs with fewer DRAM bytes per SM clock hide more of a kernel's
# instructions behind memory, the plain kernel's and torch's alike.
BYTES_PER_CLOCK = (f"DRAM bytes per SM clock, from the vendors' datasheets: {datasheet_figures('bytes_per_sm_clock')}. "
                   "Written for the class, not run on one")
PLAIN_CLASSES = on_classes(AMPERE_ADA_RTX50, 0.65, 1.05,
                           "the program order cost the H200 11–15%; a GPU with fewer DRAM bytes per SM clock hides "
                           "more of it, so on this class the range keeps the H200's floor and lets the copy reach "
                           f"the device copy. {BYTES_PER_CLOCK}")
STRIDED_CLASSES = on_classes(AMPERE_ADA_RTX50, 0.95, None,
                             "torch's strided copy lost a third of the copy on the H200 to its per-element index "
                             "arithmetic; a GPU with fewer DRAM bytes per SM clock hides that arithmetic behind memory, "
                             "so torch comes closer to the copy and the Gluon copy's lead may vanish: on this class "
                             f"it must not fall behind torch. {BYTES_PER_CLOCK}")
CHECKS = LessonChecks(
    targets=("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "gfx950"),
    teaches="2D copies, coalescing from strides, a layout chosen from the strides, the grid-axis limit",
    machine_code=[
        Check("plan_follows_strides", "plan_copy follows the strides: lanes on the unit-stride axis (4.0 "
              "sectors/request at R=1, 16.0 at R=4), tiles along it first, one flat grid axis", chooses_from_strides),
        Check("refuses_no_unit_stride", "plan_copy refuses a tensor with no unit stride, saying why",
              refuses_no_unit_stride),
        Check("refuses_oversized_grids", "require_grid_fits refuses what CUDA cannot launch (axes 1 and 2: 65535 "
              "programs)", refuses_oversized_grids),
        Check("predicts_ncu", "the toolkit predicts 32.0 sectors/request for the row layout on x.T and 4.0 for the "
              "chosen one", predicts_ncu),
        Check("widths_sm_90", "sm_90: 4 × LDG.E.128 row-major; on x.T 16 × LDG.E with the row layout, 4 × LDG.E.128 "
              "with the column layout", _widths("sm_90"), target="sm_90"),
        Check("widths_gfx950", "gfx950: 4 × global_load_dwordx4 row-major; on x.T 16 × global_load_dword with the "
              "row layout, 4 × global_load_dwordx4 with the column layout", _widths("gfx950"), target="gfx950"),
        Check("column_layout_sm_100", "sm_100: x.T with the column layout gives 4 × LDG.E.128", blackwell,
              target="sm_100"),
        Check("masked_on_both_axes", "sm_90: the mask compares with both M and N", masked_on_both_axes,
              target="sm_90"),
        *(facts_check(f"column_layout_{t}", t, column_layout_on_transposed, COLUMN_LAYOUT, num_warps=4,
                      what="x.T with the column layout") for t in AMPERE_ADA_RTX50),
    ],
    correctness=[
        Check("exact_on_odd_shapes", "copy_2d is exact on odd shapes and strides: slices, x.T, every other row, "
              "misaligned (random data, poisoned and guarded output)", exact_on_odd_shapes, gpu=True),
        Check("grid_axis_1_limit", "a raw launch with 65536 programs on grid axis 1 fails with CUDA's 'invalid "
              "argument'; the launcher refuses it first; the flat grid copies a 65537-row tensor", grid_axis_1_limit,
              gpu=True),
    ],
    figures=[
        Figure("copy2d_plain", "2D copy, plain (R=1, rows first)", plain_figure,
               Expectation(0.65, 0.97, "copy", WHY_PLAIN,
                           (Reference(0.894, "of copy", "NVIDIA H200, this course's first recorded run, 2026-11-29"),
                            Reference(0.85, "of copy", f"{DESIGN}: 3.62 TB/s"), Reference(6.260, "TB/s", UPSTREAM)),
                           classes=PLAIN_CLASSES)),
        Figure("copy2d_best", "2D copy, best of 6 configs", best_figure,
               Expectation(0.88, None, "copy", WHY_BEST,
                           (Reference(0.981, "of copy", "NVIDIA H200, this course's first recorded run, 2026-11-29"),
                            Reference(0.98, "of copy", f"{DESIGN}: 1D tile copy, R=2: 4.19 TB/s"),
                            Reference(6.574, "TB/s", f"{UPSTREAM} (1D copy)")),
                           target=CourseTarget(0.95, why="the course aims for a 2D copy within 5% of the device "
                                               "copy: 98.1% on the H200 (2026-11-29)")), headline=True),
        Figure("transposed_same_layout", "x.T, the plain kernel", transposed_same,
               Expectation(None, 0.30, "copy",
                           "every lane of a warp reads its own 32-byte sector for 4 useful bytes: the design run "
                           "measured 8.6% of the copy; any GPU whose sectors are 32 bytes stays far below a third",
                           (Reference(0.086, "of copy", f"{DESIGN}: 0.367 TB/s"), Reference(0.774, "TB/s", UPSTREAM)),
                           target=CourseTarget(None, 0.20, why="the crater the lesson shows: below 20% of the copy")),
               headline=True),
        Figure("transposed_chosen_layout", "x.T, layout from its strides", transposed_chosen,
               Expectation(0.88, None, "copy",
                           "the chosen layout makes x.T's copy the mirror image of the row-major one; the design run "
                           "measured 96% with a column layout",
                           (Reference(0.96, "of copy", f"{DESIGN}: 4.13 TB/s"), Reference(6.590, "TB/s", UPSTREAM)),
                           target=CourseTarget(0.95, why="as the row-major copy: within 5% of the device copy")),
               headline=True),
        Figure("strided_vs_torch", "x[::2] → contiguous, vs torch", strided_vs_torch,
               Expectation(1.1, None, "torch.contiguous",
                           "torch's .contiguous() on a strided view ran at 2.89 TB/s in the design run, far below the "
                           "copy ceiling; a 2D copy that reads whole rows beats it",
                           (Reference(1.44, "× torch", "NVIDIA H200, this course's first recorded run, 2026-11-29"),
                            Reference(1.25, "× torch", f"{DESIGN}: torch 2.89 TB/s, plain 2D Gluon 3.60 TB/s"),
                            Reference(2.12, "× torch", f"{UPSTREAM}: 6.258 vs 2.946 TB/s")), unit="× torch",
                           target=CourseTarget(1.3, why="the course aims for 1.3× torch.contiguous: 1.44× on the "
                                               "H200 (2026-11-29)"), classes=STRIDED_CLASSES), headline=True),
        Figure("ncu_row_layout", "ncu: x.T, row layout", ncu_figure("row"),
               _ncu_range("row", "lanes along axis 1 of x.T are 16 KiB apart: every lane its own sector")),
        Figure("ncu_chosen_layout", "ncu: x.T, chosen layout", ncu_figure("chosen"),
               _ncu_range("chosen", "lanes along axis 0 of x.T read 32 × 4 contiguous bytes: 4 sectors")),
    ],
)
