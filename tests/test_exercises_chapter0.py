"""Chapter 0 ("Start here"): its quick predictions name the learner's mistake; its course map quotes the times the
chapters state; its texts keep the fixes of the 2026-11-27 fact-check (findings 3, 10 and 12 of 00-03) and of the
rule hunt rules-00 (B1-B12); and the deep dive "What the source articles got wrong" says only what the articles say
and points to where the course teaches each topic now.

Every registered prediction is also run with its truth and each listed mistake in test_exercises.py.
"""

import functools
import re
import warnings
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
from exercise_asserts import assert_correct, assert_wrong

import tutorial_lib as tl

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTER_0 = NOTEBOOKS / "00_start_here.ipynb"


@functools.cache
def cells():
    return nbformat.read(CHAPTER_0, as_version=4).cells


@functools.cache
def prose() -> str:
    """The markdown of chapter 0, with every run of white space made one space."""
    return " ".join(" ".join(cell.source for cell in cells() if cell.cell_type == "markdown").split())


def stdout_of(code: str) -> str:
    """The stored stdout of the one code cell whose source contains ``code``."""
    (cell,) = [cell for cell in cells() if cell.cell_type == "code" and code in cell.source]
    return "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")


# --- the quick predictions ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("ch0.q_write_through", "yes"),
        ("ch0.q_write_through", " Yes "),
        ("ch0.q_views", ("view", "view", "copy", "copy")),
        ("ch0.q_views", ["VIEW", "view", "copy", "copy"]),
        ("ch0.q_slice_bytes", (0, 2_000_000)),
        ("ch0.q_slice_bytes", [0, 2000000]),
        ("ch0.q_saved_memory", "shared"),
        ("ch0.q_backward_raises", "raises"),
    ],
)
def test_a_right_answer_is_accepted(exercise_id, answer):
    assert_correct(exercise_id, answer)


@pytest.mark.parametrize(
    "exercise_id, answer, words",
    [
        ("ch0.q_write_through", "no", "not a new block of memory"),
        ("ch0.q_views", ("view", "view", "view", "view"), "list of integers"),
        ("ch0.q_views", ("view", "view", "copy", "view"), "not in storage order"),
        ("ch0.q_views", ("view", "copy", "copy", "copy"), "is a column"),
        ("ch0.q_views", ("copy", "copy", "copy", "copy"), "entries 1, 2"),  # no listed diagnosis: names the entries
        ("ch0.q_views", ("view", "same", "copy", "copy"), "entry 2"),  # not one of the words
        ("ch0.q_slice_bytes", (2_000_000, 2_000_000), "allocates nothing"),
        ("ch0.q_slice_bytes", (0, 4_000_000), "half of x"),
        ("ch0.q_slice_bytes", (0, 500_000), "4 bytes"),
        ("ch0.q_saved_memory", "copy", "reference to x2"),
        ("ch0.q_backward_raises", "runs", "ExpBackward0 needs b"),
    ],
)
def test_a_wrong_answer_is_told_what_it_missed(exercise_id, answer, words):
    feedback = assert_wrong(exercise_id, answer)
    assert words in feedback.message, str(feedback)


def test_each_prediction_cell_comes_before_the_cell_that_reveals_its_answer():
    code = [cell.source for cell in cells() if cell.cell_type == "code"]
    reveals = {
        "ch0.q_write_through": "row[0] = -1.0",
        "ch0.q_views": "tl.op_table(",
        "ch0.q_slice_bytes": "tl.measure_memory()",
        "ch0.q_saved_memory": "_saved_self",
        "ch0.q_backward_raises": "tl.show_error(",
    }
    for exercise_id, reveal in reveals.items():
        (asked,) = [i for i, source in enumerate(code) if f'tl.check("{exercise_id}", ...)' in source]
        shown = [i for i, source in enumerate(code) if reveal in source and not source.startswith("# Predict")]
        assert shown and asked < min(shown), exercise_id


# --- the course map -------------------------------------------------------------------------------------------


def stated_minutes(path: Path) -> int:
    first = next(cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "markdown").source
    return int(re.search(r"About (\d+) minutes", first).group(1))


