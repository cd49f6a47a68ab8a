"""Chapter 4 exercises: clone() vs detach(), gradients through a clone, version counters, safe updates.

Every checker runs torch itself: the learner's function is called on fresh tensors and the result is
inspected (memory sharing, graph membership, values, version counters); predictions are compared with
what the same program really produces. The quick predictions (``ch4.q_*``) come first, in the order of the
chapter; the exercises follow (two in the core chapter, the others in its deep dives).
"""

from __future__ import annotations

import copy
import re

import torch

from ..facts.storage import shares_memory
from ..facts.watching import WatcherMode, call_keeping_versions
from . import call_keeping_grad_mode, correct, exercise, prediction, whole_number, wrong


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


# --- quick predictions (the core chapter) ---------------------------------------------------------------------

#: The four ways to get "the same numbers as x" that the chapter's first prediction asks about, in its order.
SAME_NUMBERS = {
    "x.clone()": lambda x: x.clone(),
    "x.detach()": lambda x: x.detach(),
    "x.data": lambda x: x.data,
    "copy.copy(x)": copy.copy,
}


def shares_memory_answers() -> tuple[str, ...]:
    """For each of SAME_NUMBERS, "yes" if the result shares memory with a leaf x that requires grad, else "no"."""
    answers = []
    for make in SAME_NUMBERS.values():
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        answers.append("yes" if shares_memory(make(x), x) else "no")
    return tuple(answers)


prediction(
    "ch4.q_shares_memory",
    shares_memory_answers,
    why="Only clone() allocates new memory and copies the numbers into it. x.detach(), x.data and copy.copy(x) "
    "are new tensor objects over x's own memory.",
    choices=("yes", "no"),
    mistakes={
        ("no", "no", "yes", "yes"): "detach() does not copy: it returns a new tensor object over x's memory.",
        ("no", "no", "yes", "no"): "detach() and copy.copy(x) do not copy either: only clone() does.",
        ("no", "yes", "yes", "no"): "copy.copy(x) is a shallow copy: a new tensor object over the same storage "
        "(chapter 2).",
        ("no", "no", "no", "no"): "only clone() copies: the other three are new tensor objects over x's memory.",
        ("yes", "yes", "yes", "yes"): "clone() allocates new memory: writing into a clone never changes x.",
    },
)


def _grad_word(grad, w) -> str:
    """x.grad described in one word: "None", "zeros", "w" (equal to w) or "other"."""
    if grad is None:
        return "None"
    if not bool(grad.any()):
        return "zeros"
    return "w" if torch.equal(grad, w.detach()) else "other"


def grads_through_clone_and_detach() -> tuple[str, str]:
    """x.grad after a backward through (x.clone() * w).sum(), then through (x.detach() * w).sum(), each from a
    fresh x."""
    words = []
    for cut in (torch.Tensor.clone, torch.Tensor.detach):
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = torch.tensor([0.5, 0.5, 0.5], requires_grad=True)
        (cut(x) * w).sum().backward()
        words.append(_grad_word(x.grad, w))
    return tuple(words)


prediction(
    "ch4.q_grads",
    grads_through_clone_and_detach,
    why="CloneBackward0 hands the gradient it receives on to x unchanged, so x.grad equals w. A detached tensor is "
    "a constant to autograd: backward never reaches x, so x.grad is not even created and stays None.",
    choices=("w", "zeros", "None"),
    mistakes={
        ("w", "zeros"): "backward never reaches x through a detach, so it writes nothing into x.grad, not even zeros.",
        ("None", "None"): "clone() is recorded (CloneBackward0): the gradient goes through it to x.",
        ("w", "w"): "detach() cuts the gradient: to autograd the detached numbers are a constant.",
        ("None", "w"): "it is the other way round: the clone passes the gradient on, the detach does not.",
        ("zeros", "None"): "CloneBackward0 passes the gradient on unchanged: x receives w, not zeros.",
    },
)


def versions_after_a_write_through_a_view() -> tuple[int, int, int]:
    """(t._version, alias._version, data._version) after view.add_(1), with alias = t.detach() and
    data = t.data taken before the write."""
    t = torch.zeros(4)
    view, alias, data = t[1:3], t.detach(), t.data
    view.add_(1)
    return t._version, alias._version, data._version


prediction(
    "ch4.q_versions",
    versions_after_a_write_through_a_view,
    why="A view and t.detach() share t's version counter, so view.add_(1) moves the one counter that t, view and "
    "alias read, from 0 to 1. t.data got a fresh counter of its own, which this write does not touch.",
    mistakes={
        (0, 0, 0): "the view has no counter of its own: it reads t's, so its write counts for t.",
        (1, 0, 0): "t.detach() shares t's counter too: alias reads the same number as t.",
        (1, 1, 1): "t.data gets a fresh counter of its own each time you read it: this write is not counted on it.",
        (0, 0, 1): "the write through the view is counted on t's counter, which the view shares.",
    },
)


