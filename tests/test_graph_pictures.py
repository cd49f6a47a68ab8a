"""graph_pictures and graph_groups: what is drawn, where, and what the summary says.

Checks look at the matplotlib artists (texts by content and gid, edge and box collections) and at the
layout data; the truths are the model layer (``autograd_graph``, ``inplace_hazards``), torch itself
(``backward()`` raising, module forward hooks), and independent recounts (edge crossings counted pair by
pair from the drawn routes).
"""

from __future__ import annotations

import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from torch import nn  # noqa: E402

from tutorial_lib import Graph, GraphNode, autograd_graph, inplace_hazards  # noqa: E402
from tutorial_lib.pictures.graph_groups import (  # noqa: E402
    collapse_by_module,
    collapse_repeats,
    immediate_dominators,
    module_membership,
    uncollapsed,
)
from tutorial_lib.pictures.graph_picture import (  # noqa: E402
    AUTO_COLLAPSE_ABOVE,
    draw_graph,
    graph_layout,
    graph_svg,
)
from tutorial_lib.tools.errors import show_error  # noqa: E402

VERSION_MESSAGE = "is at version 1; expected version 0"


# ---------------------------------------------------------------------------------------------------------
# helpers and example graphs
# ---------------------------------------------------------------------------------------------------------


def texts(fig) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_text()]


def text_values(fig) -> list[str]:
    return [t.get_text() for t in texts(fig)]


def by_gid(fig, prefix: str) -> list[Text]:
    return [t for t in texts(fig) if (t.get_gid() or "").startswith(prefix)]


def collection(fig, gid: str):
    found = [c for c in fig.findobj() if getattr(c, "get_gid", lambda: None)() == gid]
    return found[0] if found else None


def seed_example():
    x1 = torch.tensor(2.0, requires_grad=True)
    x2 = torch.tensor(3.0, requires_grad=True)
    z = torch.log(x1 * x2) * torch.sin(x2)
    z.backward(retain_graph=True)
    return z, {"x1": x1, "x2": x2}


def stale_exp_example():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x.exp()
    a.mul_(2)  # exp saved its result: now stale
    y = (a * x).sum()
    return y, {"x": x}


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(width, width)
        self.fc2 = nn.Linear(width, width)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


