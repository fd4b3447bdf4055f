"""A learner's mistake is one or two lines naming the lesson, the gap, the target and the compiler's first error,
with a hint where the cause is known: never a traceback (and never nanobind's leak report)."""
import re
import subprocess
import sys

import pytest

from gluon_course import lesson
from gluon_course.course import repo_root
from gluon_course.grading.starters import BEGIN, END


def _learner_copy(number: str) -> str:
    """The solution as a learner who filled every gap would have it: TODO comments kept, markers gone."""
    lines, gap = [], 0
    for line in lesson(number).solution_path.read_text().splitlines():
        m = BEGIN.match(line)
        if m:
            gap += 1
            lines.append(f"{m.group('indent')}# TODO gap {gap}: {m.group('what')}")
        elif not END.match(line):
            lines.append(line)
    return "\n".join(lines) + "\n"


def _check(tmp_path, number, old, new):
    text = _learner_copy(number)
    assert text.count(old) == 1, old
    path = tmp_path / "starter.py"
    path.write_text(text.replace(old, new))
    run = subprocess.run([sys.executable, "-m", "gluon_course", "check", number, "--file", str(path)],
                         cwd=repo_root(), capture_output=True, text=True, timeout=600)
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    for noise in ("Traceback", "leaked", "PassManager", "mlir_reproducer", "module attributes"):
        assert noise not in output, f"{noise!r} in the output:\n{output}"
    return run.stdout


MISTAKES = [
    # (what a learner writes, old text, new text, words the message must hold)
    ("gl.arange without layout=", "gl.arange(0, XBLOCK, layout=layout)", "gl.arange(0, XBLOCK)",
     ["lesson 02", "gap 2 (tile_copy_kernel)", "sm_90", "gl.arange: Failed to infer return type",
      "hint: Gluon needs an explicit layout"]),
    ("threads_per_warp hard-coded to 32, compiled for gfx950", "threads_per_warp=[warp_size]",
     "threads_per_warp=[32]",
     ["lesson 02", "gap 2 (tile_copy_kernel)", "gfx950", "64 threads per warp", "hint: the layout hard-codes a warp size"]),
    ("order=[1] in a 1D layout", "order=[0])\n    ### END", "order=[1])\n    ### END",
     ["lesson 02", "order must be a permutation", "hint: order lists every axis once"]),
]


