"""How many bytes a block of code leaves allocated, and the most it held at once.

On CUDA the numbers come from PyTorch's caching allocator (``torch.cuda.memory_allocated`` and
``max_memory_allocated``), which count its blocks: requests rounded up to 512 bytes, and a request of 10 MiB or
more that needs a new segment rounded up to 2 MiB, keeping a leftover of up to 1 MiB (see ``measure_memory``).

On the CPU there is no such counter, but the CPU allocator reports every allocation and every free, with its
address and size, to PyTorch's profiler when memory profiling is on (``c10/core/CPUAllocator.cpp``,
``ProfiledCPUMemoryReporter``). ``measure_memory`` runs that profiler (CPU activity only, memory only) for the
block and adds up its events, so the CPU figures count what the allocator counts: tensors that ops return,
the scratch memory an op allocates and frees inside itself (``x[x > 0]``, ``unique``, ``median``, convolutions),
and storage made without an aten op (``copy.deepcopy``, ``pickle.loads``, ``torch.UntypedStorage(n)``). A
dispatch mode still names the aten op each event happened in (the timeline). An allocation made between two ops
(a Python number wrapped as a tensor for the next op, the first storage of ``copy.deepcopy``) is counted at once
and shows in the next op's entry; those made after the last op get a last entry named ``OUTSIDE_ANY_OP``.

The profiler reports the free of a CPU block only when the allocator recorded the block's size, which it does
only while a profiler runs in the allocating thread. So when a block starts, ``measure_memory`` first collects
Python's young garbage (``gc.collect(1)``, so that garbage from before the block is not freed inside it by
chance), then lists every CPU storage Python can reach (``live_storages``: tensors wherever they are held, their
``.grad``, the tensors their autograd graphs saved) and watches each for its free. Those frees count, at the
moment they happen: ``optimizer.zero_grad()`` dropping the old gradients (its default, ``set_to_none=True``,
runs no op), ``out = model(x)`` letting the previous output and its graph go, ``y = x * 3`` over an older
``y``, ``del x``, re-running a ``%%measure_memory`` cell. A storage that an op or ``share_memory_()`` moves to a
new block gives its old block back when the new one is made (``resize_``, ``set_``). A tensor from before the
block that Python's garbage collector frees during it (a full collection) counts too: it is memory the block saw
go.

Memory other than the CPU allocator's, on the CPU (``SOURCES`` names each allocation's):

- file and shared-memory mappings (``at::MapAllocator``: ``share_memory_()``, a batch from DataLoader workers,
  ``torch.load(mmap=True)``, ``UntypedStorage.from_file``) report their full size to the profiler when mapped
  and when unmapped, whether or not their pages are in RAM: they count, as "mapping";
- pinned memory, when CUDA is present (``pin_memory()``, ``save_on_cpu(pin_memory=True)``), comes from CUDA's
  host allocator, which reports nothing: the op that returns it is watched and it counts, as "pinned", until its
  storage is freed, so the figures are those of the same code on a machine without CUDA (where it is the CPU
  allocator's);
- what another thread allocates is not in the profiler's events of the block's thread (PyTorch's profiler is per
  thread; with ``profile_all_threads`` it records other threads' ops but no memory events at all, torch 2.13).
  A storage another thread made is counted from when an op of the block's thread first uses it, or from the end
  of the block if it is still alive then, as "another thread"; its free counts when it happens, in whichever
  thread, and so does another thread's free of memory from before the block. ``unseen`` gives the bytes counted
  that way.

What the CPU figures still do not see (each is also in ``measure_memory``'s docstring, and ``unseen`` says so
with the bytes where it can know them):

- what another thread allocates and frees by itself during the block (a thread pool's scratch, the scratch of
  torch's own intra-op worker threads other than the calling one): the peak can be higher than reported.
  Threads started in the block are named in ``unseen``; work handed to a thread pool made before the block
  cannot be detected unless it leaves memory the block's thread sees;
- memory no PyTorch allocator made: NumPy arrays (``torch.from_numpy`` shares them; ``y.numpy() + 1`` is NumPy's);
- the free of a tensor from before the block whose storage cannot be resized and is not a mapping: the storages
  of ``torch.from_numpy`` (NumPy's memory), of ``torch.load`` and of a tensor after ``x.numpy()`` (the CPU
  allocator's) look the same to Python, so such a free counts only when the profiler reports it (the storage was
  made while a profiler ran, an earlier ``measure_memory`` block included), and ``unseen`` gives the bytes
  otherwise;
- a storage only C++ holds (not through a Python tensor, a ``.grad`` or an autograd graph): its free counts only
  when the profiler reports it; autograd graphs are walked up to ``MAX_GRAPH_NODES`` nodes, and ``unseen`` says
  when they had more;
- under a Python dispatch mode that is not the course's (``allow_mutation_on_saved_tensors()``, your own
  ``TorchDispatchMode``), the one-value tensor (8 bytes) that mode's Python layer makes again of each Python number
  an op receives: it looks exactly like the copy the course's own watchers cause, which is left out. Such a mode
  also makes Dynamo run a ``torch.compile``d function uncompiled (and keep it so after the block); the course's
  own mode lets compiled code run compiled (``ignore_compile_internals``), so the figures are those of the
  compiled code;
- everything, when a profiler is already running on the thread (``torch.profiler.profile`` around the block):
  then only the storages aten ops create are counted, as in earlier versions, and ``unseen`` says so. A profiler
  started *inside* a block takes the events over (PyTorch runs one profiler per thread): the block's figures miss
  what happened until that profiler stopped, and ``unseen`` says so.

Besides the totals, each report lists the allocations it saw (``MemoryReport.allocations``), placed on the
axis of its timeline: the op that made each one, the op that freed it (a free between two ops belongs to the op
before it: ``x = x.relu()`` lets the old ``x`` go as ``relu`` returns; a free while an op runs, to that op), and a
kind where a rule can tell it (``KINDS``; otherwise "unknown"). Phases are PyTorch's own ranges: each op is in the
innermost ``torch.profiler.record_function`` range open when it ran (optimizers open one around ``step()`` and
``zero_grad()``); an op that autograd runs during ``backward()`` outside any range is in "backward". The
``profiler::_record_function_*`` calls that open and close a range are bookkeeping, not ops, and are left out.

Nothing is printed. Kineto's ``profiler_start``/``profiler_stop`` lines are switched off by setting the
environment variable ``KINETO_LOG_LEVEL`` (unless it is already set) before the first profiler of the process
starts, which also quiets a later ``torch.profiler.profile``. c10's warning "Memory block of unknown size was
allocated before the profiling started" (printed when memory from before the block is freed in it) and kineto's
lines, when a profiler ran before ``KINETO_LOG_LEVEL`` was set, go to file descriptor 2, which is redirected to a
temporary file for the duration of the block; everything else written there is passed on when the block ends.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import os
import sys
import tempfile
import threading
import time
import warnings
import weakref
from dataclasses import dataclass
from typing import Iterator

import torch
from torch._C._profiler import _EventType, _RecordFunctionFast
from torch.utils._python_dispatch import _disable_current_modes

from ..common.checks import require_int, require_type
from .live_storages import MAX_GRAPH_NODES, GenerationsWatch, LiveStorages, live_storages
from .watching import FRESH_LITERAL_OPS, WatcherMode, call_keeping_versions, is_fresh_literal, storage_key, tensors_in

MiB = 1024 * 1024

OUTSIDE_ANY_OP = "(outside any aten op)"


def format_bytes(n: int) -> str:
    """Exact bytes, then the size in the largest binary unit that keeps it at least 1.

    ``400000000`` -> ``'400,000,000 B (381.47 MiB)'``, ``4096`` -> ``'4,096 B (4.00 KiB)'``, ``512`` -> ``'512 B'``.
    """
    n = require_int(n, "n")
    exact = f"{n:,} B"
    for name, size in (("GiB", 2**30), ("MiB", MiB), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{exact} ({n / size:.2f} {name})"
    return exact


def format_bytes_short(n: int) -> str:
    """Only the size in its largest binary unit (``'381.47 MiB'``), or the bytes under 1 KiB (``'512 B'``)."""
    text = format_bytes(n)
    return text[text.index("(") + 1 : -1] if "(" in text else text


#: The kinds of allocation a report can name, each with the rule that names it. Nothing else is guessed.
KINDS = {
    "parameter": "the storage of an nn.Parameter that an op of the block used, still allocated at the end",
    "gradient": "made in the block and the .grad of such a parameter at some moment: at the end, when backward() "
    "returned, or when an optimizer's step() or zero_grad() began (freed or not: a gradient by its role)",
    "optimizer state": "made inside optimizer.step() and still allocated at the end (the optimizer holds it)",
    "activation": "made outside backward() and freed while autograd's engine ran it: kept for the backward pass "
    "(saved tensors, let go once their node has run)",
    "temporary": "freed later in the block, not while autograd's engine ran backward() (the starting gradient "
    "backward() makes goes as backward() returns)",
    "scratch": "freed inside the op that made it (the op's own working memory)",
    "unknown": "still allocated at the end, by something no rule here can name",
    "from before the block": "allocated before the block and freed in it (counts as negative bytes)",
}

#: Where the memory of an allocation came from. On the CPU every source counts in ``allocated`` and ``peak``.
SOURCES = {
    "CPU allocator": "PyTorch's CPU allocator, whose allocation and free events the profiler reports",
    "mapping": "a shared-memory or file mapping (at::MapAllocator: share_memory_(), a batch from DataLoader "
    "workers, torch.load(mmap=True), UntypedStorage.from_file): the profiler reports its full size when it is "
    "mapped and when it is unmapped, whether or not its pages are in RAM",
    "pinned": "page-locked host memory from CUDA's host allocator (pin_memory(), save_on_cpu(pin_memory=True) "
    "when CUDA is present), which reports nothing to the profiler: counted from the op that returned it to its "
    "storage's free (CUDA keeps the block cached, still pinned, after that)",
    "another thread": "memory the block's thread did not see allocated (another thread made it, e.g. a thread "
    "pool made before the block): counted from when the block's thread first used it, or from the end of the "
    "block if it never did; MemoryReport.unseen says so",
    "CUDA caching allocator": "a storage on the GPU (the figures are the caching allocator's own)",
}

_RANGE_ENTER = "profiler::_record_function_enter_new"
_RANGE_EXIT = "profiler::_record_function_exit"
_RANGE_OPS = (_RANGE_ENTER, _RANGE_EXIT)
_OPTIMIZER_RANGES = ("Optimizer.step#", "Optimizer.zero_grad#")


@dataclass(frozen=True)
class Allocation:
    """One allocation a ``measure_memory`` block saw, placed on its timeline (indexes into ``timeline``).

    Attributes:
        nbytes: its size in bytes (on CUDA the storage's bytes, before the caching allocator rounds them).
        allocated_at: the timeline entry whose op made it (memory allocated between two ops belongs to the next
            op); None for memory from before the block that the block freed.
        freed_at: the entry whose op freed it: the op running at the free, or, for a free between two ops, the
            op before it; None when it was still allocated at the end.
        freed_inside: True when freed while that op ran (scratch memory, an old block that ``resize_`` replaced),
            False when freed after the op returned or not freed.
        kind: a key of ``KINDS``.
        allocated_by: the name of the op at ``allocated_at`` (None with it).
        freed_by: the name of the op at ``freed_at`` (None with it).
        source: where the memory came from, a key of ``SOURCES``.
    """

    nbytes: int
    allocated_at: int | None
    freed_at: int | None
    freed_inside: bool
    kind: str
    allocated_by: str | None
    freed_by: str | None
    source: str = "CPU allocator"


class MemoryReport:
    """What ``measure_memory`` found. Fields are None until the block has finished.

    Attributes:
        device: the device measured.
        allocated: net change in bytes allocated: what the block leaves alive (negative when it freed more
            than it kept).
        peak: the largest extra amount held at any moment inside the block, temporaries included (on the CPU:
            the scratch memory of kernels too).
        reserved: CUDA only: the net change in memory the caching allocator reserved from the driver
            (what ``nvidia-smi`` sees grow); None on the CPU, where there is no such cache.
        method: how the figures were obtained.
        timeline: one ``(aten op, bytes held)`` pair per op run in the block, bytes counted from the start
            of the block after the op finished (for drawing memory over time). On the CPU, memory allocated
            between two ops shows in the next op's entry, and memory allocated after the last op (by no aten
            op: ``torch.UntypedStorage(n)``, ``pickle.loads``, compiled code; or found at the end, made by
            another thread) in a last entry named ``OUTSIDE_ANY_OP``, which a block that ran no op and freed
            memory from before it (``del x``) gets too.
        unseen: sentences naming what this block did that the figures could not count exactly, with the bytes
            where they are known (threads started in the block, memory another thread made, frees of storages
            no allocator can be told to own, a profiler that was already running); empty when the figures are
            complete.
        allocations: every ``Allocation`` the block made, in the order they were made, then the frees of memory
            from before the block; the sizes of those alive at the end minus those from before add up to
            ``allocated``.
        phases: one per ``timeline`` entry: the phase its op ran in (see the module docstring), or None.
        most_held: one per ``timeline`` entry: the most held (from the block's start) from the end of the
            previous op to the end of this one, so scratch memory inside the op is in it; on the CPU
            ``max(most_held)`` is ``peak``. On CUDA, where the allocator's peak cannot be read op by op without
            resetting it, the bytes held after the op (so ``peak`` can be higher than any of them).
        held_before: the bytes the device's allocator held for tensors when the block began, which its figures
            are counted from: on CUDA ``torch.cuda.memory_allocated()``; on the CPU the storages alive then whose
            memory a PyTorch allocator gave (each block once). None when not known (a profiler already running).
    """

    def __init__(self, device: torch.device, method: str):
        self.device = device
        self.method = method
        self.allocated: int | None = None
        self.peak: int | None = None
        self.reserved: int | None = None
        self.timeline: tuple[tuple[str, int], ...] = ()
        self.unseen: tuple[str, ...] = ()
        self.allocations: tuple[Allocation, ...] = ()
        self.phases: tuple[str | None, ...] = ()
        self.most_held: tuple[int, ...] = ()
        self.held_before: int | None = None

    def __repr__(self) -> str:
        if self.allocated is None:
            return f"MemoryReport(device='{self.device}', still measuring)"
        parts = [f"allocated={format_bytes(self.allocated)}", f"peak={format_bytes(self.peak)}"]
        if self.reserved is not None:
            parts.append(f"reserved={format_bytes(self.reserved)}")
        if self.unseen:
            parts.append(f"unseen={len(self.unseen)}")
        return f"MemoryReport(device='{self.device}', " + ", ".join(parts) + ")"


class _Phases:
    """The ``record_function`` ranges open while a block runs, followed through the profiler ops that open and
    close them, and the phase of each op of the timeline."""

    def __init__(self):
        self._open: list[tuple[int, str]] = []  # (the hash of the range's handle, its name), outermost first
        self.of_ops: list[tuple[str | None, bool, bool]] = []  # per op: phase, in backward, in optimizer.step
        self.parameters: dict[int, weakref.ref] = {}  # id -> the nn.Parameters the block's ops used
        self.gradient_marks: list[set] = []  # the keys of the parameters' gradients, at each moment looked at

    def run_range(self, func, args, kwargs):
        """Runs a ``record_function`` open or close op (one of ``_RANGE_OPS``) and follows it; returns its result."""
        result = func(*args, **kwargs)
        self.follow_range(func._schema.name, args, result)
        return result

    def follow_range(self, name: str, args, result) -> None:
        """Opens or closes a range: ``name`` is ``_RANGE_ENTER`` (``result``: its handle) or ``_RANGE_EXIT``."""
        if name == _RANGE_ENTER:
            self._open.append((hash(result), str(args[0]) if args else ""))
            return
        # The handle comes back as another Python wrapper of the same object: its hash is the object's.
        handle = hash(args[0]) if args else None
        self._open = [(opened, range_name) for opened, range_name in self._open if opened != handle]

    def note_op(self, inputs) -> None:
        """Records the phase of the op about to run, and the parameters among its inputs."""
        for tensor in inputs:
            if not isinstance(tensor, torch.nn.Parameter):
                continue
            known = self.parameters.get(id(tensor))
            if known is None or known() is not tensor:  # new, or a dead parameter's id used again
                self.parameters[id(tensor)] = weakref.ref(tensor)
        in_backward = torch._C._current_graph_task_id() != -1
        names = [range_name for _, range_name in self._open]
        in_step = any(range_name.startswith(_OPTIMIZER_RANGES[0]) for range_name in names)
        phase = names[-1] if names else ("backward" if in_backward else None)
        if phase is not None and phase.startswith(_OPTIMIZER_RANGES):
            phase = phase.split("#", 1)[1]  # "Optimizer.step#Adam.step" -> "Adam.step"
        self.of_ops.append((phase, in_backward, in_step))

    @staticmethod
    def opens_optimizer_range(name: str, args) -> bool:
        """Whether a range op opens ``optimizer.step()`` or ``optimizer.zero_grad()`` (the gradients are set)."""
        return name == _RANGE_ENTER and bool(args) and str(args[0]).startswith(_OPTIMIZER_RANGES)

    def mark_gradients(self, key_of) -> int:
        """Notes the keys of the parameters' gradients now (``gradient_marks``); returns the mark's index."""
        self.gradient_marks.append(self.kind_keys(key_of)[1])
        return len(self.gradient_marks) - 1

    def kind_keys(self, key_of) -> tuple[set, set]:
        """The keys (``key_of(tensor)``) of the parameters seen and of their gradients."""
        parameters, gradients = set(), set()
        for reference in self.parameters.values():
            parameter = reference()
            if parameter is None:
                continue
            if parameter.layout == torch.strided:
                parameters.add(key_of(parameter))
            grad = parameter.grad
            if grad is not None and grad.layout == torch.strided:
                gradients.add(key_of(grad))
        return parameters, gradients


def _engine_running() -> bool:
    """Whether autograd's engine is running backward on this thread (nodes, their hooks, the release of their
    saved tensors; not the Python lines of ``backward()`` around it)."""
    return torch._C._current_graph_task_id() != -1


class _Ledger:
    """Allocations and frees placed on the op axis as they happen; the totals follow from them.

    A column is a timeline entry. What is allocated while an op runs is that op's; between two ops, the next
    op's. What is freed while an op runs is freed there (inside); between two ops, after the op before (or, if
    it was allocated for the next op, inside that one). Each allocation and free also notes whether autograd's
    engine was running backward at that moment (``in_backward``, asked at the time: a free after the last op
    of a backward pass can come before or after backward() returned).
    """

    def __init__(self):
        self.current = 0
        self.peak = 0
        self.running: int | None = None  # the column of the op running, None between ops
        self.in_backward = _engine_running  # asked at each allocation and free: is backward running now?
        self.ops_done = 0
        self.most_held: list[int] = []
        self._highest_since_op: int | None = None
        self._live: dict = {}  # key -> its record
        # [key, nbytes, allocated_at, freed_at, freed_inside, made in backward, freed in backward, source,
        #  was some parameter's .grad]
        self._records: list[list] = []

    def _change(self, delta: int) -> None:
        self.current += delta
        self.peak = max(self.peak, self.current)
        since = self._highest_since_op
        self._highest_since_op = self.current if since is None else max(since, self.current)

    def _where_freed(self, allocated_at: int | None) -> tuple[int, bool]:
        if self.running is not None:
            return self.running, True
        if self.ops_done == 0 or (allocated_at is not None and allocated_at >= self.ops_done):
            return self.ops_done, True  # made for the next op and freed before it ran
        return self.ops_done - 1, False

    def holds(self, key) -> bool:
        """Whether ``key`` is an allocation of the block still alive."""
        return key in self._live

    def source_of(self, key) -> str | None:
        """The source (``SOURCES``) of the live allocation ``key``, None if there is none."""
        record = self._live.get(key)
        return None if record is None else record[7]

    def allocate(self, key, nbytes: int, source: str = "CPU allocator") -> None:
        record = [key, nbytes, self.running if self.running is not None else self.ops_done, None, False]
        record += [self.in_backward(), False, source, False]
        self._live[key] = record
        self._records.append(record)
        self._change(nbytes)

    def free(self, key) -> None:
        record = self._live.pop(key)
        record[3], record[4] = self._where_freed(record[2])
        record[6] = self.in_backward()
        self._change(-record[1])

    def free_from_before(self, key, nbytes: int, source: str = "CPU allocator") -> None:
        freed_at, inside = self._where_freed(None)
        self._records.append([key, nbytes, None, freed_at, inside, False, self.in_backward(), source, False])
        self._change(-nbytes)

    def mark_gradients(self, keys) -> None:
        """The live allocations with these keys are parameters' gradients (whatever happens to them later)."""
        for key in keys:
            record = self._live.get(key)
            if record is not None:
                record[8] = True

    def op_ended(self) -> None:
        self.running = None
        since = self._highest_since_op
        self.most_held.append(self.current if since is None else max(since, self.current))
        self._highest_since_op = None
        self.ops_done += 1

    def allocations(self, names: list[str], phases: _Phases, key_of) -> tuple[Allocation, ...]:
        """The records as ``Allocation``s, each with the kind its rule gives (``KINDS``)."""
        parameters, gradients = phases.kind_keys(key_of)
        no_op = (None, False, False)

        def info(column):
            return phases.of_ops[column] if column < len(phases.of_ops) else no_op

        made, from_before = [], []
        for record in self._records:
            key, nbytes, allocated_at, freed_at, inside, made_in_backward, freed_in_backward, source, grad = record
            if allocated_at is None:
                kind = "from before the block"
            elif grad or (freed_at is None and key in gradients):
                kind = "gradient"
            elif freed_at is None:
                kind = "unknown"
                if key in parameters:
                    kind = "parameter"
                elif info(allocated_at)[2]:
                    kind = "optimizer state"
            elif freed_at == allocated_at and inside:
                kind = "scratch"
            elif freed_in_backward and not made_in_backward:
                kind = "activation"
            else:
                kind = "temporary"
            allocation = Allocation(
                nbytes=nbytes,
                allocated_at=allocated_at,
                freed_at=freed_at,
                freed_inside=inside,
                kind=kind,
                allocated_by=None if allocated_at is None else names[allocated_at],
                freed_by=None if freed_at is None else names[freed_at],
                source=source,
            )
            (from_before if allocated_at is None else made).append(allocation)
        return tuple(made + from_before)


