"""How many bytes a block of code leaves allocated, and the most it held at once.

On CUDA the numbers come from PyTorch's caching allocator (``torch.cuda.memory_allocated`` and
``max_memory_allocated``), which count its blocks: requests rounded up to 512 bytes, and a request of 10 MiB or
more that needs a new segment rounded up to 2 MiB, keeping a leftover of up to 1 MiB (see ``measure_memory``).
It sees what an operation allocates and frees inside itself. On the CPU there is no
such counter, so ``measure_memory`` watches the work at the aten level: every op output that got fresh
storage is counted while that storage is alive, so is the growth of a storage an op resized in place
(``out=`` into an empty tensor, ``resize_``), and an earlier storage that an op in the block used is
counted off when it is freed there (``x = x.relu()`` frees the old ``x``). Memory torch did not allocate
(``torch.from_numpy``, ``torch.as_tensor`` of an array) is not counted, and neither is storage made
without running an aten op, such as the storages ``torch.load`` reads from a file (measure what you do
with a loaded tensor, or compare ``untyped_storage().nbytes()`` instead). Storage is freed the moment its
last reference goes (CPython reference counting), so the CPU figures follow the CUDA allocator's curve for
the tensors ops return, without the rounding. What the CPU watcher cannot see: scratch memory an op allocates
and frees inside itself (``x[x > 0]``, ``median``, ``unique``, some convolutions peak higher than reported),
tensors made in other threads, storage made without an aten op (``copy.deepcopy``, ``pickle``,
``torch.UntypedStorage(n)``), and what another dispatch mode that was already active when the block began
allocates beneath it (a block opened inside ``torch.autograd.graph.allow_mutation_on_saved_tensors()`` misses
its copies). Nothing is printed: no profiler is involved.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Iterator

import torch

from ._checks import describe
from ._dispatch import WatcherMode
from .ops import _FRESH_LITERAL_OPS, _is_fresh_literal, _storage_key, _tensors_in

MiB = 1024 * 1024


def format_bytes(n: int) -> str:
    """Exact bytes, then the size in the largest binary unit that keeps it at least 1.

    ``400000000`` -> ``'400,000,000 B (381.47 MiB)'``, ``4096`` -> ``'4,096 B (4.00 KiB)'``, ``512`` -> ``'512 B'``.
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int number of bytes, got {describe(n)}")
    exact = f"{n:,} B"
    for name, size in (("GiB", 2**30), ("MiB", MiB), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{exact} ({n / size:.2f} {name})"
    return exact


class MemoryReport:
    """What ``measure_memory`` found. Fields are None until the block has finished.

    Attributes:
        device: the device measured.
        allocated: net change in bytes held by tensors: what the block leaves alive (negative when it
            freed more than it kept).
        peak: the largest extra amount held at any moment inside the block, temporaries included.
        reserved: CUDA only: the net change in memory the caching allocator reserved from the driver
            (what ``nvidia-smi`` sees grow); None on the CPU, where there is no such cache.
        method: how the figures were obtained.
        timeline: one ``(aten op, bytes held)`` pair per op run in the block, bytes counted from the start
            of the block after the op finished (for drawing memory over time).
    """

    def __init__(self, device: torch.device, method: str):
        self.device = device
        self.method = method
        self.allocated: int | None = None
        self.peak: int | None = None
        self.reserved: int | None = None
        self.timeline: tuple[tuple[str, int], ...] = ()

    def __repr__(self) -> str:
        if self.allocated is None:
            return f"MemoryReport(device='{self.device}', still measuring)"
        parts = [f"allocated={format_bytes(self.allocated)}", f"peak={format_bytes(self.peak)}"]
        if self.reserved is not None:
            parts.append(f"reserved={format_bytes(self.reserved)}")
        return f"MemoryReport(device='{self.device}', " + ", ".join(parts) + ")"


class _StorageTracker(WatcherMode):
    """Counts bytes of storages on one device that ops create, and of earlier ones that die, over time."""

    def __init__(self, device: torch.device, read_allocator=None):
        super().__init__()
        self.device = device
        self.current = 0
        self.peak = 0
        self.timeline: list[tuple[str, int]] = []
        self._read_allocator = read_allocator  # on CUDA the timeline reads the allocator instead
        self._watched: dict[int, weakref.finalize] = {}
        self._nbytes: dict[int, int] = {}  # the size each watched storage was last seen with

    def _watch(self, tensor: torch.Tensor, counted: bool) -> None:
        storage = tensor.untyped_storage()
        key = storage._cdata
        if key in self._watched:
            self._resized(storage, key)
            return
        # Memory torch did not allocate (torch.from_numpy, DLPack) is neither gained nor lost with it.
        nbytes = storage.nbytes() if storage.resizable() else 0
        if counted:
            self._add(nbytes)
        self._nbytes[key] = nbytes
        self._watched[key] = weakref.finalize(storage, self._freed, key)

    def _resized(self, storage, key: int) -> None:
        """An op wrote into a storage and grew or shrank it (``out=`` into an empty tensor, ``resize_``)."""
        if not storage.resizable():
            return
        nbytes = storage.nbytes()
        self._add(nbytes - self._nbytes[key])
        self._nbytes[key] = nbytes

    def _add(self, nbytes: int) -> None:
        self.current += nbytes
        self.peak = max(self.peak, self.current)

    def _freed(self, key: int) -> None:
        self._watched.pop(key, None)
        self.current -= self._nbytes.pop(key)

    def _on_device(self, tensor: torch.Tensor) -> bool:
        return tensor.device == self.device and tensor.layout == torch.strided

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        inputs = [t for t in _tensors_in((args, kwargs)) if self._on_device(t)]
        if name not in _FRESH_LITERAL_OPS:  # a literal's storage is from inside the block: watched below
            for tensor in inputs:  # storages from before the block: count them off if they die inside it
                self._watch(tensor, counted=False)
        result = func(*args, **kwargs)
        input_keys = {_storage_key(t) for t in inputs}
        for output in _tensors_in(result):
            if not self._on_device(output):
                continue
            if _is_fresh_literal(name, output) or _storage_key(output) not in input_keys:
                self._watch(output, counted=True)
            else:  # a view or an in-place write: counts only if the write resized the storage
                self._watch(output, counted=False)
        held = self._read_allocator() if self._read_allocator else self.current
        self.timeline.append((func._schema.name, held))
        return result

    def stop(self) -> None:
        for finalizer in self._watched.values():
            finalizer.detach()
        self._watched.clear()
        self._nbytes.clear()


def _resolve_device(device) -> torch.device:
    if device is None:
        return torch.get_default_device()
    if isinstance(device, str):
        try:
            device = torch.device(device)
        except RuntimeError as error:
            raise ValueError(f"device must name a device such as 'cpu' or 'cuda', got {device!r}") from error
    if not isinstance(device, torch.device):
        raise TypeError(f"device must be None, a str or a torch.device, got {describe(device)}")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            # torch.cuda.memory_allocated() would answer 0 here without complaint: never report that.
            raise ValueError("device is 'cuda' but CUDA is not available on this machine; measure on 'cpu'")
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
    elif device.type != "cpu":
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device.type!r}")
    return device


