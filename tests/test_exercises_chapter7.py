"""Chapter 7 checkers: reference solutions pass, typical wrong answers get a hint.

The stubs and the registration of every exercise are tested once, in test_exercises.py; the functions chapter 7's
child processes run, in test_workers.py.
"""

import os

import pytest
import torch
from exercise_asserts import assert_correct, assert_wrong
from torch import nn

from tutorial_lib.exercises.chapter7 import (
    SAME_OBJECT_CALLS,
    child_write_reaches_parent,
    dtypes_after_module_to,
    loaded_pair_after_a_write,
    same_object_truth,
    same_or_new,
    saved_size,
)

# --- ch7.save_small -----------------------------------------------------------------------------------------


def test_saving_a_slice_writes_the_whole_storage():
    big = torch.arange(100_000, dtype=torch.float32)
    assert saved_size(big[:10]) > big.untyped_storage().nbytes()
    assert saved_size(big[:10].clone()) < 2_000


@pytest.mark.parametrize(
    "solution",
    [
        lambda piece: piece.clone(),
        lambda piece: piece.detach().clone(),
        lambda piece: piece.clone(memory_format=torch.contiguous_format),
        lambda piece: torch.empty_like(piece, memory_format=torch.contiguous_format).copy_(piece),
        lambda piece: piece.contiguous().clone(),
    ],
)
def test_save_small_solutions(solution):
    assert_correct("ch7.save_small", solution)


def test_save_small_rejects_the_slice_itself():
    feedback = assert_wrong("ch7.save_small", lambda piece: piece)
    assert "whole" in feedback.message


def test_save_small_rejects_contiguous_with_its_own_hint():
    feedback = assert_wrong("ch7.save_small", lambda piece: piece.contiguous())
    assert "contiguous() returns the tensor itself" in feedback.hint


@pytest.mark.parametrize(
    "wrong_answer",
    [
        lambda piece: piece.detach(),  # a view: same storage
        lambda piece: piece.view(-1) if piece.is_contiguous() else piece.clone(),  # a view for contiguous slices
        lambda piece: piece.clone()[:1],  # wrong shape
        lambda piece: piece.to(torch.float16),  # wrong dtype
        lambda piece: piece.clone() + 1,  # wrong values
        lambda piece: piece.tolist(),  # not a tensor
        lambda piece: piece.mul_(1).clone(),  # writes into its input
    ],
)
def test_save_small_rejects_other_mistakes(wrong_answer):
    assert_wrong("ch7.save_small", wrong_answer)


def test_save_small_tells_a_deep_copy_that_it_duplicated_the_whole_storage():
    # fact-check 04-07 F16: the hint said "the tensor you save still uses the big tensor's storage" and blamed
    # contiguous(), but copy.deepcopy of a view copies the whole storage into a new one.
    import copy

    feedback = assert_wrong("ch7.save_small", copy.deepcopy)
    assert "duplicated the whole" in feedback.message and "deepcopy" in feedback.message
    assert "piece.clone()" in feedback.hint
    assert "still uses the big tensor's storage" not in feedback.hint and "contiguous()" not in feedback.hint


def test_save_small_keeps_the_shared_storage_hint_for_a_view():
    feedback = assert_wrong("ch7.save_small", lambda piece: piece.detach())
    assert "still uses the big tensor's storage" in feedback.hint and "duplicated" not in feedback.message


def test_save_small_rejects_a_non_function():
    assert_wrong("ch7.save_small", torch.zeros(3))


# --- ch7.module_to ------------------------------------------------------------------------------------------


class BufferNormalizer(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)

    def forward(self, x):
        return (x - self.mean) / self.std


class NonPersistentNormalizer(BufferNormalizer):
    def __init__(self, mean, std):
        nn.Module.__init__(self)
        self.register_buffer("mean", mean, persistent=False)
        self.register_buffer("std", std, persistent=False)


class HalfPersistentNormalizer(BufferNormalizer):
    def __init__(self, mean, std):
        nn.Module.__init__(self)
        self.register_buffer("mean", mean)
        self.register_buffer("std", std, persistent=False)


class BufferObjectNormalizer(BufferNormalizer):
    """An unusual right answer: nn.Buffer (torch 2.5 and later) assigned as an attribute registers a buffer."""

    def __init__(self, mean, std):
        nn.Module.__init__(self)
        self.mean = nn.Buffer(mean)
        self.std = nn.Buffer(std)


