"""Chapter 4 checkers: reference solutions pass, typical wrong answers get a hint, stubs are not attempted."""

import pytest
import torch

import tutorial_lib as tl
from exercise_asserts import assert_correct, assert_wrong


def status_of(exercise_id, answer):
    return tl.check(exercise_id, answer)


def test_chapter4_exercises_are_registered():
    ids = tl.exercise_ids()
    for name in ("independent_copy", "predict_grad", "safe_update", "predict_versions"):
        assert f"ch4.{name}" in ids


# --- stubs --------------------------------------------------------------------------------------------------


def stub_one(x): ...


def stub_two(w, lr):
    """A docstring and nothing else is still a stub."""
    ...


@pytest.mark.parametrize("exercise_id", ["ch4.independent_copy", "ch4.predict_grad", "ch4.safe_update", "ch4.predict_versions"])
def test_ellipsis_is_not_attempted(exercise_id):
    assert status_of(exercise_id, ...).status == "not attempted"


@pytest.mark.parametrize("exercise_id, stub", [("ch4.independent_copy", stub_one), ("ch4.safe_update", stub_two)])
def test_stub_function_is_not_attempted(exercise_id, stub):
    assert status_of(exercise_id, stub).status == "not attempted"


# --- ch4.independent_copy -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "solution",
    [lambda x: x.detach().clone(), lambda x: x.clone().detach(), lambda x: x.detach().clone(memory_format=torch.contiguous_format)],
)
def test_independent_copy_solutions(solution):
    assert_correct("ch4.independent_copy", solution)


def test_independent_copy_rejects_detach_with_memory_hint():
    feedback = assert_wrong("ch4.independent_copy", lambda x: x.detach())
    assert "shares memory" in feedback.message
    assert "clone()" in feedback.hint


def test_independent_copy_rejects_data():
    assert "shares memory" in assert_wrong("ch4.independent_copy", lambda x: x.data).message


def test_independent_copy_rejects_clone_with_graph_hint():
    feedback = assert_wrong("ch4.independent_copy", lambda x: x.clone())
    assert "graph" in feedback.message
    assert "detach" in feedback.hint


@pytest.mark.parametrize(
    "wrong_answer",
    [
        lambda x: x.detach().clone().float(),  # converts the int64 input
        lambda x: x.detach().clone().reshape(-1),  # changes the shape
        lambda x: x.detach().clone() + 1,  # changes the values
        lambda x: x.detach().mul_(1).clone(),  # writes into x (leaf: through detach)
        lambda x: x.tolist(),  # not a tensor
    ],
)
def test_independent_copy_rejects_other_mistakes(wrong_answer):
    assert_wrong("ch4.independent_copy", wrong_answer)


def test_independent_copy_rejects_a_non_function():
    assert_wrong("ch4.independent_copy", torch.zeros(3))


# --- ch4.predict_grad ---------------------------------------------------------------------------------------


def test_predict_grad_program_matches_hand_derivation():
    from tutorial_lib.exercises.chapter4 import predict_grad_program

    assert torch.equal(predict_grad_program(), torch.tensor([3.0, 6.0, 9.0]))


@pytest.mark.parametrize("answer", [[3.0, 6.0, 9.0], (3, 6, 9), torch.tensor([3.0, 6.0, 9.0])])
def test_predict_grad_correct(answer):
    assert_correct("ch4.predict_grad", answer)


@pytest.mark.parametrize(
    "answer, word",
    [([6.0, 12.0, 18.0], "constant"), ([4.0, 8.0, 12.0], "constant"), ([1.0, 2.0, 3.0], "clone"), ([2.0, 4.0, 6.0], "every"), ([0, 0, 0], "clone")],
)
def test_predict_grad_wrong(answer, word):
    assert word in assert_wrong("ch4.predict_grad", answer).hint


def test_predict_grad_wrong_shape():
    assert_wrong("ch4.predict_grad", [3.0, 6.0])
    assert_wrong("ch4.predict_grad", "3, 6, 9")


# --- ch4.safe_update ----------------------------------------------------------------------------------------


def sgd_step_no_grad(w, lr):
    with torch.no_grad():
        w -= lr * w.grad
    return w


def sgd_step_detach(w, lr):
    w.detach().sub_(lr * w.grad)
    return w


def sgd_step_copy(w, lr):
    with torch.no_grad():
        w.copy_(w - lr * w.grad)


@pytest.mark.parametrize("solution", [sgd_step_no_grad, sgd_step_detach, sgd_step_copy])
def test_safe_update_solutions(solution):
    assert_correct("ch4.safe_update", solution)


def sgd_step_data(w, lr):
    w.data -= lr * w.grad
    return w


def sgd_step_data_inplace(w, lr):
    w.data.sub_(lr * w.grad)
    return w


def test_safe_update_rejects_data_with_version_hint():
    for answer in (sgd_step_data, sgd_step_data_inplace):
        feedback = assert_wrong("ch4.safe_update", answer)
        assert "_version" in feedback.message
        assert ".data" in feedback.hint


def sgd_step_recorded(w, lr):
    w -= lr * w.grad
    return w


def test_safe_update_rejects_recorded_leaf_edit():
    assert "no_grad" in assert_wrong("ch4.safe_update", sgd_step_recorded).hint


def sgd_step_new_tensor(w, lr):
    w = w - lr * w.grad
    return w


def sgd_step_rebind_no_return(w, lr):
    w = w - lr * w.grad


def sgd_step_replace_data(w, lr):
    w.data = w.detach() - lr * w.grad
    return w


def sgd_step_twice(w, lr):
    with torch.no_grad():
        w -= 2 * lr * w.grad
    return w


def sgd_step_not_a_leaf(w, lr):
    w.requires_grad_(False)
    w -= lr * w.grad
    return w


def sgd_step_returns_copy(w, lr):
    with torch.no_grad():
        w -= lr * w.grad
    return w.detach().clone()


@pytest.mark.parametrize(
    "answer",
    [sgd_step_new_tensor, sgd_step_rebind_no_return, sgd_step_replace_data, sgd_step_twice, sgd_step_not_a_leaf, sgd_step_returns_copy],
)
def test_safe_update_rejects_other_mistakes(answer):
    assert_wrong("ch4.safe_update", answer)


# --- ch4.predict_versions -----------------------------------------------------------------------------------


def test_predict_versions_program():
    from tutorial_lib.exercises.chapter4 import predict_versions_program

    assert predict_versions_program() == (2, 2, 2, 1, 1)


@pytest.mark.parametrize("answer", [(2, 2, 2, 1, 1), [2, 2, 2, 1, 1], {"t": 2, "v": 2, "d": 2, "p": 1, "c": 1}])
def test_predict_versions_correct(answer):
    assert_correct("ch4.predict_versions", answer)


@pytest.mark.parametrize(
    "answer, word",
    [
        ((3, 3, 3, 3, 1), ".data"),  # .data counted as sharing the counter
        ((2, 2, 2, 2, 1), ".data"),
        ((2, 2, 2, 1, 3), "clone"),
        ((1, 1, 1, 1, 1), "counter"),  # detach thought to have its own counter
        ((2, 1, 2, 1, 1), "counter"),
        ((0, 0, 0, 0, 0), "counter"),
    ],
)
def test_predict_versions_wrong(answer, word):
    assert word in assert_wrong("ch4.predict_versions", answer).hint


def test_predict_versions_wrong_format():
    assert_wrong("ch4.predict_versions", (2, 2, 2))
    assert_wrong("ch4.predict_versions", "2 2 2 1 1")
