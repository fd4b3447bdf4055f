"""What an exception that Python, numpy, torch or Triton raised in passing means, in the course's words.

A learner's code can fail on its way: a list used as a dictionary key, a misspelt name, a function without its
return, two shapes that do not meet. ``describe`` says the likely cause from ``CAUSES``, a table of common mistakes,
with the facts the exception holds (a name, two shapes) but never its class name or its own text; ``learner_frame``
finds the innermost line of the learner's file in the traceback (the place ``errors.explain`` names), and
``raised_by_course`` tells a sentence the course (or the learner) wrote with ``raise`` from one raised in passing, by
where it was raised, never by its words.
"""
from __future__ import annotations

import ast
import difflib
import linecache
import os
import re
import sys
from pathlib import Path


# -- where an exception was raised --------------------------------------------------------------------------------

def _frames(error: BaseException) -> list:
    """The traceback's frames, outermost first: (frame, line number)."""
    frames, tb = [], error.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _same_file(a: str, b) -> bool:
    return bool(a) and b is not None and os.path.realpath(a) == os.path.realpath(str(b))


def _course_root() -> str:
    from ..course import repo_root

    return os.path.realpath(repo_root())


def _is_library(filename: str) -> bool:
    """A file of Python itself or of an installed package (numpy, torch, Triton): not the course's, not the learner's."""
    path = os.path.realpath(filename)
    if filename.startswith("<"):
        return True
    return ("site-packages" in path or "dist-packages" in path
            or path.startswith(os.path.realpath(sys.base_prefix)) or path.startswith(os.path.realpath(sys.prefix)))


def _library_of(filename: str) -> str:
    for name, said in (("triton", "Triton"), ("torch", "torch"), ("numpy", "numpy")):
        if re.search(rf"[/\\]{name}[/\\]", filename):
            return said
    return "Python"


def learner_frame(error: BaseException, learner_file=None):
    """(file, line, function) of the innermost line of the learner's file in the traceback: ``learner_file`` when
    given, else the innermost file that is neither an installed package nor the course's toolkit or checks. None when
    the learner's code is not on the way (a check that met, in its own code, a value the learner's code returned)."""
    root = _course_root()
    for frame, line in reversed(_frames(error)):
        filename = frame.f_code.co_filename
        if learner_file is not None:
            if _same_file(filename, learner_file):
                return filename, line, frame.f_code.co_name
            continue
        path = os.path.realpath(filename)
        if _is_library(filename) or path.startswith(os.path.join(root, "gluon_course")) \
                or os.path.basename(path) in ("checks.py", "plants.py"):
            continue
        return filename, line, frame.f_code.co_name
    return None


def _statement_at(filename: str, line: int):
    """The innermost statement of ``filename`` that spans ``line`` (a raise or an assert), or None."""
    try:
        tree = ast.parse("".join(linecache.getlines(filename)) or Path(filename).read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    found = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Raise, ast.Assert)) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if found is None or node.lineno >= found.lineno:
                found = node
    return found


def raised_by_course(error: BaseException, learner_file=None) -> bool:
    """True when ``error`` is a sentence the course (or the learner) wrote: raised by a ``raise`` statement that builds
    this very exception class (``raise ValueError(f"...")``), or an ``assert`` with a message, in a file of the course
    repository (the toolkit, a lesson's solution, checks or starter) or the learner's own file. An exception Python,
    numpy, torch or Triton raised (a dictionary lookup on a list, a failed assert inside Triton), or one raised while
    such a statement built its message, is not."""
    frames = _frames(error)
    if not frames:
        return False
    frame, line = frames[-1]
    filename = frame.f_code.co_filename
    ours = _same_file(filename, learner_file) or (not _is_library(filename)
                                                  and os.path.realpath(filename).startswith(_course_root() + os.sep))
    if not ours:
        return False
    node = _statement_at(filename, line)
    if isinstance(node, ast.Assert):
        return node.msg is not None and bool(str(error).strip())
    if not isinstance(node, ast.Raise) or node.exc is None:
        return False
    built = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    name = built.attr if isinstance(built, ast.Attribute) else built.id if isinstance(built, ast.Name) else None
    if isinstance(node.exc, ast.Name) and not name[:1].isupper():
        return bool(str(error).strip())                 # ``raise problem``: an exception built earlier by the course
    return name in {cls.__name__ for cls in type(error).__mro__}


