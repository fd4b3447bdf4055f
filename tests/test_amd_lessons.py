"""Lessons 25-29 (AMD v5-v9) for the pinned Triton: the whole K loop and budget of each solution, the facts their
notebooks state (order of the loop, waits, regions, register files, the barriers Triton inserts by itself, what
llvm_fn_attrs changes), the toolkit functions that read them, the XCD dispatch model, and the vendor's figures."""
from __future__ import annotations

import types

import pytest
import triton

from gluon_course import load_checks, load_solution
from gluon_course import amd
from gluon_course.amd import amdgcn
from gluon_course.machine import compile_cached

# The whole K loop (gfx950, fp16), the budget (VGPRs, arch, AGPRs, LDS, scratch) and the MFMAs' register files
# (D, A, B, C) of each solution, exactly as Triton 3.9.0 compiles them.
PINNED = {
    "25": ({"MFMA": 128, "LDS read": 32, "buffer load → LDS": 16, "wait": 4, "barrier": 1, "branch": 1,
            "AGPR move": 3, "VALU": 59, "SALU": 37, "other": 1}, (446, 256, 190, 135104, 0),
           {("v", "a", "a", "v"): 100, ("a", "a", "a", "a"): 28}),
    "26": ({"MFMA": 256, "LDS read": 64, "buffer load → LDS": 32, "wait": 10, "barrier": 2, "branch": 1,
            "AGPR move": 97, "VALU": 92, "SALU": 45, "other": 6}, (512, 256, 256, 135104, 0),
           {("v", "a", "a", "v"): 168, ("a", "a", "v", "a"): 4, ("a", "a", "a", "a"): 80, ("v", "a", "v", "v"): 4}),
    "27": ({"MFMA": 256, "LDS read": 64, "buffer load → LDS": 32, "wait": 17, "barrier": 4, "branch": 2,
            "VALU": 89, "SALU": 45, "other": 65}, (452, 194, 256, 135072, 0), {("a", "v", "v", "a"): 256}),
    "28": ({"MFMA": 256, "LDS read": 64, "buffer load → LDS": 32, "wait": 15, "barrier": 8, "branch": 2,
            "VALU": 89, "SALU": 45, "other": 63}, (428, 172, 256, 135040, 0), {("a", "v", "v", "a"): 256}),
    "29": ({"MFMA": 256, "LDS read": 64, "buffer load → LDS": 32, "wait": 15, "barrier": 8, "branch": 2,
            "VALU": 89, "SALU": 45, "other": 63}, (428, 172, 256, 135040, 0), {("a", "v", "v", "a"): 256}),
}
# (first of each kind in loop order, the loop's vmcnt waits, copies per region, longest run of copies, prologue)
ORDER_KINDS = ["MFMA", "LDS read", "buffer load → LDS", "barrier", "vmcnt(0)", "vmcnt(16)", "vmcnt(20)"]
SHAPE = {
    "24": (["barrier", "buffer load → LDS", "vmcnt(16)", "LDS read", "MFMA"], [16], [16, 0], 16, (16, None)),
    "25": (["MFMA", "vmcnt(0)", "barrier", "buffer load → LDS", "LDS read"], [0], [16], 2, (32, 16)),
    "26": (["MFMA", "vmcnt(0)", "barrier", "buffer load → LDS", "LDS read"], [0, 0], [16, 16], 2, (32, 16)),
    "27": (["MFMA", "vmcnt(16)", "barrier", "LDS read", "buffer load → LDS"], [16] * 4, [12, 4, 12, 4], 8, (32, 20)),
    "28": (["vmcnt(20)", "barrier", "LDS read", "buffer load → LDS", "MFMA"], [20] * 8, [4] * 8, 2, (32, 24)),
}


def _compiled(number, dtype="fp16"):
    return load_checks(number).compiled(load_solution(number), "gfx950", dtype)


@pytest.mark.parametrize("number", sorted(PINNED))
def test_the_solutions_machine_code_for_the_pinned_triton(number):
    assert triton.__version__ == "3.9.0", "these counts are Triton 3.9.0's; re-derive them for another version"
    mix, (vgprs, arch, agprs, lds_bytes, scratch), files = PINNED[number]
    for dtype in ("fp16", "bf16"):
        k = _compiled(number, dtype)
        assert {name: n for name, n in amdgcn.instruction_mix(k).items() if n} == mix
        b = amdgcn.budget(k, 4)
        assert (b.vgprs, b.arch_vgprs, b.agprs, b.lds_bytes, b.scratch_bytes, b.vgpr_spills) == \
            (vgprs, arch, agprs, lds_bytes, scratch, 0)
        assert dict(amdgcn.mfma_register_files(k)) == files
        assert b.occupancy.blocks == 1


