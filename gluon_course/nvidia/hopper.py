"""Host-side helpers of the Hopper GEMM lessons from 15 on: the TMA descriptor with its 16-byte rule (lesson 14 writes
it as its exercise), the tile rules of wgmma, and the refusal of a GPU that has no wgmma. Each says what to do."""
from __future__ import annotations

import torch

from ..validate import require_power_of_two

TMA_RULE = ("TMA needs the start of every row 16-byte aligned: the base address and each row stride of A and B "
            "must be multiples of 16 bytes")


# The Gluon dtype of each torch dtype the course's TMA descriptors take (gl.float8e4nv is e4m3 with NaN and no
# infinity, torch's float8_e4m3fn: triton/language/core.py names it "fp8e4nv").
GL_DTYPE_NAMES = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float8_e4m3fn: "float8e4nv"}


def tma_descriptor(name: str, t: torch.Tensor, block_shape: list, cga=None):
    """A TMA descriptor for the 2D bf16/fp16 (or e4m3) tensor ``t`` in tiles of ``block_shape`` (NVMMA-swizzled in
    shared memory), or a ValueError naming TMA's rule and the way out. Lesson 14's ``tma_descriptor``, kept here.
    ``cga`` (lesson 33): the tile's ``cga_layout`` in a cluster, which CTA holds which part of it (``[[1, 0]]``: two
    CTAs stacked along the first dimension; ``[[0, 0]]``: both hold all of it)."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    gl_dtype = getattr(gl, GL_DTYPE_NAMES.get(t.dtype, "float16"))
    if t.dim() == 2 and t.shape[1] > 1 and t.stride(1) != 1:
        # A view whose rows are not contiguous: padding cannot help, the view is the wrong one (or needs a copy).
        rows, cols = t.shape
        if t.stride(0) == 1:
            raise ValueError(f"{name} ({rows}×{cols}, strides {tuple(t.stride())}) is not row-major: it is the "
                             f"transpose of a row-major {cols}×{rows} matrix, as w.t() gives, and TMA reads a tile "
                             f"row by row, each row contiguous. Check and describe its row-major view instead, "
                             f"{name.split(' ')[0]}.t() ({cols}×{rows}, for a kernel that reads B as N × K), or "
                             f"pass a row-major copy ({name.split(' ')[0]}.contiguous())")
        raise ValueError(f"{name} ({rows}×{cols}, strides {tuple(t.stride())}): consecutive elements of a row are "
                         f"{t.stride(1)} apart, and TMA reads each row as contiguous memory: pass "
                         f"{name.split(' ')[0]}.contiguous()")
    row_bytes = t.stride(0) * t.element_size()
    if row_bytes % 16 or t.data_ptr() % 16:
        found = (f"its rows are {row_bytes} bytes apart" if row_bytes % 16 else
                 f"it starts {t.data_ptr() % 16} bytes past a 16-byte boundary")
        if t.element_size() == 1:    # fp8 (lesson 34): one byte an element, no cp.async kernel of the course takes it
            way_out = "Pad K to a multiple of 16 (zero columns appended to A and to W leave A·Wᵀ unchanged)"
        else:
            way_out = (f"Pad K and N to multiples of {16 // t.element_size()} (zero columns appended to A and zero "
                       "rows to B leave A·B unchanged; zero columns appended to B give extra columns of C to slice "
                       "off), or use lesson 13's cp.async kernel, which takes any shape")
        raise ValueError(f"{name} ({t.shape[0]}×{t.shape[1]}): {found}; {TMA_RULE}. {way_out}")
    layout = gl.NVMMASharedLayout.get_default_for(block_shape, gl_dtype,
                                                  cga_layout=[list(v) for v in cga] if cga else None)
    try:
        return TensorDescriptor.from_tensor(t, block_shape, layout)
    except AssertionError as e:      # TensorDescriptor checks with assert: turn it into a sentence
        raise ValueError(f"{name} cannot be described for TMA: {e}; {TMA_RULE}") from None


def require_wgmma_tile(BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, num_warps: int, STAGES: int) -> None:
    """Refuse a tile wgmma or TMA cannot take, or a ring too short to overlap anything."""
    for name, value in (("BLOCK_M", BLOCK_M), ("BLOCK_N", BLOCK_N), ("BLOCK_K", BLOCK_K), ("num_warps", num_warps)):
        require_power_of_two(name, value)
    if num_warps % 4 or BLOCK_M < 16 * num_warps:
        raise ValueError(f"num_warps={num_warps} with BLOCK_M={BLOCK_M}: wgmma is issued by warpgroups of 4 warps, "
                         "each warp owning 16 rows of every 64: num_warps a multiple of 4 and "
                         "BLOCK_M ≥ 16 × num_warps")
    if not (8 <= BLOCK_N <= 256) or BLOCK_K < 16:
        raise ValueError(f"BLOCK_N={BLOCK_N}, BLOCK_K={BLOCK_K}: one wgmma covers 8 to 256 columns and 16 of K for "
                         "bf16/fp16, so 8 ≤ BLOCK_N ≤ 256 and BLOCK_K ≥ 16")
    if max(BLOCK_M, BLOCK_K) > 256:
        raise ValueError(f"a TMA box has at most 256 elements along each side; {BLOCK_M} × {BLOCK_N} × {BLOCK_K} "
                         "asks for more")
    if not (isinstance(STAGES, int) and STAGES >= 2):
        raise ValueError(f"STAGES={STAGES!r}: the ring needs at least 2 buffers, one read by the tensor cores while "
                         "TMA fills the other")


def cluster_split_problem(c_cga, a_cga, b_cga, b_kn: bool = True, stacked_along: str | None = None) -> str | None:
    """None when the ``cga_layout`` bases of a GEMM tile in a cluster give every CTA what its own part of C needs;
    else one sentence naming the operand, the axis it is split along, the axis that must be split, and why.

    Each CTA multiplies its own part of A by its own part of B into its own part of C (wgmma reads only the CTA's own
    shared memory). For each bit of a CTA's rank, C's basis ``[m, n]`` says how that bit moves a CTA's part of C
    (rows, columns); A's basis must then be ``[m, 0]`` (the same rows of A, all of K: C's part sums over all of it)
    and B's ``[0, n]`` (``[n, 0]`` for B as N × K): all of K, the same columns. A basis of zeros is a part every CTA
    of that bit holds (B's tile when the CTAs are stacked along M: the multicast's destination). ``stacked_along``
    ("M" or "N"): the axis along which the kernel stacks its cluster's CTAs, which C must be split along.

    Triton 3.9.0 does not compile lesson 33's cluster kernel (B K × N) with B's tile split along K or along N, nor with
    A's and C's split along their columns: it fails in its ConvertTritonGPUToLLVM pass with no message of its own.
    This rule says why, before the compiler runs."""
    k_axis, n_axis = (0, 1) if b_kn else (1, 0)
    for name, bases in (("C", c_cga), ("A", a_cga), ("B", b_cga)):
        if len(bases) != len(c_cga):
            return (f"{name}'s cga_layout has {len(bases)} bases and C's {len(c_cga)}: every layout of the cluster's "
                    "tile needs one basis per bit of a CTA's rank")
    for bit, (c, a, b) in enumerate(zip(c_cga, a_cga, b_cga)):
        m, n = int(c[0]), int(c[1])
        def basis(x) -> str:
            return f"(its basis for bit {bit} of a CTA's rank is {[int(v) for v in x]})"
        if not m and not n:
            return (f"C's tile is held whole by CTAs that differ in bit {bit} of their rank {basis(c)}: they "
                    "would compute the same part of C twice. Split C's tile between the CTAs along the axis the "
                    f"cluster stacks them on: its rows ([1, 0], [2, 0], ...) when they are stacked along M")
        if stacked_along == "M" and n or stacked_along == "N" and m:
            split, keep = ("rows", "columns") if stacked_along == "M" else ("columns", "rows")
            return (f"C's tile is split between the CTAs along its {keep} {basis(c)}, but this kernel stacks "
                    f"its cluster's CTAs along {stacked_along}, each CTA computing its own {split} of the cluster's "
                    "tile: " + ("A's and C's rows must be split ([1, 0] for 2 CTAs) and B's tile held whole by every "
                                "CTA ([0, 0], the multicast's destination)" if stacked_along == "M" else
                                "B's and C's columns must be split and A's tile held whole by every CTA ([0, 0])"))
        if int(a[1]):
            return (f"A's tile is split between the CTAs along K {basis(a)}: a CTA's part of C sums over all "
                    f"of K, so each CTA needs whole rows of A. Split A's rows as C's are: [{m}, 0]" +
                    (" (C's rows are not split by this bit: A's tile is then held whole by those CTAs)" if not m
                     else ""))
        if int(a[0]) != m:
            return (f"A's rows are split between the CTAs otherwise than C's {basis(a)[:-1]}, C's {[m, n]}): a CTA's "
                    f"rows of C are made from the same rows of A, so A's basis must be [{m}, 0]")
        if int(b[k_axis]):
            held = ("held whole by every CTA: [0, 0], the multicast's destination" if not n else
                    f"split along N as C's columns are: {[0, n] if b_kn else [n, 0]}")
            return (f"B's tile ({'K × N' if b_kn else 'N × K'}) is split between the CTAs along K {basis(b)}: "
                    "each CTA multiplies its rows of A by all of K of B's tile (its part of C sums over all of it), "
                    f"so B must be {held}")
        if int(b[n_axis]) != n:
            held = ("held whole by every CTA ([0, 0]): each CTA multiplies its own rows of A by all of B's tile, "
                    "which the multicast writes into every CTA" if not n else
                    f"split along N as C's columns are ({[0, n] if b_kn else [n, 0]})")
            return (f"B's tile ({'K × N' if b_kn else 'N × K'}) is split between the CTAs along N {basis(b)} "
                    f"where C's columns are {'not split' if not n else f'split as {list(c)}'}: B must be {held}")
    return None
def not_hopper_sentence(gpu_class: str | None, gpu_name: str) -> str:
    """Why a launcher that needs Hopper refuses the GPU here, and what this GPU runs instead: "wgmma is Hopper's
    instruction ...; this GPU (NVIDIA GeForce RTX 3090) is an sm_86 (Ampere: RTX 30, A10, A40): lessons 01–05 and
    10–13 run on it". ``gpu_class`` as ``measure.device.gpu_class`` names it."""
    from ..grading.classes import class_named, what_runs_on

    # TMA (cp.async.bulk.tensor) came with sm_90, as wgmma did: a GPU before Hopper has neither.
    before_hopper = gpu_class is not None and gpu_class.startswith("sm_") and int(gpu_class[3:]) < 90
    need = ("wgmma and TMA need Hopper (compute capability 9.x, e.g. H100, H200): GPUs before it have neither"
            if before_hopper else "wgmma is Hopper's instruction (compute capability 9.x, e.g. H100, H200); "
            "Blackwell's tensor cores take tcgen05 or mma.sync instead")
    article = "an" if (gpu_class or "").startswith("sm_") else "a"      # "an sm_86", "a gfx942"
    return f"{need}. This GPU ({gpu_name}) is {article} {class_named(gpu_class)}: {what_runs_on(gpu_class)}"