# -- what an exception raised in passing means, in the course's words -------------------------------------------

def _dims(text: str) -> str:
    """``(64,16)``, ``[64, 16]`` or ``64`` → ``64 × 16``."""
    numbers = re.findall(r"-?\d+", text)
    return " × ".join(numbers) if numbers else "a scalar"


def _article(word: str) -> str:
    return f"an {word}" if word[:1].lower() in "aeiou" else f"a {word}"


_KINDS = {"NoneType": "None", "builtin_function_or_method": "method", "method": "method", "function": "function",
          "str": "string", "dict": "dictionary", "int": "integer", "float": "float", "list": "list", "tuple": "tuple",
          "Tensor": "tensor", "ndarray": "numpy array", "bool": "bool", "constexpr": "constexpr"}


def _kind(type_name: str) -> str:
    return _KINDS.get(type_name, type_name)


def _callable_name(name: str) -> str:
    """``DotOperandLayout.__init__`` → ``DotOperandLayout``; ``outer.<locals>.inner`` → ``inner``."""
    return re.sub(r"\.__init__$|\.__call__$", "", name.rsplit(".<locals>.", 1)[-1])


def _did_you_mean(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, [c for c in candidates if not c.startswith("__")], n=1, cutoff=0.7)
    return f"did you mean {close[0]}?" if close else ""


def _module_name(dotted: str) -> str:
    """What a lesson calls a module: ``triton.experimental.gluon.language`` is ``gl``, any other its last part."""
    return {"triton.experimental.gluon.language": "gl"}.get(dotted, dotted.rsplit(".", 1)[-1])


def _none_found(m, error, **_):
    groups = m.groupdict()
    # An attribute read inside a library (Triton's ._to_ir) says nothing to a learner: named only when their code
    # (or the course's) reads it.
    frames = _frames(error) if error is not None else []
    ours = bool(frames) and not _is_library(frames[-1][0].f_code.co_filename)
    what = ({"subscriptable": " (it is indexed with [ ])", "iterable": " (it is looped over or unpacked)",
             "callable": " (it is called)"}.get(groups.get("how") or "")
            or (f" (.{groups['attr']} is read from it)" if groups.get("attr") and ours else "")
            or ("" if groups.get("attr") else " (it is unpacked into several names)"))
    return (f"a value is None where an object was expected{what}: a function that returns nothing? (a missing "
            "return, or a return inside an if that was not taken)")


def _unhashable(m, error, **_):
    kind = _kind(m.group(1))
    if kind == "list":
        return ("a list where a tuple is needed: a dictionary key (or a set member) must be hashable, and a list is not "
                "(build the key as tuple(...) or with ( ) instead of [ ])")
    return (f"{_article(kind)} used as a dictionary key (or a set member), which must be hashable: a key is made of "
            "numbers, strings and tuples of them (the value was given where its key belongs?)")


def _unpack(m, error, **_):
    want, got = m.group("want"), m.groupdict().get("got")
    if m.group("how") == "not enough":
        return (f"{want} names receive {got} values: does the function return {got} where {want} are expected (a value "
                "left out of its return)?")
    return (f"more values than the {want} names that receive them{f' ({got})' if got else ''}: does the function "
            "return more values, or one tensor (unpacked along its first dimension) where a tuple was meant?")


def _operands(m, error, **_):
    op, a, b = m.group(1), _kind(m.group(2)), _kind(m.group(3))
    if "method" in (a, b) or "function" in (a, b):
        return (f"a method used in arithmetic ({op}) without being called: a missing ( ) (t.data_ptr(), not "
                "t.data_ptr; x.bit_length(), not x.bit_length)")
    if "None" in (a, b):
        return f"None in arithmetic ({op}): a function that returns nothing? (a missing return)"
    return f"{op} between {_article(a)} and {_article(b)}, which Python does not define: a value of the wrong kind?"


