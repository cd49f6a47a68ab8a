"""Pictures of where tensors' elements live: a strip of storage cells, and one row per tensor below it.

A picture is planned as plain data first (``layout_picture``): which storage cells are shown, which
elements read each cell, where one step along each dimension lands, and a one-line summary. The plan is
built only from the model layer (``layout``, ``Layout.index_of``, ``same_storage``, ``shares_memory``,
``storage_values_text``); ``layout_scene`` turns it into a ``Scene``, which ``draw_layout`` renders with
matplotlib and ``picture_svg`` as SVG. Tests compare the plan, and the scene drawn from it, with torch's own
indexing.

matplotlib is imported only when a picture is drawn, so importing this module stays cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from ..common.checks import describe, require_bool, require_positive_int, require_tensor
from ..common.text import dtype_name, plural, tuple_text
from ..facts.storage import Layout, compare_reads, layout, same_storage, shares_memory, storage_values_text
from .render_mpl import render, require_axes
from .render_svg import svg
from .scene import Arrow, Line, Rect, Scene, Style, Text, text_width

#: How many elements (row-major) of each tensor are listed by ``layout`` for a picture. Cells read only
#: by elements past the listing are drawn as "?" (not checked), never guessed.
MAX_LISTED = 16_384
#: For a tensor longer than ``MAX_LISTED``, also this many of its last elements are looked up (with
#: ``Layout.positions_at``), so the end of a big tensor's region is drawn exactly too.
TAIL_LISTED = 1_024
#: The fewest cells ``max_cells`` may ask for (fewer cannot show a start, an end and an elision).
MIN_CELLS = 8
#: The most cells ``max_cells`` may draw per strip: a larger request is capped here (the summary says so),
#: because every cell costs drawing time and 0.34 inch of figure width.
MAX_CELLS = 512
#: Width of a "… N cells not shown …" marker, in cells.
GAP_UNITS = 4
#: At most this many separate windows onto one big storage (around starts and ends of the tensors).
MAX_WINDOWS = 4


@dataclass(frozen=True)
class PictureCell:
    """One drawn cell: a storage cell (``row == "storage"``) or one element slot of a tensor's row.

    ``index`` counts in the row's own dtype (for the storage row: the strip's dtype), so a uint8 view
    of float32 storage has four slots per storage cell; ``byte_start``/``nbytes`` place it in bytes.
    ``state`` is ``"value"`` (storage cell), ``"read"``, ``"unread"`` or ``"unknown"`` (the tensor is
    too big to list every element, and no listed element reads this cell). ``positions`` are the
    row-major positions of the listed elements that read the cell; ``count_exact`` is False when more
    unlisted elements may read it too.
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
    """One tensor (or ``Layout``) in a picture."""

    strip: int
    name: str
    label: str  # drawn above the row: shape, stride, offset, dtype
    description: str  # its part of the summary
    layout: Layout


@dataclass(frozen=True)
class PictureStrip:
    """One storage, drawn as a strip of cells, with the rows of the tensors that use it.

    ``pieces`` lists, left to right, ``("cells", byte_start, byte_stop)`` windows that are drawn and
    ``("gap", byte_start, byte_stop)`` stretches replaced by a "… N cells not shown …" marker.
    """

    index: int
    dtype: torch.dtype
    itemsize: int
    unit_bytes: int  # bytes per narrowest drawn cell (the gcd of the rows' itemsizes)
    storage_numel: int
    storage_nbytes: int
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
    name: str
    tensor: torch.Tensor | None
    layout: Layout


def _collect(tensors, names) -> list[_Member]:
    if not tensors:
        raise ValueError("tensors is empty: give at least one tensor, e.g. draw_layout(x, x.t())")
    members = []
    for i, (t, name) in enumerate(zip(tensors, names)):
        if isinstance(t, Layout):
            members.append(_Member(name, None, t))
            continue
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"tensors[{i}] must be a torch.Tensor or a Layout, got {describe(t)}")
        tensor = require_tensor(t, f"tensors[{i}]")
        if tensor.is_nested:
            raise ValueError(f"tensors[{i}] is a nested tensor: its parts have no single storage to draw")
        members.append(_Member(name, tensor, layout(tensor, max_elements=MAX_LISTED)))
    return members


