"""fp8 (e4m3) GEMMs on Hopper (lesson 34): what the launcher asks of its arguments, the inputs and the reference of
its checks, the tolerance and its derivation, and the figures against ``torch._scaled_mm`` (cuBLASLt) and lesson
19's bf16 kernel.

The contract: C = A·Wᵀ scaled, C[i, j] = s_a[i] · s_w[j] · Σ_k A[i, k] · W[j, k], with A (M × K) and W (N × K, how
``nn.Linear`` keeps its weights) in ``torch.float8_e4m3fn``, row-major, s_a and s_w fp32 of one element (per tensor)
or one per row (M for A, N for W), C bf16 (M × N, row-major).
"""
from __future__ import annotations

import json
import math

import torch
from torch.overrides import TorchFunctionMode

from ..validate import INT32_MAX, require_cuda_tensor, require_matrix, require_separate_output

FP8 = torch.float8_e4m3fn
# e4m3 (torch.float8_e4m3fn, Gluon's gl.float8e4nv): 4 exponent bits of bias 7, 3 mantissa bits, no infinity, one NaN
# pattern per sign; the largest finite value is 1.75 · 2^8 = 448 (torch.finfo(torch.float8_e4m3fn).max).
E4M3_MAX = 448.0
# Half an ulp of e4m3, relative, for normal values (3 mantissa bits), and its subnormal step (2^-9, torch.finfo's
# smallest subnormal): what one rounding to e4m3 may cost.
E4M3_HALF_ULP = 2.0**-4
E4M3_SUBNORMAL = 2.0**-9
# TMA reads rows that start on 16-byte boundaries: a row of A or W is K bytes of fp8, a row of C is 2·N bytes of bf16.
K_MULTIPLE, N_MULTIPLE = 16, 8


# -- the launcher's arguments ------------------------------------------------------------------------

def _per_row(name: str, s, rows: int, what: str, on_gpu: bool) -> bool:
    """True for a scale of one element per row (``rows`` of them), False for one element; a sentence otherwise."""
    if s is None:
        raise TypeError(f"{name} is missing: an fp8 GEMM needs the scale its operand was quantized with (fp32, one "
                        f"element, or {rows} for one per {what}); quantize() returns it beside the fp8 tensor")
    if on_gpu:
        require_cuda_tensor(name, s)
    elif not isinstance(s, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(s).__name__}")
    if s.dtype != torch.float32:
        raise TypeError(f"{name} is {s.dtype}; scales are fp32 (the epilogue multiplies the fp32 sums by them): pass "
                        f"{name}.float()")
    if s.numel() == 1 and s.dim() <= 2:
        return False
    if s.numel() == rows and tuple(s.shape) in ((rows,), (rows, 1)):
        if not s.is_contiguous():
            raise ValueError(f"{name} has strides {tuple(s.stride())}: the epilogue reads it as one contiguous row of "
                             f"fp32; pass {name}.contiguous()")
        return True
    raise ValueError(f"{name} has shape {tuple(s.shape)}; it is one element (per tensor) or {rows} elements, shape "
                     f"({rows},) or ({rows}, 1), one per {what}")


def require_fp8_linear_args(a, w, a_scale, w_scale, c=None, on_gpu: bool = True):
    """The fp8 launcher's refusals, each a sentence. Returns (M, N, K, a_per_row, w_per_row). ``on_gpu=False`` leaves
    out the device (a CPU test of the rest)."""
    for name, t in (("a", a), ("w", w)) + ((("c", c),) if c is not None else ()):
        require_matrix(name, t, on_gpu)
    for name, t in (("a", a), ("w", w)):
        if t.dtype != FP8:
            hint = ("e5m2 keeps range for gradients; this kernel multiplies e4m3 by e4m3" if t.dtype == torch.float8_e5m2
                    else "quantize it first: x_q, scale = quantize(x) (per tensor) or quantize(x, per_row=True)")
            raise TypeError(f"{name} is {t.dtype}; this kernel takes torch.float8_e4m3fn: {hint}")
    M, K = a.shape
    N, K2 = w.shape
    if K2 != K:
        raise ValueError(f"a is {M}×{K} but w is {N}×{K2}: C = A·Wᵀ needs W as N × K, with K = {K} columns like A "
                         "(nn.Linear's weight: out_features × in_features)")
    if K > 1 and a.stride(1) != 1:
        raise ValueError(f"a has strides {tuple(a.stride())}; TMA reads A's rows, which need unit stride along K "
                         "(row-major): pass a.contiguous()")
    if K > 1 and w.stride(1) != 1:
        raise ValueError(f"w has strides {tuple(w.stride())}: it is not K-major. fp8 wgmma reads both operands "
                         "K-major from shared memory (Triton 3.9.0 transposes only 16-bit operands in shared memory), so "
                         "W must be N × K with unit stride along K, as nn.Linear stores it; for a K × N matrix b, pass "
                         "w = b.t().contiguous() (once, when the weights are made)")
    if c is not None:
        if c.dtype != torch.bfloat16:
            raise TypeError(f"c is {c.dtype}; this kernel writes C in torch.bfloat16")
        if tuple(c.shape) != (M, N):
            raise ValueError(f"c is {tuple(c.shape)} but A·Wᵀ is ({M}, {N})")
        if N > 1 and c.stride(1) != 1:
            raise ValueError(f"c has strides {tuple(c.stride())}; TMA writes C's rows: pass a row-major c")
    if K % K_MULTIPLE:
        raise ValueError(f"K = {K} is not a multiple of {K_MULTIPLE}: a row of A and of W is K bytes of fp8, and TMA "
                         f"needs every row to start on a 16-byte boundary. Pad K to {-(-K // 16) * 16} (zero columns "
                         "appended to A and to W leave A·Wᵀ unchanged)")
    if N % N_MULTIPLE:
        raise ValueError(f"N = {N} is not a multiple of {N_MULTIPLE}: a row of C is N bf16 (2·N bytes), and TMA needs "
                         f"every row to start on a 16-byte boundary. Pad W with zero rows to N = {-(-N // 8) * 8} and "
                         "slice C's extra columns off")
    for name, t in (("a", a), ("w", w)):
        if t.numel() and sum((size - 1) * stride for size, stride in zip(t.shape, t.stride())) > INT32_MAX:
            raise ValueError(f"{name} spans more than {INT32_MAX} elements; the kernel indexes with 32-bit integers")
    a_per_row = _per_row("a_scale", a_scale, M, "row of A", on_gpu)
    w_per_row = _per_row("w_scale", w_scale, N, "row of W (a column of C)", on_gpu)
    if c is not None:
        require_separate_output(c, a=a, w=w, a_scale=a_scale, w_scale=w_scale)
    return M, N, K, a_per_row, w_per_row