def _not_integer(m, error, **_):
    kind = _kind(m.group(1))
    if kind == "float":
        return ("a float where an integer is needed (a count, a size, a range): / divides into a float, // into an "
                "integer")
    if kind in ("method", "function"):
        return "a method where an integer is needed: a missing ( )?"
    return f"{_article(kind)} where an integer is needed"


def _not_callable(m, error, **_):
    kind = _kind(m.group(1))
    return (f"{_article(kind)} is called like a function: a stray ( ) after a name that is not a function (an "
            "attribute such as .T or .shape is read without brackets)")


def _indexed(m, error, **_):
    kind = _kind(m.group(1))
    if kind in ("method", "function"):
        return "a method indexed with [ ] instead of called: write t.stride(0), not t.stride[0]"
    return f"{_article(kind)} indexed with [ ], which it does not take: a value of another kind than the one meant?"


def _not_iterable(m, error, **_):
    kind = _kind(m.group(1))
    if kind == "None":
        return _none_found(m, error)
    return (f"a single {kind} where a list or tuple of values is expected (a layout's warps_per_cta=[4, 1], not 4; "
            "a shape [BLOCK_M, BLOCK_K])")


def _no_len(m, error, **_):
    kind = _kind(m.group(1))
    return (f"a single {kind} where a list or tuple is expected (its length is asked for): a shape is written "
            "[BLOCK_M, BLOCK_K], a list of bases [[1, 0]], not their entries one by one")


def _keyword(m, error, **_):
    name, word = _callable_name(m.group(1)), m.group(2)
    takes = _parameters_of(m.group(1), error)
    hint = (f"{name} takes {', '.join(takes)}" + (f"; {_did_you_mean(word, takes)}" if _did_you_mean(word, takes)
                                                   else "")) if takes else ""
    return f"{name} takes no keyword argument {word!r}: a misspelt or invented keyword", hint


def _missing(m, error, **_):
    return (f"{_callable_name(m.group(1))} is called without {m.group(3)}: an argument left out of the call (or "
            "the arguments in another order than its parameters)")


def _too_many(m, error, **_):
    name, takes, given = m.group(1), m.group(2), m.group(3)
    if "." in name.rsplit(".<locals>.", 1)[-1] and "but" in m.group(0) and takes.isdigit():
        takes, given = str(int(takes) - 1), str(int(given) - 1)     # Python counts a method's self in both
    takes = "none" if takes in ("no", "0") else takes
    return (f"{_callable_name(name)} is called with {given} argument{'s' if given != '1' else ''} but takes {takes}: "
            "an extra argument, or arguments meant for another call?")


def _str_index(m, error, **_):
    return (f"{_article(_kind(m.group(1)))} indexed with {_article(_kind(m.group(2)))}: it takes integer positions. "
            "Was a dictionary (looked up by name) expected where this value was returned?")


def _compare(m, error, **_):
    a, b = _kind(m.group(2)), _kind(m.group(3))
    extra = ": a function that returns nothing?" if "None" in (a, b) else ": a value of the wrong kind?"
    return f"{m.group(1)} between {_article(a)} and {_article(b)}{extra}"


def _attribute(m, error, **_):
    kind, attr = _kind(m.group(1)), m.group(2)
    if attr == "__getitem__":                        # how the front end reports x[i] on what takes no index
        if kind == "shared_memory_descriptor":
            return "a shared-memory buffer indexed with [ ]: a ring's slot is ring.index(slot)"
        return f"{_article(kind)} indexed with [ ], which it does not take"
    if kind in ("method", "function"):
        return (f"a method has no attribute {attr}: the method before .{attr} is not called? (x.float().{attr}, not "
                f"x.float.{attr})")
    obj = getattr(error, "obj", None)
    suggestion = _did_you_mean(attr, dir(obj)) if obj is not None else ""
    return (f"{_article(kind)} has no attribute {attr}: a misspelt name, or a value of another kind than the one "
            "meant" + (f" ({suggestion})" if suggestion else ""))


