"""Chapter 1 exercises: predict strides, write the address formula, build sliding windows with as_strided.

Every checker asks torch: predicted strides are compared with the strides torch gives the expression;
the learner's address formula is compared, case by case, with the element torch reads from an
``arange`` storage through ``as_strided`` (whose value is its own storage index) and with ``layout``;
the learner's windows are compared with ``unfold`` and checked for sharing memory with the input.
"""

from __future__ import annotations

import operator
import random

import numpy as np
import torch

from ..facts.ops import trace_ops
from ..facts.storage import layout, same_storage, shares_memory
from . import correct, exercise, prediction, wrong

# --- ch1.predict_strides ----------------------------------------------------------------------------------

#: The expression whose strides the learner predicts (shown in the notebook, evaluated here).
PREDICT_STRIDES_EXPRESSION = "torch.zeros(2, 3, 4).permute(2, 0, 1)[1:, :, ::2]"


def predict_strides_result() -> torch.Tensor:
    """The tensor of the exercise, made by torch."""
    return torch.zeros(2, 3, 4).permute(2, 0, 1)[1:, :, ::2]


def _as_ints(answer) -> tuple[int, ...] | None:
    """A tuple, list, torch.Size, integer tensor or integer array as a tuple of ints; None for anything else."""
    if isinstance(answer, (torch.Tensor, np.ndarray)):
        answer = answer.tolist()
    if not isinstance(answer, (tuple, list)):
        return None
    if any(isinstance(step, (bool, np.bool_)) for step in answer):
        return None  # True == 1, but a stride is a count, not a truth value
    try:
        return tuple(operator.index(step) for step in answer)
    except TypeError:
        return None


@exercise("ch1.predict_strides")
def check_predict_strides(answer):
    strides = _as_ints(answer)
    if strides is None:
        return wrong(
            "the answer should be a tuple of ints, one stride per dimension, e.g. (4, 2, 1).",
            "write it the way t.stride() prints it.",
        )
    result = predict_strides_result()
    truth = tuple(result.stride())
    if strides == truth:
        return correct(
            f"{PREDICT_STRIDES_EXPRESSION} has shape {tuple(result.shape)}, stride {truth} and storage offset "
            f"{result.storage_offset()}: permute reordered (12, 4, 1) into (1, 12, 4), [1:] moved the offset, "
            "and ::2 doubled the last stride."
        )
    if len(strides) != result.dim():
        return wrong(
            f"you gave {len(strides)} strides; the result has {result.dim()} dimensions.",
            "permute keeps the number of dimensions, and so does slicing with ':' and '::2'.",
        )
    fresh = tuple(torch.empty(result.shape, device="meta").stride())
    if strides == fresh:
        return wrong(
            f"{strides} are the strides of a new tensor of shape {tuple(result.shape)}.",
            "no copy is made here: permute and slicing keep the original storage, so the strides come from "
            "zeros(2, 3, 4)'s strides (12, 4, 1).",
        )
    permuted = tuple(torch.zeros(2, 3, 4).permute(2, 0, 1).stride())
    if strides == permuted:
        return wrong(
            f"{strides} are the strides right after permute.",
            "then apply the slicing: [1:] only changes the offset, but ::2 skips every other element of the last "
            "dimension.",
        )
    if strides == (12, 4, 2):
        return wrong(
            "you applied ::2 but not the permute.",
            "permute(2, 0, 1) puts old dimension 2 first: new strides = (old[2], old[0], old[1]).",
        )
    if strides == (2, 12, 4):
        return wrong(
            "you doubled the first stride.",
            "[1:] does not change a stride (it moves the offset by one step); ::2 on the last dimension does.",
        )
    return wrong(
        f"torch gives a different stride for at least one dimension than your {strides}.",
        "start from zeros(2, 3, 4).stride() = (12, 4, 1), reorder with permute(2, 0, 1), then multiply the "
        "stride of each dimension you slice with step s by s.",
    )


# --- ch1.element_address ----------------------------------------------------------------------------------


def _address_cases() -> list[tuple[tuple[int, ...], tuple[int, ...], int, tuple[int, ...]]]:
    """(shape, stride, offset, index) cases: hand-picked corners, then reproducible random ones."""
    cases = [
        ((3, 4), (4, 1), 0, (2, 3)),  # a fresh matrix
        ((4, 3), (1, 4), 0, (3, 1)),  # its transpose
        ((2, 2), (4, 2), 5, (1, 1)),  # a strided slice with an offset
        ((3, 4), (1, 0), 2, (2, 3)),  # expand: stride 0
        ((5, 1), (1, 7), 1, (4, 0)),  # a size-1 dimension with an odd stride
        ((), (), 6, ()),  # a 0-dim tensor: only the offset
        ((2, 3, 4), (1, 8, 2), 3, (1, 2, 3)),  # a permuted and sliced 3-D tensor
    ]
    rng = random.Random(2024)  # private generator: checking never disturbs the learner's RNG state
    for _ in range(40):
        ndim = rng.randint(1, 4)
        shape = tuple(rng.randint(1, 5) for _ in range(ndim))
        stride = tuple(rng.randint(0, 30) for _ in range(ndim))
        offset = rng.randint(0, 10)
        index = tuple(rng.randrange(size) for size in shape)
        cases.append((shape, stride, offset, index))
    return cases


