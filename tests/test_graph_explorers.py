"""GraphStepper: stepping, rerunning, what it reports, the widget, and how long an update takes.

Truths: the tensors in the stepper's own namespace (their ``._version``), ``inplace_hazards`` on them, and
torch's ``backward()`` raising; the widget is driven by clicking its buttons.
"""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from test_graph_pictures import svg_texts  # noqa: E402

from tutorial_lib import inplace_hazards  # noqa: E402
from tutorial_lib.explorers.graph_stepper import GraphStepper  # noqa: E402

STEPS = [
    ("a leaf", "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)"),
    ("exp saves its result", "a = x.exp()"),
    ("change a in place", "a.mul_(2)"),
    ("use a", "y = (a * x).sum()"),
    ("backward fails", "y.backward()"),
]


def warnings_in(fig):
    return [t.get_text() for t in fig.findobj(Text) if (t.get_gid() or "").startswith("warning:")]


def test_stepping_follows_the_changed_variable_and_its_hazards():
    stepper = GraphStepper(STEPS)
    assert stepper.position == 0 and stepper.figure is None and stepper.hazards == []
    assert stepper.summary == "Step 0/5: nothing run yet · no tensor to show yet"
    followed, hazard_counts = [], []
    while stepper.step_forward():
        followed.append(stepper.target)
        tensor = stepper.namespace[stepper.target]
        assert [h.explanation for h in stepper.hazards] == [h.explanation for h in inplace_hazards(tensor)]
        hazard_counts.append(len(stepper.hazards))
        assert len(warnings_in(stepper.figure)) == len(stepper.hazards)
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
        "⚠ ExpBackward0 saved the result of exp at v0, now v1: backward() would fail"
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
    texts = [t.get_text() for t in stepper.figure.findobj(Text)]
    assert "x" in texts and any("value: [1, -1]" in t for t in texts)


def test_widget_buttons_drive_the_stepper():
    stepper = GraphStepper(STEPS)
    widget = stepper.widget
    back, forward, image, info = stepper._parts
    assert back.disabled and not forward.disabled
    assert image.format == "svg+xml" and b"nothing run yet" in bytes(image.value)  # never a broken image
    for _ in range(3):
        forward.click()
    assert stepper.position == 3 and not back.disabled
    svg = bytes(image.value)  # ipywidgets hands bytes back as a memoryview
    assert b"<svg" in svg and "⚠ stale: saved v0, now v1".encode() in svg
    assert "⚠ stale" in info.value and "change a in place" in info.value
    back.click()
    assert stepper.position == 2 and "⚠" not in info.value
    assert widget.children[0].children == (back, forward)


def test_render_svg_keeps_text_as_text():
    stepper = GraphStepper(STEPS)
    stepper.goto(3)
    svg = stepper.render_svg().decode()
    assert "ExpBackward0" in svg and "saved: result v0 (now v1)" in svg
    texts = sorted((t.get_gid(), t.get_text()) for t in stepper.figure.findobj(Text) if t.get_text())
    assert svg_texts(svg) == texts  # the widget shows exactly what the figure draws


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


def test_one_update_redraws_the_picture_for_every_step():
    # How long an update takes is measured in benchmarks/bench_explorers.py, never asserted here.
    stepper = GraphStepper(STEPS)
    pictures = []
    for _ in STEPS:
        stepper.step_forward()
        pictures.append(stepper.render_svg())
    assert all(pictures) and len(set(pictures)) == len(pictures)  # every step changes what is shown
    stepper.goto(len(STEPS))
    assert stepper.render_svg() == pictures[-1]  # and the same state draws the same picture


def test_widget_shows_the_picture_at_its_own_size():
    stepper = GraphStepper(STEPS)
    _ = stepper.widget
    image = stepper._parts[2]
    stepper.goto(3)
    width_pt = float(re.search(r'width="([0-9.]+)pt"', stepper.render_svg().decode()).group(1))
    assert image.layout.width == f"{width_pt * 96 / 72:.0f}px" and image.layout.max_width == "100%"
