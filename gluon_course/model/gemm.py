"""The GEMM lessons in the host model: small matrices of small integers (every product and every sum exact, so the
model's C must equal the reference exactly), C poisoned with NaN, every element of C written exactly once.

``check(launch, shapes)`` runs ``launch(a, b, c, M, N, K)`` (model buffers; the lesson's kernel run through
``gluon_course.model.run``) on each shape and returns None or one sentence. ``tma_launch`` and ``pointer_launch``
build that launch for the two kinds of kernel the course writes."""
from __future__ import annotations

import numpy as np

from .run import run as run_kernel
from .runtime import Buffer, ModelError, ModelUnsupported
from .shims import HostTensorDescriptor, Pointer, round_to


def _gl_dtype(name: str):
    from triton.experimental.gluon import language as gl

    return {"bf16": gl.bfloat16, "fp16": gl.float16}[name]


def operands(M: int, N: int, K: int, seed: int = 0, b_layout: str = "row"):
    """A (M×K) and B (K×N, or its N×K transpose when ``b_layout == "col"``): integers in [-2, 2], exact in bf16 and
    fp16, so that a correct kernel's fp32 sums are exact whatever their order."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-2, 3, size=(M, K)).astype(np.float32)
    b = rng.integers(-2, 3, size=(K, N)).astype(np.float32)
    return a, b


def check(launch, shapes, dtype: str = "bf16", b_layout: str = "row", tile=None, rule=None) -> str | None:
    """None when ``launch`` computes C = A·B exactly on every shape, writing each element once; else one sentence.
    ``tile`` (BLOCK_M, BLOCK_N) lets the sentence name the tile of C that went wrong. ``rule(programs)``, when given,
    reads the programs' traces (the order of events the kernel's own code produced) and returns None or a sentence."""
    gl_dtype = _gl_dtype(dtype)
    for M, N, K in shapes:
        where = f"in the host model, {M}×{N}×{K} {dtype}"
        a, b = operands(M, N, K)
        a_buf = Buffer("A", a, gl_dtype)
        b_buf = Buffer("B", b.T.copy() if b_layout == "col" else b, gl_dtype)
        c_buf = Buffer("C", np.zeros((M, N), np.float32), gl_dtype, poison=True)
        try:
            programs = launch(a_buf, b_buf, c_buf, M, N, K)
        except ModelUnsupported:
            raise
        except ModelError as e:
            return f"{where}: {e}"
        want = round_to((a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32), gl_dtype)
        problem = _compare(c_buf.values(), want, c_buf.writes.reshape(M, N), tile)
        if problem is None and rule is not None:
            problem = rule(programs)
        if problem:
            return f"{where}: {problem}"
    return None


def _compare(got, want, writes, tile=None) -> str | None:
    """None when every element of C was written once and equals ``want``; else what went wrong, and where first."""
    for problem, mask in (("never written (still NaN)", writes == 0),
                          ("written more than once (a tile computed twice?)", writes > 1),
                          ("wrong", ~(got == want) & (writes == 1))):
        if mask.any():
            i, j = map(int, np.argwhere(mask)[0])
            at = f"C[{i}, {j}]"
            if tile is not None:
                at += f", in tile ({i // tile[0]}, {j // tile[1]}) of C"
            detail = (f": got {got[i, j]:g}, expected {want[i, j]:g}" if problem == "wrong" else "")
            return f"{int(mask.sum())} element(s) of C {problem}; the first is {at}{detail}"
    return None


def check_launcher(call, shapes, dtype: str = "bf16", b_layout: str = "row", sms: int = 3, calls: int = 1,
                   tile=None) -> str | None:
    """None when ``call(a, b, c)`` computes C = A·B exactly on every shape, writing each element of C once; else one
    sentence. ``call`` is a launcher's own path (its plan, operand views, grid and kernel arguments, e.g.
    ``lambda a, b, c: linear.plan(a, b, c).launch(a, b, c)``) on CPU torch tensors, run with the GPU stood in for by
    the host model (``launcher.ModelGPU``, ``sms`` SMs): A and B as ``operands`` gives them (B K × N, or the
    transpose of an N × K tensor when ``b_layout == "col"``, as ``w.t()``), C full of NaN. ``calls`` > 1 calls it
    again on the same tensors (C poisoned again): the launcher's kept plan, descriptors and scratch."""
    import torch

    from .launcher import ModelGPU

    gl_dtype = _gl_dtype(dtype)
    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    for M, N, K in shapes:
        a_np, b_np = operands(M, N, K)
        a = torch.from_numpy(a_np).to(torch_dtype)
        b = (torch.from_numpy(b_np.T.copy()).to(torch_dtype).t() if b_layout == "col"
             else torch.from_numpy(b_np).to(torch_dtype))
        c = torch.empty((M, N), dtype=torch_dtype)
        want = round_to((a_np.astype(np.float64) @ b_np.astype(np.float64)).astype(np.float32), gl_dtype)
        for n in range(calls):
            where = f"in the host model, {M}×{N}×{K} {dtype}" + (f", call {n + 1}" if calls > 1 else "")
            c.fill_(float("nan"))
            with ModelGPU(sms) as gpu:
                for t, name in ((a, "A"), (b, "B"), (c, "C")):
                    gpu.add(t, name)
                try:
                    call(a, b, c)
                except ModelUnsupported:
                    raise
                except ModelError as e:
                    return f"{where}: {e}"
                except ValueError as e:
                    return f"{where}: the launcher refused a problem it must take: {e}"
                if not gpu.launches:
                    return f"{where}: the launcher launched no kernel"
                writes = gpu.writes(c)
            problem = _compare(c.to(torch.float32).numpy(), want, writes, tile)
            if problem and "never written" in problem:
                problem += (": the launch covers less of C than there is; are the kernel's M and N the ones it "
                            "computes (exchanged when it computes Cᵀ), and does the grid reach every tile?")
            if problem:
                return f"{where}: {problem}"
    return None


