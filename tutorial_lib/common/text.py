"""Small text helpers every layer spells the same way: plurals, op and dtype names, torch's error hints."""

from __future__ import annotations

import re

_HINT = re.compile(r"\s*Hint:.*$", re.DOTALL)
_BACKWARD_SUFFIX = re.compile(r"Backward(?:\d+[A-Za-z]*)?$")  # MulBackward0, TwoBackward, ForeachMulBackward0List


def plural(count: int, word: str, words: str | None = None, *, fmt: str = "") -> str:
    """``count`` and ``word``, plural unless the count is 1: ``plural(3, "op")`` is "3 ops".

    ``words`` is the plural when it is not ``word`` + "s" (``plural(2, "leaf", "leaves")``); ``fmt`` formats
    the count (``plural(1024, "cell", fmt=",")`` is "1,024 cells").
    """
    if count == 1:
        return f"{count:{fmt}} {word}"
    return f"{count:{fmt}} {words if words is not None else word + 's'}"


def strip_hint(message) -> str:
    """An error message without torch's trailing "Hint: ..." advice, and without surrounding whitespace."""
    return _HINT.sub("", str(message)).strip()


def short_op_name(name: str) -> str:
    """A backward node's name without its ``Backward`` suffix: ``"AddBackward0"`` -> ``"Add"``.

    Custom Functions' nodes (``"TwoBackward"``) and ``torch._foreach_*``'s (``"ForeachMulBackward0List"``) too;
    a name that is only the suffix is kept.
    """
    return _BACKWARD_SUFFIX.sub("", name) or name


def op_name(name: str) -> str:
    """An aten op's name without the ``aten::`` namespace: ``"aten::add_.Tensor"`` -> ``"add_.Tensor"``."""
    return name.removeprefix("aten::")


def dtype_name(dtype) -> str:
    """A dtype as the course writes it, without the ``torch.`` prefix: ``torch.float32`` -> ``"float32"``."""
    return str(dtype).removeprefix("torch.")


def tuple_text(values) -> str:
    """Numbers as a Python tuple of ints prints them: ``(3,)``, ``(2, 4)``, ``()`` for none (numpy ints too)."""
    values = [str(value) for value in values]
    return "(" + ", ".join(values) + ("," if len(values) == 1 else "") + ")"
