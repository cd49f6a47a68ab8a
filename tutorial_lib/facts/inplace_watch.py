"""Name the line that broke backward: who saved a tensor, and who changed it in place since.

``watch_inplace()`` is a context manager. Inside it, two cheap records are kept:

* every aten op that writes into an existing tensor (the schema marks the argument as written:
  ``add_``, ``x += 1``, ``out=``, ``copy_``, index assignment, ``nn.ReLU(inplace=True)``, the
  ``_foreach_*_`` updates of ``optimizer.step()``, writes through views): op name, the tensor's
  version before and after, its storage (an integer, not a reference) and the user's source line;
* for every backward node autograd creates, the user's line that created it. Autograd numbers its nodes
  (``grad_fn._sequence_nr()``) and creates an op's node just before the op runs, so an aten-level
  watcher that reads the next number (``torch._C._autograd._get_sequence_nr()``) knows which node the
  running op made. Nothing is attached to the graph and no ``saved_tensors_hooks`` are used: those would
  switch off autograd's version check (a hooked saved tensor is never checked), and the point is that
  torch raises exactly as it would without the watcher.

The user's line is the innermost Python frame outside torch and tutorial_lib: file, line number and the
line's text. Only integers, strings and tuples are kept (no tensors, frames or nodes), and at most
``max_records`` of each kind: older ones are dropped first, and the explanation says so when a line it
needs was dropped.

When ``backward()`` or ``torch.autograd.grad`` raises autograd's version error inside the block
("... is at version 1; expected version 0 instead"), the error is raised unchanged, with an explanation
added as a note (PEP 678, printed under torch's message in a traceback) and as the attribute
``inplace_explanation``: which saved tensor is stale, the line that saved it, every line that changed it
since (in order, with op names), and the fixes that apply. To catch that moment the watcher wraps
``torch.autograd``'s ``_engine_run_backward`` while it is active (torch's own ``torch.compiler`` does the
same for tracing); the wrapper only looks at errors.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import linecache
import os
import re
import sys
import threading
from dataclasses import dataclass
from typing import Iterator

import torch
from torch._C._autograd import _get_sequence_nr

from ..common.checks import describe, require_positive_int, require_type, shape_text
from ..common.text import dtype_name, op_name, plural, strip_hint
from .graph import (
    VERSION_ERROR,
    GraphNode,
    describe_saved,
    error_shape_and_dtype,
    error_versions,
    inplace_hazards,
    stale_saved_tensors,
)
from .watching import WatcherMode, bump_like_torch, storage_key, tensor_version, written_arguments

#: ``watch_inplace`` keeps at most this many write records and node records unless told otherwise.
DEFAULT_MAX_RECORDS = 50_000

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_LIBRARY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # tutorial_lib/, from facts/
_OPTIM_DIR = os.path.join(_TORCH_DIR, "optim") + os.sep
_FUNCTION_FILE = os.path.join(_TORCH_DIR, "autograd", "function.py")


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
        """``file.py:12`` (the file's base name; IPython cells keep their ``<ipython-input-…>`` name)."""
        return f"{os.path.basename(self.filename) or self.filename}:{self.lineno}"

    def __str__(self) -> str:
        return f"{self.place}  {self.text}" if self.text else self.place


@dataclass(frozen=True)
class InplaceWrite:
    """One aten op that wrote into an existing tensor while ``watch_inplace`` was on.

    ``version_after`` is the version the write moves the tensor to (autograd bumps the counter once per
    written tensor, right after the op; a fused optimizer's write bumps nothing, so there it equals
    ``version_before``: see ``InplaceWatch.unversioned_writes``). ``in_optimizer`` is True when the write ran inside
    ``torch.optim`` (an ``optimizer.step()``); ``line`` is then the user's ``step()`` call.
    """

    op: str  # "aten::relu_", "aten::_foreach_add_", "aten::copy_"
    argument: str  # the written argument: "self", "out", "self[2]" for the third tensor of a list
    shape: tuple[int, ...]
    version_before: int
    version_after: int
    line: SourceLine | None
    in_optimizer: bool
    order: int  # position among the ops the watcher saw (1 = first)

    def __str__(self) -> str:
        where = str(self.line) if self.line else "line unknown"
        return f"{where}   ({op_name(self.op)}, version {self.version_before} -> {self.version_after})"


def is_library_frame(filename: str) -> bool:
    """Whether code in ``filename`` is torch's, tutorial_lib's or Python's own (frozen or generated), not the user's.

    Raises:
        TypeError: ``filename`` is not a str.
    """
    require_type(filename, str, "filename", "a str")
    if filename.startswith(("<frozen", "<eval_with_key")):
        return True
    path = os.path.abspath(filename)
    return path.startswith(_TORCH_DIR) or path.startswith(_LIBRARY_DIR)


_INTERNAL: dict[str, bool] = {}
_PLACES: dict = {}  # (file, line, function) -> the one tuple standing for it in every record


def _user_frame(frame):
    """The innermost frame outside torch and tutorial_lib, or None."""
    internal = _INTERNAL
    while frame is not None:
        filename = frame.f_code.co_filename
        flag = internal.get(filename)
        if flag is None:
            flag = internal[filename] = is_library_frame(filename)
        if not flag:
            return frame
        frame = frame.f_back
    return None


def _function_caller(frame):
    """For a frame inside a custom ``autograd.Function``'s forward: the user's frame that called ``apply``."""
    caller = frame.f_back
    if caller is None or caller.f_code.co_filename != _FUNCTION_FILE or caller.f_code.co_name != "apply":
        return None
    return _user_frame(caller)


def _source_line(where) -> SourceLine | None:
    if where is None:
        return None
    filename, lineno, function = where
    return SourceLine(filename, lineno, function, linecache.getline(filename, lineno).strip())


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
        if sequence != self.last_sequence:
            # autograd made the nodes numbered last_sequence .. sequence - 1 since the last op: for this op,
            # just before running it (an op can make more than one, e.g. mul_ whose other is its self)
            first_new = self.last_sequence
            self.last_sequence = sequence
            frame = _user_frame(sys._getframe(1))
            where = None
            if frame is not None:
                code = frame.f_code
                if code.co_name == "forward":  # a custom Function's node is made by its apply() call
                    frame = _function_caller(frame) or frame
                    code = frame.f_code
                where = (code.co_filename, frame.f_lineno, code.co_name)
                where = _PLACES.setdefault(where, where)  # one tuple per line, however often it runs
            watch._add_node(first_new, watch._op_count, where)
        written = written_arguments(func)
        if not written[0]:
            return func(*args, **kwargs)
        tensors = self._record_writes(func, written[0], args, kwargs)
        if written[2]:
            watch._unversioned_ops.add(func._schema.name)
        result = func(*args, **kwargs)
        if written[1]:
            bump_like_torch(tensors)
        return result

    def _record_writes(self, func, written, args, kwargs) -> list:
        frame = sys._getframe(2)
        user = _user_frame(frame)
        in_optimizer = False
        probe = frame
        while probe is not None and probe is not user:
            if probe.f_code.co_filename.startswith(_OPTIM_DIR):
                in_optimizer = True
                break
            probe = probe.f_back
        where = (user.f_code.co_filename, user.f_lineno, user.f_code.co_name) if user is not None else None
        where = _PLACES.setdefault(where, where)
        name = func._schema.name
        seen: list = []
        # The storages of every tensor the op reads or writes: a node it makes (CopySlices, for an op on
        # a view) may save any of them.
        inputs = tuple(
            storage_key(t)
            for value in (*args, *kwargs.values())
            for t in (value if isinstance(value, (list, tuple)) else (value,))
            if isinstance(t, torch.Tensor)
        )
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
                self.watch._add_write(
                    (
                        name,
                        label,
                        tuple(tensor.shape),
                        version,
                        storage_key(tensor),
                        where,
                        in_optimizer,
                        self.watch._op_count,
                        tensor.requires_grad,
                        inputs,
                        # where a view writes, its place in the storage: a clone of its base taken after
                        # the view leaves the view, and the write, on the old storage
                        (tensor.storage_offset(), tuple(tensor.stride())) if tensor._is_view() else None,
                    )
                )
        return seen


def _keep_dynamo_out(code) -> None:
    """Tell dynamo never to trace this code or what it calls.

    ``WatcherMode`` does not let torch wrap ``__torch_dispatch__`` in ``torch._dynamo.disable`` (that
    imports dynamo, which takes more than a second). But when a ``torch.compile``'d function runs inside
    the watcher, dynamo would try to trace the watcher's Python, warn about what it cannot trace
    (``_get_sequence_nr``) and read the tensors it is handed. The frame strategy below is what
    ``torch._dynamo.disable`` sets too; it lives in ``torch._C``, so setting it imports nothing.
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
        self._writes: list[tuple] = []
        self._node_sequences: list[int] = []
        self._node_records: list[tuple] = []  # (op order, where)
        self._backward_calls: list[tuple[int, bool]] = []  # (op order, retain_graph)
        self._unversioned_ops: set[str] = set()
        self._first_sequence = _get_sequence_nr()
        self._thread = threading.get_ident()

    # -- recording (hot path: plain tuples)

    def _add_node(self, sequence: int, order: int, where) -> None:
        self._node_sequences.append(sequence)
        self._node_records.append((order, where))
        if len(self._node_sequences) > self.max_records:
            drop = max(1, self.max_records // 2)
            del self._node_sequences[:drop]
            del self._node_records[:drop]
            self.dropped_nodes += drop

    def _add_write(self, record: tuple) -> None:
        self._writes.append(record)
        if len(self._writes) > self.max_records:
            drop = max(1, self.max_records // 2)
            del self._writes[:drop]
            self.dropped_writes += drop

    # -- reading

    @property
    def writes(self) -> list[InplaceWrite]:
        unversioned = self._unversioned_ops
        return [_write_from(record, record[0] in unversioned) for record in self._writes]

    @property
    def unversioned_writes(self) -> list[InplaceWrite]:
        """Writes that bump no version counter, so autograd never notices them: the fused optimizers'
        updates (``torch.optim.Adam(..., fused=True)`` runs ``_fused_adam_``). A graph that saved a
        parameter and is used after such a ``step()`` gives gradients from the new values, silently."""
        return [_write_from(r, True) for r in self._writes if r[0] in self._unversioned_ops]

    def held_records(self) -> int:
        """How many records the watch holds now (writes, node lines and backward calls)."""
        return len(self._writes) + len(self._node_sequences) + len(self._backward_calls)

    def _node_record(self, sequence: int, made_after_op: bool = False):
        """(op order, where) of the op that made the node with this sequence number, or None if not seen.

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
        return _explain_graph(roots, [self], error_message=None)

    def __repr__(self) -> str:
        state = "watching" if self.active else "finished"
        return (
            f"InplaceWatch({state}: {plural(len(self._writes), 'write')}, "
            f"{plural(len(self._node_sequences), 'node line')}, {plural(len(self.explanations), 'explanation')})"
        )


def _write_from(record: tuple, unversioned: bool = False) -> InplaceWrite:
    name, label, shape, version, _key, where, in_optimizer, order, _requires_grad, _inputs, _view = record
    after = version if unversioned else version + 1
    return InplaceWrite(name, label, shape, version, after, _source_line(where), in_optimizer, order)


# ----------------------------------------------------------------------------------------------------
# The explanation


@dataclass(frozen=True)
class InplaceExplanation:
    """Why backward failed (or will, when it reaches the node): a saved tensor changed in place after it was saved.

    Attributes:
        node: the backward node that saved the tensor (``"SigmoidBackward0"``).
        what: the saved tensor in words (``"the result of sigmoid"``, ``"input 'self' of mul"``).
        shape, dtype: the saved tensor's shape and dtype (None when unknown).
        saved_version, current_version: its version when saved and now.
        saved_at: the line that created the node which saved it, or None when unknown.
        changed_at: every recorded write that moved it from ``saved_version`` towards
            ``current_version``, in order.
        fixes: the usual fixes that apply, in words.
        unknown: sentences saying what could not be found out and why (empty when all is known).
        message: torch's error message without its anomaly-detection hint (None before backward).
        other_stale: how many other saved tensors in the graph are stale too.
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

    @property
    def changed_lines(self) -> tuple[int, ...]:
        """The line numbers of ``changed_at`` (repeats removed, order kept)."""
        return tuple(dict.fromkeys(w.line.lineno for w in self.changed_at if w.line is not None))

    @property
    def saved_line(self) -> int | None:
        return self.saved_at.lineno if self.saved_at is not None else None

    def __str__(self) -> str:
        dtype = dtype_name(self.dtype) if self.dtype is not None else "tensor"
        kind = f"a {dtype} tensor of shape {shape_text(self.shape)}" if self.shape is not None else f"a {dtype} tensor"
        lines = [
            "Backward needs a tensor that was changed in place after it was saved.",
            f"  stale tensor: {self.what} ({kind}), saved by {self.node} at version {self.saved_version}, "
            f"now at version {self.current_version}",
            f"  saved at:     {self.saved_at if self.saved_at else 'line unknown'}",
        ]
        if self.changed_at:
            for index, write in enumerate(self.changed_at):
                lines.append(f"  {'changed at:   ' if index == 0 else '              '}{write}")
        else:
            lines.append("  changed at:   line unknown")
        for sentence in self.unknown:
            lines.append(f"  ({sentence})")
        if self.other_stale:
            lines.append(
                f"  {self.other_stale} other saved tensor{'s are' if self.other_stale != 1 else ' is'} stale too "
                "(tl.explain_inplace(loss) lists them all)"
            )
        lines.append("How to fix it:")
        lines.extend(f"  - {fix}" for fix in self.fixes)
        return "\n".join(lines)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(str(self))

    def _repr_html_(self) -> str:
        import html

        head = f"<b>RuntimeError</b>: {html.escape(self.message)}\n\n" if self.message else ""
        return (
            "<pre style='border-left:4px solid #d62728;padding:4px 8px;white-space:pre-wrap'>"
            f"{head}{html.escape(str(self))}</pre>"
        )


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


def _saved_storage(fn, attribute: str):
    data = _saved_data(fn, attribute)
    return storage_key(data) if data is not None else None


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
        if record[4] == storage
        and record[7] >= after_order
        and saved_version <= record[3] < current_version
        and record[0] not in unversioned
    ]
    chain = []
    last_order = after_order - 1
    for version in range(saved_version, current_version):
        claims = [r for r in candidates if r[3] == version and r[7] > last_order]
        if not claims:
            continue
        chosen = next((r for r in claims if r[8]), claims[0])
        chain.append(chosen)
        last_order = chosen[7]
    return chain


_OUT_OF_PLACE_FORMS = {
    "aten::relu_": "torch.relu(y) or nn.ReLU() (inplace=False, the default) instead of relu_ / nn.ReLU(inplace=True)",
    "aten::add_": "y = y + other instead of y += other or y.add_(other)",
    "aten::sub_": "y = y - other instead of y -= other or y.sub_(other)",
    "aten::mul_": "y = y * other instead of y *= other or y.mul_(other)",
    "aten::div_": "y = y / other instead of y /= other or y.div_(other)",
}


_NAME = r"[A-Za-z_][\w.]*"
_METHOD_CALL = re.compile(rf"(?P<name>{_NAME})\.(?P<op>\w+_)\((?P<args>.*)\)")
_AUGMENTED = re.compile(rf"(?P<name>{_NAME})\s*(?P<sign>[-+*/])=\s*(?P<args>[^=].*)")
_INDEX_ASSIGNMENT = re.compile(rf"(?P<name>{_NAME})\[.*\]\s*=\s*(?P<args>[^=].*)")
_AUGMENTED_OPS = {"+": "aten::add_", "-": "aten::sub_", "*": "aten::mul_", "/": "aten::div_"}


def _line_text(where) -> str:
    """The text of a recorded line without a trailing comment ("" when unknown)."""
    line = _source_line(where)
    return line.text.split("#")[0].strip() if line is not None else ""


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if depth < 0:
            return False
    return depth == 0


def _parse_change(text: str):
    """("method" | "augmented" | "index", name, argument text, op) for a line that is one plain in-place
    statement (``b.mul_(2)``, ``b *= 2``, ``f[i] = v``), else None."""
    for form, pattern in (("index", _INDEX_ASSIGNMENT), ("augmented", _AUGMENTED), ("method", _METHOD_CALL)):
        match = pattern.fullmatch(text)
        if match and _balanced(match["args"]):
            op = "aten::" + match["op"] if form == "method" else _AUGMENTED_OPS.get(match.groupdict().get("sign"))
            return form, match["name"], match["args"], op
    return None


def _wrapped(expression: str) -> str:
    return expression if re.fullmatch(r"[\w.]+", expression) else f"({expression})"


def _new_tensor_fix(name: str, text: str) -> str:
    """The fix for an in-place op ``name`` (``aten::mul_``), with the line's own names when ``text`` is one
    plain in-place statement; with placeholders (y, other) otherwise."""
    op = op_name(name)
    plain = op.removesuffix("_")
    change = _parse_change(text)
    if change is not None and change[0] == "index":
        return (
            f"Do not assign into a tensor autograd saved ({text}): collect the pieces in a list and "
            f"torch.stack / torch.cat them, or assign into {change[1]}.clone()."
        )
    if change is not None and change[3] == name:
        form, y, args, _ = change
        if form == "augmented":
            return (
                f"Use the out-of-place form: {y} = {y} {text[len(y) :].lstrip()[0]} {_wrapped(args)} instead of {text}."
            )
        if name == "aten::zero_":
            return f"Make a new tensor instead: {y} = torch.zeros_like({y}) instead of {text}."
        if name == "aten::fill_":
            return f"Make a new tensor instead: {y} = torch.full_like({y}, {args}) instead of {text}."
        if name == "aten::copy_":
            return (
                f"Make a new tensor instead: {y} = {_wrapped(args)}.clone() instead of {text} "
                f"(when it has {y}'s shape and dtype)."
            )
        if hasattr(torch.Tensor, plain):
            return f"Use the out-of-place form: {y} = {y}.{plain}({args}) instead of {text}."
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


def _fixes(writes: list, saved_order: int | None, backward_calls, saved_at, saved_place=None) -> tuple[str, ...]:
    fixes: list[str] = []
    optimizer = [w for w in writes if w[6]]
    first_change = min((w[7] for w in writes), default=None)
    if optimizer:
        step = _source_line(optimizer[0][5])
        fixes.append(
            f"optimizer.step() ({step.place if step else 'a step() call'}) changed parameters that this graph "
            "saved: call step() only after every backward() through the graph (compute all the losses, "
            "call backward on each, then step), or run a fresh forward pass after step()."
        )
    retained = [
        order
        for order, retain in backward_calls
        if retain and saved_order is not None and order > saved_order and (first_change is None or order < first_change)
    ]
    if retained:
        fixes.append(
            "retain_graph=True kept this graph, and the tensors it saved, for another backward(); the tensor "
            "changed between the two. Do not reuse a retained graph after changing what it saved: run the "
            "forward pass again for the second backward (or detach() the part the first optimizer updates)."
        )
    others = [w for w in writes if not w[6]]
    names = list(dict.fromkeys(w[0] for w in others))
    for name in names:
        record = next(w for w in others if w[0] == name)
        if any(w[1] == "out" for w in others if w[0] == name):
            fixes.append(f"Drop out=... from {op_name(name)}: let it return a new tensor.")
        else:
            fixes.append(_new_tensor_fix(name, _line_text(record[5])))
    if others:
        where, view = others[0][5], others[0][10]
        place = f"line {where[1]}" if where else "the change"
        written = _parse_change(_line_text(where))
        y = written[1] if written is not None else "y"
        if view is not None and (written is None or written[0] != "index"):
            y = "y"  # a method call writes through the view itself; its base's name is unknown
        stays = f"the saved tensor stays at version {writes[0][3] if writes else '?'}" + (
            f" (saved at line {saved_at.lineno})." if saved_at else "."
        )
        if view is not None and (others[0][2], *view) != saved_place:  # a view of the saved tensor's storage
            fixes.append(
                f"Or clone() before the view is taken: {place} writes through a view, and a view taken before "
                f"{y} = {y}.clone() still writes into the old storage. Put {y} = {y}.clone() before the line that "
                f"takes the view (before {place} itself if the view is taken there, as in {y}[0:2].mul_(2)), so {stays}"
            )
        else:
            fixes.append(
                f"Or clone() before the change: {y} = {y}.clone() just before {place} sends the change into a copy, "
                f"so {stays}"
            )
    if not fixes:
        fixes.append(
            "Find the in-place change (a method ending in _, +=, x[i] = ..., out=, inplace=True, "
            "optimizer.step()) between the saving line and backward(), and use the out-of-place form or "
            "clone() before it."
        )
    return tuple(fixes)


def _outside(watches) -> str:
    """Why a line is unknown when the node was not made under any of ``watches``."""
    if not watches:
        return "no watch_inplace was on during the forward pass"
    return "the forward pass ran outside this watch_inplace block: in an earlier block or cell, or with none on"


def _explain_one(fn, saved, watches, other_stale: int, message) -> InplaceExplanation:
    node = GraphNode(0, fn.name(), "backward", fn.name(), None, (saved,))
    what = describe_saved(node, saved)
    sequence = fn._sequence_nr()
    unknown: list[str] = []
    watch, record = None, None
    for candidate in reversed(watches):
        record = candidate._node_record(sequence, made_after_op=fn.name().endswith("CopySlices"))
        if record is not None:
            watch = candidate
            break
    if record is not None:
        saved_order, where = record
        saved_at = _source_line(where)
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
        storage = _saved_storage(fn, saved.attribute)
        if storage is not None:
            storages = [storage]
        else:  # CopySlices hides its tensors: any storage the in-place op on a view touched
            # the in-place op is the first write at or after the op that made the node (autograd may run
            # a clone of an aliased input between them)
            made = next((w for w in watch._writes if w[7] >= saved_order), None)
            storages = list(dict.fromkeys(made[9])) if made else []
        for candidate in storages:
            chain = _writes_since(watch, candidate, saved_order, saved.saved_version, saved.current_version)
            if len(chain) > len(writes):
                writes = chain
    missing = saved.current_version - saved.saved_version - len(writes)
    if missing > 0 and saved_order is not None:
        unknown.append(
            f"{missing} of the {saved.current_version - saved.saved_version} changes were not recorded "
            "(made through another tensor sharing the version counter, or dropped)"
            if writes
            else "the changing line is unknown: no recorded write matches"
        )
    elif missing > 0 and not unknown:
        unknown.append(f"the changing line is unknown: {_outside(watches)}")
    elif missing > 0:
        unknown[-1] = unknown[-1].replace("the saving line is unknown", "the saving and changing lines are unknown")
    backward_calls = watch._backward_calls if watch is not None else []
    fixes = _fixes(writes, saved_order, backward_calls, saved_at, _saved_place(fn, saved.attribute))
    if unknown:
        fixes += (
            "To see the lines, run the forward pass, the change and backward() in one tl.watch_inplace() block "
            "(in Jupyter: %load_ext tutorial_lib, then one %%watch_inplace cell; for a script: "
            "python -m tutorial_lib.explain).",
        )
    return InplaceExplanation(
        node=fn.name(),
        what=what,
        shape=saved.shape,
        dtype=saved.dtype,
        saved_version=saved.saved_version,
        current_version=saved.current_version,
        saved_at=saved_at,
        changed_at=tuple(_write_from(w) for w in writes),
        fixes=fixes,
        unknown=tuple(unknown),
        message=message,
        other_stale=other_stale,
    )


def _stale_in(roots) -> list:
    """(fn, graph.SavedTensor) for every stale saved tensor reachable from the roots, nearest first, as
    ``inplace_hazards`` finds them (each checkpoint's inputs once, no ``CopySlices`` that backward skips)."""
    return stale_saved_tensors(_all_functions(roots), list(_root_functions(roots)))


def _explain_graph(roots, watches, error_message) -> list[InplaceExplanation]:
    stale = _stale_in(roots)
    return [_explain_one(fn, saved, watches, len(stale) - 1, error_message) for fn, saved in stale]


def _explain_error(roots, watches, error) -> InplaceExplanation | None:
    """The explanation of the stale saved tensor that made backward raise ``error``, or None."""
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
    return _explain_one(fn, saved, watches, len(stale) - 1, message)


# ----------------------------------------------------------------------------------------------------
# Catching backward's error


_ACTIVE: list[InplaceWatch] = []
_LAST: list[InplaceWatch] = []  # the most recently finished watch, for inplace_hazards after the block
_PATCH_LOCK = threading.Lock()
_ORIGINAL_ENGINE = None


def _watched_engine_run_backward(t_outputs, *args, **kwargs):
    watches = [w for w in _ACTIVE if w._thread == threading.get_ident()]
    retain = args[1] if len(args) > 1 else kwargs.get("keep_graph", kwargs.get("retain_graph", False))
    for watch in watches:
        watch._backward_calls.append((watch._op_count, bool(retain)))
    try:
        return _ORIGINAL_ENGINE(t_outputs, *args, **kwargs)
    except RuntimeError as error:
        if watches and not hasattr(error, "inplace_explanation") and VERSION_ERROR.search(str(error)):
            try:
                roots = list(t_outputs) if isinstance(t_outputs, (list, tuple)) else [t_outputs]
                explanation = _explain_error(roots, watches, error)
            except Exception as failure:  # noqa: BLE001 - never replace torch's error with ours
                explanation = None
                error.add_note(f"(tutorial_lib could not explain this error: {type(failure).__name__}: {failure})")
            if explanation is not None:
                error.inplace_explanation = explanation
                error.add_note("\n" + str(explanation))
                watches[-1].explanations.append(explanation)
        raise


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


@contextlib.contextmanager
def watch_inplace(max_records: int = DEFAULT_MAX_RECORDS) -> Iterator[InplaceWatch]:
    """Record in-place changes and which line made each backward node; explain backward's version error.

    Usage::

        with tl.watch_inplace() as watch:
            y = torch.sigmoid(h)          # SigmoidBackward0 saves its result y
            y = relu(y)                   # nn.ReLU(inplace=True): y changes from version 0 to 1
            y.sum().backward()            # raises torch's error, with the explanation as a note

    Torch raises exactly as it would without the watcher, and computes the same gradients; the
    explanation is added to the error as a note and as ``error.inplace_explanation``, and kept in
    ``watch.explanations``. Before backward, ``watch.explain(loss)`` (or ``tl.inplace_hazards(loss)``)
    gives the same explanation. Errors other than the version error pass through untouched.

    Args:
        max_records: keep at most this many write records and node records (old ones are dropped
            first, and an explanation that needed one says so).

    Yields:
        An ``InplaceWatch`` (``.writes``, ``.explanations``, ``.explain(t)``).

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
    "attach_source_lines",
    "explain_inplace",
    "explanation_of",
    "is_library_frame",
    "recent_watches",
    "watch_inplace",
    "watch_notes",
]
