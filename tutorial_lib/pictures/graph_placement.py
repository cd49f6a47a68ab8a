"""Where the boxes of a backward graph go: a layered placement, output at the top (pure data, no drawing).

``graph_layout`` places a ``Graph`` (or a ``CollapsedGraph``) in the Sugiyama style: longest-path layers, a dummy
point per layer a long edge crosses, barycenter sweeps keeping the ordering with the fewest crossings, then x
positions near each node's neighbours without overlaps (isotonic regression per layer). Coordinates are points, y up.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections import Counter
from dataclasses import dataclass, field
from graphlib import TopologicalSorter
from itertools import accumulate

from ..common.checks import describe, require_int, require_type
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
    """Where one item (a node or a group) sits: its layer (0 = top), its order in the layer (0 = leftmost, dummy
    points not counted), its centre and size."""

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
    """The polyline of one edge from the bottom of ``source`` to the top of ``target``, standing for ``count``
    graph edges (``x * x``); ``reversed``: drawn upwards to break a cycle (only possible between groups)."""

    source: int
    target: int
    points: tuple[tuple[float, float], ...]
    count: int = 1
    reversed: bool = False


@dataclass(frozen=True)
class GraphLayout:
    """Every item's position and edge's route, the crossings between adjacent layers (through dummy points) after
    the sweeps and before them (``initial_crossings``), and the size in points (y up: the output is at the top)."""

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


def graph_layout(graph, sizes: dict | None = None, sweeps: int = DEFAULT_SWEEPS) -> GraphLayout:
    """Lay out a backward graph in layers, output at the top, with few edge crossings (deterministic).

    Args:
        graph: a ``Graph`` (from ``autograd_graph``) or a ``CollapsedGraph`` (from ``graph_groups``).
        sizes: dict from item id to (width, height) in points; items left out get a one-line box for their label.
        sweeps: how many barycenter ordering sweeps to try (0 keeps the initial ordering).

    Returns:
        A ``GraphLayout``.

    Raises:
        TypeError: ``graph`` is neither, ``sizes`` not a dict of number pairs, ``sweeps`` not an int.
        ValueError: a size is not positive, or ``sweeps`` is negative.
    """
    require_type(graph, (Graph, CollapsedGraph), "graph", "a Graph (from autograd_graph) or a CollapsedGraph")
    graph = uncollapsed(graph) if isinstance(graph, Graph) else graph
    sweeps = require_int(sweeps, "sweeps", 0)
    require_type(sizes, (dict, type(None)), "sizes", "a dict from item id to (width, height)")
    box = {}
    for item in graph.items:
        size = None if sizes is None else sizes.get(item)
        if size is None:
            size = box_size(1, len(graph.group(item).label if graph.is_group(item) else graph.graph.nodes[item].label))
        if not (isinstance(size, tuple) and len(size) == 2 and all(isinstance(v, (int, float)) for v in size)):
            raise TypeError(f"sizes[{item}] must be a (width, height) pair of numbers, got {describe(size)}")
        if not all(v > 0 for v in size):
            raise ValueError(f"sizes[{item}] must be positive, got {size}")
        box[item] = (float(size[0]), float(size[1]))
    return _layered(graph.items, graph.edges, graph.edge_counts, box, sweeps)


def _break_cycles(n: int, edges) -> set[tuple[int, int]]:
    """Edges to reverse so the graph has no cycle: the back edges of a depth-first search."""
    out: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        out[a].append(b)
    state = [0] * (n + 1)  # 0 unseen, 1 on the stack, 2 done; n is a root above every node
    back = set()
    stack = [(n, iter(range(n)))]
    while stack:
        v, children = stack[-1]
        for w in children:
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


def _crossings(orders: list[list[int]], pos: list[int], down: list[list[int]]) -> int:
    """Edge crossings between adjacent layers: inversions of the lower ends, with edges sorted by upper end."""
    total = 0
    for members in orders:
        lower_ends: list[int] = []  # sorted
        for _, w in sorted((pos[u], pos[w]) for u in members for w in down[u]):
            total += len(lower_ends) - bisect_right(lower_ends, w)
            insort(lower_ends, w)
    return total


def _isotonic(targets: list[float], weights: list[float]) -> list[float]:
    """The non-decreasing sequence closest to ``targets`` in weighted least squares (pool adjacent violators)."""
    if all(a <= b for a, b in zip(targets, targets[1:])):
        return [w * t / w for t, w in zip(targets, weights)]  # in order: nothing to pool (same rounding as below)
    blocks: list[tuple[float, float, int]] = []  # (weight, weighted sum, count) of each pooled run
    for t, w in zip(targets, weights):
        weight, total, count = w, w * t, 1
        while blocks and blocks[-1][1] / blocks[-1][0] > total / weight:  # pool with the run before
            prev_weight, prev_total, prev_count = blocks.pop()
            weight, total, count = prev_weight + weight, prev_total + total, prev_count + count
        blocks.append((weight, total, count))
    return [total / weight for weight, total, count in blocks for _ in range(count)]


def _add_dummies(layer_of: list[int], dag: list[tuple[int, int]]):
    """Add a dummy node per layer a long edge passes through; (upper, lower neighbours, {edge: its chain})."""
    chains: dict[tuple[int, int], list[int]] = {}
    for a, b in dag:
        first = len(layer_of)
        layer_of.extend(range(layer_of[a] + 1, layer_of[b]))
        chains[(a, b)] = [a, *range(first, len(layer_of)), b]
    up: list[list[int]] = [[] for _ in layer_of]
    down: list[list[int]] = [[] for _ in layer_of]
    for chain in chains.values():
        for u, w in zip(chain, chain[1:]):
            down[u].append(w)
            up[w].append(u)
    return up, down, chains


def _ordered(layer_of: list[int], up, down, sweeps: int) -> tuple[list[list[int]], int, int]:
    """(nodes of each layer left to right, their crossings, the crossings before any sweep)."""
    orders: list[list[int]] = [[] for _ in range(max(layer_of, default=0) + 1)]
    for v, layer in enumerate(layer_of):
        orders[layer].append(v)
    pos = [0] * len(layer_of)

    def arrange(members: list[int], key) -> None:
        members.sort(key=key)
        for i, v in enumerate(members):
            pos[v] = i

    def barycenter(neighbours: list[list[int]]):
        return lambda v: (sum(pos[u] for u in neighbours[v]) / len(neighbours[v]) if neighbours[v] else pos[v], pos[v])

    # Initial ordering: layer 0 in item order (node ids are breadth-first from the output); each later
    # layer by the leftmost position among its upper neighbours.
    for members in orders:
        arrange(members, lambda v: (min((pos[u] for u in up[v]), default=len(members)), v))
    # Barycenter sweeps, down then up, keeping the best ordering; stop after 3 sweeps without progress.
    best = initial = _crossings(orders, pos, down)
    best_orders = [list(o) for o in orders]
    stale_sweeps = 0
    for _ in range(sweeps):
        if best == 0 or stale_sweeps == 3:
            break
        for layers, neighbours in ((range(1, len(orders)), up), (range(len(orders) - 2, -1, -1), down)):
            for layer in layers:
                arrange(orders[layer], barycenter(neighbours))
        now = _crossings(orders, pos, down)
        if now < best:
            best, best_orders, stale_sweeps = now, [list(o) for o in orders], 0
        else:
            stale_sweeps += 1
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

    # Whom each node moves towards in each kind of sweep (a dummy always follows both its ends), and its weight:
    # dummies weigh more (long edges run straight), but not against a chain of boxes being straightened.
    both = [u + d for u, d in zip(up, down)]
    towards_up, towards_down = up[:n] + both[n:], down[:n] + both[n:]
    straight = [u if len(u) == 1 and u[0] < n else b for u, b in zip(up[:n], both)] + both[n:]
    weight = [1.0] * n + [2.0] * (len(x) - n)
    weight_straight = [1.0] * n + [0.1] * (len(x) - n)

    def place(layer: int, towards: list, weights: list) -> None:
        members, offs = orders[layer], offsets[layer]
        targets = [
            (sum(x[u] for u in towards[v]) / len(towards[v]) if towards[v] else x[v]) - o for v, o in zip(members, offs)
        ]
        # One member has nothing to keep apart.
        placed = targets if len(members) == 1 else _isotonic(targets, [weights[v] for v in members])
        for v, o, y in zip(members, offs, placed):
            x[v] = y + o

    # Four sweeps down (towards upper neighbours) and up, two towards both, then chains of boxes straightened.
    downwards, upwards = range(1, len(orders)), range(len(orders) - 2, -1, -1)
    passes = [(downwards, towards_up, weight), (upwards, towards_down, weight)] * 4
    passes += [(range(len(orders)), both, weight)] * 2 + [(downwards, straight, weight_straight)]
    for layers, towards, weights in passes:
        for layer in layers:
            place(layer, towards, weights)
    left = min((x[v] - width[v] / 2 for v in range(len(x))), default=0.0)
    return [value - left for value in x]


def _layered(items, edges, counts, box, sweeps) -> GraphLayout:
    """Sugiyama-style placement of items (ids) joined by edges; box maps item to (width, height)."""
    n = len(items)
    index = {item: i for i, item in enumerate(items)}
    count_of: Counter = Counter()
    for (a, b), c in zip(edges, counts):
        if a != b:
            count_of[index[a], index[b]] += c
    back = _break_cycles(n, count_of)
    dag = list(dict.fromkeys((b, a) if (a, b) in back else (a, b) for a, b in count_of))
    # Longest-path layers: every edge points down, leaves sink to the bottom.
    parents: dict[int, list[int]] = {v: [] for v in range(n)}
    for a, b in dag:
        parents[b].append(a)
    layer_of = [0] * n
    for v in TopologicalSorter(parents).static_order():
        layer_of[v] = max((layer_of[u] + 1 for u in parents[v]), default=0)
    up, down, chains = _add_dummies(layer_of, dag)
    orders, crossings, initial = _ordered(layer_of, up, down, sweeps)
    width = [box[items[v]][0] if v < n else DUMMY_WIDTH for v in range(len(layer_of))]
    x = _x_positions(orders, up, down, width, n)
    layout_width = max((x[v] + width[v] / 2 for v in range(len(x))), default=0.0)

    # y: layers stacked from the top; boxes hang from their layer's top line.
    band = [max((box[items[v]][1] for v in members if v < n), default=LINE_SPACING * FONT_SIZE) for members in orders]
    tops = list(accumulate(band[:-1], lambda top, height: top - height - LAYER_GAP, initial=0.0))
    layout_height = -(tops[-1] - band[-1])
    top_of = [t + layout_height for t in tops]

    order = {v: i for members in orders for i, v in enumerate(u for u in members if u < n)}
    nodes = tuple(
        NodePosition(items[v], layer_of[v], order[v], x[v], top_of[layer_of[v]] - box[items[v]][1] / 2, *box[items[v]])
        for v in range(n)
    )
    routes = []
    for (a, b), c in count_of.items():
        flipped = (a, b) in back
        chain = chains[(b, a) if flipped else (a, b)]
        points = [(nodes[chain[0]].x, nodes[chain[0]].bottom)]
        for d in chain[1:-1]:
            points += [(x[d], top_of[layer_of[d]]), (x[d], top_of[layer_of[d]] - band[layer_of[d]])]
        points.append((nodes[chain[-1]].x, nodes[chain[-1]].top))
        routes.append(EdgeRoute(items[a], items[b], tuple(points[::-1] if flipped else points), c, flipped))
    layers = tuple(tuple(items[v] for v in members if v < n) for members in orders)
    by_id = {p.id: p for p in nodes}
    return GraphLayout(nodes, tuple(routes), layers, crossings, initial, layout_width, layout_height, by_id)
