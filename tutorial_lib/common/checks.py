"""Argument checks shared by the public functions: each error names the argument and what was expected."""

from __future__ import annotations

import numbers

import torch


def describe(value) -> str:
    """A short description of a value for error messages (never its full repr: it may be huge)."""
    if isinstance(value, torch.Tensor):
        return f"a {value.layout} tensor on {value.device} with shape {tuple(value.shape)}"
    return f"{type(value).__name__}"


def require_type(value, kind, name: str, what: str):
    """Return ``value`` if it is an instance of ``kind`` (a type or a tuple of types), else raise TypeError
    "``name`` must be ``what``, got <what it is>"."""
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be {what}, got {describe(value)}")
    return value


def require_tensor(value, name: str, *, allow_meta: bool = True) -> torch.Tensor:
    """Return ``value`` if it is a strided torch tensor, else raise TypeError/ValueError naming ``name``."""
    require_type(value, torch.Tensor, name, "a torch.Tensor")
    if value.layout != torch.strided:
        raise ValueError(
            f"{name} must be a strided (dense) tensor, got layout {value.layout}: "
            "sparse and other layouts have no single storage with strides; call .to_dense() first"
        )
    if not allow_meta and value.device.type == "meta":
        raise ValueError(f"{name} is a meta tensor: it has shape and strides but no memory to inspect")
    return value


def require_bool(value, name: str) -> bool:
    """Return ``value`` if it is True or False, else raise TypeError naming ``name``."""
    require_type(value, bool, name, "True or False")
    return value


def require_int(value, name: str, minimum: int | None = None) -> int:
    """Return ``value`` as an int (numpy integers count, bools do not), at least ``minimum`` when one is given."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {describe(value)}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def require_positive_int(value, name: str) -> int:
    """Return ``value`` if it is an int of at least 1, else raise TypeError/ValueError naming ``name``."""
    return require_int(value, name, 1)


def shape_text(shape) -> str:
    """A shape as Python spells it, ``(3,)`` or ``(2, 4)``; a 0-d shape is ``scalar``; unknown is ``?``."""
    if shape is None:
        return "?"
    shape = tuple(shape)
    return str(shape) if shape else "scalar"
