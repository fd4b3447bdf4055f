"""The toolkit's own pieces, on a CPU machine."""
import json
import os
import subprocess
import sys

import pytest
import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

from gluon_course.grading import CourseTarget, Expectation, records
from gluon_course.grading.starters import MarkerError, make_starter
from gluon_course.machine import compile as gc
from gluon_course.memory import layouts
from gluon_course.memory.coalescing import sectors_per_request
from gluon_course.validate import require_copy_pair


@gluon.jit
def _copy16(in_ptr, out_ptr, numel, XBLOCK: gl.constexpr, layout: gl.constexpr):
    offs = gl.program_id(0) * XBLOCK + gl.arange(0, XBLOCK, layout=layout)
    gl.store(out_ptr + offs, gl.load(in_ptr + offs, mask=offs < numel), mask=offs < numel)


SIG = {"in_ptr": "*fp32", "out_ptr": "*fp32", "numel": "i32"}


def _compile(target, R, aligned=("in_ptr", "out_ptr", "numel")):
    ws = gc.warp_size(target)
    return gc.compile_kernel(_copy16, target, signature=SIG, aligned=aligned,
                             constexprs={"XBLOCK": R * ws * 4, "layout": gl.BlockedLayout([R], [ws], [4], [0])})


def test_opcode_counts_are_exact_and_do_not_overlap():
    k = _compile("sm_90", 4)
    assert k.count("LDG.E.128") == 1 and k.count("LDG.E") == 0
    assert k.count_matching(r"LDG") == 1
    assert k.global_stores() == {"STG.E.128": 1}
    assert k.registers > 0 and k.spills == 0 and k.shared_bytes == 0


def test_amd_listing_parses_loads_and_resources():
    k = _compile("gfx950", 4)
    assert k.global_loads() == {"global_load_dwordx4": 1}
    assert k.resources["registers"] > 0 and k.resources["spill_bytes"] == 0


def test_alignment_promise_changes_the_code():
    assert _compile("sm_90", 4, aligned=()).global_loads() == {"LDG.E": 4}


def test_compile_errors_become_one_sentence():
    @gluon.jit
    def broken(ptr):
        gl.static_assert(False, "lesson 99, gap 1 not yet implemented: say hello")

    with pytest.raises(gc.CompileFailed) as info:
        gc.compile_kernel(broken, "sm_90", signature={"ptr": "*fp32"})
    assert info.value.message == "lesson 99, gap 1 not yet implemented: say hello"


def test_unknown_target_and_parameter_are_explained():
    with pytest.raises(ValueError, match="unknown target 'sm_70'"):
        gc.target_named("sm_70")
    with pytest.raises(TypeError, match="no parameter"):
        gc.compile_kernel(_copy16, "sm_90", signature={"nope": "i32"})


def test_compile_cache_replays_amd_code_when_the_backend_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("GLUON_COURSE_COMPILE_CACHE", str(tmp_path))
    first = _compile("gfx950", 2)
    monkeypatch.setattr(gc, "amd_backend_available", lambda: False)
    again = _compile("gfx950", 2)
    assert again.amdgcn == first.amdgcn and again.global_loads() == {"global_load_dwordx2": 1}
    with pytest.raises(gc.BackendMissing, match="no AMD backend"):
        _compile("gfx950", 8)          # never compiled with the full Triton: nothing stored


def test_register_budget_and_broadcast_match_the_upstream_example():
    example = gl.BlockedLayout([2, 4], [16, 2], [2, 2], [1, 0])
    assert layouts.block_shape(example) == [64, 16]
    assert layouts.register_budget(example, [128, 128]).registers_per_thread == 128
    small = layouts.register_budget(example, [32, 8])
    assert (small.physical, small.logical, small.broadcast) == (1024, 256, 4)


def test_thread_tile_order():
    assert layouts.thread_tile(gl.BlockedLayout([2, 4], [16, 2], [2, 2], [1, 0])) == \
        "[[T:0, T:1, T:2, T:3],\n [T:4, T:5, T:6, T:7]]"
    assert layouts.thread_tile(gl.BlockedLayout([2, 4], [16, 2], [2, 2], [0, 1])) == \
        "[[T:0, T:2, T:4, T:6],\n [T:1, T:3, T:5, T:7]]"


