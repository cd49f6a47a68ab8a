"""The picture of a backward graph: what each box says, which view to draw, the summary, and the scene.

``graph_scene`` plans a ``Scene`` from what the model layer says (``autograd_graph``, ``graph_groups``) and
a placement (``graph_layout``); ``draw_graph`` renders it with matplotlib and ``graph_svg`` writes it as SVG.
It computes no fact about the graph itself (``show_error``, which draws it for an error, is in
``tools/errors.py``). Importing this module draws nothing and imports no matplotlib.
"""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass

import torch

from ..common.checks import describe, require_bool, require_positive_int, shape_text
from ..common.text import op_name, plural, short_op_name
from ..facts.graph import Graph, autograd_graph, inplace_hazards
from ..facts.inplace_watch import recent_watches
from . import render_mpl, render_svg
from .graph_groups import CollapsedGraph, collapse_by_module, collapse_repeats, count_text, uncollapsed
from .graph_placement import FONT_SIZE, LAYER_GAP, LINE_SPACING, PAD_X, PAD_Y, GraphLayout, box_size, graph_layout
from .scene import MONO_CHAR_WIDTH, Arrow, Line, Polygon, Rect, Scene, Style, Text, text_width, visible

#: ``draw_graph(collapse=None)`` collapses graphs with more nodes than this.
AUTO_COLLAPSE_ABOVE = 60
#: ``draw_graph`` draws at most this many boxes unless told otherwise.
DEFAULT_DRAW_NODES = 150
COLLAPSE_CHOICES = (None, "none", "repeats", "module")
MARGIN = 10.0
SMALL_FONT_SIZE = 0.9 * FONT_SIZE  # legend, messages, edge counts
_MAX_SAVED_LINES = 4
_WRAP = 36

_BORDER = "#333333"
#: The graph picture's style sheet. Kinds differ in shape, not only colour: square (backward), rounded (leaf),
#: double border (output), stacked (group); hazards add a thick dashed red border.
STYLES = {
    "graph-edges": Style(edge="#555555", width=0.8),
    "graph-cut-edges": Style(edge="#555555", width=0.8, dash=(1, 1.65)),
    "graph-boxes-shadow": Style(fill="#fbf3dc", edge=_BORDER, width=0.8, zorder=3),
    "graph-boxes-backward": Style(fill="#eeeeee", edge=_BORDER, width=0.8, zorder=3),
    "graph-boxes-leaf": Style(fill="#dbe9f6", edge=_BORDER, width=0.8, zorder=3),
    "graph-boxes-output": Style(fill="#dcf0d2", edge=_BORDER, width=0.8, zorder=3),
    "graph-boxes-group": Style(fill="#fbf3dc", edge=_BORDER, width=1.0, zorder=3),
    "graph-boxes-hazard": Style(edge="#d62728", width=2.4, dash=(4, 2), zorder=4),
    "graph-title": Style(family="mono", size=FONT_SIZE, weight="bold", zorder=5, line_spacing=LINE_SPACING),
    "graph-detail": Style(family="mono", size=FONT_SIZE, zorder=5, line_spacing=LINE_SPACING),
    # Warnings use DejaVu Sans, whose ⚠ is full size (the monospace one is tiny).
    "graph-warning": Style(family="sans", size=FONT_SIZE, weight="bold", color="#b00000", zorder=5),
    "graph-legend": Style(family="mono", size=SMALL_FONT_SIZE, color="#444444", zorder=5),
    "graph-message": Style(family="mono", size=SMALL_FONT_SIZE, color="#b00000", zorder=5),
    "graph-edge-count": Style(family="mono", size=SMALL_FONT_SIZE, color=_BORDER, zorder=2),
}
_LEGEND = (
    "arrows: gradient flow, output → leaves · square box: backward node · rounded box: leaf tensor · "
    "double border: output"
)
_LEGEND_GROUPS = " · stacked box: collapsed group"
_LEGEND_HAZARD = " · red dashed border + ⚠: a saved tensor changed in place (backward() would fail)"

# ----------------------------------------------------------------------------------------------------
# What each box says (text only: decided before any drawing)


@dataclass(frozen=True)
class _Box:
    item: int
    kind: str  # "output", "backward", "leaf" or "group"
    title: str
    lines: tuple[tuple[str, bool], ...]  # (text, is a hazard warning)
    stale: int

    @property
    def size(self) -> tuple[float, float]:
        longest = max([len(self.title)] + [len(t) for t, warning in self.lines if not warning])
        width, height = box_size(1 + len(self.lines), longest)
        warnings = [text_width(t, "sans", FONT_SIZE, "bold") + 2 * PAD_X for t, warning in self.lines if warning]
        return max([width] + warnings), height