def test_the_course_map_lists_every_core_chapter_with_the_time_its_first_screen_states():
    chapters = sorted(NOTEBOOKS.glob("0[1-9]_*.ipynb"))
    (course_map,) = [cell.source for cell in cells() if "## Where to go next: the course map" in cell.source]
    for path in chapters:
        row = next((line for line in course_map.splitlines() if f"]({path.name})" in line), None)
        assert row is not None, f"{path.name} is not in the course map"
        assert row.rstrip().endswith(f"| {stated_minutes(path)} min |"), row
    total = sum(stated_minutes(path) for path in chapters)
    assert f"about {total} minutes in all" in " ".join(course_map.split())


def test_the_course_map_says_where_the_deep_dives_live():
    assert "`notebooks/deep_dives/`" in prose()


# --- fact-check 00-03, findings 10 and 12 ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "finding, old_claim",
    [
        ("10: inference tensors and their views have no version counter", "carries a version counter"),
        ("10", "every tensor made outside"),
        ("12: only zero-byte storages that torch allocated report 0", "zero bytes all report address 0"),
        ("12", "zero-byte storages all report address 0"),
    ],
)
def test_an_old_claim_of_the_fact_check_does_not_come_back(finding, old_claim):
    assert old_claim not in prose(), finding


def test_the_version_counter_sentence_speaks_of_b_only_and_its_output_shows_it():
    """Finding 10: the counter is introduced on the tensor at hand, not as a rule about every tensor. rules-00 B7: it
    counts the writes autograd sees (a write through `.data` is not counted)."""
    assert "`b._version` counts the in-place writes to `b` that autograd sees." in prose()
    assert stdout_of('print("b._version:", b._version)').startswith("b._version: 1\n")


def test_the_storage_address_test_points_to_the_deep_dive_that_bounds_it():
    """Finding 12: chapter 0 states no rule about empty storages; it links the deep dive that states it bounded."""
    link = "deep_dives/how_can_plain_torch_tell_whether_two_tensors_share_a_storage.ipynb"
    assert f"]({link})" in prose()
    deep_dive = " ".join(" ".join(cell.source for cell in nbformat.read(NOTEBOOKS / link, as_version=4).cells).split())
    assert "Every storage of zero bytes that torch allocated reports address 0." in deep_dive
    assert stdout_of("same storage address:").splitlines()[2] == "same storage address: True"


def test_what_the_fixed_sentences_rest_on_holds_on_this_torch():
    with torch.inference_mode():
        inference = torch.ones(4)
    view = inference[:2]  # made outside inference_mode, still an inference tensor: no version counter
    assert view.is_inference()
    with pytest.raises(RuntimeError, match="version counter"):
        _ = view._version
    over_numpy = torch.from_numpy(np.empty(0)).untyped_storage()  # a zero-byte storage torch did not allocate
    assert over_numpy.nbytes() == 0 and over_numpy.data_ptr() != 0
    assert torch.empty(0).untyped_storage().data_ptr() == 0


# --- what left the chapter ------------------------------------------------------------------------------------


def test_run_instructions_and_the_seed_articles_leave_chapter_0_for_the_readme_and_their_deep_dive():
    for gone in ("## References", "macOS", "nbval", "mybinder", "conda env create"):
        assert gone not in prose(), gone
    link = "deep_dives/what_the_source_articles_got_wrong.ipynb"
    assert f"]({link})" in prose()
    deep_dive = nbformat.read(NOTEBOOKS / link, as_version=4).cells
    assert deep_dive[0].source.startswith("# What the source articles got wrong\n")
    references = " ".join(cell.source for cell in deep_dive if cell.cell_type == "markdown")
    for title in ("PyTorch의 복제 및 로컬 작업 상세 정보", "Pytorch中关于inplace的操作", "Vitis AI 1.2", "pytorch-cn"):
        assert title in references, title


# --- rules-00: the rules the rule hunt broke, in chapter 0, its checker and the source-articles deep dive ----------

SOURCE_ARTICLES = NOTEBOOKS / "deep_dives" / "what_the_source_articles_got_wrong.ipynb"


@functools.cache
def deep_dive_cells():
    return nbformat.read(SOURCE_ARTICLES, as_version=4).cells


@functools.cache
def deep_dive_prose() -> str:
    return " ".join(" ".join(cell.source for cell in deep_dive_cells() if cell.cell_type == "markdown").split())