def test_sectors_per_request_for_coalesced_and_transposed_access():
    rows = gl.BlockedLayout([1, 1], [1, 32], [1, 4], [1, 0])
    assert sectors_per_request(rows, [64, 512], (512, 1)) == 4.0      # 128 contiguous bytes
    assert sectors_per_request(rows, [64, 512], (1, 64)) == 32.0      # every lane in its own sector
    wide = gl.BlockedLayout([4], [32], [4], [0])
    assert sectors_per_request(wide, [512], (1,)) == 16.0
    assert sectors_per_request(wide, [512], (1,), max_vector_bytes=4) == 16.0


def test_starter_generation_rules():
    src = ("import triton\nfrom triton.experimental import gluon\n\n@gluon.jit\ndef k(p):\n"
           "    ### BEGIN SOLUTION: load it\n    x = 1\n    ### END SOLUTION\n\n"
           "def host():\n    ### BEGIN SOLUTION: return two\n    return 2\n    ### END SOLUTION\n")
    out = make_starter(src, "01")
    assert "gl.static_assert(False, 'lesson 01, gap 1 not yet implemented: load it')" in out
    assert "raise NotImplementedError('lesson 01, gap 2 not yet implemented: return two')" in out
    assert "x = 1" not in out and "return 2" not in out
    with pytest.raises(MarkerError, match="never closed"):
        make_starter("### BEGIN SOLUTION: x\n", "01")
    with pytest.raises(MarkerError, match="at least one gap"):
        make_starter("x = 1\n", "01")


def test_expectation_verdicts_and_wording():
    e = Expectation(0.95, None, "copy", "why")
    assert e.verdict(0.96) == "✓ in range" and e.verdict(0.5) == "✗ below"
    assert e.describe() == "expected ≥ 95.0% of copy"
    r = Expectation(1.3, None, "torch.contiguous", "why", unit="× torch")
    assert r.format(1.42) == "1.42 × torch" and r.describe() == "expected ≥ 1.30 × torch"
    assert Expectation(0.1, 0.2, "copy", "w").verdict(float("nan")) == "✗ not measured"


def test_records_round_trip(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "results_dir", lambda: tmp_path)
    monkeypatch.setenv("GLUON_COURSE_COMMIT", "abc1234")
    records.save("09/figure", {"value": 0.5})
    data = json.loads((tmp_path / "no-gpu.json").read_text())
    entry = data["figures"]["09/figure"]
    assert entry["value"] == 0.5 and entry["commit"] == "abc1234" and entry["triton"] == "3.9.0"
    with pytest.raises(KeyError, match="has not been recorded"):
        records.recorded("09/other", "no-gpu")


def test_a_stand_in_recording_fills_only_what_the_course_recording_lacks(tmp_path, monkeypatch):
    """records.load shows the course's recording and, for a key it lacks, the stand-in GPU's entry, which keeps its
    own GPU (the label a notebook prints names it); save writes one GPU's file and never copies the stand-ins in."""
    monkeypatch.setattr(records, "results_dir", lambda: tmp_path)
    monkeypatch.setattr(records, "STAND_INS", {"gpu-a": ("gpu-b",)})
    entry = {"kind": "figure", "value": 1.0, "triton": "3.9.0", "torch": "2", "date": "2026-12-05", "commit": "c"}
    (tmp_path / "gpu-a.json").write_text(json.dumps({"gpu": "GPU A", "figures": {"40/x": {**entry, "gpu": "GPU A"}}}))
    (tmp_path / "gpu-b.json").write_text(json.dumps({"gpu": "GPU B", "figures": {
        "40/x": {**entry, "value": 2.0, "gpu": "GPU B"}, "41/y": {**entry, "value": 3.0, "gpu": "GPU B"}}}))
    shown = records.load("gpu-a")
    assert shown["gpu"] == "GPU A" and shown["figures"]["40/x"]["value"] == 1.0
    assert shown["figures"]["41/y"]["gpu"] == "GPU B" and records.stood_in(shown["figures"]["41/y"], shown)
    assert not records.stood_in(shown["figures"]["40/x"], shown)
    assert "GPU B" in records.recorded_label(records.recorded("41/y", "gpu-a"))
    assert set(records.load("gpu-b")["figures"]) == {"40/x", "41/y"}            # a stand-in has no stand-ins itself
    monkeypatch.setattr(records, "provenance", lambda: {**entry, "gpu": "GPU A"})
    records.save("40/z", {"value": 4.0})
    assert set(json.loads((tmp_path / "gpu-a.json").read_text())["figures"]) == {"40/x", "40/z"}


