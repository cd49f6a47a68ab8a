"""The picture of a backward graph: what each box says, which view to draw, the summary, and the scene.

``graph_scene`` plans a ``Scene`` from the facts (``autograd_graph``, ``graph_groups``) and a placement
(``graph_layout``); ``draw_graph`` renders it with matplotlib, ``graph_svg`` as SVG (without importing matplotlib).
Boxes carry their node ids when asked (``show_ids``); saved tensors are chips inside their node's box (torchviz
draws them as nodes of their own), named after the variable they are; a stale one is drawn in the palette's
vermilion with its versions and, when the write is known, an edge to the node of the in-place operation that changed
it. A list of graphs is drawn side by side (``scene.side_by_side``), for the comparisons the chapters make.
"""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass, replace
from itertools import groupby

import torch

from ..common.checks import describe, require_bool, require_positive_int, require_type, shape_text
from ..common.text import plural, short_op_name
from ..facts.graph import (
    Graph,
    HeldByGraph,
    autograd_graph,
    custom_function_saver,
    forward_op_name,
    held_by_graph,
    inplace_hazards,
    require_graph_tensor,
)
from ..facts.inplace_watch import watch_notes
from . import render_mpl, render_svg
from .graph_groups import CollapsedGraph, aligned_fns, collapse_by_module, collapse_repeats, count_text, uncollapsed
from .graph_placement import FONT_SIZE, LAYER_GAP, LINE_SPACING, PAD_X, PAD_Y, GraphLayout, graph_layout
from .palette import FAINT, INK, MIN_TEXT_PT, MONO, MUTED, PAPER, SANS, STALE, STORAGE, tensor_colour, tint
from .scene import MONO_CHAR_WIDTH, Arrow, Line, Polygon, Rect, Scene, Style, Text, side_by_side, text_width, visible

#: ``draw_graph(collapse=None)`` collapses graphs with more nodes than this.
AUTO_COLLAPSE_ABOVE = 60
#: ``draw_graph`` draws at most this many boxes unless told otherwise.
DEFAULT_DRAW_NODES = 150
COLLAPSE_CHOICES = (None, "none", "repeats", "module")
MARGIN = 10.0
#: The most a graph picture may take up, in points: about what JupyterLab's output area shows unshrunk at 100 pixels
#: an inch (a 1280-pixel window), and the figure's height limit. A bigger graph is collapsed or cut to a window
#: (``… N more nodes not drawn``) rather than scaled down: its smallest text stays at ``MIN_TEXT_PT`` or more.
MAX_WIDTH_PT, MAX_HEIGHT_PT = 780.0, 60 * 72.0
SMALL_FONT_SIZE = 0.9 * FONT_SIZE  # legend, messages, edge counts
_MAX_CHIPS = 4
_WRAP = 36

#: Saved-tensor chips: a chip's text is smaller than a box's, with this padding inside the chip.
CHIP_FONT_SIZE = SMALL_FONT_SIZE
CHIP_PAD_X, CHIP_PAD_Y, CHIP_GAP = 4.0, 2.0, 3.0
SWATCH = 7.0  # the width of a named tensor's colour bar at a chip's left
EDIT_GAP = 14.0  # how far right of the boxes the in-place edit's edge runs

#: The graph picture's style sheet (palette colours). Kinds differ in shape, not only colour: square (backward),
#: rounded (leaf), double border (output), stacked (group); hazards add a thick dashed vermilion border.
STYLES = {
    "graph-edges": Style(edge=MUTED, width=0.8),
    "graph-cut-edges": Style(edge=MUTED, width=0.8, dash=(1, 1.65)),
    "graph-boxes-shadow": Style(fill=STORAGE, edge=INK, width=0.8, zorder=3),
    "graph-boxes-backward": Style(fill=PAPER, edge=INK, width=0.8, zorder=3),
    "graph-boxes-leaf": Style(fill=STORAGE, edge=INK, width=0.8, zorder=3),
    "graph-boxes-output": Style(fill=PAPER, edge=INK, width=0.8, zorder=3),
    "graph-boxes-group": Style(fill=STORAGE, edge=INK, width=1.0, zorder=3),
    "graph-boxes-new": Style(edge=INK, width=2.2, zorder=4),
    "graph-boxes-cut": Style(fill=PAPER, edge=MUTED, width=0.8, dash=(3, 2), zorder=3),
    "graph-cut-edge": Style(edge=MUTED, width=0.8, dash=(3, 2)),
    "graph-cut-title": Style(family=MONO, size=FONT_SIZE, weight="bold", color=MUTED, zorder=5),
    "graph-cut-label": Style(family=SANS, size=SMALL_FONT_SIZE, color=MUTED, halo=True, zorder=6),
    "graph-boxes-hazard": Style(edge=STALE, width=2.4, dash=(4, 2), zorder=4),
    "graph-chip": Style(fill=PAPER, edge=MUTED, width=0.6, zorder=4),
    "graph-chip-gone": Style(fill=PAPER, edge=FAINT, width=0.6, dash=(2, 2), zorder=4),
    "graph-chip-stale": Style(fill=tint(STALE, 0.15), edge=STALE, width=1.4, zorder=4),
    "graph-edit": Style(edge=STALE, width=1.2, dash=(3, 2), zorder=6),
    "graph-title": Style(family=MONO, size=FONT_SIZE, weight="bold", color=INK, zorder=5, line_spacing=LINE_SPACING),
    "graph-detail": Style(family=MONO, size=FONT_SIZE, color=INK, zorder=5, line_spacing=LINE_SPACING),
    "graph-id": Style(family=MONO, size=SMALL_FONT_SIZE, color=MUTED, zorder=5),
    "graph-name": Style(family=MONO, size=FONT_SIZE, weight="bold", color=INK, zorder=5),
    "graph-former-name": Style(family=MONO, size=FONT_SIZE, color=MUTED, zorder=5),
    "graph-new": Style(family=SANS, size=SMALL_FONT_SIZE, weight="bold", color=INK, zorder=5),
    "graph-chip-text": Style(family=MONO, size=CHIP_FONT_SIZE, color=INK, zorder=5),
    # Warnings use DejaVu Sans, whose ⚠ is full size (the monospace one is tiny).
    "graph-warning": Style(family=SANS, size=FONT_SIZE, weight="bold", color=STALE, zorder=5),
    "graph-chip-warning": Style(family=SANS, size=CHIP_FONT_SIZE, weight="bold", color=STALE, zorder=5),
    "graph-edit-label": Style(family=MONO, size=CHIP_FONT_SIZE, weight="bold", color=STALE, halo=True, zorder=7),
    "graph-legend": Style(family=SANS, size=SMALL_FONT_SIZE, color=MUTED, zorder=5),
    "graph-message": Style(family=MONO, size=SMALL_FONT_SIZE, color=STALE, zorder=5),  # ⚠ stale, not drawn
    "graph-edge-count": Style(family=MONO, size=SMALL_FONT_SIZE, color=INK, zorder=2),
}
#: Legend entries, each shown only when the picture has what it explains.
_LEGEND = {
    "arrows": "arrows: gradient flow",
    "leaf": "rounded: leaf",
    "output": "double: output",
    "group": "stacked: group",
    "chip": "inner boxes: saved tensors",
    "hazard": "red dashed ⚠: changed in place since saved",
    "new": "thick: new this step",
    "cut": "dashed grey: cut off, no gradient flows",
}

