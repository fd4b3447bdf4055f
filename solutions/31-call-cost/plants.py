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
    # ---- issue 39: kept plans and descriptors (the toolkit's checks, gluon_course.nvidia.kept_plans) ----
    Plant("the signature tests alignment at 8 bytes, not TMA's 16: a view of A 8 bytes past a 16-byte boundary gets "
          "the plan kept for an aligned A, whose descriptors skip TMA's checks",
          "t.data_ptr() % 16 == 0) for t in (a, b, c))", "t.data_ptr() % 8 == 0) for t in (a, b, c))",
          rejected_by="plans"),
    Plant("the signature is a list, not a tuple: it cannot be a dictionary key",
          "return tuple((t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16 == 0) for t in (a, b, c))",
          "return [(t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16 == 0) for t in (a, b, c)]",
          rejected_by="plans"),
    Plant("the signature holds each tensor's strides as a list: a tuple with an unhashable part cannot be a key either",
          "return tuple((t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16 == 0) for t in (a, b, c))",
          "return tuple((t.shape, list(t.stride()), t.dtype, t.device, t.data_ptr() % 16 == 0) for t in (a, b, c))",
          rejected_by="plans"),
    Plant("the plans are never kept: every call builds its plan again, checks, layouts and descriptors",
          "found = self.plans.get(key)", "found = None", rejected_by="plans"),
    Plant("the plans are never evicted: a program that sees many shapes keeps a plan for each forever",
          "                self.plans.popitem(last=False)", "                pass", rejected_by="plans"),
    Plant("past PLANS_KEPT the newest plan is evicted, not the oldest: every new signature rebuilds its plan on every "
          "call", "                self.plans.popitem(last=False)", "                self.plans.popitem()",
          rejected_by="plans"),
    Plant("the plan's TMA checks are skipped: a misaligned A reaches Triton's own assertion instead of the course's "
          "sentence", "        if checked:", "        if False:", rejected_by="plans"),
    Plant("the TMA checks run on b, not its N × K view: b as w.t() is refused as though its rows were 2 bytes apart",
          '("b" if self.b_kn else "b (as N × K)", b_view,', '("b" if self.b_kn else "b (as N × K)", b,',
          rejected_by="plans"),
    Plant("B's descriptor is built on b, not its N × K view: Triton's own assertion refuses w.t()'s strides",
          "zip((a, b_view, c), self.blocks, self.layouts)", "zip((a, b, c), self.blocks, self.layouts)",
          rejected_by="plans"),
    Plant("the descriptors are kept by the tensors' Python ids, not their addresses: a new view that takes a freed "
          "view's id gets the freed view's descriptors",
          "key = (a.data_ptr(), b.data_ptr(), c.data_ptr())", "key = (id(a), id(b), id(c))",
          rejected_by="descriptors"),
    Plant("the descriptor sets are never evicted: every address ever passed keeps its set",
          "            self.descriptors.popitem(last=False)", "            pass", rejected_by="descriptors"),
    Plant("past DESCRIPTORS_KEPT the newest set is evicted, not the oldest: every new address builds and encodes its "
          "descriptors on every call",
          "            self.descriptors.popitem(last=False)", "            self.descriptors.popitem(last=True)",
          rejected_by="descriptors"),
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
    # ---- an exception raised in passing: the learner reads the course's sentence (the place, the likely cause) ----
    Plant("the signature reads t.data_ptr without calling it: Python cannot take a method modulo 16, and the learner "
          "reads that a method is used in arithmetic without its ( ), in gap 1 (signature)",
          "t.data_ptr() % 16 == 0) for t in (a, b, c))", "t.data_ptr % 16 == 0) for t in (a, b, c))",
          rejected_by="plans", in_passing=True),
]
