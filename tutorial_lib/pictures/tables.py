"""``op_table``: the view-or-copy report as a table, HTML in Jupyter and plain text elsewhere.

The HTML is compact and left-aligned: code in monospace; every row carries its own verdict as a word with a mark
on a chip in the verdict's colour (the view/copy explorer's badge colours, ``palette.VERDICT_COLOURS``: the word is
always there, so colour is never the only sign), its bytes and its sharing; consecutive rows with the same verdict,
bytes and sharing are grouped by a bracket with their count; copies and in-place writes are tinted; a caption
counts the verdicts, and long tables scroll under a header that stays put. Inline styles only, so it looks the
same everywhere.
"""

from __future__ import annotations

import html
import itertools

from ..common.checks import require_type
from ..common.text import plural
from ..facts.ops import OpReport, expression_items, view_or_copy
from .palette import ALIAS, COPY, MUTED, STALE, VERDICT_COLOURS, tint
from .scene import FAMILIES

#: Each verdict's mark and its singular and plural in the caption, and its row's tint (aliases, copies and in-place
#: writes stand out; views, the most common verdict, stay plain). Its chip and the row's left bar take the verdict's
#: colour from ``VERDICT_COLOURS``.
_VERDICTS = {
    "view": ("👁 view", "view", "views", ""),
    "alias": ("🔗 alias", "alias", "aliases", tint(ALIAS, 0.2)),
    "copy": ("📄 copy", "copy", "copies", tint(COPY, 0.2)),
    "in-place": ("✎ in-place", "in-place write", "in-place writes", tint(STALE, 0.15)),
    "same tensor": ("= same tensor", "same-tensor result", "same-tensor results", ""),
    "existing memory": ("↩ existing memory", "existing-memory result", "existing-memory results", ""),
    "not a tensor": ("– not a tensor", "non-tensor result", "non-tensor results", ""),
}
#: Tables with more rows than this scroll inside a box ``SCROLL_BOX_ROWS`` rows high, under a header that stays.
SCROLL_AFTER_ROWS = 20
SCROLL_BOX_ROWS = 16
_ROW_PX = 19  # one compact row: 13 px text at line height 1.3, plus 1 px padding above and below
_HEADER_PX = 24
_MONO = ", ".join(FAMILIES["mono"])
_SANS = ", ".join(FAMILIES["sans"])
_CELL = "padding:1px 8px;text-align:left;vertical-align:top;white-space:nowrap;line-height:1.3"
#: The bracket column, between the sharing and the aten ops: it spans a run of alike rows (its count the next).
_BRACKET_COLUMN = 4
_BRACKET_PX = 6


def _look(verdict: str) -> tuple[str, str, str, str]:
    """The mark, caption words and row tint of a verdict (an unknown verdict: its word, untinted)."""
    return _VERDICTS.get(verdict, (verdict, verdict, verdict, ""))


def _caption(report: OpReport) -> str:
    """ "30 operations: 27 views, 3 copies", verdicts in the order they first appear."""
    counts: dict[str, int] = {}
    for row in report:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1
    parts = [plural(count, _look(verdict)[1], _look(verdict)[2]) for verdict, count in counts.items()]
    return f"{plural(len(report), 'operation')}: {', '.join(parts)}"


def _verdict_cell(verdict: str) -> str:
    """The verdict word with its mark, bold on a chip in the verdict's badge colours (plain grey text without one)."""
    mark = html.escape(_look(verdict)[0])
    if verdict not in VERDICT_COLOURS:
        return f"<td style='{_CELL}'><span style='font-weight:normal;color:{MUTED}'>{mark}</span></td>"
    background, colour = VERDICT_COLOURS[verdict]
    chip = f"font-weight:bold;color:{colour};background:{background};padding:0 5px;border-radius:3px"
    return f"<td style='{_CELL}'><span style='{chip}'>{mark}</span></td>"


def _bracket_cell(rows: int) -> str:
    """A bracket spanning a run of ``rows`` alike rows, then their count (two empty cells for a single row).

    The bracket is its own narrow cell (``_BRACKET_PX`` wide, ends and back drawn as its borders), so it encloses
    exactly the rows it groups and no empty space; the count sits in the next cell, right of it."""
    if rows == 1:
        return f"<td class='run' style='{_CELL};padding:0'></td><td class='run-count' style='{_CELL}'></td>"
    narrow = f"padding:0;width:{_BRACKET_PX}px;min-width:{_BRACKET_PX}px"
    bracket = f"{_CELL};{narrow};border:2px solid {MUTED};border-left:none"
    count = f"{_CELL};padding-left:4px;vertical-align:middle;font-size:11px;color:{MUTED}"
    return (
        f"<td class='run' rowspan='{rows}' style='{bracket}'></td>"
        f"<td class='run-count' rowspan='{rows}' style='{count}'>× {rows} alike</td>"
    )