@pytest.mark.parametrize("number", sorted(SHAPE))
def test_the_order_waits_and_regions_the_notebooks_state(number):
    order, waits, regions, burst, prologue = SHAPE[number]
    k = _compiled(number)
    assert amdgcn.first_order(k, ORDER_KINDS) == order
    assert amdgcn.loop_vmcnts(k) == waits
    assert [r["buffer load → LDS"] for r in amdgcn.regions(k)] == regions
    assert amd.longest_burst(amdgcn.mfmas_between(k)) == burst
    assert amd.prologue_facts(k) == prologue


def test_version_5s_reads_land_in_the_next_steps_operand_registers():
    """Lesson 25: the 32 reads come after the step's last MFMA and write the very registers the MFMAs read."""
    loop = amdgcn.main_loop(_compiled("25")).instructions
    last_mfma = max(i for i, ins in enumerate(loop) if ins.opcode.startswith("v_mfma"))
    reads = [(i, ins) for i, ins in enumerate(loop) if ins.opcode.startswith("ds_read")]
    assert len(reads) == 32 and all(i > last_mfma for i, _ in reads)
    operands = {op.strip() for ins in loop if ins.opcode.startswith("v_mfma")
                for op in ins.text.split(None, 1)[1].split(",")[1:3]}
    assert {ins.text.split()[1].rstrip(",") for _, ins in reads} == operands


def test_version_5s_first_mfmas_wait_for_the_reads_of_the_trip_before():
    """Lesson 25's prose, read off the issue strings: version 5 reads tile i + 1 after the trip's last MFMA, and the
    next trip's first MFMAs wait for those reads (lgkmcnt(11), (7), (6)); its copies are spread among the MFMAs, where
    version 4 issues them in one burst and reads its own tile before its MFMAs."""
    v5 = amdgcn.issue_string(amdgcn.main_loop(_compiled("25")).instructions)
    v4 = amdgcn.issue_string(amdgcn.main_loop(_compiled("24")).instructions)
    assert v5.startswith("w lgkmcnt(11) M w lgkmcnt(7) M a M w lgkmcnt(6) M") and v5.endswith("M31 R32 B")
    assert "w vmcnt(0) lgkmcnt(0) | M C M C" in v5
    assert v4.startswith("| C14 a C a C a2 w vmcnt(16) | R2 a8 R2 a R28 w lgkmcnt(14) M w lgkmcnt(13) M")


def test_triton_inserts_the_barriers_the_lessons_write():
    """Lessons 25 and 24 say their gl.barrier() calls are what Triton's membar pass would insert: removed, the K
    loop is the same, instruction for instruction."""
    for number in ("24", "25"):
        text = load_solution(number).__file__
        mod = amd.solution_variant(number, "gl.barrier()\n", "pass\n", "nobarrier")
        plain = amdgcn.main_loop(_compiled(number)).instructions
        without = amdgcn.main_loop(load_checks(number).compiled(mod, "gfx950", "fp16")).instructions
        assert [i.text for i in without] == [i.text for i in plain], text


def test_a_wait_with_no_committed_group_before_it_emits_no_wait():
    """Why the host model keeps copies no commit_group closed in flight at every wait_group, 0 included (Triton's
    docstring says wait_group(0) waits for them): lesson 22 without its commit_group keeps ttg.async_wait {num = 0}
    in its TTGIR, but its K loop has no s_waitcnt vmcnt at all, so the LDS reads follow the copies unwaited."""
    plain = amd.compiled(load_solution("22"), "gfx950", "fp16")
    variant = amd.solution_variant("22", "        async_copy.commit_group()\n", "", "nocommit")
    without = amd.compiled(variant, "gfx950", "fp16")
    assert amdgcn.loop_vmcnts(plain) == [0]
    assert "ttg.async_wait {num = 0" in without.ttgir and "ttg.async_commit_group" not in without.ttgir
    assert amdgcn.loop_vmcnts(without) == []
    assert [i.opcode for i in amdgcn.main_loop(without).instructions].count("ds_read_b128") == 32