class ResidualMLP(nn.Module):
    def __init__(self, depth, width=4):
        super().__init__()
        self.stem = nn.Linear(3, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        h = torch.relu(self.stem(x))
        for block in self.blocks:
            h = block(h)
        return self.head(h)


def residual(depth):
    torch.manual_seed(0)
    model = ResidualMLP(depth)
    return model, model(torch.randn(5, 3)).pow(2).mean()


def random_graph(data, max_nodes=14) -> Graph:
    """A random DAG shaped like a backward graph: node 0 is the root, every node has a parent before it."""
    n = data.draw(st.integers(1, max_nodes))
    edges = []
    for v in range(1, n):
        parents = data.draw(st.sets(st.integers(0, v - 1), min_size=1, max_size=min(3, v)))
        edges.extend((p, v) for p in sorted(parents))
    names = ["MulBackward0", "AddBackward0", "ExpBackward0", "SinBackward0"]
    nodes = tuple(
        GraphNode(i, names[data.draw(st.integers(0, 3))], "backward", f"node{i}" + "x" * data.draw(st.integers(0, 12)))
        for i in range(n)
    )
    return Graph(nodes, tuple(edges), 0, n, False)


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


# ---------------------------------------------------------------------------------------------------------
# layout
# ---------------------------------------------------------------------------------------------------------


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


def test_layout_is_deterministic():
    _, loss = residual(4)
    graph = autograd_graph(loss)
    assert graph_layout(graph) == graph_layout(graph)


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


# ---------------------------------------------------------------------------------------------------------
# drawing: the seed example
# ---------------------------------------------------------------------------------------------------------


def test_seed_example_draws_every_node_edge_value_and_grad():
    z, names = seed_example()
    fig = draw_graph(z, names=names, show_values=True)
    graph = autograd_graph(z, names=names)
    assert isinstance(fig, Figure)
    labels = [t.get_text() for t in by_gid(fig, "label:")]
    assert sorted(labels) == sorted(n.label for n in graph.nodes)
    details = "\n".join(t.get_text() for t in by_gid(fig, "detail:"))
    for leaf in ("x1", "x2"):
        node = graph.find(leaf)[0]
        assert f"value: {node.value}" in details and f"grad: {node.grad}" in details
    assert "value: 2" in details and "grad: 0.07056" in details
    assert "value: 3" in details and "grad: -1.727" in details
    assert details.count("saved: self v0 (now v0)") == 4  # both muls, log, sin
    assert by_gid(fig, "warning:") == []
    # each edge is one polyline from the source's bottom to the target's top, with one arrowhead
    layout = fig.graph_layout
    drawn = collection(fig, "graph-edges").get_segments()
    expected = {
        ((layout.position(a).x, layout.position(a).bottom), (layout.position(b).x, layout.position(b).top))
        for a, b in set(graph.edges)
    }
    assert {(tuple(s[0]), tuple(s[-1])) for s in drawn} == expected
    assert len(collection(fig, "graph-arrowheads").get_paths()) == len(set(graph.edges))
    assert fig.summary == (
        "Backward graph of output scalar: 7 nodes (4 backward, 2 leaves, 1 output), 7 edges; "
        "no saved tensor was changed in place; values: output scalar = 0.2529, x2 = 3 (grad -1.727), "
        "x1 = 2 (grad 0.07056)."
    )


def test_kinds_have_distinct_shapes_not_only_colours():
    z, names = seed_example()
    fig = draw_graph(z, names=names)
    assert len(collection(fig, "graph-boxes-leaf").get_paths()) == 2
    assert len(collection(fig, "graph-boxes-backward").get_paths()) == 4
    assert len(collection(fig, "graph-boxes-output").get_paths()) == 2  # a double border
    leaf_corners = len(collection(fig, "graph-boxes-leaf").get_paths()[0].vertices)
    square_corners = len(collection(fig, "graph-boxes-backward").get_paths()[0].vertices)
    assert leaf_corners > square_corners  # rounded


def test_draw_into_given_axes_and_from_a_graph():
    z, names = seed_example()
    fig = Figure(figsize=(8, 6))
    ax = fig.add_subplot(1, 2, 2)
    returned = draw_graph(autograd_graph(z, names=names), ax=ax)
    assert returned is fig
    assert "x1" in text_values(fig) and "MulBackward0" in text_values(fig)
    assert fig.summary.startswith("Backward graph of output scalar: 7 nodes")


def test_a_leaf_alone_and_a_tensor_without_graph():
    x = torch.ones(2, requires_grad=True)
    fig = draw_graph(x, names={"x": x})
    assert [t.get_text() for t in by_gid(fig, "label:")] == ["x"]
    assert fig.summary.startswith("Backward graph of x: 1 node (0 backward, 1 leaf), 0 edges")
    fig = draw_graph(torch.ones(2))
    assert [t.get_text() for t in by_gid(fig, "label:")] == ["output (2,)"]


def test_pictures_render_to_png_and_svg(tmp_path):
    y, names = stale_exp_example()
    fig = draw_graph(y, names=names)
    fig.savefig(tmp_path / "g.png")
    fig.savefig(tmp_path / "g.svg")
    assert (tmp_path / "g.png").stat().st_size > 1000
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(tmp_path / "t.svg")
    assert "⚠ stale: saved v0, now v1" in (tmp_path / "t.svg").read_text()


# ---------------------------------------------------------------------------------------------------------
# hazards: the marker appears exactly for the stale saved tensors
# ---------------------------------------------------------------------------------------------------------


def _program(kind):
    x = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    w = torch.tensor([1.5, -1.0, 0.25], requires_grad=True)
    if kind == "exp then in place":
        a = x.exp()
        a.add_(1)
        return (a * w).sum()
    if kind == "two stale":
        a, b = x.sigmoid(), w.tanh()
        a.mul_(2)
        b.sub_(1)
        return (a + b).sum()
    if kind == "saved input changed":
        a = x * 1
        b = a.sin()  # sin saves its input a
        a.zero_()
        return b.sum()
    if kind == "changed but not saved":
        a = x + 1  # add saves nothing
        a.mul_(3)
        return a.sum()
    if kind == "clean":
        return (x.exp() * w).sum()
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind", ["exp then in place", "two stale", "saved input changed", "changed but not saved", "clean"]
)
def test_hazard_markers_match_inplace_hazards_and_backward(kind):
    y = _program(kind)
    hazards = inplace_hazards(y)
    fig = draw_graph(y)
    warnings = by_gid(fig, "warning:")
    assert len(warnings) == len(hazards)
    for hazard in hazards:
        marker = f"⚠ stale: saved v{hazard.saved_version}, now v{hazard.current_version}"
        assert marker in [w.get_text() for w in by_gid(fig, f"warning:{hazard.node_id}")]
    border = collection(fig, "graph-boxes-hazard")
    assert (0 if border is None else len(border.get_paths())) == len({h.node_id for h in hazards})
    if border is not None:
        assert border.get_linestyle()[0][1] is not None  # dashed
        assert border.get_linewidth()[0] >= 2
    # the truth: backward raises exactly when markers are drawn
    try:
        y.backward()
        raised = False
    except RuntimeError as error:
        raised = "modified by an inplace operation" in str(error)
    assert raised == bool(hazards)
    assert ("changed in place (backward() would fail)" in fig.summary) == bool(hazards)


