"""Chapter 0 ("Start here"): quick predictions, one per instrument of the tour.

Each truth is computed with torch when the check runs, on the tensors the notebook builds: a write through a row,
which of four expressions view or copy, the bytes a slice and its clone leave allocated, whether a saved tensor
shares memory with its leaf, and whether backward raises after an in-place write to a saved result.
"""

from __future__ import annotations

import torch

from ..facts.memory import measure_memory
from ..facts.storage import shares_memory
from . import prediction

#: The four expressions of ``ch0.q_views``, in the order the notebook asks about them.
VIEW_EXPRESSIONS = ("x.t()", "x[:, 1]", "x[[0, 2]]", "x.t().reshape(12)")


def _hundreds() -> torch.Tensor:
    """The notebook's ``x``: the values 100 to 111 as a 3 x 4 float32 tensor."""
    return torch.arange(100.0, 112.0).view(3, 4)


def _write_through_truth() -> str:
    x = _hundreds()
    row = x[1]
    row[0] = -1.0
    return "yes" if x[1, 0].item() == -1.0 else "no"


prediction(
    "ch0.q_write_through",
    _write_through_truth,
    why="row = x[1] made no copy: it points into x's storage, so writing row[0] writes the cell x[1, 0] reads.",
    choices=("yes", "no"),
    mistakes={
        "no": "x[1] is not a new block of memory. It is a second tensor over x's storage, so the write lands in x.",
    },
)


def _views_truth() -> tuple[str, ...]:
    x = _hundreds()
    results = (x.t(), x[:, 1], x[[0, 2]], x.t().reshape(12))  # VIEW_EXPRESSIONS, in order
    return tuple("view" if shares_memory(result, x) else "copy" for result in results)


prediction(
    "ch0.q_views",
    _views_truth,
    why="x.t() and x[:, 1] only change the shape, the strides and the offset, so they read x's storage. An index "
    "that is a list of integers, such as x[[0, 2]], copies the rows it picks. x.t().reshape(12) copies: no strides "
    "over x's storage read the transposed elements as one row.",
    choices=("view", "copy"),
    mistakes={
        ("view", "view", "view", "view"): "x[[0, 2]] indexes with a list of integers, and that copies. "
        "x.t().reshape(12) copies too: reshape views only when some strides can describe the new shape.",
        ("view", "view", "view", "copy"): "x[[0, 2]] indexes with a list of integers: that is advanced indexing, "
        "and it copies the rows it picks.",
        ("view", "view", "copy", "view"): "reshape views when it can, but the transposed elements of x.t() are not "
        "in storage order, so no strides read them as one row: reshape copies.",
        ("view", "copy", "copy", "copy"): "x[:, 1] is a column: an integer index is basic indexing, so it reads "
        "x's storage with stride 4. It is a view.",
        ("copy", "view", "copy", "copy"): "x.t() swaps the two strides and keeps x's storage: nothing is copied.",
    },
)


def _slice_bytes_truth() -> tuple[int, int]:
    """Bytes left allocated by x[::2], then by x[::2].clone(), for a 1000 x 1000 float32 x."""
    x = torch.zeros(1000, 1000)
    with measure_memory() as view_memory:
        view = x[::2]  # noqa: F841  (kept alive until the measurement ends)
    with measure_memory() as copy_memory:
        copy = x[::2].clone()  # noqa: F841
    return view_memory.allocated, copy_memory.allocated


prediction(
    "ch0.q_slice_bytes",
    _slice_bytes_truth,
    why="x[::2] is a view of every second row: it allocates nothing. Its clone copies the 500 rows it reads into a "
    "storage of its own: 500,000 float32 values of 4 bytes, 2,000,000 bytes.",
    mistakes={
        (2_000_000, 2_000_000): "x[::2] is a slice: it reads every second row of x's storage and allocates nothing.",
        (0, 4_000_000): "x[::2] has 500 rows, half of x, and its clone copies only the elements it reads.",
        (0, 500_000): "that counts values; each float32 value takes 4 bytes.",
        (0, 0): "clone() copies the elements it reads into a new storage: 500 rows of 1,000 float32 values.",
        (2_000_000, 0): "it is the other way round: the slice is a view, the clone is the copy.",
        (4_000_000, 2_000_000): "x[::2] allocates nothing: a view reads x's storage, it does not copy it.",
    },
)


def seed_graph() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``x1``, ``x2`` and ``z = log(x1 * x2) * sin(x2)`` at x1 = 2, x2 = 3, as the notebook builds them."""
    x1 = torch.tensor(2.0, requires_grad=True)
    x2 = torch.tensor(3.0, requires_grad=True)
    return x1, x2, torch.log(x1 * x2) * torch.sin(x2)


def _saved_truth() -> str:
    _, x2, z = seed_graph()
    sin_node = next(node for node, _ in z.grad_fn.next_functions if node.name() == "SinBackward0")
    return "shared" if shares_memory(sin_node._saved_self, x2) else "copy"


prediction(
    "ch0.q_saved_memory",
    _saved_truth,
    why="SinBackward0 keeps x2 itself for its derivative cos(x2): by default, saving copies nothing, so the saved "
    "tensor is x2's own memory.",
    choices=("shared", "copy"),
    mistakes={
        "copy": "By default, autograd keeps a reference to x2, not a copy. That is why changing a saved tensor in "
        "place later can break backward.",
    },
)


def _backward_truth() -> str:
    a = torch.randn(3, requires_grad=True)
    b = a.exp()
    c = b.sum()
    b += 1
    try:
        c.backward()
    except RuntimeError:
        return "raises"
    return "runs"


prediction(
    "ch0.q_backward_raises",
    _backward_truth,
    why="exp saves its result b, because the derivative of exp is exp. b += 1 changed b after it was saved, so "
    "backward refuses to use it and raises.",
    choices=("raises", "runs"),
    mistakes={
        "runs": "c was computed before the write, but its gradient is computed later, by backward. ExpBackward0 "
        "needs b as it was, and b += 1 changed it.",
    },
)
