"""What changes on gfx942 (CDNA3: the MI300X, the AMD GPU most learners meet) for each AMD lesson, from what Triton
3.9.0 does with the lesson's solution here: ``port(number)`` compiles it for gfx942 (a lesson that declares gfx942) or
says why it cannot be (one that does not), and what a learner on an MI300X can grade. ``website.support`` writes the
table into the support matrix; the notebooks print a lesson's line.

What differs, each fact with where it comes from:

* the MFMA: ``v_mfma_f32_16x16x16_{f16,bf16}``, K = 16 per instruction where gfx950's has 32 (``layouts.MFMA``), 16
  clocks each (``time_model.GFX942``): twice the MFMAs and twice the MFMA clocks per K step of 64;
* direct-to-LDS copies of at most 4 bytes per lane (``layouts.DIRECT_COPY_BYTES``: Triton 3.9.0 refuses 16 for
  gfx942), so 64 ``buffer_load_dword … lds`` per K step and wave where gfx950 has 16 ``buffer_load_dwordx4 … lds``;
* 64 KiB of LDS per workgroup (``machine.occupancy.GFX942``) where gfx950 has 160;
* 32 LDS banks of 4 bytes (``memory.lds.GFX942``) where gfx950 has 64;
* no transposed LDS reads (``ds_read_b64_tr_b16`` is a gfx950 instruction): the course's B is K-contiguous, so no
  lesson needs them on either GPU;
* ``cdna4.compute_efficient_padded_shared_layout`` "only supports MFMA v4 (CDNA4)" (its own assertion): the padded
  layouts of lessons 23 on have no gfx942 form from Triton's API, and their two stages would not fit in 64 KiB anyway.
"""
from __future__ import annotations

from dataclasses import dataclass, field

TARGET = "gfx942"


@dataclass(frozen=True)
class Port:
    """One lesson on gfx942: whether it declares the target (``declared``: then its gfx942 checks compile it here), what
    changes against gfx950, and what a learner on an MI300X can grade (``graded``)."""
    number: str
    declared: bool
    changes: tuple[str, ...]
    graded: str
    facts: dict = field(default_factory=dict)

    def line(self) -> str:
        head = "declared and compiled here" if self.declared else "not declared"
        return f"lesson {self.number} on gfx942 ({head}): " + "; ".join(self.changes) + f". On an MI300X: {self.graded}."


def _loop(k) -> str:
    from .kernel import loop_memory

    return ", ".join(f"{n} {name}" for name, n in loop_memory(k).items() if name != "branches")


def _error(fn) -> str | None:
    from ..machine.compile import CompileFailed

    try:
        fn()
    except (CompileFailed, AssertionError, ValueError) as e:
        return " ".join(str(getattr(e, "message", e)).split())
    return None


def port(number: str) -> Port:
    """Lesson ``number`` (20-29) on gfx942, from what the compiler does with its solution here."""
    from ..course import load_checks, load_solution
    from ..machine.occupancy import GFX942
    from . import amdgcn, time_model
    from .kernel import NUM_WARPS, compiled

    checks, mod = load_checks(number), load_solution(number)
    compile_of = getattr(checks, "compiled", compiled)
    lds_max = GFX942.lds_per_workgroup_max
    if TARGET in checks.CHECKS.targets:
        k, ref = compile_of(mod, TARGET, "fp16"), compile_of(mod, "gfx950", "fp16")
        b = amdgcn.budget(k, NUM_WARPS)
        mfma = {t: time_model.budget(amdgcn.main_loop(x).instructions, time_model.MACHINES[t])
                for t, x in ((TARGET, k), ("gfx950", ref))}
        changes = [f"the K loop holds {_loop(k)} where gfx950's holds {_loop(ref)}",
                   f"{mfma[TARGET]['MFMA']:.0f} clocks of MFMA per K step ({mfma[TARGET]['mfmas']} × 16) where gfx950 "
                   f"needs {mfma['gfx950']['MFMA']:.0f} ({mfma['gfx950']['mfmas']} × 16)",
                   f"{b.lds_bytes} bytes of LDS of the {lds_max} a workgroup may have, {b.vgprs} VGPRs"
                   + (f", {b.scratch_bytes} bytes of scratch per lane (it spills)" if b.scratch_bytes else ", no scratch")]
        keys = [c.key for c in checks.CHECKS.machine_code if c.target == TARGET]
        return Port(number, True, tuple(changes), f"every check: {', '.join(keys)} here, the correctness checks and "
                    "the figure on the GPU", {"lds_bytes": b.lds_bytes, "vgprs": b.vgprs, "scratch": b.scratch_bytes})
    need = compile_of(mod, "gfx950", "fp16").shared_bytes
    error = _error(lambda: compile_of(mod, TARGET, "fp16"))
    changes = [f"its kernel takes {need} bytes of LDS on gfx950, " +
               (f"more than the {lds_max} an MI300X workgroup may have" if need > lds_max else f"within gfx942's {lds_max}")]
    if error:
        changes.append(f"Triton 3.9.0 does not compile it for gfx942: {error}")
    return Port(number, False, tuple(changes), "the machine-code checks of gfx950 and the host model run on any machine; "
                "no check of this lesson runs its kernel on an MI300X", {"lds_bytes": need, "error": error})


def ports(numbers=None) -> dict[str, Port]:
    from .charts import AMD_LESSONS

    return {n: port(n) for n in (numbers or AMD_LESSONS)}
