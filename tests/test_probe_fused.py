"""tools/probes/probe_fused_block.py without a GPU (issue 41's groundwork): the fused epilogues (SwiGLU over gate and
up interleaved in blocks, the residual add) in the host model against the unfused math, the producer's order under
programmatic dependent launch (W, griddepcontrol.wait, then A), sm_90 compiles that fit with the PDL instructions in
their SASS, and mistakes the host model must reject."""
import importlib.util

import numpy as np
import pytest
import torch

from gluon_course.course import repo_root

# A probe's checks, not the course's: `make test-probes` runs them (CI does, after `make test`).
pytestmark = pytest.mark.probe

PROBE = repo_root() / "tools" / "probes" / "probe_fused_block.py"


def _load(path=PROBE, name="probe_fused_block"):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def probe():
    return _load()


def test_gate_and_up_interleave_in_blocks(probe):
    gate = np.arange(10 * 3, dtype=np.float32).reshape(10, 3)
    up = -gate
    cat = probe.interleave_gate_up(gate, up, 4)             # blocks of 4 rows; the last (2 rows) padded to 4
    assert cat.shape == (24, 3)
    assert (cat[0:4] == gate[0:4]).all() and (cat[4:8] == up[0:4]).all()
    assert (cat[16:18] == gate[8:10]).all() and (cat[18:20] == 0).all() and (cat[20:22] == up[8:10]).all()
    assert torch.equal(probe.interleave_gate_up(torch.from_numpy(gate), torch.from_numpy(up), 4), torch.from_numpy(cat))


def test_host_model_each_epilogue_with_and_without_pdl(probe):
    assert probe.host_check() is None


def test_sm90_compile_fits_and_carries_pdl(probe):
    """The decode configuration of two epilogues, one with PDL and one without: no spills, and the SASS holds the
    wait (ACQBULK) after W's first TMA loads and one launch_dependents (PREEXIT) only where PDL is on."""
    assert probe.compile_check(cases=(("swiglu", probe.config_for(1, "swiglu", 14336), True),
                                      ("residual", probe.config_for(1, "residual", 4096), False))) is None


def test_decode_width_keeps_the_sms_busy(probe):
    """4096 columns: 128 tiles of 32 rather than 64 of 64 on 132 SMs; 6144 and 14336 keep 64 (a tie goes wide)."""
    assert [probe.decode_width(n) for n in (4096, 6144, 14336)] == [32, 64, 64]
    assert probe.config_for(16, "residual", 4096)["BLOCK_N"] == 32
    assert probe.config_for(2048, "residual")["BLOCK_N"] == 128


# Mistakes the host model must reject: (what, old, new, epilogue, pdl). ``old`` occurs once in the probe.
PLANTS = [
    ("SiLU applied to up instead of gate", "out = silu_times(acc, acc2)", "out = silu_times(acc2, acc)",
     "swiglu", False),
    ("the residual added twice", "return acc + r.to(gl.float32)", "return acc + 2.0 * r.to(gl.float32)",
     "residual", False),
    ("the residual of the wrong tile (row and column offsets exchanged)",
     "add_residual(acc, r_ptr, stride_rm, off_m, off_n, M, N_OUT, acc_layout)",
     "add_residual(acc, r_ptr, stride_rm, off_n, off_m, M, N_OUT, acc_layout)", "residual", False),
    ("under PDL, gate's strip loaded where up's belongs",
     "tma.async_load(b_desc, [n + BLOCK_N, k * BLOCK_K], ready.index(k), b2_ring.index(k))",
     "tma.async_load(b_desc, [n, k * BLOCK_K], ready.index(k), b2_ring.index(k))", "swiglu", True),
    ("under PDL, A's first tiles loaded before griddepcontrol.wait",
     "        grid_dependency_wait()\n        for k in range(early):\n"
     "            tma.async_load(a_desc, [pid_m * BLOCK_M, k * BLOCK_K], ready.index(k), a_ring.index(k))\n",
     "        for k in range(early):\n"
     "            tma.async_load(a_desc, [pid_m * BLOCK_M, k * BLOCK_K], ready.index(k), a_ring.index(k))\n"
     "        grid_dependency_wait()\n", "plain", True),
    ("under PDL, the consumers read R before the producer's wait",
     "    step = 0\n    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):\n"
     "        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)\n        acc, acc2, step",
     "    step = 0\n    r_early = gl.load(r_ptr)\n"
     "    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):\n"
     "        pid_m, pid_n = grouped_tile(tile, num_pid_m, num_pid_n, GROUP_M)\n        acc, acc2, step",
     "residual", True),
]


