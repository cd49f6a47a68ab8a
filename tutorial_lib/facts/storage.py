"""Where a tensor's elements live: storage sharing and strided layout.

Every fact here is computed from a tensor's own metadata (data pointer, shape, strides, storage offset)
and checked in ``tests/test_storage.py`` against ground truth from torch (``as_strided`` over an
``arange`` storage, per-element data pointers) and numpy (``numpy.shares_memory``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..common.checks import describe, require_positive_int, require_tensor

#: How many element indices ``layout`` lists before it stops and sets ``indices_truncated``.
DEFAULT_MAX_ELEMENTS = 4096


def _device_of(x) -> torch.device:
    return x.device if isinstance(x, torch.Tensor) else torch.device("cpu")


def _byte_view(x, name: str) -> np.ndarray | None:
    """A numpy array describing exactly the bytes ``x`` covers (its address, byte strides, itemsize).

    For a tensor the array is built from its data pointer without copying; it is only ever handed to
    ``numpy.shares_memory``, which compares addresses and never reads the bytes, so this also works for
    CUDA tensors and for dtypes numpy does not know (bfloat16, float8, quantized). Returns None for an
    array with no elements: it covers no bytes.
    """
    if isinstance(x, np.ndarray):
        return x if x.size else None
    tensor = require_tensor(x, name, allow_meta=False)
    if tensor.is_nested:
        raise ValueError(f"{name} is a nested tensor: its parts have no single shape and stride")
    if tensor.numel() == 0:
        return None
    itemsize = tensor.element_size()
    # Dimensions of size 1 or stride 0 add no byte that another element does not already cover, so they
    # are left out: the byte set is the same, and a tensor may have more dimensions (torch allows any
    # number) than a numpy array (at most 64). What remains has at most 63: numel fits in an int64.
    kept = [(size, step) for size, step in zip(tensor.shape, tensor.stride()) if size != 1 and step != 0]

    class _Interface:
        __array_interface__ = {
            "version": 3,
            "shape": tuple(size for size, _ in kept),
            "strides": tuple(step * itemsize for _, step in kept),
            "typestr": f"|V{itemsize}",
            "data": (tensor.data_ptr(), True),
        }

    return np.asarray(_Interface())


def _check_array_or_tensor(x, name: str) -> None:
    if not isinstance(x, (torch.Tensor, np.ndarray)):
        raise TypeError(f"{name} must be a torch.Tensor or a numpy.ndarray, got {describe(x)}")


def shares_memory(a, b) -> bool:
    """Whether some byte of an element of ``a`` is also a byte of an element of ``b``.

    Exact, like ``numpy.shares_memory(a, b, max_work=None)`` (which it uses on the tensors' addresses,
    so large tensors cost no more than small ones). Two rows of one matrix share a storage but not
    memory; a tensor and its transpose share memory.

    Args:
        a, b: torch tensors (any dtype, shape and strides, 0-dim, empty, expanded with stride 0, on any
            device) or numpy arrays, in any mix.

    Returns:
        True exactly when the two overlap in memory. Tensors on different devices never do.

    Raises:
        TypeError: ``a`` or ``b`` is neither a tensor nor an ndarray.
        ValueError: a sparse, nested or meta tensor (they have no strided memory to compare).
    """
    _check_array_or_tensor(a, "a")
    _check_array_or_tensor(b, "b")
    view_a, view_b = _byte_view(a, "a"), _byte_view(b, "b")
    if view_a is None or view_b is None:
        return False
    if _device_of(a) != _device_of(b):
        return False
    return bool(np.shares_memory(view_a, view_b, max_work=None))


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
    # Storages of zero bytes all report address 0 (and meta storages have none): only identity counts.
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
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"index[{dim}] must be an int, got {describe(i)}")
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

    def __repr__(self) -> str:
        shown = ", ".join(str(i) for i in self.element_indices[:12])
        if self.numel > 12:
            shown += ", …"
        note = f" (first {len(self.element_indices)} of {self.numel} listed)" if self.indices_truncated else ""
        return (
            f"Layout(shape={self.shape}, stride={self.stride}, storage_offset={self.storage_offset}, "
            f"dtype={self.dtype}, contiguous={self.is_contiguous}, "
            f"storage={self.storage_numel} elements × {self.itemsize} bytes = {self.storage_nbytes} bytes, "
            f"elements at storage[{shown}]{note})"
        )


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
    offset = tensor.storage_offset()
    numel = tensor.numel()
    listed = min(numel, max_elements)
    indices = row_major_indices(shape, stride, offset, 0, listed)
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
        is_contiguous=tensor.is_contiguous(),
        element_indices=indices,
        indices_truncated=listed < numel,
    )
