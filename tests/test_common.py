"""common/text.py and common/checks.py: the small helpers every layer shares, on real torch values."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tutorial_lib.common.checks import require_int, require_positive_int, require_type
from tutorial_lib.common.text import dtype_name, op_name, plural, short_op_name, strip_hint, tuple_text
from tutorial_lib.facts.graph import VERSION_ERROR


def _version_error() -> RuntimeError:
    """Autograd's real in-place error, with its anomaly-detection hint."""
    x = torch.ones(3, requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError) as caught:
        y.sum().backward()
    return caught.value


def test_strip_hint_removes_torchs_hint_and_keeps_the_message():
    error = _version_error()
    assert "Hint:" in str(error)
    message = strip_hint(error)
    assert "Hint" not in message and "anomaly" not in message
    assert message.startswith("one of the variables needed for gradient computation has been modified")
    assert message.endswith("expected version 0 instead.")
    assert VERSION_ERROR.search(message).groups() == ("1", "0")
    # the same text chapter 5's checkers printed before it used strip_hint
    assert message == str(error).split(" Hint:")[0]


def test_strip_hint_leaves_a_message_without_hint_alone_but_stripped():
    assert strip_hint("  plain message \n") == "plain message"
    assert strip_hint(ValueError("no hint here")) == "no hint here"
    assert strip_hint("first line\nHint: more\nand more") == "first line"


@pytest.mark.parametrize(
    "name, short",
    [
        ("AddBackward0", "Add"),
        ("MulBackward1", "Mul"),
        ("TwoBackward", "Two"),  # a custom autograd.Function
        ("ForeachMulBackward0List", "ForeachMul"),
        ("AccumulateGrad", "AccumulateGrad"),
        ("Backward0", "Backward0"),  # nothing would be left: keep the name
    ],
)
def test_short_op_name(name, short):
    assert short_op_name(name) == short


def test_short_op_name_on_a_real_node():
    x = torch.ones(2, requires_grad=True)
    assert short_op_name((x * 2).grad_fn.name()) == "Mul"


def test_op_name_and_dtype_name():
    assert op_name("aten::add_.Tensor") == "add_.Tensor"
    assert op_name("add") == "add"
    assert op_name(str(torch.ops.aten.mul.Tensor._schema.name)) == "mul"
    assert dtype_name(torch.float32) == "float32"
    assert dtype_name(torch.ones(1, dtype=torch.int64).dtype) == "int64"


@pytest.mark.parametrize(
    "values, text",
    [((), "()"), ((3,), "(3,)"), ((2, 4), "(2, 4)"), (torch.Size([2, 3]), "(2, 3)"), ((np.int64(5),), "(5,)")],
)
def test_tuple_text(values, text):
    assert tuple_text(values) == text


def test_tuple_text_reads_a_generator_once():
    assert tuple_text(s for s in torch.ones(4, 1).stride()) == "(1, 1)"


@pytest.mark.parametrize(
    "args, kwargs, text",
    [
        ((1, "op"), {}, "1 op"),
        ((0, "op"), {}, "0 ops"),
        ((3, "op"), {}, "3 ops"),
        ((1, "leaf", "leaves"), {}, "1 leaf"),
        ((2, "leaf", "leaves"), {}, "2 leaves"),
        ((1024, "cell"), {"fmt": ","}, "1,024 cells"),
        ((1, "byte"), {"fmt": ","}, "1 byte"),
    ],
)
def test_plural(args, kwargs, text):
    assert plural(*args, **kwargs) == text


def test_require_int_accepts_ints_and_numpy_ints():
    assert require_int(0, "n") == 0
    assert require_int(-3, "n") == -3
    value = require_int(np.int64(7), "n")
    assert value == 7 and type(value) is int
    assert require_int(5, "n", minimum=5) == 5


@pytest.mark.parametrize("value", [True, False, 1.0, "1", None, torch.tensor(1)])
def test_require_int_rejects_bools_and_non_ints_naming_the_argument(value):
    with pytest.raises(TypeError, match=r"^count must be an int, got "):
        require_int(value, "count")


def test_require_int_minimum():
    with pytest.raises(ValueError, match=r"^start must be at least 0, got -1$"):
        require_int(-1, "start", minimum=0)


def test_require_positive_int_messages():
    assert require_positive_int(1, "max_nodes") == 1
    with pytest.raises(ValueError, match=r"^max_nodes must be at least 1, got 0$"):
        require_positive_int(0, "max_nodes")
    with pytest.raises(TypeError, match=r"^max_nodes must be an int, got bool$"):
        require_positive_int(True, "max_nodes")


def test_require_type_returns_the_value_or_names_the_argument_and_what_it_is():
    x = torch.zeros(2, 3)
    assert require_type(x, torch.Tensor, "x", "a torch.Tensor") is x
    assert require_type("a", (list, str), "items", "a list or a str") == "a"
    with pytest.raises(TypeError, match=r"^names\['a'\] must be a tensor, got list$"):
        require_type([1], torch.Tensor, "names['a']", "a tensor")
    with pytest.raises(TypeError, match=r"got a torch.strided tensor on cpu with shape \(2, 3\)"):
        require_type(x, np.ndarray, "array", "a numpy.ndarray")  # a tensor is described, never printed
