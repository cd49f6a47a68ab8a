"""The memory timeline: each allocation a band over the ops of a measured block (as PyTorch's memory_viz draws
one band per allocation), stacked and coloured by kind, the block's phases shaded and named, one panel per run.

Drawn from ``MemoryReport`` (facts/memory.py) as a ``Scene``: a column per op, whose bands are what was held
when the op returned (a band ends at the op that freed it); on top, hatched, what was held only while the op
ran (its scratch memory); below zero, memory from before the block that the block freed. Runs compared are
aligned phase by phase when they have the same phases.
"""

from __future__ import annotations

import difflib
import itertools
import math
import re
from dataclasses import dataclass

from ..common.checks import describe, require_bool, require_int, require_type
from ..common.text import op_name, plural
from ..facts.memory import KINDS, MemoryReport, MiB, format_bytes
from .palette import FAINT, INK, MEMORY_KINDS, MUTED, PAPER, STORAGE
from .render_mpl import render, require_axes, with_summary
from .render_svg import svg
from .scene import Line, Polygon, Rect, Scene, Style, Text, escape, text_width

PLOT_WIDTH = 620.0  # the widest the ops' axis gets, in points
PLOT_HEIGHT = 130.0
LEFT, RIGHT, TOP = 70.0, 18.0, 10.0
MARKER_WIDTH, MARKER_GAP = 10.0, 6.0  # the start and end columns
PLOT_LEFT = LEFT + MARKER_WIDTH + MARKER_GAP  # the ops' axis starts after the start column
MAX_COLUMN_WIDTH, MIN_PLOT_WIDTH = 40.0, 130.0  # the narrowest ops' axis: room for the peak's label
MAX_BANDS = 60  # more allocations than this in a run: one band per kind
FONT, SMALL_FONT = 10.0, 9.0
HEADROOM = 1.18  # the top of the byte axis over the highest column: room for the peak's label

#: One colour per kind, from the palette; every kind is also named in the legend and on hover.
KIND_FILLS = {
    kind: MEMORY_KINDS[kind]
    for kind in ("parameter", "optimizer state", "gradient", "unknown", "activation", "temporary")
}
# A result the block left referenced: Tol's muted wine, not the grey of memory held before the block (and of
# storage in every other picture).
KIND_FILLS["unknown"] = "#882255"
INSIDE = "inside the op (scratch)"
ROUNDING = "allocator's rounding"
FROM_BEFORE = "from before the block"
HELD_BEFORE = "held before the block"
PHASE_LEGEND = "phase (named above it)"
#: What puts bytes in each layer (the kinds' rules are the model layer's, ``KINDS``).
LAYER_RULES = {
    **{kind: KINDS[kind] for kind in KIND_FILLS},
    INSIDE: "held only while an op ran: " + KINDS["scratch"] + ", and memory from before freed inside the op",
    ROUNDING: "CUDA: the caching allocator's blocks beyond the tensors' bytes (memory_allocated minus the storages)",
    FROM_BEFORE: KINDS["from before the block"],
    HELD_BEFORE: "what the allocator held for tensors when the block began (MemoryReport.held_before), less what "
    "the block freed of it: the bands stand on it",
}
LAYER_NAMES = (HELD_BEFORE, *KIND_FILLS, INSIDE, ROUNDING, FROM_BEFORE)  # bottom to top, in the legend's order
#: The kinds a report names, as the picture names them: "unknown" is a result the block left referenced.
SHOWN_NAMES = {"unknown": "result (still referenced)"}
COMPACT_OPS = 3  # blocks of at most this many ops: two bars a run (peak, end) instead of a chart
COMPACT_BAR, COMPACT_HEIGHT = 360.0, 14.0

STYLES = {
    **{f"band-{kind}": Style(fill=fill, edge="white", width=0.3, zorder=2) for kind, fill in KIND_FILLS.items()},
    f"band-{INSIDE}": Style(fill=MEMORY_KINDS["scratch"], edge=MUTED, width=0.4, hatch=True, zorder=2),
    f"band-{ROUNDING}": Style(fill=MEMORY_KINDS[ROUNDING], edge=MUTED, width=0.4, hatch=True, zorder=2),
    f"band-{FROM_BEFORE}": Style(fill=MEMORY_KINDS[FROM_BEFORE], edge=MUTED, width=0.5, hatch=True, zorder=2),
    f"band-{HELD_BEFORE}": Style(fill=STORAGE, edge=MUTED, width=0.6, zorder=2),
    "phase-0": Style(fill="#efefef", zorder=0),
    "phase-1": Style(fill="#e2e2e2", zorder=0),
    "frame": Style(edge="#555555", width=0.8, zorder=3),
    "grid": Style(edge="#cccccc", width=0.5, dash=(2, 2), zorder=1),
    "zero": Style(edge="#333333", width=0.8, zorder=3),
    "marker": Style(fill="#fafafa", edge="#555555", width=0.6, dash=(2, 1.5), zorder=1),
    "peak": Style(edge=INK, width=1.6, zorder=4),
    "hover": Style(fill="#ffffff00", zorder=6),
    "title": Style(size=FONT + 1, weight="bold", zorder=5),
    "text": Style(size=FONT, zorder=5),
    "tick": Style(size=SMALL_FONT, color="#333333", zorder=5),
    "op": Style(family="mono", size=SMALL_FONT, color="#333333", zorder=5),
    "phase-name": Style(size=SMALL_FONT, weight="bold", color="#333333", zorder=5),
    "peak-label": Style(size=SMALL_FONT, weight="bold", color=INK, halo=True, zorder=5),
    "baseline-label": Style(size=SMALL_FONT, color=INK, halo=True, zorder=5),
    "legend": Style(size=FONT, zorder=5),
}


def short_bytes(n: int) -> str:
    """The size in its largest binary unit, or bytes: ``'23.14 MiB'``, ``'512 B'``."""
    text = format_bytes(n)
    return text[text.index("(") + 1 : -1] if "(" in text else text


def _headline(report: MemoryReport, label: str, size=short_bytes) -> str:
    """The run's label, ops, peak and what it leaves, in ``size``'s units: a panel's title, a summary's start."""
    return f"{label}: {plural(len(report.timeline), 'op')}, peak {size(report.peak)}, leaves {size(report.allocated)}"


