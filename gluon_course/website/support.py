"""The GPU support matrix (``book/support.md``): what ``check NN`` and the notebook of every lesson do on a machine
with no GPU, and on a GPU of each class the course talks about. Generated from what each lesson declares in
``solutions/NN-slug/checks.py`` (its compile targets, its machine-code checks and the target each one reads, its host
model check, its GPU correctness checks and figures) and from what ``results/`` holds; never typed.
``python -m gluon_course tables`` rewrites it (``website.update_tables`` calls ``update``); a test fails when it is stale.

The rule the matrix states: machine-code checks compile for their target on any machine, so they run everywhere; a
lesson's GPU checks and figures are written for the GPU classes among its declared targets, narrowed by its launcher:
a solution that calls ``gluon_course.nvidia.hopper.require_hopper`` refuses every GPU but a Hopper, so such a lesson's GPU
checks are sm_90's alone, whatever other target its machine code is also read for (lesson 15 reads a Blackwell
kernel's sm_100 code, never run).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..course import lessons
from ..grading import records
from ..grading.classes import calls, gpu_classes, spans
from ..machine.targets import GPU_NAMES
from .pages import replace_between, toc_parts

BEGIN = "<!-- BEGIN GENERATED SUPPORT MATRIX (python -m gluon_course tables) -->"
END = "<!-- END GENERATED SUPPORT MATRIX -->"
FACTS_BEGIN = "<!-- BEGIN GENERATED LESSON FACTS (python -m gluon_course tables) -->"
FACTS_END = "<!-- END GENERATED LESSON FACTS -->"
# The time a notebook gives itself, in its first cell: "**Time:** about 45 minutes."
TIME = re.compile(r"\*\*Time:\*\*\s*about\s+(\d+)\s+minutes")

# The GPU classes of the matrix, by the compile target that names them, with the GPUs people know them by
# (``machine.targets.GPU_NAMES``), in the order of the columns.
GPU_CLASSES: dict[str, str] = {cls: GPU_NAMES[cls] for cls in
                               ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "gfx942", "gfx950")}
# The class of each GPU the course has a recording of (``results/<slug>.json``); a recording of a GPU not listed
# here is not claimed for any column.
RECORDING_CLASS: dict[str, str] = {"nvidia-h200": "sm_90", "nvidia-h100-80gb-hbm3": "sm_90"}


@dataclass(frozen=True)
class Support:
    number: str
    title: str
    page: str | None                   # "lessons/02-layouts/lesson" when the page is in _toc.yml
    part: str
    targets: tuple[str, ...]
    gpu_classes: tuple[str, ...]       # the declared targets whose GPUs the lesson's GPU checks are written for
    machine_code: int                  # machine-code checks in all (they run on any machine)
    per_target: dict                   # target -> machine-code checks that read its code; None -> host code
    host_model: bool
    gpu_checks: int
    figures: int
    recorded: dict                     # GPU class -> the names of the GPUs this lesson was recorded on (a tuple)


# Which classes a lesson's GPU checks are written for: grading.classes, shared with the launchers' refusals.
_calls = calls
_spans = spans
# The checks that run a lesson's kernel in the host model: its own (host_model) and its launcher's path into it
# (launcher_path, launcher_paths: lessons 31 to 33); a check per epilogue (swiglu_model, …: lesson 35).
HOST_MODEL_KEYS = ("host_model", "launcher_path", "launcher_paths")


def runs_host_model(key: str) -> bool:
    return key in HOST_MODEL_KEYS or key.endswith("_model")


def _recording_order(gpu: str) -> tuple:
    """The course's recording first, then the others by name."""
    return (records.slug(gpu) != records.DEFAULT_RECORDING, gpu)


def _recorded_classes(number: str) -> dict:
    found = {}
    for path in sorted(records.results_dir().glob("*.json")):
        cls = RECORDING_CLASS.get(path.stem)
        if cls is None:
            continue
        data = records.load_file(path.stem)          # that GPU's own entries, not the ones standing in
        if any(key.startswith(f"{number}/") for key in data["figures"]):
            found[cls] = tuple(sorted(found.get(cls, ()) + (data["gpu"] or path.stem,), key=_recording_order))
    return found