def test_launcher_errors_say_what_to_do():
    x = torch.zeros(8)
    with pytest.raises(ValueError, match=r"move it with x.cuda\(\)"):
        require_copy_pair(x, x)
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        require_copy_pair([1, 2], x)


def test_generated_tables_are_up_to_date():
    """The README's lesson table and the website's results page come from results/ and the lessons' metadata."""
    from gluon_course.course import repo_root
    from gluon_course.website import update_tables

    stale = update_tables(repo_root(), write=False)
    assert not stale, f"{', '.join(stale)} out of step with results/ and the lessons: run `python -m gluon_course tables`"


def test_range_gates_and_course_target_only_informs():
    e = Expectation(0.85, None, "copy", "why", target=CourseTarget(0.95, why="aim"))
    assert e.verdict(0.90) == "✓ in range" and e.target_line(0.90).endswith("not reached (informs only)")
    assert e.target_line(0.96).endswith("✓ reached") and e.verdict(0.80) == "✗ below"
    assert Expectation(0.1, 0.2, "copy", "why").target_line(0.15) is None


def test_opcode_families_cover_every_target():
    from gluon_course.machine.targets import OPCODES, TARGETS, opcode_pattern

    for family in ("global_load", "global_store", "shared", "barrier", "shuffle", "mma"):
        assert set(OPCODES[family]) == set(TARGETS), family
    assert "wgmma" in OPCODES and "gfx950" not in OPCODES["wgmma"]
    assert opcode_pattern("gfx950", "wgmma") == r"(?!)"
    with pytest.raises(KeyError, match="unknown opcode"):
        opcode_pattern("sm_90", "nope")


def test_compared_arguments_read_the_mask_from_ttgir():
    k = _compile("sm_90", 4)
    assert k.compared_arguments() == {"numel"}


@gluon.jit
def _tma_tile_copy(in_desc, out_ptr):
    # One TMA load of a 64×64 tile into shared memory, then a plain store: enough to see UTMALDG and SYNCS.
    smem = gl.allocate_shared_memory(in_desc.dtype, in_desc.block_shape, in_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, in_desc.block_type.nbytes)
    tma.async_load(in_desc, [0, 0], bar, smem)
    mbarrier.wait(bar, 0)
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    rows = gl.arange(0, 64, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, 64, layout=gl.SliceLayout(0, layout))
    gl.store(out_ptr + gl.expand_dims(rows, 1) * 64 + gl.expand_dims(cols, 0), smem.load(layout))


def test_tensor_descriptor_arguments_compile_without_a_gpu():
    layout = gl.NVMMASharedLayout.get_default_for([64, 64], gl.bfloat16)
    spelled = gc.tensor_descriptor_type("bf16", [64, 64], layout)
    assert spelled == f"tensordesc<bf16[64,64],{layout!r}>" and "swizzle_byte_width=128" in spelled
    k = gc.compile_kernel(_tma_tile_copy, "sm_90", signature={"in_desc": spelled, "out_ptr": "*bf16"},
                          aligned=["out_ptr"])
    assert k.count("UTMALDG.2D") == 1 and k.count("SYNCS.ARRIVE.TRANS64") == 1
    assert not k.global_loads()


@gluon.jit
def _gap_in_helper():
    gl.static_assert(False, "lesson 99, gap 1 not yet implemented: inside a helper")