@settings(max_examples=40)
@given(
    st.lists(
        st.sampled_from(["exp", "sigmoid", "mul", "sin", "add", "inplace_last", "inplace_first"]),
        min_size=1,
        max_size=8,
    )
)
def test_hazard_markers_on_random_programs(ops):
    x = torch.tensor([0.3, 0.6, 0.9], requires_grad=True)
    pool = [x * 1]
    for op in ops:
        if op == "inplace_last":
            pool[-1].mul_(1.5)
        elif op == "inplace_first":
            pool[0].add_(0.1)
        elif op == "mul":
            pool.append(pool[-1] * pool[0])
        elif op == "add":
            pool.append(pool[-1] + pool[0])
        else:
            pool.append(getattr(torch, op)(pool[-1]))
    y = sum(p.sum() for p in pool)
    fig = draw_graph(y, collapse="none")
    assert len(by_gid(fig, "warning:")) == len(inplace_hazards(y))


def test_show_saved_false_still_shows_stale_ones():
    y, names = stale_exp_example()
    fig = draw_graph(y, names=names, show_saved=False)
    details = "\n".join(t.get_text() for t in by_gid(fig, "detail:"))
    assert "saved: result v0 (now v1)" in details
    assert "saved: other" not in details
    assert len(by_gid(fig, "warning:")) == 1


# ---------------------------------------------------------------------------------------------------------
# module membership and collapsing
# ---------------------------------------------------------------------------------------------------------


def hook_truth(model, x):
    """Run model(x) under forward hooks and say which module was innermost when each autograd node was made.

    A probe op in the pre- and post-hooks reads autograd's creation counter (sequence numbers), so each
    module call covers an interval of sequence numbers.
    """
    spans, stack = [], []

    def probe():
        return (torch.ones(1, requires_grad=True) * 1).grad_fn._sequence_nr()

    def pre(name):
        return lambda module, args: stack.append((name, probe()))

    def post(name):
        def hook(module, args, out):
            start_name, start = stack.pop()
            spans.append((name, start, probe()))

        return hook

    handles = []
    for name, module in model.named_modules():
        if name:
            handles += [module.register_forward_pre_hook(pre(name)), module.register_forward_hook(post(name))]
    out = model(x).pow(2).mean()
    for h in handles:
        h.remove()

    def innermost(seq):
        inside = [(end - start, name) for name, start, end in spans if start < seq < end]
        return min(inside)[1] if inside else ""

    return out, innermost