def store_overlaps_next_tile(programs) -> str | None:
    """The TMA-store epilogue's point (lesson 19): a tile's ``tma.async_store`` is still running while the next tile's
    products start. In each partition's own order of events, the ``tma.store_wait`` that retires a store must come
    after the next wgmma (when there is a next one): a wait before it leaves nothing for the store to overlap.

    This reads the order the kernel's Python produced in the model, not the listing: in the machine code the next
    tile's HGMMAs sit at lower addresses than the store (the tile loop's back edge lies between them), so "between the
    store and the next tile's products" is a question of control flow, which the listing's addresses do not answer."""
    for prog in programs:
        events = prog.trace
        for at, event in enumerate(events):
            if event["what"] != "tma store":
                continue
            who = event["partition"]
            mine = [e for e in events[at + 1:] if e["partition"] == who]
            newer = 0
            for e in mine:
                if e["what"] == "tma store":
                    newer += 1
                elif e["what"] == "wgmma":
                    break                       # the next tile's products started with the store in flight
                elif e["what"] == "tma store wait" and newer >= e["depth"]:
                    if any(later["what"] == "wgmma" for later in mine[mine.index(e):]):
                        tile = ", ".join(str(c) for c in event.get("coord", []))
                        return (f"program {prog.pid[0]}, {who}: the TMA store of C's tile at ({tile}) is waited for "
                                f"(tma.store_wait({e['depth']})) before the next tile's first wgmma, so it never "
                                "overlaps the next tile's products; wait for it only when its buffer is needed again, "
                                "just before the next tile writes it")
                    break
    return None


def consumers_take_turns(programs, stores_per_tile: int = 1) -> str | None:
    """Ping-pong consumers (lesson 33): two consumer partitions own alternate tiles and pass the tensor cores to each
    other, so a tile's products are never interleaved with the other consumer's. In each program's order of events
    the wgmma issues fall into runs by partition: one run per tile of C (as many as the program's TMA stores), the
    runs alternating between the two consumers, the default partition (consumer 0, the program's first tile) first.
    A kernel that stores each tile in ``stores_per_tile`` subtiles has that many TMA stores per tile."""
    for prog in programs:
        issues = [e["partition"] for e in prog.trace if e["what"] == "wgmma"]
        runs = [who for i, who in enumerate(issues) if i == 0 or issues[i - 1] != who]
        stores = sum(1 for e in prog.trace if e["what"] == "tma store")
        tiles = stores // stores_per_tile
        if not runs:
            continue
        if runs[0] != "default partition":
            return (f"program {prog.pid[0]}: the first products are {runs[0]}'s, not consumer 0's (the default "
                    "partition, which owns the program's first tile): the turn starts with the wrong consumer")
        alternate = all(runs[i] != runs[i - 1] for i in range(1, len(runs)))
        if len(runs) != tiles or not alternate:
            return (f"program {prog.pid[0]}: its {tiles} tiles' products came in {len(runs)} runs by consumer "
                    f"({' → '.join(r.replace(' partition', '') for r in runs[:8])}{' …' if len(runs) > 8 else ''}): "
                    "the two consumers' K loops interleave, so neither has the tensor cores to itself while the other "
                    "stores C; each must wait for its turn before its first product and hand it over after its last")
    return None