def lesson_support(root: Path | None = None) -> list[Support]:
    """One row per written lesson (a scaffolded lesson still ``planned`` is left out), in the order of the site."""
    parts = toc_parts(root)
    where = {page: caption for caption, pages in parts for page in pages}
    rows = []
    for number, the in lessons().items():
        spec = the.checks
        if spec.planned:
            continue
        page = f"lessons/{the.folder}/lesson"
        per_target: dict = {}
        for c in spec.machine_code:
            per_target[c.target] = per_target.get(c.target, 0) + 1
        rows.append(Support(number, the.title, page if page in where else None,
                            where.get(page, "Not yet in the website's table of contents"), tuple(spec.targets),
                            gpu_classes(the),
                            len(spec.machine_code), per_target,
                            any(runs_host_model(c.key) for c in spec.machine_code),
                            len(spec.correctness), len(spec.figures), _recorded_classes(number)))
    order = {caption: i for i, (caption, _) in enumerate(parts)}
    return sorted(rows, key=lambda r: (order.get(r.part, len(order)), r.number))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _lesson_cell(row: Support) -> str:
    name = f"{row.number} · {row.title}"
    return f"[{name}](../{row.page}.ipynb)" if row.page else name


def _lesson_number_cell(row: Support) -> str:
    """The matrix's lesson column: the number alone, linked, the title shown on hover (nine columns of classes leave
    no room for titles at the site's width), and † where the machine-code checks include the host model."""
    mark = "†" if row.host_model else ""
    return (f'[{row.number}](../{row.page}.ipynb "{row.title}"){mark}' if row.page else f"{row.number}{mark}")


def _cpu_cell(row: Support) -> str:
    return "machine code" + (", host model" if row.host_model else "")


def _gpu_cell(row: Support, cls: str) -> str:
    if cls not in row.gpu_classes:
        return "—"
    if cls in row.recorded:
        return "✓"                     # the GPU it was recorded on: "In short", below the tables
    return "yes"


def _code_cell(row: Support, target: str) -> str:
    n = row.per_target.get(target, 0)
    return str(n) if n else "—"


