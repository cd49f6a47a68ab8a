"""Pictures of where tensors' elements live: a strip of storage cells, and one row per tensor below it.

``layout_picture`` plans a picture as data, from the model layer only (``layout``, ``same_storage``,
``compare_reads``, ``storage_values_text``): the cells shown, the elements reading each, one step along each
dimension and a one-line summary. ``layout_scene`` places it as a ``Scene``, which ``draw_layout`` renders with
matplotlib and ``picture_svg`` as SVG. matplotlib is imported only when a picture is drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..common.checks import describe, require_bool, require_int, require_tensor
from ..common.text import dtype_name, plural, tuple_text
from ..facts.storage import Layout, compare_reads, layout, same_storage, shares_memory, storage_values_text
from .render_mpl import render, require_axes
from .render_svg import svg
from .scene import Arrow, Line, Rect, Scene, Style, Text, text_width

MAX_LISTED = 16_384  # elements (row-major) ``layout`` lists per tensor: cells read only by others are drawn "?"
TAIL_LISTED = 1_024  # a longer tensor's last elements looked up too, so its region's end is exact
MIN_CELLS = 8  # the fewest cells max_cells may ask for: a start, an end and an elision
MAX_CELLS = 512  # larger max_cells are capped here (the summary says so): each cell costs time and 0.34 inch
GAP_UNITS = 4  # width of a "… N cells not shown …" marker, in cells
MAX_WINDOWS = 4  # at most this many windows onto one big storage (around the tensors' starts and ends)


@dataclass(frozen=True)
class PictureCell:
    """One drawn cell: a storage cell (``row == "storage"``, ``state == "value"``) or one slot of a tensor's row.

    ``index`` counts in the row's own dtype; ``byte_start``/``nbytes`` place it in bytes. ``state`` is ``"read"``,
    ``"unread"`` or ``"unknown"`` (no listed element reads it, unlisted ones may); ``positions`` are the row-major
    positions of the listed elements reading it, and ``count_exact`` is False when unlisted ones may read it too.
    """

    strip: int
    row: str
    index: int
    byte_start: int
    nbytes: int
    state: str
    positions: tuple[int, ...]
    count_exact: bool
    text: str

    @property
    def repeated(self) -> bool:
        """Whether more than one element reads the cell (or may: the count is not exact)."""
        return self.state == "read" and (len(self.positions) > 1 or not self.count_exact)


@dataclass(frozen=True)
class PictureStep:
    """One step along dimension ``dim`` of a row: from element 0's cell to the next element's cell."""

    strip: int
    row: str
    dim: int
    stride: int
    from_index: int
    to_index: int
    shown: bool  # both cells are in the drawn windows


@dataclass(frozen=True)
class PictureRow:
    """One tensor (or ``Layout``) in a picture, with the label drawn above it."""

    strip: int
    name: str
    label: str
    layout: Layout


@dataclass(frozen=True)
class PictureStrip:
    """One storage with the rows over it; ``pieces`` are its drawn ``("cells", ...)`` and elided ``("gap", ...)``
    stretches of bytes ``(kind, start, stop)``, left to right; ``unit_bytes`` is the narrowest drawn cell."""

    index: int
    itemsize: int
    unit_bytes: int
    pieces: tuple[tuple[str, int, int], ...]
    rows: tuple[str, ...]
    description: str

    def hidden_cells(self) -> int:
        """How many storage cells the gap markers stand for."""
        return sum((stop - start) // self.itemsize for kind, start, stop in self.pieces if kind == "gap")


@dataclass(frozen=True)
class LayoutPicture:
    """Everything a layout picture shows, as data (see ``layout_picture``)."""

    strips: tuple[PictureStrip, ...]
    rows: tuple[PictureRow, ...]
    cells: tuple[PictureCell, ...]
    steps: tuple[PictureStep, ...]
    summary: str
    notes: tuple[str, ...]  # the legend: what numbers, counts, ? and dotted borders mean here

    def row_cells(self, name: str, state: str | None = None) -> tuple[PictureCell, ...]:
        """The cells of one row (``"storage"`` rows of every strip share that name), optionally by state."""
        return tuple(c for c in self.cells if c.row == name and (state is None or c.state == state))

    def read_map(self, name: str) -> dict[int, tuple[int, ...]]:
        """``{storage index: row-major positions}`` for every drawn cell that row ``name`` reads."""
        return {c.index: c.positions for c in self.row_cells(name, "read")}


def _row_names(names, count: int) -> list[str]:
    """The rows' display names: ``names`` checked, or ``t0``, ``t1``, ... ."""
    if names is None:
        return [f"t{i}" for i in range(count)]
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise TypeError(f"names must be a list of str (one per tensor), got {describe(names)}")
    if len(names) != count:
        raise ValueError(f"names must have one entry per tensor: {count} tensors, {len(names)} names")
    for i, name in enumerate(names):
        if not isinstance(name, str):
            raise TypeError(f"names[{i}] must be a str, got {describe(name)}")
        if not name or name == "storage":
            raise ValueError(f"names[{i}] must be a non-empty name other than 'storage', got {name!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"names must be distinct, got {list(names)}")
    return list(names)


@dataclass
class _Member:
    """One row to draw: its name, its tensor (None for a ``Layout``) and its layout."""

    name: str
    tensor: torch.Tensor | None
    layout: Layout


def _member(t, name: str, i: int) -> _Member:
    """``tensors[i]`` checked, as a row named ``name``."""
    if isinstance(t, Layout):
        return _Member(name, None, t)
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"tensors[{i}] must be a torch.Tensor or a Layout, got {describe(t)}")
    tensor = require_tensor(t, f"tensors[{i}]")
    if tensor.is_nested:
        raise ValueError(f"tensors[{i}] is a nested tensor: its parts have no single storage to draw")
    return _Member(name, tensor, layout(tensor, max_elements=MAX_LISTED))


