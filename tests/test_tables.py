"""tutorial_lib.pictures.tables: ``op_table`` shows a view-or-copy report as an HTML table in Jupyter and as the
report's own text elsewhere; every row carries its verdict as a word with a mark on a chip in the explorer's badge
colours (never colour alone), everything is escaped, runs of alike rows are grouped by a bracket with their count,
and long tables scroll."""

import xml.etree.ElementTree as ElementTree

import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.explorers.layout_explorers import VERDICT_BADGES
from tutorial_lib.facts.ops import OpReport
from tutorial_lib.pictures import palette
from tutorial_lib.pictures.tables import OpTable, op_table

VIEWS = [f"x.view({n}, {12 // n})" for n in (1, 2, 3, 4, 6, 12)] * 4  # 24 rows, all views


def parsed(table):
    """The table's HTML as an element tree (parsing also proves the markup is well formed)."""
    return ElementTree.fromstring(table._repr_html_())


def body_rows(table):
    """The ``<td>`` elements of each body row as written (a cell spanning rows is in its first row only)."""
    return [row.findall("td") for row in parsed(table).find(".//tbody").findall("tr")]


BRACKET = 4  # the bracket column, between the sharing and the aten ops; its count in the next column


def grid(table, brackets=False):
    """Each body row's five cells (seven with ``brackets``), a cell spanning rows repeated in every row it covers."""
    rows, spanning = [], {}  # column -> (cell, rows it still covers)
    for written in body_rows(table):
        cells, written = [], list(written)
        for column in range(len(OpReport.HEADERS) + 2):
            if column in spanning:
                cell, left = spanning.pop(column)
                if left > 1:
                    spanning[column] = (cell, left - 1)
            else:
                cell = written.pop(0)
                if int(cell.get("rowspan", "1")) > 1:
                    spanning[column] = (cell, int(cell.get("rowspan")) - 1)
            cells.append(cell)
        assert not written
        rows.append(cells if brackets else cells[:BRACKET] + cells[BRACKET + 2 :])
    return rows


def runs(table):
    """(first row, rows spanned, text) of each bracket grouping a run of alike rows: its count is the next cell."""
    found = []
    for index, cells in enumerate(body_rows(table)):
        for at, cell in enumerate(cells):
            if cell.get("class") == "run" and int(cell.get("rowspan", "1")) > 1:
                found.append((index, int(cell.get("rowspan")), cell_text(cells[at + 1])))
    return found


def cell_text(cell):
    return "".join(cell.itertext())


def verdict_word(cell):
    """The verdict shown in a verdict cell, without the count of a group."""
    return cell_text(cell.find(".//span"))


def style(element) -> dict:
    """An element's inline style as a dict."""
    pairs = (part.split(":", 1) for part in element.get("style", "").split(";") if part.strip())
    return {name.strip(): value.strip() for name, value in pairs}


def test_html_has_the_report_headers_and_one_row_per_expression():
    x = torch.arange(6.0).view(2, 3)
    table = op_table(["x.t()", "x[[0]]", "x.add_(1)"], x=x)
    root = parsed(table)
    headers = [cell_text(th) for th in root.iter("th")]
    assert headers == [*OpReport.HEADERS[:BRACKET], "", "", *OpReport.HEADERS[BRACKET:]]  # the bracket, its count
    assert [len(cells) for cells in grid(table)] == [len(OpReport.HEADERS)] * 3


@pytest.mark.parametrize(
    "expression, verdict, mark",
    [
        ("x.t()", "view", "👁 view"),
        ("x[[0]]", "copy", "📄 copy"),
        ("x.add_(1)", "in-place", "✎ in-place"),
        ("x.contiguous()", "same tensor", "= same tensor"),
        ("x.shape", "not a tensor", "– not a tensor"),
        ("x.data", "alias", "🔗 alias"),
        ("x.grad", "existing memory", "↩ existing memory"),
    ],
)
def test_every_verdict_is_a_word_with_its_own_mark(expression, verdict, mark):
    x = torch.arange(6.0).view(2, 3)
    if expression == "x.grad":  # memory x holds, not x's own
        x.requires_grad_()
        (x * 2).sum().backward()
    table = op_table([expression], x=x)
    assert table.report[0].verdict == verdict
    (cells,) = body_rows(table)
    assert cell_text(cells[1]) == mark == verdict_word(cells[1])