_WARNING = "⚠"  # a box line starting with it is drawn as a warning, in graph-warning's font
_LINE = LINE_SPACING * FONT_SIZE
_CHIP_LINE = LINE_SPACING * CHIP_FONT_SIZE


@dataclass(frozen=True)
class _Chip:
    """One saved tensor as a small box inside its node's box: its text, its look, and the edit that made it stale."""

    text: str  # "result = b · (3,) · 12 B"
    style: str
    warning: str = ""  # "⚠ stale: saved v0, now v1" on a stale one
    edit: str = ""  # "mul_ → v1": the in-place write that changed it, when known
    edited_by: int | None = None  # the graph node of that write, when the graph holds it
    swatch: str = ""  # the style of the named tensor's colour, a bar at the chip's left ('' when unnamed)
    note: str = ""  # a line between the text and the warning ("output 0 of Exp": show_error's words of torch's)

    @property
    def size(self) -> tuple[float, float]:
        warning = text_width(self.warning, SANS, CHIP_FONT_SIZE, "bold") if self.warning else 0.0
        width = max(text_width(self.text, MONO, CHIP_FONT_SIZE) + (SWATCH if self.swatch else 0.0), warning)
        width = max(width, text_width(self.note, MONO, CHIP_FONT_SIZE))
        return width + 2 * CHIP_PAD_X, (1 + bool(self.note) + bool(self.warning)) * _CHIP_LINE + 2 * CHIP_PAD_Y


@dataclass(frozen=True)
class _Box:
    """One box: its kind (``output``, ``backward``, ``leaf`` or ``group``), texts, saved-tensor chips and marks."""

    item: int
    kind: str
    title: str
    lines: tuple[str, ...]
    stale: int
    chips: tuple[_Chip, ...] = ()
    below: tuple[str, ...] = ()
    new: bool = False
    fill: str = ""  # a named leaf's style: its tensor colour, as its chips show it ('' for the kind's own)
    tag: str = ""  # the node id shown at the top right ("#3"), '' when ids are not shown
    bound: str = ""  # the Python names bound to the tensor this node made ("b", "y, z"), drawn above the box
    former: str = ""  # names that were bound to it and have been rebound since, drawn greyed after them

    @property
    def size(self) -> tuple[float, float]:
        tag = text_width(self.tag, MONO, SMALL_FONT_SIZE) + 8 if self.tag else 0
        lines = self.lines + self.below
        widths = [text_width(self.title, MONO, FONT_SIZE) + tag] + [chip.size[0] for chip in self.chips]
        widths += [
            text_width(t, SANS, FONT_SIZE, "bold") if t[:1] == _WARNING else len(t) * MONO_CHAR_WIDTH * FONT_SIZE
            for t in lines
        ]
        height = (1 + len(lines)) * _LINE + sum(chip.size[1] + CHIP_GAP for chip in self.chips) + 2 * PAD_Y
        return max(widths) + 2 * PAD_X, height


def _stale_marker(saved) -> str:
    return f"{_WARNING} stale: saved v{saved.saved_version}, now v{saved.current_version}"


def edit_words(saved) -> str:
    """The in-place write that made a stale saved tensor stale, as an op name (``mul_``), '' when unknown."""
    if saved.edited_by_name is None:
        return ""
    if saved.edited_by_name.endswith("CopySlices"):
        return "a write through a view"
    return f"{forward_op_name(saved.edited_by_name)}_"


def _bytes_text(count: int) -> str:
    """``12 B``, ``4 KiB``, ``1.5 MiB``: a chip's size."""
    for unit in ("B", "KiB", "MiB"):
        if count < 1024:
            return f"{count} {unit}" if unit == "B" else f"{count:.3g} {unit}"
        count /= 1024
    return f"{count:.3g} GiB"


def _chip(saved, colours: dict, this_step: bool = False, note: str = "") -> _Chip:
    """A saved tensor's chip: name, shape, bytes, versions when stale (``this_step``: this step's) or why unknown;
    ``note``, when given, a line of its own under the text."""
    parts = [saved.attribute + (f" = {saved.name}" if saved.name else "")]
    if saved.shape is not None:
        parts.append(shape_text(saved.shape))
    if saved.nbytes is not None:
        size, held = _bytes_text(saved.nbytes), saved.storage_nbytes
        if held is not None and held > saved.nbytes:  # a view of part of a bigger storage, which it keeps alive
            size += f" of a {_bytes_text(held)} storage"
        elif held is not None and held < saved.nbytes:  # expanded (stride 0): its elements repeat fewer bytes
            size += f" read from a {_bytes_text(held)} storage"
        parts.append(size)
    why = {"freed": "freed by backward", "hooked": "packed by a hook", "unknown": "version unknown"}
    if saved.state in why and (saved.note or saved.state != "unknown"):
        parts.append(why[saved.state])
    text = visible(" · ".join(parts))
    swatch = f"graph-swatch-{colours[saved.name]}" if saved.name in colours else ""
    if not saved.stale:
        return _Chip(text, "graph-chip-gone" if saved.state in why else "graph-chip", swatch=swatch, note=note)
    op = edit_words(saved)
    edit = f"{op} → v{saved.current_version}" if op else ""
    warning = _stale_marker(saved) + (" · this step" if this_step else "")
    return _Chip(text, "graph-chip-stale", warning, edit, saved.edited_by, swatch, note)


def _node_box(
    node, show_values, show_saved, line_notes, colours, new_nodes, newly_stale, tag, bound, former, chip_notes=None
) -> _Box:
    """A node's box: shape, values, saved tensors as chips (stale ones always: they are the point), then the lines
    ``watch_inplace`` recorded for it; a leaf a chip names in the chip's colour; ``chip_notes``' line in a chip."""
    lines = []
    if node.kind == "leaf" and not node.label.startswith("leaf"):
        lines.append(f"leaf · {shape_text(node.shape)}")
    if node.kind == "output" and not node.label.startswith("output"):  # named after its Python name: say what it is
        lines.append(f"output · {shape_text(node.shape)}")
    if node.kind in ("leaf", "output") and show_values:
        lines.append(f"value: {node.value}")
        if node.kind == "leaf" or node.grad is not None:
            lines.append(f"grad: {node.grad}")
    for kept in node.kept:  # a custom Function's ctx attributes: held until the graph goes, whatever backward does
        size = f" · {_bytes_text(kept.storage_nbytes)}" if kept.storage_nbytes is not None else ""
        lines.append(f"{kept.attribute} · {shape_text(kept.shape)}{size} · kept on ctx, not freed by backward")
    chips = []
    for saved in node.saved:
        if saved.stale or (show_saved and len(chips) < _MAX_CHIPS):
            note = (chip_notes or {}).get((node.id, saved.attribute), "")
            chips.append(_chip(saved, colours, (node.id, saved.attribute) in newly_stale, note))
    below = [f"… {len(node.saved) - len(chips)} more saved"] if show_saved and len(node.saved) > len(chips) else []
    below.extend(line_notes.get(node.id, ()))  # from watch_inplace: who saved it, who changed it
    stale = sum(1 for s in node.saved if s.stale)
    fill = f"graph-boxes-leaf-{colours[node.label]}" if node.kind == "leaf" and node.label in colours else ""
    new = node.id in new_nodes
    title = visible(node.label)
    texts = (title, tuple(lines), stale, tuple(chips), tuple(below), new, fill, tag, bound, former)
    return _Box(node.id, node.kind, *texts)