def _same_strip(anchor: _Member, member: _Member) -> bool:
    """Tensors share a strip by ``same_storage``; a Layout, which records no storage, by storage size."""
    if member.tensor is None:
        return anchor.layout.storage_nbytes == member.layout.storage_nbytes
    return anchor.tensor is not None and same_storage(anchor.tensor, member.tensor)


def _group(tensors, names) -> list[list[_Member]]:
    """The tensors checked and grouped per storage, each group in the order given (the summary names the rule)."""
    if not tensors:
        raise ValueError("tensors is empty: give at least one tensor, e.g. draw_layout(x, x.t())")
    members = [_member(t, name, i) for i, (t, name) in enumerate(zip(tensors, names))]
    strips: list[list[_Member]] = []
    for member in members:
        home = next((strip for strip in strips if _same_strip(strip[0], member)), [])
        if not home:
            strips.append(home)
        home.append(member)
    return strips


def _align_down(value: int, step: int) -> int:
    """``value`` rounded down to a multiple of ``step``."""
    return value // step * step


def _align_up(value: int, step: int) -> int:
    """``value`` rounded up to a multiple of ``step``."""
    return -(-value // step) * step


def _pieces(members: list[_Member], total: int, budget: int, align: int, unit: int) -> tuple[tuple[str, int, int], ...]:
    """A storage's bytes as drawn ``cells`` windows (all of it if it fits, else around the rows' reach) and ``gap``s."""
    extents = [m.layout.byte_range for m in members if m.layout.numel]
    low, high = min((e[0] for e in extents), default=0), max((e[1] for e in extents), default=0)
    if total <= budget or not extents:
        spans = [(0, min(total, budget))]
    elif high - low <= budget:
        start = _align_down(low - (budget - (high - low)) // 2, align)
        start = max(0, min(start, _align_down(total - budget, align)))
        spans = [(start, min(start + budget, total))]
    else:
        # Too wide: show where the reads start and end, the overall ones first, then each row's own.
        anchors = [("start", low), ("end", high)]
        for start, stop in extents:
            anchors += [("start", start), ("end", stop)]
        unique = list(dict.fromkeys(anchors))
        # As many windows as each still show 4 cells (at least one window).
        count = next((n for n in range(min(len(unique), MAX_WINDOWS), 1, -1) if budget // n >= 4 * align), 1)
        width = max(_align_down(budget // count, align), align)
        context = min(_align_down(width // 4, align), 2 * align)
        spans = []
        for kind, at in unique[:count]:
            begin = _align_down(at, align) - context if kind == "start" else _align_up(at, align) + context - width
            begin = max(0, min(begin, _align_down(total - width, align)))
            spans.append((begin, min(begin + width, total)))
    pieces: list[tuple[str, int, int]] = []
    cursor = 0  # the end of the last window
    for begin, end in sorted(spans):
        if pieces and begin <= cursor + GAP_UNITS * unit:
            # Joining windows with a small gap shows those cells instead of a marker as wide as they are.
            begin = pieces.pop()[1]
        elif begin > cursor:
            pieces.append(("gap", cursor, begin))
        cursor = max(cursor, end)
        pieces.append(("cells", begin, cursor))
    if cursor < total:
        pieces.append(("gap", cursor, total))
    return tuple(pieces)


def _slots(pieces, itemsize: int) -> list[range]:
    """Per drawn window, the storage indices (in elements of ``itemsize`` bytes) whose bytes lie wholly in it."""
    return [
        range(_align_up(start, itemsize) // itemsize, stop // itemsize)
        for kind, start, stop in pieces
        if kind == "cells"
    ]


def _row_plan(strip_no: int, member: _Member, pieces) -> tuple[list[PictureCell], list[PictureStep]]:
    """A row's drawn cells, and one step per dimension longer than 1 from element 0's cell."""
    lay = member.layout
    slots = [index for window in _slots(pieces, lay.itemsize) for index in window]
    found = lay.positions_at(slots, tail=TAIL_LISTED)
    span = lay.index_range
    # With every element listed, counts are exact; if the model says no two elements share a cell,
    # a listed read is exact too. Otherwise unlisted elements may also read a cell.
    complete = not lay.indices_truncated
    exact = complete or lay.has_internal_overlap is False
    size = lay.itemsize
    cells = []
    for index in slots:
        positions = tuple(found.get(index, ()))
        if positions:
            state, count_exact = "read", exact
            text = str(positions[0]) if exact and len(positions) == 1 else f"×{len(positions)}" + ("" if exact else "+")
        elif not complete and span is not None and span[0] <= index <= span[1]:
            state, text, count_exact = "unknown", "?", False
        else:
            state, text, count_exact = "unread", "", True
        cells.append(PictureCell(strip_no, member.name, index, index * size, size, state, positions, count_exact, text))
    shown = set(slots)
    steps = [
        PictureStep(strip_no, member.name, dim, lay.stride[dim], origin, target, origin in shown and target in shown)
        for dim, origin, target in lay.step_targets()
    ]
    return cells, steps


def _repeat_text(lay: Layout) -> str:
    """How often a fully listed layout reads its cells, e.g. 'each 3 times (stride 0 repeats them)'."""
    low, high = lay.read_counts()
    often = f"each {high} times" if low == high else f"{low} to {high} times each"
    zero = any(step == 0 and size > 1 for size, step in zip(lay.shape, lay.stride))
    return often + (" (stride 0 repeats them)" if zero else "")


def _reads_text(lay: Layout, in_bytes: bool) -> str:
    """Which cells (or bytes) a layout reads and how, e.g. 'reads cells 0–11 (contiguous)'."""
    if lay.numel == 0:
        return "reads nothing (no elements)"
    low, high = lay.index_range
    if in_bytes:
        span = f"bytes {lay.byte_range[0]:,}–{lay.byte_range[1] - 1:,}"
    else:
        span = f"cell {low:,}" if low == high else f"cells {low:,}–{high:,}"
    if lay.is_contiguous:
        return f"reads {span} (contiguous)"
    if lay.indices_truncated:
        return f"reads {lay.numel:,} elements within {span}"
    distinct = len(set(lay.element_indices))
    if distinct == lay.numel:
        return f"reads {lay.numel:,} elements within {span}, not contiguously"
    return f"reads {distinct:,} cells within {span.removeprefix('cells ')}, {_repeat_text(lay)}"


def _relation(member: _Member, first: _Member) -> str | None:
    """How a row's cells relate to the strip's first row, from ``compare_reads`` or ``shares_memory``."""
    lay, name = member.layout, first.name
    if lay.numel == 0 or first.layout.numel == 0:
        return None
    overlap = compare_reads(lay, first.layout)
    if overlap is None:
        if member.tensor is None or first.tensor is None:
            return None
        if shares_memory(member.tensor, first.tensor):
            return f"shares memory with {name}"
        return f"shares no memory with {name} (same storage, no overlap)"
    unit, mine, theirs, common = overlap.unit, overlap.mine, overlap.theirs, overlap.common
    if common == mine == theirs:
        if unit == "byte":
            return f"reads the same {mine:,} bytes as {name}"
        if lay.numel != mine:
            return f"reads the same {mine:,} cells as {name}, {_repeat_text(lay)}"
        order = "same" if overlap.same_order else "a different"
        return f"reads the same {mine:,} cells as {name} in {order} order"
    if not common:
        return f"shares no {unit} with {name} (same storage, no overlap)"
    if common == mine:
        return f"{common:,} of {name}'s {theirs:,} {unit}s"
    if unit == "byte":
        return f"{common:,} of its {mine:,} bytes are also read by {name}"
    if common == theirs:
        return f"all {theirs:,} of {name}'s cells and {mine - common:,} more"
    return f"{common:,} of them also read by {name}"


def _row_texts(member: _Member, first: _Member) -> tuple[str, str]:
    """A row's label (drawn above it) and its part of the summary; ``first`` is its strip's first row."""
    lay = member.layout
    shape, stride, offset = tuple_text(lay.shape), tuple_text(lay.stride), lay.storage_offset
    contiguous = "contiguous" if lay.is_contiguous else "not contiguous"
    label = (
        f"{member.name}: shape {shape}  stride {stride}  offset {offset}  ·  {dtype_name(lay.dtype)}  ·  {contiguous}"
    )
    head = f"{member.name}: shape {shape} stride {stride} offset {offset}"
    if lay.dtype != first.layout.dtype:
        head += f" as {dtype_name(lay.dtype)} ({plural(lay.itemsize, 'byte')} each)"
    relation = _relation(member, first) if member is not first else None
    if relation is not None and relation.startswith("reads the same"):
        return label, f"{head} {relation}"
    reads = _reads_text(lay, lay.itemsize != first.layout.itemsize)
    return label, f"{head} {reads}" + (f", {relation}" if relation else "")


def _strip_description(strip_no: int, group: list[_Member], first_of_all: _Member, pieces, slots) -> str:
    """A strip's title: its storage's size, the cells shown, and how it relates to the first strip."""
    lay = group[0].layout
    description = (
        f"storage of {lay.storage_nbytes // lay.itemsize:,} {dtype_name(lay.dtype)} ({lay.storage_nbytes:,} bytes)"
    )
    if any(kind == "gap" for kind, _, _ in pieces):
        description += f", cells {' and '.join(f'{w.start:,}–{w.stop - 1:,}' for w in slots)} shown"
    if strip_no > 0 and (group[0].tensor is None or first_of_all.tensor is None):
        description += " (a Layout does not say which storage it is over: drawn apart)"
    elif strip_no > 0:
        description += f", separate from {first_of_all.name}'s (not shared)"
    if len(group) > 1 and any(m.tensor is None for m in group):
        description += " (Layouts drawn on one strip because their storage sizes match)"
    return description


def layout_picture(*tensors, names=None, max_cells: int = 64, show_values: bool = True) -> LayoutPicture:
    """Plan a layout picture as data: the cells, element numbers, strides and summary ``draw_layout`` draws.

    Args:
        *tensors: strided tensors (any dtype; values are read only from the drawn cells), or ``Layout`` objects
            (drawn without values; a Layout does not say which storage it is over, so Layouts with the same
            storage size share a strip).
        names: one display name per tensor, e.g. ``["a", "a.t()"]``; default ``t0``, ``t1``, ...
        max_cells: draw at most this many of the narrowest cells per storage (at least 8; more than
            ``MAX_CELLS`` = 512 is capped there, and the summary says so).
        show_values: write each storage cell's value in it (read from the first tensor's storage).

    Returns:
        A frozen ``LayoutPicture`` (strips, rows, cells, steps, summary, notes).

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        ValueError: no tensors; bad names; ``max_cells`` < 8; ``show_values=True`` for a strip of
            Layouts only (a Layout holds no values).
    """
    names = _row_names(names, len(tensors))
    require_int(max_cells, "max_cells", MIN_CELLS)
    require_bool(show_values, "show_values")
    groups = _group(tensors, names)
    strips, rows, cells, steps, summary_parts = [], [], [], [], []
    for strip_no, group in enumerate(groups):
        first = group[0]
        holder = next((m for m in group if m.tensor is not None), None)
        if show_values and holder is None:
            raise ValueError(
                f"show_values=True needs a tensor to read values from, but {first.name} is a Layout "
                "(it holds no values): pass show_values=False, or pass the tensor itself"
            )
        dtype, itemsize = first.layout.dtype, first.layout.itemsize
        sizes = [m.layout.itemsize for m in group]
        unit, align = math.gcd(*sizes), math.lcm(*sizes)
        budget = max(align, _align_down(min(max_cells, MAX_CELLS) * unit, align))
        pieces = _pieces(group, _align_down(first.layout.storage_nbytes, align), budget, align, unit)
        windows = _slots(pieces, itemsize)
        description = _strip_description(strip_no, group, groups[0][0], pieces, windows)
        strips.append(PictureStrip(strip_no, itemsize, unit, pieces, tuple(m.name for m in group), description))

        for window in windows:
            texts = ("",) * len(window)
            if show_values:  # the raw storage read as the strip's dtype (a view(dtype) of the tensor may not exist)
                texts = storage_values_text(holder.tensor, window.start, window.stop, len(window) or 1, dtype)
            for index, text in zip(window, texts):
                cells.append(
                    PictureCell(strip_no, "storage", index, index * itemsize, itemsize, "value", (), True, text)
                )

        row_parts = []
        for member in group:
            row_cells, row_steps = _row_plan(strip_no, member, pieces)
            cells += row_cells
            steps += row_steps
            label, text = _row_texts(member, first)
            row_parts.append(text)
            rows.append(PictureRow(strip_no, member.name, label, member.layout))
        summary_parts.append("; ".join([description, *row_parts]))

    states = {cell.state for cell in cells}
    notes = ["numbers: each element's row-major position"]
    if any(cell.repeated for cell in cells):
        notes.append("×n (hatched): cell read by n elements (n+ : at least n)")
    if "unread" in states:
        notes.append("dotted: not read")
    summary = "; ".join(summary_parts)
    if "unknown" in states:
        notes.append(f"?: not checked (only the first {MAX_LISTED:,} and last {TAIL_LISTED:,} elements are listed)")
        summary += f"; cells marked ? were not checked (tensors longer than {MAX_LISTED:,} elements)"
    if max_cells > MAX_CELLS:
        summary += f"; max_cells={max_cells:,} was capped at {MAX_CELLS:,} cells per storage"
    return LayoutPicture(tuple(strips), tuple(rows), tuple(cells), tuple(steps), summary, tuple(notes))


def layout_summary(*tensors, names=None, max_cells: int = 64) -> str:
    """The one-line text summary of ``draw_layout(*tensors, ...)`` (its ``fig.summary``), without drawing anything.

    Args and Raises: as ``layout_picture`` (``max_cells`` decides which cells the summary says are shown).
    """
    return layout_picture(*tensors, names=names, max_cells=max_cells, show_values=False).summary


# Drawing: ``layout_scene`` places everything in cells across and layout units down (a row of cells is one unit
# tall), converted to points by ``_px``/``_py``, and emits one scene item per rectangle, text, tick and arrow.

CELL_PT = 0.34 * 72  # points per cell across
ROW_PT = 0.34 * 72  # points per layout unit down
SIDE_MARGIN = 0.3  # cells left of the strips and right of the widest text
TOP_MARGIN = 0.2
TITLE_HEIGHT = 0.9  # a strip's title line
TITLE_RAISE = 0.2  # the title's baseline above the end of its line
INDEX_GAP = 0.35  # between a strip's title and its storage indices
INDEX_HEIGHT = 0.45  # storage indices written across
TURNED_CHAR = 0.2  # per character of storage indices turned upright
TURNED_PAD = 0.2
CELL_HEIGHT = 1.0
LABEL_HEIGHT = 0.95  # above each row: its label
LABEL_LIFT = 0.12  # labels and storage indices stand this far above their cells
LANE_HEIGHT = 0.75  # per step arrow under a row
ROW_PAD = 0.25  # below a row's last arrow
STRIP_GAP = 0.5
LEGEND_DROP = 0.2  # the legend's top below the last strip
LEGEND_HEIGHT = 0.8
CELL_INSET = 0.04  # a row cell's inset on each side, so neighbours' borders stay apart
GAP_INSET = 0.1  # a gap marker's inset on each side
LOOP_REACH = 0.3  # a stride-0 loop spans this far either side of its cell's middle
LOOP_DROP = 0.05  # the loop starts this far below its row
LOOP_POINTS = 8  # points along a loop's curve
ARROW_ROOM = 0.6  # room right of an arrow's start for a loop
LABEL_PAD = 0.3  # between the rightmost arrow and the step labels
COUNT_Y = 0.32  # a repeated cell's count, from the cell's top
POSITIONS_Y = 0.76  # a repeated cell's positions, from the cell's top
POSITIONS_PER_CELL = 6  # characters of positions a repeated cell lists per cell of its width
FIT_ROOM = 0.9  # the share of a cell's width its text may fill
TURN_INDICES_AT = 0.9  # storage indices are turned upright when wider than this share of a cell
MIN_FONT_PT = 4.5
FONT_PT = 8.0
SMALL_PT = 6.5  # storage indices, positions, gap markers
STEP_PT = 7.0  # step labels and the legend

# Light fills for the rows (Okabe-Ito hues, lightened). Colour is never the only cue: read cells also
# carry the element's number and a solid border, unread cells a dotted one, repeats a count and hatching.
ROW_FILLS = ("#a6cee3", "#fdbf6f", "#b2df8a", "#cab2d6", "#fb9a99", "#ffff99", "#8dd3c7", "#bebada")
DASHED, DOTTED = (3.7, 1.6), (1.0, 1.65)  # matplotlib's "--" and ":", in line widths
STYLES = {
    "storage": Style(fill="#e6e6e6", edge="#444444", width=1.0),
    **{f"row{i}": Style(fill=fill, edge="#222222", width=1.0) for i, fill in enumerate(ROW_FILLS)},
    **{f"row{i}-repeated": Style(fill=fill, edge="#222222", width=2.0, hatch=True) for i, fill in enumerate(ROW_FILLS)},
    "unread": Style(fill="white", edge="#b0b0b0", width=1.0, dash=DOTTED),
    "unknown": Style(fill="#f2f2f2", edge="#bbbbbb", width=1.0, dash=DASHED),
    "gap": Style(fill="white", edge="#888888", width=0.8, dash=DASHED),
    "tick": Style(edge="#333333", width=0.8, zorder=2),
    "step": Style(edge="#222222", width=1.2, zorder=2),
    "step-not-shown": Style(edge="#222222", width=1.2, dash=DASHED, zorder=2),
    "loop": Style(edge="#222222", width=1.0, zorder=2),
    "strip-title": Style(size=FONT_PT + 1, weight="bold", zorder=3),
    "index": Style(size=SMALL_PT, color="#444444", zorder=3),
    "value": Style(size=FONT_PT, zorder=3),
    "unchecked": Style(size=FONT_PT, color="#888888", zorder=3),
    "count": Style(size=FONT_PT, weight="bold", halo=True, zorder=3),
    "positions": Style(size=SMALL_PT, halo=True, zorder=3),
    "gap-text": Style(size=SMALL_PT, line_spacing=1.0, zorder=3),
    "elided": Style(size=FONT_PT + 2, color="#555555", zorder=3),
    "label": Style(size=FONT_PT, zorder=3),
    "step-text": Style(size=STEP_PT, halo=True, zorder=3),
    "legend": Style(size=STEP_PT, color="#444444", zorder=3),
}


def _cells_wide(text: str, style: str) -> float:
    """How many cells wide ``text`` is in ``style`` (measured by ``scene.text_width``)."""
    look = STYLES[style]
    return text_width(text, look.family, look.size, look.weight) / CELL_PT


def _fit(text: str, cells_wide: float, style: str) -> float | None:
    """The font size at which ``text`` fits a cell ``cells_wide`` cells wide; None: the style's own fits."""
    room, wide = cells_wide * FIT_ROOM, _cells_wide(text, style)
    if not text or wide <= room:
        return None
    return max(MIN_FONT_PT, STYLES[style].size * room / wide)


def _across(strip: PictureStrip):
    """``(x of a byte or None where elided, [(x0, x1, hidden cells) per gap], width)`` of a strip, in cells."""
    starts, gaps, cursor = [], [], 0.0
    for kind, begin, end in strip.pieces:
        if kind == "cells":
            starts.append((begin, end, cursor))
            cursor += (end - begin) / strip.unit_bytes
        else:
            gaps.append((cursor, cursor + GAP_UNITS, (end - begin) // strip.itemsize))
            cursor += GAP_UNITS

    def x_at(byte: int) -> float | None:
        return next((x0 + (byte - begin) / strip.unit_bytes for begin, end, x0 in starts if begin <= byte <= end), None)

    return x_at, gaps, cursor


def _arrow(step: PictureStep, strip: PictureStrip, itemsize: int, x_at):
    """(x start, x end, label) of one step's arrow; x end None for stride 0; None if the start is elided."""
    half = itemsize / strip.unit_bytes / 2
    start = x_at(step.from_index * itemsize)
    if start is None:
        return None
    if step.stride == 0:
        return start + half, None, f"dim {step.dim}: stride 0 = stays on the same cell"
    if itemsize == strip.itemsize:
        jump = plural(step.stride, "cell", fmt=",")
    else:
        jump = plural(step.stride * itemsize, "byte", fmt=",")
    label = f"dim {step.dim}: stride {step.stride} = jump {jump}"
    end = x_at(step.to_index * itemsize) if step.shown else None
    if end is not None:
        return start + half, end + half, label
    # The target cell is elided: the arrow points into the gap after this window, and says so.
    byte = step.from_index * itemsize
    ends = [stop for kind, begin, stop in strip.pieces if kind == "cells" and begin <= byte < stop]
    if not ends:  # a meta tensor's elements may lie past its (empty) storage: no cell to start at
        return None
    return start + half, x_at(ends[0]) + GAP_UNITS / 2, label + " (target not shown)"


def _loop(x: float, y: float) -> tuple:
    """Points along a stride-0 loop: down from (x0, y) and back up to its start's right, in points."""
    x0, x1 = x - LOOP_REACH * CELL_PT, x + LOOP_REACH * CELL_PT
    # The cubic curve a loop was drawn with: control points 4 points outside and 16 points below its ends.
    curve = ((x0, y), (x0 - 4, y + 16), (x1 + 4, y + 16), (x1, y + 1))
    points = []
    for k in range(LOOP_POINTS):
        t = k / (LOOP_POINTS - 1)
        weights = ((1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t**3)
        points.append(tuple(sum(w * p[axis] for w, p in zip(weights, curve)) for axis in (0, 1)))
    return tuple(points)


def _px(x: float) -> float:
    """Points across from cells across."""
    return (x + SIDE_MARGIN) * CELL_PT


def _py(y: float) -> float:
    """Points down from layout units down."""
    return y * ROW_PT


def _box(x: float, y: float, w: float, style: str, ident: str) -> Rect:
    """A cell-high rectangle ``w`` cells wide with its top left at (x, y)."""
    return Rect(_px(x), _py(y), w * CELL_PT, CELL_HEIGHT * ROW_PT, style, ident)


def _centred(x: float, y: float, text: str, style: str, ident: str = "", fit: float = 0.0) -> Text:
    """A text centred on (x, y), shrunk to fit ``fit`` cells across when that is given."""
    return Text(_px(x), _py(y), text, style, ident, "middle", "middle", _fit(text, fit, style) if fit else None)


def _cell_items(cell: PictureCell, x0: float, top: float, wide: float, fill: str, turned: bool) -> list:
    """The rectangle and texts of one cell whose left edge is at ``x0``, ``wide`` cells wide, its top at ``top``."""
    ident, middle = f"{cell.strip}:{cell.row}:{cell.index}", x0 + wide / 2
    if cell.row == "storage":
        index_y, turn = _py(top - LABEL_LIFT), 90.0 if turned else 0.0
        number = Text(
            _px(middle), index_y, f"{cell.index:,}", "index", f"index:{ident}", "middle", "bottom", rotation=turn
        )
        items = [_box(x0, top, wide, "storage", f"cell:{ident}"), number]
        if cell.text:
            items.append(_centred(middle, top + CELL_HEIGHT / 2, cell.text, "value", f"text:{ident}", wide))
        return items
    style = {"unread": "unread", "unknown": "unknown"}.get(cell.state, fill) + "-repeated" * cell.repeated
    items = [_box(x0 + CELL_INSET, top, wide - 2 * CELL_INSET, style, f"cell:{ident}")]
    listed = ",".join(str(p) for p in cell.positions)
    if cell.text and cell.repeated and len(listed) <= POSITIONS_PER_CELL * wide:
        # A repeated cell says how often it is read, and by which elements when that fits.
        items.append(_centred(middle, top + COUNT_Y, cell.text, "count", f"text:{ident}", wide))
        items.append(_centred(middle, top + POSITIONS_Y, listed, "positions", f"positions:{ident}", wide))
    elif cell.text:
        style = "count" if cell.repeated else "unchecked" if cell.state == "unknown" else "value"
        items.append(_centred(middle, top + CELL_HEIGHT / 2, cell.text, style, f"text:{ident}", wide))
    return items


def _step_items(step: PictureStep, arrow: tuple, row_top: float, lane: float, label_x: float) -> list:
    """The ticks, arrow (or stride-0 loop) and label of one step, its arrow at height ``lane``."""
    start, end, label = arrow
    bottom, lane = _py(row_top + CELL_HEIGHT), _py(lane)
    ident = f"{step.strip}:{step.row}:{step.dim}"
    if step.stride == 0:
        items = [Arrow(_loop(_px(start), bottom + _py(LOOP_DROP)), "loop", f"step:{ident}")]
    else:
        items = [Line(((_px(start), bottom), (_px(start), lane)), "tick")]
        if step.shown:
            items.append(Line(((_px(end), bottom), (_px(end), lane)), "tick"))
        style = "step" if step.shown else "step-not-shown"
        items.append(Arrow(((_px(start), lane), (_px(end), lane)), style, f"step:{ident}"))
    return items + [Text(_px(label_x), lane, label, "step-text", f"steptext:{ident}", "start", "middle")]


def layout_scene(picture: LayoutPicture) -> Scene:
    """The drawing of a ``LayoutPicture`` as a ``Scene``, in points; both renderers draw it.

    Every cell's rectangle and texts carry ids naming it: ``cell:<strip>:<row>:<index>``, ``text:…``,
    ``index:…`` (storage cells), ``positions:…`` (repeated cells); also ``strip:<strip>``,
    ``label:<strip>:<row>``, ``step:<strip>:<row>:<dim>``, ``steptext:…``, ``gap:<strip>:<x>``, ``gaptext:…``
    and ``legend``. The title is the picture's summary.

    Raises:
        TypeError: ``picture`` is not a LayoutPicture (from ``layout_picture``).
    """
    if not isinstance(picture, LayoutPicture):
        raise TypeError(f"picture must be a LayoutPicture, got {describe(picture)}")
    fills = {row.name: f"row{i % len(ROW_FILLS)}" for i, row in enumerate(picture.rows)}
    rows = {row.name: row for row in picture.rows}
    steps_by_row: dict[str, list[PictureStep]] = {}
    for step in picture.steps:
        steps_by_row.setdefault(step.row, []).append(step)
    # Strips are placed top to bottom; the items go out as titles and gaps, cells, labels, then steps.
    heads, cells, labels, steps = [], [], [], []
    width, y = 0.0, TOP_MARGIN
    for strip in picture.strips:
        x_at, gaps, strip_width = _across(strip)
        width = max(width, strip_width, _cells_wide(strip.description, "strip-title"))
        last_index = f"{max((end - 1) // strip.itemsize for kind, _, end in strip.pieces if kind == 'cells'):,}"
        turned = _cells_wide(last_index, "index") > strip.itemsize / strip.unit_bytes * TURN_INDICES_AT
        y += TITLE_HEIGHT
        title_y = _py(y - TITLE_RAISE)
        heads.append(Text(_px(0), title_y, strip.description, "strip-title", f"strip:{strip.index}", baseline="bottom"))
        y += INDEX_GAP + (TURNED_CHAR * len(last_index) + TURNED_PAD if turned else INDEX_HEIGHT)
        top = y
        y += CELL_HEIGHT
        row_y = {}
        for name in strip.rows:
            row = rows[name]
            width = max(width, _cells_wide(row.label, "label"))
            y += LABEL_HEIGHT
            row_y[name] = y
            label_y = _py(y - LABEL_LIFT)
            labels.append(Text(_px(0), label_y, row.label, "label", f"label:{strip.index}:{name}", baseline="bottom"))
            y += CELL_HEIGHT
            # Shortest jump nearest the row: arrows sharing a start then nest without crossing ticks.
            lanes, right = {}, 0.0
            for step in sorted(steps_by_row.get(name, []), key=lambda s: abs(s.to_index - s.from_index)):
                y += LANE_HEIGHT
                arrow = _arrow(step, strip, row.layout.itemsize, x_at)
                lanes[step.dim] = (y, arrow)
                if arrow is not None:
                    right = max(right, arrow[0] + ARROW_ROOM, arrow[1] if arrow[1] is not None else 0.0)
                    width = max(width, right + LABEL_PAD + _cells_wide(arrow[2], "step-text"))
            # Labels in one column right of every arrow of the row: no tick line crosses a label.
            for step in steps_by_row.get(name, []):
                lane, arrow = lanes[step.dim]
                if arrow is not None:  # None: the row's first cell is elided, its label still gives the strides
                    steps += _step_items(step, arrow, row_y[name], lane, right + LABEL_PAD)
            y += ROW_PAD
        y += STRIP_GAP
        for x0, x1, hidden in gaps:
            middle, ident = (x0 + x1) / 2, f"{strip.index}:{x0:g}"
            heads.append(_box(x0 + GAP_INSET, top, x1 - x0 - 2 * GAP_INSET, "gap", f"gap:{ident}"))
            text = f"… {hidden:,} cells\nnot shown …"
            heads.append(_centred(middle, top + CELL_HEIGHT / 2, text, "gap-text", f"gaptext:{ident}"))
            heads += [_centred(middle, row_y[name] + CELL_HEIGHT / 2, "…", "elided") for name in strip.rows]
        for cell in picture.cells:
            if cell.strip == strip.index:
                cell_top = top if cell.row == "storage" else row_y[cell.row]
                wide = cell.nbytes / strip.unit_bytes
                cells += _cell_items(cell, x_at(cell.byte_start), cell_top, wide, fills.get(cell.row, ""), turned)
    legend = " · ".join(picture.notes)
    width = max(width, _cells_wide(legend, "legend"))
    items = (*heads, *cells, *labels, *steps, Text(_px(0), _py(y + LEGEND_DROP), legend, "legend", "legend"))
    return Scene((width + 2 * SIDE_MARGIN) * CELL_PT, _py(y + LEGEND_HEIGHT), items, STYLES, picture.summary)


def picture_svg(picture: LayoutPicture) -> str:
    """``layout_scene(picture)`` as a standalone SVG document: the drawing ``draw_layout`` renders, with the same
    ids and the summary as ``<title>``, as text a browser shows at once (what the live explorers display).

    Raises:
        TypeError: ``picture`` is not a LayoutPicture.
    """
    return svg(layout_scene(picture))


def draw_layout(*tensors, names=None, ax=None, max_cells: int = 64, show_values: bool = True):
    """Draw tensors over their storage: the storage as a strip of cells, one row per tensor below it.

    Each row highlights the cells its tensor reads, numbered with each element's row-major position;
    a cell read by several elements (``expand`` with stride 0) shows ``×n`` and is hatched; arrows
    under the row show one step along each dimension (stride k = a jump of k cells). Tensors over one
    storage share a strip, so sharing and non-overlap are visible; a tensor with its own storage gets
    a separate strip. Rows whose itemsizes differ (``view(torch.uint8)``) are drawn per byte so byte
    extents line up. A storage longer than ``max_cells`` cells is drawn as windows around the region
    the tensors use, with "… N cells not shown …" markers, so a 10^8-element tensor draws instantly.

    Args:
        *tensors, names, max_cells, show_values: as ``layout_picture``.
        ax: a matplotlib Axes to draw into, or None for a new figure sized to fit.

    Returns:
        The matplotlib Figure, with ``fig.summary`` (one line of text, as ``layout_summary``), ``fig.layout_picture``
        (the ``LayoutPicture`` drawn) and ``fig.scene`` (the ``Scene`` drawn, see ``layout_scene``).

    Raises:
        TypeError, ValueError: as ``layout_picture`` (``ax`` is checked too).
    """
    require_axes(ax)
    picture = layout_picture(*tensors, names=names, max_cells=max_cells, show_values=show_values)
    scene = layout_scene(picture)
    fig = render(scene, ax=ax)
    fig.summary, fig.layout_picture, fig.scene = picture.summary, picture, scene
    return fig