def test_module_membership_matches_forward_hooks():
    torch.manual_seed(0)
    model = ResidualMLP(3)
    loss, innermost = hook_truth(model, torch.randn(5, 3))
    graph = autograd_graph(loss, names=dict(model.named_parameters()))
    membership = module_membership(loss, model, graph)
    fns = {}  # graph id -> grad_fn, walked independently
    seen, order = {loss.grad_fn}, [loss.grad_fn]
    for fn in order:
        for nxt, _ in fn.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                order.append(nxt)
    for node_id, fn in enumerate(order, start=1):
        fns[node_id] = fn
    params = {id(p): name.rpartition(".")[0] for name, p in model.named_parameters()}
    for node in graph.nodes:
        if node.kind == "backward":
            assert membership[node.id] == innermost(fns[node.id]._sequence_nr()), node
        elif node.kind == "leaf":
            assert membership[node.id] == params[id(fns[node.id].variable)]
        else:
            assert membership[node.id] == ""


def test_collapse_by_module_one_group_per_block():
    model, loss = residual(6)
    view = collapse_by_module(loss, model)
    labels = sorted(g.label for g in view.groups)
    assert labels == sorted(["stem", "head"] + [f"blocks.{i}" for i in range(6)])
    members = [m for g in view.groups for m in g.members]
    assert len(members) == len(set(members))  # a partition of the grouped nodes
    graph = view.graph
    for group in view.groups:
        for m in group.members:
            node = graph.nodes[m]
            if node.kind == "leaf":
                assert node.label.startswith(group.label + ".")
    for group in view.groups:
        if group.label.startswith("blocks."):
            assert len(group.members) == 10  # fc1, fc2 (Addmm, T, weight, bias each), relu, add
    fig = draw_graph(loss, model=model, collapse="module")
    assert {g.label for g in view.groups} <= set(text_values(fig))
    assert f"collapsed {view.collapsed_nodes} nodes into 8 groups by module: " in fig.summary
    assert graph_layout(view).edges and not any(r.reversed for r in graph_layout(view).edges)


def test_auto_collapse_above_the_threshold_and_not_below():
    model, loss = residual(6)
    assert autograd_graph(loss).total_nodes > AUTO_COLLAPSE_ABOVE
    fig = draw_graph(loss, model=model)
    assert fig.graph_view.how == "module" and "collapsed" in fig.summary
    fig = draw_graph(loss)
    assert fig.graph_view.how == "repeats" and "collapsed" in fig.summary
    small_model, small = residual(1)
    fig = draw_graph(small, model=small_model)
    assert fig.graph_view.groups == () and "collapsed" not in fig.summary


def test_collapse_repeats_on_residual_blocks():
    _, loss = residual(8)
    graph = autograd_graph(loss)
    view = collapse_repeats(graph)
    assert len(view.groups) >= 6
    assert all(len(g.members) == 10 for g in view.groups)
    assert all(g.label.startswith("repeat ") for g in view.groups)
    merged = collapse_repeats(graph, merge_runs=True)
    assert len(merged.groups) == 1 and merged.collapsed_nodes == view.collapsed_nodes
    fig = draw_graph(loss, collapse="repeats")
    assert fig.summary.count(f"collapsed {view.collapsed_nodes} nodes into {len(view.groups)} groups") == 1


