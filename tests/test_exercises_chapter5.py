"""Chapter 5 checkers: reference solutions pass, typical wrong answers get a hint, stubs are not attempted.

The truths the checkers use are checked here too: what real backward() does on each program agrees with
inplace_hazards, and the notebook shows each checked program verbatim.
"""

import json
from pathlib import Path

import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.exercises import chapter5
from exercise_asserts import assert_correct, assert_wrong

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "05_use_inplace_operations_safely.ipynb"
IDS = ("ch5.predict_error", "ch5.fix_residual", "ch5.find_culprit")


def test_chapter5_exercises_are_registered():
    for exercise_id in IDS:
        assert exercise_id in tl.exercise_ids()


# --- stubs --------------------------------------------------------------------------------------------------


def stub_block(x, linear): ...


def stub_block_with_docstring(x, linear):
    """Only a docstring: still a stub."""
    ...


@pytest.mark.parametrize("exercise_id", IDS)
def test_ellipsis_is_not_attempted(exercise_id):
    assert tl.check(exercise_id, ...).status == "not attempted"


@pytest.mark.parametrize("stub", [stub_block, stub_block_with_docstring])
def test_stub_function_is_not_attempted(stub):
    assert tl.check("ch5.fix_residual", stub).status == "not attempted"


# --- the truths behind the checkers ---------------------------------------------------------------------------


@pytest.mark.parametrize("letter", list(chapter5.PREDICT_PROGRAMS))
def test_predict_programs_agree_with_inplace_hazards(letter):
    source = chapter5.PREDICT_PROGRAMS[letter]
    predicted = bool(tl.inplace_hazards(chapter5.run_program(source)["loss"]))
    assert predicted == chapter5.backward_raises(source)


def test_predict_programs_mix_raising_and_working():
    truth = chapter5.predict_error_truth()
    assert any(truth) and not all(truth)


def test_culprit_program_has_one_stale_node_and_backward_raises():
    assert chapter5.culprit_nodes() == ["MmBackward0"]
    assert chapter5.backward_raises(chapter5.CULPRIT_PROGRAM)


def test_notebook_shows_the_checked_programs_verbatim():
    notebook = json.loads(NOTEBOOK.read_text())
    text = "\n".join("".join(cell["source"]) for cell in notebook["cells"])
    for source in [*chapter5.PREDICT_PROGRAMS.values(), chapter5.CULPRIT_PROGRAM]:
        assert source in text


# --- ch5.predict_error ------------------------------------------------------------------------------------------


def reference_predictions():
    """Worked out by hand (see the notebook's solution); the checker compares with real backward()."""
    return [False, True, False, True, True, True, False, False]


def test_predict_error_reference_solution():
    assert_correct("ch5.predict_error", reference_predictions())
    assert_correct("ch5.predict_error", tuple(reference_predictions()))
    assert_correct("ch5.predict_error", dict(zip("ABCDEFGH", reference_predictions())))


@pytest.mark.parametrize(
    "answer",
    [
        [True] * 8,  # "any in-place op breaks autograd"
        [False] * 8,
        [False, True, True, True, True, True, False, False],  # thinks mul always saves both operands
        [False, True, False, True, False, True, False, False],  # thinks relu_ of positive values is harmless
        [False, True, False, True, True, False, False, False],  # forgets views share the version counter
    ],
)
def test_predict_error_wrong_answers(answer):
    assert_wrong("ch5.predict_error", answer)


@pytest.mark.parametrize("answer", [[True, False], [1, 0, 1, 0, 1, 0, 1, 0], "TFTF", {"A": True}])
def test_predict_error_malformed_answers(answer):
    assert_wrong("ch5.predict_error", answer)


def test_predict_error_hint_names_the_first_wrong_program():
    answer = reference_predictions()
    answer[4] = not answer[4]
    feedback = assert_wrong("ch5.predict_error", answer)
    assert "program E" in feedback.message


# --- ch5.fix_residual -------------------------------------------------------------------------------------------


def fixed_block(x, linear):
    x = torch.tanh(x)
    x = x + linear(x)
    return torch.relu_(x)


def fixed_block_out_of_place(x, linear):
    t = torch.tanh(x)
    return torch.relu(torch.add(t, linear(t)))


def broken_block(x, linear):
    x = torch.tanh(x)
    x += linear(x)
    return torch.relu_(x)


def detached_block(x, linear):
    t = torch.tanh(x)
    return torch.relu(t + linear(t.detach()))


def data_block(x, linear):
    t = torch.tanh(x)
    t.data = t.data + linear(t).data
    return torch.relu(t)


def clone_first_block(x, linear):
    # clone before the in-place add: tanh's output is safe, but linear saved the clone itself
    t = torch.tanh(x).clone()
    t += linear(t)
    return torch.relu(t)


def no_relu_block(x, linear):
    t = torch.tanh(x)
    return t + linear(t)


def no_grad_block(x, linear):
    with torch.no_grad():
        t = torch.tanh(x)
        return torch.relu(t + linear(t))


@pytest.mark.parametrize("solution", [fixed_block, fixed_block_out_of_place])
def test_fix_residual_solutions(solution):
    assert_correct("ch5.fix_residual", solution)


@pytest.mark.parametrize("answer", [broken_block, detached_block, data_block, clone_first_block, no_relu_block, no_grad_block])
def test_fix_residual_wrong_answers(answer):
    assert_wrong("ch5.fix_residual", answer)


def test_fix_residual_says_when_backward_raised():
    feedback = assert_wrong("ch5.fix_residual", broken_block)
    assert "backward() raised" in feedback.message
    assert "x = x + linear(x)" in feedback.hint


def test_fix_residual_not_a_function():
    assert_wrong("ch5.fix_residual", 42)


# --- ch5.find_culprit -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["MmBackward0", "Mm", " mmbackward0 "])
def test_find_culprit_solutions(answer):
    assert_correct("ch5.find_culprit", answer)


@pytest.mark.parametrize("answer", ["MulBackward0", "Mul", "AddBackward0", "ReluBackward0", "ExpBackward0", "", 3])
def test_find_culprit_wrong_answers(answer):
    assert_wrong("ch5.find_culprit", answer)


def test_find_culprit_explains_the_misleading_message():
    feedback = assert_wrong("ch5.find_culprit", "Mul")
    assert "saved" in feedback.hint
