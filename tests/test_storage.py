"""storage.py against ground truth: torch's own as_strided indexing and data pointers, numpy.shares_memory."""

import numpy as np
import pytest
import torch
from ground_truth import DTYPES
from hypothesis import given
from hypothesis import strategies as st

from tutorial_lib import layout, same_storage, shares_memory


@st.composite
def strided_views(draw, storage_numel=None, dtype=None):
    """A tensor made by as_strided over a storage: random shape (0-4 dims, sizes 0-5), strides (0-6), offset."""
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    stride = tuple(draw(st.lists(st.integers(0, 6), min_size=ndim, max_size=ndim)))
    offset = draw(st.integers(0, 5))
    reach = offset + sum((size - 1) * step for size, step in zip(shape, stride) if size > 0)
    numel = storage_numel if storage_numel is not None else reach + 1 + draw(st.integers(0, 3))
    dtype = dtype or draw(st.sampled_from(DTYPES))
    base = torch.zeros(max(numel, reach + 1), dtype=dtype)
    return base.as_strided(shape, stride, offset)


def truth_indices(t):
    """Storage index of every element, row-major, computed by torch: as_strided over an arange storage."""
    numel = t.untyped_storage().nbytes() // t.element_size()
    return torch.arange(numel).as_strided(t.shape, t.stride(), t.storage_offset()).reshape(-1).tolist()


def byte_set(t):
    """Every byte address an element of t covers, from per-element data pointers (small tensors only)."""
    addresses = set()
    itemsize = t.element_size()
    flat_positions = np.ndindex(*t.shape) if t.dim() else [()]
    for index in flat_positions:
        start = t[index].data_ptr() if t.dim() else t.data_ptr()
        addresses.update(range(start, start + itemsize))
    return addresses if t.numel() else set()


@given(strided_views())
def test_layout_element_indices_match_as_strided(t):
    lay = layout(t)
    assert list(lay.element_indices) == truth_indices(t)
    assert not lay.indices_truncated
    assert lay.shape == tuple(t.shape) and lay.stride == t.stride() and lay.storage_offset == t.storage_offset()
    assert lay.storage_nbytes == t.untyped_storage().nbytes()
    assert lay.numel == t.numel() and lay.itemsize == t.element_size()
    assert lay.is_contiguous == t.is_contiguous()


@given(strided_views())
def test_layout_index_of_matches_data_pointers(t):
    lay = layout(t)
    start = t.untyped_storage().data_ptr()
    for index in list(np.ndindex(*t.shape))[:20] if t.dim() else []:
        element = t[index]
        assert element.data_ptr() == start + lay.index_of(*map(int, index)) * t.element_size()


@given(strided_views())
def test_layout_overlap_and_range_match_truth(t):
    lay = layout(t)
    indices = truth_indices(t)
    if lay.has_internal_overlap is not None:
        assert lay.has_internal_overlap == (len(set(indices)) != len(indices))
    if indices:
        assert lay.index_range == (min(indices), max(indices))
    else:
        assert lay.index_range is None


@given(st.data())
def test_shares_memory_matches_byte_sets(data):
    """Two views over one storage, possibly of different dtypes: overlap exactly when their byte sets meet."""
    a = data.draw(strided_views(dtype=torch.float32))
    b_dtype = data.draw(st.sampled_from([torch.float32, torch.int16, torch.uint8, torch.float64]))
    storage = a.untyped_storage()
    b_numel = storage.nbytes() // b_dtype.itemsize
    if b_numel == 0:
        return
    base_b = torch.empty(0, dtype=b_dtype).set_(storage, 0, (b_numel,), (1,))
    view_b = data.draw(strided_views(storage_numel=b_numel, dtype=b_dtype))
    b = base_b.as_strided(view_b.shape, view_b.stride(), view_b.storage_offset()) if _fits(view_b, b_numel) else base_b
    expected = bool(byte_set(a) & byte_set(b))
    assert shares_memory(a, b) == expected
    assert shares_memory(b, a) == expected


def _fits(view, numel):
    reach = view.storage_offset() + sum((s - 1) * st_ for s, st_ in zip(view.shape, view.stride()) if s > 0)
    return view.numel() == 0 or reach < numel


