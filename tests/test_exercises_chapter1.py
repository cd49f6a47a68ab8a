"""Chapter 1 checkers: reference solutions pass, typical wrong answers get a hint.

The stubs and the registration of every exercise are tested once, in test_exercises.py.
"""

import functools
import warnings

import numpy as np
import pytest
import torch
from exercise_asserts import assert_correct, assert_wrong

from tutorial_lib.exercises.chapter1 import PREDICT_STRIDES_EXPRESSION, predict_strides_result

# --- ch1.predict_strides ------------------------------------------------------------------------------------


def test_expression_matches_the_function():
    assert eval(PREDICT_STRIDES_EXPRESSION, {"torch": torch}).stride() == predict_strides_result().stride()


@pytest.mark.parametrize("answer", [(1, 12, 8), [1, 12, 8], torch.Size([1, 12, 8]), predict_strides_result().stride()])
def test_predict_strides_solutions(answer):
    assert_correct("ch1.predict_strides", answer)


@pytest.mark.parametrize(
    "answer, word",
    [
        ((4, 2, 1), "new tensor"),  # strides of a fresh (3, 2, 2) tensor
        ((1, 12, 4), "after permute"),  # forgot ::2
        ((12, 4, 2), "not the permute"),
        ((2, 12, 4), "first stride"),
        ((1, 12), "dimensions"),
        ((8, 12, 1), "different stride"),
    ],
)
def test_predict_strides_rejects_typical_mistakes(answer, word):
    assert word in assert_wrong("ch1.predict_strides", answer).message


@pytest.mark.parametrize("answer", ["1, 12, 8", 1.5, (1.0, 12.0, 8.0)])
def test_predict_strides_rejects_non_ints(answer):
    assert_wrong("ch1.predict_strides", answer)


# --- ch1.element_address ------------------------------------------------------------------------------------


def storage_index(shape, stride, offset, index):
    return offset + sum(i * step for i, step in zip(index, stride))


def storage_index_with_torch(shape, stride, offset, index):
    # Let torch find it: an arange storage holds its own indices, so the element read is the answer.
    highest = offset + sum((size - 1) * step for size, step in zip(shape, stride))
    return int(torch.arange(highest + 1).as_strided(shape, stride, offset)[index])


@pytest.mark.parametrize("solution", [storage_index, storage_index_with_torch])
def test_element_address_solutions(solution):
    assert_correct("ch1.element_address", solution)


def test_element_address_accepts_a_one_element_tensor():
    assert_correct(
        "ch1.element_address",
        lambda shape, stride, offset, index: torch.tensor(storage_index(shape, stride, offset, index)),
    )


def test_element_address_rejects_missing_offset():
    feedback = assert_wrong(
        "ch1.element_address", lambda shape, stride, offset, index: sum(i * s for i, s in zip(index, stride))
    )
    assert "offset" in feedback.hint


def test_element_address_rejects_row_major_numbering():
    def row_major(shape, stride, offset, index):
        flat = 0
        for size, i in zip(shape, index):
            flat = flat * size + i
        return offset + flat

    assert "strides" in assert_wrong("ch1.element_address", row_major).hint


def test_element_address_rejects_bytes():
    feedback = assert_wrong(
        "ch1.element_address", lambda shape, stride, offset, index: 4 * storage_index(shape, stride, offset, index)
    )
    assert "bytes" in feedback.hint


def test_element_address_rejects_non_int():
    assert_wrong(
        "ch1.element_address", lambda shape, stride, offset, index: str(storage_index(shape, stride, offset, index))
    )


def test_element_address_rejects_a_value_that_is_not_a_function():
    assert_wrong("ch1.element_address", 5)


def test_element_address_reports_a_raising_function():
    assert_wrong("ch1.element_address", lambda shape, stride, offset, index: index[0] * stride[0] + offset)


# --- ch1.sliding_window -------------------------------------------------------------------------------------


def sliding_windows(x, k):
    return x.as_strided((x.shape[0] - k + 1, k), (x.stride(0), x.stride(0)))


def sliding_windows_explicit_offset(x, k):
    step = x.stride(0)
    return torch.as_strided(x, (len(x) - k + 1, k), (step, step), x.storage_offset())


@pytest.mark.parametrize("solution", [sliding_windows, sliding_windows_explicit_offset])
def test_sliding_window_solutions(solution):
    feedback = assert_correct("ch1.sliding_window", solution)
    assert "unfold" in feedback.message


def test_sliding_window_rejects_unit_strides_with_stride_hint():
    feedback = assert_wrong("ch1.sliding_window", lambda x, k: x.as_strided((len(x) - k + 1, k), (1, 1)))
    assert "stride 2" in feedback.message
    assert "x.stride(0)" in feedback.hint