def _module_attribute(m, error, **_):
    module, attr = _module_name(m.group(1)), m.group(2)
    obj = getattr(error, "obj", None) or sys.modules.get(m.group(1))
    suggestion = _did_you_mean(attr, dir(obj)) if obj is not None else ""
    return f"{module} has no {attr}: a misspelt name?" + (f" ({suggestion})" if suggestion else "")


def _class_attribute(m, error, **_):
    obj = getattr(error, "obj", None)
    suggestion = _did_you_mean(m.group(2), dir(obj)) if obj is not None else ""
    return f"{m.group(1)} has no attribute {m.group(2)}: a misspelt name?" + (f" ({suggestion})" if suggestion else "")


def _not_defined(m, error, names=(), **_):
    name = m.group(1)
    suggestion = _did_you_mean(name, names)
    return (f"{name} is not defined: a typo, or a name used before it is assigned"
            + (f" ({suggestion})" if suggestion else ""))


def _unbound(m, error, **_):
    return (f"{m.group(1)} is read before this function assigns it: a name assigned anywhere in a function is that "
            "function's own from its first line (assigned later, or only on a path not taken?)")


def _sequence_index(m, error, **_):
    kind = _kind(m.group(1))
    return (f"an index past the end of {_article(kind)}: an off-by-one? (positions run from 0 to its length − 1; a "
            f"{kind} of n values has no [n])")


def _out_of_bounds(m, error, **_):
    i, axis, n = m.group(1), m.group(2), int(m.group(3))
    return f"index {i} is past the end of dimension {axis}, whose size is {n} (its positions run from 0 to {n - 1})"


def _dimension(m, error, **_):
    low, high, got = int(m.group(1)), int(m.group(2)), m.group(3)
    return (f"dimension {got} of a tensor that has {high + 1} (dimensions count from 0, or from −1 backwards): "
            "dim= names another axis than the one meant?")


def _empty(m, error, **_):
    return f"a value taken from an empty {_kind(m.group(1))}: nothing was stored before it is read"


def _broadcast(m, error, **_):
    shapes = re.findall(r"\(([\d,\s]*)\)", m.group(0))
    if len(shapes) >= 2:
        a, b = _dims(shapes[0]), _dims(shapes[1])
        return (f"two arrays of shapes {a} and {b} met where one shape was expected: a tile transposed (a permute "
                "missing, or one too many), or a vector laid along the wrong axis?")
    return "two arrays of shapes that do not match met where one shape was expected"


def _broadcast_into(m, error, **_):
    return (f"a value of shape {_dims(m.group(1))} written into a place of shape {_dims(m.group(2))}: a tile "
            "transposed, or a vector laid along the wrong axis?")


def _sizes(m, error, **_):
    a, b, d = m.group(1), m.group(2), m.group(3)
    return (f"two tensors met where one shape was expected: along dimension {d} one has {a} elements and the other "
            f"{b} (a per-row value laid along the columns, a reduction over the wrong dim, or a missing reshape?)")


def _matrix_product(m, error, **_):
    return (f"a product of a {m.group(1)} × {m.group(2)} and a {m.group(3)} × {m.group(4)} matrix: the inner sizes "
            f"{m.group(2)} and {m.group(3)} differ (an operand transposed?)")


def _reshape(m, error, **_):
    return (f"a reshape (or view) to {_dims(m.group(1))} of {m.group(2)} elements: the sizes do not multiply to the "
            "number of elements")


def _reshape_np(m, error, **_):
    return (f"a reshape to {_dims(m.group(2))} of {m.group(1)} elements: the sizes do not multiply to the number "
            "of elements")


def _view(m, error, **_):
    return ("view() of a tensor whose memory is not laid out for that shape (a transposed view?): reshape() copies "
            "when it has to, or call .contiguous() first")