@given(strided_views(dtype=torch.float32), strided_views(dtype=torch.float32))
def test_shares_memory_matches_numpy_on_numpy_views(a, b):
    """Over one numpy buffer, torch tensors and numpy arrays agree with numpy.shares_memory."""
    storage = np.zeros(64, dtype=np.float32)
    base = torch.from_numpy(storage)
    ta = base.as_strided(a.shape, a.stride(), a.storage_offset()) if _fits(a, 64) else base[:1]
    tb = base.as_strided(b.shape, b.stride(), b.storage_offset()) if _fits(b, 64) else base[1:2]
    expected = bool(np.shares_memory(ta.numpy(), tb.numpy(), max_work=None))
    assert shares_memory(ta, tb) == expected
    assert shares_memory(ta.numpy(), tb) == expected  # mixed numpy and torch
    assert shares_memory(ta.numpy(), tb.numpy()) == expected


def test_shares_memory_examples_from_the_course():
    x = torch.arange(12.0).view(3, 4)
    assert shares_memory(x, x.t())
    assert not shares_memory(x[0], x[2])
    assert same_storage(x[0], x[2])
    assert shares_memory(x[:, 0], x[1])
    assert not shares_memory(x, x.clone())
    assert not shares_memory(x[[0, 2]], x)
    assert shares_memory(x.numpy(), x)
    assert shares_memory(torch.from_numpy(x.numpy()), x)
    assert not shares_memory(torch.tensor(x.numpy()), x)
    assert shares_memory(x.view(torch.uint8)[0, 3], x[0, 0])  # the last byte of element 0
    assert not shares_memory(x.view(torch.uint8)[0, 4], x[0, 0])
    assert not shares_memory(x[:0], x)  # an empty tensor covers no bytes


def test_zero_dim_and_expanded_tensors():
    scalar = torch.tensor(3.0)
    assert shares_memory(scalar, scalar.view(1))
    wide = scalar.expand(1000, 1000)  # stride 0: a million elements, 4 bytes
    assert layout(wide).has_internal_overlap is True
    assert shares_memory(wide, scalar)
    assert not shares_memory(wide, torch.tensor(3.0))


def test_huge_tensors_are_summarised_not_materialised():
    huge = torch.zeros(1).expand(10**8)
    lay = layout(huge)
    assert lay.indices_truncated and len(lay.element_indices) == 4096 and lay.numel == 10**8
    assert "first 4096 of 100000000" in repr(lay)
    assert shares_memory(huge, huge[5:])
    meta = torch.empty(10**4, 10**4, device="meta")
    assert layout(meta).storage_nbytes == 4 * 10**8
    assert layout(meta.t()).has_internal_overlap is False


def test_same_storage_against_pointers():
    x = torch.arange(10.0)
    for view in (x[2:], x.view(2, 5).t(), x.expand(3, 10), x.view(torch.uint8), x.detach()):
        assert same_storage(view, x)
        assert view.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert not same_storage(x, x.clone())
    array = np.arange(5.0)
    assert same_storage(torch.from_numpy(array), torch.from_numpy(array))
    assert not same_storage(torch.empty(0), torch.empty(0))  # two empty storages, both at address 0
    empty = torch.empty(0)
    assert same_storage(empty, empty.view(0, 3))
    meta = torch.empty(3, device="meta")
    assert same_storage(meta, meta[1:]) and not same_storage(meta, torch.empty(3, device="meta"))
    assert not same_storage(torch.empty(3), torch.empty(3, device="meta"))


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: shares_memory(None, torch.ones(1)), "a"),
        (lambda: shares_memory(torch.ones(1), [1.0]), "b"),
        (lambda: shares_memory(torch.eye(2).to_sparse(), torch.ones(1)), "a"),
        (lambda: shares_memory(torch.ones(1), torch.ones(1, device="meta")), "b"),
        (lambda: same_storage(np.ones(2), torch.ones(1)), "a"),
        (lambda: same_storage(torch.ones(1), torch.eye(2).to_sparse()), "b"),
        (lambda: layout("tensor"), "t"),
        (lambda: layout(torch.eye(2).to_sparse()), "t"),
        (lambda: layout(torch.ones(2), max_elements=0), "max_elements"),
        (lambda: layout(torch.ones(2), max_elements=2.5), "max_elements"),
        (lambda: layout(torch.ones(2)).index_of(0, 0), "index"),
        (lambda: layout(torch.ones(2)).index_of(2), "index"),
    ],
)
def test_bad_input_names_the_argument(call, argument):
    with pytest.raises((TypeError, ValueError)) as error:
        call()
    assert argument in str(error.value)


