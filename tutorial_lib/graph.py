"""The backward graph as plain data: nodes, edges, saved tensors and their versions.

``autograd_graph(t)`` walks ``t.grad_fn`` and ``next_functions`` and, for every node, the tensors it saved
for backward. The version check is autograd's own: each saved tensor is unpacked the way ``backward()``
unpacks it, and when autograd refuses (the "modified by an inplace operation ... is at version N; expected
version M" error) the two versions are read from its message. So ``inplace_hazards`` reports exactly the
saved tensors that would make ``backward()`` fail, without running backward (one exception: a custom
``autograd.Function`` whose backward never reads ``ctx.saved_tensors`` does not fail, but its stale saved
tensors are still reported, since only running its Python code could tell). Unpacking is read-only:
``backward()`` still works afterwards. Tensors packed by ``saved_tensors_hooks`` (checkpointing,
offloading) are listed but not unpacked, since unpacking them would run the hook.

One node hides its saved tensors: ``CopySlices``, which autograd puts on a tensor when a view of it is
changed in place (``y[0].exp_()``). It wraps the in-place op's own backward node, which is neither among
``next_functions`` nor readable from Python; the only way to run its version check is to call the node
the way backward does (see ``_saved_inside_copy_slices``).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

import torch

from ._checks import describe, require_positive_int, require_tensor, shape_text

#: ``autograd_graph`` keeps at most this many nodes unless told otherwise (it still counts them all).
DEFAULT_MAX_NODES = 2000

_VERSION_ERROR = re.compile(r"is at version (\d+); expected version (\d+) instead")
_FREED_ERROR = "after they have already been freed"
_CREATOR = re.compile(r"which is output \d+ of (\w+),")
_TYPE_AND_SHAPE = re.compile(r"\[torch\.(?:cuda\.)?(\w+)Tensor \[([\d, ]*)\]\]")
_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


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

    @property
    def stale(self) -> bool:
        return (
            self.saved_version is not None
            and self.current_version is not None
            and self.saved_version != self.current_version
        )


@dataclass(frozen=True)
class GraphNode:
    """A node of the backward graph: a backward function, a leaf (``AccumulateGrad``) or the output tensor.

    ``kind`` is ``"backward"``, ``"leaf"`` or ``"output"``; ``label`` is what a picture prints (the
    leaf's name when one was given, else its shape).
    """

    id: int
    name: str
    kind: str
    label: str
    shape: tuple[int, ...] | None = None
    saved: tuple[SavedTensor, ...] = ()
    value: str | None = None  # leaves and the output: their values, shortened (see ``preview``)
    grad: str | None = None  # leaves (and a retain_grad output): ``.grad`` shortened, None before backward

    @property
    def forward_op(self) -> str | None:
        """The forward operation a backward node differentiates (``ExpBackward0`` -> ``exp``)."""
        if self.kind != "backward":
            return None
        return _BACKWARD_SUFFIX.sub("", self.name).lower() or self.name


@dataclass(frozen=True)
class Graph:
    """A snapshot of a backward graph. ``edges`` run from a node to the node its gradient flows to next.

    ``total_nodes`` counts every node; when it exceeds ``max_nodes`` only the ``max_nodes`` nearest the
    output are kept, ``truncated`` is True, and edges to dropped nodes are left out.
    """

    nodes: tuple[GraphNode, ...]
    edges: tuple[tuple[int, int], ...]
    root: int
    total_nodes: int
    truncated: bool

    def node(self, node_id: int) -> GraphNode:
        return self.nodes[node_id]

    def find(self, name: str) -> list[GraphNode]:
        """The nodes with this name (``"MulBackward0"``) or label."""
        return [n for n in self.nodes if n.name == name or n.label == name]

    def __repr__(self) -> str:
        names = ", ".join(n.name for n in self.nodes[:8]) + (", …" if len(self.nodes) > 8 else "")
        note = f", showing {len(self.nodes)} of {self.total_nodes} nodes" if self.truncated else ""
        return f"Graph({len(self.nodes)} nodes, {len(self.edges)} edges{note}: {names})"


def _dtype_from_legacy(type_name: str):
    legacy = {
        "Float": torch.float32, "Double": torch.float64, "Half": torch.float16, "BFloat16": torch.bfloat16,
        "Long": torch.int64, "Int": torch.int32, "Short": torch.int16, "Char": torch.int8,
        "Byte": torch.uint8, "Bool": torch.bool, "ComplexFloat": torch.complex64,
        "ComplexDouble": torch.complex128,
    }
    return legacy.get(type_name)


def _versions_from(error: RuntimeError):
    """(current, saved) versions from autograd's in-place error message, or None for another error."""
    match = _VERSION_ERROR.search(str(error))
    return (int(match.group(1)), int(match.group(2))) if match else None


def _inspect_saved(raw, unpack, attribute: str, is_output: bool) -> SavedTensor:
    """Read one saved tensor's versions the way backward would, without changing anything.

    ``raw`` is autograd's SavedTensor (for shape, dtype and hooks); ``unpack`` unpacks it exactly as
    backward does (through the node, which matters for saved outputs).
    """
    try:
        data = raw.data
    except RuntimeError:
        data = None
    shape = tuple(data.shape) if isinstance(data, torch.Tensor) else None
    dtype = data.dtype if isinstance(data, torch.Tensor) else None
    if getattr(raw, "unpack_hook", None) is not None:
        return SavedTensor(attribute, is_output, shape, dtype, None, None, hooked=True)
    try:
        unpacked = unpack()
    except RuntimeError as error:
        message = str(error)
        versions = _versions_from(error)
        if versions:
            if shape is None:
                match = _TYPE_AND_SHAPE.search(message)
                if match:
                    dtype = _dtype_from_legacy(match.group(1))
                    shape = tuple(int(s) for s in match.group(2).split(",") if s.strip())
            current, saved = versions
            return SavedTensor(attribute, is_output, shape, dtype, saved, current)
        if _FREED_ERROR in message:
            return SavedTensor(attribute, is_output, shape, dtype, None, None, freed=True)
        return SavedTensor(attribute, is_output, shape, dtype, None, None, note=message.split(".")[0])
    if not isinstance(unpacked, torch.Tensor):  # an undefined (not needed) saved variable
        return SavedTensor(attribute, is_output, None, None, None, None)
    version = unpacked._version
    return SavedTensor(attribute, is_output, tuple(unpacked.shape), unpacked.dtype, version, version)


def _raw_attribute(fn, attr: str):
    try:
        return getattr(fn, attr), None
    except RuntimeError as error:  # some nodes refuse once their buffers are freed
        if _FREED_ERROR in str(error):
            return None, error
        raise


def _saved_by_custom_function(fn) -> tuple[SavedTensor, ...]:
    """Tensors saved with ctx.save_for_backward in a custom autograd.Function.

    ``fn.saved_tensors`` unpacks them all, exactly as ``ctx.saved_tensors`` in backward does, and raises
    at the first stale one. A saved input can also be unpacked on its own (``raw.unpack()``); a saved
    output cannot (autograd needs the node to rebuild it, and refuses without it), so when the whole
    unpack fails a stale output is only known by elimination: the first saved tensor that can have raised
    autograd's error. Outputs after that point keep an unknown saved version (their current one is known).
    """
    raws, error = _raw_attribute(fn, "_raw_saved_tensors")
    if error is not None:
        return (SavedTensor("saved_tensors", False, None, None, None, None, freed=True),)
    raws = tuple(raws or ())
    names = [f"saved_tensors[{index}]" for index in range(len(raws))]
    try:
        unpacked = fn.saved_tensors
    except RuntimeError as whole_error:
        if _versions_from(whole_error) is None:
            return tuple(_inspect_saved(raw, raw.unpack, name, False) for raw, name in zip(raws, names))
        return _custom_saved_by_elimination(raws, names, whole_error, fn.name().removesuffix("Backward"))
    saved = []
    for name, tensor in zip(names, unpacked):
        if not isinstance(tensor, torch.Tensor):  # ctx.save_for_backward(None)
            saved.append(SavedTensor(name, False, None, None, None, None))
            continue
        # an unpacked output comes back with this very node as its grad_fn; an input with its own
        saved.append(
            SavedTensor(name, tensor.grad_fn is fn, tuple(tensor.shape), tensor.dtype, tensor._version, tensor._version)
        )
    return tuple(saved)


def _custom_saved_by_elimination(raws, names, first_error: RuntimeError, forward_name: str):
    """Per-tensor versions when ``fn.saved_tensors`` raised ``first_error`` at its first stale tensor."""
    current0, saved0 = _versions_from(first_error)
    # The message says whose output the stale tensor is: "... which is output 0 of Exp, is at version".
    creator = _CREATOR.search(str(first_error))
    from_output = creator is not None and creator.group(1) == forward_name
    saved = []
    for raw, name in zip(raws, names):
        inspected = _inspect_saved(raw, raw.unpack, name, False)
        if inspected.note:  # only the node can unpack it: an output (or an input detached in place)
            try:
                current = raw.data._version  # shares the tensor's version counter
            except RuntimeError:
                current = None
            inspected = SavedTensor(name, True, inspected.shape, inspected.dtype, None, current, note=inspected.note)
        saved.append(inspected)

    def first_stale(strict: bool):
        """Index of the tensor the error came from: the first one that can have raised it."""
        for index, item in enumerate(saved):
            if item.stale:  # a stale input: it raised, unless the message names an output
                matches = (item.current_version, item.saved_version) == (current0, saved0)
                return index if matches and not (strict and from_output) else None
            if item.note and item.current_version == current0 and not (strict and not from_output):
                return index
        return None

    source = first_stale(strict=True)
    source = first_stale(strict=False) if source is None else source
    resolved = []
    for index, item in enumerate(saved):
        if item.note and source is not None and index < source:  # not stale, or backward would stop here
            item = SavedTensor(item.attribute, True, item.shape, item.dtype, item.current_version, item.current_version)
        elif item.note and index == source:
            item = SavedTensor(item.attribute, True, item.shape, item.dtype, saved0, current0)
        elif item.note:
            item = SavedTensor(
                item.attribute, True, item.shape, item.dtype, None, item.current_version,
                note="saved version unknown: backward stops at an earlier stale saved tensor",
            )
        resolved.append(item)
    return tuple(resolved)


def _saved_inside_copy_slices(fn) -> tuple[SavedTensor, ...]:
    """The stale tensor (if any) saved by the in-place op that a ``CopySlices`` node wraps.

    That op's backward node is hidden inside CopySlices (not in ``next_functions``, no Python
    attributes), so its saved tensors cannot be read. Calling CopySlices with a zero gradient runs
    exactly the unpacking backward would: it raises autograd's version error for the first stale one,
    or the "already freed" error after backward. The call runs under no_grad (as backward does), its
    result is thrown away, it runs no node hooks and releases nothing; it does compute one gradient the
    size of the viewed tensor (and, for a custom Function's in-place op, runs its Python backward).
    Nothing is listed when all is well: the wrapped op's saved tensors cannot be enumerated.
    """
    try:
        metadata = fn._input_metadata[0]
        zero = torch.zeros(metadata.shape, dtype=metadata.dtype, device=metadata.device)
    except (AttributeError, IndexError, RuntimeError, TypeError) as error:  # private API: be ready for change
        return (SavedTensor("wrapped in-place op", False, None, None, None, None, note=f"not inspected: {error}"),)
    try:
        with torch.no_grad():
            fn(zero)
    except RuntimeError as error:
        message = str(error)
        versions = _versions_from(error)
        if versions:
            match = _TYPE_AND_SHAPE.search(message)
            dtype = _dtype_from_legacy(match.group(1)) if match else None
            shape = tuple(int(s) for s in match.group(2).split(",") if s.strip()) if match else None
            current, saved = versions
            return (SavedTensor("wrapped in-place op", False, shape, dtype, saved, current),)
        if _FREED_ERROR in message:
            return (SavedTensor("wrapped in-place op", False, None, None, None, None, freed=True),)
        return (SavedTensor("wrapped in-place op", False, None, None, None, None, note=message.split(".")[0]),)
    return ()


def _saved_of(fn) -> tuple[SavedTensor, ...]:
    if fn.name().endswith("CopySlices"):  # "torch::autograd::CopySlices"
        return _saved_inside_copy_slices(fn)
    if {"_raw_saved_tensors", "saved_tensors"} <= set(dir(fn)):
        return _saved_by_custom_function(fn)
    saved = []
    for attr in sorted(dir(fn)):
        if not attr.startswith("_raw_saved_"):
            continue
        short = attr.removeprefix("_raw_saved_")
        is_output = short.startswith("result")
        raw, error = _raw_attribute(fn, attr)
        if error is not None:
            saved.append(SavedTensor(short, is_output, None, None, None, None, freed=True))
        elif isinstance(raw, (list, tuple)):
            for index, item in enumerate(raw):
                if item is not None:
                    saved.append(_inspect_saved(item, item.unpack, f"{short}[{index}]", is_output))
        elif raw is not None:
            inspected = _inspect_saved(raw, lambda: getattr(fn, "_saved_" + short), short, is_output)
            if inspected.shape is not None or inspected.freed or inspected.hooked:
                saved.append(inspected)
    return tuple(saved)


def _walk(root_fn, keep: int):
    """Breadth-first over grad_fn objects. Returns (kept fns in order, edges among kept, total count)."""
    index: dict[int, int] = {}
    order: list = []  # holds every fn object, so ids stay valid while we walk
    edges: list[tuple[int, int]] = []
    queue = deque([root_fn])
    index[id(root_fn)] = 0
    order.append(root_fn)
    while queue:
        fn = queue.popleft()
        for next_fn, _ in fn.next_functions:
            if next_fn is None:
                continue
            if id(next_fn) not in index:
                index[id(next_fn)] = len(order)
                order.append(next_fn)
                queue.append(next_fn)
            edges.append((index[id(fn)], index[id(next_fn)]))
    kept_edges = [(a, b) for a, b in edges if a < keep and b < keep]
    return order[:keep], kept_edges, len(order)


def preview(tensor: torch.Tensor | None, max_values: int = 6) -> str | None:
    """A short text of a tensor's values (``[1.5, 2.0, …] (10 values)``), never the whole of a big tensor."""
    if tensor is None:
        return None
    if tensor.device.type == "meta":
        return "(meta: no values)"
    flat = tensor.detach().reshape(-1)
    shown = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in flat[:max_values].tolist()]
    if tensor.dim() == 0:
        return shown[0]
    more = f", … ({flat.numel()} values)" if flat.numel() > max_values else ""
    return "[" + ", ".join(shown) + more + "]"