def test_collapse_repeats_on_a_chain_of_small_ops():
    x = torch.ones(3, requires_grad=True)
    y = x
    for _ in range(100):
        y = (y * 1.01).sin()
    view = collapse_repeats(autograd_graph(y))
    assert len(view.groups) == 1
    group = view.groups[0]
    assert len(group.members) == 200 and group.label.endswith("×100")
    assert "MulBackward0" in group.label and "SinBackward0" in group.label


def test_shared_weight_stays_outside_groups():
    torch.manual_seed(0)
    w = torch.randn(3, 3, requires_grad=True)
    h = torch.zeros(3)
    for _ in range(12):  # an unrolled RNN: every step uses w
        h = torch.tanh(w @ h + 1)
    graph = autograd_graph(h, names={"w": w})
    view = collapse_repeats(graph)
    w_id = graph.find("w")[0].id
    assert view.groups and view.group_of(w_id) is None
    assert not any(r.reversed for r in graph_layout(view).edges)


@settings(max_examples=100)
@given(st.data())
def test_collapsed_views_are_acyclic_partitions(data):
    graph = random_graph(data, max_nodes=30)
    for view in (collapse_repeats(graph), collapse_repeats(graph, merge_runs=True)):
        members = [m for g in view.groups for m in g.members]
        assert len(members) == len(set(members))
        assert set(view.items) == {n.id for n in graph.nodes if view.group_of(n.id) is None} | {
            g.id for g in view.groups
        }
        assert not any(r.reversed for r in graph_layout(view).edges)


def test_dominators_of_the_seed_graph():
    z, names = seed_example()
    graph = autograd_graph(z, names=names)
    idom = immediate_dominators(graph)
    mul_top = graph.find("MulBackward0")[0].id
    assert idom[graph.root] == graph.root
    assert idom[mul_top] == graph.root
    assert idom[graph.find("x2")[0].id] == mul_top  # reached via sin and via log's mul


def test_cap_draws_at_most_max_nodes_with_a_visible_message():
    _, loss = residual(6)
    graph = autograd_graph(loss)
    fig = draw_graph(loss, collapse="none", max_nodes=20)
    assert len(by_gid(fig, "label:")) == 20
    message = by_gid(fig, "message")
    assert len(message) == 1 and f"not drawn (showing 20 of {graph.total_nodes})" in message[0].get_text().replace(
        "\n", " "
    )
    assert f"drawing 20 of {graph.total_nodes} nodes (20 boxes)" in fig.summary
    assert collection(fig, "graph-cut-edges") is not None


def test_group_hides_no_hazard():
    # A stale saved tensor inside a collapsed group is still marked on the group's box.
    x = torch.ones(3, requires_grad=True)
    y = x
    kept = []
    for _ in range(40):
        y = (y * 1.01).exp()
        kept.append(y)
    kept[10].add_(1)  # exp saved its result
    graph = autograd_graph(kept[-1])
    fig = draw_graph(kept[-1], collapse="repeats")
    warnings = by_gid(fig, "warning:")
    assert len(warnings) == len(inplace_hazards(kept[-1])) == 1
    assert warnings[0].get_text().startswith("⚠ stale: saved v0, now v1 (ExpBackward0 result)")
    assert "1 saved tensor changed in place" in fig.summary
    del graph


# ---------------------------------------------------------------------------------------------------------
# show_error
# ---------------------------------------------------------------------------------------------------------


def test_show_error_on_the_inplace_error():
    y, names = stale_exp_example()
    report = show_error(y.backward, names=names)
    assert report.raised and report.exception_type == "RuntimeError"
    assert VERSION_MESSAGE in report.message and "Hint" not in report.message
    assert report.figure is not None
    assert [t.get_text() for t in by_gid(report.figure, "warning:")] == ["⚠ stale: saved v0, now v1"]
    assert "x" in text_values(report.figure)
    assert [h.node for h in report.hazards] == ["ExpBackward0"]
    assert repr(report) == report.summary
    assert report.summary.startswith("RuntimeError: one of the variables needed for gradient computation")
    assert "Why: ExpBackward0 saved the result of exp" in report.summary
    html = report._repr_html_()
    assert "RuntimeError" in html and "is at version 1; expected version 0" in html
    # the picture is of the graph as backward found it, not half freed by the failed backward
    assert "freed" not in "\n".join(text_values(report.figure))


