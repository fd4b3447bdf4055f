"""The AMD lessons' figure (``headline_figure``): the version over hipBLASLt at the vendor's headline problem, measured
on an AMD GPU, held to a provisional range drawn from the vendor's own figures, which stand beside it as labelled
references, pinned to the revision each is read from, with the MFMA peak of the GPU."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..grading.checks import Expectation, Figure, Reference
from .kernel import HEADLINE
from .launch import require_amd_gpu


# Every vendor figure is pinned to the one revision it is read from: AMD's pages change their figures between
# revisions (VENDOR_REVISIONS says by how much).
VENDOR_SOURCE = ("the vendor's measurement, not ours: AMD's gfx950 Gluon tutorials (ROCm/gfx950-gluon-tutorials, "
                 "kernels/gemm/a16w16/images/gen_performance_chart.py at commit 04322ed8: MI355, fp16 "
                 "4096×4096×8192, rocprofv3, base configuration); the tutorial runs its own ROCm Triton tag, not "
                 "Triton 3.9.0")


# (TFLOPS, MFMA efficiency from the vendor's thread traces) per version, base configuration.
VENDOR = {0: (541, 0.2547), 1: (546, 0.2642), 2: (672, 0.3281), 3: (770, 0.4135), 4: (1123, 0.5771),
          5: (1128, 0.5835), 6: (1055, 0.5640), 7: (1233, 0.6499), 8: (1257, 0.6903), 9: (1290, 0.6919)}


# The vendor's configurations beyond the base kernel (same chart), each needing tools of theirs that Triton 3.9.0
# does not ship: (configuration, TFLOPS, MFMA efficiency).
VENDOR_VARIANTS = {
    5: (("llir", 1228, 0.7991),),
    6: (("llir", 1167, 0.8658),),
    7: (("llir", 1329, 0.8491), ("llir+force-agpr", 1395, 0.9729), ("llir+force-agpr+amdgcnas", 1384, 0.9828)),
    8: (("llir", 1360, 0.8865), ("llir+force-agpr", 1408, 0.9779), ("llir+force-agpr+amdgcnas", 1391, 0.9852)),
    9: (("llir", 1380, 0.8844), ("llir+force-agpr", 1423, 0.9753), ("llir+force-agpr+amdgcnas", 1421, 0.9866)),
}


VENDOR_TOOLS = {
    "llir": ("their LLVM IR scheduler, an out-of-tree LLVM pass plugin built from their repository and loaded "
             "through LLVM_PASS_PLUGIN_PATH: Triton 3.9.0 can load a pass plugin, but ships none and builds none"),
    "force-agpr": ("their Triton's TRITON_FORCE_MFMA_AGPR switch (LLVM told to keep every MFMA accumulator in "
                   "AGPRs: amdgpu-agpr-alloc=256 with amdgpu-mfma-vgpr-form=0); Triton 3.9.0 has no such switch, "
                   "its own way is cd_regclass='a' on each mfma (lessons 27-29 use it)"),
    "amdgcnas": ("their assembly post-processor (TRITON_ENABLE_AMDGCN_AS, on their gfx950-tutorial branch of "
                 "Triton), which Triton 3.9.0 does not have"),
}


def vendor_variant_source(config: str) -> str:
    """What a vendor configuration needs, in words: ``"llir+force-agpr"`` names both tools."""
    return "; ".join(f"{tool}: {VENDOR_TOOLS[tool]}" for tool in config.split("+"))


# The vendor's best fp16 kernel at this shape, as their published blog post gives it.
VENDOR_BEST = 1489


VENDOR_BEST_SOURCE = ("the vendor's best fp16 kernel at 4096×4096×8192, 1489 TFLOPS and 98.75% MFMA efficiency on an "
                      "MI355 (their v9 with their scheduler plugin and assembly pass), in their blog 'From Naive to "
                      "Near-Peak: Building High-Performance GEMM Kernels with Gluon' as published (ROCm/rocm-blogs, "
                      "blogs/software-tools-optimization/gluon-gemm-tutorial/README.md at commit 39dbe25a, front "
                      "matter dated 28 Apr 2026; an earlier revision of it, 745a2984, said 1619 TFLOPS and 98%)")


# How much AMD's own figures moved between the revisions the course read: the provisional ranges stand on them.
VENDOR_REVISIONS = ("AMD's figures move between revisions of their pages: the blog's best fp16 kernel was 1619 TFLOPS "
                    "in one revision (ROCm/rocm-blogs 745a2984) and is 1489 in the published one (39dbe25a), 8% "
                    "less; the published blog's v0 is 520 TFLOPS where their chart at 04322ed8 has 541, 4% more; and their v6 "
                    "README gives v6 with their scheduler plugin as 1260 TFLOPS (88% MFMA busy, commit 26a1b82d, "
                    "which says the numbers come from an earlier Triton snapshot), as 1177 (87.7%, in two other "
                    "stored revisions) and as 346 (19%, 99 VGPRs spilled, commit 0bdb3398), where the chart has 1167. "
                    "A provisional range is the chart's base figure for the version over the blog's best, from half "
                    "to one and a half times that ratio: a move like the blog's 8% shifts it by 8%, well inside it")


@dataclass(frozen=True)
class Peak:
    """The dense fp16/bf16 MFMA peak of a GPU: clock × matrix cores × FMAs per core per clock × 2."""
    gpu: str
    clock_mhz: int
    matrix_cores: int
    fma_per_clock: int
    source: str

    @property
    def tflops(self) -> float:
        return self.clock_mhz * 1e6 * self.matrix_cores * self.fma_per_clock * 2 / 1e12


PEAKS = {
    "gfx950": Peak("MI355X", 2400, 1024, 512,
                   "AMD Instinct MI355X specifications (peak engine clock 2400 MHz, 256 CUs × 4 matrix cores; AMD "
                   "publishes 2.5 PFLOPS dense fp16/bf16), the arithmetic as in S. Bekman's Machine Learning "
                   "Engineering book, chapter 'Accelerators' (512 FMA per matrix core per clock on CDNA4)"),
    "gfx942": Peak("MI300X", 2100, 1216, 256,
                   "AMD Instinct MI300X specifications (2100 MHz, 304 CUs × 4 matrix cores; 1307.4 TFLOPS dense "
                   "fp16/bf16), the same arithmetic (256 FMA per matrix core per clock on CDNA3)"),
}


def vendor_references(version: int) -> tuple[Reference, ...]:
    tflops, efficiency = VENDOR[version]
    peak = PEAKS["gfx950"]
    return (Reference(tflops, "TFLOPS", f"v{version}, {VENDOR_SOURCE}"),
            Reference(round(tflops / peak.tflops, 4), f"of the MI355X MFMA peak ({peak.tflops:.1f} TFLOPS)",
                      f"the vendor's v{version} TFLOPS over clock × matrix cores × FMAs ({peak.source})"),
            Reference(efficiency, "MFMA efficiency", f"v{version}: busy share of the MFMA pipe in the vendor's "
                      "thread traces (their trace tool, as their chart at commit 04322ed8 gives it; not a share of "
                      "the peak)"),
            *(Reference(tf, "TFLOPS", f"v{version} with their configuration '{config}', "
                        f"{VENDOR_SOURCE.replace(', base configuration', '')}; it needs "
                        f"{vendor_variant_source(config)}")
              for config, tf, _ in VENDOR_VARIANTS.get(version, ())),
            Reference(VENDOR_BEST, "TFLOPS", VENDOR_BEST_SOURCE))


def provisional_range(version: int, below: float = 0.5, above: float = 1.5) -> Expectation:
    """A range for a live run, as a ratio to hipBLASLt (torch.matmul on ROCm) timed in the same run: provisional,
    drawn from the vendor's TFLOPS for this version over the vendor's best kernel, a stand-in for hipBLASLt at this
    shape until a run on an MI350/MI355 records the real ratio."""
    tflops, _ = VENDOR[version]
    centre = tflops / VENDOR_BEST
    why = (f"PROVISIONAL, no AMD GPU has run this lesson: the vendor's v{version} ({tflops} TFLOPS, their chart at "
           f"04322ed8) over their best kernel ({VENDOR_BEST}, their published blog at 39dbe25a), {centre:.2f}, "
           f"standing in for the ratio to hipBLASLt; the range runs from {below:g}× to {above:g}× that. "
           f"{VENDOR_REVISIONS}. Replace it with one drawn from the first recording on an MI350/MI355")
    return Expectation(round(centre * below, 4), round(centre * above, 4), "hipBLASLt", why,
                       vendor_references(version))


def amd_gemm_measure(M: int, N: int, K: int, dtype: str, label: str) -> Callable:
    """A Figure's measure: the lesson's matmul over torch.matmul (hipBLASLt on ROCm) on the same tensors (A
    row-major, B K-contiguous), both timed in this process, C checked first."""
    def measure(mod):
        import torch

        from ..measure import Measurement
        from ..measure.device import free_cache
        from ..measure.gemm import compare_gemm, fp32_reductions, gemm_inputs, reference, tolerance
        from ..measure.tensors import poison
        from ..measure.timing import bench_ms, tflops

        require_amd_gpu(mod.TARGETS)
        torch_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
        a, b = gemm_inputs(M, N, K, torch_dtype, b_layout="col")
        c = poison(torch.empty(M, N, dtype=torch_dtype, device=a.device))
        mod.matmul(a, b, c)
        torch.cuda.synchronize()
        problem = compare_gemm(c, reference(a, b), tolerance(K, torch_dtype))
        if problem:
            raise AssertionError(f"{label} is wrong on the {M}×{N}×{K} {dtype} benchmark input: {problem}.")
        ours = bench_ms(lambda: mod.matmul(a, b, c))
        with fp32_reductions():
            library = bench_ms(lambda: torch.matmul(a, b, out=c))
        del a, b, c
        free_cache()
        rate, lib = tflops(M, N, K, ours), tflops(M, N, K, library)
        return Measurement(rate / lib, f"{rate:.0f} TFLOPS vs hipBLASLt {lib:.0f} TFLOPS",
                           {"tflops": rate, "library_tflops": lib, "ms": ours, "library_ms": library,
                            "M": M, "N": N, "K": K, "dtype": dtype})
    return measure


def headline_figure(version: int, headline: bool = True) -> Figure:
    M, N, K = HEADLINE
    return Figure("fp16_4096x4096x8192", f"v{version} fp16 {M}×{N}×{K}",
                  amd_gemm_measure(M, N, K, "fp16", f"v{version} fp16"), provisional_range(version),
                  headline=headline)
