"""The picture of a backward graph: what each box says, which view to draw, the summary, and the scene.

``graph_scene`` plans a ``Scene`` from the facts (``autograd_graph``, ``graph_groups``) and a placement
(``graph_layout``); ``draw_graph`` renders it with matplotlib, ``graph_svg`` as SVG (without importing matplotlib).
"""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass
from itertools import groupby

import torch

from ..common.checks import describe, require_bool, require_positive_int, shape_text
from ..common.text import plural, short_op_name
from ..facts.graph import Graph, autograd_graph, inplace_hazards
from ..facts.inplace_watch import watch_notes
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

_WARNING = "⚠"  # a box line starting with it is drawn as a warning, in graph-warning's font


@dataclass(frozen=True)
class _Box:
    """The texts of one box, its kind (``output``, ``backward``, ``leaf`` or ``group``) and stale saved tensors."""

    item: int
    kind: str
    title: str
    lines: tuple[str, ...]
    stale: int

    @property
    def size(self) -> tuple[float, float]:
        longest = max([len(self.title)] + [len(t) for t in self.lines if t[:1] != _WARNING])
        width, height = box_size(1 + len(self.lines), longest)
        warnings = [text_width(t, "sans", FONT_SIZE, "bold") + 2 * PAD_X for t in self.lines if t[:1] == _WARNING]
        return max([width] + warnings), height


def _stale_marker(saved) -> str:
    return f"{_WARNING} stale: saved v{saved.saved_version}, now v{saved.current_version}"


def _saved_line(saved) -> str:
    """One saved tensor's line in a box: its versions, or why they are not shown."""
    if saved.state in ("stale", "ok"):
        return f"saved: {saved.attribute} v{saved.saved_version} (now v{saved.current_version})"
    why = {"freed": " (freed by backward)", "hooked": " (packed by a hook)", "unknown": " (version unknown)"}
    return f"saved: {saved.attribute}" + (why[saved.state] if saved.note or saved.state != "unknown" else "")


def _node_box(node, show_values: bool, show_saved: bool, line_notes: tuple[str, ...]) -> _Box:
    """A node's box: shape, values, saved tensors (stale ones even when show_saved is off: they are the point)."""
    lines = []
    if node.kind == "leaf" and not node.label.startswith("leaf"):
        lines.append(f"leaf · {shape_text(node.shape)}")
    if node.kind in ("leaf", "output") and show_values:
        lines.append(f"value: {node.value}")
        if node.kind == "leaf" or node.grad is not None:
            lines.append(f"grad: {node.grad}")
    shown = 0
    for saved in node.saved:
        if saved.stale or (show_saved and shown < _MAX_SAVED_LINES):
            lines += [_saved_line(saved), _stale_marker(saved)] if saved.stale else [_saved_line(saved)]
            shown += 1
    if show_saved and len(node.saved) > shown:
        lines.append(f"… {len(node.saved) - shown} more saved")
    lines.extend(line_notes)  # from watch_inplace: who saved it, who changed it
    return _Box(node.id, node.kind, visible(node.label), tuple(lines), sum(1 for s in node.saved if s.stale))


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
    """A group's box: its size, the ops inside (short names: a box per block repeats them), its saved tensors."""
    group = view.group(item)
    per_block = sum(c for _, c in group.counts)
    if group.repetitions > 1:
        head = f"{group.repetitions} × {per_block} nodes"
    else:
        head = f"{group.module_type} · {per_block} nodes" if group.module_type else f"{per_block} nodes"
    lines = [head + ":", *_wrap_list(count_text((short_op_name(name), c) for name, c in group.counts), _WRAP)]
    saved = [(view.graph.nodes[m], s) for m in group.members for s in view.graph.nodes[m].saved]
    stale = [f"{_stale_marker(s)} ({node.name} {s.attribute})" for node, s in saved if s.stale]
    if show_saved and saved:
        lines.append(f"saved: {len(saved)}, {f'{len(stale)} stale' if stale else 'all current'}")
    return _Box(item, "group", group.label, tuple(lines + stale), len(stale))


