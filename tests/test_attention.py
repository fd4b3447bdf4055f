"""Lesson 36's toolkit (gluon_course.nvidia.attention) on its own: the reference is PyTorch's SDPA (top-left causal),
and the solution's key_blocks counts the blocks a query tile visits (run on the host, the model's stand-ins for
gl.minimum and gl.cdiv)."""
import math

import numpy as np
import torch

from gluon_course import load_solution
from gluon_course.model.run import patched
from gluon_course.nvidia import attention


def test_the_reference_is_torchs_sdpa_with_top_left_causal():
    """reference() in fp64 against torch's SDPA (its math, in fp64) with Sq < Sk and Sq > Sk, causal and not."""
    for Sq, Sk in ((3, 7), (7, 3)):
        q, k, v = attention.inputs(1, 2, Sq, Sk, 16)
        for causal in (False, True):
            want = torch.nn.functional.scaled_dot_product_attention(
                *(torch.from_numpy(x).double() for x in (q, k, v)), is_causal=causal).numpy()
            got, _ = attention.reference(q, k, v, causal, 1 / math.sqrt(16))
            assert np.allclose(got, want, rtol=1e-12, atol=1e-12), (Sq, Sk, causal)


def test_key_blocks_skip_what_lies_above_the_diagonal():
    """(n_full, n_all): causal, a tile of 128 queries at row 256 over 1000 keys in blocks of 64 visits blocks 0..5,
    of which 0..3 unmasked; past the keys' end the tail block is masked; without causal every block."""
    key_blocks = patched(load_solution("36").key_blocks)
    counts = lambda *args: tuple(int(np.asarray(x)) for x in key_blocks(*args))  # noqa: E731
    assert counts(256, 1000, 128, 64, True) == (4, 6)
    assert counts(896, 1000, 128, 64, True) == (14, 16)          # the last block (keys 960..1023) is partial
    assert counts(0, 1, 128, 64, True) == (0, 1)
    assert counts(256, 1000, 128, 64, False) == (15, 16)


def test_block_kinds_of_a_causal_head():
    """The picture's data: 8 tiles of 128 over 1000 keys, causal: the diagonal masked, below it unmasked."""
    kinds = attention.block_kinds(load_solution("36"), 1000, 1000, True)
    assert (np.diag(kinds) == 1).all() and (np.tril(kinds, -1)[np.tril_indices(8, -1)] == 2).all()
    assert (np.triu(kinds, 1) == 0).all()
