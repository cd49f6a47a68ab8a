"""layout, shares_memory, same_storage, storage_values_text and draw_layout on odd tensors (issue 13, section 4).

Ground truth: per-element data pointers, values of an ``arange`` storage (each element's value is its
storage index), ``numpy.shares_memory``, and Python-int address arithmetic for meta tensors.
"""

import itertools

import numpy as np
import pytest
import torch
from ground_truth import truth_map
from hypothesis import given, settings
from hypothesis import strategies as st

from tutorial_lib import draw_layout, layout, layout_summary, same_storage, shares_memory
from tutorial_lib.facts.storage import ReadOverlap, compare_reads, storage_values_text
from tutorial_lib.pictures.layout_picture import MAX_CELLS, layout_picture


def byte_addresses(t: torch.Tensor) -> set[int]:
    size = t.element_size()
    return {t[index].data_ptr() + b for index in itertools.product(*map(range, t.shape)) for b in range(size)}


def many_dims(count: int = 70) -> torch.Tensor:
    return torch.arange(6.0).reshape([1] * (count - 2) + [2, 3])


def test_layout_of_a_tensor_with_more_than_64_dims():
    t = many_dims()
    assert t.dim() > 64  # valid in torch
    assert layout(t).element_indices == tuple(int(v) for v in t.reshape(-1).tolist())


def test_shares_memory_with_more_than_64_dims():
    t = many_dims()
    left, right = t[..., :1], t[..., 1:]
    assert shares_memory(t, right) is bool(byte_addresses(t) & byte_addresses(right))
    assert shares_memory(left, right) is bool(byte_addresses(left) & byte_addresses(right))
    assert shares_memory(left, right) is False


def test_draw_layout_with_more_than_64_dims():
    t = many_dims()
    fig = draw_layout(t, t[..., 1:])
    assert "storage of 6 float32" in fig.summary


def test_meta_layout_with_huge_strides_does_not_wrap_around():
    stride = 2**62
    t = torch.empty(0, device="meta").as_strided((3, 3), (stride, stride))
    truth = tuple(i * stride + j * stride for i in range(3) for j in range(3))  # Python ints: no overflow
    assert layout(t).element_indices == truth
    assert max(truth) > 2**63
    assert "shape (3, 3)" in layout_summary(t)


def test_draw_layout_caps_max_cells():
    t = torch.arange(100_000.0)
    picture = layout_picture(t, max_cells=10**9)
    drawn = [c for c in picture.cells if c.row == "storage"]
    assert len(drawn) <= MAX_CELLS < t.numel()
    assert f"capped at {MAX_CELLS}" in picture.summary
    assert layout_picture(t, max_cells=64).summary == layout_summary(t)  # the usual case is unchanged


def test_storage_values_text_reads_raw_storage():
    base = torch.tensor([0.5, 1.0, 2.25, 3.0, float("nan"), 1e9])
    view = base[::2]
    assert storage_values_text(view) == ("0.5", "1", "2.25", "3", "nan", "1e+09")
    assert storage_values_text(view, 1, 3) == ("1", "2.25")
    assert storage_values_text(base, max_cells=2) == ("0.5", "1")
    assert storage_values_text(torch.tensor([True, False])) == ("T", "F")
    assert storage_values_text(torch.tensor([1 + 2j])) == ("1+2j",)
    assert storage_values_text(torch.arange(3), np.int64(1)) == ("1", "2")
    assert storage_values_text(torch.empty(4, device="meta"), 1) == ("", "", "")
    assert storage_values_text(base, 6) == ()
    bytes_of_one = torch.tensor([1.0]).view(torch.uint8).tolist()  # the same bytes, read as another dtype
    assert storage_values_text(view, 4, 8, dtype=torch.uint8) == tuple(str(b) for b in bytes_of_one)
    assert storage_values_text(torch.arange(4, dtype=torch.int16), dtype=torch.int32) == ("65536", "196610")
    with pytest.raises(ValueError, match="start and stop"):
        storage_values_text(base, 4, 7)
    with pytest.raises(ValueError, match="uint8 elements"):
        storage_values_text(base, 0, 25, dtype=torch.uint8)
    with pytest.raises(TypeError, match="dtype must be a torch.dtype"):
        storage_values_text(base, dtype="uint8")
    with pytest.raises(TypeError, match="start"):
        storage_values_text(base, 1.5)
    with pytest.raises(TypeError, match="stop"):
        storage_values_text(base, 0, True)
    with pytest.raises(TypeError, match="t must be a torch.Tensor"):
        storage_values_text([1, 2])
    with pytest.raises(ValueError, match="max_cells"):
        storage_values_text(base, max_cells=0)


