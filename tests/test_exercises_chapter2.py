"""Chapter 2 checkers: reference solutions pass, typical wrong answers get a hint.

The stubs and the registration of every exercise are tested once, in test_exercises.py.
"""

import numpy as np
import pytest
import torch
from exercise_asserts import assert_correct, assert_wrong

import tutorial_lib as tl
from tutorial_lib.exercises.chapter2 import PREDICT_EXPRESSIONS, predict_truth

# --- ch2.make_view ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "solution",
    [
        lambda x: x[:, ::2],
        lambda x: x[:, 0::2],
        lambda x: x[..., ::2],
        lambda x: x.t()[::2].t(),
        lambda x: x.as_strided((x.shape[0], (x.shape[1] + 1) // 2), (x.stride(0), 2 * x.stride(1)), x.storage_offset()),
        lambda x: x.unfold(1, 1, 2).squeeze(-1),  # windows of width 1, every 2nd column
        lambda x: x.detach()[:, ::2],
    ],
)
def test_make_view_solutions(solution):
    assert_correct("ch2.make_view", solution)


def test_make_view_rejects_the_original_advanced_indexing():
    feedback = assert_wrong("ch2.make_view", lambda x: x[:, torch.arange(0, x.shape[1], 2)])
    assert "copy" in feedback.message
    assert "start:stop:step" in feedback.hint


@pytest.mark.parametrize(
    "copying",
    [
        lambda x: x[:, list(range(0, x.shape[1], 2))],
        lambda x: x.index_select(1, torch.arange(0, x.shape[1], 2)),
        lambda x: x[:, ::2].clone(),
        lambda x: x[:, ::2].contiguous(),
        lambda x: torch.stack([x[:, i] for i in range(0, x.shape[1], 2)], dim=1),
        lambda x: x[:, ::2].flatten().view(x.shape[0], -1),
    ],
)
def test_make_view_rejects_copies(copying):
    assert "shares no memory" in assert_wrong("ch2.make_view", copying).message


@pytest.mark.parametrize("off", [lambda x: x[:, 1::2], lambda x: x[::2], lambda x: x[:, ::3], lambda x: x])
def test_make_view_rejects_wrong_selection(off):
    assert "dimension 1" in assert_wrong("ch2.make_view", off).hint


def test_make_view_rejects_writing_into_x():
    def writes(x):
        x.mul_(1).add_(1)
        return x[:, ::2]

    assert "changed its input" in assert_wrong("ch2.make_view", writes).message


# --- issue 19: the NumPy bridge is not a view of x; each copy is diagnosed by the op that made it -----------------


@pytest.mark.parametrize(
    "bridge",
    [
        lambda x: torch.from_numpy(x.numpy()[:, ::2]),
        lambda x: torch.as_tensor(x.numpy())[:, ::2],
        lambda x: torch.from_numpy(x.numpy())[:, ::2],
    ],
)
def test_make_view_rejects_a_numpy_bridge(bridge):
    # x's bytes under a storage object of its own, with its own version counter: the old checker accepted it
    # because its matrices all started at offset 0, where same_storage compares equal addresses.
    feedback = assert_wrong("ch2.make_view", bridge)
    assert "through a storage of its own" in feedback.message
    assert "slice x itself" in feedback.hint


def test_a_numpy_bridge_has_its_own_version_counter():
    """Why the bridge is not a view: a write through it does not move x's version counter."""
    x = torch.arange(12.0).reshape(3, 4)
    bridge = torch.from_numpy(x.numpy()[:, ::2])
    assert tl.shares_memory(bridge, x)
    bridge.add_(1)
    assert x._version == 0 and x[0, 0] == 1.0


def test_make_view_tries_a_matrix_that_starts_at_an_offset():
    from tutorial_lib.exercises.chapter2 import _make_view_inputs

    assert any(x.storage_offset() > 0 for _, x in _make_view_inputs())


@pytest.mark.parametrize("copying", [lambda x: x[:, ::2].contiguous(), lambda x: x[:, ::2].clone()])
def test_make_view_names_contiguous_and_clone_not_lists(copying):
    # The old hint spoke of lists of indices to a learner who had called contiguous().
    feedback = assert_wrong("ch2.make_view", copying)
    assert "contiguous()" in feedback.hint and "clone()" in feedback.hint
    assert "list" not in feedback.hint


@pytest.mark.parametrize(
    "copying, cause",
    [
        (lambda x: x[:, list(range(0, x.shape[1], 2))], "a list of integers"),
        (lambda x: x[:, torch.arange(0, x.shape[1], 2)], "a list of integers"),
        (lambda x: x.index_select(1, torch.arange(0, x.shape[1], 2)), "index_select"),
        (lambda x: torch.stack([x[:, i] for i in range(0, x.shape[1], 2)], dim=1), "stack and cat"),
        (lambda x: torch.cat(x.split(1, dim=1)[::2], dim=1), "stack and cat"),
        (lambda x: x[:, ::2].flatten().view(x.shape[0], -1), "reshape, flatten"),
        (lambda x: torch.tensor(x.numpy()[:, ::2]), "torch.tensor"),
    ],
)
def test_make_view_names_the_op_that_copied(copying, cause):
    feedback = assert_wrong("ch2.make_view", copying)
    assert cause in feedback.hint
    assert "start:stop:step" in feedback.hint


def test_make_view_hint_does_not_call_every_list_advanced_indexing():
    # Fact-check 00-03 #3: a short list holding 0-dim tensors is unpacked as a tuple of indices, not advanced
    # indexing. The hint names lists of integers only.
    feedback = assert_wrong("ch2.make_view", lambda x: x[:, list(range(0, x.shape[1], 2))])
    assert "any list" not in feedback.hint.lower() and "a list of indices" not in feedback.hint


def test_make_view_rejects_non_tensor_and_non_function():
    assert_wrong("ch2.make_view", lambda x: x[:, ::2].tolist())
    assert_wrong("ch2.make_view", "x[:, ::2]")


def test_make_view_learner_error_is_feedback():
    feedback = tl.check("ch2.make_view", lambda x: x.view(-1, 2)[:, 0])
    assert feedback.status == "wrong"


# --- ch2.predict_view_or_copy -------------------------------------------------------------------------------

SOLUTION = ["view", "copy", "copy", "view", "copy", "view", "copy", "view", "copy", "copy", "same tensor", "view"]


def test_truth_matches_the_written_solution():
    # The notebook's collapsed solution lists SOLUTION; it must be what torch really does.
    assert predict_truth() == SOLUTION
    assert len(PREDICT_EXPRESSIONS) == len(SOLUTION)


def plain_torch_verdict(expression):
    """The verdict from plain torch alone (not view_or_copy): identity, storage pointer, and a write that shows."""
    x = torch.arange(12.0).reshape(3, 4)
    result = eval(expression, {"torch": torch}, {"x": x})
    if result is x:
        return "same tensor"
    same_storage = result.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    before = x.clone()
    result.fill_(-1.0)
    wrote_through = not torch.equal(x, before)
    assert same_storage == wrote_through, expression
    return "view" if wrote_through else "copy"


@pytest.mark.parametrize("expression, expected", list(zip(PREDICT_EXPRESSIONS, SOLUTION)))
def test_solution_matches_plain_torch(expression, expected):
    # view_or_copy has known wrong verdicts on odd inputs; these twelve are checked without it.
    assert plain_torch_verdict(expression) == expected


def test_predict_solution_as_list_tuple_and_dict():
    assert_correct("ch2.predict_view_or_copy", SOLUTION)
    assert_correct("ch2.predict_view_or_copy", tuple(word.upper() for word in SOLUTION))
    assert_correct("ch2.predict_view_or_copy", dict(zip(PREDICT_EXPRESSIONS, SOLUTION)))


@pytest.mark.parametrize("spelling", ["same_tensor", "  Same-Tensor ", "SAME  TENSOR"])
def test_predict_accepts_same_tensor_spellings(spelling):
    answer = [f" {word.title()} " for word in SOLUTION]
    answer[10] = spelling
    assert_correct("ch2.predict_view_or_copy", answer)


def test_predict_same_tensor_is_a_verdict_not_a_format_error():
    # "same tensor" where the truth is "copy": a wrong prediction with its hint, not "the answer should be a list".
    believed = list(SOLUTION)
    believed[6] = "same tensor"  # x.t().contiguous()
    feedback = assert_wrong("ch2.predict_view_or_copy", believed)
    assert "11 of 12" in feedback.message and "#7" in feedback.message
    assert "contiguous" in feedback.hint


def test_predict_seed_article_beliefs_are_wrong():
    # One seed article lists index_select (and masked_select, gather) among the memory-sharing operations.
    believed = list(SOLUTION)
    believed[4] = "view"
    feedback = assert_wrong("ch2.predict_view_or_copy", believed)
    assert "11 of 12" in feedback.message
    assert "index_select" in feedback.hint


def test_predict_reshape_always_view_is_wrong():
    believed = list(SOLUTION)
    believed[2] = believed[9] = "view"
    feedback = assert_wrong("ch2.predict_view_or_copy", believed)
    assert "#3" in feedback.message and "#10" in feedback.message
    assert "reshape" in feedback.hint


def test_predict_any_tensor_in_brackets_copies_is_wrong():
    believed = list(SOLUTION)
    believed[11] = "copy"  # x[x[:, 0].argmax()]
    feedback = assert_wrong("ch2.predict_view_or_copy", believed)
    assert "#12" in feedback.message
    assert "0-dim integer tensor" in feedback.hint


def test_predict_contiguous_is_a_view_is_wrong():
    believed = list(SOLUTION)
    believed[10] = "view"  # x.contiguous() on contiguous x
    feedback = assert_wrong("ch2.predict_view_or_copy", believed)
    assert "#11" in feedback.message
    assert "x itself" in feedback.hint


def test_predict_all_copies_and_all_views_are_wrong():
    assert_wrong("ch2.predict_view_or_copy", ["copy"] * len(SOLUTION))
    assert_wrong("ch2.predict_view_or_copy", ["view"] * len(SOLUTION))


@pytest.mark.parametrize(
    "malformed",
    [["view"] * 11, "view copy", [True] * 12, ["views"] * 12, 3, {"x[:, 1:3]": "view"}, ["same"] * 12, SOLUTION[:10]],
)
def test_predict_malformed_answers(malformed):
    feedback = assert_wrong("ch2.predict_view_or_copy", malformed)
    assert "list of 12 words" in feedback.message
    assert "same tensor" in feedback.message


@pytest.mark.parametrize(
    "position, written, named",
    [
        (10, "same", "Entry 11 (`x.contiguous()`) is 'same', not a verdict (did you mean 'same tensor'?)"),
        (0, "views", "Entry 1 (`x[:, 1:3]`) is 'views', not a verdict."),
        (2, None, "Entry 3 (`x.t().reshape(12)`) is missing"),
        (4, True, "Entry 5 (`x.index_select(0, torch.tensor([0, 1]))`) is True"),
    ],
)
def test_predict_names_the_entry_that_is_not_a_verdict(position, written, named):
    # issue 19: "same" instead of "same tensor" got "the answer should be a list of 12 words", nothing more.
    answer = list(SOLUTION)
    answer[position] = written
    feedback = assert_wrong("ch2.predict_view_or_copy", answer)
    assert named in feedback.message


def test_predict_counts_the_other_bad_entries_and_the_length():
    assert "11 more entries are not verdicts" in assert_wrong("ch2.predict_view_or_copy", ["same"] * 12).message
    assert "has 10 entries, for 12 expressions" in assert_wrong("ch2.predict_view_or_copy", SOLUTION[:10]).message
    assert "of type int" in assert_wrong("ch2.predict_view_or_copy", 3).message


# --- quick predictions: the truths the chapter's prose quotes -----------------------------------------------------


def test_quick_prediction_truths_are_what_the_chapter_says():
    from tutorial_lib.exercises import _CHECKERS

    truths = {key: _CHECKERS[key].prediction["truth"]() for key in _CHECKERS if key.startswith("ch2.q_")}
    assert truths == {
        "ch2.q_index": ("view", "copy"),
        "ch2.q_chained": 0.0,
        "ch2.q_reshape": ("view", "copy"),
        "ch2.q_ops": ("view", "view", "copy", "copy"),
        "ch2.q_add_peak": (4000, 4000, 0),
        "ch2.q_copy": ("yes", "no"),
    }


# --- ch2.inplace_update -------------------------------------------------------------------------------------


def add_assign(y, x):
    y += x


def add_method(y, x):
    y.add_(x)


def add_out(y, x):
    torch.add(y, x, out=y)


def add_returning(y, x):
    return y.add_(x)


def add_through_numpy(y, x):
    # numpy writes into the same memory and allocates nothing torch could see; a fine answer too
    np.add(y.numpy(), x.numpy(), out=y.numpy())


def add_through_data(y, x):
    y.data += x  # .data is a new tensor object over y's memory: the write lands in y


def add_dunder(y, x):
    y.__iadd__(x)


@pytest.mark.parametrize(
    "solution", [add_assign, add_method, add_out, add_returning, add_through_numpy, add_through_data, add_dunder]
)
def test_inplace_update_solutions(solution):
    assert_correct("ch2.inplace_update", solution)


def rebinds(y, x):
    y = x + y
    return y


def slice_assign(y, x):
    y[:] = x + y


def copy_in(y, x):
    y.copy_(y + x)


def swapped(y, x):
    x.add_(y)


def new_storage(y, x):
    y.set_(y + x)


def twice(y, x):
    y.add_(x).add_(x)


def test_inplace_update_rejects_rebinding():
    feedback = assert_wrong("ch2.inplace_update", rebinds)
    assert "old values" in feedback.message
    assert "binds" in feedback.hint


@pytest.mark.parametrize("temporary", [slice_assign, copy_in])
def test_inplace_update_rejects_temporaries(temporary):
    feedback = assert_wrong("ch2.inplace_update", temporary)
    assert "4,000 bytes" in feedback.message
    assert "add_" in feedback.hint


def test_inplace_update_rejects_other_mistakes():
    assert "changed x" in assert_wrong("ch2.inplace_update", swapped).message
    assert "other memory" in assert_wrong("ch2.inplace_update", new_storage).message
    assert "other values" in assert_wrong("ch2.inplace_update", twice).message
    assert_wrong("ch2.inplace_update", "y += x")


def subtract_negative(y, x):
    y.sub_(-x)  # -x is a new tensor


def add_a_clone(y, x):
    y.add_(x.clone())


@pytest.mark.parametrize("allocating", [subtract_negative, add_a_clone])
def test_inplace_update_rejects_hidden_temporaries(allocating):
    assert "allocated" in assert_wrong("ch2.inplace_update", allocating).message


# --- added by the independent review (issue 10, section 2) ------------------------------------------------------


@pytest.mark.parametrize(
    "solution",
    [
        lambda x: x.movedim(1, 0)[::2].movedim(0, 1),
        lambda x: x.reshape(x.shape)[:, ::2],  # reshape to the same shape is a view, even of the transpose
    ],
)
def test_make_view_unusual_solutions(solution):
    assert_correct("ch2.make_view", solution)


@pytest.mark.parametrize(
    "copying",
    [
        lambda x: x.contiguous()[:, ::2],  # a view for contiguous x, a copy of the transposed input
        lambda x: torch.stack(x.unbind(1)[::2], dim=1),  # the pieces are views, stack copies them
        lambda x: torch.cat(x.split(1, dim=1)[::2], dim=1),
    ],
)
def test_make_view_rejects_copies_built_from_views(copying):
    assert "shares no memory" in assert_wrong("ch2.make_view", copying).message


def test_predict_uint8_boundary_is_in_the_hint():
    believed = list(SOLUTION)
    believed[11] = "copy"
    assert "uint8" in assert_wrong("ch2.predict_view_or_copy", believed).hint


@pytest.mark.parametrize("position, verdict", [(3, "same tensor"), (7, "copy"), (5, "copy"), (0, "same tensor")])
def test_predict_more_single_mistakes(position, verdict):
    # reshape of contiguous x believed to return x; the diagonal and expand believed to copy; a slice believed to be x
    believed = list(SOLUTION)
    believed[position] = verdict
    feedback = assert_wrong("ch2.predict_view_or_copy", believed)
    assert f"#{position + 1} " in feedback.message


def test_predict_dict_in_another_order_and_spacing():
    pairs = reversed(list(zip(PREDICT_EXPRESSIONS, SOLUTION)))
    answer = {expression: f"  {verdict.upper()}" for expression, verdict in pairs}
    assert_correct("ch2.predict_view_or_copy", answer)


def add_in_inference_mode(y, x):
    with torch.inference_mode():  # y and x are normal tensors; an in-place add on them is allowed here
        y.add_(x)


def subtract_with_alpha(y, x):
    y.sub_(x, alpha=-1)


def add_expanded(y, x):
    y.add_(x.expand_as(y))  # expand allocates nothing


def numpy_inplace(y, x):
    y_array = y.numpy()
    y_array += x.numpy()


@pytest.mark.parametrize("solution", [add_in_inference_mode, subtract_with_alpha, add_expanded, numpy_inplace])
def test_inplace_update_unusual_solutions(solution):
    assert_correct("ch2.inplace_update", solution)


def numpy_temporary(y, x):
    y.numpy()[...] = y.numpy() + x.numpy()  # the y[:] = y + x mistake, in NumPy


def numpy_temporary_back_to_torch(y, x):
    y.copy_(torch.from_numpy(y.numpy() + x.numpy()))


@pytest.mark.parametrize("allocating", [numpy_temporary, numpy_temporary_back_to_torch])
def test_inplace_update_rejects_numpy_temporaries(allocating):
    # tl.measure_memory does not see NumPy's allocations; the checker watches them with tracemalloc.
    feedback = assert_wrong("ch2.inplace_update", allocating)
    assert "NumPy memory" in feedback.message
    assert "out=" in feedback.hint


def test_inplace_update_rejects_almost_right_values():
    # allclose would have accepted this: values off by 1e-7 relative
    assert "other values" in assert_wrong("ch2.inplace_update", lambda y, x: y.add_(x, alpha=1.0000001)).message


def test_inplace_update_leaves_tracemalloc_as_it_found_it():
    import tracemalloc

    assert not tracemalloc.is_tracing()
    assert_correct("ch2.inplace_update", add_assign)
    assert not tracemalloc.is_tracing()
    tracemalloc.start()
    try:
        assert_correct("ch2.inplace_update", add_assign)  # the learner's own tracing is left running
        assert tracemalloc.is_tracing()
    finally:
        tracemalloc.stop()


# --- issue 13: work the CPU allocator's events of the calling thread cannot show ---------------------------------

_POOL = __import__("concurrent.futures").futures.ThreadPoolExecutor(1)
_POOL.submit(lambda: None).result()  # its thread exists before any measurement


def temporary_in_a_new_thread(y, x):
    import threading

    worker = threading.Thread(target=lambda: y.copy_(y + x))  # the y + x temporary is made in the thread
    worker.start()
    worker.join()


def temporary_in_a_pool_made_in_the_call(y, x):
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        y.copy_(pool.submit(torch.add, y, x).result())


def temporary_in_a_pool_made_before(y, x):
    y.copy_(_POOL.submit(torch.add, y, x).result())  # the temporary comes from a thread that already existed


@pytest.mark.parametrize(
    "allocating, word",
    [
        (temporary_in_a_new_thread, "thread"),
        (temporary_in_a_pool_made_in_the_call, "thread"),
        (temporary_in_a_pool_made_before, "thread that existed before"),
    ],
)
def test_inplace_update_rejects_temporaries_made_in_other_threads(allocating, word):
    feedback = assert_wrong("ch2.inplace_update", allocating)
    # For the pool made before the call, measure_memory itself sees the temporary when y.copy_ reads it (its
    # unseen line), or tracemalloc's second run sees the pool thread's Python-side allocations first and rejects
    # the answer as a temporary of y's size; each reason is a true rejection.
    assert word in feedback.message or (
        allocating is temporary_in_a_pool_made_before
        and any(
            reason in feedback.message
            for reason in ("a temporary the size of y + x", "thread pool made before the block")
        )
    )


def test_a_temporary_from_another_thread_is_counted_from_its_first_use():
    """A pool thread's temporary is not in the calling thread's allocator events: measure_memory counts it from
    the op that reads it, and says so (it read as zero bytes, with nothing unseen, before issue 20)."""
    y, x = torch.ones(1000), torch.arange(1000.0)
    with tl.measure_memory() as memory:
        temporary_in_a_pool_made_before(y, x)
    assert (memory.allocated, memory.peak) == (0, 4000)
    assert len(memory.unseen) == 1 and memory.unseen[0].startswith("4,000 B (3.91 KiB) that the block's thread")


def test_inplace_update_names_a_y_plus_x_temporary_only_when_one_that_big_was_allocated():
    small = assert_wrong("ch2.inplace_update", lambda y, x: y.addcmul_(x, torch.ones(())))  # a 0-dim one: 4 bytes
    assert "allocated 4 bytes" in small.message and "size of y + x" not in small.message
    big = assert_wrong("ch2.inplace_update", lambda y, x: y.copy_(y + x))
    assert "(a temporary the size of y + x)" in big.message


# --- the chapter's text: claims the fact-checks broke must not come back -------------------------------------------

CHAPTER_2_NOTEBOOKS = [
    "notebooks/02_tell_views_from_copies.ipynb",
    "notebooks/deep_dives/which_operations_return_views_and_which_copy.ipynb",
    "notebooks/deep_dives/which_indexes_give_a_view_and_which_a_copy.ipynb",
    "notebooks/deep_dives/when_does_y_plus_equals_x_allocate_or_raise.ipynb",
    "notebooks/deep_dives/which_numpy_conversions_share_memory.ipynb",
    "notebooks/deep_dives/what_do_copy_copy_and_copy_deepcopy_share.ipynb",
]


def chapter_2_text(kind):
    import nbformat
    from scripts import ROOT

    return "\n".join(
        cell.source
        for path in CHAPTER_2_NOTEBOOKS
        for cell in nbformat.read(ROOT / path, as_version=4).cells
        if cell.cell_type == kind
    )


@pytest.mark.parametrize(
    "old_claim",
    [
        "any list of indices",  # fact-check 00-03 #3: a short list holding 0-dim tensors is read as a tuple
        "lists of indices",
        "a 1-element list is still advanced indexing",
        "does what it takes short of changing the dtype",  # #13: sparse and meta tensors raise too
        "the same memory exactly is fine:",  # 00-03 #5: true for +=, but the index ops refuse exact overlap
        # the rule hunt of issue 19 (rules-0204):
        "ask `tl.shares_memory` which one you have",  # #18: an empty slice is a view that shares no byte
        "lists of integers, tensors of indices and masks copy",  # #12: a 0-dim integer index tensor views
        "`x[:, ::2].contiguous()` and `.clone()` copy too",  # #13: a one-column slice is contiguous already
        "refuse any overlap, exact overlap included",  # #5: two views with gaps get through
        "stop pytorch checks `y` against `x` only when both are dense",  # #5: a general rule; it is +='s
        "a tensor that requires gradients refuses `.numpy()`",  # #6: only while gradient recording is on
        "it raises for a tensor that requires gradients,",  # #6
        "keeps the sharing *among* them",  # #16: two from_numpy storages over one buffer come out apart
        "refuses work done in another thread",  # #3: a pool made before the call got through
        "only reading with a list or a mask copies",  # final hunt: reading with an index tensor copies too
    ],
)
def test_a_broken_claim_does_not_come_back(old_claim):
    assert old_claim not in " ".join(chapter_2_text("markdown").lower().split())


def test_no_view_or_copy_verdict_is_shown_for_copy_copy():
    # Fact-check 00-03 #4: tl.view_or_copy calls copy.copy(x) a view; the chapter must not rely on that verdict.
    import re

    code = chapter_2_text("code")
    for call in re.findall(r"tl\.(?:op_table|view_or_copy)\((.*?)\)\n", code, re.DOTALL):
        assert "copy.copy" not in call


# --- the rule hunt of issue 19 (rules-0204) about chapter 2's checkers ---------------------------------------------


def update_in_a_pool_made_before(y, x):
    _POOL.submit(lambda: y.copy_(y + x)).result()  # the whole update, temporary and all, in a thread from before


def add_in_a_pool_made_before(y, x):
    _POOL.submit(lambda: y.add_(x)).result()


def numpy_add_in_a_pool_made_before(y, x):
    _POOL.submit(lambda: np.add(y.numpy(), x.numpy(), out=y.numpy())).result()


@pytest.mark.parametrize(
    "threaded", [update_in_a_pool_made_before, add_in_a_pool_made_before, numpy_add_in_a_pool_made_before]
)
def test_inplace_update_rejects_an_update_made_by_a_thread_from_before_the_call(threaded):
    # rules-0204 #3: the old checker accepted these; the first allocates a temporary as large as y in that thread.
    feedback = assert_wrong("ch2.inplace_update", threaded)
    assert "another thread did" in feedback.message


def numpy_add_with_out(y, x):
    np.add(y.numpy(), x.numpy(), out=y.numpy())


def add_through_data(y, x):
    y.data.add_(x)


@pytest.mark.parametrize("solution", [numpy_add_with_out, add_through_data, numpy_inplace, add_out])
def test_inplace_update_still_accepts_writes_of_the_calling_thread(solution):
    assert_correct("ch2.inplace_update", solution)


def test_make_view_reshape_hint_names_the_condition_not_gaps():
    # rules-0204 #10: view_as never copies, and flatten() of x[:, ::2] is a view when its strides merge.
    feedback = assert_wrong("ch2.make_view", lambda x: x[:, ::2].flatten().view(x.shape[0], -1))
    assert "view_as" not in feedback.hint and "gaps" not in feedback.hint
    assert "no strides" in feedback.hint


def test_make_view_conversion_hint_says_to_copies_only_when_it_changes_something():
    # rules-0204 #11: x.to(torch.float32) is x and x.float() is x for a float32 x.
    feedback = assert_wrong("ch2.make_view", lambda x: x[:, ::2].double().to(x.dtype))
    assert "copy into new memory" not in feedback.hint
    assert "when they change something" in feedback.hint


def test_make_view_clone_hint_gives_no_reason_that_is_false_for_a_transposed_x():
    # x.contiguous() copies a transposed x itself, not "every other column"
    feedback = assert_wrong("ch2.make_view", lambda x: x.contiguous()[:, ::2])
    assert "every other column of x" not in feedback.hint


def test_ops_prediction_does_not_say_no_stride_reaches_index_selects_rows():
    # rules-0204 #9: rows 0 and 2 of x are x[::2], offset 0 and stride 8.
    x = torch.arange(12.0).reshape(3, 4)
    assert torch.equal(x.index_select(0, torch.tensor([0, 2])), x[::2])
    feedback = assert_wrong("ch2.q_ops", ("view", "view", "view", "view"))
    assert "no single offset and stride" not in feedback.message
    assert "evenly spaced" in feedback.message


def test_the_rule_hunts_counterexamples_hold_on_this_torch():
    """What the rewritten sentences of rules-0204 rest on (the deep dives' stored outputs show the same)."""
    import copy

    x = torch.arange(12.0).reshape(3, 4)
    empty = x[1:1]  # #18: a slice of x, yet no byte in common
    assert tl.same_storage(empty, x) and not tl.shares_memory(empty, x)
    assert tl.shares_memory(x[torch.tensor(2)], x)  # #12: a 0-dim integer index tensor views
    column = torch.arange(4.0).reshape(4, 1)[:, ::2]  # #13
    assert column.contiguous() is column
    w = torch.ones(3, requires_grad=True)  # #6
    with torch.no_grad():
        assert tl.shares_memory(w.numpy(), w)
    array = np.arange(4.0)  # #16
    first, second = copy.deepcopy([torch.from_numpy(array), torch.from_numpy(array)])
    assert not tl.shares_memory(first, second)