def test_the_marks_differ_per_verdict():
    x = torch.arange(6.0).view(2, 3)
    table = op_table(["x.t()", "x[[0]]", "x.add_(1)", "x.contiguous()", "x.shape", "x.data"], x=x)
    marks = [verdict_word(cells[1]) for cells in grid(table)]
    assert len({mark.split()[0] for mark in marks}) == len(marks)


def test_copies_and_writes_are_tinted_and_every_verdict_has_its_badge_colours():
    x = torch.arange(6.0).view(2, 3)
    table = op_table(["x.t()", "x[[0]]", "x.add_(1)", "x.contiguous()", "x.shape"], x=x)
    rows = parsed(table).find(".//tbody").findall("tr")
    tints = [style(row)["background"] for row in rows]
    assert tints[0] == tints[3] == tints[4] == "#ffffff"  # a view, the same tensor, not a tensor: plain
    assert len({tints[0], tints[1], tints[2]}) == 3  # a copy and a write: each its own tint
    chips = [style(cells[1].find(".//span")) for cells in grid(table)]
    assert [chip["font-weight"] for chip in chips] == ["bold", "bold", "bold", "bold", "normal"]
    assert [chip.get("background") for chip in chips] == [
        palette.VIEW,
        palette.COPY,
        palette.STALE,
        palette.STORAGE,
        None,
    ]
    bars = [style(cells[0])["border-left"] for cells in grid(table)]
    assert bars[:4] == [
        f"4px solid {colour}" for colour in (palette.VIEW, palette.COPY, palette.STALE, palette.STORAGE)
    ]
    assert "transparent" in bars[4]


def test_every_row_carries_its_verdict_word_and_the_explorers_badge_colours():
    # Issue 22: runs of alike rows used to leave every row after the first with blank verdict, bytes and sharing
    # cells (29 of a 30-row table had no verdict), and a view was an emoji, not the VIEW blue of the badge.
    x = torch.arange(12.0).view(3, 4)
    expressions = [*VIEWS[:8], "x[[0, 2]]", "x[[1, 2]]", "x.data", "x.add_(1)", "x.contiguous()"]
    table = op_table(expressions, x=x)
    assert len(body_rows(table)) == len(expressions)
    for row, cells, written in zip(table.report, table.report.table_rows(), body_rows(table)):
        verdict_cells = [cell for cell in written if cell.find("span") is not None]
        assert len(verdict_cells) == 1, row.expression  # its own verdict, in its own row
        chip = style(verdict_cells[0].find("span"))
        word, background, text_colour, _ = VERDICT_BADGES[row.verdict]
        assert word.lower() in verdict_word(verdict_cells[0])
        assert (chip["background"], chip["color"]) == (background, text_colour), row.expression
        texts = [cell_text(cell) for cell in written if cell.get("class") not in ("run", "run-count")]
        assert texts[2:4] == list(cells[2:4])  # bytes and sharing too


def test_code_is_monospace_and_every_cell_is_left_aligned():
    x = torch.arange(6.0).view(2, 3)
    table = op_table(["x.t()", "x[[0]]"], x=x)
    for cells, texts in zip(grid(table), table.report.table_rows()):
        assert ["monospace" in style(cell).get("font-family", "") for cell in cells] == [
            True,
            False,
            False,
            False,
            True,
        ]
        assert [cell_text(cells[i]) for i in (0, 2, 3, 4)] == [texts[i] for i in (0, 2, 3, 4)]
    root = parsed(table)
    assert all(style(cell)["text-align"] == "left" for cell in [*root.iter("th"), *root.iter("td")])


