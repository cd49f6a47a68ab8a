"""Chapter 4 checkers: reference solutions pass, typical wrong answers get a hint.

The stubs and the registration of every exercise are tested once, in test_exercises.py.
"""

import copy

import numpy as np
import pytest
import torch
from exercise_asserts import assert_correct, assert_wrong

# --- ch4.independent_copy -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "solution",
    [
        lambda x: x.detach().clone(),
        lambda x: x.clone().detach(),
        lambda x: x.detach().clone(memory_format=torch.contiguous_format),
        # unusual but right: clone then detach the clone in place, copy through NumPy, arithmetic on a detached alias
        lambda x: x.clone().detach_(),
        lambda x: torch.from_numpy(x.detach().numpy().copy()),
        lambda x: x.detach().to(copy=True),
        lambda x: x.detach() * 1,
        lambda x: torch.tensor(x.tolist(), dtype=x.dtype),
    ],
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


def clone_with_recording_left_off(x):
    torch.set_grad_enabled(False)  # never switched back on
    return x.clone()


def test_independent_copy_rejects_grad_mode_left_off_and_restores_it():
    feedback = assert_wrong("ch4.independent_copy", clone_with_recording_left_off)
    assert "switched off" in feedback.message
    assert torch.is_grad_enabled()


@pytest.mark.parametrize(
    "changes_x",
    [
        lambda x: x.requires_grad_(False).clone() if x.is_leaf else x.detach().clone(),  # turns off x's gradient
        lambda x: x.detach_().clone(),  # takes x itself out of the graph
    ],
)
def test_independent_copy_rejects_changing_x(changes_x):
    feedback = assert_wrong("ch4.independent_copy", changes_x)
    assert "changed x itself" in feedback.message


def test_independent_copy_rejects_a_new_leaf_and_a_recorded_copy():
    assert (
        "new leaf"
        in assert_wrong(
            "ch4.independent_copy",
            lambda x: x.detach().clone().requires_grad_() if x.is_floating_point() else x.clone(),
        ).message
    )
    assert (
        "graph" in assert_wrong("ch4.independent_copy", lambda x: torch.empty_like(x).copy_(x)).message
    )  # CopyBackwards
    assert_wrong("ch4.independent_copy", copy.deepcopy)  # a leaf's deepcopy requires grad; a non-leaf's raises


def test_independent_copy_rejects_a_contiguous_alias():
    # contiguous() and flatten().reshape() return x's own memory whenever x is already contiguous
    assert "shares memory" in assert_wrong("ch4.independent_copy", lambda x: x.detach().contiguous()).message
    assert (
        "shares memory" in assert_wrong("ch4.independent_copy", lambda x: x.detach().flatten().reshape(x.shape)).message
    )


def test_independent_copy_rejects_an_answer_that_fails_on_0_dim():
    # right for every input but the 0-dim one, where iterating over x raises
    assert "raised" in assert_wrong("ch4.independent_copy", lambda x: torch.stack(list(x.detach()))).message


def test_independent_copy_rejects_a_non_function():
    assert_wrong("ch4.independent_copy", torch.zeros(3))


# --- ch4.predict_grad ---------------------------------------------------------------------------------------


def test_predict_grad_program_matches_hand_derivation():
    from tutorial_lib.exercises.chapter4 import predict_grad_program

    assert torch.equal(predict_grad_program(), torch.tensor([3.0, 6.0, 9.0]))


@pytest.mark.parametrize(
    "answer",
    [
        [3.0, 6.0, 9.0],
        (3, 6, 9),
        torch.tensor([3.0, 6.0, 9.0]),
        np.array([3.0, 6.0, 9.0]),  # unusual: a NumPy array
        torch.tensor([3.0, 6.0, 9.0], dtype=torch.float64, requires_grad=True),  # unusual: a tensor that requires grad
    ],
)
def test_predict_grad_correct(answer):
    assert_correct("ch4.predict_grad", answer)


