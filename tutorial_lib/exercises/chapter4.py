"""Chapter 4 exercises: clone() vs detach(), gradients through a clone, version counters, safe updates.

Every checker runs torch itself: the learner's function is called on fresh tensors and the result is
inspected (memory sharing, graph membership, values, version counters); predictions are compared with
what the same program really produces.
"""

from __future__ import annotations

import re

import torch

from ..facts.storage import shares_memory
from . import call_keeping_grad_mode, correct, exercise, whole_number, wrong


def _as_values(answer, length: int):
    """The learner's list/tuple/tensor of numbers as a float64 tensor of ``length`` values, or None."""
    try:
        values = torch.as_tensor(answer.detach() if isinstance(answer, torch.Tensor) else answer, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        return None
    values = values.reshape(-1)
    return values if values.numel() == length else None


def _whole_numbers(answer, length: int):
    """The learner's tuple/list/tensor/array of ``length`` integers as a tuple of ints, or None (bools and floats
    are not)."""
    if isinstance(answer, torch.Tensor):
        answer = answer.tolist() if answer.dim() == 1 else None
    elif hasattr(answer, "tolist") and getattr(answer, "ndim", None) == 1:  # a numpy array
        answer = answer.tolist()
    if not isinstance(answer, (tuple, list)) or len(answer) != length:
        return None
    numbers = tuple(whole_number(item) for item in answer)
    return None if None in numbers else numbers


# --- ch4.independent_copy --------------------------------------------------------------------------------


def _graph_flags(x: torch.Tensor) -> tuple[bool, bool, str | None]:
    """What the learner must not change on the input: (requires_grad, is_leaf, grad_fn's class name)."""
    return x.requires_grad, x.is_leaf, type(x.grad_fn).__name__ if x.grad_fn is not None else None


def _describe_flags(flags) -> str:
    requires_grad, is_leaf, grad_fn = flags
    return f"requires_grad={requires_grad}, is_leaf={is_leaf}, grad_fn={grad_fn}"


def _copy_inputs():
    leaf = torch.tensor([1.5, -2.0, 3.25], requires_grad=True)
    return [
        ("a leaf that requires grad", leaf),
        ("a result inside a graph (leaf * 2)", leaf * 2),
        ("a transposed (non-contiguous) matrix", torch.arange(6.0).view(2, 3).t()),
        ("an int64 tensor", torch.arange(4)),
        ("a 0-dim leaf that requires grad", torch.tensor(7.0, requires_grad=True)),
        ("an expanded tensor (stride 0)", torch.tensor([1.0, 2.0]).expand(3, 2)),
    ]


def _recorded(grad_fn: str | None) -> str:
    """Which operation of the learner's copy autograd recorded, named from the node it made."""
    if grad_fn is None:
        return "The result requires grad, so it belongs to a graph."
    op = {"CloneBackward0": "clone()", "CopyBackwards": "copy_()", "ToCopyBackward0": ".to()"}.get(grad_fn)
    return f"{op or 'Your copy'} is recorded by autograd ({grad_fn})."


@exercise("ch4.independent_copy", function="def independent_copy(x): ...")
def check_independent_copy(fn):
    grad_mode_before = torch.is_grad_enabled()
    for description, x in _copy_inputs():
        before, version_before = x.detach().clone(), x._version
        flags_before = _graph_flags(x)
        result, grad_mode_after = call_keeping_grad_mode(fn, x)
        if grad_mode_after != grad_mode_before:
            return wrong(
                "your function left gradient recording switched off for everything that runs after it.",
                "use `with torch.no_grad():` (it switches recording back on at the end), or simply x.detach().clone().",
            )
        if _graph_flags(x) != flags_before:
            return wrong(
                f"your function changed x itself ({description}): before, {_describe_flags(flags_before)}; "
                f"after, {_describe_flags(_graph_flags(x))}.",
                "leave x as it is: requires_grad_(False) and detach_() change the tensor you were given. "
                "x.detach() makes a new tensor and leaves x alone.",
            )
        if not isinstance(result, torch.Tensor):
            return wrong(
                f"for {description} your function returned {type(result).__name__}, not a tensor.", "return the copy."
            )
        if not torch.equal(x.detach(), before) or x._version != version_before:
            return wrong(
                f"your function wrote into its input ({description}): x._version went from {version_before} to "
                f"{x._version}.",
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
        if result.is_inference():
            return wrong(
                f"for {description} the result is an inference tensor: writing into it outside inference_mode raises.",
                "make the copy outside torch.inference_mode(): x.detach().clone() is already outside the graph.",
            )
        if result.grad_fn is None and result.requires_grad:
            return wrong(
                f"for {description} the result is a new leaf that requires grad: gradients would collect in it.",
                "an independent copy should not require grad. Leave out requires_grad_().",
            )
        if result.requires_grad or result.grad_fn is not None:
            grad_fn = type(result.grad_fn).__name__ if result.grad_fn is not None else None
            return wrong(
                f"for {description} the result is still in the graph (requires_grad=True, grad_fn={grad_fn}).",
                f"{_recorded(grad_fn)} Detach the copy as well: x.detach().clone().",
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
        return wrong(
            "the answer should be three numbers, e.g. [1.0, 2.0, 3.0] (the values of x.grad).",
            "x has three elements, so x.grad has three.",
        )
    truth = predict_grad_program().double()
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    if torch.allclose(values, truth, rtol=0, atol=1e-6):
        return correct(
            f"x.grad is {truth.tolist()}: 2x through the clone, plus z (= x) through x * z, and nothing through z * z."
        )
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
            "y = x.clone() is recorded (CloneBackward0): gradient reaching y goes on to x unchanged, so y * y gives "
            "2x.",
        )
    if torch.allclose(values, 2 * x):
        return wrong(
            "you found one path but not both.",
            "add the gradients of every term: y * y through the clone and x * z through x.",
        )
    return wrong(
        "that is not what backward() computes.",
        "add up each term's gradient: clone() passes gradient on unchanged, detach() passes none.",
    )


# --- ch4.safe_update ------------------------------------------------------------------------------------


@exercise("ch4.safe_update", function="def sgd_step(w, lr): ...")
def check_safe_update(fn):
    lr = 0.1
    w = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    (w * w).sum().backward()  # w.grad = 2w
    pending = (w**3).sum()  # a graph that saved w and has not run backward yet
    old_values, gradient = w.detach().clone(), w.grad.clone()
    old_pointer, old_version = w.data_ptr(), w._version
    grad_mode_before = torch.is_grad_enabled()
    try:
        result, grad_mode_after = call_keeping_grad_mode(fn, w, lr)
    except RuntimeError as error:
        if "leaf Variable" in str(error):
            return wrong(
                "autograd refused to record an in-place change of a leaf that requires grad.",
                "an optimizer step is not part of the model: make the edit inside `with torch.no_grad():`.",
            )
        raise
    if grad_mode_after != grad_mode_before:
        return wrong(
            "your function left gradient recording switched off: the next forward pass would record no graph.",
            "use `with torch.no_grad():`, which switches recording back on when the block ends.",
        )
    gradient_cleared = w.grad is None or bool((w.grad == 0).all())  # what zero_grad() does after a step
    if not gradient_cleared and not torch.equal(w.grad, gradient):
        return wrong(
            "your function changed w.grad itself.",
            "compute lr * w.grad as a new tensor (w -= lr * w.grad) instead of scaling the gradient in place.",
        )
    if torch.equal(w.detach(), old_values) and w.grad is not None and gradient_cleared:
        return wrong(
            "w did not change: w.grad was already zero when the update used it.",
            "clear the gradient (w.grad.zero_() or w.grad = None) after the update, not before.",
        )
    if torch.equal(w.detach(), old_values):
        return wrong(
            "w itself did not change: your function made a new tensor instead of updating w in place.",
            "`w = w - lr * w.grad` only rebinds the local name; change w's own memory (w -= ..., w.sub_(...)).",
        )
    if w.data_ptr() != old_pointer:
        return wrong(
            "w now points to other memory.", "update the numbers in place; do not assign a new tensor to w.data."
        )
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
            "that is what .data does. Edit w itself under torch.no_grad(), or through w.detach(): both share w's "
            "version counter.",
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
    answer = _whole_numbers(answer, 5)
    if answer is None:
        return wrong(
            "the answer should be five whole numbers: the versions of (t, v, d, p, c).",
            "e.g. answer = (0, 0, 0, 0, 0).",
        )
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
        return wrong(
            "look again at c = t.clone().",
            "a clone has new memory and a new counter starting at 0; one in-place op on it.",
        )
    if len({t, v, d}) != 1:
        return wrong(
            "t, v and d should agree.",
            "a view and a detached tensor share their base's version counter: one counter, read through three tensors.",
        )
    return wrong(
        f"t, v and d are not at version {t}.",
        "t, v and d read one shared counter: count every in-place op made through any of the three.",
    )


# --- ch4.new_leaf ---------------------------------------------------------------------------------------


def _leaf_inputs():
    leaf = torch.tensor([1.5, -2.0, 3.25], requires_grad=True)
    return [
        ("a leaf that requires grad", leaf),
        ("a result inside a graph (leaf * 2)", leaf * 2),
        ("a transposed float matrix that does not require grad", torch.arange(6.0).view(2, 3).t()),
        ("a 0-dim float64 leaf that requires grad", torch.tensor(0.5, dtype=torch.float64, requires_grad=True)),
    ]


@exercise("ch4.new_leaf", function="def fresh_leaf(x): ...")
def check_new_leaf(fn):
    grad_mode_before = torch.is_grad_enabled()
    for description, x in _leaf_inputs():
        before, version_before, flags_before = x.detach().clone(), x._version, _graph_flags(x)
        result, grad_mode_after = call_keeping_grad_mode(fn, x)
        if grad_mode_after != grad_mode_before:
            return wrong(
                "your function left gradient recording switched off for everything that runs after it.",
                "you do not need to switch recording off: x.detach() already leaves the graph.",
            )
        if not isinstance(result, torch.Tensor):
            return wrong(
                f"for {description} your function returned {type(result).__name__}, not a tensor.",
                "return the new leaf.",
            )
        if _graph_flags(x) != flags_before or x._version != version_before or not torch.equal(x.detach(), before):
            return wrong(
                f"your function changed x itself ({description}).",
                "leave x as it is: build the new leaf from x.detach(), never call requires_grad_() or detach_() on x.",
            )
        if result.shape != x.shape or result.dtype != x.dtype or not torch.equal(result.detach(), before):
            return wrong(
                f"for {description} the result does not hold x's values with x's shape and dtype.",
                "copy the numbers, do not convert them.",
            )
        if result.grad_fn is not None:
            return wrong(
                f"for {description} the result has grad_fn={type(result.grad_fn).__name__}: it is not a leaf, "
                "so after backward() its .grad stays None and the gradient goes on to x.",
                "requires_grad_() only switches a flag, it never removes a grad_fn. Call detach() before you switch "
                "gradients on.",
            )
        if not result.requires_grad:
            return wrong(
                f"for {description} the result does not require grad: backward() would give it no gradient.",
                "switch gradients on with requires_grad_().",
            )
        if shares_memory(result, x):
            return wrong(
                f"for {description} the result shares memory with x: the optimizer's updates of the new leaf would "
                "change x.",
                "detach() shares x's memory; add a clone().",
            )
        if result.is_inference():
            return wrong(
                f"for {description} the result is an inference tensor: an optimizer's in-place update of it outside "
                "inference_mode raises.",
                "make the new leaf outside torch.inference_mode(): x.detach().clone().requires_grad_().",
            )
        x_grad_before = x.grad.clone() if x.is_leaf and x.grad is not None else None  # a non-leaf's .grad warns
        (result.double() * 3).sum().backward()
        if result.grad is None or not torch.equal(result.grad, torch.full_like(result, 3.0)):
            return wrong(
                f"for {description} backward() did not fill the result's .grad.", "return a leaf that requires grad."
            )
        x_grad_after = x.grad if x.is_leaf else None
        if (x_grad_before is None) != (x_grad_after is None) or (
            x_grad_before is not None and not torch.equal(x_grad_before, x_grad_after)
        ):
            return wrong(
                f"for {description} a backward() through the result changed x.grad.",
                "the new leaf must not be connected to x.",
            )
    return correct(
        "a leaf that requires grad, with x's values, its own memory and its own .grad, for every input tried."
    )


# --- ch4.predict_modes ----------------------------------------------------------------------------------

RAISES = "error"


def predict_modes_program() -> tuple:
    """The program of the exercise, run for real: (a._version, x._version, b._version), with "error" where reading
    raises."""
    x = torch.zeros(3)
    with torch.no_grad():
        a = x * 2
        a.add_(1)
        x.add_(1)
    with torch.inference_mode():
        b = x * 2
        b.add_(1)
        x.add_(1)
    results = []
    for tensor in (a, x, b):
        try:
            results.append(tensor._version)
        except RuntimeError:
            results.append(RAISES)
    return tuple(results)


_NEGATIONS = frozenset({"no", "not", "never", "none", "without", "cannot"})


def _version_or_error(item):
    """A predicted version: an int, or RAISES for 'reading it raises' (said as a word or an exception class).

    A negated word ("no error", "doesn't raise") and a warning class are not "raises": they are left unread (None).
    """
    if isinstance(item, str):
        word = item.strip().lower()
        negated = "n't" in word or not _NEGATIONS.isdisjoint(re.findall(r"[a-z]+", word))
        return RAISES if not negated and any(key in word for key in ("error", "raise", "exception", "fail")) else None
    if isinstance(item, type) and issubclass(item, Exception) and not issubclass(item, Warning):
        return RAISES
    return whole_number(item)


@exercise("ch4.predict_modes")
def check_predict_modes(answer):
    truth = predict_modes_program()
    form = 'three entries: (a._version, x._version, b._version), each a whole number or the string "error".'
    if not isinstance(answer, (tuple, list)) or len(answer) != 3:
        return wrong(f"the answer should be {form}", 'e.g. answer = (0, 0, "error").')
    predicted = tuple(_version_or_error(item) for item in answer)
    if None in predicted:
        return wrong(f"the answer should be {form}", 'e.g. answer = (0, 0, "error").')
    if predicted == truth:
        return correct(
            f"(a, x, b) -> {truth}: no_grad keeps counting, inference_mode counts edits of x (a normal tensor) "
            "but b, made inside it, is an inference tensor with no counter at all."
        )
    a_version, x_version, b_version = predicted
    if a_version != truth[0]:
        return wrong(
            "look again at a, made under no_grad.",
            "no_grad stops recording operations, not version counting: a.add_(1) moves a's counter.",
        )
    if b_version != truth[2]:
        return wrong(
            "look again at b, made inside inference_mode.",
            "a tensor created inside inference_mode is an inference tensor: it has no version counter, and reading "
            "_version raises.",
        )
    return wrong(
        "look again at x.",
        "x existed before both blocks, so it is a normal tensor: both x.add_(1) calls are counted, under no_grad and "
        "under inference_mode.",
    )
