"""Pictures of the backward graph: a layered layout (pure data) and its matplotlib drawing.

``graph_layout`` places a ``Graph`` (or a ``CollapsedGraph``) in layers, output at the top, in the
Sugiyama style: longest-path layering, dummy nodes on edges that span several layers, barycenter
ordering sweeps that keep the ordering with the fewest crossings, then x positions that pull every node
towards its neighbours without overlaps (isotonic regression per layer). It is plain data and is tested
without drawing.

``draw_graph`` draws what the model layer says (``autograd_graph``, ``graph_groups``); it computes no
fact about the graph itself (``show_error``, which draws it for an error, is in ``tools/errors.py``).

matplotlib is imported inside the drawing functions: importing this module draws nothing and changes no
matplotlib state. Figures are made with ``matplotlib.figure.Figure``, not pyplot, so they are not kept
alive by pyplot's figure list and show exactly once when a notebook cell returns them.
"""

from __future__ import annotations

import functools
import math
import re
import textwrap
from dataclasses import dataclass, field

import torch

from ..common.checks import describe, require_bool, require_positive_int, shape_text
from ..facts.graph import Graph, autograd_graph, inplace_hazards
from .graph_groups import CollapsedGraph, collapse_by_module, collapse_repeats, count_text, uncollapsed
from .render_mpl import bare_figure, require_axes

# Sizes are in points at scale 1. Text is monospace (DejaVu Sans Mono ships with matplotlib), so a
# line's width is known without a renderer: each character advances 0.602 font sizes. Agg rounds each
# advance to whole pixels, which at 72-100 dpi makes a line up to ~8% wider, so boxes are sized with
# 0.66 font sizes a character.
FONT_SIZE = 8.0
# Family lists end in a generic name: an SVG saved with svg.fonttype="none" then still falls back to a
# monospace font where DejaVu is not installed.
FONT_FAMILY = ["DejaVu Sans Mono", "monospace"]
WARNING_FAMILY = ["DejaVu Sans", "sans-serif"]
CHAR_WIDTH = 0.66
LINE_SPACING = 1.2  # matplotlib puts consecutive lines 1.2 font sizes apart at linespacing=1.2
PAD_X = 6.0
PAD_Y = 4.0
NODE_GAP = 16.0
LAYER_GAP = 26.0
DUMMY_WIDTH = 4.0
MARGIN = 10.0

#: Ordering sweeps (one down and one up each) ``graph_layout`` runs at most.
DEFAULT_SWEEPS = 12
#: ``draw_graph(collapse=None)`` collapses graphs with more nodes than this.
AUTO_COLLAPSE_ABOVE = 60
#: ``draw_graph`` draws at most this many boxes unless told otherwise.
DEFAULT_DRAW_NODES = 150
#: The largest figure ``draw_graph`` makes (width, height in inches); bigger pictures are scaled down.
MAX_FIGURE_INCHES = (30.0, 60.0)

COLLAPSE_CHOICES = (None, "none", "repeats", "module")
_MAX_SAVED_LINES = 4
_WRAP = 36

# ----------------------------------------------------------------------------------------------------
# Layout (pure data)


@dataclass(frozen=True)
class NodePosition:
    """Where one item (a graph node or a group) sits: its layer (0 = top), its order among the layer's items
    (0 = leftmost; the dummy points of long edges are not counted), its centre and size."""

    id: int
    layer: int
    order: int
    x: float
    y: float
    width: float
    height: float

    @property
    def left(self) -> float:
        return self.x - self.width / 2

    @property
    def right(self) -> float:
        return self.x + self.width / 2

    @property
    def top(self) -> float:
        return self.y + self.height / 2

    @property
    def bottom(self) -> float:
        return self.y - self.height / 2


@dataclass(frozen=True)
class EdgeRoute:
    """The polyline of one edge, from the bottom of ``source`` to the top of ``target``.

    ``count`` is how many graph edges it stands for (``x * x`` sends two gradients to ``x``);
    ``reversed`` marks an edge drawn upwards to break a cycle (only possible between groups).
    """

    source: int
    target: int
    points: tuple[tuple[float, float], ...]
    count: int = 1
    reversed: bool = False


@dataclass(frozen=True)
class GraphLayout:
    """Positions of every item and route of every edge; ``crossings`` counts edge crossings between
    adjacent layers (long edges counted through their dummy nodes), ``initial_crossings`` the same for
    the ordering before any sweep. Coordinates are points, y up: the output is at the top.
    """

    nodes: tuple[NodePosition, ...]
    edges: tuple[EdgeRoute, ...]
    layers: tuple[tuple[int, ...], ...]
    crossings: int
    initial_crossings: int
    width: float
    height: float
    dummies: int
    _by_id: dict = field(default_factory=dict, repr=False, compare=False)

    def position(self, item: int) -> NodePosition:
        return self._by_id[item]


def _box_size(lines: int, longest: int) -> tuple[float, float]:
    return longest * CHAR_WIDTH * FONT_SIZE + 2 * PAD_X, lines * LINE_SPACING * FONT_SIZE + 2 * PAD_Y


