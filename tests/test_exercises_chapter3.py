"""Chapter 3 checkers: reference solutions pass, typical wrong answers get a hint, stubs are not attempted."""

import math

import pytest
import torch
from torch import nn

import tutorial_lib as tl
from exercise_asserts import assert_correct, assert_wrong


IDS = ["ch3.count_nodes", "ch3.chain_rule", "ch3.freeze", "ch3.inference"]


def test_chapter3_exercises_are_registered():
    assert set(IDS) <= set(tl.exercise_ids())


# --- stubs --------------------------------------------------------------------------------------------------


def stub_two_args(x1, x2): ...


def stub_one_arg(model):
    """A docstring and nothing else is still a stub."""
    ...


def stub_predict(model, x):
    pass


@pytest.mark.parametrize("exercise_id", IDS)
def test_ellipsis_is_not_attempted(exercise_id):
    assert tl.check(exercise_id, ...).status == "not attempted"


@pytest.mark.parametrize(
    "exercise_id, stub", [("ch3.chain_rule", stub_two_args), ("ch3.freeze", stub_one_arg), ("ch3.inference", stub_predict)]
)
def test_stub_function_is_not_attempted(exercise_id, stub):
    assert tl.check(exercise_id, stub).status == "not attempted"


# --- ch3.count_nodes ----------------------------------------------------------------------------------------


def test_count_nodes_program_agrees_with_autograd_graph():
    from tutorial_lib.exercises.chapter3 import backward_node_names, count_nodes_program

    y = count_nodes_program()
    graph = tl.autograd_graph(y)
    assert sorted(backward_node_names(y)) == sorted(n.name for n in graph.nodes if n.kind == "backward")
    assert sorted(backward_node_names(y)) == ["AddBackward0", "MulBackward0", "MvBackward0", "ReluBackward0", "SumBackward0"]


def test_count_nodes_correct():
    assert_correct("ch3.count_nodes", 5)


@pytest.mark.parametrize("answer, word", [(7, "AccumulateGrad"), (6, "x * 2"), (8, "x * 2"), (4, "every operation"), (0, "every operation")])
def test_count_nodes_wrong(answer, word):
    assert word in assert_wrong("ch3.count_nodes", answer).hint


@pytest.mark.parametrize("answer", ["5", 5.0, True, [5]])
def test_count_nodes_wrong_type(answer):
    assert_wrong("ch3.count_nodes", answer)


# --- ch3.chain_rule -----------------------------------------------------------------------------------------


def dz_dx2_math(x1, x2):
    return math.sin(x2) / x2 + math.log(x1 * x2) * math.cos(x2)


def dz_dx2_torch(x1, x2):
    x1, x2 = torch.tensor(x1), torch.tensor(x2)  # float32: still within the checker's tolerance
    return torch.sin(x2) / x2 + torch.log(x1 * x2) * torch.cos(x2)


def dz_dx2_via_chain(x1, x2):
    a, y1, y2 = x1 * x2, math.log(x1 * x2), math.sin(x2)
    dz_da = y2 / a
    dz_dy2 = y1
    return dz_da * x1 + dz_dy2 * math.cos(x2)


@pytest.mark.parametrize("solution", [dz_dx2_math, dz_dx2_torch, dz_dx2_via_chain])
def test_chain_rule_solutions(solution):
    assert_correct("ch3.chain_rule", solution)


def test_chain_rule_reference_matches_seed_number():
    from tutorial_lib.exercises.chapter3 import autograd_partials

    assert autograd_partials(2.0, 3.0)[1] == pytest.approx(-1.7267884, abs=1e-6)


@pytest.mark.parametrize(
    "answer, word",
    [
        (lambda x1, x2: math.log(x1 * x2) * math.cos(x2), "a = x1 * x2"),  # only the sin path
        (lambda x1, x2: math.sin(x2) / x2, "sin(x2)"),  # only the log path
        (lambda x1, x2: math.sin(x2) / x1, "two places"),  # dz/dx1
        (lambda x1, x2: -1.7267884, "two paths"),  # the number at (2, 3) only
        (lambda x1, x2: math.cos(x2) / (x1 * x2), "two paths"),
    ],
)
def test_chain_rule_wrong(answer, word):
    assert word in assert_wrong("ch3.chain_rule", answer).hint


