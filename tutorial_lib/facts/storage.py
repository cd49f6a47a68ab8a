"""Where a tensor's elements live: storage sharing and strided layout.

Every fact here is computed from a tensor's own metadata (data pointer, shape, strides, storage offset)
and checked in ``tests/test_storage.py`` against ground truth from torch (``as_strided`` over an
``arange`` storage, per-element data pointers) and numpy (``numpy.shares_memory``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..common.checks import describe, require_int, require_positive_int, require_tensor, require_type
from ..common.text import dtype_name, plural

#: How many element indices ``layout`` lists before it stops and sets ``indices_truncated``.
DEFAULT_MAX_ELEMENTS = 4096


def _device_of(x) -> torch.device:
    return x.device if isinstance(x, torch.Tensor) else torch.device("cpu")


#: How much work ``numpy.shares_memory`` may do before ``shares_memory`` tries another exact method (its solver is
#: exponential in the number of dimensions in the worst case: 6 s at 30 dimensions without a bound).
SOLVER_WORK = 10**5
#: ``shares_memory``'s meet-in-the-middle enumerates at most this many address sums per half (8 bytes each).
MAX_HALF_SUMS = 1 << 22


@dataclass(frozen=True)
class _ByteSet:
    """The bytes an array or tensor covers: ``itemsize`` bytes at ``start + sum(i_k * step_k)`` for every index
    with ``0 <= i_k < size_k``. Dimensions that add no byte (size 1, stride 0) are dropped, negative steps turned
    around (the set is the same), and dimensions that continue each other merged (a contiguous 64-dimension
    tensor is one dimension): the set is what matters, not the order."""

    start: int
    itemsize: int
    dims: tuple[tuple[int, int], ...]  # (size, step in bytes), steps ascending

    @property
    def count(self) -> int:
        return math.prod(size for size, _ in self.dims)

    def array(self) -> np.ndarray:
        """A numpy array over exactly these bytes (no copy; ``numpy.shares_memory`` compares addresses only)."""

        class _Interface:
            __array_interface__ = {
                "version": 3,
                "shape": tuple(size for size, _ in self.dims),
                "strides": tuple(step for _, step in self.dims),
                "typestr": f"|V{self.itemsize}",
                "data": (self.start, True),
            }

        return np.asarray(_Interface())


def _simplified(start: int, itemsize: int, dims) -> _ByteSet:
    """A ``_ByteSet`` with its dimensions dropped, turned and merged (see ``_ByteSet``)."""
    kept = []
    for size, step in dims:
        if size == 1 or step == 0:
            continue
        if step < 0:  # walk it the other way: from its last element, forwards
            start += (size - 1) * step
            step = -step
        kept.append((size, step))
    merged: list[tuple[int, int]] = []
    for size, step in sorted(kept, key=lambda dim: dim[1]):
        if merged and step == merged[-1][0] * merged[-1][1]:  # picks up exactly where the smaller one ends
            merged[-1] = (merged[-1][0] * size, merged[-1][1])
        else:
            merged.append((size, step))
    return _ByteSet(start, itemsize, tuple(merged))


def _covered_bytes(x, name: str) -> _ByteSet | None:
    """The bytes ``x`` covers, from its address, strides and itemsize (never from its data, so CUDA tensors and dtypes
    numpy does not know, bfloat16, float8, quantized, work too). None for no elements: it covers no bytes.

    Raises:
        ValueError: a nested tensor, or a tensor whose storage is smaller than its elements need (a storage resized
            to 0, as FSDP does to a sharded parameter): it has no memory to compare.
    """
    if isinstance(x, np.ndarray):
        if not x.size:
            return None
        dims = zip(x.shape, x.strides)
        return _simplified(x.__array_interface__["data"][0], x.itemsize, dims)
    tensor = require_tensor(x, name, allow_meta=False)
    if tensor.is_nested:
        raise ValueError(f"{name} is a nested tensor: its parts have no single shape and stride")
    if tensor.numel() == 0:
        return None
    itemsize = tensor.element_size()
    needed = (tensor.storage_offset() + sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride())) + 1) * itemsize
    held = tensor.untyped_storage().nbytes()
    if held < needed:
        raise ValueError(
            f"{name} has no memory to compare: its elements need {needed:,} bytes of storage but its storage holds "
            f"{held:,} (resized, as FSDP does to a sharded parameter's storage)"
        )
    dims = ((size, step * itemsize) for size, step in zip(tensor.shape, tensor.stride()))
    return _simplified(tensor.data_ptr(), itemsize, dims)


def _sums(dims) -> np.ndarray:
    """Every ``sum(i_k * step_k)`` over the (size, step) ``dims``, as int64."""
    sums = np.zeros(1, dtype=np.int64)
    for size, step in dims:
        sums = (sums[:, None] + np.arange(size, dtype=np.int64) * step).ravel()
    return sums


def _halves(dims: list) -> tuple[list, list] | None:
    """``dims`` split in two whose index counts are both at most ``MAX_HALF_SUMS``, as even as a greedy split
    gets them (largest first, into the smaller half); None when no such split is found."""
    first, second, count_first, count_second = [], [], 1, 1
    for dim in sorted(dims, key=lambda d: -d[0]):
        if count_first <= count_second:
            first.append(dim)
            count_first *= dim[0]
        else:
            second.append(dim)
            count_second *= dim[0]
    return (first, second) if max(count_first, count_second) <= MAX_HALF_SUMS else None


def _overlap_by_halves(a: _ByteSet, b: _ByteSet) -> bool | None:
    """Whether ``a`` and ``b`` overlap, exactly, by meeting in the middle; None when that needs too many sums.

    An element of ``a`` at address ``p`` and one of ``b`` at ``q`` share a byte when ``-a.itemsize < p - q <
    b.itemsize``. ``p - q`` is the starts' difference plus a sum over ``a``'s dimensions and ``b``'s (negated):
    the sums of one half of those dimensions are sorted, and for each sum of the other half one binary search
    says whether a partner lands in the window. Work: about the square root of ``a.count * b.count``.
    """
    dims = list(a.dims) + [(size, -step) for size, step in b.dims]
    split = _halves(dims)
    if split is None:
        return None
    # p - q = (a.start - b.start) + s1 + s2, so the sums s1 + s2 that share a byte lie in [lowest, highest]
    lowest = -(a.itemsize - 1) - (a.start - b.start)
    highest = (b.itemsize - 1) - (a.start - b.start)
    # both halves sorted: the binary searches then walk memory in order (unsorted, 4x slower at 2**20 sums)
    left, right = np.sort(_sums(split[0])), np.sort(_sums(split[1]))
    position = np.searchsorted(right, lowest - left[::-1], side="left")[::-1]  # the least s2 >= lowest - s1
    inside = position < len(right)
    found = right[np.minimum(position, len(right) - 1)] <= highest - left
    return bool(np.any(inside & found))


def _check_array_or_tensor(x, name: str) -> None:
    require_type(x, (torch.Tensor, np.ndarray), name, "a torch.Tensor or a numpy.ndarray")


def shares_memory(a, b) -> bool:
    """Whether some byte of an element of ``a`` is also a byte of an element of ``b``.

    Exact, like ``numpy.shares_memory(a, b, max_work=None)``, computed from addresses and strides only, so large
    tensors cost no more than small ones. The overlap question is hard in general (a subset sum): after merging
    dimensions that continue each other, numpy's solver gets a bounded amount of work; when that is not enough,
    a meet-in-the-middle search answers exactly in about the square root of the two tensors' element counts
    (milliseconds for 30 dimensions of random strides against one element); only when both are out of reach
    does numpy's solver run unbounded. Two rows of one matrix share a storage but not memory; a tensor and its
    transpose share memory.

    Args:
        a, b: torch tensors (any dtype, shape and strides, 0-dim, empty, expanded with stride 0, on any
            device) or numpy arrays, in any mix.

    Returns:
        True exactly when the two overlap in memory. Tensors on different devices never do.

    Raises:
        TypeError: ``a`` or ``b`` is neither a tensor nor an ndarray.
        ValueError: a sparse, nested or meta tensor (they have no strided memory to compare), or a tensor whose
            storage was resized below what its elements need (``untyped_storage().resize_(0)``).
    """
    _check_array_or_tensor(a, "a")
    _check_array_or_tensor(b, "b")
    bytes_a, bytes_b = _covered_bytes(a, "a"), _covered_bytes(b, "b")
    if bytes_a is None or bytes_b is None:
        return False
    if _device_of(a) != _device_of(b):
        return False
    try:
        return bool(np.shares_memory(bytes_a.array(), bytes_b.array(), max_work=SOLVER_WORK))
    except _TOO_HARD:
        pass
    by_halves = _overlap_by_halves(bytes_a, bytes_b)
    if by_halves is not None:
        return by_halves
    return bool(np.shares_memory(bytes_a.array(), bytes_b.array(), max_work=None))


_TOO_HARD = getattr(getattr(np, "exceptions", np), "TooHardError", None) or np.TooHardError


def same_storage(a, b) -> bool:
    """Whether two tensors are windows onto the same storage allocation.

    Rows 0 and 3 of one matrix use the same storage (True) although they share no element; compare
    ``shares_memory``. Two tensors with separate storages that happen to alias the same numpy buffer
    (two calls to ``torch.from_numpy``) count as the same storage when the storages start at the same
    address.

    Args:
        a, b: torch tensors (strided, any device; meta tensors compare by storage object).

    Returns:
        True when both use one storage.

    Raises:
        TypeError: ``a`` or ``b`` is not a torch.Tensor.
        ValueError: a sparse or nested tensor.
    """
    tensor_a = require_tensor(a, "a")
    tensor_b = require_tensor(b, "b")
    for name, tensor in (("a", tensor_a), ("b", tensor_b)):
        if tensor.is_nested:
            raise ValueError(f"{name} is a nested tensor: it has no single storage")
    if tensor_a.device != tensor_b.device:
        return False
    storage_a, storage_b = tensor_a.untyped_storage(), tensor_b.untyped_storage()
    if storage_a._cdata == storage_b._cdata:
        return True
    # Zero-byte storages torch allocated all report address 0 (and meta storages have none): only identity counts.
    pointer_a, pointer_b = storage_a.data_ptr(), storage_b.data_ptr()
    return pointer_a != 0 and pointer_a == pointer_b


@dataclass(frozen=True)
class Layout:
    """Where a tensor's elements live inside its storage (an immutable snapshot; see ``layout``).

    Element ``t[i0, i1, ...]`` lives at ``storage[storage_offset + i0*stride[0] + i1*stride[1] + ...]``,
    counted in elements of ``dtype``; ``element_indices`` lists that index for each element in row-major
    order (the order ``t.flatten()`` visits them), for the first ``max_elements`` elements only when
    ``indices_truncated`` is True.
    """

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    storage_offset: int
    dtype: torch.dtype
    itemsize: int
    device: str
    numel: int
    storage_numel: int
    storage_nbytes: int
    is_contiguous: bool
    element_indices: tuple[int, ...]
    indices_truncated: bool

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def index_of(self, *index: int) -> int:
        """The storage index of element ``t[index]`` (the address formula, with bounds checked)."""
        if len(index) != self.ndim:
            raise ValueError(f"index must have {self.ndim} entries (one per dimension), got {len(index)}")
        for dim, (i, size) in enumerate(zip(index, self.shape)):
            i = require_int(i, f"index[{dim}]")
            if not 0 <= i < size:
                raise ValueError(f"index[{dim}] must be in [0, {size}), got {i}")
        return self.storage_offset + sum(i * step for i, step in zip(index, self.stride))

    @property
    def index_range(self) -> tuple[int, int] | None:
        """The lowest and highest storage index any element uses, or None for an empty tensor."""
        if self.numel == 0:
            return None
        highest = self.storage_offset + sum((size - 1) * step for size, step in zip(self.shape, self.stride))
        return self.storage_offset, highest

    @property
    def byte_range(self) -> tuple[int, int] | None:
        """The bytes ``[start, stop)`` from the lowest element's first byte to the highest's last; None if empty."""
        span = self.index_range
        return None if span is None else (span[0] * self.itemsize, (span[1] + 1) * self.itemsize)

    @property
    def has_internal_overlap(self) -> bool | None:
        """Whether two elements share a storage index (as after ``expand``); None if unknown (too big)."""
        if self.numel == 0:
            return False
        dims = sorted((step, size) for size, step in zip(self.shape, self.stride) if size > 1)
        if any(step == 0 for step, _ in dims):
            return True
        reach = 0  # furthest index reachable from the start using the smaller-stride dimensions
        for step, size in dims:
            if step <= reach:
                break
            reach += step * (size - 1)
        else:
            return False
        if not self.indices_truncated:
            return len(set(self.element_indices)) != len(self.element_indices)
        return None

    def formula(self) -> str:
        """The address formula for this layout, e.g. ``storage[1 + 3*i0 + 1*i1]``."""
        terms = [str(self.storage_offset)] + [f"{step}*i{dim}" for dim, step in enumerate(self.stride)]
        return f"storage[{' + '.join(terms)}]"

    def positions_at(self, indices, tail: int = 0) -> dict[int, list[int]]:
        """``{storage index: [row-major positions]}`` of the listed elements whose storage index is in ``indices``.

        When the listing is truncated, the last ``tail`` elements are looked up too (with the address formula),
        so the end of a long tensor is known exactly as well. Elements neither listed nor in the tail are absent.
        """
        wanted = set(indices)
        found: dict[int, list[int]] = {}
        if self.numel == 0 or not wanted:
            return found
        listed = self.element_indices
        if all(-(2**63) <= i < 2**63 for i in (min(listed), max(listed))):
            array = np.asarray(listed, dtype=np.int64)
            hits = np.nonzero(np.isin(array, np.fromiter(sorted(wanted), dtype=np.int64)))[0]
            for position in hits.tolist():
                found.setdefault(int(array[position]), []).append(position)
        else:  # indices past int64 (a meta tensor with huge strides): plain Python ints
            for position, index in enumerate(listed):
                if index in wanted:
                    found.setdefault(index, []).append(position)
        if self.indices_truncated and tail > 0:
            first = max(len(listed), self.numel - tail)
            for offset, index in enumerate(
                row_major_indices(self.shape, self.stride, self.storage_offset, first, self.numel)
            ):
                if index in wanted:
                    found.setdefault(index, []).append(first + offset)
        return found

    def read_counts(self) -> tuple[int, int] | None:
        """The fewest and most elements reading one of the cells this layout reads; None if not all are listed."""
        if self.numel == 0 or self.indices_truncated:
            return None
        counts = np.unique(np.asarray(self.element_indices), return_counts=True)[1]
        return int(counts.min()), int(counts.max())

    def step_targets(self) -> tuple[tuple[int, int, int], ...]:
        """``(dim, from index, to index)`` for one step along each dimension longer than 1, from element 0."""
        if self.numel == 0 or self.ndim == 0:
            return ()
        origin = self.index_of(*([0] * self.ndim))
        return tuple((dim, origin, origin + self.stride[dim]) for dim, size in enumerate(self.shape) if size > 1)

    def _storage_text(self) -> str:
        """The storage's size as whole elements of this dtype, and the bytes left over that hold no whole one."""
        whole = f"{plural(self.storage_numel, 'element')} × {plural(self.itemsize, 'byte')}"
        rest = self.storage_nbytes - self.storage_numel * self.itemsize
        extra = f" + {plural(rest, 'byte')} left over" if rest else ""
        return f"{whole}{extra} = {plural(self.storage_nbytes, 'byte')}"

    def __repr__(self) -> str:
        shown = ", ".join(str(i) for i in self.element_indices[:12])
        if self.numel > 12:
            shown += ", …"
        note = f" (first {len(self.element_indices)} of {self.numel} listed)" if self.indices_truncated else ""
        return (
            f"Layout(shape={self.shape}, stride={self.stride}, storage_offset={self.storage_offset}, "
            f"dtype={self.dtype}, contiguous={self.is_contiguous}, "
            f"storage={self._storage_text()}, "
            f"elements at storage[{shown}]{note})"
        )


