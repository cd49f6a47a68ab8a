"""The backward graph as plain data: nodes, edges, saved tensors and their versions.

``autograd_graph(t)`` walks ``t.grad_fn`` and ``next_functions`` and, for every node, the tensors it saved
for backward. The version check is autograd's own: each saved tensor is unpacked the way ``backward()``
unpacks it, and when autograd refuses (the "modified by an inplace operation ... is at version N; expected
version M" error) the two versions are read from its message. So ``inplace_hazards`` reports exactly the
saved tensors that make ``backward()`` raise when it reaches the node that saved them, without running
backward (one exception: a custom ``autograd.Function`` whose backward never reads ``ctx.saved_tensors``
does not raise, but its stale saved tensors are still reported, since only running its Python code could
tell; ``Hazard.custom_function`` names that Function). Unpacking is read-only:
``backward()`` still works afterwards, and no user code runs.

Where the tensors are not readable from Python, they are still checked without running anything real:

- ``torch.utils.checkpoint`` (``use_reentrant=False``) packs the region's saved tensors with hooks and
  recomputes them in backward from the region's inputs, which it keeps aside; those inputs are checked
  (``"checkpoint input 0"``). Tensors the checkpointed function reads from outside its arguments are not
  saved at all: an in-place change of one silently changes the recomputed values (no error), and the
  snapshot says so in ``Graph.unseen``. Other ``saved_tensors_hooks`` (offloading) are listed, not unpacked.
- Nodes without Python accessors (``torch._foreach_*`` ops) and ``CopySlices`` (which autograd puts on a
  tensor when a view of it is changed in place, ``y[0].exp_()``, and which hides the in-place op's own
  node) are called the way backward calls them, with gradients on the ``meta`` device: autograd unpacks
  (and version-checks) the saved tensors first, then the arithmetic stops at the meta gradient. Before it
  stops, a formula may compute on the node's own saved tensors (``pow``, ``div``: temporaries about their
  size, freed at once); nothing the size of the viewed base tensor is made, no hook runs, nothing is
  released. A custom Function hidden in a ``CopySlices`` is caught before its Python backward would
  run, and its saved tensors are read like any custom Function's.
- A ``CopySlices`` that backward reaches with no defined gradient (below an output nobody used, through
  ``torch._foreach_*``) skips its check in backward; the snapshot skips it too. A custom Function whose
  backward returns None for an input is not followed that way: below it, a stale tensor in a
  ``CopySlices`` is reported although backward would skip it.

What remains unreadable (a C++ custom Function, a ``grad_fn`` that autograd refuses to build) is listed
in ``Graph.unseen`` and in ``inplace_hazards(t).unseen``: an empty hazard list with a non-empty ``unseen``
means "nothing stale among what could be read", not "backward will work".
"""

from __future__ import annotations

import dataclasses
import functools
import re
import threading
import warnings
from collections import deque
from dataclasses import dataclass, field

import torch

from ..common.checks import describe, require_positive_int, require_tensor, require_type, shape_text
from ..common.text import dtype_name, plural, short_op_name
from .storage import unravel_index
from .watching import storage_key

#: ``autograd_graph`` keeps at most this many nodes unless told otherwise (it still counts them all).
DEFAULT_MAX_NODES = 2000

#: autograd's in-place error: "... is at version 2; expected version 1 instead" (current, then saved version).
VERSION_ERROR = re.compile(r"is at version (\d+); expected version (\d+) instead")
#: Two parts of autograd's one error for a graph backward already freed: "Trying to backward through the graph
#: a second time (or directly access saved tensors after they have already been freed)". Reading a saved
#: tensor raises it too, and only the second part then applies.
FREED_ERROR_SECOND_BACKWARD = "backward through the graph a second time"
FREED_ERROR_ALREADY_FREED = "after they have already been freed"
_OUTPUT_OF = re.compile(r"which is output (\d+) of ([\w:]+),")
_WORD_BREAK = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z0-9])(?=[A-Z][a-z])")
#: C++ nodes known to save no tensors (the rest, when their saved tensors are hidden, are ``unseen``).
_SAVE_NOTHING = (
    "GraphRoot",
    "DelayedError",
    "Error",
    "NotImplemented",
    "CopyBackwards",
    "UndefinedGradBackward",
    "Identity",
    "AccumulateGrad",
)


@dataclass(frozen=True)
class SavedTensor:
    """One tensor a backward node saved during the forward pass.

    ``saved_version`` is the tensor's version counter when it was saved, ``current_version`` what it is
    now; they differ exactly when an in-place operation changed the tensor afterwards (``stale``).
    Both are None when the graph has been freed by ``backward()`` or the tensor was packed by a hook.
    """

    attribute: str  # e.g. "self", "other", "result", "saved_tensors[0]"
    is_output: bool  # saved the node's own forward result (exp, sigmoid, tanh do) rather than an input
    shape: tuple[int, ...] | None
    dtype: torch.dtype | None
    saved_version: int | None
    current_version: int | None
    freed: bool = False
    hooked: bool = False
    note: str = ""  # why the versions are unknown, when autograd refused to unpack for another reason
    output_nr: int | None = None  # which forward output it is (torch's "output N of X"), when known
    # Filled in by ``autograd_graph(t, names=...)``: the name of the named tensor it is (same storage, offset,
    # shape, strides and version); for a stale one, the backward node the last in-place write gave that tensor
    # (its ``grad_fn`` now, made after the saving node): its name (``"MulBackward0"`` for ``mul_``,
    # ``"CopySlices"`` for a write through a view) and its id when the graph holds it.
    name: str | None = None
    edited_by_name: str | None = None
    edited_by: int | None = None
    # (storage, offset, shape, strides) of the saved data, for matching names; None when not readable.
    placement: tuple | None = field(default=None, repr=False, compare=False)
    # The bytes of the storage the saved data points into, which the graph keeps alive while it holds the tensor
    # (``untyped_storage().nbytes()``; shared with every other tensor on that storage): more than ``nbytes`` for a
    # view of part of a bigger tensor, less for an expanded one (x.expand(1000, 1000) of one float: 4 B); for a tensor
    # packed by a saved_tensors_hook, the storage of the packed tensor. None when the data cannot be read (freed,
    # packed into something not a tensor, hidden in a CopySlices) or has no storage.
    storage_nbytes: int | None = field(default=None, compare=False)

    @property
    def nbytes(self) -> int | None:
        """The saved tensor's size in bytes as its elements count them (elements × element size), None when its
        shape is unknown; not the memory it holds, which ``storage_nbytes`` gives."""
        if self.shape is None or self.dtype is None:
            return None
        count = 1
        for size in self.shape:
            count *= size
        return count * self.dtype.itemsize

    @property
    def stale(self) -> bool:
        return (
            self.saved_version is not None
            and self.current_version is not None
            and self.saved_version != self.current_version
        )

    @property
    def state(self) -> str:
        """One word for what backward would meet, checked in this order.

        ``"stale"`` (changed in place since saved), ``"freed"`` (backward already ran through it), ``"hooked"``
        (packed by a saved-tensor hook, not version-checked), ``"unknown"`` (versions unreadable, ``note`` may
        say why) or ``"ok"``.
        """
        if self.stale:
            return "stale"
        if self.freed:
            return "freed"
        if self.hooked:
            return "hooked"
        if self.saved_version is None:
            return "unknown"
        return "ok"


@dataclass(frozen=True)
class KeptTensor:
    """A tensor a custom ``autograd.Function`` keeps as a ``ctx`` attribute (``ctx.result = t.exp()``) instead of
    saving it with ``ctx.save_for_backward``: its node holds it as long as the graph lives. ``backward()`` frees saved
    tensors, not these, and autograd does not check their versions.
    """

    attribute: str  # "ctx.result", "ctx.parts[1]", "ctx.cache['k']"
    shape: tuple[int, ...]
    dtype: torch.dtype
    # the bytes of the storage it keeps alive (shared with every tensor on it); None without a storage (sparse)
    storage_nbytes: int | None = field(default=None, compare=False)
    placement: tuple | None = field(default=None, repr=False, compare=False)  # as SavedTensor.placement


