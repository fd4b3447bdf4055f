"""Lesson 35's checks and figures: GEMMs with the model's elementwise work in their epilogues (SwiGLU, the residual
add), launched back to back with programmatic dependent launch (PDL), and the transformer block built from them.

Without a GPU:

- ``model_problem``: the kernel in the host model on small integers (exact sums) at odd shapes, C against the
  unfused math in fp64 within the course's bf16 tolerance, each element of C written once; under PDL the programs'
  traces read for what happened before ``gdc_wait`` (``pdl_order``).
- ``launcher_problem``: the lesson's own launcher (``fused_linear``) on CPU tensors, the GPU stood in for by the
  host model (``model.launcher.ModelGPU``): its configuration, descriptors, grid and argument order.
- ``compiled``: the kernel for sm_90 at one configuration; ``wait_order`` reads its TTGIR for the producer's order
  (W's first copies, then the wait, then A's). ``PDL_WAIT`` and ``PDL_LAUNCH`` are what griddepcontrol becomes in SASS.

On a GPU: ``correct`` (every epilogue, with and without PDL, odd shapes and the block's own, poisoned and guarded C,
in a child process) and ``block_measure`` (the whole block in a CUDA graph against torch's, interleaved, beside the
step's HBM roofline from the device copy measured in the same run).
"""
from __future__ import annotations

import functools
import json

import numpy as np

# What griddepcontrol becomes in sm_90's SASS (ptxas of Triton 3.9.0): .wait is ACQBULK, .launch_dependents is
# PREEXIT. LLVM may copy the wait onto two exclusive paths (the producer's loop before it run or not), so the SASS
# holds at least one ACQBULK.
PDL_WAIT, PDL_LAUNCH = "ACQBULK", "PREEXIT"

# The host model's tile: small enough for numpy, with tails past every edge at MODEL_SHAPES (M, N, K).
MODEL_CFG = {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32, "STAGES": 3, "num_warps": 4, "GROUP_M": 8, "LOAD_REGS": 40}
# M = 1, 17, 100 and 128 (a whole number of 64-row tiles: only the columns reach past C); K = 40 has fewer K steps (2)
# than the ring has slots (3), with several tiles a program.
MODEL_SHAPES = ((1, 72, 200), (17, 40, 104), (100, 104, 72), (128, 104, 72), (100, 104, 40))
# The launcher at its own configurations (3 SMs): a shape of a few K steps, and one of more K steps than slots
# whose tiles are fewer than the SMs.
LAUNCHER_SHAPES = ((17, 40, 104), (17, 40, 1000))
# The decode path's tile in the host model: swap-AB (tiles of Cᵀ, 64 rows of W by 16 tokens) with K split in 3.
MODEL_DECODE_CFG = {"BLOCK_M": 64, "BLOCK_N": 16, "BLOCK_K": 32, "STAGES": 3, "num_warps": 4, "GROUP_M": 8,
                    "LOAD_REGS": 40, "SPLIT_K": 3, "SWAP_AB": True, "W_FIRST": 1}
# Odd numbers of tokens up to 16, widths past the tiles, K of 7, 5 and 4 steps of 32 (slices of 2 or 3, 1 or 2 steps).
MODEL_DECODE_SHAPES = ((1, 72, 200), (5, 104, 136), (16, 40, 104))
# fused_linear at decode (3 SMs): its own pick (lesson 32's), with K split and not.
LAUNCHER_DECODE_SHAPES = ((1, 40, 1000), (7, 72, 520), (16, 328, 264))
CHILD_LIMIT_S = 300

# The 8B-class block of lesson 32 (gluon_course.measure.linear.Block): its GEMMs as the fused block runs them,
# (name, C's columns, K, epilogue).
HIDDEN, FFN = 4096, 14336
BLOCK_GEMMS = (("qkv", 6144, HIDDEN, "plain"), ("o", HIDDEN, HIDDEN, "residual"),
               ("gate_up", FFN, HIDDEN, "swiglu"), ("down", HIDDEN, FFN, "residual"))


def not_modelled(e):
    """What a host-model check says when the kernel uses an operation the model does not know (attention's sentence:
    a check that could not be made here, not a failure)."""
    from .attention import not_modelled as said

    return said(e)


def _integers(rng, shape, low=-2, high=2):
    return rng.integers(low, high + 1, size=shape).astype(np.float32)


def operands(epilogue: str, M: int, N: int, K: int, seed: int = 0) -> dict:
    """Operands whose products and sums are exact in fp32 but whose sums need more bits than bf16 keeps, so that a
    second rounding (C rounded before R is added, gate and up rounded before SiLU) changes the result: A in steps of
    1/128 (1/1024 for SwiGLU, so that gate's sums spread over SiLU's bend, a few units, rather than its straight
    parts), W small integers, R integers and quarters. For SwiGLU A's first row is 64 times larger: gate's sums of
    ±100 and more, where e^g overflows fp32 (a SiLU written as g·e^g / (1 + e^g) gives NaN there). W_up for SwiGLU
    and R for the residual; None where the epilogue takes none."""
    rng = np.random.default_rng(seed)
    a = _integers(rng, (M, K), -128, 128) / (1024 if epilogue == "swiglu" else 128)
    if epilogue == "swiglu":
        a[0] *= 64
    w = _integers(rng, (N, K), -8, 8)
    w_up = _integers(rng, (N, K), -8, 8) if epilogue == "swiglu" else None
    r = _integers(rng, (M, N), -256, 256) / 4 if epilogue == "residual" else None
    return {"a": a, "w": w, "w_up": w_up, "r": r}


