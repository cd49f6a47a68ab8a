"""Exercises: checkers that say whether an answer is right and give a hint when it is not.

A notebook calls ``tl.check("ch1.predict_strides", answer)``. Each chapter's module registers its checkers
with ``@exercise("id")``; a checker takes the learner's answer and returns ``Feedback``. A quick prediction (one
cell, tagged ``predict``: ``tl.check("ch2.q_transpose", ...)``, the learner writes their guess in place of the
``...``) is registered with ``prediction(...)``, whose true answer torch computes when the check runs. An untouched stub
(``answer = ...`` or a function whose body is ``...``, which returns None) gets a friendly "not attempted
yet", never an error. Reference solutions live in ``tests/``, where they and deliberately wrong answers are
run through the same checkers.
"""

from __future__ import annotations

import dis
import functools
import importlib
import math
import operator
from dataclasses import dataclass
from typing import Callable

_CHECKERS: dict[str, Callable] = {}
_CHAPTER_MODULES = ("chapter0", "chapter1", "chapter2", "chapter3", "chapter4", "chapter5", "chapter6", "chapter7")

CORRECT, WRONG, NOT_ATTEMPTED = "correct", "wrong", "not attempted"


@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer: ``status`` is "correct", "wrong" or "not attempted"."""

    exercise: str
    status: str
    message: str
    hint: str = ""

    @property
    def correct(self) -> bool:
        return self.status == CORRECT

    def __str__(self) -> str:
        mark = {CORRECT: "✅ Correct", WRONG: "❌ Not yet", NOT_ATTEMPTED: "⏳ Not attempted yet"}[self.status]
        text = f"{mark} ({self.exercise}): {self.message}"
        if self.hint:
            text += f"\nHint: {self.hint}"
        return text

    __repr__ = __str__

    def _repr_html_(self) -> str:
        import html

        colour = {CORRECT: "#1a7f37", WRONG: "#cf222e", NOT_ATTEMPTED: "#6e7781"}[self.status]
        body = html.escape(str(self)).replace("\n", "<br>")
        return f'<div style="border-left: 4px solid {colour}; padding: 4px 8px">{body}</div>'


def correct(message: str) -> Feedback:
    return Feedback("", CORRECT, message)


def wrong(message: str, hint: str) -> Feedback:
    return Feedback("", WRONG, message, hint)


def not_attempted(message: str = "replace the ... with your answer and run the cell again.") -> Feedback:
    return Feedback("", NOT_ATTEMPTED, message)


def is_stub_function(fn) -> bool:
    """Whether ``fn``'s body does nothing but return None (``...``, ``pass``, a docstring alone)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    ops = [(i.opname, i.argval) for i in dis.get_instructions(code) if i.opname not in ("RESUME", "NOP", "CACHE")]
    return ops in ([("LOAD_CONST", None), ("RETURN_VALUE", None)], [("RETURN_CONST", None)])


def whole_number(item) -> int | None:
    """``item`` as an int when it is a whole number (a Python or numpy integer, a 0-dim integer tensor), else None:
    bools, numpy's included, and floats do not count."""
    # == and not "is": a numpy bool's dtype equals bool (np.dtype(bool) == bool) without being it.
    if isinstance(item, bool) or getattr(item, "dtype", None) == bool:  # noqa: E721
        return None
    try:
        return operator.index(item)
    except TypeError:
        return None


def call_keeping_grad_mode(fn, *args):
    """``fn(*args)`` with grad mode put back as it was afterwards, raised or not.

    Returns ``(result, grad mode the call left behind)``, so a checker can tell the learner that their answer
    left recording switched off for everything that runs after it (``torch.set_grad_enabled(False)``).
    """
    import torch

    before = torch.is_grad_enabled()
    try:
        return fn(*args), torch.is_grad_enabled()
    finally:
        torch.set_grad_enabled(before)


def is_stub(answer) -> bool:
    """An untouched stub: ``...`` itself, None, or a function whose body is only ``...`` or ``pass``."""
    return answer is Ellipsis or answer is None or (callable(answer) and is_stub_function(answer))