@dataclass(frozen=True)
class GraphNode:
    """A node of the backward graph: a backward function, a leaf (``AccumulateGrad``) or the output tensor.

    ``kind`` is ``"backward"``, ``"leaf"`` or ``"output"``; ``label`` is what a picture prints (the
    leaf's name when one was given, else its shape). ``kept``: a custom Function's tensors kept on ``ctx``.
    """

    id: int
    name: str
    kind: str
    label: str
    shape: tuple[int, ...] | None = None
    saved: tuple[SavedTensor, ...] = ()
    value: str | None = None  # leaves and the output: their values, shortened (see ``preview``)
    grad: str | None = None  # leaves (and a retain_grad output): ``.grad`` shortened, None before backward
    kept: tuple[KeptTensor, ...] = ()

    @property
    def forward_op(self) -> str | None:
        """The forward operation a backward node differentiates (``ExpBackward0`` -> ``exp``)."""
        if self.kind != "backward":
            return None
        return forward_op_name(self.name)


@dataclass(frozen=True)
class Graph:
    """A snapshot of a backward graph. ``edges`` run from a node to the node its gradient flows to next.

    ``total_nodes`` counts every node; when it exceeds ``max_nodes`` only the ``max_nodes`` nearest the
    output are kept, ``truncated`` is True, and edges to dropped nodes are left out. ``total_backward``,
    ``total_leaves`` and ``total_edges`` count the whole graph too (None: count ``nodes`` and ``edges``).
    ``unseen`` lists what the snapshot could not check (see the module docstring); usually empty.
    """

    nodes: tuple[GraphNode, ...]
    edges: tuple[tuple[int, int], ...]
    root: int
    total_nodes: int
    truncated: bool
    total_backward: int | None = None
    total_leaves: int | None = None
    total_edges: int | None = None
    unseen: tuple[str, ...] = ()

    @property
    def counts(self) -> tuple[int, int, int]:
        """(backward nodes, leaves, edges) of the whole graph, kept or not."""
        kinds = [n.kind for n in self.nodes]
        return (
            kinds.count("backward") if self.total_backward is None else self.total_backward,
            kinds.count("leaf") if self.total_leaves is None else self.total_leaves,
            len(self.edges) if self.total_edges is None else self.total_edges,
        )

    def node(self, node_id: int) -> GraphNode:
        return self.nodes[node_id]

    def find(self, name: str) -> list[GraphNode]:
        """The nodes with this name (``"MulBackward0"``) or label."""
        return [n for n in self.nodes if n.name == name or n.label == name]

    def __repr__(self) -> str:
        names = ", ".join(n.name for n in self.nodes[:8]) + (", …" if len(self.nodes) > 8 else "")
        note = f", showing {len(self.nodes)} of {self.total_nodes} nodes" if self.truncated else ""
        return f"Graph({len(self.nodes)} nodes, {len(self.edges)} edges{note}: {names})"


def _forward_camel(node_name: str) -> str:
    """``LinalgCholeskyExBackward0`` -> ``LinalgCholeskyEx``: the forward's name as autograd's messages spell it."""
    return short_op_name(node_name.rsplit("::", 1)[-1])


@functools.lru_cache(maxsize=1024)
def forward_op_name(node_name: str) -> str:
    """The forward operation a backward node differentiates, as torch spells the op.

    ``ExpBackward0`` -> ``exp``, ``LinalgCholeskyExBackward0`` -> ``linalg_cholesky_ex``,
    ``ForeachExpBackward0`` -> ``_foreach_exp`` (the ``torch.ops.aten`` name when there is one).
    """
    camel = _forward_camel(node_name)
    snake = _WORD_BREAK.sub("_", camel).lower()
    packet = _aten_packet(snake)
    return packet[0] if packet is not None else snake


@functools.lru_cache(maxsize=512)
def _aten_packet(snake: str):
    """(aten name, return names, argument names) over all overloads of the op, or None when not an aten op."""
    for name in (snake, "_" + snake):
        try:
            packet = getattr(torch.ops.aten, name)
            schemas = [getattr(packet, overload)._schema for overload in packet.overloads()]
        except (AttributeError, RuntimeError):
            continue
        plain = [schema for schema in schemas if not any(a.is_out for a in schema.arguments)] or schemas
        returns: dict[str, int] = {}  # name -> position, over all overloads (max.dim names its outputs)
        for schema in plain:
            for position, returned in enumerate(schema.returns):
                if returned.name:
                    returns.setdefault(returned.name, position)
        arguments = {a.name for schema in plain for a in schema.arguments}
        return name, returns, frozenset(arguments)
    return None


@functools.lru_cache(maxsize=4096)
def _output_position(node_name: str, attribute: str) -> int | None:
    """Which forward output a built-in node's saved attribute is (``indices`` of sort: 1), None for an input.

    ``result``, ``result0``, ``result1`` are outputs by autograd's naming; other names are outputs when the
    op's schema returns a tensor of that name and takes no argument of that name (``sort`` returns
    ``values, indices``; ``linalg_cholesky_ex`` returns ``L, info``).
    """
    plain = attribute.split("[", 1)[0]
    match = re.fullmatch(r"result(\d*)", plain)
    if match:
        if "[" in attribute:  # a list of outputs (foreach): the index is the output's position
            return int(attribute.split("[", 1)[1].rstrip("]"))
        return int(match.group(1) or 0)
    packet = _aten_packet(_WORD_BREAK.sub("_", _forward_camel(node_name)).lower())
    if packet is None:
        return None
    _, returns, arguments = packet
    if plain in returns and plain not in arguments:
        return returns[plain]
    return None


def _output_named(error_text: str, node_name: str) -> int | None:
    """N when autograd's message says the tensor "is output N of" this very node's forward, else None."""
    match = _OUTPUT_OF.search(error_text)
    if match and _forward_camel(match.group(2)) == _forward_camel(node_name):
        return int(match.group(1))
    return None


@functools.cache
def _tensor_in_error() -> tuple[re.Pattern, dict]:
    """The pattern of how autograd's in-place error names the tensor, and the dtype of each type name in it.

    The tensor reads ``[torch.FloatTensor [3, 4]]`` (torch's Python type, for float, double, half and the integer
    types; ``torch.cuda.FloatTensor`` on a GPU) or ``[CPUComplexDoubleType [3]]`` (its C++ name, backend then
    dtype: bfloat16, bool, complex and the rest). The type names come from torch itself:
    ``torch.empty(0, dtype=torch.bfloat16).type()`` is ``"torch.BFloat16Tensor"``.
    """
    names = {}
    with warnings.catch_warnings():  # quantized and complex32 tensors warn that they are deprecated/experimental
        warnings.simplefilter("ignore")
        for dtype in {value for value in vars(torch).values() if isinstance(value, torch.dtype)}:
            try:
                names[torch.empty(0, dtype=dtype).type().rsplit(".", 1)[-1].removesuffix("Tensor")] = dtype
            except (RuntimeError, TypeError):  # a dtype this build cannot make a tensor of
                continue
    alternatives = "|".join(sorted(map(re.escape, names), key=lambda name: (-len(name), name)))
    pattern = re.compile(
        rf"\[(?:torch\.(?P<legacy>(?:cuda\.)?(?P<name>{alternatives})Tensor)"
        rf"|(?P<backend>[A-Z][A-Za-z0-9]*?)(?P<scalar>{alternatives})Type) \[(?P<shape>[\d, ]*)\]\]"
    )
    return pattern, names


def tensor_in_error(error) -> re.Match | None:
    """Where autograd's in-place error (or its message) names the tensor, ``[torch.FloatTensor [3]]`` or
    ``[CPUComplexDoubleType [3]]``, as a match with groups ``legacy`` (``"FloatTensor"``, ``"cuda.HalfTensor"``)
    or ``backend`` and ``scalar`` (``"CPU"``, ``"ComplexDouble"``), and ``shape`` (``"3"``); None if it does not."""
    return _tensor_in_error()[0].search(str(error))


def error_versions(error) -> tuple[int, int] | None:
    """(current, saved) versions from autograd's in-place error (or its message), or None for another error."""
    match = VERSION_ERROR.search(str(error))
    return (int(match.group(1)), int(match.group(2))) if match else None


