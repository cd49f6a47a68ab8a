"""tutorial_lib.pictures.tables: ``op_table`` shows a view-or-copy report as an HTML table in Jupyter and as the
report's own text elsewhere; verdicts are words with a mark, never colour alone, and everything is escaped."""

import xml.etree.ElementTree as ElementTree

import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.facts.ops import OpReport
from tutorial_lib.pictures.tables import OpTable, op_table


def parsed(table):
    """The table's HTML as an element tree (parsing also proves the markup is well formed)."""
    return ElementTree.fromstring(table._repr_html_())


def body_rows(table):
    """The ``<td>`` elements of each body row."""
    return [row.findall("td") for row in parsed(table).find("tbody").findall("tr")]


def cell_text(cell):
    return "".join(cell.itertext())


def test_html_has_the_report_headers_and_one_row_per_expression():
    x = torch.arange(6.0).view(2, 3)
    table = op_table(["x.t()", "x[[0]]", "x.add_(1)"], x=x)
    root = parsed(table)
    assert [cell_text(th) for th in root.find("thead").iter("th")] == list(OpReport.HEADERS)
    assert [len(cells) for cells in body_rows(table)] == [len(OpReport.HEADERS)] * 3


@pytest.mark.parametrize(
    "expression, verdict, mark",
    [
        ("x.t()", "view", "👁 view"),
        ("x[[0]]", "copy", "📄 copy"),
        ("x.add_(1)", "in-place", "✎ in-place"),
        ("x.contiguous()", "same tensor", "= same tensor"),
        ("x.shape", "not a tensor", "– not a tensor"),
    ],
)
def test_every_verdict_is_a_word_with_its_own_mark(expression, verdict, mark):
    table = op_table([expression], x=torch.arange(6.0).view(2, 3))
    assert table.report[0].verdict == verdict
    (cells,) = body_rows(table)
    assert cell_text(cells[1]) == mark


def test_the_marks_differ_per_verdict():
    x = torch.arange(6.0).view(2, 3)
    table = op_table(["x.t()", "x[[0]]", "x.add_(1)", "x.contiguous()", "x.shape"], x=x)
    marks = [cell_text(cells[1]) for cells in body_rows(table)]
    assert len({mark.split()[0] for mark in marks}) == len(marks)


def test_operation_and_aten_ops_are_code_and_the_other_columns_are_not():
    x = torch.arange(6.0).view(2, 3)
    table = op_table(["x.t()", "x[[0]]"], x=x)
    for cells, texts in zip(body_rows(table), table.report.table_rows()):
        assert [cell.find("code") is not None for cell in cells] == [True, False, False, False, True]
        assert cell_text(cells[0]) == texts[0] and cell_text(cells[4]) == texts[4]
        assert [cell_text(cells[i]) for i in (2, 3)] == [texts[2], texts[3]]


def test_html_escapes_the_expression():
    x = torch.arange(6.0)
    expression = "x[(x < 3) & (x > 0)]"
    table = op_table([expression], x=x)
    html_text = table._repr_html_()
    assert "x &lt; 3" in html_text and "&amp;" in html_text and "x < 3" not in html_text
    (cells,) = body_rows(table)
    assert cell_text(cells[0]) == expression


def test_text_is_the_reports_text_and_both_ways_of_calling_agree():
    x = torch.arange(6.0).view(2, 3)
    report = tl.view_or_copy(["x.t()", "x[[0]]"], x=x)
    table = op_table(report)
    assert isinstance(table, OpTable) and table.report is report
    assert str(table) == repr(table) == str(report)
    assert str(op_table(["x.t()", "x[[0]]"], x=x)) == str(report)
    assert str(op_table(["x.t()"], x=x)).splitlines()[2].split()[:2] == ["x.t()", "view"]


def test_bad_arguments_name_what_is_wrong():
    x = torch.arange(6.0)
    report = tl.view_or_copy(["x.t()"], x=x)
    with pytest.raises(ValueError, match="tensors"):
        op_table(report, x=x)  # a finished report needs no tensors
    with pytest.raises(TypeError, match="report must be an OpReport"):
        OpTable("x.t()")
    with pytest.raises(TypeError, match="expressions"):
        op_table("x.t()", x=x)  # a single string, not a list
    with pytest.raises(TypeError, match="expressions"):
        op_table(42, x=x)
    with pytest.raises(TypeError, match="expressions"):
        op_table([1], x=x)
    with pytest.raises(ValueError, match="expressions"):
        op_table([], x=x)
    with pytest.raises(ValueError, match="tensors"):
        op_table(["x.t()"])
    with pytest.raises(TypeError, match="^x must be"):
        op_table(["x.t()"], x=[1, 2])