# -- inputs, reference, tolerance -----------------------------------------------------------------------

def fp8_inputs(M: int, N: int, K: int, per_row, device="cuda", seed: int = 0, margin: int = 4096):
    """Fresh e4m3 operands A (M × K) and W (N × K) and their fp32 scales, independent of any quantizer: the values
    are standard normal times 64, clamped to ±448 and rounded to e4m3 by torch's cast (to nearest, ties to even, as
    the GPU's conversion rounds; so they cover e4m3's exponents, subnormals included), each matrix inside a NaN-filled
    buffer (a read past an end brings NaN into C). ``per_row``: True (both scales one per row: M for A, N for W),
    False (both one per tensor), or a pair (A's, W's) for the mixed modes. The scales are random, A's in
    [2^-9, 2^-7] and W's in [2^-6, 2^-4]: every scale of W is at least twice every scale of A, so a kernel that
    applies one operand's scale where the other's belongs is off by 2× or more wherever it does."""
    a_row, w_row = tuple(per_row) if isinstance(per_row, (tuple, list)) else (per_row, per_row)
    g = torch.Generator(device="cpu").manual_seed(seed)

    def operand(rows):
        values = (torch.randn(rows, K, generator=g) * 64).clamp(-E4M3_MAX, E4M3_MAX).to(FP8)
        # 0x7F is e4m3fn's NaN; the buffer is filled as bytes (any device fills uint8).
        buffer = torch.full((values.numel() + 2 * margin,), 0x7F, dtype=torch.uint8, device=device).view(FP8)
        return buffer[margin: margin + values.numel()].view(rows, K).copy_(values.to(device))

    def scale(n, lowest):
        return (2.0 ** (lowest + 2 * torch.rand(n, generator=g))).to(device)

    a, w = operand(M), operand(N)
    return a, w, scale(M if a_row else 1, -9), scale(N if w_row else 1, -6)


