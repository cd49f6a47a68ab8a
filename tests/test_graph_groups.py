"""graph_groups: which module made each node, repeated blocks, and the views built from them.

The truths are torch itself (module forward hooks reading autograd's creation counter, the graph walked
through ``next_functions``) and properties every view must have (groups partition the nodes, no cycle).
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from models import ResidualMLP, random_graph, residual, seed_example
from torch import nn

from tutorial_lib import autograd_graph
from tutorial_lib.pictures.graph_groups import (
    collapse_by_module,
    collapse_repeats,
    immediate_dominators,
    module_membership,
    uncollapsed,
)
from tutorial_lib.pictures.graph_picture import graph_scene
from tutorial_lib.pictures.graph_placement import graph_layout


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
    scene = graph_scene(loss, model=model, collapse="module")
    assert {g.label for g in view.groups} <= {text for _, text in scene.texts()}
    assert f"collapsed {view.collapsed_nodes} nodes into 8 groups by module: " in scene.title
    assert graph_layout(view).edges and not any(r.reversed for r in graph_layout(view).edges)


def test_collapse_repeats_on_residual_blocks():
    _, loss = residual(8)
    graph = autograd_graph(loss)
    view = collapse_repeats(graph)
    assert len(view.groups) >= 6
    assert all(len(g.members) == 10 for g in view.groups)
    assert all(g.label.startswith("repeat ") for g in view.groups)
    merged = collapse_repeats(graph, merge_runs=True)
    assert len(merged.groups) == 1 and merged.collapsed_nodes == view.collapsed_nodes
    assert merged.describe().startswith(f"collapsed {view.collapsed_nodes} nodes into 1 group of repeated blocks: ")
    assert merged.groups[0].label == f"repeated block ×{len(view.groups)}"
    title = graph_scene(loss, collapse="repeats").title  # the picture draws a run of blocks as one box
    assert title.count(f"collapsed {view.collapsed_nodes} nodes into 1 group of repeated blocks: ") == 1
    assert f"repeated block ×{len(view.groups)} ({view.collapsed_nodes})" in title


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


def test_restricted_keeps_the_grouping_and_only_the_edges_between_kept_items():
    _, loss = residual(6)
    view = collapse_repeats(autograd_graph(loss))
    kept = view.items[: len(view.items) // 2]
    sub = view.restricted(kept)
    assert sub.items == kept and sub.groups == view.groups and sub.how == view.how
    expected = [(e, c) for e, c in zip(view.edges, view.edge_counts) if e[0] in kept and e[1] in kept]
    assert list(zip(sub.edges, sub.edge_counts)) == expected and expected
    dropped = [e for e in view.edges if e[0] not in kept or e[1] not in kept]
    assert dropped and not set(dropped) & set(sub.edges)
    # which group holds each node is unchanged, dropped items included
    assert all(sub.group_of(n.id) == view.group_of(n.id) for n in view.graph.nodes)
    assert view.restricted(view.items) == view


def test_dominators_of_the_seed_graph():
    z, names = seed_example()
    graph = autograd_graph(z, names=names)
    idom = immediate_dominators(graph)
    mul_top = graph.find("MulBackward0")[0].id
    assert idom[graph.root] == graph.root
    assert idom[mul_top] == graph.root
    assert idom[graph.find("x2")[0].id] == mul_top  # reached via sin and via log's mul


def test_uncollapsed_has_one_item_per_node():
    z, names = seed_example()
    graph = autograd_graph(z, names=names)
    view = uncollapsed(graph)
    assert view.items == tuple(n.id for n in graph.nodes) and view.groups == ()
    assert view.describe() == "nothing collapsed"


@pytest.mark.parametrize(
    "call, error, name",
    [
        (lambda t, g: collapse_by_module(t, "model"), TypeError, "model"),
        (lambda t, g: collapse_by_module(t, nn.Linear(1, 1), depth=0), ValueError, "depth"),
        (lambda t, g: collapse_by_module(t, nn.Linear(1, 1), depth="1"), TypeError, "depth"),
        (lambda t, g: collapse_repeats("graph"), TypeError, "graph"),
        (lambda t, g: collapse_repeats(g, merge_runs="yes"), TypeError, "merge_runs"),
        (lambda t, g: uncollapsed(None), TypeError, "graph"),
        (lambda t, g: module_membership(t, nn.Linear(1, 1), graph=autograd_graph(t * 2)), ValueError, "graph"),
        (lambda t, g: module_membership("t", nn.Linear(1, 1)), TypeError, "t"),
    ],
)
def test_bad_input_names_the_argument(call, error, name):
    z, names = seed_example()
    with pytest.raises(error, match=name):
        call(z, autograd_graph(z, names=names))


@given(st.integers(1, 40), st.integers(1, 30))
@settings(max_examples=40, deadline=None)
def test_capped_keeps_the_items_nearest_the_root_and_names_the_cut_ones(depth, max_items):
    _, loss = residual(depth)
    view = uncollapsed(autograd_graph(loss))
    kept, cut = view.capped(max_items)
    assert len(kept) == min(max_items, len(view.items)) and view.root in kept
    children = {}
    for a, b in view.edges:
        children.setdefault(a, set()).add(b)
    # Breadth first: every kept item but the root has a kept parent, so the kept part hangs together.
    parents = {b for a in kept for b in children.get(a, ())}
    assert all(item == view.root or item in parents for item in kept)
    # The cut items are exactly the kept ones with a child left out.
    assert set(cut) == {a for a in kept if children.get(a, set()) - set(kept)}
    assert (cut == ()) == (len(kept) == len(view.items))


def test_capped_checks_max_items():
    view = uncollapsed(autograd_graph(seed_example()[0]))
    for bad, error in ((0, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="max_items"):
            view.capped(bad)