@gluon.jit
def _calls_helper(ptr):
    _gap_in_helper()


def test_compile_error_inside_a_called_jit_function_keeps_its_message():
    with pytest.raises(gc.CompileFailed) as info:
        gc.compile_kernel(_calls_helper, "sm_90", signature={"ptr": "*fp32"})
    assert info.value.message == "lesson 99, gap 1 not yet implemented: inside a helper"


def test_a_recording_writes_only_the_lesson_being_recorded(monkeypatch):
    """Lesson 14's chart measures lessons 10-13 live; their recordings must stay those of their own notebooks."""
    from gluon_course.grading import records

    monkeypatch.delenv("GLUON_COURSE_RECORD", raising=False)
    assert not records.recording_enabled("10")
    monkeypatch.setenv("GLUON_COURSE_RECORD", "1")
    monkeypatch.setenv("GLUON_COURSE_RECORD_LESSON", "14")
    assert records.recording_enabled("14") and records.recording_enabled()
    assert not records.recording_enabled("10")


def test_the_progression_plot_keeps_the_data_it_was_drawn_from(tmp_path):
    """`tables` redraws the results page's plot only when the recorded figures change; the PNG says which it shows."""
    from gluon_course.website import results
    from gluon_course.website.pages import png_description

    bars = [("v0\nCUDA cores", 0.033, 0.032, 0.034, "2026-12-01"), ("v1\ntensor cores", 0.17, 0.16, 0.18, "2026-12-01")]
    path = tmp_path / "plot.png"
    assert png_description(path) is None
    results.draw_progression(path, bars, "a GPU", triton=0.95)
    assert png_description(path) == results._progression_description(bars, 0.95)
    assert png_description(path) != results._progression_description(bars[:1], 0.95)
    assert png_description(path) != results._progression_description(bars)


def test_a_live_figure_is_measured_once_per_notebook(monkeypatch):
    """A chart under a figure shows the figure printed above it: one timing, one recording."""
    from gluon_course.grading import notebook

    calls = []

    def fake_measure(fig, module, number):
        calls.append(fig.key)
        from gluon_course.grading.runner import FigureOutcome
        return FigureOutcome(fig.key, fig.title, 0.5 + len(calls), "fake", "✓ in range", None, {"tflops": 1.0})

    monkeypatch.setattr(notebook, "has_gpu", lambda: True)
    monkeypatch.setattr(notebook, "runs_lessons_for", lambda targets: True)       # as on the H200
    monkeypatch.setattr(notebook, "measure_figure", fake_measure)
    monkeypatch.setattr(notebook, "_MEASURED", {})
    monkeypatch.delenv("GLUON_COURSE_RECORD", raising=False)
    first = notebook.Lab("14", show_header=False).figure("bf16_8192", quiet=True)
    again = notebook.Lab("14", show_header=False).figure("bf16_8192", quiet=True)
    assert calls == ["bf16_8192"] and again.value == first.value


def test_spills_are_what_ptxas_reports_in_the_stack_frame():
    """On sm_90 ptxas spills into the thread's stack frame: cuobjdump reports it as STACK while LOCAL stays 0. Lesson
    18's 128 × 256 tile on one consumer warpgroup (num_warps=4) is known to spill hundreds of bytes; the toolkit and
    config_fits must see it, and the solution's own configuration must not."""
    from gluon_course import load_checks, load_solution
    from gluon_course.grading.gemm_kernel import fits

    checks, mod = load_checks("18"), load_solution("18")
    cfg = {**checks.TILE, "num_warps": 4}
    k = checks.KERNEL.compile(mod, "sm_90", "bf16", cfg)
    r = k.resources
    assert r["local_bytes"] == 0 and r["stack_bytes"] > 0
    assert k.spills == r["spill_bytes"] > 100 and r["spill_load_bytes"] > 0 and r["local_stores"] > 0
    assert f"{r['stack_bytes']} bytes stack frame, {k.spills} bytes spill stores" in k.ptxas_log
    problem = fits(k, 4, cfg)
    assert problem and f"{k.spills} bytes of spill stores" in problem and "num_warps" in problem
    solution = checks.compiled(mod)
    assert solution.spills == 0 and solution.resources["stack_bytes"] == 0
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in solution.ptxas_log