def _devices(m, error, **_):
    return "tensors on different devices met in one operation: move them to one device (.cuda(), .cpu())"


def _dtypes(m, error, **_):
    return "tensors of different dtypes met in one operation: convert one of them (.to(...)) first"


def _not_implemented_for(m, error, **_):
    return f"{m.group(1)} is not available for {m.group(2)} tensors here: another dtype (or device) is needed"


def _incompatible(m, error, text="", **_):
    # nanobind lists the types it was handed ("Invoked with types: GluonOpBuilder, list, list, dict, list"): the odd
    # one out says what was wrong.
    handed = re.search(r"Invoked with types: (.*)", text)
    kinds = {k.strip().rsplit(".", 1)[-1] for k in handed.group(1).split(",")} if handed else set()
    if "float" in kinds:
        what = "a float where it takes integers (/ divides into a float, // into an integer)"
    elif "dict" in kinds:
        what = "a dictionary where it takes a list"
    elif "NoneType" in kinds:
        what = "None where it takes a value: a function that returns nothing?"
    else:
        what = "a float where it takes integers (/ divides into a float), or a single value where it takes a list?"
    return f"Triton's {m.group(1)} was handed a value of a kind it does not take: {what}"


def _tma(m, error, **_):
    return ("TMA cannot describe this tensor: its address and the byte stride between its rows must be multiples of "
            "16 (Triton's TensorDescriptor refused it). The course's tma_descriptor checks this with a sentence: was "
            "it skipped, or run on another view than the one described (b instead of its N × K view)?")


def _tma_contiguous(m, error, **_):
    return ("TMA reads rows of unit stride, and this tensor's last dimension is not contiguous: a transposed view "
            "where the K × N (or N × K) tensor was meant?")


def _tma_rank(m, error, **_):
    return ("a TMA descriptor whose block shape, tensor and layout do not have one number of dimensions: a 2D "
            "tensor takes a block [rows, columns] and a 2D layout")


def _division(m, error, **_):
    return "a division by zero: a size or count that is 0 where it divides (an empty dimension, a layout's 0 along an axis?)"


def _recursion(m, error, **_):
    return "a function that calls itself without end"