class RegisterNoneThenAssignNormalizer(BufferNormalizer):
    """An unusual right answer: a tensor assigned to a name registered as a buffer (even as None) goes into _buffers."""

    def __init__(self, mean, std):
        nn.Module.__init__(self)
        self.register_buffer("mean", None)
        self.register_buffer("std", None)
        self.mean = mean.clone()
        self.std = std.clone()


class PlainNormalizer(BufferNormalizer):
    """The bug of the notebook: plain tensor attributes."""

    def __init__(self, mean, std):
        nn.Module.__init__(self)
        self.mean = mean
        self.std = std


class HalfFixedNormalizer(BufferNormalizer):
    def __init__(self, mean, std):
        nn.Module.__init__(self)
        self.register_buffer("mean", mean)
        self.std = std


class ParameterNormalizer(BufferNormalizer):
    def __init__(self, mean, std):
        nn.Module.__init__(self)
        self.mean = nn.Parameter(mean)
        self.std = nn.Parameter(std)


class FrozenParameterNormalizer(BufferNormalizer):
    def __init__(self, mean, std):
        nn.Module.__init__(self)
        self.mean = nn.Parameter(mean, requires_grad=False)
        self.std = nn.Parameter(std, requires_grad=False)


class FloatNormalizer(BufferNormalizer):
    def __init__(self, mean, std):
        nn.Module.__init__(self)
        self.mean = mean.tolist()
        self.std = std.tolist()


class WrongForwardNormalizer(BufferNormalizer):
    def forward(self, x):
        return (x - self.mean) * self.std


class ToOverridingNormalizer(PlainNormalizer):
    def to(self, *args, **kwargs):
        return PlainNormalizer(self.mean.to(*args, **kwargs), self.std.to(*args, **kwargs))


@pytest.mark.parametrize("solution", [BufferNormalizer, BufferObjectNormalizer, RegisterNoneThenAssignNormalizer])
def test_module_to_solutions(solution):
    assert_correct("ch7.module_to", solution)


@pytest.mark.parametrize("answer", [NonPersistentNormalizer, HalfPersistentNormalizer])
def test_module_to_rejects_buffers_left_out_of_the_state_dict(answer):
    # The exercise asks for statistics saved in state_dict(); persistent=False buffers move with .to() but are not
    # saved.
    assert NonPersistentNormalizer(torch.zeros(3), torch.ones(3)).state_dict() == {}
    feedback = assert_wrong("ch7.module_to", answer)
    assert "state_dict()" in feedback.message and "persistent" in feedback.hint


def test_module_to_rejects_only_the_missing_buffer():
    assert assert_wrong("ch7.module_to", HalfPersistentNormalizer).message.startswith("std moved")


def test_module_to_rejects_plain_attributes_with_buffer_hint():
    for answer in (PlainNormalizer, HalfFixedNormalizer):
        feedback = assert_wrong("ch7.module_to", answer)
        assert "register_buffer" in feedback.hint


def test_module_to_rejects_parameters():
    for answer in (ParameterNormalizer, FrozenParameterNormalizer):
        assert "buffer" in assert_wrong("ch7.module_to", answer).hint


@pytest.mark.parametrize("wrong_answer", [FloatNormalizer, WrongForwardNormalizer, ToOverridingNormalizer])
def test_module_to_rejects_other_mistakes(wrong_answer):
    assert_wrong("ch7.module_to", wrong_answer)


def test_module_to_rejects_an_instance_and_a_non_class():
    assert "class" in assert_wrong("ch7.module_to", BufferNormalizer(torch.zeros(3), torch.ones(3))).hint
    assert_wrong("ch7.module_to", lambda mean, std: BufferNormalizer(mean, std))


# --- ch7.predict_same_object --------------------------------------------------------------------------------


def test_same_object_truth_is_what_the_notebook_teaches():
    assert same_object_truth() == (True, False, True, False, True, False, True)


def test_predict_same_object_correct():
    assert_correct("ch7.predict_same_object", [True, False, True, False, True, False, True])
    assert_correct("ch7.predict_same_object", (True, False, True, False, True, False, True))  # a tuple
    assert_correct("ch7.predict_same_object", dict(zip(SAME_OBJECT_CALLS, same_object_truth())))