def _torch_storage_index(shape, stride, offset, index) -> int:
    """Where torch finds ``t[index]``: read it from an arange storage, whose values are their own indices."""
    highest = offset + sum((size - 1) * step for size, step in zip(shape, stride))
    storage = torch.arange(highest + 1)
    t = storage.as_strided(shape, stride, offset)
    found = int(t[index]) if index else int(t)
    assert found == layout(t).index_of(*index), "torch and tutorial_lib.layout disagree"
    return found


def _row_major(shape, index) -> int:
    flat = 0
    for size, i in zip(shape, index):
        flat = flat * size + i
    return flat


@exercise("ch1.element_address", function="def storage_index(shape, stride, offset, index): ...")
def check_element_address(fn):
    cases = _address_cases()
    for shape, stride, offset, index in cases:
        truth = _torch_storage_index(shape, stride, offset, index)
        got = fn(shape, stride, offset, index)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        try:
            got = operator.index(got)
        except TypeError:
            if isinstance(got, (float, np.floating)) and got == truth:
                return wrong(
                    f"for shape={shape}, stride={stride}, offset={offset}, index={index} your function returned "
                    f"{got!r}: the right place, but a float, not an int.",
                    "with no dimensions, torch.tensor(()) and np.dot((), ()) are floats: start from the int offset, "
                    "or wrap the sum in int().",
                )
            return wrong(
                f"for shape={shape}, stride={stride}, offset={offset}, index={index} your function returned "
                f"{got!r}, not an int.",
                "return a whole number: the position in the storage, counted in elements.",
            )
        if got == truth:
            continue
        case = f"shape={shape}, stride={stride}, offset={offset}, index={index}"
        told = f"for {case} you returned {got}, but torch reads that element from storage[{truth}]"
        if offset and got == truth - offset:
            return wrong(f"{told}.", "you left out the storage offset: the element count starts at storage[offset].")
        if got in (_row_major(shape, index), offset + _row_major(shape, index)):
            return wrong(
                f"{told}.",
                "you numbered the elements in row-major order from the shape; the strides say where each one "
                "really is: offset + sum of index[d] * stride[d].",
            )
        if got in (truth * 4, truth * 8):
            return wrong(
                f"{told}.", "count in elements, not in bytes: multiply by the itemsize only for a byte offset."
            )
        return wrong(
            f"{told}.",
            "the formula is offset + index[0]*stride[0] + index[1]*stride[1] + ... (one term per dimension).",
        )
    return correct(
        f"your formula agrees with torch on all {len(cases)} cases, 0-dim, stride 0 and size-1 dimensions included."
    )


# --- ch1.sliding_window -----------------------------------------------------------------------------------


def _window_cases() -> list[tuple[str, torch.Tensor, int]]:
    base = torch.arange(20.0)
    return [
        ("x = torch.arange(8.), k = 3", torch.arange(8.0), 3),
        ("x = torch.arange(5), k = 1", torch.arange(5), 1),
        ("x = torch.arange(6.), k = 6", torch.arange(6.0), 6),
        ("x = torch.arange(20.)[3:15:2] (offset 3, stride 2), k = 4", base[3:15:2], 4),
        (
            "x = torch.arange(24.).view(6, 4)[:, 1] (a column: offset 1, stride 4), k = 2",
            torch.arange(24.0).view(6, 4)[:, 1],
            2,
        ),
    ]


@exercise("ch1.sliding_window", function="def sliding_windows(x, k): ...")
def check_sliding_window(fn):
    used_as_strided = False
    used_unfold = False
    for description, x, k in _window_cases():
        before, version_before = x.clone(), x._version
        with trace_ops() as ops:
            result = fn(x, k)
        names = {op.name for op in ops}
        used_as_strided |= "aten::as_strided" in names
        used_unfold |= "aten::unfold" in names
        if result is None:
            return wrong(f"for {description} your function returned None.", "did you forget `return`?")
        if not isinstance(result, torch.Tensor):
            return wrong(
                f"for {description} your function returned {type(result).__name__}, not a tensor.", "return the view."
            )
        if x._version != version_before or not torch.equal(x, before):
            return wrong(
                f"for {description} your function changed x.",
                "only read x: as_strided makes a view, it writes nothing.",
            )
        expected = x.unfold(0, k, 1)
        if tuple(result.shape) != tuple(expected.shape):
            return wrong(
                f"for {description} the result has shape {tuple(result.shape)}; it should be {tuple(expected.shape)}.",
                "there are len(x) - k + 1 windows of k elements each: shape (len(x) - k + 1, k).",
            )
        if not torch.equal(result, expected):
            wrong_offset = result.storage_offset() != x.storage_offset()
            hint = (
                "as_strided counts in the storage, not in x: start at x.storage_offset()."
                if wrong_offset
                else "as_strided's strides count in the storage, not in x: one step along x is x.stride(0) "
                "storage cells, so both strides are x.stride(0)."
            )
            return wrong(
                f"for {description} the windows hold {result.tolist()}; they should hold {expected.tolist()}.",
                hint,
            )
        if shares_memory(result, x) and not same_storage(result, x):
            # numpy's sliding_window_view through torch.from_numpy, say: x's bytes under a storage of its own
            return wrong(
                f"for {description} the result reads x's memory, but through a storage of its own (torch.from_numpy "
                "and other bridges make one), so it is not a view of x.",
                "build the windows with x.as_strided(size, stride): a view over x's own storage.",
            )
        if not (same_storage(result, x) and shares_memory(result, x)):
            return wrong(
                f"for {description} the values are right but the result does not share memory with x: it is a copy.",
                "build the windows as a view of x's storage with x.as_strided(size, stride): no stack, no clone.",
            )
    if used_unfold and not used_as_strided:
        return wrong(
            "that is x.unfold(0, k, 1), the very view the checker compares against.",
            "now build the same view yourself with x.as_strided(size, stride): which step takes you to the next "
            "window, and which to the next element inside a window?",
        )
    return correct(
        "the same windows as x.unfold(0, k, 1), sharing x's memory, for contiguous and strided x alike. "
        "Windows overlap: writing into one element changes it in every window that contains it."
    )


