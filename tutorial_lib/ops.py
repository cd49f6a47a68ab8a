"""Which operations view, which copy, which write in place: recorded as they run.

``trace_ops`` sits under autograd at the aten level (a ``TorchDispatchMode``), so it sees the ops that
really run (``reshape`` of a contiguous tensor runs ``aten::view``; of a transposed one, ``aten::clone``
then ``aten::_unsafe_view``). Each op is classified from what actually happened, not from a list:
an output whose storage is an input's storage is a view; a schema argument marked as written is in
place; anything else got fresh storage, whose bytes are counted.
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch
from torch.utils._python_dispatch import _disable_current_modes
from torch.utils._pytree import tree_flatten

from ._checks import describe
from ._dispatch import WatcherMode
from .storage import same_storage, shares_memory

KINDS = ("view", "inplace", "new")

# lift_fresh wraps a tensor literal (torch.tensor([...]), the 5 in x[0] = 5) that was allocated just
# before dispatch: it is new memory, although the op itself returns its input. Not so when the literal
# wraps memory torch did not allocate (torch.as_tensor(a.numpy()) lifts a torch.from_numpy tensor):
# see ``_is_fresh_literal``.
_FRESH_LITERAL_OPS = {"aten::lift_fresh", "aten::lift_fresh_copy"}


@dataclass(frozen=True)
class OpRecord:
    """One aten op seen by ``trace_ops``.

    ``kind`` is ``"view"`` (every output aliases an input, nothing written), ``"inplace"`` (it writes
    into an existing tensor: ``_`` ops, ``out=``, ``copy_``, index assignment, ``+=``) or ``"new"``
    (fresh storage); ``new_bytes`` counts the fresh storage (0 for views and in-place ops).
    """

    name: str
    overload: str
    kind: str
    new_bytes: int
    written: tuple[str, ...]
    output_shapes: tuple[tuple[int, ...], ...]

    def __repr__(self) -> str:
        return f"OpRecord({self.name!r}, kind={self.kind!r}, new_bytes={self.new_bytes})"


def _storage_key(tensor: torch.Tensor):
    try:
        return tensor.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):  # sparse and other storage-less outputs
        return None


def _storage_nbytes(tensor: torch.Tensor) -> int:
    try:
        return tensor.untyped_storage().nbytes()
    except (RuntimeError, NotImplementedError):
        return 0


def _tensors_in(tree) -> list[torch.Tensor]:
    return [leaf for leaf in tree_flatten(tree)[0] if isinstance(leaf, torch.Tensor)]


def _is_fresh_literal(name: str, output: torch.Tensor) -> bool:
    """Whether ``output`` of op ``name`` is a literal torch allocated just before dispatch.

    A literal lifted from a numpy array (``torch.as_tensor(a)``, ``torch.tensor(a)`` before its copy) is a
    ``torch.from_numpy`` tensor over the array's own memory; such storage, like any torch did not allocate
    (DLPack, ``frombuffer``), cannot be resized, which is how it is told apart.
    """
    if name not in _FRESH_LITERAL_OPS:
        return False
    try:
        return output.untyped_storage().resizable()
    except (RuntimeError, NotImplementedError):
        return True


_COMPRESSED_PARTS = {
    torch.sparse_csr: ("crow_indices", "col_indices", "values"),
    torch.sparse_bsr: ("crow_indices", "col_indices", "values"),
    torch.sparse_csc: ("ccol_indices", "row_indices", "values"),
    torch.sparse_bsc: ("ccol_indices", "row_indices", "values"),
}


def _memory_parts(value) -> list:
    """The strided tensors (or arrays) holding ``value``'s elements: itself, or a sparse tensor's parts.

    A sparse tensor has no storage of its own; ``s.values()`` is a view of the values tensor inside it.
    The parts are read with any dispatch modes switched off, so an enclosing ``trace_ops`` or
    ``measure_memory`` does not see these look-ups as ops of the traced code.
    """
    if not isinstance(value, torch.Tensor) or value.layout == torch.strided:
        return [value]
    with _disable_current_modes():
        if value.layout == torch.sparse_coo:
            return [value._indices(), value._values()]
        if value.layout in _COMPRESSED_PARTS:
            return [getattr(value, part)() for part in _COMPRESSED_PARTS[value.layout]]
    return [value]  # other layouts (mkldnn, ...): no strided parts to compare


def classify_call(func, args, kwargs, result) -> OpRecord:
    """Classify one finished aten call from its schema and the storages of its inputs and outputs."""
    name = func._schema.name
    written = tuple(
        argument.name
        for argument in func._schema.arguments
        if argument.alias_info is not None and argument.alias_info.is_write
    )
    outputs = _tensors_in(result)
    shapes = tuple(tuple(o.shape) for o in outputs)
    if written:
        return OpRecord(name, func._overloadname, "inplace", 0, written, shapes)
    input_keys = {_storage_key(p) for t in _tensors_in((args, kwargs)) for p in _memory_parts(t)}
    fresh: dict = {}
    for output in outputs:
        key = _storage_key(output)
        if _is_fresh_literal(name, output) or key is None or key not in input_keys:
            fresh.setdefault(key if key is not None else id(output), _storage_nbytes(output))
    if outputs and not fresh:
        return OpRecord(name, func._overloadname, "view", 0, (), shapes)
    return OpRecord(name, func._overloadname, "new", sum(fresh.values()), (), shapes)


class _Recorder(WatcherMode):
    def __init__(self, records: list):
        super().__init__()
        self.records = records

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        self.records.append(classify_call(func, args, kwargs, result))
        return result


@contextlib.contextmanager
def trace_ops() -> Iterator[list[OpRecord]]:
    """Record every aten op run inside the block, in order.

    Usage::

        with trace_ops() as ops:
            y = x[[0, 2]]
        ops  # [OpRecord('aten::index', kind='new', new_bytes=...)]

    Ops that autograd runs for itself inside the block (the ``aten::detach`` it uses to save an output
    for backward, the ops of a ``backward()`` call) are recorded too: they really run.

    A function compiled with ``torch.compile`` and called inside the block is recorded op by op too.

    Yields:
        A list that fills with ``OpRecord`` objects as ops run.
    """
    records: list[OpRecord] = []
    with _Recorder(records):
        yield records


@dataclass(frozen=True)
class OpRow:
    """One line of a view-or-copy report: what an expression ran and what it did to memory."""

    expression: str
    aten_ops: tuple[str, ...]
    verdict: str  # "view", "copy", "in-place" or "same tensor" (the input object itself came back)
    new_bytes: int  # fresh storage the result holds
    total_new_bytes: int  # everything allocated while it ran, temporaries (index tensors, masks) included
    shares_memory: bool


class OpReport(tuple):
    """The rows of ``view_or_copy``, printed as a plain-text table."""

    HEADERS = ("operation", "view or copy", "bytes allocated", "shares memory with input", "aten ops")

    def table_rows(self) -> list[tuple[str, ...]]:
        return [
            (
                row.expression,
                row.verdict,
                f"{row.new_bytes:,}",
                "yes" if row.shares_memory else "no",
                ", ".join(op.removeprefix("aten::") for op in row.aten_ops) or "(none)",
            )
            for row in self
        ]

    def __str__(self) -> str:
        rows = [self.HEADERS, *self.table_rows()]
        widths = [max(len(r[col]) for r in rows) for col in range(len(self.HEADERS))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(r, widths)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * width for width in widths))
        return "\n".join(lines)

    __repr__ = __str__


def _fresh_copy(value):
    """A copy of a tensor or array with the same shape, strides, offset and storage size."""
    if isinstance(value, np.ndarray):
        return value.copy(order="K")
    if value.layout != torch.strided:  # sparse: copies of its parts, coalesced or not as it was
        return value.detach().clone().requires_grad_(value.requires_grad)
    storage = value.detach().untyped_storage().clone()
    duplicate = torch.empty((), dtype=value.dtype, device=value.device)
    duplicate.set_(storage, value.storage_offset(), value.size(), value.stride())
    return duplicate.requires_grad_(value.requires_grad)


def _first_tensors(result) -> list:
    return [leaf for leaf in tree_flatten(result)[0] if isinstance(leaf, (torch.Tensor, np.ndarray))]


def view_or_copy(expressions, fresh_inputs: bool = True, **tensors) -> OpReport:
    """Run each expression and report whether it made a view, a copy, or wrote in place.

    Args:
        expressions: a list of Python expressions as strings (``"x.t()"``, ``"x[[0, 2]]"``,
            ``"x.add_(1)"``) or a dict from label to a function of the named tensors.
        fresh_inputs: run each expression on a fresh copy of the inputs with the same layout, so an
            in-place expression does not change what the next one sees.
        **tensors: the tensors (or numpy arrays) the expressions name, e.g. ``x=torch.arange(6.)``.

    Returns:
        An ``OpReport``: one ``OpRow`` per expression (operation, verdict, bytes allocated, shares
        memory with the input, the aten ops that ran). The verdict is "view", "copy", "in-place" (an input
        was written), or "same tensor" when the expression handed back the input object itself, as
        ``x.contiguous()`` does for contiguous ``x``.

    Raises:
        TypeError: ``expressions`` is not a list of strings or a dict of callables, or a named value is
            not a tensor or array.
        ValueError: no expressions or no tensors given.
    """
    if isinstance(expressions, str):
        raise TypeError("expressions must be a list of strings, not a single string: wrap it in [ ]")
    if isinstance(expressions, dict):
        items = list(expressions.items())
        for label, function in items:
            if not isinstance(label, str) or not callable(function):
                raise TypeError("expressions as a dict must map str labels to functions of the tensors")
    elif isinstance(expressions, (list, tuple)):
        for expression in expressions:
            if not isinstance(expression, str):
                raise TypeError(f"each item of expressions must be a str, got {describe(expression)}")
        items = [(expression, expression) for expression in expressions]
    else:
        raise TypeError(f"expressions must be a list of strings or a dict, got {describe(expressions)}")
    if not items:
        raise ValueError("expressions is empty: give at least one expression")
    if not tensors:
        raise ValueError("name the tensors the expressions use, e.g. view_or_copy([...], x=x)")
    for name, value in tensors.items():
        if not isinstance(value, (torch.Tensor, np.ndarray)):
            raise TypeError(f"{name} must be a torch.Tensor or numpy.ndarray, got {describe(value)}")

    rows = []
    for label, code in items:
        inputs = {n: _fresh_copy(v) for n, v in tensors.items()} if fresh_inputs else dict(tensors)
        before = {n: v._version for n, v in inputs.items() if isinstance(v, torch.Tensor)}
        with trace_ops() as records:
            if callable(code):
                result = code(**inputs)
            else:
                result = eval(code, {"torch": torch, "np": np, "copy": copy}, dict(inputs))  # noqa: S307 - learner's own code
        # In place means an input was written (its version counter moved, which views share); an in-place op
        # on a tensor the expression made itself, like the set_ inside copy.copy(x), does not count.
        wrote = any(inputs[n]._version != v for n, v in before.items())
        outputs = [part for output in _first_tensors(result) for part in _memory_parts(output)]
        sources = [part for value in inputs.values() for part in _memory_parts(value)]
        shares = any(shares_memory(o, s) for o in outputs for s in sources)
        aliases = bool(outputs) and all(any(_same_buffer(o, s) for s in sources) for o in outputs)
        source_keys = {_storage_key(s) for s in sources if isinstance(s, torch.Tensor)}
        kept = {
            _storage_key(o): _storage_nbytes(o)
            for o in outputs
            if isinstance(o, torch.Tensor) and _storage_key(o) not in source_keys
        }
        # x.contiguous() on contiguous x, x.to(x.dtype): the very object, not even a new view of it.
        same = any(o is v for o in _first_tensors(result) for v in inputs.values())
        verdict = "in-place" if wrote else ("same tensor" if same else ("view" if aliases else "copy"))
        rows.append(
            OpRow(
                expression=label,
                aten_ops=tuple(r.name for r in records),
                verdict=verdict,
                new_bytes=0 if wrote or aliases else sum(kept.values()),
                total_new_bytes=sum(r.new_bytes for r in records),
                shares_memory=shares,
            )
        )
    return OpReport(rows)


def _same_buffer(a, b) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return same_storage(a, b)
    return shares_memory(a, b)


__all__ = ["OpRecord", "OpReport", "OpRow", "KINDS", "trace_ops", "view_or_copy", "classify_call"]
