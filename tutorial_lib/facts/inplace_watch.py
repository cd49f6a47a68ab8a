"""Name the line that broke backward: who saved a tensor, and who changed it in place since.

``watch_inplace()`` is a context manager. Inside it, two cheap records are kept:

* every aten op that writes into an existing tensor (the schema marks the argument as written:
  ``add_``, ``x += 1``, ``out=``, ``copy_``, index assignment, ``nn.ReLU(inplace=True)``, the
  ``_foreach_*_`` updates of ``optimizer.step()``, writes through views): op name, the tensor's
  version before and after, its storage (an integer, not a reference), the user's source line and the lines
  that called it, and, for a write made inside one of torch's modules, weak references to the modules running;
* for every backward node autograd creates, the user's line (and its callers) that created it. Autograd numbers
  its nodes (``grad_fn._sequence_nr()``) and creates an op's node just before the op runs, so an aten-level
  watcher that reads the next number (``torch._C._autograd._get_sequence_nr()``) knows which node the
  running op made. Nothing is attached to the graph and no ``saved_tensors_hooks`` are used: those would
  switch off autograd's version check (a hooked saved tensor is never checked), and the point is that
  torch raises exactly as it would without the watcher.

The user's line is the innermost Python frame outside torch and tutorial_lib: file, line number and the
line's text; its callers are the user's frames above it, up to the script's (or cell's) top level. Only
integers, strings, tuples and weak references are kept (no tensors, frames or nodes), and at most
``max_records`` of each kind: older ones are dropped first, and the explanation says so when a line it
needs was dropped.

The watcher changes nothing the program computes. ``torch.compile`` compiles as it would without it (see
``watching.py``); backward runs with the watcher's dispatch mode off (a dispatch mode makes some backward
formulas, ``prod``'s among them, take their subclass-safe path, which rounds differently), so gradients are
bit-identical; ``_foreach_*_`` writes move version counters once per list entry, as torch does.

When ``backward()`` or ``torch.autograd.grad`` raises autograd's version error inside the block
("... is at version 1; expected version 0 instead"), the error is raised unchanged, with an explanation
added as a note (PEP 678, printed under torch's message in a traceback) and as the attribute
``inplace_explanation``: which saved tensor is stale, the line that saved it, every line that changed it
since (in order, with op names and, for a torch module, its path in the model and the line that built it),
every other stale tensor, and the fixes that apply, the first one written as code that can be pasted
(``explanation.edits``). To catch that moment the watcher wraps ``torch.autograd``'s
``_engine_run_backward`` while it is active (torch's own ``torch.compiler`` does the same for tracing); the
wrapper only looks at errors.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import linecache
import os
import re
import sys
import sysconfig
import threading
from dataclasses import dataclass
from typing import Iterator, NamedTuple

import torch
from torch._C._autograd import _get_sequence_nr

from ..common.checks import describe, require_positive_int, require_type, shape_text
from ..common.text import dtype_name, op_name, plural, strip_hint
from . import module_names
from .cell_lines import cell_place, shown_lineno
from .graph import (
    VERSION_ERROR,
    GraphNode,
    describe_saved,
    error_shape_and_dtype,
    error_versions,
    inplace_hazards,
    stale_saved_tensors,
)
from .inplace_advice import Change, Edit, Fix, carried_names, change_fixes, detach_state_fix, fresh_forward_fix
from .watching import WatcherMode, bump_like_torch, storage_key, tensor_version, written_arguments

#: ``watch_inplace`` keeps at most this many write records and node records unless told otherwise.
DEFAULT_MAX_RECORDS = 50_000
#: At most this many callers are kept above a recorded line (the script's top level ends the chain sooner).
MAX_CALLERS = 12

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_LIBRARY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # tutorial_lib/, from facts/
_OPTIM_DIR = os.path.join(_TORCH_DIR, "optim") + os.sep
_FUNCTION_FILE = os.path.join(_TORCH_DIR, "autograd", "function.py")
#: torch's compiled-code runtime: ops dispatched from under these frames come from torch.compile'd code (Dynamo's
#: own frames are not among them: they also run, uncompiled, under TORCH_COMPILE_DISABLE=1).
_COMPILER_DIRS = tuple(
    os.path.join(_TORCH_DIR, *name.split("/")) + os.sep for name in ("_functorch/_aot_autograd", "_inductor")
)
#: Python's own library and installed packages: a chain of callers stops there (pytest, IPython, runpy).
_OUTSIDE_DIRS = tuple(
    dict.fromkeys(
        os.path.abspath(path) + os.sep
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (path := sysconfig.get_paths().get(key))
    )
)
_CALL_IMPL = torch.nn.Module._call_impl.__code__


# ----------------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class SourceLine:
    """A line of the user's code: file, line number, the function it is in, and the line's text."""

    filename: str
    lineno: int
    function: str
    text: str

    @property
    def place(self) -> str:
        """``file.py:12`` for a file (its base name); for a line of a Jupyter or IPython cell, whose file name
        (``/tmp/ipykernel_…/1023890166.py``, ``<ipython-input-3-…>``) a reader cannot connect to a cell,
        ``line 12 of this cell`` (the cell running now, where the text is shown), ``line 12 of cell [3]`` (another
        cell, by the number its prompt shows) or ``line 12 of a notebook cell`` (see ``cell_place``)."""
        in_cell = cell_place(self.filename, self.lineno)
        if in_cell is not None:
            return in_cell
        return f"{os.path.basename(self.filename) or self.filename}:{self.lineno}"

    @property
    def number(self) -> int:
        """The line's number as its reader counts it: ``lineno`` for a file; for a cell, plus the leading blank
        lines IPython stripped before compiling it (the editor's count, which ``place`` and the fixes quote)."""
        return shown_lineno(self.filename, self.lineno)

    def __str__(self) -> str:
        return f"{self.place}  {self.text}" if self.text else self.place


@dataclass(frozen=True)
class InplaceWrite:
    """One aten op that wrote into an existing tensor while ``watch_inplace`` was on.

    ``version_after`` is the version the write moves the tensor to (autograd bumps the counter once per
    written tensor, right after the op; a fused optimizer's write bumps nothing, so there it equals
    ``version_before``: see ``InplaceWatch.unversioned_writes``). ``in_optimizer`` is True when the write ran inside
    ``torch.optim`` (an ``optimizer.step()``); ``line`` is then the user's ``step()`` call. ``callers`` are the
    lines that called ``line``'s function, innermost first, up to the script's top level. ``module`` names the
    torch module whose ``forward`` made the write (``"classifier.main[2]: Dropout(p=0.5, inplace=True)"``) and
    ``built_at`` the line that built it, when an explanation looked them up (None otherwise).
    """

    op: str  # "aten::relu_", "aten::_foreach_add_", "aten::copy_"
    argument: str  # the written argument: "self", "out", "self[2]" for the third tensor of a list
    shape: tuple[int, ...]
    version_before: int
    version_after: int
    line: SourceLine | None
    in_optimizer: bool
    order: int  # position among the ops the watcher saw (1 = first)
    callers: tuple[SourceLine, ...] = ()
    module: str | None = None
    built_at: SourceLine | None = None

    def __str__(self) -> str:
        where = str(self.line) if self.line else "line unknown"
        return f"{where}   ({op_name(self.op)}, version {self.version_before} -> {self.version_after})"


def is_library_frame(filename: str) -> bool:
    """Whether code in ``filename`` is torch's, tutorial_lib's or Python's own (frozen or generated), not the user's.

    Code torch.compile generates (FX graphs, inductor's output files) counts as torch's.

    Raises:
        TypeError: ``filename`` is not a str.
    """
    require_type(filename, str, "filename", "a str")
    return _classify(filename) in (_LIBRARY, _COMPILER)


# What a frame's file is: the user's code, torch's or tutorial_lib's, torch's compiler (or code it generated),
# or outside both (Python's library, installed packages: a chain of callers stops there).
_USER, _LIBRARY, _COMPILER, _OUTSIDE = 0, 1, 2, 3


def _classify(filename: str) -> int:
    if filename.startswith("<eval_with_key") or "torchinductor" in filename:
        return _COMPILER
    if filename.startswith("<frozen"):
        return _LIBRARY
    path = os.path.abspath(filename)
    if path.startswith(_COMPILER_DIRS):
        return _COMPILER
    if path.startswith(_TORCH_DIR) or path.startswith(_LIBRARY_DIR):
        return _LIBRARY
    if path.startswith(_OUTSIDE_DIRS):
        return _OUTSIDE
    return _USER


#: A place's flags: its op came out of torch.compile'd code; the user's line called the op itself.
COMPILED, DIRECT = 1, 2

_KINDS: dict[str, int] = {}
# (flags, innermost (file, line, function, bytecode offset), callers as (file, line, function) ...) -> the one
# tuple standing for it in every record, however often the line runs
_PLACES: dict = {}


def _kind(filename: str) -> int:
    kind = _KINDS.get(filename)
    if kind is None:
        kind = _KINDS[filename] = _classify(filename)
    return kind


def _function_caller(frame):
    """For a frame inside a custom ``autograd.Function``'s forward: the user's frame that called ``apply``."""
    caller = frame.f_back
    if caller is None or caller.f_code.co_filename != _FUNCTION_FILE or caller.f_code.co_name != "apply":
        return None
    while caller is not None and _kind(caller.f_code.co_filename) not in (_USER, _OUTSIDE):
        caller = caller.f_back
    return caller


def _place_of(frame):
    """The interned place of the innermost user frame at or above ``frame``, with its callers; None if none.

    The place is ``(flags, (file, line, function, offset, compiled), (file, line, function), ...)``: ``flags &
    COMPILED`` when the op came out of torch.compile'd code (then the line is the one that called the compiled
    function, whose name is ``compiled``), ``flags & DIRECT`` when the user's line called the op itself (no
    Python of torch's in between, so one run of the line runs it once), the innermost line (its bytecode offset
    tells two calls on one line apart), then the lines that called it, innermost first, up to a frame at a
    module's top level or the first frame of Python's own library or an installed package.
    """
    flags = DIRECT
    while frame is not None:
        kind = _kind(frame.f_code.co_filename)
        if kind == _USER or kind == _OUTSIDE:
            break
        flags &= ~DIRECT
        if kind == _COMPILER:
            flags |= COMPILED
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code
    compiled_name = None
    if flags & COMPILED:
        # the frame torch.compile runs (its bytecode rewritten, its line numbers meaningless): name it, and take
        # the line that called it
        compiled_name = code.co_name
        caller = frame.f_back
        while caller is not None and _kind(caller.f_code.co_filename) not in (_USER, _OUTSIDE):
            caller = caller.f_back
        if caller is not None and _kind(caller.f_code.co_filename) == _USER:
            frame, code = caller, caller.f_code
    elif code.co_name == "forward":  # a custom Function's node is made by its apply() call
        frame = _function_caller(frame) or frame
        code = frame.f_code
    key = [flags, (code.co_filename, frame.f_lineno, code.co_name, frame.f_lasti, compiled_name)]
    if code.co_name != "<module>":
        caller = frame.f_back
        while caller is not None and len(key) < MAX_CALLERS + 2:
            kind = _kind(caller.f_code.co_filename)
            if kind == _OUTSIDE:
                break
            if kind == _USER:
                key.append((caller.f_code.co_filename, caller.f_lineno, caller.f_code.co_name))
                if caller.f_code.co_name == "<module>":
                    break
            caller = caller.f_back
    key = tuple(key)
    return _PLACES.setdefault(key, key)


def _source_line(where) -> SourceLine | None:
    if where is None:
        return None
    filename, lineno, function = where[:3]
    return SourceLine(filename, lineno, function, linecache.getline(filename, lineno).strip())


def _line_of(place) -> SourceLine | None:
    return _source_line(place[1]) if place is not None else None


def _shown(place) -> int | None:
    """The line number of a record's place as its reader counts it (see ``cell_lines.shown_lineno``)."""
    return shown_lineno(place[1][0], place[1][1]) if place is not None else None


def _callers_of(place) -> tuple[SourceLine, ...]:
    """The lines that called the place's line, innermost first; a caller on the very line it calls (a lambda
    or a comprehension run by that line) is left out."""
    if place is None:
        return ()
    callers, previous = [], place[1][:2]
    for where in place[2:]:
        if where[:2] != previous:
            callers.append(_source_line(where))
        previous = where[:2]
    return tuple(callers)


class _Write(NamedTuple):
    """What the watcher keeps of one write (plain values and weak references only)."""

    op: str
    argument: str
    shape: tuple
    version_before: int
    version_after: int
    storage: object  # storage_key of the written tensor
    place: tuple | None
    in_optimizer: bool
    order: int
    requires_grad: bool
    inputs: tuple  # storage keys of every tensor the op read or wrote (a CopySlices node may save any)
    view: tuple | None  # (offset, strides) where a view was written
    view_node: int | None  # the sequence number of that view's grad_fn (the node made by the op that took it)
    modules: tuple | None  # weak references to the torch modules running the write, innermost first
    root_name: str | None  # the outermost module's name where the user's code called it
    leaf: bool  # a leaf that requires grad was written (an update of a parameter, under no_grad)


def _with_versions(record: _Write, before: int, after: int) -> _Write:
    return _Write(*record[:3], before, after, *record[5:])


#: The grad_fn names of view ops, read from aten's schemas (a view's grad_fn names the op that took it).
_VIEW_NODES: dict[str, bool] = {}


def _is_view_node(name: str) -> bool:
    """Whether a node of this name is made by a view op (``SliceBackward0`` by ``aten::slice``), read from aten's
    schemas: a view op returns an alias of its input that it does not write."""
    known = _VIEW_NODES.get(name)
    if known is None:
        op = re.sub(r"Backward\d*$", "", name)
        snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", op).lower()
        packet = getattr(torch.ops.aten, snake, None)
        schemas = []
        try:
            for overload in packet.overloads() if packet is not None else ():
                schemas.append(getattr(packet, overload)._schema)
        except (AttributeError, RuntimeError):
            schemas = []
        known = any(r.alias_info is not None and not r.alias_info.is_write for s in schemas for r in s.returns)
        _VIEW_NODES[name] = known
    return known


class _Watcher(WatcherMode):
    """The aten-level half of ``watch_inplace``: writes and node-creating ops, as plain tuples."""

    def __init__(self, watch: "InplaceWatch"):
        super().__init__()
        self.watch = watch
        self.last_sequence = _get_sequence_nr()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        watch = self.watch
        watch._op_count += 1
        sequence = _get_sequence_nr()
        made = sequence != self.last_sequence
        if made:
            # autograd made the nodes numbered last_sequence .. sequence - 1 since the last op: for this op,
            # just before running it (an op can make more than one, e.g. mul_ whose other is its self)
            watch._add_node(self.last_sequence, watch._op_count, _place_of(sys._getframe(1)))
            self.last_sequence = sequence
        written = written_arguments(func)
        if not written[0]:
            if made and func._schema.name.startswith("aten::_foreach_"):
                # a _foreach_ node hides what it saved from Python: keep the storages it could have saved
                result = func(*args, **kwargs)
                watch._node_storages[watch._op_count] = tuple(  # what it returns first: those live on
                    storage_key(t)
                    for value in (result, *args, *kwargs.values())
                    for t in (value if isinstance(value, (list, tuple)) else (value,))
                    if isinstance(t, torch.Tensor)
                )
                return result
            return func(*args, **kwargs)
        if written[2]:
            watch._unversioned_ops.add(func._schema.name)
        tensors, records = self._record_writes(func, written[0], args, kwargs, written[2])
        result = func(*args, **kwargs)
        if written[1]:
            after = bump_like_torch(tensors)
            if after is not None:  # torch bumps once per list entry, in order: [y, y] reads 0 -> 1, then 1 -> 2
                records = [_with_versions(r, v - 1, v) for r, v in zip(records, after)]
            else:  # the kernel bumped them itself: entries over one storage and version follow each other
                counted: dict = {}
                for index, record in enumerate(records):
                    earlier = counted.get((record.storage, record.version_before), 0)
                    counted[(record.storage, record.version_before)] = earlier + 1
                    before = record.version_before + earlier
                    records[index] = _with_versions(record, before, before + 1)
        for record in records:
            watch._add_write(record)
        return result

    def _record_writes(self, func, written, args, kwargs, unversioned: bool):
        dispatch = sys._getframe(2)
        in_optimizer = False
        in_module = False
        frame = dispatch
        while frame is not None and _kind(frame.f_code.co_filename) not in (_USER, _OUTSIDE):
            code = frame.f_code
            if code is _CALL_IMPL:
                in_module = True
            elif code.co_filename.startswith(_OPTIM_DIR):
                in_optimizer = True
            frame = frame.f_back
        place = _place_of(dispatch)
        modules, root_name = None, None
        if in_module and not in_optimizer:
            chain, root_name = module_names.module_chain(dispatch)
            modules = module_names.weak_chain(chain) if chain else None
        name = func._schema.name
        seen: list = []
        records: list = []
        # The storages of every tensor the op reads or writes: a node it makes (CopySlices, for an op on
        # a view) may save any of them.
        inputs = tuple(
            storage_key(t)
            for value in (*args, *kwargs.values())
            for t in (value if isinstance(value, (list, tuple)) else (value,))
            if isinstance(t, torch.Tensor)
        )
        order = self.watch._op_count
        for position, argument, keyword_only in written:
            value = kwargs.get(argument) if keyword_only or position >= len(args) else args[position]
            if isinstance(value, torch.Tensor):
                tensors = ((argument, value),)
            elif isinstance(value, (list, tuple)):
                tensors = tuple((f"{argument}[{i}]", t) for i, t in enumerate(value) if isinstance(t, torch.Tensor))
            else:
                continue
            for label, tensor in tensors:
                version = tensor_version(tensor)
                if version is None:
                    continue
                seen.append((tensor, version))
                view, view_node = None, None
                # a view that requires grad is no leaf; asking it (is_leaf reads grad_fn) would rebuild the grad_fn
                # of a view whose base changed, a node plain torch makes only when someone asks
                leaf = tensor.requires_grad and not tensor._is_view() and tensor.is_leaf
                if tensor._is_view():
                    # where a view writes, its place in the storage: a clone of its base taken after the view
                    # leaves the view, and the write, on the old storage; and the node of the op that took it
                    view = (tensor.storage_offset(), tuple(tensor.stride()))
                    # autograd has already read the view's grad_fn when grad mode is on; under no_grad, reading it
                    # would rebuild it (a new node) where plain torch does not
                    view_fn = tensor.grad_fn if tensor.requires_grad and torch.is_grad_enabled() else None
                    if view_fn is not None and _is_view_node(view_fn.name()):
                        view_node = view_fn._sequence_nr()
                records.append(
                    _Write(
                        name,
                        label,
                        tuple(tensor.shape),
                        version,
                        version if unversioned else version + 1,
                        storage_key(tensor),
                        place,
                        in_optimizer,
                        order,
                        tensor.requires_grad,
                        inputs,
                        view,
                        view_node,
                        modules,
                        root_name,
                        leaf,
                    )
                )
        return seen, records


def _keep_dynamo_out(code) -> None:
    """Tell dynamo never to trace this code or what it calls.

    ``WatcherMode`` does not let torch wrap ``__torch_dispatch__`` in ``torch._dynamo.disable`` (that
    imports dynamo, which takes more than a second). Dynamo does not trace a mode that ignores compile
    internals, but the frame strategy below makes sure (it is what ``torch._dynamo.disable`` sets too; it lives
    in ``torch._C``, so setting it imports nothing).
    """
    try:
        from torch._C._dynamo import eval_frame

        skip = eval_frame._FrameAction.SKIP
        eval_frame.set_code_exec_strategy(code, eval_frame._FrameExecStrategy(skip, skip))
    except (ImportError, AttributeError, TypeError, RuntimeError):  # private API: without it dynamo still works
        pass


_keep_dynamo_out(_Watcher.__torch_dispatch__.__code__)


class InplaceWatch:
    """What ``watch_inplace`` recorded; also the way to ask about a graph before backward.

    Attributes:
        writes: every write recorded (``InplaceWrite``), oldest first (see ``max_records``).
        unversioned_writes: the writes autograd cannot see (fused optimizer steps), see the property.
        explanations: the ``InplaceExplanation`` of each version error raised by ``backward()`` or
            ``torch.autograd.grad`` inside the block.
        dropped_writes / dropped_nodes: how many old records were dropped to stay within ``max_records``.
        active: whether the block is still running.
    """

    def __init__(self, max_records: int):
        self.max_records = max_records
        self.explanations: list[InplaceExplanation] = []
        self.dropped_writes = 0
        self.dropped_nodes = 0
        self.active = False
        self._last_sequence = -1  # the last node number made while watching, set when the block ends
        self._op_count = 0
        self._writes: list[_Write] = []
        self._node_sequences: list[int] = []
        self._node_records: list[tuple] = []  # (op order, place)
        self._node_storages: dict[int, tuple] = {}  # op order -> storages a _foreach_ op read and returned
        self._backward_calls: list[tuple] = []  # (op order, retain_graph, place)
        self._unversioned_ops: set[str] = set()
        self._first_sequence = _get_sequence_nr()
        self._thread = threading.get_ident()

    # -- recording (hot path: plain tuples)

    def _add_node(self, sequence: int, order: int, place) -> None:
        self._node_sequences.append(sequence)
        self._node_records.append((order, place))
        if len(self._node_sequences) > self.max_records:
            drop = max(1, self.max_records // 2)
            del self._node_sequences[:drop]
            del self._node_records[:drop]
            self.dropped_nodes += drop
            oldest = self._node_records[0][0]
            for order in [o for o in self._node_storages if o < oldest]:
                del self._node_storages[order]

    def _add_write(self, record: _Write) -> None:
        self._writes.append(record)
        if len(self._writes) > self.max_records:
            drop = max(1, self.max_records // 2)
            del self._writes[:drop]
            self.dropped_writes += drop

    # -- reading

    @property
    def writes(self) -> list[InplaceWrite]:
        return [_write_from(record) for record in self._writes]

    @property
    def unversioned_writes(self) -> list[InplaceWrite]:
        """Writes that bump no version counter, so autograd never notices them: the fused optimizers'
        updates (``torch.optim.Adam(..., fused=True)`` runs ``_fused_adam_``). A graph that saved a
        parameter and is used after such a ``step()`` gives gradients from the new values, silently."""
        return [_write_from(r) for r in self._writes if r.op in self._unversioned_ops]

    @property
    def compiled_lines(self) -> list[SourceLine]:
        """The user's lines whose ops came out of ``torch.compile``'d code: the watcher saw the aten ops that
        code dispatched, not the Python lines inside it (nor what inductor's fused kernels do)."""
        places = [place for _, place in self._node_records if place is not None and place[0] & COMPILED]
        places += [w.place for w in self._writes if w.place is not None and w.place[0] & COMPILED]
        return [_line_of(p) for p in dict.fromkeys(places)]

    def held_records(self) -> int:
        """How many records the watch holds now (writes, node lines and backward calls)."""
        return len(self._writes) + len(self._node_sequences) + len(self._backward_calls)

    def _node_record(self, sequence: int, made_after_op: bool = False):
        """(op order, place) of the op that made the node with this sequence number, or None if not seen.

        Each record covers the nodes made between the previous op and its own (its key is the first of
        them). ``made_after_op``: the node is made after its op ran (``CopySlices``, which autograd puts
        on the base when a view is changed in place), so it belongs to the op before.
        """
        if not self._saw_sequence(sequence):
            return None
        index = bisect.bisect_right(self._node_sequences, sequence) - 1
        if index < 0:
            return None
        if made_after_op and self._node_sequences[index] == sequence and index > 0:
            index -= 1
        return self._node_records[index]

    def _saw_sequence(self, sequence: int) -> bool:
        """Whether the node numbered ``sequence`` was made while this watch was on (this thread's numbers)."""
        return sequence >= self._first_sequence and (self.active or sequence <= self._last_sequence)

    def explain(self, t) -> list["InplaceExplanation"]:
        """Explain every stale saved tensor in ``t``'s backward graph, before running backward.

        Args:
            t: the tensor you would call ``backward()`` on (a loss), or a list of them.

        Returns:
            One ``InplaceExplanation`` per stale saved tensor (empty when backward would not raise the
            version error), nearest the output first.

        Raises:
            TypeError: ``t`` is not a tensor or a list of tensors.
        """
        roots = _check_roots(t, "t")
        return _explain_graph(roots, [self], error_message=None, frame=sys._getframe(1))

    def __repr__(self) -> str:
        state = "watching" if self.active else "finished"
        return (
            f"InplaceWatch({state}: {plural(len(self._writes), 'write')}, "
            f"{plural(len(self._node_sequences), 'node line')}, {plural(len(self.explanations), 'explanation')})"
        )


def _write_from(record: _Write, detail: bool = False) -> InplaceWrite:
    """The public record of a write; with ``detail``, also the module that made it and the line that built it."""
    module, built_at = None, None
    if detail and record.modules is not None:
        modules = module_names.alive(record.modules)
        if modules is not None:
            names = module_names.child_names(modules)
            path = module_names.module_path(record.root_name, names) if names is not None else None
            module = f"{path}: {module_names.module_summary(modules[0])}" if path else None
            site = module_names.find_build_site(modules, record.root_name, _caller_file(record))
            if site is not None:
                built_at = SourceLine(site.filename, site.lineno, "", site.line_text)
    return InplaceWrite(
        record.op,
        record.argument,
        record.shape,
        record.version_before,
        record.version_after,
        _line_of(record.place),
        record.in_optimizer,
        record.order,
        _callers_of(record.place),
        module,
        built_at,
    )


def _caller_file(record: _Write) -> str | None:
    """The file of the line that called the write's outermost module (the innermost user line)."""
    return record.place[1][0] if record.place is not None else None


# ----------------------------------------------------------------------------------------------------
# The explanation


@dataclass(frozen=True)
class InplaceExplanation:
    """Why backward failed (or will, when it reaches the node): a saved tensor changed in place after it was saved.

    Attributes:
        node: the backward node that saved the tensor (``"SigmoidBackward0"``).
        what: the saved tensor in words (``"the result of sigmoid"``, ``"input 'self' of mul"``; a parameter
            is named by its path in the model: ``"critic.fc2.weight (input 'mat2' of addmm)"``).
        shape, dtype: the saved tensor's shape and dtype (None when unknown).
        saved_version, current_version: its version when saved and now.
        saved_at: the line that created the node which saved it, or None when unknown.
        changed_at: every recorded write that moved it from ``saved_version`` towards
            ``current_version``, in order.
        fixes: the fixes that apply, in words, best first.
        unknown: sentences saying what could not be found out or seen, and why (empty when all is known).
        message: torch's error message without its anomaly-detection hint (None before backward).
        other_stale: how many other saved tensors in the graph are stale too.
        saved_callers: the lines that called ``saved_at``'s function, innermost first, up to the top level.
        notes: what else the records say (saved in an earlier loop iteration, or an earlier batch).
        edits: the ``inplace_advice.Edit``s that apply the first fix as written (empty when it cannot be
            applied mechanically).
        also_stale: for the error backward raised, the explanations of the other stale saved tensors.
    """

    node: str
    what: str
    shape: tuple[int, ...] | None
    dtype: torch.dtype | None
    saved_version: int
    current_version: int
    saved_at: SourceLine | None
    changed_at: tuple[InplaceWrite, ...]
    fixes: tuple[str, ...]
    unknown: tuple[str, ...] = ()
    message: str | None = None
    other_stale: int = 0
    saved_callers: tuple[SourceLine, ...] = ()
    notes: tuple[str, ...] = ()
    edits: tuple[Edit, ...] = ()
    also_stale: tuple["InplaceExplanation", ...] = ()

    @property
    def changed_lines(self) -> tuple[int, ...]:
        """The line numbers of ``changed_at`` (repeats removed, order kept), as the reader counts them (a cell's
        leading blank lines counted: ``SourceLine.number``)."""
        return tuple(dict.fromkeys(w.line.number for w in self.changed_at if w.line is not None))

    @property
    def saved_line(self) -> int | None:
        """The line number of ``saved_at``, as the reader counts it (``SourceLine.number``)."""
        return self.saved_at.number if self.saved_at is not None else None

    def _kind(self) -> str:
        dtype = dtype_name(self.dtype) if self.dtype is not None else "tensor"
        return f"a {dtype} tensor of shape {shape_text(self.shape)}" if self.shape is not None else f"a {dtype} tensor"

    def _lines(self, indent: str = "  ") -> list[str]:
        """The stale tensor, where it was saved and changed, and the notes, as ``__str__`` prints them."""
        lines = [
            f"{indent}stale tensor: {self.what} ({self._kind()}), saved by {self.node} at version "
            f"{self.saved_version}, now at version {self.current_version}",
            f"{indent}saved at:     {self.saved_at if self.saved_at else 'line unknown'}",
        ]
        lines += [f"{indent}                called from {caller}" for caller in self.saved_callers]
        if self.changed_at:
            for index, write in enumerate(self.changed_at):
                lines.append(f"{indent}{'changed at:   ' if index == 0 else '              '}{write}")
                if write.module:
                    built = f", built at {write.built_at}" if write.built_at else ""
                    lines.append(f"{indent}                by {write.module}{built}")
                lines += [f"{indent}                called from {caller}" for caller in write.callers]
        else:
            lines.append(f"{indent}changed at:   line unknown")
        lines += [f"{indent}({sentence})" for sentence in (*self.notes, *self.unknown)]
        return lines

    def __str__(self) -> str:
        lines = ["Backward needs a tensor that was changed in place after it was saved.", *self._lines()]
        lines.append("How to fix it:")
        lines.extend(f"  - {fix}" for fix in self.fixes)
        if self.also_stale:
            lines += _also_stale_lines(self)
        elif self.other_stale:
            lines.append(
                f"{self.other_stale} other saved tensor{'s are' if self.other_stale != 1 else ' is'} stale too "
                "(tl.explain_inplace(loss) lists them all)"
            )
        return "\n".join(lines)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        import html

        head = f"<b>RuntimeError</b>: {html.escape(self.message)}\n\n" if self.message else ""
        return (
            # JupyterLab breaks a <pre>'s lines inside words ("[torch.Flo / atTensor"): only between words here
            "<pre style='border-left:4px solid #d62728;padding:4px 8px;white-space:pre-wrap;"
            "word-break:normal;overflow-wrap:break-word'>"
            f"{head}{html.escape(str(self))}</pre>"
        )


def _also_stale_lines(main: InplaceExplanation) -> list[str]:
    """The other stale tensors, grouped: those changed by the same lines with the same first fix (the same edits) as
    the main one in one sentence, each other one with its lines and first fix."""
    count = len(main.also_stale)
    lines = [
        "This other saved tensor is stale too (backward would stop there next):"
        if count == 1
        else f"These {count} other saved tensors are stale too (backward would stop at each of them next):"
    ]
    same = [
        other
        for other in main.also_stale
        if other.changed_lines == main.changed_lines and (other.edits == main.edits != () or other.fixes == main.fixes)
    ]
    if same:
        names = ", ".join(dict.fromkeys(m.what for m in same[:3])) + (
            f" and {len(same) - 3} more" if len(same) > 3 else ""
        )
        saved = ", ".join(dict.fromkeys(m.saved_at.place for m in same if m.saved_at)) or "line unknown"
        lines.append(f"  - {names}: saved at {saved}, changed by the same lines; the same fix applies.")
    for member in main.also_stale:
        if member in same:
            continue
        saved = f"saved at {member.saved_at}" if member.saved_at else "saved at an unknown line"
        changed = "; ".join(str(w) for w in member.changed_at) or "line unknown"
        lines.append(f"  - {member.what}, {saved}")
        lines.append(f"      changed at {changed}")
        lines += [f"      ({sentence})" for sentence in (*member.notes, *member.unknown)]
        if member.fixes:
            lines.append(f"      fix: {member.fixes[0]}")
    return lines


def _check_roots(t, name: str) -> list:
    if isinstance(t, torch.Tensor):
        return [t]
    if isinstance(t, (list, tuple)) and t and all(isinstance(item, torch.Tensor) for item in t):
        return list(t)
    raise TypeError(f"{name} must be a tensor or a non-empty list of tensors, got {describe(t)}")


def _root_functions(roots) -> list:
    functions = []
    for root in roots:
        fn = getattr(root, "grad_fn", None) if isinstance(root, torch.Tensor) else getattr(root, "node", None)
        if fn is not None:
            functions.append(fn)
    return functions


def _all_functions(roots) -> list:
    """Every backward node reachable from the roots, breadth-first (the order ``autograd_graph`` uses)."""
    seen: set[int] = set()
    order: list = []
    queue = list(_root_functions(roots))
    for fn in queue:
        seen.add(id(fn))
    head = 0
    while head < len(queue):
        fn = queue[head]
        head += 1
        order.append(fn)
        for next_fn, _ in fn.next_functions:
            if next_fn is not None and id(next_fn) not in seen:
                seen.add(id(next_fn))
                queue.append(next_fn)
    return order


def _raw_saved(fn, attribute: str):
    """autograd's SavedTensor object behind ``graph.SavedTensor.attribute`` (None when not readable)."""
    match = re.fullmatch(r"(\w+)\[(\d+)\]", attribute)
    try:
        if attribute.startswith("saved_tensors"):
            raws = fn._raw_saved_tensors
            return raws[int(match.group(2))] if match else None
        if match:
            return getattr(fn, "_raw_saved_" + match.group(1))[int(match.group(2))]
        return getattr(fn, "_raw_saved_" + attribute)
    except (AttributeError, IndexError, RuntimeError, TypeError):
        return None


def _saved_data(fn, attribute: str):
    """The saved tensor's data (no version check), or None where it cannot be read."""
    raw = _raw_saved(fn, attribute)
    if raw is None:
        return None
    try:
        data = raw.data
    except RuntimeError:
        return None
    return data if isinstance(data, torch.Tensor) else None


def _saved_storage(fn, saved):
    """The storage the saved tensor lives in: read from the graph (checkpoint inputs too), else None."""
    if saved.placement is not None:
        return saved.placement[0]
    data = _saved_data(fn, saved.attribute)
    return storage_key(data) if data is not None else None


def _placement_of(fn, saved):
    """(storage, offset, shape, strides) of the saved tensor, or None where it cannot be read."""
    if saved.placement is not None:
        return saved.placement
    data = _saved_data(fn, saved.attribute)
    if data is None:
        return None
    return (storage_key(data), data.storage_offset(), tuple(data.shape), tuple(data.stride()))


def _saved_place(fn, attribute: str):
    """(shape, storage offset, strides) of the saved tensor, or None where it cannot be read."""
    data = _saved_data(fn, attribute)
    return (tuple(data.shape), data.storage_offset(), tuple(data.stride())) if data is not None else None


def _anomaly_line(fn) -> SourceLine | None:
    """The user's line from anomaly mode's record of where the node was made (``detect_anomaly``)."""
    try:
        trace = fn.metadata.get("traceback_")
    except (AttributeError, RuntimeError):
        return None
    if not trace:
        return None
    text = "".join(trace) if isinstance(trace, (list, tuple)) else str(trace)
    found = None
    for match in re.finditer(r'File "([^"]+)", line (\d+), in (\S+)', text):
        if not is_library_frame(match.group(1)):
            found = (match.group(1), int(match.group(2)), match.group(3))
    return _source_line(found)


def _writes_since(watch: InplaceWatch, storage, after_order: int, saved_version: int, current_version: int):
    """The recorded writes into ``storage`` after op ``after_order`` that moved it from the saved version on.

    The saved tensor's storage was alive from the moment it was saved, so no other storage can have had
    the same address since. One storage can carry several version counters, though: ``x.data`` has its
    own, starting at 0, and its writes are invisible to autograd. The writes that count form a chain,
    one per version from ``saved_version`` to ``current_version - 1`` in order; where two writes claim the
    same version, one on a tensor that requires grad wins (``x.data`` never does), else the earlier.
    """
    unversioned = watch._unversioned_ops
    candidates = [
        record
        for record in watch._writes
        if record.storage == storage
        and record.order >= after_order
        and saved_version <= record.version_before < current_version
        and record.op not in unversioned
    ]
    chain = []
    last_order = after_order - 1
    for version in range(saved_version, current_version):
        claims = [r for r in candidates if r.version_before == version and r.order > last_order]
        if not claims:
            continue
        chosen = next((r for r in claims if r.requires_grad), claims[0])
        chain.append(chosen)
        last_order = chosen.order
    return chain


def _storages_to_search(watch: InplaceWatch, fn, saved, saved_order: int) -> list:
    """The storages the stale saved tensor can be in, most certain first.

    Read from the graph where Python can (the saved data, a checkpoint's input); for a ``CopySlices`` (which
    hides its tensors) the storages the in-place op on a view touched, that op being the first write at or after
    the op that made the node (autograd may run a clone of an aliased input between them); for a
    ``torch._foreach_*`` node, the storages its op read and returned.
    """
    storage = _saved_storage(fn, saved)
    if storage is not None:
        return [storage]
    if fn.name().endswith("CopySlices"):
        made = next((w for w in watch._writes if w.order >= saved_order), None)
        return list(dict.fromkeys(made.inputs)) if made else []
    return list(dict.fromkeys(watch._node_storages.get(saved_order, ())))


# Generic fixes, with placeholders, for a write whose line cannot be read (no source, or not one statement).
_OUT_OF_PLACE_FORMS = {
    "aten::relu_": "torch.relu(y) or nn.ReLU() (inplace=False, the default) instead of relu_ / nn.ReLU(inplace=True)",
    "aten::add_": "y = y + other instead of y += other or y.add_(other)",
    "aten::sub_": "y = y - other instead of y -= other or y.sub_(other)",
    "aten::mul_": "y = y * other instead of y *= other or y.mul_(other)",
    "aten::div_": "y = y / other instead of y /= other or y.div_(other)",
}


def _generic_fix(name: str) -> str:
    """The fix for an in-place op ``name`` (``aten::mul_``) when its line cannot be read: with placeholders."""
    op = op_name(name)
    plain = op.removesuffix("_")
    if name in _OUT_OF_PLACE_FORMS:
        return "Use the out-of-place form: " + _OUT_OF_PLACE_FORMS[name] + "."
    if name == "aten::zero_":
        return "Make a new tensor instead: y = torch.zeros_like(y) instead of y.zero_() (or nn.init.zeros_(y))."
    if name == "aten::fill_":
        return "Make a new tensor instead: y = torch.full_like(y, value) instead of y.fill_(value) or y[i] = value."
    if name in ("aten::copy_", "aten::index_put_"):
        return (
            f"Do not write into a tensor autograd saved ({op}: y[i] = ... or y.copy_(...)): collect the pieces in "
            "a list and torch.stack / torch.cat them, or write into a clone()."
        )
    if plain.startswith("_foreach"):
        return f"Use torch.{plain}(...), which returns new tensors, instead of torch.{op}(...)."
    if hasattr(torch.Tensor, plain):
        return f"Use the out-of-place form: y = y.{plain}(...) instead of y.{op}(...)."
    return f"{op} has no out-of-place form: make a new tensor instead of changing the saved one."


class _Context(NamedTuple):
    """What explaining one graph needs besides the stale tensor: the watches, the roots, names, the backward."""

    watches: list
    roots: list
    parameters: dict  # storage key -> "critic.fc2.weight"
    backward_place: tuple | None  # where the failing backward() was called (None before backward)


def _change_of(record: _Write, watch: InplaceWatch, saved_placement=None) -> Change:
    """The advice's view of one write: its line, the view it went through, the module that made it."""
    line = _line_of(record.place)
    view_line = None
    if record.view_node is not None:
        made = watch._node_record(record.view_node)
        view_line = _line_of(made[1]) if made is not None else None
    module_path = module_summary = build = None
    inplace = False
    if record.modules is not None:
        modules = module_names.alive(record.modules)
        if modules is not None:
            names = module_names.child_names(modules)
            module_path = module_names.module_path(record.root_name, names) if names is not None else None
            module_summary = module_names.module_summary(modules[0])
            inplace = getattr(modules[0], "inplace", False) is True
            build = module_names.find_build_site(modules, record.root_name, _caller_file(record))
    return Change(
        record.op,
        record.argument,
        line.filename if line else None,
        line.lineno if line else None,
        record.view is not None,
        view_line.filename if view_line else None,
        view_line.lineno if view_line else None,
        module_path,
        module_summary,
        inplace,
        build,
        saved_placement is not None
        and record.view is not None
        and (record.storage, record.view[0], record.shape, record.view[1]) == saved_placement,
    )


def _in_function(place, function: tuple):
    """The line of ``place`` (or of one of its callers) that is in ``function`` (file, name), or None."""
    if place is None:
        return None
    for where in place[1:]:
        if (where[0], where[2]) == function:
            return where[0], where[1]
    return None


def _graph_between(roots, target) -> list:
    """The nodes on some path from the roots down to ``target`` (the roots and ``target`` included)."""
    order = _all_functions(roots)
    reaches: dict[int, bool] = {id(target): True}
    changed = True
    while changed:  # breadth-first order reversed puts a node's inputs first: one pass, or a few for odd graphs
        changed = False
        for fn in reversed(order):
            if not reaches.get(id(fn)) and any(n is not None and reaches.get(id(n)) for n, _ in fn.next_functions):
                reaches[id(fn)] = changed = True
    return [fn for fn in order if reaches.get(id(fn))]


def _reaches_storages(roots, storages: set) -> bool:
    """Whether backward from the roots reaches a leaf (an ``AccumulateGrad``) over one of ``storages``."""
    for fn in _all_functions(roots):
        variable = getattr(fn, "variable", None)
        if isinstance(variable, torch.Tensor) and storage_key(variable) in storages:
            return True
    return False


def _step_text(place) -> str:
    line = _line_of(place)
    return line.text.split("#")[0].strip() if line is not None else "optimizer.step()"


def _update_fixes(watch, writes, saved_order, saved_place, fn, context) -> tuple[list[Fix], list[str]]:
    """Fixes and notes for a saved tensor an update changed: ``optimizer.step()``, or a write into a leaf that
    requires grad (``w -= lr * w.grad`` under ``no_grad``); the first of ``writes`` is one."""
    step = writes[0]
    step_line = _line_of(step.place)
    fixes: list[Fix] = []
    notes: list[str] = []
    step_where = step.place[1] if step.place else None
    step_text = _step_text(step.place)
    update = f"{step_text} (line {step_line.number})" if step_line else "the update"
    optimizer = step_text.removesuffix(".step()") if step.in_optimizer and step_text.endswith(".step()") else None
    backward_line = _line_of(context.backward_place)
    backward_calls = [b for b in watch._backward_calls if saved_order < b[0] < step.order]
    saved_again = saved_place is not None and any(
        order > step.order and place is not None and place[1] == saved_place[1] for order, place in watch._node_records
    )
    if backward_calls and saved_again and step_where is not None:
        # An earlier batch: saved, backward, step, then the saving line ran again and its graph reached back.
        earlier = backward_calls[-1]
        earlier_line = _line_of(earlier[2])
        notes.append(
            f"saved in an earlier batch: before the backward() at {earlier_line.place if earlier_line else 'a line'}"
            f" and {update}; line {_shown(saved_place)} then ran again, and this backward() still reached the earlier "
            "graph through state carried from one batch to the next"
        )
        for where in saved_place[1:]:
            names = carried_names(where[0], where[1])
            anchor = _in_function(earlier[2], (where[0], where[2]))
            if names and anchor is not None:
                fix = detach_state_fix(names, anchor, shown_lineno(where[0], where[1]))
                if fix is not None:
                    fixes.append(fix)
                break
    retained = [b for b in backward_calls if b[1]]
    if retained and step_where is not None and not fixes:
        function = (step_where[0], step_where[2])
        repeat = []
        for node in _graph_between(context.roots, fn):
            record = watch._node_record(node._sequence_nr())
            if record is not None and saved_order <= record[0] < step.order:
                where = _in_function(record[1], function)
                if where is not None:
                    repeat.append(where)
        leak = None
        if optimizer is not None:
            stepped = {w.storage for w in watch._writes if w.in_optimizer and w.place == step.place}
            if context.roots and _reaches_storages(context.roots, stepped):
                at = f" at line {backward_line.number}" if backward_line else ""
                leak = (
                    f"(Calling {optimizer}.step() only after every backward() would also remove the error, but then "
                    f"its update would add the gradient of the backward(){at} too, which reaches the parameters it "
                    "updates.)"
                )
        lead = (
            "retain_graph=True kept this graph, and the tensors it saved, for another backward(); "
            f"{update} changed them in between."
        )
        fix = fresh_forward_fix(
            (step_where[0], step_where[1]),
            sorted(dict.fromkeys(repeat), key=lambda w: w[1]),
            backward_line.number if backward_line else None,
            lead,
            leak,
        )
        if fix is not None:
            fixes.append(fix)
        if optimizer is not None:
            fixes.append(
                Fix(
                    "Or update in the other order (the later loss's backward() and its step() first), or detach() "
                    f"what {optimizer} updates from the later loss; calling {optimizer}.step() only after every "
                    "backward() removes the error too, but changes what it learns when a later backward() reaches "
                    "its parameters."
                )
            )
        else:
            fixes.append(
                Fix(
                    f"Or make the update at line {step_line.number if step_line else '?'} only after every backward() "
                    "through this graph."
                )
            )
    if not fixes:
        what = f"{optimizer}.step()" if optimizer else "The update"
        fixes.append(
            Fix(
                f"{what} ({step_line.place if step_line else 'line unknown'}) changed tensors that this graph saved: "
                "run a fresh forward pass after it for any later backward() through them, or make the update only "
                "after every backward() through the graph (which adds that backward's gradient to the update)."
            )
        )
    return fixes, notes


def _iteration_note(watch, saved_order, saved_place, first_change) -> str | None:
    """ "saved in an earlier iteration" when the saving op ran again from its line before the change.

    Only for an op the line calls itself (``DIRECT``): one run of the line runs it once, so a later record at the
    same place (line and bytecode offset) is a later run of the line. A call into a module runs many ops from one
    place, and says nothing of the kind.
    """
    if saved_place is None or first_change is None or not saved_place[0] & DIRECT:
        return None
    runs = sum(
        1 for order, place in watch._node_records if saved_order < order < first_change.order and place == saved_place
    )
    if not runs:
        return None
    return (
        f"saved in an earlier iteration: line {_shown(saved_place)} ran {plural(runs, 'more time')} after saving it, "
        f"before line {_shown(first_change.place) or '?'} changed it"
    )


def _saved_text(writes, saved_at) -> str:
    return f"the saved tensor stays at version {writes[0].version_before if writes else '?'}" + (
        f" (saved at line {saved_at.number})." if saved_at else "."
    )


def _write_fixes(watch, writes, saved_at, saved_placement=None) -> list[Fix]:
    """Fixes for writes outside an optimizer: the first changing line's, then the first fix of each later line (fixing
    the first line often fixes the rest: its out-of-place form or clone leaves the later writes a new tensor)."""
    fixes: list[Fix] = []
    done = set()
    for record in writes:
        key = (record.op, record.place[1][:2] if record.place else None)
        if key in done:
            continue
        done.add(key)
        found = change_fixes(_change_of(record, watch, saved_placement), _saved_text(writes, saved_at))
        if not found and record.argument == "out":
            found = [Fix(f"Drop out=... from {op_name(record.op)}: let it return a new tensor.")]
        found = found or [Fix(_generic_fix(record.op))]
        if fixes and record.place is not None:  # a later line: its own first fix, in case the first line keeps writing
            text = found[0].text
            found = [Fix(f"Line {_shown(record.place)} changes it too: {text[0].lower()}{text[1:]}", found[0].edits)]
        fixes += found
    return fixes


def _explain_one(fn, saved, context: _Context, other_stale: int, message) -> InplaceExplanation:
    watches = context.watches
    node = GraphNode(0, fn.name(), "backward", fn.name(), None, (saved,))
    what = describe_saved(node, saved)
    storage = _saved_storage(fn, saved)
    if storage is not None and storage in context.parameters:
        what = f"{context.parameters[storage]} ({what})"
    sequence = fn._sequence_nr()
    unknown: list[str] = []
    watch, record = None, None
    for candidate in reversed(watches):
        record = candidate._node_record(sequence, made_after_op=fn.name().endswith("CopySlices"))
        if record is not None:
            watch = candidate
            break
    saved_place = None
    if record is not None:
        saved_order, saved_place = record
        saved_at = _line_of(saved_place)
    else:
        saved_order, saved_at = None, _anomaly_line(fn)
        seen = any(candidate._saw_sequence(sequence) for candidate in watches)
        if seen and any(c.dropped_nodes for c in watches):
            unknown.append("the saving line was dropped: more records than max_records")
        elif saved_at is None:
            unknown.append(f"the saving line is unknown: {_outside(watches)}")
    writes: list = []
    if watch is None and watches:
        watch = watches[-1]
    if watch is not None and saved_order is not None:
        for candidate in _storages_to_search(watch, fn, saved, saved_order):
            chain = _writes_since(watch, candidate, saved_order, saved.saved_version, saved.current_version)
            # the longest chain; between equally long ones, the one that wrote a tensor of the saved tensor's
            # shape (a storage key of a tensor freed since can come back for a new one)
            if len(chain) > len(writes) or (
                chain and len(chain) == len(writes) and chain[0].shape == saved.shape != writes[0].shape
            ):
                writes = chain
    missing = saved.current_version - saved.saved_version - len(writes)
    if missing > 0 and saved_order is not None:
        unknown.append(
            f"{missing} of the {saved.current_version - saved.saved_version} changes were not recorded "
            "(made through another tensor sharing the version counter, inside compiled code, in backward, or dropped)"
            if writes
            else "the changing line is unknown: no recorded write matches (a write inside compiled code, in a "
            "backward hook, or through memory the watcher cannot see)"
        )
    elif missing > 0 and not unknown:
        unknown.append(f"the changing line is unknown: {_outside(watches)}")
    elif missing > 0:
        unknown[-1] = unknown[-1].replace("the saving line is unknown", "the saving and changing lines are unknown")
    if saved_place is not None and saved_place[0] & COMPILED:
        name = f" ({saved_place[1][4]})" if saved_place[1][4] else ""
        unknown.append(
            f"saved inside torch.compile'd code{name}, called at line {_shown(saved_place)}: the watcher sees the ops "
            "compiled code runs, not the lines inside it"
        )
    elif fn.name() == "CompiledFunctionBackward":
        unknown.append(
            "a torch.compile'd function saved this tensor: the watcher cannot see inside it, and its saving line "
            "is the line that called it, as far as the watcher can tell"
        )
    notes: list[str] = []
    fixes: list[Fix] = []
    if writes and (writes[0].in_optimizer or writes[0].leaf) and watch is not None:
        fixes, notes = _update_fixes(watch, writes, saved_order, saved_place, fn, context)
    elif writes:
        fixes = _write_fixes(watch, [w for w in writes if not w.in_optimizer], saved_at, _placement_of(fn, saved))
        note = _iteration_note(watch, saved_order, saved_place, writes[0])
        if note:
            notes.append(note)
    if not fixes:
        fixes.append(
            Fix(
                "Find the in-place change (a method ending in _, +=, x[i] = ..., out=, inplace=True, "
                "optimizer.step()) between the saving line and backward(), and use the out-of-place form or "
                "clone() before it."
            )
        )
    texts = [fix.text for fix in fixes]
    if unknown and (saved_order is None or missing > 0):
        texts.append(
            "To see the lines, run the forward pass, the change and backward() in one tl.watch_inplace() block "
            "(in Jupyter: %load_ext tutorial_lib, then one %%watch_inplace cell; for a script: "
            "python -m tutorial_lib.explain)."
        )
    return InplaceExplanation(
        node=fn.name(),
        what=what,
        shape=saved.shape,
        dtype=saved.dtype,
        saved_version=saved.saved_version,
        current_version=saved.current_version,
        saved_at=saved_at,
        changed_at=tuple(_write_from(w, detail=True) for w in writes),
        fixes=tuple(texts),
        unknown=tuple(unknown),
        message=message,
        other_stale=other_stale,
        saved_callers=_callers_of(saved_place),
        notes=tuple(notes),
        edits=fixes[0].edits,
    )


def _outside(watches) -> str:
    """Why a line is unknown when the node was not made under any of ``watches``."""
    if not watches:
        return "no watch_inplace was on during the forward pass"
    return "the forward pass ran outside this watch_inplace block: in an earlier block or cell, or with none on"


def _stale_in(roots) -> list:
    """(fn, graph.SavedTensor) for every stale saved tensor reachable from the roots, nearest first, as
    ``inplace_hazards`` finds them (each checkpoint's inputs once, no ``CopySlices`` that backward skips)."""
    return stale_saved_tensors(_all_functions(roots), list(_root_functions(roots)))


def _user_frames(frame) -> list:
    """The user's frames from ``frame`` outwards, outermost first (where a script's variables are)."""
    frames = []
    while frame is not None:
        if _kind(frame.f_code.co_filename) == _USER:
            frames.append(frame)
        frame = frame.f_back
    return list(reversed(frames))


def _context(roots, watches, frame, backward_place=None) -> _Context:
    try:
        parameters = module_names.parameter_names(_user_frames(frame))
    except Exception:  # noqa: BLE001 - names are a courtesy: a user's odd object must not stop the explanation
        parameters = {}
    return _Context(list(watches), list(roots), parameters, backward_place)


def _explain_graph(roots, watches, error_message, frame=None) -> list[InplaceExplanation]:
    stale = _stale_in(roots)
    if not stale:
        return []
    context = _context(roots, watches, frame if frame is not None else sys._getframe(1))
    return [_explain_one(fn, saved, context, len(stale) - 1, error_message) for fn, saved in stale]


def _explain_error(roots, watches, error, frame=None, backward_place=None) -> InplaceExplanation | None:
    """The explanation of the stale saved tensor that made backward raise ``error`` (with every other stale one
    in ``also_stale``), or None."""
    versions = error_versions(error)
    if versions is None:
        return None
    current, saved_version = versions
    shape = error_shape_and_dtype(error)[0]
    stale = _stale_in(roots)
    message = strip_hint(error)
    if not stale:
        return None
    matching = [
        (fn, saved)
        for fn, saved in stale
        if (saved.current_version, saved.saved_version) == (current, saved_version)
        and (shape is None or saved.shape is None or tuple(saved.shape) == shape)
    ] or stale
    # The engine runs ready nodes in decreasing sequence number: the first stale one it reaches raised.
    fn, saved = max(matching, key=lambda pair: pair[0]._sequence_nr())
    context = _context(roots, watches, frame if frame is not None else sys._getframe(1), backward_place)
    main = _explain_one(fn, saved, context, len(stale) - 1, message)
    others = tuple(
        _explain_one(other_fn, other_saved, context, len(stale) - 1, None)
        for other_fn, other_saved in stale
        if other_saved is not saved
    )
    return dataclasses.replace(main, also_stale=others)


# ----------------------------------------------------------------------------------------------------
# Catching backward's error


_ACTIVE: list[InplaceWatch] = []
_LAST: list[InplaceWatch] = []  # the most recently finished watch, for inplace_hazards after the block
_PATCH_LOCK = threading.Lock()
_ORIGINAL_ENGINE = None


def _pop_watchers() -> list:
    """Take this thread's watchers off the top of the dispatch-mode stack (they go back with ``_push_back``).

    Backward runs without them: a dispatch mode on the stack makes some backward formulas (``prod``'s) take
    their subclass-safe path, whose rounding differs, and the watcher needs nothing from backward. A watcher
    under another mode (one the user entered inside the block) stays, and so does that mode.
    """
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    popped = []
    while isinstance(_get_current_dispatch_mode(), _Watcher):
        popped.append(torch._C._pop_torch_dispatch_stack(None))
    return popped


def _push_back(popped: list) -> None:
    for mode in reversed(popped):
        torch._C._push_on_torch_dispatch_stack(mode)
        mode.last_sequence = _get_sequence_nr()  # nodes backward made (create_graph=True) belong to no op


def _watched_engine_run_backward(t_outputs, *args, **kwargs):
    watches = [w for w in _ACTIVE if w._thread == threading.get_ident()]
    if not watches or _is_compiling():  # AOTAutograd tracing a backward: fake tensors, not the user's
        return _ORIGINAL_ENGINE(t_outputs, *args, **kwargs)
    retain = args[1] if len(args) > 1 else kwargs.get("keep_graph", kwargs.get("retain_graph", False))
    place = _place_of(sys._getframe(1))
    for watch in watches:
        watch._backward_calls.append((watch._op_count, bool(retain), place))
    popped = _pop_watchers()
    try:
        return _ORIGINAL_ENGINE(t_outputs, *args, **kwargs)
    except RuntimeError as error:
        if not hasattr(error, "inplace_explanation") and VERSION_ERROR.search(str(error)):
            try:
                roots = list(t_outputs) if isinstance(t_outputs, (list, tuple)) else [t_outputs]
                explanation = _explain_error(roots, watches, error, sys._getframe(1), place)
            except Exception as failure:  # noqa: BLE001 - never replace torch's error with ours
                explanation = None
                error.add_note(f"(tutorial_lib could not explain this error: {type(failure).__name__}: {failure})")
            if explanation is not None:
                error.inplace_explanation = explanation
                error.add_note("\n" + str(explanation))
                watches[-1].explanations.append(explanation)
        raise
    finally:
        _push_back(popped)


def _is_compiling() -> bool:
    """Whether torch.compile is tracing right now (then backward runs on fake tensors)."""
    try:
        from torch._guards import TracingContext

        return TracingContext.try_get() is not None or torch.compiler.is_compiling()
    except (ImportError, AttributeError):
        return False


def _install() -> None:
    global _ORIGINAL_ENGINE
    import torch.autograd
    import torch.autograd.graph

    if _ORIGINAL_ENGINE is None:
        _ORIGINAL_ENGINE = torch.autograd.graph._engine_run_backward
        torch.autograd.graph._engine_run_backward = _watched_engine_run_backward
        torch.autograd._engine_run_backward = _watched_engine_run_backward


def _uninstall() -> None:
    global _ORIGINAL_ENGINE
    import torch.autograd
    import torch.autograd.graph

    if _ORIGINAL_ENGINE is not None:
        # Put back what was there, unless someone patched it after us (then leave theirs in place).
        if torch.autograd.graph._engine_run_backward is _watched_engine_run_backward:
            torch.autograd.graph._engine_run_backward = _ORIGINAL_ENGINE
        if torch.autograd._engine_run_backward is _watched_engine_run_backward:
            torch.autograd._engine_run_backward = _ORIGINAL_ENGINE
        _ORIGINAL_ENGINE = None


#: What the watcher adds to a version error that torch.compile raised while it traced a backward pass.
COMPILED_NOTE = (
    "tutorial_lib: torch.compile raised autograd's in-place error while it traced this model's backward pass. "
    "The watcher does not look inside compiled code, so it cannot name the lines; the program ran as it does "
    "without the watcher. To see them, run it once uncompiled: TORCH_COMPILE_DISABLE=1 python -m "
    "tutorial_lib.explain script.py, or in a notebook torch._dynamo.config.disable = True before the "
    "%%watch_inplace cell (or call the model without torch.compile inside tl.watch_inplace())."
)


def compile_time_version_error(error: BaseException) -> bool:
    """Whether ``error`` is torch.compile failing on autograd's version error (raised while tracing backward).

    Raises:
        TypeError: ``error`` is not an exception.
    """
    require_type(error, BaseException, "error", "an exception")
    if hasattr(error, "inplace_explanation") or not VERSION_ERROR.search(str(error)):
        return False
    name = type(error).__module__ + "." + type(error).__name__
    return name.startswith("torch._dynamo.") or "BackendCompilerFailed" in name


@contextlib.contextmanager
def watch_inplace(max_records: int = DEFAULT_MAX_RECORDS) -> Iterator[InplaceWatch]:
    """Record in-place changes and which line made each backward node; explain backward's version error.

    Usage::

        with tl.watch_inplace() as watch:
            y = torch.sigmoid(h)          # SigmoidBackward0 saves its result y
            y = relu(y)                   # nn.ReLU(inplace=True): y changes from version 0 to 1
            y.sum().backward()            # raises torch's error, with the explanation as a note

    Torch raises exactly as it would without the watcher, computes the same gradients bit for bit, moves
    version counters the same way, and compiles ``torch.compile``'d code as it would (the watcher then sees the
    ops the compiled code runs, not its lines). The explanation is added to the error as a note and as
    ``error.inplace_explanation``, and kept in ``watch.explanations``. Before backward, ``watch.explain(loss)``
    (or ``tl.inplace_hazards(loss)``) gives the same explanation. Errors other than the version error pass
    through untouched; when torch.compile itself raises the version error (it traces the backward pass when it
    compiles), a note says the watcher cannot see inside compiled code and how to see the lines.

    Args:
        max_records: keep at most this many write records and node records (old ones are dropped
            first, and an explanation that needed one says so).

    Yields:
        An ``InplaceWatch`` (``.writes``, ``.explanations``, ``.explain(t)``, ``.compiled_lines``).

    Raises:
        TypeError: ``max_records`` is not an int.
        ValueError: ``max_records`` < 1.
    """
    require_positive_int(max_records, "max_records")
    watch = InplaceWatch(max_records)
    with _PATCH_LOCK:
        _install()
        _ACTIVE.append(watch)
    watch.active = True
    try:
        with _Watcher(watch):
            yield watch
    except BaseException as error:
        if compile_time_version_error(error) and COMPILED_NOTE not in getattr(error, "__notes__", ()):
            error.add_note(COMPILED_NOTE)
        raise
    finally:
        watch.active = False
        watch._last_sequence = _get_sequence_nr() - 1
        with _PATCH_LOCK:
            _ACTIVE.remove(watch)
            if not _ACTIVE:
                _uninstall()
        _LAST[:] = [watch]


def without_library_frames(error: BaseException) -> BaseException:
    """``error`` (and the errors it chains to) with tutorial_lib's frames dropped from its traceback, and
    every frame inside the watcher's ``__torch_dispatch__`` (torch's ``_ops.py``), which exist only
    because the watcher was on. Returns ``error``."""
    first, seen = error, set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        kept = []
        tb = error.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if code is _Watcher.__torch_dispatch__.__code__:
                break
            if not os.path.abspath(code.co_filename).startswith(_LIBRARY_DIR):
                kept.append(tb)
            tb = tb.tb_next
        for outer, inner in zip(kept, [*kept[1:], None]):
            outer.tb_next = inner
        error.__traceback__ = kept[0] if kept else None
        error = error.__cause__ or error.__context__
    return first


def recent_watches() -> list[InplaceWatch]:
    """The watches ``inplace_hazards`` may use: the active ones, else the last one that finished."""
    return list(_ACTIVE) or list(_LAST)


def attach_source_lines(tensor, hazards: list) -> list:
    """``inplace_hazards``' list with the saving and changing lines added, when a watcher was on.

    Args:
        tensor: the tensor ``inplace_hazards`` was called on.
        hazards: the ``graph.Hazard`` list it found for ``tensor``.

    Returns:
        The hazards, each with ``saved_at``/``changed_at`` and its explanation completed where a watch recorded
        the lines; the same list when no watch did.

    Raises:
        TypeError: ``tensor`` is not a tensor or ``hazards`` not a list.
    """
    require_type(tensor, torch.Tensor, "tensor", "a torch.Tensor")
    require_type(hazards, list, "hazards", "a list")
    watches = recent_watches()
    if not watches:
        return hazards
    explanations = _explain_graph([tensor], watches, error_message=None)
    if len(explanations) != len(hazards):  # not the same graph walk: leave the hazards as they are
        return hazards
    annotated = []
    for hazard, explanation in zip(hazards, explanations):
        if explanation.saved_at is None and not explanation.changed_at:
            annotated.append(hazard)
            continue
        changes = (
            "; ".join(f"{w.line.place if w.line else 'line unknown'} ({op_name(w.op)})" for w in explanation.changed_at)
            or "line unknown"
        )
        saved = explanation.saved_at.place if explanation.saved_at else "line unknown"
        text = f"{hazard.explanation} Saved at {saved}; changed at {changes}."
        annotated.append(
            dataclasses.replace(
                hazard, explanation=text, saved_at=explanation.saved_at, changed_at=explanation.changed_at
            )
        )
    return annotated


def watch_notes(tensor) -> dict[int, tuple[str, ...]]:
    """Where each stale saved tensor of ``tensor``'s graph was saved and changed, as ``watch_inplace`` recorded it.

    Returns:
        Node id -> its texts ("saved at file:line", "changed at file:line (op)"), without repeats; empty when no
        watch is active or finished.

    Raises:
        TypeError: ``tensor`` is not a tensor.
    """
    require_type(tensor, torch.Tensor, "tensor", "a torch.Tensor")
    if not recent_watches():
        return {}
    notes: dict[int, list[str]] = {}
    for hazard in inplace_hazards(tensor):
        texts = notes.setdefault(hazard.node_id, [])
        if hazard.saved_at is not None:
            texts.append(f"saved at {hazard.saved_at.place}")
        for write in hazard.changed_at:
            place = write.line.place if write.line is not None else "line unknown"
            texts.append(f"changed at {place} ({op_name(write.op)})")
    return {node_id: tuple(dict.fromkeys(texts)) for node_id, texts in notes.items() if texts}


def explain_inplace(t) -> list[InplaceExplanation]:
    """Explain every stale saved tensor in ``t``'s graph, with lines when a watcher was on.

    Uses the active ``watch_inplace`` block, else the last one that finished; without any, or for a graph
    built while no watcher was on, the lines are reported unknown and the rest is read from the graph.

    Args:
        t: the tensor you would call ``backward()`` on, or a list of them.

    Returns:
        One ``InplaceExplanation`` per stale saved tensor; empty when backward would not raise.

    Raises:
        TypeError: ``t`` is not a tensor or a non-empty list of tensors.
    """
    roots = _check_roots(t, "t")
    return _explain_graph(roots, recent_watches(), error_message=None)


def explanation_of(error) -> InplaceExplanation | None:
    """The explanation attached to an exception raised inside ``watch_inplace``, or None.

    Raises:
        TypeError: ``error`` is not an exception.
    """
    require_type(error, BaseException, "error", "an exception")
    return getattr(error, "inplace_explanation", None)


__all__ = [
    "DEFAULT_MAX_RECORDS",
    "InplaceExplanation",
    "InplaceWatch",
    "InplaceWrite",
    "SourceLine",
    "COMPILED_NOTE",
    "attach_source_lines",
    "compile_time_version_error",
    "explain_inplace",
    "explanation_of",
    "is_library_frame",
    "recent_watches",
    "watch_inplace",
    "watch_notes",
]