def _finish_report(report: MemoryReport, ledger: _Ledger, phases: _Phases, timeline, key_of) -> None:
    """Fills in the per-op facts of a report from its ledger and phases."""
    names = [name for name, _ in timeline]
    report.timeline = tuple(timeline)
    report.phases = tuple(phases.of_ops[i][0] if i < len(phases.of_ops) else None for i in range(len(names)))
    report.most_held = tuple(ledger.most_held)
    report.allocations = ledger.allocations(names, phases, key_of)


class _StorageTracker(WatcherMode):
    """Counts bytes of storages on one device that ops create, and of earlier ones that die, over time.

    Compiled code runs compiled under it, as under the CPU's namer (``ignore_compile_internals``): on CUDA the
    totals are the caching allocator's, whatever ran; the per-op timeline sees the ops compiled code dispatches.
    """

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True

    def __init__(self, device: torch.device, read_allocator=None):
        super().__init__()
        self.device = device
        self.ledger = _Ledger()
        self.phases = _Phases()
        self.timeline: list[tuple[str, int]] = []
        self._read_allocator = read_allocator  # on CUDA the timeline reads the allocator instead
        self._watched: dict[int, weakref.finalize] = {}
        self._nbytes: dict[int, int] = {}  # the size each watched storage was last seen with
        self._source = "CUDA caching allocator" if device.type == "cuda" else "CPU allocator"

    def _watch(self, tensor: torch.Tensor, counted: bool) -> None:
        storage = tensor.untyped_storage()
        key = storage._cdata
        if key in self._watched:
            self._resized(storage, key)
            return
        # Memory torch did not allocate (torch.from_numpy, DLPack) is neither gained nor lost with it.
        nbytes = storage.nbytes() if storage.resizable() else 0
        if counted and nbytes:
            self.ledger.allocate(key, nbytes, self._source)
        self._nbytes[key] = nbytes
        self._watched[key] = weakref.finalize(storage, self._freed, key)

    def _resized(self, storage, key: int) -> None:
        """An op wrote into a storage and grew or shrank it (``out=`` into an empty tensor, ``resize_``)."""
        if not storage.resizable() or storage.nbytes() == self._nbytes[key]:
            return
        self._let_go(key, self._nbytes[key])
        self._nbytes[key] = storage.nbytes()
        if self._nbytes[key]:
            self.ledger.allocate(key, self._nbytes[key], self._source)

    def _let_go(self, key: int, nbytes: int) -> None:
        """The memory of a watched storage was given back: the block's own, or from before the block."""
        if self.ledger.holds(key):
            self.ledger.free(key)
        elif nbytes:
            self.ledger.free_from_before(key, nbytes, self._source)

    def _freed(self, key: int) -> None:
        self._watched.pop(key, None)
        self._let_go(key, self._nbytes.pop(key))

    def _on_device(self, tensor: torch.Tensor) -> bool:
        return tensor.device == self.device and tensor.layout == torch.strided

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        if name in _RANGE_OPS:
            if self.phases.opens_optimizer_range(name, args):
                self.ledger.mark_gradients(self.phases.gradient_marks[self.phases.mark_gradients(storage_key)])
            return self.phases.run_range(func, args, kwargs)
        inputs = [t for t in tensors_in((args, kwargs)) if self._on_device(t)]
        self.phases.note_op(inputs)
        if name not in FRESH_LITERAL_OPS:  # a literal's storage is from inside the block: watched below
            for tensor in inputs:  # storages from before the block: count them off if they die inside it
                self._watch(tensor, counted=False)
        self.ledger.running = len(self.timeline)
        try:
            result = call_keeping_versions(func, args, kwargs)
            input_keys = {storage_key(t) for t in inputs}
            for output in tensors_in(result):
                if not self._on_device(output):
                    continue
                if is_fresh_literal(name, output) or storage_key(output) not in input_keys:
                    self._watch(output, counted=True)
                else:  # a view or an in-place write: counts only if the write resized the storage
                    self._watch(output, counted=False)
        finally:  # an op that raised is on the timeline too, as on the CPU
            self.ledger.op_ended()
            held = self._read_allocator() if self._read_allocator else self.ledger.current
            self.timeline.append((name, held))
        return result

    def stop(self) -> None:
        for finalizer in self._watched.values():
            finalizer.detach()
        self._watched.clear()
        self._nbytes.clear()