def matrix_markdown(root: Path | None = None) -> str:
    rows = lesson_support(root)
    if not rows:
        return "No lesson is written yet."
    classes = list(GPU_CLASSES)
    modelled = [r.number for r in rows if r.host_model]
    lines = ["## What runs where", "",
             "*CPU only*: the lesson's machine-code checks, which compile its kernels for each target it declares and "
             "read the result, so they run on any machine"
             + (f"; in lessons {_spans(modelled)} one of them is the host model" if modelled else "") + ". A class "
             "column says whether a GPU of that class also runs the lesson's GPU checks and figures: **✓**, they are "
             "written for that class and the course recorded them on a GPU of it (`results/`; which GPU, the list "
             "below the tables says); "
             "**yes**, its GPU checks are written for that class and the course has not run them on one; **—**, they "
             "are not written for it: a GPU of that class runs the machine-code checks as any machine does, and the "
             "course claims nothing more there. A lesson marked † has the host model among its machine-code checks. How "
             "many checks of each kind a lesson has, and which targets' machine code they read: the last tables.", ""]
    for caption in dict.fromkeys(r.part for r in rows):
        lines += [f"### {caption}", "", "| # | " + " | ".join(classes) + " |", "|---" * (1 + len(classes)) + "|"]
        for row in (r for r in rows if r.part == caption):
            lines.append(f"| {_lesson_number_cell(row)} | " + " | ".join(_gpu_cell(row, c) for c in classes) + " |")
        lines.append("")

    lines += ["## In short", ""]
    lines.append(f"* **CPU only**: {sum(r.machine_code for r in rows)} machine-code checks over "
                 f"{_plural(len(rows), 'lesson')} (lessons {_spans([r.number for r in rows])}), the host model in lessons "
                 f"{_spans(modelled) if modelled else 'none'}.")
    for cls in classes:
        declared = [r.number for r in rows if cls in r.gpu_classes]
        if not declared:
            lines.append(f"* **{cls}** ({GPU_CLASSES[cls]}): no lesson's GPU checks are written for it; the machine-code "
                         "checks run there as on any machine, and the course claims nothing more.")
            continue
        gpus = sorted({gpu for r in rows for gpu in r.recorded.get(cls, ())}, key=_recording_order)
        where = " and ".join(f"on the {gpu} for lessons {_spans([r.number for r in rows if gpu in r.recorded.get(cls, ())])}"
                             for gpu in gpus)
        lines.append(f"* **{cls}** ({GPU_CLASSES[cls]}): GPU checks and figures in lessons {_spans(declared)}"
                     + (f"; recorded {where}" if gpus else "; none run by the course yet") + ".")
    lines.append("")

    lines += turing_markdown(rows)
    lines += mi300x_markdown(rows)

    code_targets = tuple(GPU_CLASSES)
    nvidia = tuple(t for t in code_targets if t.startswith("sm_"))
    others = tuple(t for t in code_targets if t not in nvidia)
    lines += ["## How many checks, of which kind", "",
              "A lesson's machine-code checks by the code they read (*host*: no compiled code, but the launcher, a "
              "layout or a function of the kernel run on the CPU, the host model among them where the first table "
              "marks it), then the checks and figures that need a GPU. The machine-code checks run on any machine. "
              "Two tables, NVIDIA's targets and then the rest, so that each fits the page.", "",
              "| lesson | " + " | ".join(nvidia) + " |", "|---" * (len(nvidia) + 1) + "|"]
    for row in rows:
        lines.append(f"| {row.number} | " + " | ".join(_code_cell(row, t) for t in nvidia) + " |")
    lines += ["", "| lesson | " + " | ".join(others) + " | host | GPU checks | figures |",
              "|---" * (len(others) + 4) + "|"]
    for row in rows:
        lines.append(f"| {row.number} | " + " | ".join(_code_cell(row, t) for t in others)
                     + f" | {_code_cell(row, None)} | {row.gpu_checks} | {row.figures} |")
    lines.append("")
    return "\n".join(lines)


# Colab's free GPU, a class no lesson declares: what Triton 3.9.0 makes of the lessons' kernels there.
TURING = "sm_75"


def _listed(numbers: list[str]) -> str:
    """["01", "02", "03", "10"] -> "01–03 and 10"."""
    head, _, last = _spans(numbers).rpartition(", ")
    return f"{head} and {last}" if head else last


def turing_markdown(rows) -> list[str]:
    """A T4 (sm_75): no lesson declares it; whether Triton 3.9.0 compiles each lesson's kernel for it, from
    ``grading.facts.port`` (the kernel each lesson compares across classes, compiled here in a child process: LLVM stops
    the whole process on some of them)."""
    from ..grading.facts import first_facts_check, port

    ported = [r.number for r in rows if first_facts_check(lessons()[r.number].checks) is not None]
    if not ported:
        return []
    answers = port(ported, TURING)
    compiled = [n for n, (ok, _) in answers.items() if ok]
    refused = [n for n, (ok, _) in answers.items() if not ok]
    hopper = [r.number for r in rows if r.number not in ported and any(t.startswith("sm_") for t in r.targets)]
    lines = [f"## On a T4 ({TURING}: {GPU_NAMES[TURING]}; Colab's free GPU)", "",
             f"No lesson declares {TURING}, so on a T4 `check` runs every lesson's machine-code checks, as on any "
             "machine, and none of its GPU checks; the notebooks show the recorded figures. Whether Triton 3.9.0 "
             f"compiles the lessons' kernels for it: compiled here for `GPUTarget(\"cuda\", 75, 32)`, the kernel each "
             "lesson compares across classes (bf16 in the GEMM lessons), "
             + (f"lesson{'s' if len(compiled) > 1 else ''} {_listed(compiled)} compile{'' if len(compiled) > 1 else 's'}"
                if compiled else "no lesson compiles")
             + (f"; {_listed(refused)} do{'es' if len(refused) == 1 else ''} not, for the reasons below" if refused else
                "")
             + (f". Lessons {_listed(hopper)} do not declare the classes before Hopper: their kernels (lesson 30's "
                "GEMMs among them) use TMA or wgmma, which came with sm_90" if hopper else "") + ".", "",
             f"| lesson | compiled for {TURING} by Triton 3.9.0 |", "|---|---|"]
    for n, (ok, said) in answers.items():
        lines.append(f"| {n} | {'compiles: ' + said if ok else 'does not compile: ' + said} |")
    lines.append("")
    return lines