def _leaf_label(variable: torch.Tensor, names: dict[int, str]) -> str:
    return names.get(id(variable), "leaf " + shape_text(variable.shape))


def _require_graph_tensor(t) -> torch.Tensor:
    """``require_tensor``, and not nested: a strided nested tensor passes the layout check but has no
    single shape (torch raises an internal error when asked for its sizes)."""
    tensor = require_tensor(t, "t")
    if tensor.is_nested:
        raise ValueError("t must not be a nested tensor: it has no single shape; use .to_padded_tensor() first")
    return tensor


def _check_names(names) -> dict[int, str]:
    if names is None:
        return {}
    if not isinstance(names, dict):
        raise TypeError(f"names must be a dict from name to tensor (e.g. dict(model.named_parameters())), got {describe(names)}")
    by_id = {}
    for key, value in names.items():
        if not isinstance(key, str):
            raise TypeError(f"names keys must be str, got {describe(key)}")
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"names[{key!r}] must be a tensor, got {describe(value)}")
        by_id[id(value)] = key
    return by_id


def autograd_graph(t, names=None, max_nodes: int = DEFAULT_MAX_NODES) -> Graph:
    """Snapshot ``t``'s backward graph: nodes, edges, and every saved tensor's saved and current version.

    Building the snapshot does not change the graph: ``t.backward()`` works afterwards as before.

    Args:
        t: a tensor; usually the loss or an intermediate result with a ``grad_fn``.
        names: optional dict from name to tensor (``dict(model.named_parameters())``, ``{"x": x}``) used to
            label leaves.
        max_nodes: keep at most this many nodes (the ones nearest ``t``); all are still counted.

    Returns:
        A frozen ``Graph`` whose node 0 is the output tensor ``t``.

    Raises:
        TypeError: ``t`` is not a tensor, ``names`` not a dict of tensors, ``max_nodes`` not an int.
        ValueError: ``t`` is sparse or nested, or ``max_nodes`` < 1.
    """
    tensor = _require_graph_tensor(t)
    require_positive_int(max_nodes, "max_nodes")
    leaf_names = _check_names(names)
    output_label = "output " + shape_text(tensor.shape)
    output_grad = tensor.grad if tensor.retains_grad else None
    output = GraphNode(0, "output", "output", output_label, tuple(tensor.shape), (), preview(tensor), preview(output_grad))
    if tensor.grad_fn is None:
        if tensor.requires_grad:  # a leaf: its whole graph is itself
            label = _leaf_label(tensor, leaf_names)
            leaf = GraphNode(0, "leaf", "leaf", label, tuple(tensor.shape), (), preview(tensor), preview(tensor.grad))
            return Graph((leaf,), (), 0, 1, False)
        return Graph((output,), (), 0, 1, False)
    fns, edges, total = _walk(tensor.grad_fn, max_nodes - 1)  # node 0, the output, is one of max_nodes
    nodes = [output]
    for position, fn in enumerate(fns, start=1):
        variable = getattr(fn, "variable", None) if fn.name().endswith("AccumulateGrad") else None
        if isinstance(variable, torch.Tensor):
            nodes.append(
                GraphNode(
                    position, "AccumulateGrad", "leaf", _leaf_label(variable, leaf_names), tuple(variable.shape),
                    (), preview(variable), preview(variable.grad),
                )
            )
        else:
            nodes.append(GraphNode(position, fn.name(), "backward", fn.name(), None, _saved_of(fn)))
    shifted = ([(0, 1)] if fns else []) + [(a + 1, b + 1) for a, b in edges]
    return Graph(tuple(nodes), tuple(shifted), 0, total + 1, total + 1 > len(nodes))