@pytest.mark.parametrize(
    "finding, old_claim",
    [
        (
            "B1: nothing is recorded under no_grad or inference_mode",
            "When a tensor requires gradients, PyTorch records",
        ),
        ("B2 = 00-03 #3: a list of 0-dim tensors is unpacked, a view", "indexes with a list, and that copies"),
        ("B4: a band ends where the allocation is freed", "from the operation that made it to the end of the block"),
        ("B5: the address test asks 'same storage?', not 'share memory?'", "ask whether `row` and `x` share memory"),
        ("B6: a saved-tensor hook can copy", "Saving copies nothing"),
        ("B7: a write through .data is not counted", "`b._version` counts the in-place writes to `b`."),
        ("B10: the deep dive runs twenty of their claims", "runs their claims that are outdated"),
        ("B12: only strided tensors have strides", "the cells of any tensor"),
        ("nit: 'What the source articles got wrong' is no question", "one question each"),
    ],
)
def test_a_claim_the_rule_hunt_broke_does_not_come_back(finding, old_claim):
    assert old_claim not in prose(), finding


@pytest.mark.parametrize(
    "finding, fixed_claim",
    [
        ("B1", "By default, PyTorch records how each result is made from a tensor that requires gradients."),
        ("B2", "`x[[0, 2]]` indexes with a list of integers, and that copies."),
        ("B4", "draws what each block held at its peak and at its end, on top of what was held before"),
        ("B5", "ask whether `row` and `x` use the same storage, and whether they read common bytes."),
        ("B6", "By default, saving copies nothing"),
        ("B10", "One deep dive runs twenty of their claims"),
    ],
)
def test_the_claim_the_rule_hunt_fixed_is_in_place(finding, fixed_claim):
    assert fixed_claim in prose(), finding


def test_the_deep_dive_runs_as_many_corrections_as_chapter_0_says():
    corrections = [cell for cell in deep_dive_cells() if re.match(r"### \d\.\d ", cell.source)]
    assert len(corrections) == 20  # "twenty" in chapter 0's course map


def test_the_checker_texts_keep_the_scope_the_rule_hunt_gave_them():
    """B2 (a list of integers copies), B6 (by default, saving copies nothing) and the q_views nits (x[:, 1] is an
    integer index, not a slice; t() and an integer index change the shape too)."""
    views = assert_correct("ch0.q_views", ("view", "view", "copy", "copy")).message
    assert "A list index such as" not in views and "a list of integers, such as x[[0, 2]]" in views
    assert "the shape, the strides and the offset" in views
    column = assert_wrong("ch0.q_views", ("view", "copy", "copy", "copy")).message
    assert "a slice with stride 4" not in column and "integer index" in column
    saved = assert_correct("ch0.q_saved_memory", "shared").message
    assert "by default, saving copies nothing" in saved
    assert "By default" in assert_wrong("ch0.q_saved_memory", "copy").message


def test_checking_a_prediction_neither_moves_the_random_numbers_nor_gives_a_typo_the_answer():
    """B8: _backward_truth draws with torch.randn; the checker must leave the learner's random stream alone."""
    torch.manual_seed(0)
    expected = torch.randn(2)
    torch.manual_seed(0)
    assert_correct("ch0.q_backward_raises", "raises")
    assert torch.equal(torch.randn(2), expected)
    typo = assert_wrong("ch0.q_backward_raises", "raise")
    assert "not one of the answers" in typo.message and "exp" not in typo.hint


