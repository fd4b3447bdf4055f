"""Lesson 36's checks and figures: attention (the online softmax between two wgmma products) on Hopper.

Without a GPU:

- the host model (``model_problem``, ``launcher_problem``): the lesson's kernels, and its launcher on CPU tensors with
  the GPU stood in for (``model.launcher.ModelGPU``), on small odd shapes (one query and one key, tails past every
  block, Sq ≠ Sk both ways), causal and not, and once with scores past fp32's exp2 range, against softmax(Q·Kᵀ)·V in
  fp64 within the bound ``reference`` derives, every element of O written once into a poisoned buffer;
- the compiled code (``kernel_facts``, ``facts_problem``): sm_90 SASS read loop by loop (the unmasked key blocks, then
  the masked ones): which HGMMA reads its A operand from registers, the exponentials, the shared-memory traffic and
  lane shuffles a layout conversion would add, the mask's selects.

On a GPU: ``correct`` (odd shapes, both head dims, causal and not, O poisoned and guarded, in a child process) and
``sdpa_measure`` (TFLOPS against PyTorch's SDPA backends, the kernels' launches interleaved with theirs).
"""
from __future__ import annotations

import json
import math
import re

import numpy as np
import torch
from triton.experimental.gluon import language as gl

LOG2E = 1.4426950408889634
CHILD_LIMIT_S = 300


# The model's tiles: 64 queries, keys in blocks of 32, head dim 64 (the launcher's smaller one); v2 with 2 slots, so
# that 100 keys (4 blocks) refill every slot. Shapes (batch, heads, Sq, Sk): one query and one key, 17 and 100 (tails
# past every block), Sq ≠ Sk both ways.
MODEL_CFGS = {"v0": {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4},
              "v2": {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "STAGES": 2, "LOAD_REGS": 40}}
MODEL_HEAD_DIM = 64
MODEL_SHAPES = ((1, 2, 1, 1), (1, 2, 17, 17), (2, 1, 100, 100), (1, 2, 17, 100), (1, 2, 100, 17))
# Large scores: Q and K with entries of standard deviation 6 put the row maxima of Q·Kᵀ·sm_scale·log2(e) between 84
# and 207 at LARGE_SHAPE: 2^x overflows fp32 (past 2^128) in about half the rows unless the maximum is subtracted.
LARGE_SHAPE, LARGE_SCALE = (1, 2, 100, 100), 6.0


def bf16(x: np.ndarray) -> np.ndarray:
    """x rounded to bfloat16 (to nearest even), as float32."""
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(torch.bfloat16).float().numpy()


def inputs(B: int, H: int, Sq: int, Sk: int, D: int, scale: float = 1.0, seed: int = 0):
    """Q, K, V (B, H, S, D), normal entries times ``scale`` rounded to bf16 (V unscaled)."""
    rng = np.random.default_rng(seed)
    q = bf16(rng.standard_normal((B, H, Sq, D)) * scale)
    k = bf16(rng.standard_normal((B, H, Sk, D)) * scale)
    v = bf16(rng.standard_normal((B, H, Sk, D)))
    return q, k, v


def reference(q, k, v, causal: bool, sm_scale: float):
    """softmax(Q·Kᵀ·sm_scale)·V in fp64 (torch's is_causal: query i sees keys j ≤ i), and the per-element bound of
    a correct kernel's error (``bound``):

    - P is rounded to bf16 before P·V (half an ulp, 2^-8 relative, each p), while l sums P unrounded: at most
      2^-8·Σ p|v| / l = 2^-8·(softmax·|V|);
    - the fp32 scores carry D products' roundings, 2·D·2^-24·(|Q|·|K|ᵀ)·sm_scale in the exponent, which errs p and l
      by that much relatively: twice it, times softmax·|V|, with the row's largest |q|·|k|;
    - O's fp32 sums over Sk keys (and a rescale per block): Sk·2^-23 of softmax·|V|;
    - O rounded to bf16 once: 2^-8·|o|."""
    q64, k64, v64 = (np.asarray(x, np.float64) for x in (q, k, v))
    s = np.einsum("bhqd,bhkd->bhqk", q64, k64) * sm_scale
    Sq, Sk = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((Sq, Sk), bool)), s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    out = np.einsum("bhqk,bhkd->bhqd", w, v64)
    spread = np.einsum("bhqk,bhkd->bhqd", w, np.abs(v64))
    score_err = 2 * q.shape[-1] * 2.0 ** -24 * sm_scale * np.einsum("bhqd,bhkd->bhqk", np.abs(q64),
                                                                    np.abs(k64)).max(-1, keepdims=True)
    bound = (2.0 ** -8 + 2 * score_err + Sk * 2.0 ** -23) * spread + 2.0 ** -8 * np.abs(out) + 1e-6
    return out, bound



def not_modelled(e):
    """What a host-model check says when the kernel uses an operation the model does not know: not a failure, a
    check that could not be made here (the GPU checks still judge the kernel)."""
    from ..grading.checks import NotChecked

    return NotChecked(f"the host model does not model {e}, so it could not run this kernel; the GPU checks "
                      "(correctness, compute-sanitizer) still judge it there")


def model_error_text(e) -> str:
    """A host-model error's sentence. A hang where every partition still running waits on a ready barrier of the K/V
    ring (the producer has finished: no copy will come) gets the attention kernels' other likely cause: the consumers
    visit a key block the producer never loads."""
    from ..model import ModelHang

    text = str(e)
    waited = re.findall(r"waits on (\w+)\[", text)
    if isinstance(e, ModelHang) and waited and all(name.endswith("_ready") for name in waited):
        text += (" Or do the consumers' key loops visit more blocks than the producer loads (their bounds against "
                 "key_blocks' n_all)?")
    return text


def compare(got, want, bound, writes=None) -> str | None:
    """None, or which elements of O are never written, written twice, not finite, or outside the bound (the first
    named, (batch, head, query, column))."""
    checks = []
    if writes is not None:
        checks += [("never written (still NaN)", writes == 0), ("written more than once", writes > 1)]
    checks += [("not finite (inf or NaN) where the reference is finite", ~np.isfinite(got) & np.isfinite(want)),
               ("outside the bound", np.abs(got - want) > bound)]
    for problem, mask in checks:
        if mask.any():
            where = tuple(int(i) for i in np.argwhere(mask)[0])
            detail = f": got {got[where]:g}, expected {want[where]:g}" if "bound" in problem or "finite" in problem \
                else ""
            return f"{int(mask.sum())} element(s) of O {problem}; the first is O{list(where)}{detail}"
    return None


# Lesson 37's persistent version (v5) in the host model: a grid of this many programs (fewer than most model shapes'
# tiles), run side by side (model.cluster_launch.run_together), so that they share the tiles from the counter as on
# a GPU. (Through the launcher, ModelGPU runs them one after another: the first takes every tile.)
MODEL_SMS = 3


def is_persistent(mod, version: str) -> bool:
    """A version whose grid is one program an SM over the tiles (the lesson's PERSISTENT: lesson 37's v5)."""
    return version in getattr(mod, "PERSISTENT", ())