@pytest.mark.parametrize(
    "answer, word",
    [
        ([False] * 7, "returns x itself"),  # ".to() always copies"
        ([True] * 7, "copy=True"),  # ".to() never copies"
        ([True, True, True, False, True, True, True], "dtype needs new memory"),
        ([True, False, True, True, True, False, True], "copy=True"),
        ([True, False, True, False, True, False, False], "non_blocking"),
    ],
)
def test_predict_same_object_wrong(answer, word):
    assert word in assert_wrong("ch7.predict_same_object", answer).hint


@pytest.mark.parametrize("answer", [[True, False], "True, False", [1, 0, 1, 0, 1, 0, 1]])
def test_predict_same_object_wrong_format(answer):
    assert_wrong("ch7.predict_same_object", answer)


# --- ch7.load_without_copy ---------------------------------------------------------------------------------


def load_linear_reference(path, in_features, out_features):
    with torch.device("meta"):
        model = nn.Linear(in_features, out_features)
    model.load_state_dict(torch.load(path, mmap=True), assign=True)
    return model


def load_linear_device_argument(path, in_features, out_features):
    # unusual right: device="meta" instead of the with block, and explicit weights_only/map_location
    model = nn.Linear(in_features, out_features, device="meta")
    model.load_state_dict(torch.load(path, mmap=True, weights_only=True, map_location="cpu"), assign=True)
    return model


def load_linear_by_hand(path, in_features, out_features):
    # unusual right: no load_state_dict at all, the mapped tensors wrapped in Parameters by hand
    with torch.device("meta"):
        model = nn.Linear(in_features, out_features)
    state = torch.load(path, mmap=True)
    model.weight = nn.Parameter(state["weight"])
    model.bias = nn.Parameter(state["bias"])
    return model


def load_linear_plainly(path, in_features, out_features):
    model = nn.Linear(in_features, out_features)  # random initialisation runs
    model.load_state_dict(torch.load(path))  # then copy_
    return model


def load_linear_meta_without_assign(path, in_features, out_features):
    with torch.device("meta"):
        model = nn.Linear(in_features, out_features)
    model.load_state_dict(torch.load(path, mmap=True))  # a no-op on meta parameters (with a warning)
    return model


def load_linear_without_mmap(path, in_features, out_features):
    with torch.device("meta"):
        model = nn.Linear(in_features, out_features)
    model.load_state_dict(torch.load(path), assign=True)  # the file read into RAM
    return model


def load_linear_mmap_into_cpu_model(path, in_features, out_features):
    model = nn.Linear(in_features, out_features)
    model.load_state_dict(torch.load(path, mmap=True))
    return model


def load_linear_skip_init(path, in_features, out_features):
    model = nn.utils.skip_init(nn.Linear, in_features, out_features)  # no random numbers, but memory, then copy_
    model.load_state_dict(torch.load(path, mmap=True))
    return model


def load_linear_cloned(path, in_features, out_features):
    with torch.device("meta"):
        model = nn.Linear(in_features, out_features)
    model.load_state_dict({name: tensor.clone() for name, tensor in torch.load(path, mmap=True).items()}, assign=True)
    return model


def load_linear_frozen(path, in_features, out_features):
    model = load_linear_reference(path, in_features, out_features)
    return model.requires_grad_(False)


def load_linear_returns_the_dict(path, in_features, out_features):
    return torch.load(path, mmap=True)


#: Whether a tensor's memory is mapped from the file can be read only from Linux's /proc/self/maps.
NEEDS_PROC_MAPS = pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux's /proc/self/maps")


@pytest.mark.parametrize("solution", [load_linear_reference, load_linear_device_argument, load_linear_by_hand])
def test_load_without_copy_solutions(solution):
    assert_correct("ch7.load_without_copy", solution)


@pytest.mark.filterwarnings("ignore:for .*copying from a non-meta parameter")
@pytest.mark.parametrize(
    "answer, words",
    [
        (load_linear_plainly, 'torch.device("meta")'),
        (load_linear_meta_without_assign, "assign=True"),
        pytest.param(load_linear_without_mmap, "mmap=True", marks=NEEDS_PROC_MAPS),
        (load_linear_mmap_into_cpu_model, "meta device"),
        (load_linear_skip_init, "assign=True"),
        (load_linear_cloned, "mmap=True"),  # clone() is seen as an aten op: no memory map needed
        (load_linear_frozen, "requires_grad"),
        (load_linear_returns_the_dict, "return the nn.Linear"),
    ],
)
def test_load_without_copy_rejects(answer, words):
    assert words in assert_wrong("ch7.load_without_copy", answer).hint


