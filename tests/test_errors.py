"""tools/errors: ``show_error`` runs a function and reports what went wrong, with the graph when it helps.

The truths are torch's own exceptions (the version-counter error, the second-backward error) and the model
layer's ``inplace_hazards``; the picture is checked on its scene (``report.figure.scene``).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import html  # noqa: E402
import re  # noqa: E402
import xml.etree.ElementTree as ElementTree  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
from models import SavesW, stale_exp_example  # noqa: E402

from tutorial_lib.pictures.graph_placement import PAD_X  # noqa: E402
from tutorial_lib.pictures.palette import STALE  # noqa: E402
from tutorial_lib.pictures.scene import Text, size_of  # noqa: E402
from tutorial_lib.tools.errors import message_parts, show_error  # noqa: E402

VERSION_MESSAGE = "is at version 1; expected version 0"


def stale_exp_report():
    a = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    b = a.exp()
    b.mul_(2)
    return show_error(b.sum().backward, names={"a": a, "b": b})


def texts_with(scene, prefix: str) -> list[str]:
    return [text for ident, text in scene.texts() if ident.startswith(prefix)]


def test_show_error_on_the_inplace_error():
    y, names = stale_exp_example()
    report = show_error(y.backward, names=names)
    assert report.raised and report.exception_type == "RuntimeError"
    assert VERSION_MESSAGE in report.message and "Hint" not in report.message
    scene = report.figure.scene
    assert texts_with(scene, "warning:") == ["⚠ stale: saved v0, now v1"]
    assert "x" in texts_with(scene, "label:")
    assert [h.node for h in report.hazards] == ["ExpBackward0"]
    assert repr(report) == report.summary
    assert report.summary.startswith("RuntimeError: one of the variables needed for gradient computation")
    assert "Why: ExpBackward0 saved the result of exp" in report.summary
    html = report._repr_html_()
    assert "RuntimeError" in html and "is at version 1; expected version 0" in html
    # the picture is of the graph as backward found it, not half freed by the failed backward
    assert "freed" not in "\n".join(text for _, text in scene.texts())


def test_show_error_gives_the_same_summary_for_the_same_program_and_finds_the_graph_from_kwargs():
    summaries = set()
    for _ in range(2):  # two fresh runs of the program: nothing in the summary depends on addresses or ids
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
    assert len(texts_with(report.figure.scene, "warning:")) == 1


def test_show_error_second_backward_shows_freed_tensors():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    report = show_error(y.backward)
    assert report.exception_type == "RuntimeError" and "second time" in report.message
    assert "freed by backward" in "\n".join(texts_with(report.figure.scene, "chip-text:"))
    assert not texts_with(report.figure.scene, "node-id:")  # no text names a box by its id: no ids drawn
    assert re.search(r"#\d", "".join(html_tree(report).itertext())) is None  # nor does the HTML


def test_show_error_without_an_error_and_with_other_errors():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).sum()
    report = show_error(y.backward)
    assert not report.raised and report.figure is None and report.exception_type is None
    assert report.summary == "No error: backward ran without raising and returned None."
    report = show_error(lambda: int("nope"))
    assert report.exception_type == "ValueError" and report.figure is None
    assert report.summary == "ValueError: invalid literal for int() with base 10: 'nope'"


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


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: show_error(3), "fn"),
        (lambda: show_error(print, graph_of="y"), "graph_of"),
        (lambda: show_error(print, names="x"), "names"),
    ],
)
def test_bad_input_names_the_argument(call, name):
    with pytest.raises(TypeError, match=name):
        call()


# The parts of the in-place error's message, marked in the HTML and tied to the picture


def html_tree(report):
    """The report's HTML as an element tree (parsing also proves the markup is well formed)."""
    return ElementTree.fromstring(report._repr_html_())


def marks(element) -> list:
    return [(mark.get("data-part"), "".join(mark.itertext())) for mark in element.iter("mark")]