def _check(reports, labels, show_ops, ax=None) -> tuple[list[MemoryReport], list[str]]:
    """The reports as a list and their labels, once every argument is checked."""
    if isinstance(reports, MemoryReport):
        reports = [reports]
    if not isinstance(reports, (list, tuple)) or not reports:
        raise TypeError(f"reports must be a MemoryReport or a non-empty list of them, got {describe(reports)}")
    for index, report in enumerate(reports):
        require_type(report, MemoryReport, f"reports[{index}]", "a MemoryReport")
        if report.allocated is None:
            raise ValueError(f"reports[{index}] is still measuring: draw it after its with-block has ended")
    if labels is None:
        labels = [f"run {i + 1}" for i in range(len(reports))] if len(reports) > 1 else ["block"]
    if not isinstance(labels, (list, tuple)) or len(labels) != len(reports):
        raise ValueError(f"labels must be a list with one label per report ({len(reports)}), got {labels!r}")
    require_axes(ax, "ax")
    require_bool(show_ops, "show_ops")
    return list(reports), [str(label) for label in labels]


def phase_runs(report: MemoryReport) -> list[tuple[str | None, int, int]]:
    """The report's ops as runs of one phase: ``(phase, first op, number of ops)``."""
    runs, first = [], 0
    for phase, ops in itertools.groupby(report.phases):
        count = len(list(ops))
        runs.append((phase, first, count))
        first += count
    return runs


def _drawn(report: MemoryReport) -> list:
    """The allocations drawn as bands: made in the block and alive when some op returned."""
    made = [a for a in report.allocations if a.allocated_at is not None and a.kind != "scratch"]
    return [a for a in made if _last(a, report) >= 0]


def _last(allocation, report: MemoryReport) -> int:
    """The last column a band covers (-1: none); the end column is one past the last op."""
    if allocation.freed_at is None:
        return len(report.timeline)
    last = allocation.freed_at - 1 if allocation.freed_inside else allocation.freed_at
    return last if last >= allocation.allocated_at else -1


def memory_timeline_summary(reports, labels=None) -> str:
    """One part per report: ops, peak, what it leaves, its phases and its largest band (raises as
    ``draw_memory_timeline``)."""
    reports, labels = _check(reports, labels, True)
    parts = []
    for label, report in zip(labels, reports):
        text = _headline(report, label, format_bytes) + " allocated"
        named = [(phase, count) for phase, _, count in phase_runs(report) if phase is not None]
        if named:
            text += ", phases " + ", ".join(f"{phase} ({plural(count, 'op')})" for phase, count in named)
        drawn = _drawn(report)
        if drawn:
            largest = max(drawn, key=lambda a: a.nbytes)
            kind = SHOWN_NAMES.get(largest.kind, largest.kind)  # the legend's words for the kind
            text += f", largest band {format_bytes(largest.nbytes)} ({kind}, made by {op_name(largest.allocated_by)})"
        parts.append(text)
    return "; ".join(parts)


@dataclass
class _Band:
    """A band of a panel: its layer, its bytes in each column (the end last; negative below zero), hover text."""

    layer: str
    heights: list
    label: str


def _band_label(allocation) -> str:
    """An allocation's band on hover: its kind, bytes, the op that made it and when it was freed."""
    freed = "still allocated at the end"
    if allocation.freed_at is not None:
        freed = f"freed {'in' if allocation.freed_inside else 'after'} {op_name(allocation.freed_by)}"
    made = f"{format_bytes(allocation.nbytes)}, made by {op_name(allocation.allocated_by)}"
    return f"{allocation.kind}, {made}, {freed}"


def _bands(report: MemoryReport) -> tuple[list[_Band], list[_Band]]:
    """The bands above zero (bottom first) and below it (memory from before the block) of one report; when the
    report knows what was held before the block, that is the first band above zero (``HELD_BEFORE``, less what
    the block freed of it, column by column) and nothing is below zero."""
    columns = len(report.timeline) + 1  # the ops, then the end
    drawn = sorted(_drawn(report), key=lambda a: LAYER_NAMES.index(a.kind))  # stable: in the order made
    if len(drawn) > MAX_BANDS:  # one band per kind
        groups = [list(group) for _, group in itertools.groupby(drawn, key=lambda a: a.kind)]
        labelled = [(group, f"{group[0].kind}: {plural(len(group), 'allocation')}") for group in groups]
    else:
        labelled = [([allocation], _band_label(allocation)) for allocation in drawn]
    above = []
    for group, label in labelled:
        # each allocation adds its bytes from the column that made it to its last: a change at both ends, summed
        # up once (adding column by column costs ops × allocations alive)
        changes = [0] * (columns + 1)
        for allocation in group:
            changes[allocation.allocated_at] += allocation.nbytes
            changes[_last(allocation, report) + 1] -= allocation.nbytes
        above.append(_Band(group[0].kind, list(itertools.accumulate(changes[:columns])), label))
    stacked = [sum(column) for column in zip(*(band.heights for band in above))] if above else [0] * columns
    changes = [0] * (columns + 1)  # freed in the block: below zero from the column that freed it on
    for allocation in report.allocations:
        if allocation.allocated_at is None:
            changes[min(allocation.freed_at + (0 if allocation.freed_inside else 1), columns)] -= allocation.nbytes
    before = list(itertools.accumulate(changes[:columns]))
    held = [held for _, held in report.timeline] + [report.allocated]
    rounding = [max(0, held[c] - before[c] - stacked[c]) for c in range(columns)]
    if any(rounding):  # CUDA: the allocator's blocks are bigger than the tensors' bytes
        above.append(_Band(ROUNDING, rounding, "the caching allocator's blocks beyond the tensors' bytes"))
    most = list(report.most_held) + [report.allocated]
    inside = [max(0, most[c] - held[c]) for c in range(columns)]
    if any(inside):
        above.append(_Band(INSIDE, inside, "held only while the op ran (its scratch memory)"))
    if report.held_before is not None:  # absolute: the bands stand on what the block found held
        base = [report.held_before + freed for freed in before]
        label = f"{HELD_BEFORE}: {format_bytes(report.held_before)}"
        if any(before):
            label += f", {format_bytes(-before[-1])} of it freed in the block"
        return ([_Band(HELD_BEFORE, base, label)] if report.held_before else []) + above, []
    return above, [_Band(FROM_BEFORE, before, f"{FROM_BEFORE}, freed in it")] if any(before) else []