def error_shape_and_dtype(error) -> tuple:
    """(shape, dtype) of the tensor autograd's in-place error names (``[torch.FloatTensor [3, 4]]``,
    ``[CPUComplexDoubleType [3]]``); Nones if none."""
    match = tensor_in_error(error)
    if match is None:
        return None, None
    shape = tuple(int(s) for s in match.group("shape").split(",") if s.strip())
    return shape, _tensor_in_error()[1][match.group("name") or match.group("scalar")]


def _shape_dtype_from(message: str, shape, dtype):
    """``shape`` and ``dtype``, or when the shape is unknown, what the error ``message`` names."""
    if shape is None:
        named_shape, named_dtype = error_shape_and_dtype(message)
        if named_shape is not None:
            return named_shape, named_dtype
    return shape, dtype


#: What autograd says when it refuses a saved piece of a multi-output view whose base changed in place.
_MULTI_OUTPUT_VIEW = "is a view and its base or another view of its base has been modified inplace"


def _from_error(error: BaseException, attribute: str, is_output: bool, shape, dtype, node_name: str) -> SavedTensor:
    """What autograd's refusal to unpack says about one saved tensor (or the first stale one it met)."""
    message = str(error)
    versions = error_versions(error)
    if versions:
        shape, dtype = _shape_dtype_from(message, shape, dtype)
        current, saved = versions
        # "output N of X" names the saved tensor's creator: this node only when the tensor is one of
        # its outputs (a saved input made by another mul reads "output 0 of Mul" too)
        output_nr = _output_named(message, node_name) if is_output else None
        creator = _OUTPUT_OF.search(message)
        note = "" if is_output or creator is None else f"torch calls it output {creator.group(1)} of {creator.group(2)}"
        return SavedTensor(attribute, is_output, shape, dtype, saved, current, note=note, output_nr=output_nr)
    if FREED_ERROR_ALREADY_FREED in message:
        return SavedTensor(attribute, is_output, shape, dtype, None, None, freed=True)
    return SavedTensor(attribute, is_output, shape, dtype, None, None, note=message.split(".")[0])


#: The note of a saved tensor that torch 2.11 cannot unpack alone (its ``SavedTensor`` has no ``unpack()``; 2.13 has).
NOT_ALONE = "not readable alone with this torch (its SavedTensor has no unpack()): only its node unpacks it"


def _unpack_alone(raw, unpack_all, index: int, count: int):
    """A function that unpacks the saved tensor ``raw`` (number ``index`` of ``count``) as backward would.

    Torch 2.13 unpacks it alone (``raw.unpack()``). Torch 2.11's ``SavedTensor`` has no ``unpack()``: there only its
    node unpacks them all (``unpack_all()``), stopping at the first stale one, which is then this one only when the
    node saved just one; otherwise the failure says ``NOT_ALONE``, and elimination finds the stale one.
    """
    unpack = getattr(raw, "unpack", None)
    if unpack is not None:
        return unpack

    def through_the_node():
        try:
            return unpack_all()[index]
        except RuntimeError as error:
            if count == 1:
                raise
            raise RuntimeError(NOT_ALONE) from error

    return through_the_node