def _wrap_list(text: str, width: int) -> list[str]:
    """Wrap at most ``width`` characters a line, breaking only after ", " or ": " (keeps "2 TBackward0" whole)."""
    pieces = []
    for piece in re.split(r"(?<=, )|(?<=: )", text):  # a piece too long for a line is broken at its spaces
        pieces.extend(re.split(r"(?<= )", piece) if len(piece.rstrip()) > width else [piece])
    lines = [""]
    for piece in pieces:
        if lines[-1] and len(lines[-1]) + len(piece.rstrip()) > width:
            lines.append("")
        lines[-1] += piece
    return [line.rstrip() for line in lines if line.strip()]


def _group_box(view: CollapsedGraph, item: int, show_saved: bool) -> _Box:
    """A group's box: its size, the ops inside (short names: a box per block repeats them), its saved tensors."""
    group = view.group(item)
    per_block = sum(c for _, c in group.counts)
    if group.repetitions > 1:
        head = f"{per_block} nodes in each of {group.repetitions} blocks"
    else:
        head = f"{group.module_type} · {per_block} nodes" if group.module_type else f"{per_block} nodes"
    lines = [head + ":", *_wrap_list(count_text((short_op_name(name), c) for name, c in group.counts), _WRAP)]
    saved = [(view.graph.nodes[m], s) for m in group.members for s in view.graph.nodes[m].saved]
    stale = [f"{_stale_marker(s)} ({node.name} {s.attribute})" for node, s in saved if s.stale]
    if show_saved and saved:
        lines.append(f"saved: {len(saved)}, {f'{len(stale)} stale' if stale else 'none stale'}")
    return _Box(item, "group", group.label, tuple(lines + stale), len(stale))


def _choose_view(graph: Graph, tensor, collapse, model) -> CollapsedGraph:
    """``collapse``'s grouping; for None on a big graph, the one leaving fewest boxes, preferring modules."""
    big = len(graph.nodes) > AUTO_COLLAPSE_ABOVE
    if collapse == "module" or (collapse is None and big and model is not None):
        view = collapse_by_module(tensor, model, graph)
        if collapse == "module" or len(view.items) <= AUTO_COLLAPSE_ABOVE:
            return view
    if collapse == "none" or (collapse is None and not big):
        return uncollapsed(graph)
    view = collapse_repeats(graph, merge_runs=True)  # a run of identical blocks is one "×N" box
    return view if view.groups or collapse == "repeats" else uncollapsed(graph)


def _first_nodes(names, shown: int = 3) -> str:
    """Node names, each once, the first ``shown`` of them, and how many more."""
    names = list(dict.fromkeys(names))
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def held_texts(held: HeldByGraph) -> list[str]:
    """What a graph still holds, in words for a summary: the saved tensors backward freed and those it has not, and
    the tensors custom Functions keep on ctx (none of it when there is nothing to say)."""
    texts = []
    if held.freed or held.freed_custom:
        freed = [plural(held.freed, "saved tensor")] if held.freed else []
        if held.freed_custom:  # how many tensors such a node saved is not readable once freed: not counted
            nodes = "custom Function node" if held.freed_custom == 1 else "custom Function nodes"
            freed.append(f"whatever {held.freed_custom} {nodes} saved (how many tensors is not known once freed)")
        text = f"{' and '.join(freed)} already freed by backward()"
        if held.saved:  # backward ran through part of the graph only: backward(inputs=...), autograd.grad
            names = [name for name, _ in held.saved]
            by = "a node" if len(set(names)) == 1 else "nodes"
            text += (
                f"; {plural(len(held.saved), 'saved tensor')} still held by {by} backward() did not run through "
                f"({_first_nodes(names)})"
            )
        texts.append(text)
    if held.kept:
        listed = ", ".join(f"{name} {item.attribute}" for name, item in held.kept[:3])
        more = f" and {len(held.kept) - 3} more" if len(held.kept) > 3 else ""
        it, lives = ("it", "it lives") if len(held.kept) == 1 else ("them", "they live")
        texts.append(
            f"{plural(len(held.kept), 'tensor')} kept on ctx ({listed}{more}): backward() does not free {it}; "
            f"{lives} as long as the graph"
        )
    if (held.freed or held.freed_custom) and (held.saved or held.kept):
        texts.append(f"memory still held by the graph: {_bytes_text(held.nbytes)} of storage")
    elif held.kept:
        texts.append(f"kept on ctx: {_bytes_text(sum(item.storage_nbytes or 0 for _, item in held.kept))} of storage")
    return texts


def _hazard_text(node_name: str, saved) -> str:
    if saved.attribute.startswith("checkpoint input"):  # kept by the checkpoint, not by the node
        return f"{saved.attribute} (first needed by {node_name}) v{saved.saved_version}, now v{saved.current_version}"
    named = f" = {saved.name}" if saved.name else ""
    edit = f" after {edit_words(saved)}" if edit_words(saved) else ""
    return f"{node_name} saved {saved.attribute}{named} v{saved.saved_version}, now v{saved.current_version}{edit}"