def _byte_ticks(low: int, high: int) -> list[tuple[int, str]]:
    """A few round values between ``low`` and ``high`` bytes, labelled in one binary unit (whole bytes)."""
    unit, size = next(((u, s) for u, s in (("MiB", 2**20), ("KiB", 2**10)) if max(high, -low) >= s), ("B", 1))
    raw = max(high - low, 1) / size / 4  # about four steps
    magnitude = 10 ** math.floor(math.log10(raw))
    multiples = (1, 2, 5, 10) if unit == "B" else (1, 2, 2.5, 5, 10)  # a byte is not split: no 2.5 B
    step = next(m * magnitude for m in multiples if m * magnitude >= raw)
    if unit == "B":
        step = max(step, 1)  # nor 0.25 B
    first = math.ceil(low / size / step)
    ticks = []
    for k in range(first, first + 20):
        value = k * step
        if value * size > high:
            break
        ticks.append((round(value * size), f"{value:g} {unit}"))
    return ticks


@dataclass(eq=False)  # told apart by identity: two phases can have one name
class _Phase:
    """A phase of the runs drawn: its name, the most ops a run has in it, its first slot."""

    name: str | None
    slots: int = 0
    first: int = 0


def _slots(reports) -> tuple[list[list[int]], int, list[list[tuple[str, int, int, int]]]]:
    """Each report's op columns as slot numbers, the slots in all, and each report's named phases: (name, first
    slot, slots, shade: 0 or 1, alternating over the named phases of all runs, so one phase has one shade).

    Runs are aligned phase by phase: the phases of all runs are merged in order, and each phase gets as many
    slots as its longest run has ops; a run's last phase is shaded over its own ops only.
    """
    merged: list[_Phase] = []  # every run's phases in order
    placed = []  # each run's phases: (the merged phase, the run's ops in it)
    for report in reports:
        runs = phase_runs(report)
        names = [name for name, _, _ in runs]
        matcher = difflib.SequenceMatcher(a=[phase.name for phase in merged], b=names, autojunk=False)
        new_merged, ours = [], []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            new_merged += merged[i1:i2]
            if tag == "equal":
                ours += merged[i1:i2]
            else:  # the run's own phases go after the merged ones they differ from
                fresh = [_Phase(name) for name in names[j1:j2]]
                new_merged += fresh
                ours += fresh
        merged = new_merged
        placed.append([(phase, count) for phase, (_, _, count) in zip(ours, runs)])
        for phase, count in placed[-1]:
            phase.slots = max(phase.slots, count)
    total = 0
    for phase in merged:
        phase.first = total
        total += phase.slots
    named = [phase for phase in merged if phase.name is not None]
    slots = [[phase.first + j for phase, count in run for j in range(count)] for run in placed]
    # a phase spans the slots of all runs' ops in it, but a run's last phase ends at its own last op
    spans = [
        [
            (p.name, p.first, count if k == len(run) - 1 else p.slots, named.index(p) % 2)
            for k, (p, count) in enumerate(run)
            if p.name
        ]
        for run in placed
    ]
    return slots, total, spans


def _band_points(heights: list, bottoms: list, x_of, scale, apart=None) -> list[list[tuple]]:
    """The outline of each stretch of columns where ``heights`` is not zero (a band can stop and start again);
    the column ``apart`` (a run's end column, when its ops stop before the shared axis does) starts a stretch of
    its own, so no band runs on over ops the run never had."""

    def stretch_of(column: int) -> tuple[bool, bool]:
        return heights[column] != 0, apart is not None and column >= apart

    outlines = []
    for (holds, _), stretch in itertools.groupby(range(len(heights)), key=stretch_of):
        if not holds:
            continue
        stretch = list(stretch)
        top, bottom = [], []
        for column in stretch:
            left, right = x_of(column, column != stretch[-1])
            top_y, bottom_y = scale(bottoms[column] + heights[column]), scale(bottoms[column])
            for edge, y in ((top, top_y), (bottom, bottom_y)):
                if edge and edge[-1][1] == y:  # level with the column before: extend its run, no new corner
                    edge[-1] = (right, y)
                else:
                    edge += [(left, y), (right, y)]
        outlines.append(top + bottom[::-1])
    return outlines


def _per_column(report: MemoryReport) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """The sizes of the allocations each op column made and freed, from one pass over the allocations (a hover
    per column that scanned them all would cost ops × allocations: minutes for a block of 40,000 ops)."""
    made: dict[int, list[int]] = {}
    freed: dict[int, list[int]] = {}
    for allocation in report.allocations:
        if allocation.allocated_at is not None:
            made.setdefault(allocation.allocated_at, []).append(allocation.nbytes)
        if allocation.freed_at is not None:
            freed.setdefault(allocation.freed_at, []).append(allocation.nbytes)
    return made, freed


def _op_hover(report: MemoryReport, column: int, per_column=None) -> str:
    """What a column says on hover: the op, its phase, what it held, made and freed (``per_column``: the sizes
    ``_per_column`` found, computed here when not given)."""
    made, freed = _per_column(report) if per_column is None else per_column
    name, held = report.timeline[column]
    phase = report.phases[column]
    text = f"op {column + 1}: {op_name(name)}" + (f" ({phase})" if phase else "") + f"; holds {format_bytes(held)}"
    if report.most_held[column] > held:
        text += f", {format_bytes(report.most_held[column])} while it ran"
    for verb, sizes in (("made", made.get(column, ())), ("freed", freed.get(column, ()))):
        if sizes:
            text += f"; {verb} {plural(len(sizes), 'allocation')}, {short_bytes(sum(sizes))}"
    return text


def _legend(layers: list[str], phases: bool, width: float, y: float, hovers: dict) -> tuple[list, float, float]:
    """Swatches naming every layer drawn (and the phase shading), wrapped to ``width``, each with the rule that
    puts an allocation in it as hover text; returns the items, the height reached and the names' right end."""
    items, x, right, row_height = [], LEFT, 0.0, 16.0  # no legend when nothing was allocated
    entries = [(layer, f"band-{layer}") for layer in layers] + ([(PHASE_LEGEND, "phase-0")] if phases else [])
    for name, style in entries:
        shown = SHOWN_NAMES.get(name, name)
        name_width = text_width(shown, "sans", FONT)
        needed = 14 + name_width + 14
        if x + needed > width - RIGHT and x > LEFT:
            x, y = LEFT, y + row_height
        items.append(Rect(x, y + 1, 10, 10, style, id=f"legend-swatch-{name}"))
        hovers[f"legend-swatch-{name}"] = LAYER_RULES.get(name, "ops in one phase: a record_function range")
        items.append(Text(x + 14, y + 6, shown, "legend", id=f"legend-{name}", baseline="middle"))
        right = max(right, x + 14 + name_width)
        x += needed
    return items, y + row_height, right


