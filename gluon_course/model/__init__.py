"""The host model: a Gluon kernel's own Python body run on the CPU, with numpy values and a model of shared
memory, mbarriers, TMA, cp.async and wgmma, so that a machine without a GPU can check what its compile cannot:
that the kernel computes the right numbers, reads no slot before the wait that covers it, overwrites no slot an
asynchronous reader may still use, can satisfy every wait, and stays inside its tensors.

    >>> from gluon_course.model import gemm
    >>> gemm.check_tma_gemm(mod, tile={...})       # None, or one sentence

A kernel launched in clusters (``cluster_launch.run_cluster``, lesson 33) runs as the CTAs it has, each with its own
shared memory and barriers (``cluster``: multicast, the barriers CTAs share, cluster barriers).

It is a model, not a GPU: copies land as soon as their barrier's phase can complete, partitions take turns at
their waits, layouts are ignored but for which CTA of a cluster holds which part of a tile. A kernel the model passes can still be slow, or wrong in a way only timing
shows; a kernel it rejects is wrong on every GPU.
"""
from .run import patched, run
from .runtime import Buffer, ModelError, ModelHang, ModelOutOfBounds, ModelRace, ModelUnsupported
from .shims import HostTensorDescriptor, Pointer

__all__ = ["Buffer", "HostTensorDescriptor", "ModelError", "ModelHang", "ModelOutOfBounds", "ModelRace",
           "ModelUnsupported", "Pointer", "patched", "run"]