@pytest.mark.parametrize("what, old, new, epilogue, pdl", PLANTS, ids=[p[0] for p in PLANTS])
def test_the_host_model_rejects_each_planted_mistake(tmp_path, what, old, new, epilogue, pdl):
    source = PROBE.read_text(encoding="utf-8")
    assert source.count(old) == 1, what
    planted = tmp_path / "probe_fused_planted.py"
    planted.write_text(source.replace(old, new), encoding="utf-8")
    module = _load(planted, "probe_fused_planted")
    said = next(filter(None, (module.model_problem(epilogue, *shape, pdl) for shape in module.MODEL_SHAPES)), None)
    assert said, what


def test_the_launcher_path_rejects_a_wrong_row_stride_of_r(tmp_path):
    """The GPU step's launcher in the host model (ModelGPU): R's row stride given as K instead of R's own."""
    old = "(rr, M, N, K, c.shape[1], rr.stride(0), *self.ce.values())"
    source = PROBE.read_text(encoding="utf-8")
    assert source.count(old) == 1
    planted = tmp_path / "probe_fused_launcher_planted.py"
    planted.write_text(source.replace(old, "(rr, M, N, K, c.shape[1], K, *self.ce.values())"), encoding="utf-8")
    assert _load(planted, "probe_fused_launcher_planted").launcher_problem("residual", 17, 40, 104, pdl=True)


def test_the_compile_check_rejects_a_before_the_wait(tmp_path):
    """The TTGIR order check (wait_order) on the PDL plant that loads A's first tiles before griddepcontrol.wait."""
    what, old, new, _, _ = next(p for p in PLANTS if "A's first tiles loaded before" in p[0])
    planted = tmp_path / "probe_fused_order_planted.py"
    planted.write_text(PROBE.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    module = _load(planted, "probe_fused_order_planted")
    said = module.compile_check(cases=(("plain", module.config_for(1, "plain"), True),))
    assert said and "before griddepcontrol.wait" in said, what


def test_pdl_reaches_the_launch(probe):
    """The launch side of PDL: the GPU step's launcher asks the JIT for ``launch_pdl`` (a CUDAOptions field, carried
    in the compiled kernel's metadata, which Triton's CudaLauncher copies into its ``launch_pdl``), and the kept
    launch's raw path hands that flag to driver.c's launch (stood in for by StubDriver) in its place after the
    cooperative flag."""
    from gluon_course.nvidia.launch import RawLaunch, StubDriver, stub_compiled

    assert probe.FusedLinear("plain", 1, pdl=True).launcher.options == {"launch_pdl": True}
    assert probe.FusedLinear("plain", 1).launcher.options == {}
    cfg = probe.config_for(1, "plain")
    compiled = probe.compiled("plain", cfg, True)
    assert compiled.metadata.launch_pdl is True
    with StubDriver() as driver:
        k = stub_compiled(probe.fused_kernel, compiled, num_warps=cfg["num_warps"])
        k.run.launch_pdl = compiled.metadata.launch_pdl          # what CudaLauncher.__init__ does with the metadata
        raw = RawLaunch.of(k)
        raw(3, 0, tuple(range(3 * 3)) + (0,) * 5)
    grid_x, _, _, stream, function, cooperative, pdl = driver.launches[-1][:7]
    assert (grid_x, cooperative, pdl) == (3, False, True)
