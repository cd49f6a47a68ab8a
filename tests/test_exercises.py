"""What every exercise shares: the notebooks' exercises are the registered ones, and an untouched stub is "not
attempted", never "wrong" and never an error. The chapters' reference and wrong answers are in
test_exercises_chapterN.py."""

import ast
import re

import nbformat
import pytest
import torch
from scripts import course_notebooks
from torch import nn

import tutorial_lib as tl
from tutorial_lib.exercises import is_prediction

NOTEBOOKS = course_notebooks()
CHECK_CALL = re.compile(r"""tl\.check\(\s*["']([^"']+)["']""")


def notebook_checks():
    """``{exercise id: its stub}`` over every notebook: the source of the code cell before its tl.check cell, or of
    the prediction cell itself (a ``predict`` cell holds its own ``...``)."""
    checks = {}
    for path in NOTEBOOKS:
        cells = [cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
        for before, cell in zip([None, *cells], cells):
            for exercise_id in CHECK_CALL.findall(cell.source):
                assert exercise_id not in checks, f"{exercise_id} is checked twice ({path.name})"
                predict = "predict" in cell.metadata.get("tags", [])
                assert predict == is_prediction(exercise_id), f"{exercise_id}: tag 'predict' iff a prediction"
                checks[exercise_id] = cell.source if predict else before.source
    return checks


def test_registered_exercises_are_the_notebooks_exercises():
    assert sorted(notebook_checks()) == tl.exercise_ids()


# --- stubs: the notebook's stub, as the learner first runs it, for every exercise answered with a function or class


def storage_index(shape, stride, offset, index): ...


def sliding_windows(x, k): ...


def every_other_column(x): ...


def accumulate(y, x): ...


def dz_dx2(x1, x2):
    # x1 and x2 are Python floats; use math.log, math.sin, math.cos
    ...


def freeze_all_but_last(model): ...


def predict(model, x): ...


def average_loss(model, batches): ...


def independent_copy(x): ...


def sgd_step(w, lr): ...


def fresh_leaf(x): ...


def fixed_block(x, linear): ...


class MyLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inputs, weight, bias=None): ...

    @staticmethod
    def backward(ctx, grad_output): ...


def adam_state_bytes(model): ...


def standardize_rows_low_peak(x): ...


def what_to_save(piece): ...