@dataclass
class _Panel:
    """Where one run is drawn: its ops' slots on the shared axes, its top, its ids' prefix."""

    prefix: str
    columns: list  # the slot of each op
    plot_top: float
    column_width: float
    end_left: float  # the end column's left edge
    low: int  # bytes at the bottom and the top of the byte axis, shared by all panels
    top_value: float

    @property
    def frame_right(self) -> float:
        return self.end_left - MARKER_GAP

    @property
    def last_right(self) -> float:
        """The right edge of the run's last op (the frame's left when it has none)."""
        return PLOT_LEFT + (self.columns[-1] + 1) * self.column_width if self.columns else PLOT_LEFT

    @property
    def frame_bottom(self) -> float:
        return self.plot_top + PLOT_HEIGHT

    def scale(self, value: float) -> float:
        """The y of ``value`` bytes."""
        return self.plot_top + (1 - (value - self.low) / (self.top_value - self.low)) * PLOT_HEIGHT

    def x_of(self, column: int, reaching_next: bool) -> tuple[float, float]:
        """Left and right of an op's column (``len(columns)``: the end), to the next op's when ``reaching_next``."""
        n = len(self.columns)
        if column == n:
            return self.end_left, self.end_left + MARKER_WIDTH
        left = PLOT_LEFT + self.columns[column] * self.column_width
        if reaching_next and column + 1 < n:
            return left, PLOT_LEFT + self.columns[column + 1] * self.column_width
        return left, left + self.column_width


def _draw_phases(panel: _Panel, spans, items: list) -> None:
    """Each named phase shaded, with its name above the frame (on a second row where names would touch)."""
    prefix, top, row_ends = panel.prefix, panel.plot_top, [-math.inf, -math.inf]
    for number, (phase, first, count, shade) in enumerate(spans):
        left, width = PLOT_LEFT + first * panel.column_width, count * panel.column_width
        items.append(Rect(left, top, width, PLOT_HEIGHT, f"phase-{shade}", id=f"{prefix}-phase-{number}"))
        items.append(Line(((left, top), (left, panel.frame_bottom)), "grid", id=f"{prefix}-phase-edge-{number}"))
        name_width = text_width(phase, "sans", SMALL_FONT, "bold")
        centre = min(max(left + width / 2, PLOT_LEFT + name_width / 2), panel.end_left - name_width / 2)
        row = 0 if centre - name_width / 2 > row_ends[0] + 4 else 1
        row_ends[row] = centre + name_width / 2
        name_y = top - 3 - row * (SMALL_FONT + 3)
        ident = f"{prefix}-phase-name-{number}"
        items.append(Text(centre, name_y, phase, "phase-name", id=ident, anchor="middle", baseline="bottom"))


def _draw_frame(panel: _Panel, items: list) -> None:
    """The byte axis with its ticks, the frame of the ops, and the start and end columns."""
    prefix, top = panel.prefix, panel.plot_top
    for value, text in _byte_ticks(panel.low, round(panel.top_value)):
        tick_y = panel.scale(value)
        style = "zero" if value == 0 else "grid"
        items.append(Line(((PLOT_LEFT, tick_y), (panel.end_left, tick_y)), style, id=f"{prefix}-tick-{text}"))
        ident = f"{prefix}-tick-label-{text}"
        items.append(Text(LEFT - 4, tick_y, text, "tick", id=ident, anchor="end", baseline="middle"))
    items.append(Rect(LEFT, top, MARKER_WIDTH, PLOT_HEIGHT, "marker", id=f"{prefix}-start"))
    items.append(Rect(panel.end_left, top, MARKER_WIDTH, PLOT_HEIGHT, "marker", id=f"{prefix}-end"))
    width = panel.frame_right - PLOT_LEFT
    items.append(Rect(PLOT_LEFT, top, width, PLOT_HEIGHT, "frame", id=f"{prefix}-frame"))
    if panel.low > 0:  # the byte axis does not start at 0: a break mark on it, and the axis says where it starts
        bottom = panel.frame_bottom
        for k, x in enumerate((LEFT - 2, PLOT_LEFT - 2)):
            points = ((x - 3, bottom - 6), (x + 3, bottom - 10))
            items.append(Line(points, "zero", id=f"{prefix}-axis-break-{k}"))
    label_y = panel.frame_bottom + 3
    for name, x, anchor in (("before", LEFT + MARKER_WIDTH, "end"), ("end", panel.end_left, "start")):
        ident = f"{prefix}-{'start' if name == 'before' else name}-label"
        items.append(Text(x, label_y, name, "tick", id=ident, anchor=anchor, baseline="top"))


def _draw_bands(panel: _Panel, report: MemoryReport, bands, items: list, hovers: dict) -> None:
    """The bands stacked above zero, those from before the block below it, or a note when there are none."""
    columns = len(panel.columns) + 1
    apart = None if panel.last_right > panel.frame_right - 0.01 else columns - 1  # ops stop short: end apart
    for name, drawn in zip(("band", "before"), bands):
        bottoms = [0] * columns
        for number, band in enumerate(drawn):
            heights = band.heights
            if band.layer == HELD_BEFORE and panel.low > 0:  # the axis is broken: the band starts at its bottom
                bottoms = [panel.low] * columns
                heights = [max(0, height - panel.low) for height in heights]
            for k, outline in enumerate(_band_points(heights, bottoms, panel.x_of, panel.scale, apart)):
                ident = f"{panel.prefix}-{name}-{number}-{k}"
                items.append(Polygon(tuple(outline), f"band-{band.layer}", id=ident))
                hovers[ident] = band.label
            bottoms = [bottom + height for bottom, height in zip(bottoms, heights)]
    if not [band for drawn in bands for band in drawn if band.layer != HELD_BEFORE]:
        note = "nothing allocated" if not report.peak else "nothing held when an op returned"
        centre = (PLOT_LEFT + panel.frame_right) / 2
        ident = f"{panel.prefix}-empty"
        note_y = panel.scale(report.held_before or 0) - 6
        items.append(Text(centre, note_y, note, "text", id=ident, anchor="middle", baseline="bottom"))