def unravel_index(position: int, shape) -> tuple[int, ...]:
    """The index ``(i0, i1, ...)`` of the element at row-major ``position`` in ``shape`` (sizes may be huge).

    Raises:
        TypeError: ``position`` is not an int.
        ValueError: ``position`` is not in ``[0, prod(shape))``.
    """
    position = require_int(position, "position", 0)
    shape = tuple(shape)
    if position >= math.prod(shape):
        raise ValueError(f"position must be below the element count {math.prod(shape):,} of shape {shape}")
    index = []
    for size in reversed(shape):
        position, coordinate = divmod(position, size)
        index.append(coordinate)
    return tuple(reversed(index))


def row_major_indices(shape, stride, offset: int, start: int, stop: int) -> tuple[int, ...]:
    """The storage indices of the elements at row-major positions ``start`` to ``stop - 1``.

    Works for any number of dimensions. Computed with int64 numpy arithmetic when every index fits,
    else with Python ints (a meta tensor's strides can be near 2**63, where int64 would wrap around).
    """
    shape, stride = tuple(shape), tuple(stride)
    if stop <= start:
        return ()
    if not shape:
        return (offset,)
    reach = abs(offset) + sum((size - 1) * abs(step) for size, step in zip(shape, stride))
    if reach < 2**62 and stop < 2**62:
        position = np.arange(start, stop, dtype=np.int64)
        flat = np.full(stop - start, offset, dtype=np.int64)
        for size, step in zip(reversed(shape), reversed(stride)):
            if size > 1:
                flat += (position % size) * step
                position //= size
        return tuple(flat.tolist())
    indices = []
    for position in range(start, stop):
        index = offset
        for size, step in zip(reversed(shape), reversed(stride)):
            position, coordinate = divmod(position, size)
            index += coordinate * step
        indices.append(index)
    return tuple(indices)


