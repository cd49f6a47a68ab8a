"""graph_picture: what the picture of a backward graph draws and what its summary says.

Checks look at the scene (``graph_scene``, ``fig.scene``: texts by id, items by style) and at the placement;
the truths are the model layer (``autograd_graph``, ``inplace_hazards``) and torch itself (``backward()``
raising). A few checks read the SVG and the matplotlib figure, to prove both show the scene.
"""

from __future__ import annotations

import io
import subprocess
import sys
import xml.etree.ElementTree as ET

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text as TextArtist  # noqa: E402
from models import residual, seed_example, stale_exp_example  # noqa: E402
from torch import nn  # noqa: E402

from tutorial_lib import Graph, GraphNode, autograd_graph, inplace_hazards  # noqa: E402
from tutorial_lib.facts.graph import SavedTensor  # noqa: E402
from tutorial_lib.pictures.graph_picture import (  # noqa: E402
    AUTO_COLLAPSE_ABOVE,
    MAX_HEIGHT_PT,
    MAX_WIDTH_PT,
    draw_graph,
    graph_scene,
    graph_svg,
)
from tutorial_lib.pictures.graph_placement import PAD_X  # noqa: E402
from tutorial_lib.pictures.palette import MIN_TEXT_PT, MUTED, STALE, tensor_colour  # noqa: E402
from tutorial_lib.pictures.scene import Arrow, Line, Polygon, Rect, Text, size_of, visible  # noqa: E402

# ---------------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------------


def texts_with(scene, prefix: str) -> list[str]:
    """The texts whose id starts with ``prefix``, in drawing order."""
    return [text for ident, text in scene.texts() if ident.startswith(prefix)]


def styled(scene, style: str) -> list:
    return [item for item in scene.items if item.style == style]


SVG = "{http://www.w3.org/2000/svg}"


def svg_texts(svg: str) -> list[tuple[str, str]]:
    """(id, text) of every <text> of an SVG document, lines of multi-line texts joined by newlines, sorted."""
    found = []
    for element in ET.fromstring(svg).iter(f"{SVG}text"):
        spans = element.findall(f"{SVG}tspan")
        content = "\n".join(span.text or "" for span in spans) if spans else (element.text or "")
        if element.get("id") is not None:  # a halo's white copy carries no id
            found.append((element.get("id"), content))
    return sorted(found)


def figure_texts(fig) -> list[tuple[str, str]]:
    """(gid, text) of every text artist of a matplotlib figure, sorted."""
    return sorted((t.get_gid(), t.get_text()) for t in fig.findobj(TextArtist) if t.get_text())


# ---------------------------------------------------------------------------------------------------------
# the seed example
# ---------------------------------------------------------------------------------------------------------


def test_seed_example_draws_every_node_edge_value_and_grad():
    z, names = seed_example()
    fig = draw_graph(z, names=names, show_values=True)
    graph = autograd_graph(z, names=names)
    assert isinstance(fig, Figure)
    scene = fig.scene
    assert sorted(texts_with(scene, "label:")) == sorted(n.label for n in graph.nodes)
    details = "\n".join(texts_with(scene, "detail:"))
    for leaf in ("x1", "x2"):
        node = graph.find(leaf)[0]
        assert f"value: {node.value}" in details and f"grad: {node.grad}" in details
    assert "value: 2" in details and "grad: 0.07056" in details
    assert "value: 3" in details and "grad: -1.727" in details
    chips = texts_with(scene, "chip-text:")
    assert sum(chip.startswith("self") for chip in chips) == 4  # both muls, log, sin
    assert not any("v0" in chip for chip in chips)  # versions only on stale ones
    assert texts_with(scene, "warning:") == []
    # each edge is one arrow from the source's bottom to the target's top (the scene is the placement, y flipped)
    layout = fig.graph_layout
    root, outer = layout.position(graph.root), styled(scene, "graph-boxes-output")[0]
    x0, y1 = root.left - outer.x, outer.y + root.top

    def placed(point):
        return round(point[0] + x0, 6), round(y1 - point[1], 6)

    drawn = {(placed(a.points[0]), placed(a.points[-1])) for a in styled(scene, "graph-edges")}
    expected = {
        (
            (round(layout.position(a).x, 6), round(layout.position(a).bottom, 6)),
            (round(layout.position(b).x, 6), round(layout.position(b).top, 6)),
        )
        for a, b in set(graph.edges)
    }
    assert len(styled(scene, "graph-edges")) == len(set(graph.edges))
    assert drawn == expected
    assert (
        fig.summary
        == scene.title
        == (
            "Backward graph of output scalar: 7 nodes (4 backward, 2 leaves, 1 output), 7 edges; "
            "no saved tensor was changed in place; saved for backward: x2 (SinBackward0, MulBackward0), "
            "x1 (MulBackward0); values: output scalar = 0.2529, x2 = 3 (grad -1.727), x1 = 2 (grad 0.07056)."
        )
    )


