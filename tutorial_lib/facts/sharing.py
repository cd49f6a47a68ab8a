"""What a tensor made from ``x`` (``x.clone()``, ``x.detach()``, ``x.data``, ``copy.copy(x)``, ...) still shares
with ``x``: its memory, the way back for gradients, the version counter. Chapter 4's two questions, answered by
running torch on each expression, never from a table."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from ..common.checks import describe, require_tensor
from .storage import same_storage, shares_memory

#: Chapter 4's expressions, in its order, with the original first: the default of ``sharing_of``.
CHAPTER_4_WAYS = {
    "x": lambda x: x,
    "x.clone()": lambda x: x.clone(),
    "x.detach()": lambda x: x.detach(),
    "x.data": lambda x: x.data,
    "copy.copy(x)": copy.copy,
    "x.detach().clone()": lambda x: x.detach().clone(),
}


@dataclass(frozen=True)
class Sharing:
    """What one expression's result shares with the tensor ``x`` it was made from.

    ``shares_memory``: some byte of the result is a byte of ``x`` (``tl.shares_memory``, from data pointers and
    strides); ``same_storage``: it reads ``x``'s storage object; ``gradient_reaches``: ``torch.autograd.grad`` of
    the result's sum with respect to ``x`` is not None (a real backward); ``shares_counter``: an in-place write
    through the result, on a fresh tensor like ``x``, moved its ``_version`` (None when that write raised, or when ``x``
    has more than ``MAX_COUNTER_ELEMENTS`` elements: the ways would all run a second time).
    """

    name: str
    shares_memory: bool
    same_storage: bool
    gradient_reaches: bool
    requires_grad: bool
    is_leaf: bool
    grad_fn: str | None
    shares_counter: bool | None


def _made(make, source: torch.Tensor, name: str) -> torch.Tensor:
    result = make(source)
    if not isinstance(result, torch.Tensor):
        raise TypeError(f"ways[{name!r}] must return a tensor, got {describe(result)}")
    return result


def _gradient_reaches(result: torch.Tensor, x: torch.Tensor) -> bool:
    if not (result.requires_grad and x.requires_grad) or not result.is_floating_point():
        return False
    (gradient,) = torch.autograd.grad(result.sum(), x, allow_unused=True)
    return gradient is not None


#: Above this many elements the counter is not tried (None): that would run every way a second time.
MAX_COUNTER_ELEMENTS = 1 << 20


def _shares_counter(make, x: torch.Tensor, name: str) -> bool | None:
    """Whether a write through the result moves the counter of a fresh ``x``; None if it raises or ``x`` is huge."""
    if x.numel() > MAX_COUNTER_ELEMENTS:
        return None
    fresh = torch.empty_like(x).requires_grad_(x.requires_grad and x.is_floating_point())
    result = _made(make, fresh, name)
    before = fresh._version
    try:
        with torch.no_grad():  # a write that changes no value, into one element: a view shares the counter
            (result[(0,) * result.dim()] if result.numel() else result).mul_(1)
    except RuntimeError:
        return None
    return fresh._version != before


def sharing_of(x=None, ways=None) -> tuple[Sharing, ...]:
    """For each expression, what its result shares with ``x``: memory, the gradient's way back, the counter.

    Args:
        x: the tensor the expressions start from (any strided tensor; a leaf or not). None: chapter 4's
            ``torch.tensor([1.0, 2.0, 3.0], requires_grad=True)``.
        ways: ``{name: function}``, each function taking ``x`` and returning a tensor, e.g.
            ``{"x.clone()": lambda x: x.clone()}``. None: ``CHAPTER_4_WAYS`` (``x`` itself, ``x.clone()``,
            ``x.detach()``, ``x.data``, ``copy.copy(x)``, ``x.detach().clone()``).

    Returns:
        One ``Sharing`` per way, in the order given. ``x`` and its ``.grad`` are left as they were: the
        gradient is asked with ``torch.autograd.grad``, and the counter is tried on a fresh tensor like ``x``. Each
        way runs twice (once for the counter), so this costs what the ways cost.

    Raises:
        TypeError: ``x`` is not a tensor, ``ways`` not a dict of str to callables, or a way returns no tensor.
        ValueError: ``ways`` is empty.
    """
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True) if x is None else require_tensor(x, "x")
    ways = CHAPTER_4_WAYS if ways is None else ways
    if not isinstance(ways, dict):
        raise TypeError(f"ways must be a dict {{name: function of x}}, got {describe(ways)}")
    if not ways:
        raise ValueError("ways must name at least one expression, got an empty dict")
    for name, make in ways.items():
        if not isinstance(name, str) or not callable(make):
            raise TypeError(f"ways must map str names to functions of x, got {name!r}: {describe(make)}")
    rows = []
    for name, make in ways.items():
        result = _made(make, x, name)
        rows.append(
            Sharing(
                name=name,
                shares_memory=shares_memory(result, x),
                same_storage=same_storage(result, x),
                gradient_reaches=_gradient_reaches(result, x),
                requires_grad=result.requires_grad,
                is_leaf=result.is_leaf,
                grad_fn=type(result.grad_fn).__name__ if result.grad_fn is not None else None,
                shares_counter=_shares_counter(make, x, name),
            )
        )
    return tuple(rows)