def test_load_without_copy_rejects_a_class():
    assert_wrong("ch7.load_without_copy", nn.Linear)


# --- the chapter's independent review: more wrong answers and unusual right ones ---------------------------


@pytest.mark.parametrize(
    "solution",
    [
        lambda piece: torch.from_numpy(piece.numpy().copy()),  # a NumPy copy wrapped back: its own storage
        lambda piece: piece.to(piece.dtype, copy=True),
        lambda piece: piece.clone()[:],  # a view, but of a storage exactly as big as the slice
    ],
)
def test_save_small_unusual_solutions(solution):
    assert_correct("ch7.save_small", solution)


@pytest.mark.parametrize(
    "wrong_answer",
    [
        lambda piece: torch.tensor(piece.tolist()),  # a copy, but float32 for the float64 row
        lambda piece: piece[:],  # a view
        lambda piece: piece.flatten(),  # returns a 1-d tensor itself
        lambda piece: torch.cat([piece, piece])[: piece.numel()],  # a storage twice as big as needed
        lambda piece: piece.numpy().copy(),  # not a tensor
    ],
)
def test_save_small_rejects_more_mistakes(wrong_answer):
    assert_wrong("ch7.save_small", wrong_answer)


class AlreadyFloat64Normalizer(BufferNormalizer):
    """Buffers, but converted by hand in __init__: .to(torch.float64) then has nothing to convert."""

    def __init__(self, mean, std):
        nn.Module.__init__(self)
        self.register_buffer("mean", mean.double())
        self.register_buffer("std", std.double())


class NonPersistentBufferObjectNormalizer(BufferNormalizer):
    def __init__(self, mean, std):
        nn.Module.__init__(self)
        self.mean = nn.Buffer(mean, persistent=False)
        self.std = nn.Buffer(std, persistent=False)


class ToInPlaceNormalizer(PlainNormalizer):
    """Overrides .to() to convert the plain attributes and return itself: converted, but not saved."""

    def to(self, *args, **kwargs):
        super().to(*args, **kwargs)
        self.mean, self.std = self.mean.to(*args, **kwargs), self.std.to(*args, **kwargs)
        return self


class ApplyOverridingNormalizer(PlainNormalizer):
    """Overrides Module._apply (what .to(), .cuda(), .double() call): converted, but not saved."""

    def _apply(self, fn, recurse=True):
        super()._apply(fn, recurse)
        self.mean, self.std = fn(self.mean), fn(self.std)
        return self


class NoArgumentsNormalizer(nn.Module):
    def __init__(self):
        super().__init__()


@pytest.mark.parametrize(
    "wrong_answer",
    [
        AlreadyFloat64Normalizer,
        NonPersistentBufferObjectNormalizer,
        ToInPlaceNormalizer,
        ApplyOverridingNormalizer,
        NoArgumentsNormalizer,
    ],
)
def test_module_to_rejects_more_mistakes(wrong_answer):
    assert_wrong("ch7.module_to", wrong_answer)


def test_module_to_explains_a_dtype_fixed_in_init():
    assert "store mean as it is given" in assert_wrong("ch7.module_to", AlreadyFloat64Normalizer).hint


@pytest.mark.parametrize(
    "answer",
    [
        [True, False, True, False, False, False, True],  # "passing a tensor copies"
        [True, False, False, False, True, False, False],  # "a device string always copies"
        [bool(value) for value in torch.tensor(same_object_truth()).logical_not()],  # every answer flipped
    ],
)
def test_predict_same_object_rejects_more_mistakes(answer):
    assert_wrong("ch7.predict_same_object", answer)


def test_predict_same_object_rejects_numpy_bools_as_a_format_error():
    import numpy as np

    assert "True/False" in assert_wrong("ch7.predict_same_object", [np.bool_(v) for v in same_object_truth()]).message


def load_linear_cpu_then_assign(path, in_features, out_features):
    model = nn.Linear(in_features, out_features)  # random initialisation runs, then is thrown away
    model.load_state_dict(torch.load(path, mmap=True), assign=True)
    return model