def test_chain_rule_wrong_types():
    assert_wrong("ch3.chain_rule", -1.7267884)  # a number, not a function
    assert_wrong("ch3.chain_rule", lambda x1, x2: "minus 1.73")
    assert_wrong("ch3.chain_rule", lambda x1, x2: torch.zeros(2))


# --- ch3.freeze ---------------------------------------------------------------------------------------------


def freeze_all_but_last(model):
    for p in model.parameters():
        p.requires_grad_(False)
    last = [m for m in model.modules() if list(m.parameters(recurse=False))][-1]
    for p in last.parameters():
        p.requires_grad_(True)
    return [p for p in model.parameters() if p.requires_grad]


def freeze_by_names(model):
    names = [name for name, _ in model.named_parameters()]
    last_prefix = names[-1].rsplit(".", 1)[0]
    for name, p in model.named_parameters():
        p.requires_grad = name.rsplit(".", 1)[0] == last_prefix
    return list(filter(lambda p: p.requires_grad, model.parameters()))


@pytest.mark.parametrize("solution", [freeze_all_but_last, freeze_by_names])
def test_freeze_solutions(solution):
    assert_correct("ch3.freeze", solution)


def freeze_everything(model):
    model.requires_grad_(False)
    return []


def freeze_nothing(model):
    return list(model.parameters())


def freeze_only_others_without_unfreezing(model):
    params = list(model.parameters())
    last = [m for m in model.modules() if list(m.parameters(recurse=False))][-1]
    last_ids = {id(p) for p in last.parameters()}
    for p in params:
        if id(p) not in last_ids:
            p.requires_grad_(False)
    return [p for p in params if p.requires_grad]


def freeze_index_minus_one(model):
    model.requires_grad_(False)
    model[-1].requires_grad_(True)
    return [p for p in model.parameters() if p.requires_grad]


def freeze_and_return_all(model):
    freeze_all_but_last(model)
    return list(model.parameters())


def freeze_and_reinit_head(model):
    trainable = freeze_all_but_last(model)
    with torch.no_grad():
        for p in trainable:
            p.zero_()
    return trainable


def freeze_last_instead(model):
    last = [m for m in model.modules() if list(m.parameters(recurse=False))][-1]
    last.requires_grad_(False)
    return [p for p in model.parameters() if p.requires_grad]


@pytest.mark.parametrize(
    "answer, word",
    [
        (freeze_everything, "trainable"),
        (freeze_nothing, "requires_grad=False"),
        (freeze_only_others_without_unfreezing, "requires_grad=True"),
        (freeze_index_minus_one, "ReLU"),
        (freeze_and_return_all, "optimizer"),
        (freeze_and_reinit_head, "re-create"),
        (freeze_last_instead, "last layer"),
    ],
)
def test_freeze_wrong(answer, word):
    assert word in assert_wrong("ch3.freeze", answer).hint


def test_freeze_rejects_a_non_function():
    assert_wrong("ch3.freeze", nn.Linear(2, 2).parameters())


# --- ch3.inference ------------------------------------------------------------------------------------------


def predict_no_grad(model, x):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model(x)
    model.train(was_training)
    return out


def predict_inference_mode(model, x):
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            return model(x)
    finally:
        model.train(was_training)


@pytest.mark.parametrize("solution", [predict_no_grad, predict_inference_mode])
def test_inference_solutions(solution):
    assert_correct("ch3.inference", solution)


def predict_eval_only(model, x):
    was_training = model.training
    model.eval()
    out = model(x)
    model.train(was_training)
    return out


def predict_no_grad_only(model, x):
    with torch.no_grad():
        return model(x)


def predict_always_back_to_train(model, x):
    model.eval()
    with torch.no_grad():
        out = model(x)
    model.train()
    return out


def predict_stays_in_eval(model, x):
    model.eval()
    with torch.no_grad():
        return model(x)


def predict_detached_afterwards_without_eval(model, x):
    return model(x).detach()


@pytest.mark.parametrize(
    "answer, word",
    [
        (predict_eval_only, "no_grad"),
        (predict_no_grad_only, "model.eval()"),
        (predict_always_back_to_train, "was_training"),
        (predict_stays_in_eval, "was_training"),
        (predict_detached_afterwards_without_eval, "model.eval()"),
    ],
)
def test_inference_wrong(answer, word):
    assert word in assert_wrong("ch3.inference", answer).hint


def test_inference_rejects_non_tensor():
    assert_wrong("ch3.inference", lambda model, x: model(x).tolist())