def require_hopper(t: torch.Tensor) -> None:
    """wgmma exists on compute capability 9.x only: Blackwell's tensor cores take tcgen05 instead, and GPUs before
    Hopper have neither wgmma nor TMA. The refusal names the lessons that run on the GPU here."""
    if torch.version.hip is not None or torch.cuda.get_device_capability(t.device)[0] != 9:
        from ..measure.device import gpu_class

        raise RuntimeError(not_hopper_sentence(gpu_class(t.device), torch.cuda.get_device_name(t.device)))


_RESIDENT: dict = {}
_RESIDENT_BY_LAUNCH: dict = {}      # (kernel, cluster, device, what the compile depends on) -> the answer


def _launch_key(kernel, args, kwargs, cluster: int, device):
    """What the compiled kernel's shared memory and warps depend on: the constexprs and options (``kwargs``) and each
    descriptor's block and dtype (the integers' values only change Triton's specialization, not the resources).
    None when something in them cannot be a dictionary key: then the answer is not kept by launch."""
    described = tuple((tuple(getattr(a, "block_shape", ())), str(getattr(getattr(a, "base", None), "dtype", None)))
                      for a in args if hasattr(a, "block_shape"))
    key = (id(kernel), cluster, str(device), described, tuple(sorted(kwargs.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def resident_clusters(kernel, args, kwargs, cluster: int, device) -> int:
    """How many clusters of ``cluster`` CTAs of this compiled kernel the GPU holds at once (the CUDA driver's
    cuOccupancyMaxActiveClusters, as Triton's NVIDIA driver exposes it): a persistent kernel launched with more waits
    for a second wave. A cluster's CTAs must share a GPC, so this can be fewer than SMs / cluster.

    The answer is kept by launch (``_launch_key``): asking again binds the kernel's arguments (``kernel.warmup``),
    which costs a launcher call's worth of host time, so only the first call of a configuration pays it."""
    import triton

    sms = torch.cuda.get_device_properties(device).multi_processor_count
    if cluster == 1:
        return sms
    by_launch = _launch_key(kernel, args, kwargs, cluster, device)
    if by_launch is not None and by_launch in _RESIDENT_BY_LAUNCH:
        return _RESIDENT_BY_LAUNCH[by_launch]
    try:
        compiled = kernel.warmup(*args, grid=(1,), **kwargs)
        key = (id(compiled), cluster, device)
        if key not in _RESIDENT:
            compiled._init_handles()
            utils = triton.runtime.driver.active.utils
            _RESIDENT[key] = int(utils.cuOccupancyMaxActiveClusters(compiled.function, compiled.metadata.shared,
                                                                    cluster))
    except Exception as e:  # noqa: BLE001 - the query is an optimisation: say so, launch one cluster per SM pair
        import warnings

        warnings.warn(f"could not ask the driver how many clusters fit ({type(e).__name__}: {e}); launching "
                      f"{sms // cluster}, which may leave some for a second wave")
        return max(1, sms // cluster)
    found = max(1, min(_RESIDENT[key], sms // cluster))
    if by_launch is not None:
        _RESIDENT_BY_LAUNCH[by_launch] = found
    return found