@pytest.mark.parametrize(
    "answer, word",
    [
        ([6.0, 12.0, 18.0], "constant"),
        ([4.0, 8.0, 12.0], "constant"),
        ([1.0, 2.0, 3.0], "clone"),
        ([2.0, 4.0, 6.0], "every"),
        ([0, 0, 0], "clone"),
    ],
)
def test_predict_grad_wrong(answer, word):
    assert word in assert_wrong("ch4.predict_grad", answer).hint


def test_predict_grad_rejects_near_misses():
    assert_wrong("ch4.predict_grad", [3.00002, 6.0, 9.0])
    assert_wrong("ch4.predict_grad", [3.0, 6.0, 8.0])


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


def sgd_step_inference_mode(w, lr):
    with torch.inference_mode():  # w is a normal tensor: its edit is still counted
        w.sub_(lr * w.grad)
    return w


def sgd_step_optimizer(w, lr):
    torch.optim.SGD([w], lr=lr).step()
    return w


def sgd_step_out_argument(w, lr):
    alias = w.detach()
    torch.add(alias, w.grad, alpha=-lr, out=alias)
    return w


def sgd_step_then_clear_grad(w, lr):
    with torch.no_grad():
        w -= lr * w.grad
    w.grad = None  # what zero_grad() does by default
    return w


@pytest.mark.parametrize(
    "solution",
    [
        sgd_step_no_grad,
        sgd_step_detach,
        sgd_step_copy,
        sgd_step_inference_mode,
        sgd_step_optimizer,
        sgd_step_out_argument,
        sgd_step_then_clear_grad,
    ],
)
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


def sgd_step_recording_left_off(w, lr):
    torch.set_grad_enabled(False)
    w -= lr * w.grad
    return w


def test_safe_update_rejects_grad_mode_left_off_and_restores_it():
    assert "switched off" in assert_wrong("ch4.safe_update", sgd_step_recording_left_off).message
    assert torch.is_grad_enabled()


def sgd_step_scales_the_gradient(w, lr):
    with torch.no_grad():
        w.grad.mul_(lr)
        w -= w.grad
    return w


def test_safe_update_rejects_changing_the_gradient():
    assert "w.grad" in assert_wrong("ch4.safe_update", sgd_step_scales_the_gradient).message


def sgd_step_no_grad_data(w, lr):
    with torch.no_grad():
        w.data -= lr * w.grad
    return w


def sgd_step_through_numpy(w, lr):
    values = w.detach().numpy()
    values -= lr * w.grad.numpy()
    return w


def sgd_step_set(w, lr):
    with torch.no_grad():
        w.set_(w - lr * w.grad)
    return w


def test_safe_update_rejects_invisible_and_relocating_edits():
    assert "_version" in assert_wrong("ch4.safe_update", sgd_step_no_grad_data).message
    assert "_version" in assert_wrong("ch4.safe_update", sgd_step_through_numpy).message
    assert "other memory" in assert_wrong("ch4.safe_update", sgd_step_set).message


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
    [
        sgd_step_new_tensor,
        sgd_step_rebind_no_return,
        sgd_step_replace_data,
        sgd_step_twice,
        sgd_step_not_a_leaf,
        sgd_step_returns_copy,
    ],
)
def test_safe_update_rejects_other_mistakes(answer):
    assert_wrong("ch4.safe_update", answer)


# --- ch4.predict_versions -----------------------------------------------------------------------------------


def test_predict_versions_program():
    from tutorial_lib.exercises.chapter4 import predict_versions_program

    assert predict_versions_program() == (2, 2, 2, 1, 1)


@pytest.mark.parametrize(
    "answer",
    [
        (2, 2, 2, 1, 1),
        [2, 2, 2, 1, 1],
        {"t": 2, "v": 2, "d": 2, "p": 1, "c": 1},
        (np.int64(2), 2, 2, np.int64(1), 1),  # unusual: NumPy integers
        torch.tensor([2, 2, 2, 1, 1]),  # unusual: a tensor
    ],
)
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
    assert_wrong("ch4.predict_versions", (2.0, 2, 2, 1, 1))
    assert_wrong("ch4.predict_versions", (True,) * 5)