def test_the_message_parts_are_found_in_the_message_and_tied_to_the_node_that_saved_the_tensor():
    y, names = stale_exp_example()
    report = show_error(y.backward, names=names)
    assert [part.kind for part in report.parts] == ["tensor", "creator", "versions"]
    assert [part.text for part in report.parts][0::2] == ["[torch.FloatTensor [3]]", VERSION_MESSAGE]
    assert re.fullmatch(r"output 0 of Exp(Backward0)?", report.parts[1].text)  # torch 2.13: Exp
    assert all(report.message[part.start : part.end] == part.text for part in report.parts)
    (hazard,) = report.hazards
    assert {part.node_id for part in report.parts} == {hazard.node_id}
    texts = dict(report.figure.scene.texts())
    assert texts[f"label:{hazard.node_id}"] == "ExpBackward0"  # the id is the box the picture draws
    tensor, creator, versions = (part.explanation for part in report.parts)
    assert "float32" in tensor and "(3,)" in tensor and "FloatTensor" in tensor and "the result of exp" in tensor
    assert f"the box #{hazard.node_id} ExpBackward0 marked ⚠ in the picture" in creator  # by the id it shows
    assert texts[f"node-id:{hazard.node_id}"] == f"#{hazard.node_id}" and "made this tensor" in creator
    assert "0 when it was saved by ExpBackward0, 1 now: the tensor was written in place since" in versions
    assert "(the counter moved by 1;" in versions and "can no longer vouch for the values" in versions
    assert "gone" not in versions  # versions, not values: a write need not change a value
    assert f"“{texts[f'warning:{hazard.node_id}']}”" in versions  # quotes what the picture writes


def test_the_html_marks_each_part_in_the_message_and_explains_it_below():
    y, names = stale_exp_example()
    report = show_error(y.backward, names=names)
    root = html_tree(report)
    message, explanations = root.findall("div")[0], root.find("ul")
    expected = [(part.kind, part.text) for part in report.parts]
    assert marks(message) == expected and marks(explanations) == expected
    numbers = [b.text for b in message.iter("b") if b.text in "①②③"]
    assert numbers == ["①", "②", "③"] == [b.text for b in explanations.iter("b") if b.text in "①②③"]
    # without the numbers, the message reads as torch wrote it
    assert "".join(text for text in message.itertext() if text not in "①②③") == f"RuntimeError: {report.message}"
    for item, part in zip(explanations.findall("li"), report.parts):
        assert "".join(item.itertext()).endswith(part.explanation)
        assert item.find("mark").get("data-node") == str(part.node_id)
    assert "Why:" + report.hazards[0].explanation in "".join(root.itertext())  # as the summary says it


def test_a_saved_input_names_the_op_that_last_wrote_it_and_the_box_that_saved_it_before():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    b = a * a  # MulBackward0 saves a twice, as self and as other
    a.add_(1)  # a's grad_fn is now AddBackward0: torch names "output 0 of Add"
    report = show_error(b.sum().backward, graph_of=b, names={"x": x})
    tensor, creator, versions = report.parts
    assert re.fullmatch(r"output 0 of Add(Backward0)?", creator.text)
    saver = report.hazards[0]
    assert saver.node == "MulBackward0" and creator.node_id == saver.node_id
    assert f"MulBackward0 had saved it before, as {saver.what}" in creator.explanation
    assert f"the box #{saver.node_id} MulBackward0 marked ⚠" in creator.explanation  # of two MulBackward0 boxes
    assert "input '" in tensor.explanation and "(2,)" in tensor.explanation


def part_marks(scene) -> dict:
    return {ident.removeprefix("part:"): item for ident, item in scene.ids().items() if ident.startswith("part:")}


def row_middle(scene, row) -> float:
    return row.y + size_of(row, scene.styles) / 2


