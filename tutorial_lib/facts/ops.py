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
import warnings
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch
from torch._C._autograd import CreationMeta, _get_creation_meta, _set_creation_meta
from torch.utils._python_dispatch import _disable_current_modes
from torch.utils._pytree import tree_flatten

from ..common.checks import describe, require_type
from ..common.text import op_name, short_op_name
from .storage import same_storage, shares_memory
from .watching import WatcherMode, call_keeping_versions, is_fresh_literal, storage_key, tensors_in

KINDS = ("view", "inplace", "new")
#: ``view_or_copy``'s verdicts: what an expression's result is to the input's memory (see ``view_or_copy``).
VERDICTS = ("view", "alias", "copy", "in-place", "same tensor", "existing memory", "not a tensor")


@dataclass(frozen=True)
class OpRecord:
    """One aten op seen by ``trace_ops``.

    ``kind`` is ``"view"`` (every output aliases an input, nothing written), ``"inplace"`` (it writes
    into an existing tensor: ``_`` ops, ``out=``, ``copy_``, index assignment, ``+=``) or ``"new"``
    (fresh storage); ``new_bytes`` counts the fresh storage: a sparse result's index and value storages,
    and for an in-place op only the storage it had to reallocate (``resize_`` past the storage's size,
    an ``out=`` tensor too small for the result); 0 for views.
    """

    name: str
    overload: str
    kind: str
    new_bytes: int
    written: tuple[str, ...]
    output_shapes: tuple[tuple[int, ...], ...]

    def __repr__(self) -> str:
        return f"OpRecord({self.name!r}, kind={self.kind!r}, new_bytes={self.new_bytes})"


def _storage_nbytes(tensor: torch.Tensor) -> int:
    try:
        return tensor.untyped_storage().nbytes()
    except (RuntimeError, NotImplementedError):
        return 0


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


