"""Chapter 3 checkers: reference solutions pass, typical wrong answers get a hint.

The stubs and the registration of every exercise are tested once, in test_exercises.py.
"""

import copy
import math
import statistics

import pytest
import torch
from exercise_asserts import assert_correct, assert_wrong
from torch import nn

import tutorial_lib as tl

# --- ch3.count_nodes ----------------------------------------------------------------------------------------


def test_count_nodes_program_agrees_with_autograd_graph():
    from tutorial_lib.exercises.chapter3 import backward_node_names, count_nodes_program

    y = count_nodes_program()
    graph = tl.autograd_graph(y)
    assert sorted(backward_node_names(y)) == sorted(n.name for n in graph.nodes if n.kind == "backward")
    assert sorted(backward_node_names(y)) == [
        "AddBackward0",
        "MulBackward0",
        "MvBackward0",
        "ReluBackward0",
        "SumBackward0",
    ]


def test_count_nodes_correct():
    assert_correct("ch3.count_nodes", 5)


def test_count_nodes_unusual_right_answers():
    import numpy as np

    from tutorial_lib.exercises.chapter3 import count_nodes_program

    assert_correct("ch3.count_nodes", np.int64(5))  # e.g. from np.sum over a mask
    counted = len([n for n in tl.autograd_graph(count_nodes_program()).nodes if n.kind == "backward"])
    assert_correct("ch3.count_nodes", counted)  # counted with the tool instead of by hand


@pytest.mark.parametrize(
    "answer, word", [(7, "AccumulateGrad"), (6, "x * 2"), (8, "x * 2"), (4, "each operation"), (0, "each operation")]
)
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


def dz_dx2_by_autograd(x1, x2):
    # unusual but right: ask autograd itself, and return a one-element tensor
    x1 = torch.tensor([x1], dtype=torch.float64)
    x2 = torch.tensor([x2], dtype=torch.float64, requires_grad=True)
    (torch.log(x1 * x2) * torch.sin(x2)).sum().backward()
    return x2.grad


def dz_dx2_numpy_float32(x1, x2):
    # unusual but right: a NumPy float32 scalar (not a Python float subclass, unlike np.float64)
    import numpy as np

    return np.float32(math.sin(x2) / x2 + math.log(x1 * x2) * math.cos(x2))


def dz_dx2_numpy_array(x1, x2):
    # unusual but right: a one-element NumPy array
    import numpy as np

    return np.array([np.sin(x2) / x2 + np.log(x1 * x2) * np.cos(x2)])


@pytest.mark.parametrize(
    "solution",
    [dz_dx2_math, dz_dx2_torch, dz_dx2_via_chain, dz_dx2_by_autograd, dz_dx2_numpy_float32, dz_dx2_numpy_array],
)
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
        (lambda x1, x2: math.sin(x2) / x2 - math.log(x1 * x2) * math.cos(x2), "two paths"),  # sign slip
        (lambda x1, x2: (math.sin(x2) / x2) * (math.log(x1 * x2) * math.cos(x2)), "two paths"),  # paths multiplied
        (lambda x1, x2: math.cos(x2) / x2 + math.log(x1 * x2) * math.cos(x2), "two paths"),  # d sin = sin
    ],
)
def test_chain_rule_wrong(answer, word):
    assert word in assert_wrong("ch3.chain_rule", answer).hint


def test_chain_rule_never_quotes_a_point_where_the_answer_matches():
    """Fact-check 00-03 #14: the constant that is right at (2, 3) was shown '-1.726788; autograd gives -1.726788'
    under 'Not yet'. The message now quotes a point where the two differ and says where it matched."""
    import re

    message = assert_wrong("ch3.chain_rule", lambda x1, x2: -1.726788428).message
    got, truth = re.search(r"your function gives (\S+); autograd gives (\S+)\.", message).groups()
    assert got != truth, message
    assert "matched autograd only at (2, 3), 1 of the 5 points" in message


def test_chain_rule_wrong_everywhere_says_nothing_about_matching():
    message = assert_wrong("ch3.chain_rule", lambda x1, x2: math.cos(x2) / (x1 * x2)).message
    assert "x1=2.0, x2=3.0" in message and "matched" not in message


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


def freeze_walking_backwards(model):
    # unusual but right: find the last layer by walking named_modules() from the end
    for _, module in reversed(list(model.named_modules())):
        own = list(module.parameters(recurse=False))
        if own:
            break
    own_ids = {id(p) for p in own}
    for p in model.parameters():
        p.requires_grad = id(p) in own_ids
    return own