def _checkpoint_frame(hook):
    """The ``torch.utils.checkpoint`` frame behind a saved tensor's unpack hook, or None for another hook."""
    seen, todo = set(), [hook]
    while todo:  # the hook may wrap the checkpoint's own unpack hook (debug=True)
        function = todo.pop()
        if id(function) in seen or getattr(function, "__module__", None) != "torch.utils.checkpoint":
            continue
        seen.add(id(function))
        for cell in getattr(function, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if type(value).__name__ == "_CheckpointFrame":
                return value
            if callable(value):
                todo.append(value)
    return None


def _checkpoint_inputs(frame, node_name: str) -> tuple[SavedTensor, ...]:
    """The inputs a non-reentrant checkpoint kept to recompute its region, checked as backward checks them.

    Recomputing unpacks each kept input (``_CheckpointFrame.get_inputs``), which raises autograd's version
    error for one changed in place since; ``raw.unpack()`` runs exactly that check and nothing else. Torch 2.11
    keeps them as the saved tensors of a node of their own (``frame.input_saver.grad_fn``), read as a custom
    Function's.
    """
    saver = getattr(getattr(frame, "input_saver", None), "grad_fn", None)
    if not hasattr(frame, "saved_args") and saver is not None:
        # torch 2.11 keeps them as the saved tensors of a node of their own (_NoopSaveInputs), after a dummy
        inputs = _saved_by_custom_function(saver)[1:]
        return tuple(
            dataclasses.replace(item, attribute=f"checkpoint input {index}") for index, item in enumerate(inputs)
        )
    saved = []
    for index, raw in enumerate(getattr(frame, "saved_args", ())):
        if type(raw).__name__ != "SavedTensor":  # a non-tensor argument
            continue
        saved.append(_inspect_saved(raw, raw.unpack, f"checkpoint input {index}", False, node_name))
    return tuple(saved)


def _inspect_saved(raw, unpack, attribute: str, is_output: bool, node_name: str = "") -> SavedTensor:
    """Read one saved tensor's versions the way backward would, without changing anything.

    ``raw`` is autograd's SavedTensor (for shape, dtype and hooks); ``unpack`` unpacks it exactly as
    backward does (through the node, which matters for saved outputs).
    """
    try:
        data = raw.data
    except RuntimeError:
        data = None
    inspected = _versions_of(raw, unpack, attribute, is_output, node_name, data)
    placement = _placement(data) if isinstance(data, torch.Tensor) else None
    if placement is None:
        return inspected
    try:
        storage_nbytes = data.untyped_storage().nbytes()
    except (RuntimeError, NotImplementedError):  # a tensor without storage
        storage_nbytes = None
    return dataclasses.replace(inspected, placement=placement, storage_nbytes=storage_nbytes)


def _placement(tensor: torch.Tensor) -> tuple | None:
    """(storage, offset, shape, strides) of a strided tensor: equal for two tensors over the same elements."""
    if tensor.layout != torch.strided:
        return None
    try:
        return (storage_key(tensor), tensor.storage_offset(), tuple(tensor.shape), tuple(tensor.stride()))
    except (RuntimeError, NotImplementedError):  # a tensor without storage (functional, meta wrappers)
        return None


def _versions_of(raw, unpack, attribute: str, is_output: bool, node_name: str, data) -> SavedTensor:
    """``_inspect_saved``'s reading of the versions (``data`` is the raw saved data, or None)."""
    shape = tuple(data.shape) if isinstance(data, torch.Tensor) else None
    dtype = data.dtype if isinstance(data, torch.Tensor) else None
    output_nr = _output_position(node_name, attribute) if is_output and node_name else None
    if getattr(raw, "unpack_hook", None) is not None:
        return SavedTensor(attribute, is_output, shape, dtype, None, None, hooked=True, output_nr=output_nr)
    try:
        unpacked = unpack()
    except RuntimeError as error:
        inspected = _from_error(error, attribute, is_output, shape, dtype, node_name)
        if inspected.output_nr is None and output_nr is not None:
            inspected = dataclasses.replace(inspected, output_nr=output_nr)
        return inspected
    if not isinstance(unpacked, torch.Tensor):  # an undefined (not needed) saved variable
        return SavedTensor(attribute, is_output, None, None, None, None)
    version = unpacked._version
    return SavedTensor(
        attribute, is_output, tuple(unpacked.shape), unpacked.dtype, version, version, output_nr=output_nr
    )


def _raw_attribute(fn, attr: str):
    try:
        return getattr(fn, attr), None
    except RuntimeError as error:  # some nodes refuse once their buffers are freed
        if FREED_ERROR_ALREADY_FREED in str(error):
            return None, error
        raise


def _saved_by_custom_function(fn) -> tuple[SavedTensor, ...]:
    """Tensors saved with ctx.save_for_backward in a custom autograd.Function.

    ``fn.saved_tensors`` unpacks them all, exactly as ``ctx.saved_tensors`` in backward does, and raises
    at the first stale one. A saved input can also be unpacked on its own (``raw.unpack()``); a saved
    output cannot (autograd needs the node to rebuild it, and refuses without it), so when the whole
    unpack fails the stale output is found from autograd's message ("output 1 of Two", its shape and
    versions); see ``_custom_saved_by_elimination``. Torch 2.11 cannot unpack any saved tensor alone
    (``_unpack_alone``): there inputs are found by elimination too.
    """
    raws, error = _raw_attribute(fn, "_raw_saved_tensors")
    if error is not None:
        return (SavedTensor("saved_tensors", False, None, None, None, None, freed=True),)
    raws = tuple(raws or ())
    names = [f"saved_tensors[{index}]" for index in range(len(raws))]
    try:
        unpacked = fn.saved_tensors
    except RuntimeError as whole_error:
        if error_versions(whole_error) is None:
            count = len(raws)
            return tuple(
                _inspect_saved(raw, _unpack_alone(raw, lambda: fn.saved_tensors, index, count), name, False)
                for index, (raw, name) in enumerate(zip(raws, names))
            )
        return _custom_saved_by_elimination(fn, raws, names, whole_error)
    saved = []
    for name, tensor in zip(names, unpacked):
        if not isinstance(tensor, torch.Tensor):  # ctx.save_for_backward(None)
            saved.append(SavedTensor(name, False, None, None, None, None))
            continue
        # an unpacked output comes back with this very node as its grad_fn (and its output_nr); an input
        # with its own
        is_output = tensor.grad_fn is fn
        saved.append(
            SavedTensor(
                name,
                is_output,
                tuple(tensor.shape),
                tensor.dtype,
                tensor._version,
                tensor._version,
                output_nr=tensor.output_nr if is_output else None,
            )
        )
    return tuple(saved)


def _custom_saved_by_elimination(fn, raws, names, first_error: RuntimeError):
    """Per-tensor versions when ``fn.saved_tensors`` raised ``first_error`` at its first stale tensor.

    Inputs are read one by one. Outputs are not readable one by one; the stale one is the first saved
    output that matches the message: same current version, shape and dtype, and the shape autograd
    recorded for the output the message names (``fn._input_metadata[N]``). When several saved outputs
    match, which one it is cannot be read: the hazard names all of them (``note``). Outputs after it keep
    an unknown saved version (their current one is known): backward stops at the first.
    """
    message = str(first_error)
    current0, saved0 = error_versions(first_error)
    named_output = _output_named(message, fn.name())
    shape0, dtype0 = _shape_dtype_from(message, None, None)
    try:
        named_shape = tuple(fn._input_metadata[named_output].shape) if named_output is not None else None
    except (AttributeError, IndexError, RuntimeError, TypeError):
        named_shape = None
    saved = []
    for index, (raw, name) in enumerate(zip(raws, names)):
        if not hasattr(raw, "unpack") and len(raws) == 1 and named_output is not None:
            # torch 2.11, one saved tensor, and torch names this node's output: that output raised
            data = raw.data
            saved.append(
                SavedTensor(name, True, tuple(data.shape), data.dtype, saved0, current0, output_nr=named_output)
            )
            continue
        inspected = _inspect_saved(raw, _unpack_alone(raw, lambda: fn.saved_tensors, index, len(raws)), name, False)
        if inspected.note and inspected.saved_version is None:  # only the node can unpack it: an output
            # (or an input detached in place; or any saved tensor with torch 2.11, NOT_ALONE)
            try:
                current = raw.data._version  # shares the tensor's version counter
            except RuntimeError:
                current = None
            is_output = inspected.note != NOT_ALONE  # with torch 2.11 unknown: said as not an output
            unpacked = SavedTensor(
                name, is_output, inspected.shape, inspected.dtype, None, current, note=inspected.note
            )
            if not is_output:  # where it lies, which the watcher matches writes against (a checkpoint's inputs)
                unpacked = dataclasses.replace(
                    unpacked, placement=inspected.placement, storage_nbytes=inspected.storage_nbytes
                )
            inspected = unpacked
        saved.append(inspected)

    def unread(item) -> bool:  # a saved output, whose saved version only the node could read (any, with 2.11)
        return item.saved_version is None and (item.is_output or item.note == NOT_ALONE)

    def could_have_raised(item) -> bool:
        if not unread(item):
            return False
        same = item.current_version == current0
        same = same and (shape0 is None or item.shape is None or item.shape == shape0)
        same = same and (dtype0 is None or item.dtype is None or item.dtype == dtype0)
        return same and (named_shape is None or item.shape is None or item.shape == named_shape)

    # Backward raised at the first stale tensor in saving order: an output that matches the message, or
    # else the first stale input (which must match it; one that does not would have raised instead).
    source, candidates = None, []
    for index, item in enumerate(saved):
        if item.stale:
            matches = (item.current_version, item.saved_version) == (current0, saved0)
            if matches and (named_output is None or not candidates):
                source = index
            break
        if could_have_raised(item):
            candidates.append(index)
    if source is None and candidates:
        source = candidates[0]
    if named_output is None or source not in candidates:
        candidates = []
    ambiguous = [names[i] for i in candidates] if len(candidates) > 1 else []
    resolved = []
    for index, item in enumerate(saved):
        if unread(item) and source is not None and index < source:  # not stale, or backward would stop here
            version = item.current_version
            item = SavedTensor(item.attribute, item.is_output, item.shape, item.dtype, version, version)
        elif unread(item) and index == source:
            note = (
                (
                    f"one of {', '.join(ambiguous)}: torch names output {named_output} of "
                    f"{_forward_camel(fn.name())}, and which saved tensor that is cannot be read"
                )
                if ambiguous
                else ""
            )
            is_output = item.is_output or named_output is not None  # torch 2.11: the message names this node's output
            item = SavedTensor(
                item.attribute,
                is_output,
                item.shape,
                item.dtype,
                saved0,
                current0,
                note=note,
                output_nr=named_output if is_output else None,
            )
        elif unread(item):
            item = SavedTensor(
                item.attribute,
                item.is_output,
                item.shape,
                item.dtype,
                None,
                item.current_version,
                note="saved version unknown: backward stops at an earlier stale saved tensor",
            )
        if saved[index].note == NOT_ALONE:
            item = dataclasses.replace(
                item, placement=saved[index].placement, storage_nbytes=saved[index].storage_nbytes
            )
        resolved.append(item)
    return tuple(resolved)


def _meta_gradients(fn) -> list:
    """One zero gradient per input of ``fn``, on the meta device: shapes only, no memory."""
    return [torch.zeros(metadata.shape, dtype=metadata.dtype, device="meta") for metadata in fn._input_metadata]


class _CustomFunctionReached(Exception):  # noqa: N818 - a signal, not an error
    def __init__(self, ctx):
        super().__init__("custom Function reached")
        self.ctx = ctx


_INTERCEPT = threading.local()
_INTERCEPT_LOCK = threading.Lock()


def _intercepting_apply(original):
    def apply(self, *args):
        if getattr(_INTERCEPT, "on", False):  # our own probe: read the node instead of running user code
            raise _CustomFunctionReached(self)
        return original(self, *args)

    return apply


def _call_with_meta_gradients(fn, attribute: str) -> tuple[SavedTensor, ...]:
    """Run ``fn``'s unpacking, and only that, by calling it the way backward does with meta gradients.

    A built-in node unpacks (and version-checks) all its saved tensors before it uses the gradient; the
    computation then fails (a meta gradient meets a real tensor) or runs on shapes only, and its result
    is thrown away (a formula may first compute briefly on the node's own saved tensors). A custom
    Function reached this way (hidden in a ``CopySlices``) is stopped before its Python backward runs,
    and its saved tensors are read instead. The call runs under no_grad, runs no node hooks and releases
    nothing. Nothing is listed when all is well: hidden saved tensors cannot be enumerated.
    """
    from torch.autograd import function as autograd_function

    try:
        gradients = _meta_gradients(fn)
    except (AttributeError, IndexError, RuntimeError, TypeError, NotImplementedError) as error:
        return (SavedTensor(attribute, False, None, None, None, None, note=f"not inspected: {error}"),)
    with _INTERCEPT_LOCK:
        cls = autograd_function.BackwardCFunction
        original = cls.__dict__["apply"]
        cls.apply = _intercepting_apply(original)
        _INTERCEPT.on = True
        try:
            with torch.no_grad():
                fn(*gradients)
        except _CustomFunctionReached as reached:
            ctx = reached.ctx
            inner = _saved_by_custom_function(ctx)
            label = f"{attribute}: {ctx.name()} "
            return tuple(dataclasses.replace(item, attribute=label + item.attribute) for item in inner)
        except Exception as error:  # noqa: BLE001 - any refusal after unpacking means unpacking succeeded
            versions = error_versions(error)
            if versions or FREED_ERROR_ALREADY_FREED in str(error):
                return (_from_error(error, attribute, False, None, None, _inner_name(fn, error)),)
            return ()
        finally:
            _INTERCEPT.on = False
            cls.apply = original
    return ()


def _inner_name(fn, error) -> str:
    """The node name to compare "output N of X" with; a CopySlices hides the wrapped op's name."""
    return "" if fn.name().endswith("CopySlices") else fn.name()


def _saved_of(fn, seen_frames: set | None = None, unseen: list | None = None) -> tuple[SavedTensor, ...]:
    """The saved tensors of one node, each with its saved and current version when they can be read.

    ``seen_frames`` (ids of checkpoint frames already reported) keeps a checkpoint's inputs on the first
    node of its region only; ``unseen`` collects what cannot be checked (see the module docstring).
    """
    name = fn.name()
    unseen = [] if unseen is None else unseen
    if name.endswith("CopySlices"):  # "torch::autograd::CopySlices"
        return _noting_failures(_call_with_meta_gradients(fn, "wrapped in-place op"), name, unseen)
    members = dir(fn)
    if {"_raw_saved_tensors", "saved_tensors"} <= set(members):
        if name == "CheckpointFunctionBackward":  # checkpoint(use_reentrant=True)
            unseen.append(("checkpoint", name))
        return _saved_by_custom_function(fn)
    attributes = [attr for attr in members if attr.startswith("_raw_saved_")]
    if not attributes and type(fn).__name__ == "CppFunction":  # no Python accessors for its saved tensors
        short = name.rsplit("::", 1)[-1]
        if "::" not in name and "Backward" in name:  # a generated node (torch._foreach_*): call it
            found = _call_with_meta_gradients(fn, "saved tensors (not readable from Python)")
            return _noting_failures(found, name, unseen)
        if not any(short.startswith(known) for known in _SAVE_NOTHING):
            unseen.append(("cpp", name))
        return ()
    saved = []
    for attr in sorted(attributes):
        short = attr.removeprefix("_raw_saved_")
        position = _output_position(name, short)
        is_output = position is not None
        raw, error = _raw_attribute(fn, attr)
        if error is not None:
            saved.append(SavedTensor(short, is_output, None, None, None, None, freed=True))
            continue
        items = list(enumerate(raw)) if isinstance(raw, (list, tuple)) else [(None, raw)]
        for index, item in items:
            if item is None:
                continue
            label = short if index is None else f"{short}[{index}]"
            if index is None:
                unpack = lambda short=short: getattr(fn, "_saved_" + short)  # noqa: E731 - through the node, as backward
            else:
                unpack = _unpack_alone(item, lambda short=short: getattr(fn, "_saved_" + short), index, len(items))
            inspected = _inspect_saved(item, unpack, label, _output_position(name, label) is not None, name)
            known = inspected.freed or inspected.hooked or inspected.stale
            if index is None and inspected.shape is None and not known:  # an undefined saved variable
                continue
            saved.append(inspected)
            if inspected.hooked:
                frame = _checkpoint_frame(item.unpack_hook)
                if frame is None:
                    unseen.append(("hook", name))
                elif seen_frames is None or id(frame) not in seen_frames:
                    if seen_frames is not None:
                        seen_frames.add(id(frame))
                    saved.extend(_checkpoint_inputs(frame, name))
                    unseen.append(("checkpoint", name))
    return tuple(saved)


def _noting_failures(saved: tuple, name: str, unseen: list) -> tuple:
    if any(item.note.startswith("not inspected") for item in saved):
        unseen.append(("not inspected", name))
    return saved


def _first_names(names, shown: int = 3) -> str:
    """The first few distinct names, comma-separated, with "…" when there are more."""
    distinct = list(dict.fromkeys(names))
    return ", ".join(distinct[:shown]) + (", …" if len(distinct) > shown else "")


def _unseen_texts(unseen: list) -> tuple[str, ...]:
    """``_saved_of``'s (kind, node name) notes as a few sentences, counted (a model may have hundreds)."""
    by_kind: dict[str, list[str]] = {}
    for kind, name in unseen:
        by_kind.setdefault(kind, []).append(name)

    texts = []
    if "checkpoint" in by_kind:
        regions = len(by_kind["checkpoint"])
        texts.append(
            f"{plural(regions, 'torch.utils.checkpoint region')}: recomputed in backward from "
            f"{'its' if regions == 1 else 'their'} inputs, which are checked; tensors a checkpointed function "
            "reads from outside its arguments are not"
        )
    if "hook" in by_kind:
        texts.append(
            f"{plural(len(by_kind['hook']), 'saved tensor')} packed by saved_tensors_hooks (in "
            f"{_first_names(by_kind['hook'])}): autograd does not check their versions, so an in-place change "
            "of one goes undetected"
        )
    if "cpp" in by_kind:
        texts.append(f"the saved tensors of {_first_names(by_kind['cpp'])} (C++ nodes: not readable from Python)")
    if "below a custom Function" in by_kind:
        texts.append(
            f"whether backward reaches {plural(len(by_kind['below a custom Function']), 'stale CopySlices node')}: "
            "only if the custom Functions above return a gradient (not None) for the tensor below them"
        )
    if "not inspected" in by_kind:
        nodes = dict.fromkeys(by_kind["not inspected"])
        texts.append(f"the hidden saved tensors of {', '.join(list(nodes)[:3])} (could not be inspected)")
    return tuple(texts)


def _walk(root_fn, keep: int):
    """Breadth-first over grad_fn objects.

    Returns (kept fns in order, edges among kept, total nodes, total edges, total leaves).
    """
    index: dict[int, int] = {}
    order: list = []  # holds every fn object, so ids stay valid while we walk
    edges: list[tuple[int, int]] = []
    queue = deque([root_fn])
    index[id(root_fn)] = 0
    order.append(root_fn)
    leaves = 0
    while queue:
        fn = queue.popleft()
        if fn.name().endswith("AccumulateGrad") and isinstance(getattr(fn, "variable", None), torch.Tensor):
            leaves += 1
        for next_fn, _ in fn.next_functions:
            if next_fn is None:
                continue
            if id(next_fn) not in index:
                index[id(next_fn)] = len(order)
                order.append(next_fn)
                queue.append(next_fn)
            edges.append((index[id(fn)], index[id(next_fn)]))
    kept_edges = [(a, b) for a, b in edges if a < keep and b < keep]
    return order, kept_edges, len(order), len(edges), leaves


def _skipped_copy_slices(order, roots=None) -> set[int]:
    """ids of the ``CopySlices`` nodes that backward reaches with no defined gradient, so skips."""
    return {key for key, reach in _copy_slices_reach(order, roots).items() if reach == 0}


def _copy_slices_reach(order, roots=None) -> dict[int, int]:
    """For each ``CopySlices`` node (by id): 2 when backward surely brings it a defined gradient, 1 when
    only if custom Functions above it return gradients (not None), 0 when it brings none.

    A ``CopySlices`` returns at once when its gradient is undefined, without unpacking what it wraps.
    Gradients are undefined below an output nobody used, through ops that pass the undefinedness on:
    ``torch._foreach_*`` (gradient ``i`` of its inputs comes from gradient ``i`` of its outputs) and
    every other node when all of its gradients are undefined. A custom Function gets zeros for unused
    outputs (``materialize_grads``), but its backward may return None for an input: what flows below it
    is "defined unless it returns None". ``order`` lists every node, breadth-first from the roots
    (``roots``, default ``order[0]``: the nodes backward starts from, with defined gradients).
    """
    roots = [order[0]] if roots is None else list(roots)
    waiting: dict[int, int] = {}  # id(fn) -> parent edges not yet processed
    for fn in order:
        for child, _ in fn.next_functions:
            if child is not None:
                waiting[id(child)] = waiting.get(id(child), 0) + 1
    levels: dict[int, dict[int, int]] = {  # id(fn) -> {gradient slot: 2 sure, 1 unless a Function returns None}
        id(root): dict.fromkeys(range(len(getattr(root, "_input_metadata", ())) or 1), 2) for root in roots
    }
    reach = {}
    ready = deque(root for root in roots if waiting.get(id(root), 0) == 0)
    while ready:  # parents before children (Kahn's order), so every slot is final when its node is taken
        fn = ready.popleft()
        slots = levels.get(id(fn), {})
        if fn.name().endswith("CopySlices"):
            reach[id(fn)] = slots.get(0, 0)
        count = len(getattr(fn, "_input_metadata", ())) or 1
        foreach = type(fn).__name__ == "CppFunction" and fn.name().startswith("Foreach")
        custom = "saved_tensors" in dir(fn)  # a Python autograd.Function: its backward decides
        best = max(slots.values(), default=0)
        for j, (child, input_nr) in enumerate(fn.next_functions):
            if child is None:
                continue
            level = slots.get(j % count, 0) if foreach else best
            if custom:
                level = min(level, 1)
            if level:
                child_slots = levels.setdefault(id(child), {})
                child_slots[input_nr] = max(child_slots.get(input_nr, 0), level)
            waiting[id(child)] -= 1
            if waiting[id(child)] == 0:
                ready.append(child)
    return reach


def refused_graph(tensor: torch.Tensor, reason: str) -> Graph:
    """A one-node Graph for a tensor whose grad_fn autograd refuses to build, saying so in ``unseen``.

    For the explorers and ``show_error``, which must show something rather than raise.

    Args:
        tensor: the tensor whose ``grad_fn`` autograd refused (only its shape is read).
        reason: autograd's reason, as ``grad_fn_of`` returns it.

    Raises:
        TypeError: ``tensor`` is not a tensor or ``reason`` not a str.
    """
    require_type(tensor, torch.Tensor, "tensor", "a torch.Tensor")
    require_type(reason, str, "reason", "a str")
    output = GraphNode(0, "output", "output", "output " + shape_text(tensor.shape), tuple(tensor.shape))
    unseen = (f"its grad_fn cannot be read, so its graph is unknown: {reason}",)
    return Graph((output,), (), 0, 1, False, 0, 0, 0, unseen)


def stale_saved_tensors(order, roots=None) -> list:
    """(fn, SavedTensor) for every stale saved tensor among the nodes ``order`` (breadth-first from
    ``roots``), as ``inplace_hazards`` finds them: each checkpoint's inputs once, and no ``CopySlices``
    that backward skips. For ``inplace_watch``, which walks several roots."""
    if not order:
        return []
    skipped = _skipped_copy_slices(order, roots)
    seen_frames: set = set()
    stale = []
    for fn in order:
        if fn.name().endswith("AccumulateGrad") or id(fn) in skipped:
            continue
        stale.extend((fn, saved) for saved in _saved_of(fn, seen_frames) if saved.stale)
    return stale


def grad_fn_of(tensor: torch.Tensor):
    """(grad_fn, None), or (None, autograd's reason) when autograd refuses to build it.

    A ``split()``/``unbind()`` output whose base was changed in place is such a case: reading its
    ``grad_fn`` raises "Output 0 of Split is a view and its base ... has been modified inplace".

    Raises:
        TypeError: ``tensor`` is not a tensor.
    """
    require_type(tensor, torch.Tensor, "tensor", "a torch.Tensor")
    try:
        return tensor.grad_fn, None
    except RuntimeError as error:
        return None, str(error).split(". ")[0]


def preview(tensor: torch.Tensor | None, max_values: int = 6) -> str | None:
    """A short text of a tensor's values (``[1.5, 2.0, …] (10 values)``), never the whole of a big tensor."""
    if tensor is None:
        return None
    if tensor.device.type == "meta":
        return "(meta: no values)"
    detached = tensor.detach()
    if detached.is_contiguous():
        first = detached.reshape(-1)[:max_values].tolist()
    else:  # reshape would copy the whole tensor: read only the first few elements, each by its index (work and
        # memory grow with max_values and the number of dimensions, never with the sizes: expand(10**8) is instant)
        count = min(max_values, detached.numel())
        first = [detached[unravel_index(position, detached.shape)].item() for position in range(count)]
    shown = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in first]
    if tensor.dim() == 0:
        return shown[0]
    more = f", … ({detached.numel()} values)" if detached.numel() > max_values else ""
    return "[" + ", ".join(shown) + more + "]"