def _view_of(graph) -> CollapsedGraph:
    if isinstance(graph, CollapsedGraph):
        return graph
    if isinstance(graph, Graph):
        return uncollapsed(graph)
    raise TypeError(f"graph must be a Graph (from autograd_graph) or a CollapsedGraph, got {describe(graph)}")


def _item_label(view: CollapsedGraph, item: int) -> str:
    return view.group(item).label if view.is_group(item) else view.graph.nodes[item].label


def graph_layout(graph, sizes: dict | None = None, sweeps: int = DEFAULT_SWEEPS) -> GraphLayout:
    """Lay out a backward graph in layers, output at the top, with few edge crossings.

    Deterministic: the same graph and sizes give the same layout.

    Args:
        graph: a ``Graph`` (from ``autograd_graph``) or a ``CollapsedGraph`` (from ``graph_groups``).
        sizes: optional dict from item id to (width, height) in points; items left out get a one-line box
            sized to their label.
        sweeps: how many barycenter ordering sweeps to try (0 keeps the initial ordering).

    Returns:
        A ``GraphLayout``.

    Raises:
        TypeError: ``graph`` is neither, ``sizes`` not a dict of number pairs, ``sweeps`` not an int.
        ValueError: a size is not positive, or ``sweeps`` is negative.
    """
    view = _view_of(graph)
    if isinstance(sweeps, bool) or not isinstance(sweeps, int):
        raise TypeError(f"sweeps must be an int, got {describe(sweeps)}")
    if sweeps < 0:
        raise ValueError(f"sweeps must be 0 or more, got {sweeps}")
    if sizes is not None and not isinstance(sizes, dict):
        raise TypeError(f"sizes must be a dict from item id to (width, height), got {describe(sizes)}")
    box = {}
    for item in view.items:
        size = None if sizes is None else sizes.get(item)
        if size is None:
            size = _box_size(1, len(_item_label(view, item)))
        if not (isinstance(size, tuple) and len(size) == 2 and all(isinstance(v, (int, float)) for v in size)):
            raise TypeError(f"sizes[{item}] must be a (width, height) pair of numbers, got {describe(size)}")
        if not all(v > 0 for v in size):
            raise ValueError(f"sizes[{item}] must be positive, got {size}")
        box[item] = (float(size[0]), float(size[1]))
    return _layered(view.items, view.edges, view.edge_counts, box, sweeps)