def _stale_marker(saved) -> str:
    return f"⚠ stale: saved v{saved.saved_version}, now v{saved.current_version}"


def _saved_line(saved) -> str:
    state = saved.state
    if state == "freed":
        return f"saved: {saved.attribute} (freed by backward)"
    if state == "hooked":
        return f"saved: {saved.attribute} (packed by a hook)"
    if state == "unknown":
        return f"saved: {saved.attribute} (version unknown)" if saved.note else f"saved: {saved.attribute}"
    return f"saved: {saved.attribute} v{saved.saved_version} (now v{saved.current_version})"


def _node_box(node, show_values: bool, show_saved: bool, line_notes: tuple[str, ...] = ()) -> _Box:
    lines: list[tuple[str, bool]] = []
    stale = sum(1 for s in node.saved if s.stale)
    if node.kind == "leaf":
        if not node.label.startswith("leaf"):
            lines.append((f"leaf · {shape_text(node.shape)}", False))
    if node.kind in ("leaf", "output") and show_values:
        lines.append((f"value: {node.value}", False))
        if node.kind == "leaf" or node.grad is not None:
            lines.append((f"grad: {node.grad}", False))
    shown = 0
    for saved in node.saved:
        # Stale saved tensors are always listed, even when show_saved is off: they are the point.
        if not (show_saved or saved.stale):
            continue
        if shown >= _MAX_SAVED_LINES and not saved.stale:
            continue
        lines.append((_saved_line(saved), False))
        if saved.stale:
            lines.append((_stale_marker(saved), True))
        shown += 1
    hidden = len(node.saved) - shown
    if show_saved and hidden > 0:
        lines.append((f"… {hidden} more saved", False))
    lines.extend((note, False) for note in line_notes)  # from watch_inplace: who saved it, who changed it
    return _Box(node.id, node.kind, visible(node.label), tuple(lines), stale)


def _wrap_list(text: str, width: int, breaks: str = r"(?<=, )|(?<=: )") -> list[str]:
    """Wrap at most ``width`` characters a line, breaking only after ", " or ": " (keeps "2 TBackward0" whole)."""
    pieces = []
    for piece in re.split(breaks, text):  # a piece too long for a line is broken at its spaces
        pieces.extend(re.split(r"(?<= )", piece) if len(piece.rstrip()) > width else [piece])
    lines = [""]
    for piece in pieces:
        if lines[-1] and len(lines[-1]) + len(piece.rstrip()) > width:
            lines[-1] = lines[-1].rstrip()
            lines.append("")
        lines[-1] += piece
    return [line.rstrip() for line in lines if line.strip()]


def _group_box(view: CollapsedGraph, item: int, show_saved: bool) -> _Box:
    group = view.group(item)
    per_block = sum(c for _, c in group.counts)
    if group.repetitions > 1:
        head = f"{group.repetitions} × {per_block} nodes"
    else:
        head = f"{group.module_type} · {per_block} nodes" if group.module_type else f"{per_block} nodes"
    # Short op names ("2 Addmm, Relu"): a box per block repeats them, so they must stay brief.
    inside = count_text((short_op_name(name), c) for name, c in group.counts)
    lines = [(head + ":", False)] + [(line, False) for line in _wrap_list(inside, _WRAP)]
    saved = [(view.graph.nodes[m], s) for m in group.members for s in view.graph.nodes[m].saved]
    if show_saved and saved:
        stale = sum(1 for _, s in saved if s.stale)
        state = "all current" if not stale else f"{stale} stale"
        lines.append((f"saved: {len(saved)}, {state}", False))
    stale_count = 0
    for node, s in saved:
        if s.stale:
            lines.append((f"{_stale_marker(s)} ({node.name} {s.attribute})", True))
            stale_count += 1
    return _Box(item, "group", group.label, tuple(lines), stale_count)


def _boxes(view: CollapsedGraph, items, show_values: bool, show_saved: bool, line_notes) -> dict[int, _Box]:
    boxes = {}
    for item in items:
        if view.is_group(item):
            boxes[item] = _group_box(view, item, show_saved)
        else:
            node = view.graph.nodes[item]
            boxes[item] = _node_box(node, show_values, show_saved, line_notes.get(node.id, ()))
    return boxes


