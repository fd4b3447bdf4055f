"""gluon_course.nvidia.hopper.resident_clusters asks the driver once per launch configuration: the question binds the
kernel's arguments (kernel.warmup), which cost lesson 33's cluster launcher a launcher call's host time on every call
(its 2048 × 2048 × 8192 sweep shape ran at 0.47× cuBLAS in the first recording, 2026-12-02). CPU only: the GPU, the
kernel and the driver are stood in for."""
import types

import torch

from gluon_course.course import load_module_file, repo_root
from gluon_course.nvidia import hopper


class _Kernel:
    def __init__(self):
        self.warmups = 0

    def warmup(self, *args, grid, **kwargs):
        self.warmups += 1
        return types.SimpleNamespace(function=0, metadata=types.SimpleNamespace(shared=4096),
                                     _init_handles=lambda: None)


class _Descriptor:
    def __init__(self, block, dtype):
        self.block_shape, self.base = block, types.SimpleNamespace(dtype=dtype)


def test_the_driver_is_asked_once_per_configuration(monkeypatch):
    import triton

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: types.SimpleNamespace(
        multi_processor_count=132))
    utils = types.SimpleNamespace(cuOccupancyMaxActiveClusters=lambda function, shared, cluster: 60)
    monkeypatch.setattr(triton.runtime.driver, "_active", types.SimpleNamespace(utils=utils))
    monkeypatch.setattr(hopper, "_RESIDENT", {})
    monkeypatch.setattr(hopper, "_RESIDENT_BY_LAUNCH", {})
    mod = load_module_file(str(next((repo_root() / "solutions").glob("33-*")) / "solution.py"))
    kernel = _Kernel()
    kwargs = {"BLOCK_M": 128, "BLOCK_N": 128, "acc_layout": mod.wgmma_layout(128, mod.cluster_layouts(2)["ac_cga"]),
              "num_ctas": 2}
    descs = (_Descriptor([256, 64], torch.bfloat16), _Descriptor([64, 128], torch.bfloat16))
    for M in (2048, 4096, 129):                                     # the sizes do not change the answer
        assert hopper.resident_clusters(kernel, (*descs, M, 2048, 8192), kwargs, 2, "cuda:0") == 60
    assert kernel.warmups == 1
    hopper.resident_clusters(kernel, (*descs, 2048, 2048, 8192), {**kwargs, "BLOCK_N": 64}, 2, "cuda:0")
    assert kernel.warmups == 2                                      # another configuration asks again
    hopper.resident_clusters(kernel, (_Descriptor([256, 64], torch.float16), descs[1], 1, 1, 1), kwargs, 2, "cuda:0")
    assert kernel.warmups == 3                                      # so does another dtype