# --- ch4.new_leaf -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "solution",
    [
        lambda x: x.detach().clone().requires_grad_(),
        lambda x: x.clone().detach().requires_grad_(),
        # unusual but right: a Parameter, a tensor rebuilt from a list, a deepcopy of the detached alias
        lambda x: torch.nn.Parameter(x.detach().clone()),
        lambda x: torch.tensor(x.tolist(), dtype=x.dtype, requires_grad=True),
        lambda x: copy.deepcopy(x.detach()).requires_grad_(),
    ],
)
def test_new_leaf_solutions(solution):
    assert_correct("ch4.new_leaf", solution)


def test_new_leaf_rejects_the_clone_trap():
    feedback = assert_wrong("ch4.new_leaf", lambda x: x.clone().requires_grad_())
    assert "CloneBackward0" in feedback.message and "not a leaf" in feedback.message
    assert "detach" in feedback.hint


@pytest.mark.parametrize(
    "answer, word",
    [
        (lambda x: x.detach().requires_grad_(), "shares memory"),  # a leaf over x's memory
        (lambda x: x.detach().clone(), "does not require grad"),
        (lambda x: x.requires_grad_(), "shares memory"),  # x itself
        (lambda x: x.detach().float().clone().requires_grad_(), "dtype"),  # converts the float64 input
    ],
)
def test_new_leaf_rejects_mistakes(answer, word):
    assert word in assert_wrong("ch4.new_leaf", answer).message


def turns_x_off_then_copies(x):
    if x.is_leaf:
        x.requires_grad_(False)
    return x.detach().clone().requires_grad_()


def test_new_leaf_rejects_changing_x():
    assert "changed x itself" in assert_wrong("ch4.new_leaf", turns_x_off_then_copies).message


def test_new_leaf_rejects_non_functions_and_crashes():
    assert_wrong("ch4.new_leaf", torch.zeros(3, requires_grad=True))
    assert_wrong("ch4.new_leaf", copy.deepcopy)  # raises on the non-leaf input


# --- ch4.predict_modes --------------------------------------------------------------------------------------


def test_predict_modes_program():
    from tutorial_lib.exercises.chapter4 import predict_modes_program

    assert predict_modes_program() == (1, 2, "error")


@pytest.mark.parametrize(
    "answer",
    [(1, 2, "error"), [1, 2, "raises"], (np.int64(1), 2, RuntimeError), (1, 2, "RuntimeError"), (1, 2, " Error ")],
)
def test_predict_modes_correct(answer):
    assert_correct("ch4.predict_modes", answer)


@pytest.mark.parametrize(
    "answer, word",
    [
        ((1, 1, "error"), "both x.add_(1)"),  # inference_mode thought to stop counting x's edit
        ((1, 2, 1), "inference tensor"),  # b thought to have a counter
        ((1, 2, 0), "inference tensor"),
        ((0, 1, "error"), "no_grad"),  # no_grad thought to stop version counting
        ((0, 2, "error"), "no_grad"),
    ],
)
def test_predict_modes_wrong(answer, word):
    assert word in assert_wrong("ch4.predict_modes", answer).hint


def test_predict_modes_wrong_format():
    assert_wrong("ch4.predict_modes", (1, 2))
    assert_wrong("ch4.predict_modes", "1 2 error")
    assert_wrong("ch4.predict_modes", (True, 2, "error"))
    assert_wrong("ch4.predict_modes", (1, 2, "maybe"))


# --- loopholes found by the independent review ----------------------------------------------------------------


def copy_made_in_inference_mode(x):
    with torch.inference_mode():
        return x.clone()


def leaf_made_in_inference_mode(x):
    with torch.inference_mode():
        return x.clone().requires_grad_()