def backward_after_an_edit() -> tuple[str, str]:
    """Whether loss.backward() "runs" or "raises" after x is multiplied by 10 in place through x.data, then
    (on a fresh x) through x.detach(), with loss = (x ** 2).sum() computed before the edit."""
    outcomes = []
    for alias in (lambda x: x.data, lambda x: x.detach()):
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        loss = (x**2).sum()
        alias(x).mul_(10)
        try:
            loss.backward()
            outcomes.append("runs")
        except RuntimeError:
            outcomes.append("raises")
    return tuple(outcomes)


prediction(
    "ch4.q_data_or_detach",
    backward_after_an_edit,
    why="pow saved x at version 0. The edit through x.detach() moves x's counter to 1, so backward raises. The "
    "edit through x.data moves only .data's own counter: x._version stays 0, and backward runs on the edited "
    "numbers.",
    choices=("runs", "raises"),
    mistakes={
        ("raises", "raises"): "x.data has a counter of its own: x._version stays 0, so autograd sees nothing and "
        "backward runs, with a wrong gradient.",
        ("runs", "runs"): "x.detach() shares x's counter: the edit moves x._version to 1, and pow saved x at "
        "version 0.",
        ("raises", "runs"): "it is the other way round: detach() shares x's counter, .data does not.",
    },
)


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
                "an independent copy should not require grad: detach it, as in x.detach().clone(). copy.deepcopy "
                "keeps requires_grad=True, and requires_grad_() switches it on.",
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
    coefficient = next((k for k in range(7) if torch.allclose(values, k * x)), None)
    if coefficient is None:
        return wrong(
            "that is not what backward() computes.",
            "each term sends x a gradient of 0, x or 2x here, so x.grad is a whole multiple of x = [1, 2, 3]: add up "
            "each term's gradient, knowing that clone() passes gradient on unchanged and detach() passes none.",
        )
    return _diagnose_multiple(coefficient)


#: How each term of the program can be misread, with the gradient (a multiple of x) that the misreading gives and
#: what to tell the learner: (term, multiple, message, hint). The right readings give 2x + x + 0 = 3x.
_MISREADINGS = (
    (
        "y * y",
        0,
        "you left out the path through the clone",
        "the clone y = x.clone() is recorded (CloneBackward0): gradient reaching y goes on to x unchanged, so y * y "
        "gives 2x.",
    ),
    (
        "x * z",
        2,
        "you differentiated x * z as if it were x * x",
        "although z = x.detach() has x's numbers, it is a constant: d(x * z)/dx = z.",
    ),
    (
        "x * z",
        0,
        "you left out x * z",
        "add the gradients of every term: x * z depends on x too, and d(x * z)/dx = z, whose numbers are x's.",
    ),
    (
        "z * z",
        2,
        "you gave z * z a gradient",
        "to autograd, z = x.detach() is a constant: z * z sends nothing to x, although z holds x's numbers.",
    ),
)
_RIGHT_READINGS = {"y * y": 2, "x * z": 1, "z * z": 0}


def _diagnose_multiple(coefficient: int):
    """The feedback for an answer that is ``coefficient`` times x (0 to 6, not 3): the fewest misreadings of the
    terms that explain it, each named with its hint."""
    best = None
    for chosen in range(1 << len(_MISREADINGS)):
        misread = [m for i, m in enumerate(_MISREADINGS) if chosen >> i & 1]
        terms = [term for term, *_ in misread]
        if len(set(terms)) != len(terms):  # each term is read one way
            continue
        readings = dict(_RIGHT_READINGS, **{term: multiple for term, multiple, *_ in misread})
        if sum(readings.values()) == coefficient and (best is None or len(misread) < len(best)):
            best = misread
    if not best:  # only 3x, the right answer, has no misreading
        return wrong("that is not what backward() computes.", "add up each term's gradient.")
    what = ", and ".join(message for _, _, message, _ in best)
    hints = [hint if i == 0 else hint[0].upper() + hint[1:] for i, (*_, hint) in enumerate(best)]
    multiple = {0: "0", 1: "x"}.get(coefficient, f"{coefficient}x")
    return wrong(f"your answer is {multiple}: {what}.", " ".join(hints))


# --- ch4.safe_update ------------------------------------------------------------------------------------