# --- quick predictions (one answer each; the truth is computed by torch when the check runs) -----------------


def _hundreds() -> torch.Tensor:
    """The chapter's ``x``: values 100 to 111 in a 3 x 4 view, so no value looks like a storage index."""
    return torch.arange(100.0, 112.0).view(3, 4)


def _column() -> torch.Tensor:
    """The chapter's ``column``: shape (5, 1), strides (1, 5)."""
    return torch.arange(5.0).view(1, 5).t()


prediction(
    "ch1.q_row_storage_bytes",
    lambda: torch.arange(15).view(5, 3)[1].untyped_storage().nbytes(),
    why="a[1] is a window onto a's storage, and untyped_storage() is that whole storage: 15 int64 numbers of 8 "
    "bytes each.",
    mistakes={
        24: "the row's own 3 elements take 24 bytes, but its storage is the whole block the row is a window onto.",
        3: "3 is the number of elements in the row; nbytes() counts the bytes of the whole storage.",
        15: "15 is the number of elements in the storage; nbytes() counts bytes, 8 per int64.",
    },
)

prediction(
    "ch1.q_slice_strides",
    lambda: _hundreds()[1:, ::2].stride(),
    why="slicing keeps x's storage: [1:] moves the offset to cell 4 and leaves the strides alone, and ::2 takes "
    "every second column, so one step along a row skips 2 cells.",
    mistakes={
        (4, 1): "those are x's own strides; ::2 skips every other column, which doubles the column stride.",
        (2, 1): "those are the strides of a new (2, 2) tensor; a slice copies nothing, so its steps still count "
        "cells of x's storage.",
        (8, 2): "[1:] does not change the row stride: it only moves the offset.",
    },
)

prediction(
    "ch1.q_contiguous",
    lambda: tuple(t.is_contiguous() for t in (_hundreds().t(), _hundreds()[1], _hundreds()[:, :2], _column())),
    why="contiguous means row-major order without gaps: x.t() reads its cells in another order, x[1] reads 4 cells "
    "in a row (the offset does not matter), x[:, :2] leaves a gap after each row, and column's last dimension has "
    "size 1, so its stride is never used.",
    mistakes={
        (False, True, True, False): "that is the rule 'stride 1 in the last dimension', and it is wrong both ways: "
        "x[:, :2] has stride 1 last but a gap after each row; column has stride 5 last, in a dimension of size 1.",
        (False, False, False, True): "x[1] starts at offset 4, but the offset does not matter: its 4 cells sit one "
        "after the other.",
        (True, True, False, True): "x.t() reads every cell of the storage, but not in row-major order.",
        (False, True, False, False): "column's last dimension has size 1: it is never stepped along, so its stride "
        "of 5 does not matter.",
    },
)

prediction(
    "ch1.q_transpose_strides",
    lambda: _hundreds().t().stride(),
    why="t() swaps the two strides along with the shape and keeps the storage: one step to the next row of x.t() "
    "is one cell, one step to the next column is four.",
    mistakes={
        (4, 1): "those are x's own strides; t() swaps them, along with the shape.",
        (3, 1): "those are the strides of a new (4, 3) tensor; t() copies nothing, so its steps still count cells "
        "of x's storage.",
    },
)

prediction(
    "ch1.q_expand_strides",
    lambda: torch.tensor([10.0, 20.0, 30.0]).view(3, 1).expand(3, 4).stride(),
    why="expand copies nothing: the dimension it stretches from size 1 to 4 gets stride 0, so all four indices "
    "land on the same cell, and the other dimension keeps its stride 1.",
    mistakes={
        (4, 1): "those are the strides of a new 3 x 4 tensor; expand allocates nothing.",
        (1, 1): "a stride of 1 steps to the next cell; a repeat has to stay on the same cell.",
    },
)