def test_sliding_window_rejects_offset_zero_with_offset_hint():
    feedback = assert_wrong(
        "ch1.sliding_window", lambda x, k: x.as_strided((len(x) - k + 1, k), (x.stride(0), x.stride(0)), 0)
    )
    assert "storage_offset" in feedback.hint


def test_sliding_window_rejects_a_copy():
    feedback = assert_wrong(
        "ch1.sliding_window", lambda x, k: torch.stack([x[i : i + k] for i in range(len(x) - k + 1)])
    )
    assert "copy" in feedback.message


def test_sliding_window_rejects_cloned_view():
    assert "copy" in assert_wrong("ch1.sliding_window", lambda x, k: sliding_windows(x, k).clone()).message


def test_sliding_window_rejects_wrong_shape():
    feedback = assert_wrong(
        "ch1.sliding_window", lambda x, k: x.as_strided((len(x) - k, k), (x.stride(0), x.stride(0)))
    )
    assert "shape" in feedback.message


def test_sliding_window_rejects_unfold_with_hint():
    feedback = assert_wrong("ch1.sliding_window", lambda x, k: x.unfold(0, k, 1))
    assert "as_strided" in feedback.hint


def test_sliding_window_rejects_writing_into_x():
    def writes(x, k):
        x.add_(0)
        return sliding_windows(x, k)

    assert "changed x" in assert_wrong("ch1.sliding_window", writes).message


def test_sliding_window_rejects_a_missing_return():
    def no_return(x, k):
        sliding_windows(x, k)

    assert "return" in assert_wrong("ch1.sliding_window", no_return).hint


def test_sliding_window_rejects_non_tensor():
    assert_wrong("ch1.sliding_window", lambda x, k: [x[i : i + k] for i in range(len(x) - k + 1)])


# --- issue 10: every checker against three more plausible wrong answers and two more unusual right ones ------


@pytest.mark.parametrize(
    "answer",
    [
        tuple(np.int64(step) for step in (1, 12, 8)),  # numpy ints, e.g. from an array's elements
        torch.tensor([1, 12, 8]),  # an integer tensor
        np.array([1, 12, 8]),  # an integer array
    ],
)
def test_predict_strides_accepts_unusual_right_answers(answer):
    assert_correct("ch1.predict_strides", answer)


@pytest.mark.parametrize(
    "answer",
    [
        (1, 24, 8),  # doubled the middle stride
        (2, 12, 8),  # doubled the first and the last
        (4, 48, 32),  # strides in bytes (float32) instead of elements
        (12, 1, 8),  # permuted the wrong way
        (True, 12, 8),  # a bool is not a stride, although True == 1
        torch.tensor([1.0, 12.0, 8.0]),  # a float tensor
    ],
)
def test_predict_strides_rejects_more_wrong_answers(answer):
    assert_wrong("ch1.predict_strides", answer)


def storage_index_by_reduce(shape, stride, offset, index):
    return functools.reduce(lambda total, pair: total + pair[0] * pair[1], zip(index, stride), offset)


def storage_index_with_numpy(shape, stride, offset, index):
    # An explicit integer dtype: np.dot((), ()) alone would be the float 0.0.
    return offset + np.dot(np.array(index, dtype=np.int64), np.array(stride, dtype=np.int64))


def storage_index_with_long_tensors(shape, stride, offset, index):
    return offset + (torch.tensor(index, dtype=torch.long) * torch.tensor(stride, dtype=torch.long)).sum()


@pytest.mark.parametrize(
    "solution", [storage_index_by_reduce, storage_index_with_numpy, storage_index_with_long_tensors]
)
def test_element_address_accepts_unusual_right_answers(solution):
    assert_correct("ch1.element_address", solution)


@pytest.mark.parametrize(
    "wrong_formula",
    [
        lambda shape, stride, offset, index: (
            offset + sum(i * size for i, size in zip(index, shape))
        ),  # shape, not stride
        lambda shape, stride, offset, index: offset + sum(i * step for i, step in zip(index, reversed(stride))),
        lambda shape, stride, offset, index: offset + sum((i + 1) * step for i, step in zip(index, stride)),  # 1-based
        lambda shape, stride, offset, index: offset + (index[-1] * stride[-1] if index else 0),  # last dimension only
    ],
)
def test_element_address_rejects_more_wrong_formulas(wrong_formula):
    assert_wrong("ch1.element_address", wrong_formula)


def test_element_address_explains_a_float_from_an_empty_sum():
    # Right place, wrong type: torch.tensor(()) is float32, so the 0-dim case returns 6.0.
    feedback = assert_wrong(
        "ch1.element_address",
        lambda shape, stride, offset, index: offset + (torch.tensor(index) * torch.tensor(stride)).sum(),
    )
    assert "float" in feedback.message
    assert "int" in feedback.hint


def sliding_windows_with_set(x, k):
    # No as_strided at all: a fresh tensor pointed at x's storage with the same metadata.
    step = x.stride(0)
    return torch.empty(0, dtype=x.dtype).set_(
        x.untyped_storage(), x.storage_offset(), (len(x) - k + 1, k), (step, step)
    )