def exercise(exercise_id: str, function: str = ""):
    """Register a checker under ``exercise_id`` (``"ch1.predict_strides"``).

    ``function``: the answer is a function such as this one (``"def independent_copy(x): ..."``). Anything else
    (a value, a class) is then answered "wrong" and a function whose body is only ``...`` "not attempted", before
    the checker runs: the checker is given a real function.
    """

    def register(checker: Callable) -> Callable:
        if exercise_id in _CHECKERS:
            raise ValueError(f"exercise id {exercise_id!r} is registered twice")
        if function:
            checker = _function_answer(checker, function)
        _CHECKERS[exercise_id] = checker
        return checker

    return register


def _function_answer(checker: Callable, example: str) -> Callable:
    @functools.wraps(checker)
    def checked(fn):
        if not callable(fn) or isinstance(fn, type):
            return wrong(
                f"the answer should be a function such as `{example}`.",
                "define the function, then pass its name (without calling it).",
            )
        if is_stub_function(fn):
            return not_attempted()
        return checker(fn)

    checked.function_example = example
    return checked


def _normalized(answer):
    """An answer in the one form predictions compare: strings stripped and lower-cased, whole numbers as int,
    sequences (lists, tuples, ``torch.Size``, tensors, arrays) as tuples of normalized items."""
    if isinstance(answer, str):
        return answer.strip().strip("'\"").strip().lower()
    if isinstance(answer, bool) or type(answer).__name__ == "bool_":
        return bool(answer)
    number = whole_number(answer)
    if number is not None:
        return number
    if hasattr(answer, "tolist") and not isinstance(answer, (int, float)):
        answer = answer.tolist()
    if isinstance(answer, (list, tuple)):
        return tuple(_normalized(item) for item in answer)
    return answer