def _draw_baseline_label(panel: _Panel, report: MemoryReport, above: list, items: list) -> None:
    """What was held before the block, named in its band (or just above it when the band is too thin)."""
    if not above or above[0].layer != HELD_BEFORE:
        return
    text = f"held before: {short_bytes(report.held_before)}"
    start_top = panel.scale(report.held_before)  # the start column: what the block found
    height = panel.frame_bottom - start_top
    items.append(Rect(LEFT, start_top, MARKER_WIDTH, height, f"band-{HELD_BEFORE}", id=f"{panel.prefix}-start-held"))
    base_top = panel.scale(above[0].heights[0])
    inside = panel.frame_bottom - base_top >= SMALL_FONT + 4
    y = (base_top + panel.frame_bottom) / 2 if inside else base_top - 2
    baseline = "middle" if inside else "bottom"
    items.append(Text(PLOT_LEFT + 4, y, text, "baseline-label", id=f"{panel.prefix}-held-before", baseline=baseline))


def _draw_peak(panel: _Panel, report: MemoryReport, items: list) -> None:
    """The peak over the column that reached it, its label inside the frame; on CUDA, where the allocator's peak
    cannot be read op by op, across the ops when no column reached it."""
    if not report.most_held or report.peak <= 0:
        return
    column = report.most_held.index(max(report.most_held))
    left, right = panel.x_of(column, False)
    base = report.held_before or 0
    label = f"peak {'+' if base else ''}{short_bytes(report.peak)}"
    if max(report.most_held) < report.peak:
        left, right = PLOT_LEFT, panel.frame_right
        label += " inside an op"
    else:  # the op at the peak, by name: the one op name the picture prints
        label += f" at {op_name(report.timeline[column][0])}"
    peak_y = panel.scale(base + report.peak)
    items.append(Line(((left - 2, peak_y), (right + 2, peak_y)), "peak", id=f"{panel.prefix}-peak"))
    anchor, label_x = "start", max(left, PLOT_LEFT + 2)
    if label_x + text_width(label, "sans", SMALL_FONT, "bold") > panel.frame_right - 2:
        anchor, label_x = "end", min(right, panel.frame_right - 2)
    ident = f"{panel.prefix}-peak-label"
    items.append(Text(label_x, peak_y - 2, label, "peak-label", id=ident, anchor=anchor, baseline="bottom"))


def _op_step(count: int) -> int:
    """The round step (1, 2 or 5 times a power of ten) between the op numbers marked on an axis of ``count`` ops."""
    return next(m * 10**k for k in range(8) for m in (1, 2, 5) if m * 10**k * 6 >= count)


def _op_ticks(count: int, step: int | None = None) -> list[int]:
    """A few op numbers (1-based) to mark under the ops' axis: the first, multiples of ``step`` (the round step
    for ``count`` ops when None; panels on one axis share the longest run's), the last."""
    if count <= 0:
        return []
    step = _op_step(count) if step is None else step
    return sorted({1, count, *range(step, count, step)})


def _draw_ops(panel: _Panel, report: MemoryReport, show_ops: bool, items: list, hovers, step=None) -> None:
    """A hover area per op column with its text in ``hovers`` (the op's name is there, not under the axis), and
    a few op numbers under the axis, every ``step`` (see ``_op_ticks``), the run's last op always among them (a
    round number too close to it gives way); with ``hovers`` None no hover areas (a matplotlib figure shows none:
    40,000 would cost seconds)."""
    per_column = _per_column(report) if hovers is not None else None
    if hovers is not None:
        for column in range(len(report.timeline)):
            left, right = panel.x_of(column, False)
            ident = f"{panel.prefix}-op-{column}"
            items.append(Rect(left, panel.plot_top, right - left, PLOT_HEIGHT, "hover", id=ident))
            hovers[ident] = _op_hover(report, column, per_column)
    if not show_ops:
        return
    placed_right = LEFT + MARKER_WIDTH + 2  # after "before"
    end_label = panel.end_left - 4
    count = len(report.timeline)

    def extent(number: int) -> tuple[str, float, float, float, float]:
        """The number's text, its op's centre (its tick), the text's centre, left and right."""
        left, right = panel.x_of(number - 1, False)
        text = f"op {number}" if number == 1 else str(number)
        half = text_width(text, "sans", SMALL_FONT) / 2
        centre = (left + right) / 2
        # the last op's number moves left (still over its tick) where it would run into "end"
        shift = max(0.0, min(centre + half - end_label, half)) if number == count else 0.0
        return text, centre, centre - shift, centre - shift - half, centre - shift + half

    last_left = extent(count)[3] if count else math.inf  # the last op's number is kept: the others make room
    for number in _op_ticks(count, step):
        text, tick, middle, start, stop = extent(number)
        room = end_label if number == count else last_left - 4
        if start < placed_right + 4 or stop > room:
            continue
        placed_right = stop
        ident = f"{panel.prefix}-op-number-{number}"
        items.append(Line(((tick, panel.frame_bottom), (tick, panel.frame_bottom + 3)), "zero", id=ident + "-tick"))
        items.append(Text(middle, panel.frame_bottom + 3, text, "tick", id=ident, anchor="middle", baseline="top"))


