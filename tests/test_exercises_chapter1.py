"""Chapter 1 checkers: reference solutions pass, typical wrong answers get a hint; and the chapter's texts keep the
fixes of the 2026-11-27 fact-check.

The stubs and the registration of every exercise are tested once, in test_exercises.py.
"""

import functools
import warnings
from pathlib import Path

import nbformat
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


# --- quick predictions: the notebook's common wrong answers get the diagnosis that names them -------------------


@pytest.mark.parametrize(
    "exercise_id, answer, word",
    [
        ("ch1.q_row_storage_bytes", 24, "whole block"),
        ("ch1.q_slice_strides", (4, 1), "doubles the column stride"),
        ("ch1.q_contiguous", (False, True, True, False), "wrong both ways"),
        ("ch1.q_contiguous", [False, True, True, False], "wrong both ways"),  # a list reads like a tuple
        ("ch1.q_transpose_strides", (4, 1), "swaps them"),
        ("ch1.q_expand_strides", (4, 1), "allocates nothing"),
    ],
)
def test_predictions_diagnose_the_common_mistakes(exercise_id, answer, word):
    assert word in assert_wrong(exercise_id, answer).message


def test_contiguity_prediction_names_the_entry_that_is_off():
    # x[:, :2] alone judged contiguous: entry 3 of (x.t(), x[1], x[:, :2], column)
    assert "(entry 3)" in assert_wrong("ch1.q_contiguous", (False, True, True, True)).message


# --- the fact-check findings of 2026-11-27 about chapter 1 stay fixed (the old sentences must not come back) -----

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTER_1_NOTEBOOKS = [
    "01_read_storage_and_strides.ipynb",
    "deep_dives/how_can_plain_torch_tell_whether_two_tensors_share_a_storage.ipynb",
    "deep_dives/how_do_you_build_any_view_with_as_strided.ipynb",
    "deep_dives/how_do_you_view_the_same_bytes_as_another_dtype.ipynb",
    "deep_dives/what_exactly_does_contiguous_mean.ipynb",
    "deep_dives/which_writes_into_an_expanded_tensor_does_pytorch_refuse.ipynb",
    "deep_dives/why_does_pytorch_have_no_negative_strides.ipynb",
]


@functools.cache
def chapter_1_prose() -> str:
    """The markdown of chapter 1 and its deep dives, with every run of white space made one space."""
    text = " ".join(
        cell.source
        for name in CHAPTER_1_NOTEBOOKS
        for cell in nbformat.read(NOTEBOOKS / name, as_version=4).cells
        if cell.cell_type == "markdown"
    )
    return " ".join(text.split())


@pytest.mark.parametrize(
    "finding, old_claim",
    [
        (
            "1: some in-place ops never ask",
            "Before an in-place arithmetic op, a `copy_` or a random fill writes, it asks",
        ),
        ("5: the index ops refuse exact overlap", "run by elementwise ops, `copy_` and the index ops, compares"),
        ("5: storage objects, not addresses", "their memory ranges meet but differ in start, end or strides"),
        ("6: on the CPU only", "Yet `e[1] = 7` is refused: the assignment"),
        ("8: contiguous() promises is_contiguous()", "`contiguous()` is the call that promises row-major strides"),
        ("12: torch's zero-byte storages", "zero-byte storages all report address 0"),
        ("12: torch's zero-byte storages", "storages of zero bytes all report address 0"),
        ("15: which indexed writes only warn", "indexed writes (boolean mask, integer index, `index_fill_`) only warn"),
        ("16: rows and columns of x.t()", "one step along its rows is one cell"),
    ],
)
def test_an_old_claim_of_the_fact_check_does_not_come_back(finding, old_claim):
    assert old_claim not in chapter_1_prose(), finding


@pytest.mark.parametrize(
    "finding, fixed_claim",
    [
        ("1", "On the CPU, some never ask, among them `addmv_`, `baddbmm_`, `bmm(out=)`, `apply_`, `map_` and"),
        ("5", "The index ops refuse any overlap between dense tensors, even an exact one"),
        ("5", "The check compares storage objects, not addresses"),
        ("6", "So on a GPU `e[1] = 7` goes through"),
        ("8", "So `contiguous()` promises `is_contiguous()`, not row-major strides."),
        ("12", "Every storage of zero bytes that torch allocated reports address 0."),
        ("15", "`index_add_`, `index_copy_`, `scatter_`, `put_` and `masked_scatter_` refuse."),
        (
            "16",
            "One step to the next row is one cell (stride 1). One step to the next column is four cells (stride 4).",
        ),
    ],
)
def test_the_fixed_claim_of_the_fact_check_is_in_place(finding, fixed_claim):
    assert fixed_claim in chapter_1_prose(), f"finding {finding}"


