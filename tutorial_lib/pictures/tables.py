"""``op_table``: the view-or-copy report as a table, HTML in Jupyter and plain text elsewhere."""

from __future__ import annotations

import html

from ..common.checks import describe
from ..facts.ops import OpReport, view_or_copy


class OpTable:
    """A rendered ``OpReport``: shows as an HTML table in Jupyter, as aligned text in ``print``."""

    def __init__(self, report: OpReport):
        if not isinstance(report, OpReport):
            raise TypeError(f"report must be an OpReport from view_or_copy, got {describe(report)}")
        self.report = report

    def __str__(self) -> str:
        return str(self.report)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        marks = {
            "view": "👁 view",
            "copy": "📄 copy",
            "in-place": "✎ in-place",
            "same tensor": "= same tensor",
            "not a tensor": "– not a tensor",
        }
        head = "".join(f"<th>{html.escape(h)}</th>" for h in OpReport.HEADERS)
        rows = []
        for row, cells in zip(self.report, self.report.table_rows()):
            cells = list(cells)
            cells[1] = marks.get(row.verdict, row.verdict)
            rows.append(
                "<tr>"
                + "".join(
                    f"<td><code>{html.escape(c)}</code></td>" if i in (0, 4) else f"<td>{html.escape(c)}</td>"
                    for i, c in enumerate(cells)
                )
                + "</tr>"
            )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def op_table(report_or_expressions, **tensors) -> OpTable:
    """Render which expressions view, copy or write in place as a table.

    Args:
        report_or_expressions: an ``OpReport`` from ``view_or_copy``, or the expressions to run (a list of
            strings such as ``"x.t()"``), in which case ``**tensors`` names the tensors they use.
        **tensors: passed to ``view_or_copy`` with expressions.

    Returns:
        An ``OpTable`` (HTML in Jupyter, plain text with ``print``).

    Raises:
        TypeError / ValueError: as ``view_or_copy`` for bad expressions or tensors.
    """
    if isinstance(report_or_expressions, OpReport):
        if tensors:
            raise ValueError("tensors are only needed with expressions, not with a finished OpReport")
        return OpTable(report_or_expressions)
    return OpTable(view_or_copy(report_or_expressions, **tensors))