# ------------------------------------------------------------------------- the CPU: the allocator's events
_block_ids = itertools.count()


def _cpu_storages(args, kwargs) -> list:
    """The storages of the CPU tensors an aten op receives (arguments are tensors or flat lists of them)."""
    storages = []
    for value in (*args, *kwargs.values()):
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, torch.Tensor) and item.layout == torch.strided and item.device.type == "cpu":
                storages.append(item.untyped_storage())
    return storages


def _allocator_bytes(storage) -> int:
    """The bytes an allocator gave a storage: 0 for memory torch did not allocate (``torch.from_numpy``, DLPack,
    the storages ``torch.load(mmap=True)`` cuts from its mapping, a DataLoader batch's mapping), which cannot be
    resized: the profiler reports a mapping's own ends itself."""
    try:
        return storage.nbytes() if storage.resizable() else 0
    except (RuntimeError, NotImplementedError):
        return 0


def _bytes_of(storage, source: str) -> int:
    """The bytes a storage holds from an allocator: CUDA's host allocator gives ``pin_memory()`` a storage that
    cannot be resized (``_pin_memory`` in aten/src/ATen/native/Memory.cpp), and it is still allocated memory."""
    if source == "pinned":
        return storage.nbytes()
    return _allocator_bytes(storage)


def _source_of(storage) -> str:
    try:
        if storage.is_shared():
            return "mapping"
        # pin_memory()'s storages cannot be resized; asking is_pinned only of those keeps the look cheap
        return "pinned" if not storage.resizable() and _is_pinned(storage) else "CPU allocator"
    except (RuntimeError, NotImplementedError):
        return "CPU allocator"