# (exception classes the pattern applies to, or None for any; pattern in the exception's text; sentence). The first
# match wins. A sentence may take facts from the text (a name, two shapes), never the text itself.
CAUSES = [
    ((TypeError,), r"unhashable type: '(\w+)'", _unhashable),
    ((TypeError,), r"cannot unpack non-iterable NoneType object", _none_found),
    ((TypeError,), r"cannot unpack non-iterable (\w+) object",
     lambda m, e, **_: f"one {_kind(m.group(1))} unpacked into several names: does the function return fewer values "
                       "than the names that receive them?"),
    ((TypeError,), r"'NoneType' object is not (?P<how>subscriptable|iterable|callable)", _none_found),
    ((AttributeError,), r"'NoneType' object has no attribute '(?P<attr>\w+)'", _none_found),
    ((TypeError,), r"'(\w+)' object is not callable", _not_callable),
    ((TypeError,), r"'(\w+)' object is not subscriptable", _indexed),
    ((TypeError,), r"'(\w+)' object is not iterable", _not_iterable),
    ((TypeError,), r"object of type '(\w+)' has no len\(\)", _no_len),
    ((TypeError,), r"unsupported operand type\(s\) for ([^:]+): '(\w+)' and '(\w+)'", _operands),
    ((TypeError,), r"'(\w+)' object cannot be interpreted as an integer", _not_integer),
    ((TypeError,), r"([\w.<>]+)\(\) got an unexpected keyword argument '(\w+)'", _keyword),
    ((TypeError,), r"([\w.<>]+)\(\) missing (\d+) required (?:positional |keyword-only )?arguments?: (.+)$", _missing),
    ((TypeError,), r"([\w.<>]+)\(\) takes (?:from \d+ to )?(\d+) positional arguments? but (\d+) (?:were|was) given",
     _too_many),
    ((TypeError,), r"([\w.<>]+)\(\) takes (?:at most |exactly |at least )?(\d+|no) (?:positional )?arguments? \((\d+) "
                   r"given\)", _too_many),
    ((TypeError,), r"(\w+) indices must be integers or slices, not (\w+)", _str_index),
    ((TypeError,), r"argument after \*\* must be a mapping, not (\w+)|'(\w+)' object is not a mapping",
     lambda m, e, **_: f"{_article(_kind(m.group(1) or m.group(2)))} where a dictionary is expected (spread with **"
                       " into a dictionary or keyword arguments): does a function return a tuple or a single value "
                       "where a dict {name: value} is expected?"),
    ((TypeError,), r"argument after \* must be an iterable, not (\w+)",
     lambda m, e, **_: f"{_article(_kind(m.group(1)))} where a list or tuple is expected (spread with *)"),
    ((TypeError,), r"'([<>=!]+)' not supported between instances of '(\w+)' and '(\w+)'", _compare),
    ((TypeError,), r"(\w+)\(\): incompatible function arguments", _incompatible),
    ((AttributeError,), r"module '([\w.]+)' has no attribute '(\w+)'", _module_attribute),
    ((AttributeError,), r"type object '(\w+)' has no attribute '(\w+)'", _class_attribute),
    ((AttributeError,), r"'(\w+)' object has no attribute '(\w+)'", _attribute),
    ((UnboundLocalError,), r"cannot access local variable '(\w+)'", _unbound),
    ((NameError,), r"name '(\w+)' is not defined", _not_defined),
    ((IndexError,), r"(tuple|list|string|str) index out of range", _sequence_index),
    ((IndexError,), r"index (-?\d+) is out of bounds for (?:dimension|axis) (\d+) with size (\d+)", _out_of_bounds),
    ((IndexError,), r"Dimension out of range \(expected to be in range of \[(-?\d+), (-?\d+)\], but got (-?\d+)\)",
     _dimension),
    ((IndexError, KeyError), r"pop(?:item)?\(\)?:? (?:from (?:an )?empty (\w+)|(dictionary) is empty)",
     lambda m, e, **_: _empty(re.match(r"(.*)", m.group(1) or m.group(2)), e)),
    ((ValueError,), r"(?P<how>not enough|too many) values to unpack \(expected (?P<want>\d+)(?:, got (?P<got>\d+))?\)",
     _unpack),
    ((ValueError,), r"operands could not be broadcast together with .*", _broadcast),
    ((ValueError,), r"could not broadcast input array from shape \(([^)]*)\) into shape \(([^)]*)\)", _broadcast_into),
    ((ValueError,), r"non-broadcastable output operand with shape \(([^)]*)\) doesn't match the broadcast shape "
                    r"\(([^)]*)\)", lambda m, e, **_: _broadcast_into(re.match(r"(.*)\|(.*)", f"{m.group(2)}|{m.group(1)}"), e)),
    ((ValueError,), r"cannot reshape array of size (\d+) into shape (\([^)]*\))", _reshape_np),
    ((RuntimeError,), r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton "
                      r"dimension (\d+)", _sizes),
    ((RuntimeError,), r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)", _matrix_product),
    ((RuntimeError,), r"shape '(\[[^\]]*\])' is invalid for input of size (\d+)", _reshape),
    ((RuntimeError,), r"view size is not compatible with input tensor's size and stride", _view),
    ((RuntimeError,), r"Expected all tensors to be on the same device", _devices),
    ((RuntimeError,), r"expected (?:m1 and m2 to have the same dtype|scalar type \w+ but found \w+|both vectors to have "
                      r"same dtype)|can't be cast to the desired output type", _dtypes),
    ((RuntimeError, NotImplementedError), r"\"(\w+)\" not implemented for '(\w+)'", _not_implemented_for),
    ((AssertionError,), r"(?:base|strides)(?:/strides)? must be 16-byte aligned", _tma),
    ((AssertionError,), r"Last dimension must be contiguous", _tma_contiguous),
    ((AssertionError,), r"rank mismatch|layout rank must match block shape rank", _tma_rank),
    ((ZeroDivisionError,), r"", _division),
    ((RecursionError,), r"", _recursion),
]

