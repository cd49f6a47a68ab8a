"""Chapter 0 ("Start here"): its quick predictions name the learner's mistake; its course map quotes the times the
chapters state; and its texts keep the fixes of the 2026-11-27 fact-check (findings 10 and 12 of 00-03).

Every registered prediction is also run with its truth and each listed mistake in test_exercises.py.
"""

import functools
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
from exercise_asserts import assert_correct, assert_wrong

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
    """Finding 10: the counter is introduced on the tensor at hand, not as a rule about every tensor."""
    assert "`b._version` counts the in-place writes to `b`." in prose()
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