def _is_pinned(storage) -> bool:
    try:
        with _disable_current_modes(), warnings.catch_warnings():  # a user's dispatch mode must not see this
            warnings.simplefilter("ignore", DeprecationWarning)  # torch passes is_pinned a deprecated device
            return storage.is_pinned()
    except (RuntimeError, NotImplementedError):
        return False


#: Ops that return pinned host memory (from CUDA's host allocator), besides any op given ``pin_memory=True``.
_PINNING_OPS = frozenset({"aten::_pin_memory", "aten::pin_memory"})
#: Sources whose frees the profiler does not report: the watched storage's free is what counts.
_FREES_NOT_REPORTED = frozenset({"another thread", "pinned"})


class _WatchedStorage(weakref.ref):
    """A weak reference to a storage the namer watches, with what its free will need: the storage is gone then.

    ``key``: the storage's ``_cdata``; ``address`` and ``size`` (bytes) of its block when last seen; ``nbytes``,
    the bytes an allocator is known to have given it (``_allocator_bytes``); ``from_before``, whether the block is
    from before the block of code measured; ``source``, a key of ``SOURCES``. Slots keep it small: one is made per
    storage alive when a block starts.
    """

    __slots__ = ("key", "address", "nbytes", "from_before", "source", "size")

    def set(self, key: int, address: int, nbytes: int, from_before: bool, source: str, size: int) -> None:
        self.key, self.address, self.nbytes, self.from_before, self.source, self.size = (
            key,
            address,
            nbytes,
            from_before,
            source,
            size,
        )


