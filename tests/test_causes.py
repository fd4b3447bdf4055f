"""An exception that Python, numpy, torch or Triton raises in passing in a learner's code reads as the course's
sentence: the lesson, the place in the learner's file (gap, function, line) and the likely cause, with the facts the
exception holds (a name, two shapes) but never its class name or its own text. A sentence the course (or the learner)
wrote with ``raise`` is kept as written. Each test raises the exception for real, in a file written here."""
import re

import pytest

from gluon_course.course import load_module_file
from gluon_course.grading.causes import describe, raised_by_course
from gluon_course.grading.errors import explain, translate

LEARNER = '''
import numpy as np
import torch


def signature(a, b):
    """A plan's key."""
    # TODO gap 1: one tuple with each tensor's shape
    return [a.shape, b.shape]


def plan(plans, a, b):
    return plans.get(signature(a, b))


def layouts(num_warps):
    # TODO gap 2: the warps along M
    warps_m = num_warps // 2
    return warp_m, num_warps // warps_m


def no_return(x):
    y = x * 2


def unpack_none():
    first, second = no_return(3)
    return first, second


def store_tile(values):
    # TODO gap 3: the tile, transposed
    return np.zeros((16, 64)) + values


def scale_rows(x):
    amax = x.abs().amax(dim=0)
    return x / amax.reshape(-1, 1)


def refuse(k):
    if k % 16:
        raise ValueError(f"K = {k} is not a multiple of 16: TMA needs 16-byte rows")


def refuse_badly(t):
    raise ValueError(f"{t.nbytes_of_rows} bytes")


def describe_for_tma(t):
    from triton.tools.tensor_descriptor import TensorDescriptor
    return TensorDescriptor(t, list(t.shape), list(t.stride()), [16, 16])
'''


@pytest.fixture(scope="module")
def learner(tmp_path_factory):
    path = tmp_path_factory.mktemp("learner") / "starter.py"
    path.write_text(LEARNER)
    return load_module_file(path), path


def _said(learner, call) -> str:
    module, path = learner
    with pytest.raises(Exception) as caught:
        call(module)
    text = explain(caught.value, "31", path)
    assert not re.search(r"\b[A-Z]\w*(?:Error|Exception)\b|Traceback", text), text
    return text


def test_a_list_as_a_key_says_tuple_where_it_is_looked_up(learner):
    import torch

    # The list is found where the dictionary looks it up: plan's line, not signature's.
    text = _said(learner, lambda m: m.plan({}, torch.zeros(2, 3), torch.zeros(3, 4)))
    line = LEARNER.splitlines().index("    return plans.get(signature(a, b))") + 1
    assert text.startswith("lesson 31, plan: a list where a tuple is needed"), text
    assert "hashable" in text and text.endswith(f"(starter.py:{line})"), text
    assert "unhashable type" not in text


def test_a_misspelt_name_is_named_with_the_likely_one(learner):
    text = _said(learner, lambda m: m.layouts(8))
    assert "gap 2 (layouts)" in text and "warp_m is not defined: a typo, or a name used before it is assigned" in text
    line = LEARNER.splitlines().index("    return warp_m, num_warps // warps_m") + 1
    assert "did you mean warps_m?" in text and f"starter.py:{line}" in text


def test_a_missing_return_is_said_as_one(learner):
    text = _said(learner, lambda m: m.unpack_none())
    assert "unpack_none" in text and "a value is None where an object was expected" in text
    assert "missing return" in text and "non-iterable" not in text


def test_numpys_broadcast_error_names_both_shapes(learner):
    import numpy as np

    text = _said(learner, lambda m: m.store_tile(np.ones((64, 16))))
    assert "gap 3 (store_tile)" in text and "two arrays of shapes" in text and "64 × 16" in text, text
    assert "could not be broadcast" not in text


def test_torchs_size_mismatch_names_the_dimension_and_sizes(learner):
    import torch

    text = _said(learner, lambda m: m.scale_rows(torch.ones(64, 512)))
    assert "scale_rows" in text and "along dimension" in text and "64" in text and "512" in text, text
    assert "must match the size" not in text


