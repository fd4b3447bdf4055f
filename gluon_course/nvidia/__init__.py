"""NVIDIA's side of the toolkit: what only the NVIDIA lessons use.

- ``hopper``     the Hopper launchers' rules: the TMA descriptor with its 16-byte rule, wgmma's tile rules,
                 ``require_hopper`` (lessons 15 on)
- ``blackwell``  reading a tcgen05 kernel's sm_100 listing (lessons 15 and 18 end with one, compiled, never run)
- ``pictures``   the ring of a pipelined GEMM's shared-memory slots, drawn from the kernel's run in the host model
- ``dispatch``   the tuned table that picks a GEMM configuration per shape (lesson 32), with its rule for the rest
- ``launch``     a kept plan's host side (lessons 31 and 32): signature, descriptors by address on Address stand-ins,
                 and the launch with CUtensorMaps encoded once (RawLaunch, KeptLaunch); StubDriver for the CPU
- ``kept_plans`` the checks of a launcher's kept plans and descriptors (lessons 31 to 34), on CPU tensors: every
                 offset TMA refuses, descriptors by address and not by Python object, the bounds filled past their ends
- ``tiles``      device helpers the GEMM kernels after lesson 19 share (lesson 17's grouped tile order)
- ``l2_hints``   which TMA copies of a compiled kernel carry an L2 eviction hint, read from its PTX (lesson 32)
- ``read_ceiling`` a kernel that only reads a weight matrix through TMA: the decode shapes' ceiling at W's own size
                 (lesson 32)
- ``clocks``     lesson 33's chart of TFLOPS beside the SM clock each GEMM version ran at
- ``fp8``        lesson 34's fp8 (e4m3) launcher checks, inputs, reference, tolerance and figures
- ``ws_dispatch`` Triton 3.9.0's warp-specialize dispatch in the sm_90 listing, and minimal kernels that have it

The TMA GEMM lessons' shared checks stay in ``grading.tma_gemm``: the recorded notebooks print that file's path in the
sanitizer command they show.
"""
