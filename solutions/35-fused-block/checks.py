"""Lesson 35's checks: each epilogue in the host model at odd shapes against the unfused math in fp64 (the kernel
directly, with and without PDL, then through fused_linear); in the sm_90 machine code of every GEMM of the block at
decode and prefill, the epilogue's own instructions (one exponential an element for SwiGLU, R loaded once an element,
bounded by M and N, one store of C a tile), the resources, and PDL's instructions and order; on a GPU, correctness
on odd shapes and the block's, and the block's figures against its HBM roofline and torch's block."""
from gluon_course.grading import Check, CourseTarget, Expectation, Figure, LessonChecks
from gluon_course.grading.counts import mismatch
from gluon_course.grading.gemm_kernel import fits
from gluon_course.nvidia import fused

# Bytes an R load brings, by its SASS opcode.
LOAD_BYTES = {"LDG.E.U16": 2, "LDG.E": 4, "LDG.E.64": 8, "LDG.E.128": 16}


def _elements(cfg, epilogue: str) -> int:
    """Elements of C's tile a consumer thread holds: BLOCK_M · BLOCK_N over the consumers' threads (one strip), half
    of that for SwiGLU under swap-AB, whose tile of W holds gate's and up's rows of the same columns of H."""
    half = 2 if epilogue == "swiglu" and cfg.get("SWAP_AB") else 1
    return cfg["BLOCK_M"] * cfg["BLOCK_N"] // (32 * cfg["num_warps"] * half)


def epilogue_facts(epilogue: str):
    """The epilogue in the SASS at each configuration of the block: one TMA store a tile (for SwiGLU: H only, not
    gate and up); SwiGLU one exponential (MUFU.EX2) an element of H and no load by the threads; the residual R's
    elements loaded once each, masked by rows < M and columns < N, and no exponential; the plain epilogue neither."""
    def check(mod):
        for ep, cfg in fused.block_configs(mod):
            if ep != epilogue:
                continue
            k = fused.compiled(mod, ep, cfg, False)
            ops = k.opcodes()
            n = _elements(cfg, ep)
            loaded = sum(ops.get(op, 0) * size for op, size in LOAD_BYTES.items()) // 2
            got = {"UTMASTG.2D": ops.get("UTMASTG.2D", 0), "MUFU.EX2": ops.get("MUFU.EX2", 0),
                   "R elements loaded": loaded}
            want = {"UTMASTG.2D": 1, "MUFU.EX2": n if ep == "swiglu" else 0,
                    "R elements loaded": n if ep == "residual" else 0}
            swap = ", swap-AB" if cfg.get("SWAP_AB") else ""
            where = (f"the {ep} epilogue at {cfg['BLOCK_M']}×{cfg['BLOCK_N']}{swap} ({cfg['num_warps']} warps, {n} "
                     "elements a thread)")
            problem = mismatch(got, want, where, why={
                "MUFU.EX2": ("SiLU needs e^(−g): gl.exp of the gate's sums",
                             "more than one exponential an element: compute e^(−g) once"),
                "R elements loaded": ("R is not read: add its tile to the sums before the rounding",
                                      "R is read more than once an element"),
                "UTMASTG.2D": ("", "more than one TMA store a tile: the epilogue writes only its result")})
            if problem:
                return problem
            if ep == "residual":
                # add_residual's M and N are C's rows and columns: the kernel's M (its N under swap-AB, where the
                # kernel's M is W's rows) and N_OUT, the names the listing knows.
                rows = "N" if cfg.get("SWAP_AB") else "M"
                bounds = [m["bounds"] for m in k.masks() if m["op"] == "load" and m["masked"]]
                said = {rows: "rows < M (C's rows: the kernel's " + rows + ")",
                        "N_OUT": "columns < N (the kernel's N_OUT, C's columns, which it hands add_residual as N)"}
                missing = sorted({said[name] for b in bounds or [{}] for name in (rows, "N_OUT") if name not in b})
                if missing:
                    return (f"{where}: R's loads are not bounded by {' and '.join(missing)}: the tile's rows and "
                            "columns past C's edges are not R's; mask the load with both bounds")
        return None
    return check


def resources(mod):
    """Each GEMM of the block at decode and prefill fits one SM with no spills (the course's configurations take
    160 to 216 KiB of shared memory a program, Triton 3.9.0 on sm_90)."""
    for ep, cfg in fused.block_configs(mod):
        for pdl in (False, True):
            k = fused.compiled(mod, ep, cfg, pdl)
            where = f"{ep}{' with PDL' if pdl else ''} at {cfg['BLOCK_M']}×{cfg['BLOCK_N']}×{cfg['BLOCK_K']}"
            problem = fits(k, cfg["num_warps"], cfg)
            if problem:
                return f"{where}: {problem}"
    return None


def pdl_sm_90(mod):
    """With PDL, each GEMM of the block: griddepcontrol.wait (ACQBULK) and one launch_dependents (PREEXIT) in the SASS,
    the wait after W's first TMA copies and before A's, and launch_pdl in the compiled kernel; without PDL, none."""
    for ep, cfg in fused.block_configs(mod):
        for pdl in (False, True):
            problem = fused.pdl_problem(fused.compiled(mod, ep, cfg, pdl), pdl, bool(cfg.get("SWAP_AB")))
            if problem:
                return f"{ep}{' with PDL' if pdl else ''} at {cfg['BLOCK_M']}×{cfg['BLOCK_N']}: {problem}"
    return None


PROVISIONAL = ("no run of this kernel on a GPU yet: the range is provisional, set from what the step allows, to be "
               "redrawn around the first clean run (grading.gemm.around_first_run)")