def _texts(graph: Graph, view: CollapsedGraph, items, show_values, beyond: int, drawn: set, notes, fitted=False):
    """The one-line summary (counts, groups, saved tensors, values, ``notes``) and the messages under the picture."""
    messages = []
    backward, leaves, edges = graph.counts  # of the whole graph, drawn or not
    output = ", 1 output" if any(n.kind == "output" for n in graph.nodes) else ""
    parts = [
        f"Backward graph of {graph.nodes[graph.root].label}: {plural(graph.total_nodes, 'node')} "
        f"({backward} backward, {plural(leaves, 'leaf', 'leaves')}{output}), {plural(edges, 'edge')}"
    ]
    if view.groups:
        parts.append(view.describe())
    if len(items) < len(view.items) or graph.truncated:
        parts.append(f"drawing {len(drawn)} of {graph.total_nodes} nodes ({len(items)} boxes)")
        why = (
            f"drawn whole, its text would be under {MIN_TEXT_PT:g} pt; pass collapse='repeats' or draw the graph of "
            "an intermediate tensor to see more"
            if fitted
            else "pass collapse='repeats' or a larger max_nodes to see more"
        )
        messages.append(
            f"… {plural(graph.total_nodes - len(drawn), 'more node')} not drawn (showing {len(drawn)} of "
            f"{graph.total_nodes}); {why}"
        )
    stale = [(n, s) for n in graph.nodes for s in n.saved if s.stale]
    total_stale = len(stale) + beyond
    if total_stale:
        listed = "; ".join(_hazard_text(n.name, s) for n, s in stale[:3])
        more = f"; … {total_stale - 3} more" if total_stale > 3 else ""
        raises = (
            "when it reaches the node that saved it" if total_stale == 1 else "when it reaches a node that saved one"
        )
        if any(custom_function_saver(n.name, s.attribute) for n, s in stale):
            raises += "; at a custom Function's, only if its backward reads ctx.saved_tensors"
        changed = f"⚠ {plural(total_stale, 'saved tensor')} changed in place (backward() raises {raises})"
        parts.append(f"{changed}: {listed}{more}")
        hidden = beyond + sum(1 for n, _ in stale if n.id not in drawn)
        if hidden:
            messages.append(f"⚠ {plural(hidden, 'stale saved tensor')} in nodes not drawn")
    else:
        parts.append(f"no saved tensor {'that could be read ' if graph.unseen else ''}was changed in place")
    if graph.unseen:
        parts.append("not checked: " + "; ".join(graph.unseen))
    savers: dict[str, list[str]] = {}  # x1 (MulBackward0, SinBackward0): the drawn nodes that saved a named tensor
    for name, saver in dict.fromkeys((s.name, n.name) for n in graph.nodes if n.id in drawn for s in n.saved):
        if name is not None:
            savers.setdefault(name, []).append(saver)
    if savers:
        parts.append("saved for backward: " + ", ".join(f"{name} ({', '.join(by)})" for name, by in savers.items()))
    parts.extend(held_texts(held_by_graph(graph)))
    if show_values:
        shown = [n for n in graph.nodes if n.kind in ("leaf", "output")][:6]
        grads = [f" (grad {n.grad})" if n.grad is not None or n.kind == "leaf" else "" for n in shown]
        parts.append("values: " + ", ".join(f"{n.label} = {n.value}{grad}" for n, grad in zip(shown, grads)))
    if notes:
        parts.append("; ".join(f"node {node_id}: {', '.join(texts)}" for node_id, texts in sorted(notes.items())))
    return visible("; ".join(parts) + "."), messages  # control characters in names written as escapes, as drawn


def _rounded(left: float, top: float, width: float, height: float) -> tuple:
    """A rectangle with corners rounded by 6 points as a polygon (a quarter circle in 5 points per corner)."""
    r = min(6.0, width / 2, height / 2)
    x0, x1, y0, y1 = left + r, left + width - r, top + r, top + height - r
    return tuple(
        (cx + r * math.cos(math.radians(start + 22.5 * k)), cy - r * math.sin(math.radians(start + 22.5 * k)))
        for cx, cy, start in ((x1, y1, -90), (x1, y0, 0), (x0, y0, 90), (x0, y1, 180))
        for k in range(5)
    )


def _text_items(lines, x: float, top: float, item: int) -> list:
    """Box lines from ``top`` down: a run of plain lines is one text (far fewer on big graphs), a warning its own."""
    items, k = [], 0
    for warning, run in groupby(lines, key=lambda line: line[:1] == _WARNING):
        run = list(run)
        if warning:
            for i, line in enumerate(run):
                items.append(Text(x + PAD_X, top + (k + i) * _LINE, line, "graph-warning", f"warning:{item}"))
        else:
            items.append(Text(x + PAD_X, top + k * _LINE, "\n".join(run), "graph-detail", f"detail:{item}"))
        k += len(run)
    return items


def _box_items(box: _Box, x: float, y: float, w: float, h: float) -> tuple[list, list]:
    """The shapes and texts of one box whose top-left corner is (x, y), and ``(chip, its Rect)`` of its chips."""
    if box.kind == "leaf":
        items = [Polygon(_rounded(x, y, w, h), box.fill or "graph-boxes-leaf")]
    elif box.kind == "output":
        items = [Rect(x, y, w, h, "graph-boxes-output"), Rect(x + 2, y + 2, w - 4, h - 4, "graph-boxes-output")]
    elif box.kind == "group":
        items = [Rect(x + 3, y + 3, w, h, "graph-boxes-shadow"), Rect(x, y, w, h, "graph-boxes-group")]
    elif box.kind == "cut":  # a tensor detach() cut off: drawn, greyed, where the graph would have gone on
        items = [Polygon(_rounded(x, y, w, h), "graph-boxes-cut")]
    else:
        items = [Rect(x, y, w, h, "graph-boxes-backward")]
    if box.stale:
        items.append(Rect(x - 3, y - 3, w + 6, h + 6, "graph-boxes-hazard"))
    elif box.new:
        items.append(Rect(x - 2, y - 2, w + 4, h + 4, "graph-boxes-new", f"new:{box.item}"))
    top = y + PAD_Y
    if box.tag:
        centre = x + PAD_X + (w - 2 * PAD_X - text_width(box.tag, MONO, SMALL_FONT_SIZE) - 8) / 2
        items.append(Text(x + w - PAD_X, top + 1, box.tag, "graph-id", f"node-id:{box.item}", anchor="end"))
    else:
        centre = x + w / 2
    title_style = "graph-cut-title" if box.kind == "cut" else "graph-title"
    items.append(Text(centre, top, box.title, title_style, f"label:{box.item}", anchor="middle"))
    if box.new:
        items.append(Text(x + w - PAD_X, y - 3, "new", "graph-new", f"new-label:{box.item}", "end", "bottom"))
    if box.bound:  # the learner's names for the tensor this node made, above its top-left corner (Python Tutor's)
        items.append(Text(x, y - 4, box.bound, "graph-name", f"name:{box.item}", "start", "bottom"))
    if box.former:  # names rebound since: greyed, after the current ones
        after = x + (text_width(box.bound + " ", MONO, FONT_SIZE, "bold") if box.bound else 0.0)
        items.append(Text(after, y - 4, box.former, "graph-former-name", f"former-name:{box.item}", "start", "bottom"))
    items.extend(_text_items(box.lines, x, top + _LINE, box.item))
    chip_top = top + (1 + len(box.lines)) * _LINE
    placed = []
    for k, chip in enumerate(box.chips):  # every chip as wide as the box allows: a width difference means nothing
        rect = Rect(x + PAD_X, chip_top, w - 2 * PAD_X, chip.size[1], chip.style, f"chip:{box.item}:{k}")
        items.append(rect)
        if chip.swatch:
            items.append(Rect(rect.x, rect.y, SWATCH - 2, rect.h, chip.swatch, f"swatch:{box.item}:{k}"))
        text_x, text_y = rect.x + (SWATCH if chip.swatch else 0.0) + CHIP_PAD_X, chip_top + CHIP_PAD_Y
        items.append(Text(text_x, text_y, chip.text, "graph-chip-text", f"chip-text:{box.item}:{k}"))
        if chip.note:
            items.append(Text(text_x, text_y + _CHIP_LINE, chip.note, "graph-chip-text", f"chip-note:{box.item}:{k}"))
        if chip.warning:
            below = (1 + bool(chip.note)) * _CHIP_LINE
            items.append(Text(text_x, text_y + below, chip.warning, "graph-chip-warning", f"warning:{box.item}"))
        placed.append((chip, rect))
        chip_top += rect.h + CHIP_GAP
    items.extend(_text_items(box.below, x, chip_top, box.item))
    return items, placed


