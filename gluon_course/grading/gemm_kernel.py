"""One description of a GEMM lesson's kernel, shared by everything that compiles or runs it without a GPU: the
machine-code checks (at the course's configuration, where the counts are exact), the check that the learner's own
CONFIG fits the target, and the host model (``gluon_course.model``), which runs the kernel's own code on small
matrices.

A lesson's checks declare it once:

    KERNEL = GemmKernel("tma", constexprs=lambda mod, cfg, dtype: {**mod.kernel_layouts(cfg["num_warps"], ...),
                                                                   "STAGES": cfg["STAGES"]},
                        fixed=TILE)

``constexprs`` mirrors what the lesson's launcher passes besides the tile sizes (layouts, STAGES, ...), from a
configuration like its CONFIG; ``fixed`` is the configuration the machine-code counts are asserted at.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..machine import compile_cached, tensor_descriptor_type
from ..machine.occupancy import LIMITS, occupancy_of
from .checks import NotChecked

TILE_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K")
# A launch turns integer arguments equal to 1 into constants: the unit strides of row-major A, B and C.
POINTER_UNIT_STRIDES = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}
POINTER_RUNTIME = ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")
TMA_RUNTIME = ("M", "N", "K", "stride_cm")
# The host model's problems: tails of M, N and K past every tile edge, several tiles of C, and more K steps than a
# ring has slots (so that every slot is refilled while the loop runs); K and N multiples of 8 (TMA's 16-byte rows of
# bf16), and one program-sized problem. Pointer kernels, which take any shape, also get K and N that are not.
MODEL_SHAPES = ((300, 264, 520), (129, 136, 72), (1, 8, 8))
POINTER_MODEL_SHAPES = MODEL_SHAPES + ((65, 33, 37),)


def _grid_tiles(M: int, N: int, cfg: dict, sms: int) -> int:
    return -(-M // cfg["BLOCK_M"]) * -(-N // cfg["BLOCK_N"])


@dataclass(frozen=True)
class GemmKernel:
    kind: str            # "pointer": a_ptr, b_ptr, c_ptr, sizes, strides; "tma": A and B by descriptors, c_ptr;
                         # "tma_store": A, B and C by descriptors (C stored by TMA)
    constexprs: Callable[[object, dict, str], dict]
    fixed: dict                                   # the configuration the exact counts are asserted at
    grid: Callable[[int, int, dict, int], int] = _grid_tiles   # programs for (M, N, config, SMs)
    name: str = "matmul_kernel"
    ignore: tuple = ("num_warps",)                # CONFIG keys that are launch options, not kernel arguments
    extra_tile_keys: tuple = field(default=())    # CONFIG keys passed to the kernel by name (STAGES, GROUP_M, ...)
    model_shapes: tuple | None = None             # the host model's problems (default: by kind, above)

    def kernel(self, mod):
        return getattr(mod, self.name)

    def config(self, mod=None, config: dict | None = None) -> dict:
        """``config`` (or the fixed configuration) with num_warps; ``mod`` supplies nothing here: the fixed
        configuration is the course's, so that a learner's CONFIG cannot move the asserted counts."""
        return dict(self.fixed if config is None else config)

    def _all_constexprs(self, mod, cfg: dict, dtype: str) -> dict:
        named = {k: cfg[k] for k in TILE_KEYS + self.extra_tile_keys if k in cfg}
        return {**named, **self.constexprs(mod, cfg, dtype)}

    # -- compiling ---------------------------------------------------------------------------------
    def compile(self, mod, target: str = "sm_90", dtype: str = "bf16", config: dict | None = None):
        """The kernel compiled for ``target`` as a launch of an 8192³ problem with this configuration sees it."""
        cfg = self.config(mod, config)
        constexprs = self._all_constexprs(mod, cfg, dtype)
        if self.kind == "pointer":
            signature = {"a_ptr": f"*{dtype}", "b_ptr": f"*{dtype}", "c_ptr": f"*{dtype}",
                         **{n: "i32" for n in POINTER_RUNTIME}}
            constexprs.update(POINTER_UNIT_STRIDES)
            aligned = ("a_ptr", "b_ptr", "c_ptr") + POINTER_RUNTIME
        elif self.kind in ("tma", "tma_store"):
            from triton.experimental.gluon import language as gl

            gl_dtype = {"bf16": gl.bfloat16, "fp16": gl.float16}[dtype]

            def desc(block):
                return tensor_descriptor_type(dtype, block, gl.NVMMASharedLayout.get_default_for(block, gl_dtype))

            # B K × N (tiles BLOCK_K × BLOCK_N), or N × K (tiles BLOCK_N × BLOCK_K) where the kernel takes B_KN false.
            b_kn = constexprs.get("B_KN", True)
            b_block = [cfg["BLOCK_K"], cfg["BLOCK_N"]] if b_kn else [cfg["BLOCK_N"], cfg["BLOCK_K"]]
            signature = {"a_desc": desc([cfg["BLOCK_M"], cfg["BLOCK_K"]]), "b_desc": desc(b_block)}
            if self.kind == "tma":
                signature.update({"c_ptr": f"*{dtype}", **{n: "i32" for n in TMA_RUNTIME}})
                constexprs["stride_cn"] = 1
                aligned = ("c_ptr",) + TMA_RUNTIME
            else:
                signature.update({"c_desc": desc([cfg["BLOCK_M"], cfg["BLOCK_N"]]), "M": "i32", "N": "i32", "K": "i32"})
                aligned = ("M", "N", "K")
        else:
            raise ValueError(f"kind is 'pointer', 'tma' or 'tma_store', not {self.kind!r}")
        return compile_cached(self.kernel(mod), target, signature=signature, constexprs=constexprs, aligned=aligned,
                              num_warps=cfg["num_warps"])

    def config_fits(self, targets, attr: str = "CONFIG") -> Callable:
        """A check's ``run``: the module's own CONFIG (or another configuration it defines, ``attr``), compiled for
        each target, fits one SM (CU) with no spills."""
        def run(mod):
            cfg = dict(getattr(mod, attr))
            shown = ", ".join(f"{k}={v}" for k, v in cfg.items())
            for target in targets:
                k = self.compile(mod, target, "bf16", cfg)
                problem = fits(k, cfg.get("num_warps", 4), cfg)
                if problem:
                    return f"{attr} ({shown}) on {target}: {problem}"
            return None
        return run

    # -- the host model ----------------------------------------------------------------------------
    def model_check(self, mod, shapes=None, config: dict | None = None, dtype: str = "bf16",
                    sms: int = 1, target: str = "sm_90", rule=None) -> "str | NotChecked | None":
        """Run the module's kernel in the host model on ``shapes`` (with ``sms`` SMs' worth of persistent programs).
        None when C is exact and the protocol holds; a sentence otherwise; NotChecked(why) when the model does not
        know an operation the kernel uses: nothing is concluded then, and the runner says so. ``rule(programs)``
        reads the programs' traces besides (``model.gemm.store_overlaps_next_tile``, say)."""
        from ..machine.compile import CompileFailed
        from ..model import ModelUnsupported
        from ..model import gemm as model_gemm

        cfg = self.config(mod, config)
        try:
            self.compile(mod, target, dtype, cfg)
        except CompileFailed:
            return f"not run: the kernel does not compile for {target} (see above); the model runs compiling kernels"
        constexprs = self._all_constexprs(mod, cfg, dtype)
        grid = (lambda M, N: self.grid(M, N, cfg, sms))
        shapes = shapes or self.model_shapes or (POINTER_MODEL_SHAPES if self.kind == "pointer" else MODEL_SHAPES)
        if self.kind == "pointer":
            launch = model_gemm.pointer_launch(self.kernel(mod), {}, grid, constexprs, num_warps=cfg["num_warps"])
        else:
            b_layout = "row" if constexprs.get("B_KN", True) else "col"
            launch = model_gemm.tma_launch(self.kernel(mod), {k: cfg[k] for k in TILE_KEYS}, grid, constexprs,
                                           dtype=dtype, num_warps=cfg["num_warps"], b_layout=b_layout,
                                           c_descriptor=self.kind == "tma_store")
        try:
            return model_gemm.check(launch, shapes, dtype, b_layout=b_layout if self.kind != "pointer" else "row",
                                    tile=(cfg["BLOCK_M"], cfg["BLOCK_N"]), rule=rule)
        except ModelUnsupported as e:
            return NotChecked(f"the host model does not model {e}, so it could not run this kernel's protocol; the GPU "
                              "checks (correctness, hang protection, compute-sanitizer) still judge it there")


