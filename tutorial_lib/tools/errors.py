"""``show_error``: run a function and show what went wrong compactly: the exception's type and message, and,
when autograd refuses to go backward through a tensor changed in place (or a second time), the backward graph
with the stale or freed saved tensor marked.

For the in-place error the HTML marks the three parts of torch's message (which tensor, which operation torch
names, which versions) and explains each, naming the box of the picture that saved the tensor.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, replace

import torch

from ..common.checks import describe, require_type, shape_text
from ..common.text import dtype_name, short_op_name, strip_hint
from ..facts.graph import (
    FREED_ERROR_SECOND_BACKWARD,
    VERSION_ERROR,
    autograd_graph,
    error_shape_and_dtype,
    error_versions,
    grad_fn_of,
    inplace_hazards,
    require_graph_tensor,
    tensor_in_error,
)
from ..pictures import render_mpl
from ..pictures.graph_picture import graph_scene
from ..pictures.graph_placement import PAD_X
from ..pictures.palette import MUTED, SANS, STALE, tint
from ..pictures.scene import FAMILIES, Rect, Scene, Style, Text, size_of

# Where the message names the operation ("output 0 of Exp", "output 0 of torch::autograd::CopySlices"); the
# tensor ("[torch.FloatTensor [3]]", "[CPUComplexDoubleType [3]]") is found and read by facts.graph.
_CREATOR_IN_MESSAGE = re.compile(r"(?<=which is )output (\d+) of ([\w:]+)(?=,)")
#: A part's highlight: the palette's stale/in-place colour (every part is about the changed tensor); the parts are
#: told apart by their numbers, which the picture repeats (① ② ③) where each part is drawn.
_PART_LOOK = f"background:{tint(STALE, 0.15)};border-bottom:2px solid {STALE}"
_CIRCLED = "①②③"
#: The style of the numbers the picture puts beside what each part of the message names: bold, and no taller than a
#: chip's line (8.6 points), since the tensor's and the versions' marks sit on adjacent rows.
_MARK_SIZE = 9.0
_PART_MARK_STYLE = Style(family=SANS, size=_MARK_SIZE, weight="bold", color=STALE, halo=True, zorder=8)
_HAZARD_GAP, _MARK_GAP = 3.0, 3.0  # the hazard border sits 3 points outside a box; a mark 3 points from its target


@dataclass(frozen=True)
class MessagePart:
    """One part of autograd's in-place error message, where it is in the message and what it means.

    ``kind`` is ``"tensor"`` ("[torch.FloatTensor [3]]": the changed tensor's dtype and shape), ``"creator"``
    ("output 0 of Exp": the operation torch names for it) or ``"versions"`` ("is at version 1; expected
    version 0"); ``node_id`` is the graph node that saved the tensor when the graph is known, else None.
    """

    kind: str
    text: str
    start: int
    end: int
    explanation: str
    node_id: int | None = None


class ErrorReport:
    """What ``show_error`` saw: the exception's type and message, and a picture when one helps.

    Attributes:
        raised: whether the function raised.
        exception_type: the exception's class name (``"RuntimeError"``), or None.
        message: the exception's message without autograd's anomaly-detection hint, or None.
        exception: the exception object itself, or None.
        result: what the function returned when it did not raise.
        hazards: ``Hazard`` list of the graph drawn (empty without a graph).
        figure: the graph picture (a matplotlib Figure) or None.
        summary: one line of deterministic text saying all of the above.
        parts: the ``MessagePart``s of an in-place error's message, in message order (empty for other errors).
    """

    def __init__(self, raised, exception, message, result, hazards, figure, summary, parts=()):
        self.raised = raised
        self.exception = exception
        self.exception_type = type(exception).__name__ if exception is not None else None
        self.message = message
        self.result = result
        self.hazards = hazards
        self.figure = figure
        self.summary = summary
        self.parts = tuple(parts)

    def __repr__(self) -> str:
        return self.summary

    def _repr_html_(self) -> str:
        sans, mono = ", ".join(FAMILIES["sans"]), ", ".join(FAMILIES["mono"])
        if not self.raised:
            return f"<div style='font-family:{mono}'>✓ {html.escape(self.summary)}</div>"
        explained = ""
        if self.parts:
            items = "".join(
                f"<li style='margin:2px 0'>{_marked(part, number)} {html.escape(part.explanation)}</li>"
                for number, part in enumerate(self.parts, start=1)
            )
            explained = f"<ul style='margin:4px 0;padding-left:4px;list-style:none;font-family:{sans}'>{items}</ul>"
        why = "".join(f"<li>{html.escape(h.explanation)}</li>" for h in self.hazards)
        why = f"<div style='font-family:{sans}'>Why:<ul style='margin:2px 0'>{why}</ul></div>" if why else ""
        marked = (
            any(ident.startswith("part:") for ident in self.figure.scene.ids()) if self.figure is not None else False
        )
        picture = (
            f"<div style='color:{MUTED};font-family:{sans}'>The graph is drawn below"
            + ("; ① ② ③ in it sit beside what the parts of the message marked ① ② ③ name." if marked else ".")
            + "</div>"
            if self.figure is not None
            else ""
        )
        return (
            f"<div style='border-left:4px solid {STALE};padding:4px 8px;font-size:13px;line-height:1.4'>"
            f"<div style='font-family:{mono};white-space:pre-wrap'><b>{html.escape(self.exception_type)}</b>: "
            f"{_marked_message(self.message, self.parts)}</div>{explained}{why}{picture}</div>"
        )

    def _ipython_display_(self) -> None:
        # The message as HTML, then the figure as its own output: nbval compares the text and skips
        # the PNG, so a stored notebook does not depend on pixels.
        from IPython.display import display

        display({"text/html": self._repr_html_(), "text/plain": self.summary}, raw=True)
        if self.figure is not None:
            display(self.figure)


def _tensor_for_graph(fn, args, graph_of):
    if graph_of is not None:
        require_type(graph_of, torch.Tensor, "graph_of", "a torch.Tensor or None")
        return require_graph_tensor(graph_of, "graph_of")
    owner = getattr(fn, "__self__", None)  # show_error(out.backward)
    if isinstance(owner, torch.Tensor):
        return owner
    for arg in args:  # show_error(torch.autograd.backward, out)
        if isinstance(arg, torch.Tensor) and grad_fn_of(arg)[0] is not None:
            return arg
    return None


def show_error(fn, *args, graph_of=None, names=None, **kwargs) -> ErrorReport:
    """Run ``fn(*args, **kwargs)`` and show what went wrong compactly: type, message, and a picture.

    For autograd's in-place error ("… is at version 1; expected version 0 instead") the picture is the
    backward graph with the stale saved tensor marked ``⚠``; for "backward through the graph a second
    time" it is the graph with its freed saved tensors. No traceback is printed.

    Args:
        fn: a callable, e.g. ``out.backward`` or ``lambda: out.sum().backward()``.
        *args: passed to ``fn``.
        graph_of: the tensor whose graph to draw. Defaults to ``fn``'s tensor (``out.backward``) or the
            first positional argument that has a ``grad_fn``.
        names: dict from name to tensor labelling the leaves in the picture.
        **kwargs: passed to ``fn``.

    Returns:
        An ``ErrorReport`` (``.exception_type``, ``.message``, ``.figure``, ``.summary``), which displays
        itself in Jupyter.

    Raises:
        TypeError: ``fn`` is not callable, or ``graph_of``/``names`` has the wrong type.
        ValueError: ``graph_of`` is a sparse or nested tensor (it has no graph to draw).
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable (e.g. out.backward or a lambda), got {describe(fn)}")
    if names is not None and not isinstance(names, dict):
        raise TypeError(f"names must be a dict from name to tensor or None, got {describe(names)}")
    target = _tensor_for_graph(fn, args, graph_of)
    # The graph as it was before fn ran: a failing backward() frees the saved tensors of the nodes it
    # already went through, so a snapshot afterwards would show them freed.
    refused = None
    try:
        before = autograd_graph(target, names=names) if target is not None else None
        before_hazards = inplace_hazards(target) if target is not None else []
    except RuntimeError as error:  # autograd refuses to build target's grad_fn: report fn's outcome anyway
        refused = str(error).split(". ")[0]
        target, before, before_hazards = None, None, []
    try:
        result = fn(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - showing any exception is the point
        message = strip_hint(error)
        name = type(error).__name__
        graph, hazards = None, []
        version_error = VERSION_ERROR.search(message) is not None
        if target is not None and (version_error or FREED_ERROR_SECOND_BACKWARD in message):
            if version_error and before_hazards:
                graph, hazards = before, before_hazards
            else:  # fn itself changed the graph (an in-place op, then backward): show it as it is now
                graph, hazards = autograd_graph(target, names=names), inplace_hazards(target)
        notes = _creator_note(message, graph, hazards) if version_error and graph is not None else None
        # ids only where the text names boxes by them (the in-place error's parts); the chip of the changed tensor
        # says, under it, the operation torch names. Tints in ``names``' order, as draw_graph's and the stepper's
        # (first bound first): the same program gets the same colours in each.
        marks = {"show_ids": version_error, "chip_notes": notes, "colour_order": list(names or {})}
        scene = graph_scene(graph, **marks) if graph is not None else None
        parts = message_parts(message, hazards, scene) if version_error else ()
        figure = _figure(_with_part_marks(scene, parts)) if scene is not None else None
        summary = f"{name}: {message}"
        if hazards:
            summary += " Why: " + " ".join(h.explanation for h in hazards)
        if figure is not None:
            summary += " Picture: " + figure.summary
        elif refused is not None:
            summary += f" (no picture: the graph of graph_of cannot be read: {refused})"
        elif target is None and version_error:
            summary += " (pass graph_of=<the tensor you called backward on> to see its graph)"
        return ErrorReport(True, error, message, None, hazards, figure, summary, parts)
    summary = f"No error: {getattr(fn, '__name__', 'fn')} ran without raising and returned {_returned(result)}."
    return ErrorReport(False, None, None, result, [], None, summary)


def _figure(scene: Scene):
    """The picture drawn with matplotlib, with ``summary`` (its one line) and ``scene`` as ``draw_graph`` gives."""
    figure = render_mpl.render(scene)
    figure.summary = scene.title
    figure.scene = scene
    return render_mpl.with_summary(figure, scene.title)  # a notebook shows the summary as the figure's text


def _creator_note(message: str, graph, hazards) -> dict | None:
    """``{(node id, saved attribute): "output 0 of Exp"}``: the words of the message that name the changed tensor's
    operation, for a line in its chip in the box that saved it (between the tensor's row and its versions', as in
    the message); None when the message names none or no stale chip of the saver matches it."""
    creator_match = _CREATOR_IN_MESSAGE.search(message)
    if creator_match is None:
        return None
    shape, versions = error_shape_and_dtype(message)[0], error_versions(message)
    hazard = _saver(hazards, shape, versions, short_op_name(creator_match.group(2)))
    if hazard is None or hazard.node_id >= len(graph.nodes):
        return None
    for saved in graph.nodes[hazard.node_id].saved:  # the first stale one like the message's: the one marked ①
        if saved.stale and saved.shape == shape and (saved.current_version, saved.saved_version) == versions:
            return {(hazard.node_id, saved.attribute): creator_match.group(0)}
    return None


def _with_part_marks(scene: Scene, parts) -> Scene:
    """``scene`` with ① ② ③ beside what each part of the message names (ids ``part:<kind>``), outside the hazard border
    of the box that saved the tensor, each centred on its row of the changed tensor's chip: ① its text, ② the line
    that repeats the operation torch names (``chip-note``), ③ its versions; top to bottom in the message's order.
    ``scene`` as it is when none is drawn. The scene widens to the left when a mark would leave it."""
    ids = scene.ids()
    marks = []
    for number, part in enumerate(parts):
        stale = [i for i in ids if i.startswith(f"chip:{part.node_id}:") and ids[i].style == "graph-chip-stale"]
        if part.node_id is None or not stale:  # no picture of it, or folded into a box of repeats
            continue
        noted = [i for i in stale if i.replace("chip:", "chip-note:") in ids]
        chip_id = (noted or stale)[0]  # the chip with the creator's line: the tensor the message is about
        chip = ids[chip_id]
        if part.kind == "versions":  # this chip's ⚠ line (a box with two stale chips has one of each)
            rows = [t for t in scene.items if t.style == "graph-chip-warning" and chip.y < t.y < chip.y + chip.h]
        else:
            rows = [ids.get(chip_id.replace("chip:", "chip-text:" if part.kind == "tensor" else "chip-note:"))]
        if not rows or rows[0] is None:  # no line of it drawn (the creator's when the chip has none): no mark
            continue
        anchor = rows[0]
        x = chip.x - PAD_X - _HAZARD_GAP - _MARK_GAP  # left of the box's dashed hazard border
        middle = anchor.y + size_of(anchor, scene.styles) / 2
        marks.append(Text(x, middle, _CIRCLED[number], "error-part", f"part:{part.kind}", "end", "middle"))
    if not marks:
        return scene
    styles = {**scene.styles, "error-part": _PART_MARK_STYLE}
    shift = max(0.0, max(_MARK_SIZE + 2 - m.x for m in marks))  # room for a mark left of a box at the left edge
    items = tuple(_shifted(item, shift) for item in scene.items + tuple(marks)) if shift else scene.items + tuple(marks)
    return Scene(scene.width + shift, scene.height, items, styles, scene.title)


def _shifted(item, dx: float):
    if isinstance(item, (Rect, Text)):
        return replace(item, x=item.x + dx)
    return replace(item, points=tuple((x + dx, y) for x, y in item.points))


def _marked(part: MessagePart, number: int) -> str:
    """A part of the message, highlighted and numbered, with where it points as data attributes."""
    node = f" data-node='{part.node_id}'" if part.node_id is not None else ""
    return (
        f"<mark data-part='{part.kind}'{node} style='{_PART_LOOK};color:inherit;padding:0 1px;"
        f"font-family:{', '.join(FAMILIES['mono'])}'>"
        f"{html.escape(part.text)}</mark><b style='color:{STALE}'>{_CIRCLED[number - 1]}</b>"
    )


def _marked_message(message: str, parts: tuple) -> str:
    """The message, escaped, with its parts highlighted and numbered in place."""
    out, position = [], 0
    for number, part in enumerate(parts, start=1):
        out += [html.escape(message[position : part.start]), _marked(part, number)]
        position = part.end
    return "".join(out) + html.escape(message[position:])


def _saver(hazards, shape, versions, creator: str | None):
    """The hazard the message is about: same shape and versions, the creator's own node first; None if none."""
    alike = [h for h in hazards if h.shape == shape and (h.current_version, h.saved_version) == versions]
    for hazard in alike:
        if creator is not None and short_op_name(hazard.node) == creator and not hazard.what.startswith("input"):
            return hazard
    return alike[0] if alike else None


def _box_words(hazard, scene) -> str:
    """The box that saved the tensor as the picture draws it ("the box ExpBackward0"), or the node's name."""
    if scene is None:
        return f"the node {hazard.node}"
    texts = dict(scene.texts())
    label = texts.get(f"label:{hazard.node_id}")
    if label is None:  # folded into a box of repeats: that box lists it
        return f"the node {hazard.node}, inside a box of repeats in the picture"
    marked = " marked ⚠" if f"warning:{hazard.node_id}" in texts else ""
    return f"the box #{hazard.node_id} {label}{marked} in the picture"


def message_parts(message: str, hazards=(), scene=None) -> tuple[MessagePart, ...]:
    """The marked parts of autograd's in-place error message, each explained and tied to the graph.

    Args:
        message: the error's message (``str(error)``); another error's message has no parts.
        hazards: ``inplace_hazards`` of the graph backward went through (tells which node saved the tensor).
        scene: the graph picture's ``Scene``, to name its boxes as it draws them; None without a picture.

    Returns:
        ``MessagePart``s in message order: the tensor, the operation torch names, the versions (each when
        the message has it); empty when the message is not the in-place error.

    Raises:
        TypeError: ``message`` is not a string.
    """
    require_type(message, str, "message", "a string")
    version_match, versions = VERSION_ERROR.search(message), error_versions(message)
    if version_match is None:
        return ()
    shape, dtype = error_shape_and_dtype(message)
    tensor_match, creator_match = tensor_in_error(message), _CREATOR_IN_MESSAGE.search(message)
    creator = short_op_name(creator_match.group(2)) if creator_match else None
    hazard = _saver(hazards, shape, versions, creator)
    node_id = hazard.node_id if hazard is not None else None
    box = _box_words(hazard, scene) if hazard is not None else None
    current, saved = versions
    parts = []
    if tensor_match is not None:
        kind = f"{dtype_name(dtype)} tensor" if dtype is not None else "tensor"
        legacy, backend = tensor_match.group("legacy"), tensor_match.group("backend")
        device = " on a GPU" if (legacy or "").startswith("cuda.") or "CUDA" in (backend or "") else ""
        shaped = f"a {kind}{device} of shape {shape_text(shape)}" if shape else f"a 0-dim {kind}{device}"
        which = f", {hazard.what}" if hazard is not None else ""
        named = dtype_name(dtype) if dtype is not None else "its type"
        if legacy is not None:
            name = f"{legacy.removeprefix('cuda.')} is torch's old name for {named}."
        else:  # no Python type of that name: torch prints its C++ name, backend then dtype
            name = f"{backend}{tensor_match.group('scalar')}Type is torch's C++ name for {named} on {backend}."
        parts.append(
            MessagePart(
                "tensor",
                tensor_match.group(0),
                tensor_match.start(),
                tensor_match.end(),
                f"the tensor that changed: {shaped}{which}. {name}",
                node_id,
            )
        )
    if creator_match is not None:
        # autograd names, for a tensor a node saved as one of its inputs, the tensor's grad_fn when backward read it;
        # for one the node saved as its own output (exp, sigmoid save their result), that node.
        current_fn = "the tensor's grad_fn when backward read it (the last operation that produced it, an in-place "
        current_fn += "one included" + {
            "AsStrided": "; a plain strided view gets AsStridedBackward0 once it or its base is changed in place)",
            "torch::autograd::CopySlices": "; CopySlices is a write into it through a view, y[0].mul_(2))",
        }.get(creator, ")")
        if hazard is None:
            said = (
                f"for a tensor the failing node saved as an input, {current_fn}; for one it saved as its own "
                "output (exp and sigmoid save their result), that node's operation, which made the tensor."
            )
        elif hazard.what.startswith("input"):
            said = f"{current_fn}. {hazard.node} had saved it before, as {hazard.what}: {box}."
        else:
            said = f"the operation that made this tensor; its backward node saved it: {box}."
        parts.append(
            MessagePart("creator", creator_match.group(0), creator_match.start(), creator_match.end(), said, node_id)
        )
    moved = f"the counter moved by {current - saved}" if current > saved else "the counter moved"
    saver = f" by {hazard.node}" if hazard is not None else ""
    warning = dict(scene.texts()).get(f"warning:{node_id}") if scene is not None else None
    drawn = f" The picture's {hazard.node} box says “{warning}”." if warning else ""
    parts.append(
        MessagePart(
            "versions",
            message[version_match.start() : version_match.end(2)],
            version_match.start(),
            version_match.end(2),
            f"its version counter (t._version): {saved} when it was saved{saver}, {current} now: the tensor was "
            f"written in place since ({moved}; each in-place write moves it by at least 1), so autograd can no "
            f"longer vouch for the values backward needs, whether or not they actually changed.{drawn}",
            node_id,
        )
    )
    return tuple(parts)


def _returned(value) -> str:
    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    return f"a {type(value).__name__}"