def _line_notes(tensor) -> dict[int, tuple[str, ...]]:
    """Node id -> "saved at file:line" / "changed at file:line (op)" texts, when watch_inplace recorded them."""
    if tensor is None or not recent_watches():
        return {}
    notes: dict[int, list[str]] = {}
    for hazard in inplace_hazards(tensor):
        texts = notes.setdefault(hazard.node_id, [])
        if hazard.saved_at is not None:
            texts.append(f"saved at {hazard.saved_at.place}")
        for write in hazard.changed_at:
            place = write.line.place if write.line is not None else "line unknown"
            texts.append(f"changed at {place} ({op_name(write.op)})")
    return {node_id: tuple(dict.fromkeys(texts)) for node_id, texts in notes.items()}


# ----------------------------------------------------------------------------------------------------
# Choosing what to draw


def _capped(view: CollapsedGraph, max_items: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ``max_items`` items nearest the output (breadth first), and the kept items with edges cut off."""
    if len(view.items) <= max_items:
        return view.items, ()
    children: dict[int, list[int]] = {}
    for a, b in view.edges:
        children.setdefault(a, []).append(b)
    kept = {view.root: None}
    queue = [view.root]
    for v in queue:
        for c in children.get(v, ()):
            if c not in kept and len(kept) < max_items:
                kept[c] = None
                queue.append(c)
    for item in view.items:  # anything unreachable from the root (never in an autograd graph)
        if len(kept) < max_items:
            kept.setdefault(item, None)
    cut = tuple(a for a in kept if any(c not in kept for c in children.get(a, ())))
    return tuple(i for i in view.items if i in kept), cut


def _choose_view(graph: Graph, tensor, collapse, model, max_nodes: int) -> CollapsedGraph:
    if collapse == "module":
        return collapse_by_module(tensor, model, graph)
    if collapse == "repeats":
        view = collapse_repeats(graph)
        return collapse_repeats(graph, merge_runs=True) if len(view.items) > max_nodes else view
    if collapse == "none" or len(graph.nodes) <= AUTO_COLLAPSE_ABOVE:
        return uncollapsed(graph)
    # collapse=None on a big graph: whichever grouping leaves fewest boxes, preferring modules.
    if model is not None:
        view = collapse_by_module(tensor, model, graph)
        if len(view.items) <= AUTO_COLLAPSE_ABOVE:
            return view
    view = collapse_repeats(graph)
    if len(view.items) > AUTO_COLLAPSE_ABOVE:
        view = collapse_repeats(graph, merge_runs=True)
    return view if view.groups else uncollapsed(graph)


def _hazard_text(node_name: str, saved) -> str:
    if saved.attribute.startswith("checkpoint input"):  # kept by the checkpoint, not by the node
        return f"{saved.attribute} (first needed by {node_name}) v{saved.saved_version}, now v{saved.current_version}"
    return f"{node_name} saved {saved.attribute} v{saved.saved_version}, now v{saved.current_version}"


def _summary(graph: Graph, view: CollapsedGraph, items, show_values: bool, hidden_hazards: int) -> str:
    backward, leaves, edges = graph.counts  # of the whole graph, drawn or not
    output = ", 1 output" if any(n.kind == "output" for n in graph.nodes) else ""
    parts = [
        f"Backward graph of {graph.nodes[graph.root].label}: {plural(graph.total_nodes, 'node')} "
        f"({backward} backward, {plural(leaves, 'leaf', 'leaves')}{output}), {plural(edges, 'edge')}"
    ]
    if view.groups:
        parts.append(view.describe())
    if len(items) < len(view.items) or graph.truncated:
        drawn_nodes = sum(len(view.members(i)) for i in items)
        parts.append(f"drawing {drawn_nodes} of {graph.total_nodes} nodes ({len(items)} boxes)")
    stale = [(n, s) for n in graph.nodes for s in n.saved if s.stale]
    total_stale = len(stale) + hidden_hazards
    if total_stale:
        listed = "; ".join(_hazard_text(n.name, s) for n, s in stale[:3])
        more = f"; … {total_stale - 3} more" if total_stale > 3 else ""
        changed = f"⚠ {plural(total_stale, 'saved tensor')} changed in place (backward() would fail)"
        parts.append(f"{changed}: {listed}{more}")
    elif graph.unseen:
        parts.append("no saved tensor that could be read was changed in place")
    else:
        parts.append("no saved tensor was changed in place")
    if graph.unseen:
        parts.append("not checked: " + "; ".join(graph.unseen))
    freed = sum(1 for n in graph.nodes for s in n.saved if s.freed)
    if freed:
        parts.append(f"{plural(freed, 'saved tensor')} already freed by backward()")
    if show_values:
        shown = [n for n in graph.nodes if n.kind in ("leaf", "output")][:6]
        values = ", ".join(
            f"{n.label} = {n.value}" + (f" (grad {n.grad})" if n.grad is not None or n.kind == "leaf" else "")
            for n in shown
        )
        parts.append(f"values: {values}")
    return "; ".join(parts) + "."


# ----------------------------------------------------------------------------------------------------
# The scene


def _rounded(left: float, top: float, width: float, height: float, radius: float = 6.0) -> tuple:
    """A rectangle with rounded corners as a polygon (a quarter circle in 5 points per corner)."""
    r = min(radius, width / 2, height / 2)
    corners = (
        (left + width - r, top + height - r, -90),
        (left + width - r, top + r, 0),
        (left + r, top + r, 90),
        (left + r, top + height - r, 180),
    )
    return tuple(
        (cx + r * math.cos(math.radians(start + 22.5 * k)), cy - r * math.sin(math.radians(start + 22.5 * k)))
        for cx, cy, start in corners
        for k in range(5)
    )


def _box_items(box: _Box, x: float, y: float, w: float, h: float) -> list:
    """The shapes and texts of one box whose top-left corner is (x, y)."""
    if box.kind == "leaf":
        items = [Polygon(_rounded(x, y, w, h), "graph-boxes-leaf")]
    elif box.kind == "output":
        items = [Rect(x, y, w, h, "graph-boxes-output"), Rect(x + 2, y + 2, w - 4, h - 4, "graph-boxes-output")]
    elif box.kind == "group":
        items = [Rect(x + 3, y + 3, w, h, "graph-boxes-shadow"), Rect(x, y, w, h, "graph-boxes-group")]
    else:
        items = [Rect(x, y, w, h, "graph-boxes-backward")]
    if box.stale:
        items.append(Rect(x - 3, y - 3, w + 6, h + 6, "graph-boxes-hazard"))
    top = y + PAD_Y
    items.append(Text(x + w / 2, top, box.title, "graph-title", f"label:{box.item}", anchor="middle"))
    line_h = LINE_SPACING * FONT_SIZE
    run: list[str] = []
    start = 1
    for k, (line, warning) in enumerate(box.lines + (("", True),), start=1):
        if not warning:
            run.append(line)
            continue
        if run:  # consecutive plain lines share one text: far fewer texts on big graphs
            items.append(Text(x + PAD_X, top + start * line_h, "\n".join(run), "graph-detail", f"detail:{box.item}"))
            run = []
        if line:
            items.append(Text(x + PAD_X, top + k * line_h, line, "graph-warning", f"warning:{box.item}"))
        start = k + 1
    return items


def _scene(layout: GraphLayout, boxes, cut, messages, has_groups: bool, summary: str) -> Scene:
    """The legend, messages, boxes, edges and texts of a picture, y flipped from the placement's y up."""
    has_hazards = any(b.stale for b in boxes.values())
    legend = _LEGEND + (_LEGEND_GROUPS if has_groups else "") + (_LEGEND_HAZARD if has_hazards else "")
    content_width = max(layout.width, 60 * MONO_CHAR_WIDTH * SMALL_FONT_SIZE)
    chars = max(30, int(content_width / (MONO_CHAR_WIDTH * SMALL_FONT_SIZE)))  # 59 at the narrowest (rounding)
    legend_lines = _wrap_list(legend.replace(" · ", ", "), chars, r"(?<=, )")
    message_lines = [w for m in messages for w in textwrap.wrap(m, chars)]
    small_line = LINE_SPACING * SMALL_FONT_SIZE
    top_band = len(legend_lines) * small_line + PAD_Y * 2
    stub = LAYER_GAP * 0.6 if cut else 0.0  # dotted stubs under boxes whose children are not drawn
    bottom_band = stub + ((len(message_lines) * small_line + PAD_Y * 2) if message_lines else 0.0)
    left = -(content_width - layout.width) / 2  # a graph narrower than the legend sits in the middle
    x0, y1 = left - MARGIN, layout.height + top_band + MARGIN  # the placement's top-left corner (y up)

    def at(x: float, y: float) -> tuple[float, float]:
        return x - x0, y1 - y

    items: list = []
    for route in layout.edges:
        items.append(Arrow(tuple(at(x, y) for x, y in route.points), "graph-edges"))
        if route.count > 1:  # x * x: two gradients flow along the same edge
            (ax, ay), (bx, by) = route.points[0], route.points[1]
            where = at((ax + bx) / 2 + 3, (ay + by) / 2 + 4)
            items.append(Text(*where, f"×{route.count}", "graph-edge-count", "edge-count"))
    for i in cut:
        p = layout.position(i)
        items.append(Line((at(p.x, p.bottom), at(p.x, p.bottom - stub)), "graph-cut-edges"))
    for p in layout.nodes:
        items.extend(_box_items(boxes[p.id], *at(p.left, p.top), p.width, p.height))
    items.append(Text(*at(left, layout.height + top_band - PAD_Y), "\n".join(legend_lines), "graph-legend", "legend"))
    if message_lines:
        items.append(Text(*at(left, -stub - PAD_Y), "\n".join(message_lines), "graph-message", "message"))
    height = layout.height + top_band + bottom_band + 2 * MARGIN
    return Scene(content_width + 2 * MARGIN, height, tuple(items), STYLES, summary)


# ----------------------------------------------------------------------------------------------------
# Public entry points


@dataclass(frozen=True)
class _Picture:
    scene: Scene
    view: CollapsedGraph
    layout: GraphLayout


def _picture(t_or_graph, names, show_values, show_saved, collapse, max_nodes, model) -> _Picture:
    """Check the arguments, read the graph, choose what to draw, place it and plan its scene."""
    tensor = None
    if isinstance(t_or_graph, Graph):
        graph = t_or_graph
        if names is not None:
            raise ValueError("names only applies when t_or_graph is a tensor; a Graph already has its labels")
    elif isinstance(t_or_graph, torch.Tensor):
        tensor = t_or_graph
    else:
        raise TypeError(f"t_or_graph must be a torch.Tensor or a Graph, got {describe(t_or_graph)}")
    require_bool(show_values, "show_values")
    require_bool(show_saved, "show_saved")
    require_positive_int(max_nodes, "max_nodes")
    if collapse is not None and not isinstance(collapse, str):
        raise TypeError(f"collapse must be None or one of 'none', 'repeats', 'module', got {describe(collapse)}")
    if collapse not in COLLAPSE_CHOICES:
        raise ValueError(f"collapse must be None or one of 'none', 'repeats', 'module', got {collapse!r}")
    if model is not None and not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module or None, got {describe(model)}")
    if collapse == "module" and model is None:
        raise ValueError("collapse='module' needs model=<the nn.Module that computed the tensor>")
    if collapse == "module" and tensor is None:
        raise ValueError("collapse='module' needs t_or_graph to be the tensor (its nodes say when they were made)")
    if tensor is not None:
        labels = dict(model.named_parameters()) if model is not None else {}
        if names is not None:
            if not isinstance(names, dict):
                raise TypeError(f"names must be a dict from name to tensor, got {describe(names)}")
            labels.update(names)
        graph = autograd_graph(tensor, names=labels or None)

    view = _choose_view(graph, tensor, collapse, model, max_nodes)
    items, cut = _capped(view, max_nodes)
    drawn = {m for i in items for m in view.members(i)}
    beyond = 0  # stale saved tensors in nodes autograd_graph did not keep (a graph over its max_nodes)
    if graph.truncated and tensor is not None:
        beyond = sum(1 for h in inplace_hazards(tensor) if h.node_id >= len(graph.nodes))
    hidden_stale = beyond + sum(1 for n in graph.nodes if n.id not in drawn for s in n.saved if s.stale)
    summary = _summary(graph, view, items, show_values, beyond)
    line_notes = _line_notes(tensor)
    if line_notes:
        notes = "; ".join(f"node {node_id}: {', '.join(texts)}" for node_id, texts in sorted(line_notes.items()))
        summary = f"{summary.rstrip('.')}; {notes}."
    boxes = _boxes(view, items, show_values, show_saved, line_notes)
    sub = view if len(items) == len(view.items) else view.restricted(items)
    layout = graph_layout(sub, {i: b.size for i, b in boxes.items()})

    messages = []
    if len(items) < len(view.items) or graph.truncated:
        missing = graph.total_nodes - len(drawn)
        messages.append(
            f"… {plural(missing, 'more node')} not drawn (showing {len(drawn)} of "
            f"{graph.total_nodes}); pass collapse='repeats' or a larger max_nodes to see more"
        )
    if hidden_stale:
        messages.append(f"⚠ {plural(hidden_stale, 'stale saved tensor')} in nodes not drawn")
    return _Picture(_scene(layout, boxes, cut, messages, bool(view.groups), summary), view, layout)


def graph_scene(
    t_or_graph,
    names: dict | None = None,
    show_values: bool = False,
    show_saved: bool = True,
    collapse: str | None = None,
    max_nodes: int = DEFAULT_DRAW_NODES,
    model=None,
) -> Scene:
    """The picture ``draw_graph`` draws, as a ``Scene`` (plain data; its ``title`` is the one-line summary).

    Same arguments as ``draw_graph`` (no ``ax``). Text ids: ``label:<item>``, ``detail:<item>``,
    ``warning:<item>``, ``edge-count``, ``legend`` and ``message``.

    Raises:
        TypeError, ValueError: as ``draw_graph``.
    """
    return _picture(t_or_graph, names, show_values, show_saved, collapse, max_nodes, model).scene


def draw_graph(
    t_or_graph,
    names: dict | None = None,
    ax=None,
    show_values: bool = False,
    show_saved: bool = True,
    collapse: str | None = None,
    max_nodes: int = DEFAULT_DRAW_NODES,
    model=None,
):
    """Draw a backward graph: output at the top, backward nodes, leaves at the bottom, saved tensors.

    Every box lists the tensors its node saved with their saved and current versions
    (``saved: result v0 (now v1)``); a saved tensor changed in place since gets a thick red dashed
    border and the text ``⚠ stale: saved v0, now v1``. Big graphs are collapsed (see ``collapse``)
    and, past ``max_nodes`` boxes, cut off with a message saying how much is not drawn.

    Args:
        t_or_graph: a tensor (its graph is read with ``autograd_graph``) or a ``Graph``.
        names: dict from name to tensor labelling leaves (``{"x1": x1}``); only with a tensor.
        ax: a matplotlib Axes to draw into; None makes a new figure sized to the graph.
        show_values: also print the values and ``.grad`` of leaves and the output.
        show_saved: list saved tensors in each box (stale ones are listed regardless).
        collapse: ``"none"``, ``"repeats"`` (repeated blocks: residual blocks, unrolled loops),
            ``"module"`` (one box per submodule of ``model``), or None: collapse only graphs of more than
            ``AUTO_COLLAPSE_ABOVE`` nodes (by module when ``model`` is given, else by repeats).
        max_nodes: draw at most this many boxes (the ones nearest the output).
        model: the ``nn.Module`` that computed the tensor, for ``collapse="module"``; its parameter names
            label the leaves.

    Returns:
        The matplotlib Figure, with ``fig.summary`` (one line of text saying what is drawn),
        ``fig.graph_view`` / ``fig.graph_layout`` (the ``CollapsedGraph`` and ``GraphLayout`` drawn) and
        ``fig.scene`` (the ``Scene``, see ``graph_scene``).
        Saving a big uncollapsed graph as SVG is 2-3× faster with text kept as text
        (``matplotlib.rc_context({"svg.fonttype": "none"})``) than with matplotlib's default outlines.

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        ValueError: ``collapse`` is not one of ``COLLAPSE_CHOICES``, ``collapse="module"`` without a model
            or without a tensor, ``names`` with a Graph, or ``max_nodes`` < 1.
    """
    ax = render_mpl.require_axes(ax)
    picture = _picture(t_or_graph, names, show_values, show_saved, collapse, max_nodes, model)
    fig = render_mpl.render(picture.scene, ax=ax)
    fig.summary = picture.scene.title
    fig.graph_view = picture.view
    fig.graph_layout = picture.layout
    fig.scene = picture.scene
    return fig


def graph_svg(
    t_or_graph,
    names: dict | None = None,
    show_values: bool = False,
    show_saved: bool = True,
    collapse: str | None = None,
    max_nodes: int = DEFAULT_DRAW_NODES,
    model=None,
) -> str:
    """The picture ``draw_graph`` draws, written straight to an SVG document (a str), without matplotlib.

    Same arguments as ``draw_graph`` (no ``ax``), same boxes, edges, texts and ids; the one-line
    summary is the SVG's ``<title>``. Use it to save or embed a graph quickly: a 1,000-node graph takes
    a fraction of a second, where ``savefig(format="svg")`` takes seconds. Display it in Jupyter with
    ``IPython.display.SVG(tl.graph_svg(y))``.

    Raises:
        TypeError, ValueError: as ``draw_graph``.
    """
    return render_svg.svg(graph_scene(t_or_graph, names, show_values, show_saved, collapse, max_nodes, model))