def _edit_items(chip: _Chip, rect: Rect, target, right: float) -> list:
    """The in-place write drawn: a dashed vermilion edge from the chip to the box of the node that wrote the tensor
    (its right side, run ``EDIT_GAP`` right of ``right``), labelled ``mul_ → v1``; just the label when not drawn."""
    key = rect.id.removeprefix("chip:")
    y = rect.y + rect.h / 2
    label_at = (rect.x + rect.w + 3, y - 1)
    items = []
    if target is not None:
        tx, ty, tw, th = target
        run = max(right, tx + tw) + EDIT_GAP
        points = ((rect.x + rect.w, y), (run, y), (run, ty + th / 2), (tx + tw + 3, ty + th / 2))
        items.append(Arrow(points, "graph-edit", f"edit:{key}"))
        label_at = (run + 3, (y + ty + th / 2) / 2)
    items.append(Text(*label_at, chip.edit, "graph-edit-label", f"edit-label:{key}", baseline="middle"))
    return items


def _cut_edge_items(points, item: int) -> list:
    """A cut edge: dashed grey, broken in the middle of its first segment, labelled there ``detach(): no gradient``.

    It has no arrowhead: in these pictures an arrow means gradient flow, and none flows along a cut.
    """
    (ax, ay), (bx, by) = points[0], points[1]
    gap = min(8.0, abs(by - ay) / 3)
    mid = ((ax + bx) / 2, (ay + by) / 2)
    t = gap / 2 / max(1e-9, math.hypot(bx - ax, by - ay))
    before = (mid[0] - (bx - ax) * t, mid[1] - (by - ay) * t)
    after = (mid[0] + (bx - ax) * t, mid[1] + (by - ay) * t)
    return [
        Line((points[0], before), "graph-cut-edge", f"cut-edge:{item}"),
        Line((after, *points[1:]), "graph-cut-edge", f"cut-end:{item}"),
        Text(mid[0] + 5, mid[1], "✂ detach(): no gradient", "graph-cut-label", f"cut-label:{item}", baseline="middle"),
    ]


def _detached(graph: Graph, names: dict, own: set, bound: dict) -> list[tuple[int, str, int | None]]:
    """``(node id, name, node of the named tensor or None)`` for each drawn node that saved a named tensor which
    requires grad but to whose node no path leads from it: the node was given it detached (``x.detach()``, ``x.data``),
    and the gradient stops there. The named tensor's node is its leaf, or the node that made it (None: not drawn)."""
    children: dict[int, list[int]] = {}
    for a, b in graph.edges:
        children.setdefault(a, []).append(b)

    def reach(start: int) -> set:
        seen, stack = {start}, [start]
        while stack:
            for c in children.get(stack.pop(), ()):
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return seen

    node_of = {n.label: n.id for n in graph.nodes if _named_leaf(n)}
    node_of.update({name: i for i, bound_here in bound.items() for name in bound_here})
    found = []
    for node in graph.nodes:
        if node.id not in own or node.kind != "backward":
            continue
        # a stale one was changed in place since, which gave it a new grad_fn: not a cut
        for name in dict.fromkeys(s.name for s in node.saved if s.name is not None and not s.stale):
            tensor = names.get(name)
            if tensor is None or not tensor.requires_grad or (node.id, name) in {(f[0], f[1]) for f in found}:
                continue
            target = node_of.get(name)
            if target is not None and (target in reach(node.id) or node.id in reach(target)):
                continue  # its gradient flows (or it is what this node made, changed in place since)
            found.append((node.id, name, target if target in own else None))
    return found


def _legend_entries(boxes, layout: GraphLayout, cut: bool = False) -> list[str]:
    """The legend's entries for what this picture draws (``cut``: a detached tensor's cut edge)."""
    shown = {"arrows"} if layout.edges else set()
    shown |= {"cut"} if cut else set()
    for box in boxes.values():
        marks = {"chip": box.chips, "hazard": box.stale, "new": box.new}
        shown |= {box.kind, *(key for key, on in marks.items() if on)}
    return [text for key, text in _LEGEND.items() if key in shown]


def _legend_width(text: str) -> float:
    """A legend line's width, estimated (DejaVu Sans averages under 0.6 font sizes a character here), so that a
    picture without warnings is planned without loading matplotlib's fonts."""
    return len(text) * 0.6 * SMALL_FONT_SIZE


def _legend_lines(entries: list[str], width: float) -> list[str]:
    """The legend's entries joined by " · " into as few lines of at most ``width`` points as they fit in."""
    lines: list[str] = []
    for entry in entries:
        if lines and _legend_width(f"{lines[-1]} · {entry}") <= width:
            lines[-1] += f" · {entry}"
        else:
            lines.append(entry)
    return lines