def test_kinds_have_distinct_shapes_not_only_colours():
    z, names = seed_example()
    scene = graph_scene(z, names=names)
    leaves = [item for item in scene.items if item.style.startswith("graph-boxes-leaf")]  # named: own colour
    squares = styled(scene, "graph-boxes-backward")
    assert len(leaves) == 2 and all(isinstance(item, Polygon) and len(item.points) > 4 for item in leaves)  # rounded
    assert len(squares) == 4 and all(isinstance(item, Rect) for item in squares)
    outer, inner = styled(scene, "graph-boxes-output")  # a double border
    assert inner.x > outer.x and inner.y > outer.y and inner.x + inner.w < outer.x + outer.w


def test_draw_into_given_axes_and_from_a_graph():
    z, names = seed_example()
    fig = Figure(figsize=(8, 6))
    ax = fig.add_subplot(1, 2, 2)
    returned = draw_graph(autograd_graph(z, names=names), ax=ax)
    assert returned is fig and len(fig.axes) == 1
    assert {"x1", "MulBackward0"} <= {text for _, text in fig.scene.texts()}
    assert fig.summary.startswith("Backward graph of output scalar: 7 nodes")


def test_a_leaf_alone_and_a_tensor_without_graph():
    x = torch.ones(2, requires_grad=True)
    scene = graph_scene(x, names={"x": x})
    assert texts_with(scene, "label:") == ["x"]
    assert scene.title.startswith("Backward graph of x: 1 node (0 backward, 1 leaf), 0 edges")
    assert texts_with(graph_scene(torch.ones(2)), "label:") == ["output (2,)"]


def test_an_edge_taken_twice_is_counted_on_its_arrow():
    x = torch.ones(2, requires_grad=True)
    scene = graph_scene((x * x).sum(), names={"x": x})
    assert texts_with(scene, "edge-count") == ["×2"]


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
    scene = graph_scene(y)
    assert len(texts_with(scene, "warning:")) == len(hazards)
    for hazard in hazards:
        marker = f"⚠ stale: saved v{hazard.saved_version}, now v{hazard.current_version}"
        assert marker in texts_with(scene, f"warning:{hazard.node_id}")
    assert len(styled(scene, "graph-boxes-hazard")) == len({h.node_id for h in hazards})
    border = scene.styles["graph-boxes-hazard"]
    assert border.dash is not None and border.width >= 2  # not colour alone
    # the truth: backward raises exactly when markers are drawn
    try:
        y.backward()
        raised = False
    except RuntimeError as error:
        raised = "modified by an inplace operation" in str(error)
    assert raised == bool(hazards)
    assert ("changed in place (backward() raises when it reaches" in scene.title) == bool(hazards)


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
    assert len(texts_with(graph_scene(y, collapse="none"), "warning:")) == len(inplace_hazards(y))


def test_show_saved_false_still_shows_stale_ones():
    y, names = stale_exp_example()
    scene = graph_scene(y, names=names, show_saved=False)
    chips = texts_with(scene, "chip-text:")
    assert len(chips) == 1 and chips[0].startswith("result · (3,)")
    assert len(texts_with(scene, "warning:")) == 1


def test_group_hides_no_hazard():
    # A stale saved tensor inside a collapsed group is still marked on the group's box.
    x = torch.ones(3, requires_grad=True)
    y = x
    kept = []
    for _ in range(40):
        y = (y * 1.01).exp()
        kept.append(y)
    kept[10].add_(1)  # exp saved its result
    scene = graph_scene(kept[-1], collapse="repeats")
    warnings = texts_with(scene, "warning:")
    assert len(warnings) == len(inplace_hazards(kept[-1])) == 1
    assert warnings[0].startswith("⚠ stale: saved v0, now v1 (ExpBackward0 result)")
    assert "1 saved tensor changed in place" in scene.title
    assert len(styled(scene, "graph-boxes-group")) == len(styled(scene, "graph-boxes-shadow")) == 1


# ---------------------------------------------------------------------------------------------------------
# saved tensors as chips, the in-place edit, node ids, the stepper's marks
# ---------------------------------------------------------------------------------------------------------