DECODE_WHY = ("the step's roofline (every weight of the block read once, and x in and out, over the device copy's "
              "bandwidth measured in the same run) over the fused block's time, each block captured in a CUDA graph of "
              "10 steps and replayed in turn with torch's block, 15 rounds, medians; the faster of with and without "
              "PDL, both in the details. Lesson 32's recording (H200, 2026-12-03, 32/block_decode_graph) timed the same block "
              "at 16 tokens in a graph at 170 µs with torch's projections and 156 µs with lesson 32's, where its 436 MB "
              "of weights take about 103 µs at the copy's 4.2–4.3 TB/s")


def _decode(tokens: int):
    return Expectation(0.4, 1.1, "the step's HBM roofline", f"{DECODE_WHY}; {PROVISIONAL}",
                       target=CourseTarget(0.85, why="the course's target for a decode step: 85% of its roofline, "
                                                      "and 1.35× torch's block (in the details)"))


CHECKS = LessonChecks(
    targets=("sm_90",),
    teaches="the GEMM does the model's elementwise work in its epilogue (SwiGLU, the residual add) while C is fp32 "
            "in registers; Q, K and V as one GEMM; programmatic dependent launch (gdc_wait after W's first copies)",
    machine_code=[
        Check("swiglu_model", "SwiGLU in the host model (no GPU): H = SiLU(A·W_gateᵀ)·(A·W_upᵀ) within half a bf16 "
              "step (and fp32's SiLU) of the fp64 unfused math, gate's sums up to ±100 and more included, at five "
              "shapes with tails past every tile edge, each element written once, with and without PDL; the decode "
              "path (swap-AB, K split in 3) at 1, 5 and 16 tokens, two launches on one scratch; then through "
              "fused_linear with and without PDL at 17 and at 1, 7 and 16 tokens (lesson 32's pick), two calls each",
              fused.host_model_check("swiglu")),
        Check("residual_model", "the residual in the host model: C = A·Wᵀ + R rounded once to bf16, exactly, at the "
              "same shapes, R a column slice of a wider matrix and read only inside C, each element written once, "
              "with and without PDL, the decode path and the launcher as for SwiGLU", fused.host_model_check("residual")),
        Check("plain_model", "the plain epilogue (Q, K and V as one GEMM) in the host model, the same way: A·Wᵀ "
              "rounded once, exactly",
              fused.host_model_check("plain")),
        Check("split_order_model", "the decode path with K split in 4 in the host model: the same bits of C in every "
              "epilogue whatever order the programs run in (whichever unit reduces), on operands whose fp32 sums round",
              fused.split_order_check()),
        Check("decode_sm_90", "sm_90, each GEMM of the block at 1 and 16 tokens takes swap-AB: its only wgmma is "
              "HGMMA.64xNx16 with N the tile's tokens (W's rows on the 64-row side); with K split, the counter's "
              "atomics, and none without", fused.decode_facts, target="sm_90"),
        Check("swiglu_sm_90", "sm_90, the SwiGLU GEMM at decode and prefill: one MUFU.EX2 an element of H, no load "
              "by the threads, one TMA store a tile (H only)", epilogue_facts("swiglu"), target="sm_90"),
        Check("residual_sm_90", "sm_90, the residual GEMMs at decode and prefill: each element of R loaded once, "
              "masked by rows < M and columns < N; no exponential; one TMA store a tile", epilogue_facts("residual"),
              target="sm_90"),
        Check("plain_sm_90", "sm_90, the QKV GEMM at decode and prefill: one TMA store a tile, nothing else in the "
              "epilogue", epilogue_facts("plain"), target="sm_90"),
        Check("resources_sm_90", "sm_90, every GEMM of the block at decode and prefill, with and without PDL: fits "
              "one SM with no spills", resources, target="sm_90"),
        Check("pdl_sm_90", "sm_90, with PDL: griddepcontrol.wait (ACQBULK) and one launch_dependents (PREEXIT), "
              "the wait after W's first TMA copies and before A's, launch_pdl in the compiled kernel; none of them "
              "without PDL", pdl_sm_90, target="sm_90"),
    ],
    correctness=[
        Check("correct_fused", "fused_linear is correct in every epilogue, with and without PDL, on odd shapes and "
              "the block's own at 1, 16 and 2048 tokens, within the bound of gluon_course.nvidia.fused (poisoned, "
              "guarded C; a child process with a time limit)", fused.correct, gpu=True),
        Check("block_matches", "FusedBlock, with and without PDL, gives lesson 32's block's output at 1, 16 and "
              "2048 tokens: relative error against fp32 at most twice torch's own, plus 1e-3", fused.block_matches,
              gpu=True),
        Check("sanitizer_clean", "compute-sanitizer memcheck and synccheck report nothing on a small chain of the "
              "four epilogues launched with PDL, each reading the one before", fused.sanitizer_clean, gpu=True),
    ],
    figures=[
        Figure("decode_block", "block, 16 tokens, of its roofline", fused.block_measure(16), _decode(16),
               headline=True),
        Figure("decode_block_1", "block, 1 token, of its roofline", fused.block_measure(1), _decode(1)),
        Figure("prefill_block", "block, 2048 tokens, over torch", fused.block_measure(2048, of="torch"),
               Expectation(0.7, 1.5, "torch's block", "torch's block time over the fused block's, both in CUDA "
                           "graphs replayed in turn (as the decode figures); the faster of with and without PDL; "
                           f"compute-bound (its GEMMs are 2 · 2048 · 218 M = 893 GFLOP a step); {PROVISIONAL}", unit="× torch",
                           target=CourseTarget(1.0, why="the course's target: at least torch's block"))),
    ],
)
