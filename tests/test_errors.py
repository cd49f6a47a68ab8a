"""tools/errors: ``show_error`` runs a function and reports what went wrong, with the graph when it helps.

The truths are torch's own exceptions (the version-counter error, the second-backward error) and the model
layer's ``inplace_hazards``; the picture is checked on its scene (``report.figure.scene``).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from models import stale_exp_example  # noqa: E402

from tutorial_lib.tools.errors import show_error  # noqa: E402

VERSION_MESSAGE = "is at version 1; expected version 0"


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
    assert "freed by backward" in "\n".join(texts_with(report.figure.scene, "detail:"))


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