def test_versions_only_on_stale_chips_and_a_legend_of_what_is_drawn():
    z, names = seed_example()
    scene = graph_scene(z, names=names)
    assert not any(" v0" in text or "now v" in text for _, text in scene.texts())  # nothing stale: no versions
    (legend,) = texts_with(scene, "legend")
    assert "⚠" not in legend and "group" not in legend and legend.count("\n") <= 1  # one or two lines
    y, names = stale_exp_example()
    stale = graph_scene(y, names=names)
    assert texts_with(stale, "warning:") == ["⚠ stale: saved v0, now v1"]
    assert "⚠" in texts_with(stale, "legend")[0]


def test_saved_tensors_are_chips_with_name_shape_and_bytes_in_the_tensor_colours():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x.exp()
    a.mul_(2)
    y = (a * x).sum()
    scene = graph_scene(y, names={"x": x, "a": a})
    graph = autograd_graph(y, names={"x": x, "a": a})
    chips = dict((ident, text) for ident, text in scene.texts() if ident.startswith("chip-text:"))
    exp_id, mul_id = graph.find("ExpBackward0")[0].id, graph.find("MulBackward0")[-1].id
    assert chips[f"chip-text:{exp_id}:0"] == "result = a · (3,) · 12 B"
    by_item = {ident.split(":")[1]: text for ident, text in chips.items()}
    assert "self = a · (3,) · 12 B" in chips.values() and "other = x · (3,) · 12 B" in chips.values()
    assert str(mul_id) in by_item
    ids = scene.ids()
    assert ids[f"chip:{exp_id}:0"].style == "graph-chip-stale"
    assert scene.styles["graph-chip-stale"].edge == STALE
    # a name's colour: its place among the names given, on its chips' swatches and on its leaf's box
    swatches = {ids[i].style for i in ids if i.startswith(f"swatch:{exp_id}:")}
    assert swatches == {"graph-swatch-1"} and scene.styles["graph-swatch-1"].fill == tensor_colour(1)
    (leaf,) = [item for item in scene.items if item.style.startswith("graph-boxes-leaf")]
    assert leaf.style == "graph-boxes-leaf-0" and scene.styles[leaf.style].fill == tensor_colour(0)
    assert "saved for backward: x (MulBackward0), a (MulBackward0, ExpBackward0)." in scene.title


def test_the_inplace_write_is_a_vermilion_edge_to_its_node_labelled_with_op_and_version():
    a = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    b = a.exp()
    b.mul_(2)
    scene = graph_scene(b.sum(), names={"a": a, "b": b}, show_ids=True)
    graph = autograd_graph(b.sum(), names={"a": a, "b": b})
    exp_id, mul_id = graph.find("ExpBackward0")[0].id, graph.find("MulBackward0")[0].id
    ids = scene.ids()
    edge, label = ids[f"edit:{exp_id}:0"], ids[f"edit-label:{exp_id}:0"]
    assert edge.style == "graph-edit" and scene.styles["graph-edit"].edge == STALE and label.text == "mul_ → v1"
    chip = ids[f"chip:{exp_id}:0"]
    assert edge.points[0] == (chip.x + chip.w, chip.y + chip.h / 2)  # from the chip ...
    tag = ids[f"node-id:{mul_id}"]  # drawn PAD_X inside the box's right edge, at its top
    end_x, end_y = edge.points[-1]
    assert end_x == pytest.approx(tag.x + PAD_X + 3) and end_y > tag.y  # ... to the right side of mul_'s box
    assert "ExpBackward0 saved result = b v0, now v1 after mul_" in scene.title
    # unnamed: the stale chip, no edit (which write it was is not known)
    unnamed = graph_scene(b.sum(), names={"a": a})
    assert not [i for i in unnamed.ids() if i.startswith("edit")] and texts_with(unnamed, "warning:")


def test_a_write_whose_node_is_not_drawn_is_a_label_beside_the_chip():
    a = torch.randn(3, requires_grad=True)
    h = a.sin()
    y = h * a
    h.add_(3)  # its AddBackward0 is not in y's graph
    scene = graph_scene(y, names={"h": h})
    assert texts_with(scene, "edit-label:") == ["add_ → v1"]
    assert not [i for i in scene.ids() if i.startswith("edit:")]