def reference(epilogue: str, a, w, r=None, w_up=None):
    """The unfused math in fp64: A·Wᵀ; SiLU(A·W_gateᵀ) · (A·W_upᵀ) (``w`` is W_gate); A·Wᵀ + R."""
    a = a.astype(np.float64)
    out = a @ w.astype(np.float64).T
    if epilogue == "swiglu":
        up = a @ w_up.astype(np.float64).T
        with np.errstate(over="ignore"):
            return out / (1.0 + np.exp(-out)) * up
    return out + r.astype(np.float64) if epilogue == "residual" else out


def bf16_round(x) -> np.ndarray:
    """x (fp64) rounded once to bf16, to nearest even, as fp64."""
    import torch

    return torch.from_numpy(np.asarray(x, np.float64)).to(torch.bfloat16).double().numpy()


def bound(epilogue: str, want) -> np.ndarray:
    """How far C may be from the fp64 ``want``, element by element. The plain and residual sums are exact in fp32 on
    ``operands``, so C must be ``want`` rounded once to bf16, exactly: 0. SwiGLU's SiLU is fp32 arithmetic, a few fp32
    roundings (2^-20 of |want| covers them) before the one rounding to bf16, half an ulp of bf16 at |want|."""
    if epilogue != "swiglu":
        return np.zeros_like(want)
    magnitude = np.maximum(np.abs(want), 2.0 ** -100)
    ulp = 2.0 ** (np.floor(np.log2(magnitude)) - 7)             # bf16 keeps 8 significant bits
    return 0.5 * ulp * (1 + 2 ** -6) + 2.0 ** -20 * np.abs(want)


def compare(got, want, writes, epilogue: str) -> str | None:
    """None, or which elements of C are never written, written twice or wrong (the first of them named). ``want`` is
    the fp64 reference: the plain and residual epilogues must give it rounded once to bf16, exactly."""
    target = bf16_round(want) if epilogue != "swiglu" else want
    wrong = np.abs(got - target) > bound(epilogue, want)
    if epilogue == "swiglu":
        wrong |= ~np.isfinite(got)
    for problem, mask in (("never written (still NaN)", writes == 0),
                          ("written more than once", writes > 1),
                          ("wrong", wrong & (writes == 1))):
        if mask.any():
            i, j = map(int, np.argwhere(mask)[0])
            detail = ""
            if problem == "wrong":
                detail = f": got {got[i, j]:.9g}, expected {target[i, j]:.9g}"
                if epilogue != "swiglu" and np.all(np.abs(got - target)[mask] <= 2 * 2.0 ** (np.floor(np.log2(
                        np.maximum(np.abs(target[mask]), 2.0 ** -100))) - 7)):
                    detail += (" (each within two bf16 steps of the exact result rounded once: is it rounded twice, "
                               "or R added in bf16?)")
            return f"{int(mask.sum())} element(s) of C {problem}; the first is C[{i}, {j}]{detail}"
    return None


def _interleaved(mod, w, w_up, block_n: int):
    """The lesson's own interleave_gate_up on numpy operands."""
    import torch

    return mod.interleave_gate_up(torch.from_numpy(w), torch.from_numpy(w_up), block_n).numpy()