def _scene(layout: GraphLayout, boxes, cut, messages, item_of, styles: dict, summary: str, cut_edges=()) -> Scene:
    """The legend, messages, boxes, edges, chips and in-place edits of a picture, y flipped from the placement's."""
    edits = [c for b in boxes.values() for c in b.chips if c.edit]
    edit_room = max((text_width(c.edit, MONO, CHIP_FONT_SIZE, "bold") + EDIT_GAP + 6 for c in edits), default=0.0)
    entries = _legend_entries(boxes, layout, bool(cut_edges))
    legend_width = _legend_width(" · ".join(entries))
    content_width = max(layout.width + edit_room, 48 * MONO_CHAR_WIDTH * SMALL_FONT_SIZE, min(legend_width, 250.0))
    legend_lines = _legend_lines(entries, content_width)
    chars = max(30, int(content_width / (MONO_CHAR_WIDTH * SMALL_FONT_SIZE)))
    # the window's note in grey; a ⚠ line (stale tensors in nodes not drawn) in the stale colour, under it
    note_lines = [w for m in messages if not m.startswith(_WARNING) for w in textwrap.wrap(m, chars)]
    stale_lines = [w for m in messages if m.startswith(_WARNING) for w in textwrap.wrap(m, chars)]
    message_lines = note_lines + stale_lines
    small_line = LINE_SPACING * SMALL_FONT_SIZE
    top_band = len(legend_lines) * small_line + PAD_Y * 2 if legend_lines else 0.0
    stub = LAYER_GAP * 0.6 if cut else 0.0  # dotted stubs under boxes whose children are not drawn
    bottom_band = stub + ((len(message_lines) * small_line + PAD_Y * 2) if message_lines else 0.0)
    left = -(content_width - edit_room - layout.width) / 2  # a graph narrower than the legend sits in the middle
    x0, y1 = left - MARGIN, layout.height + top_band + MARGIN  # the placement's top-left corner (y up)

    def at(x: float, y: float) -> tuple[float, float]:
        return x - x0, y1 - y

    items: list = []
    for route in layout.edges:
        if (route.source, route.target) in cut_edges:
            items.extend(_cut_edge_items([at(x, y) for x, y in route.points], route.target))
            continue
        items.append(Arrow(tuple(at(x, y) for x, y in route.points), "graph-edges"))
        if route.count > 1:  # x * x: two gradients flow along the same edge
            (ax, ay), (bx, by) = route.points[:2]
            where = at((ax + bx) / 2 + 3, (ay + by) / 2 + 4)
            items.append(Text(*where, f"×{route.count}", "graph-edge-count", "edge-count"))
    for p in map(layout.position, cut):
        items.append(Line((at(p.x, p.bottom), at(p.x, p.bottom - stub)), "graph-cut-edges"))
    corners = {p.id: (*at(p.left, p.top), p.width, p.height) for p in layout.nodes}
    edited = []
    for p in layout.nodes:
        box_items, chips = _box_items(boxes[p.id], *corners[p.id])
        items.extend(box_items)
        edited.extend((p.id, chip, rect) for chip, rect in chips if chip.edit)
    right = at(layout.width, 0)[0]
    for owner, chip, rect in edited:
        target = None if chip.edited_by is None else item_of(chip.edited_by)
        items.extend(_edit_items(chip, rect, corners.get(target) if target != owner else None, right))
    if legend_lines:
        where = at(left, layout.height + top_band - PAD_Y)
        items.append(Text(*where, "\n".join(legend_lines), "graph-legend", "legend"))
    if note_lines:  # its style only in a picture that has one: other pictures' style sheets stay as they were
        styles = {**styles, "graph-note": replace(styles["graph-message"], color=MUTED)}
        items.append(Text(*at(left, -stub - PAD_Y), "\n".join(note_lines), "graph-note", "message"))
    if stale_lines:
        below = -stub - PAD_Y - len(note_lines) * small_line
        items.append(Text(*at(left, below), "\n".join(stale_lines), "graph-message", "message-stale"))
    height = layout.height + top_band + bottom_band + 2 * MARGIN
    return Scene(content_width + 2 * MARGIN, height, tuple(items), styles, summary)


def _named_leaf(node) -> bool:
    """A leaf labelled by a name (from ``names`` or the model's parameters), not by its shape."""
    return node.kind == "leaf" and not node.label.startswith("leaf")


def _tensor_colours(graph: Graph, drawn: set, order: list) -> dict:
    """``{name: tensor colour index}`` of the named saved tensors and named leaves drawn in boxes of their own (one rule
    for ``draw_graph``, ``show_error`` and the stepper): first by place in ``order`` (the ``names`` given, so the
    panels of a comparison agree), the rest as the graph meets them."""
    found = dict.fromkeys(s.name for n in graph.nodes if n.id in drawn for s in n.saved if s.name is not None)
    found.update(dict.fromkeys(n.label for n in graph.nodes if n.id in drawn and _named_leaf(n)))
    ranked = [*order, *(name for name in found if name not in order)]
    return {name: ranked.index(name) for name in found}


def _check_marks(new_nodes, newly_stale) -> tuple[frozenset, frozenset]:
    """``new_nodes`` (node ids) and ``newly_stale`` ((node id, attribute) pairs) as frozensets, checked."""
    sets = (set, frozenset, list, tuple)
    if not isinstance(new_nodes, sets) or not all(isinstance(i, int) and not isinstance(i, bool) for i in new_nodes):
        raise TypeError(f"new_nodes must be a set of node ids (int), got {describe(new_nodes)}")
    pairs = isinstance(newly_stale, sets) and all(isinstance(p, tuple) and len(p) == 2 for p in newly_stale)
    if not pairs or not all(isinstance(i, int) and isinstance(attribute, str) for i, attribute in newly_stale):
        raise TypeError(f"newly_stale must be a set of (node id, saved attribute) pairs, got {describe(newly_stale)}")
    return frozenset(new_nodes), frozenset(newly_stale)


def _check_ids(show_ids) -> dict | bool:
    """``show_ids``: True/False, or a dict from node id to the number to show for it (the stepper's creation order)."""
    if isinstance(show_ids, bool):
        return show_ids
    numbers = isinstance(show_ids, dict) and all(
        isinstance(v, int) and not isinstance(v, bool) for pair in show_ids.items() for v in pair
    )
    if not numbers:
        raise TypeError(f"show_ids must be True, False or a dict from node id to number, got {describe(show_ids)}")
    return show_ids


def _check_chip_notes(notes) -> dict:
    """``chip_notes``: a dict from ``(node id, saved attribute)`` to a line of text, or None (none)."""
    if notes is None:
        return {}
    fine = isinstance(notes, dict) and all(
        isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], int) and isinstance(key[1], str)
        for key in notes
    )
    if not fine or not all(isinstance(line, str) for line in notes.values()):
        raise TypeError(f"chip_notes must be a dict from (node id, saved attribute) to str, got {describe(notes)}")
    return {key: visible(line) for key, line in notes.items()}


def _check_bound(bound, argument: str = "bound_names") -> dict:
    """``bound_names`` (``rebound_names``): a dict from node id to the Python names bound (once bound) to the tensor
    that node made."""
    if bound is None:
        return {}
    fine = isinstance(bound, dict) and all(
        isinstance(k, int) and isinstance(v, (list, tuple)) and all(isinstance(n, str) for n in v)
        for k, v in bound.items()
    )
    if not fine:
        raise TypeError(f"{argument} must be a dict from node id to a list of names (str), got {describe(bound)}")
    return bound


def bound_names_of(tensor, graph: Graph, names: dict) -> dict:
    """``{node id: [names]}``: the ``names`` bound to a tensor some backward node of the graph made (``b`` for the
    ``ExpBackward0`` of ``b = a.exp()``); leaves and the output carry their name as their title already."""
    made: dict = {}
    for name, value in names.items():
        fn = _grad_fn_or_none(value) if value is not tensor else None
        if fn is not None:
            made.setdefault(id(fn), []).append(name)
    if not made:
        return {}
    fns = aligned_fns(tensor, graph)
    return {
        i: made[id(fn)]
        for i, fn in enumerate(fns)
        if fn is not None and id(fn) in made and graph.nodes[i].kind == "backward"
    }


def _grad_fn_or_none(tensor: torch.Tensor):
    try:
        return tensor.grad_fn
    except RuntimeError:  # a view autograd refuses to rebuild (a split() piece whose base changed)
        return None


def _fits(scene: Scene) -> bool:
    return scene.width <= MAX_WIDTH_PT and scene.height <= MAX_HEIGHT_PT