def _compact_plan(reports: list[MemoryReport], labels: list[str]) -> Scene:
    """Blocks of a few ops: per run, its headline and two bars on one byte scale, what was held at the peak and
    what is held at the end, each the run's bands at that column side by side (what was held before first)."""
    bands = [_bands(report)[0] for report in reports]
    rows = []  # per run: [(row name, [(layer, bytes)], note)]
    for report, above in zip(reports, bands):
        at_end = [(band.layer, band.heights[-1]) for band in above]
        if report.most_held and max(report.most_held) == report.peak and report.peak > 0:
            column = report.most_held.index(report.peak)
            at_peak = [(band.layer, band.heights[column]) for band in above]
            peak_note = f"peak +{short_bytes(report.peak)} at {op_name(report.timeline[column][0])}"
        else:  # no op, nothing allocated, or a CUDA peak inside an op: what was held before, then the peak
            at_peak = [(HELD_BEFORE, report.held_before), (INSIDE, report.peak)]
            peak_note = f"peak +{short_bytes(report.peak)}" + (" inside an op" if report.peak else "")
        end_note = f"end: +{short_bytes(report.allocated)}" if report.allocated >= 0 else "end"
        rows.append([("peak", at_peak, peak_note), ("end", at_end, end_note)])
    high = max([1] + [sum(size for _, size in pieces) for run in rows for _, pieces, _ in run])
    scale = COMPACT_BAR / high
    headers = [_headline(report, label) for report, label in zip(reports, labels)]
    layers = [
        layer
        for layer in LAYER_NAMES
        if any(size * scale >= 1 for run in rows for _, p, _ in run for lay, size in p if lay == layer)
    ]  # only what is at least a point wide somewhere: a swatch for 12 invisible bytes misleads
    bar_left = LEFT
    notes_right = max(
        bar_left + sum(size for _, size in pieces) * scale + 6 + text_width(note, "sans", SMALL_FONT)
        for run in rows
        for _, pieces, note in run
    )
    width = max(notes_right, LEFT + max(text_width(h, "sans", FONT + 1, "bold") for h in headers), 360) + RIGHT
    items, y, legend_right = _legend(layers, False, width, TOP, {})
    width = max(width, legend_right + RIGHT)
    for index, (header, run) in enumerate(zip(headers, rows)):
        prefix = f"run{index}"
        items.append(Text(LEFT, y + 8, header, "title", id=f"{prefix}-title"))
        y += 8 + FONT + 6
        for row, pieces, note in run:
            x = bar_left
            items.append(
                Text(
                    bar_left - 6,
                    y + COMPACT_HEIGHT / 2,
                    row,
                    "tick",
                    id=f"{prefix}-{row}-label",
                    anchor="end",
                    baseline="middle",
                )
            )
            for number, (layer, size) in enumerate(pieces):
                if size <= 0:
                    continue
                ident = f"{prefix}-{row}-{number}"
                items.append(Rect(x, y, size * scale, COMPACT_HEIGHT, f"band-{layer}", id=ident))
                text = f"held before: {short_bytes(size)}"
                if layer == HELD_BEFORE and row == "peak" and size * scale > text_width(text, "sans", SMALL_FONT) + 8:
                    middle = y + COMPACT_HEIGHT / 2
                    items.append(Text(x + 4, middle, text, "tick", id=f"{prefix}-held-before", baseline="middle"))
                x += size * scale
            items.append(
                Text(
                    x + 6,
                    y + COMPACT_HEIGHT / 2,
                    note,
                    "peak-label" if row == "peak" else "tick",
                    id=f"{prefix}-{row}-note",
                    baseline="middle",
                )
            )
            y += COMPACT_HEIGHT + 4
        y += 6
    return Scene(width, y + 4, tuple(items), STYLES, memory_timeline_summary(reports, labels))


def _plan(reports, labels, show_ops, ax=None, op_hovers: bool = True, compact=None) -> tuple[Scene, dict]:
    """Once the arguments are checked (``ax`` only for its type): the scene, and the hover text of each op column
    (unless ``op_hovers`` is False), band and legend swatch by id (the SVG's ``<title>``s)."""
    reports, labels = _check(reports, labels, show_ops, ax)
    if compact is not None:
        require_bool(compact, "compact")
    if compact is None:
        compact = all(len(r.timeline) <= COMPACT_OPS for r in reports)
    if compact and all(r.held_before is not None for r in reports):
        return _compact_plan(reports, labels), {}
    slots, total_slots, spans = _slots(reports)
    step = _op_step(max(len(r.timeline) for r in reports))  # one step of op numbers for every panel on the axis
    shown_slots = max(total_slots, 1)
    column_width = max(min(MAX_COLUMN_WIDTH, PLOT_WIDTH / shown_slots), MIN_PLOT_WIDTH / shown_slots)
    end_left = PLOT_LEFT + shown_slots * column_width + MARKER_GAP
    headers = [_headline(report, label) for report, label in zip(reports, labels)]
    width = max(end_left + MARKER_WIDTH, LEFT + max(text_width(h, "sans", FONT + 1, "bold") for h in headers), 360)
    bands = [_bands(report) for report in reports]
    high = max([1] + [sum(column) for above, _ in bands for column in zip(*(band.heights for band in above))])
    low = min([0] + [sum(column) for _, below in bands for column in zip(*(band.heights for band in below))])
    high = max([high] + [(r.held_before or 0) + r.peak for r in reports])  # a CUDA peak no column reached
    # What was held before can dwarf what the block did: the byte axis is then broken, starting a quarter of the
    # block's range under the lowest the held-before band gets, so the block's bands fill most of the plot.
    bases = [min(above[0].heights) for above, _ in bands if above and above[0].layer == HELD_BEFORE]
    if low == 0 and len(bases) == len(reports) and min(bases) > high - min(bases) > 0:
        low = min(bases) - (high - min(bases)) / 4
    top_value = high + (high - low) * (HEADROOM - 1)
    names_height = SMALL_FONT + 10  # one row of op numbers, "before" and "end"
    points_per_byte = PLOT_HEIGHT / (top_value - low)
    # in the legend only what is at least a point tall somewhere (12 bytes of scratch under 381 MiB are not)
    drawn_layers = {
        band.layer
        for above, below in bands
        for band in above + below
        if max(abs(height) for height in band.heights) * points_per_byte >= 1
    }
    hovers: dict[str, str] = {}
    layers = [layer for layer in LAYER_NAMES if layer in drawn_layers]
    items, y, legend_right = _legend(layers, any(spans), width + RIGHT, TOP, hovers)
    width = max(width, legend_right) + RIGHT
    for index, report in enumerate(reports):
        prefix = f"run{index}"
        items.append(Text(LEFT, y + 8, headers[index], "title", id=f"{prefix}-title"))
        plot_top = y + 8 + FONT + 6 + 2 * (SMALL_FONT + 3)  # the title, then two rows for phase names
        panel = _Panel(prefix, slots[index], plot_top, column_width, end_left, low, top_value)
        _draw_phases(panel, spans[index], items)
        _draw_frame(panel, items)
        _draw_bands(panel, report, bands[index], items, hovers)
        _draw_peak(panel, report, items)
        _draw_baseline_label(panel, report, bands[index][0], items)
        _draw_ops(panel, report, show_ops, items, hovers if op_hovers else None, step)
        y = panel.frame_bottom + names_height + 6
    return Scene(width, y + 4, tuple(items), STYLES, memory_timeline_summary(reports, labels)), hovers


def memory_scene(reports, labels=None, show_ops: bool = True, compact=None) -> Scene:
    """The memory timeline of one or more measured blocks as a ``Scene`` (see ``draw_memory_timeline``)."""
    return _plan(reports, labels, show_ops, compact=compact)[0]