def _kept_on_ctx(fn) -> tuple[KeptTensor, ...]:
    """The tensors a custom Function's node keeps as ``ctx`` attributes: each attribute that is a tensor, or a list,
    tuple or dict holding tensors (one level down). Reading them runs no user code. Other nodes keep none."""
    if not isinstance(fn, torch.autograd.function.BackwardCFunction):
        return ()
    found = []
    for name, value in vars(fn).items():
        if isinstance(value, torch.Tensor):
            found.append((f"ctx.{name}", value))
        elif isinstance(value, (list, tuple)):
            found.extend((f"ctx.{name}[{i}]", item) for i, item in enumerate(value) if isinstance(item, torch.Tensor))
        elif isinstance(value, dict):
            found.extend((f"ctx.{name}[{k!r}]", item) for k, item in value.items() if isinstance(item, torch.Tensor))
    kept = []
    for attribute, tensor in found:
        try:
            nbytes = tensor.untyped_storage().nbytes()
        except (RuntimeError, NotImplementedError):  # sparse and other layouts: no single storage
            nbytes = None
        kept.append(KeptTensor(attribute, tuple(tensor.shape), tensor.dtype, nbytes, _placement(tensor)))
    return tuple(kept)


def _leaf_label(variable: torch.Tensor, names: dict[int, str]) -> str:
    return names.get(id(variable), "leaf " + shape_text(variable.shape))