def test_what_the_rule_hunt_found_holds_on_this_torch():
    x = torch.arange(100.0, 112.0).view(3, 4)
    # B2: a list of integers copies; a list of 0-dim tensors is unpacked as a tuple: one element, a view
    assert not tl.shares_memory(x[[0, 2]], x)
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        unpacked = x[[torch.tensor(0), torch.tensor(2)]]
    assert unpacked.dim() == 0 and tl.shares_memory(unpacked, x)
    # B5: two rows of one matrix use the same storage and share no byte
    assert x[0].untyped_storage().data_ptr() == x[2].untyped_storage().data_ptr()
    assert not tl.shares_memory(x[0], x[2])
    # B1: under no_grad and inference_mode nothing is recorded
    leaf = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        assert (leaf * 2).grad_fn is None
    with torch.inference_mode():
        assert (leaf * 2).grad_fn is None
    # B6: a saved-tensor hook that copies: the node holds a copy, and a later write does not break backward
    a = torch.randn(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        b = a.exp()
        c = b.sum()
    b += 1
    c.backward()
    assert torch.allclose(a.grad, a.detach().exp())
    # B7: a write through .data moves no counter, and backward then gives a wrong gradient without an error
    a = torch.randn(3, requires_grad=True)
    b = a.exp()
    c = b.sum()
    b.data += 1
    assert b._version == 0
    c.backward()
    assert torch.allclose(a.grad, a.detach().exp() + 1)


# --- rules-00: the source-articles deep dive -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "finding, old_claim",
    [
        ("B3: the seed's synchronize() raises without CUDA", "on a machine without a GPU the recipe falls back"),
        ("B3", "and zeros on a CPU"),
        ("B9: what silences the call is the warning having fired", "has used a typed storage, a library say"),
        ("B9", "as if nothing in this process had used a typed storage"),
        ("pointer: one GPU shows no switch", "shows the switch on an H100"),
        ("pointer: chapter 3, section 6 has no code", "Chapter 3, section 6 shows the same steps"),
        ("seam: a build note of the assembly", "the chapter before issue 19"),
        ("seam: chapter 00 no longer has a references table", "Chapter 00 never gave their addresses"),
        ("seed 001 never names torch.utils.ffi", "describes writing C extensions with `torch.utils.ffi`"),
        ("seed 001 never names torch.utils.ffi", "custom `Linear` module, `torch.utils.ffi`"),
        ("seed 001 has only a serialization heading", "Hogwild, saving models"),
        ("seed 000 says 'can'", "or `detach()` raise errors or warnings"),
        ("seed 001's hedge is two sentences later", "Its next sentence already hedged"),
    ],
)
def test_a_claim_the_rule_hunt_broke_does_not_come_back_in_the_source_articles_deep_dive(finding, old_claim):
    assert old_claim not in deep_dive_prose(), finding


@pytest.mark.parametrize(
    "finding, fixed_claim",
    [
        ("B3", "There its `torch.cuda.synchronize()` calls raise on a PyTorch built without CUDA"),
        ("B9", "Once anything in the process has triggered this warning, a library say, your own calls never show it."),
        ("B11", "too few to split off, so the tensor's block is the whole segment: 191 × 2 MiB = 382.00 MiB."),
        ("5.2", 'The same seed mentions custom C extensions written "with our C library".'),
        ("4.1", "or `detach()` can raise errors or warnings."),
        ("7.4", "Two sentences later it already hedged"),
    ],
)
def test_the_claim_the_rule_hunt_fixed_is_in_place_in_the_source_articles_deep_dive(finding, fixed_claim):
    assert fixed_claim in deep_dive_prose(), finding


def test_the_deep_dive_shows_what_its_fixed_sentences_say():
    """B3: the stored output of the synchronize cell shows the raise; B11: 556,032 bytes are left over."""
    (sync,) = [
        cell
        for cell in deep_dive_cells()
        if cell.cell_type == "code"
        and "torch.cuda.synchronize()" in cell.source
        and "except AssertionError" in cell.source
    ]
    text = "".join(output.get("text", "") for output in sync.outputs)
    assert "torch.cuda.synchronize() raises AssertionError" in text
    assert 191 * 2**21 - 10_000 * 10_000 * 4 == 556_032 < 2**20
    storage = torch.storage
    storage._reset_warn_typed_storage_removal()
    with warnings.catch_warnings():  # B9: a warning hidden by a filter still counts as shown
        warnings.simplefilter("ignore")
        torch.ones(2).storage()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.ones(2).storage()
    assert not caught


