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

The profiler does not report the free of a block allocated before it started, so the dispatch mode also watches
the storages the block's ops use and counts one off when it is freed in the block (``x = x.relu()`` frees the
old ``x``) or when an op moved it to a new block (``resize_``).

What the CPU figures still do not see (each is also in ``measure_memory``'s docstring and in chapter 6):

- allocations made in other threads: the profiler records only the thread that runs the block. Threads started
  inside the block are detected and listed in ``MemoryReport.unseen``; work handed to threads that already
  existed (a thread pool made before the block) is neither counted nor detected, and neither is the scratch
  memory of torch's own intra-op worker threads (OpenMP) other than the calling one;
- memory no PyTorch allocator made: NumPy arrays (``torch.from_numpy`` shares them; ``y.numpy() + 1`` is NumPy's);
- a storage from before the block that is freed in it without any op of the block touching it (``del x``);
- under a Python dispatch mode that is not the course's (``allow_mutation_on_saved_tensors()``, your own
  ``TorchDispatchMode``), the one-value tensor (8 bytes) that mode's Python layer makes again of each Python number
  an op receives: it looks exactly like the copy the course's own watchers cause, which is left out;
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

import contextlib
import itertools
import os
import sys
import tempfile
import threading
import weakref
from dataclasses import dataclass
from typing import Iterator

import torch
from torch._C._profiler import _EventType, _RecordFunctionFast

from ..common.checks import require_int, require_type
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


#: The kinds of allocation a report can name, each with the rule that names it. Nothing else is guessed.
KINDS = {
    "parameter": "the storage of an nn.Parameter that an op of the block used, still allocated at the end",
    "gradient": "the .grad of such a parameter, made in the block and still allocated at the end",
    "optimizer state": "made inside optimizer.step() and still allocated at the end (the optimizer holds it)",
    "activation": "made outside backward() and freed while autograd's engine ran it: kept for the backward pass "
    "(saved tensors, let go once their node has run)",
    "temporary": "freed later in the block, not while autograd's engine ran backward() (the starting gradient "
    "backward() makes goes as backward() returns)",
    "scratch": "freed inside the op that made it (the op's own working memory)",
    "unknown": "still allocated at the end, by something no rule here can name",
    "from before the block": "allocated before the block and freed in it (counts as negative bytes)",
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
    """

    nbytes: int
    allocated_at: int | None
    freed_at: int | None
    freed_inside: bool
    kind: str
    allocated_by: str | None
    freed_by: str | None


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
            op: ``torch.UntypedStorage(n)``, ``pickle.loads``) in a last entry named ``OUTSIDE_ANY_OP``.
        unseen: sentences naming what this block did that the figures could not count (threads started in the
            block, a profiler that was already running); empty when the figures are complete.
        allocations: every ``Allocation`` the block made, in the order they were made, then the frees of memory
            from before the block; the sizes of those alive at the end minus those from before add up to
            ``allocated``.
        phases: one per ``timeline`` entry: the phase its op ran in (see the module docstring), or None.
        most_held: one per ``timeline`` entry: the most held (from the block's start) from the end of the
            previous op to the end of this one, so scratch memory inside the op is in it; on the CPU
            ``max(most_held)`` is ``peak``. On CUDA, where the allocator's peak cannot be read op by op without
            resetting it, the bytes held after the op (so ``peak`` can be higher than any of them).
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
        # [key, nbytes, allocated_at, freed_at, freed_inside, made in backward, freed in backward]
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

    def allocate(self, key, nbytes: int) -> None:
        record = [key, nbytes, self.running if self.running is not None else self.ops_done, None, False]
        record += [self.in_backward(), False]
        self._live[key] = record
        self._records.append(record)
        self._change(nbytes)

    def free(self, key) -> None:
        record = self._live.pop(key)
        record[3], record[4] = self._where_freed(record[2])
        record[6] = self.in_backward()
        self._change(-record[1])

    def free_from_before(self, key, nbytes: int) -> None:
        freed_at, inside = self._where_freed(None)
        self._records.append([key, nbytes, None, freed_at, inside, False, self.in_backward()])
        self._change(-nbytes)

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
        for key, nbytes, allocated_at, freed_at, inside, made_in_backward, freed_in_backward in self._records:
            if allocated_at is None:
                kind = "from before the block"
            elif freed_at is None:
                kind = "unknown"
                if key in parameters:
                    kind = "parameter"
                elif key in gradients:
                    kind = "gradient"
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
    """Counts bytes of storages on one device that ops create, and of earlier ones that die, over time."""

    def __init__(self, device: torch.device, read_allocator=None):
        super().__init__()
        self.device = device
        self.ledger = _Ledger()
        self.phases = _Phases()
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
        if counted and nbytes:
            self.ledger.allocate(key, nbytes)
        self._nbytes[key] = nbytes
        self._watched[key] = weakref.finalize(storage, self._freed, key)

    def _resized(self, storage, key: int) -> None:
        """An op wrote into a storage and grew or shrank it (``out=`` into an empty tensor, ``resize_``)."""
        if not storage.resizable() or storage.nbytes() == self._nbytes[key]:
            return
        self._let_go(key, self._nbytes[key])
        self._nbytes[key] = storage.nbytes()
        if self._nbytes[key]:
            self.ledger.allocate(key, self._nbytes[key])

    def _let_go(self, key: int, nbytes: int) -> None:
        """The memory of a watched storage was given back: the block's own, or from before the block."""
        if self.ledger.holds(key):
            self.ledger.free(key)
        elif nbytes:
            self.ledger.free_from_before(key, nbytes)

    def _freed(self, key: int) -> None:
        self._watched.pop(key, None)
        self._let_go(key, self._nbytes.pop(key))

    def _on_device(self, tensor: torch.Tensor) -> bool:
        return tensor.device == self.device and tensor.layout == torch.strided

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        if name in _RANGE_OPS:
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


class _CpuOpNamer(WatcherMode):
    """Names the aten ops of one block for the profiler, and watches the storages they use.

    Each op runs inside a profiler range named ``tl::op:<block>:<index>``, so an allocator event can be traced
    back to the op it happened in. A storage an op uses is watched: when it dies, or an op moves it to a new
    block of memory, a range named ``tl::free:<block>:<index>`` marks the moment, with the address and size
    kept here. The profiler cannot report those frees when the memory was allocated before it started.

    A backward pass is marked too: ``tl::backward:<block>:start:<task>`` before the first op autograd's engine
    runs for it, ``tl::backward:<block>:end:<task>`` when the engine has run every node (a final callback,
    ``queue_callback``), so a free between two ops can be told to be during backward or after it returned.
    """

    def __init__(self, block_id: int):
        super().__init__()
        self.op_prefix = f"tl::op:{block_id}:"
        self.free_prefix = f"tl::free:{block_id}:"
        self.backward_prefix = f"tl::backward:{block_id}:"
        self._graph_tasks: set[int] = set()  # the backward passes marked
        self.names: list[str] = []
        self.frees: list[tuple[int, int]] = []  # (address, bytes) of each watched block that went away
        self.phases = _Phases()
        self._watched: dict[int, weakref.finalize] = {}
        self._blocks: dict[int, tuple[int, int]] = {}  # storage key -> (address, bytes) of its memory block

    def _watch(self, storage) -> None:
        key = storage._cdata
        if key in self._watched:
            return
        # Memory no PyTorch allocator made (torch.from_numpy, DLPack) is not resizable, and not the allocator's.
        nbytes = storage.nbytes() if storage.resizable() else 0
        self._blocks[key] = (storage.data_ptr(), nbytes)
        self._watched[key] = weakref.finalize(storage, self._freed, key)

    def _mark_free(self, address: int, nbytes: int) -> None:
        if nbytes:
            self.frees.append((address, nbytes))
            with _RecordFunctionFast(f"{self.free_prefix}{len(self.frees) - 1}"):
                pass

    def _freed(self, key: int) -> None:
        self._watched.pop(key, None)
        address, nbytes = self._blocks.pop(key)
        self._mark_free(address, nbytes)

    def _mark_backward(self, edge: str, task: int) -> None:
        with _RecordFunctionFast(f"{self.backward_prefix}{edge}:{task}"):
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
            return self.phases.run_range(func, args, kwargs)
        storages = _cpu_storages(args, kwargs)
        for storage in storages:
            self._watch(storage)
        self.phases.note_op(tensors_in((args, kwargs)))
        self._follow_backward()
        index = len(self.names)
        self.names.append(name)
        with _RecordFunctionFast(f"{self.op_prefix}{index}"):
            result = call_keeping_versions(func, args, kwargs)
        for storage in storages:  # resize_, out= into a tensor too small: the storage got a new block
            key = storage._cdata
            address, nbytes = self._blocks.get(key, (0, 0))
            if storage.data_ptr() != address and key in self._blocks:
                self._mark_free(address, nbytes)
                self._blocks[key] = (storage.data_ptr(), storage.nbytes() if storage.resizable() else 0)
        return result

    def recheck(self) -> None:
        """At the end of the block: a storage whose memory was swapped outside any op (``share_memory_()`` moves
        a storage into shared memory) gave its old block back."""
        for key, finalizer in list(self._watched.items()):
            alive = finalizer.peek()
            if alive is None or key not in self._blocks:
                continue
            storage = alive[0]
            address, nbytes = self._blocks[key]
            if storage.data_ptr() != address:
                self._mark_free(address, nbytes)
                self._blocks[key] = (storage.data_ptr(), storage.nbytes() if storage.resizable() else 0)

    def stop(self) -> None:
        for finalizer in self._watched.values():
            finalizer.detach()
        self._watched.clear()
        self._blocks.clear()


# The profiler's range around a Python dispatch mode's __torch_dispatch__. An allocation directly inside it, or
# directly inside a tl::op range (not inside the aten op that range then runs), is the Python dispatch layer's
# own: a Python number that an op receives for a Tensor argument reaches __torch_dispatch__ as a Python number,
# and calling the op again turns it into a one-value tensor again (8 bytes). That copy exists only because the
# block is watched (by measure_memory or trace_ops), so it is not counted.
_PYTHON_DISPATCH = "PythonDispatchMode"
_COMPILED_REGION = "Torch-Compiled Region"


def _flatten(tree) -> list[tuple]:
    """The profiler's event tree of one thread as a flat list in time order (children come sorted by start).

    Entries: ``("alloc", address, signed bytes, the tl::op ranges around it, the innermost range's name)``,
    ``("range", name, the tl::op ranges around it)`` when a ``tl::free`` or ``tl::backward`` range starts,
    ``("end", name)`` when a ``tl::op`` range ends.
    """
    flat: list[tuple] = []
    append = flat.append
    allocation = _EventType.Allocation

    def walk(events, ops: tuple, innermost: str) -> None:
        for event in events:
            if event.tag == allocation:
                fields = event.extra_fields
                if fields.device.type == "cpu":  # a CUDA allocation in the block is not the CPU's
                    append(("alloc", fields.ptr, fields.alloc_size, ops, innermost))
                continue
            name = event.name
            if name.startswith("tl::"):
                if name.startswith(("tl::free:", "tl::backward:")):
                    append(("range", name, ops))
                    continue
                walk(event.children, ops + (name,), name)
                append(("end", name))
            else:
                children = event.children
                if children:
                    walk(children, ops, name)

    walk(tree, (), "")
    return flat


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
        if event[0] == after[0] == "alloc" and event[2] > 0 and event[4].startswith(_COMPILED_REGION):
            if after[1] == event[1] and after[2] == -event[2] and after[4] == event[4]:
                found.update((index, index + 1))
    return found


class _CpuBlock:
    """One ``measure_memory`` block on the CPU: its op namer and the profiler events collected for it."""

    def __init__(self):
        self.block_id = next(_block_ids)
        self.namer = _CpuOpNamer(self.block_id)
        self.events: list[tuple] = []
        self.threads_before = set(threading.enumerate())
        self.threads_started: list[str] = []
        self.taken_over = False  # a profiler started inside the block took the events

    def _op_running(self, enclosing_ops: tuple) -> int | None:
        """The index of this block's op an event happened in, or None between ops."""
        for name in reversed(enclosing_ops):
            if name.startswith(self.namer.op_prefix):
                return int(name[len(self.namer.op_prefix) :])
        return None

    def replay(self, ledger: _Ledger) -> list[tuple[str, int]]:
        """Adds up the events in ``ledger``; returns the timeline."""
        op_prefix, free_prefix = self.namer.op_prefix, self.namer.free_prefix
        backward_prefix, in_backward_of_op = self.namer.backward_prefix, self.namer.phases.of_ops
        backward_passes: set[str] = set()  # the backward passes started and not yet ended
        ledger.in_backward = lambda: bool(backward_passes)
        ever_allocated: set[int] = set()
        timeline: list[tuple[str, int]] = []
        allocated_outside_ops = False  # since the last op: shown with the next op, or in a last entry
        dropped_at_once = _made_and_dropped_by_the_watcher(self.events)
        for index, event in enumerate(self.events):
            kind = event[0]
            if kind == "alloc":
                _, address, size, enclosing_ops, innermost = event
                if size > 0 and (innermost == _PYTHON_DISPATCH or innermost.startswith("tl::op:")):
                    continue  # the watcher's own, see _PYTHON_DISPATCH
                if index in dropped_at_once:
                    continue  # see _made_and_dropped_by_the_watcher
                ledger.running = self._op_running(enclosing_ops)
                if size > 0:
                    ledger.allocate(address, size)
                    ever_allocated.add(address)
                    if ledger.running is None:
                        allocated_outside_ops = True
                elif ledger.holds(address):  # frees of blocks from before the block are counted from the namer
                    ledger.free(address)
            elif kind == "range":
                if event[1].startswith(free_prefix):
                    address, nbytes = self.namer.frees[int(event[1][len(free_prefix) :])]
                    # A block from before the block held its address all along: no allocation here reused it.
                    if address not in ever_allocated:
                        ledger.running = self._op_running(event[2])
                        ledger.free_from_before(address, nbytes)
                elif event[1].startswith(backward_prefix):
                    edge, task = event[1][len(backward_prefix) :].split(":")
                    (backward_passes.add if edge == "start" else backward_passes.discard)(task)
            elif event[1].startswith(op_prefix):
                allocated_outside_ops = False
                ledger.op_ended()
                index = int(event[1][len(op_prefix) :])
                if not in_backward_of_op[index][1]:  # no backward runs on this thread (one that raised has no end)
                    backward_passes.clear()
                timeline.append((self.namer.names[index], ledger.current))
        ledger.running = None
        if allocated_outside_ops:
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
        f"records only the thread that runs the block, so {'their' if several else 'its'} allocations are not "
        "counted"
    ]


def _unseen_profiler(block: _CpuBlock) -> list[str]:
    if not block.taken_over:
        return []
    return [
        "a profiler was started inside the block and took over the allocator's events: the figures miss "
        "what happened before it stopped (start torch.profiler outside the block instead)"
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
    not round: a tensor counts its ``untyped_storage().nbytes()``. The frees of memory allocated before the block
    are counted when an op of the block used that storage (the profiler cannot see them). Not counted, on the
    CPU: allocations in other threads (threads started in the block are named in ``.unseen``; a thread pool made
    before the block is not even detected), memory no PyTorch allocator made (NumPy arrays, shared memory), a
    storage from before the block freed without any op of the block touching it (``del x``), and all but the
    storages ops return when a profiler was already running (``.unseen`` says so). C++ lines printed to file
    descriptor 2 during the block are passed on when it ends (the profiler's own lines are dropped).

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
    _open_cpu_block(block)
    try:
        with block.namer:
            yield report
    finally:
        block.namer.recheck()
        block.namer.stop()
        _close_cpu_block(block)
        ledger = _Ledger()
        timeline = block.replay(ledger)
        report.allocated, report.peak = ledger.current, ledger.peak
        _finish_report(report, ledger, block.namer.phases, timeline, lambda tensor: tensor.untyped_storage().data_ptr())
        report.unseen = tuple(_unseen_threads(block) + _unseen_profiler(block))


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
            "without an aten op, not other threads)",
        )