@dataclass(frozen=True)
class ReadOverlap:
    """How the cells (or bytes) two layouts read compare: how many distinct ones each reads, how many both read."""

    unit: str  # "cell" when both have one itemsize, else "byte"
    mine: int
    theirs: int
    common: int
    same_order: bool  # both read the same cells in the same row-major order


#: ``compare_reads`` compares two layouts of different itemsizes byte by byte only up to this many bytes each.
MAX_COMPARED_BYTES = 1 << 16


def _byte_set(lay: Layout) -> set[int]:
    """Every byte the listed elements of ``lay`` cover."""
    return {index * lay.itemsize + b for index in set(lay.element_indices) for b in range(lay.itemsize)}


def compare_reads(a: Layout, b: Layout) -> ReadOverlap | None:
    """Which cells ``a`` and ``b`` (over one storage) both read, from their listings.

    Cells when the itemsizes match, else bytes (each at most ``MAX_COMPARED_BYTES``). None when a listing is
    truncated, either is empty, or the bytes are too many: then only ``shares_memory`` can say.

    Raises:
        TypeError: ``a`` or ``b`` is not a Layout.
    """
    for name, value in (("a", a), ("b", b)):
        require_type(value, Layout, name, "a Layout")
    if a.numel == 0 or b.numel == 0 or a.indices_truncated or b.indices_truncated:
        return None
    if a.itemsize == b.itemsize:
        mine, theirs = set(a.element_indices), set(b.element_indices)
        same_order = a.element_indices == b.element_indices
        return ReadOverlap("cell", len(mine), len(theirs), len(mine & theirs), same_order)
    if max(a.numel * a.itemsize, b.numel * b.itemsize) > MAX_COMPARED_BYTES:
        return None
    mine, theirs = _byte_set(a), _byte_set(b)
    return ReadOverlap("byte", len(mine), len(theirs), len(mine & theirs), False)


