"""Every picture function's figure shows its summary as its text (issue 22): a notebook's ``text/plain`` of the
figure, what a screen reader reads, a text-only copy shows and nbval compares, is ``fig.summary``, not
``<Figure size …>``, so no cell need print the summary above the picture. A figure drawn into a caller's Axes keeps
the caller's class."""

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402
from IPython.core.formatters import PlainTextFormatter  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import tutorial_lib as tl  # noqa: E402

SNAPSHOTS = json.loads((Path(__file__).parents[1] / "notebooks/data/h100_allocator_snapshots.json").read_text())


def _graph(ax=None):
    x = torch.ones(3, requires_grad=True)
    return tl.draw_graph(x.exp().sum(), names={"x": x}, ax=ax)


def _timeline(ax=None):
    with tl.measure_memory() as report:
        y = torch.ones(1000) * 2
    del y
    return tl.draw_memory_timeline(report, ax=ax)


def _error(ax=None):
    assert ax is None  # show_error draws on a figure of its own
    a = torch.ones(3, requires_grad=True)
    b = a.exp()
    b.add_(1)
    return tl.show_error(lambda: b.sum().backward(), graph_of=b).figure


DRAWS = {
    "graph": _graph,
    "memory timeline": _timeline,
    "places": lambda ax=None: tl.draw_places({"x": torch.ones(4)}, ax=ax),
    "allocator snapshot": lambda ax=None: tl.draw_allocator_snapshot(SNAPSHOTS["mlp"]["step_2"], source="H100", ax=ax),
    "cuda memory (snapshot)": lambda ax=None: tl.draw_cuda_memory(SNAPSHOTS["one_tensor"], source="H100", ax=ax),
    "cuda memory (figures)": lambda ax=None: tl.draw_cuda_memory(
        400_000_000, 400_556_032, 419_430_400, source="measured on cuda:0", ax=ax
    ),
    "sharing": lambda ax=None: tl.draw_sharing(ax=ax),
    "show_error's figure": _error,
    "layout": lambda ax=None: tl.draw_layout(torch.arange(6).reshape(2, 3), ax=ax),
}


@pytest.mark.parametrize("name", DRAWS)
def test_the_figures_text_is_its_summary_and_it_is_still_a_figure_with_a_png(name):
    fig = DRAWS[name]()
    assert fig.summary and PlainTextFormatter()(fig) == fig.summary  # not "<Figure size 586x640 with 1 Axes>"
    assert isinstance(fig, Figure) and fig._repr_png_()[1]["width"] > 0


@pytest.mark.parametrize("name", [name for name in DRAWS if name != "show_error's figure"])
def test_a_figure_drawn_into_the_callers_axes_keeps_the_callers_class(name):
    fig = Figure()
    assert DRAWS[name](ax=fig.add_subplot()) is fig
    assert type(fig) is Figure and fig.summary