def test_boxes_carry_their_node_ids_when_asked_and_the_stepper_marks():
    z, names = seed_example()
    graph = autograd_graph(z, names=names)
    assert texts_with(graph_scene(z, names=names), "node-id:") == []  # no text refers to them
    scene = graph_scene(z, names=names, new_nodes={1}, newly_stale=set(), show_ids=True)
    assert texts_with(scene, "node-id:") == [f"#{n.id}" for n in graph.nodes]
    assert scene.ids()["new:1"].style == "graph-boxes-new" and texts_with(scene, "new-label:") == ["new"]
    assert "thick: new this step" in texts_with(scene, "legend")[0]
    y, names = stale_exp_example()
    graph = autograd_graph(y, names=names)
    exp_id = graph.find("ExpBackward0")[0].id
    marked = graph_scene(graph, newly_stale={(exp_id, "result")})
    assert texts_with(marked, f"warning:{exp_id}") == ["⚠ stale: saved v0, now v1 · this step"]
    with pytest.raises(TypeError, match="new_nodes"):
        graph_scene(graph, new_nodes=[True])
    with pytest.raises(TypeError, match="newly_stale"):
        graph_scene(graph, newly_stale={exp_id})
    with pytest.raises(ValueError, match="one graph"):
        graph_scene([graph, graph], new_nodes={exp_id})  # a comparison has no step to mark


def test_this_step_marks_the_stale_chip_even_after_more_chips_than_a_box_shows():
    # A box shows at most 4 current saved tensors but every stale one: the mark goes to the stale chip itself,
    # not to the chip at the stale tensor's position among the saved ones.
    current = tuple(SavedTensor(f"s{i}", False, (3,), torch.float32, 0, 0) for i in range(5))
    late = SavedTensor("late", False, (3,), torch.float32, 0, 1)
    graph = Graph((GraphNode(0, "CatBackward0", "backward", "CatBackward0", saved=(*current, late)),), (), 0, 1, False)
    scene = graph_scene(graph, newly_stale={(0, "late")})
    assert texts_with(scene, "warning:0") == ["⚠ stale: saved v0, now v1 · this step"]


def test_a_comparison_draws_graphs_side_by_side_under_captions():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = torch.tensor([0.5, 0.5, 0.5], requires_grad=True)
    pair = [(x.clone() * w).sum(), (x.detach() * w).sum()]
    names = {"x": x, "w": w}
    scene = graph_scene(pair, names=names, captions=["clone", "detach"])
    single = [graph_scene(t, names=names) for t in pair]
    assert scene.title == f"clone: {single[0].title} | detach: {single[1].title}"
    assert texts_with(scene, "0/caption") == ["clone"] and texts_with(scene, "1/caption") == ["detach"]
    assert len(texts_with(scene, "0/label:")) == 6 and len(texts_with(scene, "1/label:")) == 5  # with detached x, cut
    ids = scene.ids()
    assert ids["0/label:0"].x < ids["1/label:0"].x
    # one colour per name in both panels: w's leaf on the left, x's chip (x.detach() is x's memory) on the right
    assert scene.styles[ids["1/swatch:2:0"].style].fill == tensor_colour(0)  # x, the first name
    fig = draw_graph(pair, names=names, captions=["clone", "detach"])
    assert fig.summary == scene.title and len(fig.graph_view) == 2 and len(fig.graph_layout) == 2
    assert svg_texts(graph_svg(pair, names=names, captions=["clone", "detach"])) == figure_texts(fig)
    with pytest.raises(ValueError, match="captions"):
        graph_scene(pair, captions=["one"])
    with pytest.raises(ValueError, match="captions"):
        graph_scene(pair[0], captions=["one"])
    with pytest.raises(ValueError, match="t_or_graph"):
        graph_scene([])


def test_a_run_of_identical_blocks_is_one_box():
    _, loss = residual(6)
    scene = graph_scene(loss)
    (group,) = styled(scene, "graph-boxes-group")
    labels = texts_with(scene, "label:")
    assert not any(label.startswith("repeat ") for label in labels)
    (block,) = [label for label in labels if "×" in label]
    assert block.startswith("repeated block ×") and f"{block} (" in scene.title


# ---------------------------------------------------------------------------------------------------------
# choosing what to draw
# ---------------------------------------------------------------------------------------------------------


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


def test_cap_draws_at_most_max_nodes_with_a_visible_message():
    _, loss = residual(6)
    graph = autograd_graph(loss)
    scene = graph_scene(loss, collapse="none", max_nodes=20)
    assert len(texts_with(scene, "label:")) == 20
    (message,) = texts_with(scene, "message")
    assert f"not drawn (showing 20 of {graph.total_nodes})" in message.replace("\n", " ")
    assert f"drawing 20 of {graph.total_nodes} nodes (20 boxes)" in scene.title
    assert styled(scene, "graph-cut-edges")


def test_summary_counts_saved_tensors_freed_by_backward():
    z, names = seed_example()  # backward with retain_graph: nothing freed
    assert "freed" not in graph_scene(z, names=names).title
    z.backward()
    freed = sum(1 for n in autograd_graph(z).nodes for s in n.saved if s.freed)
    assert freed == 6  # Mul saves two, Log one, Sin one, Mul two
    assert "6 saved tensors already freed by backward()" in graph_scene(z, names=names).title


