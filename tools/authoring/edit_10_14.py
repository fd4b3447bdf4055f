"""One-off edits of notebooks 10-14 (issue 12): the versions chart as same-run ratios, the sanitizer commands from the
toolkit (with the checks' flags), and the ring pictures of 13 and 14 from the host model."""
import nbformat as nbf

NB = {"10": "10-gemm-v0-cuda-cores", "11": "11-gemm-v1-mma-v2", "12": "12-gemm-v2-shared-memory",
      "13": "13-gemm-v3-cp-async", "14": "14-gemm-v4-tma"}
CHART = {"10": 'lab.versions_chart(title="bf16 8192³: v0 on the CUDA cores")',
         "11": 'lab.versions_chart(extra={"mma.sync peak (registers only)": ("11", "mma_v2_peak")})',
         "12": 'lab.versions_chart(extra={"v2, plain layout": ("12", "plain_bf16_8192")})',
         "13": "lab.versions_chart()", "14": "lab.versions_chart()"}
TOOL = {"10": "memcheck", "11": "memcheck", "12": "racecheck", "13": "racecheck", "14": "racecheck"}

for number, folder in NB.items():
    path = f"lessons/{folder}/lesson.ipynb"
    nb = nbf.read(path, as_version=4)
    out = []
    for cell in nb.cells:
        src = cell.source
        if cell.cell_type == "code" and "tflops_chart(" in src and "from gluon_course.display import" not in src:
            cell.source = CHART[number]
            cell.outputs = []
        if cell.cell_type == "code" and "from gluon_course.display import" in src:
            cell.source = src.replace(", tflops_chart", "")
        if cell.cell_type == "markdown" and "```bash\ncompute-sanitizer" in src:
            head, rest = src.split("```bash\n", 1)
            _, tail = rest.split("```\n", 1)
            cell.source = head.rstrip().replace("from the repository's root (or `memcheck`, `synccheck`):",
                                                "from the repository's root (the same flags as the checks; or "
                                                "`--tool memcheck`, `--tool synccheck`):").replace(
                "from the repository's root:", "from the repository's root (the same flags as the checks):")
            out.append(cell)
            tool = TOOL[number]
            out.append(nbf.v4.new_code_cell(
                "from gluon_course.measure.isolated import hand_command\n\n"
                f'print(hand_command("solutions/{folder}/checks.py:small_launch", ["lessons/{folder}/starter.py"], '
                f'"{tool}"))'))
            if tail.strip():
                out.append(nbf.v4.new_markdown_cell(tail.strip()))
            continue
        out.append(cell)
        if number == "13" and cell.cell_type == "markdown" and cell.source.startswith("Every slot is written only after"):
            # Split: the picture goes between the hazards paragraph and section 4.
            hazards, section4 = cell.source.split("\n\n## 4.", 1)
            cell.source = hazards
            out.append(nbf.v4.new_markdown_cell(
                "The ring as the host model runs this lesson's solution (one tile of C, K long enough for two trips "
                "round the ring): each bar is one K step's tiles in a slot, the copy in flight until the `wait_group` "
                "that retires it, then read by ldmatrix. A slot's next copy starts only after its last read:"))
            out.append(nbf.v4.new_code_cell('from gluon_course.pictures import ring_picture, show\n\n'
                                            'show(ring_picture("13"))'))
            out.append(nbf.v4.new_markdown_cell("## 4." + section4))
    nb.cells = out
    nbf.write(nb, path)
print("edited")