_IDENTIFIED = re.compile(r'<(rect|polygon) id="([^"]+)"([^>]*)/>')


def memory_svg(reports, labels=None, show_ops: bool = True, compact=None) -> str:
    """The memory timeline as SVG, each op column and band carrying its hover text as a ``<title>``."""
    scene, hovers = _plan(reports, labels, show_ops, compact=compact)

    def with_title(match) -> str:
        tag, ident, rest = match.groups()
        hover = hovers.get(ident)
        if hover is None:
            return match.group(0)
        return f'<{tag} id="{ident}"{rest}><title>{escape(hover)}</title></{tag}>'

    return _IDENTIFIED.sub(with_title, svg(scene))


def _figure(scene: Scene, ax):
    """The scene drawn, with its summary (a notebook's text of the figure) and itself attached to the figure."""
    fig = with_summary(render(scene, ax=ax), scene.title)
    fig.scene = scene
    return fig


def draw_memory_timeline(reports, labels=None, ax=None, show_ops: bool = True, compact=None):
    """Each allocation of one or more measured blocks as a band over their ops, the phases shaded and named.

    One panel per report, on one byte scale; runs with the same phases are aligned phase by phase. A column is
    an op: its bands are what was held when it returned (a band ends at the op that freed it), hatched on top
    what was held only while it ran; the narrow columns are the block's start and end. More than 60 allocations
    in a run are drawn as one band per kind (``tl.MemoryReport.allocations`` has them all). The bands stand on
    what was held before the block (``MemoryReport.held_before``), so runs compare in absolute bytes; the op at
    the peak is named. Blocks of at most three ops are drawn compact: two bars a run, what was held at the peak
    and at the end, on one byte scale.

    Args:
        reports: a ``MemoryReport`` from ``measure_memory`` or a list of them (e.g. out-of-place and in-place).
        labels: one label per report.
        ax: a matplotlib Axes to draw on; a new figure when None.
        compact: two bars a run instead of the chart (True), the chart (False), or two bars when every run has
            at most three ops (None, the default).
        show_ops: number a few ops under the axis (the op at the peak is named by its label; in ``memory_svg``
            every op column names its op on hover).

    Returns:
        The matplotlib Figure; ``fig.summary`` holds the one-line text summary (a notebook shows it as the figure's
        text), ``fig.scene`` the ``Scene``.

    Raises:
        TypeError: ``reports`` is not a MemoryReport or a list of them, ``ax`` is not a matplotlib Axes,
            ``show_ops`` or ``compact`` is not a bool.
        ValueError: a report still measuring, or ``labels`` not one per report.
    """
    return _figure(_plan(reports, labels, show_ops, ax, op_hovers=False, compact=compact)[0], ax)


# ------------------------------------------------------------------ CUDA: allocated vs reserved vs the driver
CUDA_STYLES = {
    "cuda-tensors": Style(fill=STORAGE, edge=INK, width=0.6, zorder=2),  # the tensors' bytes: storage grey
    "cuda-rounding": STYLES[f"band-{ROUNDING}"],
    "cuda-cached": Style(fill=PAPER, edge=MUTED, width=0.6, zorder=2),
    "cuda-driver": Style(fill=FAINT, edge=MUTED, width=0.6, zorder=2),
    "cuda-unknown": Style(edge=MUTED, width=0.8, dash=(3, 2), zorder=2),
    "title": STYLES["title"],
    "text": STYLES["text"],
    "row": Style(family="mono", size=FONT, zorder=5),
    "note": Style(size=SMALL_FONT, color="#333333", zorder=5),
}
_CUDA_ROWS = {
    "requested": "the tensors' bytes",
    "allocated": "memory_allocated()",
    "reserved": "memory_reserved()",
    "driver": "the driver (nvidia-smi)",
}


_NO_CUDA = (
    "on a machine without CUDA, torch.cuda's counters answer 0 (measure on a GPU, or compute the figures from the "
    "allocator's rules)"
)
#: Why a measured growth can be below the row under it, besides a machine without CUDA.
_BELOW_WHY = {
    "allocated": "memory_allocated() grows by at least the tensors' bytes, unless something was freed while measuring",
    # c10/cuda/CUDACachingAllocator.cpp: a request is served from a cached free block when one fits; only when
    # none does is a new segment made (cudaMalloc), or an expandable segment mapped further, and only that grows
    # memory_reserved().
    "reserved": "memory_reserved() grows only when the allocator reserves more from the driver (a new segment, "
    "or more of an expandable one), and a warm cache serves "
    "new blocks from segments it already holds (measure after torch.cuda.empty_cache(), which gives back the "
    "segments with nothing allocated in them)",
}


def _check_cuda_numbers(requested, allocated, reserved, driver, source) -> None:
    require_int(requested, "requested", minimum=1)
    for name, value, below in (("allocated", allocated, requested), ("reserved", reserved, allocated)):
        require_int(value, name, minimum=0)
        if value < below:
            raise ValueError(
                f"{name} ({value:,}) is less than the row under it ({below:,}): {_BELOW_WHY[name]}; {_NO_CUDA}"
            )
    if driver is not None and require_int(driver, "driver", minimum=0) < reserved:
        raise ValueError(f"driver ({driver:,}) is less than reserved ({reserved:,}): the driver sees all of it")
    if not isinstance(source, str) or not source.strip():
        raise TypeError(f"source must say where the figures come from (a non-empty str), got {describe(source)}")


def cuda_memory_summary(requested, allocated, reserved, driver=None, *, source: str) -> str:
    """One line: where the figures come from, then each of the four views and what it adds."""
    _check_cuda_numbers(requested, allocated, reserved, driver, source)
    driver_text = (
        "not known here (the CUDA context and other processes are not measured)"
        if driver is None
        else f"{format_bytes(driver)} (+{format_bytes(driver - reserved)}: more the driver gave out meanwhile: a CUDA "
        "context, libraries' workspaces, other processes)"
    )
    return (
        f"{source}: the tensors {format_bytes(requested)}; allocated {format_bytes(allocated)} "
        f"(+{format_bytes(allocated - requested)}: the allocator's rounding); reserved {format_bytes(reserved)} "
        f"(+{format_bytes(reserved - allocated)}: cached, free for the next tensor); the driver {driver_text}"
    )