def dequantized(x_q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """x_q · scale in fp64 (one scale, or one per row)."""
    s = scale.double().reshape(-1, 1) if scale.numel() > 1 else scale.double().reshape(())
    return x_q.double() * s


def reference(a, w, a_scale, w_scale) -> torch.Tensor:
    """The product of the dequantized inputs, (A·s_a)(W·s_w)ᵀ, computed in fp64 and returned in fp32: the same sum the
    kernel does, in exact enough arithmetic (each product of two e4m3 values is exact in fp64, and the fp64 sum's
    error is far below the tolerance)."""
    return (dequantized(a, a_scale) @ dequantized(w, w_scale).T).float()


# The tolerance, |c − ref| ≤ 2^-8·|ref| + ACC_BOUND·‖a_i‖·‖w_j‖ elementwise, with a_i, w_j the dequantized rows:
# - every product of two e4m3 values is exact (4 + 4 significant bits), and the scales multiply the finished fp32
#   sum once (two fp32 roundings, 2^-23 relative: nothing beside the rest);
# - the sum: Hopper's fp8 tensor cores do not accumulate in full fp32 (DeepSeek-V3's report, arXiv 2412.19437,
#   §3.3.2, measured about 14 significant bits kept on H800), and Triton 3.9.0 on sm_90 asks for no promotion
#   (max_num_imprecise_acc_default = 2**30 in backends/nvidia/compiler.py: every product accumulates inside wgmma).
#   A partial sum of the dot product is at most ‖a_i‖·‖w_j‖ (Cauchy-Schwarz); rounding it to 14 bits costs at most
#   2^-14 of that, and the K loop does K/32 such steps (one per wgmma of 32): at K = 8192, 256 steps, 2^-6 of
#   ‖a_i‖·‖w_j‖ if every rounding went the same way. Random ones add as √(K/32): 16 steps' worth, 2^-10. ACC_BOUND =
#   2^-9 is twice the random walk: a bound chosen from a model of the hardware, not measured (the GPU step measures
#   the error, the figure ``error_8192``, as a fraction of this bound);
# - rounding C to bf16: half an ulp, 2^-8 relative (bf16 keeps 8 significant bits).
# Tight enough: with the inputs above, ‖a_i‖·‖w_j‖ is about K · 64² and |ref| about √K · 64² (times the scales), so
# at K = 4096 the bound is 2^-9·K = 8 typical products' worth against a sum of √K = 64: a lost K step (128 products,
# ~11 typical products' worth, larger in the many elements where it does not cancel), a scale applied twice, a row's
# scale read at a column, each misses it by far.
BF16_HALF_ULP = 2.0**-8
ACC_BOUND = 2.0**-9


def allowed_error(ref, a, w, a_scale, w_scale) -> torch.Tensor:
    """The elementwise bound above, in fp64, shaped like C."""
    a_norms = dequantized(a, a_scale).norm(dim=1)
    w_norms = dequantized(w, w_scale).norm(dim=1)
    return BF16_HALF_ULP * ref.double().abs() + ACC_BOUND * a_norms[:, None] * w_norms[None, :]


def compare(c, ref, allowed) -> str | None:
    """None when every element of ``c`` is within ``allowed`` of ``ref``; else one clause naming the first one out."""
    if tuple(c.shape) != tuple(ref.shape):
        return f"C has shape {tuple(c.shape)} instead of {tuple(ref.shape)}"
    unwritten = torch.isnan(c)
    if unwritten.any():
        i, j = divmod(int(unwritten.flatten().to(torch.uint8).argmax()), c.shape[1])
        return f"{int(unwritten.sum())} element(s) NaN (never written, or NaN read into the sum; first at [{i}, {j}])"
    wrong = ~((c.double() - ref.double()).abs() <= allowed)
    if not wrong.any():
        return None
    i, j = divmod(int(wrong.flatten().to(torch.uint8).argmax()), c.shape[1])
    return (f"{int(wrong.sum())} element(s) out of tolerance, first at [{i}, {j}]: got {c[i, j].item():.6g}, "
            f"expected {ref[i, j].item():.6g} ± {allowed[i, j].item():.3g}")


def error_fraction(c, ref, allowed) -> float:
    """The largest |c − ref| as a fraction of its element's bound: ≤ 1 passes, and how far below 1 says how much
    room the bound leaves."""
    return float(((c.double() - ref.double()).abs() / allowed).max())


# -- on a GPU ------------------------------------------------------------------------------------------

# Odd shapes for fp8: odd M, K and N multiples of 16 and 8 with tails past every tile edge (K = 1008: 112 past 896,
# K = 4112: 16 past 4096, N = 136, 264, 40), a single row, and two shapes with more tiles than an H200 holds programs.
FP8_SHAPES = ((1, 8, 16), (17, 40, 80), (128, 256, 128), (1000, 1000, 1008), (4097, 136, 1008), (256, 512, 4112),
              (127, 264, 64), (4097, 2056, 208), (2000, 4104, 96))
# The scales' kinds, (A's per row, W's per row): the launcher takes each operand's scale one per tensor or one per row,
# independently, so the kernel meets all four.
SCALE_MODES = {"per tensor": (False, False), "per row": (True, True), "A per row, W per tensor": (True, False),
               "A per tensor, W per row": (False, True)}


def check_fp8(launch, shapes=FP8_SHAPES, modes=tuple(SCALE_MODES), device="cuda", caught=()) -> str | None:
    """``launch(a, w, a_scale, w_scale, c)`` on fresh inputs for each shape and scale mode, C NaN inside a guarded
    buffer: no element left NaN, nothing written outside C, every element within ``allowed_error``. ``device``: where
    the tensors live ("cpu" for the host model's launch, ``model_launch``); an exception of ``caught`` raised by the
    launch (the host model's sentences) becomes the answer, with the shape and mode it happened at."""
    from ..measure.tensors import guarded_empty

    for M, N, K in shapes:
        for mode in modes:
            a, w, sa, sw = fp8_inputs(M, N, K, SCALE_MODES[mode], device=device, seed=M + N + K)
            guard = guarded_empty((M, N), torch.bfloat16, device=device)
            where = f"shape {M}×{N}×{K}, scales {mode}"
            try:
                launch(a, w, sa, sw, guard.tensor)
            except caught as e:
                return f"{where}: {e}"
            if guard.tensor.is_cuda:
                torch.cuda.synchronize()
            ref = reference(a, w, sa, sw)
            problem = compare(guard.tensor, ref, allowed_error(ref, a, w, sa, sw))
            if problem:
                return f"{where}: {problem}."
            if not guard.margins_untouched():
                return f"{where}: wrote outside C (before its first or past its last element)."
    return None


def correct_here(module_file: str, shapes: str) -> str | None:
    """``check_fp8`` on the module's ``matmul`` (for a child process: a barrier that never completes hangs there)."""
    from ..course import load_module_file

    mod = load_module_file(module_file)
    return check_fp8(lambda a, w, sa, sw, c: mod.matmul(a, w, sa, sw, c), [tuple(s) for s in json.loads(shapes)])


# -- the host model: the launcher's own path and the kernel's own code, on the CPU ----------------------------------

# What the host model assumes of fp8 wgmma, against what is known of Hopper's. The model's wgmma (model.shims) sums
# one instruction's products exactly and adds them to the fp32 accumulator with one rounding: two e4m3 values have 4
# significant bits each, so every product is exact, and the sums are as good as fp32 holds. Hopper's fp8 wgmma keeps
# fewer bits of its running sum (about 14, ACC_BOUND above), and Triton 3.9.0 asks it for no promotion on sm_90
# (max_num_imprecise_acc_default = 2**30): what cuBLASLt calls fast accumulation, torch._scaled_mm's use_fast_accum=True
# (with it off, cuBLAS's documentation says, intermediate results are periodically promoted to a higher precision). So
# the model's C is nearer the exact product than a GPU's, and the host model holds it to the GPU's own bound,
# ``allowed_error``, through the GPU's own comparison, ``check_fp8``, not to the model's exactness: it asks nothing of
# a kernel that Hopper's accumulation could not meet, and a scale taken from another row, column or operand, or applied
# twice, misses the bound by a factor (``fp8_inputs``: every W scale is at least twice every A scale, and the scales of
# the rows differ by up to 4×).
# Shapes for the model, at the course's tile 128 × 256 × 128 on 3 programs: tails past every edge (260 = 2·128 + 4
# rows, 520 = 2·256 + 8 columns, 144 = 128 + 16 of K), 9 tiles, pid_m and pid_n apart in 6 of them, 3 tiles a
# program; a 1-row and an 8-column tail; a single row.
MODEL_SHAPES = ((260, 520, 144), (129, 264, 144), (1, 8, 16))
MODEL_PROGRAMS = 3


class KernelInModel:
    """What a plan of lesson 34 calls to launch its kernel (its ``launcher``, a ``nvidia.launch.KeptLaunch`` on a GPU),
    standing in for it on the CPU: called as the plan's ``launch`` calls it, with the grid, the stream, the descriptors
    (host TensorDescriptors on the tensors' addresses) and the kernel's other arguments (the scales, M, N, K and the
    constexprs, in the kernel's order), it runs ``kernel``'s own code in the host model on copies of the tensors those
    arguments point at, then copies C back into its tensor. ``tensors``: name → the launch's torch tensors (CPU);
    ``pad_scales``: each scale's copy followed by copies of its last element, as many as the larger of M and N, so that
    a read past a scale's end finds the scale again (the best a GPU's memory could hold for a kernel that reads past
    it) instead of stopping the model: what the GPU check's comparison alone must then catch."""

    def __init__(self, kernel, num_warps: int, tensors: dict, pad_scales: bool = False):
        self.kernel, self.num_warps, self.tensors, self.pad_scales = kernel, num_warps, tensors, pad_scales

    def _buffers(self):
        import numpy as np
        from triton.experimental.gluon import language as gl

        from ..model import Buffer

        dtypes = {FP8: gl.float8e4nv, torch.bfloat16: gl.bfloat16, torch.float32: gl.float32}
        longest = max(t.shape[0] for name, t in self.tensors.items() if name in ("a", "w"))
        out = {}
        for name, t in self.tensors.items():
            values = t.float().numpy()
            if name.endswith("_scale") and self.pad_scales:
                values = np.concatenate([values.reshape(-1), np.full(longest, values.reshape(-1)[-1], np.float32)])
            out[t.data_ptr()] = Buffer(name, values, dtypes[t.dtype], poison=name == "c")
        return out

    # What a variant of the kernel may change (a probe's split-K adds scratch buffers, a program order, an fp32 C):
    HANDED = "A, W, C and the two scales"                   # the buffers an argument's address may name
    WRITTEN_TWICE = "a tile of C computed by two programs, or stored twice"

    def _element_bytes(self, buf) -> int:
        return self.tensors[buf.name].element_size()

    def _run_options(self, grid_x: int) -> dict:
        """Keyword arguments for ``model.run`` besides the warps (a program order, for one)."""
        return {}

    def _read_past(self, scale: str) -> str:
        """The sentence for a kernel that reads ``scale`` past its end."""
        n = self.tensors[scale].numel()
        return (f"the kernel reads {scale} past its end ({n} element{'s' if n > 1 else ''}, "
                f"{'one per row of ' + ('A' if scale == 'a_scale' else 'W') if n > 1 else 'one per tensor'}): is it "
                "read one per row where it is one element (A_PER_ROW and W_PER_ROW swapped), handed in the other "
                "scale's place (a_scale_ptr and w_scale_ptr swapped), or indexed by the other dimension (A's scales "
                "go with C's rows, pid_m, W's with C's columns, pid_n)?")

    def _after(self, buffers: dict) -> None:
        """Called once C has been copied back: what else the launch leaves for the next call."""

    def __call__(self, grid_x: int, stream, descriptors, rest) -> None:
        from ..model import HostTensorDescriptor, ModelError, ModelOutOfBounds, Pointer, run

        buffers = self._buffers()

        def at(address, what):
            if address not in buffers:
                raise ModelError(f"the kernel is handed {what} at an address that is none of {self.HANDED}")
            return buffers[address]

        descs = []
        for d in descriptors:
            buf = at(d.base.data_ptr(), "a descriptor")
            if list(d.shape) != list(buf.shape) or list(d.strides) != [buf.shape[1], 1]:
                raise ModelError(f"the descriptor of {buf.name} describes {list(d.shape)} with strides "
                                 f"{list(d.strides)}, not the row-major {list(buf.shape)} tensor at its address")
            descs.append(HostTensorDescriptor(buf, d.block_shape, d.layout, element_bytes=self._element_bytes(buf)))
        args = [Pointer(at(x.data_ptr(), "a tensor")) if isinstance(x, torch.Tensor) else x for x in rest]
        try:
            run(self.kernel, grid_x, *descs, *args, num_warps=self.num_warps, **self._run_options(grid_x))
        except ModelOutOfBounds as e:
            scale = next((n for n in ("a_scale", "w_scale") if f" {n} " in str(e)), None)
            if scale is None:
                raise
            raise ModelOutOfBounds(self._read_past(scale)) from None
        c = self.tensors["c"]
        c_buf = buffers[c.data_ptr()]
        twice = c_buf.writes > 1
        if twice.any():
            i, j = divmod(int(twice.argmax()), c.shape[1])
            raise ModelError(f"{int(twice.sum())} element(s) of C written more than once, the first C[{i}, {j}]: "
                             f"{self.WRITTEN_TWICE}")
        c.copy_(torch.from_numpy(c_buf.values().copy()))
        self._after(buffers)


def model_launch(mod, programs: int = MODEL_PROGRAMS, pad_scales: bool = False, **config):
    """``launch(a, w, a_scale, w_scale, c)`` on CPU tensors for ``check_fp8``: the module's own launcher path with the
    host model in the GPU's place. The module's ``Plan`` is built from the tensors (its checks, the configuration
    merged with ``config``, the flags A_PER_ROW and W_PER_ROW, the kernel's arguments), its grid set as its first launch
    sets it with ``programs`` in place of the GPU's SMs, and its ``launch`` run with ``KernelInModel`` as the
    launcher: the descriptors, scales, sizes and constexprs it hands the kernel are what the model runs."""
    def launch(a, w, a_scale, w_scale, c):
        plan = mod.Plan(a, w, a_scale, w_scale, c, config, programs)
        if plan.empty:
            if plan.zero_c:
                c.zero_()
            return
        plan.grid, plan.stream = (min(plan.tiles, programs), 1, 1), (lambda device_index: 0)
        tensors = {"a": a, "w": w, "a_scale": a_scale, "w_scale": w_scale, "c": c}
        plan.launcher = KernelInModel(plan.launcher.kernel, plan.launcher.num_warps, tensors, pad_scales)
        plan.launch(a, w, a_scale, w_scale, c)
    return launch


def host_model_problem(mod, shapes=MODEL_SHAPES, programs: int = MODEL_PROGRAMS):
    """Lesson 34's host-model check: ``check_fp8``, the GPU's comparison, on ``model_launch`` (the plan's path, the
    kernel's code in the host model) at ``shapes``, in all four scale modes; None, or one sentence (NotChecked where
    the kernel uses what the model does not model)."""
    from ..grading import NotChecked
    from ..model import ModelError, ModelUnsupported

    try:
        problem = check_fp8(model_launch(mod, programs), shapes, device="cpu", caught=(ModelError,))
    except ModelUnsupported as e:
        return NotChecked(f"the host model does not model {e}")
    return f"in the host model, {problem}" if problem else None


# What torch._scaled_mm asks of the shapes on CUDA, in _scaled_mm_out_cuda (aten/src/ATen/native/cuda/ScaledBlas.cpp,
# where _scaled_mm moved from Blas.cpp; read at pytorch commit 0174dfab, whose checks give word for word the message
# torch 2.11.0 raised on the H200 in the first trial, "mat2 shape (1008x1000) must be divisible by 16"):
#     TORCH_CHECK(mat1.sizes()[1] % 16 == 0, "Expected trailing dimension of mat1 to be divisible by 16 ...");
#     TORCH_CHECK(mat2.sizes()[0] % 16 == 0 && mat2.sizes()[1] % 16 == 0, "mat2 shape (...) must be divisible by 16");
# mat1 is A (M × K), mat2 is Wᵀ (K × N): K and N multiples of 16. M is not checked there; the course's cases against
# the library keep it a multiple of 16 too (both dimensions of every operand and of C), so that a later version's
# check on M would not stop them. The CPU build the course pins (torch 2.13) does not check these: the notebook's CPU
# cells multiply 17 × 40 × 80 with it. The kernel's own odd shapes (odd M, N a multiple of 8) are compared with
# ``reference`` only.
SCALED_MM_MULTIPLE = 16


def scaled_mm_refuses(M: int, N: int, K: int) -> str | None:
    """None for a shape the course compares with ``torch._scaled_mm`` on CUDA (M, N, K multiples of 16, as above);
    else a sentence saying which is not and what to compare with instead."""
    off = [f"{name} = {v}" for name, v in (("M", M), ("N", N), ("K", K)) if v % SCALED_MM_MULTIPLE]
    if not off:
        return None
    return (f"{', '.join(off)} not a multiple of {SCALED_MM_MULTIPLE}: torch._scaled_mm on CUDA refuses a mat2 (Wᵀ, "
            f"K × N) whose dimensions are not multiples of 16 (and the course keeps M one too); compare the kernel "
            f"with fp8.reference at {M}×{N}×{K}, or use a shape of multiples of 16 against the library")


def scaled_mm(a, w, a_scale, w_scale, out, fast_accum: bool = True):
    """cuBLASLt's fp8 GEMM through torch (``torch._scaled_mm``, torch 2.11's signature: mat1, mat2, scale_a, scale_b,
    then bias, scale_result, out_dtype, use_fast_accum by keyword), the same C: mat2 is Wᵀ (column-major, as it
    requires), per-tensor scales of one element, per-row scales as (M, 1) and (1, N). ``fast_accum`` is the library's
    accumulation without promotion, which is what Triton 3.9.0's wgmma does on sm_90 (see ACC_BOUND). On CUDA, a shape
    ``scaled_mm_refuses`` is refused here with its sentence, before torch's own check."""
    if a.is_cuda:
        problem = scaled_mm_refuses(a.shape[0], w.shape[0], a.shape[1])
        if problem:
            raise ValueError(problem)
    sa = a_scale.reshape(-1, 1) if a_scale.numel() > 1 else a_scale.reshape(())
    sw = w_scale.reshape(1, -1) if w_scale.numel() > 1 else w_scale.reshape(())
    if not a.is_cuda and (a_scale.numel() > 1 or w_scale.numel() > 1):
        try:
            return torch._scaled_mm(a, w.t(), sa, sw, out_dtype=torch.bfloat16, use_fast_accum=fast_accum, out=out)
        except RuntimeError as e:     # torch 2.11's CPU backend: "only supports per-tensor scaling"
            raise ValueError(f"torch {torch.__version__}'s _scaled_mm on the CPU takes per-tensor scales only: compare "
                             f"per-row scales with fp8.reference on the CPU, or with scaled_mm on a GPU") from e
    return torch._scaled_mm(a, w.t(), sa, sw, out_dtype=torch.bfloat16, use_fast_accum=fast_accum, out=out)


def _flops(M, N, K, ms):
    return 2 * M * N * K / (ms * 1e-3) / 1e12


def fp8_figure(launch, M: int, N: int, K: int, per_row: bool = False, fast_accum: bool = True, pairs: int | None = None):
    """``launch(a, w, a_scale, w_scale, c)`` against ``torch._scaled_mm`` at one shape: the kernel checked first, then
    both timed in interleaved pairs (do_bench medians); the figure is the median pair's ratio (the library's time
    over the kernel's)."""
    from ..measure.device import free_cache
    from ..measure.timing import PAIRS, Measurement, paired_ms

    a, w, sa, sw = fp8_inputs(M, N, K, per_row)
    c = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device=a.device)
    launch(a, w, sa, sw, c)
    torch.cuda.synchronize()
    ref = reference(a, w, sa, sw)
    allowed = allowed_error(ref, a, w, sa, sw)
    problem = compare(c, ref, allowed)
    if problem:
        raise AssertionError(f"the kernel is wrong on the {M}×{N}×{K} benchmark input: {problem}.")
    error = error_fraction(c, ref, allowed)
    library_c = torch.empty_like(c)
    scaled_mm(a, w, sa, sw, library_c, fast_accum)
    library_error = error_fraction(library_c, ref, allowed)
    del ref, allowed
    timed = paired_ms(lambda: launch(a, w, sa, sw, c), lambda: scaled_mm(a, w, sa, sw, library_c, fast_accum),
                      pairs or PAIRS)
    del a, w, c, library_c
    free_cache()
    rate, library = _flops(M, N, K, timed.kernel), _flops(M, N, K, timed.ceiling)
    return Measurement(timed.ratio, f"{rate:.0f} TFLOPS vs torch._scaled_mm {library:.0f} TFLOPS",
                       {"tflops": rate, "library_tflops": library, "M": M, "N": N, "K": K,
                        "scales": "per row" if per_row else "per tensor", "fast_accum": fast_accum,
                        "error_of_bound": round(error, 4), "library_error_of_bound": round(library_error, 4),
                        **timed.details()})


