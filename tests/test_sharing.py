"""``tl.sharing_of`` answers chapter 4's questions by running torch: each answer is checked here against torch's
own evidence (storage data pointers, ``x.grad`` after a real ``backward()``, ``_version`` after a real write)."""

import copy

import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.facts.sharing import CHAPTER_4_WAYS


def fresh_leaf():
    return torch.tensor([1.0, 2.0, 3.0], requires_grad=True)


def evidence(make):
    """(shares memory, gradient reaches x, shares the counter) for ``make``, from torch alone, each on a fresh x."""
    x = fresh_leaf()
    result = make(x)
    start, end = x.untyped_storage().data_ptr(), x.untyped_storage().data_ptr() + x.untyped_storage().nbytes()
    shares = start <= result.data_ptr() < end
    x = fresh_leaf()
    result = make(x)
    if result.requires_grad:
        result.sum().backward()
    reaches = x.grad is not None
    x = fresh_leaf()
    result = make(x)
    with torch.no_grad():
        result.mul_(1)
    return shares, reaches, x._version == 1


def test_chapter_4s_ways_land_where_torch_says():
    answers = {row.name: row for row in tl.sharing_of()}
    assert list(answers) == ["x", "x.clone()", "x.detach()", "x.data", "copy.copy(x)", "x.detach().clone()"]
    for name, make in CHAPTER_4_WAYS.items():
        row = answers[name]
        assert (row.shares_memory, row.gradient_reaches, row.shares_counter) == evidence(make), name
    # the chapter's rule, as the facts say it: clone cuts the memory, detach cuts the gradient, .data the counter
    assert not answers["x.clone()"].shares_memory and answers["x.clone()"].gradient_reaches
    assert answers["x.detach()"].shares_memory and not answers["x.detach()"].gradient_reaches
    assert answers["x.detach()"].shares_counter and not answers["x.data"].shares_counter
    assert answers["x.clone()"].grad_fn == "CloneBackward0" and answers["copy.copy(x)"].is_leaf


def test_own_ways_on_a_non_leaf_and_x_is_left_as_it_was():
    w = torch.ones(4, requires_grad=True)
    x = w * 2  # a non-leaf: its .grad is never kept, so "reaches" must come from autograd.grad
    ways = {"x[1:]": lambda x: x[1:], "x * 1": lambda x: x * 1, "x.t()": lambda x: x.view(2, 2).t()}
    rows = {row.name: row for row in tl.sharing_of(x, ways)}
    assert (rows["x[1:]"].shares_memory, rows["x[1:]"].gradient_reaches) == (True, True)
    assert (rows["x * 1"].shares_memory, rows["x * 1"].gradient_reaches) == (False, True)
    assert rows["x.t()"].shares_memory and rows["x.t()"].grad_fn == "TBackward0"
    assert x._version == 0 and w.grad is None  # nothing written into x, no gradient accumulated anywhere


def test_a_tensor_that_requires_no_grad_lets_no_gradient_through():
    rows = tl.sharing_of(torch.arange(3), {"x": lambda x: x, "copy": copy.copy})
    assert [row.gradient_reaches for row in rows] == [False, False]
    assert [row.shares_memory for row in rows] == [True, True]


def test_a_huge_tensor_skips_the_counter_and_says_so():
    rows = tl.sharing_of(torch.zeros(1 << 21), {"x.detach()": lambda x: x.detach()})
    assert rows[0].shares_memory and rows[0].shares_counter is None


@pytest.mark.parametrize(
    ("x", "ways", "error", "named"),
    [
        ([1.0], None, TypeError, "x"),
        (None, [lambda x: x], TypeError, "ways"),
        (None, {}, ValueError, "ways"),
        (None, {"x": 3}, TypeError, "ways"),
        (None, {"x.tolist()": lambda x: x.tolist()}, TypeError, "x.tolist()"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(x, ways, error, named):
    with pytest.raises(error, match=named.replace("(", r"\(").replace(")", r"\)")):
        tl.sharing_of(x, ways)