def sliding_windows_from_first_element(x, k):
    # as_strided on x[:1] works too: its storage offset is x's, and the strides count in the storage.
    return x[:1].as_strided((len(x) - k + 1, k), (x.stride(0), x.stride(0))).detach()


@pytest.mark.parametrize("solution", [sliding_windows_with_set, sliding_windows_from_first_element])
def test_sliding_window_accepts_unusual_right_answers(solution):
    assert_correct("ch1.sliding_window", solution)


@pytest.mark.parametrize(
    "wrong_windows",
    [
        lambda x, k: x.as_strided((k, len(x) - k + 1), (x.stride(0), x.stride(0))),  # shape swapped
        lambda x, k: x.as_strided((len(x) - k + 1, k), (1, x.stride(0))),  # window step 1 cell, not 1 element
        lambda x, k: x.as_strided((len(x) - k + 1, k), (0, x.stride(0))),  # every window the first one
        lambda x, k: x.as_strided((len(x) - k + 1, k), (k * x.stride(0), x.stride(0))),  # chunks, out of bounds
        lambda x, k: x.contiguous().as_strided((len(x) - k + 1, k), (1, 1)),  # a copy when x is strided
    ],
)
def test_sliding_window_rejects_more_wrong_answers(wrong_windows):
    assert_wrong("ch1.sliding_window", wrong_windows)


# --- independent review (issue 10): more wrong answers and unusual right ones --------------------------------


def test_sliding_window_rejects_numpy_windows_without_calling_them_a_copy():
    # numpy's sliding_window_view shares x's bytes, but torch.from_numpy wraps them in a storage of its own.
    def numpy_windows(x, k):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # from_numpy warns that the window view is read-only
            return torch.from_numpy(np.lib.stride_tricks.sliding_window_view(x.numpy(), k))

    feedback = assert_wrong("ch1.sliding_window", numpy_windows)
    assert "copy" not in feedback.message
    assert "storage of its own" in feedback.message


@pytest.mark.parametrize(
    "wrong_windows",
    [
        lambda x, k: x.as_strided((len(x) - k + 1, k), (x.stride(0), 1)),  # inner step one cell, not one element
        lambda x, k: x[: len(x) - k + 1].unsqueeze(1).expand(-1, k),  # every window repeats its first element
        lambda x, k: x.as_strided((len(x) - k + 1, k), (x.stride(0), x.stride(0)), x.storage_offset() + x.stride(0)),
    ],
)
def test_sliding_window_rejects_review_wrong_answers(wrong_windows):
    assert_wrong("ch1.sliding_window", wrong_windows)


def sliding_windows_over_whole_storage(x, k):
    # A flat tensor over x's whole storage, then as_strided from x's offset.
    whole = torch.empty(0, dtype=x.dtype).set_(x.untyped_storage())
    return whole.as_strided((len(x) - k + 1, k), (x.stride(0), x.stride(0)), x.storage_offset())


def sliding_windows_by_numel(x, k):
    return torch.as_strided(x, size=(x.numel() - k + 1, k), stride=(x.stride(0),) * 2)


@pytest.mark.parametrize("solution", [sliding_windows_over_whole_storage, sliding_windows_by_numel])
def test_sliding_window_accepts_review_right_answers(solution):
    assert_correct("ch1.sliding_window", solution)


@pytest.mark.parametrize(
    "wrong_formula",
    [
        lambda shape, stride, offset, index: (
            offset * (stride[0] if stride else 1) + storage_index(shape, stride, 0, index)
        ),
        lambda shape, stride, offset, index: offset + sum(i * step for i, step in zip(index, stride[1:] + (1,))),
        lambda shape, stride, offset, index: storage_index(shape, stride, offset, index) - 1 if index else offset,
    ],
)
def test_element_address_rejects_review_wrong_formulas(wrong_formula):
    assert_wrong("ch1.element_address", wrong_formula)


@pytest.mark.parametrize(
    "solution",
    [
        lambda shape, stride, offset, index: offset + sum(i * s for i, s in zip(index[::-1], stride[::-1])),
        lambda shape, stride, offset, index: np.int64(storage_index(shape, stride, offset, index)),
    ],
)
def test_element_address_accepts_review_right_answers(solution):
    assert_correct("ch1.element_address", solution)


@pytest.mark.parametrize("answer", [(1, 8, 12), (1, 12, 8, 0), [[1, 12, 8]]])
def test_predict_strides_rejects_review_wrong_answers(answer):
    assert_wrong("ch1.predict_strides", answer)


@pytest.mark.parametrize("answer", [np.array([1, 12, 8], dtype=np.uint8), (np.int32(1), 12, 8)])
def test_predict_strides_accepts_review_right_answers(answer):
    assert_correct("ch1.predict_strides", answer)