def test_independent_copy_rejects_an_inference_tensor():
    # no memory shared, no graph, but it cannot be written into outside inference_mode
    assert "inference tensor" in assert_wrong("ch4.independent_copy", copy_made_in_inference_mode).message


def test_new_leaf_rejects_an_inference_tensor():
    # a leaf whose backward fills .grad, but an optimizer step on it raises outside inference_mode
    assert "inference tensor" in assert_wrong("ch4.new_leaf", leaf_made_in_inference_mode).message


def clone_under_no_grad_then_requires_grad(x):
    with torch.no_grad():
        return x.clone().requires_grad_()  # not recorded, so a leaf


@pytest.mark.parametrize(
    "solution",
    [
        clone_under_no_grad_then_requires_grad,
        lambda x: copy.copy(x.clone()).requires_grad_(),  # copy.copy makes a new leaf over the clone's memory
    ],
)
def test_new_leaf_more_unusual_solutions(solution):
    assert_correct("ch4.new_leaf", solution)


@pytest.mark.parametrize(
    "solution",
    [
        lambda x: copy.deepcopy(x.detach()),
        lambda x: torch.empty_like(x).copy_(x.detach()),
    ],
)
def test_independent_copy_more_unusual_solutions(solution):
    assert_correct("ch4.independent_copy", solution)


@pytest.mark.parametrize(
    "wrong_answer",
    [
        lambda x: copy.copy(x.detach()),  # same storage, its own counter
        lambda x: x.detach().to("cpu"),  # to() returns x itself when nothing changes
        lambda x: x.detach().as_strided(x.shape, x.stride(), x.storage_offset()),
    ],
)
def test_independent_copy_rejects_more_aliases(wrong_answer):
    assert "shares memory" in assert_wrong("ch4.independent_copy", wrong_answer).message


@pytest.mark.parametrize(
    "answer",
    [(1, 2, "no error"), (1, 2, "doesn't raise"), (1, 2, "never fails"), (1, 2, "not an error"), (1, 2, UserWarning)],
)
def test_predict_modes_rejects_negated_words_and_warnings(answer):
    # these say that reading b._version does NOT raise, or only warns: all wrong
    assert_wrong("ch4.predict_modes", answer)


def test_predict_modes_accepts_a_0_dim_integer_tensor():
    assert_correct("ch4.predict_modes", (torch.tensor(1), 2, "raises RuntimeError"))


def sgd_step_then_zero_grad(w, lr):
    with torch.no_grad():
        w -= lr * w.grad
    w.grad.zero_()  # what zero_grad(set_to_none=False) does
    return w


def sgd_step_momentum_optimizer(w, lr):
    torch.optim.SGD([w], lr=lr, momentum=0.9).step()  # the first step with momentum is a plain step
    return w


@pytest.mark.parametrize("solution", [sgd_step_then_zero_grad, sgd_step_momentum_optimizer])
def test_safe_update_more_unusual_solutions(solution):
    assert_correct("ch4.safe_update", solution)


def sgd_step_zero_grad_first(w, lr):
    w.grad.zero_()
    with torch.no_grad():
        w -= lr * w.grad
    return w


def sgd_step_adam(w, lr):
    torch.optim.Adam([w], lr=lr).step()  # a different update rule
    return w


def sgd_step_wrong_sign(w, lr):
    with torch.no_grad():
        w += lr * w.grad
    return w


def sgd_step_on_a_clone(w, lr):
    with torch.no_grad():
        w.clone().sub_(lr * w.grad)
    return w


def test_safe_update_rejects_more_mistakes():
    assert "after the update" in assert_wrong("ch4.safe_update", sgd_step_zero_grad_first).hint
    for answer in (sgd_step_adam, sgd_step_wrong_sign, sgd_step_on_a_clone):
        assert_wrong("ch4.safe_update", answer)