def test_version_6_parks_offsets_in_agprs():
    """Lesson 26's listing: read an AGPR into v252, add 128 (one K step of fp16 bytes), write it back."""
    loop = amdgcn.main_loop(_compiled("26")).instructions
    first = next(i for i, ins in enumerate(loop) if ins.opcode.startswith("v_accvgpr"))
    assert [ins.opcode for ins in loop[first:first + 3]] == ["v_accvgpr_read_b32", "v_add_u32_e32",
                                                             "v_accvgpr_write_b32"]
    assert "0x80" in loop[first + 1].text


def test_the_two_accumulator_plant_spills_and_cd_regclass_removes_the_moves():
    spill = amdgcn.budget(load_checks("26").compiled(amd.planted("26", "budget_gfx950"), "gfx950", "fp16"), 4)
    assert (spill.vgprs, spill.scratch_bytes) == (512, 1336)
    variant = amd.solution_variant("27", ', cd_regclass="a")', ")", "no_regclass")
    k = load_checks("27").compiled(variant, "gfx950", "fp16")
    b = amdgcn.budget(k, 4)
    assert (amdgcn.instruction_mix(k)["AGPR move"], b.vgprs, b.arch_vgprs, b.agprs) == (107, 460, 256, 204)
    # Lesson 27: the LLVM attribute the vendor's switch sets changes nothing in Triton 3.9.0's listing.
    sig = amd.signature("fp16")
    with_attr = compile_cached(variant.matmul_kernel, "gfx950", signature=sig, aligned=tuple(sig), num_warps=4,
                               constexprs={**amd.TILE, **variant.kernel_layouts("gfx950")},
                               llvm_fn_attrs="amdgpu-agpr-alloc=256")
    assert amdgcn.instruction_mix(with_attr) == amdgcn.instruction_mix(k)
    assert amdgcn.budget(with_attr, 4).row() == b.row()


def test_version_9s_loop_is_version_8s():
    assert amd.loop_memory(_compiled("29")) == amd.loop_memory(_compiled("28"))


# -- the toolkit's readers, on a listing written by hand --------------------------------------------------------

LISTING = """\
.LBB0_1:                                ; =>This Inner Loop Header: Depth=1
\tv_mfma_f32_16x16x32_f16 a[0:3], v[0:3], v[4:7], a[0:3]
\tbuffer_load_dwordx4 v2, s[8:11], 0 offen lds
\tbuffer_load_dwordx4 v3, s[8:11], 0 offen lds
\ts_waitcnt vmcnt(4) lgkmcnt(0)
\ts_barrier
\tv_mfma_f32_16x16x32_f16 a[4:7], v[0:3], v[4:7], a[4:7]
\tbuffer_load_dwordx4 v2, s[8:11], 0 offen lds
\tds_read_b128 v[0:3], v9
\ts_waitcnt lgkmcnt(0)
\ts_barrier
\tscratch_load_dword v10, off, s0
\ts_cbranch_scc1 .LBB0_1
.Lfunc_end0:
"""


def test_order_regions_and_gaps_read_off_a_listing():
    fake = types.SimpleNamespace(amdgcn=LISTING, kernel_name="fake")
    assert amdgcn.first_order(fake, ["LDS read", "vmcnt(4)", "MFMA", "barrier", "vmcnt(0)"]) == \
        ["MFMA", "vmcnt(4)", "barrier", "LDS read"]
    assert [(r["MFMA"], r["buffer load → LDS"]) for r in amdgcn.regions(fake)] == [(1, 1), (1, 2)]
    assert amdgcn.mfmas_between(fake) == [0, 1, 1]
    assert amd.longest_burst([0, 1, 1]) == 2 and amd.longest_burst([1, 0, 0]) == 3
    assert amd.longest_burst([0, 0]) == 2 and amd.longest_burst([]) == 0
    assert amdgcn.loop_vmcnts(fake) == [4]
    assert amdgcn.instruction_mix(fake)["scratch"] == 1
    assert amdgcn.issue_string(amdgcn.main_loop(fake).instructions) == \
        "M C2 w vmcnt(4) lgkmcnt(0) | M C R w lgkmcnt(0) | S B"
    assert dict(amdgcn.mfma_register_files(fake)) == {("a", "v", "v", "a"): 2}