def test_a_fresh_compile_keeps_its_ptxas_log(tmp_path, monkeypatch, capfd):
    """Triton runs ptxas -v on every compile and deletes its log; the toolkit has it printed and keeps it with the
    compile, so reading a freshly compiled kernel's log runs no second ptxas, and the compile prints nothing. The kept
    log is the one a second run prints (but for ptxas's own compile time)."""
    import re as _re

    import triton
    from triton.backends.nvidia.compiler import CUDABackend

    monkeypatch.setattr(triton.knobs.cache, "dir", str(tmp_path))          # a compile of its own, not a cache hit
    k = _compile("sm_90", 4)
    assert capfd.readouterr().out == ""
    rerun = CUDABackend.make_cubin

    def refused(*args, **kwargs):
        raise AssertionError("ptxas ran again for a log the compile had printed")

    monkeypatch.setattr(CUDABackend, "make_cubin", refused)
    kept = k.ptxas_log
    assert "Used" in kept and "registers" in kept and "0 bytes spill stores" in kept
    monkeypatch.setattr(CUDABackend, "make_cubin", rerun)
    cache, _, _ = gc._ptxas_log_store(k)
    import os

    os.remove(cache.get_file("ptxas.log"))
    again = gc._ptxas_log(gc.Compiled(k.kernel_name, k.target, k.asm, k.metadata))
    times = _re.compile(r"Compile time = [\d.]+ ms")
    assert times.sub("", kept) == times.sub("", again)


def test_the_ptxas_log_needs_only_the_ptxas_the_compile_runs(monkeypatch):
    """An install stripped for Hopper and newer (the course's GPU machine's) has ptxas-blackwell and no pre-Hopper
    ptxas, so Triton's knobs.nvidia.ptxas raises there. The spill log of a kernel with a stack frame must still be
    read: lesson 30's translated GEMM (192 bytes of stack) failed four notebook cells on the H200 when the log's cache
    key asked for the missing tool."""
    import os

    import triton
    from triton.knobs import NvidiaTool

    from gluon_course import load_checks, load_solution

    checks, mod = load_checks("18"), load_solution("18")
    k = checks.KERNEL.compile(mod, "sm_90", "bf16", {**checks.TILE, "num_warps": 4})
    found = NvidiaTool.from_path
    # As on the stripped install: every tool found but the pre-Hopper ptxas.
    monkeypatch.setattr(NvidiaTool, "from_path", staticmethod(
        lambda path: None if os.path.basename(path) == "ptxas" else found(path)))
    with pytest.raises(RuntimeError):
        triton.knobs.nvidia.ptxas
    k._cache.pop("ptxas_log", None)
    assert "bytes spill stores" in gc._ptxas_log(k)


@gluon.jit
def _summed_blocks(in_ptr, out_ptr, n, BLOCK: gl.constexpr, layout: gl.constexpr):
    offs = gl.arange(0, BLOCK, layout=layout)
    acc = gl.zeros([BLOCK], gl.float32, layout)
    for start in range(0, n, BLOCK):                   # a loop: a forward branch around it, a backward one closing it
        acc += gl.load(in_ptr + start + offs, mask=start + offs < n)
    gl.store(out_ptr + offs, acc)


