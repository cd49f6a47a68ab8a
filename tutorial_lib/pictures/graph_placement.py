"""Where the boxes of a backward graph go: a layered placement, output at the top (pure data, no drawing).

``graph_layout`` places a ``Graph`` (or a ``CollapsedGraph``) in layers in the Sugiyama style: longest-path
layering, dummy nodes on edges that span several layers, barycenter ordering sweeps that keep the ordering with
the fewest crossings, then x positions that pull every node towards its neighbours without overlaps (isotonic
regression per layer). Coordinates are points, y up; ``graph_picture`` turns a placement into a scene.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from graphlib import TopologicalSorter

from ..common.checks import describe, require_int
from ..facts.graph import Graph
from .graph_groups import CollapsedGraph, uncollapsed
from .scene import MONO_CHAR_WIDTH

#: Box text: DejaVu Sans Mono at this size, lines 1.2 font sizes apart (matplotlib's linespacing=1.2).
FONT_SIZE = 8.0
LINE_SPACING = 1.2
PAD_X = 6.0
PAD_Y = 4.0
NODE_GAP = 16.0
LAYER_GAP = 26.0
DUMMY_WIDTH = 4.0
#: Ordering sweeps (one down and one up each) ``graph_layout`` runs at most.
DEFAULT_SWEEPS = 12


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
    _by_id: dict = field(default_factory=dict, repr=False, compare=False)

    def position(self, item: int) -> NodePosition:
        return self._by_id[item]


def box_size(lines: int, longest: int) -> tuple[float, float]:
    """(width, height) in points of a box of ``lines`` monospace lines, the longest ``longest`` characters."""
    return longest * MONO_CHAR_WIDTH * FONT_SIZE + 2 * PAD_X, lines * LINE_SPACING * FONT_SIZE + 2 * PAD_Y


def _view_of(graph) -> CollapsedGraph:
    """``graph`` as a ``CollapsedGraph``; TypeError naming ``graph`` for anything else."""
    if isinstance(graph, CollapsedGraph):
        return graph
    if isinstance(graph, Graph):
        return uncollapsed(graph)
    raise TypeError(f"graph must be a Graph (from autograd_graph) or a CollapsedGraph, got {describe(graph)}")


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
    sweeps = require_int(sweeps, "sweeps", 0)
    if sizes is not None and not isinstance(sizes, dict):
        raise TypeError(f"sizes must be a dict from item id to (width, height), got {describe(sizes)}")
    box = {}
    for item in view.items:
        size = None if sizes is None else sizes.get(item)
        if size is None:
            label = view.group(item).label if view.is_group(item) else view.graph.nodes[item].label
            size = box_size(1, len(label))
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
    total = 0
    for seen, v in enumerate(values):
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
    return total


def _crossings(orders: list[list[int]], pos: list[int], down: list[list[int]]) -> int:
    """Edge crossings between every pair of adjacent layers."""
    total = 0
    for members, below in zip(orders, orders[1:]):
        pairs = sorted((pos[u], pos[w]) for u in members for w in down[u])
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


def _longest_path_layers(n: int, dag: list[tuple[int, int]]) -> list[int]:
    """Each node's layer: its longest path from a source (every edge points down; leaves sink to the bottom)."""
    parents: dict[int, list[int]] = {v: [] for v in range(n)}
    for a, b in dag:
        parents[b].append(a)
    layer_of = [0] * n
    for v in TopologicalSorter(parents).static_order():
        layer_of[v] = max((layer_of[u] + 1 for u in parents[v]), default=0)
    return layer_of


def _add_dummies(layer_of: list[int], dag: list[tuple[int, int]]):
    """Add a dummy node per layer a long edge passes through; (upper, lower neighbours, {edge: its chain})."""
    up: list[list[int]] = [[] for _ in layer_of]
    down: list[list[int]] = [[] for _ in layer_of]
    chains: dict[tuple[int, int], list[int]] = {}
    for a, b in dag:
        chain = [a]
        for layer in range(layer_of[a] + 1, layer_of[b]):
            layer_of.append(layer)
            up.append([])
            down.append([])
            chain.append(len(layer_of) - 1)
        chain.append(b)
        for u, w in zip(chain, chain[1:]):
            down[u].append(w)
            up[w].append(u)
        chains[(a, b)] = chain
    return up, down, chains


