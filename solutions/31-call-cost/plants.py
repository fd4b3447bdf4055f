"""Planted mistakes of lesson 31: each is the solution with one plausible mistake, and names the key of the check
that must reject it (see gluon_course.grading.checks.Plant)."""
from gluon_course.grading import Plant

PLANTS = [
    # ---- caught without a GPU ----
    Plant("the signature leaves out the strides: A as_strided on the same storage with another row stride gets the "
          "old plan, and the old descriptors read the wrong rows",
          "return tuple((t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16 == 0) for t in (a, b, c))",
          "return tuple((t.shape, t.dtype, t.device, t.data_ptr() % 16 == 0) for t in (a, b, c))",
          rejected_by="plans"),
    Plant("the signature leaves out the alignment: a view of A 2 bytes past a 16-byte boundary reuses a plan whose "
          "checks passed for an aligned A, and TMA reads from the wrong address",
          "return tuple((t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16 == 0) for t in (a, b, c))",
          "return tuple((t.shape, t.stride(), t.dtype, t.device) for t in (a, b, c))",
          rejected_by="plans"),
    Plant("the descriptors are kept by A's address alone: a new B or C at another address reuses descriptors of the "
          "old ones",
          "key = (a.data_ptr(), b.data_ptr(), c.data_ptr())", "key = a.data_ptr()",
          rejected_by="descriptors"),
    Plant("the kept descriptors hold the tensors themselves (TensorDescriptor.from_tensor): every A ever passed "
          "stays alive in the cache",
          "found = tuple(TensorDescriptor(Address(t), list(t.shape), list(t.stride()), block, layout)",
          "found = tuple(TensorDescriptor(t, list(t.shape), list(t.stride()), block, layout)",
          rejected_by="descriptors"),
    Plant("the encoded CUtensorMaps are kept once per plan: a C at another address is written through the map of "
          "the first C",
          "found = self.encoded.get(id(descs))\n        if found is None or found[0] is not descs:",
          "found = next(iter(self.encoded.values()), None)\n        if found is None:",
          rejected_by="encoded_launch"),
    Plant("the encoded maps are never kept: every call encodes its three descriptors again, as Triton's launcher does",
          "found = self.encoded.get(id(descs))\n", "found = None\n", rejected_by="encoded_launch"),
    Plant("the kernel's arguments name BLOCK_N before BLOCK_M: the kernel takes a 256 × 128 tile where the plan's "
          "descriptors hold boxes of a 128 × 256 one",
          '                                ("BLOCK_M", "BLOCK_N", "BLOCK_K", "acc_layout",',
          '                                ("BLOCK_N", "BLOCK_M", "BLOCK_K", "acc_layout",',
          rejected_by="launcher_path"),
    Plant("Matmul takes any config key: a misspelt key (BLOCK_SIZE) is silently ignored and the call runs at another "
          "tile than the one asked for",
          "        unknown = set(config or {}) - set(CONFIG)", "        unknown = set()",
          rejected_by="plan_refusals"),
    # ---- caught on a GPU ----
    Plant("the descriptors are kept by the plan alone, never by address: a second A of the same shape is read from "
          "the first A's memory",
          "found = self.descriptors.get(key)\n", "found = next(iter(self.descriptors.values()), None)\n",
          rejected_by="correct_kept", gpu=True),
]