def _compile_summed_blocks(target):
    return gc.compile_kernel(_summed_blocks, target, signature={"in_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                             constexprs={"BLOCK": 512, "layout": gl.BlockedLayout([4], [32], [4], [0])})


@pytest.mark.parametrize("target", ["sm_90", "sm_100"])
def test_sass_is_read_from_nvdisasm_as_cuobjdump_prints_it(target):
    """Compiled.sass is nvdisasm's listing with each branch label replaced by its address: the instructions are exactly
    those of cuobjdump -sass (tools/gpu/compare_disassemblers.py shows it over a whole test run's cache), branch targets
    included, so loops() finds the same loop."""
    k = _compile_summed_blocks(target)
    assert gc._nvdisasm_path() is not None, "Triton's wheel has no nvdisasm beside its cuobjdump"
    assert "`(" not in k.sass and ".L_x_" in k.sass          # nvdisasm's listing, its labels resolved
    assert "Function :" not in k.sass                          # not cuobjdump's
    from_cuobjdump = gc._parse_sass(gc._cuobjdump(k.asm["cubin"], "-sass"))
    assert k.instructions() == from_cuobjdump
    assert any(first < last for first, last in k.loops())


def test_labels_that_cannot_be_resolved_leave_the_listing_to_cuobjdump(tmp_path, monkeypatch):
    """Where the wheel's nvdisasm is missing (a GPU machine's lean copy), or TRITON_NVDISASM_PATH names another one, or
    nvdisasm fails, or its listing has more than one code section or a label no instruction follows, the SASS is
    cuobjdump's."""
    import os
    import shutil
    import subprocess

    import triton
    from triton.knobs import NvidiaTool

    one = ("\t.section\t.text.k,\"ax\",@progbits\nk:\n        /*0000*/                   BRA `(.L_x_0) ;\n"
           ".L_x_0:\n        /*0010*/                   EXIT ;\n")
    assert gc._parse_sass(gc._resolve_labels(one))[0].text == "BRA 0x10"
    assert gc._resolve_labels(one.replace("`(.L_x_0)", "`(.L_x_9)")) is None
    assert gc._resolve_labels(one + one.replace(".text.k", ".text.f")) is None

    elsewhere = tmp_path / "nvdisasm"
    shutil.copy(triton.knobs.nvidia.nvdisasm.path, elsewhere)
    monkeypatch.setenv("TRITON_NVDISASM_PATH", str(elsewhere))
    assert triton.knobs.nvidia.nvdisasm.path == str(elsewhere) and gc._nvdisasm_path() is None
    monkeypatch.delenv("TRITON_NVDISASM_PATH")
    found = NvidiaTool.from_path
    monkeypatch.setattr(NvidiaTool, "from_path", staticmethod(
        lambda path: None if os.path.basename(path) == "nvdisasm" else found(path)))
    assert gc._nvdisasm_path() is None
    compiled = _compile_summed_blocks("sm_90")
    k = gc.Compiled(compiled.kernel_name, compiled.target, compiled.asm, compiled.metadata)    # nothing read yet
    assert "Function : _summed_blocks" in k.sass and ".L_x_" not in k.sass
    assert any(first < last for first, last in k.loops())

    monkeypatch.setattr(NvidiaTool, "from_path", staticmethod(found))
    run = gc._tool_output

    def nvdisasm_fails(tool, name, *args):
        if name == "nvdisasm":
            raise subprocess.CalledProcessError(1, tool)
        return run(tool, name, *args)

    monkeypatch.setattr(gc, "_tool_output", nvdisasm_fails)
    k = gc.Compiled(compiled.kernel_name, compiled.target, compiled.asm, compiled.metadata)
    assert gc._nvdisasm_path() is not None and "Function : _summed_blocks" in k.sass


@gluon.jit
def _copy_store_unmasked(in_ptr, out_ptr, numel, XBLOCK: gl.constexpr, layout: gl.constexpr):
    offs = gl.program_id(0) * XBLOCK + gl.arange(0, XBLOCK, layout=layout)
    gl.store(out_ptr + offs, gl.load(in_ptr + offs, mask=offs <= numel))


def test_masks_are_read_per_access_with_their_offset():
    """Each load and store has its own mask: compared_arguments (the whole kernel's comparisons) sees numel in the
    load's mask of a kernel whose store is unmasked; masks() does not, and reads <= numel as one past the end."""
    from gluon_course.grading.gemm import access_masks_problem

    assert _compile("sm_90", 4).masks() == [{"op": "load", "masked": True, "bounds": {"numel": {0}}},
                                            {"op": "store", "masked": True, "bounds": {"numel": {0}}}]
    k = gc.compile_kernel(_copy_store_unmasked, "sm_90", signature=SIG, aligned=("in_ptr", "out_ptr", "numel"),
                          constexprs={"XBLOCK": 512, "layout": gl.BlockedLayout([4], [32], [4], [0])})
    assert "numel" in k.compared_arguments()
    assert k.masks() == [{"op": "load", "masked": True, "bounds": {"numel": {1}}},
                         {"op": "store", "masked": False, "bounds": {}}]
    assert "has no mask" in access_masks_problem(k, "store", ("numel",), "the store")
    assert "< numel + 1 (or <= numel)" in access_masks_problem(k, "load", ("numel",), "the load")


def test_the_ptxas_log_is_read_when_the_cached_ptx_names_another_copy_of_the_file():
    """Triton's cache key is the kernel's source, not its file: two processes that compile one kernel from two copies
    of a lesson's file (parallel tests do, in their own folders) may leave one's PTX beside the other's cubin. The
    cubins then differ in their line info only; the log still describes the same machine code and must be read (CI
    once failed a plant here). A PTX whose code differs is still refused."""
    import re as _re

    from gluon_course import load_checks, load_solution

    checks, mod = load_checks("18"), load_solution("18")
    k = checks.KERNEL.compile(mod, "sm_90", "bf16", {**checks.TILE, "num_warps": 4})
    files = _re.findall(r'\.file\s+\d+\s+"([^"]+)"', k.ptx)
    assert files, "the PTX carries no .file line: this test needs the compile's line info"
    moved = gc.Compiled(**{**vars(k), "asm": {**k.asm, "ptx": k.ptx.replace(files[0], "/elsewhere/a_copy/" +
                                                                                 files[0].rsplit("/", 1)[-1])}})
    moved._cache = {}
    assert "bytes spill stores" in gc._ptxas_log(moved)
    other = gc.Compiled(**{**vars(k), "asm": {**k.asm, "ptx": k.ptx.replace("mma.sync", "mma.sync", 1)
                                                 .replace("add.s32", "sub.s32", 1)}})
    other._cache = {}
    with pytest.raises(gc.CourseToolError, match="another cubin"):
        gc._ptxas_log(other)


def test_a_compile_waits_for_the_same_compile_in_another_process(tmp_path, monkeypatch):
    """Two processes that would compile one kernel at once: the second waits for the first (then finds Triton's
    cache filled), so that parallel test workers and notebooks do not compile the same kernel twice."""
    import subprocess
    import sys
    import time

    import triton

    monkeypatch.setattr(triton.knobs.cache, "dir", str(tmp_path))
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time, triton\n"
        f"triton.knobs.cache.dir = {str(tmp_path)!r}\n"
        "from gluon_course.machine.compile import _one_compile_at_a_time\n"
        "with _one_compile_at_a_time('k' * 32):\n"
        "    print('held', flush=True); time.sleep(2)\n")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    started = time.monotonic()
    with gc._one_compile_at_a_time("k" * 32):
        waited = time.monotonic() - started
    with gc._one_compile_at_a_time("j" * 32):        # another compile does not wait
        assert time.monotonic() - started - waited < 0.5
    holder.wait(timeout=30)
    assert waited > 1.0, f"the second compile did not wait for the first ({waited:.2f} s)"


def test_tritons_key_is_remembered_across_processes(tmp_path):
    """Triton's key of its own files, kept in the cache by the first process that compiles: the same string Triton
    computes, and read back (not computed) by the next process."""
    script = (
        "import time, triton.runtime.cache as c\n"
        "import gluon_course.machine.compile\n"
        "t = time.perf_counter(); key = c.triton_key(); took = time.perf_counter() - t\n"
        "print(key == c.triton_key.computed(), took)\n")
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split()[0] == "True", first.stdout + first.stderr
    assert list(tmp_path.rglob("triton_key.txt")), "the first process did not keep Triton's key in the cache"
    second = subprocess.run([sys.executable, "-c", script.replace("key == c.triton_key.computed()", "True")],
                            env=env, capture_output=True, text=True, check=True)
    assert float(second.stdout.split()[1]) < 0.1, f"the second process computed the key again: {second.stdout}"