def _ordered(layer_of: list[int], up, down, sweeps: int) -> tuple[list[list[int]], int, int]:
    """(nodes of each layer left to right, their crossings, the crossings before any sweep)."""
    # Initial ordering: layer 0 in item order (node ids are breadth-first from the output); each later
    # layer by the leftmost position among its upper neighbours.
    orders: list[list[int]] = [[] for _ in range(max(layer_of, default=0) + 1)]
    for v, layer in enumerate(layer_of):
        orders[layer].append(v)
    pos = [0] * len(layer_of)
    for layer, members in enumerate(orders):
        if layer:
            members.sort(key=lambda v: (min((pos[u] for u in up[v]), default=len(members)), v))
        for i, v in enumerate(members):
            pos[v] = i

    def reorder(members: list[int], neighbours: list[list[int]]) -> None:
        def key(v):
            ns = neighbours[v]
            return (sum(pos[u] for u in ns) / len(ns) if ns else pos[v], pos[v])

        members.sort(key=key)
        for i, v in enumerate(members):
            pos[v] = i

    # Barycenter sweeps, down then up, keeping the best ordering; stop after 3 sweeps without progress.
    best = initial = _crossings(orders, pos, down)
    best_orders = [list(o) for o in orders]
    stale_sweeps = 0
    for _ in range(sweeps):
        if best == 0:
            break
        for layer in range(1, len(orders)):
            reorder(orders[layer], up)
        for layer in range(len(orders) - 2, -1, -1):
            reorder(orders[layer], down)
        now = _crossings(orders, pos, down)
        if now < best:
            best, best_orders, stale_sweeps = now, [list(o) for o in orders], 0
        else:
            stale_sweeps += 1
            if stale_sweeps >= 3:
                break
    return best_orders, best, initial


def _x_positions(orders: list[list[int]], up, down, width: list[float], n: int) -> list[float]:
    """Each node's x, near its neighbours' mean x, keeping order and gaps (nodes from ``n`` on are dummies)."""
    # Per layer, that is isotonic regression on x minus the cumulative minimum offsets.
    x = [0.0] * len(width)
    offsets: list[list[float]] = []
    for members in orders:
        offs = [0.0]
        for a, b in zip(members, members[1:]):
            gap = NODE_GAP if a < n and b < n else NODE_GAP / 2
            offs.append(offs[-1] + (width[a] + width[b]) / 2 + gap)
        offsets.append(offs)
        for v, o in zip(members, offs):
            x[v] = o - offs[-1] / 2

    def place(layer: int, sources) -> None:
        targets, weights = [], []
        for v, o in zip(orders[layer], offsets[layer]):
            ns = [u for s in sources for u in s[v]] if v < n else up[v] + down[v]
            want = sum(x[u] for u in ns) / len(ns) if ns else x[v]
            targets.append(want - o)
            weights.append(1.0 if v < n else 2.0)  # dummies weigh more: long edges run straight
        for v, o, y in zip(orders[layer], offsets[layer], _isotonic(targets, weights)):
            x[v] = y + o

    for _ in range(4):
        for layer in range(1, len(orders)):
            place(layer, (up,))
        for layer in range(len(orders) - 2, -1, -1):
            place(layer, (down,))
    for _ in range(2):
        for layer in range(len(orders)):
            place(layer, (up, down))
    left = min((x[v] - width[v] / 2 for v in range(len(x))), default=0.0)
    return [value - left for value in x]


def _layered(items, edges, counts, box, sweeps) -> GraphLayout:
    """Sugiyama-style placement of items (ids) joined by edges; box maps item to (width, height)."""
    n = len(items)
    index = {item: i for i, item in enumerate(items)}
    count_of: dict[tuple[int, int], int] = {}
    for (a, b), c in zip(edges, counts):
        if a != b:
            key = (index[a], index[b])
            count_of[key] = count_of.get(key, 0) + c
    back = _break_cycles(n, list(count_of))
    dag = list(dict.fromkeys((b, a) if (a, b) in back else (a, b) for a, b in count_of))
    layer_of = _longest_path_layers(n, dag)
    up, down, chains = _add_dummies(layer_of, dag)
    orders, crossings, initial = _ordered(layer_of, up, down, sweeps)
    width = [box[items[v]][0] if v < n else DUMMY_WIDTH for v in range(len(layer_of))]
    x = _x_positions(orders, up, down, width, n)
    layout_width = max((x[v] + width[v] / 2 for v in range(len(x))), default=0.0)

    # y: layers stacked from the top; boxes hang from their layer's top line.
    band = [0.0] * len(orders)
    for v in range(n):
        band[layer_of[v]] = max(band[layer_of[v]], box[items[v]][1])
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
        nodes.append(NodePosition(items[v], layer_of[v], order[v], x[v], top_of[layer_of[v]] - h / 2, w, h))
    by_id = {p.id: p for p in nodes}

    routes = []
    for (a, b), c in count_of.items():
        flipped = (a, b) in back
        chain = chains[(b, a) if flipped else (a, b)]
        upper, lower = items[chain[0]], items[chain[-1]]
        points = [(by_id[upper].x, by_id[upper].bottom)]
        for d in chain[1:-1]:
            points.append((x[d], top_of[layer_of[d]]))
            points.append((x[d], top_of[layer_of[d]] - band[layer_of[d]]))
        points.append((by_id[lower].x, by_id[lower].top))
        if flipped:
            points.reverse()
        routes.append(EdgeRoute(items[a], items[b], tuple(points), c, flipped))
    layers = tuple(tuple(items[v] for v in members if v < n) for members in orders)
    return GraphLayout(tuple(nodes), tuple(routes), layers, crossings, initial, layout_width, layout_height, by_id)
