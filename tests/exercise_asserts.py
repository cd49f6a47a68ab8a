"""Assertions shared by the exercise tests: a checker's verdict on a reference or a deliberately wrong answer."""

import tutorial_lib as tl


def assert_correct(exercise_id, answer):
    """The checker accepts ``answer``."""
    feedback = tl.check(exercise_id, answer)
    assert feedback.status == "correct", str(feedback)
    return feedback


def assert_wrong(exercise_id, answer):
    """The checker rejects ``answer`` and gives a hint."""
    feedback = tl.check(exercise_id, answer)
    assert feedback.status == "wrong", str(feedback)
    assert feedback.hint.strip(), str(feedback)
    return feedback
