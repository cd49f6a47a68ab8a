"""GraphStepper: stepping, rerunning, what it reports, its picture (a Scene), the widget and how it displays.

Truths: the tensors in the stepper's own namespace (their ``._version``), ``inplace_hazards`` on them, and
torch's ``backward()`` raising; the widget is driven by clicking its buttons. Pictures are checked on the
stepper's ``scene`` (plain data), never on matplotlib artists.
"""

from __future__ import annotations

import html
import re

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import tutorial_lib as tl  # noqa: E402
from tutorial_lib import autograd_graph, inplace_hazards  # noqa: E402
from tutorial_lib.explorers.graph_stepper import HIGHLIGHT, TABLE_HEIGHT, GraphStepper, step_change  # noqa: E402
from tutorial_lib.pictures.render_svg import svg  # noqa: E402
from tutorial_lib.pictures.scene import escape  # noqa: E402

STEPS = [
    ("a leaf", "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)"),
    ("exp saves its result", "a = x.exp()"),
    ("change a in place", "a.mul_(2)"),
    ("use a", "y = (a * x).sum()"),
    ("backward fails", "y.backward()"),
]


def warnings_in(scene):
    return [text for id_, text in scene.texts() if id_.startswith("warning:")]


def svg_attribute(markup: str, name: str) -> str:
    """The value of attribute ``name`` on the first ``<svg>`` tag of ``markup``."""
    tag = re.search(r"<svg\b[^>]*>", markup).group(0)
    return re.search(rf'\s{name}="([^"]*)"', tag).group(1)


def test_stepping_follows_the_changed_variable_and_its_hazards():
    stepper = GraphStepper(STEPS)
    assert stepper.position == 0 and stepper.graph is None and stepper.hazards == []
    assert stepper.summary == "Step 0/5: nothing run yet · no tensor to show yet"
    assert stepper.scene.texts() == [("placeholder", "nothing run yet: press Next ▶")]
    followed, hazard_counts = [], []
    while stepper.step_forward():
        followed.append(stepper.target)
        tensor = stepper.namespace[stepper.target]
        assert [h.explanation for h in stepper.hazards] == [h.explanation for h in inplace_hazards(tensor)]
        hazard_counts.append(len(stepper.hazards))
        assert len(warnings_in(stepper.scene)) == len(stepper.hazards)
    assert followed == ["x", "a", "a", "y", "y"]
    assert hazard_counts == [0, 0, 1, 1, 1]
    assert stepper.step_forward() is False and stepper.position == 5


def test_summary_lists_saved_versions_as_they_change():
    stepper = GraphStepper(STEPS)
    stepper.goto(2)
    assert stepper.summary == (
        "Step 2/5 (exp saves its result): a = x.exp() · graph of a: 3 nodes · "
        "saved: ExpBackward0.result v0 (now v0) · no hazards"
    )
    stepper.step_forward()
    assert stepper.summary == (
        "Step 3/5 (change a in place): a.mul_(2) · graph of a: 4 nodes · "
        "saved: MulBackward0.other v0 (now v0), ExpBackward0.result v0 (now v1) ⚠ stale · "
        "⚠ ExpBackward0 saved the result of exp at v0, now v1: backward() raises when it reaches it"
    )
    assert ("ExpBackward0", "result", 0, 1, "stale") in stepper.saved_rows()


def test_the_failing_backward_step_is_reported_not_raised():
    stepper = GraphStepper(STEPS)
    stepper.goto(5)
    assert stepper.error.startswith("RuntimeError: one of the variables needed for gradient computation")
    assert "is at version 1; expected version 0" in stepper.error and "Hint" not in stepper.error
    assert "raised RuntimeError" in stepper.summary
    states = {(n, a): state for n, a, _, _, state in stepper.saved_rows()}
    assert states[("ExpBackward0", "result")] == "stale"
    assert "freed" in states.values()  # backward freed what it went through before failing


def test_a_step_without_a_tensor_says_so_in_the_picture():
    stepper = GraphStepper([("a number", "n = 3"), ("a tensor", "t = torch.ones(2, requires_grad=True)")])
    stepper.step_forward()
    assert stepper.graph is None and stepper.scene.texts() == [("placeholder", "no tensor to show yet (run on)")]
    stepper.step_forward()
    assert "placeholder" not in stepper.scene.ids() and stepper.graph is not None