class _CpuOpNamer(WatcherMode):
    """Names the aten ops of one block for the profiler, and watches storages for what the profiler cannot report.

    Each op runs inside a profiler range named ``tl::op:<block>:<index>``, so an allocator event can be traced
    back to the op it happened in. Marks (empty ranges) put on the same axis what the profiler does not see:

    - ``tl::free:<block>:<i>``: the memory of a watched storage went away, because the storage died or because
      an op or ``share_memory_()`` gave it a new block; ``frees[i]`` holds the old block's address and size,
      whether the storage is from before the block, and the new block's address after a move. The storages
      watched are those alive when the block started (``live_storages``: the profiler does not report the free of
      a block allocated before it started) and those the block's ops use. A free in another thread cannot be
      marked on this thread's profiler: ``frees_elsewhere`` keeps its time instead.
    - ``tl::seen:<block>:<i>``: an op used a storage made in the block for the first time, or returned pinned
      memory; ``seen[i]`` holds its address, size and source. If the profiler never reported that allocation,
      another thread (or CUDA's host allocator) made it: the replay counts it from this mark.
    - ``tl::backward:<block>:start:<task>`` before the first op autograd's engine runs for a backward pass,
      ``tl::backward:<block>:end:<task>`` when the engine has run every node (a final callback,
      ``queue_callback``), so a free between two ops can be told to be during backward or after it returned.

    ``torch.compile``d code runs compiled inside the block (``ignore_compile_internals``): the mode is off
    while Dynamo compiles and on while the compiled code runs, so the allocator events are those of the compiled
    code, and Dynamo does not mark the function to run uncompiled from then on, as it does under other modes.
    """

    def __init__(self, block_id: int, before: LiveStorages):
        super().__init__()
        self.op_prefix = f"tl::op:{block_id}:"
        self.free_prefix = f"tl::free:{block_id}:"
        self.seen_prefix = f"tl::seen:{block_id}:"
        self.backward_prefix = f"tl::backward:{block_id}:"
        self.grads_prefix = f"tl::grads:{block_id}:"
        self.thread = threading.get_ident()
        self._graph_tasks: set[int] = set()  # the backward passes marked
        self.names: list[str] = []
        # (address, bytes, from before the block, address of the new block after a move or None, source)
        self.frees: list[tuple[int, int, bool, int | None, str]] = []
        self.frees_elsewhere: list[tuple[int, int]] = []  # (time in ns, index into frees) of frees in other threads
        self.seen: list[tuple[int, int, str]] = []  # (address, bytes, source)
        # (address, bytes) of storages from before the block that were not resizable and not a mapping, freed in
        # it: torch.load's and x.numpy()'s come from the CPU allocator, torch.from_numpy's from NumPy, and Python
        # cannot tell which. The replay counts one only when the profiler reports its free.
        self.uncertain_frees: list[tuple[int, int]] = []
        self.before_addresses: set[int] = set()  # the blocks of storages from before the block, watched
        self.phases = _Phases()
        self._watched: dict[int, _WatchedStorage] = {}  # by storage key
        self._on_free = self._freed  # one bound method for every weak reference
        for key, storage in before.storages.items():
            self._watch(storage, key, from_before=True)
        # each block once: two storages can share one (a storage made again from another's memory)
        self.held_before = sum({w.address: w.nbytes for w in self._watched.values() if w.nbytes}.values())

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True

    def _watch(self, storage, key: int, from_before: bool, source: str | None = None, seen: bool = True) -> None:
        source = source or _source_of(storage)
        nbytes = _bytes_of(storage, source)
        address = storage.data_ptr()
        watched = _WatchedStorage(storage, self._on_free)
        watched.set(key, address, nbytes, from_before, source, storage.nbytes())
        self._watched[key] = watched
        if not nbytes:
            return
        if from_before:
            self.before_addresses.add(address)
        elif seen:
            self._mark_seen(address, nbytes, source)

    def _mark_seen(self, address: int, nbytes: int, source: str) -> None:
        self.seen.append((address, nbytes, source))
        with _RecordFunctionFast(f"{self.seen_prefix}{len(self.seen) - 1}"):
            pass

    def _mark_free(self, watched: _WatchedStorage, moved_to: int | None = None) -> None:
        if not watched.nbytes:
            if watched.from_before and watched.size and watched.source != "mapping":  # see uncertain_frees
                self.uncertain_frees.append((watched.address, watched.size))
            return
        self.frees.append((watched.address, watched.nbytes, watched.from_before, moved_to, watched.source))
        index = len(self.frees) - 1
        if threading.get_ident() == self.thread:
            with _RecordFunctionFast(f"{self.free_prefix}{index}"):
                pass
        else:  # the profiler records this thread only
            self.frees_elsewhere.append((time.time_ns(), index))

    def _freed(self, watched: _WatchedStorage) -> None:
        if self._watched.get(watched.key) is watched:
            del self._watched[watched.key]
            self._mark_free(watched)

    def _check_moved(self, storage) -> None:
        """A storage given a new block (``resize_``, ``set_``, ``share_memory_()``): its old block is freed."""
        watched = self._watched.get(storage._cdata)
        if watched is None:
            return
        # Compared with its size, not with _allocator_bytes: x.numpy() makes x's storage not resizable.
        address, size = storage.data_ptr(), storage.nbytes()
        if address == watched.address and size == watched.size:
            return
        self._mark_free(watched, moved_to=address)
        source, nbytes = _source_of(storage), _allocator_bytes(storage)
        watched.set(watched.key, address, nbytes, False, source, size)
        if nbytes:
            self._mark_seen(address, nbytes, source)

    def _watch_outputs(self, result, pinning: bool) -> None:
        """Watches the new storages an op returned, for a free in another thread (which the profiler does not
        record). The allocator of this thread made them, and the profiler reported it, except pinned memory from
        CUDA's host allocator (``pinning``: an op that can return it): that one is marked as seen here."""
        for tensor in tensors_in(result):
            if tensor.device.type != "cpu" or tensor.layout != torch.strided:
                continue
            storage = tensor.untyped_storage()
            key = storage._cdata
            if key in self._watched:  # an input, a view of one, or an output already watched
                continue
            if pinning and _is_pinned(storage):
                self._watch(storage, key, from_before=False, source="pinned")
            else:
                self._watch(storage, key, from_before=False, seen=False)

    def _mark_backward(self, edge: str, task: int) -> None:
        with _RecordFunctionFast(f"{self.backward_prefix}{edge}:{task}"):
            pass
        if edge == "end":  # every parameter's gradient is set now
            self._mark_gradients()

    def _mark_gradients(self) -> None:
        """Marks the moment the parameters' gradients are looked at (``phases.gradient_marks``)."""
        index = self.phases.mark_gradients(lambda tensor: tensor.untyped_storage().data_ptr())
        with _RecordFunctionFast(f"{self.grads_prefix}{index}"):
            pass

    def _follow_backward(self) -> None:
        """Marks the start of a backward pass at its first op, and queues the mark of its end."""
        task = torch._C._current_graph_task_id()
        if task == -1 or task in self._graph_tasks:
            return
        self._graph_tasks.add(task)
        self._mark_backward("start", task)
        torch.autograd.Variable._execution_engine.queue_callback(lambda: self._mark_backward("end", task))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        if name in _RANGE_OPS:
            if self.phases.opens_optimizer_range(name, args):
                self._mark_gradients()
            return self.phases.run_range(func, args, kwargs)
        storages = _cpu_storages(args, kwargs)
        for storage in storages:
            key = storage._cdata
            if key not in self._watched:
                self._watch(storage, key, from_before=False)
        self.phases.note_op(tensors_in((args, kwargs)))
        self._follow_backward()
        index = len(self.names)
        self.names.append(name)
        pinning = name in _PINNING_OPS or bool(kwargs.get("pin_memory"))
        with _RecordFunctionFast(f"{self.op_prefix}{index}"):
            result = call_keeping_versions(func, args, kwargs)
            if pinning:  # inside the op's range: the op made it
                self._watch_outputs(result, pinning=True)
        for storage in storages:  # resize_, set_, out= into a tensor too small: the storage got a new block
            self._check_moved(storage)
        if not pinning:
            self._watch_outputs(result, pinning=False)
        return result

    def recheck(self) -> None:
        """At the end of the block: a storage whose memory was swapped outside any op (``share_memory_()`` moves
        a storage into shared memory) gave its old block back."""
        for watched in list(self._watched.values()):
            storage = watched()
            if storage is not None:
                self._check_moved(storage)

    def watched(self) -> set[int]:
        """The keys of the storages watched now."""
        return set(self._watched)

    def stop(self) -> None:
        self._watched.clear()  # a weak reference that is gone calls nothing back


# The profiler's range around a Python dispatch mode's __torch_dispatch__. An allocation directly inside it, or
# directly inside a tl::op range (not inside the aten op that range then runs), is the Python dispatch layer's
# own: a Python number that an op receives for a Tensor argument reaches __torch_dispatch__ as a Python number,
# and calling the op again turns it into a one-value tensor again (8 bytes). That copy exists only because the
# block is watched (by measure_memory or trace_ops), so it is not counted.
_PYTHON_DISPATCH = "PythonDispatchMode"
_COMPILED_REGION = "Torch-Compiled Region"
_MARKS = ("tl::free:", "tl::seen:", "tl::backward:", "tl::grads:")


def _flatten(tree) -> list[tuple]:
    """The profiler's event tree of one thread as a flat list in time order (children come sorted by start).

    Entries, each with its time in ns second: ``("alloc", time, address, signed bytes, the tl::op ranges around
    it, the innermost range's name, whether a mapping reported it)``, ``("mark", time, name, the tl::op ranges
    around it)`` for a ``tl::free``, ``tl::seen`` or ``tl::backward`` mark, ``("end", time, name)`` when a
    ``tl::op`` range ends. A mapping (``at::MapAllocator``) reports its allocation with a running total of 0; the
    CPU allocator's running total includes the block just allocated.
    """
    flat: list[tuple] = []
    append = flat.append
    allocation = _EventType.Allocation

    def walk(events, ops: tuple, innermost: str) -> None:
        for event in events:
            if event.tag == allocation:
                fields = event.extra_fields
                if fields.device.type == "cpu":  # a CUDA allocation in the block is not the CPU's
                    mapped = fields.total_allocated == 0
                    append(("alloc", event.start_time_ns, fields.ptr, fields.alloc_size, ops, innermost, mapped))
                continue
            name = event.name
            if name.startswith("tl::"):
                if name.startswith(_MARKS):
                    append(("mark", event.start_time_ns, name, ops))
                    continue
                walk(event.children, ops + (name,), name)
                append(("end", event.end_time_ns, name))
            else:
                children = event.children
                if children:
                    walk(children, ops, name)

    walk(tree, (), "")
    return flat


