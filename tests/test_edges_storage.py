"""layout, shares_memory, same_storage and draw_layout on odd tensors (issue 13, section 4).

Ground truth: per-element data pointers, values of an ``arange`` storage (each element's value is its
storage index), ``numpy.shares_memory``, and Python-int address arithmetic for meta tensors.
"""

import itertools

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tutorial_lib import draw_layout, layout, layout_summary, same_storage, shares_memory
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