def _group(members: list[_Member]) -> list[list[_Member]]:
    """Members per storage: tensors by ``same_storage``; a Layout joins the first strip of its byte size.

    A Layout records no storage identity, so the only rule available for it is "the same storage size";
    the summary says so whenever a strip was grouped that way.
    """
    strips: list[list[_Member]] = []
    for member in members:
        home = None
        for strip in strips:
            anchor = strip[0]
            if member.tensor is not None and anchor.tensor is not None:
                if same_storage(anchor.tensor, member.tensor):
                    home = strip
            elif member.tensor is None and anchor.layout.storage_nbytes == member.layout.storage_nbytes:
                home = strip
            if home is not None:
                break
        if home is None:
            strips.append([member])
        else:
            home.append(member)
    return strips


def _align_down(value: int, step: int) -> int:
    return value // step * step


def _align_up(value: int, step: int) -> int:
    return -(-value // step) * step


def _byte_extent(lay: Layout) -> tuple[int, int] | None:
    """The bytes [start, stop) between a layout's lowest and highest element (None if empty)."""
    span = lay.index_range
    if span is None:
        return None
    return span[0] * lay.itemsize, (span[1] + 1) * lay.itemsize


def _windows(members: list[_Member], total: int, budget: int, align: int, unit: int) -> list[tuple[int, int]]:
    """The byte windows of a storage to draw: all of it if it fits, else windows around the rows' reach."""
    if total <= budget:
        return [(0, total)]
    extents = [e for e in (_byte_extent(m.layout) for m in members) if e is not None]
    if not extents:
        return [(0, budget)]
    low, high = min(e[0] for e in extents), max(e[1] for e in extents)
    if high - low <= budget:
        start = _align_down(low - (budget - (high - low)) // 2, align)
        start = max(0, min(start, _align_down(total - budget, align)))
        return [(start, min(start + budget, total))]
    # Too wide: show where the reads start and end, the overall ones first, then each row's own.
    anchors: list[tuple[str, int]] = [("start", low), ("end", high)]
    for start, stop in extents:
        anchors += [("start", start), ("end", stop)]
    unique = list(dict.fromkeys(anchors))
    for count in range(min(len(unique), MAX_WINDOWS), 0, -1):
        width = _align_down(budget // count, align)
        if width >= 4 * align or count == 1:
            break
    width = max(width, align)
    context = min(_align_down(width // 4, align), 2 * align)
    spans = []
    for kind, at in unique[:count]:
        begin = _align_down(at, align) - context if kind == "start" else _align_up(at, align) + context - width
        begin = max(0, min(begin, _align_down(total - width, align)))
        spans.append((begin, min(begin + width, total)))
    spans.sort()
    merged = [spans[0]]
    for begin, end in spans[1:]:
        # Joining windows with a small gap shows those cells instead of a marker as wide as they are.
        if begin <= merged[-1][1] + GAP_UNITS * unit:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((begin, end))
    return merged


def _pieces(windows: list[tuple[int, int]], total: int) -> tuple[tuple[str, int, int], ...]:
    pieces = []
    cursor = 0
    for begin, end in windows:
        if begin > cursor:
            pieces.append(("gap", cursor, begin))
        pieces.append(("cells", begin, end))
        cursor = end
    if cursor < total:
        pieces.append(("gap", cursor, total))
    return tuple(pieces)


def _slots(pieces, itemsize: int):
    """Storage indices (in elements of ``itemsize`` bytes) whose bytes lie wholly in a drawn window."""
    for kind, begin, end in pieces:
        if kind == "cells":
            yield from range(_align_up(begin, itemsize) // itemsize, end // itemsize)


def _row_cells(strip_no: int, member: _Member, pieces) -> list[PictureCell]:
    lay = member.layout
    size = lay.itemsize
    slots = list(_slots(pieces, size))
    found = lay.positions_at(slots, tail=TAIL_LISTED)
    span = lay.index_range
    # With every element listed, counts are exact; if the model says no two elements share a cell,
    # a listed read is exact too. Otherwise unlisted elements may also read a cell.
    complete = not lay.indices_truncated
    at_most_once = lay.has_internal_overlap is False
    cells = []
    for index in slots:
        positions = tuple(found.get(index, ()))
        inside = span is not None and span[0] <= index <= span[1]
        if positions:
            exact = complete or at_most_once
            if exact:
                text = str(positions[0]) if len(positions) == 1 else f"×{len(positions)}"
            else:
                text = f"×{len(positions)}+"
            state = "read"
        elif inside and not complete:
            state, text, exact = "unknown", "?", False
        else:
            state, text, exact = "unread", "", True
        cells.append(PictureCell(strip_no, member.name, index, index * size, size, state, positions, exact, text))
    return cells


def _steps(strip_no: int, member: _Member, visible: set[int]) -> list[PictureStep]:
    """One step per dimension longer than 1, from element 0's cell (a dimension of size 1 is never stepped)."""
    stride = member.layout.stride
    return [
        PictureStep(strip_no, member.name, dim, stride[dim], origin, target, origin in visible and target in visible)
        for dim, origin, target in member.layout.step_targets()
    ]


def _row_label(member: _Member) -> str:
    lay = member.layout
    contiguous = "contiguous" if lay.is_contiguous else "not contiguous"
    return (
        f"{member.name}: shape {tuple_text(lay.shape)}  stride {tuple_text(lay.stride)}  "
        f"offset {lay.storage_offset}  ·  {dtype_name(lay.dtype)}  ·  {contiguous}"
    )


def _span_text(lay: Layout, in_bytes: bool) -> str:
    low, high = lay.index_range
    if in_bytes:
        first, last = low * lay.itemsize, (high + 1) * lay.itemsize - 1
        return f"bytes {first:,}–{last:,}"
    return f"cell {low:,}" if low == high else f"cells {low:,}–{high:,}"


def _reads_text(lay: Layout, in_bytes: bool) -> str:
    if lay.numel == 0:
        return "reads nothing (no elements)"
    span = _span_text(lay, in_bytes)
    if lay.is_contiguous:
        return f"reads {span} (contiguous)"
    if lay.indices_truncated:
        return f"reads {lay.numel:,} elements within {span}"
    distinct = len(set(lay.element_indices))
    if distinct == lay.numel:
        return f"reads {lay.numel:,} elements within {span}, not contiguously"
    return f"reads {distinct:,} cells within {span.removeprefix('cells ')}, {_repeat_text(lay)}"


def _repeat_text(lay: Layout) -> str:
    """How often a fully listed layout reads its cells, e.g. 'each 3 times (stride 0 repeats them)'."""
    low, high = lay.read_counts()
    often = f"each {high} times" if low == high else f"{low} to {high} times each"
    zero = any(step == 0 and size > 1 for size, step in zip(lay.shape, lay.stride))
    return often + (" (stride 0 repeats them)" if zero else "")


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


def _row_description(member: _Member, first: _Member | None, strip_itemsize: int, strip_dtype) -> str:
    lay = member.layout
    in_bytes = lay.itemsize != strip_itemsize
    head = f"{member.name}: shape {tuple_text(lay.shape)} stride {tuple_text(lay.stride)} offset {lay.storage_offset}"
    if lay.dtype != strip_dtype:
        head += f" as {dtype_name(lay.dtype)} ({plural(lay.itemsize, 'byte')} each)"
    relation = _relation(member, first) if first is not None else None
    if relation is not None and relation.startswith("reads the same"):
        return f"{head} {relation}"
    reads = _reads_text(lay, in_bytes)
    return f"{head} {reads}" + (f", {relation}" if relation else "")


def _shown_text(pieces, itemsize: int) -> str:
    parts = []
    for kind, begin, end in pieces:
        if kind == "cells":
            first, last = _align_up(begin, itemsize) // itemsize, end // itemsize - 1
            parts.append(f"{first:,}–{last:,}")
    return "cells " + " and ".join(parts) + " shown"


def layout_picture(*tensors, names=None, max_cells: int = 64, show_values: bool = True) -> LayoutPicture:
    """Plan a layout picture as data: the cells, element numbers, strides and summary ``draw_layout`` draws.

    Tensors over one storage share one strip (``same_storage``); a tensor with a storage of its own gets
    a separate strip, and the summary says so. A storage longer than ``max_cells`` cells is shown as
    windows around where the tensors start and end, with "… N cells not shown …" between them.
    When the tensors' itemsizes differ (a ``view(torch.uint8)`` of float32 storage), cells are drawn
    per byte-width of the smallest itemsize, so byte extents line up across rows.

    Args:
        *tensors: strided tensors, or ``Layout`` objects (drawn without values; a Layout does not say
            which storage it is over, so Layouts with the same storage size share a strip).
        names: one display name per tensor, e.g. ``["a", "a.t()"]``; default ``t0``, ``t1``, ...
        max_cells: draw at most this many of the narrowest cells per storage (at least 8; more than
            ``MAX_CELLS`` = 512 is capped there, and the summary says so).
        show_values: write each storage cell's value in it (read from the first tensor's storage).

    Returns:
        A frozen ``LayoutPicture`` (strips, rows, cells, steps, summary).

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        ValueError: no tensors; bad names; ``max_cells`` < 8; ``show_values=True`` for a strip of
            Layouts only (a Layout holds no values).
    """
    names = _row_names(names, len(tensors))
    require_positive_int(max_cells, "max_cells")
    if max_cells < MIN_CELLS:
        raise ValueError(f"max_cells must be at least {MIN_CELLS}, got {max_cells}")
    require_bool(show_values, "show_values")
    asked_cells = max_cells
    max_cells = min(max_cells, MAX_CELLS)
    members = _collect(tensors, names)
    groups = _group(members)

    strips, rows, cells, steps, summary_parts = [], [], [], [], []
    any_unknown = any_repeat = any_unread = False
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
        unit = math.gcd(*sizes)
        align = math.lcm(*sizes)
        nbytes = first.layout.storage_nbytes
        total = _align_down(nbytes, align)
        budget = max(align, _align_down(max_cells * unit, align))
        pieces = _pieces(_windows(group, total, budget, align, unit), total)

        numel = nbytes // itemsize
        description = f"storage of {numel:,} {dtype_name(dtype)} ({nbytes:,} bytes)"
        if any(kind == "gap" for kind, _, _ in pieces):
            description += f", {_shown_text(pieces, itemsize)}"
        if strip_no > 0 and (first.tensor is None or groups[0][0].tensor is None):
            description += " (a Layout does not say which storage it is over: drawn apart)"
        elif strip_no > 0:
            description = f"{description}, separate from {groups[0][0].name}'s (not shared)"
        if len(group) > 1 and any(m.tensor is None for m in group):
            description += " (Layouts drawn on one strip because their storage sizes match)"
        row_names = tuple(m.name for m in group)
        strips.append(PictureStrip(strip_no, dtype, itemsize, unit, numel, nbytes, pieces, row_names, description))

        storage_slots = list(_slots(pieces, itemsize))
        values: dict[int, str] = {}
        if show_values and holder is not None and storage_slots:
            source = holder.tensor
            if holder.layout.dtype != dtype:
                # Read the raw storage as the strip's dtype (a view(dtype) of the tensor may not exist).
                source = torch.empty(0, dtype=dtype, device=source.device).set_(source.untyped_storage())
            for kind, begin, end in pieces:
                if kind == "cells":
                    lo, hi = _align_up(begin, itemsize) // itemsize, end // itemsize
                    values.update(zip(range(lo, hi), storage_values_text(source, lo, hi, max_cells=hi - lo or 1)))
        for index in storage_slots:
            text = values.get(index, "")
            cells.append(PictureCell(strip_no, "storage", index, index * itemsize, itemsize, "value", (), True, text))

        row_parts = []
        for member in group:
            row_cells = _row_cells(strip_no, member, pieces)
            cells.extend(row_cells)
            any_unknown |= any(c.state == "unknown" for c in row_cells)
            any_repeat |= any(len(c.positions) > 1 or not c.count_exact for c in row_cells if c.state == "read")
            any_unread |= any(c.state == "unread" for c in row_cells)
            steps.extend(_steps(strip_no, member, set(_slots(pieces, member.layout.itemsize))))
            text = _row_description(member, first if member is not first else None, itemsize, dtype)
            row_parts.append(text)
            rows.append(PictureRow(strip_no, member.name, _row_label(member), text, member.layout))
        summary_parts.append("; ".join([description, *row_parts]))

    notes = ["numbers: each element's row-major position"]
    if any_repeat:
        notes.append("×n (hatched): cell read by n elements (n+ : at least n)")
    if any_unread:
        notes.append("dotted: not read")
    if any_unknown:
        notes.append(f"?: not checked (only the first {MAX_LISTED:,} and last {TAIL_LISTED:,} elements are listed)")
    summary = "; ".join(summary_parts)
    if any_unknown:
        summary += f"; cells marked ? were not checked (tensors longer than {MAX_LISTED:,} elements)"
    if asked_cells > max_cells:
        summary += f"; max_cells={asked_cells:,} was capped at {MAX_CELLS:,} cells per storage"
    return LayoutPicture(tuple(strips), tuple(rows), tuple(cells), tuple(steps), summary, tuple(notes))


def layout_summary(*tensors, names=None, max_cells: int = 64) -> str:
    """The one-line text summary of ``draw_layout(*tensors, ...)`` without drawing anything.

    Args:
        *tensors: as for ``draw_layout``.
        names: as for ``draw_layout``.
        max_cells: as for ``draw_layout`` (it decides which cells the summary says are shown).

    Returns:
        The same string ``draw_layout`` attaches as ``fig.summary``.

    Raises:
        TypeError, ValueError: as ``layout_picture``.
    """
    return layout_picture(*tensors, names=names, max_cells=max_cells, show_values=False).summary


# ---------------------------------------------------------------------------------------------- drawing
#
# ``_geometry`` places everything in cells across and layout units down (a row of cells is one unit tall);
# ``layout_scene`` converts that once to points and emits one scene item per rectangle, text, tick and arrow.

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


@dataclass
class _Geometry:
    """Where ``_geometry`` put everything: x in cells, y in layout units (down)."""

    width: float  # in cells
    height: float  # in layout units
    x_of: list  # per strip: function byte -> x (None if the byte is elided)
    gaps: list  # per strip: [(x0, x1, hidden cells)]
    header_y: list  # per strip: baseline of its description
    strip_y: list  # per strip: top of the storage row
    row_y: dict  # row name -> top of its cells
    lanes: dict  # (row name, dim) -> y of its step arrow
    arrows: dict  # (row name, dim) -> (x start, x end or None, label); None: the row's start is elided
    label_x: dict  # row name -> x where its step labels start (right of all its arrows)
    index_rotated: list  # per strip: whether the storage index labels are turned upright
    legend_y: float


def _cells_wide(text: str, style: str) -> float:
    """How many cells wide ``text`` is in ``style`` (measured by ``scene.text_width``)."""
    look = STYLES[style]
    return text_width(text, look.family, look.size, look.weight) / CELL_PT


def _geometry(picture: LayoutPicture) -> _Geometry:
    """Where every strip, row, gap, arrow and label goes, in cells across and layout units down."""
    x_of, gaps, header_y, strip_y, index_rotated = [], [], [], [], []
    row_y, lanes, arrows, label_x = {}, {}, {}, {}
    width = 0.0
    y = TOP_MARGIN
    steps_by_row: dict[str, list[PictureStep]] = {}
    for step in picture.steps:
        steps_by_row.setdefault(step.row, []).append(step)
    labels = {row.name: row.label for row in picture.rows}
    itemsizes = {row.name: row.layout.itemsize for row in picture.rows}
    for strip in picture.strips:
        unit = strip.unit_bytes
        starts, cursor, strip_gaps = [], 0.0, []
        for kind, begin, end in strip.pieces:
            if kind == "cells":
                starts.append((begin, end, cursor))
                cursor += (end - begin) / unit
            else:
                strip_gaps.append((cursor, cursor + GAP_UNITS, (end - begin) // strip.itemsize))
                cursor += GAP_UNITS

        def x_at(byte, starts=starts, unit=unit):
            for begin, end, x0 in starts:
                if begin <= byte <= end:
                    return x0 + (byte - begin) / unit
            return None

        x_of.append(x_at)
        gaps.append(strip_gaps)
        width = max(width, cursor, _cells_wide(strip.description, "strip-title"))
        last_index = max((end - 1) // strip.itemsize for kind, _, end in strip.pieces if kind == "cells")
        rotated = _cells_wide(f"{last_index:,}", "index") > strip.itemsize / unit * TURN_INDICES_AT
        index_rotated.append(rotated)
        y += TITLE_HEIGHT
        header_y.append(y - TITLE_RAISE)
        y += INDEX_GAP + (TURNED_CHAR * len(f"{last_index:,}") + TURNED_PAD if rotated else INDEX_HEIGHT)
        strip_y.append(y)
        y += CELL_HEIGHT
        for name in strip.rows:
            width = max(width, _cells_wide(labels[name], "label"))
            y += LABEL_HEIGHT
            row_y[name] = y
            y += CELL_HEIGHT
            # Shortest jump nearest the row: arrows sharing a start then nest without crossing ticks.
            right = None
            for step in sorted(steps_by_row.get(name, []), key=lambda s: abs(s.to_index - s.from_index)):
                y += LANE_HEIGHT
                lanes[(name, step.dim)] = y
                arrow = _arrow(step, strip, itemsizes[name], x_at)
                arrows[(name, step.dim)] = arrow
                if arrow is not None:
                    right = max(right or 0.0, arrow[0] + ARROW_ROOM, arrow[1] if arrow[1] is not None else 0.0)
                    width = max(width, right + LABEL_PAD + _cells_wide(arrow[2], "step-text"))
            # Labels in one column right of every arrow of the row: no tick line crosses a label.
            label_x[name] = (right or 0.0) + LABEL_PAD
            y += ROW_PAD
        y += STRIP_GAP
    width = max(width, _cells_wide(" · ".join(picture.notes), "legend"))
    return _Geometry(
        width, y + LEGEND_HEIGHT, x_of, gaps, header_y, strip_y, row_y, lanes, arrows, label_x, index_rotated, y
    )


def _arrow(step: PictureStep, strip: PictureStrip, itemsize: int, x_at):
    """(x start, x end, label) of one step's arrow; x end None for stride 0; None if the start is elided."""
    half = itemsize / strip.unit_bytes / 2
    start = x_at(step.from_index * itemsize)
    if start is None:
        return None
    if itemsize == strip.itemsize:
        jump = plural(step.stride, "cell", fmt=",")
    else:
        jump = plural(step.stride * itemsize, "byte", fmt=",")
    if step.stride == 0:
        return start + half, None, f"dim {step.dim}: stride 0 = stays on the same cell"
    label = f"dim {step.dim}: stride {step.stride} = jump {jump}"
    end = x_at(step.to_index * itemsize) if step.shown else None
    if end is None:
        # The target cell is elided: the arrow points into the gap after this window, and says so.
        window_end = next(
            (
                stop
                for kind, begin, stop in strip.pieces
                if kind == "cells" and begin <= step.from_index * itemsize < stop
            ),
            None,
        )
        if window_end is None:  # a meta tensor's elements may lie past its (empty) storage: no cell to start at
            return None
        return start + half, x_at(window_end) + GAP_UNITS / 2, label + " (target not shown)"
    return start + half, end + half, label


def _fit(text: str, cells_wide: float, style: str) -> float | None:
    """The font size at which ``text`` fits a cell ``cells_wide`` cells wide; None: the style's own fits."""
    look = STYLES[style]
    room = cells_wide * CELL_PT * FIT_ROOM
    wide = text_width(text, look.family, look.size, look.weight)
    if not text or wide <= room:
        return None
    return max(MIN_FONT_PT, look.size * room / wide)


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


def layout_scene(picture: LayoutPicture) -> Scene:
    """The drawing of a ``LayoutPicture`` as a ``Scene``, in points; both renderers draw it.

    Every cell's rectangle and texts carry ids naming it: ``cell:<strip>:<row>:<index>``, ``text:…``,
    ``index:…`` (storage cells), ``positions:…`` (repeated cells); also ``strip:<strip>``,
    ``label:<strip>:<row>``, ``step:<strip>:<row>:<dim>``, ``steptext:…``, ``gap:<strip>:<x>``, ``gaptext:…``
    and ``legend``. The title is the picture's summary.

    Args:
        picture: from ``layout_picture``.

    Returns:
        A ``Scene``.

    Raises:
        TypeError: ``picture`` is not a LayoutPicture.
    """
    if not isinstance(picture, LayoutPicture):
        raise TypeError(f"picture must be a LayoutPicture, got {describe(picture)}")
    geometry = _geometry(picture)

    def px(x: float) -> float:
        return (x + SIDE_MARGIN) * CELL_PT

    def py(y: float) -> float:
        return y * ROW_PT

    def box(x: float, y: float, w: float, style: str, ident: str) -> Rect:
        return Rect(px(x), py(y), w * CELL_PT, CELL_HEIGHT * ROW_PT, style, ident)

    def centred(x: float, y: float, text: str, style: str, ident: str = "", fit: float = 0.0) -> Text:
        """A text centred on (x, y), shrunk to fit ``fit`` cells across when that is given."""
        return Text(px(x), py(y), text, style, ident, "middle", "middle", _fit(text, fit, style) if fit else None)

    fills = {row.name: f"row{i % len(ROW_FILLS)}" for i, row in enumerate(picture.rows)}
    strips = picture.strips
    items: list = []
    for strip in strips:
        top = geometry.strip_y[strip.index]
        title_y = py(geometry.header_y[strip.index])
        items.append(Text(px(0), title_y, strip.description, "strip-title", f"strip:{strip.index}", baseline="bottom"))
        for x0, x1, hidden in geometry.gaps[strip.index]:
            middle, ident = (x0 + x1) / 2, f"{strip.index}:{x0:g}"
            items.append(box(x0 + GAP_INSET, top, x1 - x0 - 2 * GAP_INSET, "gap", f"gap:{ident}"))
            text = f"… {hidden:,} cells\nnot shown …"
            items.append(centred(middle, top + CELL_HEIGHT / 2, text, "gap-text", f"gaptext:{ident}"))
            for name in strip.rows:
                items.append(centred(middle, geometry.row_y[name] + CELL_HEIGHT / 2, "…", "elided"))

    for cell in picture.cells:
        strip = strips[cell.strip]
        x0 = geometry.x_of[cell.strip](cell.byte_start)
        wide = cell.nbytes / strip.unit_bytes
        ident = f"{cell.strip}:{cell.row}:{cell.index}"
        middle = x0 + wide / 2
        if cell.row == "storage":
            top = geometry.strip_y[cell.strip]
            items.append(box(x0, top, wide, "storage", f"cell:{ident}"))
            turned = 90.0 if geometry.index_rotated[cell.strip] else 0.0
            index_y = py(top - LABEL_LIFT)
            number = Text(px(middle), index_y, f"{cell.index:,}", "index", f"index:{ident}", "middle", "bottom")
            items.append(replace(number, rotation=turned))
            if cell.text:
                items.append(centred(middle, top + CELL_HEIGHT / 2, cell.text, "value", f"text:{ident}", wide))
            continue
        top = geometry.row_y[cell.row]
        repeated = cell.state == "read" and (len(cell.positions) > 1 or not cell.count_exact)
        style = {"unread": "unread", "unknown": "unknown"}.get(cell.state, fills[cell.row])
        items.append(box(x0 + CELL_INSET, top, wide - 2 * CELL_INSET, style + "-repeated" * repeated, f"cell:{ident}"))
        if not cell.text:
            continue
        listed = ",".join(str(p) for p in cell.positions)
        if repeated and len(listed) <= POSITIONS_PER_CELL * wide:
            # A repeated cell says how often it is read, and by which elements when that fits.
            items.append(centred(middle, top + COUNT_Y, cell.text, "count", f"text:{ident}", wide))
            items.append(centred(middle, top + POSITIONS_Y, listed, "positions", f"positions:{ident}", wide))
        else:
            style = "count" if repeated else "unchecked" if cell.state == "unknown" else "value"
            items.append(centred(middle, top + CELL_HEIGHT / 2, cell.text, style, f"text:{ident}", wide))

    for row in picture.rows:
        label_y = py(geometry.row_y[row.name] - LABEL_LIFT)
        items.append(Text(px(0), label_y, row.label, "label", f"label:{row.strip}:{row.name}", baseline="bottom"))

    for step in picture.steps:
        arrow = geometry.arrows[(step.row, step.dim)]
        if arrow is None:
            continue  # the row's first cell is elided: its label still gives the strides
        start, end, label = arrow
        bottom = py(geometry.row_y[step.row] + CELL_HEIGHT)
        lane = py(geometry.lanes[(step.row, step.dim)])
        ident = f"{step.strip}:{step.row}:{step.dim}"
        if step.stride == 0:
            items.append(Arrow(_loop(px(start), bottom + py(LOOP_DROP)), "loop", f"step:{ident}"))
        else:
            items.append(Line(((px(start), bottom), (px(start), lane)), "tick"))
            if step.shown:
                items.append(Line(((px(end), bottom), (px(end), lane)), "tick"))
            style = "step" if step.shown else "step-not-shown"
            items.append(Arrow(((px(start), lane), (px(end), lane)), style, f"step:{ident}"))
        label_x = px(geometry.label_x[step.row])
        items.append(Text(label_x, lane, label, "step-text", f"steptext:{ident}", "start", "middle"))

    legend = " · ".join(picture.notes)
    items.append(Text(px(0), py(geometry.legend_y + LEGEND_DROP), legend, "legend", "legend"))
    width = (geometry.width + 2 * SIDE_MARGIN) * CELL_PT
    return Scene(width, py(geometry.height), tuple(items), STYLES, picture.summary)


def picture_svg(picture: LayoutPicture) -> str:
    """Render a ``LayoutPicture`` as a standalone SVG document (its summary is the SVG's ``<title>``).

    The same drawing as ``draw_layout`` (both draw ``layout_scene(picture)``), as text: elements carry the same
    ids, and it renders in a browser in no time, which is what the live explorers display.

    Args:
        picture: from ``layout_picture``.

    Returns:
        The SVG document as a str.

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
        *tensors: strided tensors (any dtype; values are read only from the drawn cells), or
            ``Layout`` objects with ``show_values=False``.
        names: display names, one per tensor (default ``t0``, ``t1``, ...).
        ax: a matplotlib Axes to draw into, or None for a new figure sized to fit.
        max_cells: the most cells to draw per storage strip (at least 8, at most 512: a larger value is
            capped, and the summary says so).
        show_values: write the storage's values in its cells.

    Returns:
        The matplotlib Figure, with ``fig.summary`` (one line of text, as ``layout_summary``),
        ``fig.layout_picture`` (the ``LayoutPicture`` drawn), ``fig.layout_cells`` (its cells) and
        ``fig.scene`` (the ``Scene`` drawn: ids ``cell:<strip>:<row>:<index>``, ``text:...``, see ``layout_scene``).

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        ValueError: as ``layout_picture``.
    """
    require_axes(ax)
    picture = layout_picture(*tensors, names=names, max_cells=max_cells, show_values=show_values)
    scene = layout_scene(picture)
    fig = render(scene, ax=ax)
    fig.summary, fig.layout_picture, fig.layout_cells, fig.scene = picture.summary, picture, picture.cells, scene
    return fig


__all__ = [
    "LayoutPicture",
    "PictureCell",
    "PictureRow",
    "PictureStep",
    "PictureStrip",
    "draw_layout",
    "layout_picture",
    "layout_scene",
    "layout_summary",
    "picture_svg",
]
