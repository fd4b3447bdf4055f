"""The shapes a model runs (lesson 32): a GEMM launcher timed on every model shape against ``F.linear`` and plain
Triton, as a user calls it, with what the GPU's clock was doing; the decode shapes against the memory roofline; and a
transformer block whose linear layers are swapped for the launcher.

Every time here is warm and taken in one process, on an otherwise idle GPU: do_bench medians (L2 flushed before each
call) in interleaved pairs, and beside them a CUDA-graph replay (no host between calls, L2 kept: the kernel alone)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .gemm import MODEL_SHAPES, fp32_reductions, reference
from .timing import ClockSampler, bench_ms, cold_kernel_ms, copy_ceiling_tbs, graph_ms, paired_ms

# Dense bf16 tensor-core work per SM per clock on Hopper: 2048 FMAs (4 tensor cores × 512 FMAs, as NVIDIA's H100
# whitepaper gives 989.4 TFLOPS dense BF16 for 132 SMs at 1830 MHz: 989.4e12 / (132 × 1.83e9) ≈ 4096 FLOPs).
FLOPS_PER_SM_CLOCK = 4096


def linear_inputs(M: int, N: int, K: int, seed: int):
    """A (M × K activations), W (N × K weights) and an empty C (M × N), bf16 on the GPU, as this module times them."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g)
    return a, w, torch.empty(M, N, device="cuda", dtype=torch.bfloat16)