def _with_frees_elsewhere(events: list[tuple], frees_elsewhere, free_prefix: str) -> list[tuple]:
    """The events with the frees made in other threads put in by their time (as marks between two ops)."""
    if not frees_elsewhere:
        return events
    times, latest = [], 0
    for event in events:  # an "end" entry carries its range's end: keep the order of the list
        latest = max(latest, event[1])
        times.append(latest)
    merged, start = [], 0
    for moment, index in sorted(frees_elsewhere):
        position = bisect.bisect_right(times, moment, lo=start)
        merged.extend(events[start:position])
        merged.append(("mark", moment, f"{free_prefix}{index}", (), True))
        start = position
    merged.extend(events[start:])
    return merged


def _made_and_dropped_by_the_watcher(events: list[tuple]) -> set[int]:
    """Indices of the blocks made and given back at once directly in torch.compile's range, and of their frees.

    Under a Python dispatch mode, a compiled function's range holds blocks the dispatch layer makes for the mode
    (the size of those it makes in ``_PYTHON_DISPATCH``), each freed before anything else happens; without the
    watcher they do not exist (checked with the profiler alone). A block the compiled code itself makes there (the
    8-byte tensor of a Python number) lives on until an op uses it, and is counted.
    """
    found = set()
    for index, event in enumerate(events[:-1]):
        after = events[index + 1]
        if event[0] == after[0] == "alloc" and event[3] > 0 and event[5].startswith(_COMPILED_REGION):
            if after[2] == event[2] and after[3] == -event[3] and after[5] == event[5]:
                found.update((index, index + 1))
    return found


class _CpuBlock:
    """One ``measure_memory`` block on the CPU: its op namer and the profiler events collected for it."""

    def __init__(self):
        self.block_id = next(_block_ids)
        # Before the profiler starts: the storages whose frees it cannot report. Young garbage from before the
        # block (a cycle of objects holding tensors) is collected first: it would otherwise be freed in the block
        # whenever a collection of the young generations happens to run there.
        before = live_storages(collect_young_garbage=True)
        self.graphs_capped = before.capped
        self.namer = _CpuOpNamer(self.block_id, before)
        del before
        self.generations = GenerationsWatch()
        self.found_at_end: list[tuple[int, int]] = []  # (address, bytes) of storages first found at the end
        self.unreported_bytes = 0  # what the replay counted from marks and the end, not from allocator events
        self.uncertain_bytes = 0  # what the replay could not count (see _CpuOpNamer.uncertain_frees)
        self.events: list[tuple] = []
        self.threads_before = set(threading.enumerate())
        self.threads_started: list[str] = []
        # Another thread can hand the block memory only if there is one. With none, a storage the block's thread
        # did not see allocated is one from before the block that only C++ held: neither end of it counts.
        self.other_threads = len(self.threads_before) > 1
        self.taken_over = False  # a profiler started inside the block took the events

    def finish(self) -> None:
        """At the end of the block, before the profiler stops: storages moved outside any op, and storages
        alive now that the block's thread never saw (another thread made them and no op here used them)."""
        self.namer.recheck()
        self.other_threads = self.other_threads or bool(self.threads_started) or threading.active_count() > 1
        if not self.other_threads:
            return
        watched = self.namer.watched()
        found = self.generations.made_since()
        for key, storage in found.storages.items():
            nbytes = _allocator_bytes(storage)
            if key not in watched and nbytes:
                self.found_at_end.append((storage.data_ptr(), nbytes))

    def _op_running(self, enclosing_ops: tuple) -> int | None:
        """The index of this block's op an event happened in, or None between ops."""
        for name in reversed(enclosing_ops):
            if name.startswith(self.namer.op_prefix):
                return int(name[len(self.namer.op_prefix) :])
        return None

    def _placed_after_allocation(self, events: list[tuple]) -> dict[int, list[int]]:
        """Frees of moved blocks, by the position of the event that allocated the new block.

        ``share_memory_()`` swaps a storage's block outside any op, and the namer sees it only later (at the next
        op that uses the storage, or at the end of the block). The allocator freed the old block when the new one
        was made: the last allocation of the new block's address before the mark.
        """
        last_allocation: dict[int, int] = {}
        placed: dict[int, list[int]] = {}
        free_prefix = self.namer.free_prefix
        for position, event in enumerate(events):
            if event[0] == "alloc" and event[3] > 0:
                last_allocation[event[2]] = position
            elif event[0] == "mark" and event[2].startswith(free_prefix):
                index = int(event[2][len(free_prefix) :])
                moved_to = self.namer.frees[index][3]
                if moved_to is not None and moved_to in last_allocation:
                    placed.setdefault(last_allocation[moved_to], []).append(index)
        return placed

    def _free(self, ledger: _Ledger, index: int, elsewhere: bool) -> None:
        """A watched storage's block went away (``namer.frees[index]``)."""
        address, nbytes, from_before, _, source = self.namer.frees[index]
        if from_before:
            ledger.free_from_before(address, nbytes, source)
        elif ledger.holds(address) and (elsewhere or ledger.source_of(address) in _FREES_NOT_REPORTED):
            # The profiler reports the free of a block it saw allocated, unless another thread freed it.
            ledger.free(address)

    def replay(self, ledger: _Ledger) -> list[tuple[str, int]]:
        """Adds up the events in ``ledger``; returns the timeline."""
        namer = self.namer
        op_prefix, free_prefix, seen_prefix = namer.op_prefix, namer.free_prefix, namer.seen_prefix
        backward_prefix, in_backward_of_op = namer.backward_prefix, namer.phases.of_ops
        backward_passes: set[str] = set()  # the backward passes started and not yet ended
        ledger.in_backward = lambda: bool(backward_passes)
        events = _with_frees_elsewhere(self.events, namer.frees_elsewhere, free_prefix)
        placed = self._placed_after_allocation(events)
        placed_frees = {index for indexes in placed.values() for index in indexes}
        dropped_at_once = _made_and_dropped_by_the_watcher(events)
        watchers_own: set[int] = set()  # addresses of the watcher's own blocks still allocated
        freed_by_their_events: list[tuple[int, int]] = []  # blocks from before the block, freed, as reported
        uncertain_sizes = dict(namer.uncertain_frees)  # address -> size (see _CpuOpNamer.uncertain_frees)
        timeline: list[tuple[str, int]] = []
        allocated_outside_ops = False  # since the last op: shown with the next op, or in a last entry
        for position, event in enumerate(events):
            kind = event[0]
            if kind == "alloc":
                _, _, address, size, enclosing_ops, innermost, mapped = event
                if size > 0 and (innermost == _PYTHON_DISPATCH or innermost.startswith("tl::op:")):
                    watchers_own.add(address)  # see _PYTHON_DISPATCH
                    continue
                if position in dropped_at_once:
                    continue  # see _made_and_dropped_by_the_watcher
                ledger.running = self._op_running(enclosing_ops)
                source = "mapping" if mapped else "CPU allocator"
                if size > 0:
                    if ledger.holds(address):  # its free was never reported (another thread's): it is gone
                        ledger.free(address)
                    ledger.allocate(address, size, source)
                    if ledger.running is None:
                        allocated_outside_ops = True
                    for index in placed.get(position, ()):
                        self._free(ledger, index, elsewhere=False)
                elif address in watchers_own:
                    watchers_own.discard(address)
                elif ledger.holds(address):
                    ledger.free(address)
                elif address not in namer.before_addresses:
                    # A block from before the block that the profiler knows (a mapping, or a block allocated while
                    # an earlier profiler ran) and no watched storage counted. The size is the allocator's record,
                    # which can be stale (a block it recorded, freed while no profiler ran, its address used again):
                    # a storage seen dying at that address, whose size is known, gives the size instead.
                    size = uncertain_sizes.pop(address, -size)
                    ledger.free_from_before(address, size, source)
                    freed_by_their_events.append((address, size))
            elif kind == "mark":
                name = event[2]
                if name.startswith(free_prefix):
                    index = int(name[len(free_prefix) :])
                    if index not in placed_frees:
                        ledger.running = self._op_running(event[3])
                        self._free(ledger, index, elsewhere=len(event) > 4)
                elif name.startswith(seen_prefix):
                    address, nbytes, source = namer.seen[int(name[len(seen_prefix) :])]
                    # No allocator event: not the CPU allocator of this thread (see other_threads).
                    if not ledger.holds(address) and (self.other_threads or source == "pinned"):
                        ledger.running = self._op_running(event[3])
                        ledger.allocate(address, nbytes, "another thread" if source != "pinned" else source)
                        if source != "pinned":
                            self.unreported_bytes += nbytes
                        if ledger.running is None:
                            allocated_outside_ops = True
                elif name.startswith(namer.grads_prefix):
                    ledger.mark_gradients(namer.phases.gradient_marks[int(name[len(namer.grads_prefix) :])])
                elif name.startswith(backward_prefix):
                    edge, task = name[len(backward_prefix) :].split(":")
                    (backward_passes.add if edge == "start" else backward_passes.discard)(task)
            elif event[2].startswith(op_prefix):
                allocated_outside_ops = False
                ledger.op_ended()
                index = int(event[2][len(op_prefix) :])
                if not in_backward_of_op[index][1]:  # no backward runs on this thread (one that raised has no end)
                    backward_passes.clear()
                timeline.append((namer.names[index], ledger.current))
        ledger.running = None
        for address, nbytes in self.found_at_end:
            if not ledger.holds(address) and address not in watchers_own:
                ledger.allocate(address, nbytes, "another thread")
                self.unreported_bytes += nbytes
                allocated_outside_ops = True
        self.uncertain_bytes = sum(
            nbytes
            for address, nbytes in namer.uncertain_frees
            if not any(start <= address < start + size for start, size in freed_by_their_events)
        )
        # A block that ran no op but freed memory from before it (``del x``) gets an entry for those frees too.
        if allocated_outside_ops or (not timeline and ledger.current != 0):
            ledger.op_ended()
            timeline.append((OUTSIDE_ANY_OP, ledger.current))
        return timeline