# ---------------------------------------------------------------------------------------------------------
# the two renderers show the scene
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("example", ["seed", "stale", "residual 24 whole", "residual 99 collapsed", "capped"])
def test_svg_and_figure_draw_the_scene(example):
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
    scene = fig.scene
    svg = graph_svg(tensor, **options)
    assert svg_texts(svg) == figure_texts(fig) == sorted(scene.texts())
    root = ET.fromstring(svg)
    assert root.find(f"{SVG}title").text == fig.summary == scene.title
    # one SVG element per shape, in the group of its style
    for style in ("graph-edges", "graph-boxes-backward", "graph-boxes-leaf", "graph-boxes-group"):
        groups = [g for g in root.iter(f"{SVG}g") if g.get("class") == style]
        assert sum(len(g) for g in groups) == len(styled(scene, style))
    # every text starts inside the picture
    width, height = (float(v) for v in root.get("viewBox").split()[2:])
    assert (width, height) == (pytest.approx(scene.width, abs=0.05), pytest.approx(scene.height, abs=0.05))
    for item in scene.items:
        if isinstance(item, Text):
            assert 0 <= item.x <= scene.width and 0 <= item.y <= scene.height


@pytest.mark.parametrize("kind", ["exp then in place", "two stale", "saved input changed", "clean"])
def test_graph_svg_marks_exactly_the_hazards(kind):
    y = _program(kind)
    hazards = inplace_hazards(y)
    root = ET.fromstring(graph_svg(y))
    border = [g for g in root.iter(f"{SVG}g") if g.get("class") == "graph-boxes-hazard"]
    assert (len(list(border[0])) if border else 0) == len({h.node_id for h in hazards})
    if border:
        assert border[0].get("stroke-dasharray") and float(border[0].get("stroke-width")) >= 2  # not colour alone
    warnings = [e.text for e in root.iter(f"{SVG}text") if e.get("id", "").startswith("warning:")]
    assert sorted(warnings) == sorted(f"⚠ stale: saved v{h.saved_version}, now v{h.current_version}" for h in hazards)


@pytest.mark.parametrize("name", ["a\x01b", "nul\x00", "\ufffe"])
def test_names_xml_cannot_hold_are_drawn_as_escapes(name):
    x = torch.randn(3, requires_grad=True)
    scene = graph_scene(x.exp() * x, names={name: x})
    assert visible(name) in texts_with(scene, "label:") and visible(name) != name


@pytest.mark.slow
def test_a_thousand_node_graph_draws_collapsed_or_as_a_window_never_with_text_under_the_floor():
    # How long this takes is measured in benchmarks/bench_graph.py, never asserted here.
    model, loss = residual(99)
    total = autograd_graph(loss).total_nodes
    assert total >= 1000
    assert len(texts_with(graph_scene(loss, model=model), "label:")) < 150
    fig = draw_graph(loss, collapse="none", max_nodes=2000)
    scene = fig.scene
    drawn = len(texts_with(scene, "label:"))
    assert fig.graph_view.groups == () and 1 < drawn < total  # asked not to collapse: a window of it
    assert scene.width <= MAX_WIDTH_PT and scene.height <= MAX_HEIGHT_PT and scene.scale() == 1.0
    assert min(size_of(t, scene.styles) for t in scene.items if isinstance(t, Text)) >= MIN_TEXT_PT
    assert f"{total - drawn} more nodes not drawn" in texts_with(scene, "message")[0]
    assert "under 7 pt" in texts_with(scene, "message")[0]
    assert svg_texts(graph_svg(loss, collapse="none", max_nodes=2000)) == figure_texts(fig)


def test_figures_show_in_jupyter_without_pyplot():
    # A bare Figure has no PNG formatter in IPython unless pyplot was imported: draw_graph gives it one.
    z, names = seed_example()
    fig = draw_graph(z, names=names)
    png, shown_at = fig._repr_png_()
    assert png.startswith(b"\x89PNG")


def test_figures_are_stored_at_twice_the_pixels_they_are_shown_at():
    """Issue 22 item 8: 1x PNGs were soft on high-DPI screens. The PNG has twice the pixels each way of the size
    Jupyter is told to show it at, so a 2x screen gets one image pixel per screen pixel."""
    import struct

    z, names = seed_example()
    fig = draw_graph(z, names=names)
    png, shown_at = fig._repr_png_()
    pixels_wide, pixels_high = struct.unpack(">II", png[16:24])  # the IHDR chunk
    inches = fig.get_size_inches()
    assert shown_at == {"width": round(inches[0] * 100), "height": round(inches[1] * 100)}
    assert abs(pixels_wide - 2 * shown_at["width"]) <= 1 and abs(pixels_high - 2 * shown_at["height"]) <= 1