def _same(answer, truth) -> bool:
    if isinstance(truth, float) and isinstance(answer, (int, float)) and not isinstance(answer, bool):
        return math.isclose(answer, truth, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(truth, int) and not isinstance(truth, bool) and isinstance(answer, float):
        return answer.is_integer() and int(answer) == truth  # 120.0 bytes is 120 bytes
    if isinstance(truth, tuple) and isinstance(answer, tuple):
        return len(answer) == len(truth) and all(_same(a, t) for a, t in zip(answer, truth))
    return type(answer) is type(truth) and answer == truth


def _as_written(value) -> str:
    """An answer as Python would write it: tensors, sizes and arrays as tuples, strings quoted as given."""
    if hasattr(value, "tolist") and not isinstance(value, (int, float, str)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_as_written(item) for item in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


def _form(value) -> str:
    """What kind of answer ``value`` is, in words, without giving it away."""
    if isinstance(value, bool):
        return "True or False"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a word in quotes"
    if isinstance(value, tuple):
        kinds = {_form(item) for item in value}
        each = f", each {kinds.pop()}" if len(kinds) == 1 else ""
        return f"a tuple of {len(value)} entr{'y' if len(value) == 1 else 'ies'}{each}"
    return type(value).__name__


def prediction(
    exercise_id: str,
    truth: Callable[[], object],
    *,
    why: str,
    choices: tuple = (),
    mistakes: dict | None = None,
) -> Callable:
    """Register a quick prediction: one answer, compared with what torch computes when the check runs.

    Args:
        exercise_id: the id the notebook's ``predict`` cell passes to ``tl.check``.
        truth: a function that computes the true answer with torch (never a hard-coded value).
        why: one or two sentences that explain the answer; shown whether the guess was right or wrong.
        choices: for a word answer, the words allowed (``("view", "copy")``); for a list of words, the words
            each entry may be. Anything else is answered with the list of choices.
        mistakes: a diagnosis for each common wrong answer (``{(4, 1): "those are x's own strides ..."}``).

    Returns:
        The registered checker.
    """
    if not callable(truth):
        raise TypeError(f"truth must be a function that computes the answer with torch, got {type(truth).__name__}")
    if not isinstance(why, str) or not why.strip():
        raise ValueError("why must say in a sentence why the true answer is true")
    allowed = tuple(_normalized(choice) for choice in choices)
    diagnoses = {_normalized(answer): text for answer, text in (mistakes or {}).items()}

    def checker(answer):
        guess = _normalized(answer)
        import torch

        with torch.random.fork_rng(devices=[]):  # checking a guess must not move the learner's random numbers
            true_answer = truth()
        expected = _normalized(true_answer)
        # Messages quote the answers as written (the learner's) and as torch gave them, not their compared forms.
        said, says = _as_written(answer), _as_written(true_answer)
        words = guess if isinstance(guess, tuple) else (guess,)
        if allowed and any(word not in allowed for word in words):
            bad = next(word for word in words if word not in allowed)
            options = " or ".join(repr(choice) for choice in choices)
            where = f" (entry {words.index(bad) + 1})" if isinstance(guess, tuple) else ""
            return wrong(
                f"{bad!r}{where} is not one of the answers: write {options}.", "fix it and run the cell again."
            )
        if _same(guess, expected):
            return correct(why)
        if _form(guess) != _form(expected) and not (isinstance(guess, float) and isinstance(expected, int)):
            # A typo in the form is not a wrong prediction: say what form is wanted, and keep the answer hidden.
            return wrong(
                f"the answer should be {_form(expected)}; you wrote {said}.", "fix the form and run the cell again."
            )
        for mistake, diagnosis in diagnoses.items():
            if _same(guess, mistake):
                return wrong(f"torch says {says}, not {said}: {diagnosis}", why)
        if isinstance(expected, tuple) and isinstance(guess, tuple) and len(guess) == len(expected):
            off = [str(i + 1) for i, (mine, true) in enumerate(zip(guess, expected)) if not _same(mine, true)]
            entries, verb = ("entry", "is") if len(off) == 1 else ("entries", "are")
            return wrong(
                f"{len(off)} of {len(expected)} entries {verb} not what torch says ({entries} {', '.join(off)}); "
                f"torch says {says}.",
                why,
            )
        return wrong(f"torch says {says}, not {said}.", why)

    checker.prediction = {"truth": truth, "why": why, "choices": tuple(choices), "mistakes": dict(mistakes or {})}
    return exercise(exercise_id)(checker)


def is_prediction(exercise_id: str) -> bool:
    """Whether ``exercise_id`` is a quick prediction (registered with ``prediction``)."""
    _load_all()
    return hasattr(_CHECKERS.get(exercise_id), "prediction")


def _load_all() -> None:
    for name in _CHAPTER_MODULES:
        try:
            importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise


def exercise_ids() -> list[str]:
    """Every registered exercise id, in chapter order."""
    _load_all()
    return sorted(_CHECKERS)


def check(exercise_id: str, answer) -> Feedback:
    """Check a learner's answer to an exercise and say whether it is right, with a hint when it is not.

    Args:
        exercise_id: the id printed in the notebook, e.g. ``"ch1.predict_strides"``.
        answer: the learner's answer: a value, or the function they wrote (a stub counts as not attempted).

    Returns:
        ``Feedback`` (shows as a coloured box in Jupyter, as text elsewhere).

    Raises:
        TypeError: ``exercise_id`` is not a str.
        ValueError: no exercise has that id.
    """
    if not isinstance(exercise_id, str):
        raise TypeError(f"exercise_id must be a str such as 'ch1.predict_strides', got {type(exercise_id).__name__}")
    _load_all()
    if exercise_id not in _CHECKERS:
        raise ValueError(f"exercise_id {exercise_id!r} is not an exercise; known: {', '.join(sorted(_CHECKERS))}")
    if is_stub(answer):
        verdict = not_attempted()
    else:
        try:
            verdict = _CHECKERS[exercise_id](answer)
        except Exception as error:  # noqa: BLE001 - the learner's function raised: that is feedback, not a crash
            verdict = wrong(
                f"your code raised {type(error).__name__}: {error}", "run it on its own in a cell to see where."
            )
    return Feedback(exercise_id, verdict.status, verdict.message, verdict.hint)