def test_independent_copy_hint_names_the_operation_autograd_recorded():
    copied = assert_wrong("ch4.independent_copy", lambda x: torch.empty_like(x).copy_(x))
    assert (
        "copy_() is recorded by autograd (CopyBackwards)" in copied.hint and "clone()" not in copied.hint.split(".")[0]
    )
    cloned = assert_wrong("ch4.independent_copy", lambda x: x.clone())
    assert "clone() is recorded by autograd (CloneBackward0)" in cloned.hint


# --- fixes after the course review of 2026-11-27 (issue 19; fact-check 04-07 F11, F12; learner review) ------------


@pytest.mark.parametrize(
    "pasted",
    [
        "RuntimeError: Inference tensors do not track version counter.",  # the solution's own quote, pasted
        "raises: inference tensors have no version counter",
        "Inference tensors do not track version counter.",  # torch's message without its class
        "raises RuntimeError: Inference tensors do not track version counter",
    ],
)
def test_predict_modes_accepts_a_right_answer_that_quotes_the_error(pasted):
    # F11: any "no"/"not" anywhere used to make the entry unreadable, and the learner was told the answer's format
    assert_correct("ch4.predict_modes", (1, 2, pasted))


@pytest.mark.parametrize("negated", ["no error", "doesn't raise", "it does not raise", "not an error", UserWarning])
def test_predict_modes_tells_does_not_raise_apart_and_points_at_b(negated):
    # "reading b._version does not raise" is a prediction about b, not a malformed entry
    assert "inference tensor" in assert_wrong("ch4.predict_modes", (1, 2, negated)).hint


def test_predict_modes_names_the_entry_it_cannot_read():
    assert "entry 3 ('maybe')" in assert_wrong("ch4.predict_modes", (1, 2, "maybe")).message


def sgd_step_data_then_dummy_write(w, lr):
    w.data -= lr * w.grad
    with torch.no_grad():
        w.mul_(1)  # moves the counter, changes nothing
    return w


def sgd_step_numpy_then_dummy_write(w, lr):
    with torch.no_grad():
        w.mul_(1)
    values = w.detach().numpy()
    values -= lr * w.grad.numpy()
    return w


def sgd_step_storage_copy_then_dummy_write(w, lr):
    w.untyped_storage().copy_((w.detach() - lr * w.grad).untyped_storage())
    with torch.no_grad():
        w.add_(0)
    return w


def sgd_step_fused_then_dummy_write(w, lr):
    torch.optim.SGD([w], lr=lr, fused=True).step()  # the fused kernel does not move the counter
    with torch.no_grad():
        w.mul_(1)
    return w


@pytest.mark.parametrize(
    "answer",
    [
        sgd_step_data_then_dummy_write,
        sgd_step_numpy_then_dummy_write,
        sgd_step_storage_copy_then_dummy_write,
        sgd_step_fused_then_dummy_write,
    ],
)
def test_safe_update_rejects_an_uncounted_update_hidden_by_a_dummy_inplace_op(answer):
    # F12: the checker only looked at whether w._version moved, so any counted no-op passed with a .data update
    feedback = assert_wrong("ch4.safe_update", answer)
    assert "not because of the update" in feedback.message
    assert "w.detach()" in feedback.hint


def sgd_step_foreach(w, lr):
    torch.optim.SGD([w], lr=lr, foreach=True).step()  # a _foreach_ op, whose counter the watcher must keep moving
    return w


def sgd_step_detach_then_zero_grad(w, lr):
    w.detach().sub_(lr * w.grad)
    w.grad.zero_()
    return w


@pytest.mark.parametrize("solution", [sgd_step_foreach, sgd_step_detach_then_zero_grad])
def test_safe_update_still_accepts_counted_updates(solution):
    assert_correct("ch4.safe_update", solution)


def test_predict_grad_names_the_misread_term_of_5x():
    # the learner review got "that is not what backward() computes" for [5, 10, 15]
    feedback = assert_wrong("ch4.predict_grad", [5.0, 10.0, 15.0])
    assert "5x" in feedback.message and "z * z" in feedback.message
    assert "constant" in feedback.hint