class FixedNormalizer(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        ...  # store mean and std so that .to() converts them

    def forward(self, x):
        return (x - self.mean) / self.std


def load_linear(path, in_features, out_features): ...


STUBS = {
    "ch1.element_address": storage_index,
    "ch1.sliding_window": sliding_windows,
    "ch2.make_view": every_other_column,
    "ch2.inplace_update": accumulate,
    "ch3.chain_rule": dz_dx2,
    "ch3.freeze": freeze_all_but_last,
    "ch3.inference": predict,
    "ch3.average_loss": average_loss,
    "ch4.independent_copy": independent_copy,
    "ch4.safe_update": sgd_step,
    "ch4.new_leaf": fresh_leaf,
    "ch5.fix_residual": fixed_block,
    "ch5.custom_linear": MyLinear,
    "ch6.adam_state_bytes": adam_state_bytes,
    "ch6.reduce_peak": standardize_rows_low_peak,
    "ch7.save_small": what_to_save,
    "ch7.module_to": FixedNormalizer,
    "ch7.load_without_copy": load_linear,
}
FUNCTION_EXERCISES = [exercise_id for exercise_id, stub in STUBS.items() if not isinstance(stub, type)]


def only_a_docstring(*args):
    """A docstring and nothing else is still a stub."""


def only_pass(*args):
    pass


def test_stubs_cover_every_exercise_answered_with_a_function_or_class():
    answered_with_code = {
        exercise_id
        for exercise_id, stub_source in notebook_checks().items()
        if isinstance(ast.parse(stub_source).body[0], (ast.FunctionDef, ast.ClassDef))
    }
    assert set(STUBS) == answered_with_code


@pytest.mark.parametrize("exercise_id", tl.exercise_ids())
def test_ellipsis_is_not_attempted(exercise_id):
    assert tl.check(exercise_id, ...).status == "not attempted"


@pytest.mark.parametrize("exercise_id, stub", STUBS.items(), ids=list(STUBS))
def test_the_notebooks_stub_is_not_attempted(exercise_id, stub):
    assert tl.check(exercise_id, stub).status == "not attempted"


@pytest.mark.parametrize("stub", [only_a_docstring, only_pass])
@pytest.mark.parametrize("exercise_id", FUNCTION_EXERCISES)
def test_a_function_that_only_has_a_docstring_or_pass_is_not_attempted(exercise_id, stub):
    assert tl.check(exercise_id, stub).status == "not attempted"


def test_exercises_answered_with_a_function_are_registered_with_the_notebooks_signature():
    from tutorial_lib.exercises import _CHECKERS

    registered = {key: getattr(checker, "function_example", "") for key, checker in _CHECKERS.items()}
    assert {key for key, example in registered.items() if example} == set(FUNCTION_EXERCISES)
    for exercise_id in FUNCTION_EXERCISES:
        stub = STUBS[exercise_id]
        signature = f"def {stub.__name__}({', '.join(stub.__code__.co_varnames[: stub.__code__.co_argcount])}): ..."
        assert registered[exercise_id] == signature  # the message quotes the function the notebook asks for


class NotAFunction:
    pass


@pytest.mark.parametrize("answer", [42, "independent_copy", NotAFunction], ids=["int", "str", "class"])
@pytest.mark.parametrize("exercise_id", FUNCTION_EXERCISES)
def test_an_answer_that_is_not_a_function_is_wrong_and_quotes_the_function_asked_for(exercise_id, answer):
    feedback = tl.check(exercise_id, answer)
    assert feedback.status == "wrong"
    assert f"the answer should be a function such as `def {STUBS[exercise_id].__name__}(" in feedback.message
    assert "pass its name (without calling it)" in feedback.hint


def test_whole_number_reads_integers_of_every_kind_and_nothing_else():
    import numpy as np

    from tutorial_lib.exercises import whole_number

    assert [whole_number(v) for v in (3, np.int64(4), np.uint8(5), torch.tensor(6))] == [3, 4, 5, 6]
    for not_whole in (True, np.bool_(False), 2.0, np.float32(2), "3", None, [1]):
        assert whole_number(not_whole) is None, not_whole


# --- quick predictions: one answer, checked against what torch computes -----------------------------------------


def registered_predictions():
    from tutorial_lib.exercises import _CHECKERS

    return {key: checker.prediction for key, checker in _CHECKERS.items() if hasattr(checker, "prediction")}


@pytest.mark.parametrize("exercise_id", sorted(registered_predictions()))
def test_prediction_accepts_torchs_answer_and_diagnoses_each_listed_mistake(exercise_id):
    spec = registered_predictions()[exercise_id]
    truth = spec["truth"]()
    assert tl.check(exercise_id, truth).status == "correct"
    for mistake, diagnosis in spec["mistakes"].items():
        feedback = tl.check(exercise_id, mistake)
        assert feedback.status == "wrong", f"{mistake!r} is listed as a mistake but torch says it is right"
        assert diagnosis in feedback.message
        assert spec["why"] in feedback.hint


def test_prediction_compares_words_numbers_and_sequences_and_names_what_is_off():
    from tutorial_lib.exercises import _CHECKERS, prediction

    try:
        prediction("test.words", lambda: ("view", "copy"), why="because.", choices=("view", "copy"))
        prediction("test.strides", lambda: torch.zeros(3, 4).t().stride(), why="t() swaps.", mistakes={(4, 1): "x's"})
        prediction("test.bytes", lambda: torch.zeros(10).untyped_storage().nbytes(), why="ten float32.")
        assert tl.check("test.words", [" View", "COPY"]).status == "correct"
        assert "entry 2" in tl.check("test.words", ["view", "view"]).message
        not_a_choice = tl.check("test.words", ["maybe", "copy"])
        assert "'maybe' (entry 1) is not one of the answers" in not_a_choice.message
        assert "because" not in not_a_choice.hint  # a typo does not give the answer away
        assert tl.check("test.strides", torch.Size([1, 4])).status == "correct"
        assert "x's" in tl.check("test.strides", [4, 1]).message
        assert tl.check("test.bytes", 40).status == "correct"
        assert tl.check("test.bytes", "40").status == "wrong"
        assert tl.check("test.bytes", True).status == "wrong"
        assert tl.check("test.bytes", ...).status == "not attempted"
        with pytest.raises(TypeError, match="truth"):
            prediction("test.bad", 40, why="x")
        with pytest.raises(ValueError, match="why"):
            prediction("test.bad", lambda: 40, why=" ")
    finally:
        for key in ("test.words", "test.strides", "test.bytes"):
            _CHECKERS.pop(key, None)


def test_checking_a_prediction_leaves_the_random_stream_where_it_was():
    from tutorial_lib.exercises import _CHECKERS, prediction

    try:
        prediction("test.random", lambda: int(torch.randn(3).numel()), why="three.")
        torch.manual_seed(0)
        expected = torch.randn(2)
        torch.manual_seed(0)
        assert tl.check("test.random", 3).status == "correct"
        assert torch.equal(torch.randn(2), expected)
    finally:
        _CHECKERS.pop("test.random", None)