def load_linear_skip_init_then_assign(path, in_features, out_features):
    # no random numbers and no copy, but the parameters get memory of their own (empty_like) for nothing
    model = nn.utils.skip_init(nn.Linear, in_features, out_features)
    model.load_state_dict(torch.load(path, mmap=True), assign=True)
    return model


def load_linear_to_empty(path, in_features, out_features):
    with torch.device("meta"):
        model = nn.Linear(in_features, out_features)
    model.to_empty(device="cpu")  # memory for the parameters, then copy_ into it
    model.load_state_dict(torch.load(path, mmap=True))
    return model


def load_linear_all_meta(path, in_features, out_features):
    with torch.device("meta"):
        model = nn.Linear(in_features, out_features)
    model.load_state_dict(torch.load(path, mmap=True, map_location="meta"), assign=True)  # shapes only
    return model


def load_linear_then_double(path, in_features, out_features):
    return load_linear_reference(path, in_features, out_features).double()  # a converted copy


def load_linear_not_strict(path, in_features, out_features):
    # unusual right: strict=False and weights_only=False change nothing for a complete, plain checkpoint
    with torch.device("meta"):
        model = nn.Linear(in_features, out_features)
    model.load_state_dict(torch.load(path, mmap=True, weights_only=False), assign=True, strict=False)
    return model


def test_load_without_copy_unusual_solution():
    assert_correct("ch7.load_without_copy", load_linear_not_strict)


@pytest.mark.filterwarnings("ignore:for .*copying from a non-meta parameter")
@pytest.mark.parametrize(
    "answer, words",
    [
        (load_linear_cpu_then_assign, "meta device"),
        (load_linear_skip_init_then_assign, "meta device"),
        (load_linear_to_empty, "assign=True"),
        (load_linear_all_meta, "assign=True"),
        (load_linear_then_double, "mmap=True"),  # aten::_to_copy: caught without reading the memory map
    ],
)
def test_load_without_copy_rejects_more(answer, words):
    assert words in assert_wrong("ch7.load_without_copy", answer).hint


def test_load_without_copy_names_the_wasted_allocation():
    feedback = assert_wrong("ch7.load_without_copy", load_linear_skip_init_then_assign)
    assert "aten::empty_like" in feedback.message and "skip_init" in feedback.message


def test_module_to_a_frozen_parameter_is_wrong_for_the_true_reason():
    feedback = assert_wrong("ch7.module_to", FrozenParameterNormalizer)
    assert "requires_grad=False keeps an optimizer from moving it" in feedback.message
    assert "would train it" not in feedback.message
    assert "requires_grad=False" not in assert_wrong("ch7.module_to", ParameterNormalizer).message


# --- the core chapter's quick predictions: what torch computes is what the chapter says ------------------------


def test_quick_predictions_compute_what_the_chapter_teaches():
    assert same_or_new() == ("same", "new", "new")
    assert dtypes_after_module_to() == ("float64", "float64", "float32")
    assert child_write_reaches_parent() == "changed"
    assert loaded_pair_after_a_write() == ("changed", "unchanged")


@pytest.mark.parametrize(
    "exercise_id, answer, words",
    [
        ("ch7.q_same_object", ("new", "new", "new"), "nothing is allocated"),
        ("ch7.q_same_object", ("same", "new", "same"), "copy=True forces"),
        ("ch7.q_plain_attribute", ("float64", "float64", "float64"), "plain attribute"),
        ("ch7.q_child_write", "unchanged", "shared memory"),
        ("ch7.q_saved_together", ("unchanged", "unchanged"), "come back over one storage"),
        ("ch7.q_saved_together", ("changed", "changed"), "new memory"),
    ],
)
def test_quick_predictions_name_the_mistake(exercise_id, answer, words):
    assert words in assert_wrong(exercise_id, answer).message


def test_quick_prediction_of_entries_names_the_one_that_is_off():
    feedback = assert_wrong("ch7.q_plain_attribute", ("float32", "float64", "float32"))
    assert "entry 1" in feedback.message


# --- the chapter's text: claims the fact-checks broke must not come back -------------------------------------------