# -- the dispatch model ---------------------------------------------------------------------------------------

def _orders():
    from gluon_course.model.run import patched

    mod = load_solution("29")
    tile_of, grouped = patched(mod.tile_of), patched(mod.grouped_tile)
    return {"row-major": lambda pid, m, n: (pid // n, pid % n),
            "grouped": lambda pid, m, n: grouped(pid, m, n, 4),
            "remap": lambda pid, m, n: tile_of(pid, m, n, 1, 8),
            "v9": lambda pid, m, n: tile_of(pid, m, n, 4, 8)}


def test_the_dispatch_model_reproduces_the_vendors_strip_counts():
    """AMD's v9 write-up counts GM + ⌈32 / GM⌉ strips per XCD on 16 × 16 tiles: 18 for row-major and for the remap
    alone, 12 for the remap with GROUP_M = 4. The model, evaluating the kernel's own functions, agrees; and the
    notebook's other figures (8192², the L2 estimate) are these."""
    from gluon_course.model import xcd

    found = {}
    for name, fn in _orders().items():
        for m in (16, 32):
            rows, cols = xcd.workgroup_tiles(fn, m, m)
            found[name, m] = (xcd.most_strips(rows, cols), xcd.l2_fill_bytes(rows, cols, 8192, 256, 256) // 2 ** 20)
    assert found == {("row-major", 16): (18, 576), ("row-major", 32): (12, 1536), ("grouped", 16): (12, 384),
                     ("grouped", 32): (18, 2304), ("remap", 16): (18, 576), ("remap", 32): (33, 4224),
                     ("v9", 16): (12, 384), ("v9", 32): (12, 1536)}
    assert list(xcd.xcd_of(10)) == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]


def test_the_remap_gives_each_xcd_a_contiguous_run():
    from gluon_course.model import xcd
    from gluon_course.model.run import patched

    xcd_tile = patched(load_solution("29").xcd_tile)
    for tiles in (1, 3, 8, 25, 250, 255, 256, 1024):
        rows, _ = xcd.workgroup_tiles(lambda pid, m, n: (xcd_tile(pid, m * n, 8), 0 * pid), 1, tiles)
        assert sorted(rows.tolist()) == list(range(tiles))
        for x in range(8):
            mine = rows[x::8].tolist()
            assert mine == list(range(mine[0], mine[0] + len(mine))) if mine else True


# -- the vendor's figures -------------------------------------------------------------------------------------

def test_the_vendors_figures_and_the_tools_their_best_ones_need():
    assert amd.VENDOR[9] == (1290, 0.6919) and amd.VENDOR[6][0] < amd.VENDOR[5][0]
    refs = amd.vendor_references(7)
    variants = [r for r in refs if "their configuration" in r.source]
    assert [r.value for r in variants] == [1329, 1395, 1384]
    assert all("Triton 3.9.0" in r.source for r in variants)
    assert "amdgcnas" in variants[-1].source and "force-agpr" in variants[-1].source
    assert all(v in amd.VENDOR_TOOLS for c, _, _ in sum(amd.VENDOR_VARIANTS.values(), ())
               for v in c.split("+"))


# -- the comparison page --------------------------------------------------------------------------------------

def test_the_comparison_names_lessons_of_the_right_track_and_every_step():
    from gluon_course.course import lessons
    from gluon_course.website import comparison

    known = lessons()
    for same in comparison.SAME:
        assert set(same.nvidia) <= set(comparison.NVIDIA) and set(same.amd) <= set(comparison.AMD), same.idea
    for alone in comparison.ALONE:
        side = comparison.NVIDIA if alone.vendor == "NVIDIA" else comparison.AMD
        assert set(alone.lessons) <= set(side), alone.idea
    text = comparison.markdown()
    assert all(f"| v{step} |" in text for step in range(10))
    for number in comparison.NVIDIA + comparison.AMD:
        assert known[number].checks.teaches in text


def test_version_9s_launcher_refuses_an_order_it_cannot_compute():
    mod = load_solution("29")
    for bad in ({"GROUP_M": 0}, {"NUM_XCDS": 2.5}):
        with pytest.raises(ValueError, match="positive whole number"):
            mod.matmul(None, None, **bad)