def _choose_view(graph: Graph, tensor, collapse, model, max_nodes: int) -> CollapsedGraph:
    """``collapse``'s grouping; for None on a big graph, the one leaving fewest boxes, preferring modules."""
    if collapse == "module":
        return collapse_by_module(tensor, model, graph)
    big = len(graph.nodes) > AUTO_COLLAPSE_ABOVE
    if collapse is None and big and model is not None:
        view = collapse_by_module(tensor, model, graph)
        if len(view.items) <= AUTO_COLLAPSE_ABOVE:
            return view
    if collapse == "none" or (collapse is None and not big):
        return uncollapsed(graph)
    view = collapse_repeats(graph)
    if len(view.items) > (max_nodes if collapse == "repeats" else AUTO_COLLAPSE_ABOVE):
        view = collapse_repeats(graph, merge_runs=True)
    return view if view.groups or collapse == "repeats" else uncollapsed(graph)


def _hazard_text(node_name: str, saved) -> str:
    if saved.attribute.startswith("checkpoint input"):  # kept by the checkpoint, not by the node
        return f"{saved.attribute} (first needed by {node_name}) v{saved.saved_version}, now v{saved.current_version}"
    return f"{node_name} saved {saved.attribute} v{saved.saved_version}, now v{saved.current_version}"


def _summary(graph: Graph, view: CollapsedGraph, items, show_values: bool, hidden_hazards: int) -> str:
    """One line: the graph's counts, its groups, what is not drawn, stale and freed saved tensors, values."""
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
    else:
        parts.append(f"no saved tensor {'that could be read ' if graph.unseen else ''}was changed in place")
    if graph.unseen:
        parts.append("not checked: " + "; ".join(graph.unseen))
    freed = sum(1 for n in graph.nodes for s in n.saved if s.freed)
    if freed:
        parts.append(f"{plural(freed, 'saved tensor')} already freed by backward()")
    if show_values:
        shown = [n for n in graph.nodes if n.kind in ("leaf", "output")][:6]
        grads = [f" (grad {n.grad})" if n.grad is not None or n.kind == "leaf" else "" for n in shown]
        parts.append("values: " + ", ".join(f"{n.label} = {n.value}{grad}" for n, grad in zip(shown, grads)))
    return "; ".join(parts) + "."