CHAPTER_7_NOTEBOOKS = [
    "notebooks/07_move_tensors_across_devices_processes_and_files.ipynb",
    "notebooks/deep_dives/when_does_to_return_the_same_tensor.ipynb",
    "notebooks/deep_dives/what_happens_when_a_tensor_moves_to_a_gpu.ipynb",
    "notebooks/deep_dives/what_does_module_to_convert.ipynb",
    "notebooks/deep_dives/what_happens_to_a_tensor_sent_to_another_process.ipynb",
    "notebooks/deep_dives/did_both_hogwild_workers_write_into_one_model.ipynb",
    "notebooks/deep_dives/do_data_parallel_replicas_share_their_parameters.ipynb",
    "notebooks/deep_dives/what_does_torch_save_write.ipynb",
    "notebooks/deep_dives/what_does_torch_load_give_back.ipynb",
]


def chapter_7_prose() -> str:
    """The markdown of chapter 7 and its deep dives, lower case, every run of white space made one space."""
    import nbformat
    from scripts import ROOT

    text = " ".join(
        cell.source
        for path in CHAPTER_7_NOTEBOOKS
        for cell in nbformat.read(ROOT / path, as_version=4).cells
        if cell.cell_type == "markdown"
    )
    return " ".join(text.lower().split())


@pytest.mark.parametrize(
    "finding, old_claim",
    [
        ("04-07 F3: a mapping reports itself to the profiler", "counts what pytorch's cpu allocator hands out"),
        ("04-07 F8: torch.normal ignores the meta device", "every tensor that a factory function"),
        (
            "04-07 F17: assign=True overwrites a parameter's requires_grad",
            "a `parameter` in the dictionary goes in as it is",
        ),
        ("rules-0107 B2: composites do not reach a dispatch mode", "records every low-level (aten) operation"),
        ("rules-0107 B2: composites do not reach a dispatch mode", "nothing ran, nothing was allocated"),
        ("rules-0107 B2: composites do not reach a dispatch mode", "for every aten operation run inside its"),
        ("rules-0107 B3: .cpu() and .float() refuse non_blocking", "`non_blocking=true` is accepted everywhere"),
        ("rules-0107 B4: channels_last copies an already channels-last tensor", "only when something must change"),
        ("rules-0107 B4: channels_last copies an already channels-last tensor", "or the memory layout changes"),
        ("rules-0107 B5: addcmul refuses a 0-dim cpu tensor", "the exemption belongs to elementwise operations"),
        ("rules-0107 B6: ctx marks change what a function returns", "whose `forward` returns one of its inputs gives"),
        ("rules-0107 B10: a tensor on gpu 1 records 'cuda:1'", "a file saved from gpu tensors records"),
    ],
)
def test_a_broken_claim_does_not_come_back(finding, old_claim):
    assert old_claim not in chapter_7_prose(), finding


@pytest.mark.parametrize(
    "finding, fixed_claim",
    [
        ("04-07 F3", "the profiler records a file mapping at its full size when the mapping is made"),
        ("04-07 F8", "`torch.normal(mean, std, size=...)`, which the device context does not intercept"),
        ("04-07 F17", "a `parameter` in the dictionary goes in as the same object, but its `requires_grad` is set"),
        ("rules-0107 B3", "the shorthands `.cpu()`, `.float()` and `.double()` do not take it"),
        ("rules-0107 B4", "return their input when the dtype and device already match and you ask for nothing else"),
    ],
)
def test_the_fixed_claim_is_in_place(finding, fixed_claim):
    assert fixed_claim in chapter_7_prose(), finding


def test_the_fixed_claims_hold_on_this_torch():
    """What the fixed sentences say, asked of torch itself (the notebooks' stored outputs show the same)."""
    x = torch.arange(6.0)
    with pytest.raises(TypeError, match="non_blocking"):  # B3
        x.cpu(non_blocking=True)
    assert x.to("cpu", non_blocking=True) is x
    grey = torch.zeros(8, 1, 28, 28)  # B4: already channels-last contiguous, and still copied
    assert grey.is_contiguous(memory_format=torch.channels_last)
    assert grey.to(memory_format=torch.channels_last) is not grey
    assert x.to(torch.float32) is x
    with torch.device("meta"):  # F8
        assert torch.zeros(3).device.type == "meta"
        assert torch.normal(0.0, 1.0, size=(3,)).device.type == "cpu"
    model = nn.Linear(2, 1)  # F17: the same Parameter object, its requires_grad overwritten
    frozen = nn.Parameter(torch.ones(1, 2), requires_grad=False)
    model.load_state_dict({"weight": frozen, "bias": torch.zeros(1)}, assign=True)
    assert model.weight is frozen and frozen.requires_grad