def fp8_measure(M: int, N: int, K: int, per_row: bool = False, fast_accum: bool = True, **config):
    """A Figure's ``measure``: the module's ``matmul`` at one shape over ``torch._scaled_mm``."""
    def measure(mod):
        return fp8_figure(lambda a, w, sa, sw, c: mod.matmul(a, w, sa, sw, c, **config), M, N, K, per_row, fast_accum)
    return measure


def fp8_sweep_measure(shapes, **config):
    """A Figure's ``measure``: ``fp8_figure`` at each shape; the figure is the geometric mean of the ratios."""
    def measure(mod):
        from ..measure.timing import Measurement

        ratios, texts = {}, {}
        for shape in shapes:
            m = fp8_measure(*shape, **config)(mod)
            key = "×".join(map(str, shape))
            ratios[key], texts[key] = m.value, m.text
        geomean = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
        worst = min(ratios, key=ratios.get)
        return Measurement(geomean, f"geomean {geomean:.2f}× torch._scaled_mm, worst {ratios[worst]:.2f}×",
                           {"ratios": ratios, "texts": texts, "worst": [worst, ratios[worst]]})
    return measure


def over_bf16_measure(bf16_lesson: str = "19", M: int = 8192, N: int = 8192, K: int = 8192):
    """A Figure's ``measure``: the module's fp8 ``matmul`` over lesson ``bf16_lesson``'s bf16 ``matmul`` (its own
    CONFIG) on the same values (the fp8 inputs dequantized to bf16, W as w.t()), both checked, timed in interleaved
    pairs; the figure is the median pair's ratio (bf16's time over fp8's)."""
    def measure(mod):
        from ..course import load_solution
        from ..measure.device import free_cache
        from ..measure.gemm import compare_gemm, reference as bf16_reference, tolerance
        from ..measure.timing import PAIRS, Measurement, paired_ms

        bf16 = load_solution(bf16_lesson)
        a, w, sa, sw = fp8_inputs(M, N, K, per_row=False)
        a16 = dequantized(a, sa).to(torch.bfloat16)
        w16 = dequantized(w, sw).to(torch.bfloat16)
        c = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device=a.device)
        c16 = torch.full_like(c, float("nan"))
        mod.matmul(a, w, sa, sw, c)
        bf16.matmul(a16, w16.t(), c16)
        torch.cuda.synchronize()
        ref = reference(a, w, sa, sw)
        problem = compare(c, ref, allowed_error(ref, a, w, sa, sw))
        del ref
        problem = problem or compare_gemm(c16, bf16_reference(a16, w16.t()), tolerance(K, torch.bfloat16))
        if problem:
            raise AssertionError(f"fp8 over bf16 at {M}×{N}×{K}: a kernel is wrong on the benchmark input: {problem}.")
        timed = paired_ms(lambda: mod.matmul(a, w, sa, sw, c), lambda: bf16.matmul(a16, w16.t(), c16), PAIRS)
        del a, w, a16, w16, c, c16
        free_cache()
        now, then = _flops(M, N, K, timed.kernel), _flops(M, N, K, timed.ceiling)
        return Measurement(timed.ratio, f"fp8 {now:.0f} TFLOPS vs bf16 v9 {then:.0f} TFLOPS",
                           {"tflops": now, "bf16_tflops": then, **timed.details()})
    return measure