@pytest.mark.parametrize(
    "answer, term",
    [([6.0, 12.0, 18.0], "z * z"), ([4.0, 8.0, 12.0], "x * x"), ([1.0, 2.0, 3.0], "clone"), ([2.0, 4.0, 6.0], "x * z")],
)
def test_predict_grad_names_each_misread_term(answer, term):
    assert term in assert_wrong("ch4.predict_grad", answer).message


def test_predict_grad_says_an_answer_that_is_no_multiple_of_x_cannot_be_right():
    assert "whole multiple of x" in assert_wrong("ch4.predict_grad", [3.0, 6.0, 8.0]).hint


# --- quick predictions ------------------------------------------------------------------------------------------


def test_the_predictions_truths_are_what_the_chapter_says():
    from tutorial_lib.exercises import chapter4

    assert chapter4.shares_memory_answers() == ("no", "yes", "yes", "yes")
    assert chapter4.grads_through_clone_and_detach() == ("w", "None")
    assert chapter4.versions_after_a_write_through_a_view() == (1, 1, 0)
    assert chapter4.backward_after_an_edit() == ("runs", "raises")


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("ch4.q_shares_memory", ["No", "yes", "YES", "yes"]),
        ("ch4.q_grads", ("w", "none")),
        ("ch4.q_versions", [1, 1, 0]),
        ("ch4.q_versions", np.array([1, 1, 0])),
        ("ch4.q_data_or_detach", ("Runs", "raises")),
    ],
)
def test_predictions_accept_other_spellings_of_the_right_answer(exercise_id, answer):
    assert_correct(exercise_id, answer)


def test_predictions_name_the_entry_that_is_off():
    assert "entry 3" in assert_wrong("ch4.q_shares_memory", ("no", "yes", "no", "yes")).message
    assert "'copy'" in assert_wrong("ch4.q_shares_memory", ("no", "copy", "yes", "yes")).message


# --- checker texts the rule hunt (rules-0204) and the learner review broke ------------------------------------


def test_independent_copy_tells_a_deep_copy_to_detach_not_to_drop_requires_grad_():
    # A leaf's copy.deepcopy requires grad although the learner never called requires_grad_() (learner review).
    feedback = assert_wrong("ch4.independent_copy", copy.deepcopy)
    assert "Leave out requires_grad_()" not in feedback.hint
    assert "copy.deepcopy keeps requires_grad=True" in feedback.hint and "x.detach().clone()" in feedback.hint


def test_predict_versions_hint_does_not_say_every_clone_starts_at_0():
    # rules-0204 #15: the clone of an inference tensor starts at version 1.
    hint = assert_wrong("ch4.predict_versions", (2, 2, 2, 1, 3)).hint
    assert "starting at 0" not in hint and "a counter of its own" in hint


def test_predict_modes_hint_names_b_as_a_new_tensor_not_every_tensor_made_inside():
    # rules-0204 #7: a view, detach() or .data of a normal tensor made inside inference_mode is a normal tensor.
    hint = assert_wrong("ch4.predict_modes", (1, 2, 1)).hint
    assert "a tensor created inside inference_mode is an inference tensor" not in hint
    assert "b = x * 2 is a new tensor made inside inference_mode" in hint


# --- the chapter's text: claims the fact-checks broke must not come back -------------------------------------------

CHAPTER_4_NOTEBOOKS = [
    "notebooks/04_tell_clone_from_detach.ipynb",
    "notebooks/deep_dives/what_does_clone_copy_and_detach_keep.ipynb",
    "notebooks/deep_dives/where_does_the_gradient_go_through_clone_detach_and_requires_grad.ipynb",
    "notebooks/deep_dives/which_writes_move_the_version_counter.ipynb",
    "notebooks/deep_dives/do_inference_tensors_have_a_version_counter.ipynb",
    # chapter 5's deep dive repeated rules-0204 #1 ("its detach() ... never moves"); only that claim is checked there
    "notebooks/deep_dives/what_counts_as_an_inplace_write.ipynb",
]