@pytest.mark.parametrize("what, old, new, words", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_compile_mistakes_give_a_short_message(tmp_path, what, old, new, words):
    if "END" in old:        # the marker is not in the learner's copy: match the line before it instead
        old, new = old.split("\n")[0], new.split("\n")[0]
    out = _check(tmp_path, "02", old, new)
    failing = [line for line in out.splitlines() if line.lstrip().startswith("✗")]
    assert failing, out
    block = "\n".join(out.splitlines())
    for word in words:
        assert word in block, f"{what}: {word!r} missing from:\n{out}"
    first_failure = out[out.index(failing[0]):].split("\n  ✓")[0].split("\n  ✗")[0]
    assert len(first_failure.splitlines()) <= 2, f"{what}: the message is longer than two lines:\n{first_failure}"


def test_a_syntax_error_in_the_starter_is_one_line(tmp_path):
    out = _check(tmp_path, "02", "mask = offsets < numel", "mask = offsets < numel)")
    assert re.search(r"starter\.py line \d+: unmatched '\)'", out), out
    assert "0 passed, 1 failed" in out


WS_CALL = """        (mma_partition, (c_ptr, a_ring, b_ring, ready, empty, M, N, K, stride_cm, stride_cn,
                         BLOCK_M, BLOCK_N, BLOCK_K, STAGES, GROUP_M, acc_layout)),
        (load_partition, (a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, STAGES, GROUP_M)),
    ], [1], [LOAD_REGS])"""
WS_SWAPPED = """        (load_partition, (a_desc, b_desc, a_ring, b_ring, ready, empty, M, N, K, STAGES, GROUP_M)),
        (mma_partition, (c_ptr, a_ring, b_ring, ready, empty, M, N, K, stride_cm, stride_cn,
                         BLOCK_M, BLOCK_N, BLOCK_K, STAGES, GROUP_M, acc_layout)),
    ], {counts})"""

# The GEMM lessons' frequent compiler messages, in the course's words (issue: a learner's review of lessons 10-17).
GEMM_MISTAKES = [
    ("16", "is_async without a wait",
     "        acc, _, _ = warpgroup_mma_wait(1, deps=(acc, a_ring.index(slot), b_ring.index(slot)))\n", "",
     ["acc enters the loop as a tensor but leaves an iteration as a running wgmma", "hint: after warpgroup_mma"]),
    ("16", "warpgroup_mma_wait's tuple not unpacked", "acc, _, _ = warpgroup_mma_wait(1,", "acc = warpgroup_mma_wait(1,",
     ["leaves an iteration as a tuple", "hint: warpgroup_mma_wait returns one value per entry of deps"]),
    ("16", "A and B swapped",
     "acc = warpgroup_mma(a_ring.index(slot), b_ring.index(slot), acc, is_async=True)",
     "acc = warpgroup_mma(b_ring.index(slot), a_ring.index(slot), acc, is_async=True)",
     ["gap 1 (matmul_kernel)", "wgmma's operands do not chain", "hint: are A and B swapped?"]),
    ("16", "a keyword warpgroup_mma does not take", "acc, is_async=True)", "acc, asynchronous=True)",
     ["warpgroup_mma takes no keyword argument 'asynchronous'", "hint: warpgroup_mma takes a, b, acc, use_acc",
      "is_async"]),
    ("15", "an instruction wider than the tile", "instr_shape=[16, BLOCK_N, 16])", "instr_shape=[16, 256, 16])",
     ["is larger than the tile it must cover", "hint: a version-3 (wgmma) layout takes instr_shape=[16, N, 16]"]),
    # The partitions in the wrong order: the producer first runs on the kernel's 8 warps, the consumers on one worker
    # warp, whose accumulator layout is built for 8 (MLIR refuses it); with 8 worker warps the accumulator has 128
    # registers a thread and ptxas refuses it (a PTXASError, whose text is the whole PTX).
    ("18", "partitions swapped", WS_CALL, WS_SWAPPED.format(counts="[1], [LOAD_REGS]"),
     ["mma_partition", "a layout built for 8 warps is used in code that runs on 1",
      "hint: a layout's warps_per_cta", "the consumers first"]),
    ("18", "partitions swapped, 8 worker warps", WS_CALL, WS_SWAPPED.format(counts="[8], [LOAD_REGS]"),
     ["mma_partition", "ptxas cannot compile this line with the 128 registers a thread its partition has",
      "hint: gl.warp_specialize's first partition is the default one", "the consumers) comes first"]),
    ("13", "STAGES not declared gl.constexpr", "STAGES: gl.constexpr, ASYNC_COPY: gl.constexpr):",
     "STAGES, ASYNC_COPY: gl.constexpr):", ["parameter 'STAGES' of matmul_kernel is not declared gl.constexpr",
                                            "write `STAGES: gl.constexpr`"]),
]


@pytest.mark.parametrize("number, what, old, new, words", GEMM_MISTAKES, ids=[m[1] for m in GEMM_MISTAKES])
def test_gemm_compile_mistakes_read_as_sentences(tmp_path, number, what, old, new, words):
    out = _check(tmp_path, number, old, new)
    for word in words:
        assert word in out, f"{what}: {word!r} missing from:\n{out}"
    for raw in ("ttng.", "'tt.", "<class '", "AssertionError(", "Pipeline failed", "#ttg.", "Repro command",
                ".visible .entry", "PTXAS error", "ptxas-blackwell", "unexpected keyword argument"):
        assert raw not in out, f"{what}: {raw!r} (a compiler internal) reached the learner:\n{out}"
    failing = [line for line in out.splitlines() if line.lstrip().startswith("✗")]
    first = out[out.index(failing[0]):].split("\n  ✓")[0].split("\n  ✗")[0]
    assert len(first.splitlines()) <= 2, f"{what}: longer than two lines:\n{first}"
    # One compile error behind several checks is printed once.
    assert sum(1 for line in failing if "the same error as above" in line) >= 1, out


def test_out_of_resources_on_a_gpu_is_a_sentence():
    """A launch the GPU refuses (a ring too large for its shared memory) reads as what to shrink, not Triton's text."""
    from triton.runtime.errors import OutOfResources

    from gluon_course.grading.errors import explain
    from gluon_course.grading.runner import LEARNER_ERRORS

    error = OutOfResources(393240, 232448, "shared memory")
    assert isinstance(error, LEARNER_ERRORS)
    text = explain(error, "15")
    assert text.startswith("lesson 15: the kernel asks for 393240 bytes of shared memory per program"), text
    assert "232448" in text and "STAGES" in text and "config_fits" in text and "Required:" not in text
