"""Lesson 33's launchers keep their plans as lessons 31, 32 and 34 do (gluon_course.nvidia.launch), on the CPU: plans
built from CPU tensors once per signature with every check; descriptors kept by address, holding no tensor; Triton's
own launcher (CudaLauncher around driver.c's launch) with the driver's two calls stood in for, handed by the plan what
CompiledKernel.run would hand it, each descriptor set encoded once; the cluster kernel's first launch through the JIT
with ``num_ctas`` an int and the grid counting clusters. What only a GPU shows (the kernels' results through this
path) is lesson 33's correct_tma_shapes check."""
from __future__ import annotations

import gc
import weakref

import pytest
import torch

from gluon_course import load_solution
from gluon_course.course import repo_root
from gluon_course.course import load_module_file

STEPS = ("pingpong", "cluster", "subtile")


def _checks():
    return load_module_file(str(next((repo_root() / "solutions").glob("33-*")) / "checks.py"))


def _operands(M=256, N=512, K=384, b_kn=True):
    a = torch.randn(M, K).to(torch.bfloat16)
    b = torch.randn(K, N).to(torch.bfloat16) if b_kn else torch.randn(N, K).to(torch.bfloat16).t()
    return a, b, torch.empty(M, N, dtype=torch.bfloat16)


@pytest.mark.parametrize("step", STEPS)
def test_plans_kept_per_signature_and_checked_once(step):
    mod = load_solution("33")
    a, b, c = _operands()
    p = mod.plan(step, a, b, c)
    assert mod.plan(step, a, b, c) is p
    assert mod.plan(step, a.clone(), b.clone(), torch.empty_like(c)) is p, "the signature holds no address"
    assert mod.plan(step, *_operands(b_kn=False)) is not p, "B as N × K is another signature"
    assert mod.plan(step, a, b, c, programs=3) is not p
    assert mod.plan(step, a, b, c, STAGES=3) is not p
    assert mod.plan(step, *_operands(M=200)) is not p
    storage = torch.empty(256 * 384 + 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="16-byte"):                     # a new alignment: a new plan, TMA's checks
        mod.plan(step, storage[1:1 + 256 * 384].view(256, 384), b, c)
    with pytest.raises(TypeError, match="unknown config keys"):
        mod.plan(step, a, b, c, BLOCK_Q=1)
    with pytest.raises(ValueError, match="BLOCK_N"):
        mod.plan(step, a, b, c, BLOCK_N=300)
    with pytest.raises(ValueError, match="GPU|cuda"):                    # the launcher itself asks for the GPU first
        {"pingpong": mod.pingpong_matmul, "cluster": mod.matmul, "subtile": mod.subtile_matmul}[step](a, b, c)


def test_step_options_refused_with_sentences():
    mod = load_solution("33")
    a, b, c = _operands()
    with pytest.raises(ValueError, match="CLUSTER_M=3"):
        mod.plan("cluster", a, b, c, CLUSTER_M=3)
    with pytest.raises(ValueError, match="SNAKE=2"):
        mod.plan("subtile", a, b, c, SNAKE=2)
    with pytest.raises(ValueError, match="C_BUFFERS=3"):
        mod.plan("subtile", a, b, c, C_BUFFERS=3)


@pytest.mark.parametrize("step, rows, c_cols", [("pingpong", 128, 128), ("cluster", 256, 128), ("subtile", 128, 64)])
def test_descriptors_kept_by_address_and_holding_no_tensor(step, rows, c_cols):
    mod = load_solution("33")
    a, b, c = _operands(b_kn=False)
    p = mod.plan(step, a, b, c)
    d = p.descriptors_for(a, b, c)
    assert p.descriptors_for(a, b, c) is d
    assert [x.block_shape for x in d] == [[rows, 64], [128, 64], [rows, c_cols]]
    for desc, t in zip(d, (a, b.t(), c)):
        assert list(desc.shape) == list(t.shape) and list(desc.strides) == list(t.stride())
        assert desc.base.data_ptr() == t.data_ptr()
    a3 = a.clone()
    watched = weakref.ref(a3)
    p.descriptors_for(a3, b, c)
    del a3
    gc.collect()
    assert watched() is None, "a kept descriptor holds the tensor, not its address"


def _plain(args):
    return [("tensor", id(x)) if isinstance(x, torch.Tensor) else x for x in args]


@pytest.mark.parametrize("step", ("pingpong", "cluster"))
def test_kept_launch_encodes_once_and_hands_driver_what_triton_would(step):
    from gluon_course.nvidia.launch import RawLaunch, StubDriver, stub_compiled

    mod, checks = load_solution("33"), _checks()
    a, b, c = _operands()
    p = mod.plan(step, a, b, c, programs=3)
    cluster = 2 if step == "cluster" else 1
    compiled = checks.compiled(mod, step)
    kernel = mod.cluster_kernel if step == "cluster" else mod.pingpong_kernel
    with StubDriver() as driver:
        k = stub_compiled(kernel, compiled, num_warps=int(mod.CONSUMER_WARPS), num_ctas=cluster)
        p.launcher.compiled, p.launcher.raw = k, RawLaunch.of(k)
        p.grid, p.stream = (3, 1, 1), driver.get_current_stream
        assert p.launcher.raw is not None
        p.launch(a, b, c)
        p.launch(a, b, c)
        assert driver.encodings == 3, "a kept descriptor set is encoded on its first launch only"
        k.run(3, 1, 1, 0, k.function, k.packed_metadata, None, None, None, *p.descriptors_for(a, b, c), *p.rest)
        ours, triton_s = driver.launches[1], driver.launches[2]
        assert _plain(ours[-1]) == _plain(triton_s[-1])
        assert ours[0] == triton_s[0] == 3, "the grid counts clusters (driver.c multiplies it by num_ctas)"
        assert k.packed_metadata[1] == cluster
        moved = c.clone()
        p.launch(a, b, moved)
        maps = [x for x in driver.launches[-1][-1] if isinstance(x, tuple) and len(x) == 8]
        assert driver.encodings == 9 and len(maps) == 3 and maps[2][0] == moved.data_ptr()


class _Recorder:
    """Stands for the kernel in the plan's first launch (the JIT's): records the grid and the launch options."""

    def __init__(self, arg_names):
        self.arg_names, self.launches = arg_names, []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.launches.append((grid, args, kwargs))
        return launch


def test_first_cluster_launch_through_the_jit_with_int_options(monkeypatch):
    from gluon_course.nvidia.launch import StubDriver

    mod = load_solution("33")
    a, b, c = _operands()
    p = mod.plan("cluster", a, b, c)
    recorder = _Recorder(mod.cluster_kernel.arg_names)
    p.launcher.kernel = recorder
    asked = []
    monkeypatch.setattr(mod, "require_hopper", lambda t: None)
    monkeypatch.setattr(mod, "resident_clusters",
                        lambda kernel, args, kwargs, cluster, device: asked.append((kwargs, cluster)) or 60)
    with StubDriver() as driver:
        p.launch(a, b, c)
    (grid, args, kwargs), = recorder.launches
    assert grid == (4, 1, 1), "256 × 512 in cluster tiles of 256 × 128: 4 tiles, fewer than the 60 clusters that fit"
    assert kwargs == {"num_warps": 4, "num_ctas": 2} and all(type(v) is int for v in kwargs.values())
    assert asked and asked[0][1] == 2 and asked[0][0]["num_ctas"] == 2
    assert len(args) == len(mod.cluster_kernel.arg_names), "every argument, constexprs in their places"
    assert driver.launches == [], "the first launch goes through the JIT, not driver.c directly"