def tma_launch(kernel, tile: dict, grid, constexprs: dict, dtype: str = "bf16", b_layout: str = "row",
               c_descriptor: bool = False, num_warps: int = 4, c_block=None):
    """The launch of a TMA kernel ``kernel(a_desc, b_desc, c_ptr (or c_desc), M, N, K, stride_cm, stride_cn,
    **constexprs)``: descriptors of A's BLOCK_M × BLOCK_K tiles and B's BLOCK_K × BLOCK_N tiles (BLOCK_N × BLOCK_K of
    the N×K matrix when ``b_layout == "col"``). ``grid(M, N)`` gives the number of programs. C's descriptor has
    BLOCK_M × BLOCK_N blocks, or ``c_block`` (a kernel that stores C in subtiles, lesson 33)."""
    from triton.experimental.gluon import language as gl

    gl_dtype = _gl_dtype(dtype)
    BM, BN, BK = tile["BLOCK_M"], tile["BLOCK_N"], tile["BLOCK_K"]

    def launch(a_buf, b_buf, c_buf, M, N, K):
        b_block = [BN, BK] if b_layout == "col" else [BK, BN]
        a_desc = HostTensorDescriptor(a_buf, [BM, BK], gl.NVMMASharedLayout.get_default_for([BM, BK], gl_dtype))
        b_desc = HostTensorDescriptor(b_buf, b_block, gl.NVMMASharedLayout.get_default_for(b_block, gl_dtype))
        if c_descriptor:
            c_shape = list(c_block or [BM, BN])
            c_desc = HostTensorDescriptor(c_buf, c_shape, gl.NVMMASharedLayout.get_default_for(c_shape, gl_dtype))
            return run_kernel(kernel, grid(M, N), a_desc, b_desc, c_desc, M, N, K, num_warps=num_warps,
                              **{**tile, **constexprs})
        return run_kernel(kernel, grid(M, N), a_desc, b_desc, Pointer(c_buf), M, N, K, N, 1, num_warps=num_warps,
                          **{**tile, **constexprs})
    return launch


def pointer_launch(kernel, tile: dict, grid, constexprs: dict, num_warps: int = 4, strides: bool = True):
    """The launch of a pointer kernel ``kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
    stride_bn, stride_cm, stride_cn, **constexprs)`` on row-major A, B and C."""
    def launch(a_buf, b_buf, c_buf, M, N, K):
        args = (Pointer(a_buf), Pointer(b_buf), Pointer(c_buf), M, N, K)
        if strides:
            args += (K, 1, N, 1, N, 1)
        return run_kernel(kernel, grid(M, N), *args, num_warps=num_warps, **{**tile, **constexprs})
    return launch