def _rounded(left: float, top: float, width: float, height: float) -> tuple:
    """A rectangle with corners rounded by 6 points as a polygon (a quarter circle in 5 points per corner)."""
    r = min(6.0, width / 2, height / 2)
    x0, x1, y0, y1 = left + r, left + width - r, top + r, top + height - r
    return tuple(
        (cx + r * math.cos(math.radians(start + 22.5 * k)), cy - r * math.sin(math.radians(start + 22.5 * k)))
        for cx, cy, start in ((x1, y1, -90), (x1, y0, 0), (x0, y0, 90), (x0, y1, 180))
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
    k = 1  # the line number of the run's first line (the title is line 0)
    for warning, run in groupby(box.lines, key=lambda line: line[:1] == _WARNING):
        run = list(run)
        if warning:
            for i, line in enumerate(run):
                items.append(Text(x + PAD_X, top + (k + i) * line_h, line, "graph-warning", f"warning:{box.item}"))
        else:  # consecutive plain lines share one text: far fewer texts on big graphs
            items.append(Text(x + PAD_X, top + k * line_h, "\n".join(run), "graph-detail", f"detail:{box.item}"))
        k += len(run)
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


def _planned(t_or_graph, names, show_values, show_saved, collapse, max_nodes, model):
    """Check the arguments, read the graph, choose what to draw and place it: (scene, view drawn, placement)."""
    tensor = t_or_graph if isinstance(t_or_graph, torch.Tensor) else None
    if tensor is None and not isinstance(t_or_graph, Graph):
        raise TypeError(f"t_or_graph must be a torch.Tensor or a Graph, got {describe(t_or_graph)}")
    if tensor is None and names is not None:
        raise ValueError("names only applies when t_or_graph is a tensor; a Graph already has its labels")
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
    if names is not None and not isinstance(names, dict):
        raise TypeError(f"names must be a dict from name to tensor, got {describe(names)}")
    graph = t_or_graph
    if tensor is not None:
        labels = dict(model.named_parameters()) if model is not None else {}
        graph = autograd_graph(tensor, names={**labels, **(names or {})} or None)

    view = _choose_view(graph, tensor, collapse, model, max_nodes)
    items, cut = view.capped(max_nodes)
    drawn = {m for i in items for m in view.members(i)}
    beyond = 0  # stale saved tensors in nodes autograd_graph did not keep (a graph over its max_nodes)
    if graph.truncated and tensor is not None:
        beyond = sum(1 for h in inplace_hazards(tensor) if h.node_id >= len(graph.nodes))
    hidden_stale = beyond + sum(1 for n in graph.nodes if n.id not in drawn for s in n.saved if s.stale)
    summary = _summary(graph, view, items, show_values, beyond)
    line_notes = watch_notes(tensor) if tensor is not None else {}
    if line_notes:
        notes = "; ".join(f"node {node_id}: {', '.join(texts)}" for node_id, texts in sorted(line_notes.items()))
        summary = f"{summary.rstrip('.')}; {notes}."
    boxes = {
        i: _group_box(view, i, show_saved)
        if view.is_group(i)
        else _node_box(view.graph.nodes[i], show_values, show_saved, line_notes.get(i, ()))
        for i in items
    }
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
    return _scene(layout, boxes, cut, messages, bool(view.groups), summary), view, layout


def graph_scene(
    t_or_graph,
    names: dict | None = None,
    show_values: bool = False,
    show_saved: bool = True,
    collapse: str | None = None,
    max_nodes: int = DEFAULT_DRAW_NODES,
    model=None,
) -> Scene:
    """Plan the picture of a backward graph: output at the top, then backward nodes, leaves at the bottom.

    Each box lists its node's saved tensors with their saved and current versions (``saved: result v0 (now v1)``);
    one changed in place since gets a thick red dashed border and ``⚠ stale: saved v0, now v1``. Big graphs are
    collapsed and, past ``max_nodes`` boxes, cut off with a message. Text ids: ``label:<item>``, ``detail:<item>``,
    ``warning:<item>``, ``edge-count``, ``legend``, ``message``.

    Args:
        t_or_graph: a tensor (its graph is read with ``autograd_graph``) or a ``Graph``.
        names: dict from name to tensor labelling leaves (``{"x1": x1}``); only with a tensor.
        show_values: also print the values and ``.grad`` of leaves and the output.
        show_saved: list saved tensors in each box (stale ones are listed regardless).
        collapse: ``"none"``, ``"repeats"`` (repeated blocks: residual blocks, unrolled loops), ``"module"`` (a box
            per submodule of ``model``), or None: only graphs of over ``AUTO_COLLAPSE_ABOVE`` nodes, by module
            when ``model`` is given, else by repeats.
        max_nodes: draw at most this many boxes (the ones nearest the output).
        model: the ``nn.Module`` that computed the tensor; its parameter names label the leaves.

    Returns:
        The ``Scene``; its ``title`` is the one-line summary of what is drawn.

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        ValueError: ``collapse`` not in ``COLLAPSE_CHOICES``, ``collapse="module"`` without a model or a tensor,
            ``names`` with a Graph, or ``max_nodes`` < 1.
    """
    return _planned(t_or_graph, names, show_values, show_saved, collapse, max_nodes, model)[0]


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
    """Draw ``graph_scene``'s picture with matplotlib, into ``ax`` (an Axes) or, when None, a new figure.

    Returns:
        The Figure, with ``fig.summary`` (one line saying what is drawn), ``fig.scene`` (the ``Scene``),
        ``fig.graph_view`` and ``fig.graph_layout`` (the ``CollapsedGraph`` and ``GraphLayout`` drawn). A big graph
        saves to SVG 2-3× faster with ``matplotlib.rc_context({"svg.fonttype": "none"})`` (text kept as text).

    Raises:
        TypeError, ValueError: as ``graph_scene``, or ``ax`` is not an Axes.
    """
    ax = render_mpl.require_axes(ax)
    scene, view, layout = _planned(t_or_graph, names, show_values, show_saved, collapse, max_nodes, model)
    fig = render_mpl.render(scene, ax=ax)
    fig.summary = scene.title
    fig.scene = scene
    fig.graph_view = view
    fig.graph_layout = layout
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
    """``graph_scene``'s picture as an SVG document (a str), its summary the ``<title>``, without matplotlib.

    A 1,000-node graph takes a fraction of a second (``savefig(format="svg")`` takes seconds). Show it in Jupyter
    with ``IPython.display.SVG(tl.graph_svg(y))``. Raises as ``graph_scene``.
    """
    return render_svg.svg(graph_scene(t_or_graph, names, show_values, show_saved, collapse, max_nodes, model))
