"""Python names, the tensor objects they name, and the storages those objects read: what ``id()``, the version
counter and the storage's data pointer say at one moment.

``names_snapshot(x=x, y=y)`` records it as plain data and keeps a reference to each tensor, so no id or address
it records can be reused by another object while the snapshot lives. Two snapshots taken around a line
(``y = x + y``, ``y += x``) show whether the line made a new object, a new storage, or wrote in place.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import torch

from ..common.checks import require_tensor, require_type
from ..common.text import dtype_name, tuple_text
from .storage import storage_values_text

MAX_VALUES = 4  # values a snapshot reads from the start of each storage, for the picture
DIGEST_BYTES = 1 << 20  # storages up to this many bytes get a digest of their bytes: a write in place shows


@dataclass(frozen=True)
class StorageRecord:
    """One storage: where its bytes start (``data_ptr``), how many, its first values, and a digest of its bytes
    (None past ``DIGEST_BYTES`` or for a meta tensor)."""

    data_ptr: int
    nbytes: int
    values: tuple[str, ...]
    digest: str | None

    @property
    def key(self) -> tuple[int, int]:
        """What tells storages apart while their tensors are alive: the address and size of their bytes."""
        return self.data_ptr, self.nbytes


@dataclass(frozen=True)
class TensorRecord:
    """One tensor object: its ``id()``, version counter, shape, dtype and the storage it reads."""

    object_id: int
    version: int
    shape: tuple[int, ...]
    dtype: torch.dtype
    storage: StorageRecord

    def describe(self) -> str:
        """e.g. 'shape (3,) float32'."""
        return f"shape {tuple_text(self.shape)} {dtype_name(self.dtype)}"


@dataclass(frozen=True)
class NamesSnapshot:
    """Names bound to tensor objects at one moment (``names_snapshot``)."""

    names: tuple[tuple[str, TensorRecord], ...]
    tensors: tuple[torch.Tensor, ...] = field(repr=False, compare=False)  # kept alive: ids and addresses stay theirs

    def objects(self) -> tuple[TensorRecord, ...]:
        """Each tensor object once, in the order of its first name."""
        return tuple({record.object_id: record for _, record in self.names}.values())

    def storages(self) -> tuple[StorageRecord, ...]:
        """Each storage once, in the order of the first object reading it."""
        return tuple({obj.storage.key: obj.storage for obj in self.objects()}.values())


def _storage_record(t: torch.Tensor) -> StorageRecord:
    storage = t.untyped_storage()
    nbytes = storage.nbytes()
    if t.device.type == "meta":
        return StorageRecord(0, nbytes, (), None)
    count = min(MAX_VALUES, nbytes // t.element_size())
    values = storage_values_text(t, 0, count, max(count, 1)) if count else ()
    digest = None
    if nbytes <= DIGEST_BYTES:
        raw = torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage, 0, (nbytes,), (1,))
        digest = hashlib.sha1(raw.cpu().numpy().tobytes()).hexdigest()
    return StorageRecord(storage.data_ptr(), nbytes, values, digest)


def names_snapshot(names=None, /, **tensors) -> NamesSnapshot:
    """Record which tensor object each name holds now, and which storage each object reads.

    Args:
        names: a dict ``{name: tensor}`` (for names that are not Python identifiers, such as ``"old y"``), or None.
        **tensors: more names, e.g. ``names_snapshot(x=x, y=y)``.

    Returns:
        A ``NamesSnapshot``: per name the object's ``id()``, version counter, shape and dtype, and its storage's
        data pointer, size, first values and a digest of its bytes. It keeps each tensor alive.

    Raises:
        TypeError: ``names`` is not a dict, a name is not a str, or a value is not a tensor.
        ValueError: no names, or a name given twice.
    """
    given = {}
    if names is not None:
        require_type(names, dict, "names", "a dict {name: tensor}")
        given.update(names)
    for name in tensors:
        if name in given:
            raise ValueError(f"the name {name!r} is given twice")
    given.update(tensors)
    if not given:
        raise ValueError("give at least one name, e.g. names_snapshot(x=x, y=y)")
    records, kept = [], []
    for name, value in given.items():
        require_type(name, str, "a name", "a str")
        tensor = require_tensor(value, name)
        record = TensorRecord(id(tensor), tensor._version, tuple(tensor.shape), tensor.dtype, _storage_record(tensor))
        records.append((name, record))
        kept.append(tensor)
    return NamesSnapshot(tuple(records), tuple(kept))