def _planned(
    t_or_graph, names, show_values, show_saved, collapse, max_nodes, model, show_ids, extras=((),) * 2 + (None,) * 4
):
    """Check the arguments, read the graph, choose what to draw and place it: (scene, view drawn, placement).

    ``extras``: the stepper's new nodes, newly stale chips and the Python names bound to nodes, the colour order,
    the names rebound since, and show_error's lines in chips."""
    require_type(t_or_graph, (torch.Tensor, Graph), "t_or_graph", "a torch.Tensor or a Graph (or a list of them)")
    tensor = require_graph_tensor(t_or_graph, "t_or_graph") if isinstance(t_or_graph, torch.Tensor) else None
    if tensor is None and names is not None:
        raise ValueError("names only applies when t_or_graph is a tensor; a Graph already has its labels")
    require_bool(show_values, "show_values")
    require_bool(show_saved, "show_saved")
    require_positive_int(max_nodes, "max_nodes")
    require_type(collapse, (str, type(None)), "collapse", "None or one of 'none', 'repeats', 'module'")
    if collapse not in COLLAPSE_CHOICES:
        raise ValueError(f"collapse must be None or one of 'none', 'repeats', 'module', got {collapse!r}")
    require_type(model, (torch.nn.Module, type(None)), "model", "a torch.nn.Module or None")
    if collapse == "module" and model is None:
        raise ValueError("collapse='module' needs model=<the nn.Module that computed the tensor>")
    if collapse == "module" and tensor is None:
        raise ValueError("collapse='module' needs t_or_graph to be the tensor (its nodes say when they were made)")
    require_type(names, (dict, type(None)), "names", "a dict from name to tensor")
    new_nodes, newly_stale, bound, order, former, chip_notes = extras
    if order is not None and not (isinstance(order, (list, tuple)) and all(isinstance(n, str) for n in order)):
        raise TypeError(f"colour_order must be a list of names (str) or None, got {describe(order)}")
    order = list(order) if order is not None else list(names or {})
    new_nodes, newly_stale = _check_marks(new_nodes, newly_stale)
    show_ids, bound, former = _check_ids(show_ids), _check_bound(bound), _check_bound(former, "rebound_names")
    chip_notes = _check_chip_notes(chip_notes)
    labels = {**(dict(model.named_parameters()) if model is not None else {}), **(names or {})}
    graph = t_or_graph if tensor is None else autograd_graph(tensor, names=labels or None)
    if tensor is not None and names:
        bound = {**bound_names_of(tensor, graph, names), **bound}
    line_notes = watch_notes(tensor) if tensor is not None else {}

    def plan(view: CollapsedGraph, limit: int, fitted: bool = False):
        items, cut = view.capped(limit)
        drawn = {m for i in items for m in view.members(i)}
        own = {i for i in items if not view.is_group(i)}
        hazards = inplace_hazards(tensor) if graph.truncated and tensor is not None else ()
        beyond = sum(1 for h in hazards if h.node_id >= len(graph.nodes))  # stale, in nodes autograd_graph did not keep
        summary, messages = _texts(graph, view, items, show_values, beyond, drawn, line_notes, fitted)
        colours = _tensor_colours(graph, own, order)
        styles = dict(STYLES)
        for k in colours.values():
            styles[f"graph-swatch-{k}"] = Style(fill=tensor_colour(k), edge=MUTED, width=0.6, zorder=5)
            styles[f"graph-boxes-leaf-{k}"] = replace(STYLES["graph-boxes-leaf"], fill=tensor_colour(k))
        boxes = {i: _group_box(view, i, show_saved) for i in items if view.is_group(i)}
        for node in (view.graph.nodes[i] for i in items if i not in boxes):
            number = show_ids.get(node.id) if isinstance(show_ids, dict) else node.id if show_ids else None
            tag = "" if number is None else f"#{number}"  # a dict numbers only the nodes it holds
            was = ", ".join(former.get(node.id, ()))
            marks = (new_nodes, newly_stale, tag, ", ".join(bound.get(node.id, ())), f"(was {was})" if was else "")
            boxes[node.id] = _node_box(node, show_values, show_saved, line_notes, colours, *marks, chip_notes)
        restricted = view.restricted(items)
        detached = _detached(graph, names, own, bound) if tensor is not None and names else []
        if detached:  # draw each cut: a dashed edge to the tensor's box, or to a grey box of it when not drawn
            ghost, extra_items, extra_edges = len(graph.nodes) + len(view.groups), [], []
            for node_id, name, target in detached:
                if target is None:
                    what = f"{'leaf' if names[name].is_leaf else 'tensor'} · {shape_text(names[name].shape)}"
                    boxes[ghost] = _Box(ghost, "cut", visible(name), (what,), 0)
                    target, ghost = ghost, ghost + 1
                    extra_items.append(target)
                extra_edges.append((node_id, target))
            restricted = replace(  # the same graph, groups and grouping, with the cut edges added
                restricted,
                items=restricted.items + tuple(extra_items),
                edges=restricted.edges + tuple(extra_edges),
                edge_counts=restricted.edge_counts + (1,) * len(extra_edges),
            )
            said = ", ".join(f"{name} saved by {graph.nodes[i].name}" for i, name, _ in detached)
            summary = f"{summary[:-1]}; detached, so no gradient flows back to it: {said}."
        layout = graph_layout(restricted, {i: b.size for i, b in boxes.items()})
        cut_edges = (
            {(i, t) for i, t in restricted.edges[len(restricted.edges) - len(detached) :]} if detached else set()
        )
        scene = _scene(layout, boxes, cut, messages, view.item_of, styles, summary, cut_edges)
        return scene, view, layout, len(items)

    view = _choose_view(graph, tensor, collapse, model)
    planned = plan(view, max_nodes)
    if not _fits(planned[0]) and collapse is None and not view.groups:  # too big to read: collapse repeats first
        repeats = collapse_repeats(graph, merge_runs=True)
        if repeats.groups:
            view = repeats
            planned = plan(view, max_nodes)
    while not _fits(planned[0]) and planned[3] > 1:  # still too big: a window of the boxes nearest the output
        scene, boxes = planned[0], planned[3]
        # width squared: a window loses width more slowly than boxes (its widest layers stay); height goes with them
        shrink = min((MAX_WIDTH_PT / scene.width) ** 2, MAX_HEIGHT_PT / scene.height, 0.9)
        planned = plan(view, max(1, min(boxes - 1, int(boxes * shrink))), fitted=True)
    return planned[:3]


def _planned_all(t_or_graph, captions, *options, marks=((), (), None, None, None, None)):
    """``_planned`` (``options``: names to show_ids) for one graph, or for each graph of a comparison side by side."""
    if not isinstance(t_or_graph, (list, tuple)):
        if captions is not None:
            raise ValueError("captions only applies when t_or_graph is a list of tensors or Graphs (a comparison)")
        return _planned(t_or_graph, *options, marks)
    if not t_or_graph:
        raise ValueError("t_or_graph must hold at least one tensor or Graph")
    one_each = isinstance(captions, (list, tuple)) and len(captions) == len(t_or_graph)
    if captions is not None and not (one_each and all(isinstance(c, str) for c in captions)):
        raise ValueError(f"captions must be one str per graph ({len(t_or_graph)}), got {captions!r}")
    if any(marks[:2]) or any(m is not None for m in marks[2:]):
        raise ValueError(
            "new_nodes, newly_stale, bound_names, colour_order, rebound_names and chip_notes only apply to one graph"
        )
    scenes, views, layouts = zip(*(_planned(panel, *options) for panel in t_or_graph))
    return side_by_side(scenes, captions), views, layouts