def test_two_graphs_side_by_side_log_no_warning(caplog):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    fig = Figure(figsize=(8, 3))
    left, right = fig.subplots(1, 2)
    with caplog.at_level("WARNING"):
        clone = draw_graph((x.clone() * 2).sum(), ax=left).scene
        detached = draw_graph((x.detach() * 2).sum(), ax=right).scene
        fig.savefig(io.BytesIO(), format="png")
    assert caplog.records == []
    # the clone's graph: output, Sum, Mul, Clone and x's leaf; the detached result has no graph at all
    assert (len(texts_with(clone, "label:")), len(texts_with(detached, "label:"))) == (5, 1)
    assert len(fig.axes) == 2


# ---------------------------------------------------------------------------------------------------------
# bad input, import hygiene
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("draw", [draw_graph, graph_scene, graph_svg])
@pytest.mark.parametrize(
    "arguments, error, name",
    [
        (lambda t, g: (("x",), {}), TypeError, "t_or_graph"),
        (lambda t, g: ((t,), dict(collapse="bogus")), ValueError, "collapse"),
        (lambda t, g: ((t,), dict(collapse=3)), TypeError, "collapse"),
        (lambda t, g: ((t,), dict(show_values="yes")), TypeError, "show_values"),
        (lambda t, g: ((t,), dict(show_saved=1)), TypeError, "show_saved"),
        (lambda t, g: ((t,), dict(max_nodes=0)), ValueError, "max_nodes"),
        (lambda t, g: ((t,), dict(max_nodes=2.5)), TypeError, "max_nodes"),
        (lambda t, g: ((t,), dict(model="model")), TypeError, "model"),
        (lambda t, g: ((t,), dict(collapse="module")), ValueError, "model"),
        (lambda t, g: ((g,), dict(collapse="module", model=nn.Linear(1, 1))), ValueError, "t_or_graph"),
        (lambda t, g: ((g,), dict(names={})), ValueError, "names"),
        (lambda t, g: ((t,), dict(names=["x"])), TypeError, "names"),
    ],
)
def test_bad_input_names_the_argument(draw, arguments, error, name):
    y, _ = stale_exp_example()
    args, kwargs = arguments(y, autograd_graph(y))
    with pytest.raises(error, match=name):
        draw(*args, **kwargs)


def test_draw_graph_checks_its_axes():
    with pytest.raises(TypeError, match="ax"):
        draw_graph(stale_exp_example()[0], ax="axes")