def test_the_picture_numbers_what_each_part_names_as_the_html_does():
    a = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    b = a.exp()
    b.mul_(2)
    report = show_error(b.sum().backward, names={"a": a, "b": b})
    scene = report.figure.scene
    ids = scene.ids()
    (hazard,) = report.hazards
    marks = part_marks(scene)
    assert [marks[k].text for k in ("tensor", "creator", "versions")] == ["①", "②", "③"]
    chip = ids[f"chip:{hazard.node_id}:0"]
    chip_text, note = ids[f"chip-text:{hazard.node_id}:0"], ids[f"chip-note:{hazard.node_id}:0"]
    warning = ids[f"warning:{hazard.node_id}"]
    assert note.text == report.parts[1].text  # the chip repeats the words of the message that ② marks
    # each centred on the row of what it names, never on the box's dashed hazard border (3 points outside the box)
    for mark, row in ((marks["tensor"], chip_text), (marks["creator"], note), (marks["versions"], warning)):
        assert mark.baseline == "middle" and mark.y == pytest.approx(row_middle(scene, row))
    box_left = chip.x - PAD_X
    hazard_border = [r for r in scene.items if r.style == "graph-boxes-hazard"][0]
    assert hazard_border.x == pytest.approx(box_left - 3)
    for mark in marks.values():  # outside the border, 3 points left of it
        assert mark.anchor == "end" and mark.x == pytest.approx(hazard_border.x - 3)
    assert scene.styles["error-part"].size >= 9 and scene.styles["error-part"].color == STALE
    assert min(m.x for m in marks.values()) - scene.styles["error-part"].size >= 0  # inside the picture
    # the changed tensor and its edit: b's chip, the write mul_ drawn to the box of its node
    assert dict(scene.texts())[f"chip-text:{hazard.node_id}:0"].startswith("result = b ")
    assert dict(scene.texts())[f"edit-label:{hazard.node_id}:0"] == "mul_ → v1"
    html_text = report._repr_html_()
    assert "① ② ③ in it sit beside what the parts of the message marked ① ② ③ name" in html_text
    for mark, part in zip("①②③", report.parts):  # the message's marks are the picture's: circled, in vermilion
        assert f"{html.escape(part.text)}</mark><b style='color:{STALE}'>{mark}</b>" in html_text
    assert report.figure.summary == scene.title and "after mul_" in report.summary


def test_the_marks_read_top_to_bottom_in_the_message_order_beside_one_chip():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    b = a * a  # MulBackward0 saves a twice: two stale chips in one box
    a.add_(1)
    for report in (stale_exp_report(), show_error(b.sum().backward, graph_of=b, names={"x": x})):
        scene = report.figure.scene
        marks = part_marks(scene)
        in_message_order = [marks[part.kind] for part in report.parts]  # ① ② ③ as the HTML numbers them
        assert [m.text for m in in_message_order] == ["①", "②", "③"]
        assert [m.y for m in in_message_order] == sorted(m.y for m in in_message_order)  # read top to bottom
        assert len({round(m.y, 3) for m in in_message_order}) == 3
        # all three beside one chip: each on one of its rows, the rows one under another
        (chip,) = [
            r
            for r in scene.items
            if r.style == "graph-chip-stale" and all(r.y < m.y < r.y + r.h for m in marks.values())
        ]
        rows = [t for t in scene.items if isinstance(t, Text) and t.x > chip.x and chip.y < t.y < chip.y + chip.h]
        assert [row_middle(scene, row) for row in rows] == pytest.approx([m.y for m in in_message_order])
        assert rows[-1].style == "graph-chip-warning" and rows[1].text == report.parts[1].text


def test_without_a_graph_the_parts_are_explained_without_a_picture():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    a = x.sigmoid()
    a.add_(1)
    a.add_(1)
    report = show_error(lambda: a.sum().backward())
    assert report.figure is None and [part.kind for part in report.parts] == ["tensor", "creator", "versions"]
    assert all(part.node_id is None for part in report.parts)
    assert "2 now: the tensor was written in place since (the counter moved by 2;" in report.parts[2].explanation
    assert "picture" not in " ".join(part.explanation for part in report.parts)
    assert report.parts[2].text == "is at version 2; expected version 0"


def test_other_errors_have_no_parts_and_no_marks():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    for report in (show_error(y.backward), show_error(lambda: int("nope"))):
        assert report.parts == () and "<mark" not in report._repr_html_()
        html_tree(report)
    assert message_parts("invalid literal for int()") == ()
    with pytest.raises(TypeError, match="message"):
        message_parts(RuntimeError("is at version 1; expected version 0 instead"))


def test_without_a_graph_the_creator_part_says_what_torch_names_in_both_cases():
    # torch names, for a tensor saved as an input, its grad_fn when backward reads it; for a tensor a node saved
    # as its own output, that node: exp saved y, then add_ made y's grad_fn AddBackward0, yet torch names Exp
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.add_(1)
    assert y.grad_fn.name() == "AddBackward0"
    output_case = show_error(lambda: y.sum().backward())
    assert re.fullmatch(r"output 0 of Exp(Backward0)?", output_case.parts[1].text)
    a = x * 2
    b = a.sin()  # saves a as an input
    a.add_(1)
    input_case = show_error(lambda: b.sum().backward())
    assert re.fullmatch(r"output 0 of Add(Backward0)?", input_case.parts[1].text)  # a's grad_fn now
    for report in (output_case, input_case):  # one sentence true of both, since no graph tells which
        said = report.parts[1].explanation
        assert "saved as an input, the tensor's grad_fn when backward read it" in said
        assert "saved as its own output (exp and sigmoid save their result), that node's operation" in said
        assert report.parts[1].node_id is None