def graph_scene(
    t_or_graph,
    names: dict | None = None,
    show_values: bool = False,
    show_saved: bool = True,
    collapse: str | None = None,
    max_nodes: int = DEFAULT_DRAW_NODES,
    model=None,
    captions=None,
    new_nodes=(),
    newly_stale=(),
    show_ids=False,
    bound_names=None,
    colour_order=None,
    rebound_names=None,
    chip_notes=None,
) -> Scene:
    """Plan the picture of a backward graph: output at the top, then backward nodes, leaves at the bottom.

    Each box carries its saved tensors as chips of the box's width: the attribute, the named tensor it is
    (``result = b``, from ``names``), shape and bytes; with ``show_ids`` its node id (``#3``). A named leaf, and the
    output when ``names`` holds it (``loss``), is titled by its name; a node that made a named tensor has the name
    above its box; every named leaf is filled with its tensor colour, the colour its chips' bars have. A saved tensor
    changed in place since gets a vermilion chip with ``⚠ stale: saved v0, now v1``, its box a thick dashed border,
    and, when the write is known (the tensor is named), a dashed vermilion edge labelled ``mul_ → v1`` to the box of
    the write's node. Big graphs are collapsed (a run of identical blocks into one ``×N`` box) and, past
    ``max_nodes`` boxes or past ``MAX_WIDTH_PT`` × ``MAX_HEIGHT_PT`` (text is never scaled below ``MIN_TEXT_PT``),
    cut to the boxes nearest the output with a message. Ids: ``label:<item>``, ``node-id:<item>``, ``name:<item>``,
    ``detail:<item>``, ``warning:<item>``, ``chip:<item>:<k>``, ``chip-note:<item>:<k>``, ``edit:<item>:<k>``,
    ``edit-label:<item>:<k>``, ``new:<item>``, ``edge-count``, ``legend``, ``message`` (the window's note, grey),
    ``message-stale`` (⚠ stale tensors in nodes not drawn); in a
    comparison each prefixed with ``<panel>/``.

    Args:
        t_or_graph: a tensor (its graph is read with ``autograd_graph``) or a ``Graph``; or a list of them, drawn
            side by side (a comparison: clone vs detach).
        names: dict from name to tensor naming leaves and saved tensors (``{"x1": x1}``); only with tensors.
        show_values: also print the values and ``.grad`` of leaves and the output.
        show_saved: draw saved tensors in each box (stale ones are drawn regardless).
        collapse: ``"none"``, ``"repeats"`` (repeated blocks: residual blocks, unrolled loops), ``"module"`` (a box
            per submodule of ``model``), or None: only graphs of over ``AUTO_COLLAPSE_ABOVE`` nodes, by module
            when ``model`` is given, else by repeats.
        max_nodes: draw at most this many boxes (the ones nearest the output).
        model: the ``nn.Module`` that computed the tensor; its parameter names label the leaves.
        captions: one caption per graph of a comparison (only with a list).
        new_nodes: ids of nodes to mark as new (a thick border and "new": ``GraphStepper``'s step change).
        newly_stale: ``(node id, saved attribute)`` pairs whose chips say "this step".
        show_ids: draw each node's id (``#3``) at its box's top right: for text that names boxes by id
            (``show_error``, the stepper's table); a dict from node id to number shows those numbers instead.
        bound_names: dict from node id to the Python names bound to the tensor it made, drawn above its box
            (from ``names`` they are found by themselves; the stepper passes its own).
        colour_order: names in the order they take the tensor colours (default: ``names``' order, then the rest as
            the graph meets them); the stepper passes its variables' so a tensor keeps its colour from step to step.
        rebound_names: dict from node id to names once bound to the tensor it made and rebound since (``y`` after
            ``y = y * 2``), drawn greyed after the current names as ``(was y)``: the stepper's.
        chip_notes: dict from ``(node id, saved attribute)`` to a line drawn in that saved tensor's chip, between its
            text and its ``⚠`` line (``show_error``: the words of torch's message that name the tensor's operation).

    Returns:
        The ``Scene``; its ``title`` is the one-line summary of what is drawn.

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        ValueError: ``collapse`` not in ``COLLAPSE_CHOICES``, ``collapse="module"`` without a model or a tensor,
            ``names`` with a Graph, ``max_nodes`` < 1, or ``captions`` not one str per graph.
    """
    options = (names, show_values, show_saved, collapse, max_nodes, model, show_ids)
    marks = (new_nodes, newly_stale, bound_names, colour_order, rebound_names, chip_notes)
    return _planned_all(t_or_graph, captions, *options, marks=marks)[0]


def draw_graph(
    t_or_graph,
    names: dict | None = None,
    ax=None,
    show_values: bool = False,
    show_saved: bool = True,
    collapse: str | None = None,
    max_nodes: int = DEFAULT_DRAW_NODES,
    model=None,
    captions=None,
    show_ids: bool = False,
):
    """Draw ``graph_scene``'s picture with matplotlib, into ``ax`` (an Axes) or, when None, a new figure.

    Returns:
        The Figure, with ``fig.summary`` (one line saying what is drawn), ``fig.scene`` (the ``Scene``),
        ``fig.graph_view`` and ``fig.graph_layout`` (the ``CollapsedGraph`` and ``GraphLayout`` drawn; tuples of
        them for a comparison). A big graph saves to SVG 2-3× faster with
        ``matplotlib.rc_context({"svg.fonttype": "none"})`` (text kept as text).

    Raises:
        TypeError, ValueError: as ``graph_scene``, or ``ax`` is not an Axes.
    """
    ax = render_mpl.require_axes(ax)
    options = (names, show_values, show_saved, collapse, max_nodes, model, show_ids)
    scene, view, layout = _planned_all(t_or_graph, captions, *options)
    fig = render_mpl.render(scene, ax=ax)
    fig.summary, fig.scene, fig.graph_view, fig.graph_layout = scene.title, scene, view, layout
    return render_mpl.with_summary(fig, scene.title)  # a notebook shows the summary as the figure's text


def graph_svg(
    t_or_graph,
    names: dict | None = None,
    show_values: bool = False,
    show_saved: bool = True,
    collapse: str | None = None,
    max_nodes: int = DEFAULT_DRAW_NODES,
    model=None,
    captions=None,
    show_ids: bool = False,
) -> str:
    """``graph_scene``'s picture as an SVG document (a str), its summary the ``<title>``, without matplotlib.

    A 1,000-node graph takes a fraction of a second (``savefig(format="svg")`` takes seconds). Show it in Jupyter
    with ``IPython.display.SVG(tl.graph_svg(y))``. Raises as ``graph_scene``.
    """
    scene = graph_scene(
        t_or_graph, names, show_values, show_saved, collapse, max_nodes, model, captions, show_ids=show_ids
    )
    return render_svg.svg(scene)