def model_launch(mod, epilogue: str, cfg: dict, pdl: bool, programs: int, a, w, c_shape, r=None, r_pad: int = 0,
                 order=None, launches: int = 1):
    """The lesson's fused_kernel in the host model on numpy A (M × K), W (N × K; the interleaved W for SwiGLU) and R:
    C's values (fp32 of its bf16), how often each element was written, and the programs' traces. ``r_pad``: R's rows
    lie that many elements further apart than its width (R a column slice of a wider matrix). With swap-AB
    (``cfg["SWAP_AB"]``) the kernel's A is W and its B the activations, M and N exchanged; with split-K its scratch
    and counters are the model's, and every counter must be back at 0 after the launch. ``order``: the programs'
    order (``run``'s). ``launches``: that many launches back to back on the same scratch (the last one's C, writes
    and traces are returned)."""
    from triton.experimental.gluon import language as gl

    from ..model import Buffer, HostTensorDescriptor, ModelError, Pointer
    from ..model.run import run as run_kernel

    ce = mod.constexprs(cfg, epilogue, pdl)
    swap, split = bool(cfg.get("SWAP_AB")), int(cfg.get("SPLIT_K", 1))
    M, K = a.shape
    N = w.shape[0]
    a_buf = Buffer("A", a.astype(np.float32), gl.bfloat16)
    w_buf = Buffer("W", w.astype(np.float32), gl.bfloat16)
    if r is not None:
        # R's own memory is the slice of a wider matrix: the columns past N belong to another tensor (the model
        # refuses any read of them only where they lie past the whole buffer; a read of them here gives wrong sums).
        wide = np.zeros((r.shape[0], r.shape[1] + r_pad), np.float32)
        wide[:, :r.shape[1]] = r
        r_buf = Buffer("R", wide, gl.bfloat16)
        r_stride = r.shape[1] + r_pad
    a_block, b_block, c_block = mod.blocks(cfg, epilogue)
    tiles = mod.tiles_of(cfg, epilogue, M, N)
    partial = Buffer("split-K slices", np.zeros(max(1, tiles * split * cfg["BLOCK_M"] * cfg["BLOCK_N"]), np.float32),
                     gl.float32)
    arrivals = Buffer("split-K counters", np.zeros(tiles, np.float32), gl.int32)
    grid = min(tiles * split, programs)
    for _ in range(launches):
        c_buf = Buffer("C", np.zeros(c_shape, np.float32), gl.bfloat16, poison=True)
        if r is None:
            r_buf, r_stride = c_buf, c_shape[1]
        kernel_a, kernel_b = (w_buf, a_buf) if swap else (a_buf, w_buf)
        descs = [HostTensorDescriptor(buf, block, gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16))
                 for buf, block in ((kernel_a, a_block), (kernel_b, b_block), (c_buf, c_block))]
        runs = run_kernel(mod.fused_kernel, grid, *descs, Pointer(r_buf), Pointer(partial), Pointer(arrivals),
                          *((N, M) if swap else (M, N)), K, c_shape[1], r_stride, split, num_warps=cfg["num_warps"],
                          order=order(grid) if callable(order) else order, **ce)
        left = np.flatnonzero(arrivals.values())
        if left.size:
            raise ModelError(f"split-K's counter of tile {int(left[0])} is {arrivals.values()[left[0]]:g} after the "
                             "launch, not 0: the next call would count from there (reset it in the unit that reduces "
                             "the tile)")
    return c_buf.values(), c_buf.writes.reshape(c_shape), runs


def pdl_order(runs, activations_ring: str = "a_ring") -> str | None:
    """Each program under PDL, from the host model's traces: its producer loads tiles of W before gdc_wait and none
    of A (the previous kernel's output), waits once, and calls gdc_launch_dependents once, after its last load; no
    partition reads A or R, or stores C, before the wait. A's ring is the kernel's ``a_ring``, or under swap-AB its
    ``b_ring`` (``activations_ring``)."""
    for prog in runs:
        producer = [e for e in prog.trace if e["partition"] == "worker partition 0"]
        waits = [i for i, e in enumerate(producer) if e["what"] == "griddepcontrol.wait"]
        launches = [i for i, e in enumerate(producer) if e["what"] == "griddepcontrol.launch_dependents"]
        loads = [(i, e) for i, e in enumerate(producer) if e["what"] == "tma load"]
        if len(waits) != 1 or len(launches) != 1:
            return (f"program {prog.pid[0]}'s producer calls gdc_wait {len(waits)} time(s) and gdc_launch_dependents "
                    f"{len(launches)} time(s): once each")
        before = [e for i, e in loads if i < waits[0]]
        if any(e["slot"].startswith(activations_ring) for e in before):
            return (f"program {prog.pid[0]} loads a tile of A before gdc_wait: A is the previous kernel's output, "
                    "which under PDL may still be being written")
        if not before:
            return (f"program {prog.pid[0]} loads no tile of W before gdc_wait: nothing of its start overlaps the "
                    "previous kernel")
        if loads and launches[0] < loads[-1][0]:
            return (f"program {prog.pid[0]} calls gdc_launch_dependents before its last load: the next kernel's "
                    "programs would take SMs while this one still has copies to issue")
        wait_t = producer[waits[0]]["t"]
        early = [e for e in prog.trace if e["t"] < wait_t and (e["what"] == "tma store" or (
            e["what"] == "global load" and e.get("buffer") in ("A", "R")))]
        if early:
            e = early[0]
            what = f"reads {e['buffer']}" if e["what"] == "global load" else "stores a tile of C"
            return (f"program {prog.pid[0]}'s {e['partition']} {what} before the producer's gdc_wait: under PDL the "
                    "previous kernel may still be writing it (or reading C's memory)")
    return None


def interleave_block(cfg: dict) -> int:
    """The block SwiGLU's W is interleaved in for a configuration: the width of one strip of H, BLOCK_N, or under
    swap-AB half the W tile, BLOCK_M / 2 (gate's block, then up's)."""
    return cfg["BLOCK_M"] // 2 if cfg.get("SWAP_AB") else cfg["BLOCK_N"]


def where_of(epilogue: str, M: int, N: int, K: int, pdl: bool, cfg: dict) -> str:
    """The words that name one model run: epilogue, PDL, shape, and swap-AB and split-K where the tile has them."""
    path = (", swap-AB" if cfg.get("SWAP_AB") else "") + (f", split-K {cfg['SPLIT_K']}" if cfg.get("SPLIT_K", 1) > 1
                                                          else "")
    return (f"{epilogue}{' with PDL' if pdl else ''}, {M}×{N}×{K}{path}" +
            (", R's rows 8 elements wider" if epilogue == "residual" else ""))