def error_measure(M: int = 8192, N: int = 8192, K: int = 8192, per_row: bool = True):
    """A Figure's ``measure``: the kernel's largest error against the dequantized product, as a fraction of the
    tolerance's bound (``allowed_error``), with the relative Frobenius error and ``torch._scaled_mm``'s beside it."""
    def measure(mod):
        from ..measure.device import free_cache
        from ..measure.timing import Measurement

        a, w, sa, sw = fp8_inputs(M, N, K, per_row, seed=1)
        c = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device=a.device)
        mod.matmul(a, w, sa, sw, c)
        library_c = scaled_mm(a, w, sa, sw, torch.empty_like(c), fast_accum=True)
        precise_c = scaled_mm(a, w, sa, sw, torch.empty_like(c), fast_accum=False)
        torch.cuda.synchronize()
        ref = reference(a, w, sa, sw)
        allowed = allowed_error(ref, a, w, sa, sw)
        if torch.isnan(c).any():
            raise AssertionError(f"the kernel left NaN in C at {M}×{N}×{K}")
        norm = ref.double().norm()
        frob = {name: float((x.double() - ref.double()).norm() / norm)
                for name, x in (("kernel", c), ("scaled_mm_fast", library_c), ("scaled_mm", precise_c))}
        fraction = error_fraction(c, ref, allowed)
        details = {"relative_frobenius": frob, "scaled_mm_fast_of_bound": error_fraction(library_c, ref, allowed),
                   "scaled_mm_of_bound": error_fraction(precise_c, ref, allowed), "M": M, "N": N, "K": K,
                   "scales": "per row" if per_row else "per tensor"}
        del a, w, c, library_c, precise_c, ref, allowed
        free_cache()
        return Measurement(fraction, f"largest error {fraction:.3f} of the bound; ‖C − ref‖/‖ref‖ = "
                           f"{frob['kernel']:.2e} (torch._scaled_mm {frob['scaled_mm_fast']:.2e} fast, "
                           f"{frob['scaled_mm']:.2e} promoted)", details)
    return measure