def fits(k, num_warps: int, cfg: dict | None = None) -> str | None:
    """None when kernel ``k`` launches on its target with ``num_warps`` warps per program and spills nothing, else a
    sentence that says which resource ran out and what to shrink."""
    cfg = cfg or {}
    limits = LIMITS[k.target]
    # A warp-specialized kernel launches more warps than num_warps (its workers, padded to whole warpgroups): the
    # compile's metadata has the real count.
    occupancy = occupancy_of(k, int(getattr(k.metadata, "num_warps", None) or num_warps))
    knobs = [name for name in ("STAGES", "BLOCK_K", "BLOCK_N", "BLOCK_M") if name in cfg]
    if occupancy.blocks == 0:
        if k.shared_bytes > getattr(limits, "shared_per_block_max", getattr(limits, "lds_per_workgroup_max", 0)):
            kib = k.shared_bytes / 1024
            return (f"{k.shared_bytes} bytes of {limits.shared} per program ({kib:.0f} KiB) is more than one program "
                    f"may use on {k.target}; a GPU refuses the launch (OutOfResources): shrink "
                    f"{' or '.join(knobs) or 'the tile'}")
        return f"it cannot launch on {k.target}: {occupancy.limited_by}; shrink the tile or change num_warps"
    if k.spills and not k.is_nvidia:
        return (f"{k.spills} bytes per thread spill to local memory (the accumulator and operands need more than "
                f"{limits.vgprs_per_simd} registers): give the tile more warps or make it smaller")
    if k.spills:
        return spill_sentence(k) + ". Give the tile more warps (num_warps) or make it smaller"
    return None


def spill_sentence(k) -> str:
    """What ptxas says an NVIDIA kernel ``k`` spilled (``k.spills`` not 0), in a sentence."""
    r = k.resources
    serialized = any("wgmma.mma_async instructions are serialized" in note for note in k.ptxas_notes())
    return (f"ptxas spills registers to local memory: {r['spill_bytes']} bytes of spill stores and "
            f"{r['spill_load_bytes']} of spill loads, into a {r['stack_bytes']}-byte stack frame per thread, at "
            f"{k.registers} registers a thread" + (" (the most a thread may have)" if k.registers >= 255 else "")
            + ("; it also serializes the wgmma instructions for want of registers" if serialized else ""))