@dataclass(frozen=True)
class Hazard:
    """A saved tensor changed in place after it was saved: ``backward()`` through it would raise."""

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

    def __str__(self) -> str:
        return self.explanation


def _describe_saved(node: GraphNode, saved: SavedTensor) -> str:
    op = node.forward_op or node.name
    if node.name.endswith("CopySlices"):
        return "a tensor that an in-place operation on a view saved"
    if node.name.endswith("Backward") and not node.name.endswith("Backward0"):
        return f"{saved.attribute}, which {node.name.removesuffix('Backward')}.forward saved with ctx.save_for_backward"
    if saved.is_output:
        return f"the result of {op}"
    return f"input '{saved.attribute}' of {op}"


def inplace_hazards(t) -> list[Hazard]:
    """Every saved tensor in ``t``'s backward graph that was modified in place after being saved.

    The list is empty exactly when ``t.backward()`` would not raise autograd's "modified by an inplace
    operation" error (tested against real ``backward()`` on hundreds of random programs). Nothing is run
    or changed.

    When ``watch_inplace`` is on (or was, for the last block that ran), each hazard also names the line
    that saved the tensor and every line that changed it since (``saved_at``, ``changed_at``, and the
    same in its explanation).

    Args:
        t: a tensor with a backward graph (any tensor is accepted; one without a graph has no hazards).

    Returns:
        A list of ``Hazard``, nearest the output first.

    Raises:
        TypeError: ``t`` is not a tensor.
        ValueError: ``t`` is sparse or nested.
    """
    tensor = _require_graph_tensor(t)
    graph = autograd_graph(tensor, max_nodes=2**62)
    hazards = []
    for node in graph.nodes:
        for saved in node.saved:
            if not saved.stale:
                continue
            what = _describe_saved(node, saved)
            dtype = str(saved.dtype).removeprefix("torch.") if saved.dtype else "tensor"
            if saved.shape is None:  # not readable (e.g. on the meta device)
                kind = f"a {dtype} tensor"
            else:
                kind = f"a {dtype} {shape_text(saved.shape)}" if not saved.shape else f"a {dtype} tensor of shape {shape_text(saved.shape)}"
            explanation = (
                f"{node.name} saved {what} ({kind}) at version "
                f"{saved.saved_version} to compute gradients; an in-place operation has since changed it "
                f"to version {saved.current_version}, so backward() would raise 'modified by an inplace "
                f"operation'."
            )
            hazards.append(
                Hazard(node.name, node.id, what, saved.shape, saved.saved_version, saved.current_version, explanation)
            )
    if hazards:
        from .inplace_watch import _with_lines  # only does something when watch_inplace was on

        hazards = _with_lines(tensor, hazards)
    return hazards