def test_back_reruns_from_scratch():
    stepper = GraphStepper(STEPS)
    stepper.goto(3)
    a_before = stepper.namespace["a"]
    assert a_before._version == 1
    assert stepper.step_back() is True
    assert stepper.position == 2 and stepper.hazards == []
    assert stepper.namespace["a"] is not a_before and stepper.namespace["a"]._version == 0
    stepper.goto(0)
    assert stepper.step_back() is False and "x" not in stepper.namespace


def test_random_steps_rerun_identically_and_leave_the_global_rng_alone():
    steps = [("random leaf", "x = torch.randn(4, requires_grad=True)"), ("square", "y = (x * x).sum()")]
    state = torch.get_rng_state()
    stepper = GraphStepper(steps, seed=3)
    stepper.goto(2)
    first = stepper.namespace["x"].detach().clone()
    stepper.step_back()
    stepper.step_back()
    stepper.goto(2)
    assert torch.equal(stepper.namespace["x"].detach(), first)
    assert torch.equal(torch.get_rng_state(), state)


def test_fixed_target_setup_and_show_values():
    stepper = GraphStepper(
        [("double", "y = x * 2"), ("in place", "y.add_(1)")],
        setup="x = torch.tensor([1.0, -1.0], requires_grad=True)",
        target="y",
        show_values=True,
    )
    assert stepper.target == "y" and stepper.graph is None
    stepper.step_forward()
    texts = [text for _, text in stepper.scene.texts()]
    assert "x" in texts and any("value: [1, -1]" in t for t in texts)