def test_index_of_accepts_numpy_integers_and_refuses_bools_naming_the_position():
    lay = layout(torch.arange(12.0).view(3, 4).t())
    assert lay.index_of(np.int64(2), 1) == lay.index_of(2, 1) == 6
    with pytest.raises(TypeError, match=r"^index\[1\] must be an int, got bool$"):
        lay.index_of(0, True)
    with pytest.raises(ValueError, match=r"^index\[0\] must be in \[0, 4\), got 4$"):
        lay.index_of(4, 0)


def test_layout_is_immutable_and_readable():
    lay = layout(torch.arange(12.0).view(3, 4).t()[1:])
    with pytest.raises(AttributeError):
        lay.stride = (1, 1)
    assert lay.formula() == "storage[1 + 1*i0 + 4*i1]"
    assert repr(lay).startswith("Layout(shape=(3, 3), stride=(1, 4), storage_offset=1")


def test_planned_layout_matches_torch_where_torch_accepts_and_runs_past_the_end_where_it_refuses():
    from tutorial_lib.facts.storage import planned_layout

    storage = torch.arange(12.0)
    for shape, stride, offset in [((3, 4), (4, 1), 0), ((4, 3), (1, 4), 0), ((2, 2), (4, 1), 5), ((3, 4), (0, 1), 0)]:
        planned, real = (
            planned_layout(storage, shape, stride, offset),
            layout(storage.as_strided(shape, stride, offset)),
        )
        assert planned == real
    past = planned_layout(storage, (3, 4), (4, 1), 1)
    assert past.index_range == (1, 12) and past.storage_numel == 12 and past.is_contiguous
    for shape, stride in [((2, 1, 3), (3, 7, 1)), ((0, 5), (9, 2)), ((2, 3), (1, 2)), ((2, 3), (3, 1)), ((1,), (5,))]:
        truth = torch.empty(100).as_strided(shape, stride).is_contiguous()
        assert planned_layout(storage, shape, stride, 0).is_contiguous == truth
    with pytest.raises(ValueError, match="stride"):
        planned_layout(storage, (3,), (-1,), 0)
    with pytest.raises(ValueError, match="one entry per dimension"):
        planned_layout(storage, (3, 4), (1,), 0)
    with pytest.raises(TypeError, match="shape"):
        planned_layout(storage, "3, 4", (1,), 0)


def test_unravel_index_is_numpys_for_any_shape():
    from tutorial_lib.facts.storage import unravel_index

    for shape in [(3, 4), (2, 3, 4), (5,), (), (1, 1, 7)]:
        for position in range(int(np.prod(shape))):
            assert unravel_index(position, shape) == tuple(int(i) for i in np.unravel_index(position, shape))
    assert unravel_index(2**70 + 5, (2**80, 2**70)) == (1, 5)  # Python ints: no overflow
    with pytest.raises(ValueError, match="position"):
        unravel_index(12, (3, 4))
    with pytest.raises(TypeError, match="position"):
        unravel_index(1.0, (3, 4))


def test_the_repr_counts_a_storage_that_holds_no_whole_number_of_elements():
    # 7 bytes viewed as float32: one whole element and 3 bytes over; the repr said "1 elements × 4 bytes = 7 bytes"
    u = torch.arange(7, dtype=torch.uint8)
    f = u[:4].view(torch.float32)
    assert f.untyped_storage().nbytes() == 7 and f.element_size() == 4
    assert "storage=1 element × 4 bytes + 3 bytes left over = 7 bytes," in repr(layout(f))
    assert "storage=7 elements × 1 byte = 7 bytes," in repr(layout(u))
    assert "storage=12 elements × 4 bytes = 48 bytes," in repr(layout(torch.arange(12.0)))
