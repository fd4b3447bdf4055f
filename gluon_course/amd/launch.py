"""The AMD launchers' rules (lessons 20 on): the arguments' contract (``require_amd_gemm_args``), the refusal of a
GPU the kernels are not written for (``require_amd_gpu``), the tiles the layouts cover (``require_tile``), and the
launcher of the direct-to-LDS GEMMs in one call (``launch_gemm``). Each refusal says what to do."""
from __future__ import annotations

import torch

from ..validate import INT32_MAX, require_matmul_shapes, require_power_of_two
from .layouts import MFMA

# Buffer instructions address memory as a 32-bit byte offset from one base, checked against the buffer's size
# (Triton sets it to 2^31 - 2 bytes): each of A, B and C must fit in that.
BUFFER_BYTES = INT32_MAX - 1


def require_amd_gemm_args(a, b, c, *, buffer_ops: bool = True, k_multiple: int = 1) -> tuple[int, int, int]:
    """The AMD lessons' contract: ``a`` (M×K, row-major), ``b`` (K×N, K-contiguous), ``c`` (M×N, row-major), GPU
    tensors of one dtype, bf16 or fp16. With ``buffer_ops`` each must span at most 2^31 - 2 bytes (32-bit buffer
    offsets); ``k_multiple`` is what the direct-to-LDS copies need of K and the row strides. Returns (M, N, K).

    An empty product (M, N or K = 0) passes once its shapes and dtypes hold: no element of A or B is read and no
    kernel runs (``validate.empty_product``), and PyTorch gives a tensor with a zero-length axis strides of its own
    choosing (a 64 × 0 A has strides (1, 1)), so the layout rules below, about elements that exist, do not apply."""
    M, N, K = require_matmul_shapes(a, b, c)
    if 0 in (M, N, K):
        return M, N, K
    if K > 1 and a.stride(1) != 1 or N > 1 and c.stride(1) != 1:
        which = "a" if K > 1 and a.stride(1) != 1 else "c"
        raise ValueError(f"{which} has strides {tuple((a if which == 'a' else c).stride())}; the kernel needs it "
                         f"row-major (unit stride along its rows): pass {which}.contiguous()")
    if K > 1 and b.stride(0) != 1:
        raise ValueError(f"b has strides {tuple(b.stride())}; this kernel reads B K-contiguous (column-major, "
                         "b.stride(0) == 1), as torch.nn.Linear stores its weight: pass w.T for a row-major N×K w, "
                         "or b.t().contiguous().t()")
    if k_multiple > 1:
        bad = [f"{n}={v}" for n, v in (("K", K), ("a.stride(0)", a.stride(0)), ("b.stride(1)", b.stride(1)))
               if v % k_multiple]
        if bad:
            raise ValueError(f"{', '.join(bad)}: the direct-to-LDS copies move whole 16-byte vectors, so K and the row "
                             f"strides of A and B must be multiples of {k_multiple} (pad K with zero columns of A and "
                             "zero rows of B: A·B does not change), or use lesson 21's kernel")
    for name, t in (("a", a), ("b", b), ("c", c)):
        span = (sum((size - 1) * stride for size, stride in zip(t.shape, t.stride())) + 1) * t.element_size()
        limit = BUFFER_BYTES if buffer_ops else (INT32_MAX + 1) * t.element_size()
        if span > limit:
            raise ValueError(f"{name} spans {span} bytes; buffer loads and stores address at most {limit} bytes "
                             "from one base with 32-bit offsets: split the product into smaller GEMMs")
    return M, N, K


def gpu_arch(device=None) -> str:
    """``gfx950``, ``gfx942``, ... for an AMD GPU (from ``gcnArchName``, feature flags dropped), or ``cuda``."""
    if torch.version.hip is None:
        return "cuda"
    name = getattr(torch.cuda.get_device_properties(device or torch.cuda.current_device()), "gcnArchName", "")
    return name.split(":")[0] or "unknown"