def model_problem(mod, epilogue: str, M: int, N: int, K: int, pdl: bool, programs: int = 3, cfg=None,
                  seed: int = 0, order=None, launches: int = 1) -> str | None:
    """One epilogue at one shape in the host model against the unfused math: None or one sentence."""
    from ..model import ModelError, ModelUnsupported

    cfg = cfg or MODEL_CFG
    x = operands(epilogue, M, N, K, seed)
    kernel_w = _interleaved(mod, x["w"], x["w_up"], interleave_block(cfg)) if epilogue == "swiglu" else x["w"]
    where = where_of(epilogue, M, N, K, pdl, cfg)
    try:
        got, writes, runs = model_launch(mod, epilogue, cfg, pdl, programs, x["a"], kernel_w, (M, N), x["r"],
                                         r_pad=8, order=order, launches=launches)
    except ModelUnsupported as e:
        return not_modelled(e)
    except ModelError as e:
        return f"in the host model, {where}: {e}"
    problem = compare(got, reference(epilogue, x["a"], x["w"], x["r"], x["w_up"]), writes, epilogue)
    if problem is None and pdl:
        problem = pdl_order(runs, "b_ring" if cfg.get("SWAP_AB") else "a_ring")
    return f"in the host model, {where}: {problem}" if problem else None


def launcher_problem(mod, epilogue: str, M: int, N: int, K: int, pdl: bool, sms: int = 3,
                     calls: int = 2) -> str | None:
    """The lesson's fused_linear on CPU tensors, the GPU stood in for by the host model: its configuration for M,
    descriptors, grid, split-K scratch and arguments, ``calls`` calls back to back. A is a column slice of a wider
    matrix (as the block's o projection may read it); the last call's C against the unfused math, each element
    written once."""
    import torch

    from ..model import ModelError, ModelUnsupported
    from ..model.launcher import ModelGPU

    x = operands(epilogue, M, N, K, seed=1)
    as_bf16 = lambda v: torch.from_numpy(v).to(torch.bfloat16)  # noqa: E731
    w = mod.interleave_gate_up(as_bf16(x["w"]), as_bf16(x["w_up"])) if epilogue == "swiglu" else as_bf16(x["w"])
    r = None
    if x["r"] is not None:                   # R as a column slice of a wider matrix too: its rows N + 8 apart
        r_wide = torch.zeros(M, N + 8, dtype=torch.bfloat16)
        r_wide[:, :N] = as_bf16(x["r"])
        r = r_wide[:, :N]
    wider = torch.zeros(M, K + 24, dtype=torch.bfloat16)
    wider[:, :K] = as_bf16(x["a"])
    a = wider[:, :K]
    c = torch.full((M, N), float("nan"), dtype=torch.bfloat16)
    cfg = mod.config_for(M, epilogue, N, K, sms)
    where = "fused_linear, " + where_of(epilogue, M, N, K, pdl, cfg).split(", R's")[0]
    mod._FUSED.clear()                       # nothing kept from an earlier launch on other memory
    with ModelGPU(sms) as gpu:
        for t, name in ((wider, "A"), (w, "W"), (r_wide if r is not None else None, "R"), (c, "C")):
            if t is not None:
                gpu.add(t, name)
        # Twice on the same kept plan and scratch, C poisoned again in between: a split-K counter left where the
        # first call left it shows in the second.
        for call in range(calls):
            c.fill_(float("nan"))
            try:
                mod.fused_linear(a, w, epilogue, r=r, c=c, pdl=pdl)
            except ModelUnsupported as e:
                return not_modelled(e)
            except ModelError as e:
                return f"in the host model, {where}, call {call + 1}: {e}"
        if len(gpu.launches) != calls:
            return f"in the host model, {where}: {len(gpu.launches)} launches for {calls} calls, not one each"
        if bool(gpu.options[-1].get("launch_pdl", False)) != pdl:
            return (f"in the host model, {where}: the kernel was launched with launch_pdl="
                    f"{gpu.options[-1].get('launch_pdl', False)}: " +
                    ("without it the launch waits for the previous kernel to end, and gdc_wait waits for nothing"
                     if pdl else "fused_linear(pdl=False) must launch without it"))
        writes = gpu.writes(c)
        runs = gpu.launches[-1]
    mod._FUSED.clear()
    problem = compare(c.float().numpy(), reference(epilogue, x["a"], x["w"], x["r"], x["w_up"]), writes, epilogue)
    if problem is None and pdl:
        problem = pdl_order(runs, "b_ring" if cfg.get("SWAP_AB") else "a_ring")
    if problem is None and not pdl and any(e["what"] == "griddepcontrol.wait" for prog in runs for e in prog.trace):
        problem = "fused_linear(pdl=False) launched the kernel compiled for PDL (its producer calls gdc_wait)"
    return f"in the host model, {where}: {problem}" if problem else None


