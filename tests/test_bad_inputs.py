"""Bad and odd inputs get a clear error naming an argument that exists, or an answer; never a crash from deep inside
(issue 20, section 4: fuzz C1, C2, C4). The ground truth for memory is NumPy's and torch's own."""

from __future__ import annotations

import io
import warnings
import xml.etree.ElementTree as ElementTree

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import tutorial_lib as tl  # noqa: E402
from tutorial_lib.pictures.scene import text_width, visible  # noqa: E402

# ------------------------------------------------------------------------- C1: a storage resized to 0 (FSDP)


def resized_to_zero():
    x = torch.arange(6.0)
    y = x[2:]
    x.untyped_storage().resize_(0)  # what FSDP does to a sharded parameter's storage
    return x, y


@pytest.mark.parametrize("pair", ["x, y", "y, y", "y, x", "x, x"])
def test_shares_memory_of_a_storage_resized_to_zero_says_it_has_no_memory(pair):
    x, y = resized_to_zero()
    a, b = {"x": x, "y": y}[pair[0]], {"x": x, "y": y}[pair[-1]]
    with pytest.raises(ValueError, match=r"^a has no memory to compare: its elements need \d+ bytes of storage"):
        tl.shares_memory(a, b)
    with pytest.raises(ValueError, match=r"^b has no memory"):
        tl.shares_memory(torch.zeros(2), b)


def test_shares_memory_answers_again_once_the_storage_is_back():
    x, y = resized_to_zero()
    x.untyped_storage().resize_(24)
    assert tl.shares_memory(x, y) == np.shares_memory(x.numpy(), y.numpy()) is True
    assert tl.shares_memory(x[:2], y) == np.shares_memory(x[:2].numpy(), y.numpy()) is False


def test_layout_pictures_of_a_storage_resized_to_zero_draw_it_past_the_end():
    x, y = resized_to_zero()
    summary = tl.layout_summary(x, y)
    assert "storage of 0 float32 (0 bytes)" in summary and "runs past the storage's end" in summary
    plt.close(tl.draw_layout(x, y))


# ------------------------------------------------------------------------- C2: odd characters in names

ODD_NAMES = ["bad\ud800", "nul\x00", "esc\x1b[31m", "end\uffff", "pair\U0001f600"]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_layout_pictures_take_any_name_and_write_what_xml_cannot_hold_as_escapes(name):
    x = torch.arange(6.0)
    summary = tl.layout_summary(x, x[::2], names=[name, "every other"])
    assert visible(name) in summary
    assert summary == visible(summary)  # nothing raw that a terminal, a notebook or XML chokes on
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Glyph missing from font" either
        figure = tl.draw_layout(x, x[::2], names=[name, "every other"])
        buffer = io.BytesIO()
        figure.savefig(buffer, format="svg")
    ElementTree.fromstring(buffer.getvalue())  # the truth: an XML parser accepts matplotlib's SVG
    plt.close(figure)
    assert text_width(name, "sans") == text_width(visible(name), "sans")  # measured as drawn


@pytest.mark.parametrize("name", ODD_NAMES)
def test_graph_pictures_take_any_name(name):
    x = torch.randn(3, requires_grad=True)
    ElementTree.fromstring(tl.graph_svg(x.exp() * x, names={name: x}))
    figure = tl.draw_graph(x.exp() * x, names={name: x})
    assert figure.summary == visible(figure.summary)
    plt.close(figure)


# ------------------------------------------------------------------------- C4: errors name arguments that exist


def test_a_meta_tensor_beside_a_real_one_is_drawn_not_blamed_on_an_argument_a():
    meta = torch.zeros(2, device="meta")
    summary = tl.layout_summary(torch.zeros(2), meta)
    assert "t1: shape (2,)" in summary
    plt.close(tl.draw_layout(torch.zeros(2), meta))
    big = torch.zeros(5000, device="meta")  # past the listing: only shares_memory could compare, and it cannot
    assert "t1: shape (4999,)" in tl.layout_summary(big, big[1:])


@pytest.mark.parametrize(
    "bad, message",
    [
        (None, r"^report_or_expressions must be a list of strings or a dict, got NoneType"),
        ("x.t()", r"^report_or_expressions must be a list of strings, not a single string"),
        ([], r"^report_or_expressions is empty"),
        ([1], r"^each item of report_or_expressions must be a str"),
    ],
)
def test_op_table_names_its_own_argument(bad, message):
    with pytest.raises((TypeError, ValueError), match=message):
        tl.op_table(bad, x=torch.zeros(2))
    with pytest.raises((TypeError, ValueError), match=message.replace("report_or_expressions", "expressions")):
        tl.view_or_copy(bad, x=torch.zeros(2))


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_graph_functions_name_their_own_argument_for_a_sparse_tensor(layout):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Sparse CSR tensor support is in beta state"
        tensor = torch.zeros(3).to_sparse() if layout == "coo" else torch.eye(3).to_sparse_csr()
    for call, name in [
        (lambda: tl.draw_graph(tensor), "t_or_graph"),
        (lambda: tl.graph_svg(tensor), "t_or_graph"),
        (lambda: tl.draw_graph([tensor]), "t_or_graph"),
        (lambda: tl.show_error(lambda: None, graph_of=tensor), "graph_of"),
        (lambda: tl.autograd_graph(tensor), "t"),
        (lambda: tl.inplace_hazards(tensor), "t"),
    ]:
        with pytest.raises(ValueError, match=rf"^{name} must be a strided \(dense\) tensor"):
            call()


def test_graph_stepper_seed_outside_what_torch_takes_is_a_value_error():
    steps = [("a", "y = x * 2")]
    for seed in (2**64, 10**30, -(2**63) - 1):
        with pytest.raises(ValueError, match=r"^seed must be in \[-2\*\*63, 2\*\*64\)"):
            tl.GraphStepper(steps, setup="x = torch.ones(2)", seed=seed)
        with pytest.raises((RuntimeError, ValueError)):  # torch refuses these seeds itself
            torch.manual_seed(seed)
    for seed in (2**64 - 1, -(2**63)):  # the ends torch takes
        assert tl.GraphStepper(steps, setup="x = torch.ones(2)", seed=seed).position == 0


def test_graph_stepper_setup_that_is_not_python_is_a_value_error_as_documented():
    with pytest.raises(ValueError, match=r"^setup statement 'x = \(' is not valid Python"):
        tl.GraphStepper([("a", "y = 1")], setup="x = (")
