"""Where a tensor's storage lives: this process's own memory, shared memory another process can map, a file mapped
into memory, a GPU, or nowhere (``meta``); and what a file ``torch.save`` wrote holds (one record per storage).
Chapter 7's places, read from torch and the operating system, never from a table."""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass

import torch

from ..common.checks import describe, require_tensor
from .storage import same_storage

OWN, SHARED, META = "this process's memory", "shared memory", "meta: no memory"
OWN_OR_MAPPED = "this process's memory or a mapped file (no /proc/self/maps here to tell)"


@dataclass(frozen=True)
class StoragePlace:
    """One storage and where it lives.

    ``place``: ``OWN``, ``SHARED`` (``is_shared()``: other processes can map it), ``"file <name>, mapped"``
    (``torch.load(..., mmap=True)``: the storage is the file's pages), the device (``"cuda:0"``), or ``META``.
    ``names``: the tensors given that use this storage, in the order given. ``data_ptr``: the storage's address
    in this process (0 on ``meta``).
    """

    names: tuple[str, ...]
    place: str
    nbytes: int
    data_ptr: int
    is_shared: bool
    mapped_file: str | None


@dataclass(frozen=True)
class SavedFile:
    """What ``torch.save`` wrote: the file's size and its storage records (``data/<key>``: one per storage)."""

    name: str
    nbytes: int
    records: tuple[tuple[str, int], ...]


def mapped_file(address: int) -> str | None:
    """The file behind the memory at ``address`` in this process (Linux ``/proc/self/maps``); None for anonymous
    memory or where the system has no such map."""
    if not address or not os.path.exists("/proc/self/maps"):
        return None
    with open("/proc/self/maps") as memory_map:
        for line in memory_map:
            fields = line.split(maxsplit=5)
            low, high = (int(value, 16) for value in fields[0].split("-"))
            if low <= address < high:
                path = fields[5].strip() if len(fields) == 6 else ""
                return os.path.basename(path) if path.startswith("/") else None
    return None


def _place(tensor: torch.Tensor, storage) -> tuple[str, bool, str | None]:
    if tensor.device.type == "meta":
        return META, False, None
    if tensor.device.type != "cpu":
        return str(tensor.device), storage.is_shared(), None
    if storage.is_shared():
        return SHARED, True, None
    if not os.path.exists("/proc/self/maps"):  # not Linux: a mapped file cannot be told from own memory here
        return OWN_OR_MAPPED, False, None
    backing = mapped_file(storage.data_ptr())
    return (f"file {backing}, mapped" if backing else OWN), False, backing


def storage_places(tensors) -> tuple[StoragePlace, ...]:
    """Each storage behind ``tensors`` and where it lives; tensors on one storage are grouped.

    Args:
        tensors: ``{name: tensor}`` (strided tensors on any device).

    Returns:
        One ``StoragePlace`` per storage, in the order its first tensor was given.

    Raises:
        TypeError: ``tensors`` is not a dict of str to tensors.
        ValueError: ``tensors`` is empty.
    """
    if not isinstance(tensors, dict):
        raise TypeError(f"tensors must be a dict {{name: tensor}}, got {describe(tensors)}")
    if not tensors:
        raise ValueError("tensors must name at least one tensor, got an empty dict")
    groups: list[list[tuple[str, torch.Tensor]]] = []
    for name, tensor in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensors' names must be str, got {describe(name)}")
        require_tensor(tensor, f"tensors[{name!r}]")
        for group in groups:
            if same_storage(group[0][1], tensor):
                group.append((name, tensor))
                break
        else:
            groups.append([(name, tensor)])
    places = []
    for group in groups:
        tensor = group[0][1]
        storage = tensor.untyped_storage()
        place, shared, backing = _place(tensor, storage)
        pointer = storage.data_ptr() if tensor.device.type != "meta" else 0
        places.append(StoragePlace(tuple(n for n, _ in group), place, storage.nbytes(), pointer, shared, backing))
    return tuple(places)


def saved_file(source, name: str | None = None) -> SavedFile:
    """The size of a file ``torch.save`` wrote and its storage records, read from its zip directory.

    Args:
        source: a path, or the bytes / ``io.BytesIO`` it was saved into.
        name: what to call it; None: the path's file name, or ``"in memory"``.

    Raises:
        TypeError: ``source`` is none of these. ValueError: it is not a zip file (``torch.save`` writes one).
    """
    if isinstance(source, io.BytesIO):
        opened, size, default = io.BytesIO(source.getbuffer()), source.getbuffer().nbytes, "in memory"
    elif isinstance(source, (bytes, bytearray)):
        opened, size, default = io.BytesIO(source), len(source), "in memory"
    elif isinstance(source, (str, os.PathLike)):
        # zipfile reads the directory at the end of the file only: a 10 GB checkpoint is not read
        opened, size, default = os.fspath(source), os.path.getsize(source), os.path.basename(os.fspath(source))
    else:
        raise TypeError(f"source must be a path, bytes or io.BytesIO, got {describe(source)}")
    try:
        archive = zipfile.ZipFile(opened)
    except zipfile.BadZipFile:
        raise ValueError("source is not a file torch.save wrote (not a zip archive)") from None
    with archive:
        records = tuple(
            (info.filename.split("/data/", 1)[1], info.file_size)
            for info in archive.infolist()
            if "/data/" in info.filename and not info.filename.endswith(".pkl")
        )
    return SavedFile(name or default, size, records)