def test_importing_draws_nothing_and_imports_no_matplotlib():
    code = (
        "import sys, tutorial_lib.pictures.graph_picture, tutorial_lib.pictures.graph_groups,"
        " tutorial_lib.pictures.graph_placement, tutorial_lib.explorers.graph_stepper, tutorial_lib.tools.errors;"
        "print('matplotlib' in sys.modules, 'ipywidgets' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_chip_says_how_big_the_storage_it_keeps_is_when_that_differs_from_its_elements():
    x = torch.randn(1, requires_grad=True)
    e = x.expand(1000, 1000)  # a million elements read from one 4-byte cell
    o = e * e
    chips = texts_with(graph_scene(o), "chip-text:")
    assert any("(1000, 1000) · 3.81 MiB read from a 4 B storage" in chip for chip in chips), chips
    big = torch.randn(1000, requires_grad=True) * 1  # a non-leaf: the slice saved keeps all 4,000 bytes alive
    part = big[:2]
    assert part.untyped_storage().nbytes() == 4000
    chips = texts_with(graph_scene(part.sin()), "chip-text:")
    assert any("(2,) · 8 B of a 3.91 KiB storage" in chip for chip in chips), chips
    plain = texts_with(graph_scene(torch.randn(3, requires_grad=True).exp()), "chip-text:")
    assert any(chip.endswith("(3,) · 12 B") for chip in plain), plain  # its own storage: no second size


# ---------------------------------------------------------------------------------------------------------
# issue 22, item 5: pictures that teach at first sight
# ---------------------------------------------------------------------------------------------------------


def test_chips_of_one_box_are_as_wide_as_the_box_allows():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    target = torch.zeros(16)
    loss = ((a * 3).sum() - target).pow(2).sum()  # SubBackward0 none, PowBackward0 self, MulBackward0 none
    w = torch.ones(2, requires_grad=True)
    y = (a * w).sum()  # MulBackward0 saves self = a and other = w: different texts, one box
    for scene in (graph_scene(y, names={"a": a, "w": w}), graph_scene(loss)):
        ids = scene.ids()
        boxes = {}
        for ident, item in ids.items():
            if ident.startswith("chip:"):
                boxes.setdefault(ident.split(":")[1], []).append(item.w)
        assert boxes and all(len(set(widths)) == 1 for widths in boxes.values())
    mul = graph_scene(y, names={"a": a, "w": w}).ids()
    chips = [i for i in mul if i.startswith("chip:") and not i.startswith("chip-text")]
    assert len(chips) == 2


def test_the_output_is_titled_by_its_python_name_when_names_holds_it():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    scene = graph_scene(loss, names={"x": x, "loss": loss})
    assert texts_with(scene, "label:0") == ["loss"]
    assert texts_with(scene, "detail:0") == ["output · scalar"]
    assert scene.title.startswith("Backward graph of loss:")
    assert texts_with(graph_scene(loss, names={"x": x}), "label:0") == ["output scalar"]  # unnamed: as before


def test_a_node_that_made_a_named_tensor_has_the_name_above_its_box():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    b = x.exp()
    c = b * 2
    loss = c.sum()
    scene = graph_scene(loss, names={"x": x, "b": b, "c": c})
    graph = autograd_graph(loss)
    exp_id, mul_id = graph.find("ExpBackward0")[0].id, graph.find("MulBackward0")[0].id
    ids = scene.ids()
    assert ids[f"name:{exp_id}"].text == "b" and ids[f"name:{mul_id}"].text == "c"
    box = [item for item in scene.items if isinstance(item, Rect) and item.style == "graph-boxes-backward"]
    exp_box = min(box, key=lambda r: abs(r.x - ids[f"name:{exp_id}"].x) + abs(r.y - ids[f"name:{exp_id}"].y))
    assert ids[f"name:{exp_id}"].x == exp_box.x and ids[f"name:{exp_id}"].y < exp_box.y  # above its top-left
    assert not [i for i in graph_scene(loss, names={"x": x}).ids() if i.startswith("name:")]


def test_every_named_leaf_is_filled_with_its_colour_in_every_entry_point():
    from tutorial_lib.tools.errors import show_error

    a = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a.exp() * 1
    c = b.exp()  # saves its result, c
    c.mul_(2)
    y = (c * w).sum()
    names = {"a": a, "w": w}
    graph = autograd_graph(y, names=names)

    def leaf_fills(scene):
        fills = {}
        for item in scene.items:
            if isinstance(item, Polygon):
                fills[item.style] = scene.styles[item.style].fill
        return sorted(fills.values())

    drawn = leaf_fills(graph_scene(y, names=names))
    from_graph = leaf_fills(graph_scene(graph))  # show_error and the stepper draw a Graph
    report = show_error(y.backward, names=names)
    assert drawn == from_graph == leaf_fills(report.figure.scene) == sorted([tensor_colour(0), tensor_colour(1)])


def test_a_wide_graph_is_cut_to_a_window_instead_of_shrinking_its_text():
    x = torch.ones(3, requires_grad=True)
    leaves = [torch.ones(3, requires_grad=True) for _ in range(40)]
    loss = torch.stack([(x * leaf).sum() for leaf in leaves]).sum()  # 40 SumBackward0 side by side
    scene = graph_scene(loss)
    assert scene.width <= MAX_WIDTH_PT and scene.height <= MAX_HEIGHT_PT
    smallest = min(size_of(t, scene.styles) for t in scene.items if isinstance(t, Text))
    assert smallest * scene.scale() >= MIN_TEXT_PT
    assert "more nodes not drawn" in texts_with(scene, "message")[0]
    small = graph_scene((x * leaves[0]).sum())
    assert not texts_with(small, "message")  # a small graph is drawn whole, as before


def test_detach_is_drawn_as_a_cut_a_grey_box_and_a_broken_edge_where_the_gradient_stops():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = torch.tensor([0.5, 0.5, 0.5], requires_grad=True)
    with_clone, with_detach = (x.clone() * w).sum(), (x.detach() * w).sum()
    scene = graph_scene([with_clone, with_detach], names={"x": x, "w": w})
    ids, texts = scene.ids(), dict(scene.texts())
    assert not [i for i in ids if i.startswith("0/cut")]  # the clone's gradient reaches x: no cut
    (ghost,) = [i for i in ids if i.startswith("1/label:") and ids[i].style == "graph-cut-title"]
    assert texts[ghost] == "x" and texts[ghost.replace("label", "detail")] == "leaf · (3,)"
    (box,) = [item for item in scene.items if item.style == "graph-boxes-cut"]
    top = min(y for _, y in box.points)
    assert scene.styles["graph-boxes-cut"].dash and ids[ghost].y > top  # a dashed grey box with x's name in it
    item = ghost.removeprefix("1/label:")
    assert texts[f"1/cut-label:{item}"] == "✂ detach(): no gradient"
    line, end = ids[f"1/cut-edge:{item}"], ids[f"1/cut-end:{item}"]
    assert line.points[-1] != end.points[0] and end.points[-1][1] <= top + 1  # broken, and it ends at x's box
    # no arrowhead into x: an arrow means gradient flow, and the cut says none flows
    assert type(line) is Line and type(end) is Line and end.style == "graph-cut-edge"
    assert not [a for a in scene.items if isinstance(a, Arrow) and a.style == "graph-cut-edge"]
    assert "detached, so no gradient flows back to it: x saved by MulBackward0" in scene.title
    assert "dashed grey: cut off, no gradient flows" in texts["1/legend"]
    # a named tensor whose node is drawn elsewhere: the cut edge goes to it
    h = x.exp()
    y = (h.detach() * w).sum() + h.sum()
    scene = graph_scene(y, names={"x": x, "w": w, "h": h})
    assert texts_with(scene, "cut-label:") == ["✂ detach(): no gradient"]
    assert not [item for item in scene.items if item.style == "graph-boxes-cut"]
    # a saved tensor changed in place since is not a cut: its node is above the saver, or not in the graph at all
    b = x.exp()
    b.mul_(2)
    assert not texts_with(graph_scene(b.sum(), names={"x": x, "b": b}), "cut-label:")
    h = x.sin()
    y = h * w
    h.add_(3)  # h's grad_fn is now the add_'s AddBackward0, which y's graph does not hold
    assert not texts_with(graph_scene(y, names={"x": x, "w": w, "h": h}), "cut-label:")


def test_a_group_box_says_none_stale_in_plain_words_not_all_current():
    x = torch.ones(3, requires_grad=True)
    y = x
    for _ in range(40):
        y = (y * 1.01).exp()
    details = " ".join(texts_with(graph_scene(y, collapse="repeats"), "detail:"))
    assert "none stale" in details and "all current" not in details


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (dict(show_ids="yes"), "show_ids"),
        (dict(show_ids={1: "one"}), "show_ids"),
        (dict(bound_names={1: "b"}), "bound_names"),
        (dict(colour_order="x"), "colour_order"),
    ],
)
def test_the_new_options_refuse_bad_values_naming_the_argument(options, named):
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match=f"{named} must be"):
        graph_scene((x * 2).sum(), **options)


