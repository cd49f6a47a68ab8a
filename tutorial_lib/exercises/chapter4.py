"""Chapter 4 exercises: clone() vs detach(), gradients through a clone, version counters, safe updates.

Every checker runs torch itself: the learner's function is called on fresh tensors and the result is
inspected (memory sharing, graph membership, values, version counters); predictions are compared with
what the same program really produces.
"""

from __future__ import annotations


import torch

from ..storage import shares_memory
from . import is_stub_function as _is_stub_function
from . import correct, exercise, not_attempted, wrong


def _as_values(answer, length: int):
    """The learner's list/tuple/tensor of numbers as a float64 tensor of ``length`` values, or None."""
    try:
        values = torch.as_tensor(answer.detach() if isinstance(answer, torch.Tensor) else answer, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        return None
    values = values.reshape(-1)
    return values if values.numel() == length else None


# --- ch4.independent_copy --------------------------------------------------------------------------------


def _copy_inputs():
    leaf = torch.tensor([1.5, -2.0, 3.25], requires_grad=True)
    return [
        ("a leaf that requires grad", leaf),
        ("a result inside a graph (leaf * 2)", leaf * 2),
        ("a transposed (non-contiguous) matrix", torch.arange(6.0).view(2, 3).t()),
        ("an int64 tensor", torch.arange(4)),
    ]


@exercise("ch4.independent_copy")
def check_independent_copy(fn):
    if not callable(fn):
        return wrong("the answer should be a function such as `def independent_copy(x): ...`.", "define the function, then pass its name.")
    if _is_stub_function(fn):
        return not_attempted()
    for description, x in _copy_inputs():
        before, version_before = x.detach().clone(), x._version
        result = fn(x)
        if not isinstance(result, torch.Tensor):
            return wrong(f"for {description} your function returned {type(result).__name__}, not a tensor.", "return the copy.")
        if not torch.equal(x.detach(), before) or x._version != version_before:
            return wrong(
                f"your function wrote into its input ({description}): x._version went from {version_before} to {x._version}.",
                "make the copy without any in-place operation on x or on a view of it.",
            )
        if result.shape != x.shape or result.dtype != x.dtype:
            return wrong(
                f"for {description} the result has shape {tuple(result.shape)} and dtype {result.dtype}; "
                f"x has {tuple(x.shape)} and {x.dtype}.",
                "keep shape and dtype: copy, do not convert.",
            )
        if not torch.equal(result.detach(), before):
            return wrong(f"for {description} the values differ from x's.", "the copy must hold the same numbers.")
        if shares_memory(result, x):
            return wrong(
                f"for {description} the result shares memory with x: writing into it would change x.",
                "detach() (like .data) is a view of x's storage. Copy the numbers with clone().",
            )
        if result.requires_grad or result.grad_fn is not None:
            grad_fn = type(result.grad_fn).__name__ if result.grad_fn is not None else None
            return wrong(
                f"for {description} the result is still in the graph (requires_grad=True, grad_fn={grad_fn}).",
                "clone() is recorded by autograd (CloneBackward0). Detach the copy as well: x.detach().clone().",
            )
    return correct("same values, its own memory, and no link to the graph, for every input tried.")


# --- ch4.predict_grad -----------------------------------------------------------------------------------


def predict_grad_program() -> torch.Tensor:
    """The program of the exercise, run for real: returns ``x.grad``."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.clone()
    z = x.detach()
    loss = (y * y).sum() + (x * z).sum() + (z * z).sum()
    loss.backward()
    return x.grad


@exercise("ch4.predict_grad")
def check_predict_grad(answer):
    values = _as_values(answer, 3)
    if values is None:
        return wrong("the answer should be three numbers, e.g. [1.0, 2.0, 3.0] (the values of x.grad).", "x has three elements, so x.grad has three.")
    truth = predict_grad_program().double()
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    if torch.allclose(values, truth):
        return correct(f"x.grad is {truth.tolist()}: 2x through the clone, plus z (= x) through x * z, and nothing through z * z.")
    if torch.allclose(values, 6 * x):
        return wrong(
            "you let gradient flow through z as well.",
            "z = x.detach() is a constant to autograd: z * z contributes nothing, and x * z contributes only z.",
        )
    if torch.allclose(values, 4 * x):
        return wrong(
            "you differentiated x * z as if it were x * x.",
            "z = x.detach() has the same numbers as x but is a constant: d(x * z)/dx = z.",
        )
    if torch.allclose(values, x):
        return wrong(
            "you left out the path through the clone.",
            "y = x.clone() is recorded (CloneBackward0): gradient reaching y goes on to x unchanged, so y * y gives 2x.",
        )
    if torch.allclose(values, 2 * x):
        return wrong("you found one path but not both.", "add the gradients of every term: y * y through the clone and x * z through x.")
    return wrong(
        "that is not what backward() computes.",
        "add up each term's gradient: clone() passes gradient on unchanged, detach() passes none.",
    )


# --- ch4.safe_update ------------------------------------------------------------------------------------


@exercise("ch4.safe_update")
def check_safe_update(fn):
    if not callable(fn):
        return wrong("the answer should be a function such as `def sgd_step(w, lr): ...`.", "define the function, then pass its name.")
    if _is_stub_function(fn):
        return not_attempted()
    lr = 0.1
    w = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    (w * w).sum().backward()  # w.grad = 2w
    pending = (w**3).sum()  # a graph that saved w and has not run backward yet
    old_values, gradient = w.detach().clone(), w.grad.clone()
    old_pointer, old_version = w.data_ptr(), w._version
    try:
        result = fn(w, lr)
    except RuntimeError as error:
        if "leaf Variable" in str(error):
            return wrong(
                "autograd refused to record an in-place change of a leaf that requires grad.",
                "an optimizer step is not part of the model: make the edit inside `with torch.no_grad():`.",
            )
        raise
    if torch.equal(w.detach(), old_values):
        return wrong(
            "w itself did not change: your function made a new tensor instead of updating w in place.",
            "`w = w - lr * w.grad` only rebinds the local name; change w's own memory (w -= ..., w.sub_(...)).",
        )
    if w.data_ptr() != old_pointer:
        return wrong("w now points to other memory.", "update the numbers in place; do not assign a new tensor to w.data.")
    if not torch.allclose(w.detach(), old_values - lr * gradient):
        return wrong(
            f"w holds {w.detach().tolist()}, but w - lr * w.grad is {(old_values - lr * gradient).tolist()}.",
            "subtract lr times the gradient, once.",
        )
    if not (w.is_leaf and w.requires_grad):
        return wrong(
            f"after the step w is_leaf={w.is_leaf}, requires_grad={w.requires_grad}: it is no longer a trainable leaf.",
            "leave requires_grad alone and make the edit under torch.no_grad(), so it is not recorded.",
        )
    if result is not None and result is not w:
        return wrong("the values are right, but the function returned a different tensor.", "return w itself.")
    if w._version == old_version:
        return wrong(
            f"the values are right, but autograd did not see the edit (w._version is still {old_version}). "
            "A graph that saved the old w would now backpropagate a silently wrong gradient.",
            "that is what .data does. Edit w itself under torch.no_grad(), or through w.detach(): both share w's version counter.",
        )
    try:
        pending.backward()
    except RuntimeError as error:
        if "modified by an inplace operation" in str(error):
            return correct(
                f"w was updated in place, stayed a leaf, and its version went from {old_version} to {w._version}, "
                "so a stale graph that saved the old w now raises instead of computing a wrong gradient."
            )
        raise
    return wrong(
        "a graph that saved the old w still ran backward without complaint.",
        "make the edit through w (under torch.no_grad()) or w.detach(), which share w's version counter.",
    )


# --- ch4.predict_versions -------------------------------------------------------------------------------


def predict_versions_program() -> tuple[int, int, int, int, int]:
    """The program of the exercise, run for real: the versions of (t, v, d, p, c)."""
    t = torch.zeros(4)
    v = t[:2]
    d = t.detach()
    p = t.data
    c = t.clone()
    v.add_(1)
    d.mul_(2)
    p.sub_(1)
    c.add_(5)
    return t._version, v._version, d._version, p._version, c._version


@exercise("ch4.predict_versions")
def check_predict_versions(answer):
    names = ("t", "v", "d", "p", "c")
    truth = predict_versions_program()
    if isinstance(answer, dict):
        answer = tuple(answer.get(name) for name in names)
    if not isinstance(answer, (tuple, list)) or len(answer) != 5 or not all(isinstance(a, int) for a in answer):
        return wrong("the answer should be five whole numbers: the versions of (t, v, d, p, c).", "e.g. answer = (0, 0, 0, 0, 0).")
    answer = tuple(answer)
    if answer == truth:
        return correct(
            f"(t, v, d, p, c) are at versions {truth}: t, its view v and t.detach() count every in-place op "
            "on any of them; t.data and t.clone() each have a counter of their own."
        )
    t, v, d, p, c = answer
    if p != truth[3] or t == 3:
        return wrong(
            "look again at p = t.data.",
            "t.data shares t's memory but gets a fresh version counter of its own: p.sub_(1) bumps p only, not t.",
        )
    if c != truth[4]:
        return wrong("look again at c = t.clone().", "a clone has new memory and a new counter starting at 0; one in-place op on it.")
    if len({t, v, d}) != 1:
        return wrong(
            "t, v and d should agree.",
            "a view and a detached tensor share their base's version counter: one counter, read through three tensors.",
        )
    return wrong(
        f"t, v and d are not at version {t}.",
        "t, v and d read one shared counter: count every in-place op made through any of the three.",
    )