def layout(t, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Layout:
    """Describe where ``t``'s elements live: shape, strides, offset, storage size and every element's index.

    Args:
        t: a strided torch tensor on any device, meta tensors included (their layout is known although
            they hold no data).
        max_elements: list the storage index of at most this many elements; a larger tensor's listing
            stops there and ``indices_truncated`` is set (a 10^8-element tensor is described instantly).

    Returns:
        A frozen ``Layout``.

    Raises:
        TypeError: ``t`` is not a tensor, or ``max_elements`` is not an int.
        ValueError: ``t`` is sparse or nested, or ``max_elements`` < 1.
    """
    tensor = require_tensor(t, "t")
    require_positive_int(max_elements, "max_elements")
    if tensor.is_nested:
        raise ValueError("t is a nested tensor: its parts have no single shape and stride")
    shape, stride = tuple(tensor.shape), tuple(tensor.stride())
    return _over(tensor, shape, stride, tensor.storage_offset(), max_elements, tensor.is_contiguous())


def _over(tensor, shape: tuple, stride: tuple, offset: int, max_elements: int, contiguous: bool) -> Layout:
    """The ``Layout`` of ``shape``/``stride``/``offset`` over ``tensor``'s storage and dtype."""
    numel = math.prod(shape)
    listed = min(numel, max_elements)
    itemsize = tensor.element_size()
    nbytes = tensor.untyped_storage().nbytes()
    return Layout(
        shape=shape,
        stride=stride,
        storage_offset=offset,
        dtype=tensor.dtype,
        itemsize=itemsize,
        device=str(tensor.device),
        numel=numel,
        storage_numel=nbytes // itemsize,
        storage_nbytes=nbytes,
        is_contiguous=contiguous,
        element_indices=row_major_indices(shape, stride, offset, 0, listed),
        indices_truncated=listed < numel,
    )


def _is_contiguous(shape, stride) -> bool:
    """torch's rule: row-major strides with no gaps, ignoring dimensions of size 1 (an empty tensor always is)."""
    if any(size == 0 for size in shape):
        return True
    expected = 1
    for size, step in zip(reversed(shape), reversed(stride)):
        if size != 1 and step != expected:
            return False
        expected *= size
    return True


def planned_layout(t, shape, stride, storage_offset: int, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Layout:
    """The ``Layout`` that ``t.as_strided(shape, stride, storage_offset)`` would have, even where torch refuses it.

    A setting whose elements run past the end of ``t``'s storage is described anyway (its ``index_range`` then
    ends past ``storage_numel``), so a picture can show where the tensor runs out instead of only that it does.

    Args:
        t: a strided tensor whose storage and dtype the setting is over.
        shape, stride: sequences of ints of one length (sizes and strides 0 or more).
        storage_offset: the first element's storage index (0 or more).
        max_elements: as ``layout``.

    Returns:
        A frozen ``Layout`` over ``t``'s storage.

    Raises:
        TypeError: ``t`` is not a tensor, or an entry is not an int.
        ValueError: lengths differ, or a size, stride or the offset is negative.
    """
    tensor = require_tensor(t, "t")
    require_positive_int(max_elements, "max_elements")
    for name, values in (("shape", shape), ("stride", stride)):
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
            raise TypeError(f"{name} must be a sequence of ints, got {describe(values)}")
    shape = tuple(require_int(v, f"shape[{i}]", 0) for i, v in enumerate(shape))
    stride = tuple(require_int(v, f"stride[{i}]", 0) for i, v in enumerate(stride))
    if len(shape) != len(stride):
        raise ValueError(f"shape and stride must have one entry per dimension, got {len(shape)} and {len(stride)}")
    offset = require_int(storage_offset, "storage_offset", 0)
    return _over(tensor, shape, stride, offset, max_elements, _is_contiguous(shape, stride))


def _format_value(value) -> str:
    """A storage value as short cell text: 3 significant digits, whole floats without a point."""
    if isinstance(value, bool):
        return "T" if value else "F"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, complex):
        return f"{value.real:.2g}{value.imag:+.2g}j"
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e7:
            return str(int(value))
        return f"{value:.3g}"
    return str(value)


def storage_values_text(t, start: int = 0, stop: int | None = None, max_cells: int = 64, dtype=None) -> tuple[str, ...]:
    """Read storage cells ``start`` up to ``stop`` of ``t``'s storage (in ``dtype``, default ``t``'s) as short text.

    This reads the raw storage, whatever ``t``'s own shape and strides are, and never more than
    ``max_cells`` values, so it is cheap for any storage size.

    Args:
        t: a strided tensor; its storage is read as elements of ``dtype``. A meta tensor has no values:
            its cells read as empty strings.
        start: the first storage index (in elements of ``dtype``).
        stop: one past the last storage index; None for the end of the storage.
        max_cells: read at most this many values (from ``start``).
        dtype: read the storage's bytes as this dtype (``start``/``stop`` count its elements); None: ``t.dtype``.

    Returns:
        A tuple of strings, one per value read, e.g. ``('0', '1', '2.5')``.

    Raises:
        TypeError: ``t`` is not a tensor, ``start``/``stop``/``max_cells`` are not ints, or ``dtype`` not a dtype.
        ValueError: the range is outside the storage, or ``max_cells`` < 1.
    """
    tensor = require_tensor(t, "t")
    require_positive_int(max_cells, "max_cells")
    dtype = tensor.dtype if dtype is None else dtype
    require_type(dtype, torch.dtype, "dtype", "a torch.dtype or None")
    storage_numel = tensor.untyped_storage().nbytes() // dtype.itemsize
    start = require_int(start, "start")
    stop = storage_numel if stop is None else require_int(stop, "stop")
    if not 0 <= start <= stop <= storage_numel:
        raise ValueError(
            f"start and stop must satisfy 0 <= start <= stop <= {storage_numel} (the storage's size in "
            f"{dtype_name(dtype)} elements), got start={start}, stop={stop}"
        )
    count = min(stop - start, max_cells)
    if count == 0:
        return ()
    if tensor.device.type == "meta":
        return ("",) * count
    # A fresh tensor set onto the raw storage: t's own view bits (conj, neg) and autograd play no part.
    window = torch.empty(0, dtype=dtype, device=tensor.device)
    window.set_(tensor.untyped_storage(), start, (count,), (1,))
    try:
        values = window.cpu().tolist()
    except (RuntimeError, TypeError):  # quantized and other dtypes without Python values
        return ("?",) * count
    return tuple(_format_value(v) for v in values)