@contextlib.contextmanager
def measure_memory(device=None) -> Iterator[MemoryReport]:
    """Measure the tensor memory a block leaves allocated (``.allocated``) and its peak (``.peak``).

    Usage::

        with measure_memory() as mem:
            y = torch.relu(x)       # x: 10000 x 10000 float32
        mem.allocated               # 400_000_000; with x.relu_() instead: 0

    On the CPU the figures are the bytes of the storages that aten ops create and free. On CUDA they are
    differences of ``torch.cuda.memory_allocated()`` and ``max_memory_allocated()``, which count the caching
    allocator's blocks, not the tensors' bytes: in torch 2.13 (``c10/cuda/CUDACachingAllocator.cpp``, default
    settings) a request is rounded up to a multiple of 512 bytes, a request of 10 MiB or more that needs a new
    segment gets one rounded up to a multiple of 2 MiB, and a large-pool block is split only when more than 1 MiB
    would be left over. So the same ``torch.relu(x)`` on a fresh GPU gives ``allocated == 400_556_032``
    (191 x 2 MiB, the 382.00 MiB of chapter 6), and any one tensor can count up to about 1 MiB more than its
    bytes. The plain-PyTorch equivalents: ``torch.profiler.profile(profile_memory=True)`` on the CPU;
    ``torch.cuda.reset_peak_memory_stats()``, then ``memory_allocated()`` / ``max_memory_allocated()`` around
    the block on CUDA.

    Args:
        device: ``None`` (the default device, normally the CPU), ``'cpu'``, ``'cuda'``, ``'cuda:N'`` or a
            ``torch.device``.

    Yields:
        A ``MemoryReport`` whose fields are filled in when the block ends (also when it raises).

    Raises:
        TypeError: ``device`` is not None, a str or a torch.device.
        ValueError: an unknown device, or CUDA asked for where CUDA is not available.
    """
    device = _resolve_device(device)
    if device.type == "cuda":
        report = MemoryReport(device, "CUDA caching allocator (torch.cuda.memory_allocated)")
        torch.cuda.synchronize(device)
        start_allocated = torch.cuda.memory_allocated(device)
        start_reserved = torch.cuda.memory_reserved(device)
        torch.cuda.reset_peak_memory_stats(device)
        tracker = _StorageTracker(device, lambda: torch.cuda.memory_allocated(device) - start_allocated)
        try:
            with tracker:
                yield report
        finally:
            tracker.stop()
            report.timeline = tuple(tracker.timeline)
            torch.cuda.synchronize(device)
            report.allocated = torch.cuda.memory_allocated(device) - start_allocated
            report.peak = max(0, torch.cuda.max_memory_allocated(device) - start_allocated)
            report.reserved = torch.cuda.memory_reserved(device) - start_reserved
        return
    report = MemoryReport(device, "storages created and freed by aten ops (CPU)")
    tracker = _StorageTracker(device)
    try:
        with tracker:
            yield report
    finally:
        tracker.stop()
        report.timeline = tuple(tracker.timeline)
        report.allocated = tracker.current
        report.peak = tracker.peak