def test_show_error_is_deterministic_and_finds_the_graph_from_kwargs():
    summaries = set()
    for _ in range(2):
        y, names = stale_exp_example()
        report = show_error(lambda: y.backward(), graph_of=y, names=names)
        summaries.add(report.summary)
        assert report.figure is not None
    assert len(summaries) == 1
    y, _ = stale_exp_example()
    report = show_error(lambda: y.backward())  # no way to know the graph
    assert report.figure is None and VERSION_MESSAGE in report.message
    assert "pass graph_of=" in report.summary
    y, _ = stale_exp_example()
    report = show_error(torch.autograd.backward, y)  # first tensor argument
    assert report.figure is not None


def test_show_error_when_fn_makes_the_graph_stale_itself():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    a = x.sigmoid()
    y = (a * 3).sum()

    def change_then_backward():
        a.add_(1)
        y.backward()

    report = show_error(change_then_backward, graph_of=y)
    assert VERSION_MESSAGE in report.message
    assert len(by_gid(report.figure, "warning:")) == 1


def test_show_error_second_backward_shows_freed_tensors():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    report = show_error(y.backward)
    assert report.exception_type == "RuntimeError" and "second time" in report.message
    assert "freed by backward" in "\n".join(text_values(report.figure))


def test_show_error_without_an_error_and_with_other_errors():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).sum()
    report = show_error(y.backward)
    assert not report.raised and report.figure is None and report.exception_type is None
    assert report.summary == "No error: backward ran without raising and returned None."
    report = show_error(lambda: int("nope"))
    assert report.exception_type == "ValueError" and report.figure is None
    assert report.summary == "ValueError: invalid literal for int() with base 10: 'nope'"


# ---------------------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, name",
    [
        (lambda t, g: draw_graph("x"), TypeError, "t_or_graph"),
        (lambda t, g: draw_graph(t, collapse="bogus"), ValueError, "collapse"),
        (lambda t, g: draw_graph(t, collapse=3), TypeError, "collapse"),
        (lambda t, g: draw_graph(t, show_values="yes"), TypeError, "show_values"),
        (lambda t, g: draw_graph(t, show_saved=1), TypeError, "show_saved"),
        (lambda t, g: draw_graph(t, max_nodes=0), ValueError, "max_nodes"),
        (lambda t, g: draw_graph(t, max_nodes=2.5), TypeError, "max_nodes"),
        (lambda t, g: draw_graph(t, ax="axes"), TypeError, "ax"),
        (lambda t, g: draw_graph(t, model="model"), TypeError, "model"),
        (lambda t, g: draw_graph(t, collapse="module"), ValueError, "model"),
        (lambda t, g: draw_graph(g, collapse="module", model=nn.Linear(1, 1)), ValueError, "t_or_graph"),
        (lambda t, g: draw_graph(g, names={}), ValueError, "names"),
        (lambda t, g: draw_graph(t, names=["x"]), TypeError, "names"),
        (lambda t, g: graph_layout(None), TypeError, "graph"),
        (lambda t, g: graph_layout(g, sizes=[1]), TypeError, "sizes"),
        (lambda t, g: graph_layout(g, sizes={0: (0, 5)}), ValueError, "sizes"),
        (lambda t, g: graph_layout(g, sweeps=-1), ValueError, "sweeps"),
        (lambda t, g: graph_layout(g, sweeps="2"), TypeError, "sweeps"),
        (lambda t, g: show_error(3), TypeError, "fn"),
        (lambda t, g: show_error(print, graph_of="y"), TypeError, "graph_of"),
        (lambda t, g: show_error(print, names="x"), TypeError, "names"),
        (lambda t, g: collapse_by_module(t, "model"), TypeError, "model"),
        (lambda t, g: collapse_by_module(t, nn.Linear(1, 1), depth=0), ValueError, "depth"),
        (lambda t, g: collapse_repeats("graph"), TypeError, "graph"),
        (lambda t, g: collapse_repeats(g, merge_runs="yes"), TypeError, "merge_runs"),
        (lambda t, g: module_membership(t, nn.Linear(1, 1), graph=autograd_graph(t * 2)), ValueError, "graph"),
    ],
)
def test_bad_input_names_the_argument(call, error, name):
    y, _ = stale_exp_example()
    with pytest.raises(error, match=name):
        call(y, autograd_graph(y))