def test_tritons_tma_assert_reads_as_tmas_rule(learner):
    import torch

    storage = torch.zeros(16 * 20 + 1, dtype=torch.bfloat16)
    shifted = storage[1:].view(16, 20)                # 2 bytes past a 16-byte boundary, rows of 40 bytes
    text = _said(learner, lambda m: m.describe_for_tma(shifted))
    assert "TMA cannot describe this tensor" in text and "multiples of 16" in text, text
    assert "16-byte aligned" not in text


def test_the_courses_own_sentence_is_kept_as_written(learner):
    line = LEARNER.splitlines().index('        raise ValueError(f"K = {k} is not a multiple of 16: TMA needs 16-byte rows")')
    text = _said(learner, lambda m: m.refuse(40))
    assert text == f"lesson 31, refuse: K = 40 is not a multiple of 16: TMA needs 16-byte rows (starter.py:{line + 1})"


def test_a_toolkit_refusal_is_kept_as_written():
    """A launcher's refusal from the toolkit (``gluon_course.validate``) is the course's sentence: printed as it is,
    without its class name."""
    from gluon_course.validate import require_power_of_two

    with pytest.raises(ValueError) as caught:
        require_power_of_two("BLOCK_M", 96)
    assert raised_by_course(caught.value)
    # (no line of the learner's file on the way: the test calls the toolkit directly)
    text = explain(caught.value, "15", learner_file="starter.py")
    assert text == f"lesson 15: {caught.value}", text


def test_an_error_while_a_raise_builds_its_sentence_is_not_the_courses(learner):
    """``raise ValueError(f"{t.nbytes_of_rows}")`` that fails on the attribute raised an AttributeError in passing:
    told apart by the class the raise statement builds, not by the line."""
    module, path = learner
    with pytest.raises(AttributeError) as caught:
        module.refuse_badly(3)
    assert not raised_by_course(caught.value, path)
    text = explain(caught.value, "31", path)
    assert "an integer has no attribute nbytes_of_rows" in text and "'int'" not in text, text


def test_a_raise_in_a_library_is_not_the_courses():
    with pytest.raises(TypeError) as caught:
        len(3)
    assert not raised_by_course(caught.value)
    assert describe(caught.value)[0].startswith("a single integer where a list or tuple is expected")


@pytest.mark.parametrize("message, words", [
    ("NoneType' object has no attribute 'rank'", []),          # not the front end's exact text: no match, kept
    ("'NoneType' object has no attribute 'rank'", ["a value is None", "missing return"]),     # .rank: Triton's own
    ("module 'triton.experimental.gluon.language.nvidia.ampere.async_copy' has no attribute 'async_loads'",
     ["async_copy has no async_loads", "did you mean async_load?"]),
    ("get_blocked_layout(): incompatible function arguments. The following argument types are supported:",
     ["get_blocked_layout", "a float where it takes integers"]),
    ("'shared_memory_descriptor' object has no attribute '__getitem__'", ["ring.index(slot)"]),
])
def test_python_errors_inside_a_kernel_read_as_sentences(message, words):
    """The compiler's front end reports a Python error met in the kernel's code by its text: ``translate`` says it
    as the host does."""
    said, hint = translate(message)
    for word in words:
        assert word in said + hint, said
    if words:
        assert not re.search(r"object has no attribute|incompatible function arguments|triton\.\w+\.", said), said


def test_the_notebook_lab_prints_the_same_sentence_as_check(tmp_path, capsys):
    """``Lab.machine_code`` (the notebooks' check cell) and ``check`` (the command) read a learner's exception
    alike."""
    from gluon_course import lesson
    from gluon_course.grading.notebook import Lab
    from gluon_course.grading.runner import check

    old = "warps_per_cta=[warps_m, num_warps // warps_m], order=[1, 0])"
    text = lesson("10").solution_path.read_text()
    assert text.count(old) == 1
    path = tmp_path / "starter.py"
    path.write_text(text.replace(old, old.replace("[warps_m,", "[warp_m,")))
    said = []
    assert not check("10", path=path, figures=False, out=said.append)
    Lab("10", module=load_module_file(path), show_header=False).machine_code()
    printed = capsys.readouterr().out
    first = next(line for line in said if "✗" in line).strip()
    assert first in printed, (first, printed)
    assert "warp_m is not defined" in first and "did you mean warps_m?" in first and "fma_layouts" in first, first
    assert "NameError" not in printed + "\n".join(said)