class _ThreadSession(threading.local):
    """Per thread: the open CPU blocks, the profiler run serving them, and the redirected stderr."""

    def __init__(self):
        self.blocks: list[_CpuBlock] = []
        self.profiling = False
        self.saved_stderr: int | None = None
        self.stderr_file = None


_session = _ThreadSession()
_thread_hook_lock = threading.Lock()
_thread_hook_users = 0
_previous_thread_hook = None
_NOISE = (
    b"USDT:",
    b"STAGE:",
    b"Memory block of unknown size",
    b"ActivityProfilerController",
    b"SyncActivityProfilerHandler",
)


def _profiler_api():
    from torch._C._autograd import _disable_profiler, _enable_profiler, _prepare_profiler
    from torch._C._profiler import ProfilerActivity, ProfilerConfig, ProfilerState, _ExperimentalConfig

    config = ProfilerConfig(ProfilerState.KINETO, False, True, False, False, False, _ExperimentalConfig())
    return config, {ProfilerActivity.CPU}, _prepare_profiler, _enable_profiler, _disable_profiler


def _start_profiler() -> None:
    # Kineto reads its log level once, when the first profiler of the process starts: set here, it also keeps a
    # later torch.profiler.profile of the learner's from printing its start/stop lines. A value already set wins.
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # on torch 2.13, "5" still prints the two lines
    config, activities, prepare, enable, _ = _profiler_api()
    prepare(config, activities)
    enable(config, activities)
    _session.profiling = True


def _stop_profiler() -> None:
    """Stops the profiler and hands its events to every block still open on this thread."""
    from torch._C._autograd import _profiler_enabled

    _, _, _, _, disable = _profiler_api()
    _session.profiling = False
    if not _profiler_enabled():  # a profiler started inside the block took the session over and stopped it
        for block in _session.blocks:
            block.taken_over = True
        return
    events = _flatten(disable().experimental_event_tree())
    for block in _session.blocks:
        block.events.extend(events)


def _redirect_stderr() -> None:
    """Sends file descriptor 2 to a temporary file: the profiler prints there from C++."""
    try:
        sys.stderr.flush()
    except (AttributeError, ValueError, OSError):
        pass
    try:
        saved = os.dup(2)
    except OSError:  # no file descriptor 2 at all: nothing can be printed either
        return
    stderr_file = tempfile.TemporaryFile()
    os.dup2(stderr_file.fileno(), 2)
    _session.saved_stderr, _session.stderr_file = saved, stderr_file


def _restore_stderr() -> None:
    """Puts file descriptor 2 back and passes on what was written there, less the profiler's own lines."""
    if _session.saved_stderr is None:
        return
    try:
        sys.stderr.flush()
    except (AttributeError, ValueError, OSError):
        pass
    os.dup2(_session.saved_stderr, 2)
    os.close(_session.saved_stderr)
    stderr_file = _session.stderr_file
    _session.saved_stderr = _session.stderr_file = None
    stderr_file.seek(0)
    kept = [line for line in stderr_file.read().splitlines(keepends=True) if not any(noise in line for noise in _NOISE)]
    stderr_file.close()
    if kept:
        os.write(2, b"".join(kept))


def _thread_started_hook(frame, event, arg):
    """Set with ``threading.setprofile``: runs once in each thread started while a block is open."""
    thread = threading.current_thread()
    for block in list(_all_open_blocks):
        block.threads_started.append(thread.name)
    sys.setprofile(_previous_thread_hook)
    if _previous_thread_hook is not None:
        _previous_thread_hook(frame, event, arg)


_all_open_blocks: set[_CpuBlock] = set()


def _watch_threads(block: _CpuBlock, opening: bool) -> None:
    global _thread_hook_users, _previous_thread_hook
    with _thread_hook_lock:
        if opening:
            _all_open_blocks.add(block)
            if _thread_hook_users == 0:
                _previous_thread_hook = threading.getprofile()
                threading.setprofile(_thread_started_hook)
            _thread_hook_users += 1
        else:
            _all_open_blocks.discard(block)
            _thread_hook_users -= 1
            if _thread_hook_users == 0 and threading.getprofile() is _thread_started_hook:
                threading.setprofile(_previous_thread_hook)


def _open_cpu_block(block: _CpuBlock) -> None:
    if not _session.blocks:
        _redirect_stderr()
    if _session.profiling:
        _stop_profiler()
    _session.blocks.append(block)
    _watch_threads(block, opening=True)
    try:
        _start_profiler()
    except BaseException:
        _close_cpu_block(block)
        raise


def _close_cpu_block(block: _CpuBlock) -> None:
    try:
        if _session.profiling:
            _stop_profiler()
    finally:
        _session.blocks.remove(block)
        _watch_threads(block, opening=False)
        if _session.blocks:
            _start_profiler()
        else:
            _restore_stderr()


def _unseen_threads(block: _CpuBlock) -> list[str]:
    still_running = [t.name for t in threading.enumerate() if t not in block.threads_before]
    names = list(dict.fromkeys(block.threads_started + still_running))
    if not names:
        return []
    several = len(names) > 1
    return [
        f"{len(names)} thread{'s' if several else ''} started in the block ({', '.join(names)}): the profiler "
        f"records only the thread that runs the block, so what {'they' if several else 'it'} allocated and freed "
        "by {0} is not counted".format("themselves" if several else "itself")
    ]


def _unseen_unreported(block: _CpuBlock) -> list[str]:
    if not block.unreported_bytes or block.taken_over:  # then the profiler's own line says why
        return []
    return [
        f"{format_bytes(block.unreported_bytes)} that the block's thread did not see allocated (another thread "
        "made them, e.g. a thread pool made before the block) are counted from when this thread first used them, "
        "or from the end of the block: the peak can be off by that much, and what other threads allocated and "
        "freed by themselves is not counted"
    ]


def _unseen_uncertain(block: _CpuBlock) -> list[str]:
    if not block.uncertain_bytes:
        return []
    return [
        f"{format_bytes(block.uncertain_bytes)} of tensors from before the block were freed in it whose memory "
        "PyTorch's CPU allocator may or may not own (torch.load's and a tensor's after x.numpy() it does, "
        "torch.from_numpy's NumPy does; Python cannot tell them apart): not counted"
    ]


def _unseen_graphs(block: _CpuBlock) -> list[str]:
    if not block.graphs_capped:
        return []
    return [
        f"the autograd graphs alive when the block started have more than {MAX_GRAPH_NODES:,} nodes: tensors "
        "saved in the nodes past that were not watched, so their frees in the block (if any) are not counted"
    ]