def require_graph_tensor(t, name: str = "t") -> torch.Tensor:
    """``require_tensor``, and not nested: a strided nested tensor passes the layout check but has no
    single shape (torch raises an internal error when asked for its sizes). Errors name the argument ``name``.

    Raises:
        TypeError: not a tensor.
        ValueError: sparse (or another layout) or nested.
    """
    tensor = require_tensor(t, name)
    if tensor.is_nested:
        raise ValueError(f"{name} must not be a nested tensor: it has no single shape; use .to_padded_tensor() first")
    return tensor


def _leaf_names(names) -> dict[int, str]:
    if names is None:
        return {}
    if not isinstance(names, dict):
        raise TypeError(
            f"names must be a dict from name to tensor (e.g. dict(model.named_parameters())), got {describe(names)}"
        )
    by_id = {}
    for key, value in names.items():
        require_type(key, str, "names keys", "str")
        require_type(value, torch.Tensor, f"names[{key!r}]", "a tensor")
        by_id[id(value)] = key
    return by_id


def _grad_fn_or_none(tensor: torch.Tensor):
    """``tensor.grad_fn``, or None where autograd refuses to build it (a ``split()`` output whose base changed)."""
    try:
        return tensor.grad_fn
    except RuntimeError:
        return None


def _with_saved_names(nodes: list, names: dict, fns: list) -> list:
    """``nodes`` (``fns`` their autograd nodes, after the output) with each saved tensor that is one of ``names``
    named and, when stale, tied to the node of the in-place write that changed it (see ``SavedTensor``)."""
    named = {}
    for name, tensor in names.items():
        placement = _placement(tensor)
        if placement is not None:
            named.setdefault(placement, (name, tensor))
    position_of = {id(fn): position for position, fn in enumerate(fns, start=1)}
    out = [nodes[0]]
    for node, saver in zip(nodes[1:], fns):
        renamed = []
        for saved in node.saved:
            name, tensor = named.get(saved.placement, (None, None))
            if tensor is None or tensor._version != saved.current_version:
                renamed.append(saved)
                continue
            editor = _grad_fn_or_none(tensor) if saved.stale else None
            # A write under no_grad leaves grad_fn as it was: only a node made after the saver is the write's.
            if editor is not None and editor._sequence_nr() > saver._sequence_nr():
                found = dict(edited_by_name=editor.name(), edited_by=position_of.get(id(editor)))
            else:
                found = {}
            renamed.append(dataclasses.replace(saved, name=name, **found))
        out.append(dataclasses.replace(node, saved=tuple(renamed)) if renamed != list(node.saved) else node)
    return out