def core_section(chapter: str, heading: str) -> str:
    """The text of the section of a core chapter that starts at the line ``heading`` (up to the next ``## ``)."""
    (path,) = NOTEBOOKS.glob(f"{chapter}_*.ipynb")
    lines = "\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells).splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(heading)]
    assert starts, f"{path.name} has no heading {heading!r}"
    end = next((i for i in range(starts[0] + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[starts[0] : end])


def deep_dive_section(name: str, heading: str) -> str:
    cells = nbformat.read(NOTEBOOKS / "deep_dives" / f"{name}.ipynb", as_version=4).cells
    lines = "\n".join(cell.source for cell in cells).splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(heading)]
    assert starts, f"{name} has no heading {heading!r}"
    end = next((i for i in range(starts[0] + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[starts[0] : end])


# Each correction's "Where the course teaches it": the words of the pointer, then where it points and a word that
# must be in that place (so the pointer follows the topic when a chapter is rewritten).
POINTERS = [
    ("1.1", "section 1 and its common misconceptions", "01", "## 1.", "untyped_storage()"),
    ("1.1", "section 1 and its common misconceptions", "01", "## Common misconceptions", "`.storage`"),
    ("2.1", "section 4.", "02", "## 4.", "reshape"),
    ("2.2", "section 4.", "02", "## 4.", "index_select"),
    ("2.3", "section 4.", "02", "## 4.", "contiguous"),
    ("2.4", "section 6 and its common misconceptions", "02", "## 6.", "y[:] = x + y"),
    ("2.4", "section 6 and its common misconceptions", "02", "## Common misconceptions", "id("),
    ("2.5", "02_tell_views_from_copies.ipynb), section 1;", "02", "## 1.", "tl.shares_memory"),
    ("2.5", "files.ipynb), section 1.", "07", "## 1.", "returns the tensor itself"),
    ("3.1", "section 1.", "03", "## 1.", "requires_grad=True"),
    ("3.2", "section 5.", "03", "## 5.", "no_grad"),
    ("3.3", "section 1.", "03", "## 1.", "grad_fn"),
    ("3.4", "section 1.", "03", "## 1.", r"\log(x_1 x_2)"),
    ("3.5", "sections 1 and 2, linked from", "how_do_you_freeze_part_of_a_model_safely", "## 1.", "model.head ="),
    ("3.5", "graph.ipynb), section 6.", "03", "## 6.", "how_do_you_freeze_part_of_a_model_safely"),
    ("3.6", "files.ipynb), section 2,", "07", "## 2.", "register_buffer"),
    ("4.1", "sections 1 and 3.", "04", "## 3.", "version counter"),
    ("5.1", "safely.ipynb), section 6.", "05", "## 6.", "how_do_you_write_a_custom_autograd_function_that_works"),
    ("5.2", "safely.ipynb), section 6.", "05", "## 6.", "how_do_you_write_a_custom_autograd_function_that_works"),
    ("6.1", "sections 1 and 5.", "06", "## 1.", "F.relu_"),
    ("6.1", "sections 1 and 5.", "06", "## 5.", "382.00 MiB"),
    ("7.1", 'section "Which GPU?"', "what_happens_when_a_tensor_moves_to_a_gpu", "## Which GPU?", "torch.cuda.device"),
    ("7.1", "files.ipynb), section 1,", "07", "## 1.", "what_happens_when_a_tensor_moves_to_a_gpu"),
    (
        "7.2",
        'section "`non_blocking=True`"',
        "what_happens_when_a_tensor_moves_to_a_gpu",
        "## `non_blocking=True`",
        "non_blocking",
    ),
    ("7.2", "files.ipynb), section 1,", "07", "## 1.", "non_blocking"),
    ("7.3", "files.ipynb), section 1.", "07", "## 1.", "device"),
    ("7.4", "its common misconceptions", "07", "## Common misconceptions", "DistributedDataParallel"),
    (
        "7.4",
        "do_data_parallel_replicas_share_their_parameters.ipynb)",
        "do_data_parallel_replicas_share_their_parameters",
        "## `DistributedDataParallel`",
        "DistributedDataParallel",
    ),
]


@pytest.mark.parametrize("correction, words, target, heading, topic", POINTERS)
def test_each_where_the_course_teaches_it_points_where_the_topic_is_taught_now(
    correction, words, target, heading, topic
):
    """rules-00, pointer mismatches: 2.2, 2.4, 2.5, 3.5, 3.6 and 7.4 pointed to sections that no longer teach them."""
    cells = [cell.source for cell in deep_dive_cells() if cell.cell_type == "markdown"]
    start = next(i for i, source in enumerate(cells) if source.startswith(f"### {correction} "))
    pointer = next(source for source in cells[start:] if source.startswith("*Where the course teaches it:*"))
    assert words in pointer, (correction, pointer)
    if target[:2].isdigit():
        assert f"../{target}_" in pointer, pointer
        assert topic in core_section(target, heading), (correction, target, heading, topic)
    else:
        assert f"({target}.ipynb)" in pointer, pointer
        assert topic in deep_dive_section(target, heading), (correction, target, heading, topic)