def test_a_chip_note_is_a_row_of_its_chip_between_its_text_and_its_warning():
    y, names = stale_exp_example()
    (hazard,) = inplace_hazards(y)
    plain = graph_scene(y, names=names)
    scene = graph_scene(y, names=names, chip_notes={(hazard.node_id, "result"): "output 0 of Exp"})
    ids, key = scene.ids(), f"{hazard.node_id}:0"
    chip, text, note = ids[f"chip:{key}"], ids[f"chip-text:{key}"], ids[f"chip-note:{key}"]
    warning = ids[f"warning:{hazard.node_id}"]
    assert note.text == "output 0 of Exp" and note.style == text.style and note.x == text.x
    assert text.y < note.y < warning.y and warning.y + size_of(warning, scene.styles) < chip.y + chip.h
    assert chip.h > plain.ids()[f"chip:{key}"].h  # the chip grew by the row
    assert not any(ident.startswith("chip-note:") for ident in plain.ids())  # none unless asked
    with pytest.raises(TypeError, match="chip_notes"):
        graph_scene(y, chip_notes={hazard.node_id: "output 0 of Exp"})
    with pytest.raises(ValueError, match="chip_notes"):
        graph_scene([y, y], chip_notes={})


def test_the_window_note_is_grey_and_only_a_stale_tensor_left_out_is_in_the_stale_colour():
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    a = x.exp()  # saves its result, which mul_ makes stale: far from the output, outside the window
    a.mul_(2)
    y = a
    for _ in range(12):
        y = y * 1.5
    scene = graph_scene(y.sum(), collapse="none", max_nodes=5)
    ids = scene.ids()
    note, stale = ids["message"], ids["message-stale"]
    assert "more nodes not drawn" in note.text and "⚠" not in note.text
    assert stale.text == "⚠ 1 stale saved tensor in nodes not drawn"
    assert scene.styles[note.style].color == MUTED and scene.styles[stale.style].color == STALE
    assert stale.y > note.y and stale.x == note.x  # under the note
    assert stale.y + size_of(stale, scene.styles) <= scene.height
    whole = graph_scene(y.sum(), collapse="none")  # drawn whole: the stale box itself says it, no line
    assert "message-stale" not in whole.ids() and "message" not in whole.ids()