def freeze_by_recursive_parameters(model):
    # unusual but right: the last module with any parameters (recursively) in pre-order is always a module
    # with parameters of its own, since its children come after it
    model.requires_grad_(False)
    last = [m for m in model.modules() if any(True for _ in m.parameters())][-1]
    return [p.requires_grad_() for p in last.parameters()]


def freeze_returning_a_tuple(model):
    # unusual but right: a tuple of the trainable parameters is as good as a list for an optimizer
    return tuple(freeze_all_but_last(model))


@pytest.mark.parametrize(
    "solution",
    [
        freeze_all_but_last,
        freeze_by_names,
        freeze_walking_backwards,
        freeze_by_recursive_parameters,
        freeze_returning_a_tuple,
    ],
)
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


def freeze_last_child(model):
    # right for flat models, wrong for nested ones: the last child can be a whole container
    model.requires_grad_(False)
    last = [m for m in model.children() if any(True for _ in m.parameters())][-1]
    last.requires_grad_(True)
    return [p for p in model.parameters() if p.requires_grad]


def freeze_by_top_level_name(model):
    # the first part of the name ("1" in "1.2.weight") names the outer container, not the layer
    names = [name for name, _ in model.named_parameters()]
    top = names[-1].split(".")[0]
    for name, p in model.named_parameters():
        p.requires_grad_(name.split(".")[0] == top)
    return [p for p in model.parameters() if p.requires_grad]


def freeze_last_linear(model):
    model.requires_grad_(False)
    last = [m for m in model.modules() if isinstance(m, nn.Linear)][-1]
    last.requires_grad_(True)
    return [p for p in model.parameters() if p.requires_grad]


def freeze_last_two_parameters(model):
    model.requires_grad_(False)
    last_two = list(model.parameters())[-2:]
    for p in last_two:
        p.requires_grad_(True)
    return last_two


def freeze_last_with_weight_attribute(model):
    model.requires_grad_(False)
    last = [m for m in model.modules() if hasattr(m, "weight")][-1]
    last.requires_grad_(True)
    return [p for p in model.parameters() if p.requires_grad]


def freeze_last_known_layer_type(model):
    model.requires_grad_(False)
    last = [m for m in model.modules() if isinstance(m, (nn.Linear, nn.LayerNorm, nn.BatchNorm1d, nn.Conv2d))][-1]
    last.requires_grad_(True)
    return [p for p in model.parameters() if p.requires_grad]


def freeze_by_last_weight_name(model):
    prefix = [name for name, _ in model.named_parameters() if name.endswith("weight")][-1].rsplit(".", 1)[0]
    for name, p in model.named_parameters():
        p.requires_grad_(name.rsplit(".", 1)[0] == prefix)
    return [p for p in model.parameters() if p.requires_grad]


def freeze_last_childless_module(model):
    # a module with parameters of its own may also have children (here a Tanh)
    model.requires_grad_(False)
    last = [m for m in model.modules() if not list(m.children()) and list(m.parameters())][-1]
    last.requires_grad_(True)
    return [p for p in model.parameters() if p.requires_grad]