# -- the quantizer (on the CPU) ------------------------------------------------------------------------

def _rounding_problem(what, x, x_q, scale) -> str | None:
    """x_q · scale within one e4m3 rounding of x: half an ulp (2^-4 relative) for normal values, half the subnormal
    step (2^-10) times the scale below them."""
    back = dequantized(x_q, scale)
    s = scale.double().reshape(-1, 1) if scale.numel() > 1 else scale.double().reshape(())
    allowed = E4M3_HALF_ULP * x.double().abs() + E4M3_SUBNORMAL / 2 * s
    wrong = ~((back - x.double()).abs() <= allowed)
    if wrong.any():
        i, j = divmod(int(wrong.flatten().to(torch.uint8).argmax()), x.shape[1])
        return (f"{what}: x[{i}, {j}] = {x[i, j].item():.6g} comes back as {back[i, j].item():.6g} (x_q · scale), "
                f"more than one e4m3 rounding away (± {allowed[i, j].item():.3g})")
    return None


# A conversion to e4m3 meets a value past its range in one of two ways, e4m3 having no infinity: it saturates it to
# ±448, or it gives NaN. Past E4M3_OVERFLOW (464, halfway from 448 to 480, where e4m3's NaN pattern sits) a value
# rounds beyond 448. torch's eager cast saturates from 2.12 on (the torch 2.13 CPU build this course installs: its
# torch/headeronly/util/Float8_e4m3fn.h sends finite overflow and infinity to ±448, and [460, 900, -5000, inf] comes
# out [448, 448, -448, 448]); before 2.12 it gave NaN past 464, on the CPU and on CUDA (PyTorch's pull request 178817
# made it saturate). A quantizer that leaves the saturation to the cast is right on one build and NaN on another, and
# a check run with a saturating cast cannot tell it from one that clamps. So the check runs quantize under
# ``NonSaturatingCasts``: each of its conversions to e4m3 gives NaN past the range, as torch before 2.12 does.
E4M3_OVERFLOW = 464.0


def _nan_past_range(source: torch.Tensor, converted: torch.Tensor) -> torch.Tensor:
    """``converted`` (e4m3, ``source`` cast by torch) with NaN, of the source's sign, wherever |source| > 464."""
    past = ~(source.float().abs() <= E4M3_OVERFLOW)
    if not bool(past.any()):
        return converted
    bits = converted.view(torch.uint8).clone()
    bits[torch.broadcast_to(past, bits.shape)] = 0x7F
    bits[torch.broadcast_to(past & (source.float() < 0), bits.shape)] = 0xFF
    return bits.view(FP8)


class NonSaturatingCasts(TorchFunctionMode):
    """While active, every conversion of a non-e4m3 tensor to e4m3 (``.to``, ``.type``, ``copy_`` into an e4m3 tensor,
    an assignment into one) gives NaN where the value lies past the range, as torch's cast did before 2.12, whatever
    this torch does; ``conversions`` counts them and ``largest`` is the largest magnitude handed to one. ``failure``:
    the shapes of the tensors of the first torch call that raised (a broadcast that could not be made, say)."""

    def __init__(self):
        super().__init__()
        self.conversions, self.largest, self.failure = 0, 0.0, None

    def _seen(self, source):
        self.conversions += 1
        if source.numel():
            self.largest = max(self.largest, float(source.float().abs().nan_to_num(posinf=float("inf")).max()))

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        try:
            if name in ("copy_", "__setitem__") and isinstance(args[0], torch.Tensor) and args[0].dtype == FP8:
                source = args[-1] if name == "__setitem__" else args[1]
                if isinstance(source, (int, float)):
                    source = torch.tensor(float(source))
                if isinstance(source, torch.Tensor) and source.dtype != FP8:
                    self._seen(source)
                    args = (*args[:-1], _nan_past_range(source, source.to(FP8))) if name == "__setitem__" else \
                        (args[0], _nan_past_range(source, source.to(FP8)), *args[2:])
                return func(*args, **kwargs)
            out = func(*args, **kwargs)
        except Exception:
            if self.failure is None:
                self.failure = [tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]
            raise
        if name in ("to", "type") and isinstance(out, torch.Tensor) and out.dtype == FP8 and \
                isinstance(args[0], torch.Tensor) and args[0].dtype != FP8:
            self._seen(args[0])
            out = _nan_past_range(args[0], out)
        return out