# What each kind of exception says when no entry of CAUSES matches: its meaning in a few words, never its name.
KINDS = [
    (UnboundLocalError, "a name read before this function assigns it"),
    (NameError, "a name that is not defined"),
    (AttributeError, "an attribute the value does not have (a misspelt name, or a value of another kind?)"),
    (KeyError, "a key that is not in the dictionary"),
    (IndexError, "an index past the end"),
    (ZeroDivisionError, "a division by zero"),
    (TypeError, "a value of the wrong kind (a list for a tuple, a single value for a list, None for an object?)"),
    (ValueError, "a value that cannot be taken here"),
    (AssertionError, "a check failed on what it was given"),
    (RuntimeError, "an operation refused what it was given"),
]


def _key_sentence(error: KeyError) -> str:
    key = error.args[0] if error.args else None
    shown = repr(key)
    what = f"the key {shown} is" if len(shown) <= 40 else f"a key (a {type(key).__name__}) is"
    return (f"{what} not in the dictionary: a key never stored (looked up with [ ] where .get() was meant?), or "
            "spelt (or built) differently")


def describe(error: BaseException | None, text: str | None = None, names=()) -> tuple[str, str]:
    """(the cause in the course's words, a hint or "") for an exception raised in passing, or for ``text`` (an
    exception's text alone, as the compiler's front end reports one), or ("", "") when no entry of CAUSES matches
    and ``error`` is None. ``names``: the names visible where it was raised (for "did you mean")."""
    message = text if text is not None else str(error)
    for kinds, pattern, sentence in CAUSES:
        if (error is not None and not isinstance(error, kinds)) or (error is None and not pattern):
            continue
        m = re.search(pattern, message, re.M)
        if m:
            said = sentence(m, error, names=names, text=message)
            return said if isinstance(said, tuple) else (said, "")
    if error is None:
        return "", ""
    if isinstance(error, KeyError):
        return _key_sentence(error), ""
    kind = next((words for cls, words in KINDS if isinstance(error, cls)), "an error")
    return kind, ""


def _parameters_of(name: str, error) -> list[str]:
    """The parameters of the function or class ``name`` (``DotOperandLayout.__init__``), looked up where the error
    was raised and among Gluon's modules; [] when it cannot be found."""
    import inspect

    head, _, _ = name.partition(".")
    candidates = []
    frames = _frames(error) if isinstance(error, BaseException) else []
    for frame, _ in reversed(frames):
        found = frame.f_locals.get(head, frame.f_globals.get(head))
        if found is not None:
            candidates.append(found)
            break
    try:
        from triton.experimental.gluon import language as gl
        from triton.experimental.gluon.language.nvidia import ampere, blackwell, hopper
        from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

        candidates += [getattr(module, head) for module in (gl, hopper, tma, mbarrier, ampere, ampere.async_copy,
                                                             blackwell) if hasattr(module, head)]
    except ImportError:
        pass
    for fn in candidates:
        fn = getattr(fn, "fn", fn)
        try:
            return [p.name for p in inspect.signature(fn).parameters.values()
                    if not p.name.startswith("_") and p.name != "self"
                    and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        except (TypeError, ValueError):
            continue
    return []


def visible_names(error: BaseException) -> list[str]:
    frames = _frames(error)
    if not frames:
        return []
    frame = frames[-1][0]
    import builtins

    return [*frame.f_locals, *frame.f_globals, *dir(builtins)]


def library_sentence(error: BaseException) -> str:
    """For a failed assert with no message of a library: whose check it was."""
    frames = _frames(error)
    if not frames:
        return ""
    frame = frames[-1][0]
    filename = frame.f_code.co_filename
    if not _is_library(filename):
        return ""
    where_ = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
    return f"a check inside {_library_of(filename)}'s {_callable_name(where_)} failed on what it was given"