def host_model_check(epilogue: str, shapes=MODEL_SHAPES):
    """A check: ``epilogue`` in the host model at each shape, without and with PDL, then the decode path (swap-AB,
    split-K) at MODEL_DECODE_SHAPES, two launches back to back on one scratch, then through the launcher at
    LAUNCHER_SHAPES and LAUNCHER_DECODE_SHAPES, with and without PDL, two calls each."""
    def check(mod):
        for M, N, K in shapes:
            for pdl in (False, True):
                problem = model_problem(mod, epilogue, M, N, K, pdl)
                if problem:
                    return problem
        for M, N, K in MODEL_DECODE_SHAPES:
            for pdl in (False, True):
                problem = model_problem(mod, epilogue, M, N, K, pdl, cfg=MODEL_DECODE_CFG, launches=2)
                if problem:
                    return problem
        for M, N, K in LAUNCHER_SHAPES + LAUNCHER_DECODE_SHAPES:
            for pdl in (True, False):
                problem = launcher_problem(mod, epilogue, M, N, K, pdl=pdl)
                if problem:
                    return problem
        return None
    return check


# Program orders of the split-K check: as numbered, reversed, and each third's programs in turn.
ORDERS = (lambda n: list(range(n)), lambda n: list(range(n))[::-1],
          lambda n: [i for r in range(3) for i in range(r, n, 3)])


def split_order_check(M: int = 3, N: int = 72, K: int = 256, split: int = 4, programs: int = 3):
    """A check: the decode path with K split in ``split`` gives the same bits of C whatever order its programs run in
    (so whichever unit arrives last and reduces), for each epilogue, on operands whose fp32 sums round (random bf16
    values, not small integers), so that another order of the slices' sum shows in the bits."""
    def check(mod):
        from triton.experimental.gluon import language as gl  # noqa: F401 (the model's imports, once)

        from ..model import ModelError, ModelUnsupported

        cfg = {**MODEL_DECODE_CFG, "SPLIT_K": split}
        rng = np.random.default_rng(7)
        as_bf16 = lambda v: bf16_round(v).astype(np.float32)  # noqa: E731
        for epilogue in EPILOGUES_ALL:
            a = as_bf16(rng.standard_normal((M, K)))
            w = as_bf16(rng.standard_normal((N, K)) / 16)
            kernel_w = (_interleaved(mod, w, as_bf16(rng.standard_normal((N, K)) / 16), interleave_block(cfg))
                        if epilogue == "swiglu" else w)
            r = as_bf16(rng.standard_normal((M, N))) if epilogue == "residual" else None
            seen = None
            for order in ORDERS:
                where = where_of(epilogue, M, N, K, False, cfg) + f", programs in the order {order(programs)}"
                try:
                    got, writes, _ = model_launch(mod, epilogue, cfg, False, programs, a, kernel_w, (M, N), r,
                                                  order=order)
                except ModelUnsupported as e:
                    return not_modelled(e)
                except ModelError as e:
                    return f"in the host model, {where}: {e}"
                if (writes != 1).any():
                    return f"in the host model, {where}: {int((writes != 1).sum())} element(s) of C not written once"
                if seen is not None and not np.array_equal(got, seen, equal_nan=True):
                    i, j = map(int, np.argwhere(got != seen)[0])
                    return (f"in the host model, {where}: C[{i}, {j}] is {got[i, j]!r} where the programs in their "
                            f"own order gave {seen[i, j]!r}: the slices are summed in the order the units arrive, "
                            "not 0, 1, …, so the bits depend on which unit reduces")
                seen = got
        return None
    return check


EPILOGUES_ALL = ("plain", "swiglu", "residual")


def decode_facts(mod):
    """The decode path in sm_90's SASS, each GEMM of the block at 1 and 16 tokens: swap-AB's narrow wgmma, HGMMA.64xNx16
    with N the configuration's tokens (W's rows on the 64-row side) and no other shape; with K split, the tile's one
    arrival (an atomic add) and one reset (an atomic exchange)."""
    for ep, cfg in block_configs(mod, tokens=(1, 16)):
        if not cfg.get("SWAP_AB"):
            return (f"{ep} at decode takes {cfg['BLOCK_M']}×{cfg['BLOCK_N']} tiles without swap-AB: config_for must "
                    "give lesson 32's swap-AB pick at M ≤ 16")
        k = compiled(mod, ep, cfg, False)
        ops = k.opcodes()
        want = f"HGMMA.64x{cfg['BLOCK_N']}x16.F32.BF16"
        shapes = sorted(op for op in ops if op.startswith("HGMMA."))
        where = f"{ep} at decode, {cfg['BLOCK_M']}×{cfg['BLOCK_N']} tiles of Cᵀ, K split {cfg['SPLIT_K']}"
        if shapes != [want]:
            return (f"{where}: the SASS's wgmmas are {', '.join(shapes) or 'none'}, not {want} alone: under swap-AB "
                    "W's rows fill wgmma's 64-row side and the tokens its narrow N")
        atomics = {op: n for op, n in ops.items() if op.startswith(("ATOMG", "RED"))}
        if (cfg["SPLIT_K"] > 1) != bool(atomics):
            return (f"{where}: the SASS holds {atomics or 'no atomics'}: " +
                    ("split-K's counter needs its atomic add and reset" if cfg["SPLIT_K"] > 1 else
                     "without split-K nothing counts arrivals"))
    return None