@pytest.mark.parametrize(
    "answer, word",
    [
        # the four below were accepted before the model ending in a custom module (parameter `gain`) was added
        (freeze_last_with_weight_attribute, "recurse=False"),
        (freeze_last_known_layer_type, "isinstance"),
        (freeze_by_last_weight_name, "recurse=False"),
        (freeze_last_childless_module, "childlessness"),
        (freeze_last_child, "model.modules()"),  # accepted before the nested models were added
        (freeze_by_top_level_name, "container"),  # accepted before the nested models were added
        (freeze_last_linear, "LayerNorm"),  # accepted before the LayerNorm model was added
        (freeze_last_two_parameters, "requires_grad=False"),
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


def test_freeze_answers_a_huge_returned_tensor_at_once():
    """Fuzz report C3: the checker ran list() over a returned tensor (10**7 elements: 11 s and 6 GB; 10**9: killed
    for memory). A tensor is now refused before anything is iterated."""
    import time

    start = time.perf_counter()
    feedback = assert_wrong("ch3.freeze", lambda model: torch.zeros(1).expand(10**9))
    assert time.perf_counter() - start < 1.0
    assert "returned a tensor of shape (1000000000,), not a list of parameters" in feedback.message
    parameter = assert_wrong("ch3.freeze", lambda model: freeze_all_but_last(model)[0])
    assert "an nn.Parameter" in parameter.message


class CountingIterable:
    """An iterable of many items that counts how many were taken from it."""

    def __init__(self, length):
        self.length, self.taken = length, 0

    def __iter__(self):
        for _ in range(self.length):
            self.taken += 1
            yield nn.Parameter(torch.zeros(1))


def test_freeze_reads_no_more_of_a_returned_iterable_than_it_needs():
    long_iterable = CountingIterable(10**6)

    def freeze_returning_a_long_iterable(model):
        freeze_all_but_last(model)
        return long_iterable

    assert "parameters instead of" in assert_wrong("ch3.freeze", freeze_returning_a_long_iterable).message
    assert long_iterable.taken == 7  # the first model has 6 parameters: one item more is enough to know


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


@torch.no_grad()
def predict_decorated(model, x):
    was_training = model.training
    model.eval()
    out = model(x)
    model.train(was_training)
    return out


def predict_set_grad_enabled_block(model, x):
    was_training = model.training
    model.eval()
    with torch.set_grad_enabled(False):
        out = model(x)
    model.train(was_training)
    return out


def predict_switch_off_and_on(model, x):
    # unusual but right: grad mode switched off by a call, and switched back on before returning
    was_training, was_enabled = model.training, torch.is_grad_enabled()
    model.eval()
    torch.set_grad_enabled(False)
    out = model(x)
    torch.set_grad_enabled(was_enabled)
    model.train(was_training)
    return out


def predict_forces_recording_back_on(model, x):
    # right when called with recording on; called inside `with torch.no_grad():` it switches recording on
    was_training = model.training
    model.eval()
    torch.set_grad_enabled(False)
    out = model(x)
    torch.set_grad_enabled(True)
    model.train(was_training)
    return out


def predict_on_a_copy(model, x):
    # unusual but right: evaluate a deep copy, so the model's own mode never changes
    frozen_copy = copy.deepcopy(model).eval()
    with torch.inference_mode():
        return frozen_copy(x)


def predict_with_flags_off(model, x):
    # unusual but right: with no parameter requiring grad, nothing is recorded; the flags are put back
    was_training, flags = model.training, [p.requires_grad for p in model.parameters()]
    model.eval().requires_grad_(False)
    out = model(x)
    for p, flag in zip(model.parameters(), flags):
        p.requires_grad_(flag)
    model.train(was_training)
    return out


@pytest.mark.parametrize(
    "solution",
    [
        predict_no_grad,
        predict_inference_mode,
        predict_decorated,
        predict_set_grad_enabled_block,
        predict_switch_off_and_on,
        predict_on_a_copy,
        predict_with_flags_off,
    ],
)
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


def predict_eval_then_detach(model, x):
    was_training = model.training
    model.eval()
    out = model(x).detach()  # the graph was recorded, then cut off
    model.train(was_training)
    return out


def predict_eval_then_data(model, x):
    was_training = model.training
    model.eval()
    out = model(x).data
    model.train(was_training)
    return out


def predict_grad_mode_left_off(model, x):
    was_training = model.training
    model.eval()
    torch.set_grad_enabled(False)  # never switched back on
    out = model(x)
    model.train(was_training)
    return out


def predict_frozen_and_left_frozen(model, x):
    was_training = model.training
    model.eval().requires_grad_(False)
    out = model(x)
    model.train(was_training)
    return out


def predict_flags_off_then_all_back_on(model, x):
    # restores requires_grad=True everywhere, unfreezing the layer that arrived frozen
    was_training = model.training
    model.eval().requires_grad_(False)
    out = model(x)
    model.requires_grad_(True)
    model.train(was_training)
    return out


def predict_own_hooks_then_detach(model, x):
    # saved-tensor hooks of the learner's own replace the checker's; the module outputs still show the graph
    was_training = model.training
    model.eval()
    with torch.autograd.graph.save_on_cpu():
        out = model(x).detach()
    model.train(was_training)
    return out


@pytest.mark.parametrize(
    "answer, word",
    [
        (predict_eval_then_detach, "detach"),  # accepted before: it recorded a graph and threw it away
        (predict_eval_then_data, "detach"),
        (predict_own_hooks_then_detach, "detach"),
        (predict_grad_mode_left_off, "torch.no_grad()"),  # accepted before, and left grad mode off
        (predict_frozen_and_left_frozen, "requires_grad"),
        (predict_flags_off_then_all_back_on, "requires_grad"),  # accepted before the model arrived partly frozen
        (predict_eval_only, "no_grad"),
        (predict_no_grad_only, "model.eval()"),
        (predict_always_back_to_train, "was_training"),
        (predict_stays_in_eval, "was_training"),
        (predict_detached_afterwards_without_eval, "detach"),
        (predict_forces_recording_back_on, "as you found it"),  # accepted before: it was only called with grad on
    ],
)
def test_inference_wrong(answer, word):
    assert word in assert_wrong("ch3.inference", answer).hint


def test_inference_rejects_non_tensor():
    assert_wrong("ch3.inference", lambda model, x: model(x).tolist())


def test_inference_checker_switches_grad_mode_back_on():
    assert_wrong("ch3.inference", predict_grad_mode_left_off)
    assert torch.is_grad_enabled()


def test_inference_checker_keeps_grad_mode_it_found():
    with torch.no_grad():
        assert_correct("ch3.inference", predict_no_grad)
        assert not torch.is_grad_enabled()


def test_inference_names_the_saved_tensors_of_a_detached_forward():
    assert "saved" in assert_wrong("ch3.inference", predict_eval_then_detach).message


def predict_after_a_warm_up_call(model, x):
    # a call with recording on to read the output's shape, then the right prediction under no_grad
    was_training = model.training
    model(x[:2]).shape
    model.eval()
    with torch.no_grad():
        out = model(x)
    model.train(was_training)
    return out


def test_inference_blames_the_warm_up_call_not_a_detach():
    """Fact-check 00-03 #18: a warm-up call with recording on was told its output 'was cut off afterwards' and that
    `.detach()` does not stop the recording; the answer has no `.detach()`."""
    feedback = assert_wrong("ch3.inference", predict_after_a_warm_up_call)
    assert "cut off" not in feedback.message and "detach" not in feedback.hint
    assert "1 other call of the model ran with recording on" in feedback.message
    assert "extra call" in feedback.hint


def predict_cloned_and_detached(model, x):
    was_training = model.training
    model.eval()
    out = model(x).clone().detach()  # recorded, then copied out of the graph
    model.train(was_training)
    return out


def test_inference_a_recorded_pass_copied_out_is_still_a_recorded_pass():
    feedback = assert_wrong("ch3.inference", predict_cloned_and_detached)
    assert "the recording, its time and its memory were spent" in feedback.message
    assert "does not undo its recording" in feedback.hint


# --- ch3.average_loss ---------------------------------------------------------------------------------------

F = nn.functional


def average_loss_item(model, batches):
    total = 0.0
    for inputs, targets in batches:
        loss = F.mse_loss(model(inputs), targets)
        total += loss.item()
    return total / len(batches)


def average_loss_no_grad_tensor_sum(model, batches):
    # unusual but right: tensors are summed, but under no_grad none of them has a graph
    with torch.no_grad():
        total = sum(F.mse_loss(model(inputs), targets) for inputs, targets in batches)
    return float(total / len(batches))


def average_loss_fmean(model, batches):
    return statistics.fmean(F.mse_loss(model(inputs), targets).item() for inputs, targets in batches)


def average_loss_detach(model, batches):
    total = torch.zeros(())
    for inputs, targets in batches:
        total += F.mse_loss(model(inputs), targets).detach()
    return total.item() / len(batches)


def average_loss_inference_stack(model, batches):
    # unusual but right: a list of 0-dim losses is fine when none carries a graph
    with torch.inference_mode():
        return torch.stack([F.mse_loss(model(inputs), targets) for inputs, targets in batches]).mean().item()


def average_loss_del_each_loss(model, batches):
    # unusual but right: a 0-dim tensor's tolist() is a Python float; the tensor is dropped explicitly
    total = 0.0
    for inputs, targets in batches:
        loss = F.mse_loss(model(inputs), targets)
        total += loss.tolist()
        del loss
    return total / len(batches)


@pytest.mark.parametrize(
    "solution",
    [
        average_loss_del_each_loss,
        average_loss_item,
        average_loss_no_grad_tensor_sum,
        average_loss_fmean,
        average_loss_detach,
        average_loss_inference_stack,
    ],
)
def test_average_loss_solutions(solution):
    assert_correct("ch3.average_loss", solution)


def average_loss_running_tensor(model, batches):
    total = 0
    for inputs, targets in batches:
        total = total + F.mse_loss(model(inputs), targets)  # the leak: every graph stays alive
    return (total / len(batches)).item()


def average_loss_returns_graph(model, batches):
    total = 0
    for inputs, targets in batches:
        total = total + F.mse_loss(model(inputs), targets)
    return total / len(batches)


def average_loss_list_of_losses(model, batches):
    losses = [F.mse_loss(model(inputs), targets) for inputs, targets in batches]
    return torch.stack(losses).mean().item()


def average_loss_in_place_total(model, batches):
    total = torch.zeros(())
    for inputs, targets in batches:
        total += F.mse_loss(model(inputs), targets)  # in place, still recorded: total becomes part of each graph
    return total.item() / len(batches)


def average_loss_sum(model, batches):
    return sum(F.mse_loss(model(inputs), targets).item() for inputs, targets in batches)


def average_loss_backward_to_free(model, batches):
    total = 0.0
    for inputs, targets in batches:
        loss = F.mse_loss(model(inputs), targets)
        loss.backward()  # frees the graph, but fills .grad
        total += loss.item()
    return total / len(batches)


def average_loss_backward_then_zero_grad(model, batches):
    total = 0.0
    for inputs, targets in batches:
        loss = F.mse_loss(model(inputs), targets)
        loss.backward()  # frees the graph, and computes gradients nobody asked for
        total += loss.item()
    model.zero_grad()  # hides the .grad, not the work
    return total / len(batches)


def average_loss_autograd_grad_to_free(model, batches):
    total = 0.0
    for inputs, targets in batches:
        loss = F.mse_loss(model(inputs), targets)
        torch.autograd.grad(loss, list(model.parameters()))  # frees the graph, leaves no .grad
        total += loss.item()
    return total / len(batches)


def average_loss_keeps_outputs(model, batches):
    outputs = [model(inputs) for inputs, _ in batches]  # every output keeps its graph
    return sum(F.mse_loss(out, targets).item() for out, (_, targets) in zip(outputs, batches)) / len(batches)


def average_loss_detached_tensor(model, batches):
    with torch.no_grad():
        return torch.stack([F.mse_loss(model(inputs), targets) for inputs, targets in batches]).mean()


@pytest.mark.parametrize(
    "answer, word",
    [
        (average_loss_running_tensor, "loss.item()"),
        (average_loss_list_of_losses, "loss.item()"),
        (average_loss_in_place_total, "loss.item()"),
        (average_loss_returns_graph, "Python float"),
        (average_loss_sum, "divide"),
        (average_loss_backward_to_free, "backward()"),
        (average_loss_backward_then_zero_grad, "backward()"),  # accepted before: .grad was cleared at the end
        (average_loss_autograd_grad_to_free, "backward()"),  # accepted before: no .grad left behind
        (average_loss_keeps_outputs, "loss.item()"),
        (average_loss_detached_tensor, ".item()"),
    ],
)
def test_average_loss_wrong(answer, word):
    assert word in assert_wrong("ch3.average_loss", answer).hint


def test_average_loss_leak_message_gives_bytes_per_batch():
    message = assert_wrong("ch3.average_loss", average_loss_running_tensor).message
    assert "more per batch" in message and "every batch's graph" in message


def average_loss_concatenated(model, batches):
    # no graph, but every batch at once: the concatenation and one big forward pass grow with the batches
    with torch.no_grad():
        inputs = torch.cat([inputs for inputs, _ in batches])
        targets = torch.cat([targets for _, targets in batches])
        return F.mse_loss(model(inputs), targets).item()


def test_average_loss_growth_without_a_graph_is_not_blamed_on_a_graph():
    """Fact-check 00-03 #18: concatenating the batches under no_grad was told that 'a loss tensor that you keep
    keeps its whole graph'; no graph was recorded."""
    feedback = assert_wrong("ch3.average_loss", average_loss_concatenated)
    assert "No graph was recorded" in feedback.message and "graph" not in feedback.hint
    assert "one batch at a time" in feedback.hint


def test_average_loss_rejects_non_function():
    assert_wrong("ch3.average_loss", 1.25)


def average_loss_leaking_in_a_thread(model, batches):
    """The running-tensor leak, run in a thread: the calling thread's allocator events show none of it."""
    import threading

    result = []
    worker = threading.Thread(target=lambda: result.append(average_loss_running_tensor(model, batches)))
    worker.start()
    worker.join()
    return result[0]


def test_average_loss_rejects_work_measure_memory_cannot_see():
    feedback = assert_wrong("ch3.average_loss", average_loss_leaking_in_a_thread)
    assert "thread" in feedback.message and "calling thread" in feedback.hint


# --- quick predictions --------------------------------------------------------------------------------------
# test_exercises.py runs every prediction with its truth and each listed mistake; these pin the truths themselves.


def test_predictions_truths_are_the_chapters_numbers():
    from tutorial_lib.exercises import _CHECKERS

    tl.exercise_ids()
    truths = {key: _CHECKERS[key].prediction["truth"]() for key in ("ch3.q_nodes", "ch3.q_saved", "ch3.q_grad")}
    assert truths == {
        "ch3.q_nodes": 4,
        "ch3.q_saved": ("result", "input", "nothing", "result"),
        "ch3.q_grad": ("tensor", "tensor", "none", "none"),
    }
    bytes_left = _CHECKERS["ch3.q_bytes_left"].prediction["truth"]()
    assert bytes_left == ("activations", "activations", "output")  # train + recording, eval + recording, eval + no_grad


def test_q_saved_reads_what_autograd_saved():
    from tutorial_lib.exercises.chapter3 import saved_kind

    x = torch.randn(3, requires_grad=True)
    assert [saved_kind(r) for r in (x.sigmoid(), x.log(), x.sum())] == ["result", "input", "nothing"]


def test_no_notebook_gives_the_chain_rule_answer_outside_its_collapsed_solution():
    """Issue 19 and the learner review: the cell right under exercise ch3.chain_rule defined dz_dx2_by_hand with the
    answer. The answer may appear in the collapsed solution only (a markdown cell with <details>)."""
    import nbformat
    from scripts import course_notebooks

    answer = "math.log(x1 * x2) * math.cos(x2)"
    for path in course_notebooks():
        for cell in nbformat.read(path, as_version=4).cells:
            if answer in cell.source:
                assert cell.cell_type == "markdown" and "<details>" in cell.source, path.name


# --- the chapter's text: claims the reviews broke must not come back ------------------------------------------------

CHAPTER_3_NOTEBOOKS = [
    "notebooks/03_build_and_free_the_computation_graph.ipynb",
    "notebooks/deep_dives/when_does_a_result_require_grad.ipynb",
    "notebooks/deep_dives/how_does_autograd_wire_a_graph_node_by_node.ipynb",
    "notebooks/deep_dives/what_does_backward_free_and_what_does_it_keep.ipynb",
    "notebooks/deep_dives/how_do_you_check_a_gradient_with_numbers.ipynb",
    "notebooks/deep_dives/what_do_no_grad_and_inference_mode_switch_off.ipynb",
    "notebooks/deep_dives/how_do_you_freeze_part_of_a_model_safely.ipynb",
]


def chapter_3_cells(kind):
    import nbformat
    from scripts import ROOT

    return [
        (path, cell.source)
        for path in CHAPTER_3_NOTEBOOKS
        for cell in nbformat.read(ROOT / path, as_version=4).cells
        if cell.cell_type == kind
    ]


def one_line(text):
    return " ".join(text.lower().split())


@pytest.mark.parametrize(
    "old_claim",
    [
        # fact-check 00-03 #2: backward() does not free what a retained graph, a partial pass or a ctx attribute keeps
        "`backward()` frees its saved tensors",
        # rules-0306 B14: a forward pass through a frozen model, recording on, records nothing
        "with recording on, every forward pass records a new graph",
        # B10: (x ** e).sum() keeps its result for the exponent's formula although e needs no gradient
        "saves only the tensors its derivative needs",
        "a node keeps a tensor only when its derivative needs it",
        # B2: a graph also keeps its leaves (AccumulateGrad.variable), which no node saved
        "saved tensors are what a graph costs in memory",
        "it keeps only the tensors that some derivative needs",
        "a graph keeps only the tensors that some backward formula needs",
        # B3: backward(inputs=[a]) fills a non-leaf's .grad without retain_grad()
        "is kept for leaves only",
        "only leaves keep a `.grad`, unless",
        "gradients of intermediate results are never stored",
        # B7: grow's norm tests ran and are not in the graph
        "the graph is exactly the list of operations that have run so far",
        # B8: a view or an in-place result made in inference mode stays an ordinary tensor
        "its results are *inference tensors*",
        # B11: an optimizer made before the freeze still holds the frozen parameter
        "avoids every one of these",
        "giving them only the trainable parameters avoids that",
        # B12: the same write is accepted in a later no_grad block
        "can be changed in place after the block only when its base needs no grad",
        # learner review: the course's sources are not the learner's
        "seed article",
        # final hunt: a named intermediate is also written above the node that made it; nothing is recorded
        # without a tensor that requires grad
        "they appear only inside the nodes that saved them",
        "autograd records each operation as it runs",
        # last check: argmax, comparisons, detach() and no_grad results are not recorded; x.conj() of a real x and
        # x.to(x.dtype) hand back x itself
        "autograd records each operation on tensors that require grad as it runs",
    ],
)
def test_a_broken_claim_does_not_come_back(old_claim):
    text = " ".join(one_line(source) for _, source in chapter_3_cells("markdown"))
    assert old_claim not in text


def test_no_cell_mentions_the_seed_articles():
    """Learner review: 'the seed articles' example' (core cell 2) and 'the seed article' (gradient deep dive) are
    the authors' words for the course's sources; a learner has not read them."""
    for path, source in chapter_3_cells("markdown") + chapter_3_cells("code"):
        assert "seed" not in source.replace("manual_seed", "").lower(), path


@pytest.mark.parametrize(
    "old_claim",
    [
        # rules-0306 B6: .contiguous() records no node, F.linear on a 1-d input records four, cross_entropy two
        "one backward node per operation whose result requires grad",
        "every operation whose result requires grad records one node",
        # B3
        "backward() keeps gradients only in the .grad of leaves",
    ],
)
def test_a_broken_claim_does_not_come_back_in_the_checkers(old_claim):
    import inspect

    from tutorial_lib.exercises import chapter3

    source = one_line(inspect.getsource(chapter3).replace('"\n', "").replace('    "', ""))
    assert old_claim not in source


def test_q_bytes_left_asks_the_three_runs_its_cell_names():
    """Learner review: six answers, four of them following by symmetry, in 'the order of the table below'."""
    import nbformat
    from scripts import ROOT

    cells = nbformat.read(ROOT / CHAPTER_3_NOTEBOOKS[0], as_version=4).cells
    (cell,) = [c for c in cells if 'tl.check("ch3.q_bytes_left"' in c.source]
    assert "three words" in cell.source and "table below" not in cell.source


def rebinds_inside_a_measured_block(source):
    """Names a `with tl.measure_memory()` block assigns while they still hold an earlier value (in this code or in an
    earlier pass of its loop). Their old value is freed inside the block, which measure_memory may count."""
    import ast

    found, bound = [], set()

    def assigned(node):
        return {t.id for n in ast.walk(node) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}

    def is_measured(node):
        return isinstance(node, ast.With) and any("measure_memory" in ast.unparse(item) for item in node.items)

    def run(statements):
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                continue
            if is_measured(node):
                found.extend(sorted(assigned(node) & bound))
            if isinstance(node, ast.Delete):
                bound.difference_update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is None:
                bound.difference_update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, (ast.For, ast.While)):
                run(node.body)
                run(node.body)  # a second pass: what the first one bound is still bound
            elif isinstance(node, (ast.With, ast.If, ast.Try)):
                run(getattr(node, "body", []) + getattr(node, "orelse", []))
            else:
                bound.update(assigned(node))

    run(ast.parse(source).body)
    return found


def test_no_measured_block_frees_an_earlier_value_by_rebinding_it():
    """Rules-0306, latent in core cell 35: `total = running_total(keep)` inside the measured block freed the previous
    way's total and its five graphs there. Once measure_memory counts frees of older tensors, the second way would
    read -5,125,120 B instead of 4 B. Each such name is now dropped before its block (the same in the backward deep
    dive's ctx cell, for `loss`)."""
    import nbformat
    from scripts import ROOT

    assert rebinds_inside_a_measured_block(
        "for way in ways:\n    with tl.measure_memory() as mem:\n        total = run(way)\n"
    ) == ["total"]
    for path in CHAPTER_3_NOTEBOOKS:
        code = "\n".join(
            cell.source
            for cell in nbformat.read(ROOT / path, as_version=4).cells
            if cell.cell_type == "code" and "get_ipython" not in cell.source
        )
        assert rebinds_inside_a_measured_block(code) == [], path