def require_amd_gpu(targets: tuple[str, ...], t: torch.Tensor | None = None) -> str:
    """Refuse, with a sentence, a GPU the lesson's kernel is not written for: an NVIDIA GPU, or an AMD GPU outside
    ``targets``. Returns the target name of the GPU here."""
    device = t.device if t is not None else None
    arch = gpu_arch(device)
    wanted = " or ".join(f"{x} ({'MI350/MI355' if x == 'gfx950' else 'MI300'})" for x in targets)
    if arch == "cuda":
        raise RuntimeError(f"this kernel is written for AMD {wanted} (MFMA, buffer loads, LDS); this GPU is "
                           f"{torch.cuda.get_device_name(device)}, an NVIDIA GPU: run lessons 10-19 here, and compile "
                           "this one without running it (gluon_course.machine.compile_kernel)")
    if arch not in targets:
        raise RuntimeError(f"this kernel is written for AMD {wanted}; this GPU is {arch} "
                           f"({torch.cuda.get_device_name(device)}), whose MFMA shapes or LDS differ: compile it for "
                           f"{arch} yourself, or run it on {' or '.join(targets)}")
    return arch


def require_tile(BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, num_warps: int, target: str) -> None:
    """Refuse a tile the MFMA layout over 2×2 waves and the 16-byte copies cannot cover."""
    for name, value in (("BLOCK_M", BLOCK_M), ("BLOCK_N", BLOCK_N), ("BLOCK_K", BLOCK_K), ("num_warps", num_warps)):
        require_power_of_two(name, value)
    if num_warps != 4:
        raise ValueError(f"num_warps={num_warps}: the lessons' MFMA layout puts 2 × 2 waves on a tile; use 4")
    m, n, k = MFMA[target].instr_shape
    if BLOCK_M < 2 * m or BLOCK_N < 2 * n or BLOCK_K < 64:
        raise ValueError(f"a {BLOCK_M} × {BLOCK_N} × {BLOCK_K} tile is too small for 2 × 2 waves of {m}×{n}×{k} "
                         f"MFMAs and 16-byte copies: BLOCK_M, BLOCK_N ≥ {2 * m}, BLOCK_K ≥ 64")


# The direct-to-LDS copies move whole 16-byte vectors, so every row of A and B must start on a 16-byte boundary
# and the K mask must cut between vectors. The compiler can prove that only from what Triton's launch tells it
# about integer arguments: "a multiple of 16". K and the row strides must therefore be multiples of 16.
K_MULTIPLE = 16


def launch_gemm(kernel, a, b, c, defaults: dict, config: dict, targets: tuple[str, ...], kernel_layouts,
                grid=None, **constexprs):
    """The launcher of the direct-to-LDS GEMMs (lessons 22 on), in one call: C allocated when ``c`` is None, the
    arguments checked (``require_amd_gemm_args`` with K a multiple of 16), M, N or K = 0 answered as torch.matmul
    answers them, unknown config keys refused, a GPU outside ``targets`` refused with a sentence, the tile checked,
    then ``kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(1), c.stride(0), **tile, **layouts, **constexprs)``.

    ``kernel_layouts(target, BLOCK_M=, BLOCK_N=, BLOCK_K=, num_warps=)`` gives the layout constexprs; ``grid(M, N,
    cfg)`` the number of programs (default: one per BLOCK_M × BLOCK_N tile of C). Returns ``c``."""
    import triton

    from ..validate import empty_product

    if c is None and isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dim() == b.dim() == 2:
        c = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    M, N, K = require_amd_gemm_args(a, b, c, k_multiple=K_MULTIPLE)
    if empty_product(a, b, c):          # M, N or K is 0: what torch.matmul returns
        return c
    unknown = set(config) - set(defaults)
    if unknown:
        raise TypeError(f"unknown config keys {sorted(unknown)}; matmul takes {sorted(defaults)}")
    cfg = {**defaults, **config}
    target = require_amd_gpu(targets, a)
    require_tile(cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"], cfg["num_warps"], target)
    num_warps = cfg.pop("num_warps")
    tile = {name: cfg.pop(name) for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    programs = grid(M, N, {**tile, **cfg}) if grid is not None else \
        triton.cdiv(M, tile["BLOCK_M"]) * triton.cdiv(N, tile["BLOCK_N"])
    kernel[(programs,)](a, b, c, M, N, K, a.stride(0), b.stride(1), c.stride(0), **tile, **cfg,
                        **kernel_layouts(target, **tile, num_warps=num_warps), **constexprs, num_warps=num_warps)
    return c
