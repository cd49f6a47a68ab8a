"""The explorers and the memory timeline at the edges (issue 13, section 4): they never raise into the console.

A widget callback has nowhere to raise to: every setting, however large, is shown or explained in the
widget. Valid settings are checked against ``torch.as_strided`` and per-element data pointers.
"""

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tutorial_lib import draw_memory_timeline, format_bytes, measure_memory, stride_explorer, view_copy_explorer
from tutorial_lib.explorers.layout_explorers import TABLE_ROWS


@pytest.mark.parametrize(
    ("shape", "stride", "offset"),
    [("3, 4", "4, 1", 2**70), (str(10**20), "1", 0), ("3", str(-(2**80)), 0), ("2, 2", "1, 1", -(2**64))],
)
def test_stride_explorer_explains_numbers_too_large(shape, stride, offset):
    explorer = stride_explorer()
    explorer.offset.value = offset
    explorer.shape.value = shape
    explorer.stride.value = stride
    assert explorer.tensor is None
    assert "Too large" in explorer.message.value and "2**63" in explorer.summary


def test_stride_explorer_shows_a_huge_expanded_shape_without_listing_it():
    explorer = stride_explorer()
    explorer.stride.value = "0"
    explorer.shape.value = str(2**62)
    truth = torch.as_strided(torch.arange(12.0), (2**62,), (0,), 0)
    assert explorer.error == ""
    assert explorer.tensor.shape == truth.shape and explorer.tensor.stride() == truth.stride()
    assert [row[2] for row in explorer.addresses] == [0] * len(explorer.addresses)
    assert f"reads cell 0 only, {2**62:,} times (stride 0 repeats it)" in explorer.summary


def test_contiguous_strides_of_a_huge_shape_is_explained():
    explorer = stride_explorer()
    explorer.shape.value = str(2**70)
    explorer.set_contiguous_strides()  # must not raise
    assert "Exception raised from" not in explorer.message.value
    assert explorer.message.value


def test_view_copy_explorer_shows_a_result_it_cannot_draw():
    explorer = view_copy_explorer(operations=["x.to_sparse()", "x.t()"])
    assert explorer.row is None and "to_sparse" in explorer.summary  # shown, not raised
    explorer.operation.value = "x.t()"
    assert explorer.row.verdict == "view"


@pytest.mark.parametrize(("kwargs", "name"), [({"ax": 1}, "ax"), ({"show_ops": "yes"}, "show_ops")])
def test_draw_memory_timeline_checks_its_arguments(kwargs, name):
    with measure_memory() as report:
        torch.ones(10)
    with pytest.raises(TypeError, match=f"^{name} must be"):
        draw_memory_timeline(report, **kwargs)


def test_format_bytes_accepts_numpy_integers():
    assert format_bytes(np.int64(1024)) == format_bytes(1024)


# ====================================================================================== property tests
NUMBERS = st.one_of(st.integers(-3, 14), st.integers(-(2**80), 2**80), st.sampled_from([2**62, 2**63, 2**63 - 1]))


@settings(max_examples=60)
@given(st.lists(NUMBERS, min_size=0, max_size=3), st.lists(NUMBERS, min_size=0, max_size=3), NUMBERS)
@example(shape=[], stride=[], offset=20)  # a 0-d tensor 9 cells past the end: beyond the ghost cells drawn
@example(shape=[3], stride=[1], offset=10)  # 1 element past the end: one ghost cell
def test_stride_explorer_never_raises_and_agrees_with_torch(shape, stride, offset):
    explorer = stride_explorer()
    explorer.offset.value = offset
    explorer.shape.value = ", ".join(map(str, shape))
    explorer.stride.value = ", ".join(map(str, stride))  # every change runs update(): none may raise
    try:
        truth = torch.as_strided(explorer.storage, tuple(shape), tuple(stride), offset)
    except (RuntimeError, TypeError, ValueError, OverflowError):
        truth = None
    if truth is None:
        assert explorer.tensor is None and explorer.message.value
        assert "cannot be shown" not in explorer.message.value
        drawable = min([*shape, *stride, offset]) >= 0  # torch says "out of bounds" for a negative size too
        if "out of bounds" in explorer.message.value and drawable:  # drawn anyway: where it runs out, as ghosts
            lay = explorer.layout_model
            assert lay.index_range[1] >= lay.storage_numel
            ghosts = [cell for cell in explorer.picture.cells if cell.state == "ghost"]
            # The summary says whether ghost cells are drawn: only cells just past the end are (GHOST_CELLS).
            assert ("dashed ghost cells" in explorer.summary) == bool(ghosts)
            assert ("without ghost cells" in explorer.summary) == (not ghosts)
            for element in explorer.picture.grids[0].elements:
                at = offset + sum(i * step for i, step in zip(element.index, stride))
                assert element.storage_index == at and element.past_end == (at >= 12)
        return
    assert explorer.tensor.shape == truth.shape and explorer.tensor.stride() == truth.stride()
    base = truth.untyped_storage().data_ptr()
    assert len(explorer.addresses) == min(truth.numel(), TABLE_ROWS)
    positions = [
        tuple(int(i) for i in np.unravel_index(p, shape)) if shape else () for p in range(len(explorer.addresses))
    ]
    for (_, index, _, byte_offset), expected in zip(explorer.addresses, positions):
        assert index == expected
        assert byte_offset == truth[expected].data_ptr() - base


def test_a_negative_size_torch_calls_out_of_bounds_is_explained_not_drawn():
    # torch answers "out of bounds" for shape (1, -1, 4) over 12 cells: no ghost picture exists for a negative size
    explorer = stride_explorer()
    explorer.shape.value, explorer.stride.value = "1, -1, 4", "0, 0, 4"
    explorer.update()
    assert explorer.tensor is None and explorer.picture is None
    assert "cannot be shown" not in explorer.message.value and explorer.message.value