def mi300x_markdown(rows) -> list[str]:
    """The AMD lessons on an MI300X (gfx942): which a learner there can grade fully, and for each what changes against
    gfx950 or why it is not declared (``amd.gfx942.port``, from what Triton 3.9.0 does with the solution here)."""
    from ..amd import AMD_LESSONS, gfx942

    numbers = [r.number for r in rows if r.number in AMD_LESSONS]
    if not numbers:
        return []
    ports = gfx942.ports(numbers)
    full = [n for n, p in ports.items() if p.declared]
    lines = ["## On an MI300X (gfx942)", "",
             f"A learner on an MI300X can grade lessons {_spans(full)} fully: each declares gfx942, its gfx942 "
             "machine-code checks compile it here, and its correctness checks and figure run on that GPU. "
             + (f"Lessons {_spans([n for n in numbers if n not in full])} do not declare gfx942: " if len(full) <
                len(numbers) else "") +
             "their kernels' LDS does not fit a gfx942 workgroup, and their padded layouts have no gfx942 form in "
             "Triton 3.9.0; their gfx950 machine-code checks and the host model still run on any machine. "
             "Written from `amd.gfx942.port`, which compiles each solution for gfx942 here.", "",
             "| lesson | on gfx942 |", "|---|---|"]
    for n, p in ports.items():
        text = p.line().split(": ", 1)[1]
        lines.append(f"| {n} | {'**graded fully**: ' if p.declared else ''}{text} |")
    lines.append("")
    return lines


def notebook_minutes(the) -> int | None:
    """The time lesson ``the``'s notebook gives itself ("**Time:** about 45 minutes"), or None."""
    import json

    if not the.notebook_path.exists():
        return None
    for cell in json.loads(the.notebook_path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            m = TIME.search("".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"])
            if m:
                return int(m.group(1))
    return None


def facts_markdown(root: Path | None = None) -> str:
    """The instructors' page's table: per lesson, the notebook's own time, the gaps a learner fills, what grades them
    with no GPU (machine-code checks, the host model, the planted mistakes those catch) and which GPUs run the rest."""
    from ..course import load_plants

    rows = lesson_support(root)
    lines = ["| lesson | notebook's time | gaps | checks with no GPU | plants caught with no GPU | GPU checks on |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        the = lessons()[row.number]
        minutes = notebook_minutes(the)
        gaps = the.solution_path.read_text(encoding="utf-8").count("### BEGIN SOLUTION")
        plants = load_plants(row.number)
        on_cpu = sum(not p.gpu for p in plants)
        gpus = ", ".join(c + (f" (✓ {', '.join(g.removeprefix('NVIDIA ') for g in row.recorded[c])})"
                              if c in row.recorded else "") for c in row.gpu_classes) or "—"
        lines.append(f"| {_lesson_cell(row)} | {f'{minutes} min' if minutes else '—'} | {gaps} | {row.machine_code}"
                     f"{', host model' if row.host_model else ''} | {on_cpu} of {len(plants)} | {gpus} |")
    return "\n".join(lines + [""])


def update(root: Path, write: bool) -> list[str]:
    """Rewrite the generated parts of ``book/support.md`` and ``book/instructors.md``; return the files that changed
    (or, with ``write=False``, that are stale)."""
    changed = []
    if replace_between(root / "book" / "support.md", BEGIN, END, matrix_markdown(root), write):
        changed.append("book/support.md")
    if replace_between(root / "book" / "instructors.md", FACTS_BEGIN, FACTS_END, facts_markdown(root), write):
        changed.append("book/instructors.md")
    return changed