def test_the_fixed_claims_hold_on_this_torch():
    """What the fixed sentences say, asked of torch itself (the deep dives' stored outputs show the same)."""
    e = torch.tensor([10.0, 20.0, 30.0]).view(3, 1).expand(3, 4)
    e[0].addmv_(torch.ones(4, 2), torch.ones(2))  # finding 1: no error, and every alias added its own 2
    assert e[:, 0].tolist() == [18.0, 20.0, 30.0]
    same = torch.arange(4.0)
    with pytest.raises(RuntimeError, match="unsupported operation"):  # finding 5: exact overlap refused
        same.index_add_(0, torch.tensor([3, 2, 1, 0]), same)
    column = torch.arange(5.0).view(1, 5).t()
    assert column.contiguous() is column and column.contiguous().stride() == (1, 5)  # finding 8
    over_numpy = torch.from_numpy(np.empty(0)).untyped_storage()  # finding 12: not allocated by torch
    assert over_numpy.nbytes() == 0 and over_numpy.data_ptr() != 0
    assert torch.empty(0).untyped_storage().data_ptr() == 0
    x = torch.arange(100.0, 112.0).view(3, 4)
    assert x.t().stride() == (1, 4)  # finding 16: stride 1 to the next row, 4 to the next column


# --- the rule hunt of issue 19 (rules-0107) about chapter 1: the rules it broke must not come back ---------------


@pytest.mark.parametrize(
    "finding, old_claim",
    [
        ("B8: a lazy conj() is not its cell's value", "element `t[i, j]` is `storage["),
        ("B9: as_strided keeps the dtype, so not any view", "`as_strided` can build any view"),
        ("B7: permute(0, 1, 2) is contiguous", "The result is not contiguous."),
        ("L2: has_internal_overlap decides from the strides first", "lists every element's cell to find that out"),
        (
            "B1: exact overlap is allowed; masked_scatter_ never checks on the CPU",
            "Overlap between an input and the output is refused for dense tensors in one storage object",
        ),
        ("notes: sum(out=) and others are silent too", "these five never ask"),
        ("notes: sum(out=) and others are silent too", "`apply_` and `map_` write wrong values without a word"),
        ("rules-0204 #5: two views with gaps get through the index ops", "The index ops refuse any overlap, even"),
    ],
)
def test_a_claim_the_rule_hunt_broke_does_not_come_back(finding, old_claim):
    assert old_claim not in chapter_1_prose(), finding


@pytest.mark.parametrize(
    "finding, fixed_claim",
    [
        ("B8", "element `t[i, j]` lives at `storage[offset"),
        ("B7", "`turned` below is not contiguous."),
        ("notes", "On the CPU, some never ask, among them `addmv_`, `baddbmm_`, `bmm(out=)`, `apply_`, `map_` and"),
        ("B1", "Elementwise ops allow an exact overlap; the index ops refuse it."),
        ("B1", "`mm(out=)` and, on the CPU, `masked_scatter_`."),
        ("rules-0204 #5", "The index ops refuse any overlap between dense tensors, even an exact one"),
    ],
)
def test_the_claim_the_rule_hunt_fixed_is_in_place(finding, fixed_claim):
    assert fixed_claim in chapter_1_prose(), f"rules-0107 {finding}"


def test_the_refusal_the_expanded_deep_dive_quotes_is_in_its_stored_output():
    # rules-0107 M2: the prose quoted a message that no output showed (the cell printed 'unsupported operation').
    path = NOTEBOOKS / "deep_dives/which_writes_into_an_expanded_tensor_does_pytorch_refuse.ipynb"
    quote = "some elements of the input tensor and the written-to tensor refer to a single memory location"
    cells = nbformat.read(path, as_version=4).cells
    assert any(quote in " ".join(cell.source.split()) for cell in cells if cell.cell_type == "markdown")
    printed = [output.get("text", "") for cell in cells if cell.cell_type == "code" for output in cell.outputs]
    assert sum(text.count(f"refused: {quote}") for text in printed) == 7


def test_the_rule_hunts_counterexamples_hold_on_this_torch():
    """What the rewritten sentences of rules-0107 rest on, asked of torch (the notebooks' stored outputs show it)."""
    z = torch.tensor([1 + 2j]).conj()  # B8: the cell holds 1+2j, the element reads 1-2j
    assert z[0].item() == 1 - 2j and torch.view_as_real(z.conj())[0].tolist() == [1.0, 2.0]
    assert torch.zeros(2, 3, 4).permute(0, 1, 2).is_contiguous()  # B7
    assert torch.zeros(1, 3).permute(1, 0).is_contiguous()
    r = torch.arange(6.0)  # B1: masked_scatter_ on the CPU, partial overlap, no error and wrong values
    r[1:].masked_scatter_(torch.ones(5, dtype=torch.bool), r[:-1])
    assert r.tolist() == [0.0] * 6
    e = torch.tensor([10.0, 20.0, 30.0]).view(3, 1).expand(3, 4)  # notes: a silent reduction into e
    torch.sum(torch.ones(3, 4, 2), dim=2, out=e)
    assert e[:, 0].tolist() == [8.0, 8.0, 8.0]
    gapped = torch.arange(8.0)  # rules-0204 #5: two view objects with gaps pass the index ops' check
    gapped[::2][:2].index_copy_(0, torch.tensor([1, 0]), gapped[::2][:2])
    assert gapped[::2][:2].tolist() == [0.0, 0.0]
