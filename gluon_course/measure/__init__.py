"""Measuring on a GPU: correct first, then fast.

- ``device``   is there a GPU, which one, does it have the feature a lesson needs
- ``tensors``  fresh random inputs, poisoned and guarded outputs, comparison with a reference
- ``timing``   do_bench medians, TB/s and TFLOPS, the device-copy ceiling, ``Measurement``
- ``copies``   correctness and bandwidth of a copy kernel (lessons 01–05)
- ``gemm``     correctness, TFLOPS and the library-matmul ceiling of a matrix product (lessons 10–29)
- ``ncu``      Nsight Compute on one launch
"""
from .device import NoGPU, device_warp_size, free_cache, gpu_name, has_gpu, require_capability, require_gpu
from .tensors import Guarded, compare, guarded_empty, is_poison, poison, random_tensor, relative_error
from .timing import L2_DEFEATING_BYTES, Measurement, bench_ms, copy_ceiling_tbs, tbs, tflops

__all__ = ["NoGPU", "device_warp_size", "free_cache", "gpu_name", "has_gpu", "require_capability", "require_gpu",
           "Guarded", "compare", "guarded_empty", "is_poison", "poison", "random_tensor", "relative_error",
           "L2_DEFEATING_BYTES", "Measurement", "bench_ms", "copy_ceiling_tbs", "tbs", "tflops"]