def _unseen_profiler(block: _CpuBlock) -> list[str]:
    if not block.taken_over:
        return []
    return [
        "a profiler was started inside the block and took over the allocator's events: the figures miss "
        "what happened before it stopped, except the storages an op used after it or still alive at the end, "
        "counted from then (start torch.profiler outside the block instead)"
    ]


def _profiler_already_running() -> bool:
    from torch._C._autograd import _profiler_enabled

    return _profiler_enabled() and not _session.profiling


def _resolve_device(device) -> torch.device:
    if device is None:
        device = torch.get_default_device()
    if isinstance(device, str):
        try:
            device = torch.device(device)
        except RuntimeError as error:
            raise ValueError(f"device must name a device such as 'cpu' or 'cuda', got {device!r}") from error
    require_type(device, torch.device, "device", "None, a str or a torch.device")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            # torch.cuda.memory_allocated() would answer 0 here without complaint: never report that.
            raise ValueError("device is 'cuda' but CUDA is not available on this machine; measure on 'cpu'")
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
    elif device.type == "cpu":
        # The CPU is one device: 'cpu:0' is it (torch.device('cpu') != torch.device('cpu', 0), so normalise),
        # and there is no 'cpu:1' to measure.
        if device.index not in (None, 0):
            raise ValueError(f"device {str(device)!r} does not exist: the CPU is one device, 'cpu' (or 'cpu:0')")
        device = torch.device("cpu")
    else:
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device.type!r}")
    return device


@contextlib.contextmanager
def measure_memory(device=None) -> Iterator[MemoryReport]:
    """Measure the memory a block leaves allocated (``.allocated``) and its peak (``.peak``).

    Usage::

        with measure_memory() as mem:
            y = torch.relu(x)       # x: 10000 x 10000 float32
        mem.allocated               # 400_000_000; with x.relu_() instead: 0

    On the CPU the figures add up the CPU allocator's own events, read from PyTorch's profiler
    (``profile_memory=True``): every allocation and free of the thread that runs the block, the scratch memory
    of kernels included, so ``peak`` is the allocator's high-water mark for the block. The CPU allocator does
    not round: a tensor counts its ``untyped_storage().nbytes()``. Memory from before the block that the block
    frees counts where it is freed, op or no op: the old gradients ``optimizer.zero_grad()`` drops, the previous
    output of ``out = model(x)``, a name bound again, ``del x`` (the storages alive at the start are watched; the
    profiler alone cannot report those frees). Also counted: shared-memory and file mappings (``share_memory_()``,
    DataLoader worker batches, ``torch.load(mmap=True)``), at their full size when mapped, whether or not their
    pages are in RAM; pinned memory from CUDA's host allocator when CUDA is present (``pin_memory()``,
    ``save_on_cpu(pin_memory=True)``), as the same code counts on a machine without CUDA; and what another thread
    made that the block's thread uses or keeps, from that moment (``.unseen`` gives those bytes). A
    ``torch.compile``d function runs compiled in the block, and stays compiled after it. Not counted, on the CPU:
    what other threads allocate and free by themselves (threads started in the block are named in ``.unseen``;
    work given to a thread pool made before the block leaves no trace unless the block's thread sees its
    memory), memory no PyTorch allocator made (NumPy arrays), the free of a tensor from before the block that
    Python cannot tell to be the allocator's (``torch.from_numpy``, ``torch.load``, after ``x.numpy()``: ``.unseen``
    gives the bytes), and all but the storages ops return when a profiler was already running (``.unseen`` says
    so). The module docstring has the details. C++ lines printed to file descriptor 2 during the block are passed
    on when it ends (the profiler's own lines are dropped). Its own bookkeeping is Python memory (a weak reference
    and a few numbers for each storage alive when the block starts), which ``tracemalloc`` sees: start
    ``tracemalloc`` inside the block to leave it out.

    On CUDA they are differences of ``torch.cuda.memory_allocated()`` and ``max_memory_allocated()``, which count
    the caching allocator's blocks, not the tensors' bytes: in torch 2.13 (``c10/cuda/CUDACachingAllocator.cpp``,
    default settings) a request is rounded up to a multiple of 512 bytes, a request of 10 MiB or more that needs
    a new segment gets one rounded up to a multiple of 2 MiB, and a large-pool block is split only when more than
    1 MiB would be left over. So the same ``torch.relu(x)`` on a fresh GPU gives ``allocated == 400_556_032``
    (191 x 2 MiB, the 382.00 MiB of chapter 6), and any one tensor can count up to about 1 MiB more than its
    bytes. The plain-PyTorch equivalents: ``torch.profiler.profile(profile_memory=True)`` on the CPU;
    ``torch.cuda.reset_peak_memory_stats()``, then ``memory_allocated()`` / ``max_memory_allocated()`` around
    the block on CUDA.

    The report also lists each allocation on the axis of its timeline (``.allocations``, with a kind where a rule
    of ``KINDS`` can tell it) and the phase each op ran in (``.phases``): mark phases with PyTorch's own
    ``torch.profiler.record_function("forward")``; optimizers mark ``step()`` and ``zero_grad()`` themselves, and
    ops autograd runs during ``backward()`` are in "backward".

    Args:
        device: ``None`` (the default device, normally the CPU), ``'cpu'`` (or ``'cpu:0'``), ``'cuda'``,
            ``'cuda:N'`` or a ``torch.device``.

    Yields:
        A ``MemoryReport`` whose fields are filled in when the block ends (also when it raises).

    Raises:
        TypeError: ``device`` is not None, a str or a torch.device.
        ValueError: an unknown device (``'cpu:1'`` included), or CUDA asked for where CUDA is not available.
    """
    device = _resolve_device(device)
    if device.type == "cuda":
        report = MemoryReport(device, "CUDA caching allocator (torch.cuda.memory_allocated)")
        torch.cuda.synchronize(device)
        start_allocated = torch.cuda.memory_allocated(device)
        start_reserved = torch.cuda.memory_reserved(device)
        report.held_before = start_allocated
        torch.cuda.reset_peak_memory_stats(device)
        tracker = _StorageTracker(device, lambda: torch.cuda.memory_allocated(device) - start_allocated)
        try:
            with tracker:
                yield report
        finally:
            tracker.stop()
            _finish_report(report, tracker.ledger, tracker.phases, tracker.timeline, storage_key)
            report.most_held = tuple(held for _, held in tracker.timeline)  # the allocator's, after each op
            torch.cuda.synchronize(device)
            report.allocated = torch.cuda.memory_allocated(device) - start_allocated
            report.peak = max(0, torch.cuda.max_memory_allocated(device) - start_allocated)
            report.reserved = torch.cuda.memory_reserved(device) - start_reserved
        return
    if _profiler_already_running():
        yield from _measure_aten_outputs(device)
        return
    report = MemoryReport(device, "CPU allocator events (PyTorch profiler, profile_memory=True)")
    block = _CpuBlock()
    report.held_before = block.namer.held_before
    _open_cpu_block(block)
    try:
        with block.namer, block.generations:
            yield report
    finally:
        try:
            block.finish()
        finally:
            block.namer.stop()
            _close_cpu_block(block)
        ledger = _Ledger()
        timeline = block.replay(ledger)
        report.allocated, report.peak = ledger.current, ledger.peak
        _finish_report(report, ledger, block.namer.phases, timeline, lambda tensor: tensor.untyped_storage().data_ptr())
        report.unseen = tuple(
            _unseen_threads(block)
            + _unseen_unreported(block)
            + _unseen_uncertain(block)
            + _unseen_graphs(block)
            + _unseen_profiler(block)
        )


def _measure_aten_outputs(device):
    """The fallback when a profiler already runs: the storages that aten ops create and free."""
    report = MemoryReport(device, "storages created and freed by aten ops (CPU; a profiler was already running)")
    tracker = _StorageTracker(device)
    try:
        with tracker:
            yield report
    finally:
        tracker.stop()
        _finish_report(report, tracker.ledger, tracker.phases, tracker.timeline, storage_key)
        report.allocated = tracker.ledger.current
        report.peak = tracker.ledger.peak
        report.unseen = (
            "a profiler was already running on this thread, so the CPU allocator's events could not be read: "
            "only the storages that aten ops return are counted (not kernels' scratch memory, not storage made "
            "without an aten op or by compiled code, not other threads)",
        )