def autograd_graph(t, names=None, max_nodes: int = DEFAULT_MAX_NODES) -> Graph:
    """Snapshot ``t``'s backward graph: nodes, edges, and every saved tensor's saved and current version.

    Building the snapshot does not change the graph: ``t.backward()`` works afterwards as before. It runs
    no user code and computes no gradient (hidden saved tensors are checked with gradients on the meta
    device; see the module docstring). Saved tensors of nodes beyond ``max_nodes`` are not read; the
    counts (``total_nodes``, ``counts``) are of the whole graph.

    Args:
        t: a tensor; usually the loss or an intermediate result with a ``grad_fn``.
        names: optional dict from name to tensor (``dict(model.named_parameters())``, ``{"x": x}``) used to
            label leaves and to name saved tensors (``SavedTensor.name``): a saved tensor is a named one when
            both cover the same elements of the same storage (offset, shape, strides) at the same version.
        max_nodes: keep at most this many nodes (the ones nearest ``t``); all are still counted.

    Returns:
        A frozen ``Graph`` whose node 0 is the output tensor ``t``; ``Graph.unseen`` lists what could not
        be checked (usually nothing).

    Raises:
        TypeError: ``t`` is not a tensor, ``names`` not a dict of tensors, ``max_nodes`` not an int.
        ValueError: ``t`` is sparse or nested, or ``max_nodes`` < 1.
        RuntimeError: torch's own, when autograd refuses to build ``t.grad_fn`` (a ``split()`` or
            ``unbind()`` output whose base was changed in place), as ``t.backward()`` would.
    """
    tensor = require_graph_tensor(t)
    require_positive_int(max_nodes, "max_nodes")
    leaf_names = _leaf_names(names)
    output_label = leaf_names.get(id(tensor), "output " + shape_text(tensor.shape))  # named: its Python name
    output_grad = tensor.grad if tensor.retains_grad else None
    output = GraphNode(
        0, "output", "output", output_label, tuple(tensor.shape), (), preview(tensor), preview(output_grad)
    )
    grad_fn = tensor.grad_fn  # raises torch's own error for a view autograd refuses (see refused_graph)
    if grad_fn is None:
        if tensor.requires_grad:  # a leaf: its whole graph is itself
            label = _leaf_label(tensor, leaf_names)
            leaf = GraphNode(0, "leaf", "leaf", label, tuple(tensor.shape), (), preview(tensor), preview(tensor.grad))
            return Graph((leaf,), (), 0, 1, False, 0, 1, 0)
        return Graph((output,), (), 0, 1, False, 0, 0, 0)
    every_fn, edges, total, total_edges, total_leaves = _walk(grad_fn, max_nodes - 1)
    fns = every_fn[: max_nodes - 1]  # node 0, the output, is one of max_nodes
    reach = _copy_slices_reach(every_fn) if any(f.name().endswith("CopySlices") for f in fns) else {}
    nodes = [output]
    seen_frames: set = set()
    unseen: list[str] = []
    for position, fn in enumerate(fns, start=1):
        variable = getattr(fn, "variable", None) if fn.name().endswith("AccumulateGrad") else None
        if isinstance(variable, torch.Tensor):
            nodes.append(
                GraphNode(
                    position,
                    "AccumulateGrad",
                    "leaf",
                    _leaf_label(variable, leaf_names),
                    tuple(variable.shape),
                    (),
                    preview(variable),
                    preview(variable.grad),
                )
            )
        else:
            saved = () if reach.get(id(fn)) == 0 else _saved_of(fn, seen_frames, unseen)
            if reach.get(id(fn)) == 1 and any(item.stale for item in saved):
                unseen.append(("below a custom Function", fn.name()))
            kept = _kept_on_ctx(fn)
            nodes.append(GraphNode(position, fn.name(), "backward", fn.name(), None, saved, kept=kept))
    if names:
        nodes = _with_saved_names(nodes, names, fns)
    shifted = ([(0, 1)] if fns else []) + [(a + 1, b + 1) for a, b in edges]
    return Graph(
        tuple(nodes),
        tuple(shifted),
        0,
        total + 1,
        total + 1 > len(nodes),
        total - total_leaves,
        total_leaves,
        total_edges + 1,
        _unseen_texts(unseen),
    )


@dataclass(frozen=True)
class HeldByGraph:
    """What a graph snapshot still holds once ``backward()`` has run through part of it (``held_by_graph``).

    ``freed`` counts the saved tensors backward freed that the graph names (a built-in node's ``self``, ``result``
    ...). ``freed_custom`` counts the custom Function nodes whose ``saved_tensors`` backward freed: how many tensors
    each had saved (none, for one that only kept tensors on ``ctx``) cannot be read once freed, so they are not in
    ``freed``. ``saved`` lists ``(node name, SavedTensor)`` for every saved
    tensor still held, readable and not freed: their nodes are the ones backward has not run through
    (``backward(inputs=...)`` and ``torch.autograd.grad(out, some_inputs)`` run only the nodes on the way to those
    inputs). ``kept`` lists ``(node name, KeptTensor)`` for every tensor a custom Function keeps on ``ctx``: no
    backward frees those. ``nbytes`` is the bytes of the distinct storages all of them keep alive (other tensors may
    hold some of those storages too).
    """

    freed: int
    saved: tuple[tuple[str, SavedTensor], ...]
    kept: tuple[tuple[str, KeptTensor], ...]
    nbytes: int
    freed_custom: int = 0


def held_by_graph(graph: Graph) -> HeldByGraph:
    """What ``graph`` still holds: saved tensors backward has not freed, and tensors kept on ``ctx`` (see
    ``HeldByGraph``), from the snapshot alone.

    Raises:
        TypeError: ``graph`` is not a Graph.
    """
    require_type(graph, Graph, "graph", "a Graph from autograd_graph")
    freed_items = [saved for node in graph.nodes for saved in node.saved if saved.freed]
    # a custom Function's freed saved_tensors is one entry whatever it had saved: autograd refuses to say how many
    freed_custom = sum(1 for saved in freed_items if _is_freed_custom_entry(saved))
    freed = len(freed_items) - freed_custom
    saved = tuple(
        (node.name, item)
        for node in graph.nodes
        for item in node.saved
        if not item.freed and item.storage_nbytes is not None
    )
    kept = tuple((node.name, item) for node in graph.nodes for item in node.kept)
    storages = {}
    for _, item in saved + kept:
        if item.storage_nbytes is not None:
            storages[item.placement[0] if item.placement else id(item)] = item.storage_nbytes
    return HeldByGraph(freed, saved, kept, sum(storages.values()), freed_custom)


def _is_freed_custom_entry(saved: SavedTensor) -> bool:
    """Whether ``saved`` is the one entry ``_saved_by_custom_function`` gives a custom Function whose saved tensors
    backward freed (their number is no longer readable: ``_raw_saved_tensors`` raises)."""
    return saved.freed and saved.attribute == "saved_tensors" and saved.shape is None


def custom_function_saver(node: str, attribute: str) -> str | None:
    """The custom ``autograd.Function`` (its class name) that saved this tensor with ``ctx.save_for_backward``, or
    None when a built-in node saved it.

    The difference matters for a stale saved tensor: a built-in node unpacks, and version-checks, every tensor it
    saved when backward reaches it, so backward raises there; a custom Function's saved tensors are checked only
    when its backward reads ``ctx.saved_tensors``, and one that never does runs fine.

    Args:
        node: the node's name (``GraphNode.name``, ``Hazard.node``): ``"TwoBackward"``, ``"ExpBackward0"``.
        attribute: the saved tensor's ``SavedTensor.attribute`` (``"saved_tensors[0]"``; inside a ``CopySlices``,
            ``"wrapped in-place op: TwoBackward saved_tensors[0]"``).

    Raises:
        TypeError: ``node`` or ``attribute`` is not a str.
    """
    require_type(node, str, "node", "a str")
    require_type(attribute, str, "attribute", "a str")
    if ": " in attribute:  # read inside a CopySlices: "<what>: <the custom Function's node> <its attribute>"
        inner, _, attribute = attribute.split(": ", 1)[1].partition(" ")
        node = inner
    # only a custom Function's node has saved_tensors (a built-in's are named self, other, result, ...)
    return node.removesuffix("Backward") if attribute.startswith("saved_tensors") else None