def model_launch(mod, version: str, q, k, v, causal: bool, cfg=None, sm_scale=None):
    """The lesson's kernel ``version`` (v0 or v2) in the host model on numpy Q, K, V (B, H, S, D; values exact in bf16): O (the fp32 values of
    its bf16), how often each element was written, and the programs' traces."""
    from ..model import Buffer, HostTensorDescriptor, Pointer
    from ..model.run import run as run_kernel

    cfg = cfg or MODEL_CFGS[version]
    B, H, Sq, D = q.shape
    Sk = k.shape[2]
    sm_scale = 1 / math.sqrt(D) if sm_scale is None else sm_scale
    bufs = [Buffer(n, x.reshape(-1, D).astype(np.float32), gl.bfloat16) for n, x in (("Q", q), ("K", k), ("V", v))]
    o_buf = Buffer("O", np.zeros((B * H * Sq, D), np.float32), gl.bfloat16, poison=True)
    descs = [HostTensorDescriptor(buf, [rows, D], gl.NVMMASharedLayout.get_default_for([rows, D], gl.bfloat16))
             for buf, rows in zip(bufs, (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_N"]))]
    grid = (-(-Sq // cfg["BLOCK_M"]), B * H)
    before, after = (), ()
    if is_persistent(mod, version):
        # One program an SM of the model's MODEL_SMS over the tiles, the tile counter at 0 (lesson 37's v5).
        grid = (min(grid[0] * grid[1], MODEL_SMS),)
        before, after = (Pointer(Buffer("tiles", np.zeros(2, np.float32), gl.int32)),), (B * H,)
    # The kernel's own −inf arithmetic (2^-inf = 0; the plants' inf − inf) is the GPU's too: numpy is not to warn.
    with np.errstate(over="ignore", invalid="ignore"):
        if is_persistent(mod, version):
            from ..model.cluster_launch import run_together

            runs = run_together(mod.KERNELS[version], grid, *descs, Pointer(o_buf), *before, Sq, Sk,
                                sm_scale * LOG2E, *after, num_warps=cfg["num_warps"],
                                **mod.constexprs(version, cfg, D, causal))
        else:
            runs = run_kernel(mod.KERNELS[version], grid, *descs, Pointer(o_buf), *before, Sq, Sk, sm_scale * LOG2E,
                              *after, num_warps=cfg["num_warps"], **mod.constexprs(version, cfg, D, causal))
    shape = (B, H, Sq, D)
    return o_buf.values().reshape(shape), o_buf.writes.reshape(shape), runs


def unread_copies(runs) -> str | None:
    """A TMA copy no wait ever observes: per program and barrier, more copies reported to it than waits on it (a
    producer that loads a block the consumers never use: wasted bandwidth, and a copy still landing in shared memory
    when the program ends). None, or a sentence naming the barrier."""
    for prog in runs:
        copies, waits = {}, {}
        for e in prog.trace:
            if e["what"] == "tma load":
                copies[e["barrier"]] = copies.get(e["barrier"], 0) + 1
            elif e["what"] == "wait":
                waits[e["barrier"]] = waits.get(e["barrier"], 0) + 1
        for barrier, n in sorted(copies.items()):
            if n > waits.get(barrier, 0):
                return (f"program {list(prog.pid[:2])}: {n} copies report to {barrier} but the consumers wait on it "
                        f"{waits.get(barrier, 0)} times: the producer loads blocks no one uses (does it visit the same "
                        "key blocks as the consumers, key_blocks' n_all?)")
    return None


def model_problem(mod, version: str, shape, causal: bool, scale: float = 1.0, cfg: dict | None = None,
                  shift: float = 0.0, order=None) -> str | None:
    """Kernel ``version`` at one shape (B, H, Sq, Sk) in the host model (at MODEL_CFGS[version], or ``cfg``) against
    the fp64 reference: None or a sentence. ``order``: a reader of the programs' traces (None or a sentence), asked
    once O is right."""
    from ..model import ModelError, ModelUnsupported

    B, H, Sq, Sk = shape
    q, k, v = inputs(B, H, Sq, Sk, MODEL_HEAD_DIM, scale)
    if shift:
        # Every score moved by about ``shift``: Q's first column 256 and K's shift·8/256 (exact in bf16), the rest
        # as drawn. A mask value that is a large finite number, not −inf, then outweighs every real score.
        q[..., 0], k[..., 0] = 256.0, shift * math.sqrt(MODEL_HEAD_DIM) / 256.0
    cfg_text = f", {cfg['STAGES']} slots" if cfg and "STAGES" in cfg else ""
    where = (f"{version}{', causal' if causal else ', not causal'}, batch {B} × {H} heads, Sq {Sq}, Sk {Sk}"
             + (f", scores scaled ×{scale ** 2:g}" if scale != 1 else "")
             + (f", every score near {shift:g}" if shift else "") + cfg_text)
    try:
        got, writes, runs = model_launch(mod, version, q, k, v, causal, cfg)
    except ModelUnsupported as e:
        return not_modelled(e)
    except ModelError as e:
        return f"in the host model, {where}: {model_error_text(e)}"
    want, bound = reference(q, k, v, causal, 1 / math.sqrt(MODEL_HEAD_DIM))
    problem = compare(got, want, bound, writes) or unread_copies(runs) or (order(runs) if order else None)
    return f"in the host model, {where}: {problem}" if problem else None


def launcher_problem(mod, version: str, shape, causal: bool, sms: int = 4, cfg: dict | None = None,
                     sm_scale: float | None = None) -> str | None:
    """The lesson's launcher (``attention``: its checks, descriptors, grid and argument order) on CPU torch tensors,
    the GPU stood in for by the host model (gluon_course.model.launcher.ModelGPU), at the model's configuration
    (MODEL_CFGS[version], or ``cfg``): O against the fp64 reference, each element written once. A persistent
    version (lesson 37's v5) is launched twice from one ``prepared`` call, O poisoned again in between, and the
    second launch is what is compared (its tile counter must have been reset by the first). None or one sentence."""
    from ..model import ModelError, ModelUnsupported
    from ..model.launcher import ModelGPU

    B, H, Sq, Sk = shape
    q, k, v = inputs(B, H, Sq, Sk, MODEL_HEAD_DIM, seed=1)
    tq, tk, tv = (torch.from_numpy(x).to(torch.bfloat16) for x in (q, k, v))
    out = torch.full((B, H, Sq, MODEL_HEAD_DIM), float("nan"), dtype=torch.bfloat16)
    where = (f"the launcher, {version}{', causal' if causal else ', not causal'}, batch {B} × {H} heads, Sq {Sq}, "
             f"Sk {Sk}" + (f", sm_scale {sm_scale:g}" if sm_scale else ""))
    with np.errstate(over="ignore", invalid="ignore"), ModelGPU(sms) as gpu:
        for t, label in ((tq, "Q"), (tk, "K"), (tv, "V"), (out, "O")):
            gpu.add(t, label)
        try:
            if is_persistent(mod, version):
                # Two launches of one prepared call: the tile counter must be back at 0 for the second.
                launch, _ = mod.prepared(tq, tk, tv, causal, version, out=out, config=cfg or MODEL_CFGS[version],
                                         sm_scale=sm_scale)
                for call in ("first", "second"):
                    out.fill_(float("nan"))
                    launch()
                    left = [int(x) for st in gpu.storages if st.name == "tiles_ptr" for x in st.flat.tolist()]
                    if any(left):
                        return (f"in the host model, {where}: after the {call} launch the tile counter and the count "
                                f"of programs that stopped hold {left}, not 0: the next launch would start past "
                                "tiles nobody took (does the last program to stop reset both?)")
            else:
                mod.attention(tq, tk, tv, causal, version, out=out, config=cfg or MODEL_CFGS[version],
                              sm_scale=sm_scale)
        except ModelUnsupported as e:
            return not_modelled(e)
        except ModelError as e:
            return f"in the host model, {where}: {model_error_text(e)}"
        writes = gpu.writes(out)
        programs = gpu.launches[-1] if gpu.launches else []
    used = cfg or MODEL_CFGS[version]
    tiles = -(-Sq // used["BLOCK_M"]) * B * H
    if is_persistent(mod, version) and len(programs) != min(tiles, sms):
        return (f"in the host model, {where}: the launch ran {len(programs)} programs where one an SM ({sms}), or "
                f"one a tile if the {tiles} tiles are fewer, makes {min(tiles, sms)}: is the grid "
                "(min(tiles, SMs),)?")
    if not is_persistent(mod, version) and len(programs) != tiles:
        return (f"in the host model, {where}: the launch ran {len(programs)} programs where one per tile of "
                f"{used['BLOCK_M']} queries and per (batch, head) makes {tiles}: is the grid (query tiles, batch · "
                "heads), from the configuration the launcher was given?")
    if any(prog.num_warps != used["num_warps"] for prog in programs):
        return (f"in the host model, {where}: the kernel ran on {programs[0].num_warps} warps where the configuration "
                f"says {used['num_warps']}: pass num_warps=cfg['num_warps'] to the launch")
    want, bound = reference(q, k, v, causal, sm_scale or 1 / math.sqrt(MODEL_HEAD_DIM))
    problem = compare(out.float().numpy(), want, bound, writes)
    return f"in the host model, {where}: {problem}" if problem else None


def key_blocks_problem(mod) -> str | None:
    """The lesson's key_blocks (run on the host) against what the masks imply, for tiles of 64 and 128 queries over
    keys in blocks of 32 and 64, Sq and Sk odd: n_full, the leading blocks whose every key every query of the tile may
    see (below the diagonal and before Sk), exactly; n_all, the blocks holding a key some row of the tile may see,
    between the real queries' need (rows < Sq) and the whole tile's (rows < m0 + BLOCK_M). None or a sentence."""
    from ..model.run import patched

    key_blocks = patched(mod.key_blocks)
    for BM, BN in ((64, 32), (128, 64)):
        for Sq, Sk in ((100, 100), (17, 200), (300, 70)):
            for causal in (False, True):
                for m0 in range(0, Sq, BM):
                    got = tuple(int(np.asarray(x)) for x in key_blocks(m0, Sk, BM, BN, causal))
                    full = min(m0 // BN, Sk // BN) if causal else Sk // BN
                    least = -(-(min(m0 + BM, Sq, Sk) if causal else Sk) // BN)
                    most = -(-(min(m0 + BM, Sk) if causal else Sk) // BN)
                    if got[0] != full or not least <= got[1] <= most:
                        return (f"key_blocks({m0}, Sk={Sk}, BLOCK_M={BM}, BLOCK_N={BN}, CAUSAL={causal}) gives "
                                f"(n_full, n_all) = {got} where the masks need ({full}, "
                                f"{least if least == most else f'{least} to {most}'}): n_full counts the blocks "
                                "every query of the tile sees in full (before Sk and, causal, up to the tile's first "
                                "query), n_all every block with a key a row of the tile may see")
    return None


def host_model_check(versions=("v0", "v2"), shapes=None):
    """A check: key_blocks against the masks; each kernel at each shape, causal and not, with large scores, with
    every score near −16 384 (a finite mask value would outweigh them), v2 with 3 slots too; then the launcher, at the
    model's tile and at 128 queries on 8 warps with another sm_scale."""
    def check(mod):
        problem = key_blocks_problem(mod)
        if problem:
            return problem
        for version in versions:
            for shape in shapes or MODEL_SHAPES:
                for causal in (False, True):
                    problem = model_problem(mod, version, shape, causal)
                    if problem:
                        return problem
            problem = (model_problem(mod, version, LARGE_SHAPE, False, LARGE_SCALE)
                       or model_problem(mod, version, (1, 2, 17, 40), True, shift=-16384.0))
            if problem:
                return problem
            if version == "v2":
                problem = model_problem(mod, "v2", (2, 1, 100, 100), True, cfg={**MODEL_CFGS["v2"], "STAGES": 3})
                if problem:
                    return problem
        for version in versions:
            wide = {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, **({"STAGES": 2, "LOAD_REGS": 40}
                                                                        if version == "v2" else {})}
            problem = (launcher_problem(mod, version, (shapes or MODEL_SHAPES)[-1], True)
                       or launcher_problem(mod, version, (1, 3, 100, 17), False, cfg=wide, sm_scale=0.3))
            if problem:
                return problem
        return None
    return check


def facts_check(parts, versions=("v0", "v2"), head_dims=(64, 128)):
    """A check: facts_problem's ``parts`` on every kernel, head dim, causal and not, at the lesson's CONFIGS."""
    def check(mod):
        for version in versions:
            for hd in head_dims:
                for causal in (False, True):
                    problem = facts_problem(kernel_facts(mod, version, hd, causal), mod.CONFIGS[version], parts)
                    if problem:
                        return problem
        return None
    return check


# -- the compiler ---------------------------------------------------------------------------------------------------

def compiled(mod, version: str, head_dim: int, causal: bool, cfg: dict | None = None):
    """The lesson's kernel ``version`` compiled for sm_90 as its launcher launches it (CONFIGS, or ``cfg``)."""
    from ..machine import compile_cached, tensor_descriptor_type

    cfg = cfg or mod.CONFIGS[version]
    BM, BN = cfg["BLOCK_M"], cfg["BLOCK_N"]

    def desc(block):
        return tensor_descriptor_type("bf16", block, gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16))

    signature = {"q_desc": desc([BM, head_dim]), "k_desc": desc([BN, head_dim]), "v_desc": desc([BN, head_dim]),
                 "o_ptr": "*bf16", "Sq": "i32", "Sk": "i32", "qk_scale": "fp32"}
    if is_persistent(mod, version):          # v5: the tile counter after O, the heads' count last
        signature = {**{n: t for n, t in signature.items() if n not in ("Sq", "Sk", "qk_scale")}, "tiles_ptr": "*i32",
                     "Sq": "i32", "Sk": "i32", "qk_scale": "fp32", "BH": "i32"}
    return compile_cached(mod.KERNELS[version], "sm_90", signature=signature,
                          constexprs=mod.constexprs(version, cfg, head_dim, causal), aligned=("o_ptr",),
                          num_warps=cfg["num_warps"])


_HGMMA_OPERANDS = re.compile(r"HGMMA\.\S+\s+R\d+,\s*(R\d+|gdesc)")


def key_loops(k) -> list[tuple[int, int]]:
    """The key loops of a compiled attention kernel: the loop bodies that hold an HGMMA and are closed by a
    conditional backward branch. (An mbarrier wait's slow path sits after the kernel's end and jumps back into the
    loop unconditionally: the spans it makes are not loops of the kernel.)"""
    spans = []
    for ins in k.instructions():
        m = re.search(r"\bBRA\s+0x([0-9a-f]+)", ins.text)
        if m and ins.text.startswith("@"):
            target = int(m.group(1), 16)
            if target <= ins.address and any(target <= i.address <= ins.address and i.opcode.startswith("HGMMA")
                                             for i in k.instructions()):
                spans.append((target, ins.address))
    # A loop over tiles (lesson 37's v5) holds each consumer's key loops: only the innermost loops are key loops.
    return sorted(a for a in spans if not any(b != a and a[0] <= b[0] and b[1] <= a[1] for b in spans))


def loop_facts(k, first: int, last: int, cfg: dict, head_dim: int) -> dict:
    """What one key loop does per key block: its HGMMAs by the width of their product (S's BLOCK_N, O's head dim)
    and where their A operand comes from (``smem``: a shared-memory descriptor; ``regs``: registers), MUFU.EX2 per
    score a thread holds, the masking selects (FSEL), shared-memory stores and loads (a layout conversion through
    shared memory would show as both), lane shuffles, CTA barriers."""
    body = [i for i in k.instructions() if first <= i.address <= last]
    ops = k.opcodes_between(first, last)
    hgmma = {}
    for i in body:
        if i.opcode.startswith("HGMMA"):
            m = _HGMMA_OPERANDS.match(i.text)
            source = "regs" if m and m.group(1).startswith("R") else "smem"
            key = f"{i.opcode} A:{source}"
            hgmma[key] = hgmma.get(key, 0) + 1
    threads = 32 * cfg["num_warps"]
    scores = cfg["BLOCK_M"] * cfg["BLOCK_N"] // threads
    rows = cfg["BLOCK_M"] // (16 * cfg["num_warps"]) * 2       # wgmma's layout: 2 rows a thread per 16-row strip
    count = lambda *prefixes: sum(n for op, n in ops.items() if op.startswith(prefixes))  # noqa: E731
    return {"hgmma": hgmma, "ex2": count("MUFU.EX2"), "scores_per_thread": scores, "rows_per_thread": rows,
            "fsel": count("FSEL"), "shared_stores": count("STS"), "shared_loads": count("LDS"),
            "shuffles": count("SHFL"), "cta_barriers": count("BAR.SYNC")}


def kernel_facts(mod, version: str, head_dim: int, causal: bool, cfg: dict | None = None) -> dict:
    """The facts of one compile: resources, and loop_facts of each key loop."""
    cfg = cfg or mod.CONFIGS[version]
    k = compiled(mod, version, head_dim, causal, cfg)
    loops = key_loops(k)
    return {"name": version, "head_dim": head_dim, "causal": causal, "registers": k.registers, "spills": k.spills,
            "shared_bytes": k.shared_bytes, "loops": [loop_facts(k, a, b, cfg, head_dim) for a, b in loops],
            "compiled": k}


def facts_problem(f: dict, cfg: dict, parts=("mma", "ex2", "registers", "masks")) -> str | None:
    """What a lesson would assert of one compile, None when all hold: two key loops (unmasked, then masked); in
    each, S's HGMMAs read A (Q) from shared memory and O's read A (P) from registers; one MUFU.EX2 per score plus one
    per row (alpha); no shared-memory store or load (P and alpha change layout in registers); no FSEL in the
    unmasked loop, and some in the masked one; lane shuffles only for the row max and row sum."""
    from ..grading.gemm_kernel import fits

    where = f"{f['name']} at head dim {f['head_dim']}{', causal' if f['causal'] else ''}"
    problem = fits(f["compiled"], cfg["num_warps"], cfg)
    if problem:
        return f"{where}: {problem}"
    loops = f["loops"]
    if len(loops) != 2:
        return f"{where}: {len(loops)} loops hold an HGMMA where v0 and v2 have two (the unmasked key blocks, then " \
               "the masked ones)"
    BN, HD = cfg["BLOCK_N"], f["head_dim"]
    # Per warpgroup and key block: S = Q·Kᵀ is HEAD_DIM/16 HGMMAs BLOCK_N wide reading Q from shared memory, O += P·V
    # BLOCK_N/16 HGMMAs HEAD_DIM wide reading P from registers (one key of 16 each).
    want_mma = {f"HGMMA.64x{BN}x16.F32.BF16 A:smem": HD // 16, f"HGMMA.64x{HD}x16.F32.BF16 A:regs": BN // 16}
    for which, loop in zip(("unmasked", "masked"), loops):
        if "mma" in parts and loop["hgmma"] != want_mma:
            return (f"{where}: the {which} key loop's HGMMAs are {loop['hgmma']}, where S = Q·Kᵀ from shared memory "
                    f"and O += P·V with P from registers make {want_mma}")
        want = loop["scores_per_thread"] + loop["rows_per_thread"]
        if "ex2" in parts and loop["ex2"] != want:
            return (f"{where}: the {which} key loop has {loop['ex2']} MUFU.EX2 where one per score "
                    f"({loop['scores_per_thread']} a thread) and one per row ({loop['rows_per_thread']}) make {want}")
        if "registers" in parts and (loop["shared_stores"] or loop["shared_loads"]):
            return (f"{where}: the {which} key loop stores {loop['shared_stores']} and loads {loop['shared_loads']} "
                    "times through shared memory: a layout conversion between the softmax and the P·V wgmma that is "
                    "not free")
        # A row's scores lie across 4 lanes: its max and its sum take 2 butterfly shuffles each.
        if "registers" in parts and loop["shuffles"] != 4 * loop["rows_per_thread"]:
            return (f"{where}: the {which} key loop has {loop['shuffles']} lane shuffles where the row max and row sum "
                    f"take {4 * loop['rows_per_thread']} (2 each for each of a thread's "
                    f"{loop['rows_per_thread']} rows): a conversion between threads")
    # One select a row (a guard on a row's maximum) is not a mask: a mask selects every score it covers.
    if "masks" in parts and loops[0]["fsel"] > loops[0]["rows_per_thread"]:
        return (f"{where}: the unmasked key loop, which runs for every block below the diagonal, holds "
                f"{loops[0]['fsel']} FSEL (the mask's selects of −inf): each of those blocks pays for a mask none of "
                "its scores needs. Mask only the diagonal blocks and the last partial one")
    if "masks" in parts and not loops[1]["fsel"]:
        return f"{where}: the masked key loop holds no FSEL: the −inf of masked keys is never selected"
    return None


# -- lesson 37: the order of a key loop's instructions ----------------------------------------------------------------

_BARRIER_ADDRESS = re.compile(r"\[(?:U?R\w+\+)*U?R\w+(?:\+0x([0-9a-f]+))?\]")


def barrier_offsets(k, names) -> dict[int, str]:
    """Each mbarrier's offset in shared memory as the listing addresses it, named. ``names``: the kernel's
    mbarrier.init calls in order (a ring's barriers under the ring's name, one per slot). The inits
    (``SYNCS.EXCH.64 URZ, [UR9+0x28120], ...``) come in that order in Triton 3.9.0's listings of lesson 37's kernels,
    and a loop addresses a ring's barrier of any slot as a base register (moved by the slot) plus slot 0's offset, so
    slot 0's offset names the ring."""
    offsets = []
    for i in k.instructions():
        if i.opcode.startswith("SYNCS.EXCH"):
            m = _BARRIER_ADDRESS.search(i.text)
            offsets.append(int(m.group(1) or "0", 16) if m else None)
    if len(offsets) != len(names):
        raise ValueError(f"the listing initialises {len(offsets)} mbarriers where {len(names)} names were given")
    named = {}
    for offset, name in zip(offsets, names):
        named.setdefault(offset, name)
    return named


def loop_events(k, first: int, last: int, barriers: dict | None = None) -> list[tuple[str, int]]:
    """A key loop's body in the order ptxas left it, as (event, count), runs of one kind of product or exponential
    counted together: ``S`` an HGMMA reading A from shared memory (S = Q·Kᵀ), ``PV`` one reading A from registers
    (O += P·V), ``EX2`` a MUFU.EX2, ``wait<d>`` a WARPGROUP.DEPBAR.LE (warpgroup_mma_wait(d)), ``wait:NAME`` and
    ``arrive:NAME`` an mbarrier wait or arrive on the barrier ``barriers`` names by its offset (barrier_offsets)."""
    events = []
    for i in k.instructions():
        if not first <= i.address <= last:
            continue
        op = i.opcode
        if op.startswith("HGMMA"):
            m = _HGMMA_OPERANDS.match(i.text)
            kind = "PV" if m and m.group(1).startswith("R") else "S"
        elif op == "MUFU.EX2":
            kind = "EX2"
        elif op == "WARPGROUP.DEPBAR.LE":
            kind = f"wait<{int(i.text.rsplit(',', 1)[1].strip().rstrip(';'), 0)}>"
        elif op.startswith(("SYNCS.PHASECHK", "SYNCS.ARRIVE")):
            m = _BARRIER_ADDRESS.search(i.text)
            offset = int(m.group(1) or "0", 16) if m else None
            name = (barriers or {}).get(offset, f"{offset:#x}" if offset is not None else "?")
            kind = ("wait:" if op.startswith("SYNCS.PHASECHK") else "arrive:") + name
        else:
            continue
        if events and events[-1][0] == kind and kind in ("S", "PV", "EX2"):
            events[-1] = (kind, events[-1][1] + 1)
        else:
            events.append((kind, 1))
    return events


def overlap_facts(events, turn: str = "turn") -> dict:
    """What a key loop's order (loop_events) overlaps: ``ex2_under_s``, the exponentials issued while a group of S's
    products is in flight (after its first HGMMA, before the wgmma wait that retires it: a wait of depth d retires a
    group once d or more groups were issued after it), ``ex2_after_s`` those issued after that wait (ptxas issues
    independent exponentials between a synchronous wgmma's HGMMAs too: the ones after its wait are the ones that
    waited for it); ``ex2_under_pv`` the same for P·V's; ``turn_waits`` and
    ``turn_passes``, the waits and arrives on barriers named ``turn``...; ``turn_passed_before_ex2``, whether the first
    such arrive comes before the first EX2 (None without one). The listing is read once through, not around the
    loop's back edge (in lesson 37's loops no product is in flight there)."""
    def under(target):
        """(EX2 while the first group of ``target`` is in flight, EX2 after the wait that retires it)."""
        count, inside, later, last_kind = 0, False, 0, None
        for at, (name, n) in enumerate(events):
            if name in ("S", "PV"):
                if name != last_kind and inside:
                    later += 1
                if name == target and not inside and name != last_kind:
                    inside, later = True, 0
                last_kind = name
            elif name.startswith("wait<") and inside and int(name[5:-1]) <= later:
                return count, sum(m for kind, m in events[at:] if kind == "EX2")
            elif name == "EX2" and inside:
                count += n
        return count, 0
    names = [name for name, _ in events]
    first_ex2 = names.index("EX2") if "EX2" in names else None
    passes = [i for i, name in enumerate(names) if name.startswith(f"arrive:{turn}")]
    return {"ex2": sum(n for name, n in events if name == "EX2"), "ex2_under_s": under("S")[0],
            "ex2_after_s": under("S")[1], "ex2_under_pv": under("PV")[0],
            "turn_waits": sum(name.startswith(f"wait:{turn}") for name in names),
            "turn_passes": len(passes),
            "turn_passed_before_ex2": (passes[0] < first_ex2) if passes and first_ex2 is not None else None}


def events_text(events) -> str:
    """loop_events as one line: ``S×2 EX2×5 S … wait<0> arrive:k_empty``."""
    return " ".join(f"{name}×{n}" if n > 1 else name for name, n in events)


def gpu_reference(q, k, v, causal: bool):
    """SDPA's math in fp32 on the bf16 inputs (torch's own formula, no fused backend), and reference()'s bound
    computed in fp32 on the GPU."""
    q32, k32, v32 = q.float(), k.float(), v.float()
    sm_scale = 1 / math.sqrt(q.shape[-1])
    s = (q32 @ k32.transpose(-1, -2)) * sm_scale
    if causal:
        keep = torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    w = torch.softmax(s, dim=-1)
    out = w @ v32
    spread = w @ v32.abs()
    score_err = 2 * q.shape[-1] * 2.0 ** -24 * sm_scale * (q32.abs() @ k32.abs().transpose(-1, -2)).amax(-1, True)
    bound = (2.0 ** -8 + 2 * score_err + k.shape[2] * 2.0 ** -23) * spread + 2.0 ** -8 * out.abs() + 1e-5
    return out, bound


def gpu_check_one(mod, version: str, shape, head_dim: int, causal: bool, seed: int = 0,
                  config: dict | None = None) -> str | None:
    """One launch of ``version`` (at its CONFIGS, or ``config``) on fresh random inputs, O poisoned and guarded,
    against gpu_reference."""
    from ..measure.tensors import guarded_empty, is_poison

    B, H, Sq, Sk = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(B, H, Sq, head_dim, device="cuda", generator=g).to(torch.bfloat16)
    k = torch.randn(B, H, Sk, head_dim, device="cuda", generator=g).to(torch.bfloat16)
    v = torch.randn(B, H, Sk, head_dim, device="cuda", generator=g).to(torch.bfloat16)
    out = guarded_empty((B, H, Sq, head_dim), dtype=torch.bfloat16)
    mod.attention(q, k, v, causal, version, out=out.tensor, config=config)
    torch.cuda.synchronize()
    got = out.tensor.float()
    if is_poison(got).any():
        return f"{int(is_poison(got).sum())} element(s) of O never written (still NaN)"
    if not out.margins_untouched():
        return "a write past O's ends (the guard margins changed)"
    ref, bound = gpu_reference(q, k, v, causal)
    bad = (got - ref).abs() > bound
    if bad.any():
        where = bad.nonzero()[0].tolist()
        return (f"{int(bad.sum())} element(s) outside the bound, first O{where}: {got[tuple(where)]:g} vs "
                f"{ref[tuple(where)]:g}")
    return None


def sdpa_refusal(fn) -> str | None:
    """Runs one SDPA backend's call once: None if it ran, else why the backend refused the problem. torch says why in
    UserWarnings before its RuntimeError ("No available kernel"); they are caught and kept here as the reason instead
    of reaching the notebook's output."""
    import warnings

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            fn()
            torch.cuda.synchronize()
            return None
        except RuntimeError as e:
            why = [str(w.message).split(" (Triggered internally")[0] for w in said]
            reasons = [w for w in why if not w.endswith("because:")] or [str(e).splitlines()[0]]
            return "; ".join(reasons)[:300]


def sdpa_call(backend: str, q, k, v, causal: bool):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    chosen = getattr(SDPBackend, backend)

    def call():
        with sdpa_kernel([chosen]):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return call


def interleaved_ms(calls: dict, rounds: int = 9, window_ms: float = 20.0) -> dict:
    """Each candidate run back to back between two events, as many times as fill about ``window_ms`` (3 to 50: the
    host's time to launch a call hides behind the calls queued before it), the candidates in turn, ``rounds`` rounds:
    the median ms of one call each."""
    reps = {}
    for name, fn in calls.items():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        reps[name] = min(50, max(3, math.ceil(window_ms / max(start.elapsed_time(end), 1e-3))))
    times = {name: [] for name in calls}
    for _ in range(rounds):
        for name, fn in calls.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps[name]):
                fn()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) / reps[name])
    return {name: float(np.median(t)) for name, t in times.items()}




# Odd shapes for correctness (batch, heads, Sq, Sk): one query and one key, tails past every block, Sq ≠ Sk both ways.
GPU_ODD_SHAPES = ((1, 2, 1, 1), (2, 3, 17, 17), (1, 2, 100, 300), (2, 2, 300, 100), (1, 4, 1000, 1000),
                  (1, 2, 129, 257))


def correct_here(module_file: str) -> str | None:
    """The correctness check itself, in a child process (a barrier that never completes hangs there)."""
    from ..course import load_module_file
    from ..grading.runner import sentence_in_child

    mod = load_module_file(module_file)

    def run():
        for version in mod.CONFIGS:
            for hd in (64, 128):
                for shape in GPU_ODD_SHAPES:
                    for causal in (False, True):
                        problem = gpu_check_one(mod, version, shape, hd, causal)
                        if problem:
                            return (f"{version}, head dim {hd}, (batch, heads, Sq, Sk) = {shape}"
                                    f"{', causal' if causal else ''}: {problem}")
        return None
    return sentence_in_child(module_file, run)


def correct(mod) -> str | None:
    """Both kernels, both head dims, causal and not, on GPU_ODD_SHAPES, in one child process under a limit."""
    from ..measure.isolated import check_in_child

    return check_in_child(f"{__file__}:correct_here", [mod.__file__], timeout=CHILD_LIMIT_S)


def launcher_refuses(mod) -> str | None:
    """The launcher's refusals, each a ValueError with a sentence: fp16, a 3-D tensor, a non-contiguous view, K and V
    of other lengths, another head dim, no key, an output that is an input."""
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(1, 2, 64, 128, device="cuda", generator=g).to(torch.bfloat16)
    cases = {"fp16 Q": (q.half(), q, q), "a 3-D Q": (q[0], q, q), "a transposed K": (q, q.transpose(2, 3), q),
             "V shorter than K": (q, q, q[:, :, :32]), "head dim 96": (q[..., :96].contiguous(),) * 3,
             "no key": (q, q[:, :, :0], q[:, :, :0]), "O written over Q": (q, q.clone(), q.clone(), q)}
    for what, (a, b, c, *out) in cases.items():
        try:
            mod.attention(a, b, c, out=out[0] if out else None)
        except ValueError:
            continue
        except Exception as e:                   # noqa: BLE001 - anything but the launcher's sentence is a failure
            from ..grading.errors import explain
            return f"{what}: the launcher did not refuse it with a sentence ({explain(e)})"
        return f"{what}: the launcher ran it instead of refusing it"
    return None


def time_shapes(mod, shapes, rounds: int = 9, with_plain_triton: bool = True) -> list[dict]:
    """Each (S, head dim, causal): TOKENS // S sequences of HEADS heads; the lesson's versions (its CONFIGS: v0 and
    v2 in lesson 36, v2, v3 and v4 in lesson 37) and SDPA's backends, launches interleaved (``interleaved_ms``):
    TFLOPS at 4·B·H·S²·D FLOPs (half of it with causal). A backend that refuses the shape is left out, with its
    reason. ``triton`` (``with_plain_triton``): the same attention in plain Triton (measure.plain_triton.attention,
    autotuned before the timing)."""
    from ..measure import plain_triton

    rows = []
    for S, head_dim, causal in shapes:
        B = max(1, TOKENS // S)
        g = torch.Generator(device="cuda").manual_seed(1)
        q, k, v = (torch.randn(B, HEADS, S, head_dim, device="cuda", generator=g).to(torch.bfloat16)
                   for _ in range(3))
        out = torch.empty_like(q)
        calls, refused = {}, {}
        for version in mod.CONFIGS:
            calls[version] = mod.prepared(q, k, v, causal, version, out=out)[0]
        if with_plain_triton:
            calls["triton"] = lambda: plain_triton.attention(q, k, v, causal, out=out)
        for backend in SDPA_BACKENDS:
            fn = sdpa_call(backend, q, k, v, causal)
            problem = sdpa_refusal(fn)
            if problem:
                refused[backend] = problem
            else:
                calls[backend.split("_")[0].lower()] = fn
        for fn in calls.values():
            fn()
        torch.cuda.synchronize()
        ms = interleaved_ms(calls, rounds)
        flops = 4 * B * HEADS * S * S * head_dim * (0.5 if causal else 1)
        tflops = {name: round(flops / t / 1e9, 1) for name, t in ms.items()}
        library = {name: t for name, t in tflops.items() if name in ("cudnn", "flash", "efficient")}
        rows.append({"S": S, "batch": B, "heads": HEADS, "head_dim": head_dim, "causal": causal, "tflops": tflops,
                     "best_library": max(library, key=library.get) if library else None, "refused": refused})
        del q, k, v, out
    return rows


TOKENS, HEADS = 16384, 32          # batch = TOKENS // S: 16k tokens × 32 heads at every S
SDPA_BACKENDS = ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION")
TIMED = tuple((S, 128, causal) for S in (1024, 4096, 16384) for causal in (False, True))


def sdpa_measure(version: str = "v2", over: str = "best"):
    """A figure: the geomean over TIMED of ``version``'s TFLOPS over the best SDPA backend's (``over="best"``), v0's
    (``over="v0"``) or plain Triton's (``over="triton"``), each shape's figures in the details."""
    def measure(mod):
        from ..measure.timing import Measurement

        problem = correct(mod)
        if problem:
            raise AssertionError(problem)
        rows = _timed_once(mod.__file__)
        ratios = []
        for row in rows:
            t = row["tflops"]
            base = t[row["best_library"]] if over == "best" else t[over]
            ratios.append(t[version] / base)
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        worst = min(range(len(rows)), key=lambda i: ratios[i])
        w = rows[worst]
        text = (f"geomean {geomean:.2f}× over {len(rows)} shapes, worst {ratios[worst]:.2f}× (S {w['S']}"
                f"{', causal' if w['causal'] else ''})")
        return Measurement(geomean, text, json.loads(json.dumps({"shapes": rows, "ratios": ratios})))
    return measure


_TIMED: dict = {}


def _timed_once(module_file: str) -> list[dict]:
    """time_shapes(TIMED) once per module and process: the lesson's figures share one run."""
    if module_file not in _TIMED:
        from ..course import load_module_file

        _TIMED[module_file] = time_shapes(load_module_file(module_file), TIMED)
    return _TIMED[module_file]


def small_launch(module_file: str) -> None:
    """For compute-sanitizer, in a child process: each kernel once on a small odd causal problem (2 × 2 heads, 200
    queries over 300 keys, head dim 64), so that the ring's slots and phases carry across several key blocks."""
    from ..course import load_module_file

    mod = load_module_file(module_file)
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(2, 2, 200, 64, device="cuda", generator=g).to(torch.bfloat16)
    k, v = (torch.randn(2, 2, 300, 64, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
    for version in mod.CONFIGS:
        mod.attention(q, k, v, True, version)
    torch.cuda.synchronize()


def sanitizer_clean(mod) -> str | None:
    """compute-sanitizer memcheck and synccheck on ``small_launch`` (each tool its own child process)."""
    from ..measure.isolated import sanitizer_check

    return sanitizer_check(f"{__file__}:small_launch", [mod.__file__], tools=("memcheck", "synccheck"))


def block_kinds(mod, Sq: int, Sk: int, causal: bool, cfg: dict | None = None) -> np.ndarray:
    """For each (query tile, key block) of one head, what the lesson's ``key_blocks`` makes of it: 2 unmasked, 1
    masked, 0 never visited (run in the host model, so that a learner's key_blocks is what is drawn)."""
    from ..model.run import patched

    cfg = cfg or mod.CONFIGS["v2"]
    BM, BN = cfg["BLOCK_M"], cfg["BLOCK_N"]
    key_blocks = patched(mod.key_blocks)
    kinds = np.zeros((-(-Sq // BM), -(-Sk // BN)), dtype=int)
    for t in range(kinds.shape[0]):
        n_full, n_all = (int(np.asarray(x)) for x in key_blocks(t * BM, Sk, BM, BN, causal))
        kinds[t, :n_full] = 2
        kinds[t, n_full:n_all] = 1
    return kinds


def block_map(mod, Sq: int, Sk: int, cfg: dict | None = None):
    """The key blocks each query tile visits, without and with the causal mask, as two pictures side by side."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    cfg = cfg or mod.CONFIGS["v2"]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    colours = ListedColormap(["#FFFFFF", "#F58518", "#4C78A8"])
    for ax, causal in zip(axes, (False, True)):
        kinds = block_kinds(mod, Sq, Sk, causal, cfg)
        ax.imshow(kinds, cmap=colours, vmin=0, vmax=2, aspect="auto")
        ax.set_xticks(np.arange(-0.5, kinds.shape[1], 1), minor=True)
        ax.set_yticks(np.arange(-0.5, kinds.shape[0], 1), minor=True)
        ax.grid(which="minor", color="#CCCCCC", linewidth=0.5)
        ax.tick_params(which="minor", length=0)
        visited = int((kinds > 0).sum())
        ax.set_title(f"{'causal' if causal else 'not causal'}: {int((kinds == 2).sum())} unmasked, "
                     f"{int((kinds == 1).sum())} masked, {kinds.size - visited} skipped", fontsize=9)
        ax.set_xlabel(f"key block ({cfg['BLOCK_N']} keys)")
        ax.set_ylabel(f"query tile ({cfg['BLOCK_M']} queries)")
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="#999999") for c in ("#4C78A8", "#F58518", "#FFFFFF")]
    fig.legend(handles, ["no mask", "masked (−inf where a key may not be seen)", "never visited"], loc="lower center",
               ncol=3, fontsize=8, frameon=False)
    fig.suptitle(f"One head, Sq = {Sq}, Sk = {Sk}", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    plt.show()


# -- lesson 37: the FA3 schedule (the host model, the compile's order, the figures, the timeline) ---------------------
#
# Lesson 37's module has lesson 36's interface (KERNELS, CONFIGS, constexprs, attention, prepared) for versions v3
# (the next block's S issued before this block's softmax) and v4 (two consumer warpgroups taking turns at the tensor
# cores, in FlashAttention-3's order), and v2, lesson 36's, for the figures.

# The model's tiles: v3 one warpgroup's 64 queries, v4 two of them (64 each), keys in blocks of 32, head dim 64, two
# slots; a causal head of 200 queries over 230 keys gives v4's 128-query tiles unmasked blocks too, and 128 keys fill
# their 4 blocks exactly (not causal: every block unmasked, n_full = n_all, the last one too).
FA3_MODEL_CFGS = {"v3": {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "STAGES": 2, "LOAD_REGS": 24},
                  "v4": {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 4, "STAGES": 2, "LOAD_REGS": 24},
                  "v5": {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 4, "STAGES": 2, "LOAD_REGS": 24}}
FA3_MODEL_SHAPES = MODEL_SHAPES + ((1, 1, 200, 230), (1, 1, 70, 128))


def turns_alternate(programs) -> str | None:
    """Lesson 37's ping-pong (v4) in the model's order of events: each consumer issues its block 0's S in its first
    turn, S_{j+1} and P·V j in each later one, the last block's P·V in its last, so n_all key blocks make 2·n_all
    products and n_all + 1 turns a consumer. The wgmma issues of a program fall into runs by consumer: 2·(n_all + 1)
    of them, alternating, the default partition (consumer 0) first; a program over several tiles (v5, the turns
    carried from tile to tile) makes that many a tile, its tiles counted by Q's copies. Fewer runs: a consumer issued
    two turns' products without waiting for the other's handover. None or a sentence."""
    for prog in programs:
        issues = [e["partition"] for e in prog.trace if e["what"] == "wgmma"]
        runs = [who for i, who in enumerate(issues) if i == 0 or issues[i - 1] != who]
        if not runs:
            continue
        tiles = sum(1 for e in prog.trace if e["what"] == "tma load" and e["barrier"].startswith("q_bar")) or 1
        turns = len(issues) // 2 + 2 * tiles
        order = " → ".join(r.replace(" partition", "") for r in runs[:8]) + (" …" if len(runs) > 8 else "")
        if runs[0] != "default partition":
            return (f"program {list(prog.pid[:2])}: the first products are {runs[0]}'s, not consumer 0's (the "
                    "default partition): consumer 0's first take_turn must pass at once, consumer 1's wait for its "
                    "handover")
        if len(runs) != turns:
            cause = ("a consumer issued products of two turns without waiting for the other's handover (take_turn's "
                     "count or parity, or the turn barrier it waits on?)" if len(runs) < turns else
                     "the other consumer's products came between one turn's (is the turn handed over before the "
                     "turn's last product? S_{j+1} and P·V j are issued back to back, then pass_turn)")
            return (f"program {list(prog.pid[:2])}: the two consumers' {len(issues)} products came in {len(runs)} "
                    f"runs by consumer ({order}) where their turns make {turns}, alternating: {cause}")
    return None


def fa3_model_problem(mod, version: str, cfgs=None, shapes=None, pingpong: bool = False) -> str | None:
    """Lesson 37's kernel ``version`` in the host model (at FA3_MODEL_CFGS, or ``cfgs``): lesson 36's odd shapes and
    a long causal head, causal and not; scores past exp2's range; every score near −16 384; three ring slots; then
    the launcher at the model's tile and at a second sm_scale. O within the fp64 reference's bound, each element of
    a NaN-poisoned O written once, no race on a ring slot, no barrier that never completes, no copy no one reads;
    with ``pingpong``, the two consumers' turns alternating (turns_alternate). None or a sentence."""
    cfg = (cfgs or FA3_MODEL_CFGS)[version]
    order = turns_alternate if pingpong else None
    for shape in shapes or FA3_MODEL_SHAPES:
        for causal in (False, True):
            problem = model_problem(mod, version, shape, causal, cfg=cfg, order=order)
            if problem:
                return problem
    return (model_problem(mod, version, LARGE_SHAPE, False, LARGE_SCALE, cfg=cfg, order=order)
            or model_problem(mod, version, (1, 2, 17, 40), True, cfg=cfg, shift=-16384.0, order=order)
            or model_problem(mod, version, (1, 1, 200, 230), True, cfg={**cfg, "STAGES": 3}, order=order)
            or launcher_problem(mod, version, (1, 2, 100, 17), True, cfg=cfg)
            or launcher_problem(mod, version, (1, 3, 100, 170), False, cfg=cfg, sm_scale=0.3))


def fa3_model_check(version: str, pingpong: bool = False):
    """A check: fa3_model_problem on one version (``pingpong``: two consumers taking turns)."""
    def check(mod):
        return fa3_model_problem(mod, version, pingpong=pingpong)
    return check


def fa3_barrier_names(cfg: dict, pingpong: bool, persistent: bool = False) -> list[str]:
    """Lesson 37's kernels' mbarrier.init calls in order (barrier_offsets reads the listing's offsets in that order):
    Q's (and, in a persistent kernel, Q's release), then per slot K's ready and empty and V's ready and empty, then
    the two turns of a ping-pong kernel."""
    names = ["q_bar"] + (["q_empty"] if persistent else []) + ["k_ready", "k_empty", "v_ready", "v_empty"] * cfg["STAGES"]
    return names + (["turn[0]", "turn[1]"] if pingpong else [])


def fa3_facts(mod, version: str, head_dim: int, causal: bool, pingpong: bool, cfg: dict | None = None) -> dict:
    """One sm_90 compile of lesson 37's ``version``: resources, ptxas's notes, USETMAXREG in address order, the
    register split asked for (``mma_regs``, ``load_regs``), and per key loop lesson 36's loop_facts with the loop's
    order (loop_events) and what it overlaps (overlap_facts). ``pingpong``: two consumer warpgroups, each on half of
    the program's queries (their loops are counted per warpgroup)."""
    from ..grading.tma_gemm import setmaxnreg

    cfg = cfg or mod.CONFIGS[version]
    k = compiled(mod, version, head_dim, causal, cfg)
    per_consumer = {**cfg, "BLOCK_M": cfg["BLOCK_M"] // 2} if pingpong else cfg
    barriers = barrier_offsets(k, fa3_barrier_names(cfg, pingpong, is_persistent(mod, version)))
    loops = []
    for first, last in key_loops(k):
        loop = loop_facts(k, first, last, per_consumer, head_dim)
        events = loop_events(k, first, last, barriers)
        names = [name for name, _ in events]
        passes = [i for i, name in enumerate(names) if name.startswith("arrive:turn")]
        takes = [i for i, name in enumerate(names) if name.startswith("wait:turn")]
        waits = [i for i, name in enumerate(names) if name.startswith("wait<")]
        products = [i for i, name in enumerate(names) if name in ("S", "PV")]
        # The turn taken before the loop's first product, handed over before its first wgmma wait: right after the
        # products are issued.
        loop.update(overlap_facts(events), events=events, waits=[int(names[i][5:-1]) for i in waits],
                    turn_passed_before_wait=(passes[0] < waits[0]) if passes and waits else None,
                    turn_taken_before_products=(takes[0] < products[0]) if takes and products else None)
        loops.append(loop)
    ce = mod.constexprs(version, cfg, head_dim, causal)
    return {"name": version, "head_dim": head_dim, "causal": causal, "pingpong": pingpong,
            "registers": k.registers, "spills": k.spills, "shared_bytes": k.shared_bytes, "notes": k.ptxas_notes(),
            "setmaxnreg": setmaxnreg(k), "mma_regs": ce.get("MMA_REGS"), "load_regs": ce.get("LOAD_REGS"),
            "loops": loops, "compiled": k}


def pingpong_split_problem(f: dict) -> str | None:
    """A ping-pong kernel's register reallocation (lesson 37's v4: the default partition and worker 0 one consumer
    warpgroup each, worker 1 the producer's warp at LOAD_REGS): the listing keeps it, the producer's warpgroup gives
    its registers back to LOAD_REGS, a consumer warpgroup takes MMA_REGS, and the three warpgroups' shares fit what
    the launch holds (the launch's registers a thread × 384 threads). None or a sentence."""
    k, mma, load = f["compiled"], f["mma_regs"], f["load_regs"]
    got = f["setmaxnreg"]
    if not got:
        notes = [n for n in f["notes"] if "setmaxnreg" in n]
        return ("no USETMAXREG in the listing: " + (f"ptxas dropped register reallocation (its note: “{notes[0]}”)"
                                                   if notes else "Triton asked for no register reallocation")
                + f", so every warp runs at the launch's {k.registers} registers")
    allocs = {n for kind, n in got if kind == "TRY_ALLOC"}
    deallocs = {n for kind, n in got if kind == "DEALLOC"}
    producer = -(-int(load) // 8) * 8
    if producer not in deallocs:
        return (f"the producer's warpgroup never gives its registers back to LOAD_REGS = {load} (DEALLOC "
                f"{sorted(deallocs)}): pass the workers' registers to gl.warp_specialize, the producer's last")
    if mma not in allocs:
        return (f"no consumer warpgroup takes MMA_REGS = {mma} registers (TRY_ALLOC {sorted(allocs)}): the split "
                "asked for is not the one compiled")
    if 2 * mma + producer > 3 * k.registers:
        return (f"two consumer warpgroups at {mma} and the producer's at {producer} registers a thread need "
                f"{2 * mma + producer} × 128, more than the launch's {k.registers} × 384: a warpgroup's "
                "setmaxnreg.inc then waits for registers no one gives back")
    return None


def fa3_facts_problem(f: dict, cfg: dict, parts=("fit", "lesson36", "overlap", "turn", "split")) -> str | None:
    """What lesson 37's compiles must show, None when all hold (``parts`` picks): ``fit``, the kernel fits with no
    spill, ptxas keeps the wgmma asynchronous (no note that it serialized them) and each consumer has two key loops
    (unmasked, masked); ``lesson36``, lesson 36's per-loop facts (S from shared memory, P·V from registers, one EX2 a
    score and a row, no round trip through shared memory, masks only in the masked loop); ``overlap``, at least half
    the loop's EX2 issued while the next block's S is in flight; ``turn``, one take and one pass of the tensor cores'
    turn per loop, the pass before the loop's first EX2 (the other warpgroup's products start before this one's
    softmax); ``split``, the ping-pong's register reallocation (pingpong_split_problem)."""
    where = f"{f['name']} at head dim {f['head_dim']}{', causal' if f['causal'] else ''}"
    consumers = 2 if f["pingpong"] else 1
    per_consumer = {**cfg, "BLOCK_M": cfg["BLOCK_M"] // consumers}
    loops = f["loops"]
    if "fit" in parts:
        from ..grading.gemm_kernel import fits

        problem = fits(f["compiled"], cfg["num_warps"], cfg)
        if problem:
            return f"{where}: {problem}"
        serialized = [n for n in f["notes"] if "serialized" in n]
        if serialized:
            return (f"{where}: ptxas serializes the wgmma (its note: “{serialized[0]}”): a wgmma still in flight where "
                    "other instructions read its accumulator (across the loop's back edge, say) makes every wgmma wait")
    if len(loops) != 2 * consumers:
        return (f"{where}: {len(loops)} loops hold an HGMMA where {consumers} consumer warpgroup"
                f"{'s have' if consumers > 1 else ' has'} two each (the unmasked key blocks, then the masked ones)")
    if "lesson36" in parts:
        for c in range(consumers):
            pair = {**f, "loops": loops[2 * c:2 * c + 2]}
            problem = facts_problem(pair, per_consumer, ("mma", "ex2", "registers", "masks"))
            if problem:
                return problem
    for index, loop in enumerate(loops):
        which = ("unmasked", "masked")[index % 2] + (f" (consumer {index // 2})" if consumers > 1 else "")
        order = events_text(loop["events"])
        # ptxas may issue a few exponentials before the first of S's HGMMAs (9 of 66 at head dim 64): at least half.
        if "overlap" in parts and 2 * loop["ex2_under_s"] < loop["ex2"]:
            return (f"{where}: the {which} key loop issues {loop['ex2_under_s']} of its {loop['ex2']} MUFU.EX2 while the "
                    "next block's S is in flight: the softmax does not run under that S (is S_{j+1} issued before "
                    f"the softmax, and waited for after it?) (the loop's order: {order})")
        # The softmax's P feeds P·V, issued before the one wait that retires S_{j+1} with it: no exponential after
        # that wait. One after it waited for S_{j+1} (a synchronous wgmma, or a wait before the softmax).
        if "overlap" in parts and loop["ex2_after_s"]:
            return (f"{where}: the {which} key loop retires the next block's S before {loop['ex2_after_s']} of its "
                    f"{loop['ex2']} MUFU.EX2: that part of the softmax waits for S_{{j+1}} to finish. Issue S_{{j+1}} "
                    "asynchronously (is_async=True) and retire it with warpgroup_mma_wait only after block j's "
                    f"softmax and P·V are issued (the loop's order: {order})")
        if "turn" in parts:
            if loop["turn_waits"] != 1 or loop["turn_passes"] != 1:
                return (f"{where}: the {which} key loop waits {loop['turn_waits']} time(s) for the tensor cores' turn "
                        f"and passes it {loop['turn_passes']} time(s), where one take before the products and one "
                        f"pass after them order the two consumers (the loop's order: {order})")
            if loop["turn_taken_before_products"] is not True:
                return (f"{where}: the {which} key loop issues a product before it waits for the tensor cores' turn: "
                        "the two consumers' products interleave. take_turn before the turn's first wgmma (S_{j+1}), "
                        f"pass_turn after its last (P·V j) (the loop's order: {order})")
            if loop["turn_passed_before_wait"] is not True:
                return (f"{where}: the {which} key loop hands the turn over after a wgmma wait: the other consumer's "
                        "products wait until this one's retire, where they could queue behind them. Pass the turn "
                        f"as soon as the turn's products are issued (the loop's order: {order})")
            # FA3's order: S_{j+1} retired alone (P·V j still running), then the softmax. In Triton 3.9.0's code
            # ptxas issues part of the row maxima between the two waits (unmasked loops), every MUFU.EX2 after both.
            if loop["waits"][:1] != [1]:
                return (f"{where}: the {which} key loop's first wgmma wait has depth "
                        f"{loop['waits'][0] if loop['waits'] else 'none'}, where depth 1 retires S_{{j+1}} alone: a "
                        "deeper wait retires P·V j with it, so block j+1's softmax waits for P·V j. "
                        f"warpgroup_mma_wait(1, deps=(s, ...)) first, (0, ...) after the softmax (the loop's order: "
                        f"{order})")
            if loop["turn_passed_before_ex2"] is not True:
                return (f"{where}: the {which} key loop hands the turn over after its softmax's exponentials: the "
                        "other consumer's products wait for this one's softmax, which is what the ping-pong was to "
                        f"hide. Pass the turn as soon as the turn's products are issued (the loop's order: {order})")
    if "split" in parts and f["pingpong"]:
        problem = pingpong_split_problem(f)
        if problem:
            return f"{where}: {problem}"
    return None


def fa3_facts_check(parts, version: str, pingpong: bool, head_dims=(64, 128)):
    """A check: fa3_facts_problem's ``parts`` on ``version`` at each head dim, causal and not, at the lesson's
    CONFIGS."""
    def check(mod):
        for hd in head_dims:
            for causal in (False, True):
                f = fa3_facts(mod, version, hd, causal, pingpong)
                problem = fa3_facts_problem(f, mod.CONFIGS[version], parts)
                if problem:
                    return problem
        return None
    return check


# The figures' shapes (issue 42): head dim 128 at S = 1k, 4k, 8k and 16k, and head dim 64 at 4k, causal and not,
# 16k tokens × 32 heads each.
FA3_TIMED = tuple((S, 128, causal) for S in (1024, 4096, 8192, 16384) for causal in (False, True))
FA3_TIMED_HD64 = tuple((4096, 64, causal) for causal in (False, True))


def fa3_time_shapes(mod, shapes, rounds: int = 9) -> list[dict]:
    """``time_shapes`` for lesson 37: its versions and SDPA's backends, no plain Triton."""
    return time_shapes(mod, shapes, rounds, with_plain_triton=False)


_FA3_TIMED: dict = {}


def _fa3_timed_once(module_file: str) -> list[dict]:
    """fa3_time_shapes over FA3_TIMED and FA3_TIMED_HD64 once per module and process: the figures share one run."""
    if module_file not in _FA3_TIMED:
        from ..course import load_module_file

        _FA3_TIMED[module_file] = fa3_time_shapes(load_module_file(module_file), FA3_TIMED + FA3_TIMED_HD64)
    return _FA3_TIMED[module_file]


def fa3_measure(version: str = "v4", over: str = "best", head_dim: int = 128):
    """A figure: the geomean, over the timed shapes at ``head_dim``, of ``version``'s TFLOPS over the best SDPA
    backend's (``over="best"``) or another version's (``over="v2"``, ``"v3"``). Details: each shape's ratio, TFLOPS
    and best backend, and the worst shape."""
    def measure(mod):
        from ..measure.timing import Measurement

        problem = correct(mod)
        if problem:
            raise AssertionError(problem)
        rows = [row for row in _fa3_timed_once(mod.__file__) if row["head_dim"] == head_dim]
        ratios = []
        for row in rows:
            t = row["tflops"]
            ratios.append(t[version] / (t[row["best_library"]] if over == "best" else t[over]))
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        w = min(range(len(rows)), key=lambda i: ratios[i])
        worst = {"S": rows[w]["S"], "causal": rows[w]["causal"], "ratio": ratios[w]}
        text = (f"geomean {geomean:.2f}× over {len(rows)} shapes, worst {ratios[w]:.2f}× (S {rows[w]['S']}"
                f"{', causal' if rows[w]['causal'] else ''})")
        details = {"shapes": [{**row, "ratio": r} for row, r in zip(rows, ratios)], "worst": worst}
        return Measurement(geomean, text, json.loads(json.dumps(details)))
    return measure


# -- lesson 37: the schedule as a timeline, played from the compiled order --------------------------------------------

# The rates the timeline assumes, per SM of an H100 SXM (the published 989 TFLOPS of dense bf16 products and 3.9
# tera-exponentials a second that FlashAttention-3's paper sets side by side, over 132 SMs at 1.83 GHz): 4 096 FLOPs
# a clock on the tensor cores, so one HGMMA of 64 × N × 16 takes N / 2 clocks; 16 MUFU.EX2 results a clock, so one
# warp's MUFU.EX2 (32 results) takes 2 clocks of the SM's units, and a warpgroup's (4 warps) 8.
HGMMA_CLOCKS_PER_COLUMN = 0.5
EX2_CLOCKS_PER_WARPGROUP = 8


def play_schedule(loops: list, blocks: int = 4, hgmma_width: int = 128) -> list[dict]:
    """Two warpgroups running their key loop's compiled order (``loops``: one event list per warpgroup, as
    schedule_events gives them) ``blocks`` times, in a model of three shared things: the tensor cores (HGMMAs run one
    at a time, in the order issued), the MUFU (one warpgroup's EX2 at a time) and the turn (warpgroup 0 holds it first;
    ``arrive:turn`` hands it to the other, ``wait:turn`` waits for it). ``bar:256``, a CTA barrier of both warpgroups
    (one partition of 8 warps), makes each wait for the other. A ``wait<d>`` waits until all but the warpgroup's d
    latest groups of products are done. Everything else (copies, the softmax's other arithmetic) takes no time here.
    Returns the phases: {"wg", "what" ("S", "PV" or "softmax"), "start", "end"} in clocks."""
    hgmma = hgmma_width * HGMMA_CLOCKS_PER_COLUMN
    programs = [[e for _ in range(blocks) for e in loop] for loop in loops]
    pc, now, waiting = [0, 0], [0.0, 0.0], [False, False]
    groups = [[], []]                    # per warpgroup: [end time, still open] of its groups of products in flight
    units = {"tensor": 0.0, "mufu": 0.0}
    turn = {"holder": 0, "since": 0.0}
    arrived = [[], []]                   # per warpgroup: when it reached each CTA barrier
    phases = []

    def runnable(w):
        if pc[w] >= len(programs[w]) or waiting[w]:
            return False
        return not (programs[w][pc[w]][0].startswith("wait:turn") and turn["holder"] != w)

    while any(pc[w] < len(programs[w]) for w in (0, 1)):
        ready = [w for w in (0, 1) if runnable(w)]
        if not ready:
            raise ValueError("the two warpgroups wait for each other: the schedule deadlocks")
        w = min(ready, key=lambda i: now[i])
        name, n = programs[w][pc[w]]
        pc[w] += 1
        if name not in ("S", "PV") and groups[w] and groups[w][-1][1]:
            groups[w][-1][1] = False     # the run of products ends: one group (gsb0 closes it)
        if name.startswith("wait:turn"):
            now[w] = max(now[w], turn["since"])
        elif name.startswith("arrive:turn"):
            turn.update(holder=1 - w, since=now[w])
        elif name == "bar:256":
            arrived[w].append(now[w])
            if len(arrived[1 - w]) >= len(arrived[w]):
                meet = max(now[w], arrived[1 - w][len(arrived[w]) - 1])
                now[w] = now[1 - w] = max(meet, now[1 - w]) if waiting[1 - w] else meet
                waiting[1 - w] = False
            else:
                waiting[w] = True
        elif name in ("S", "PV"):
            start = max(now[w], units["tensor"])
            units["tensor"] = start + n * hgmma
            if groups[w] and groups[w][-1][1]:
                groups[w][-1][0] = units["tensor"]
            else:
                groups[w].append([units["tensor"], True])
            phases.append({"wg": w, "what": name, "start": start, "end": units["tensor"]})
        elif name.startswith("wait<"):
            depth = int(name[5:-1])
            if len(groups[w]) > depth:
                now[w] = max([now[w]] + [end for end, _ in groups[w][:len(groups[w]) - depth]])
                groups[w] = groups[w][len(groups[w]) - depth:]
        elif name == "EX2":
            start = max(now[w], units["mufu"])
            now[w] = units["mufu"] = start + n * EX2_CLOCKS_PER_WARPGROUP
            last = next((p for p in reversed(phases) if p["wg"] == w), None)
            if last and last["what"] == "softmax" and last["end"] == start:
                last["end"] = now[w]
            else:
                phases.append({"wg": w, "what": "softmax", "start": start, "end": now[w]})
    return phases


def schedule_events(k, first: int, last: int, barriers: dict | None = None) -> list[tuple[str, int]]:
    """loop_events with the loop's CTA barriers in their place: ``bar:N`` a BAR.SYNC of N threads (256: the two
    warpgroups of an 8-warp partition wait for each other; 128: one warpgroup's own)."""
    bars = [(i.address, int(i.text.rsplit(",", 1)[1].strip().rstrip(";"), 0)) for i in k.instructions()
            if first <= i.address <= last and i.opcode.startswith("BAR.SYNC")]
    events, start = [], first
    for address, threads in bars:
        events += loop_events(k, start, address - 1, barriers) + [(f"bar:{threads}", 1)]
        start = address + 1
    return events + loop_events(k, start, last, barriers)


def schedule_timeline(steps: dict, blocks: int = 4, hgmma_width: int = 128):
    """One panel per step (``steps``: title → the two warpgroups' schedule_events), each played by
    play_schedule: per warpgroup, its products on the tensor cores and its softmax's exponentials, and the clocks a
    key block takes in the last block's steady state."""
    import matplotlib.pyplot as plt

    colours = {"S": "#4C78A8", "PV": "#72B7B2", "softmax": "#F58518"}
    fig, axes = plt.subplots(len(steps), 1, figsize=(10, 1.5 * len(steps) + 0.6), sharex=True)
    axes = [axes] if len(steps) == 1 else list(axes)
    for ax, (title, loops) in zip(axes, steps.items()):
        phases = play_schedule(loops, blocks, hgmma_width)
        for p in phases:
            row = p["wg"] * 2 + (1 if p["what"] == "softmax" else 0)
            ax.barh(row, p["end"] - p["start"], left=p["start"], height=0.8, color=colours[p["what"]],
                    edgecolor="white", linewidth=0.5)
        ax.set_yticks(range(4))
        ax.set_yticklabels(["WG 0 products", "WG 0 softmax", "WG 1 products", "WG 1 softmax"], fontsize=8)
        ax.invert_yaxis()
        end = max(p["end"] for p in phases)
        ax.set_title(f"{title}: {end / blocks:.0f} clocks a key block", fontsize=9, loc="left")
    axes[-1].set_xlabel("clocks (the model's: HGMMA 64×128×16 = 64, one warpgroup's MUFU.EX2 = 8, nothing else)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
    fig.legend(handles, ["S = Q·Kᵀ", "O += P·V", "softmax (MUFU.EX2)"], loc="lower center", ncol=3, fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    plt.show()


def schedule_steps(mod, head_dim: int = 128, causal: bool = False) -> dict:
    """The lesson's steps as schedule_timeline takes them: each kernel's unmasked key loop as compiled, with its CTA
    barriers (v2 and v3: the default partition's two warpgroups run the same loop; v4: each consumer its own)."""
    steps = {}
    for version, pingpong in (("v2", False), ("v3", False), ("v4", True)):
        cfg = mod.CONFIGS[version]
        k = compiled(mod, version, head_dim, causal, cfg)
        barriers = barrier_offsets(k, fa3_barrier_names(cfg, pingpong))
        spans = key_loops(k)
        loops = [schedule_events(k, *spans[0], barriers), schedule_events(k, *spans[2 if pingpong else 0], barriers)]
        steps[version] = loops
    return steps
