"""The AMD part of the results page: the K loop's instruction mix of every AMD GEMM version, compiled here (no GPU
needed, exact for the pinned Triton), drawn once and kept as a PNG whose text chunk holds the numbers it was drawn
from, and a line for the figures that only an AMD GPU can measure. ``website.update_tables`` calls ``update``."""
from __future__ import annotations

from pathlib import Path

from .. import amd
from .pages import png_description, replace_between

BEGIN = "<!-- BEGIN GENERATED AMD SECTION (python -m gluon_course tables) -->"
END = "<!-- END GENERATED AMD SECTION -->"
IMAGE = "images/amd-gfx950-instruction-mix.png"      # under book/


def _description(rows: dict) -> str:
    """The numbers the plot shows, as latin-1 text (what a PNG text chunk holds): the mixes and the vendor's
    efficiencies beside them."""
    text = "; ".join(f"{label}: " + ", ".join(f"{k} {v}" for k, v in mix.items() if v) for label, mix in rows.items())
    vendor = "; ".join(f"v{v}: {eff}" + "".join(f", {c} {e}" for c, _, e in amd.VENDOR_VARIANTS.get(v, ()))
                       for v, (_, eff) in sorted(amd.VENDOR.items()))
    return (text + " | vendor MFMA efficiency: " + vendor).replace("→", "->").replace("×", "x")


def draw(path: Path, rows: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 0.55 * len(rows) + 2.2), sharey=False,
                                      gridspec_kw={"width_ratios": [3.2, 1.4]})
    amd.mix_chart(rows, "The K loop of each AMD GEMM version, gfx950 fp16 (Triton 3.9.0, compiled on a CPU)",
                       ax=left)
    amd.vendor_chart(right, list(rows))
    fig.tight_layout()
    fig.set_dpi(150)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Description": _description(rows), "Software": None})
    plt.close(fig)


def markdown(rows: dict) -> str:
    if not rows:
        return ""
    def steps(mix):
        n = mix["MFMA"] // amd.MFMA_PER_STEP
        return f" over {n} K steps" if n > 1 else ""
    listed = "; ".join(f"{label}: {sum(mix.values())} instructions{steps(mix)}, {mix['MFMA']} MFMA"
                       for label, mix in rows.items())
    return "\n".join([
        "### AMD gfx950 (MI350/MI355)", "",
        f"Figures: {amd.NOT_MEASURED}. The lessons' ranges are provisional ratios to hipBLASLt; each lesson shows "
        "the vendor's own figures beside them, labelled as the vendor's.", "",
        "#### The K loop, version by version (compiled for gfx950, fp16)", "",
        "![Stacked bars: instructions per category in the K loop of each AMD GEMM version]"
        f"({IMAGE})", "",
        f"Each bar counts the instructions of one trip of the K loop of one wave, by what they keep busy: {listed}.",
        "",
        "Beside the bars, AMD's own MFMA efficiency for each version (the busy share of the MFMA pipe in their thread "
        "traces, MI355, fp16 4096 × 4096 × 8192, their chart in ROCm/gfx950-gluon-tutorials at commit 04322ed8, "
        "their own build of Triton): filled, their base kernel; hollow, their best configuration, which needs tools "
        "Triton 3.9.0 does not have (" + "; ".join(f"{t}: {d}" for t, d in amd.VENDOR_TOOLS.items()) + ").",
        ""])


def update(root: Path, write: bool) -> list[str]:
    """Redraw the mix (only when its numbers changed) and rewrite the AMD section of book/results.md; return the
    files that changed (or, with ``write=False``, that are stale)."""
    from ..machine.compile import BackendMissing

    try:
        rows = amd.mixes()
    except BackendMissing:         # a Triton without AMD's code generator cannot check the section: leave it as is
        return []
    changed = []
    path = root / "book" / IMAGE
    if rows and png_description(path) != _description(rows):
        if write:
            draw(path, rows)
        changed.append("book/" + IMAGE)
    results = root / "book" / "results.md"
    if BEGIN not in results.read_text():
        if write:
            results.write_text(results.read_text().rstrip("\n") + f"\n\n{BEGIN}\n{END}\n")
        else:
            return changed + ["book/results.md"]
    if replace_between(results, BEGIN, END, markdown(rows), write):
        changed.append("book/results.md")
    return changed