def _this_torch() -> str:
    """What this torch's own cast does past the range, in words."""
    saturates = not bool(torch.isnan(torch.tensor([900.0]).to(FP8).float()).any())
    return f"torch {torch.__version__} here {'saturates by itself' if saturates else 'gives NaN too'}"


def _line_in(quantize, error: BaseException) -> str:
    """``line N (`code`)``: the innermost line of ``quantize``'s own file that the error passed through."""
    import linecache

    where, tb = "", error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == quantize.__code__.co_filename:
            where = f"line {tb.tb_lineno} (`{linecache.getline(code.co_filename, tb.tb_lineno).strip()}`)"
        tb = tb.tb_next
    return where or "a line of its own"


def _no_broadcast(what: str, x_shape, per_row: bool, shapes, where: str) -> str | None:
    """The sentence for a torch call of quantize whose tensors (``shapes``) cannot be broadcast together; None when
    they can (the call failed for another reason)."""
    try:
        torch.broadcast_shapes(*shapes)
        return None
    except RuntimeError:
        pass
    rows, cols = x_shape
    other = next((s for s in shapes if s != tuple(x_shape)), shapes[-1])
    n = math.prod(other)
    if n == cols:
        cause = (f"it holds {cols} values, one per column of x: an amax over dim=0 gives one per column, and a scale "
                 f"per row is the amax over dim=1, x.abs().amax(dim=1), {rows} values")
    elif n == rows and other[-1] == rows:
        cause = (f"it holds the {rows} scales of the rows as a row: torch lines a tensor's last dimension up with x's "
                 f"last, its {cols} columns, so a scale per row must be a column, shape ({rows}, 1)")
    else:
        cause = f"a scale per tensor is shape (1,), and a scale per row has {rows} values, one per row of x"
    return (f"{what}: quantize combines x ({rows} × {cols}) with a tensor of shape {other} at {where}, and the two do "
            f"not broadcast: {cause}. Divide x by a per-row scale as a column: x / scale.reshape(-1, 1) (or "
            "scale[:, None])" + ("" if per_row else "; per tensor, by the scale itself"))


def _quantized(quantize, x, what: str, **kwargs):
    """``quantize(x.clone(), **kwargs)`` under ``NonSaturatingCasts``: (its result, the watch, None), or (None, None,
    a sentence) where it raised. An open gap (NotImplementedError) goes to the runner, which says so."""
    watch = NonSaturatingCasts()
    try:
        with watch:
            out = quantize(x.clone(), **kwargs)
    except NotImplementedError:
        raise
    except Exception as e:  # noqa: BLE001 - a learner's exception becomes a sentence, never its type or text
        where = _line_in(quantize, e)
        said = watch.failure and _no_broadcast(what, tuple(x.shape), kwargs.get("per_row", False), watch.failure,
                                               where)
        args = ", ".join(["x"] + [f"{k}=" + ("scale" if k == "scale" else repr(v)) for k, v in kwargs.items()])
        from ..grading.causes import describe, visible_names

        cause = describe(e, names=visible_names(e))[0]          # the likely cause, in the course's words
        return None, None, said or (f"{what}: quantize({args}) stopped at {where} before returning x_q and its "
                                    f"scale, on an x of {x.shape[0]} × {x.shape[1]} fp32 values: {cause}")
    if not (isinstance(out, tuple) and len(out) == 2):
        return None, None, f"{what}: quantize must return (x_q, scale), two values; it returned {type(out).__name__}"
    return out, watch, None


def quantizer_problem(quantize) -> str | None:
    """``quantize(x, per_row=False, scale=None) -> (x_q, scale)`` judged on the CPU, its conversions to e4m3 made
    non-saturating (``NonSaturatingCasts``): e4m3 out, scales of the right shape, each tensor's (or row's) amax mapped
    to 448, every value one e4m3 rounding from x, an all-zero row kept zero, and with a given scale too small for x,
    the values past ±448 · scale clamped to ±448 before the conversion (so not NaN). None, or a sentence."""
    g = torch.Generator().manual_seed(34)
    x = torch.randn(64, 512, generator=g) * 10
    x[3, 7] = -900.0             # a row whose largest magnitude is negative
    x[5] = -torch.rand(512, generator=g) * 3 - 0.01     # a row of negative values only
    x[9] = 0.0                   # an all-zero row
    x[11] *= 1e-3                # a row of small values, subnormals once scaled per tensor
    for per_row in (False, True):
        what = "per row" if per_row else "per tensor"
        out, _, said = _quantized(quantize, x, what, per_row=per_row)
        if said:
            return said
        x_q, scale = out
        if not isinstance(x_q, torch.Tensor) or x_q.dtype != FP8 or tuple(x_q.shape) != tuple(x.shape):
            return f"{what}: x_q must be a torch.float8_e4m3fn tensor of x's shape, got {getattr(x_q, 'dtype', x_q)}"
        want = (x.shape[0],) if per_row else (1,)
        if not isinstance(scale, torch.Tensor) or scale.dtype != torch.float32 or tuple(scale.shape) != want:
            return (f"{what}: the scale must be fp32 of shape {want}, got "
                    f"{tuple(scale.shape) if isinstance(scale, torch.Tensor) else scale}")
        nan_rows = torch.isnan(x_q.float()).any(dim=1)
        if nan_rows.any():
            zero_rows = x.abs().amax(dim=1) == 0
            if bool((nan_rows == zero_rows).all()):
                # x / 0 of a zero row is 0 / 0: the scale of an amax of 0 must not be 0.
                return (f"{what}: x_q holds NaN in the all-zero row {int(zero_rows.nonzero()[0])} and nowhere else: "
                        "its amax is 0, so a scale of amax / 448 is 0 and x / scale is 0 / 0. Give a row (or a "
                        "tensor) whose amax is 0 the scale 1, which keeps its zeros")
            return (f"{what}: x_q holds NaN, first in row {int(nan_rows.nonzero()[0])}: a NaN in x / scale (a scale "
                    "of 0, or of NaN) stays NaN in e4m3; e4m3 has no infinity, and a value past 448 becomes 448 or "
                    "NaN depending on the conversion, so clamp to ±448 before it")
        peaks = x_q.float().abs().amax(dim=1) if per_row else x_q.float().abs().amax().reshape(1)
        nonzero = (x.abs().amax(dim=1) if per_row else x.abs().amax().reshape(1)) > 0
        if not bool((peaks[nonzero] == E4M3_MAX).all()):
            i = int((peaks != E4M3_MAX)[nonzero].to(torch.uint8).argmax())
            return (f"{what}: the largest |x_q| is {peaks[nonzero][i].item():g}"
                    + (f" in row {int(nonzero.nonzero()[i])}" if per_row else "") + "; a scale taken from the amax "
                    "(the largest magnitude, |x|, not the largest value) maps it to 448, e4m3's largest")
        if per_row and bool(x_q[9].float().ne(0).any()):
            return "per row: an all-zero row does not stay zero"
        problem = _rounding_problem(what, x, x_q, scale)
        if problem:
            return problem
    # A static scale, four times too small for x's amax: x / scale reaches ±4 · 448, which must reach the conversion
    # clamped to ±448 (the cast here gives NaN past 464, as torch's did before 2.12, whatever this torch does).
    small = (x.abs().amax() / E4M3_MAX / 4).reshape(1)
    out, watch, said = _quantized(quantize, x, "with a given scale", scale=small)
    if said:
        return said
    x_q, _ = out
    if not watch.conversions:
        return ("with a given scale: quantize made x_q without a conversion the check can follow; convert with "
                ".to(torch.float8_e4m3fn), so that the check sees what reaches the conversion")
    past = (x.abs() / small) >= E4M3_MAX
    got = x_q.float()
    if torch.isnan(got).any():
        return (f"with a given scale too small for x (a quarter of its amax / 448), quantize hands the conversion to "
                f"e4m3 values up to ±{watch.largest:.0f}, past its ±448, and gets NaN: e4m3 has no infinity, and "
                f"torch's cast gave NaN past the range before 2.12, on the CPU and on CUDA ({_this_torch()}, so the "
                "check converts as those builds did). Clamp x / scale to ±448 before .to(torch.float8_e4m3fn), so the "
                "answer is ±448 whatever the cast does")
    if not bool((got[past] == E4M3_MAX * x[past].sign()).all()):
        return ("with a given scale too small for x, the values past ±448 · scale must saturate to ±448; got "
                f"{got[past][:4].tolist()} for {x[past][:4].tolist()}")
    return _rounding_problem("with a given scale", x[~past.any(dim=1)], x_q[~past.any(dim=1)], small)


