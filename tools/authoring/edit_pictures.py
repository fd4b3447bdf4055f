"""Adds the host model's pictures of the ring to notebooks 14 and 16 (issue 12, item 11)."""
import nbformat as nbf

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell


def insert_after(path, starts_with, cells):
    nb = nbf.read(path, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith(starts_with))
    if any("ring_picture(" in c.source for c in nb.cells):
        return
    nb.cells[at + 1:at + 1] = cells
    nbf.write(nb, path)


insert_after("lessons/14-gemm-v4-tma/lesson.ipynb", "Three ways to get this wrong", [
    md("""The ring of this lesson's solution as the host model runs it (one tile of C, K long enough for two trips round
the ring): each bar is one K step's tiles in a slot, from the TMA copy's start to the phase of the slot's barrier
that its bytes complete, then to the wait that sees it (marked with the parity it names), then read by ldmatrix:"""),
    code("""from gluon_course.pictures import barrier_figure, barrier_history, ring_picture, ring_trace, show

show(ring_picture("14"))"""),
    md("""And one barrier, `ready[0]`, across two trips round the ring: the phase it is in, the parity a wait must name to
wait for it, the arrival `expect` makes, and the bytes announced and copied:"""),
    code("""show(barrier_figure(barrier_history(ring_trace("14"), "ready[0]"), "lesson 14: ready[0] across two trips"))"""),
])
insert_after("lessons/16-gemm-v6-async-wgmma/lesson.ipynb", "At step 0 nothing has finished", [
    md("""The same schedule as the host model runs this lesson's solution, slot by slot: a slot's read by the products
(orange) lasts until the `warpgroup_mma_wait(1)` that retires it, and the slot's next copy starts only then:"""),
    code("""from gluon_course.pictures import ring_picture, show

show(ring_picture("16"))"""),
])
print("ok")