def _group_rows(verdict: str, group: list, first_in_table: bool) -> list[str]:
    """The ``<tr>``s of consecutive rows with one verdict, bytes and sharing, each with all its cells; a bracket
    beside them spans the group."""
    row_tint = _look(verdict)[3]
    bar = f"4px solid {VERDICT_COLOURS[verdict][0]}" if verdict in VERDICT_COLOURS else "4px solid transparent"
    rows = []
    for position, cells in enumerate(group):
        line = "1px solid #bbbbbb" if position == 0 and not first_in_table else "none"
        style = f"background:{row_tint or '#ffffff'};border-top:{line}"
        code = f"<td style='{_CELL};font-family:{_MONO};border-left:{bar}'>{html.escape(cells[0])}</td>"
        parts = [f"<tr style='{style}'>", code, _verdict_cell(verdict)]
        parts += [f"<td style='{_CELL}'>{html.escape(cells[i])}</td>" for i in (2, 3)]
        if position == 0:
            parts.append(_bracket_cell(len(group)))
        parts.append(f"<td style='{_CELL};font-family:{_MONO};color:#444444'>{html.escape(cells[4])}</td></tr>")
        rows.append("".join(parts))
    return rows


class OpTable:
    """A rendered ``OpReport``: shows as an HTML table in Jupyter, as aligned text in ``print``."""

    def __init__(self, report: OpReport):
        require_type(report, OpReport, "report", "an OpReport from view_or_copy")
        self.report = report

    def __str__(self) -> str:
        return str(self.report)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        sticky = "position:sticky;top:0;" if len(self.report) > SCROLL_AFTER_ROWS else ""
        headers = [*OpReport.HEADERS[:_BRACKET_COLUMN], "", "", *OpReport.HEADERS[_BRACKET_COLUMN:]]
        head = "".join(  # the bracket's header cell unpadded, so that the bracket column is as narrow as its cells
            f"<th style='{_CELL};{sticky}background:#f0f0f0;border-bottom:1px solid #888888"
            f"{';padding:0' if column == _BRACKET_COLUMN else ''}'>{html.escape(h)}</th>"
            for column, h in enumerate(headers)
        )
        rows = []
        keyed = zip(self.report, self.report.table_rows())
        for index, (key, group) in enumerate(
            itertools.groupby(keyed, key=lambda pair: (pair[0].verdict, pair[1][2], pair[0].shares_memory))
        ):
            rows += _group_rows(key[0], [cells for _, cells in group], first_in_table=index == 0)
        caption = f"<div style='padding:2px 0;color:#333333'>{html.escape(_caption(self.report))}</div>"
        table = (
            f"<table style='border-collapse:collapse;font-family:{_SANS};font-size:13px;line-height:1.3;"
            f"color:#1a1a1a;background:#ffffff;margin:0'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )
        if sticky:  # the caption stays above the box, which scrolls under its own header
            height = _HEADER_PX + SCROLL_BOX_ROWS * _ROW_PX
            table = f"<div style='max-height:{height}px;overflow-y:auto;display:inline-block'>{table}</div>"
        return f"<div style='font-family:{_SANS};font-size:13px'>{caption}{table}</div>"


def op_table(report_or_expressions, **tensors) -> OpTable:
    """Render which expressions view, copy or write in place as a table.

    Args:
        report_or_expressions: an ``OpReport`` from ``view_or_copy``, or the expressions to run (a list of
            strings such as ``"x.t()"``), in which case ``**tensors`` names the tensors they use.
        **tensors: passed to ``view_or_copy`` with expressions.

    Returns:
        An ``OpTable`` (HTML in Jupyter, plain text with ``print``).

    Raises:
        TypeError / ValueError: as ``view_or_copy`` for bad expressions (naming ``report_or_expressions``) or
            tensors.
    """
    if isinstance(report_or_expressions, OpReport):
        if tensors:
            raise ValueError("tensors are only needed with expressions, not with a finished OpReport")
        return OpTable(report_or_expressions)
    expression_items(report_or_expressions, "report_or_expressions")  # its errors name this function's argument
    return OpTable(view_or_copy(report_or_expressions, **tensors))