# -- compiling the lesson's kernels without a GPU ------------------------------------------------------

TILE_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "STAGES", "GROUP_M", "LOAD_REGS")
# What the SASS of Triton 3.9.0 calls an fp8 wgmma: QGMMA (HGMMA is the 16-bit one), shape 64 × n × 32, fp32
# accumulator, both operands E4M3.
QGMMA = "QGMMA.64x{n}x32.F32.E4M3.E4M3"


def compile_fp8(mod, cfg: dict, target: str = "sm_90", a_per_row: bool = True, w_per_row: bool = True,
                name: str = "matmul_kernel"):
    """The module's fp8 kernel ``name`` compiled for ``target`` as the launcher calls it with configuration ``cfg``:
    A's and W's descriptors of e4m3 tiles ([BLOCK_M, BLOCK_K] and [BLOCK_N, BLOCK_K], NVMMA-swizzled), C's of bf16
    ([BLOCK_M, BLOCK_N]), the two scale pointers, M, N, K."""
    from triton.experimental.gluon import language as gl

    from ..machine import compile_cached, tensor_descriptor_type

    def desc(dtype, gl_dtype, block):
        return tensor_descriptor_type(dtype, block, gl.NVMMASharedLayout.get_default_for(block, gl_dtype))

    bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    signature = {"a_desc": desc("fp8e4nv", gl.float8e4nv, [bm, bk]), "w_desc": desc("fp8e4nv", gl.float8e4nv, [bn, bk]),
                 "c_desc": desc("bf16", gl.bfloat16, [bm, bn]), "a_scale_ptr": "*fp32", "w_scale_ptr": "*fp32",
                 "M": "i32", "N": "i32", "K": "i32"}
    kernel = getattr(mod, name)
    params = kernel.arg_names if hasattr(kernel, "arg_names") else ()
    constexprs = {k: cfg[k] for k in TILE_KEYS if k in cfg and (not params or k in params)}
    if not params or "acc_layout" in params:
        constexprs.update(mod.kernel_layouts(cfg["num_warps"], bn))
    constexprs.update(A_PER_ROW=a_per_row, W_PER_ROW=w_per_row)
    return compile_cached(kernel, target, signature=signature, constexprs=constexprs,
                          aligned=("a_scale_ptr", "w_scale_ptr", "M", "N", "K"), num_warps=cfg["num_warps"])


# -- why W must be K-major: one fp8 wgmma, compiled both ways ------------------------------------------

def _one_product_kernel():
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import warpgroup_mma

    @gluon.jit
    def one_fp8_product(c_ptr, a_layout: gl.constexpr, b_layout: gl.constexpr, acc_layout: gl.constexpr):
        # One 64 × 64 × 32 product of e4m3 tiles in shared memory (their contents do not matter to the compiler).
        a = gl.allocate_shared_memory(gl.float8e4nv, [64, 32], a_layout)
        b = gl.allocate_shared_memory(gl.float8e4nv, [32, 64], b_layout)
        acc = warpgroup_mma(a, b, gl.zeros([64, 64], gl.float32, acc_layout))
        rows = gl.arange(0, 64, layout=gl.SliceLayout(1, acc_layout))
        cols = gl.arange(0, 64, layout=gl.SliceLayout(0, acc_layout))
        gl.store(c_ptr + rows[:, None] * 64 + cols[None, :], acc)
    return one_fp8_product


def operand_majors() -> dict:
    """One fp8 wgmma with B's [32, 64] tile K-major in shared memory (``transposed=True``: K is the contiguous axis,
    as a permuted N × K tile of W is) and N-major (``transposed=False``: a row of a K × N matrix), compiled for sm_90:
    {which: the QGMMA it compiled to, or the compiler's failure}."""
    from triton.experimental.gluon import language as gl

    from ..machine import CompileFailed, compile_cached

    kernel = _one_product_kernel()
    acc = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 64, 32])
    a_layout = gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=8, rank=2)
    out = {}
    for which, b_layout in (("B K-major", gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=8, rank=2,
                                                                transposed=True)),
                            ("B N-major", gl.NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=8, rank=2))):
        try:
            k = compile_cached(kernel, "sm_90", signature={"c_ptr": "*fp32"},
                               constexprs={"a_layout": a_layout, "b_layout": b_layout, "acc_layout": acc}, num_warps=4)
            out[which] = "compiles: " + ", ".join(f"{n} × {op}" for op, n in k.opcodes().items() if "GMMA" in op)
        except CompileFailed as e:
            first = e.message.splitlines()[0]
            out[which] = f"does not compile: {first[:160]}"
    return out
