"""The memory timeline draws what the model layer measured, nothing else (the op table: test_tables.py)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import tutorial_lib as tl  # noqa: E402
from tutorial_lib.facts.memory import MiB  # noqa: E402
from tutorial_lib.pictures.timeline import draw_memory_timeline  # noqa: E402


def measured_pair():
    x = torch.randn(256, 256)
    with tl.measure_memory() as out_of_place:
        kept = (x * 2).relu().sum()
    with tl.measure_memory() as in_place:
        kept = x.mul(2).relu_().sum()
    del kept
    return out_of_place, in_place


def test_timeline_lines_are_the_measured_bytes():
    out_of_place, in_place = measured_pair()
    fig = draw_memory_timeline([out_of_place, in_place], labels=["out-of-place", "in-place"])
    lines = fig.axes[0].get_lines()
    assert len(lines) == 2
    for line, report in zip(lines, (out_of_place, in_place)):
        expected = [0.0] + [b / MiB for _, b in report.timeline] + [report.allocated / MiB]
        assert list(line.get_ydata()) == pytest.approx(expected)
        # the line joins the bytes held after each op; a peak can fall inside an op (kernel scratch, a wrapped number)
        assert max(line.get_ydata()) <= report.peak / MiB
    assert lines[0].get_linestyle() != lines[1].get_linestyle()  # not colour alone
    assert fig.summary.startswith("out-of-place: 3 ops, peak 524,288 B (512.00 KiB)")
    assert "in-place: 3 ops, peak 262,156 B (256.01 KiB), leaves 4 B allocated" in fig.summary
    plt.close(fig)


def test_single_timeline_names_its_ops():
    out_of_place, _ = measured_pair()
    fig = draw_memory_timeline(out_of_place)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["mul", "relu", "sum", "end"]
    plt.close(fig)


def test_timeline_draws_on_a_given_axes():
    out_of_place, _ = measured_pair()
    fig, ax = plt.subplots()
    assert draw_memory_timeline(out_of_place, ax=ax) is fig
    plt.close(fig)


def test_timeline_bad_input():
    with pytest.raises(TypeError, match="reports"):
        draw_memory_timeline([1])
    with pytest.raises(TypeError, match="reports"):
        draw_memory_timeline([])
    report, _ = measured_pair()
    with pytest.raises(ValueError, match="labels"):
        draw_memory_timeline([report], labels=["a", "b"])
    with tl.measure_memory() as unfinished:
        with pytest.raises(ValueError, match="still measuring"):
            draw_memory_timeline(unfinished)


def test_summary_says_op_in_the_singular_for_one_op():
    x = torch.ones(1000)
    with tl.measure_memory() as one:
        y = x.neg()
    del y
    assert tl.pictures.timeline.memory_timeline_summary([one], ["neg"]) == (
        "neg: 1 op, peak 4,000 B (3.91 KiB), leaves 4,000 B (3.91 KiB) allocated"
    )


def test_timeline_is_a_bare_figure_that_shows_once():
    # Not registered with pyplot (a cell returning it shows it once, no too-many-figures warning) and
    # still displayable: it carries its own PNG formatter.
    out_of_place, _ = measured_pair()
    before = plt.get_fignums()
    fig = draw_memory_timeline(out_of_place)
    assert plt.get_fignums() == before
    assert fig._repr_png_().startswith(b"\x89PNG")
