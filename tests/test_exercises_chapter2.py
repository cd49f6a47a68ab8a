"""Chapter 2 checkers: reference solutions pass, typical wrong answers get a hint, stubs are not attempted."""

import numpy as np
import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.exercises.chapter2 import PREDICT_EXPRESSIONS, predict_truth
from exercise_asserts import assert_correct, assert_wrong

IDS = ("ch2.make_view", "ch2.predict_view_or_copy", "ch2.inplace_update")


def test_chapter2_exercises_are_registered():
    ids = tl.exercise_ids()
    for exercise_id in IDS:
        assert exercise_id in ids


# --- stubs --------------------------------------------------------------------------------------------------


def stub_one(x): ...


def stub_two(y, x):
    """A docstring and nothing else is still a stub."""
    ...


@pytest.mark.parametrize("exercise_id", IDS)
def test_ellipsis_is_not_attempted(exercise_id):
    assert tl.check(exercise_id, ...).status == "not attempted"


@pytest.mark.parametrize("exercise_id, stub", [("ch2.make_view", stub_one), ("ch2.inplace_update", stub_two)])
def test_stub_function_is_not_attempted(exercise_id, stub):
    assert tl.check(exercise_id, stub).status == "not attempted"


# --- ch2.make_view ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "solution",
    [
        lambda x: x[:, ::2],
        lambda x: x[:, 0::2],
        lambda x: x[..., ::2],
        lambda x: x.t()[::2].t(),
        lambda x: x.as_strided((x.shape[0], (x.shape[1] + 1) // 2), (x.stride(0), 2 * x.stride(1)), x.storage_offset()),
    ],
)
def test_make_view_solutions(solution):
    assert_correct("ch2.make_view", solution)


def test_make_view_rejects_the_original_advanced_indexing():
    feedback = assert_wrong("ch2.make_view", lambda x: x[:, torch.arange(0, x.shape[1], 2)])
    assert "copy" in feedback.message
    assert "start:stop:step" in feedback.hint


@pytest.mark.parametrize(
    "copying",
    [
        lambda x: x[:, list(range(0, x.shape[1], 2))],
        lambda x: x.index_select(1, torch.arange(0, x.shape[1], 2)),
        lambda x: x[:, ::2].clone(),
        lambda x: x[:, ::2].contiguous(),
    ],
)
def test_make_view_rejects_copies(copying):
    assert "shares no memory" in assert_wrong("ch2.make_view", copying).message


@pytest.mark.parametrize("off", [lambda x: x[:, 1::2], lambda x: x[::2], lambda x: x[:, ::3], lambda x: x])
def test_make_view_rejects_wrong_selection(off):
    assert "dimension 1" in assert_wrong("ch2.make_view", off).hint


def test_make_view_rejects_writing_into_x():
    def writes(x):
        x.mul_(1).add_(1)
        return x[:, ::2]

    assert "changed its input" in assert_wrong("ch2.make_view", writes).message


def test_make_view_rejects_non_tensor_and_non_function():
    assert_wrong("ch2.make_view", lambda x: x[:, ::2].tolist())
    assert_wrong("ch2.make_view", "x[:, ::2]")


def test_make_view_learner_error_is_feedback():
    feedback = tl.check("ch2.make_view", lambda x: x.view(-1, 2)[:, 0])
    assert feedback.status == "wrong"


# --- ch2.predict_view_or_copy -------------------------------------------------------------------------------

SOLUTION = ["view", "copy", "copy", "view", "copy", "view", "copy", "view", "copy", "copy"]


def test_truth_matches_the_written_solution():
    # The notebook's collapsed solution lists SOLUTION; it must be what torch really does.
    assert predict_truth() == SOLUTION
    assert len(PREDICT_EXPRESSIONS) == len(SOLUTION)


def test_predict_solution_as_list_tuple_and_dict():
    assert_correct("ch2.predict_view_or_copy", SOLUTION)
    assert_correct("ch2.predict_view_or_copy", tuple(word.upper() for word in SOLUTION))
    assert_correct("ch2.predict_view_or_copy", dict(zip(PREDICT_EXPRESSIONS, SOLUTION)))


def test_predict_seed_article_beliefs_are_wrong():
    # One seed article lists index_select (and masked_select, gather) among the memory-sharing operations.
    believed = list(SOLUTION)
    believed[4] = "view"
    feedback = assert_wrong("ch2.predict_view_or_copy", believed)
    assert "9 of 10" in feedback.message
    assert "index_select" in feedback.hint


def test_predict_reshape_always_view_is_wrong():
    believed = list(SOLUTION)
    believed[2] = believed[9] = "view"
    feedback = assert_wrong("ch2.predict_view_or_copy", believed)
    assert "#3" in feedback.message and "#10" in feedback.message
    assert "reshape" in feedback.hint


@pytest.mark.parametrize("malformed", [["view"] * 9, "view copy", [True] * 10, ["views"] * 10, 3, {"x[:, 1:3]": "view"}])
def test_predict_malformed_answers(malformed):
    assert "list of 10 words" in assert_wrong("ch2.predict_view_or_copy", malformed).message


# --- ch2.inplace_update -------------------------------------------------------------------------------------


def add_assign(y, x):
    y += x


def add_method(y, x):
    y.add_(x)


def add_out(y, x):
    torch.add(y, x, out=y)


def add_returning(y, x):
    return y.add_(x)


def add_through_numpy(y, x):
    # numpy writes into the same memory and allocates nothing torch could see; a fine answer too
    np.add(y.numpy(), x.numpy(), out=y.numpy())


@pytest.mark.parametrize("solution", [add_assign, add_method, add_out, add_returning, add_through_numpy])
def test_inplace_update_solutions(solution):
    assert_correct("ch2.inplace_update", solution)


def rebinds(y, x):
    y = x + y
    return y


def slice_assign(y, x):
    y[:] = x + y


def copy_in(y, x):
    y.copy_(y + x)


def swapped(y, x):
    x.add_(y)


def new_storage(y, x):
    y.set_(y + x)


def twice(y, x):
    y.add_(x).add_(x)


def test_inplace_update_rejects_rebinding():
    feedback = assert_wrong("ch2.inplace_update", rebinds)
    assert "old values" in feedback.message
    assert "binds" in feedback.hint


@pytest.mark.parametrize("temporary", [slice_assign, copy_in])
def test_inplace_update_rejects_temporaries(temporary):
    feedback = assert_wrong("ch2.inplace_update", temporary)
    assert "4,000 bytes" in feedback.message
    assert "add_" in feedback.hint


def test_inplace_update_rejects_other_mistakes():
    assert "changed x" in assert_wrong("ch2.inplace_update", swapped).message
    assert "other memory" in assert_wrong("ch2.inplace_update", new_storage).message
    assert "other values" in assert_wrong("ch2.inplace_update", twice).message
    assert_wrong("ch2.inplace_update", "y += x")