def cuda_memory_scene(requested, allocated, reserved, driver=None, *, source: str) -> Scene:
    """The four views of CUDA memory as bars on one byte scale (see ``draw_cuda_memory``)."""
    summary = cuda_memory_summary(requested, allocated, reserved, driver, source=source)
    label_width = max(text_width(label, "mono", FONT) for label in _CUDA_ROWS.values()) + 12
    bar_left, bar_width, row_height = LEFT / 2 + label_width, 300.0, 20.0
    scale = bar_width / driver if driver is not None else bar_width / (reserved * 1.25)
    rounding, cached = allocated - requested, reserved - allocated
    labels = dict(_CUDA_ROWS)
    rows = [  # (row, its bar's pieces: (id, style, width), the note after it)
        ("requested", [("tensors", "cuda-tensors", requested * scale)], format_bytes(requested)),
        (
            "allocated",
            [("tensors", "cuda-tensors", requested * scale), ("rounding", "cuda-rounding", rounding * scale)],
            f"{format_bytes(allocated)}: + {format_bytes(rounding)} rounding",
        ),
        (
            "reserved",
            [("tensors", "cuda-tensors", allocated * scale), ("cached, free", "cuda-cached", cached * scale)],
            f"{format_bytes(reserved)}: + {format_bytes(cached)} cached, free",
        ),
    ]
    rows = [(row, [piece for piece in pieces if piece[2] > 0], note) for row, pieces, note in rows]
    if 0 < rounding * 20 < allocated:  # too thin to see: the block's end, magnified, under the allocated row
        window = min(allocated, max(2 * MiB, 2 * rounding))
        zoom = bar_width / window
        labels["zoom"] = f"its last {short_bytes(window)}"
        pieces = [
            ("tensors", "cuda-tensors", (window - rounding) * zoom),
            ("rounding", "cuda-rounding", rounding * zoom),
        ]
        rows.insert(2, ("zoom", pieces, f"the tensor ends {format_bytes(rounding)} before the block does"))
    if driver is None:  # not measured: drawn as unknown, never as zero
        pieces = [("tensors", "cuda-tensors", reserved * scale), ("unknown", "cuda-unknown", bar_width * 0.2)]
        note = f"{format_bytes(reserved)} + the CUDA context and other processes: not measured here"
    else:
        pieces = [("tensors", "cuda-tensors", reserved * scale), ("rest", "cuda-driver", (driver - reserved) * scale)]
        note = f"{format_bytes(driver)}: + {format_bytes(driver - reserved)} more the driver gave out"
    rows.append(("driver", pieces, note))
    items = [Text(LEFT / 2, TOP, source, "title", id="cuda-source")]
    y, notes_right = TOP + FONT + 14, 0.0
    for row, pieces, note in rows:
        label_x, label_style = (LEFT / 2 + 12, "note") if row == "zoom" else (LEFT / 2, "row")
        middle = y + row_height / 2
        items.append(Text(label_x, middle, labels[row], label_style, id=f"cuda-{row}-label", baseline="middle"))
        x = bar_left
        for name, style, width in pieces:
            items.append(Rect(x, y, width, row_height, style, id=f"cuda-{row}-{name}"))
            x += width
        items.append(Text(x + 6, middle, note, "note", id=f"cuda-{row}-note", baseline="middle"))
        notes_right = max(notes_right, x + 6 + text_width(note, "sans", SMALL_FONT))
        y += row_height + 8
    return Scene(notes_right + RIGHT, y + 4, tuple(items), CUDA_STYLES, summary)


def draw_cuda_memory(requested=None, allocated=None, reserved=None, driver=None, *, source: str | None = None, ax=None):
    """The CUDA caching allocator's own picture: a segment (what ``memory_reserved()`` counts), the block in it
    (what ``memory_allocated()`` counts) and the tensor in the block, its rounding as a hatched tail, magnified
    when it is too thin to see (see ``draw_allocator_snapshot``).

    Give it an allocator snapshot (``torch.cuda.memory._snapshot()`` on your GPU, or the trimmed form
    ``notebooks/data/h100_allocator_snapshots.json`` stores) as its first argument, or, as before issue 22, the
    figures of one allocation: then one segment of ``reserved`` bytes is drawn holding one block of ``allocated``
    bytes, a tensor of ``requested`` bytes in it, and the rest of the segment as a free block; the driver's figure
    is in the summary. A figure below the one it contains is refused, its error naming the causes:
    ``torch.cuda``'s counters answer 0 on a machine without CUDA, and on a GPU with a warm cache new blocks come
    from segments already reserved, so ``reserved`` grows by less than ``allocated`` (measure growths after
    ``torch.cuda.empty_cache()``).

    Args:
        requested: an allocator snapshot (dict), or the tensors' bytes (positive int).
        allocated: what ``torch.cuda.memory_allocated()`` grew by (with figures).
        reserved: what ``torch.cuda.memory_reserved()`` grew by (with figures).
        driver: what the device's used memory grew by (``total - free`` of ``torch.cuda.mem_get_info()``), or
            None when not measured (with figures).
        source: where the figures come from, e.g. ``"measured on cuda:0"`` (required).
        ax: a matplotlib Axes to draw on; a new figure when None.

    Returns:
        The matplotlib Figure; ``fig.summary`` holds the one-line text summary (a notebook shows it as the figure's
        text), ``fig.scene`` the ``Scene``.

    Raises:
        TypeError: a figure that is not an int, a snapshot with other figures, ``source`` not a non-empty str,
            ``ax`` not a matplotlib Axes.
        ValueError: a figure below the one it contains (``allocated < requested``, ``reserved < allocated``,
            ``driver < reserved``), or ``requested`` not positive.
    """
    from .allocator_picture import allocator_scene

    require_axes(ax, "ax")
    if isinstance(requested, (dict, list, tuple)):
        if any(figure is not None for figure in (allocated, reserved, driver)):
            raise TypeError("draw_cuda_memory takes a snapshot alone: allocated, reserved and driver come from it")
        return _figure(allocator_scene(requested, source=source), ax)
    summary = cuda_memory_summary(requested, allocated, reserved, driver, source=source)
    blocks = [{"size": allocated, "requested_size": requested, "state": "active_allocated"}]
    if reserved > allocated:
        blocks.append({"size": reserved - allocated, "requested_size": 0, "state": "inactive"})
    snapshot = {"segments": [{"total_size": reserved, "segment_type": "large", "blocks": blocks}]}
    scene = allocator_scene(snapshot, source=source)
    return _figure(Scene(scene.width, scene.height, scene.items, scene.styles, summary), ax)