# ---------------------------------------------------------------------------------------------------------
# import hygiene and speed
# ---------------------------------------------------------------------------------------------------------


def test_importing_draws_nothing_and_imports_no_matplotlib():
    code = (
        "import sys, tutorial_lib.pictures.graph_picture, tutorial_lib.pictures.graph_groups,"
        " tutorial_lib.explorers.graph_stepper, tutorial_lib.tools.errors;"
        "print('matplotlib' in sys.modules, 'ipywidgets' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


@pytest.mark.slow
def test_a_thousand_node_graph_draws_whole_and_collapsed():
    # How long this takes is measured in benchmarks/bench_graph.py, never asserted here.
    model, loss = residual(99)
    total = autograd_graph(loss).total_nodes
    assert total >= 1000
    fig = draw_graph(loss, model=model)
    assert fig.graph_view.groups and len(by_gid(fig, "label:")) < 150
    fig = draw_graph(loss, collapse="none", max_nodes=2000)
    assert len(by_gid(fig, "label:")) == total
    assert svg_texts(graph_svg(loss, collapse="none", max_nodes=2000)) == figure_texts(fig)


# ---------------------------------------------------------------------------------------------------------
# graph_svg: the same picture, written directly
# ---------------------------------------------------------------------------------------------------------

SVG = "{http://www.w3.org/2000/svg}"


def svg_tree(svg: str):
    import xml.etree.ElementTree as ET

    return ET.fromstring(svg)  # also proves it is well-formed XML


def svg_texts(svg: str) -> list[tuple[str, str]]:
    """(id, text) of every <text>, lines of multi-line texts joined by newlines, sorted."""
    found = []
    for element in svg_tree(svg).iter(f"{SVG}text"):
        spans = element.findall(f"{SVG}tspan")
        content = "\n".join(span.text or "" for span in spans) if spans else (element.text or "")
        found.append((element.get("id"), content))
    return sorted(found)


def figure_texts(fig) -> list[tuple[str, str]]:
    return sorted((t.get_gid(), t.get_text()) for t in texts(fig))


def svg_group_sizes(svg: str) -> dict[str, int]:
    return {g.get("id"): len(list(g)) for g in svg_tree(svg).iter(f"{SVG}g")}


def figure_group_sizes(fig) -> dict[str, int]:
    from matplotlib.collections import Collection

    return {c.get_gid(): len(c.get_paths()) for c in fig.findobj(Collection) if c.get_gid()}


@pytest.mark.parametrize("example", ["seed", "stale", "residual 24 whole", "residual 99 collapsed", "capped"])
def test_graph_svg_draws_what_the_figure_draws(example):
    if example == "seed":
        tensor, names = seed_example()
        options = dict(names=names, show_values=True)
    elif example == "stale":
        tensor, names = stale_exp_example()
        options = dict(names=names)
    elif example == "capped":
        model, tensor = residual(24)
        options = dict(collapse="none", max_nodes=30)
    else:
        depth = 24 if "24" in example else 99
        model, tensor = residual(depth)
        options = dict(model=model, collapse="none", max_nodes=2000) if "whole" in example else dict(model=model)
    fig = draw_graph(tensor, **options)
    svg = graph_svg(tensor, **options)
    assert svg_texts(svg) == figure_texts(fig)
    assert svg_group_sizes(svg) == figure_group_sizes(fig)
    root = svg_tree(svg)
    assert root.find(f"{SVG}title").text == fig.summary
    # every text starts inside the picture
    width, height = (float(v) for v in root.get("viewBox").split()[2:])
    for element in root.iter(f"{SVG}text"):
        assert 0 <= float(element.get("x")) <= width and 0 <= float(element.get("y")) <= height


@pytest.mark.parametrize("kind", ["exp then in place", "two stale", "saved input changed", "clean"])
def test_graph_svg_marks_exactly_the_hazards(kind):
    y = _program(kind)
    hazards = inplace_hazards(y)
    root = svg_tree(graph_svg(y))
    border = [g for g in root.iter(f"{SVG}g") if g.get("id") == "graph-boxes-hazard"]
    assert (len(list(border[0])) if border else 0) == len({h.node_id for h in hazards})
    if border:
        assert border[0].get("stroke-dasharray") and float(border[0].get("stroke-width")) >= 2  # not colour alone
    warnings = [e.text for e in root.iter(f"{SVG}text") if e.get("id", "").startswith("warning:")]
    assert sorted(warnings) == sorted(f"⚠ stale: saved v{h.saved_version}, now v{h.current_version}" for h in hazards)


def test_graph_svg_bad_input_names_the_argument():
    from tutorial_lib.pictures.graph_picture import scene_svg

    with pytest.raises(TypeError, match="t_or_graph"):
        graph_svg([1.0])
    with pytest.raises(ValueError, match="collapse"):
        graph_svg(stale_exp_example()[0], collapse="blocks")
    with pytest.raises(TypeError, match="scene"):
        scene_svg("<svg/>")


def test_error_report_displays_text_then_figure_in_jupyter():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.core.pylabtools import select_figure_formats
    from IPython.display import display
    from IPython.utils.capture import capture_output

    select_figure_formats(InteractiveShell.instance(), {"png"})  # what the inline backend does in a kernel
    y, names = stale_exp_example()
    report = show_error(y.backward, names=names)
    with capture_output() as captured:
        display(report)
    first, second = captured.outputs
    assert first.data["text/plain"] == report.summary
    assert "is at version 1; expected version 0" in first.data["text/html"]
    assert "image/png" in second.data  # the figure, as its own output


def test_figures_show_in_jupyter_without_pyplot():
    # A bare Figure has no PNG formatter in IPython unless pyplot was imported: draw_graph gives it one.
    z, names = seed_example()
    fig = draw_graph(z, names=names)
    png = fig._repr_png_()
    assert png.startswith(b"\x89PNG")


def test_two_graphs_side_by_side_log_no_warning(caplog):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    fig = Figure(figsize=(8, 3))
    left, right = fig.subplots(1, 2)
    with caplog.at_level("WARNING"):
        draw_graph((x.clone() * 2).sum(), ax=left)
        draw_graph((x.detach() * 2).sum(), ax=right)
        fig.savefig(__import__("io").BytesIO(), format="png")
    assert caplog.records == []
    # the clone's graph: output, Sum, Mul, Clone and x's leaf; the detached result has no graph at all
    assert len(by_gid(fig, "label:")) == 5 + 1


def test_summary_counts_saved_tensors_freed_by_backward():
    z, names = seed_example()  # backward with retain_graph: nothing freed
    assert "freed" not in draw_graph(z, names=names).summary
    z.backward()
    freed = sum(1 for n in autograd_graph(z).nodes for s in n.saved if s.freed)
    assert freed == 6  # Mul saves two, Log one, Sin one, Mul two
    assert "6 saved tensors already freed by backward()" in draw_graph(z, names=names).summary