def test_runs_of_alike_rows_are_grouped_by_a_bracket_with_their_count_not_by_blank_cells():
    x = torch.arange(12.0).view(3, 4)
    expressions = ["x.t()", "x[0]", "x.view(4, 3)", "x[[0, 2]]", "x[[1, 2]]", "x[:, [1, 3]]", "x.detach()"]
    table = op_table(expressions, x=x)
    # views (3) | copies of 32 bytes (2) | a copy of 24 bytes | a view: every row has its five cells, and the
    # first row of each run its bracket cell, spanning the run when it has more than one row
    assert [len(cells) for cells in body_rows(table)] == [7, 5, 5, 7, 5, 7, 7]
    assert runs(table) == [(0, 3, "× 3 alike"), (3, 2, "× 2 alike")]
    # review3 8b: the bracket is a narrow "]" of its own (top, right and bottom borders) spanning exactly its
    # run's rows; the count stands beside it, outside, so the bracket boxes no empty space
    first = body_rows(table)[0]
    bracket, count = style(first[BRACKET]), style(first[BRACKET + 1])
    assert bracket["border"].startswith("2px solid") and bracket["border-left"] == "none"
    assert bracket["width"] == "6px" and bracket["padding"] == "0" and cell_text(first[BRACKET]) == ""
    assert first[BRACKET].get("rowspan") == first[BRACKET + 1].get("rowspan") == "3"
    assert style(list(parsed(table).iter("th"))[BRACKET])["padding"] == "0"  # the column no wider than the bracket
    assert "border" not in count and cell_text(first[BRACKET + 1]) == "× 3 alike"
    verdicts = [verdict_word(cells[1]) for cells in grid(table)]
    assert verdicts == ["👁 view"] * 3 + ["📄 copy"] * 3 + ["👁 view"]
    # a copy keeps its result's bytes; its ops also made the index list as a tensor (2 int64: 16 bytes)
    made = ["32 kept of 48 made", "32 kept of 48 made", "24 kept of 40 made"]
    assert [cell_text(cells[2]) for cells in grid(table)] == ["0", "0", "0", *made, "0"]
    assert [cell_text(cells[3]) for cells in grid(table)] == ["yes"] * 3 + ["no"] * 3 + ["yes"]
    with tl.trace_ops() as ops:
        x[[0, 2]]
    assert sum(op.new_bytes for op in ops) == 48
    assert [cell_text(cells[0]) for cells in grid(table)] == expressions


def test_the_caption_counts_the_verdicts():
    x = torch.arange(12.0).view(3, 4)
    table = op_table(["x.t()", "x[[0, 2]]", "x[0]", "x.clone()", "x.add_(1)"], x=x)
    caption = cell_text(parsed(table).find("div"))
    assert caption == "5 operations: 2 views, 2 copies, 1 in-place write"
    assert cell_text(parsed(op_table(["x.t()"], x=x)).find("div")) == "1 operation: 1 view"


def test_a_long_table_scrolls_under_its_header_and_a_short_one_does_not():
    x = torch.arange(12.0).view(3, 4)
    long_table = op_table(VIEWS, x=x)
    boxes = [div for div in parsed(long_table).iter("div") if "max-height" in style(div)]
    assert len(boxes) == 1 and style(boxes[0])["overflow-y"] == "auto"
    assert int(style(boxes[0])["max-height"].removesuffix("px")) < 19 * len(VIEWS)  # shorter than the rows
    assert all(style(th)["position"] == "sticky" for th in parsed(long_table).iter("th"))
    assert runs(long_table) == [(0, len(VIEWS), f"× {len(VIEWS)} alike")]
    assert [verdict_word(cells[1]) for cells in grid(long_table)] == ["👁 view"] * len(VIEWS)
    short_table = op_table(VIEWS[:12], x=x)
    assert not [div for div in parsed(short_table).iter("div") if "max-height" in style(div)]
    assert not any("position" in style(th) for th in parsed(short_table).iter("th"))


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


def test_the_caption_counts_same_tensor_and_non_tensor_results_in_words_that_take_a_plural():
    x = torch.arange(6.0).reshape(2, 3)
    caption = cell_text(parsed(op_table(["x.contiguous()", "x[...]", "x.shape", "x.dim()"], x=x)).find("div"))
    assert caption == "4 operations: 1 same-tensor result, 1 view, 2 non-tensor results", caption