def linear_launch(kernel, constexprs: dict, split_k: int, swap_ab: bool, programs: int | None, dtype: str = "bf16",
                  num_warps: int = 4, order=None, c_dtype: str | None = None):
    """The launch of lesson 32's ``kernel(a_desc, b_desc, c_desc, b2_desc, c2_desc, partial_ptr, arrivals_ptr, M, N,
    K, SPLIT_K, **constexprs)``: the kernel's A and B are the activations and B, or (``swap_ab``) B read as Wᵀ's
    transpose and the activations, with descriptors in the orientation ``constexprs`` says (A_KM, B_KN), and a wide
    tile's second strips of B and C (``BLOCK_N2`` columns; B's and C's own boxes without one); split-K's fp32
    slices and per-tile counters are model buffers, and the counters must be back at 0 when the launch ends.
    ``programs``: the persistent grid (at most one per work unit; None: one per work unit), run in ``order``
    (``run``'s; a callable of the number of programs may give it, as ``PROGRAM_ORDERS``' do). ``c_dtype="fp32"``
    keeps C in fp32, so that every bit of a sum shows (``same_bits_in_any_order``)."""
    from triton.experimental.gluon import language as gl

    gl_dtype = _gl_dtype(dtype)
    c_gl = gl.float32 if c_dtype == "fp32" else gl_dtype
    BM, BN, BK = constexprs["BLOCK_M"], constexprs["BLOCK_N"], constexprs["BLOCK_K"]
    BN2 = constexprs.get("BLOCK_N2", 0)
    strip = BN2 or BN

    def launch(a_buf, b_buf, c_buf, M, N, K):
        ka, kb, kM, kN = (b_buf, a_buf, N, M) if swap_ab else (a_buf, b_buf, M, N)
        blocks = ([BM, BK] if constexprs["A_KM"] else [BK, BM], [BK, BN] if constexprs["B_KN"] else [BN, BK],
                  [BN, BM] if swap_ab else [BM, BN], [BK, strip] if constexprs["B_KN"] else [strip, BK],
                  [strip, BM] if swap_ab else [BM, strip])
        dtypes = (gl_dtype, gl_dtype, c_gl, gl_dtype, c_gl)
        descs = [HostTensorDescriptor(buf, block, gl.NVMMASharedLayout.get_default_for(block, dt),
                                      element_bytes=4 if dt == gl.float32 else 2)
                 for buf, block, dt in zip((ka, kb, c_buf, kb, c_buf), blocks, dtypes)]
        tiles = -(-kM // BM) * -(-kN // (BN + BN2))
        partial = Buffer("split-K slices", np.zeros(max(1, tiles * split_k * BM * (BN + BN2)), np.float32),
                         gl.float32)
        arrivals = Buffer("split-K counters", np.zeros(tiles, np.float32), gl.int32)
        grid = tiles * split_k if programs is None else min(tiles * split_k, programs)
        runs = run_kernel(kernel, grid, *descs, Pointer(partial), Pointer(arrivals), kM, kN, K, split_k,
                          num_warps=num_warps, order=order(grid) if callable(order) else order, **constexprs)
        left = np.flatnonzero(arrivals.values())
        if left.size:
            raise ModelError(f"split-K's counter of tile {int(left[0])} is {arrivals.values()[left[0]]:g} after the "
                             "launch, not 0: the next call would count from there (reset it in the tile's last unit)")
        return runs
    return launch


# The orders in which the host model runs a launch's programs to see whether a sum of partial results depends on which
# program arrives last (split-K's slices; the partials of tools/probes/probe_streamk.py): programs that never wait for
# one another may run in any of them on a GPU. With one unit a program, "first to last" and "last to first" make the
# last arrival at a tile its last unit and its first; "odd ones first" interleaves the two halves of a range.
PROGRAM_ORDERS = {"first to last": None, "last to first": lambda n: list(range(n))[::-1],
                  "odd ones first": lambda n: list(range(1, n, 2)) + list(range(0, n, 2))}


def same_bits_in_any_order(make_launch, shapes, orders=None, b_layout: str = "row", dtype: str = "bf16") -> str | None:
    """None when a launch gives C with the same bits under every program order of ``orders`` (names → ``run``'s
    ``order``, or a callable of the number of programs; default ``PROGRAM_ORDERS``); else one sentence.
    ``make_launch(order)`` builds the launch, with C in fp32; the operands are random bf16-exact values (not small
    integers), so that adding the same numbers in another order changes the low bits of the sums. A sum of two
    partials is the same in either order (a + b = b + a in fp32): only a tile whose sum has three partials or more
    ((a + b) + c against a + (b + c)) can show an order that depends on who arrives last."""
    gl_dtype = _gl_dtype(dtype)
    from triton.experimental.gluon import language as gl

    orders = PROGRAM_ORDERS if orders is None else orders
    for M, N, K in shapes:
        rng = np.random.default_rng(M * 131 + N * 7 + K)
        a = round_to(rng.standard_normal((M, K)).astype(np.float32), gl_dtype)
        b = round_to(rng.standard_normal((K, N)).astype(np.float32), gl_dtype)
        first = None
        for name, order in orders.items():
            a_buf = Buffer("A", a, gl_dtype)
            b_buf = Buffer("B", b.T.copy() if b_layout == "col" else b, gl_dtype)
            c_buf = Buffer("C", np.zeros((M, N), np.float32), gl.float32, poison=True)
            try:
                make_launch(order)(a_buf, b_buf, c_buf, M, N, K)
            except ModelError as e:
                return f"in the host model, {M}×{N}×{K}, programs {name}: {e}"
            got = c_buf.values().copy()
            if first is None:
                first = (name, got)
            elif not np.array_equal(got.view(np.uint32), first[1].view(np.uint32)):
                i, j = map(int, np.argwhere(got.view(np.uint32) != first[1].view(np.uint32))[0])
                shown = [np.format_float_positional(x) for x in (got[i, j], first[1][i, j])]
                return (f"in the host model, {M}×{N}×{K}: C[{i}, {j}] is {shown[0]} with the programs run "
                        f"{name} but {shown[1]} run {first[0]}: the order in which a tile's partial sums are "
                        "added depends on which unit arrives last, so C's bits change from run to run; add them in "
                        "a fixed order (the first slice's first, then the next), whichever unit adds them")
    return None