class _UncountedWrites(WatcherMode):
    """Watches the writes into ``w`` while the learner's step runs: which of them changed w's numbers without
    moving w's version counter.

    A write through ``.data``, NumPy or ``untyped_storage()``, or a fused optimizer kernel, changes the numbers and
    leaves ``w._version`` alone, even when another in-place op (``w.mul_(1)``) moves the counter afterwards. The
    counter moves just after an in-place op returns from dispatch (its ``ADInplaceOrView`` kernel sits above this
    mode), so each op is judged at the start of the next one, or at the end: an op that changed the numbers must
    have moved the counter by then, and a change between two ops was made outside torch's operations.
    """

    def __init__(self, w: torch.Tensor):
        super().__init__()
        self.w = w
        self.values = w.detach().clone()
        self.version = w._version
        self.changed_by = None  # the op that changed w's numbers and has yet to show a counted write
        self.uncounted: list[str] = []

    def settle(self) -> None:
        values, version = self.w.detach().clone(), self.w._version
        if self.changed_by is not None:
            if version == self.version:
                self.uncounted.append(self.changed_by)
            self.changed_by = None
        elif not torch.equal(values, self.values):
            self.uncounted.append("a write outside torch's operations, such as NumPy's,")
        self.values, self.version = values, version

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.settle()
        result = call_keeping_versions(func, args, kwargs or {})
        values = self.w.detach().clone()
        if not torch.equal(values, self.values):
            self.changed_by, self.values = f"the op {func._schema.name.removeprefix('aten::')}", values
        return result


@exercise("ch4.safe_update", function="def sgd_step(w, lr): ...")
def check_safe_update(fn):
    lr = 0.1
    w = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    (w * w).sum().backward()  # w.grad = 2w
    pending = (w**3).sum()  # a graph that saved w and has not run backward yet
    old_values, gradient = w.detach().clone(), w.grad.clone()
    old_pointer, old_version = w.data_ptr(), w._version
    grad_mode_before = torch.is_grad_enabled()
    watch = _UncountedWrites(w)
    try:
        with watch:
            result, grad_mode_after = call_keeping_grad_mode(fn, w, lr)
        watch.settle()
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
    if watch.uncounted:
        return wrong(
            f"the values are right and w._version went from {old_version} to {w._version}, but not because of the "
            f"update: {watch.uncounted[0]} changed w's numbers without moving the counter, and another in-place op "
            "moved it. Without that other op, a graph that saved the old w would backpropagate a silently wrong "
            "gradient.",
            "make the update itself through w under torch.no_grad(), or through w.detach(): both share w's version "
            "counter. Writes through .data or NumPy, and fused optimizer kernels, leave it alone.",
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
            "a clone has new memory and a counter of its own (at 0 here); one in-place op on it.",
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


#: A prediction that reading the version does NOT raise ("no error", "doesn't raise", a warning class).
DOES_NOT_RAISE = "does not raise"

_RAISE_WORDS = ("error", "raise", "exception", "fail")
_NEGATIONS = frozenset({"no", "not", "never", "none", "without", "cannot", "nothing"})
_TORCH_MESSAGE = "inference tensors do not track version counter"


def _says_raises(text: str):
    """RAISES, DOES_NOT_RAISE or None (says neither) for a learner's words about reading ``_version``.

    A negation counts only when it stands just before a word that means raising ("no error", "doesn't raise",
    "not an error"), so that a pasted error message ("RuntimeError: Inference tensors do not track version
    counter.") still says "raises".
    """
    words = re.findall(r"[a-z']+", text.lower())
    raising = [i for i, word in enumerate(words) if any(key in word for key in _RAISE_WORDS)]
    if not raising:
        return RAISES if _TORCH_MESSAGE in " ".join(words) else None
    for i in raising:
        if any(word in _NEGATIONS or word.endswith("n't") for word in words[max(0, i - 3) : i]):
            return DOES_NOT_RAISE
    return RAISES


def _version_or_error(item):
    """A predicted version: an int, RAISES for "reading it raises" (said in words, by pasting torch's message or
    with an exception class), DOES_NOT_RAISE for "reading it does not raise" ("no error", a warning class), or
    None when the entry says none of these."""
    if isinstance(item, str):
        return _says_raises(item)
    if isinstance(item, type) and issubclass(item, Warning):
        return DOES_NOT_RAISE
    if isinstance(item, type) and issubclass(item, Exception):
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
        position = predicted.index(None)
        return wrong(
            f"entry {position + 1} ({answer[position]!r}) is neither a whole number nor a word for an error: the "
            f"answer should be {form}",
            'e.g. answer = (0, 0, "error").',
        )
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
            "b = x * 2 is a new tensor made inside inference_mode: an inference tensor, with no version counter, so "
            "reading b._version raises.",
        )
    return wrong(
        "look again at x.",
        "x existed before both blocks, so it is a normal tensor: both x.add_(1) calls are counted, under no_grad and "
        "under inference_mode.",
    )