def table_rows(markup: str) -> list[list[str]]:
    """The cell texts of every row of the HTML tables in ``markup``, header rows included."""
    return [
        [html.unescape(re.sub(r"<[^>]*>", "", cell)) for cell in re.findall(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", row)]
        for row in re.findall(r"<tr\b[^>]*>(.*?)</tr>", markup)
    ]


def highlighted_lines(listing: str) -> list[str]:
    """The listing's highlighted rows' texts (the line that just ran and the notes under it)."""
    rows = re.findall(r"<tr style='background:[^']*'>(.*?)</tr>", listing)
    return [html.unescape(re.sub(r"<[^>]*>", "", row)) for row in rows]


def test_widget_buttons_drive_the_stepper():
    stepper = GraphStepper(STEPS)
    widget = stepper.widget
    back, forward, picture, info = stepper.back_button, stepper.next_button, stepper.picture_view, stepper.info
    assert back.disabled and not forward.disabled
    assert "<svg" in picture.value and "nothing run yet" in picture.value  # never an empty picture
    for _ in range(3):
        forward.click()
    assert stepper.position == 3 and not back.disabled
    assert "⚠ stale: saved v0, now v1" in html.unescape(picture.value)
    assert "⚠ stale" in info.value and "change a in place" in stepper.step_text.value
    back.click()
    assert stepper.position == 2 and "⚠" not in info.value
    assert widget.children[0].children[:2] == (back, forward)


def test_the_listing_highlights_the_line_that_just_ran_and_moves_with_next_and_back():
    stepper = GraphStepper(STEPS)
    _ = stepper.widget
    assert highlighted_lines(stepper.listing.value) == []  # nothing ran yet; line 1 runs next
    assert "▷12" not in stepper.listing.value and re.search(r"▷</td><td[^>]*>1</td>", stepper.listing.value)
    for number, (label, statement) in enumerate(STEPS, 1):
        stepper.next_button.click()
        lines = highlighted_lines(stepper.listing.value)
        assert lines[0] == f"▶{number}{statement} # {label}"
        if number < len(STEPS):
            assert re.search(rf"▷</td><td[^>]*>{number + 1}</td>", stepper.listing.value)
    assert lines[1] == "freed MulBackward0.other, MulBackward0.self · ✗ raised RuntimeError"  # backward failed
    stepper.back_button.click()
    assert highlighted_lines(stepper.listing.value)[0] == f"▶4{STEPS[3][1]} # {STEPS[3][0]}"
    assert "✗ raised" not in stepper.listing.value  # the failing step has not run in this rerun


def test_each_step_marks_what_it_added_made_stale_or_freed():
    stepper = GraphStepper(STEPS)
    notes = []
    while stepper.step_forward():
        notes.append(stepper.change.note)
    assert notes == [
        "+ leaf x",
        "+ ExpBackward0",
        "+ MulBackward0 · ⚠ made ExpBackward0.result stale",
        "+ SumBackward0, MulBackward0",
        "freed MulBackward0.other, MulBackward0.self",
    ]
    assert [c.error is not None for c in stepper.changes] == [False, False, False, False, True]
    stepper.goto(3)  # a rerun from scratch tells the same story
    assert [c.note for c in stepper.changes] == notes[:3]
    exp = stepper.graph.find("ExpBackward0")[0]
    assert stepper.change.made_stale == {(exp.id, "result")}
    assert stepper.change.added == {stepper.graph.find("MulBackward0")[0].id}


def test_the_listing_keeps_each_steps_note_under_its_line():
    stepper = GraphStepper(STEPS)
    _ = stepper.widget
    stepper.goto(4)
    listing = html.unescape(re.sub(r"<[^>]*>", " ", stepper.listing.value))
    assert "⚠ made ExpBackward0.result stale" in listing  # step 3's note, still shown at step 4
    assert highlighted_lines(stepper.listing.value)[1] == "+ SumBackward0, MulBackward0"


def test_the_table_has_a_header_node_ids_and_marks_this_steps_rows():
    stepper = GraphStepper(STEPS)
    _ = stepper.widget
    stepper.goto(3)
    header, *rows = table_rows(stepper.info.value)
    assert header == ["node", "saved", "shape", "saved at", "now", "state", "this step"]
    assert rows == [  # numbered in the order the nodes were made: x's leaf 1, exp 2, mul_ 3
        ["#3 MulBackward0", "other", "()", "v0", "v0", "ok", "new"],
        ["#2 ExpBackward0", "result", "(3,)", "v0", "v1", "⚠ stale", "made stale"],
    ]
    assert stepper.info.value.count(f"background:{HIGHLIGHT}") == 2
    stepper.step_forward()
    marks = [row[-1] for row in table_rows(stepper.info.value)[1:]]
    assert marks.count("new") == 2 and "made stale" not in marks  # step 4 made nothing stale


def test_the_picture_stays_in_place_whatever_the_table_and_listing_grow_to():
    stepper = GraphStepper(STEPS)
    widget = stepper.widget
    buttons, middle, below = widget.children
    assert middle.children == (stepper.listing, stepper.picture_view) and below is stepper.info
    assert middle.layout.flex_flow == "row nowrap" and middle.layout.align_items == "flex-start"
    assert stepper.listing.layout.width == "34em" and stepper.listing.layout.flex == "0 0 auto"
    stepper.goto(3)
    assert f"max-height:{TABLE_HEIGHT};overflow-y:auto" in stepper.info.value
    assert "position:sticky" in stepper.info.value  # the header row stays in view while the rows scroll


def test_the_widget_shows_the_scene_as_text_not_an_image():
    stepper = GraphStepper(STEPS)
    _ = stepper.widget
    stepper.goto(3)
    shown = stepper.picture_view.value
    assert "<img" not in shown and "base64" not in shown
    assert shown.count("<svg") == 1
    texts = [text for _, text in stepper.scene.texts()]
    assert "ExpBackward0" in texts and "⚠ stale: saved v0, now v1 · this step" in texts
    assert all(escape(line) in shown for text in texts for line in text.split("\n"))  # every text, as text


def test_the_widget_shows_each_picture_at_its_own_size_within_the_page():
    narrow = GraphStepper([("leaf", "x = torch.ones(2, requires_grad=True)"), ("exp", "y = x.exp()")])
    wide = GraphStepper(
        [
            ("leaves", "a, b, c, d = (torch.ones(2, requires_grad=True) for _ in range(4))"),
            ("sum of four products", "y = a * b + b * c + c * d + d * a"),
        ]
    )
    shown = []
    for stepper in (narrow, wide):
        _ = stepper.widget
        stepper.goto(2)
        scene, markup = stepper.scene, stepper.picture_view.value
        assert scene.scale() == 1
        assert svg_attribute(markup, "width") == f"{scene.width:.1f}pt"
        assert svg_attribute(markup, "height") == f"{scene.height:.1f}pt"
        assert "max-width:100%" in svg_attribute(markup, "style")
        shown.append(svg_attribute(markup, "width"))
    assert float(shown[1][:-2]) > 1.5 * float(shown[0][:-2])  # the sizes follow the graphs


def test_figure_draws_the_scene_into_one_reused_figure():
    import matplotlib.pyplot as plt

    stepper = GraphStepper(STEPS)
    first = stepper.figure
    assert isinstance(first, Figure)
    stepper.goto(3)
    second = stepper.figure
    assert second is first
    width, height = second.get_size_inches() * 72
    scale = stepper.scene.scale()
    assert (round(width), round(height)) == (round(stepper.scene.width * scale), round(stepper.scene.height * scale))
    assert plt.get_fignums() == []


def test_displays_as_the_widget_with_the_summary_as_text():
    stepper = GraphStepper(STEPS)
    stepper.goto(2)
    bundle = stepper._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == stepper.widget.model_id
    assert bundle["text/plain"] == stepper.summary == stepper.plain_text()
    assert not hasattr(stepper, "_ipython_display_")  # one display path: _repr_mimebundle_


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(steps="x = 1"), TypeError, "steps"),
        (dict(steps=[]), ValueError, "steps"),
        (dict(steps=[("bad", "x = (")]), ValueError, r"steps\[0\]"),
        (dict(steps=[("a", 1)]), TypeError, r"steps\[0\]"),
        (dict(steps=STEPS, setup=3), TypeError, "setup"),
        (dict(steps=STEPS, target=3), TypeError, "target"),
        (dict(steps=STEPS, show_values="yes"), TypeError, "show_values"),
        (dict(steps=STEPS, seed=1.5), TypeError, "seed"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, name):
    with pytest.raises(error, match=name):
        GraphStepper(**kwargs)


def test_goto_checks_its_argument():
    stepper = GraphStepper(STEPS)
    with pytest.raises(ValueError, match="k"):
        stepper.goto(6)
    with pytest.raises(TypeError, match="k"):
        stepper.goto("2")


def test_every_step_draws_a_different_picture_and_a_state_always_the_same():
    # How long an update takes is measured in benchmarks/bench_explorers.py, never asserted here.
    stepper = GraphStepper(STEPS)
    pictures = []
    for _ in STEPS:
        stepper.step_forward()
        pictures.append(svg(stepper.scene))
    assert len(set(pictures)) == len(pictures)  # every step changes what is shown
    stepper.goto(len(STEPS))
    assert svg(stepper.scene) == pictures[-1]  # and the same state draws the same picture


def test_step_change_compares_two_snapshots():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    a = x.exp()
    before = tl.autograd_graph(a, names={"x": x})
    assert step_change(before, before).note == "" and step_change(before, None).note == ""
    a.mul_(2)
    after = tl.autograd_graph(a, names={"x": x})
    change = step_change(before, after)
    assert change.note == "+ MulBackward0 · ⚠ made ExpBackward0.result stale"
    assert change.added == {after.find("MulBackward0")[0].id}
    assert step_change(None, after).added == {n.id for n in after.nodes if n.kind != "output"}
    with pytest.raises(TypeError, match="before"):
        step_change("graph", after)
    with pytest.raises(TypeError, match="after"):
        step_change(before, 3)


def test_the_picture_marks_what_the_step_added_and_made_stale_by_node_id():
    stepper = GraphStepper(STEPS)
    stepper.goto(2)  # a = x.exp(): ExpBackward0 and x's leaf are new
    change = stepper.change
    assert change.added and sorted(t for i, t in stepper.scene.texts() if i.startswith("new-label:")) == ["new"] * len(
        change.added
    )
    assert {f"new:{i}" for i in change.added} <= set(stepper.scene.ids())
    stepper.goto(3)  # a.mul_(2): ExpBackward0's result made stale, by the node mul_ made
    ((node_id, attribute),) = stepper.change.made_stale
    texts = dict(stepper.scene.texts())
    assert texts[f"warning:{node_id}"] == "⚠ stale: saved v0, now v1 · this step"
    assert texts[f"chip-text:{node_id}:0"].startswith(f"{attribute} = a ")  # the variable it is
    assert texts[f"edit-label:{node_id}:0"] == "mul_ → v1"
    number = stepper.numbers[node_id]
    assert texts[f"node-id:{node_id}"] == f"#{number}"  # the table's "#<n> ExpBackward0" points at this box
    assert f"#{number} ExpBackward0" in stepper.table_html()


def test_the_node_a_step_adds_is_the_new_one_on_top_not_an_older_one_alike():
    # y = y * 2 three times: each step adds a MulBackward0 on top; the older ones sit deeper in the graph.
    x = torch.tensor([0.1, 0.2], requires_grad=True)
    y1 = x * 2
    y2 = y1 * 2
    change = step_change(autograd_graph(y1), autograd_graph(y2))
    top = autograd_graph(y2).nodes[1]
    assert top.name == "MulBackward0" and change.added == frozenset({top.id})
    assert change.note == "+ MulBackward0"


def test_backward_adds_no_node_when_a_copy_slices_lists_its_freed_tensor():
    # before backward a CopySlices lists nothing (its tensors are hidden); backward frees them, and it then lists
    # "wrapped in-place op" freed: the same node, not a new one
    stepper = GraphStepper(
        [
            ("leaf", "x = torch.ones(3, requires_grad=True)"),
            ("exp", "a = x.exp()"),
            ("write a view", "a[:2].mul_(2)"),
            ("use a", "y = (a * x).sum()"),
            ("backward", "y.backward()"),
        ]
    )
    stepper.goto(4)
    nodes_before = stepper.graph.total_nodes
    stepper.step_forward()
    assert stepper.error is not None and stepper.graph.total_nodes == nodes_before
    assert stepper.change.added == frozenset()
    assert stepper.change.note == (
        "freed MulBackward0.other, MulBackward0.self, torch::autograd::CopySlices.wrapped in-place op"
    )


def test_a_custom_functions_hazard_says_backward_raises_only_if_it_reads_its_saved_tensors():
    stepper = GraphStepper(
        [
            (
                "define",
                "class F(torch.autograd.Function):\n"
                "    @staticmethod\n"
                "    def forward(ctx, a):\n"
                "        ctx.save_for_backward(a)\n"
                "        return a * 2\n"
                "    @staticmethod\n"
                "    def backward(ctx, g):\n"
                "        return g * 2",
            ),
            ("leaf", "x = torch.ones(3, requires_grad=True)"),
            ("copy", "a = x * 1"),
            ("custom", "out = F.apply(a)"),
            ("change", "a.add_(1)"),
        ],
        target="out",
    )
    stepper.goto(5)
    assert stepper.summary.endswith(
        "⚠ FBackward saved saved_tensors[0], which F.forward saved with ctx.save_for_backward at v0, now v1: "
        "backward() raises when it reaches it if F.backward reads ctx.saved_tensors"
    )
    stepper.namespace["out"].sum().backward()  # F.backward never reads them: no error


def test_the_current_step_highlight_has_no_hue_a_tensor_or_verdict_uses():
    """Issue 22: the pale-yellow highlight (#FFF0A8) sat beside the first tensor's yellow tint (#eedd88)."""
    import colorsys

    from matplotlib.colors import to_rgb

    from tutorial_lib.pictures import palette

    _, _, saturation = colorsys.rgb_to_hls(*to_rgb(HIGHLIGHT))
    assert saturation < 0.05
    assert HIGHLIGHT.lower() not in {c.lower() for c in palette.TENSOR_TINTS}


# issue 22, item 5: ids in creation order, names on nodes, a picture that does not jump


def numbered(stepper) -> dict:
    """``{node name or leaf label: the number its box shows}`` at the stepper's current step."""
    texts = dict(stepper.scene.texts())
    return {texts[f"label:{i}"]: texts[f"node-id:{i}"] for i in stepper.numbers}


def test_nodes_are_numbered_in_creation_order_and_keep_their_number_from_step_to_step():
    steps = [
        ("a leaf", "x = torch.tensor([1.0, 2.0], requires_grad=True)"),
        ("b", "b = x.exp()"),
        ("c", "c = b * 3"),
        ("d", "d = c.sin()"),
    ]
    stepper = GraphStepper(steps)
    seen = {}
    for k in range(1, 5):
        stepper.goto(k)
        now = numbered(stepper)
        assert all(now[name] == number for name, number in seen.items() if name in now)  # never renumbered
        seen.update(now)
    assert seen == {"x": "#1", "ExpBackward0": "#2", "MulBackward0": "#3", "SinBackward0": "#4"}
    assert "node-id:0" not in stepper.scene.ids()  # the output, the tensor shown, has no number


def test_nodes_carry_the_python_names_bound_to_what_they_made():
    stepper = GraphStepper(STEPS)
    stepper.goto(4)  # y = (a * x).sum(): a is ExpBackward0's result (changed in place by mul_: MulBackward0's now)
    texts = dict(stepper.scene.texts())
    graph = stepper.graph
    named = {int(i.removeprefix("name:")): t for i, t in texts.items() if i.startswith("name:")}
    assert texts["label:0"] == "y"  # the output is the followed tensor, titled by its name
    (a_node,) = [i for i, t in named.items() if t == "a"]
    below = [graph.nodes[b].name for a, b in graph.edges if a == a_node]
    assert graph.nodes[a_node].name == "MulBackward0" and below == ["ExpBackward0"]  # a.mul_(2) made a what it is
    assert "x" in {texts[f"label:{n.id}"] for n in graph.nodes if n.kind == "leaf"}  # a leaf is titled by its name
    stepper.goto(2)
    texts = dict(stepper.scene.texts())
    assert texts["label:0"] == "a" and not [i for i in texts if i.startswith("name:")]  # a is the output here


def test_the_picture_has_one_size_at_every_step_and_old_nodes_keep_their_height_and_colour():
    stepper = GraphStepper(STEPS)
    sizes, leaf_y, legend_y, fills = set(), set(), set(), set()
    for k in range(len(STEPS) + 1):
        stepper.goto(k)
        scene = stepper.scene
        sizes.add((round(scene.width, 3), round(scene.height, 3)))
        ids = scene.ids()
        leaf = [i for i, t in scene.texts() if i.startswith("label:") and t == "x"]
        if leaf:
            leaf_y.add(round(ids[leaf[0]].y, 3))
            box = [item for item in scene.items if item.style.startswith("graph-boxes-leaf")]
            fills.add(scene.styles[box[0].style].fill)  # x keeps its colour too
        if "legend" in ids:
            legend_y.add(round(ids["legend"].y, 3))
    assert len(sizes) == 1 and len(leaf_y) == 1 and len(legend_y) == 1 and len(fills) == 1


def test_names_rebound_since_are_greyed_on_the_nodes_they_named():
    stepper = GraphStepper(
        [
            ("a leaf", "x = torch.tensor([0.1, 0.2], requires_grad=True)"),
            ("y", "y = x * 2"),
            ("again", "y = y * 2"),
            ("again", "y = y * 2"),
        ]
    )
    stepper.goto(4)
    scene = stepper.scene
    texts = dict(scene.texts())
    muls = sorted((stepper.numbers[n.id], n.id) for n in stepper.graph.nodes if n.name == "MulBackward0")
    (_, newest), older = muls[-1], [node_id for _, node_id in muls[:-1]]
    assert texts["label:0"] == "y" and f"former-name:{newest}" not in texts  # y is the output: its node is the newest
    assert [texts[f"former-name:{node_id}"] for node_id in older] == ["(was y)", "(was y)"]
    assert scene.styles["graph-former-name"].color != scene.styles["graph-name"].color  # greyed


def test_an_inplace_write_does_not_mark_the_old_node_as_was_b_b_is_still_the_same_object():
    stepper = GraphStepper(
        [
            ("a leaf", "a = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)"),
            ("exp", "b = a.exp()"),
            ("in place", "b.mul_(2)"),
            ("a loss", "loss = b.sum()"),
        ]
    )
    for position in (3, 4):
        stepper.goto(position)
        texts = dict(stepper.scene.texts())
        (exp,) = [n.id for n in stepper.graph.nodes if n.name == "ExpBackward0"]
        assert f"former-name:{exp}" not in texts  # b was never rebound: only its grad_fn changed
        assert not [t for i, t in texts.items() if i.startswith("former-name:")]
    stepper = GraphStepper(
        [("a leaf", "a = torch.tensor([0.5], requires_grad=True)"), ("b", "b = a.exp()"), ("again", "b = b * 2")]
    )
    stepper.goto(3)
    (exp,) = [n.id for n in stepper.graph.nodes if n.name == "ExpBackward0"]
    assert dict(stepper.scene.texts())[f"former-name:{exp}"] == "(was b)"  # rebound to another object: greyed