def test_the_creator_part_explains_copyslices_and_asstrided_when_torch_names_them():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x.exp()
    b = a.sin()
    a[:2].mul_(2)  # a's grad_fn is now CopySlices: torch names it
    report = show_error(b.sum().backward, graph_of=b)
    creator = report.parts[1]
    assert creator.text == "output 0 of torch::autograd::CopySlices" and creator.node_id == report.hazards[0].node_id
    assert "CopySlices is a write into it through a view" in creator.explanation
    a = x.exp()
    v = a[:2]
    c = v.sin()
    a.mul_(2)  # v's base changed: v's grad_fn becomes AsStridedBackward0, which torch names
    assert v.grad_fn.name() == "AsStridedBackward0"
    creator = show_error(c.sum().backward, graph_of=c).parts[1]
    assert re.fullmatch(r"output 0 of AsStrided(Backward0)?", creator.text)
    assert "a plain strided view gets AsStridedBackward0 once it or its base is changed in place" in creator.explanation
    assert "SinBackward0 had saved it before, as input 'self' of sin" in creator.explanation


@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.bool, torch.complex64, torch.complex128, torch.int8]
)
def test_the_tensor_part_is_found_for_every_dtype_as_torch_names_it(dtype):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.zeros(2, 3, dtype=dtype)
    out = SavesW.apply(x, w)  # saves w of any dtype, and reads it in backward
    w.zero_()
    report = show_error(out.sum().backward, graph_of=out)
    tensor = report.parts[0]
    assert tensor.kind == "tensor" and tensor.text in report.message and tensor.node_id is not None
    named = str(dtype).removeprefix("torch.")
    assert f"a {named} tensor of shape (2, 3)" in tensor.explanation
    if dtype in (torch.bfloat16, torch.bool, torch.complex64, torch.complex128):  # "[CPUComplexFloatType [2, 3]]"
        assert tensor.text.startswith("[CPU") and f"is torch's C++ name for {named} on CPU" in tensor.explanation
    else:  # "[torch.HalfTensor [2, 3]]"
        assert tensor.text.startswith("[torch.") and f"is torch's old name for {named}" in tensor.explanation


def test_the_versions_part_counts_no_writes_for_one_mark_dirty_write_that_moves_the_counter_by_two():
    # One write through a custom Function with ctx.mark_dirty moves the counter by 2 (the write inside forward,
    # then mark_dirty's own bump): the text names the counter's move, not a number of writes.
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    a = torch.tensor([1.0, 2.0], requires_grad=True)
    e = a.exp()
    before = e._version
    Double.apply(e)
    assert e._version - before == 2  # the ground truth the sentence must not turn into "2 writes"
    report = show_error(lambda: e.sum().backward())
    versions = report.parts[2].explanation
    assert "the counter moved by 2" in versions and "in-place writes since" not in versions


def tints(scene) -> dict:
    """The tensor-colour styles a graph scene draws: its leaves' fills and its saved chips' swatches."""
    kinds = ("graph-boxes-leaf-", "graph-swatch-")
    return {kind: sorted({i.style for i in scene.items if i.style.startswith(kind)}) for kind in kinds}


def test_show_error_and_the_stepper_tint_the_same_program_alike():
    # review3 item 5: for chapter 5's four lines show_error drew a lilac (the graph met b's chip first) and the
    # in-place deep dive's stepper drew a yellow. Both now take names in the order they are given or bound, so
    # a, the first, is tensor colour 0 (its leaf box) and b colour 1 (its saved chip's swatch) in each.
    from tutorial_lib import GraphStepper

    a = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    b = a.exp()
    b.mul_(2)
    loss = b.sum()
    report = show_error(loss.backward, names={"a": a, "b": b, "loss": loss})
    stepper = GraphStepper(
        [
            ("a leaf", "a = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)"),
            ("exp saves its result", "b = a.exp()"),
            ("change b in place", "b.mul_(2)"),
            ("a loss", "loss = b.sum()"),
        ]
    )
    stepper.goto(4)
    expected = {"graph-boxes-leaf-": ["graph-boxes-leaf-0"], "graph-swatch-": ["graph-swatch-1"]}
    assert tints(report.figure.scene) == tints(stepper.scene) == expected