# -- the compiler ---------------------------------------------------------------------------------------------------

def compiled(mod, epilogue: str, cfg: dict, pdl: bool):
    """The lesson's fused_kernel for sm_90 at one configuration, compiled with launch_pdl when ``pdl``."""
    from triton.experimental.gluon import language as gl

    from ..machine import compile_cached, tensor_descriptor_type

    def desc(block):
        return tensor_descriptor_type("bf16", block, gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16))

    a_block, b_block, c_block = mod.blocks(cfg, epilogue)
    signature = {"a_desc": desc(a_block), "b_desc": desc(b_block), "c_desc": desc(c_block), "r_ptr": "*bf16",
                 "partial_ptr": "*fp32", "arrivals_ptr": "*i32", "M": "i32", "N": "i32", "K": "i32", "N_OUT": "i32",
                 "stride_rm": "i32", "SPLIT_K": "i32"}
    return compile_cached(mod.fused_kernel, "sm_90", signature=signature, constexprs=mod.constexprs(cfg, epilogue, pdl),
                          aligned=("r_ptr", "partial_ptr", "arrivals_ptr"), num_warps=cfg["num_warps"],
                          **({"launch_pdl": True} if pdl else {}))


def block_configs(mod, tokens=(1, 16, 2048)):
    """(epilogue, configuration) of each GEMM of the block at each number of tokens, each once."""
    found = {}
    for M in tokens:
        for _, N, K, epilogue in BLOCK_GEMMS:
            cfg = mod.config_for(M, epilogue, N, K)
            found[(epilogue, tuple(sorted(cfg.items())))] = (epilogue, cfg)
    return list(found.values())


def wait_order(k, activations: str = "%a_desc") -> str | None:
    """The producer's order in the compiled TTGIR, where each TMA copy still names its descriptor: a copy through W's
    descriptor before the grid dependency wait and none through the activations' (``activations``: ``%a_desc``, or
    ``%b_desc`` under swap-AB). It is found by its position among warp_specialize's operands, which are the
    partitions' arguments in order."""
    import re

    text = k.ttgir
    operands_ = re.search(r"ttg\.warp_specialize\(([^)]*)\)", text)
    names = [x.strip() for x in operands_.group(1).split(",")] if operands_ else []
    if activations not in names:
        return f"the TTGIR's warp_specialize does not hand the partitions {activations}"
    lines = text.splitlines()
    # gdc_wait is tt.grid_dependency_wait in the TTGIR (an inline griddepcontrol.wait would be its PTX text).
    wait = next((i for i, line in enumerate(lines) if "grid_dependency_wait" in line or "griddepcontrol.wait" in line),
                None)
    if wait is None:
        return "the TTGIR holds no grid dependency wait: call gdc_wait() in the producer"
    header = max(i for i, line in enumerate(lines[:wait]) if re.match(r"\s*partition\d+\(", line))
    params = re.findall(r"(%arg\d+):", lines[header])
    a_arg = params[names.index(activations)]
    copies = [(i, re.search(r"async_tma_copy_global_to_local (%\w+)\[", line).group(1))
              for i, line in enumerate(lines[header:], header) if "async_tma_copy_global_to_local" in line]
    if not any(i < wait and desc != a_arg for i, desc in copies):
        return "no TMA copy of W comes before gdc_wait: nothing of the kernel's start overlaps the previous kernel"
    early = [i for i, desc in copies if i < wait and desc == a_arg]
    if early:
        return (f"a TMA copy through the activations' descriptor ({activations}, line {early[0] + 1} of the TTGIR) "
                "comes before "
                "gdc_wait: under PDL the previous kernel may still be writing A")
    return None


def pdl_problem(k, pdl: bool, swap_ab: bool = False) -> str | None:
    """With PDL: the SASS holds the wait (at least one ACQBULK) and one PREEXIT, the TTGIR's order is W, wait, A, and
    the compiled kernel asks its launcher for PDL. Without: none of them."""
    waits, launches = k.count(PDL_WAIT), k.count(PDL_LAUNCH)
    if (not (waits >= 1 and launches == 1)) if pdl else (waits or launches):
        return (f"the SASS holds {waits} {PDL_WAIT} (griddepcontrol.wait) and {launches} {PDL_LAUNCH} "
                f"(griddepcontrol.launch_dependents); " +
                ("with PDL, at least one and exactly one" if pdl else "without PDL, none"))
    if pdl:
        problem = wait_order(k, "%b_desc" if swap_ab else "%a_desc")
        if problem:
            return problem
    if bool(getattr(k.metadata, "launch_pdl", False)) != pdl:
        return f"the compiled kernel's launch_pdl is {getattr(k.metadata, 'launch_pdl', None)}, not {pdl}"
    return None


# -- on a GPU ---------------------------------------------------------------------------------------------------------

