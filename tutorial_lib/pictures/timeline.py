"""Pictures of memory over time, drawn from ``MemoryReport.timeline`` (see memory.py)."""

from __future__ import annotations

from ..common.checks import require_bool
from ..common.text import op_name, plural
from ..facts.memory import MemoryReport, MiB, format_bytes
from .render_mpl import bare_figure, require_axes

_STYLES = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D")]


def memory_timeline_summary(reports, labels) -> str:
    """One line per report: its peak and what it leaves allocated, with the number of ops."""
    parts = []
    for label, report in zip(labels, reports):
        ops = len(report.timeline)
        parts.append(
            f"{label}: {plural(ops, 'op')}, peak {format_bytes(report.peak)}, "
            f"leaves {format_bytes(report.allocated)} allocated"
        )
    return "; ".join(parts)


def _check_reports(reports, labels):
    if isinstance(reports, MemoryReport):
        reports = [reports]
    if not isinstance(reports, (list, tuple)) or not reports:
        raise TypeError("reports must be a MemoryReport or a non-empty list of them")
    for index, report in enumerate(reports):
        if not isinstance(report, MemoryReport):
            raise TypeError(f"reports[{index}] must be a MemoryReport, got {type(report).__name__}")
        if report.allocated is None:
            raise ValueError(f"reports[{index}] is still measuring: draw it after its with-block has ended")
    if labels is None:
        labels = [f"run {i + 1}" for i in range(len(reports))] if len(reports) > 1 else ["block"]
    if not isinstance(labels, (list, tuple)) or len(labels) != len(reports):
        raise ValueError(f"labels must be a list with one label per report ({len(reports)}), got {labels!r}")
    return list(reports), [str(label) for label in labels]


def draw_memory_timeline(reports, labels=None, ax=None, show_ops: bool = True):
    """Bytes held over the ops of one or more measured blocks, with each peak marked.

    Args:
        reports: a ``MemoryReport`` from ``measure_memory`` or a list of them (e.g. out-of-place and in-place).
        labels: one label per report.
        ax: a matplotlib Axes to draw on; a new figure when None.
        show_ops: name the ops along the x axis when there are few of them (≤ 20).

    Returns:
        The matplotlib Figure; ``fig.summary`` holds the one-line text summary.

    Raises:
        TypeError: ``reports`` is not a MemoryReport or a list of them, ``ax`` is not a matplotlib Axes,
            ``show_ops`` is not a bool.
        ValueError: a report still measuring, or ``labels`` not one per report.
    """
    reports, labels = _check_reports(reports, labels)
    require_axes(ax, "ax")
    require_bool(show_ops, "show_ops")
    if ax is None:
        fig, ax = bare_figure(7, 3.2, full=False)
    else:
        fig = ax.figure
    longest = max(len(r.timeline) for r in reports)
    for index, (label, report) in enumerate(zip(labels, reports)):
        line_style, marker = _STYLES[index % len(_STYLES)]
        # start at 0, one point after each op, and a last one for what the block leaves (after frees)
        held = [0.0] + [b / MiB for _, b in report.timeline] + [report.allocated / MiB]
        ax.step(
            range(len(held)),
            held,
            where="post",
            linestyle=line_style,
            marker=marker,
            label=f"{label} (peak {report.peak / MiB:.2f} MiB)",
        )
        peak_step = max(range(len(held)), key=held.__getitem__)
        ax.annotate(
            f"peak {report.peak / MiB:.2f} MiB",
            (peak_step, report.peak / MiB),
            textcoords="offset points",
            xytext=(4, 6),
            fontsize=8,
        )
    names = reports[0].timeline
    if show_ops and len(reports) == 1 and 0 < len(names) <= 20:
        ax.set_xticks(range(1, len(names) + 2))
        ax.set_xticklabels([op_name(n) for n, _ in names] + ["end"], rotation=45, ha="right", fontsize=8)
        ax.set_xlabel("after op")
    else:
        ax.set_xlabel("ops run")
    ax.xaxis.get_major_locator().set_params(integer=True) if not (show_ops and len(reports) == 1) else None
    ax.set_xlim(-0.3, longest + 1.3)
    ax.set_ylabel("MiB held (since block start)")
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.summary = memory_timeline_summary(reports, labels)
    return fig