def test_positions_at_lists_the_elements_reading_each_cell_like_torch():
    matrix = torch.arange(12.0).reshape(3, 4)
    e = matrix[:, :2].expand(2, 3, 2)
    truth = truth_map(e)
    found = layout(e).positions_at(range(12))
    assert {index: tuple(positions) for index, positions in found.items()} == truth
    assert layout(e).positions_at([5, 11]) == {5: [3, 9]}  # only the cells asked for
    # A truncated listing knows its first elements and, with ``tail``, its last ones; nothing in between.
    long = torch.arange(100.0)
    assert layout(long, max_elements=10).positions_at(range(100)) == {i: [i] for i in range(10)}
    with_tail = layout(long, max_elements=10).positions_at(range(100), tail=5)
    assert with_tail == {i: [i] for i in [*range(10), *range(95, 100)]}


def test_read_counts_and_step_targets_match_torch():
    v = torch.arange(4.0)
    assert layout(v.expand(3, 4)).read_counts() == (3, 3)
    assert layout(v).read_counts() == (1, 1)
    assert layout(torch.arange(100.0), max_elements=10).read_counts() is None  # not all listed: unknown
    t = torch.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1)[1:, :, ::2]
    truth = torch.arange(t.untyped_storage().nbytes() // 4).as_strided(t.shape, t.stride(), t.storage_offset())
    origin = truth[0, 0, 0].item()
    steps = [(0, origin, truth[1, 0, 0].item()), (1, origin, truth[0, 1, 0].item()), (2, origin, truth[0, 0, 1].item())]
    assert layout(t).step_targets() == tuple(steps)
    assert layout(v[None]).step_targets() == ((1, 0, 1),)  # a dimension of size 1 is never stepped along
    assert layout(v[2]).step_targets() == () and layout(v[:0]).step_targets() == ()


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32, torch.complex128])
def test_byte_range_spans_the_bytes_of_the_lowest_and_highest_element(dtype):
    base = torch.zeros(40, dtype=dtype)
    for t in (base, base[3:17:2], base.reshape(5, 8).t()[1:, 2:5], base[4:5].expand(3), base[7]):
        addresses = byte_addresses(t)
        start = base.data_ptr()
        assert layout(t).byte_range == (min(addresses) - start, max(addresses) + 1 - start)
    assert layout(base[:0]).byte_range is None


def test_compare_reads_counts_shared_cells_and_bytes():
    a = torch.arange(12.0).reshape(3, 4)
    assert compare_reads(layout(a), layout(a.t())) == ReadOverlap("cell", 12, 12, 12, False)
    assert compare_reads(layout(a), layout(a.flatten())) == ReadOverlap("cell", 12, 12, 12, True)
    assert compare_reads(layout(a[0]), layout(a[2])) == ReadOverlap("cell", 4, 4, 0, False)
    assert compare_reads(layout(a[1:, 1:3]), layout(a)) == ReadOverlap("cell", 4, 12, 4, False)
    halves = a[:, 1:3].view(torch.int16)
    byte_truth = byte_addresses(halves) & byte_addresses(a[1])
    overlap = compare_reads(layout(halves), layout(a[1]))
    assert overlap == ReadOverlap("byte", 24, 16, len(byte_truth), False) and overlap.common == 8
    assert compare_reads(layout(torch.arange(100.0), max_elements=10), layout(a)) is None  # not all listed
    assert compare_reads(layout(a[:0]), layout(a)) is None
    with pytest.raises(TypeError, match="b must be a Layout"):
        compare_reads(layout(a), a)


# ====================================================================================== property tests
@st.composite
def odd_tensors(draw):
    """Random strided windows over an arange storage, then an odd twist (all CPU, small)."""
    storage = torch.arange(64.0)
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim)))
    stride = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    offset = draw(st.integers(0, 8))
    t = torch.as_strided(storage, shape, stride, offset)
    twist = draw(st.sampled_from(["none", "many_dims", "dtype_view", "numpy", "channels_last", "conj", "neg"]))
    if twist == "many_dims":
        t = t.reshape((1,) * 66 + tuple(t.shape)) if t.is_contiguous() else t[(None,) * 66]
    elif twist == "dtype_view" and t.dim() and t.stride(-1) == 1 and t.shape[-1] > 0:
        t = t.view(torch.int16)
    elif twist == "numpy":
        t = torch.from_numpy(t.numpy())
    elif twist == "channels_last":
        t = torch.arange(24.0).reshape(1, 2, 3, 4).to(memory_format=torch.channels_last)
    elif twist in ("conj", "neg"):
        c = torch.view_as_complex(torch.arange(16.0).reshape(8, 2))[: max(1, len(shape))]
        t = c.conj() if twist == "conj" else torch._neg_view(c)
    return t