# Odd shapes (N a multiple of 8: C's rows must be 16-byte aligned for TMA) and the block's own at 1, 16, 2048 tokens.
ODD_SHAPES = ((1, 1000, 520), (17, 328, 4104), (100, 2056, 1000))


def gpu_operands(M: int, N: int, K: int, epilogue: str, seed: int):
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g) / K ** 0.5
    w_up = (torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g) / K ** 0.5
            if epilogue == "swiglu" else None)
    r = torch.randn(M, N, device="cuda", dtype=torch.bfloat16, generator=g) if epilogue == "residual" else None
    return a, w, w_up, r


def gpu_reference(epilogue, a, w, w_up, r):
    """The unfused math in fp32 from the bf16 operands, and each element's bound: the course's bf16 GEMM tolerance
    for each sum (atol), carried through SiLU(g)·u by |∂/∂g| ≤ 1.1·|u| and |∂/∂u| = |SiLU(g)| ≤ |g|, plus half an ulp
    of bf16 of the result (rtol)."""
    import torch

    from ..measure.gemm import tolerance as gemm_tolerance

    tol = gemm_tolerance(a.shape[1], torch.bfloat16)
    g = a.float() @ w.float().t()
    if epilogue == "swiglu":
        u = a.float() @ w_up.float().t()
        ref = torch.nn.functional.silu(g) * u
        return ref, tol.atol * (1.1 * u.abs() + g.abs() + 1) + tol.rtol * ref.abs()
    ref = g + r.float() if epilogue == "residual" else g
    return ref, tol.atol + tol.rtol * ref.abs()


def _check_one(mod, epilogue: str, M: int, N: int, K: int, pdl: bool, seed: int = 0) -> str | None:
    import torch

    from ..measure.tensors import guarded_empty, is_poison

    a, w, w_up, r = gpu_operands(M, N, K, epilogue, seed)
    kernel_w = mod.interleave_gate_up(w, w_up) if epilogue == "swiglu" else w
    out = guarded_empty((M, N), dtype=torch.bfloat16)
    mod.fused_linear(a, kernel_w, epilogue, r=r, c=out.tensor, pdl=pdl)
    torch.cuda.synchronize()
    ref, bound = gpu_reference(epilogue, a, w, w_up, r)
    got = out.tensor.float()
    where = f"{epilogue}{' with PDL' if pdl else ''}, {M}×{N}×{K}"
    if is_poison(got).any():
        return f"{where}: {int(is_poison(got).sum())} element(s) of C never written"
    if not out.margins_untouched():
        return f"{where}: a write past C's ends (the guard margins changed)"
    bad = (got - ref).abs() > bound
    if bad.any():
        i, j = bad.nonzero()[0].tolist()
        return (f"{where}: {int(bad.sum())} element(s) outside the bound, the first C[{i}, {j}]: {got[i, j]:g} "
                f"where the unfused math gives {ref[i, j]:g}")
    return None


def correct_here(module_file: str) -> str | None:
    """The correctness check itself, run in a child process (a barrier that never completes hangs there)."""
    from ..course import load_module_file
    from ..grading.runner import sentence_in_child

    mod = load_module_file(module_file)

    def run():
        for epilogue in ("plain", "swiglu", "residual"):
            shapes = ODD_SHAPES + tuple((m, n, k) for _, n, k, ep in BLOCK_GEMMS if ep == epilogue
                                        for m in (1, 16, 2048))
            for M, N, K in shapes:
                for pdl in (False, True):
                    problem = _check_one(mod, epilogue, M, N, K, pdl)
                    if problem:
                        return problem
        return None
    return sentence_in_child(module_file, run)


def correct(mod) -> str | None:
    """Every epilogue, with and without PDL, on odd shapes and the block's own, in one child process under a limit."""
    from ..measure.isolated import check_in_child

    return check_in_child(f"{__file__}:correct_here", [mod.__file__], timeout=CHILD_LIMIT_S)