def _break_cycles(n: int, edges: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """Edges to reverse so the graph has no cycle: the back edges of a depth-first search."""
    out: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        out[a].append(b)
    state = [0] * n  # 0 unseen, 1 on the stack, 2 done
    back = set()
    for start in range(n):
        if state[start]:
            continue
        state[start] = 1
        stack = [(start, iter(out[start]))]
        while stack:
            v, it = stack[-1]
            for w in it:
                if state[w] == 1:
                    back.add((v, w))
                elif state[w] == 0:
                    state[w] = 1
                    stack.append((w, iter(out[w])))
                    break
            else:
                state[v] = 2
                stack.pop()
    return back


def _inversions(values: list[int], size: int) -> int:
    """Pairs i < j with values[i] > values[j] (a Fenwick tree over 0 … size-1)."""
    tree = [0] * (size + 1)
    seen = 0
    total = 0
    for v in values:
        i = v + 1
        not_greater = 0
        while i > 0:
            not_greater += tree[i]
            i -= i & -i
        total += seen - not_greater
        i = v + 1
        while i <= size:
            tree[i] += 1
            i += i & -i
        seen += 1
    return total


def _crossings(orders: list[list[int]], pos: list[int], down: list[list[int]]) -> int:
    total = 0
    for layer, below in zip(orders, orders[1:]):
        pairs = sorted((pos[u], pos[w]) for u in layer for w in down[u])
        total += _inversions([w for _, w in pairs], len(below))
    return total


def _isotonic(targets: list[float], weights: list[float]) -> list[float]:
    """The non-decreasing sequence closest to ``targets`` in weighted least squares (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [weight, weighted sum, count]
    for t, w in zip(targets, weights):
        blocks.append([w, w * t, 1])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][0] > blocks[-1][1] / blocks[-1][0]:
            w2, s2, c2 = blocks.pop()
            blocks[-1][0] += w2
            blocks[-1][1] += s2
            blocks[-1][2] += c2
    out: list[float] = []
    for w, s, c in blocks:
        out.extend([s / w] * c)
    return out


def _layered(items, edges, counts, box, sweeps) -> GraphLayout:
    """Sugiyama-style layout of items (ids) joined by edges; box maps item to (width, height)."""
    n = len(items)
    index = {item: i for i, item in enumerate(items)}
    count_of: dict[tuple[int, int], int] = {}
    for (a, b), c in zip(edges, counts):
        if a != b:
            key = (index[a], index[b])
            count_of[key] = count_of.get(key, 0) + c
    plain = list(count_of)
    back = _break_cycles(n, plain)
    dag = [(b, a) if (a, b) in back else (a, b) for a, b in plain]

    # Layers: longest path from the sources, so every edge points down at least one layer and the
    # leaves sink below everything that uses them.
    succ: list[list[int]] = [[] for _ in range(n)]
    indegree = [0] * n
    for a, b in dict.fromkeys(dag):
        succ[a].append(b)
        indegree[b] += 1
    layer = [0] * n
    ready = [v for v in range(n) if indegree[v] == 0]
    while ready:
        v = ready.pop()
        for w in succ[v]:
            layer[w] = max(layer[w], layer[v] + 1)
            indegree[w] -= 1
            if indegree[w] == 0:
                ready.append(w)
    height_in_layers = max(layer, default=0) + 1

    # Dummy nodes: one per layer an edge passes through, so crossings and routes see long edges.
    up: list[list[int]] = [[] for _ in range(n)]
    down: list[list[int]] = [[] for _ in range(n)]
    chains: dict[tuple[int, int], list[int]] = {}
    for a, b in dict.fromkeys(dag):
        chain = [a]
        for lay in range(layer[a] + 1, layer[b]):
            layer.append(lay)
            up.append([])
            down.append([])
            chain.append(len(layer) - 1)
        chain.append(b)
        for u, w in zip(chain, chain[1:]):
            down[u].append(w)
            up[w].append(u)
        chains[(a, b)] = chain
    total = len(layer)

    # Initial ordering: layer 0 in item order (node ids are breadth-first from the output); each later
    # layer by the leftmost position among its upper neighbours.
    orders: list[list[int]] = [[] for _ in range(height_in_layers)]
    for v in range(total):
        orders[layer[v]].append(v)
    pos = [0] * total
    for lay, members in enumerate(orders):
        if lay:
            members.sort(key=lambda v: (min((pos[u] for u in up[v]), default=len(members)), v))
        for i, v in enumerate(members):
            pos[v] = i

    best = initial = _crossings(orders, pos, down)
    best_orders = [list(o) for o in orders]

    def reorder(members: list[int], neighbours: list[list[int]]) -> None:
        def key(v):
            ns = neighbours[v]
            return (sum(pos[u] for u in ns) / len(ns) if ns else pos[v], pos[v])

        members.sort(key=key)
        for i, v in enumerate(members):
            pos[v] = i

    stale_sweeps = 0
    for _ in range(sweeps):
        if best == 0:
            break
        for lay in range(1, height_in_layers):
            reorder(orders[lay], up)
        for lay in range(height_in_layers - 2, -1, -1):
            reorder(orders[lay], down)
        now = _crossings(orders, pos, down)
        if now < best:
            best, best_orders, stale_sweeps = now, [list(o) for o in orders], 0
        else:
            stale_sweeps += 1
            if stale_sweeps >= 3:
                break
    orders = best_orders
    for members in orders:
        for i, v in enumerate(members):
            pos[v] = i

    # x: every node as close as it can get to the mean x of its neighbours, keeping the order and the
    # gaps. Per layer that is isotonic regression on x minus the cumulative minimum offsets.
    width = [box[items[v]][0] if v < n else DUMMY_WIDTH for v in range(total)]
    x = [0.0] * total
    offsets: list[list[float]] = []
    for members in orders:
        offs = [0.0]
        for a, b in zip(members, members[1:]):
            gap = NODE_GAP if a < n and b < n else NODE_GAP / 2
            offs.append(offs[-1] + (width[a] + width[b]) / 2 + gap)
        offsets.append(offs)
        for v, o in zip(members, offs):
            x[v] = o - offs[-1] / 2

    def place(lay: int, sources) -> None:
        members = orders[lay]
        targets, weights = [], []
        for v, o in zip(members, offsets[lay]):
            ns = [u for s in sources for u in s[v]] if v < n else up[v] + down[v]
            want = sum(x[u] for u in ns) / len(ns) if ns else x[v]
            targets.append(want - o)
            weights.append(1.0 if v < n else 2.0)  # dummies weigh more: long edges run straight
        for v, o, y in zip(members, offsets[lay], _isotonic(targets, weights)):
            x[v] = y + o

    for _ in range(4):
        for lay in range(1, height_in_layers):
            place(lay, (up,))
        for lay in range(height_in_layers - 2, -1, -1):
            place(lay, (down,))
    for _ in range(2):
        for lay in range(height_in_layers):
            place(lay, (up, down))
    left = min((x[v] - width[v] / 2 for v in range(total)), default=0.0)
    x = [value - left for value in x]
    layout_width = max((x[v] + width[v] / 2 for v in range(total)), default=0.0)

    # y: layers stacked from the top; boxes hang from their layer's top line.
    band = [0.0] * height_in_layers
    for v in range(n):
        band[layer[v]] = max(band[layer[v]], box[items[v]][1])
    band = [b if b else LINE_SPACING * FONT_SIZE for b in band]
    tops = [0.0]
    for b in band[:-1]:
        tops.append(tops[-1] - b - LAYER_GAP)
    layout_height = -(tops[-1] - band[-1]) if band else 0.0
    top_of = [t + layout_height for t in tops]

    order = {v: i for members in orders for i, v in enumerate(u for u in members if u < n)}
    nodes = []
    for v in range(n):
        w, h = box[items[v]]
        nodes.append(NodePosition(items[v], layer[v], order[v], x[v], top_of[layer[v]] - h / 2, w, h))
    by_id = {p.id: p for p in nodes}

    routes = []
    for (a, b), c in count_of.items():
        flipped = (a, b) in back
        chain = chains[(b, a) if flipped else (a, b)]
        upper, lower = items[chain[0]], items[chain[-1]]
        points = [(by_id[upper].x, by_id[upper].bottom)]
        for d in chain[1:-1]:
            points.append((x[d], top_of[layer[d]]))
            points.append((x[d], top_of[layer[d]] - band[layer[d]]))
        points.append((by_id[lower].x, by_id[lower].top))
        if flipped:
            points.reverse()
        routes.append(EdgeRoute(items[a], items[b], tuple(points), c, flipped))
    layers = tuple(tuple(items[v] for v in members if v < n) for members in orders)
    return GraphLayout(
        tuple(nodes), tuple(routes), layers, best, initial, layout_width, layout_height, total - n, by_id
    )


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
        width, height = _box_size(1 + len(self.lines), longest)
        warnings = [_warning_width(t) + 2 * PAD_X for t, warning in self.lines if warning]
        return max([width] + warnings), height


@functools.lru_cache(maxsize=256)
def _warning_width(text: str) -> float:
    """Width in points of a warning line. Warnings use DejaVu Sans, whose ⚠ is full size (the
    monospace one is tiny), so their width is measured rather than counted."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    prop = FontProperties(family=WARNING_FAMILY, weight="bold", size=FONT_SIZE)
    width, _, _ = TextToPath().get_text_width_height_descent(text, prop, ismath=False)
    return width * 1.08  # room for Agg rounding each advance to whole pixels


def _stale_marker(saved) -> str:
    return f"⚠ stale: saved v{saved.saved_version}, now v{saved.current_version}"


def _saved_line(saved) -> str:
    if saved.freed:
        return f"saved: {saved.attribute} (freed by backward)"
    if saved.hooked:
        return f"saved: {saved.attribute} (packed by a hook)"
    if saved.saved_version is None:
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
    return _Box(node.id, node.kind, _visible(node.label), tuple(lines), stale)


# Characters XML 1.0 cannot hold at all, even escaped (C0 controls but tab, newline and carriage return;
# surrogates; U+FFFE, U+FFFF), and which no font draws: written as visible escapes (\x01) in both renderers.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _visible(text: str) -> str:
    def escape(match) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _NOT_XML.sub(escape, text)


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


_SUFFIX = re.compile(r"Backward\d*$")


def _group_box(view: CollapsedGraph, item: int, show_saved: bool) -> _Box:
    group = view.group(item)
    per_block = sum(c for _, c in group.counts)
    if group.repetitions > 1:
        head = f"{group.repetitions} × {per_block} nodes"
    else:
        head = f"{group.module_type} · {per_block} nodes" if group.module_type else f"{per_block} nodes"
    # Short op names ("2 Addmm, Relu"): a box per block repeats them, so they must stay brief.
    inside = count_text((_SUFFIX.sub("", name) or name, c) for name, c in group.counts)
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


def _boxes(view: CollapsedGraph, items, show_values: bool, show_saved: bool, line_notes=None) -> dict[int, _Box]:
    boxes = {}
    line_notes = line_notes or {}
    for item in items:
        if view.is_group(item):
            boxes[item] = _group_box(view, item, show_saved)
        else:
            node = view.graph.nodes[item]
            boxes[item] = _node_box(node, show_values, show_saved, line_notes.get(node.id, ()))
    return boxes


def _line_notes(tensor) -> dict[int, tuple[str, ...]]:
    """Node id -> "saved at file:line" / "changed at file:line (op)" texts, when watch_inplace recorded them."""
    from ..facts.inplace_watch import _watches_for_hazards

    if tensor is None or not _watches_for_hazards():
        return {}
    notes: dict[int, list[str]] = {}
    for hazard in inplace_hazards(tensor):
        texts = notes.setdefault(hazard.node_id, [])
        if hazard.saved_at is not None:
            texts.append(f"saved at {hazard.saved_at.place}")
        for write in hazard.changed_at:
            place = write.line.place if write.line is not None else "line unknown"
            texts.append(f"changed at {place} ({write.op.removeprefix('aten::')})")
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
    kinds = [n.kind for n in graph.nodes]
    backward, leaves, edges = graph.counts  # of the whole graph, drawn or not
    parts = [
        f"Backward graph of {graph.nodes[graph.root].label}: {graph.total_nodes} node"
        f"{'s' if graph.total_nodes != 1 else ''} ({backward} backward, {leaves} lea{'f' if leaves == 1 else 'ves'}"
        f"{', 1 output' if kinds.count('output') else ''}), {edges} edge{'s' if edges != 1 else ''}"
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
        parts.append(
            f"⚠ {total_stale} saved tensor{'s' if total_stale != 1 else ''} changed in place "
            f"(backward() would fail): {listed}{more}"
        )
    elif graph.unseen:
        parts.append("no saved tensor that could be read was changed in place")
    else:
        parts.append("no saved tensor was changed in place")
    if graph.unseen:
        parts.append("not checked: " + "; ".join(graph.unseen))
    freed = sum(1 for n in graph.nodes for s in n.saved if s.freed)
    if freed:
        parts.append(f"{freed} saved tensor{'s' if freed != 1 else ''} already freed by backward()")
    if show_values:
        shown = [n for n in graph.nodes if n.kind in ("leaf", "output")][:6]
        values = ", ".join(
            f"{n.label} = {n.value}" + (f" (grad {n.grad})" if n.grad is not None or n.kind == "leaf" else "")
            for n in shown
        )
        parts.append(f"values: {values}")
    return "; ".join(parts) + "."


# ----------------------------------------------------------------------------------------------------
# Drawing


_FILL = {"backward": "#eeeeee", "leaf": "#dbe9f6", "output": "#dcf0d2", "group": "#fbf3dc"}
_LEGEND = (
    "arrows: gradient flow, output → leaves · square box: backward node · rounded box: leaf tensor · "
    "double border: output"
)
_LEGEND_GROUPS = " · stacked box: collapsed group"
_LEGEND_HAZARD = " · red dashed border + ⚠: a saved tensor changed in place (backward() would fail)"


_check_ax = require_axes


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
        The matplotlib Figure, with ``fig.summary`` (one line of text saying what is drawn), and
        ``fig.graph_view`` / ``fig.graph_layout`` (the ``CollapsedGraph`` and ``GraphLayout`` drawn).
        Saving a big uncollapsed graph as SVG is 2-3× faster with text kept as text
        (``matplotlib.rc_context({"svg.fonttype": "none"})``) than with matplotlib's default outlines.

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        ValueError: ``collapse`` is not one of ``COLLAPSE_CHOICES``, ``collapse="module"`` without a model
            or without a tensor, ``names`` with a Graph, or ``max_nodes`` < 1.
    """
    ax = _check_ax(ax)
    picture = _picture(t_or_graph, names, show_values, show_saved, collapse, max_nodes, model)
    fig = _render(picture.scene, ax)
    fig.summary = picture.summary
    fig.graph_view = picture.view
    fig.graph_layout = picture.layout
    fig.graph_scene = picture.scene
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
    picture = _picture(t_or_graph, names, show_values, show_saved, collapse, max_nodes, model)
    return scene_svg(picture.scene, picture.summary)


@dataclass(frozen=True)
class _Picture:
    scene: GraphScene
    summary: str
    view: CollapsedGraph
    layout: GraphLayout


def _picture(t_or_graph, names, show_values, show_saved, collapse, max_nodes, model) -> _Picture:
    """Check the arguments, read the graph, choose what to draw, lay it out: everything but the drawing."""
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
        summary = (
            summary.rstrip(".")
            + "; "
            + "; ".join(f"node {node_id}: {', '.join(texts)}" for node_id, texts in sorted(line_notes.items()))
            + "."
        )
    boxes = _boxes(view, items, show_values, show_saved, line_notes)
    sub = view if len(items) == len(view.items) else _restricted(view, items)
    layout = graph_layout(sub, {i: b.size for i, b in boxes.items()})

    messages = []
    if len(items) < len(view.items) or graph.truncated:
        missing = graph.total_nodes - len(drawn)
        messages.append(
            f"… {missing} more node{'s' if missing != 1 else ''} not drawn (showing {len(drawn)} of "
            f"{graph.total_nodes}); pass collapse='repeats' or a larger max_nodes to see more"
        )
    if hidden_stale:
        messages.append(f"⚠ {hidden_stale} stale saved tensor{'s' if hidden_stale != 1 else ''} in nodes not drawn")

    scene = _scene(layout, boxes, cut, messages, bool(view.groups), any(b.stale for b in boxes.values()))
    return _Picture(scene, summary, view, layout)


def _restricted(view: CollapsedGraph, items) -> CollapsedGraph:
    keep = set(items)
    pairs = [(e, c) for e, c in zip(view.edges, view.edge_counts) if e[0] in keep and e[1] in keep]
    return CollapsedGraph(
        view.graph,
        view.how,
        view.groups,
        tuple(items),
        tuple(e for e, _ in pairs),
        tuple(c for _, c in pairs),
        view._group_of,
    )


def _rectangle(left: float, bottom: float, width: float, height: float) -> list[tuple[float, float]]:
    return [(left, bottom), (left + width, bottom), (left + width, bottom + height), (left, bottom + height)]


def _rounded(left: float, bottom: float, width: float, height: float, radius: float = 6.0) -> list:
    """A rectangle with rounded corners as a polygon (a quarter circle in 5 points per corner)."""
    r = min(radius, width / 2, height / 2)
    corners = (
        (left + width - r, bottom + r, -90),
        (left + width - r, bottom + height - r, 0),
        (left + r, bottom + height - r, 90),
        (left + r, bottom + r, 180),
    )
    points = []
    for cx, cy, start in corners:
        for k in range(5):
            angle = math.radians(start + 22.5 * k)
            points.append((cx + r * math.cos(angle), cy + r * math.sin(angle)))
    return points


@dataclass(frozen=True)
class SceneText:
    """One text of a scene: its top-left (``ha="left"``) or top-centre (``ha="center"``) point, in points."""

    x: float
    y: float
    text: str
    font: str  # "title", "plain", "warning" or "small"
    gid: str
    color: str = "black"
    ha: str = "left"
    zorder: int = 5


@dataclass(frozen=True)
class GraphScene:
    """Everything a graph picture draws, as plain data in points at scale 1 (y up), for any renderer.

    ``lines`` are polylines by style ("edge", "cut"), ``polygons`` filled shapes by kind ("arrowhead",
    "shadow", "backward", "leaf", "output", "group", "hazard"), ``texts`` the labels. ``bounds`` is
    (x0, x1, y0, y1), the region to show.
    """

    bounds: tuple[float, float, float, float]
    lines: dict
    polygons: dict
    texts: tuple[SceneText, ...]

    @property
    def size(self) -> tuple[float, float]:
        x0, x1, y0, y1 = self.bounds
        return x1 - x0, y1 - y0


# Drawing styles shared by both renderers; widths are in points at scale 1.
_POLYGON_STYLES = {
    "arrowhead": dict(face="#555555", edge="none", width=0.0, zorder=1),
    "shadow": dict(face=_FILL["group"], edge="#333333", width=0.8, zorder=3),
    "backward": dict(face=_FILL["backward"], edge="#333333", width=0.8, zorder=3),
    "leaf": dict(face=_FILL["leaf"], edge="#333333", width=0.8, zorder=3),
    "output": dict(face=_FILL["output"], edge="#333333", width=0.8, zorder=3),
    "group": dict(face=_FILL["group"], edge="#333333", width=1.0, zorder=3),
    "hazard": dict(face="none", edge="#d62728", width=2.4, zorder=4, dash=(4, 2)),
}
_LINE_STYLES = {
    "edge": dict(color="#555555", width=0.8, gid="graph-edges"),
    "cut": dict(color="#555555", width=0.8, gid="graph-cut-edges", dash=(1, 1.65)),
}
_FONT_SCALE = {"title": 1.0, "plain": 1.0, "warning": 1.0, "small": 0.9}


def _scene(layout: GraphLayout, boxes, cut, messages, has_groups: bool, has_hazards: bool) -> GraphScene:
    """Lay out the legend, messages, boxes, edges and texts of a picture (no drawing library involved)."""
    legend = _LEGEND + (_LEGEND_GROUPS if has_groups else "") + (_LEGEND_HAZARD if has_hazards else "")
    small = _FONT_SCALE["small"] * FONT_SIZE
    content_width = max(layout.width, 60 * CHAR_WIDTH * small)
    chars = max(30, int(content_width / (CHAR_WIDTH * small)))
    legend_lines = _wrap_list(legend.replace(" · ", ", "), chars, r"(?<=, )")
    message_lines = [w for m in messages for w in textwrap.wrap(m, chars)]
    top_band = len(legend_lines) * LINE_SPACING * small + PAD_Y * 2
    stub = LAYER_GAP * 0.6 if cut else 0.0  # dotted stubs under boxes whose children are not drawn
    bottom_band = stub + ((len(message_lines) * LINE_SPACING * small + PAD_Y * 2) if message_lines else 0.0)
    left = -(content_width - layout.width) / 2  # a graph narrower than the legend sits in the middle
    bounds = (left - MARGIN, left + content_width + MARGIN, -bottom_band - MARGIN, layout.height + top_band + MARGIN)

    texts: list[SceneText] = []
    heads = []
    for route in layout.edges:
        (px, py), (qx, qy) = route.points[-2], route.points[-1]
        length = max(math.hypot(qx - px, qy - py), 1e-9)
        dx, dy = (qx - px) / length, (qy - py) / length
        bx, by = qx - 6 * dx, qy - 6 * dy
        heads.append([(qx, qy), (bx - 2.5 * dy, by + 2.5 * dx), (bx + 2.5 * dy, by - 2.5 * dx)])
        if route.count > 1:  # x * x: two gradients flow along the same edge
            (ax_, ay_), (bx_, by_) = route.points[0], route.points[1]
            texts.append(
                SceneText(
                    (ax_ + bx_) / 2 + 3,
                    (ay_ + by_) / 2 + 4,
                    f"×{route.count}",
                    "small",
                    "edge-count",
                    "#333333",
                    zorder=2,
                )
            )
    lines = {"edge": [route.points for route in layout.edges]}
    if cut:
        lines["cut"] = [
            [
                (layout.position(i).x, layout.position(i).bottom),
                (layout.position(i).x, layout.position(i).bottom - stub),
            ]
            for i in cut
        ]

    # Kinds differ in shape, not only colour: square (backward), rounded (leaf), double border
    # (output), stacked (group); hazards add a dashed border.
    polygons: dict[str, list] = {
        "arrowhead": heads,
        "shadow": [],
        "backward": [],
        "leaf": [],
        "output": [],
        "group": [],
        "hazard": [],
    }
    line_h = LINE_SPACING * FONT_SIZE
    for p in layout.nodes:
        b = boxes[p.id]
        if b.kind == "leaf":
            polygons["leaf"].append(_rounded(p.left, p.bottom, p.width, p.height))
        elif b.kind == "output":
            polygons["output"].append(_rectangle(p.left, p.bottom, p.width, p.height))
            polygons["output"].append(_rectangle(p.left + 2, p.bottom + 2, p.width - 4, p.height - 4))
        elif b.kind == "group":
            polygons["shadow"].append(_rectangle(p.left + 3, p.bottom - 3, p.width, p.height))
            polygons["group"].append(_rectangle(p.left, p.bottom, p.width, p.height))
        else:
            polygons["backward"].append(_rectangle(p.left, p.bottom, p.width, p.height))
        if b.stale:
            polygons["hazard"].append(_rectangle(p.left - 3, p.bottom - 3, p.width + 6, p.height + 6))
        top = p.top - PAD_Y
        texts.append(SceneText(p.x, top, b.title, "title", f"label:{p.id}", ha="center"))
        run: list[str] = []
        start = 1
        for k, (line, warning) in enumerate(b.lines + (("", True),), start=1):
            if not warning:
                run.append(line)
                continue
            if run:  # consecutive plain lines share one text: far fewer artists on big graphs
                texts.append(SceneText(p.left + PAD_X, top - start * line_h, "\n".join(run), "plain", f"detail:{p.id}"))
                run = []
            if line:
                texts.append(SceneText(p.left + PAD_X, top - k * line_h, line, "warning", f"warning:{p.id}", "#b00000"))
            start = k + 1
    texts.append(
        SceneText(left, layout.height + top_band - PAD_Y, "\n".join(legend_lines), "small", "legend", "#444444")
    )
    if message_lines:
        texts.append(SceneText(left, -stub - PAD_Y, "\n".join(message_lines), "small", "message", "#b00000"))
    return GraphScene(bounds, lines, {k: v for k, v in polygons.items() if v}, tuple(texts))


def _render(scene: GraphScene, ax):
    """Draw a scene with matplotlib (on ``ax``, or a new Figure sized to the scene) and return the figure."""
    # Speed matters on big graphs: boxes and edges are a few collections of plain polygons and
    # polylines rather than one Patch each, and the texts share their font properties and one clip path
    # instead of building fresh transforms per artist.
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.font_manager import FontProperties
    from matplotlib.text import Text
    from matplotlib.transforms import TransformedPatchPath

    x0, x1, y0, y1 = scene.bounds
    width_pt, height_pt = scene.size
    if ax is None:
        scale = min(1.0, MAX_FIGURE_INCHES[0] * 72 / width_pt, MAX_FIGURE_INCHES[1] * 72 / height_pt)
        fig, ax = bare_figure(width_pt * scale / 72, height_pt * scale / 72)
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
    else:
        fig = ax.figure
        bbox = ax.get_position()
        fig_w, fig_h = fig.get_size_inches()
        scale = min(bbox.width * fig_w * 72 / width_pt, bbox.height * fig_h * 72 / height_pt)
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        # Equal aspect keeps one data unit the same length across and down, so text fits its boxes;
        # the axes box shrinks to fit (adjusting the limits instead would log a warning).
        ax.set_aspect("equal", adjustable="box")
    ax.set_axis_off()
    fs = FONT_SIZE * scale
    lw = max(0.4, scale)
    clip = TransformedPatchPath(ax.patch)
    fonts = {
        "title": FontProperties(family=FONT_FAMILY, weight="bold", size=fs),
        "plain": FontProperties(family=FONT_FAMILY, size=fs),
        "warning": FontProperties(family=WARNING_FAMILY, weight="bold", size=fs),
        "small": FontProperties(family=FONT_FAMILY, size=_FONT_SCALE["small"] * fs),
    }
    for style, polylines in scene.lines.items():
        look = _LINE_STYLES[style]
        collection = LineCollection(
            polylines,
            colors=look["color"],
            linewidths=look["width"] * lw,
            zorder=1,
            linestyles=[(0, look["dash"])] if "dash" in look else "solid",
        )
        collection.set_gid(look["gid"])
        ax.add_collection(collection, autolim=False)
    for kind, shapes in scene.polygons.items():
        look = _POLYGON_STYLES[kind]
        collection = PolyCollection(
            shapes,
            facecolors=look["face"],
            edgecolors=look["edge"],
            linewidths=look["width"] * lw,
            zorder=look["zorder"],
            linestyles=[(0, look["dash"])] if "dash" in look else "solid",
        )
        collection.set_gid("graph-arrowheads" if kind == "arrowhead" else f"graph-boxes-{kind}")
        ax.add_collection(collection, autolim=False)
    for t in scene.texts:
        # Never clipped (the limits hold the whole drawing). Setting the shared clip path up front
        # only stops add_artist from building fresh transforms for every text.
        artist = Text(
            t.x,
            t.y,
            t.text,
            color=t.color,
            ha=t.ha,
            va="top",
            fontproperties=fonts[t.font],
            linespacing=LINE_SPACING,
            zorder=t.zorder,
            gid=t.gid,
            clip_on=False,
        )
        artist.set_clip_path(clip)
        ax.add_artist(artist)
    return fig


def _xml(text: str) -> str:
    text = _visible(text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


_SVG_FONTS = {
    "title": (", ".join(FONT_FAMILY), "bold"),
    "plain": (", ".join(FONT_FAMILY), "normal"),
    "warning": (", ".join(WARNING_FAMILY), "bold"),
    "small": (", ".join(FONT_FAMILY), "normal"),
}
_ASCENT = 0.76  # DejaVu Sans (Mono)'s ascent in font sizes: from a text's top to its first baseline


def _points(points, x0: float, y1: float) -> str:
    return " ".join(f"{x - x0:.1f},{y1 - y:.1f}" for x, y in points)


def scene_svg(scene: GraphScene, summary: str = "") -> str:
    """Write a scene as a standalone SVG document, text kept as text; ``summary`` becomes its ``<title>``.

    The same drawing as the matplotlib figure (same shapes, styles, texts and ids), written directly:
    tens of times faster than ``savefig(format="svg")`` on big graphs. Figures larger than
    ``MAX_FIGURE_INCHES`` are scaled down as ``draw_graph`` does.
    """
    if not isinstance(scene, GraphScene):
        raise TypeError(f"scene must be a GraphScene, got {describe(scene)}")
    if not isinstance(summary, str):
        raise TypeError(f"summary must be a str, got {describe(summary)}")
    x0, x1, y0, y1 = scene.bounds
    width_pt, height_pt = scene.size
    scale = min(1.0, MAX_FIGURE_INCHES[0] * 72 / width_pt, MAX_FIGURE_INCHES[1] * 72 / height_pt)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width_pt * scale:.1f}pt" height="{height_pt * scale:.1f}pt" '
        f'viewBox="0 0 {width_pt:.1f} {height_pt:.1f}" role="img"><title>{_xml(summary)}</title>'
        f'<rect width="100%" height="100%" fill="white"/>'
    ]
    layers = []  # (zorder, order, svg) so that stacking matches matplotlib's zorder
    for style, polylines in scene.lines.items():
        look = _LINE_STYLES[style]
        dash = (
            f' stroke-dasharray="{look["dash"][0] * look["width"]:.2f},{look["dash"][1] * look["width"]:.2f}"'
            if "dash" in look
            else ""
        )
        body = "".join(f'<polyline points="{_points(line, x0, y1)}"/>' for line in polylines)
        layers.append(
            (
                1,
                len(layers),
                f'<g id="{look["gid"]}" fill="none" stroke="{look["color"]}" '
                f'stroke-width="{look["width"]}"{dash}>{body}</g>',
            )
        )
    for kind, shapes in scene.polygons.items():
        look = _POLYGON_STYLES[kind]
        dash = (
            f' stroke-dasharray="{look["dash"][0] * look["width"]:.2f},{look["dash"][1] * look["width"]:.2f}"'
            if "dash" in look
            else ""
        )
        stroke = f' stroke="{look["edge"]}" stroke-width="{look["width"]}"' if look["edge"] != "none" else ""
        gid = "graph-arrowheads" if kind == "arrowhead" else f"graph-boxes-{kind}"
        body = "".join(f'<polygon points="{_points(shape, x0, y1)}"/>' for shape in shapes)
        layers.append((look["zorder"], len(layers), f'<g id="{gid}" fill="{look["face"]}"{stroke}{dash}>{body}</g>'))
    for t in scene.texts:
        family, weight = _SVG_FONTS[t.font]
        size = _FONT_SCALE[t.font] * FONT_SIZE
        x, y = t.x - x0, y1 - t.y + _ASCENT * size
        anchor = "middle" if t.ha == "center" else "start"
        lines = t.text.split("\n")
        spans = (
            _xml(lines[0])
            if len(lines) == 1
            else "".join(
                f'<tspan x="{x:.1f}" dy="{0 if i == 0 else LINE_SPACING * size:.2f}">{_xml(line)}</tspan>'
                for i, line in enumerate(lines)
            )
        )
        bold = ' font-weight="bold"' if weight == "bold" else ""
        layers.append(
            (
                t.zorder,
                len(layers),
                f'<text id="{_xml(t.gid)}" x="{x:.1f}" y="{y:.1f}" font-family="{family}" font-size="{size:.2f}"'
                f'{bold} fill="{t.color}" text-anchor="{anchor}" xml:space="preserve">{spans}</text>',
            )
        )
    out.extend(svg for _, _, svg in sorted(layers, key=lambda item: item[:2]))
    out.append("</svg>")
    return "".join(out)
