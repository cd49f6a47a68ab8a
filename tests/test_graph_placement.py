"""graph_placement: where the boxes of a backward graph go.

The truths are hand-checked placements, independent recounts (edge crossings counted pair by pair from the
routes, overlaps box against box) and a second Python process with another string-hash seed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from models import random_graph, seed_example

from tutorial_lib import Graph, GraphNode, autograd_graph
from tutorial_lib.pictures.graph_groups import uncollapsed
from tutorial_lib.pictures.graph_placement import NODE_GAP, graph_layout


def crossings_from_routes(layout) -> int:
    """Edge crossings recounted pair by pair from the drawn routes (dummy points included)."""
    segments = {}  # layer -> [(x at this layer, x at the next layer)]
    for route in layout.edges:
        points = list(route.points)
        if route.reversed:
            points.reverse()
        upper = layout.position(route.target if route.reversed else route.source)
        xs = [points[0][0]] + [p[0] for p in points[1:-1:2]] + [points[-1][0]]
        for k, (a, b) in enumerate(zip(xs, xs[1:])):
            segments.setdefault(upper.layer + k, []).append((a, b))
    total = 0
    for pairs in segments.values():
        for i in range(len(pairs)):
            for j in range(i + 1, len(pairs)):
                (a1, b1), (a2, b2) = pairs[i], pairs[j]
                if (a1 - a2) * (b1 - b2) < 0:
                    total += 1
    return total


def overlapping(layout) -> list:
    nodes = layout.nodes
    return [
        (p.id, q.id)
        for i, p in enumerate(nodes)
        for q in nodes[i + 1 :]
        if p.left < q.right and q.left < p.right and p.bottom < q.top and q.bottom < p.top
    ]


def test_seed_layout_output_on_top_leaves_at_bottom_edges_point_down():
    z, names = seed_example()
    graph = autograd_graph(z, names=names)
    layout = graph_layout(graph)
    assert {p.id for p in layout.nodes} == {n.id for n in graph.nodes}
    assert layout.position(graph.root).layer == 0
    assert layout.position(graph.root).top == max(p.top for p in layout.nodes)
    bottom = max(p.layer for p in layout.nodes)
    assert {layout.position(n.id).layer for n in graph.nodes if n.kind == "leaf"} == {bottom}
    for route in layout.edges:
        assert layout.position(route.source).layer < layout.position(route.target).layer
    assert overlapping(layout) == []
    assert layout.crossings == crossings_from_routes(layout) == 0


def test_a_diamond_with_a_long_edge_is_placed_as_worked_out_by_hand():
    # 0 -> 1, 2 -> 3 -> 4, and 0 -> 3 skipping a layer. Boxes 40 x 20, NODE_GAP 16 (8 beside a dummy point,
    # which is 4 wide), LAYER_GAP 26, y up.
    nodes = tuple(GraphNode(i, "AddBackward0", "backward", f"n{i}") for i in range(5))
    graph = Graph(nodes, ((0, 1), (0, 2), (1, 3), (2, 3), (0, 3), (3, 4)), 0, 5, False)
    layout = graph_layout(graph, {i: (40.0, 20.0) for i in range(5)})
    # longest-path layers; the long edge's dummy point is not an item of layer 1
    assert layout.layers == ((0,), (1, 2), (3,), (4,))
    assert layout.crossings == layout.initial_crossings == 0
    # height: 4 layers of 20 and 3 gaps of 26; width: layer 1 is 40 + 16 + 40 + 8 + 4 wide
    assert (layout.width, layout.height) == (108.0, 158.0)
    assert [layout.position(i).y for i in range(5)] == [148.0, 102.0, 102.0, 56.0, 10.0]
    assert (layout.position(1).x, layout.position(2).x) == (20.0, 76.0)
    long_edge = next(r for r in layout.edges if (r.source, r.target) == (0, 3))
    # through the dummy point at x = 76 + 20 + 8 + 2, from layer 1's top line (112) to its bottom line (92)
    assert long_edge.points[1:3] == ((106.0, 112.0), (106.0, 92.0))
    # 4 hangs straight below 3, its only neighbour; 3 sits between 1 and 2 and the dummy
    assert layout.position(4).x == layout.position(3).x
    assert 20.0 < layout.position(3).x < 106.0


PLACE_IN_A_SUBPROCESS = """
import sys
sys.path.insert(0, "tests")
from models import residual, seed_example
import tutorial_lib as tl
from tutorial_lib.pictures.graph_groups import collapse_repeats
model, loss = residual(6)
z, names = seed_example()
print(tl.graph_svg(loss, model=model, collapse="module"))
print(tl.graph_svg(loss, collapse="repeats"))
print(tl.graph_svg(loss, collapse="none", max_nodes=40))
print(tl.graph_svg(z, names=names, show_values=True))
print(repr(tl.graph_layout(collapse_repeats(tl.autograd_graph(loss)))))
"""


def test_layout_and_picture_do_not_depend_on_the_string_hash_seed():
    # Sets and dicts keyed by strings iterate in an order set by PYTHONHASHSEED: two processes with two
    # seeds must still draw the same pictures.
    outputs = []
    for seed in ("0", "1"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run(
            [sys.executable, "-c", PLACE_IN_A_SUBPROCESS],
            capture_output=True,
            text=True,
            env=env,
            cwd=Path(__file__).resolve().parents[1],
            check=True,
        )
        outputs.append(done.stdout)
    assert outputs[0].count("<svg") == 4
    assert outputs[0] == outputs[1]


@settings(max_examples=150)
@given(st.data())
def test_layout_properties_on_random_dags(data):
    graph = random_graph(data)
    sizes = {n.id: (data.draw(st.floats(5, 120)), data.draw(st.floats(5, 60))) for n in graph.nodes}
    layout = graph_layout(graph, sizes)
    initial = graph_layout(graph, sizes, sweeps=0)
    # every edge goes down at least one layer; nothing overlaps; sizes are kept
    for route in layout.edges:
        assert not route.reversed
        assert layout.position(route.source).layer < layout.position(route.target).layer
        assert route.points[0] == (layout.position(route.source).x, layout.position(route.source).bottom)
        assert route.points[-1] == (layout.position(route.target).x, layout.position(route.target).top)
    assert overlapping(layout) == []
    for p in layout.nodes:
        assert (p.width, p.height) == pytest.approx(sizes[p.id])
    # each distinct edge has one route
    assert sorted((r.source, r.target) for r in layout.edges) == sorted(set(graph.edges))
    # the barycenter sweeps never do worse than the initial ordering, and the count is honest
    assert layout.crossings <= layout.initial_crossings
    assert initial.crossings == layout.initial_crossings
    assert layout.crossings == crossings_from_routes(layout)
    assert initial.crossings == crossings_from_routes(initial)
    # orders within a layer are 0..k-1 and x increases with order
    for members in layout.layers:
        xs = [layout.position(i).x for i in members]
        assert xs == sorted(xs)
        assert [layout.position(i).order for i in members] == list(range(len(members)))


def test_layout_breaks_cycles_between_groups():
    # Views (not autograd graphs) may have cycles: they are drawn with one edge reversed, not dropped.
    nodes = tuple(GraphNode(i, "AddBackward0", "backward", f"n{i}") for i in range(3))
    graph = Graph(nodes, ((0, 1), (1, 2)), 0, 3, False)
    view = uncollapsed(graph)
    cyclic = type(view)(graph, "none", (), (0, 1, 2), ((0, 1), (1, 2), (2, 1)), (1, 1, 1), {})
    layout = graph_layout(cyclic)
    assert len(layout.edges) == 3
    assert sum(r.reversed for r in layout.edges) == 1
    assert overlapping(layout) == []


@pytest.mark.parametrize(
    "call, error, name",
    [
        (lambda g: graph_layout(None), TypeError, "graph"),
        (lambda g: graph_layout(g, sizes=[1]), TypeError, "sizes"),
        (lambda g: graph_layout(g, sizes={0: (0, 5)}), ValueError, "sizes"),
        (lambda g: graph_layout(g, sizes={0: "big"}), TypeError, "sizes"),
        (lambda g: graph_layout(g, sweeps=-1), ValueError, "sweeps"),
        (lambda g: graph_layout(g, sweeps="2"), TypeError, "sweeps"),
    ],
)
def test_bad_input_names_the_argument(call, error, name):
    z, names = seed_example()
    with pytest.raises(error, match=name):
        call(autograd_graph(z, names=names))


def test_a_chain_with_a_shared_leaf_runs_straight_down():
    torch.manual_seed(0)
    w = torch.randn(3, 3, requires_grad=True)
    h = torch.zeros(3)
    for _ in range(9):  # an unrolled RNN: every step reads w, whose edges all run to the bottom
        h = torch.tanh(w @ h + 1)
    graph = autograd_graph(h)
    layout = graph_layout(graph)
    parents: dict[int, list[int]] = {}
    for a, b in graph.edges:
        parents.setdefault(b, []).append(a)
    drift = [abs(layout.position(b).x - layout.position(p[0]).x) for b, p in parents.items() if len(p) == 1]
    assert max(drift) < NODE_GAP  # a node with one parent hangs (nearly) under it: no zig-zag