def _written_tensors(func, args, kwargs) -> list[torch.Tensor]:
    """The tensors an op's schema marks as written (``self`` of ``add_``, ``out=``, ``resize_``'s self)."""
    written = []
    for position, argument in enumerate(func._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = args[position] if position < len(args) else kwargs.get(argument.name)
        written.extend(tensors_in(value))
    return written


def _storage_place(tensor: torch.Tensor):
    """(address, bytes) of a tensor's storage; None where it has none (sparse, meta addresses are 0)."""
    try:
        storage = tensor.untyped_storage()
        return storage.data_ptr(), storage.nbytes()
    except (RuntimeError, NotImplementedError):
        return None


def _places_before(func, args, kwargs) -> dict:
    """What ``classify_call`` needs from before the op ran: where the written tensors' storages were, and
    where every other storage among the arguments was (``set_`` may move a tensor onto one of those)."""
    written = {id(t): _storage_place(t) for t in _written_tensors(func, args, kwargs)}
    if not written:
        return {}
    leaves = tree_flatten((args, kwargs))[0]
    others = {_storage_place(t) for t in leaves if isinstance(t, torch.Tensor) and id(t) not in written}
    others |= {(s.data_ptr(), s.nbytes()) for s in leaves if isinstance(s, (torch.UntypedStorage, torch.TypedStorage))}
    return {"written": written, "others": others}


def classify_call(func, args, kwargs, result, before: dict | None = None) -> OpRecord:
    """Classify one finished aten call from its schema and the storages of its inputs and outputs.

    ``before`` (from ``_places_before``, taken just before the call) lets an in-place op that had to
    reallocate what it writes count the new storage: ``resize_`` past the storage's size, an ``out=``
    tensor too small for the result.
    """
    name = func._schema.name
    written = tuple(
        argument.name
        for argument in func._schema.arguments
        if argument.alias_info is not None and argument.alias_info.is_write
    )
    outputs = tensors_in(result)
    shapes = tuple(tuple(o.shape) for o in outputs)
    inputs = tensors_in((args, kwargs))
    if written:
        grown = 0
        if before:
            others = before["others"]
            for tensor in _written_tensors(func, args, kwargs):
                place = _storage_place(tensor)
                old = before["written"].get(id(tensor))
                # a new address or a larger size is a reallocation, unless the tensor now uses a storage
                # that was already there (set_ onto another tensor's storage)
                if place and old and place != old and place[1] > 0 and place not in others:
                    if place[0] != old[0] or place[1] > old[1]:
                        grown += place[1]
        return OpRecord(name, func._overloadname, "inplace", grown, written, shapes)
    input_keys = {storage_key(p) for t in inputs for p in _memory_parts(t)}
    fresh: dict = {}
    for output in outputs:
        literal = is_fresh_literal(name, output)
        for part in _memory_parts(output):
            key = storage_key(part)
            if literal or key is None or key not in input_keys:
                fresh.setdefault(key if key is not None else id(part), _storage_nbytes(part))
    if outputs and not fresh:
        return OpRecord(name, func._overloadname, "view", 0, (), shapes)
    return OpRecord(name, func._overloadname, "new", sum(fresh.values()), (), shapes)


class _Recorder(WatcherMode):
    def __init__(self, records: list):
        super().__init__()
        self.records = records

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        before = _places_before(func, args, kwargs)
        self.before_call(func, args, kwargs)
        result = call_keeping_versions(func, args, kwargs)  # _foreach_*_ ops bump no version inside a mode
        record = classify_call(func, args, kwargs, result, before)
        self.records.append(record)
        self.after_call(record, result)
        return result

    def before_call(self, func, args, kwargs) -> None:
        """Hook for ``view_or_copy``'s recorder."""

    def after_call(self, record: OpRecord, result) -> None:
        """Hook for ``view_or_copy``'s recorder."""


@contextlib.contextmanager
def trace_ops() -> Iterator[list[OpRecord]]:
    """Record every aten op run inside the block, in order.

    Usage::

        with trace_ops() as ops:
            y = x[[0, 2]]  # x: a float32 tensor
        ops  # [OpRecord('aten::lift_fresh', kind='new', new_bytes=16),   the index list as a tensor
             #  OpRecord('aten::index', kind='new', new_bytes=8)]          the two elements picked

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
    verdict: str  # one of VERDICTS (see view_or_copy)
    new_bytes: int  # fresh storage the result holds
    total_new_bytes: int  # everything allocated while it ran, temporaries (index tensors, masks) included
    shares_memory: bool


def _bytes_cell(row: OpRow) -> str:
    """A row's bytes: the new storage its result keeps and, when its ops made more, the bytes of every tensor they
    made (``x[x > 2]`` keeps 12 bytes and made a 6-byte mask on the way: "12 kept of 18 made"; a kernel's own
    scratch memory is not counted here, ``measure_memory`` sees it)."""
    if row.total_new_bytes == row.new_bytes:
        return f"{row.new_bytes:,}"
    return f"{row.new_bytes:,} kept of {row.total_new_bytes:,} made"


class OpReport(tuple):
    """The rows of ``view_or_copy``, printed as a plain-text table."""

    HEADERS = ("operation", "view or copy", "bytes allocated", "shares memory with input", "aten ops")

    def table_rows(self) -> list[tuple[str, ...]]:
        return [
            (
                row.expression,
                row.verdict,
                _bytes_cell(row),
                "yes" if row.shares_memory else "no",
                ", ".join(op_name(op) for op in row.aten_ops) or "(none)",
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


def _raw_bytes(address: int, nbytes: int, keep=None) -> np.ndarray:
    """A uint8 array over ``nbytes`` bytes of CPU memory at ``address`` (no copy), keeping ``keep`` (the owner of
    that memory) alive as long as the array and whatever is made from it."""

    class _Interface:
        __array_interface__ = {"version": 3, "shape": (nbytes,), "typestr": "|u1", "data": (address, False)}
        owner = keep

    return np.asarray(_Interface())


def _home(value) -> tuple[str, int, int]:
    """(device, first address, end address) of the memory block ``value`` lives in.

    A tensor lives in its whole storage; an array in the buffer of the array it was made from (followed
    through ``.base``, into the tensor's storage for ``t.numpy()``), or its own byte range if that buffer's
    extent is not known.
    """
    if isinstance(value, torch.Tensor):
        storage = value.untyped_storage()
        return str(value.device), storage.data_ptr(), storage.data_ptr() + storage.nbytes()
    root = value
    while isinstance(root.base, np.ndarray):
        root = root.base
    if isinstance(root.base, torch.Tensor) and root.base.layout == torch.strided:
        return _home(root.base)
    if root.size and (root.flags.c_contiguous or root.flags.f_contiguous):
        start = root.__array_interface__["data"][0]
        return "cpu", start, start + root.nbytes
    byte_bounds = getattr(getattr(np.lib, "array_utils", np), "byte_bounds", None) or np.byte_bounds
    low, high = byte_bounds(value)
    return "cpu", low, high


def _owns_block(member, home: tuple, start: int, stop: int) -> bool:
    """Whether ``member`` is an array that owns its data and covers exactly the block [start, stop)."""
    return isinstance(member, np.ndarray) and member.base is None and home[1:] == (start, stop)


def _owning_copy(array: np.ndarray) -> np.ndarray | None:
    """A copy of ``array`` that owns its data, with its strides, as a plain ndarray (its subclass is put back by
    ``_as_subclass_of``); None when numpy cannot make one with the same strides."""
    plain = array.view(np.ndarray)
    owned = np.empty_like(plain, order="K")
    if owned.strides != plain.strides or not owned.flags.owndata:
        return None
    owned[...] = plain
    return owned


def _as_subclass_of(original: np.ndarray, copy_: np.ndarray) -> np.ndarray:
    """``copy_`` as ``original``'s NumPy subclass (masked, record, matrix ...), with copies of the arrays the
    original keeps as attributes (a masked array's mask) and the rest of its attributes as they are."""
    if type(original) is np.ndarray:
        return copy_
    subclassed = copy_.view(type(original))
    state = getattr(original, "__dict__", {})
    subclassed.__dict__.update({k: v.copy() if isinstance(v, np.ndarray) else v for k, v in state.items()})
    return subclassed


def _clusters(values: dict) -> list[list[str]]:
    """The names of the inputs grouped by memory: inputs whose memory blocks overlap, or that use one storage
    object (an empty storage covers no address to overlap), are in one group."""
    homes = {name: _home(value) for name, value in values.items()}
    storage_ids = {
        name: value.untyped_storage()._cdata for name, value in values.items() if isinstance(value, torch.Tensor)
    }
    groups: list[list[str]] = []
    for name in values:
        device, start, stop = homes[name]
        joined = [
            group
            for group in groups
            if any(
                homes[other][0] == device
                and (
                    start < homes[other][2]
                    and homes[other][1] < stop
                    or name in storage_ids
                    and storage_ids.get(other) == storage_ids[name]
                )
                for other in group
            )
        ]
        merged = [name] + [other for group in joined for other in group]
        groups = [group for group in groups if group not in joined] + [merged]
    return groups


class _FreshCopier:
    """Copies of the inputs that answer every question as the originals would.

    Kept: shape, strides, offset and storage size; dtype; the conj and neg bits; requires_grad, leaf or
    not, inference or not, and being a view (of what, made how: autograd's rules for in-place ops and
    ``detach_`` on views depend on it); the ``Parameter`` class and a leaf's ``.grad`` (a copy of it, its
    layout kept); numpy arrays' strides, ownership (an array that owns its data gets a copy that owns its
    own: ``x.base`` is None, ``x.resize`` works) and subclass with what it keeps (a masked array's mask, a
    record array's fields); and which inputs share memory (each memory block is copied once, and every input
    over it is rebuilt on the copy, so ``x=a[:4], y=a[2:]`` still overlap).
    """

    def __init__(self, values: dict):
        self.values = values
        self.copies: dict[int, object] = {}  # id(original tensor or array) -> its copy
        self.owners: dict[int, np.ndarray] = {}  # id(original array that owns its data) -> its owning copy
        self.storages: dict[int, torch.UntypedStorage] = {}  # original storage's _cdata -> its copy
        self.renamed: set[tuple[str, str]] = set()  # (a copy's name in torch's messages, the original's name)

    def copy_all(self) -> dict:
        strided = {
            n: v
            for n, v in self.values.items()
            if isinstance(v, np.ndarray)
            and not v.dtype.hasobject
            or isinstance(v, torch.Tensor)
            and v.layout == torch.strided
            and not v.is_quantized
        }
        for names in _clusters(strided):
            self._copy_block([strided[n] for n in names])
        fresh = {}
        for name, value in self.values.items():
            if name in strided:
                fresh[name] = self._rebuild(value)
            elif isinstance(value, np.ndarray):  # an array of Python objects: copy it as numpy does
                fresh[name] = value.copy(order="K")
            else:  # sparse and other layouts: copies of their parts, coalesced or not as they were
                fresh[name] = value.detach().clone().requires_grad_(value.requires_grad)
        for name, value in self.values.items():  # after every input: a .grad that is an input too is its copy
            if isinstance(value, torch.Tensor) and (value.is_leaf or value.retains_grad) and value.grad is not None:
                self._copy_grad(value, fresh[name])
        return fresh

    def _copy_grad(self, value: torch.Tensor, copy_: torch.Tensor) -> None:
        """Give ``copy_`` a copy of ``value.grad``: the input's own copy when the gradient is an input too, else
        a clone of its storage (one per storage: gradients over one flat buffer stay over one) in its layout."""
        grad = value.grad
        grad_copy = self.copies.get(id(grad))
        if grad_copy is None or isinstance(grad_copy, tuple):
            key = grad.untyped_storage()._cdata
            storage = self.storages.setdefault(key, grad.untyped_storage().clone())
            grad_copy = torch.empty(0, dtype=grad.dtype, device=grad.device)
            grad_copy.set_(storage, grad.storage_offset(), grad.size(), grad.stride())
        try:
            if not copy_.is_leaf:
                copy_.retain_grad()
            copy_.grad = grad_copy
        except RuntimeError:  # a gradient torch would not take on the copy (it took it on the input): none
            pass

    def _copy_block(self, members: list) -> None:
        homes = [_home(m) for m in members]
        device, start = homes[0][0], min(h[1] for h in homes)
        stop = max(h[2] for h in homes)
        storages = {}
        for member in members:
            if isinstance(member, torch.Tensor):
                storage = member.untyped_storage()
                storages[storage._cdata] = storage
        cover = next(
            (st for st in storages.values() if st.data_ptr() == start and st.data_ptr() + st.nbytes() == stop), None
        )
        owner = next((m for m, h in zip(members, homes) if _owns_block(m, h, start, stop)), None)
        owned = _owning_copy(owner) if owner is not None else None
        if owned is not None:
            # An array that owns its data: its copy owns its own (x.base is None, x.resize works), and every
            # other input over the block is rebuilt on the copy's memory.
            self.owners[id(owner)] = owned
            block = torch.from_numpy(_raw_bytes(owned.__array_interface__["data"][0], stop - start, keep=owned))
            for member, home in zip(members, homes):
                if isinstance(member, torch.Tensor):  # a tensor over the array's memory: its bytes as they are now
                    piece = block[home[1] - start : home[2] - start]
                    piece.copy_(torch.empty(0, dtype=torch.uint8).set_(member.untyped_storage()))
        elif cover is not None:
            # The usual case: one tensor storage holds everything; its clone is allocated by torch as it was.
            copied = cover.clone()
            self.storages[cover._cdata] = copied
            block = torch.empty(0, dtype=torch.uint8, device=copied.device).set_(copied)
        else:
            block = torch.empty(stop - start, dtype=torch.uint8, device=torch.device(device))
            for member, home in zip(members, homes):
                piece = block[home[1] - start : home[2] - start]
                if isinstance(member, torch.Tensor):
                    piece.copy_(torch.empty(0, dtype=torch.uint8, device=piece.device).set_(member.untyped_storage()))
                else:  # numpy: CPU memory
                    piece.copy_(torch.from_numpy(_raw_bytes(home[1], home[2] - home[1])))
        for key, storage in storages.items():
            if key in self.storages:
                continue
            address, nbytes = storage.data_ptr(), storage.nbytes()
            if block.device.type == "cpu":
                # a storage over part of the block (two torch.from_numpy views of one array): the same bytes
                self.storages[key] = torch.from_numpy(
                    block.numpy()[address - start : address - start + nbytes]
                ).untyped_storage()
            else:  # no way to alias part of a device buffer as a storage of its own: a separate copy
                self.storages[key] = storage.clone()
        for member in members:
            self.copies.setdefault(id(member), (start, block))

    def _rebuild_view(self, value: torch.Tensor) -> torch.Tensor | None:
        """A view ``value`` rebuilt as a view of its rebuilt base, made as torch made it (in grad mode, under
        ``no_grad``, under ``inference_mode``), with the same creation record: in-place ops and ``detach_``
        on it meet the autograd rules they meet on ``value`` ("Can't detach views in-place", "A view was
        created in no_grad mode ...", "Output 1 of Unbind is a view ..."). None where that cannot be done."""
        base = value._base
        if base is None or base.layout != torch.strided or base.is_conj() or base.is_neg():
            return None
        self.copies.setdefault(id(base), self.copies.get(id(value)))
        fresh_base = self._rebuild(base)
        meta = _get_creation_meta(value)
        if meta == CreationMeta.INFERENCE_MODE:
            mode = torch.inference_mode()
        elif meta == CreationMeta.NO_GRAD_MODE:
            mode = torch.no_grad()
        else:
            mode = torch.enable_grad()
        try:
            with mode:
                source = fresh_base if fresh_base.dtype == value.dtype else fresh_base.view(value.dtype)
                copy_ = source.as_strided(value.size(), value.stride(), value.storage_offset())
        except RuntimeError:  # a view torch cannot remake from its base by strides (view_as_real of a conj ...)
            return None
        if not copy_._is_view():
            return None
        _set_creation_meta(copy_, meta)
        if meta == CreationMeta.MULTI_OUTPUT_NODE and value.grad_fn is not None:
            # torch's error names the op that made the view and its output number; the copy's are as_strided's
            op = short_op_name(value.grad_fn.name())
            self.renamed.add((f"Output {copy_.output_nr} of AsStrided ", f"Output {value.output_nr} of {op} "))
        return copy_

    def _rebuild(self, value):
        done = self.copies.get(id(value))
        if done is not None and not isinstance(done, tuple):
            return done
        if isinstance(value, np.ndarray):
            copy_ = self.owners.get(id(value))
            if copy_ is None:
                start, block = done
                address = value.__array_interface__["data"][0]
                copy_ = np.ndarray(
                    value.shape, value.dtype, buffer=block.numpy(), offset=address - start, strides=value.strides
                )
            copy_ = _as_subclass_of(value, copy_)
            copy_.flags.writeable = value.flags.writeable
        elif value.is_inference():  # made under inference_mode: in-place updates outside it are refused
            with torch.inference_mode():
                copy_ = self._rebuild_tensor(value)
        else:
            copy_ = self._rebuild_tensor(value)
        self.copies[id(value)] = copy_
        return copy_

    def _rebuild_tensor(self, value: torch.Tensor) -> torch.Tensor:
        storage = value.untyped_storage()
        place = (value.dtype, value.device, value.size(), value.stride(), value.storage_offset())
        copy_ = self._rebuild_view(value) if value._is_view() else None
        if copy_ is None:
            fresh_storage = self.storages[storage._cdata]
            dtype, device, size, stride, offset = place
            if value.requires_grad and value.grad_fn is not None:
                # a non-leaf: a clone of a throwaway leaf of the same shape, moved onto the copied storage
                with torch.enable_grad():
                    copy_ = torch.empty_strided(size, stride, dtype=dtype, device=device, requires_grad=True).clone()
            else:
                copy_ = torch.empty(0, dtype=dtype, device=device)
            with torch.no_grad():
                copy_.set_(fresh_storage, offset, size, stride)
            if value.requires_grad and value.grad_fn is None:
                copy_.requires_grad_(True)
        torch._C._set_conj(copy_, value.is_conj())
        torch._C._set_neg(copy_, value.is_neg())
        if isinstance(value, torch.nn.Parameter) and not isinstance(copy_, torch.nn.Parameter):
            # torch's messages name the class ("... not Parameter"), and modules treat it apart
            copy_ = torch.nn.Parameter(copy_, requires_grad=value.requires_grad)
        return copy_


def _first_tensors(result) -> list:
    return [leaf for leaf in tree_flatten(result)[0] if isinstance(leaf, (torch.Tensor, np.ndarray))]


def _storages_in(result) -> list:
    return [leaf for leaf in tree_flatten(result)[0] if isinstance(leaf, (torch.UntypedStorage, torch.TypedStorage))]


def _check_input(name: str, value, fresh_inputs: bool) -> None:
    require_type(value, (torch.Tensor, np.ndarray), name, "a torch.Tensor or numpy.ndarray")
    if isinstance(value, np.ndarray):
        return
    if value.is_nested:
        raise ValueError(
            f"{name} is a nested tensor: its parts have no single storage to compare; pass its parts "
            f"(e.g. {name}.unbind()) as separate tensors"
        )
    if value.device.type == "meta":
        raise ValueError(
            f"{name} is a meta tensor: it has shape and strides but no memory, so nothing can be "
            "shared or copied; make it on a real device (e.g. 'cpu')"
        )
    if value.is_quantized and fresh_inputs:
        raise ValueError(
            f"{name} is a quantized tensor: view_or_copy cannot copy it with the same layout; pass "
            f"fresh_inputs=False to run the expressions on {name} itself (an in-place expression then changes it)"
        )


class _WriteWatcher(_Recorder):
    """``trace_ops``'s recorder, also noting writes into the inputs' memory and the storages ops made.

    A write reaches an input's memory by paths its version counter does not see (``x.data.add_(1)``:
    ``x.data`` has a version counter of its own), so each written argument is compared with the inputs
    before the op runs: a write into an input's storage (as torch's shared version counter counts it) or
    into an array's buffer is a write into the input.
    """

    def __init__(self, records: list, sources: list, held: list = ()):
        super().__init__(records)
        self.sources = sources
        self.targets = sources + [part for value in held for part in _memory_parts(value)]  # x.grad's memory too
        self.wrote_input = False
        self.made: set = set()  # storage keys of the outputs of ops that allocated

    def before_call(self, func, args, kwargs) -> None:
        if self.wrote_input or func._schema.name == "aten::detach_":
            return  # detach_ (seen here for an inference tensor) changes autograd's record only: no memory
        for tensor in _written_tensors(func, args, kwargs):
            try:
                parts = _memory_parts(tensor)
                if any(_same_buffer(p, s) for p in parts for s in self.targets):
                    self.wrote_input = True
                    return
            except (TypeError, ValueError, RuntimeError, NotImplementedError):
                continue

    def after_call(self, record: OpRecord, result) -> None:
        if record.new_bytes:
            self.made.update(storage_key(p) for o in tensors_in(result) for p in _memory_parts(o))


def _storage_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """A uint8 tensor over every byte of a tensor's storage (no copy)."""
    return torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(tensor.untyped_storage())


def _snapshot(values: dict) -> dict:
    """The bytes of every CPU input's memory, to see afterwards whether numpy wrote them (a write from
    torch moves a version counter or passes the watcher; one from numpy leaves no other trace)."""
    shots = {}
    for name, value in values.items():
        if isinstance(value, np.ndarray):
            if not value.dtype.hasobject:
                shots[name] = value.tobytes(order="A")
        elif value.layout == torch.strided and value.device.type == "cpu" and not value.is_quantized:
            shots[name] = _storage_bytes(value).clone()
    return shots


def _changed(values: dict, shots: dict) -> bool:
    for name, shot in shots.items():
        value = values[name]
        if isinstance(value, np.ndarray):
            if value.tobytes(order="A") != shot:
                return True
        else:
            now = _storage_bytes(value)
            if now.shape != shot.shape or not torch.equal(now, shot):
                return True
    return False


def _run(code, inputs: dict):
    if callable(code):
        return code(**inputs)
    return eval(code, {"torch": torch, "np": np, "copy": copy}, dict(inputs))  # noqa: S307 - learner's own code


def _held_bytes(output, source_keys: set) -> tuple[object, int] | None:
    """(key, bytes) of the memory block a result holds that is not an input's, or None."""
    if isinstance(output, torch.Tensor):
        key = storage_key(output)
        return None if key in source_keys else (key, _storage_nbytes(output))
    root = output
    while isinstance(root.base, np.ndarray):
        root = root.base
    if isinstance(root.base, torch.Tensor):
        key = storage_key(root.base)
        return None if key in source_keys else (key, _storage_nbytes(root.base))
    return (id(root), root.nbytes) if root.base is None else (id(output), output.nbytes)


def expression_items(expressions, name: str = "expressions") -> list[tuple[str, object]]:
    """``(label, code)`` pairs from ``view_or_copy``'s ``expressions`` (a list of str, or a dict from label to a
    function), checked; errors name the argument as ``name`` (``op_table`` calls it ``report_or_expressions``).

    Raises:
        TypeError: not a list of strings or a dict of callables.
        ValueError: no expressions.
    """
    if isinstance(expressions, str):
        raise TypeError(f"{name} must be a list of strings, not a single string: wrap it in [ ]")
    if isinstance(expressions, dict):
        items = list(expressions.items())
        for label, function in items:
            if not isinstance(label, str) or not callable(function):
                raise TypeError(f"{name} as a dict must map str labels to functions of the tensors")
    elif isinstance(expressions, (list, tuple)):
        for expression in expressions:
            require_type(expression, str, f"each item of {name}", "a str")
        items = [(expression, expression) for expression in expressions]
    else:
        raise TypeError(f"{name} must be a list of strings or a dict, got {describe(expressions)}")
    if not items:
        raise ValueError(f"{name} is empty: give at least one expression")
    return items


def view_or_copy(expressions, fresh_inputs: bool = True, **tensors) -> OpReport:
    """Run each expression and report whether it made a view, a copy, or wrote in place.

    Args:
        expressions: a list of Python expressions as strings (``"x.t()"``, ``"x[[0, 2]]"``,
            ``"x.add_(1)"``) or a dict from label to a function of the named tensors.
        fresh_inputs: run each expression on a fresh copy of the inputs, so an in-place expression does
            not change what the next one sees. The copy keeps everything that can change the answer:
            layout (shape, strides, offset, storage size), dtype, the conj and neg bits, requires_grad and
            being a leaf or not, being an inference tensor, being a view and how it was made (torch refuses
            ``detach_()`` on a view, and in-place ops on an output of ``unbind``/``split`` or a view made
            under ``no_grad``: the copy is refused the same, with torch's message), the ``Parameter`` class
            and ``.grad``, numpy strides, ownership and subclass (a masked array with its mask), and which
            inputs share memory. With False the expressions run on the tensors themselves.
        **tensors: the tensors (or numpy arrays) the expressions name, e.g. ``x=torch.arange(6.)``.

    Returns:
        An ``OpReport``: one ``OpRow`` per expression (operation, verdict, bytes allocated, shares
        memory with the input, the aten ops that ran). The verdict (one of ``VERDICTS``) is:

        - "view": the result lives in the input's memory and shares its version counter, so an in-place
          write through it is seen by autograd's check on the input (``x[1:]``, ``x.t()``, ``x.detach()``);
        - "alias": it lives in the input's memory with a version counter of its own, or none (``x.data``,
          ``copy.copy(x)``, ``x.numpy()``, ``torch.from_numpy(x.numpy())``): a write through it changes the
          input unseen by autograd, the silent wrong gradient. Found by bumping the result's counter and
          reading the input's (both are put back). Inputs without a counter (arrays, inference tensors)
          have no counter to share: results in their memory are views;
        - "copy": new memory;
        - "in-place": memory of an input, or of a tensor it holds (``x.grad``), was written, through any
          alias: ``x.data``, ``x.numpy()``, numpy's ``out=``;
        - "same tensor": the expression handed back the input object itself, as ``x.contiguous()`` does
          for contiguous ``x``;
        - "existing memory": memory that existed before the expression and is not the input's own
          (``x.grad``, a masked array's ``mask``): nothing copied, nothing allocated;
        - "not a tensor": no tensor or array came back (``x.shape``, ``x.item()``, ``x.untyped_storage()``).

    Raises:
        TypeError: ``expressions`` is not a list of strings or a dict of callables, ``fresh_inputs`` is
            not a bool, or a named value is not a tensor or array.
        ValueError: no expressions or no tensors given; a nested or meta tensor; a quantized tensor
            with ``fresh_inputs=True``.
    """
    items = expression_items(expressions)
    require_type(fresh_inputs, bool, "fresh_inputs", "True or False")
    if not tensors:
        raise ValueError("name the tensors the expressions use, e.g. view_or_copy([...], x=x)")
    for name, value in tensors.items():
        _check_input(name, value, fresh_inputs)
    return OpReport(_row(label, code, tensors, fresh_inputs) for label, code in items)


def _held_by(inputs: dict) -> list:
    """What the inputs hold that an expression can return or write without making it: a leaf's ``.grad``
    (``x.grad``, ``x.grad.zero_()``) and the arrays a NumPy subclass keeps (a masked array's ``mask``)."""
    held = []
    for value in inputs.values():
        if isinstance(value, torch.Tensor):
            if (value.is_leaf or value.retains_grad) and value.grad is not None:  # a non-leaf's .grad warns
                held.append(value.grad)
        elif type(value) is not np.ndarray:
            held.extend(item for item in getattr(value, "__dict__", {}).values() if isinstance(item, np.ndarray))
    return [item for item in held if not any(item is value for value in inputs.values())]


def _run_watched(code, inputs: dict):
    """Run ``code`` on ``inputs`` under a ``_WriteWatcher``: (result, watcher, what the inputs held, and the versions
    before and byte snapshots of the inputs and what they held, by name)."""
    held = _held_by(inputs)
    targets = {**inputs, **{f"held {number}": item for number, item in enumerate(held)}}
    shots = _snapshot(targets)
    # inference tensors keep no version counter; the watcher still sees every write into them
    before = {n: v._version for n, v in targets.items() if isinstance(v, torch.Tensor) and not v.is_inference()}
    sources = [part for value in inputs.values() for part in _memory_parts(value)]
    watcher = _WriteWatcher([], sources, held)
    with watcher:
        result = _run(code, inputs)
    return result, watcher, held, (targets, before, shots)


def _numpy_writes(code, tensors: dict) -> bool:
    """Whether ``code`` writes a numpy input through numpy (which keeps no version counter).

    Run once on fresh copies whose arrays are read-only: numpy refuses any write into them, also one
    that leaves every byte as it was (``np.multiply(a, 1, out=a)``), before writing anything.
    """
    inputs = _FreshCopier(tensors).copy_all()
    arrays = [v for v in inputs.values() if isinstance(v, np.ndarray) and v.flags.writeable]
    if not arrays:
        return False
    for array in arrays:
        array.flags.writeable = False
    try:
        with warnings.catch_warnings(record=True):
            # This trial run's warnings are dropped (torch.from_numpy warns about our read-only flag); the
            # real run below shows the learner's own.
            warnings.simplefilter("always")
            _run(code, inputs)
    except ValueError as error:
        return "read-only" in str(error)
    except Exception:  # noqa: BLE001 - the real run below raises it again, as the learner's own error
        return False
    return False


def _rename_in_message(error: RuntimeError, renamed: set) -> None:
    """Put the input's own name back into torch's message about its copy ("Output 1 of Unbind ...")."""
    if len(renamed) != 1 or not error.args or not isinstance(error.args[0], str):
        return  # none, or several multi-output views among the inputs (their copies' names are alike)
    ((copy_name, name),) = renamed
    error.args = (error.args[0].replace(copy_name, name), *error.args[1:])


def _row(label: str, code, tensors: dict, fresh_inputs: bool) -> OpRow:
    numpy_wrote = fresh_inputs and _numpy_writes(code, tensors)
    copier = _FreshCopier(tensors)
    inputs = copier.copy_all() if fresh_inputs else dict(tensors)
    try:
        result, watcher, held, (targets, before, shots) = _run_watched(code, inputs)
    except RuntimeError as error:
        _rename_in_message(error, copier.renamed)
        raise
    records, sources = watcher.records, watcher.sources
    # In place means an input's memory (or what it holds: x.grad) was written: its version counter moved (views
    # share it), an op wrote into its memory through another alias, or numpy wrote it (numpy keeps no counter:
    # seen from read-only copies, and from bytes that changed). An in-place op on a tensor the expression made
    # itself, like the set_ inside copy.copy(x), does not count.
    wrote = (
        any(targets[n]._version != v for n, v in before.items())
        or watcher.wrote_input
        or numpy_wrote
        or _changed(targets, shots)
    )
    tensors_out = _first_tensors(result)
    outputs = [part for output in tensors_out for part in _memory_parts(output)]
    storages_out = [_raw_bytes_of_storage(s) for s in _storages_in(result)]
    shares = any(shares_memory(o, s) for o in outputs + [s for s in storages_out if s is not None] for s in sources)
    aliases = bool(outputs) and all(any(_same_buffer(o, s) for s in sources) for o in outputs)
    source_keys = {storage_key(s) for s in sources if isinstance(s, torch.Tensor)}
    # memory the inputs held before the expression ran (x.grad, a masked array's mask): returned, not allocated
    existing = {_held_bytes(item, set())[0] for part in held for item in _memory_parts(part)}
    kept = dict(
        block
        for o in outputs
        if not any(_same_buffer(o, s) for s in sources)
        for block in [_held_bytes(o, source_keys)]
        if block is not None and block[0] not in existing
    )
    # x.contiguous() on contiguous x, x.to(x.dtype): the very object, not even a new view of it.
    same = any(o is v for o in tensors_out for v in inputs.values())
    fresh = any(
        not any(_same_buffer(o, s) for s in sources) and _held_bytes(o, set())[0] not in existing for o in outputs
    )
    if wrote:
        verdict = "in-place"
    elif not tensors_out:
        verdict = "not a tensor"
    elif same:
        verdict = "same tensor"
    elif aliases:
        verdict = _alias_kind(outputs, inputs)
    else:
        verdict = "copy" if fresh else "existing memory"
    traced = sum(r.new_bytes for r in records)
    # storage the result holds that no traced op allocated (copy.deepcopy makes it outside aten; numpy)
    untraced = sum(nbytes for key, nbytes in kept.items() if key not in watcher.made)
    if wrote:
        new_bytes = sum(r.new_bytes for r in records if r.kind == "inplace")  # resize_ that reallocated
    elif aliases or not tensors_out:
        new_bytes = 0
    else:
        new_bytes = sum(kept.values())
    return OpRow(
        expression=label,
        aten_ops=tuple(r.name for r in records),
        verdict=verdict,
        new_bytes=new_bytes,
        total_new_bytes=traced + untraced,
        shares_memory=shares,
    )


def _has_version_counter(value) -> bool:
    """Whether ``value`` keeps a version counter: a tensor made outside ``inference_mode`` (arrays keep none)."""
    return isinstance(value, torch.Tensor) and not value.is_inference()


def _shares_version_counter(output, source: torch.Tensor) -> bool:
    """Whether a write through ``output`` moves ``source``'s version counter, as an in-place op through a view
    does (an array keeps no counter: a write through it moves none).

    Asked by bumping ``output``'s counter and reading ``source``'s, then putting both back as they were: the
    caller's counters end where they started (``fresh_inputs=False`` runs on the caller's own tensors).
    """
    if not _has_version_counter(output):
        return False
    versions = (output._version, source._version)
    torch.autograd.graph.increment_version(output)
    shared = source._version != versions[1]
    torch._C._autograd._unsafe_set_version_counter((output, source), versions)
    return shared


def _alias_kind(outputs: list, inputs: dict) -> str:
    """ "view" when every output that aliases an input with a version counter shares that counter (``x[1:]``,
    ``x.detach()``, ``x.view(torch.int32)``), else "alias": it shares the memory with its own counter or none
    (``x.data``, ``copy.copy(x)``, ``x.numpy()``, ``torch.from_numpy(x.numpy())``), so autograd does not see a write
    through it. Inputs without a counter (arrays, inference tensors) have nothing to share: "view"."""
    counted = [value for value in inputs.values() if _has_version_counter(value) and value.layout == torch.strided]
    for output in outputs:
        for source in counted:
            if _same_buffer(output, source) and not _shares_version_counter(output, source):
                return "alias"
    return "view"


def _raw_bytes_of_storage(storage):
    """A storage result as a byte tensor over the same memory (to ask whether it is an input's memory)."""
    if isinstance(storage, torch.TypedStorage):
        storage = storage.untyped()
    if storage.device.type == "meta" or storage.nbytes() == 0:
        return None
    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)


def _storages_overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the storages of two tensors (two storage objects) cover some common address on one device."""
    if a.device != b.device or a.device.type == "meta":
        return False
    storage_a, storage_b = a.untyped_storage(), b.untyped_storage()
    start_a, start_b = storage_a.data_ptr(), storage_b.data_ptr()
    if not (storage_a.nbytes() and storage_b.nbytes() and start_a and start_b):
        return False
    return start_a < start_b + storage_b.nbytes() and start_b < start_a + storage_a.nbytes()


def _buffer_key(value):
    """The object owning ``value``'s memory: a tensor's storage, or the array at the root of ``.base``."""
    root = value
    while isinstance(root, np.ndarray) and isinstance(root.base, (np.ndarray, torch.Tensor)):
        root = root.base
    if isinstance(root, torch.Tensor):
        return "storage", root.untyped_storage()._cdata
    return "array", id(root)


def _same_buffer(a, b) -> bool:
    """Whether ``a`` is a window onto ``b``'s memory block: the same storage, a storage object over memory inside
    ``b``'s (``torch.from_numpy(x.numpy())`` of a slice ``x`` starts 8 bytes into ``x``'s storage), or (with an
    array) the same buffer, so that an empty slice of an array is a view of it as an empty slice of a tensor is."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return same_storage(a, b) or _storages_overlap(a, b)
    if shares_memory(a, b) or _buffer_key(a) == _buffer_key(b):
        return True
    home_a, home_b = _home(a), _home(b)
    return home_a[0] == home_b[0] and home_a[1] < home_b[2] and home_b[1] < home_a[2]


__all__ = [
    "OpRecord",
    "OpReport",
    "OpRow",
    "KINDS",
    "VERDICTS",
    "trace_ops",
    "view_or_copy",
    "classify_call",
    "expression_items",
]
