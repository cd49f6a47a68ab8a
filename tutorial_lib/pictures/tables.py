"""``op_table``: the view-or-copy report as a table, HTML in Jupyter and plain text elsewhere.

The HTML is compact and left-aligned: code in monospace, consecutive rows with the same verdict, bytes and
sharing grouped under one verdict cell with their count, copies and in-place writes tinted with their verdict
word in bold (the word is always there, so colour is never the only sign), a caption that counts the verdicts,
and long tables scrolling under a header that stays put. Inline styles only, so it looks the same everywhere.
"""

from __future__ import annotations

import html
import itertools

from ..common.checks import require_type
from ..common.text import plural
from ..facts.ops import OpReport, expression_items, view_or_copy
from .palette import ALIAS, COPY, INK, STALE, tint
from .scene import FAMILIES

#: Each verdict's mark, its plural in the caption, and its look: row tint, left bar and verdict colour (the
#: palette's: orange for copies, vermilion for in-place writes, teal for aliases: told apart with any colour vision).
_VERDICTS = {
    "view": ("👁 view", "view", "views", "", "", "#1a1a1a"),
    "alias": ("🔗 alias", "alias", "aliases", tint(ALIAS, 0.2), f"4px solid {ALIAS}", INK),
    "copy": ("📄 copy", "copy", "copies", tint(COPY, 0.2), f"4px solid {COPY}", INK),
    "in-place": ("✎ in-place", "in-place write", "in-place writes", tint(STALE, 0.15), f"4px solid {STALE}", STALE),
    "same tensor": ("= same tensor", "same-tensor result", "same-tensor results", "", "", "#1a1a1a"),
    "existing memory": ("↩ existing memory", "existing-memory result", "existing-memory results", "", "", "#1a1a1a"),
    "not a tensor": ("– not a tensor", "non-tensor result", "non-tensor results", "", "", "#666666"),
}
#: Tables with more rows than this scroll inside a box ``SCROLL_BOX_ROWS`` rows high, under a header that stays.
SCROLL_AFTER_ROWS = 20
SCROLL_BOX_ROWS = 16
_ROW_PX = 19  # one compact row: 13 px text at line height 1.3, plus 1 px padding above and below
_HEADER_PX = 24
_MONO = ", ".join(FAMILIES["mono"])
_SANS = ", ".join(FAMILIES["sans"])
_CELL = "padding:1px 8px;text-align:left;vertical-align:top;white-space:nowrap;line-height:1.3"


def _look(verdict: str) -> tuple[str, str, str, str, str, str]:
    """The mark, caption words and colours of a verdict (an unknown verdict: its word, untinted)."""
    return _VERDICTS.get(verdict, (verdict, verdict, verdict, "", "", "#1a1a1a"))


def _caption(report: OpReport) -> str:
    """ "30 operations: 27 views, 3 copies", verdicts in the order they first appear."""
    counts: dict[str, int] = {}
    for row in report:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1
    parts = [plural(count, _look(verdict)[1], _look(verdict)[2]) for verdict, count in counts.items()]
    return f"{plural(len(report), 'operation')}: {', '.join(parts)}"


def _verdict_cell(verdict: str, rows: int) -> str:
    """The verdict word with its mark, bold when it is a copy or a write; with the count when it spans rows."""
    mark, _, _, tint, _, colour = _look(verdict)
    weight = "bold" if tint else "normal"
    count = f"<span style='font-size:11px;color:#555555'>× {rows} in a row</span>" if rows > 1 else ""
    # sticky: a group's verdict stays in sight while its rows scroll under the header
    inner = (
        f"<div style='position:sticky;top:{_HEADER_PX}px'>"
        f"<span style='font-weight:{weight};color:{colour}'>{html.escape(mark)}</span>"
        f"{'<br/>' + count if count else ''}</div>"
    )
    span = f" rowspan='{rows}'" if rows > 1 else ""
    return f"<td{span} style='{_CELL}'>{inner}</td>"


def _group_rows(verdict: str, group: list, first_in_table: bool) -> list[str]:
    """The ``<tr>``s of consecutive rows with one verdict, bytes and sharing: shared cells span the group."""
    _, _, _, tint, bar, _ = _look(verdict)
    rows = []
    for position, cells in enumerate(group):
        line = "1px solid #bbbbbb" if position == 0 and not first_in_table else "none"
        style = f"background:{tint or '#ffffff'};border-top:{line}"
        code = f"<td style='{_CELL};font-family:{_MONO};border-left:{bar or '4px solid transparent'}'>"
        parts = [f"<tr style='{style}'>", f"{code}{html.escape(cells[0])}</td>"]
        if position == 0:
            parts.append(_verdict_cell(verdict, len(group)))
            parts += [f"<td rowspan='{len(group)}' style='{_CELL}'>{html.escape(cells[i])}</td>" for i in (2, 3)]
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
        head = "".join(
            f"<th style='{_CELL};{sticky}background:#f0f0f0;border-bottom:1px solid #888888'>{html.escape(h)}</th>"
            for h in OpReport.HEADERS
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