def block_error(mod, tokens: int = 16, seed: int = 0) -> dict:
    """The fused block's output and the unfused block's (torch's nn.Linear), each against an fp32 run of the same
    weights: their relative errors."""
    import torch

    from ..measure.linear import Block, fp32_reductions

    torch.manual_seed(seed)
    block = Block().cuda().to(torch.bfloat16).eval()
    fp32 = Block().cuda().eval()
    fp32.load_state_dict({k: v.float() for k, v in block.state_dict().items()})
    x = torch.randn(1, tokens, HIDDEN, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        with fp32_reductions():
            ref = fp32(x.float())
        out = {}
        for name, model in (("fused", mod.FusedBlock(block)), ("fused_pdl", mod.FusedBlock(block, pdl=True)),
                            ("torch", block)):
            y = model(x).float()
            out[name] = float((y - ref).norm() / ref.norm())
    return out


def block_matches(mod) -> str | None:
    """The fused block (with and without PDL) against the unfused one, both against fp32, at 1, 16 and 2048 tokens:
    at most twice torch's own relative error, plus 1e-3."""
    for tokens in (1, 16, 2048):
        err = block_error(mod, tokens)
        for name in ("fused", "fused_pdl"):
            if err[name] > 2 * err["torch"] + 1e-3:
                return (f"at {tokens} token(s), the {name.replace('_', ' with ')} block's output is off by "
                        f"{err[name]:.2e} (relative, against fp32) where torch's block is off by {err['torch']:.2e}: "
                        "not the same computation")
    return None


@functools.lru_cache(maxsize=4)
def _block_matches_once(module_file: str) -> str | None:
    """block_matches once per module and process: the three figures share it."""
    from ..course import load_module_file

    return block_matches(load_module_file(module_file))


def _block_bytes(block, tokens: int) -> int:
    """What one step must read at least: every weight once, and x in and out (bf16)."""
    weights = sum(p.numel() for p in block.parameters()) * 2
    return weights + 2 * tokens * HIDDEN * 2


def block_times(mod, tokens: int, rounds: int = 15, calls: int = 10, seed: int = 0) -> dict:
    """The block three ways (torch's nn.Linear, fused, fused with PDL), each captured in a CUDA graph of ``calls``
    steps and replayed in turn, ``rounds`` rounds: the median µs of a step each; the device copy's bandwidth in the
    same run; the step's roofline (every byte it must read over that bandwidth)."""
    import torch

    from ..measure.linear import Block
    from ..measure.timing import _captured, copy_ceiling_tbs, replayed_in_turn

    torch.manual_seed(seed)
    block = Block().cuda().to(torch.bfloat16).eval()
    models = {"torch": block, "fused": mod.FusedBlock(block), "fused_pdl": mod.FusedBlock(block, pdl=True)}
    x = torch.randn(1, tokens, HIDDEN, device="cuda", dtype=torch.bfloat16)
    refused = {}
    with torch.no_grad():
        graphs = {}
        for name, m in models.items():
            try:
                graphs[name] = _captured(lambda m=m: m(x), calls)
            except RuntimeError as e:
                if name != "fused_pdl":
                    raise
                # A driver whose stream capture refuses a launch with programmatic serialization: the block is timed
                # without PDL, and the record says why.
                refused[name] = str(e).splitlines()[0][:200]
                torch.cuda.synchronize()
        us = replayed_in_turn(graphs, calls, rounds)
    tbs = copy_ceiling_tbs()
    roofline_us = _block_bytes(block, tokens) / (tbs * 1e12) * 1e6
    return {"tokens": tokens, "us": us, "copy_tbs": round(tbs, 3), "roofline_us": round(roofline_us, 2),
            "bytes": _block_bytes(block, tokens), "rounds": rounds, "calls": calls, "not_captured": refused}


def block_measure(tokens: int, of: str = "roofline"):
    """A figure of the block at ``tokens``: the fused block's share of the step's HBM roofline (decode) or torch's
    block time over the fused block's (prefill, ``of="torch"``); the faster of with and without PDL, both in the
    details."""
    def measure(mod):
        from ..measure.timing import Measurement

        problem = _block_matches_once(mod.__file__)
        if problem:
            raise AssertionError(problem)
        t = block_times(mod, tokens)
        us = t["us"]
        best = min((k for k in ("fused", "fused_pdl") if k in us), key=lambda k: us[k])
        value = t["roofline_us"] / us[best] if of == "roofline" else us["torch"] / us[best]
        text = (f"{us[best]:.0f} µs a step ({'with' if best == 'fused_pdl' else 'without'} PDL), torch's "
                f"{us['torch']:.0f} µs, roofline {t['roofline_us']:.0f} µs")
        details = {**t, "best": best, "over_torch": round(us["torch"] / us[best], 4)}
        if "fused_pdl" in us:
            details["pdl_over_no_pdl"] = round(us["fused"] / us["fused_pdl"], 4)
        return Measurement(value, text, json.loads(json.dumps(details)))
    return measure


def small_chain(module_file: str) -> None:
    """For compute-sanitizer, in a child process: a small decode chain launched with PDL, each kernel reading the one
    before it (plain, then the residual on its output, then SwiGLU, then the residual on SwiGLU's output), 17 tokens,
    widths with tails past the tiles."""
    import torch

    from ..course import load_module_file

    mod = load_module_file(module_file)
    g = torch.Generator(device="cuda").manual_seed(0)
    rand = lambda *shape: torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=g)  # noqa: E731
    x = rand(17, 520)
    h = mod.fused_linear(x, rand(328, 520), pdl=True)
    h = mod.fused_linear(h, rand(328, 328), "residual", r=h, c=torch.empty_like(h), pdl=True)
    act = mod.fused_linear(h, mod.interleave_gate_up(rand(200, 328), rand(200, 328)), "swiglu",
                           c=torch.empty(17, 200, device="cuda", dtype=torch.bfloat16), pdl=True)
    mod.fused_linear(act, rand(328, 200), "residual", r=h, pdl=True)
    torch.cuda.synchronize()


def sanitizer_clean(mod) -> str | None:
    """compute-sanitizer memcheck and synccheck on ``small_chain`` (each tool its own child process)."""
    from ..measure.isolated import sanitizer_check

    return sanitizer_check(f"{__file__}:small_chain", [mod.__file__], tools=("memcheck", "synccheck"))