def raw_values(t: torch.Tensor) -> list:
    """Each element's storage index, read from the arange storage (conj/neg bits and dtype views ignored)."""
    itemsize = t.element_size()
    base = t.untyped_storage().data_ptr()
    return [(t[index].data_ptr() - base) // itemsize for index in itertools.product(*map(range, t.shape))]


@settings(max_examples=60)
@given(odd_tensors())
def test_layout_indices_match_the_data_pointers(t):
    lay = layout(t)
    assert lay.element_indices == tuple(raw_values(t))
    assert lay.storage_nbytes == t.untyped_storage().nbytes()
    assert lay.is_contiguous == t.is_contiguous()


@settings(max_examples=60)
@given(odd_tensors(), st.integers(0, 3), st.integers(0, 3))
def test_shares_memory_and_same_storage_match_torch(t, cut_a, cut_b):
    a = t.reshape(-1)[cut_a:] if t.is_contiguous() and t.dim() < 60 else t
    b = t.flatten()[:cut_b] if cut_b else t.detach().clone()
    for first, second in ((t, a), (t, b), (a, b)):
        truth = bool(byte_addresses(first) & byte_addresses(second)) if first.numel() and second.numel() else False
        assert shares_memory(first, second) is truth
        storage_truth = first.untyped_storage()._cdata == second.untyped_storage()._cdata or (
            first.untyped_storage().data_ptr() != 0
            and first.untyped_storage().data_ptr() == second.untyped_storage().data_ptr()
        )
        assert same_storage(first, second) is storage_truth
        if (
            first.dim() <= 64
            and second.dim() <= 64
            and not (first.is_conj() or first.is_neg() or second.is_conj() or second.is_neg())
        ):
            if first.dtype == second.dtype == torch.float32 and first.numel() and second.numel():
                assert truth == np.shares_memory(first.numpy(), second.numpy(), max_work=None)


@settings(max_examples=15)
@given(odd_tensors())
def test_layout_picture_reads_the_cells_the_elements_use(t):
    picture = layout_picture(t, t, names=["t", "u"], max_cells=64)
    read = {c.index for c in picture.cells if c.row == "t" and c.state == "read"}
    visible = {c.index for c in picture.cells if c.row == "t"}
    assert read == set(raw_values(t)) & visible


# ------------------------------------------------------------------- grids and ghosts at the edges (issue 14)


def test_grids_of_huge_and_many_dimensional_tensors_stay_small():
    from tutorial_lib.pictures.layout_picture import layout_scene

    huge = torch.empty(2**40, 2**20, device="meta")
    picture = layout_picture(huge, names=["m"], show_values=False)
    grid = picture.grids[0]
    assert len(grid.elements) == 5 * 7 and grid.element(2**40 - 1, 2**20 - 1).storage_index == 2**60 - 1
    assert "m's grid shows 5 of 1,099,511,627,776 rows, 7 of 1,048,576 columns" in picture.summary
    six = torch.arange(2 * 3 * 4 * 5 * 6 * 7).reshape(2, 3, 4, 5, 6, 7)
    picture = layout_picture(six, names=["t"])
    grid = picture.grids[0]
    assert len(grid.elements) <= 4 * 4 * 4 * 3
    for element in grid.elements:  # the value of an arange is its storage index
        assert six[element.index].item() == element.storage_index
    assert len({b.line for b in grid.blocks}) <= 3 and len(layout_scene(picture).items) < 1500
    many = many_dims()
    picture = layout_picture(many, names=["d"])
    assert [e.storage_index for e in picture.grids[0].elements] == list(range(6))


def test_a_setting_far_past_the_end_says_where_it_reaches_without_drawing_that_far():
    from tutorial_lib.facts.storage import planned_layout
    from tutorial_lib.pictures.layout_picture import GHOST_CELLS, layout_scene

    storage = torch.arange(12.0)
    picture = layout_picture(planned_layout(storage, (3,), (1,), 10**6), names=["t"], values_from=storage)
    scene = layout_scene(picture)
    assert picture.row_cells("t", "ghost") == () and scene.width < 1000
    assert "reaches index 1,000,002" in scene.ids()["ghosttext:0"].text
    assert all(e.past_end for e in picture.grids[0].elements)
    near = layout_picture(planned_layout(storage, (30,), (1,), 0), names=["t"], values_from=storage)
    assert [c.index for c in near.row_cells("t", "ghost")] == list(range(12, 12 + GHOST_CELLS))