def peak_tflops(mhz: float) -> float:
    """Dense bf16 peak of this GPU at an SM clock of ``mhz``."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return sms * FLOPS_PER_SM_CLOCK * mhz * 1e6 / 1e12


def _require_close(fn, ref, c, K: int, what: str) -> None:
    """``fn`` (which writes ``c``) is within the course's tolerance of the fp32 reference on this shape before it is
    timed: a wrong kernel is never timed. Its first call also compiles (and for plain Triton autotunes) it."""
    from .gemm import compare_gemm, tolerance

    c.fill_(float("nan"))
    fn()
    problem = compare_gemm(c, ref, tolerance(K, c.dtype))
    if problem:
        raise AssertionError(f"{what} at {c.shape[0]}×{c.shape[1]}×{K}: {problem}")


def model_table(launch, against_triton=None, shapes=MODEL_SHAPES, pairs: int = 3, triton_config=None) -> dict:
    """For each shape (M, N, K): ``launch(a, w.t(), c)`` against ``F.linear(a, w)`` (and ``against_triton(a, w.t(),
    c)`` when given), each a median of ``pairs`` interleaved do_bench pairs; the graph replay of both; the SM clock
    and power while they ran, and the launcher's share of the dense bf16 peak at that clock. ``triton_config(M, N,
    K)``: the configuration plain Triton's autotuner picked in this process, kept with the shape (it picks afresh in
    every process, and its time moves with the pick)."""
    rows = {}
    for i, (M, N, K) in enumerate(shapes):
        a, w, c = linear_inputs(M, N, K, seed=i)
        b = w.t()
        ours = lambda: launch(a, b, c)  # noqa: E731
        lib = lambda: F.linear(a, w)    # noqa: E731
        ref = reference(a, b)
        _require_close(ours, ref, c, K, "the launcher")
        lib()
        with ClockSampler() as clocks:
            paired = paired_ms(ours, lib, pairs)
        row = {"ratio": paired.ratio, "spread": paired.spread, "pairs": [round(r, 4) for r in paired.ratios],
               "us": 1e3 * paired.kernel,
               "f_linear_us": 1e3 * paired.ceiling, "graph_ratio": graph_ms(lib) / graph_ms(ours),
               "sm_mhz": clocks.median_mhz, "watts": clocks.median_w}
        flops = 2 * M * N * K
        row["tflops"] = flops / (paired.kernel * 1e-3) / 1e12
        row["share_of_peak_at_clock"] = row["tflops"] / peak_tflops(row["sm_mhz"]) if row["sm_mhz"] > 0 else math.nan
        if against_triton is not None:
            theirs = lambda: against_triton(a, b, c)  # noqa: E731
            _require_close(theirs, ref, c, K, "plain Triton")
            vs = paired_ms(ours, theirs, pairs)
            row["over_plain_triton"] = vs.ratio
            row["over_plain_triton_pairs"] = [round(r, 4) for r in vs.ratios]   # lesson 30's rule reads every pair
            row["plain_triton_us"] = 1e3 * vs.ceiling
            if triton_config is not None:
                row["plain_triton_config"] = triton_config(M, N, K)
        rows[f"{M}x{N}x{K}"] = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}
        del a, w, b, c, ref
    ratios = [r["ratio"] for r in rows.values()]
    out = {"shapes": rows, "geomean": math.exp(sum(map(math.log, ratios)) / len(ratios)),
           "worst": min(ratios), "worst_shape": min(rows, key=lambda s: rows[s]["ratio"])}
    if against_triton is not None:
        over = [r["over_plain_triton"] for r in rows.values()]
        out["worst_over_plain_triton"] = min(over)
        out["worst_over_plain_triton_shape"] = min(rows, key=lambda s: rows[s]["over_plain_triton"])
        out["geomean_over_plain_triton"] = math.exp(sum(map(math.log, over)) / len(over))
    return out


def decode_roofline(launch, shapes=None, read=None) -> dict:
    """For the decode shapes (M ≤ 16): W's bytes over the kernel's time with L2 emptied before each call by reading
    another buffer (``cold_kernel_ms``), as a fraction of the device copy's bandwidth measured now; F.linear's
    beside it. Each row also holds both kernels timed after do_bench's way of emptying L2 (overwriting a buffer,
    which leaves L2's lines dirty for the kernel to write back: the ``*_write_flush`` keys), ours replayed with
    L2 kept (``warm_us``: below the cold time only if L2 held W, so a cold time near it would say the read left W
    in L2), and a plain read of W by ``torch.sum`` timed as ours is (``stream_us``, ``stream_fraction``).

    ``read(w)``, where given, builds a kernel that reads W's bytes and does nothing else (the NVIDIA lessons pass
    ``nvidia.read_ceiling.reader``): timed as ours is, it is the ceiling at W's size (``read_us``, ``read_fraction``,
    and ``of_read``: its time over ours, the share of that ceiling ours reaches)."""
    shapes = shapes or tuple(s for s in MODEL_SHAPES if s[0] <= 16)
    ceiling = copy_ceiling_tbs()
    rows = {}
    for i, (M, N, K) in enumerate(shapes):
        a, w, c = linear_inputs(M, N, K, seed=100 + i)
        b = w.t()
        launch(a, b, c)
        w_bytes = N * K * w.element_size()
        share = lambda ms: round(w_bytes / (ms * 1e-3) / 1e12 / ceiling, 4)  # noqa: E731
        ours, lib = cold_kernel_ms(lambda: launch(a, b, c)), cold_kernel_ms(lambda: F.linear(a, w))
        ours_w = cold_kernel_ms(lambda: launch(a, b, c), flush="write")
        lib_w = cold_kernel_ms(lambda: F.linear(a, w), flush="write")
        # A plain read of W (torch's sum) after the same read of L2: what a kernel that only streams W's bytes takes
        # here, its launch and first loads included.
        stream = cold_kernel_ms(lambda: w.sum(dtype=torch.float32))
        rows[f"{M}x{N}x{K}"] = {"us": round(1e3 * ours, 2), "f_linear_us": round(1e3 * lib, 2),
                                "fraction": share(ours), "f_linear_fraction": share(lib),
                                "us_write_flush": round(1e3 * ours_w, 2), "fraction_write_flush": share(ours_w),
                                "f_linear_us_write_flush": round(1e3 * lib_w, 2),
                                "f_linear_fraction_write_flush": share(lib_w),
                                "warm_us": round(1e3 * graph_ms(lambda: launch(a, b, c)), 2),
                                "stream_us": round(1e3 * stream, 2), "stream_fraction": share(stream),
                                "bench_us": round(1e3 * bench_ms(lambda: launch(a, b, c)), 2)}
        if read is not None:
            read_w = read(w)
            read_w()
            read_ms = cold_kernel_ms(read_w)
            rows[f"{M}x{N}x{K}"].update({"read_us": round(1e3 * read_ms, 2), "read_fraction": share(read_ms),
                                         "of_read": round(read_ms / ours, 4)})
            del read_w
        del a, w, b, c
    worst = min(rows, key=lambda s: rows[s]["fraction"])
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)
    out = {"shapes": rows, "copy_tbs": round(ceiling, 3), "lowest": rows[worst]["fraction"], "lowest_shape": worst,
           "lowest_write_flush": min(r["fraction_write_flush"] for r in rows.values()), "l2_mib": l2 / 2 ** 20}
    if read is not None:
        out["read_fraction_at_lowest"] = rows[worst]["read_fraction"]
        out["lowest_of_read"] = min(r["of_read"] for r in rows.values())
    return out


# -- a real client: one transformer block of an 8B-class model ------------------------------------------------------

class SwappedLinear(torch.nn.Module):
    """A drop-in for ``nn.Linear`` (no bias) whose product runs through ``launch(x, weight.t())``."""

    def __init__(self, linear: torch.nn.Linear, launch):
        super().__init__()
        if linear.bias is not None:
            raise ValueError("SwappedLinear takes nn.Linear(bias=False), as the block's projections are")
        self.weight, self.launch = linear.weight, launch

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        return self.launch(flat, self.weight.t()).reshape(*x.shape[:-1], self.weight.shape[0])


class Block(torch.nn.Module):
    """Attention's projections and the gated MLP of an 8B-class transformer block (hidden 4096, 32 query heads and 8
    key/value heads of 128, MLP 14336), bf16, random weights; attention itself by PyTorch's SDPA, RMSNorm in
    PyTorch. Only its seven linear layers differ between the two versions the lesson times."""

    def __init__(self, hidden=4096, heads=32, kv_heads=8, mlp=14336):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        lin = lambda i, o: torch.nn.Linear(i, o, bias=False)  # noqa: E731
        self.q, self.k, self.v = lin(hidden, hidden), lin(hidden, kv_heads * self.head_dim), \
            lin(hidden, kv_heads * self.head_dim)
        self.o = lin(hidden, hidden)
        self.gate, self.up, self.down = lin(hidden, mlp), lin(hidden, mlp), lin(mlp, hidden)
        self.norm1, self.norm2 = torch.nn.RMSNorm(hidden), torch.nn.RMSNorm(hidden)

    def forward(self, x):                      # x: (batch, tokens, hidden)
        B, T, H = x.shape
        h = self.norm1(x)
        q = self.q(h).view(B, T, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(h).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(h).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1, enable_gqa=True)
        x = x + self.o(att.transpose(1, 2).reshape(B, T, H))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))

    def swapped(self, launch) -> "Block":
        """A copy sharing the weights, each linear layer a SwappedLinear over ``launch``."""
        import copy

        other = copy.copy(self)
        other._modules = dict(self._modules)
        for name in ("q", "k", "v", "o", "gate", "up", "down"):
            other._modules[name] = SwappedLinear(getattr(self, name), launch)
        return other


LAYERS = ("q", "k", "v", "o", "gate", "up", "down")


def _layer_times(block, swapped, T: int) -> dict:
    """Each linear layer of the block alone at its own shape (T × its in-features, against its weight), torch's
    nn.Linear and the swapped one: do_bench's median (as the block calls it, host included) and a CUDA-graph replay
    (the kernel alone), in µs."""
    rows = {}
    for name in LAYERS:
        theirs, mine = getattr(block, name), swapped._modules[name]
        h = torch.randn(T, theirs.in_features, device="cuda", dtype=torch.bfloat16)
        row = {"shape": f"{T}x{theirs.out_features}x{theirs.in_features}"}
        for who, layer in (("torch", theirs), ("swapped", mine)):
            layer(h)
            row[f"{who}_bench_us"] = round(1e3 * bench_ms(lambda: layer(h)), 2)
            row[f"{who}_graph_us"] = round(1e3 * graph_ms(lambda: layer(h), calls=10, replays=5), 2)
        rows[name] = row
        del h
    return rows


def block_figures(launch, tokens=(2048, 16, 1), pairs: int = 3, seed: int = 0, layers: bool = True) -> dict:
    """The block with torch's nn.Linear and with the launcher: outputs compared (the relative error of the swapped
    block against the unswapped one, both against an fp32 run of the same weights), then timed in interleaved
    do_bench pairs, one batch of ``tokens`` tokens each; beside them each whole block captured in a CUDA graph and
    replayed (``graph_ms``: no host between its kernels), and (``layers``) each linear layer alone, both ways."""
    torch.manual_seed(seed)
    block = Block().cuda().to(torch.bfloat16).eval()
    swapped = block.swapped(launch)
    fp32 = Block().cuda().eval()
    fp32.load_state_dict({k: v.float() for k, v in block.state_dict().items()})
    out = {}
    with torch.no_grad():
        for T in tokens:
            x = torch.randn(1, T, 4096, device="cuda", dtype=torch.bfloat16)
            with fp32_reductions():
                ref = fp32(x.float())
            mine, theirs = swapped(x).float(), block(x).float()
            err = lambda y: float((y - ref).norm() / ref.norm())  # noqa: E731
            paired = paired_ms(lambda: swapped(x), lambda: block(x), pairs)
            row = {"ratio": round(paired.ratio, 4), "spread": round(paired.spread, 4),
                   "swapped_us": round(1e3 * paired.kernel, 2), "torch_us": round(1e3 * paired.ceiling, 2),
                   "error_swapped": err(mine), "error_torch": err(theirs)}
            calls = 2 if T > 256 else 10
            row["swapped_graph_us"] = round(1e3 * graph_ms(lambda: swapped(x), calls=calls, replays=5), 2)
            row["torch_graph_us"] = round(1e3 * graph_ms(lambda: block(x), calls=calls, replays=5), 2)
            row["graph_ratio"] = round(row["torch_graph_us"] / row["swapped_graph_us"], 4)
            # A block whose do_bench time is well above its graph replay waits on the host between its kernels.
            row["swapped_bench_over_graph"] = round(row["swapped_us"] / row["swapped_graph_us"], 4)
            row["torch_bench_over_graph"] = round(row["torch_us"] / row["torch_graph_us"], 4)
            if layers:
                row["layers"] = _layer_times(block, swapped, T)
            out[T] = row
            del x, ref, mine, theirs
    return out