def chapter_4_prose() -> str:
    """The markdown of chapter 4 and its deep dives, lower case, every run of white space made one space."""
    import nbformat
    from scripts import ROOT

    text = " ".join(
        cell.source
        for path in CHAPTER_4_NOTEBOOKS
        for cell in nbformat.read(ROOT / path, as_version=4).cells
        if cell.cell_type == "markdown"
    )
    return " ".join(text.lower().split())


@pytest.mark.parametrize(
    "finding, old_claim",
    [
        ("04-07 F4: not every in-place spelling is counted", "whatever their spelling"),
        ("04-07 F4: not every in-place spelling is counted", "the spelling does not matter"),
        ("04-07 F5: views of inference tensors have none", "every tensor (except the inference tensors"),
        ("04-07 F14: switching the flag on is refused too", "only switching the flag **off** on a non-leaf raises"),
        ("rules-0204 #1: the detach() of an inference tensor moves outside the block", "never moves"),
        (
            "rules-0204 #2: a detach() or .data of an inference tensor accepts the write",
            "refuses an in-place change of an inference tensor once you are outside",
        ),
        ("rules-0204 #4: apply_ and map_ do not move it", "both move its counter"),
        ("rules-0204 #8: the clone of a leaf that does not require grad is a leaf", "a clone of a leaf is not a leaf"),
        ("rules-0204 #14: all_gather moves its outputs' counters", "and the other collectives write"),
        ("rules-0204 #15: the clone of an inference tensor starts at 1", "a new counter starting at 0"),
        ("rules-0204 #17: torch.func transforms refuse it too", "refused in two more cases"),
        ("rules-0204 prose/output 1: the walk prints 5 and 3 nodes", "6 nodes, 2 leaves"),
    ],
)
def test_a_broken_claim_does_not_come_back(finding, old_claim):
    assert old_claim not in chapter_4_prose(), finding


@pytest.mark.parametrize(
    "finding, fixed_claim",
    [
        (
            "rules-0204 #1",
            "a `detach()` or `.data` of one gets a counter of its own. it moves only with edits made outside the "
            "block.",
        ),
        ("rules-0204 #2", "refuses an in-place change of an inference tensor, or of a view of one,"),
        ("rules-0204 #4", "most in-place operations through either still move its counter."),
        ("rules-0204 #4", "### `apply_` and `map_`"),
        ("rules-0204 #14", "`broadcast` and `all_reduce` write into their tensor in place without moving its counter"),
        ("rules-0204 #15", "a clone has new memory and a counter of its own"),
    ],
)
def test_the_fixed_claim_is_in_place(finding, fixed_claim):
    assert fixed_claim in chapter_4_prose(), finding


def test_the_fixed_claims_hold_on_this_torch():
    """What the fixed sentences say, asked of torch itself (the deep dives' stored outputs show the same)."""
    with torch.inference_mode():
        inference = torch.zeros(3)
    detached, data = inference.detach(), inference.data  # rules-0204 #1 and #2: made outside, counters of their own
    assert detached.is_inference() and data.is_inference() and (detached._version, data._version) == (0, 0)
    with torch.inference_mode():
        detached.add_(1)
    assert detached._version == 0
    detached.add_(1)
    data.mul_(3)
    assert (detached._version, data._version) == (1, 1) and inference.tolist() == [6.0, 6.0, 6.0]
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        inference[1:].add_(1)
    assert inference.clone()._version == 1  # rules-0204 #15
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)  # rules-0204 #4: apply_ through detach() is not counted
    loss = (x**2).sum()
    x.detach().apply_(lambda value: value * 10)
    assert x._version == 0
    loss.backward()
    assert x.grad.tolist() == [20.0, 40.0, 60.0]
    assert torch.ones(3).clone().is_leaf  # rules-0204 #8
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype"):  # rules-0204 #17
        torch.arange(3).requires_grad_()