@dataclass(frozen=True)
class Hazard:
    """A saved tensor changed in place after it was saved: ``backward()`` raises when it reaches the node that
    saved it (when ``custom_function`` names a custom ``autograd.Function``, only if its backward reads
    ``ctx.saved_tensors``).
    """

    node: str  # the backward node that saved it, e.g. "ExpBackward0"
    node_id: int
    what: str  # e.g. "the result of exp", "input 'self' of mul"
    shape: tuple[int, ...] | None
    saved_version: int
    current_version: int
    explanation: str
    # Filled in only when ``watch_inplace`` was on (see inplace_watch.py): the line that saved the tensor
    # (a ``SourceLine``) and the recorded writes that changed it since (``InplaceWrite``s), in order.
    saved_at: object = field(default=None, repr=False)
    changed_at: tuple = field(default=(), repr=False)
    # The custom autograd.Function that saved it (``custom_function_saver``), None for a built-in node.
    custom_function: str | None = None

    def __str__(self) -> str:
        return self.explanation


class HazardList(list):
    """The list ``inplace_hazards`` returns: the ``Hazard``s, plus ``unseen``, what could not be checked.

    It is a plain list of hazards (``== []`` works). When ``unseen`` is not empty, an empty list means
    "nothing stale among what could be read", and its repr says so.
    """

    def __init__(self, hazards=(), unseen: tuple[str, ...] = ()):
        super().__init__(hazards)
        self.unseen = tuple(unseen)

    def __repr__(self) -> str:
        if not self.unseen:
            return super().__repr__()
        return f"{super().__repr__()} (not checked: {'; '.join(self.unseen)})"


def describe_saved(node: GraphNode, saved: SavedTensor) -> str:
    """Which tensor ``node`` saved, in words: "input 'self' of mul", "the result of exp", ...

    Raises:
        TypeError: ``node`` is not a GraphNode or ``saved`` not a SavedTensor.
    """
    require_type(node, GraphNode, "node", "a GraphNode")
    require_type(saved, SavedTensor, "saved", "a SavedTensor")
    op = node.forward_op or node.name
    if saved.attribute.startswith("checkpoint input"):
        return f"input {saved.attribute.rsplit(' ', 1)[-1]} of a checkpointed function"
    if node.name.endswith("CopySlices"):
        if ": " in saved.attribute:  # a custom Function's saved tensor, read inside the CopySlices
            inner, attribute = saved.attribute.split(": ", 1)[1].split(" ", 1)
            return (
                f"{attribute}, which {_forward_camel(inner)}.forward (applied in place to a view) saved "
                "with ctx.save_for_backward"
            )
        return "a tensor that an in-place operation on a view saved"
    if _forward_camel(node.name) == node.name.removesuffix("Backward") and node.name.endswith("Backward"):
        custom = node.name.removesuffix("Backward")  # a custom autograd.Function's node: "TwoBackward"
        which = saved.attribute
        if saved.output_nr is not None:
            which = f"{saved.attribute} (output {saved.output_nr} of {custom})"
        if saved.note.startswith("one of "):
            which = f"{saved.note.split(':')[0]} (whichever is output {saved.output_nr} of {custom})"
        return f"{which}, which {custom}.forward saved with ctx.save_for_backward"
    if saved.attribute.startswith("saved tensors"):  # read by calling the node (torch._foreach_*)
        return f"a tensor that {op} saved" + (f" ({saved.note})" if saved.note else "")
    if saved.is_output and saved.attribute == "result":
        return f"the result of {op}"
    if saved.is_output or saved.output_nr is not None:
        if saved.output_nr is None:
            return f"an output of {op} ('{saved.attribute}')"
        return f"output {saved.output_nr} ('{saved.attribute}') of {op}"
    return f"input '{saved.attribute}' of {op}"


def _hazard_explanation(node: GraphNode, saved: SavedTensor, what: str) -> str:
    dtype = dtype_name(saved.dtype) if saved.dtype else "tensor"
    if saved.shape is None:  # not readable (e.g. on the meta device)
        kind = f"a {dtype} tensor"
    else:
        kind = (
            f"a {dtype} {shape_text(saved.shape)}"
            if not saved.shape
            else f"a {dtype} tensor of shape {shape_text(saved.shape)}"
        )
    raises = f"so backward() raises 'modified by an inplace operation' when it reaches {node.name}"
    if saved.attribute.startswith("checkpoint input"):
        return (
            f"torch.utils.checkpoint kept {what} ({kind}) at version {saved.saved_version} to recompute the "
            f"region in backward (first needed by {node.name}); an in-place operation has since changed it "
            f"to version {saved.current_version}, {raises}."
        )
    custom = custom_function_saver(node.name, saved.attribute)
    if custom is not None:  # checked only when its backward unpacks ctx.saved_tensors
        raises += f" if {custom}.backward reads ctx.saved_tensors (a backward that never reads them runs fine)"
    return (
        f"{node.name} saved {what} ({kind}) at version "
        f"{saved.saved_version} to compute gradients; an in-place operation has since changed it "
        f"to version {saved.current_version}, {raises}."
    )


def inplace_hazards(t) -> HazardList:
    """Every saved tensor in ``t``'s backward graph that was modified in place after being saved.

    The list is empty exactly when ``t.backward()`` would not raise autograd's "modified by an inplace
    operation" error (tested against real ``backward()`` on thousands of random programs, with
    checkpoints, ``torch._foreach_*`` ops, multi-output ops and custom Functions), except where its
    ``unseen`` says something could not be checked, and except that a hazard whose ``custom_function`` is set
    raises only if that Function's backward reads ``ctx.saved_tensors``. ``backward()`` raises when it reaches
    a hazard's node: ``torch.autograd.grad`` or ``backward(inputs=...)`` that never reach it do not. Nothing is
    changed and no user code runs (a custom Function's backward included); nodes whose saved tensors Python
    cannot read are called with meta gradients, which may compute briefly on their own saved tensors (see the
    module docstring).

    When ``watch_inplace`` is on (or was, for the last block that ran), each hazard also names the line
    that saved the tensor and every line that changed it since (``saved_at``, ``changed_at``, and the
    same in its explanation).

    Args:
        t: a tensor with a backward graph (any tensor is accepted; one without a graph has no hazards).

    Returns:
        A ``HazardList`` of ``Hazard``, nearest the output first; its ``unseen`` lists what could not be
        checked (a C++ node's saved tensors, tensors a checkpointed function reads from outside its
        arguments, tensors packed by other ``saved_tensors_hooks``).

    Raises:
        TypeError: ``t`` is not a tensor.
        ValueError: ``t`` is sparse or nested.
        RuntimeError: torch's own, when autograd refuses to build ``t.grad_fn`` (see ``autograd_graph``).
    """
    tensor = require_graph_tensor(t)
    graph = autograd_graph(tensor, max_nodes=2**62)
    hazards = []
    for node in graph.nodes:
        for saved in node.saved:
            if not saved.stale:
                continue
            what = describe_saved(node, saved)
            explanation = _hazard_explanation(node, saved, what)
            hazards.append(
                Hazard(
                    node.name,
                    node.id,
                    what,
                    saved.shape,
                    saved.saved_version,
                    saved.current_version,
                    explanation,
                    custom_function=custom_function_saver(node.name, saved.attribute),
                )
            )
    if hazards:
        from .inplace_watch import attach_source_lines  # only does something when watch_inplace was on

        hazards = attach_source_lines(tensor, hazards)
    # A saved piece of a multi-output view (split, unbind, chunk) whose base changed in place: autograd refuses
    # to unpack it with its own error and keeps no version to compare, so it is named as unchecked, not guessed.
    pieces = _first_names(
        f"{node.name}'s {saved.attribute}"
        for node in graph.nodes
        for saved in node.saved
        if _MULTI_OUTPUT_VIEW in saved.note
    )
    refused = (
        (
            f"backward would raise torch's 'is a view and its base ... has been modified inplace' for {pieces}: a "
            "saved piece of split/unbind/chunk whose base changed in place (no saved version to compare)",
        )
        if pieces
        else ()
    )
    return HazardList(hazards, graph.unseen + refused)
