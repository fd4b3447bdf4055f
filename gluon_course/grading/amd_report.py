"""The AMD part of the results page: the K loop's instruction mix of every AMD GEMM version, compiled here (no GPU
needed, exact for the pinned Triton), drawn once and kept as a PNG whose text chunk holds the numbers it was drawn
from, and a line for the figures that only an AMD GPU can measure. ``report.update_tables`` calls ``update``."""
from __future__ import annotations

from pathlib import Path

from . import amd_gemm
from .report import _png_description, _replace_between

BEGIN = "<!-- BEGIN GENERATED AMD SECTION (python -m gluon_course tables) -->"
END = "<!-- END GENERATED AMD SECTION -->"
IMAGE = "images/amd-gfx950-instruction-mix.png"      # under book/


def _description(rows: dict) -> str:
    """The numbers the plot shows, as latin-1 text (what a PNG text chunk holds)."""
    text = "; ".join(f"{label}: " + ", ".join(f"{k} {v}" for k, v in mix.items() if v) for label, mix in rows.items())
    return text.replace("→", "->")


def draw(path: Path, rows: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = amd_gemm.mix_chart(rows, "The K loop of each AMD GEMM version, gfx950 fp16 (Triton 3.9.0, compiled on a CPU)")
    fig.set_dpi(150)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, metadata={"Description": _description(rows), "Software": None})
    plt.close(fig)


def markdown(rows: dict) -> str:
    if not rows:
        return ""
    listed = "; ".join(f"{label}: {sum(mix.values())} instructions, {mix['MFMA']} MFMA" for label, mix in rows.items())
    return "\n".join([
        "### AMD gfx950 (MI350/MI355)", "",
        f"Figures: {amd_gemm.NOT_MEASURED}. The lessons' ranges are provisional ratios to hipBLASLt; each lesson shows "
        "the vendor's own figures beside them, labelled as the vendor's.", "",
        "#### The K loop, version by version (compiled for gfx950, fp16)", "",
        "![Stacked bars: instructions per category in the K loop of each AMD GEMM version]"
        f"({IMAGE})", "",
        f"Each bar counts the instructions of one K step of one wave, by what they keep busy: {listed}.", ""])


def update(root: Path, write: bool) -> list[str]:
    """Redraw the mix (only when its numbers changed) and rewrite the AMD section of book/results.md; return the
    files that changed (or, with ``write=False``, that are stale)."""
    from ..machine.compile import BackendMissing

    try:
        rows = amd_gemm.mixes()
    except BackendMissing:         # a Triton without AMD's code generator cannot check the section: leave it as is
        return []
    changed = []
    path = root / "book" / IMAGE
    if rows and _png_description(path) != _description(rows):
        if write:
            draw(path, rows)
        changed.append("book/" + IMAGE)
    results = root / "book" / "results.md"
    if BEGIN not in results.read_text():
        if write:
            results.write_text(results.read_text().rstrip("\n") + f"\n\n{BEGIN}\n{END}\n")
        else:
            return changed + ["book/results.md"]
    if _replace_between(results, BEGIN, END, markdown(rows), write):
        changed.append("book/results.md")
    return changed
